//! Backends: `cpu` always; `cuda` with the `cuda` feature (without it, a backend that reports no
//! device).

pub mod cpu;
pub mod cuda;
pub mod team;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads kernels may use: rayon's global pool, capped by `set_num_threads` (0 = the pool's size).
static THREAD_CAP: AtomicUsize = AtomicUsize::new(0);

/// Size rayon's global pool if it is not running yet (FERROGRAD_NUM_THREADS or RAYON_NUM_THREADS
/// also size it at start); afterwards the request caps how many threads kernels use.
pub fn set_num_threads(n: usize) {
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
    THREAD_CAP.store(n.min(rayon::current_num_threads()), Ordering::Relaxed);
}

/// Set in a child made by fork(): rayon's worker threads do not exist there, so every kernel
/// runs on the calling thread (waiting on the pool would hang).
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn mark_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// Threads kernels may use; 1 means run sequentially.
#[inline]
pub fn num_threads() -> usize {
    if FORKED.load(Ordering::Relaxed) {
        return 1;
    }
    let cap = THREAD_CAP.load(Ordering::Relaxed);
    if cap == 0 {
        rayon::current_num_threads()
    } else {
        cap
    }
}

/// Where a tensor lives: host memory, or a CUDA device by ordinal.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    Cuda(u8),
}

impl Device {
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}
