//! Backends. Storage dispatch lives here; `cpu` is always built, `cuda` is a stub unless the
//! `cuda` feature is on.

pub mod cpu;
pub mod cuda;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads kernels may use: rayon's global pool, capped by `set_num_threads` (0 = the pool's size).
static THREAD_CAP: AtomicUsize = AtomicUsize::new(0);

/// Size rayon's global pool if it is not running yet (FERROGRAD_NUM_THREADS or RAYON_NUM_THREADS
/// also size it at start); afterwards the request caps how many threads kernels use.
pub fn set_num_threads(n: usize) {
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
    THREAD_CAP.store(n.min(rayon::current_num_threads()), Ordering::Relaxed);
}

pub fn num_threads() -> usize {
    let cap = THREAD_CAP.load(Ordering::Relaxed);
    if cap == 0 {
        rayon::current_num_threads()
    } else {
        cap
    }
}

/// Where a tensor lives. Only the CPU exists until the CUDA backend lands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
        }
    }
}
