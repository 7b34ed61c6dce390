//! A reference-counted, untyped buffer: host memory owned by Rust or borrowed from a foreign
//! owner (a NumPy array, so `from_numpy` can share memory), or device memory owned by a block of
//! the CUDA caching allocator.
//!
//! Host code reads a buffer only through `slice`/`slice_mut`, which refuse device memory: a code
//! path that forgot to dispatch to the device fails loudly instead of reading a device address.

use super::dtype::{Bits, DType, Element};
use crate::backend::Device;
use crate::error::{Error, Result};
use std::any::Any;

pub struct Storage {
    ptr: *mut u8,
    len: usize,
    /// The version counter of the tensors over this buffer that share one (Note [Version
    /// counters] in tensor/mod.rs).
    version: std::sync::atomic::AtomicU64,
    owner: Owner,
    dtype: DType,
    device: Device,
    /// Set once the buffer was handed to NumPy or DLPack (Note [Exported storage]).
    exported: std::sync::atomic::AtomicBool,
}

/// With its reference counts, a storage fills one 64-byte block.
const _: () = assert!(std::mem::size_of::<Storage>() == 48);

/// Who frees the buffer: a Rust Vec (its capacity kept here, freed in Drop, so an owned buffer
/// costs no extra allocation), or a foreign object (a NumPy array) dropped with the storage
/// (boxed twice: a thin pointer keeps the storage small).
enum Owner {
    Vec { capacity: usize },
    #[allow(dead_code)]
    Foreign(Box<Box<dyn Any + Send + Sync>>),
}

/// Panics (a bug, never user error) when host code reaches for device memory.
#[cold]
#[inline(never)]
fn device_memory_read_on_host(d: Device) -> ! {
    panic!("internal error: a {d} buffer was read as host memory (an op is missing its device dispatch)")
}

/// Panics (a bug, never user error) when a buffer is read as another element type.
#[cold]
#[inline(never)]
fn wrong_element_type(have: DType, want: DType) -> ! {
    panic!("internal error: a {have} buffer was read as {want} (an op is missing its dtype dispatch)")
}

#[cold]
#[inline(never)]
fn wrong_element_size(have: DType, size: usize) -> ! {
    panic!("internal error: a {have} buffer was read as {size}-byte elements")
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Owner::Vec { capacity } = self.owner {
            // SAFETY: ptr/len/capacity came from a Vec of this dtype's element size and alignment
            // (`from_vec`, `from_bits`); every element type is plain data.
            crate::with_bits!(self.dtype, C => unsafe {
                drop(Vec::<C>::from_raw_parts(self.ptr as *mut C, self.len, capacity));
            });
        }
    }
}

// The buffer is plain memory; concurrent writes are the caller's concern, as in torch.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

/// Physical memory in bytes (Linux: MemTotal), read once.
fn physical_memory() -> Option<usize> {
    static MEM: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *MEM.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    })
}

/// A RuntimeError naming the size when `len` elements of `dtype` cannot be allocated. With
/// overcommit an impossible request would "succeed" and the process die when the memory is
/// touched, so requests beyond physical memory are refused up front (as torch's allocator).
pub fn check_alloc(dtype: DType, len: usize) -> Result<()> {
    let bytes = len.checked_mul(dtype.size());
    match (bytes, physical_memory()) {
        (None, _) => Err(Error::runtime(format!("DefaultCPUAllocator: can't allocate memory: {} elements of {} overflow the address space.", len, dtype))),
        (Some(b), Some(mem)) if b > mem => Err(Error::runtime(format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes ({} elements of {}), more than this machine's {} bytes of memory.",
            b, len, dtype, mem
        ))),
        _ => Ok(()),
    }
}

