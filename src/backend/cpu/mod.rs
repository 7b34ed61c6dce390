//! CPU kernels: elementwise maps with broadcasting, reductions over contiguous groups, strided
//! copies, and GEMM through the `gemm` crate. Inputs arrive as tensors; outputs are new
//! contiguous tensors unless the kernel writes in place.

use crate::backend::cuda;
use crate::error::Result;
use crate::tensor::layout::{numel, Layout};
// every new output is checked first: a view may be far larger than memory (an expanded tensor)
use crate::tensor::storage::check_alloc;
use crate::tensor::{DType, Element, Tensor};
use crate::backend::threads::{self, SendPtr};
use smallvec::SmallVec;

pub mod math;
#[cfg(target_arch = "x86_64")]
mod sgemm;
pub mod simd;
pub mod special;

use std::mem::MaybeUninit;

/// Elementwise work above this many elements is split across rayon's pool.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// Elements per parallel task: a few tasks per thread, each long enough to amortise scheduling.
#[inline]
fn chunk_len(n: usize) -> usize {
    let t = crate::backend::num_threads().max(1);
    n.div_ceil(4 * t).next_multiple_of(1024).max(1 << 13)
}

/// Rows per part of a kernel split over `rows` rows of `len` elements, a multiple of `group`
/// (rows of one group may write the same elements, so they stay in one part): a few parts per
/// thread, each of at least 8192 elements. None when the work is one part (under the threshold,
/// one thread, or one group).
pub fn rows_per_part(rows: usize, len: usize, group: usize) -> Option<usize> {
    let n = rows * len;
    if n < PAR_THRESHOLD || crate::backend::num_threads() < 2 || group >= rows {
        return None;
    }
    let per = chunk_len(n).div_ceil(len * group).max(1) * group;
    (per < rows).then_some(per)
}

/// A Vec of n elements written by `fill` (which must initialise all of them).
#[inline]
fn build<U>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<U>])) -> Vec<U> {
    let mut v: Vec<U> = Vec::with_capacity(n);
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: every fill path below writes all n elements (the loops run to the common length,
    // which the callers make equal to n).
    unsafe { v.set_len(n) };
    v
}

/// A Vec of n elements filled by `fill`, which must initialise every element (e.g. a GEMM,
/// which overwrites its output without reading it): no zero fill first.
pub fn filled_vec<T: Element>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    build(n, fill)
}

/// A copy of a slice, in parallel above the threshold (one thread's memcpy reaches about half
/// of what two do on the build machine: clone of 4M float32 1.13 ms, torch 0.59).
pub fn copy_vec<T: Copy + Send + Sync>(s: &[T]) -> Vec<T> {
    let n = s.len();
    if n < PAR_THRESHOLD || crate::backend::num_threads() < 2 {
        return s.to_vec();
    }
    let ch = chunk_len(n);
    build(n, |out| {
        threads::for_each_chunk_mut(out, ch, |i, d| {
            let src = &s[i * ch..i * ch + d.len()];
            // SAFETY: d and src have the same length, and d (a new buffer) cannot overlap s.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), d.as_mut_ptr() as *mut T, src.len()) };
        })
    })
}

/// d[i] = f(s[i]) over equal-length slices, in parallel above the threshold.
#[inline]
fn par_map<T: Copy + Sync, U: Send, F: Fn(T) -> U + Sync>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = s.len();
    if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        let ch = chunk_len(n);
        threads::for_each_chunk_mut(d, ch, |i, d| simd::map_run(&s[i * ch..i * ch + d.len()], d, f));
    } else {
        simd::map_run(s, d, f);
    }
}

/// d[i] = f(d[i], b[i]) in place over equal-length slices, in parallel above the threshold.
pub fn update_in_place<T: Copy + Sync + Send, F: Fn(T, T) -> T + Sync>(d: &mut [T], b: &[T], f: F) {
    let n = d.len().min(b.len());
    let run = |d: &mut [T], b: &[T]| simd::update_run(d, b, &f);
    if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        let ch = chunk_len(n);
        threads::for_each_chunk_mut(&mut d[..n], ch, |i, d| run(d, &b[i * ch..i * ch + d.len()]));
    } else {
        run(&mut d[..n], &b[..n]);
    }
}

/// d[i] = f(d[i]) in place, in parallel above the threshold.
pub fn apply_in_place<T: Copy + Sync + Send, F: Fn(T) -> T + Sync>(d: &mut [T], f: F) {
    let n = d.len();
    if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        threads::for_each_chunk_mut(d, chunk_len(n), |_, d| simd::apply_run(d, &f));
    } else {
        simd::apply_run(d, &f);
    }
}

/// d[i] = f(a[i], b[i]) over equal-length slices, in parallel above the threshold.
#[inline]
fn par_zip<T: Copy + Sync, U: Send, F: Fn(T, T) -> U + Sync>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = a.len();
    if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        let ch = chunk_len(n);
        threads::for_each_chunk_mut(d, ch, |i, d| simd::zip_run(&a[i * ch..i * ch + d.len()], &b[i * ch..i * ch + d.len()], d, f));
    } else {
        simd::zip_run(a, b, d, f);
    }
}

