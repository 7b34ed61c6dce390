//! A reference-counted, untyped CPU buffer: either owned by Rust or borrowed from a foreign
//! owner (a NumPy array), so `from_numpy` can share memory.

use super::dtype::{DType, Element};
use crate::error::{Error, Result};
use std::any::Any;

pub struct Storage {
    ptr: *mut u8,
    len: usize,
    dtype: DType,
    _owner: Box<dyn Any + Send + Sync>,
}

// The buffer is plain memory; concurrent writes are the caller's concern, as in torch.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    pub fn from_vec<T: Element>(mut v: Vec<T>) -> Storage {
        let ptr = v.as_mut_ptr() as *mut u8;
        let len = v.len();
        Storage { ptr, len, dtype: T::DTYPE, _owner: Box::new(v) }
    }
    /// Zero-filled storage, or a RuntimeError naming the size when it cannot be allocated.
    pub fn zeros(dtype: DType, len: usize) -> Result<Storage> {
        crate::with_dtype!(dtype, T => {
            let mut v: Vec<T> = Vec::new();
            v.try_reserve_exact(len).map_err(|_| {
                Error::runtime(format!(
                    "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
                    len.saturating_mul(dtype.size())
                ))
            })?;
            v.resize(len, T::default());
            Ok(Storage::from_vec(v))
        })
    }
    /// # Safety
    /// `ptr` must point to `len` valid elements of `dtype` for as long as `owner` lives.
    pub unsafe fn from_foreign(ptr: *mut u8, len: usize, dtype: DType, owner: Box<dyn Any + Send + Sync>) -> Storage {
        Storage { ptr, len, dtype, _owner: owner }
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    #[inline]
    pub fn slice<T: Element>(&self) -> &[T] {
        debug_assert_eq!(T::DTYPE, self.dtype);
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len) }
    }
    /// Mutable access for in-place ops and freshly made outputs.
    ///
    /// # Safety
    /// No other slice of this storage may be read or written at the same time.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut<T: Element>(&self) -> &mut [T] {
        debug_assert_eq!(T::DTYPE, self.dtype);
        if self.len == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.ptr as *mut T, self.len)
    }
}
