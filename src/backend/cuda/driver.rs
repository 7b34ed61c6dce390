//! The real device through cudarc: context, caching allocator, copies, NVRTC-compiled kernels
//! (cached in memory and on disk) and cuBLAS.
//!
//! All work goes to the context's default (legacy) stream, so kernels, copies and cuBLAS calls
//! run in the order they were issued and a block returned to the cache can be reused by the next
//! kernel without a fence.

use super::{note_alloc, note_free, note_release, oom_error};
use crate::error::{Error, Result};
use cudarc::driver::{result as drv, sys, CudaContext};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

pub(super) struct Gpu {
    ctx: Arc<CudaContext>,
    pub arch: String,
    name: String,
    cc: (i32, i32),
    /// Free blocks by rounded size.
    free: Mutex<HashMap<usize, Vec<u64>>>,
    /// Kernel name -> function.
    funcs: Mutex<HashMap<String, Func>>,
    blas: Mutex<Option<Blas>>,
}

#[derive(Copy, Clone)]
pub(super) struct Func(sys::CUfunction);
// SAFETY: a CUfunction handle is valid in any thread once its context is current.
unsafe impl Send for Func {}
unsafe impl Sync for Func {}

pub(super) struct Blas(pub cudarc::cublas::sys::cublasHandle_t);
// SAFETY: the handle is only used under the `blas` mutex.
unsafe impl Send for Blas {}

fn err(e: impl std::fmt::Debug) -> Error {
    Error::runtime(format!("CUDA error: {e:?}"))
}

/// Is a driver with at least one device present? Never panics (the library is probed before
/// cudarc resolves anything from it).
pub(super) fn probe() -> bool {
    std::panic::catch_unwind(|| {
        // SAFETY: only tries to open the library.
        if !unsafe { sys::is_culib_present() } {
            return false;
        }
        drv::init().is_ok() && drv::device::get_count().map(|n| n > 0).unwrap_or(false)
    })
    .unwrap_or(false)
}

/// Folders Python searches for packages (sys.path), given at import: the NVIDIA pip packages
/// (which torch installs) keep their libraries under `<path>/nvidia/*/lib`, off the loader path.
static PY_PATHS: parking_lot::Mutex<Vec<std::path::PathBuf>> = parking_lot::Mutex::new(Vec::new());

pub fn set_python_paths(paths: Vec<std::path::PathBuf>) {
    *PY_PATHS.lock() = paths;
}

/// Load NVRTC and cuBLAS from the NVIDIA pip packages or the system's CUDA folder, globally, so
/// that cudarc's later dlopen by soname finds them. Libraries already on the loader path need
/// nothing; a folder without them is skipped.
/// (library, path) of what `preload_libraries` loaded, for show_config.
pub static PRELOADED: parking_lot::Mutex<Vec<(String, String)>> = parking_lot::Mutex::new(Vec::new());

/// Where CUDA libraries may be: the NVIDIA pip packages' folders, FERROGRAD_CUDA_LIB_DIRS and
/// the system's CUDA folder.
fn library_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for root in PY_PATHS.lock().iter() {
        let nv = root.join("nvidia");
        if let Ok(rd) = std::fs::read_dir(&nv) {
            for e in rd.flatten() {
                dirs.push(e.path().join("lib"));
            }
        }
    }
    if let Ok(extra) = std::env::var("FERROGRAD_CUDA_LIB_DIRS") {
        dirs.extend(std::env::split_paths(&extra));
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs
}

/// The first `<want>.<version>` file in the library folders (e.g. libnccl.so -> libnccl.so.2).
pub(super) fn find_library(want: &str) -> Option<std::path::PathBuf> {
    library_dirs().iter().find_map(|d| {
        let rd = std::fs::read_dir(d).ok()?;
        let mut names: Vec<std::path::PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).map(|n| n.starts_with(want) && n.len() > want.len() && n.as_bytes()[want.len()] == b'.').unwrap_or(false)
            })
            .collect();
        names.sort();
        names.into_iter().next()
    })
}

fn preload_libraries() {
    for want in ["libnvrtc-builtins.so", "libnvrtc.so", "libcublasLt.so", "libcublas.so"] {
        if let Some(path) = find_library(want) {
            // SAFETY: loading a shared library runs its initialisers; these are NVIDIA's own.
            if let Ok(lib) = unsafe { libloading::os::unix::Library::open(Some(&path), libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL) } {
                std::mem::forget(lib); // stays loaded for the process
                PRELOADED.lock().push((want.trim_end_matches(".so").to_string(), path.display().to_string()));
            }
        }
    }
}

static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();

/// The device, its context current on this thread.
pub(super) fn gpu() -> Result<&'static Gpu> {
    let g = GPU
        .get_or_init(|| {
            std::panic::catch_unwind(init).unwrap_or_else(|_| Err("the CUDA libraries could not be loaded".into()))
        })
        .as_ref()
        .map_err(|e| Error::runtime(e.clone()))?;
    g.ctx.bind_to_thread().map_err(err)?;
    Ok(g)
}