/// out[i] = f(x[i]), x read as T. A device tensor is computed on a host mirror and the result
/// moved back (the path of ops without a device kernel).
pub fn map<T: Element, U: Element>(x: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Result<Tensor> {
    if x.is_cuda() {
        return cuda::place(map(&cuda::host_mirror(x)?, f)?, x.device());
    }
    {
        let d = x.read_data();
        // one element (a scalar chain's every op): the element, without the buffer machinery
        if d.layout.shape.iter().all(|&s| s == 1) {
            let v = f(d.storage.slice::<T>()[d.layout.offset]);
            let shape = d.layout.shape.clone();
            drop(d);
            return Ok(Tensor::from_vec(vec![v], &shape));
        }
        if !d.layout.is_contiguous() {
            if let Some(order) = output_order(&d.layout.shape, &[&d.layout]) {
                let v = permuted(&d.storage, &d.layout, &order);
                drop(d);
                return Ok(unpermute(map_rowmajor(&v, f)?, &order));
            }
        }
    }
    map_rowmajor(x, f)
}

/// The `n` elements of `src` from `offset`: empty when n is 0, whatever the offset (an empty view
/// may point past the end of its storage, as torch allows).
#[inline]
pub(crate) fn span<T>(src: &[T], offset: usize, n: usize) -> &[T] {
    if n == 0 {
        &[]
    } else {
        &src[offset..offset + n]
    }
}

/// `map` with a row-major (contiguous) output.
fn map_rowmajor<T: Element, U: Element>(x: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Result<Tensor> {
    let d = x.read_data();
    let shape = d.layout.shape.clone();
    let n = d.layout.numel();
    check_alloc(U::DTYPE, n)?;
    let src = d.storage.slice::<T>();
    let v: Vec<U> = if d.layout.is_contiguous() {
        let s = span(src, d.layout.offset, n);
        build(n, |o| par_map(s, o, &f))
    } else {
        let tmp = gather::<T>(&d.layout, src);
        build(n, |o| par_map(&tmp, o, &f))
    };
    Ok(Tensor::from_vec(v, &shape))
}

/// Note [Elementwise output layout]: as torch's TensorIterator, the output of an elementwise op
/// over non-contiguous inputs follows the inputs' memory order instead of being row-major: dims
/// are ordered by the strides of the first input, ties and broadcast (stride-0) dims decided by
/// the next one, equal strides by size. So `x.t().exp()` is a transposed tensor as x.t() is (and
/// `.view(-1)` of it fails as torch's does). The op runs on the inputs' dims permuted into that
/// order, which is also the cache-friendly way to read them, and the row-major result is seen
/// with the dims put back.
///
/// The dims of `shape` outermost first in the output's memory order, given the operands' layouts
/// (broadcast to `shape`); None when that order is row-major.
fn output_order(shape: &[usize], layouts: &[&Layout]) -> Option<SmallVec<[usize; 6]>> {
    let nd = shape.len();
    if nd < 2 || numel(shape) == 0 {
        return None;
    }
    // 1: dim d0 goes inside d1; -1: outside; 0: the operands do not say.
    let inner_first = |d0: usize, d1: usize| -> i32 {
        for l in layouts {
            let (s0, s1) = (l.strides[d0], l.strides[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    // perm[0] is the innermost dim; an insertion sort that stops at the first "outside" answer
    // and steps over undecided pairs (so broadcast dims keep their places).
    let mut perm: SmallVec<[usize; 6]> = (0..nd).rev().collect();
    for i in 1..nd {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match inner_first(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm.reverse();
    if perm.iter().enumerate().all(|(i, &d)| d == i) {
        None
    } else {
        Some(perm)
    }
}

/// A view of `storage` through `l` with its dims taken in `order`.
fn permuted(storage: &std::sync::Arc<crate::tensor::Storage>, l: &Layout, order: &[usize]) -> Tensor {
    let shape = order.iter().map(|&d| l.shape[d]).collect();
    let strides = order.iter().map(|&d| l.strides[d]).collect();
    Tensor::from_storage(storage.clone(), Layout { shape, strides, offset: l.offset })
}

/// A row-major result computed over dims taken in `order`, seen with the dims back in place.
fn unpermute(out: Tensor, order: &[usize]) -> Tensor {
    let d = out.data();
    let mut shape = d.layout.shape.clone();
    let mut strides = d.layout.strides.clone();
    for (i, &dim) in order.iter().enumerate() {
        shape[dim] = d.layout.shape[i];
        strides[dim] = d.layout.strides[i];
    }
    Tensor::from_storage(d.storage, Layout { shape, strides, offset: d.layout.offset })
}

/// Drop size-1 dims and merge dims that are contiguous with their inner neighbour in every
/// layout (all layouts share `shape`). Returns (shape, strides per layout), at least 1-d.
fn coalesce<const K: usize>(shape: &[usize], strides: [&[usize]; K]) -> (Vec<usize>, [Vec<usize>; K]) {
    let mut sh: Vec<usize> = Vec::with_capacity(shape.len());
    let mut st: [Vec<usize>; K] = std::array::from_fn(|_| Vec::with_capacity(shape.len()));
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        if let Some(&last) = sh.last() {
            // Merge dim d into the previous one when, for every layout, stride[prev] = stride[d] * shape[d].
            let merge = (0..K).all(|k| st[k].last().copied() == Some(strides[k][d] * shape[d]));
            if merge {
                if let Some(l) = sh.last_mut() {
                    *l = last * shape[d];
                }
                for k in 0..K {
                    if let Some(l) = st[k].last_mut() {
                        *l = strides[k][d];
                    }
                }
                continue;
            }
        }
        sh.push(shape[d]);
        for k in 0..K {
            st[k].push(strides[k][d]);
        }
    }
    if sh.is_empty() {
        sh.push(1);
        for k in 0..K {
            st[k].push(0);
        }
    }
    (sh, st)
}

/// Storage offsets of the first element of row `r` (rows = all dims but the last).
#[inline]
fn row_offsets<const K: usize>(mut r: usize, shape: &[usize], st: &[Vec<usize>; K], base: [usize; K]) -> [usize; K] {
    let mut o = base;
    let nd = shape.len();
    for d in (0..nd - 1).rev() {
        let i = r % shape[d];
        r /= shape[d];
        for k in 0..K {
            o[k] += i * st[k][d];
        }
    }
    o
}

/// Elements of a strided view in row-major order (a contiguous copy).
pub fn gather<T: Copy + Send + Sync>(l: &Layout, src: &[T]) -> Vec<T> {
    let n = l.numel();
    if n == 0 {
        return Vec::new();
    }
    if l.is_contiguous() {
        return copy_vec(span(src, l.offset, n));
    }
    let (sh, [st]) = coalesce(&l.shape, [&l.strides[..]]);
    let inner = sh.last().copied().unwrap_or(1);
    let is = st[sh.len() - 1];
    // A permuted view whose unit-stride dim is not the last (a transpose): copy in tiles, so
    // reads and writes both stay within a few cache lines (a row-by-row copy would touch a new
    // line for every element read).
    if is != 1 && inner >= 8 {
        if let Some(p) = st.iter().position(|&s| s == 1).filter(|&p| sh[p] >= 8) {
            return build(n, |out| gather_transposed(&sh, &st, p, l.offset, src, out));
        }
    }
    let st = [st];
    let rows = |d: &mut [MaybeUninit<T>], r0: usize| {
        for (j, row) in d.chunks_mut(inner).enumerate() {
            let [o] = row_offsets(r0 + j, &sh, &st, [l.offset]);
            if is == 1 {
                for (x, v) in row.iter_mut().zip(&src[o..o + inner]) {
                    x.write(*v);
                }
            } else {
                for (i, x) in row.iter_mut().enumerate() {
                    x.write(src[o + i * is]);
                }
            }
        }
    };
    build(n, |out| {
        if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
            let rows_per = chunk_len(n).div_ceil(inner).max(1);
            threads::for_each_chunk_mut(out, rows_per * inner, |c, d| rows(d, c * rows_per));
        } else {
            rows(out, 0);
        }
    })
}

/// Side of the square tiles of `transpose_tile`. Small enough that the TILE lines a tile reads
/// (or writes) across rows stay in L1 even when the row stride is a power of two (rows 2 KiB
/// apart share a few cache sets; 32 such lines thrash them: measured 2.5x slower than 8 or 16).
const TILE: usize = 8;

/// out[i * os + j] = src[off + i + j * cs] for i < rows, j < cols: one 2-d transpose (the
/// source is unit-stride along i), in TILE x TILE tiles.
#[inline]
fn transpose_tile<T: Copy>(rows: usize, cols: usize, src: &[T], off: usize, cs: usize, out: *mut T, os: usize) {
    if rows == 0 || cols == 0 {
        return;
    }
    // Every index read below is at most this one: one bounds check for the whole plane.
    assert!(off + (rows - 1) + (cols - 1) * cs < src.len());
    let sp = src.as_ptr();
    // Whole blocks in registers (8 x 8 four-byte or 4 x 4 eight-byte elements, with AVX)
    let b = simd::transpose_block_side::<T>();
    for i0 in (0..rows).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows);
        for j0 in (0..cols).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols);
            if b > 0 && i1 - i0 == TILE && j1 - j0 == TILE {
                for bi in (i0..i1).step_by(b) {
                    for bj in (j0..j1).step_by(b) {
                        // SAFETY: the block's reads are within the bound asserted above, its
                        // writes within the caller's output block.
                        unsafe { simd::transpose_block(sp.add(off + bi + bj * cs), cs, out.add(bi * os + bj), os) };
                    }
                }
                continue;
            }
            for i in i0..i1 {
                for j in j0..j1 {
                    // SAFETY: the read is within the bound asserted above; (i, j) indexes the
                    // caller's output block of rows x cols with row stride os.
                    unsafe { out.add(i * os + j).write(*sp.add(off + i + j * cs)) };
                }
            }
        }
    }
}

/// A contiguous copy of a coalesced view whose dim `p` has unit stride (p is not the last dim):
/// for every index of the other dims, the (p, last) plane is a 2-d transpose.
fn gather_transposed<T: Copy + Send + Sync>(sh: &[usize], st: &[usize], p: usize, offset: usize, src: &[T], out: &mut [MaybeUninit<T>]) {
    let nd = sh.len();
    let last = nd - 1;
    let ostr = crate::tensor::layout::contiguous_strides(sh);
    let planes = numel(sh) / (sh[p] * sh[last]);
    // Work items: (plane, block of TILE rows of dim p): disjoint sets of output elements.
    let blocks = sh[p].div_ceil(TILE);
    let out_addr = out.as_mut_ptr() as usize;
    let item = |w: usize| {
        let (plane, b) = (w / blocks, w % blocks);
        let (mut r, mut so, mut oo) = (plane, offset, 0usize);
        for d in (0..nd).rev() {
            if d == p || d == last {
                continue;
            }
            let i = r % sh[d];
            r /= sh[d];
            so += i * st[d];
            oo += i * ostr[d];
        }
        let i0 = b * TILE;
        let rows = (sh[p] - i0).min(TILE);
        let dst = (out_addr as *mut T).wrapping_add(oo + i0 * ostr[p]);
        transpose_tile(rows, sh[last], src, so + i0, st[last], dst, ostr[p]);
    };
    let total = planes * blocks;
    if numel(sh) >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        threads::run(total, crate::backend::num_threads(), &item);
    } else {
        (0..total).for_each(item);
    }
}

/// out[i] = f(a[i], b[i]) over the broadcast shape; a and b already hold T.
pub fn zip<T: Element, U: Element>(a: &Tensor, b: &Tensor, shape: &[usize], f: impl Fn(T, T) -> U + Sync + Send) -> Result<Tensor> {
    let dev = cuda::common_device(&[a, b])?;
    if dev.is_cuda() {
        return cuda::place(zip(&cuda::host_mirror(a)?, &cuda::host_mirror(b)?, shape, f)?, dev);
    }
    {
        let same = |l: &Layout| l.shape[..] == *shape && l.is_contiguous();
        let (da, db) = (a.read_data(), b.read_data());
        if !(same(&da.layout) && (same(&db.layout) || db.layout.numel() == 1)) && !(same(&db.layout) && da.layout.numel() == 1) {
            let (la, lb) = (da.layout.broadcast_to(shape)?, db.layout.broadcast_to(shape)?);
            if let Some(order) = output_order(shape, &[&la, &lb]) {
                let (va, vb) = (permuted(&da.storage, &la, &order), permuted(&db.storage, &lb, &order));
                drop((da, db));
                let pshape: SmallVec<[usize; 6]> = order.iter().map(|&d| shape[d]).collect();
                return Ok(unpermute(zip_rowmajor(&va, &vb, &pshape, f)?, &order));
            }
        }
    }
    zip_rowmajor(a, b, shape, f)
}

/// `zip` with a row-major (contiguous) output.
fn zip_rowmajor<T: Element, U: Element>(a: &Tensor, b: &Tensor, shape: &[usize], f: impl Fn(T, T) -> U + Sync + Send) -> Result<Tensor> {
    let (da, db) = (a.read_data(), b.read_data());
    let n = numel(shape);
    check_alloc(U::DTYPE, n)?;
    let (sa, sb) = (da.storage.slice::<T>(), db.storage.slice::<T>());
    let same = |l: &Layout| l.shape[..] == *shape && l.is_contiguous();
    let v: Vec<U> = if n == 0 {
        Vec::new()
    } else if same(&da.layout) && same(&db.layout) {
        let (xa, xb) = (span(sa, da.layout.offset, n), span(sb, db.layout.offset, n));
        build(n, |o| par_zip(xa, xb, o, &f))
    } else if same(&da.layout) && db.layout.numel() == 1 {
        let y = sb[db.layout.offset];
        let xa = span(sa, da.layout.offset, n);
        build(n, |o| par_map(xa, o, &|x| f(x, y)))
    } else if same(&db.layout) && da.layout.numel() == 1 {
        let x = sa[da.layout.offset];
        let xb = span(sb, db.layout.offset, n);
        build(n, |o| par_map(xb, o, &|y| f(x, y)))
    } else {
        let (la, lb) = (da.layout.broadcast_to(shape)?, db.layout.broadcast_to(shape)?);
        let (sh, st) = coalesce(shape, [&la.strides[..], &lb.strides[..]]);
        let inner = sh.last().copied().unwrap_or(1);
        let (ia, ib) = (st[0][sh.len() - 1], st[1][sh.len() - 1]);
        let base = [la.offset, lb.offset];
        // Fill d = out[start..start + d.len()], row segment by row segment (a task may start
        // and end inside a row, so one long broadcast row still splits across threads).
        let segs = |d: &mut [MaybeUninit<U>], start: usize| {
            let mut done = 0;
            while done < d.len() {
                let (r, c) = ((start + done) / inner, (start + done) % inner);
                let len = (inner - c).min(d.len() - done);
                let [oa, ob] = row_offsets(r, &sh, &st, base);
                let (oa, ob) = (oa + c * ia, ob + c * ib);
                let seg = &mut d[done..done + len];
                match (ia, ib) {
                    (1, 1) => simd::zip_run(&sa[oa..oa + len], &sb[ob..ob + len], seg, &f),
                    (1, 0) => {
                        let y = sb[ob];
                        simd::map_run(&sa[oa..oa + len], seg, &|x| f(x, y))
                    }
                    (0, 1) => {
                        let x = sa[oa];
                        simd::map_run(&sb[ob..ob + len], seg, &|y| f(x, y))
                    }
                    _ => {
                        for (i, o) in seg.iter_mut().enumerate() {
                            o.write(f(sa[oa + i * ia], sb[ob + i * ib]));
                        }
                    }
                }
                done += len;
            }
        };
        build(n, |out| {
            if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
                let ch = chunk_len(n);
                threads::for_each_chunk_mut(out, ch, |c, d| segs(d, c * ch));
            } else {
                segs(out, 0);
            }
        })
    };
    Ok(Tensor::from_vec(v, shape))
}