impl Storage {
    pub fn from_vec<T: Element>(v: Vec<T>) -> Storage {
        let mut v = std::mem::ManuallyDrop::new(v);
        let ptr = v.as_mut_ptr() as *mut u8;
        Storage { ptr, len: v.len(), dtype: T::DTYPE, owner: Owner::Vec { capacity: v.capacity() }, device: Device::Cpu, version: Default::default(), exported: Default::default() }
    }
    /// Storage of `dtype` holding the element bits `v` (C has the dtype's size and alignment).
    pub fn from_bits<C: Bits>(v: Vec<C>, dtype: DType) -> Storage {
        if std::mem::size_of::<C>() != dtype.size() {
            wrong_element_size(dtype, std::mem::size_of::<C>());
        }
        let mut v = std::mem::ManuallyDrop::new(v);
        let ptr = v.as_mut_ptr() as *mut u8;
        Storage { ptr, len: v.len(), dtype, owner: Owner::Vec { capacity: v.capacity() }, device: Device::Cpu, version: Default::default(), exported: Default::default() }
    }
    /// Zero-filled storage (all-zero bits are zero in every dtype), or a RuntimeError naming the
    /// size when it cannot be allocated.
    pub fn zeros(dtype: DType, len: usize) -> Result<Storage> {
        check_alloc(dtype, len)?;
        crate::with_bits!(dtype, T => {
            let mut v: Vec<T> = Vec::new();
            v.try_reserve_exact(len).map_err(|_| {
                Error::runtime(format!(
                    "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.",
                    len.saturating_mul(dtype.size())
                ))
            })?;
            v.resize(len, T::default());
            Ok(Storage::from_bits(v, dtype))
        })
    }
    /// # Safety
    /// `ptr` must point to `len` valid elements of `dtype` for as long as `owner` lives.
    pub unsafe fn from_foreign(ptr: *mut u8, len: usize, dtype: DType, owner: Box<dyn Any + Send + Sync>) -> Storage {
        Storage { ptr, len, dtype, owner: Owner::Foreign(Box::new(owner)), device: Device::Cpu, version: Default::default(), exported: Default::default() }
    }
    /// Device memory: `ptr` is the device address of `len` elements of `dtype`, valid while
    /// `owner` (the allocator's block) lives.
    ///
    /// # Safety
    /// `ptr` must address at least `len` elements of `dtype` on `device` for as long as `owner` lives.
    pub unsafe fn from_device(ptr: *mut u8, len: usize, dtype: DType, device: Device, owner: Box<dyn Any + Send + Sync>) -> Storage {
        Storage { ptr, len, dtype, owner: Owner::Foreign(Box::new(owner)), device, version: Default::default(), exported: Default::default() }
    }
    /// The same memory read as `dtype` (x.view(dtype)): as many whole elements of `dtype` as the
    /// bytes hold; the new storage keeps `this` alive.
    pub fn reinterpret(this: &std::sync::Arc<Storage>, dtype: DType) -> Storage {
        let len = this.len * this.dtype.size() / dtype.size();
        Storage { ptr: this.ptr, len, dtype, owner: Owner::Foreign(Box::new(Box::new(this.clone()))), device: this.device, version: Default::default(), exported: Default::default() }
    }
    /// Element `i` as f64, when this is a host buffer of `dt`, float32 or float64, that holds it
    /// (the scalar lane's read of one-element tensors: Note [Scalar lane] in engine.rs).
    #[inline]
    pub fn float_at(&self, i: usize, dt: DType) -> Option<f64> {
        if self.dtype != dt || self.device != Device::Cpu || i >= self.len {
            return None;
        }
        match dt {
            DType::F32 => Some(self.slice::<f32>()[i] as f64),
            DType::F64 => Some(self.slice::<f64>()[i]),
            _ => None,
        }
    }
    /// Note [Exported storage]: a buffer handed to NumPy (`.numpy()`, `__array__`,
    /// `__array_interface__`) or DLPack may be written through the foreign array for as long as
    /// it lives. It is marked here: a tensor whose data is then replaced (`t.data = ...`,
    /// `resize_`) keeps it alive (`Tensor::set_data`), and `resize_` refuses to reallocate it,
    /// as torch refuses to resize a storage it shared.
    pub fn mark_exported(&self) {
        self.exported.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    pub fn is_exported(&self) -> bool {
        self.exported.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Whether `resize_` may give the tensor a new buffer: the buffer is Rust's own and was
    /// never exported (torch: a storage from NumPy or shared with it is not resizable).
    pub fn is_resizable(&self) -> bool {
        matches!(self.owner, Owner::Vec { .. }) && !self.is_exported()
    }
    /// The buffer's own version counter (Note [Version counters]).
    #[inline]
    pub fn version(&self) -> &std::sync::atomic::AtomicU64 {
        &self.version
    }
    pub fn device(&self) -> Device {
        self.device
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
        if T::DTYPE != self.dtype {
            wrong_element_type(self.dtype, T::DTYPE);
        }
        if self.device != Device::Cpu {
            device_memory_read_on_host(self.device);
        }
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len) }
    }
    /// The elements as their bits (storage-level code that only moves them).
    #[inline]
    pub fn bits<C: Bits>(&self) -> &[C] {
        if std::mem::size_of::<C>() != self.dtype.size() {
            wrong_element_size(self.dtype, std::mem::size_of::<C>());
        }
        if self.device != Device::Cpu {
            device_memory_read_on_host(self.device);
        }
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr as *const C, self.len) }
    }
    /// Mutable access to the elements' bits.
    ///
    /// # Safety
    /// No other slice of this storage may be read or written at the same time.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn bits_mut<C: Bits>(&self) -> &mut [C] {
        if std::mem::size_of::<C>() != self.dtype.size() {
            wrong_element_size(self.dtype, std::mem::size_of::<C>());
        }
        if self.device != Device::Cpu {
            device_memory_read_on_host(self.device);
        }
        if self.len == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.ptr as *mut C, self.len)
    }
    /// Mutable access for in-place ops and freshly made outputs.
    ///
    /// # Safety
    /// No other slice of this storage may be read or written at the same time.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut<T: Element>(&self) -> &mut [T] {
        if T::DTYPE != self.dtype {
            wrong_element_type(self.dtype, T::DTYPE);
        }
        if self.device != Device::Cpu {
            device_memory_read_on_host(self.device);
        }
        if self.len == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.ptr as *mut T, self.len)
    }
}
