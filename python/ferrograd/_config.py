"""`ferrograd.show_config()`: how this ferrograd was built and what it found at run time, for bug
reports (as `numpy.show_config()` and `torch.__config__.show()`)."""

import sys

from . import _C


def config():
    """The facts `show_config` prints, as a dict: the native module's build information
    (version, compiled features, threads, SIMD level, CUDA) and the Python environment."""
    import platform

    info = dict(_C._build_info())
    info["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    info["platform"] = platform.platform(terse=True)
    info["native_module"] = getattr(_C, "__file__", None)
    return info


def _numpy_version():
    # without importing NumPy (that would cost more than ferrograd's own start-up)
    try:
        from importlib.metadata import version

        return version("numpy")
    except Exception:  # not installed, or no metadata
        return "not installed"


def show_config(file=None):
    """Print the build features (python, cuda), the thread pool, the SIMD level the CPU kernels
    use, whether CUDA is available and which CUDA libraries were found, and the versions."""
    c = config()
    libs = c.get("cuda_libraries") or {}
    if not c["cuda_compiled"]:
        cuda = "not compiled (build with `--features cuda`)"
    else:
        cuda = f"{'available' if c['cuda_available'] else 'not available'}, {c['cuda_device_count']} device(s)"
    lines = [
        f"ferrograd {c['version']}",
        f"  native module:   {c['native_module']}",
        f"  build features:  {', '.join(c['features'])}"
        + ("  (debug assertions on)" if c["debug_assertions"] else ""),
        f"  target:          {c['target']}",
        f"  threads:         {c['num_threads']} used by kernels, rayon pool of {c['thread_pool_size']}"
        " (FERROGRAD_NUM_THREADS, set_num_threads)",
        f"  SIMD level:      {c['simd_level']} = {c['simd']}"
        + (f"  (capped by FERROGRAD_SIMD={c['simd_cap_env']})" if c["simd_cap_env"] else ""),
        f"  CUDA:            {cuda}",
        "  CUDA libraries:  " + (", ".join(f"{k}: {v or 'not found'}" for k, v in libs.items()) or "none loaded yet (looked for on first use of the GPU or NVRTC)"),
        f"  Python:          {c['python']} on {c['platform']}",
        f"  NumPy:           {_numpy_version()}",
    ]
    print("\n".join(lines), file=file if file is not None else sys.stdout)