/// out[i] = cond[i] ? a[i] : b[i] over the broadcast shape (where, masked_fill); a and b hold the
/// same dtype, moved as bits.
pub fn select(cond: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let dev = cuda::common_device(&[cond, a, b])?;
    if dev.is_cuda() {
        let (hc, ha, hb) = (cuda::host_mirror(cond)?, cuda::host_mirror(a)?, cuda::host_mirror(b)?);
        return cuda::place(select(&hc, &ha, &hb, shape)?, dev);
    }
    let lc = cond.layout().broadcast_to(shape)?;
    let la = a.layout().broadcast_to(shape)?;
    let lb = b.layout().broadcast_to(shape)?;
    if !(lc.is_contiguous() && la.is_contiguous() && lb.is_contiguous()) {
        if let Some(order) = output_order(shape, &[&lc, &la, &lb]) {
            let (vc, va, vb) = (permuted(&cond.storage(), &lc, &order), permuted(&a.storage(), &la, &order), permuted(&b.storage(), &lb, &order));
            let pshape: SmallVec<[usize; 6]> = order.iter().map(|&d| shape[d]).collect();
            return Ok(unpermute(select_rowmajor(&vc, &va, &vb, &pshape)?, &order));
        }
    }
    select_rowmajor(cond, a, b, shape)
}

