//! The global allocator: mimalloc, asked for plain blocks where their alignment suffices.
//!
//! The mimalloc crate's `GlobalAlloc` calls `mi_malloc_aligned` for every request. Its fast path
//! only takes a block when the size class's free list has one at hand; otherwise it falls to the
//! generic aligned path, which over-allocates by the alignment and aligns inside the block. Per
//! op, ferrograd makes several small blocks (a tensor, its storage, a node's backward), and
//! under callgrind the aligned paths cost ~500 instructions per op of a scalar chain (plain blocks saved ~330
//! of them). Like the standard
//! library's `System` allocator, this asks for a plain `mi_malloc` block when the alignment is
//! at most 16 bytes and divides the size (mimalloc's small size classes are then multiples of
//! the alignment), checks the address, and only for a block that is not aligned after all (or a
//! larger alignment) takes the aligned call.

use libmimalloc_sys::{mi_free, mi_malloc, mi_malloc_aligned, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

pub struct Allocator;

/// The largest alignment a plain block is asked to satisfy (mimalloc's MI_MAX_ALIGN_SIZE).
const PLAIN_ALIGN: usize = 16;

/// A block for `layout`: from `plain(size)` when that one is aligned enough, else from
/// `aligned(size, align)`.
///
/// SAFETY: `plain` and `aligned` are mimalloc allocation calls (blocks freed by mi_free).
#[inline]
unsafe fn block(layout: Layout, plain: unsafe extern "C" fn(usize) -> *mut c_void, aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void) -> *mut u8 {
    if layout.align() <= PLAIN_ALIGN && layout.size() % layout.align() == 0 {
        let p = plain(layout.size());
        if (p as usize) & (layout.align() - 1) == 0 {
            return p as *mut u8;
        }
        mi_free(p);
    }
    aligned(layout.size(), layout.align()) as *mut u8
}

// SAFETY: every block comes from mimalloc and goes back through mi_free (which takes blocks
// from both the plain and the aligned calls); a returned block is aligned as the layout asks
// (checked for plain blocks, guaranteed by the aligned calls).
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        block(layout, mi_malloc, mi_malloc_aligned)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        block(layout, mi_zalloc, mi_zalloc_aligned)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
    }
}

#[cfg(test)]
mod tests {
    use super::Allocator;
    use std::alloc::{GlobalAlloc, Layout};

    #[test]
    fn blocks_are_aligned_and_zeroed() {
        let a = Allocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [align, 3 * align, 24, 40, 100, 1000, 70_000] {
                let Ok(l) = Layout::from_size_align(size, align) else { continue };
                unsafe {
                    let p = a.alloc(l);
                    assert!(!p.is_null() && p as usize % align == 0, "size {size} align {align}");
                    p.write_bytes(0xAB, size);
                    a.dealloc(p, l);
                    let z = a.alloc_zeroed(l);
                    assert!(!z.is_null() && z as usize % align == 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    let r = a.realloc(z, l, size * 2 + 8);
                    assert!(!r.is_null() && r as usize % align == 0);
                    assert!((0..size).all(|i| *r.add(i) == 0), "realloc keeps the contents");
                    a.dealloc(r, Layout::from_size_align(size * 2 + 8, align).unwrap());
                }
            }
        }
    }
}
