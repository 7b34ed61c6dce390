//! A small team of spinning helper threads for mid-size kernels (a GEMM of a small training
//! step: tens to a few hundred microseconds of work).
//!
//! Why not rayon here: a call from outside rayon's pool injects the job and puts the caller to
//! sleep until a worker, itself asleep between calls, wakes and finishes; on this project's
//! 2-core machines that hand-off measured 15-20 us per call, as much as the work it splits (two
//! threads were slower than one on small MLP training steps). OpenMP, which torch uses, keeps its threads
//! spinning for a while after a parallel region and lets the caller take a share of the work.
//! The team does the same: the caller publishes a job, runs parts of it itself, and helpers that
//! are still spinning from the previous job pick the rest up within a fraction of a microsecond.
//! A helper that has seen no job for `SPIN` parks and is woken by the next job.
//!
//! One job at a time: a caller that finds the team busy (another thread's job) runs all parts
//! itself, and so does a rayon worker (a node of the parallel backward, beside the pool's other
//! workers). Parts are claimed from
//! a shared counter, so which thread runs which part varies, but each part's work does not, and
//! the results do not depend on it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long an idle helper keeps spinning before it parks.
const SPIN: Duration = Duration::from_micros(300);

/// A job being run: `parts` calls of `f`, claimed through `next`.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
    parts: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    /// The first panic of a part, re-raised on the calling thread once every part has run.
    panicked: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl Job<'_> {
    /// Claim and run parts until none is left.
    fn work(&self) {
        loop {
            let p = self.next.fetch_add(1, SeqCst);
            if p >= self.parts {
                return;
            }
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (self.f)(p))) {
                self.panicked.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

struct Team {
    /// The published job (a `Job` on the caller's stack), null when there is none.
    job: AtomicPtr<Job<'static>>,
    /// Bumped per published job, so a helper enters each job once.
    generation: AtomicUsize,
    /// Helpers between reading `job` and being done with it: the caller waits for 0 after
    /// withdrawing the job, so none touches it once the caller's frame is gone.
    active: AtomicUsize,
    /// Helpers parked (woken by the next job), with their index.
    parked: Mutex<Vec<(usize, Thread)>>,
    helpers: usize,
    /// How many helpers (those numbered below it) may enter the published job: the caller's
    /// thread count less one, which `set_num_threads` can lower and raise again.
    wanted: AtomicUsize,
    /// Held by the thread whose job is published.
    busy: Mutex<()>,
}

static TEAM: OnceLock<Team> = OnceLock::new();

/// The team, started on first use with one helper per thread of rayon's pool beside the caller
/// (the most `num_threads` can allow); a job takes as many as its caller's thread count asks.
fn team() -> &'static Team {
    TEAM.get_or_init(|| {
        let helpers = rayon::current_num_threads().saturating_sub(1);
        let spawned = (0..helpers)
            .take_while(|&i| std::thread::Builder::new().name(format!("ferrograd-team-{i}")).spawn(move || helper(i)).is_ok())
            .count();
        Team {
            job: AtomicPtr::new(std::ptr::null_mut()),
            generation: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            parked: Mutex::new(Vec::new()),
            helpers: spawned,
            wanted: AtomicUsize::new(0),
            busy: Mutex::new(()),
        }
    })
}

fn helper(index: usize) {
    // The team is initialised before helpers look at it (get_or_init returns after spawning,
    // so wait for it).
    let t = loop {
        if let Some(t) = TEAM.get() {
            break t;
        }
        std::thread::yield_now();
    };
    let mut seen = 0usize;
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    loop {
        let g = t.generation.load(SeqCst);
        if g != seen {
            seen = g;
            // (a job for fewer threads: stay out of it, and park in time as if idle)
            if index < t.wanted.load(SeqCst) {
                t.active.fetch_add(1, SeqCst);
                let p = t.job.load(SeqCst);
                if !p.is_null() {
                    // SAFETY: the caller keeps the job alive until `active` is back to 0.
                    unsafe { (*p).work() };
                }
                t.active.fetch_sub(1, SeqCst);
                idle_since = Instant::now();
            }
            continue;
        }
        spins = spins.wrapping_add(1);
        // (the clock is read every 64 rounds: it cost 1.6% of a 4M-element elementwise step when read every round)
        if spins % 64 != 0 || idle_since.elapsed() < SPIN {
            std::hint::spin_loop();
            continue;
        }
        // Park: register first, then re-check, so a job published in between is not missed
        // (the caller unparks the registered helpers its job wants after publishing).
        t.parked.lock().unwrap_or_else(|e| e.into_inner()).push((index, std::thread::current()));
        if t.generation.load(SeqCst) == seen {
            std::thread::park_timeout(Duration::from_millis(100));
        }
        t.parked.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != index);
        idle_since = Instant::now();
    }
}