/// `select` with a row-major (contiguous) output: the three layouts coalesced to the fewest
/// dims, then each output row segment filled from three strided runs (a broadcast mask or value
/// has stride 0), split over the team like `zip`.
fn select_rowmajor(cond: &Tensor, a: &Tensor, b: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let dt = a.dtype();
    let n = numel(shape);
    check_alloc(dt, n)?;
    let lc = cond.layout().broadcast_to(shape)?;
    let la = a.layout().broadcast_to(shape)?;
    let lb = b.layout().broadcast_to(shape)?;
    let (sh, st) = coalesce(shape, [&lc.strides[..], &la.strides[..], &lb.strides[..]]);
    let last = sh.len() - 1;
    let inner = sh[last];
    let (ic, ia, ib) = (st[0][last], st[1][last], st[2][last]);
    let base = [lc.offset, la.offset, lb.offset];
    let (sc, sa, sb) = (cond.storage(), a.storage(), b.storage());
    let xc = sc.slice::<bool>();
    crate::with_bits!(dt, C => {
        let (xa, xb) = (sa.bits::<C>(), sb.bits::<C>());
        let segs = |d: &mut [MaybeUninit<C>], start: usize| {
            let mut done = 0;
            while done < d.len() {
                let (r, c) = ((start + done) / inner, (start + done) % inner);
                let len = (inner - c).min(d.len() - done);
                let [oc, oa, ob] = row_offsets(r, &sh, &st, base);
                let (oc, oa, ob) = (oc + c * ic, oa + c * ia, ob + c * ib);
                for (i, o) in d[done..done + len].iter_mut().enumerate() {
                    o.write(if xc[oc + i * ic] { xa[oa + i * ia] } else { xb[ob + i * ib] });
                }
                done += len;
            }
        };
        let v: Vec<C> = build(n, |out| {
            if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
                let ch = chunk_len(n);
                threads::for_each_chunk_mut(out, ch, |k, d| segs(d, k * ch));
            } else if n > 0 {
                segs(out, 0);
            }
        });
        Ok(Tensor::from_bits(v, shape, dt))
    })
}

/// A copy of `x` converted to `dtype`, contiguous. Conversions run through the compute dtypes
/// (Note [Storage and compute dtypes]): a narrow source widens first, a narrow target is reached
/// from its compute type, which gives torch's results (its casts to float16/bfloat16 round
/// through float32, its casts to narrow integers keep the low bits), except float to a narrow
/// integer, which goes through int32 (int64 for uint8) as torch's and is converted directly.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.is_cuda() && cuda::has_kernels() {
        return cuda::native::cast(x, dtype);
    }
    let s = x.dtype();
    if s == dtype {
        return contiguous(x);
    }
    if s.is_float() && matches!(dtype, DType::I32 | DType::I16 | DType::I8) {
        // through int32 (INT32_MIN out of range), then its low bits; to uint8 it is through
        // int64, which the general path below does
        let xf = if s.is_narrow() { widen(x)? } else { x.clone() };
        let i = match xf.dtype() {
            DType::F32 => map::<f32, i32>(&xf, |v| i32::from_f64(v as f64))?,
            _ => map::<f64, i32>(&xf, i32::from_f64)?,
        };
        return if dtype == DType::I32 { Ok(i) } else { cast(&i, dtype) };
    }
    if s.is_narrow() {
        let w = widen(x)?;
        return if w.dtype() == dtype { Ok(w) } else { cast(&w, dtype) };
    }
    if dtype.is_narrow() {
        let c = dtype.compute();
        return narrow(&if s == c { x.clone() } else { cast(x, c)? }, dtype);
    }
    crate::with_compute_dtype!(s, S => {
        crate::with_compute_dtype!(dtype, D => map::<S, D>(x, |v| convert::<S, D>(v)))
    })
}

/// A narrow tensor in its compute dtype (exact: int64 holds every narrow integer, float32 every
/// float16 and bfloat16).
pub fn widen(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::U8 => map::<u8, i64>(x, |v| v as i64),
        DType::I8 => map::<i8, i64>(x, |v| v as i64),
        DType::I16 => map::<i16, i64>(x, |v| v as i64),
        DType::I32 => map::<i32, i64>(x, |v| v as i64),
        DType::F16 => convert_slices::<half::f16, f32>(x, |s, d| half::slice::HalfFloatSliceExt::convert_to_f32_slice(s, d)),
        DType::BF16 => map::<half::bf16, f32>(x, |v| v.to_f32()),
        _ => contiguous(x),
    }
}

/// A compute-dtype tensor stored as the narrow `dtype` (integers wrap, floats round to nearest
/// even).
pub fn narrow(x: &Tensor, dtype: DType) -> Result<Tensor> {
    debug_assert_eq!(x.dtype(), dtype.compute());
    match dtype {
        DType::U8 => map::<i64, u8>(x, |v| v as u8),
        DType::I8 => map::<i64, i8>(x, |v| v as i8),
        DType::I16 => map::<i64, i16>(x, |v| v as i16),
        DType::I32 => map::<i64, i32>(x, |v| v as i32),
        DType::F16 => convert_slices::<f32, half::f16>(x, |s, d| half::slice::HalfFloatSliceExt::convert_from_f32_slice(d, s)),
        DType::BF16 => map::<f32, half::bf16>(x, half::bf16::from_f32),
        _ => contiguous(x),
    }
}

/// `x` converted by a slice-at-a-time conversion `f(src, dst)` (the `half` crate's, which uses
/// the CPU's float16 instructions where it has them: per element they are a call each).
fn convert_slices<S: Element, D: Element>(x: &Tensor, f: impl Fn(&[S], &mut [D]) + Sync + Send) -> Result<Tensor> {
    if x.is_cuda() {
        return cuda::place(convert_slices(&cuda::host_mirror(x)?, f)?, x.device());
    }
    let d = x.read_data();
    let n = d.layout.numel();
    check_alloc(D::DTYPE, n)?;
    let src = d.storage.slice::<S>();
    let tmp;
    // A permuted dense view converts its block as it lies and keeps its strides (the elementwise
    // output layout of Note [Elementwise output layout]); other views are gathered first.
    let dense = d.layout.is_contiguous() || d.layout.is_non_overlapping_and_dense();
    let s: &[S] = if dense {
        span(src, d.layout.offset, n)
    } else {
        tmp = gather::<S>(&d.layout, src);
        &tmp
    };
    let mut out: Vec<D> = vec![D::default(); n];
    if n >= PAR_THRESHOLD && crate::backend::num_threads() > 1 {
        let ch = chunk_len(n);
        threads::for_each_chunk_mut(&mut out, ch, |c, o| f(&s[c * ch..c * ch + o.len()], o));
    } else {
        f(s, &mut out);
    }
    if dense && !d.layout.is_contiguous() {
        let layout = Layout { shape: d.layout.shape.clone(), strides: d.layout.strides.clone(), offset: 0 };
        return Ok(Tensor::from_storage(std::sync::Arc::new(crate::tensor::Storage::from_vec(out)), layout));
    }
    Ok(Tensor::from_vec(out, &d.layout.shape))
}

