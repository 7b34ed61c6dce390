//! NCCL collectives on device tensors, for `ferrograd.distributed`'s "nccl" backend.
//!
//! NCCL is loaded at run time, like the rest of the CUDA stack. cudarc's NCCL bindings look for the
//! library under unversioned or CUDA-versioned names only, while the NVIDIA pip package that torch
//! installs ships `libnccl.so.2` off the loader path; so the few entry points used here are bound by
//! hand (NCCL's stable C API) from the library found by path. All work is queued on the default
//! stream, after the kernels that produced the buffers.

use super::driver;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

/// ncclUniqueId: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct UniqueId {
    pub internal: [c_char; 128],
}

type Comm = *mut c_void;
type Stream = *mut c_void;

struct Api {
    _lib: libloading::Library,
    get_version: unsafe extern "C" fn(*mut c_int) -> c_int,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> c_int,
    comm_init_rank: unsafe extern "C" fn(*mut Comm, c_int, UniqueId, c_int) -> c_int,
    comm_destroy: unsafe extern "C" fn(Comm) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, Stream) -> c_int,
    reduce_scatter: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, Comm, Stream) -> c_int,
}

fn load() -> std::result::Result<Api, String> {
    let path = driver::find_library("libnccl.so").ok_or("NCCL not found: no libnccl.so.2 in the NVIDIA pip packages (nvidia-nccl-cu13, which torch installs), /usr/local/cuda/lib64 or on the loader path")?;
    // SAFETY: loading NVIDIA's library runs its initialisers; the symbols below are NCCL's C API
    // with these signatures (nccl.h, stable since NCCL 2.0; ncclAvg since 2.10).
    unsafe {
        let lib = libloading::Library::new(&path).map_err(|e| format!("NCCL could not be loaded from {}: {e}", path.display()))?;
        macro_rules! sym {
            ($name:literal) => {
                *lib.get($name).map_err(|e| format!("NCCL symbol missing: {e}"))?
            };
        }
        Ok(Api {
            get_version: sym!(b"ncclGetVersion"),
            get_unique_id: sym!(b"ncclGetUniqueId"),
            comm_init_rank: sym!(b"ncclCommInitRank"),
            comm_destroy: sym!(b"ncclCommDestroy"),
            error_string: sym!(b"ncclGetErrorString"),
            all_reduce: sym!(b"ncclAllReduce"),
            broadcast: sym!(b"ncclBroadcast"),
            all_gather: sym!(b"ncclAllGather"),
            reduce_scatter: sym!(b"ncclReduceScatter"),
            _lib: lib,
        })
    }
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|e| Error::runtime(e.clone()))
}

fn check(api: &Api, what: &str, r: c_int) -> Result<()> {
    if r == 0 {
        return Ok(());
    }
    // SAFETY: NCCL returns a static string for any result code.
    let msg = unsafe { std::ffi::CStr::from_ptr((api.error_string)(r)) }.to_string_lossy().into_owned();
    Err(Error::runtime(format!("NCCL error in {what}: {msg} (code {r})")))
}

/// Is NCCL loadable (and a device present)?
pub fn available() -> bool {
    super::has_kernels() && api().is_ok()
}

/// NCCL's version code (e.g. 23007 for 2.30.7).
pub fn version() -> Result<i32> {
    let a = api()?;
    let mut v = 0;
    // SAFETY: one out-parameter.
    check(a, "ncclGetVersion", unsafe { (a.get_version)(&mut v) })?;
    Ok(v)
}

