//! The CUDA backend: device memory from a caching allocator, transfers, and the kernels.
//!
//! Two layers. Ops with a native kernel (elementwise, reductions, copies, casts, matmul through
//! cuBLAS, ...) call `native::*` when their inputs live on the device. Every other op still works
//! on device tensors: the CPU primitives (`cpu::map`, `cpu::zip`, ...) notice device operands,
//! run on host mirrors of them and move the result back (`host_mirror` / `to_device`), so
//! results and gradients stay on the device they belong to.
//!
//! Built without the `cuda` feature, or on a machine without a driver, no device is available
//! and asking for one is torch's error. `FERROGRAD_FAKE_CUDA=1` (read once, at first use) makes
//! a stand-in "cuda" device whose memory is host memory and which has no kernels: every op takes
//! the fallback path. It exists to test device placement and dispatch on machines without a GPU.

pub mod source;
#[cfg(feature = "cuda")]
mod driver;
#[cfg(feature = "cuda")]
pub mod native;
#[cfg(feature = "cuda")]
pub mod nccl;
/// Without the `cuda` feature there is no NCCL either.
#[cfg(not(feature = "cuda"))]
pub mod nccl {
    use crate::error::Result;
    use crate::tensor::Tensor;
    pub fn available() -> bool {
        false
    }
    pub fn version() -> Result<i32> {
        Err(super::unavailable())
    }
    pub fn unique_id() -> Result<Vec<u8>> {
        Err(super::unavailable())
    }
    pub fn init(_id: &[u8], _nranks: i32, _rank: i32) -> Result<usize> {
        Err(super::unavailable())
    }
    pub fn destroy(_comm: usize) -> Result<()> {
        Err(super::unavailable())
    }
    pub fn all_reduce(_comm: usize, _t: &Tensor, _op: &str) -> Result<()> {
        Err(super::unavailable())
    }
    pub fn broadcast(_comm: usize, _t: &Tensor, _root: i32) -> Result<()> {
        Err(super::unavailable())
    }
    pub fn all_gather(_comm: usize, _out: &Tensor, _inp: &Tensor) -> Result<()> {
        Err(super::unavailable())
    }
    pub fn reduce_scatter(_comm: usize, _out: &Tensor, _inp: &Tensor, _op: &str) -> Result<()> {
        Err(super::unavailable())
    }
}
#[cfg(not(feature = "cuda"))]
#[path = "native_stub.rs"]
pub mod native;

use crate::backend::Device;
use crate::error::{Error, Result};
use crate::tensor::layout::Layout;
use crate::tensor::{DType, Storage, Tensor};
use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Mode {
    None,
    Fake,
    #[cfg(feature = "cuda")]
    Real,
}

fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| {
        if std::env::var("FERROGRAD_FAKE_CUDA").map(|v| v == "1").unwrap_or(false) {
            return Mode::Fake;
        }
        #[cfg(feature = "cuda")]
        if driver::probe() {
            return Mode::Real;
        }
        Mode::None
    })
}

/// Is a CUDA device usable (never panics, never warns)?
pub fn is_available() -> bool {
    mode() != Mode::None
}

/// torch.backends.cuda.matmul.allow_tf32 (False by default, as torch's): float32 matmuls may
/// use TF32 tensor-core math (cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32).
static ALLOW_TF32: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn set_allow_tf32(allow: bool) {
    ALLOW_TF32.store(allow, std::sync::atomic::Ordering::Relaxed);
}

pub fn allow_tf32() -> bool {
    ALLOW_TF32.load(std::sync::atomic::Ordering::Relaxed)
}