/// One element converted between compute dtypes, as torch converts: to bool by `!= 0`, from a
/// float by value (`f64_to_i64` to int64), from an integer directly (int64 to float32 rounds
/// once).
#[inline(always)]
pub fn convert<S: Element, D: Element>(v: S) -> D {
    if D::DTYPE == DType::Bool {
        D::from_bool(v.to_bool())
    } else if S::DTYPE.is_float() {
        D::from_f64(v.to_f64())
    } else {
        D::from_i64(v.to_i64())
    }
}

/// Contiguous copy of `x` (same dtype, same device).
pub fn contiguous(x: &Tensor) -> Result<Tensor> {
    if x.is_cuda() {
        return cuda::contiguous(x);
    }
    let d = x.read_data();
    check_alloc(d.storage.dtype(), d.layout.numel())?;
    let dt = d.storage.dtype();
    Ok(crate::with_bits!(dt, C => Tensor::from_bits(gather::<C>(&d.layout, d.storage.bits::<C>()), &d.layout.shape, dt)))
}

/// A copy of `x` with x's strides when x is non-overlapping and dense (one memcpy of its block),
/// else dense in x's dim order: torch's `clone()` (memory_format=preserve_format).
pub fn clone_preserving(x: &Tensor) -> Result<Tensor> {
    let d = x.read_data();
    // (a contiguous tensor may still have its own strides on size-1 dims: those are kept too)
    if x.is_cuda() || (d.layout.is_contiguous() && d.layout.strides == Layout::contiguous(&d.layout.shape).strides) {
        drop(d);
        return contiguous(x);
    }
    if !d.layout.is_non_overlapping_and_dense() {
        // strides in the input's dim order, dense (torch's infer_dense_strides): the elementwise
        // output layout of Note [Elementwise output layout]
        let dt = d.storage.dtype();
        drop(d);
        return crate::with_dtype!(dt, T => map::<T, T>(x, |v| v));
    }
    let n = d.layout.numel();
    check_alloc(d.storage.dtype(), n)?;
    // Dense: the elements are exactly the slots [offset, offset + n) (strides are non-negative,
    // so the first element is the lowest).
    let (o, st) = (d.layout.offset, &d.storage);
    let storage = crate::with_dtype!(st.dtype(), T => crate::tensor::Storage::from_vec(copy_vec(span(st.slice::<T>(), o, n))));
    let layout = Layout { shape: d.layout.shape.clone(), strides: d.layout.strides.clone(), offset: 0 };
    Ok(Tensor::from_storage(std::sync::Arc::new(storage), layout))
}

/// The layout of a new tensor made like one of layout `l` (torch's empty_like, which zeros_like,
/// rand_like, ... follow), offset 0. Preserve: l's strides when l is non-overlapping and dense,
/// else dense in l's dim order (torch's infer_dense_strides: the order of Note [Elementwise
/// output layout], as `clone_preserving`); ChannelsLast(3d): dim 1 innermost, of a 4-d (5-d) l.
pub fn like_layout(l: &Layout, format: crate::tensor::MemoryFormat) -> Result<Layout> {
    use crate::tensor::MemoryFormat as F;
    let nd = l.ndim();
    let channels_last = |rank: usize| -> Result<Layout> {
        if nd != rank {
            return Err(crate::Error::runtime(format!("required rank {} tensor to use {} format", rank, format.name())));
        }
        let order: SmallVec<[usize; 6]> = std::iter::once(0).chain(2..nd).chain(std::iter::once(1)).collect();
        Ok(Layout::dense_in_order(&l.shape, &order))
    };
    match format {
        F::Contiguous => Ok(Layout::contiguous(&l.shape)),
        F::ChannelsLast => channels_last(4),
        F::ChannelsLast3d => channels_last(5),
        F::Preserve if l.is_non_overlapping_and_dense() => Ok(Layout { shape: l.shape.clone(), strides: l.strides.clone(), offset: 0 }),
        F::Preserve => Ok(match output_order(&l.shape, &[l]) {
            Some(order) => Layout::dense_in_order(&l.shape, &order),
            None => Layout::contiguous(&l.shape),
        }),
    }
}

/// Write `src` (broadcast to dst's shape, converted to dst's dtype) through dst's layout.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.is_cuda() {
        return cuda::copy_into(dst, src);
    }
    let src = if src.is_cuda() { cuda::to_device(src, crate::backend::Device::Cpu)? } else { src.clone() };
    let dl = dst.layout();
    let src = if src.dtype() != dst.dtype() { cast(&src, dst.dtype())? } else { src };
    let sl = src.layout().broadcast_to(&dl.shape)?;
    let n = dl.numel();
    if n == 0 {
        return Ok(());
    }
    crate::with_bits!(dst.dtype(), T => {
        let (ss, ds) = (src.storage(), dst.storage());
        if dl.is_contiguous() {
            // Fast paths: a contiguous block (memmove, since src may alias dst) or one value.
            let dp = unsafe { (ds.as_ptr() as *mut T).add(dl.offset) };
            if sl.is_contiguous() {
                let sp = unsafe { (ss.as_ptr() as *const T).add(sl.offset) };
                let bytes = n * std::mem::size_of::<T>();
                let overlap = (sp as usize) < (dp as usize) + bytes && (dp as usize) < (sp as usize) + bytes;
                if overlap || n < PAR_THRESHOLD || crate::backend::num_threads() < 2 {
                    unsafe { std::ptr::copy(sp, dp, n) };
                } else {
                    // Disjoint blocks: in chunks on the team (one thread's memcpy of 16 MB took
                    // 1.6x torch's two-thread copy_).
                    let ch = chunk_len(n);
                    let (sp, dp) = (SendPtr(sp as *mut T), SendPtr(dp));
                    threads::run(n.div_ceil(ch), crate::backend::num_threads(), &|i| {
                        let lo = i * ch;
                        // SAFETY: chunk i is [lo, min(lo + ch, n)) of both blocks, which hold n
                        // elements each and do not overlap (checked above).
                        unsafe { std::ptr::copy_nonoverlapping(sp.get().add(lo), dp.get().add(lo), ch.min(n - lo)) };
                    });
                }
                return Ok(());
            }
            if sl.strides.iter().zip(sl.shape.iter()).all(|(&st, &sz)| st == 0 || sz == 1) {
                let v = ss.bits::<T>()[sl.offset];
                unsafe { std::slice::from_raw_parts_mut(dp, n) }.fill(v);
                return Ok(());
            }
        }
        // General strides: row by row over the coalesced dims (a slice of a larger tensor, e.g.
        // each part of torch.cat along an inner dim). A source in dst's storage is read fully
        // first (it may alias dst); rows run in parallel when dst's elements are distinct.
        let aliased = std::ptr::eq(ss.as_ptr(), ds.as_ptr());
        let staged: Vec<T>;
        let (src_bits, src_layout): (&[T], Layout) = if aliased {
            staged = gather(&sl, ss.bits::<T>());
            (&staged, Layout::contiguous(&dl.shape))
        } else {
            (ss.bits::<T>(), sl)
        };
        let (sh, st) = coalesce(&dl.shape, [&dl.strides[..], &src_layout.strides[..]]);
        let inner = sh[sh.len() - 1];
        let (di, si) = (st[0][sh.len() - 1], st[1][sh.len() - 1]);
        let dp = SendPtr(ds.as_ptr() as *mut T);
        let (d_off, s_off) = (dl.offset, src_layout.offset);
        let copy_rows = |r0: usize, r1: usize| {
            for r in r0..r1 {
                let [od, os] = row_offsets(r, &sh, &st, [d_off, s_off]);
                // SAFETY: od + i * di lies inside dst's storage for i < inner (dst's layout).
                let d = unsafe { dp.get().add(od) };
                if di == 1 && si == 1 {
                    unsafe { std::ptr::copy_nonoverlapping(src_bits[os..os + inner].as_ptr(), d, inner) };
                } else {
                    for i in 0..inner {
                        unsafe { *d.add(i * di) = src_bits[os + i * si] };
                    }
                }
            }
        };
        let rows = n / inner;
        if n >= PAR_THRESHOLD && rows > 1 && crate::backend::num_threads() > 1 && dl.non_overlapping() {
            let per = chunk_len(n).div_ceil(inner).max(1);
            threads::run(rows.div_ceil(per), crate::backend::num_threads(), &|p| copy_rows(p * per, ((p + 1) * per).min(rows)));
        } else {
            copy_rows(0, rows);
        }
    });
    Ok(())
}