pub fn unique_id() -> Result<Vec<u8>> {
    let a = api()?;
    let mut id = UniqueId { internal: [0; 128] };
    // SAFETY: one out-parameter of the right size.
    check(a, "ncclGetUniqueId", unsafe { (a.get_unique_id)(&mut id) })?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// A communicator for `rank` of `nranks` (every rank passes the same id); returned as an address.
pub fn init(id: &[u8], nranks: i32, rank: i32) -> Result<usize> {
    let a = api()?;
    if id.len() != 128 {
        return Err(Error::value(format!("an NCCL unique id has 128 bytes, got {}", id.len())));
    }
    driver::gpu()?; // NCCL uses the current context
    let mut uid = UniqueId { internal: [0; 128] };
    for (d, s) in uid.internal.iter_mut().zip(id) {
        *d = *s as c_char;
    }
    let mut comm: Comm = std::ptr::null_mut();
    // SAFETY: out-parameter comm; the id came from ncclGetUniqueId on the root rank.
    check(a, "ncclCommInitRank", unsafe { (a.comm_init_rank)(&mut comm, nranks, uid, rank) })?;
    Ok(comm as usize)
}

pub fn destroy(comm: usize) -> Result<()> {
    let a = api()?;
    driver::gpu()?;
    // SAFETY: comm came from `init` and is destroyed once (the Python group forgets it).
    check(a, "ncclCommDestroy", unsafe { (a.comm_destroy)(comm as Comm) })
}

fn dtype_code(dt: DType) -> Result<c_int> {
    Ok(match dt {
        DType::F32 => 7,
        DType::F64 => 8,
        DType::I64 => 4,
        DType::Bool | DType::U8 => 1, // uint8
        DType::I8 => 0,
        DType::I32 => 2,
        DType::F16 => 6,
        DType::BF16 => 9,
        DType::I16 => return Err(crate::error::Error::runtime("NCCL has no int16 type: convert the tensor (to int32) first")),
    })
}

/// NCCL's ncclRedOp_t: sum, prod, max, min, avg.
fn op_code(op: &str) -> Result<c_int> {
    Ok(match op {
        "sum" => 0,
        "prod" => 1,
        "max" => 2,
        "min" => 3,
        "avg" => 4,
        _ => return Err(Error::value(format!("unsupported NCCL reduce op {op}"))),
    })
}

fn device_buffer(t: &Tensor, what: &str) -> Result<(u64, usize)> {
    if !t.is_cuda() {
        return Err(Error::runtime(format!("NCCL collectives take CUDA tensors; {what} is on {}", t.device())));
    }
    if !t.is_contiguous() {
        return Err(Error::runtime(format!("NCCL collectives take contiguous tensors; {what} is not")));
    }
    let d = t.read_data();
    Ok((d.storage.as_ptr() as u64 + (d.layout.offset * d.storage.dtype().size()) as u64, d.layout.numel()))
}

/// In place: every rank's `t` becomes the reduction over ranks.
pub fn all_reduce(comm: usize, t: &Tensor, op: &str) -> Result<()> {
    let a = api()?;
    driver::gpu()?;
    let (p, n) = device_buffer(t, "tensor")?;
    // SAFETY: p addresses n contiguous elements of t's dtype on the device.
    check(a, "ncclAllReduce", unsafe { (a.all_reduce)(p as *const c_void, p as *mut c_void, n, dtype_code(t.dtype())?, op_code(op)?, comm as Comm, std::ptr::null_mut()) })?;
    t.bump_version();
    Ok(())
}

pub fn broadcast(comm: usize, t: &Tensor, root: i32) -> Result<()> {
    let a = api()?;
    driver::gpu()?;
    let (p, n) = device_buffer(t, "tensor")?;
    // SAFETY: as all_reduce.
    check(a, "ncclBroadcast", unsafe { (a.broadcast)(p as *const c_void, p as *mut c_void, n, dtype_code(t.dtype())?, root, comm as Comm, std::ptr::null_mut()) })?;
    t.bump_version();
    Ok(())
}

/// `out` (world × inp.numel() elements) receives every rank's `inp`, in rank order.
pub fn all_gather(comm: usize, out: &Tensor, inp: &Tensor) -> Result<()> {
    let a = api()?;
    driver::gpu()?;
    let (po, _) = device_buffer(out, "output")?;
    let (pi, n) = device_buffer(inp, "input")?;
    // SAFETY: out holds world * n elements (checked by the Python caller).
    check(a, "ncclAllGather", unsafe { (a.all_gather)(pi as *const c_void, po as *mut c_void, n, dtype_code(inp.dtype())?, comm as Comm, std::ptr::null_mut()) })?;
    out.bump_version();
    Ok(())
}

/// `out` receives this rank's block of the reduction of every rank's `inp` (world × out.numel()).
pub fn reduce_scatter(comm: usize, out: &Tensor, inp: &Tensor, op: &str) -> Result<()> {
    let a = api()?;
    driver::gpu()?;
    let (po, n) = device_buffer(out, "output")?;
    let (pi, _) = device_buffer(inp, "input")?;
    // SAFETY: inp holds world * n elements (checked by the Python caller).
    check(a, "ncclReduceScatter", unsafe { (a.reduce_scatter)(pi as *const c_void, po as *mut c_void, n, dtype_code(out.dtype())?, op_code(op)?, comm as Comm, std::ptr::null_mut()) })?;
    out.bump_version();
    Ok(())
}