/// Run `f(0) .. f(parts - 1)`, spread over the calling thread and up to `threads - 1` helpers;
/// returns when all are done. A panic in a part resumes here, with its payload, after every part
/// has run.
pub fn run(parts: usize, threads: usize, f: &(dyn Fn(usize) + Sync)) {
    // A rayon worker (a node of the parallel backward) already runs beside the pool's other
    // workers: splitting its kernel too would put more threads than cores to work.
    if parts <= 1 || threads <= 1 || rayon::current_thread_index().is_some() {
        (0..parts).for_each(f);
        return;
    }
    let t = team();
    let guard = match t.busy.try_lock() {
        Ok(g) => g,
        Err(_) => {
            (0..parts).for_each(f);
            return;
        }
    };
    if t.helpers == 0 {
        drop(guard);
        (0..parts).for_each(f);
        return;
    }
    let job = Job { f, parts, next: AtomicUsize::new(0), done: AtomicUsize::new(0), panicked: Mutex::new(None) };
    // SAFETY (lifetime): the job is withdrawn and every helper is out of it before this returns.
    let ptr = &job as *const Job<'_> as *mut Job<'static>;
    let wanted = (threads - 1).min(t.helpers);
    t.wanted.store(wanted, SeqCst);
    t.job.store(ptr, SeqCst);
    t.generation.fetch_add(1, SeqCst);
    for (_, h) in t.parked.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|(i, _)| *i < wanted) {
        h.unpark();
    }
    job.work();
    // (a helper preempted mid-part: after a while, let it have the core)
    let mut spins = 0u32;
    while job.done.load(SeqCst) < parts {
        spins = spins.wrapping_add(1);
        if spins % 1024 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    t.job.store(std::ptr::null_mut(), SeqCst);
    while t.active.load(SeqCst) != 0 {
        std::hint::spin_loop();
    }
    drop(guard);
    // (a part's panic is a bug in a kernel, never a user's input: it continues as it began)
    if let Some(payload) = job.panicked.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
    }
}

/// A raw pointer that may cross to another thread: the parts of a split kernel write disjoint
/// ranges through it and only read what they share.
pub struct SendPtr<T>(pub *mut T);
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: see the type's doc; every use keeps the written ranges disjoint.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole Send wrapper, not its field).
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// `f(i, chunk)` for each `ch`-element chunk of `out` (the last one shorter), on the team with
/// up to `crate::backend::num_threads()` threads.
pub fn for_each_chunk_mut<T>(out: &mut [T], ch: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let n = out.len();
    let ch = ch.max(1);
    let base = SendPtr(out.as_mut_ptr());
    run(n.div_ceil(ch), crate::backend::num_threads(), &|i| {
        let lo = i * ch;
        let hi = (lo + ch).min(n);
        // SAFETY: the chunks [lo, hi) are disjoint and inside `out`, which is borrowed mutably
        // for the whole call.
        f(i, unsafe { std::slice::from_raw_parts_mut(base.get().add(lo), hi - lo) });
    });
}

/// `[f(0), .., f(parts - 1)]`, computed on the team.
pub fn map_collect<R: Send>(parts: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut out: Vec<std::mem::MaybeUninit<R>> = Vec::with_capacity(parts);
    // SAFETY: MaybeUninit needs no initialisation.
    unsafe { out.set_len(parts) };
    for_each_chunk_mut(&mut out, 1, |i, slot| {
        slot[0].write(f(i));
    });
    // SAFETY: `run` returns after every part has run (a panic in one is re-raised, so this is
    // not reached with a slot unwritten).
    out.into_iter().map(|v| unsafe { v.assume_init() }).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_part_runs_once() {
        for parts in [0usize, 1, 2, 3, 17] {
            for _ in 0..200 {
                let hits: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
                super::run(parts, 2, &|p| {
                    hits[p].fetch_add(1, Ordering::Relaxed);
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn concurrent_callers_fall_back_to_serial() {
        let total = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..500 {
                        super::run(4, 2, &|p| {
                            total.fetch_add(p + 1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 500 * 10);
    }

    #[test]
    fn a_part_panic_resumes_on_the_caller_after_all_parts() {
        let ran = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            super::run(6, 2, &|p| {
                ran.fetch_add(1, Ordering::Relaxed);
                if p == 3 {
                    panic!("part three");
                }
            })
        }));
        let payload = r.expect_err("the panic must reach the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"part three"));
        assert_eq!(ran.load(Ordering::Relaxed), 6);
        // the team is free again
        let n = AtomicUsize::new(0);
        super::run(4, 2, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn chunks_and_collect() {
        let mut v = vec![0usize; 10_001];
        super::for_each_chunk_mut(&mut v, 1000, |i, c| c.iter_mut().for_each(|x| *x = i));
        assert!(v.iter().enumerate().all(|(j, &x)| x == j / 1000));
        assert_eq!(super::map_collect(7, |i| i * i), vec![0, 1, 4, 9, 16, 25, 36]);
    }
}