/// Reduce each group of `x` over `dims` with `f` (which sees one group as a contiguous slice).
/// Returns the output shape with reduced dims kept as 1 (`keepdim` decides the caller's view).
pub fn reduce<T: Element, U: Element>(x: &Tensor, dims: &[usize], f: impl Fn(&[T]) -> U + Sync + Send) -> (Vec<U>, Vec<usize>) {
    debug_assert!(!x.is_cuda(), "reduce_to handles device tensors");
    let shape = x.shape();
    let nd = shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
    let out_shape: Vec<usize> = (0..nd).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let group: usize = dims.iter().map(|&d| shape[d]).product();
    let outer: usize = kept.iter().map(|&d| shape[d]).product();
    // Permute reduced dims last, then every group is a contiguous run.
    let mut perm = kept.clone();
    perm.extend(dims.iter().copied());
    let l = x.layout();
    let pl = Layout {
        shape: perm.iter().map(|&p| l.shape[p]).collect(),
        strides: perm.iter().map(|&p| l.strides[p]).collect(),
        offset: l.offset,
    };
    let run = |s: &[T]| -> Vec<U> {
        if group == 0 {
            return (0..outer).map(|_| f(&[])).collect();
        }
        if s.len() >= PAR_THRESHOLD && outer > 1 && crate::backend::num_threads() > 1 {
            // Whole groups per task; the results come back in order.
            let per = chunk_len(s.len()).div_ceil(group).max(1);
            let parts: Vec<Vec<U>> = threads::map_collect(s.len().div_ceil(per * group), |c| s[c * per * group..((c + 1) * per * group).min(s.len())].chunks(group).map(&f).collect());
            parts.concat()
        } else {
            s.chunks(group).map(&f).collect()
        }
    };
    let d = x.data();
    let src = d.storage.slice::<T>();
    let v: Vec<U> = if pl.is_contiguous() {
        run(span(src, pl.offset, pl.numel()))
    } else {
        run(&gather::<T>(&pl, src))
    };
    (v, out_shape)
}

/// `reduce` as a tensor shaped `out_shape` on x's device (a device input is reduced on a host
/// mirror).
pub fn reduce_to<T: Element, U: Element>(x: &Tensor, dims: &[usize], out_shape: &[usize], f: impl Fn(&[T]) -> U + Sync + Send) -> Result<Tensor> {
    if x.is_cuda() {
        let h = cuda::host_mirror(x)?;
        return cuda::place(reduce_to(&h, dims, out_shape, f)?, x.device());
    }
    if !x.is_contiguous() {
        check_alloc(x.dtype(), x.numel())?; // reduce gathers a strided input first
    }
    // an empty input can still ask for a huge output (zeros(2, 2**62, 0).mean(-1))
    check_alloc(U::DTYPE, crate::tensor::layout::checked_numel(out_shape)?)?;
    let (v, _) = reduce(x, dims, f);
    Ok(Tensor::from_vec(v, out_shape))
}

/// Sum in f64 for accuracy. Vectorised with independent lanes; from two blocks on the slice is
/// cut into fixed blocks (summed in parallel when there are threads) combined in order, so the
/// result depends only on the data, never on the thread count or scheduling (with one thread
/// the whole slice used to be one run: float64 sums could differ in the last bit).
#[inline]
pub fn sum_slice<T: Element>(s: &[T]) -> f64 {
    let run = |s: &[T]| -> f64 {
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
            // SAFETY: T is f32: the same memory, the same type.
            return simd::sum_f32(unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) });
        }
        simd::sum_run(s, &|v: T| v.to_f64())
    };
    if s.len() >= 2 * SUM_BLOCK && crate::backend::num_threads() > 1 {
        let parts: Vec<f64> = threads::map_collect(s.len().div_ceil(SUM_BLOCK), |c| run(&s[c * SUM_BLOCK..((c + 1) * SUM_BLOCK).min(s.len())]));
        return parts.iter().sum();
    }
    sum_blocks(s, run)
}

/// The block of `sum_slice`'s fixed split (from two blocks on).
const SUM_BLOCK: usize = 1 << 16;

/// `run` over `sum_slice`'s fixed blocks, on this thread, the partial sums added in order (one
/// run below two blocks): what `sum_slice` computes, for row kernels that sum as it does.
fn sum_blocks<T>(s: &[T], run: impl Fn(&[T]) -> f64) -> f64 {
    if s.len() < 2 * SUM_BLOCK {
        return run(s);
    }
    let parts: Vec<f64> = s.chunks(SUM_BLOCK).map(run).collect();
    parts.iter().sum()
}

/// Below this many multiply-adds a GEMM runs on the calling thread alone.
pub(crate) const GEMM_SPLIT_MIN: usize = 48 * 48 * 48;
/// From this many multiply-adds on, the gemm crate's own threading (which packs shared panels)
/// is used; in between, `gemm_f` splits C itself.
pub(crate) const GEMM_CRATE_PAR_MIN: usize = 768 * 768 * 768;

/// Whether a float32 product runs on `sgemm` rather than the gemm crate: an AVX-512 CPU, A
/// with its rows along k (a_cs == 1; a column-major A measured slower there), at least 128 rows
/// and 64 columns (with fewer rows, e.g. 64 x 784 x 256, it measured 5-10% slower than the crate
/// on operands in cache; from 128 rows -20% to +3%, and faster on a cold B), work in the range
/// the team splits or pairs (above it, the crate's own parallel blocking). A function of the
/// whole product (its shape and A's layout), so every way of cutting it (blocks per thread,
/// paired gradients, one thread) takes the same kernel. `FERROGRAD_GEMM=crate` (read once)
/// keeps every product on the crate, for comparisons, as does a SIMD level below AVX-512
/// (`simd::level`, which `FERROGRAD_SIMD` caps).
#[inline]
fn use_sgemm<T: Element>(m: usize, n: usize, k: usize, a_cs: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        T::DTYPE == DType::F32 && a_cs == 1 && m >= 128 && n >= 64 && (GEMM_SPLIT_MIN..GEMM_CRATE_PAR_MIN).contains(&(m * n * k)) && sgemm_enabled()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, n, k, a_cs);
        false
    }
}

#[cfg(target_arch = "x86_64")]
fn sgemm_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| simd::level() == 2 && std::env::var("FERROGRAD_GEMM").map_or(true, |v| v != "crate"))
}