/// True when kernels can run (a real device, not the fake one).
pub fn has_kernels() -> bool {
    #[cfg(feature = "cuda")]
    {
        mode() == Mode::Real
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

pub fn device_count() -> usize {
    match mode() {
        Mode::None => 0,
        Mode::Fake => 1,
        #[cfg(feature = "cuda")]
        Mode::Real => driver::device_count(),
    }
}

pub fn unavailable() -> Error {
    if cfg!(feature = "cuda") {
        Error::runtime("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")
    } else {
        Error::runtime("Torch not compiled with CUDA enabled")
    }
}

/// Ok when device `index` can hold tensors; torch's errors otherwise.
pub fn require(index: usize) -> Result<()> {
    if !is_available() {
        return Err(unavailable());
    }
    if index >= device_count() {
        return Err(Error::runtime("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."));
    }
    if index > 0 {
        return Err(Error::new(crate::error::ErrorKind::NotImplemented, format!("ferrograd uses one CUDA device (cuda:0); cuda:{index} is not supported yet")));
    }
    Ok(())
}

pub fn device_name(index: usize) -> Result<String> {
    require(index)?;
    match mode() {
        Mode::Fake => Ok("ferrograd fake CUDA device (host memory)".into()),
        #[cfg(feature = "cuda")]
        Mode::Real => driver::name(),
        Mode::None => Err(unavailable()),
    }
}

/// (major, minor) compute capability.
pub fn capability(index: usize) -> Result<(i32, i32)> {
    require(index)?;
    match mode() {
        #[cfg(feature = "cuda")]
        Mode::Real => driver::capability(),
        _ => Ok((0, 0)),
    }
}

/// Wait for all queued work.
pub fn synchronize() -> Result<()> {
    match mode() {
        #[cfg(feature = "cuda")]
        Mode::Real => driver::synchronize(),
        _ => Ok(()),
    }
}

// ---- memory ---------------------------------------------------------------------------------

/// Bytes in live tensors, the peak of that, and bytes held by the allocator (live + cached).
#[derive(Default, Clone, Copy)]
pub struct MemStats {
    pub allocated: usize,
    pub peak: usize,
    pub reserved: usize,
    pub alloc_calls: u64,
}

static STATS: Mutex<MemStats> = Mutex::new(MemStats { allocated: 0, peak: 0, reserved: 0, alloc_calls: 0 });

pub fn memory_stats() -> MemStats {
    *STATS.lock()
}

pub fn reset_peak_memory_stats() {
    let mut s = STATS.lock();
    s.peak = s.allocated;
}

/// Give cached blocks back to the driver.
pub fn empty_cache() {
    #[cfg(feature = "cuda")]
    if mode() == Mode::Real {
        driver::empty_cache();
    }
}

/// Allocation granularity: small sizes round up to 512 bytes, large ones to 2 MiB, so blocks of
/// one step are reused by the next.
pub(crate) fn round_size(bytes: usize) -> usize {
    let b = bytes.max(1);
    if b < (1 << 20) {
        b.next_multiple_of(512)
    } else {
        b.next_multiple_of(2 << 20)
    }
}

pub(crate) fn note_alloc(bytes: usize, fresh: bool) {
    let mut s = STATS.lock();
    s.allocated += bytes;
    s.peak = s.peak.max(s.allocated);
    if fresh {
        s.reserved += bytes;
        s.alloc_calls += 1;
    }
}

pub(crate) fn note_free(bytes: usize) {
    STATS.lock().allocated -= bytes;
}

pub(crate) fn note_release(bytes: usize) {
    STATS.lock().reserved -= bytes;
}

/// The fake device's memory: host memory with the same accounting.
struct FakeBlock {
    _buf: Vec<u64>,
    bytes: usize,
}

impl Drop for FakeBlock {
    fn drop(&mut self) {
        note_free(self.bytes);
        note_release(self.bytes);
    }
}

/// Uninitialised device storage for `len` elements of `dtype`.
pub fn alloc(dtype: DType, len: usize) -> Result<Storage> {
    let bytes = len.checked_mul(dtype.size()).ok_or_else(|| Error::runtime(format!("CUDA out of memory. Tried to allocate {len} elements of {dtype}, which overflows the address space.")))?;
    let rounded = round_size(bytes);
    match mode() {
        Mode::None => Err(unavailable()),
        Mode::Fake => {
            let mut buf: Vec<u64> = Vec::new();
            buf.try_reserve_exact(rounded / 8).map_err(|_| oom_error(rounded))?;
            buf.resize(rounded / 8, 0);
            let ptr = buf.as_mut_ptr() as *mut u8;
            note_alloc(rounded, true);
            let owner = FakeBlock { _buf: buf, bytes: rounded };
            // SAFETY: the buffer holds `rounded` >= len * size bytes and lives in the owner.
            Ok(unsafe { Storage::from_device(ptr, len, dtype, Device::Cuda(0), Box::new(owner)) })
        }
        #[cfg(feature = "cuda")]
        Mode::Real => {
            let block = driver::alloc(rounded)?;
            let ptr = block.ptr() as *mut u8;
            // SAFETY: the block holds `rounded` >= len * size bytes until it is dropped.
            Ok(unsafe { Storage::from_device(ptr, len, dtype, Device::Cuda(0), Box::new(block)) })
        }
    }
}

pub(crate) fn oom_error(bytes: usize) -> Error {
    let s = memory_stats();
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    Error::runtime(format!(
        "CUDA out of memory. Tried to allocate {:.2} MiB. Of the allocated memory {:.2} MiB is allocated by ferrograd, and {:.2} MiB is reserved by ferrograd but unallocated.",
        mib(bytes),
        mib(s.allocated),
        mib(s.reserved.saturating_sub(s.allocated))
    ))
}

/// Copy `bytes` bytes from host `src` to device address `dst`.
///
/// # Safety
/// `src` must be readable for `bytes` bytes and `dst` writable for as many on the device.
unsafe fn htod(dst: *mut u8, src: *const u8, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    match mode() {
        #[cfg(feature = "cuda")]
        Mode::Real => driver::htod(dst as u64, src, bytes),
        _ => {
            std::ptr::copy_nonoverlapping(src, dst, bytes);
            Ok(())
        }
    }
}

/// Copy `bytes` bytes from device address `src` to host `dst` (waits for queued work).
///
/// # Safety
/// `dst` must be writable for `bytes` bytes and `src` readable for as many on the device.
unsafe fn dtoh(dst: *mut u8, src: *const u8, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    match mode() {
        #[cfg(feature = "cuda")]
        Mode::Real => driver::dtoh(dst, src as u64, bytes),
        _ => {
            std::ptr::copy_nonoverlapping(src, dst, bytes);
            Ok(())
        }
    }
}

/// A host copy of a whole device storage (same length and dtype).
pub fn storage_to_host(s: &Storage) -> Result<Storage> {
    let host = Storage::zeros(s.dtype(), s.len())?;
    // SAFETY: both buffers hold len elements of the dtype.
    unsafe { dtoh(host.as_ptr(), s.as_ptr(), s.len() * s.dtype().size())? };
    Ok(host)
}

/// Overwrite a whole device storage with a host storage of the same length and dtype.
pub fn storage_from_host(dst: &Storage, src: &Storage) -> Result<()> {
    debug_assert_eq!(dst.len(), src.len());
    // SAFETY: both buffers hold len elements of the dtype.
    unsafe { htod(dst.as_ptr(), src.as_ptr(), src.len() * src.dtype().size()) }
}

/// Is this tensor's memory on a CUDA device?
#[inline]
pub fn is_cuda(t: &Tensor) -> bool {
    t.device() != Device::Cpu
}

/// A host tensor with the same values and layout (the whole storage is copied, so views keep
/// their strides): what the CPU code of an op without a device kernel reads.
pub fn host_mirror(t: &Tensor) -> Result<Tensor> {
    let d = t.data();
    if d.storage.device() == Device::Cpu {
        return Ok(t.clone());
    }
    let host = storage_to_host(&d.storage)?;
    Ok(Tensor::from_storage(Arc::new(host), d.layout))
}

/// `t` on `device`: itself when already there, else a contiguous copy there (no autograd).
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    let src = t.device();
    if src == device {
        return Ok(t.clone());
    }
    let shape = t.shape();
    match (src, device) {
        (Device::Cpu, Device::Cuda(i)) => {
            require(i as usize)?;
            let c = crate::backend::cpu::contiguous(t)?;
            let d = c.data();
            let n = d.layout.numel();
            let out = alloc(c.dtype(), n)?;
            // SAFETY: the host tensor is contiguous from its offset for n elements.
            unsafe {
                let sz = c.dtype().size();
                htod(out.as_ptr(), d.storage.as_ptr().add(d.layout.offset * sz), n * sz)?;
            }
            Ok(Tensor::from_storage(Arc::new(out), Layout::contiguous(&shape)))
        }
        (Device::Cuda(_), Device::Cpu) => {
            let c = contiguous(t)?;
            let d = c.data();
            let n = d.layout.numel();
            let out = Storage::zeros(c.dtype(), n)?;
            // SAFETY: the device tensor is contiguous from its offset for n elements.
            unsafe {
                let sz = c.dtype().size();
                dtoh(out.as_ptr(), d.storage.as_ptr().add(d.layout.offset * sz), n * sz)?;
            }
            Ok(Tensor::from_storage(Arc::new(out), Layout::contiguous(&shape)))
        }
        _ => Err(Error::runtime(format!("cannot move a tensor from {src} to {device}"))),
    }
}

/// A contiguous device copy of a device tensor (the tensor itself is not returned even when
/// it is contiguous; callers check first when a view will do).
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if has_kernels() {
        return native::contiguous(t);
    }
    let h = crate::backend::cpu::contiguous(&host_mirror(t)?)?;
    to_device(&h, t.device())
}

