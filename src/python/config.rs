//! Build and runtime facts for `ferrograd.show_config()` and bug reports: version, compiled
//! features, threads, SIMD level, CUDA availability.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The vector ISA the CPU kernels dispatch to (see backend/cpu/simd.rs).
fn simd_name(level: u8) -> &'static str {
    match level {
        2 => "AVX-512 (F, VL, DQ)",
        1 => "AVX2+FMA",
        _ if cfg!(target_arch = "x86_64") => "baseline (SSE2)",
        _ => "baseline",
    }
}

/// A dict of what this build of the native module is and what it found at run time.
#[pyfunction]
fn _build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    let mut features = vec!["python"];
    if cfg!(feature = "cuda") {
        features.push("cuda");
    }
    d.set_item("features", features)?;
    d.set_item("debug_assertions", cfg!(debug_assertions))?;
    d.set_item("target", format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS))?;
    d.set_item("num_threads", crate::backend::num_threads())?;
    d.set_item("thread_pool_size", rayon::current_num_threads())?;
    let level = crate::backend::cpu::simd::level();
    d.set_item("simd_level", level)?;
    d.set_item("simd", simd_name(level))?;
    d.set_item("simd_cap_env", std::env::var("FERROGRAD_SIMD").ok())?;
    d.set_item("cuda_compiled", cfg!(feature = "cuda"))?;
    d.set_item("cuda_available", crate::backend::cuda::is_available())?;
    d.set_item("cuda_device_count", crate::backend::cuda::device_count())?;
    // library name -> path loaded from the NVIDIA pip packages or /usr/local/cuda (looked for on
    // first use of the device or NVRTC; libraries found on the loader path are not listed).
    let libs = PyDict::new(py);
    for (name, path) in crate::backend::cuda::native::loaded_libraries() {
        libs.set_item(name, path)?;
    }
    d.set_item("cuda_libraries", libs)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_build_info, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