/// C (m x n, row stride c_rs, unit column stride) = A @ B for float dtypes, through the gemm crate
/// (or `sgemm`, where `use_sgemm` says).
///
/// Threads: the crate's Parallelism::Rayon hands the whole product to rayon's pool and puts the
/// caller to sleep, and the pool's workers sleep between calls: at the sizes of small training
/// steps (64x784x256 in a 784-256-10 MLP, 32x512x512 in a 512-wide one) two threads measured slower than one. So mid-size
/// products are cut into one block of C per thread along its longer side (A's rows or B's
/// columns) and run on `team` (the caller and spinning helpers), each block by the crate
/// single-threaded (or `sgemm`): each element's dot product is over the full k in the same kernel.
///
/// SAFETY: A, B readable at every (row, col) offset their strides give; C writable for m x n.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_f<T: Element>(m: usize, n: usize, k: usize, c: SendPtr<T>, c_rs: usize, a: SendPtr<T>, a_rs: usize, a_cs: usize, b: SendPtr<T>, b_rs: usize, b_cs: usize) {
    let work = m * n * k;
    let threads = crate::backend::num_threads();
    // (decided for the whole product: every block below takes the same kernel)
    #[cfg(target_arch = "x86_64")]
    let ours = use_sgemm::<T>(m, n, k, a_cs);
    let call = |m: usize, n: usize, c: SendPtr<T>, a: SendPtr<T>, b: SendPtr<T>, par: gemm::Parallelism| unsafe {
        #[cfg(target_arch = "x86_64")]
        if ours {
            // SAFETY: the same views as the crate's call below; T is f32 and a_cs == 1, and the
            // SIMD level is 2 (use_sgemm): the CPU has the features sgemm is compiled for.
            return sgemm::sgemm(m, n, k, a.get() as *const f32, a_rs, b.get() as *const f32, b_rs, b_cs, c.get() as *mut f32, c_rs);
        }
        gemm::gemm::<T>(
            m, n, k,
            // gemm writes every element of dst and never reads it (read_dst = false).
            c.get(), 1, c_rs as isize,
            false,
            a.get(), a_cs as isize, a_rs as isize,
            b.get(), b_cs as isize, b_rs as isize,
            T::from_f64(0.0), T::from_f64(1.0),
            false, false, false,
            par,
        )
    };
    if threads <= 1 || work < GEMM_SPLIT_MIN {
        return call(m, n, c, a, b, gemm::Parallelism::None);
    }
    if work >= GEMM_CRATE_PAR_MIN {
        return call(m, n, c, a, b, gemm::Parallelism::Rayon(threads));
    }
    // Blocks along the longer side, aligned to the microkernel's tile (16 columns, 8 rows). The
    // crate adds each element's products in k-blocks whose size is its own choice (512 for a
    // product of at most 64 x 64, else from the cache sizes), so a block must not fall into the
    // small class when the whole product is not (with k > 512 that changed the bits: found with
    // 16 threads), and not be one row or column wide (a GEMV); fewer parts where they would.
    let (len, align, other) = if n >= m { (n, 16, m) } else { (m, 8, n) };
    let min_part = if k > 512 && other <= 64 && len > 64 { 65 } else { 2 };
    let mut parts = threads.min(len.div_ceil(align));
    let mut step = len.div_ceil(parts).next_multiple_of(align);
    while parts > 1 && (step < min_part || len - (len.div_ceil(step) - 1) * step < min_part) {
        parts -= 1;
        step = len.div_ceil(parts).next_multiple_of(align);
    }
    if parts <= 1 {
        return call(m, n, c, a, b, gemm::Parallelism::None);
    }
    let block = |p: usize| {
        let (lo, hi) = (p * step, ((p + 1) * step).min(len));
        if lo >= hi {
            return;
        }
        // SAFETY: block p covers rows/columns lo..hi only; the offsets stay inside the operands.
        unsafe {
            if n >= m {
                call(m, hi - lo, SendPtr(c.get().add(lo)), a, SendPtr(b.get().add(lo * b_cs)), gemm::Parallelism::None);
            } else {
                call(hi - lo, n, SendPtr(c.get().add(lo * c_rs)), SendPtr(a.get().add(lo * a_rs)), b, gemm::Parallelism::None);
            }
        }
    };
    threads::run(parts, threads, &block);
}

/// Sums over the middle axis of a contiguous (outer, r, inner) block with inner > 1 (a reduction
/// over dims that are not innermost, e.g. a bias gradient `g.sum(0)`): out[o, i] = Σ_k x[o, k, i],
/// row by row into f64 accumulators, vectorised over i. The generic `reduce` would first copy the
/// input transposed (measured 9x torch's time on a 784x256 sum(0)). Each output element's sum
/// runs over k in the same order (in fixed blocks of rows when there are few columns) whatever
/// the thread count, so the result does not depend on it.
pub fn sum_middle<T: Element>(x: &[T], outer: usize, r: usize, inner: usize) -> Vec<T> {
    // i is processed in blocks whose accumulators stay in L1
    const IB: usize = 1024;
    let n = outer * inner;
    let fill = |lo: usize, d: &mut [MaybeUninit<T>]| {
        let mut acc = [0f64; IB];
        let mut done = 0;
        while done < d.len() {
            let (o, i0) = ((lo + done) / inner, (lo + done) % inner);
            let len = (inner - i0).min(IB).min(d.len() - done);
            let acc = &mut acc[..len];
            acc.fill(0.0);
            for k in 0..r {
                let at = (o * r + k) * inner + i0;
                simd::acc_run(acc, &x[at..at + len], &|v: T| v.to_f64());
            }
            for (dst, &a) in d[done..done + len].iter_mut().zip(acc.iter()) {
                dst.write(T::from_f64(a));
            }
            done += len;
        }
    };
    const RB: usize = 128;
    // The path depends on the shape only, never on the thread count: rows in order, in parallel
    // over blocks of columns when there are enough of them; else, with many rows, ...
    if n * r < PAR_THRESHOLD || r <= RB || n >= 2 * IB {
        let ch = chunk_len(n * r).div_ceil(r).max(IB);
        return build(n, |out| threads::for_each_chunk_mut(out, ch, |c, d| fill(c * ch, d)));
    }
    // ... partial sums over fixed blocks of RB rows, added in block order.
    let blocks = r.div_ceil(RB);
    let partial: Vec<Vec<f64>> = threads::map_collect(blocks, |b| {
        let (k0, k1) = (b * RB, ((b + 1) * RB).min(r));
        let mut acc = vec![0f64; n];
        for o in 0..outer {
            let acc = &mut acc[o * inner..(o + 1) * inner];
            for k in k0..k1 {
                let at = (o * r + k) * inner;
                simd::acc_run(acc, &x[at..at + inner], &|v: T| v.to_f64());
            }
        }
        acc
    });
    let mut total = vec![0f64; n];
    for p in &partial {
        total.iter_mut().zip(p).for_each(|(t, &v)| *t += v);
    }
    total.into_iter().map(T::from_f64).collect()
}