/// Run a host computation `f` on host mirrors of `ts` and place its result on their device:
/// the generic path of an op without a device kernel. CPU inputs pass through untouched.
pub fn via_host(ts: &[&Tensor], f: impl FnOnce(&[Tensor]) -> Result<Tensor>) -> Result<Tensor> {
    let dev = common_device(ts)?;
    let hs: Vec<Tensor> = ts.iter().map(|t| host_mirror(t)).collect::<Result<_>>()?;
    place(f(&hs)?, dev)
}

/// Run an in-place host computation on a mirror of the device tensor `x` and write the whole
/// storage back (the in-place ops without a device kernel).
pub fn modify_on_host(x: &Tensor, f: impl FnOnce(&Tensor) -> Result<()>) -> Result<()> {
    let h = host_mirror(x)?;
    f(&h)?;
    storage_from_host(&x.storage(), &h.storage())
}

/// The result of a host computation placed on `device` (a no-op for the CPU).
pub fn place(t: Tensor, device: Device) -> Result<Tensor> {
    if device == Device::Cpu {
        Ok(t)
    } else {
        to_device(&t, device)
    }
}

/// Zeros on a device.
pub fn zeros(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    full(shape, 0.0, dtype, device)
}

/// A tensor filled with `value` on `device`.
pub fn full(shape: &[usize], value: f64, dtype: DType, device: Device) -> Result<Tensor> {
    if device == Device::Cpu {
        return Tensor::full(shape, value, dtype);
    }
    if let Device::Cuda(i) = device {
        require(i as usize)?;
    }
    let n = crate::tensor::layout::checked_numel(shape)?;
    if has_kernels() {
        let s = alloc(dtype, n)?;
        let t = Tensor::from_storage(Arc::new(s), Layout::contiguous(shape));
        native::fill(&t, value)?;
        return Ok(t);
    }
    to_device(&Tensor::full(shape, value, dtype)?, device)
}