fn init() -> std::result::Result<Gpu, String> {
    preload_libraries();
    let ctx = CudaContext::new(0).map_err(|e| format!("CUDA error: {e:?}"))?;
    let cc = ctx.compute_capability().map_err(|e| format!("CUDA error: {e:?}"))?;
    let name = ctx.name().map_err(|e| format!("CUDA error: {e:?}"))?;
    Ok(Gpu {
        ctx,
        arch: format!("compute_{}{}", cc.0, cc.1),
        name,
        cc,
        free: Mutex::new(HashMap::new()),
        funcs: Mutex::new(HashMap::new()),
        blas: Mutex::new(None),
    })
}

pub(super) fn device_count() -> usize {
    drv::device::get_count().map(|n| n.max(0) as usize).unwrap_or(0)
}

pub(super) fn name() -> Result<String> {
    Ok(gpu()?.name.clone())
}

pub(super) fn capability() -> Result<(i32, i32)> {
    Ok(gpu()?.cc)
}

pub(super) fn synchronize() -> Result<()> {
    gpu()?.ctx.synchronize().map_err(err)
}

// ---- caching allocator ----------------------------------------------------------------------

/// A device block; dropping it returns it to the cache.
pub(super) struct Block {
    ptr: u64,
    bytes: usize,
}

impl Block {
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        note_free(self.bytes);
        if let Some(Ok(g)) = GPU.get() {
            g.free.lock().entry(self.bytes).or_default().push(self.ptr);
        }
    }
}

/// A block of exactly `bytes` (already rounded): from the cache, else from the driver; when the
/// driver is out of memory, the cache is emptied once and the allocation retried.
pub(super) fn alloc(bytes: usize) -> Result<Block> {
    let g = gpu()?;
    if let Some(p) = g.free.lock().get_mut(&bytes).and_then(|v| v.pop()) {
        note_alloc(bytes, false);
        return Ok(Block { ptr: p, bytes });
    }
    // SAFETY: a plain device allocation.
    let p = match unsafe { drv::malloc_sync(bytes) } {
        Ok(p) => p,
        Err(_) => {
            empty_cache();
            unsafe { drv::malloc_sync(bytes) }.map_err(|_| oom_error(bytes))?
        }
    };
    note_alloc(bytes, true);
    Ok(Block { ptr: p, bytes })
}

pub(super) fn empty_cache() {
    let Ok(g) = gpu() else { return };
    let _ = g.ctx.synchronize();
    let blocks: Vec<(usize, Vec<u64>)> = g.free.lock().drain().collect();
    for (bytes, ptrs) in blocks {
        for p in ptrs {
            // SAFETY: p came from malloc_sync and is not in use (it was in the free list).
            let _ = unsafe { drv::free_sync(p) };
            note_release(bytes);
        }
    }
}

// ---- copies ---------------------------------------------------------------------------------

/// # Safety
/// `src` readable for `bytes` host bytes, `dst` a device address writable for as many.
pub(super) unsafe fn htod(dst: u64, src: *const u8, bytes: usize) -> Result<()> {
    gpu()?;
    drv::memcpy_htod_sync(dst, std::slice::from_raw_parts(src, bytes)).map_err(err)
}

/// # Safety
/// `dst` writable for `bytes` host bytes, `src` a device address readable for as many.
pub(super) unsafe fn dtoh(dst: *mut u8, src: u64, bytes: usize) -> Result<()> {
    gpu()?;
    drv::memcpy_dtoh_sync(std::slice::from_raw_parts_mut(dst, bytes), src).map_err(err)
}

/// # Safety
/// Both device ranges valid for `bytes`.
pub(super) unsafe fn dtod(dst: u64, src: u64, bytes: usize) -> Result<()> {
    gpu()?;
    drv::memcpy_dtod_async(dst, src, bytes, std::ptr::null_mut()).map_err(err)
}

/// # Safety
/// The device range valid for `bytes`.
pub(super) unsafe fn memset0(dst: u64, bytes: usize) -> Result<()> {
    gpu()?;
    drv::memset_d8_async(dst, 0, bytes, std::ptr::null_mut()).map_err(err)
}

// ---- kernels --------------------------------------------------------------------------------

/// 64-bit FNV-1a: a hash that stays the same across builds (the disk cache's key).
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn cache_dir() -> Option<std::path::PathBuf> {
    if let Ok(d) = std::env::var("FERROGRAD_CACHE_DIR") {
        return Some(d.into());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    Some(base.join("ferrograd").join("kernels"))
}

fn nvrtc_version() -> (i32, i32) {
    let (mut a, mut b) = (0, 0);
    // SAFETY: two out-parameters.
    match std::panic::catch_unwind(move || unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b) }.result().map(|_| (a, b))) {
        Ok(Ok(v)) => v,
        _ => (0, 0),
    }
}

