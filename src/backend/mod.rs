//! Backends: `cpu` always; `cuda` with the `cuda` feature (without it, a backend that reports no
//! device).

pub mod cpu;
pub mod cuda;
pub mod threads;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads kernels may use: rayon's global pool, capped by `set_num_threads` (0 = the pool's size).
static THREAD_CAP: AtomicUsize = AtomicUsize::new(0);

/// Cap the threads kernels and the parallel backward use at `n`, as torch's set_num_threads, at
/// any time, up to the size of rayon's global pool (which cannot grow once started). If the pool
/// is not running yet it starts here: with `n` threads, or, for `n` = 1, with the machine's (or
/// RAYON_NUM_THREADS): a cap of one runs nothing on the pool, and `set_num_threads(1)` then
/// `set_num_threads(4)` is a common pattern. (A pool larger than the cap measured slower on a
/// 16-core machine capped at 4 threads, 1.1-1.6x on branched backward passes, so a pool is not
/// made larger than asked for otherwise.)
pub fn set_num_threads(n: usize) {
    let size = if n == 1 {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&v| v > 0)
            .or_else(|| std::thread::available_parallelism().ok().map(|v| v.get()))
            .unwrap_or(1)
    } else {
        n
    };
    let _ = rayon::ThreadPoolBuilder::new().num_threads(size).build_global();
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