/// Write `src` into the device tensor `dst` through its layout (dst's dtype; broadcast).
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let src = if src.device() != dst.device() { to_device(src, dst.device())? } else { src.clone() };
    if has_kernels() {
        return native::copy_into(dst, &src);
    }
    // Fallback: write into a host mirror of dst's whole storage, then put the storage back.
    let hsrc = host_mirror(&src)?;
    modify_on_host(dst, |hd| crate::backend::cpu::copy_into(hd, &hsrc))
}

/// torch's message for operands on different devices.
pub fn device_mismatch(a: Device, b: Device) -> Error {
    Error::runtime(format!("Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"))
}

/// The device an op over `ts` runs on: the common device, where a CPU tensor with one element
/// and no dims (a Python number or a 0-d tensor) may join device tensors, as in torch.
pub fn common_device(ts: &[&Tensor]) -> Result<Device> {
    let mut dev = Device::Cpu;
    for t in ts {
        let d = t.device();
        if d == Device::Cpu || d == dev {
            continue;
        }
        if dev != Device::Cpu {
            return Err(device_mismatch(dev, d));
        }
        dev = d;
    }
    if dev != Device::Cpu {
        for t in ts {
            if t.device() == Device::Cpu && t.ndim() != 0 {
                return Err(device_mismatch(dev, Device::Cpu));
            }
        }
    }
    Ok(dev)
}