/// Compile `src` to PTX for `arch` with NVRTC (no GPU needed).
pub fn compile(src: &str, arch: &str) -> Result<String> {
    if !nvrtc_present() {
        return Err(Error::runtime("NVRTC could not be loaded: no libnvrtc in the NVIDIA pip packages, /usr/local/cuda/lib64 or on the loader path"));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        ..Default::default()
    };
    let ptx = std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|_| Error::runtime("NVRTC could not be loaded (libnvrtc not found)"))?
        .map_err(|e| match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => Error::runtime(format!("NVRTC failed to compile a ferrograd kernel:\n{}", log.to_string_lossy())),
            e => Error::runtime(format!("NVRTC error: {e:?}")),
        })?;
    Ok(ptx.to_src())
}

/// Is NVRTC loadable (after looking where torch's NVIDIA packages keep it)?
pub fn nvrtc_present() -> bool {
    static PRELOAD: std::sync::Once = std::sync::Once::new();
    PRELOAD.call_once(preload_libraries);
    // SAFETY: only tries to open the library.
    std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// PTX for `src`, from the disk cache when an earlier process compiled it.
fn ptx_for(src: &str, arch: &str) -> Result<String> {
    let (ma, mi) = nvrtc_version();
    let key = fnv(&[src.as_bytes(), arch.as_bytes(), format!("{ma}.{mi}").as_bytes()]);
    let path = cache_dir().map(|d| d.join(format!("{key:016x}.ptx")));
    if let Some(p) = &path {
        if let Ok(s) = std::fs::read_to_string(p) {
            return Ok(s);
        }
    }
    let ptx = compile(src, arch)?;
    if let Some(p) = &path {
        // Best effort: a read-only home only costs a recompile next time. Written to a temporary
        // name first so a concurrent reader never sees half a file.
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
            let tmp = p.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, &ptx).is_ok() {
                let _ = std::fs::rename(&tmp, p);
            }
        }
    }
    Ok(ptx)
}

/// The function `name` from the module made of `src` (compiled and loaded on first use).
pub(super) fn function(name: &str, src: impl FnOnce() -> String) -> Result<Func> {
    let g = gpu()?;
    if let Some(f) = g.funcs.lock().get(name) {
        return Ok(*f);
    }
    let src = src();
    let ptx = ptx_for(&src, &g.arch)?;
    let c = std::ffi::CString::new(ptx).map_err(err)?;
    // SAFETY: c is NUL-terminated PTX text; the module stays loaded for the process.
    let module = unsafe { drv::module::load_data(c.as_ptr() as *const c_void) }.map_err(err)?;
    let cname = std::ffi::CString::new(name).map_err(err)?;
    // SAFETY: the module is loaded; the name was generated with the source.
    let f = Func(unsafe { drv::module::get_function(module, cname) }.map_err(err)?);
    g.funcs.lock().insert(name.to_string(), f);
    Ok(f)
}

/// Compile every source of `srcs` for this device into the disk cache, on the rayon pool (NVRTC
/// compiles independent programs concurrently), so later first uses only load PTX. Returns how
/// many sources there were.
pub(super) fn precompile(srcs: &[(String, String)]) -> Result<usize> {
    use rayon::prelude::*;
    let arch = gpu()?.arch.clone();
    srcs.par_iter().try_for_each(|(name, src)| ptx_for(src, &arch).map(|_| ()).map_err(|e| Error::runtime(format!("kernel {name}: {e}"))))?;
    Ok(srcs.len())
}

/// Launch `f` on the default stream.
///
/// # Safety
/// `params` must match the kernel's parameters in number, order and type, and every pointer
/// among them must address device memory large enough for what the kernel touches.
pub(super) unsafe fn launch(f: Func, grid: (u32, u32, u32), block: (u32, u32, u32), shmem: u32, params: &mut [*mut c_void]) -> Result<()> {
    drv::launch_kernel(f.0, grid, block, shmem, std::ptr::null_mut(), params).map_err(err)
}

/// Run `body` with the cuBLAS handle (created on first use, bound to the default stream).
pub(super) fn with_blas<R>(body: impl FnOnce(&Blas) -> Result<R>) -> Result<R> {
    gpu()?;
    let mut b = gpu()?.blas.lock();
    if b.is_none() {
        // SAFETY: only tries to open the library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(Error::runtime("cuBLAS could not be loaded: no libcublas in the NVIDIA pip packages, /usr/local/cuda/lib64 or on the loader path"));
        }
        let h = std::panic::catch_unwind(cudarc::cublas::result::create_handle)
            .map_err(|_| Error::runtime("cuBLAS could not be loaded (libcublas not found)"))?
            .map_err(err)?;
        *b = Some(Blas(h));
    }
    match b.as_ref() {
        Some(h) => body(h),
        None => Err(Error::runtime("cuBLAS handle missing")),
    }
}

pub(super) fn blas_err(e: impl std::fmt::Debug) -> Error {
    Error::runtime(format!("CUDA error: cuBLAS {e:?}"))
}