/// softmax (or log_softmax) over the last dim of a contiguous (rows, n) block, one row at a time
/// while it is in cache: the same operations, in the same order and precision, as the composed
/// `x - amax`, `exp`, `sum` (f64, rounded to T), `log`, `- log` / `/ sum` (so the results are
/// those of the composition), without its five intermediate tensors.
pub fn softmax_lastdim<T>(x: &[T], rows: usize, n: usize, log: bool) -> Vec<T>
where
    T: Element + std::ops::Sub<Output = T> + std::ops::Div<Output = T>,
{
    let row = |r: usize, d: &mut [MaybeUninit<T>]| {
        let xr = &x[r * n..(r + 1) * n];
        // amax: NaN wins, as the reduction's
        let Some(m) = simd::max_run(xr) else { return };
        simd::map_run(xr, d, &|v: T| v - m);
        // SAFETY: map_run wrote all n elements.
        let shifted: &mut [T] = unsafe { std::slice::from_raw_parts_mut(d.as_mut_ptr() as *mut T, n) };
        let s = T::from_f64(sum_blocks(shifted, |c| simd::sum_run(c, &|v: T| math::exp(v).to_f64())));
        if log {
            let ls = math::log(s);
            simd::apply_run(shifted, &|v: T| v - ls);
        } else {
            simd::apply_run(shifted, &|v: T| math::exp(v) / s);
        }
    };
    build(rows * n, |out| {
        if rows * n >= PAR_THRESHOLD && rows > 1 && crate::backend::num_threads() > 1 {
            let per = chunk_len(rows * n).div_ceil(n).max(1);
            threads::for_each_chunk_mut(out, per * n, |c, d| d.chunks_mut(n).enumerate().for_each(|(i, d)| row(c * per + i, d)));
        } else {
            out.chunks_mut(n).enumerate().for_each(|(i, d)| row(i, d));
        }
    })
}

/// At most this many rows of A (or columns of B) count as few for the column-major-B paths of `gemm`.
const GEMM_SMALL_M: usize = 128;

/// C[m,n] = A[m,k] @ B[k,n] for strided 2-d operands, written into a fresh contiguous buffer.
/// `a`/`b` are (ptr offset, row stride, col stride) views into their storages.
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: Element>(m: usize, n: usize, k: usize, a: &[T], a_off: usize, a_rs: usize, a_cs: usize, b: &[T], b_off: usize, b_rs: usize, b_cs: usize, out: &mut [MaybeUninit<T>]) {
    assert!(out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out[..m * n].iter_mut().for_each(|o| {
            o.write(T::default());
        });
        return;
    }
    // Broadcast (stride-0) operands, e.g. the expanded gradient of sum()/mean() in backward:
    // when every row of A is the same row, every row of C is the same row (one GEMV, then
    // copies); likewise identical columns of B give identical columns of C. Saves m-1 (n-1)
    // redundant dot products per column (row); same values up to summation order.
    if m > 1 && a_rs == 0 {
        gemm::<T>(1, n, k, a, a_off, 0, a_cs, b, b_off, b_rs, b_cs, &mut out[..n]);
        let (first, rest) = out[..m * n].split_at_mut(n);
        rest.chunks_mut(n).for_each(|r| r.copy_from_slice(first));
        return;
    }
    if n > 1 && b_cs == 0 {
        let mut col: Vec<MaybeUninit<T>> = Vec::with_capacity(m);
        col.resize(m, MaybeUninit::uninit());
        gemm::<T>(m, 1, k, a, a_off, a_rs, a_cs, b, b_off, b_rs, 0, &mut col);
        for (i, r) in out[..m * n].chunks_mut(n).enumerate() {
            // SAFETY: gemm initialised all m elements of col.
            let v = unsafe { col[i].assume_init() };
            r.iter_mut().for_each(|o| {
                o.write(v);
            });
        }
        return;
    }
    // A column-major B (the transposed weight in a linear layer's backward, g @ W.T): the gemm
    // crate works on C^T = B^T A^T and packs B^T, then a row-major matrix, one element at a time
    // (as long as the product itself at m = 32; ~15% of a 256^3 product). With few rows of A and
    // many columns, compute D = B^T A^T (n x m) into a scratch, where the large operand has the
    // crate's preferred layout, and transpose the small D into C (m*n elements moved instead of
    // k*n); otherwise move B into row-major order first (register transposes, split over the
    // team when large), then multiply, up to a B of 4M elements (a larger one would be a large
    // scratch copy for a product where the crate's packing weighs less).
    if b_rs == 1 && b_cs != 1 && k >= 8 && n >= 8 && matches!(T::DTYPE, DType::F32 | DType::F64) && !use_sgemm::<T>(m, n, k, a_cs) {
        if m <= GEMM_SMALL_M && n > GEMM_SMALL_M {
            let d: Vec<T> = build(n * m, |o| gemm::<T>(n, m, k, b, b_off, b_cs, 1, a, a_off, a_cs, a_rs, o));
            transpose_tile(m, n, &d, 0, m, out.as_mut_ptr() as *mut T, n);
            return;
        }
        if m <= GEMM_SMALL_M || k * n <= 1 << 22 {
            let bt: Vec<T> = build(k * n, |o| gather_transposed(&[k, n], &[1, b_cs], 0, b_off, b, o));
            gemm::<T>(m, n, k, a, a_off, a_rs, a_cs, &bt, 0, n, 1, out);
            return;
        }
    }
    match T::DTYPE {
        DType::F32 | DType::F64 => {
            let (a, b, c) = (SendPtr(unsafe { a.as_ptr().add(a_off) } as *mut T), SendPtr(unsafe { b.as_ptr().add(b_off) } as *mut T), SendPtr(out.as_mut_ptr() as *mut T));
            // SAFETY: the views lie inside their slices (the callers' layouts), and C has m*n elements.
            unsafe { gemm_f(m, n, k, c, n, a, a_rs, a_cs, b, b_rs, b_cs) }
        }
        _ => {
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0i64;
                    for p in 0..k {
                        acc = acc.wrapping_add(a[a_off + i * a_rs + p * a_cs].to_i64().wrapping_mul(b[b_off + p * b_rs + j * b_cs].to_i64()));
                    }
                    out[i * n + j].write(T::from_i64(acc));
                }
            }
        }
    }
}

#[cfg(test)]
mod timing {
    /// `cargo test --release --no-default-features --lib -- --ignored --nocapture gemm_timing`
    #[test]
    #[ignore]
    fn gemm_timing() {
        for &(m, k, n, reps) in &[(1024usize, 1024usize, 1024usize, 15usize), (32, 512, 512, 400), (512, 32, 512, 400), (256, 256, 256, 100)] {
            let a: Vec<f32> = (0..m * k).map(|i| (i % 17) as f32 * 0.1).collect();
            let b: Vec<f32> = (0..k * n).map(|i| (i % 13) as f32 * 0.1).collect();
            let mut c = vec![std::mem::MaybeUninit::<f32>::uninit(); m * n];
            for (name, ta) in [("NN", false), ("TN", true)] {
                let mut best = f64::MAX;
                for _ in 0..reps {
                    let t = std::time::Instant::now();
                    if ta {
                        // A stored transposed (k x m), read through strides.
                        super::gemm::<f32>(m, n, k, &a, 0, 1, m, &b, 0, n, 1, &mut c);
                    } else {
                        super::gemm::<f32>(m, n, k, &a, 0, k, 1, &b, 0, n, 1, &mut c);
                    }
                    best = best.min(t.elapsed().as_secs_f64());
                }
                println!("{m}x{k}x{n} {name}: {:.1} GFLOP/s ({:.3} ms)", 2.0 * (m * n * k) as f64 / best / 1e9, best * 1e3);
            }
        }
    }
}
