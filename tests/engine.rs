//! Engine tests without Python: tape release (10-million-node chains, built, backpropagated and
//! dropped without a stack overflow), the arena returning to where it was, retain_graph and the
//! second-backward error, version counters, grad mode, determinism of accumulation, parallel
//! backward against the sequential engine (bitwise gradients, errors, hook order), and gradient
//! values of composite expressions against hand-derived formulas.
//!
//! Every test here touches the global arena, and the cargo test harness runs tests in parallel
//! threads, so each test takes the `serial()` lock: live-node counts are then exact, and a test
//! compares the count after with the count before.

use ferrograd::autograd::engine::{set_parallel_backward, ParallelBackward};
use ferrograd::autograd::{arena_capacity, is_grad_enabled, live_nodes, profiler, run_backward, BackwardRequest, GradModeGuard};
use ferrograd::ops;
use ferrograd::tensor::Tensor;
use ferrograd::{DType, Error, Result};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Helpers

static SERIAL: Mutex<()> = Mutex::new(());

/// Serialize the tests of this binary (they share the arena). A failed test poisons the mutex;
/// the others still run.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `root.backward(retain_graph=keep_graph)` for a single-element root.
fn backward(root: &Tensor, keep_graph: bool) -> Result<()> {
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(root),
        grads: vec![None],
        keep_graph,
        create_graph: false,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    })
    .map(|_| ())
}

/// `root.backward(create_graph=True)`.
fn backward_create_graph(root: &Tensor) -> Result<()> {
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(root),
        grads: vec![None],
        keep_graph: true,
        create_graph: true,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    })
    .map(|_| ())
}

/// `autograd.grad(root, inputs)`: the gradients, without touching `.grad`.
fn grad_of(root: &Tensor, inputs: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(root),
        grads: vec![None],
        keep_graph: false,
        create_graph: false,
        inputs: Some(inputs),
        accumulate: false,
        allow_unused: false,
    })
}

fn leaf64(v: Vec<f64>, shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

fn leaf32(v: Vec<f32>, shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

fn grad64(t: &Tensor) -> Vec<f64> {
    let g = t.grad().expect("leaf has no .grad");
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(g.shape()[..], t.shape()[..], "grad shape differs from the leaf's");
    g.to_vec::<f64>().unwrap()
}

fn sum_all(t: &Tensor) -> Tensor {
    ops::sum(t, None, false, None).unwrap()
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length: got {:?}, want {:?}", got, want);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        assert!(err <= tol * (1.0 + w.abs()), "element {}: got {} want {} (|diff| {:e})\n got  {:?}\n want {:?}", i, g, w, err, got, want);
    }
}

#[track_caller]
fn assert_err_contains<T>(r: Result<T>, needle: &str) -> Error {
    match r {
        Ok(_) => panic!("expected an error containing {:?}, got Ok", needle),
        Err(e) => {
            assert!(e.msg.contains(needle), "error {:?} does not contain {:?}", e.msg, needle);
            e
        }
    }
}

/// Deterministic pseudo-random values in [-1, 1) (a 64-bit LCG; no global RNG state touched).
fn lcg_values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Resident set size of this process in bytes (Linux), for the memory figures the chain test prints.
fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Run `f` on another thread and fail (instead of hanging) if it does not finish in `secs`.
fn with_timeout<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(_) => panic!("did not finish within {} s (deadlock?)", secs),
    }
}

// ---------------------------------------------------------------------------------------------
// Tape release: 10-million-node chains

const CHAIN: usize = 10_000_000;

/// Builds `CHAIN` nodes on top of `x` (1 element, f64) with ops that save nothing:
/// `y = 1 - y` (RsubBackward1) when `i % 3 == 1`, `y = y + 0.5` (AddBackward0) otherwise.
/// Returns the head and the same computation done on plain f64 with the number of sign flips.
fn build_chain(x: &Tensor, x0: f64) -> (Tensor, f64, usize) {
    let half = ops::scalar(0.5);
    let mut y = x.clone();
    let (mut v, mut flips) = (x0, 0usize);
    for i in 0..CHAIN {
        if i % 3 == 1 {
            y = ops::rsub_scalar(&y, 1.0).unwrap();
            v = 1.0 - v;
            flips += 1;
        } else {
            y = ops::add(&y, &half).unwrap();
            v += 0.5;
        }
    }
    (y, v, flips)
}

#[test]
fn chain_10m_backward_then_drop_returns_arena_to_empty() {
    let _s = serial();
    let base = live_nodes();
    assert_eq!(base, 0, "the arena should be empty when no graph is alive (a test before this one leaked nodes?)");
    let rss0 = rss_bytes();

    let x0 = 0.25f64;
    let x = leaf64(vec![x0], &[1]);
    // The first node multiplies by -2, so the closed form is not just +-1.
    let t = Instant::now();
    let x2 = ops::mul(&x, &ops::scalar(-2.0)).unwrap();
    let (y, v, flips) = build_chain(&x2, -2.0 * x0);
    drop(x2);
    let t_build = t.elapsed();
    assert_eq!(live_nodes() - base, CHAIN + 1, "one node per op");
    let rss1 = rss_bytes();

    // Forward: the same f64 operations in the same order, so bitwise equal.
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![v]);
    assert_eq!(y.grad_fn().unwrap().name(), if (CHAIN - 1) % 3 == 1 { "RsubBackward1" } else { "AddBackward0" });

    let t = Instant::now();
    backward(&y, false).unwrap();
    let t_backward = t.elapsed();
    // dy/dx = -2 * (-1)^flips, exactly.
    let want = -2.0 * if flips % 2 == 0 { 1.0 } else { -1.0 };
    assert_eq!(grad64(&x), vec![want], "flips = {}", flips);
    // The engine holds no node after it returns.
    assert_eq!(live_nodes() - base, CHAIN + 1);

    let t = Instant::now();
    drop(y);
    let t_drop = t.elapsed();
    assert_eq!(live_nodes(), base, "every node of the chain is released once its head is dropped");
    drop(x);
    assert_eq!(live_nodes(), base);

    eprintln!(
        "10M chain: build {:.2?} ({:.0} ns/node), backward {:.2?} ({:.0} ns/node), drop {:.2?} ({:.0} ns/node), arena capacity {} slots, RSS growth {} B/node",
        t_build,
        t_build.as_nanos() as f64 / CHAIN as f64,
        t_backward,
        t_backward.as_nanos() as f64 / CHAIN as f64,
        t_drop,
        t_drop.as_nanos() as f64 / CHAIN as f64,
        arena_capacity(),
        match (rss0, rss1) {
            (Some(a), Some(b)) => format!("{}", b.saturating_sub(a) / CHAIN as u64),
            _ => "?".into(),
        }
    );
}

#[test]
fn chain_10m_dropped_without_backward_releases_and_reuses_slots() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![1.0], &[1]);

    let (y, v, _) = build_chain(&x, 1.0);
    assert_eq!(live_nodes() - base, CHAIN);
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![v]);
    let cap = arena_capacity();
    let t = Instant::now();
    drop(y);
    let t_drop = t.elapsed();
    assert_eq!(live_nodes(), base, "release path without backward");

    // Released slots go back on the free list: another chain allocates no new chunk.
    let half = ops::scalar(0.5);
    let mut y = x.clone();
    for _ in 0..CHAIN / 10 {
        y = ops::add(&y, &half).unwrap();
    }
    assert_eq!(live_nodes() - base, CHAIN / 10);
    assert_eq!(arena_capacity(), cap, "the arena grew although {} free slots were available", cap);
    // Drop the leaf first: the chain still holds it through its edge, and releasing the chain
    // releases it too.
    drop(x);
    drop(y);
    assert_eq!(live_nodes(), base);
    eprintln!("10M chain without backward: drop {:.2?} ({:.0} ns/node)", t_drop, t_drop.as_nanos() as f64 / CHAIN as f64);
}

/// A chain whose nodes are linked through *saved tensors* as well as edges: `y = y * w` saves
/// `y` (which carries the previous node as grad_fn). Releasing it goes node -> saved tensor ->
/// tensor -> node... which must also be iterative.
#[test]
fn chain_through_saved_tensors_backward_and_release() {
    let _s = serial();
    let base = live_nodes();
    const N: usize = 1_000_000;
    let build = |x: &Tensor, w: &Tensor| {
        let mut y = x.clone();
        for _ in 0..N {
            y = ops::mul(&y, w).unwrap();
        }
        y
    };
    let x = leaf64(vec![1.5], &[1]);
    let w = leaf64(vec![1.0], &[1]);

    // Dropped without backward.
    let y = build(&x, &w);
    assert_eq!(live_nodes() - base, N);
    drop(y);
    assert_eq!(live_nodes(), base);

    // Backpropagated (retain_graph=False frees the saved tensors as it goes), then dropped.
    let y = build(&x, &w);
    backward(&y, false).unwrap();
    // y = x * w^N: dy/dx = w^N = 1, dy/dw = N x w^(N-1) = 1.5 N (exact: a sum of N terms 1.5).
    assert_eq!(grad64(&x), vec![1.0]);
    assert_eq!(grad64(&w), vec![1.5 * N as f64]);
    drop(y);
    assert_eq!(live_nodes(), base);

    // Backpropagated with retain_graph=True (saved tensors kept), then dropped.
    x.set_grad(None);
    w.set_grad(None);
    let y = build(&x, &w);
    backward(&y, true).unwrap();
    assert_eq!(grad64(&w), vec![1.5 * N as f64]);
    drop(y);
    assert_eq!(live_nodes(), base);
}

/// `y = y * 1.0000001`, a chain with a non-trivial closed form: dy/dx = c^N.
#[test]
fn chain_scalar_mul_gradient_matches_closed_form() {
    let _s = serial();
    let base = live_nodes();
    const N: usize = 1_000_000;
    let c = 1.0000001f64;
    let x = leaf64(vec![2.0], &[1]);
    let cs = ops::scalar(c);
    let mut y = x.clone();
    for _ in 0..N {
        y = ops::mul(&y, &cs).unwrap();
    }
    backward(&y, false).unwrap();
    let want = c.powi(N as i32);
    assert_close(&grad64(&x), &[want], 1e-9);
    assert_close(&y.to_vec::<f64>().unwrap(), &[2.0 * want], 1e-9);
    drop(y);
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// Release of small graphs

#[test]
fn graph_dropped_without_backward_releases_all_nodes() {
    let _s = serial();
    let base = live_nodes();
    let a = leaf64(lcg_values(6, 1), &[2, 3]);
    let b = leaf64(lcg_values(3, 2), &[3]);
    {
        // A diamond, a shared subexpression, a multi-output op, a view, a reduction, a matmul.
        let ab = ops::mul(&a, &b).unwrap();
        let t = ops::tanh(&ab).unwrap();
        let d = ops::add(&ops::mul(&t, &t).unwrap(), &ab).unwrap();
        let parts = ops::split(&d, 1, 1).unwrap();
        let p = ops::add(&parts[0], &parts[2]).unwrap();
        let m = ops::matmul(&ops::transpose(&p, 0, 1).unwrap(), &p).unwrap();
        let s = ops::sum(&ops::exp(&m).unwrap(), None, false, None).unwrap();
        assert!(live_nodes() - base >= 10, "expected a graph to be recorded, {} nodes", live_nodes() - base);
        assert!(s.grad_fn().is_some());
    }
    assert_eq!(live_nodes(), base, "all nodes released when the tensors are gone");
    // After backward too, with and without retain_graph.
    for keep in [false, true] {
        let s = sum_all(&ops::exp(&ops::mul(&a, &b).unwrap()).unwrap());
        backward(&s, keep).unwrap();
        drop(s);
        assert_eq!(live_nodes(), base, "keep_graph={}", keep);
    }
    // A failed backward releases too.
    let y = ops::mul(&a, &b).unwrap();
    let s = sum_all(&y);
    backward(&s, false).unwrap();
    assert!(backward(&s, false).is_err());
    drop((y, s));
    assert_eq!(live_nodes(), base);
}

/// Sub-graphs the engine does not need are left alone and still released.
#[test]
fn partially_needed_graph_and_autograd_grad_release() {
    let _s = serial();
    let base = live_nodes();
    let a = leaf64(vec![1.0, 2.0], &[2]);
    let b = leaf64(vec![3.0, 4.0], &[2]);
    let s = sum_all(&ops::mul(&ops::exp(&a).unwrap(), &ops::tanh(&b).unwrap()).unwrap());
    let g = grad_of(&s, std::slice::from_ref(&a)).unwrap();
    let ga = g[0].as_ref().unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = [1.0f64, 2.0].iter().zip([3.0f64, 4.0]).map(|(a, b)| a.exp() * b.tanh()).collect();
    assert_close(&ga, &want, 1e-14);
    assert!(a.grad().is_none() && b.grad().is_none(), "autograd.grad does not touch .grad");
    drop((g, s));
    assert_eq!(live_nodes(), base);
}

/// create_graph=True makes `.grad` carry a graph that points back at the leaf (a cycle, as in
/// torch); resetting `.grad` breaks it and everything is released.
#[test]
fn create_graph_then_reset_grad_releases() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![0.5, -1.0], &[2]);
    let y = sum_all(&ops::mul(&ops::mul(&x, &x).unwrap(), &x).unwrap());
    backward_create_graph(&y).unwrap();
    let g = x.grad().unwrap();
    assert!(g.grad_fn().is_some(), "with create_graph the gradient has a grad_fn");
    assert_close(&g.to_vec::<f64>().unwrap(), &[0.75, 3.0], 1e-15);
    // Second order: d/dx sum(3x^2) = 6x.
    let gs = sum_all(&g);
    let h = grad_of(&gs, std::slice::from_ref(&x)).unwrap();
    assert_close(&h[0].as_ref().unwrap().to_vec::<f64>().unwrap(), &[3.0, -6.0], 1e-15);
    drop((h, gs, g, y));
    x.set_grad(None);
    drop(x);
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// retain_graph and the second-backward error

#[test]
fn retain_graph_allows_second_backward_and_accumulates() {
    let _s = serial();
    let base = live_nodes();
    let a = leaf64(vec![1.0, 2.0, 3.0], &[3]);
    let b = leaf64(vec![4.0, 5.0, 6.0], &[3]);
    let c = ops::mul(&a, &b).unwrap(); // saves a and b
    let s = sum_all(&c);
    backward(&s, true).unwrap();
    assert_eq!(grad64(&a), vec![4.0, 5.0, 6.0]);
    assert_eq!(grad64(&b), vec![1.0, 2.0, 3.0]);
    // Saved values still usable: the second backward accumulates.
    backward(&s, true).unwrap();
    assert_eq!(grad64(&a), vec![8.0, 10.0, 12.0]);
    assert_eq!(grad64(&b), vec![2.0, 4.0, 6.0]);
    // The last one may free the graph.
    backward(&s, false).unwrap();
    assert_eq!(grad64(&a), vec![12.0, 15.0, 18.0]);
    drop((c, s));
    assert_eq!(live_nodes(), base);
}

#[test]
fn second_backward_without_retain_graph_errors() {
    let _s = serial();
    let base = live_nodes();
    let a = leaf64(vec![1.0, 2.0], &[2]);
    let b = leaf64(vec![3.0, 4.0], &[2]);
    let s = sum_all(&ops::mul(&a, &b).unwrap());
    backward(&s, false).unwrap();
    assert_eq!(grad64(&a), vec![3.0, 4.0]);
    let e = assert_err_contains(backward(&s, false), "Trying to backward through the graph a second time");
    assert_eq!(e.kind, ferrograd::ErrorKind::Runtime);
    assert!(e.msg.contains("retain_graph=True"));
    // The failed backward did not accumulate anything more into a.
    assert_eq!(grad64(&a), vec![3.0, 4.0]);
    // Same with autograd.grad.
    let s2 = sum_all(&ops::tanh(&a).unwrap()); // tanh saves its output
    grad_of(&s2, std::slice::from_ref(&a)).unwrap();
    assert_err_contains(grad_of(&s2, std::slice::from_ref(&a)), "Trying to backward through the graph a second time");
    drop((s, s2));
    assert_eq!(live_nodes(), base);
}

/// A graph whose ops save nothing can be backpropagated twice (torch allows it too).
#[test]
fn second_backward_through_nodes_without_saved_values_is_allowed() {
    let _s = serial();
    let a = leaf64(vec![1.0, 2.0], &[2]);
    let s = sum_all(&ops::add(&a, &ops::scalar(3.0)).unwrap());
    backward(&s, false).unwrap();
    backward(&s, false).unwrap();
    assert_eq!(grad64(&a), vec![2.0, 2.0]);
}

// ---------------------------------------------------------------------------------------------
// Version counters

#[test]
fn saved_input_modified_in_place_errors() {
    let _s = serial();
    let base = live_nodes();
    let a = leaf64(vec![1.0, 2.0, 3.0], &[3]);
    let b = leaf64(vec![4.0, 5.0, 6.0], &[3]);
    let d = ops::mul(&a, &ops::scalar(2.0)).unwrap(); // a non-leaf
    let e = ops::mul(&d, &b).unwrap(); // saves d
    assert_eq!(d.version(), 0);
    ops::inplace(&d, &[], |t| ops::add(t, &ops::scalar(1.0))).unwrap(); // d.add_(1)
    assert_eq!(d.version(), 1);
    assert_eq!(d.to_vec::<f64>().unwrap(), vec![3.0, 5.0, 7.0]);
    let s = sum_all(&e);
    let err = assert_err_contains(backward(&s, false), "modified by an inplace operation");
    assert!(err.msg.contains("is at version 1; expected version 0"), "{}", err.msg);
    assert!(err.msg.contains("torch.DoubleTensor [3]"), "{}", err.msg);
    drop((d, e, s));
    assert_eq!(live_nodes(), base);
}

#[test]
fn leaf_modified_in_place_under_no_grad_after_being_saved_errors() {
    let _s = serial();
    let a = leaf64(vec![1.0, 2.0], &[2]);
    let b = leaf64(vec![3.0, 4.0], &[2]);
    let s = sum_all(&ops::mul(&a, &b).unwrap());
    // In-place on a leaf that requires grad is refused in grad mode...
    assert_err_contains(
        ops::inplace(&a, &[], |t| ops::mul(t, &ops::scalar(2.0))),
        "a leaf Variable that requires grad is being used in an in-place operation",
    );
    assert_eq!(a.version(), 0);
    // ...and allowed under no_grad, which bumps the version the node saw.
    {
        let _ng = GradModeGuard::new(false);
        ops::inplace(&a, &[], |t| ops::mul(t, &ops::scalar(2.0))).unwrap();
    }
    assert_eq!(a.version(), 1);
    assert_err_contains(backward(&s, false), "modified by an inplace operation");
}

/// A saved *output* (exp saves its result) modified in place: the error names the node, which
/// is running at that moment (this once deadlocked), so it runs under a timeout.
#[test]
fn saved_output_modified_in_place_errors_naming_the_node() {
    let _s = serial();
    let base = live_nodes();
    let msg = with_timeout(60, || {
        let x = leaf64(vec![0.0, 1.0], &[2]);
        let y = ops::exp(&x).unwrap(); // saves y
        ops::inplace(&y, &[], |t| ops::mul(t, &ops::scalar(3.0))).unwrap(); // y.mul_(3)
        assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
        let s = sum_all(&y);
        backward(&s, false).map_err(|e| e.msg)
    });
    let msg = msg.expect_err("backward should fail");
    assert!(msg.contains("modified by an inplace operation"), "{}", msg);
    assert!(msg.contains("output 0 of ExpBackward0"), "{}", msg);
    assert_eq!(live_nodes(), base);
}

/// An in-place op on a non-leaf: its gradient goes through the in-place node, which saved the
/// value before the write. y = 2x; y.mul_(x); f = sum(y) = sum(2x^2) -> 4x.
#[test]
fn inplace_on_non_leaf_backpropagates_through_inplace_node() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![1.0, -2.0, 0.5], &[3]);
    let y = ops::mul(&x, &ops::scalar(2.0)).unwrap();
    ops::inplace(&y, &[&x], |t| ops::mul(t, &x)).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![2.0, 8.0, 0.5]);
    assert_eq!(y.version(), 1);
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    let s = sum_all(&y);
    backward(&s, false).unwrap();
    assert_close(&grad64(&x), &[4.0, -8.0, 2.0], 1e-15);
    drop((y, s));
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// Grad mode

#[test]
fn no_node_is_recorded_with_grad_mode_off() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![1.0, 2.0, 3.0], &[3]);
    assert!(is_grad_enabled());
    {
        let _ng = GradModeGuard::new(false);
        assert!(!is_grad_enabled());
        let y = ops::tanh(&ops::mul(&x, &x).unwrap()).unwrap();
        let z = ops::sum(&ops::matmul(&ops::unsqueeze(&y, 0).unwrap(), &ops::unsqueeze(&y, 1).unwrap()).unwrap(), None, false, None).unwrap();
        assert_eq!(live_nodes(), base, "no node recorded under no_grad");
        assert!(y.grad_fn().is_none() && !y.requires_grad() && y.is_leaf());
        assert!(z.grad_fn().is_none() && !z.requires_grad());
        assert_err_contains(backward(&z, false), "does not require grad and does not have a grad_fn");
        // enable_grad inside no_grad records again, and restores no_grad on exit.
        {
            let _eg = GradModeGuard::new(true);
            let w = ops::mul(&x, &x).unwrap();
            assert!(w.grad_fn().is_some());
            assert_eq!(live_nodes(), base + 1);
        }
        assert!(!is_grad_enabled());
        assert_eq!(live_nodes(), base);
        // Grad mode is per thread: a new thread starts with grad enabled.
        let x2 = x.clone();
        let recorded = std::thread::spawn(move || {
            let on = is_grad_enabled();
            let y = ops::mul(&x2, &x2).unwrap();
            (on, y.grad_fn().is_some())
        })
        .join()
        .unwrap();
        assert_eq!(recorded, (true, true));
    }
    assert!(is_grad_enabled(), "the guard restores grad mode");
    let y = ops::mul(&x, &x).unwrap();
    assert!(y.grad_fn().is_some());
    drop(y);
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// Determinism

/// Runs `f` with parallel backward forced on or off, then forces it on again: the determinism
/// tests run the parallel engine whenever there are two threads (by default it waits for more,
/// `ParallelBackward::Auto`), so call `parallel_on` first in each.
fn with_parallel<T>(on: bool, f: impl FnOnce() -> T) -> T {
    set_parallel_backward(if on { ParallelBackward::Always } else { ParallelBackward::Off });
    let r = f();
    parallel_on();
    r
}

fn parallel_on() {
    set_parallel_backward(ParallelBackward::Always);
}

/// 64 (and 256, and 16 large) branches flowing into one leaf: gradients are summed in a fixed
/// order, so two backward passes give bitwise identical results, with parallel backward (the
/// large case) equal to the sequential engine. float32 so that summation order shows.
fn wide_graph_grad_bits(branches: usize, x: &Tensor, ws: &[Tensor], keep: Option<&Tensor>) -> Vec<u32> {
    x.set_grad(None);
    let run = |root: &Tensor| backward(root, keep.is_some()).unwrap();
    match keep {
        Some(root) => run(root),
        None => {
            let mut acc: Option<Tensor> = None;
            for (i, w) in ws.iter().enumerate().take(branches) {
                let c = ops::scalar(0.1 + i as f64 * 0.37);
                let b = ops::tanh(&ops::mul(&ops::mul(x, &c).unwrap(), w).unwrap()).unwrap();
                let b = ops::mul(&b, &ops::add(x, &c).unwrap()).unwrap();
                acc = Some(match acc {
                    None => b,
                    Some(a) => ops::add(&a, &b).unwrap(),
                });
            }
            run(&sum_all(&acc.unwrap()));
        }
    }
    x.grad().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn wide_graph_backward_is_bitwise_deterministic() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    for &(branches, n) in &[(64usize, 4096usize), (256, 256), (16, 1 << 16)] {
        let x = leaf32(lcg_values(n, 7).iter().map(|&v| v as f32).collect(), &[n]);
        let ws: Vec<Tensor> = (0..branches).map(|i| Tensor::from_vec(lcg_values(n, 100 + i as u64).iter().map(|&v| v as f32).collect::<Vec<f32>>(), &[n])).collect();
        let first = wide_graph_grad_bits(branches, &x, &ws, None);
        for _ in 0..3 {
            assert!(first == wide_graph_grad_bits(branches, &x, &ws, None), "fresh graph: gradients differ between runs ({} branches)", branches);
        }
        let sequential = with_parallel(false, || wide_graph_grad_bits(branches, &x, &ws, None));
        assert!(first == sequential, "parallel and sequential backward differ ({} branches)", branches);
        // The same retained graph backpropagated twice.
        let mut acc: Option<Tensor> = None;
        for (i, w) in ws.iter().enumerate() {
            let c = ops::scalar(0.1 + i as f64 * 0.37);
            let b = ops::tanh(&ops::mul(&ops::mul(&x, &c).unwrap(), w).unwrap()).unwrap();
            let b = ops::mul(&b, &ops::add(&x, &c).unwrap()).unwrap();
            acc = Some(match acc {
                None => b,
                Some(a) => ops::add(&a, &b).unwrap(),
            });
        }
        let root = sum_all(&acc.take().unwrap());
        let r1 = wide_graph_grad_bits(branches, &x, &ws, Some(&root));
        let r2 = wide_graph_grad_bits(branches, &x, &ws, Some(&root));
        assert!(r1 == r2, "retained graph: gradients differ between two backward passes");
        assert!(r1 == first, "retained graph differs from a fresh graph");
        // Sanity: the value is right (f64 reference, loose f32 tolerance).
        let xv: Vec<f64> = x.to_vec::<f32>().unwrap().iter().map(|&v| v as f64).collect();
        let want: Vec<f64> = (0..n)
            .map(|j| {
                (0..branches)
                    .map(|i| {
                        let c = 0.1 + i as f64 * 0.37;
                        let w = ws[i].to_vec::<f32>().unwrap()[j] as f64;
                        let u = xv[j] * c * w;
                        let t = u.tanh();
                        (1.0 - t * t) * c * w * (xv[j] + c) + t
                    })
                    .sum()
            })
            .take(8)
            .collect();
        let got: Vec<f64> = r1.iter().take(8).map(|&b| f32::from_bits(b) as f64).collect();
        assert_close(&got, &want, 1e-4);
        drop(root);
        drop(x);
        assert_eq!(live_nodes(), base);
    }
}

/// More large nodes ready at once than threads: the rest wait in the engine's queue and start as
/// the pool frees up, one of them at times on the calling thread when nothing else is running (a
/// pass once stopped there with "backward stalled", depending on timing). Many passes, each
/// bitwise the sequential one.
#[test]
fn parallel_backward_with_more_ready_nodes_than_threads() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    let (branches, n) = (24usize, 20_000usize);
    let x = leaf32(lcg_values(n, 9).iter().map(|&v| v as f32).collect(), &[n]);
    let ws: Vec<Tensor> = (0..branches).map(|i| Tensor::from_vec(lcg_values(n, 300 + i as u64).iter().map(|&v| v as f32).collect::<Vec<f32>>(), &[n])).collect();
    let sequential = with_parallel(false, || wide_graph_grad_bits(branches, &x, &ws, None));
    for run in 0..300 {
        assert!(wide_graph_grad_bits(branches, &x, &ws, None) == sequential, "run {run}: parallel backward differs from the sequential engine");
    }
    drop((x, ws));
    assert_eq!(live_nodes(), base);
}

/// Many roots and repeated leaves: the engine seeds and sums in a fixed order.
#[test]
fn multi_root_backward_is_deterministic_and_correct() {
    let _s = serial();
    parallel_on();
    let x = leaf32(vec![0.1, 0.2, 0.3], &[3]);
    let run = || {
        x.set_grad(None);
        let roots: Vec<Tensor> = (0..32).map(|i| sum_all(&ops::mul(&x, &ops::scalar(1.0 + i as f64 / 3.0)).unwrap())).collect();
        run_backward(BackwardRequest {
            roots: &roots,
            grads: vec![None; roots.len()],
            keep_graph: false,
            create_graph: false,
            inputs: None,
            accumulate: true,
            allow_unused: false,
        })
        .unwrap();
        x.grad().unwrap().to_vec::<f32>().unwrap()
    };
    let a = run();
    let b = run();
    assert_eq!(a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), b.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let want: f64 = (0..32).map(|i| 1.0 + i as f64 / 3.0).sum();
    for v in a {
        assert!((v as f64 - want).abs() < 1e-4 * want, "{} vs {}", v, want);
    }
}

// ---------------------------------------------------------------------------------------------
// Parallel backward (Note [Parallel backward] in src/autograd/engine.rs)

/// Leaves for the parallel graphs: `x` [128, 256] used by every branch, three [256, 256]
/// weights shared by several branches each, float32 so that summation order shows.
fn par_leaves() -> (Tensor, Vec<Tensor>) {
    let f32s = |n: usize, seed: u64| lcg_values(n, seed).iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let x = leaf32(f32s(128 * 256, 1), &[128, 256]);
    let ws = (0..3).map(|i| leaf32(f32s(256 * 256, 10 + i).iter().map(|v| v / 16.0).collect(), &[256, 256])).collect();
    (x, ws)
}

/// 12 branches of matmul/tanh above the parallel threshold. A shared intermediate `h` feeds
/// every branch (a node with 12 contributions), `x` and each weight get contributions from many
/// branches (and `x * x` gives one node two edges to the same leaf). Returns the root and `h`.
fn par_graph(x: &Tensor, ws: &[Tensor]) -> (Tensor, Tensor) {
    let h = ops::tanh(&ops::matmul(x, &ws[0]).unwrap()).unwrap();
    let mut total: Option<Tensor> = None;
    for k in 0..12 {
        let c = ops::scalar(0.5 + k as f64 * 0.25);
        let mut b = ops::tanh(&ops::mul(&h, &c).unwrap()).unwrap();
        b = ops::matmul(&b, &ws[k % 3]).unwrap();
        if k % 4 == 1 {
            b = ops::add(&b, &ops::mul(x, x).unwrap()).unwrap();
        }
        b = ops::tanh(&ops::matmul(&b, &ws[(k + 1) % 3]).unwrap()).unwrap();
        let s = sum_all(&ops::mul(&b, &b).unwrap());
        total = Some(match total {
            None => s,
            Some(t) => ops::add(&t, &s).unwrap(),
        });
    }
    (total.unwrap(), h)
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

/// Gradients of x and the weights (backward), and of x, h and a weight (autograd.grad).
fn par_grads(x: &Tensor, ws: &[Tensor]) -> Vec<Vec<u32>> {
    x.set_grad(None);
    ws.iter().for_each(|w| w.set_grad(None));
    let (root, _) = par_graph(x, ws);
    backward(&root, false).unwrap();
    let mut out: Vec<Vec<u32>> = std::iter::once(x).chain(ws).map(|t| bits(&t.grad().unwrap())).collect();
    let (root, h) = par_graph(x, ws);
    for g in grad_of(&root, &[x.clone(), h, ws[2].clone()]).unwrap() {
        out.push(bits(&g.unwrap()));
    }
    out
}

/// Backward node events recorded on another thread than the caller's, while `f` runs.
fn backward_events_off_thread(f: impl FnOnce()) -> usize {
    profiler::start();
    drop(profiler::scope("caller"));
    f();
    let ev = profiler::stop();
    let caller = ev.iter().find(|e| e.name == "caller").map(|e| e.thread);
    ev.iter().filter(|e| e.backward && Some(e.thread) != caller).count()
}

#[test]
fn parallel_backward_is_bitwise_the_sequential_one() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    let (x, ws) = par_leaves();
    let sequential = with_parallel(false, || par_grads(&x, &ws));
    for run in 0..4 {
        assert!(par_grads(&x, &ws) == sequential, "run {}: parallel backward differs from the sequential engine", run);
    }
    // The parallel runs did use other threads; the sequential one did not.
    if ferrograd::backend::num_threads() > 1 {
        assert!(backward_events_off_thread(|| drop(par_grads(&x, &ws))) > 0, "no node ran on a worker thread");
    }
    assert_eq!(with_parallel(false, || backward_events_off_thread(|| drop(par_grads(&x, &ws)))), 0);
    drop((x, ws));
    assert_eq!(live_nodes(), base);
}

/// Two branches read tensors modified in place after being saved. The sequential engine meets
/// the later-created branch first; the parallel one must report that same error, after
/// accumulating exactly the leaves the sequential engine had accumulated.
#[test]
fn parallel_backward_error_is_the_sequential_one() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    let (x, ws) = par_leaves();
    // one leaf per branch: accumulated by the sequential engine only in branches it reached
    let vs: Vec<Tensor> = (0..8).map(|k| leaf32(vec![0.5 + k as f32; 256], &[256])).collect();
    let run = || {
        x.set_grad(None);
        ws.iter().chain(&vs).for_each(|w| w.set_grad(None));
        let mut saved = Vec::new();
        let mut total: Option<Tensor> = None;
        for k in 0..8 {
            let a = ops::tanh(&ops::matmul(&x, &ws[k % 3]).unwrap()).unwrap();
            let b = ops::mul(&a, &a).unwrap(); // saves a
            let s = sum_all(&ops::mul(&ops::matmul(&b, &ws[(k + 1) % 3]).unwrap(), &vs[k]).unwrap());
            total = Some(match total {
                None => s,
                Some(t) => ops::add(&t, &s).unwrap(),
            });
            saved.push(a);
        }
        // a_2.add_(1); a_5.add_(1) twice: two different messages (version 1 and version 2)
        for (k, times) in [(2, 1), (5, 2)] {
            for _ in 0..times {
                ops::inplace(&saved[k], &[], |t| ops::add(t, &ops::scalar(1.0))).unwrap();
            }
        }
        let err = backward(&total.unwrap(), false).expect_err("backward should fail");
        let grads: Vec<Option<Vec<u32>>> = std::iter::once(&x).chain(&ws).chain(&vs).map(|t| t.grad().map(|g| bits(&g))).collect();
        (err.msg, grads)
    };
    let (msg, grads) = with_parallel(false, run);
    assert!(msg.contains("is at version 2; expected version 0"), "{}", msg);
    let reached: Vec<bool> = grads[4..].iter().map(|g| g.is_some()).collect();
    assert_eq!(reached, [false, false, false, false, false, true, true, true]);
    for _ in 0..3 {
        let (pmsg, pgrads) = run();
        assert_eq!(pmsg, msg);
        assert!(pgrads == grads, "leaves accumulated differently after the error");
    }
    drop((x, ws, vs));
    assert_eq!(live_nodes(), base);
}

/// A hook that modifies, in place, a tensor saved by an independent node the sequential engine
/// runs after the hook: that node must not have run early (it fails, as in the sequential run).
#[test]
fn parallel_backward_waits_for_observable_work() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    let (x, ws) = par_leaves();
    let run = |hook_on_leaf: bool| {
        x.set_grad(None);
        // created first, so run last: the matmul saves `early`
        let early = ops::tanh(&ops::matmul(&x, &ws[0]).unwrap()).unwrap();
        let s_early = sum_all(&ops::matmul(&early, &ws[1]).unwrap());
        let late = ops::tanh(&ops::matmul(&x, &ws[2]).unwrap()).unwrap();
        let bump = {
            let early = early.clone();
            move || {
                let _ng = GradModeGuard::new(false);
                ops::inplace(&early, &[], |t| ops::add(t, &ops::scalar(1.0)))
            }
        };
        let v = leaf32(vec![1.0; 256 * 256], &[256, 256]);
        let late = if hook_on_leaf {
            v.register_post_accumulate_grad_hook(std::sync::Arc::new(move |_t: &Tensor| bump())).unwrap();
            ops::matmul(&late, &v).unwrap()
        } else {
            late.register_hook(std::sync::Arc::new(move |_g: &Tensor| bump().map(|_| None))).unwrap();
            late
        };
        let root = ops::add(&sum_all(&late), &s_early).unwrap();
        backward(&root, false).map_err(|e| e.msg)
    };
    for hook_on_leaf in [false, true] {
        let want = with_parallel(false, || run(hook_on_leaf)).expect_err("the sequential run fails");
        assert!(want.contains("modified by an inplace operation") && want.contains("is at version 1; expected version 0"), "{}", want);
        for _ in 0..3 {
            assert_eq!(run(hook_on_leaf).expect_err("the parallel run fails too"), want);
        }
    }
    drop((x, ws));
    assert_eq!(live_nodes(), base);
}

/// A backward function that is not parallel-safe (like a custom Python Function): multiplies
/// by a constant and records that it ran.
struct Recorded {
    c: f64,
    log: std::sync::Arc<Mutex<Vec<String>>>,
}

impl ferrograd::autograd::Backward for Recorded {
    fn apply(&mut self, _node: &ferrograd::autograd::NodeRef, grads: ferrograd::autograd::Grads) -> Result<ferrograd::autograd::Grads> {
        self.log.lock().unwrap().push(format!("custom {}", self.c));
        let g = grads.into_iter().next().flatten().ok_or_else(|| Error::runtime("no gradient"))?;
        Ok(ferrograd::autograd::Grads::from_vec(vec![Some(ops::mul(&g, &ops::scalar(self.c))?)]))
    }
    fn release(&mut self) {}
}

/// `y = c * x` recorded with the `Recorded` backward.
fn recorded_scale(x: &Tensor, c: f64, log: &std::sync::Arc<Mutex<Vec<String>>>) -> Tensor {
    use ferrograd::autograd::{Node, NodeRef};
    let y = {
        let _ng = GradModeGuard::new(false);
        ops::mul(x, &ops::scalar(c)).unwrap()
    };
    let node = Node::new(ferrograd::autograd::NodeKind { name: "RecordedBackward", saved: &[] }, Box::new(Recorded { c, log: log.clone() }), [x.gradient_edge()].into_iter().collect(), [ops::meta(x)].into_iter().collect(), [ops::meta(&y)].into_iter().collect());
    y.set_grad_fn(Some(NodeRef::new(node)), 0);
    y
}

/// Hooks on leaves and non-leaves, retain_grad and not-parallel-safe nodes mixed with large
/// pure branches: every observable call happens in the sequential engine's order.
#[test]
fn parallel_backward_keeps_hook_and_custom_function_order() {
    let _s = serial();
    parallel_on();
    let base = live_nodes();
    let (x, ws) = par_leaves();
    let log = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
    for (i, w) in ws.iter().enumerate() {
        let l = log.clone();
        w.register_hook(std::sync::Arc::new(move |g: &Tensor| {
            l.lock().unwrap().push(format!("leaf hook w{} {:08x}", i, g.to_vec::<f32>().unwrap()[0].to_bits()));
            Ok(None)
        }))
        .unwrap();
        let l = log.clone();
        w.register_post_accumulate_grad_hook(std::sync::Arc::new(move |_t: &Tensor| {
            l.lock().unwrap().push(format!("post accumulate w{}", i));
            Ok(())
        }))
        .unwrap();
    }
    let run = || {
        log.lock().unwrap().clear();
        x.set_grad(None);
        ws.iter().for_each(|w| w.set_grad(None));
        let mut total: Option<Tensor> = None;
        let mut retained = Vec::new();
        for k in 0..9 {
            let mut b = ops::tanh(&ops::matmul(&x, &ws[k % 3]).unwrap()).unwrap();
            if k % 3 == 0 {
                b = recorded_scale(&b, 1.0 + k as f64, &log);
            }
            if k % 4 == 1 {
                let l = log.clone();
                b.register_hook(std::sync::Arc::new(move |g: &Tensor| {
                    l.lock().unwrap().push(format!("tensor hook b{} {:08x}", k, g.to_vec::<f32>().unwrap()[0].to_bits()));
                    Ok(Some(ops::mul(g, &ops::scalar(0.5))?))
                })).unwrap();
            }
            if k == 4 {
                b.retain_grad().unwrap();
                retained.push(b.clone());
            }
            let s = sum_all(&ops::matmul(&b, &ws[(k + 2) % 3]).unwrap());
            total = Some(match total {
                None => s,
                Some(t) => ops::add(&t, &s).unwrap(),
            });
        }
        backward(&total.unwrap(), false).unwrap();
        let mut out: Vec<Vec<u32>> = std::iter::once(&x).chain(&ws).map(|t| bits(&t.grad().unwrap())).collect();
        out.push(bits(&retained[0].grad().unwrap()));
        let events = log.lock().unwrap().clone();
        (events, out)
    };
    let (events, grads) = with_parallel(false, run);
    assert_eq!(events.iter().filter(|e| e.starts_with("custom")).count(), 3);
    assert_eq!(events.iter().filter(|e| e.starts_with("post accumulate")).count(), 3);
    for _ in 0..3 {
        let (pevents, pgrads) = run();
        assert_eq!(pevents, events);
        assert!(pgrads == grads, "gradients differ from the sequential engine");
    }
    drop((x, ws));
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// Gradient values of composite expressions (f64, hand-derived)

#[test]
fn grad_tanh_of_product_plus_input() {
    let _s = serial();
    // f = sum(tanh(x*y + x)); df/dx = (1 - t^2)(y + 1), df/dy = (1 - t^2) x
    let xv = vec![0.3, -1.2, 2.0, 0.0];
    let yv = vec![-0.7, 0.4, 0.1, 5.0];
    let x = leaf64(xv.clone(), &[4]);
    let y = leaf64(yv.clone(), &[4]);
    let f = sum_all(&ops::tanh(&ops::add(&ops::mul(&x, &y).unwrap(), &x).unwrap()).unwrap());
    backward(&f, false).unwrap();
    let t: Vec<f64> = xv.iter().zip(&yv).map(|(x, y)| (x * y + x).tanh()).collect();
    let gx: Vec<f64> = t.iter().zip(&yv).map(|(t, y)| (1.0 - t * t) * (y + 1.0)).collect();
    let gy: Vec<f64> = t.iter().zip(&xv).map(|(t, x)| (1.0 - t * t) * x).collect();
    assert_close(&grad64(&x), &gx, 1e-14);
    assert_close(&grad64(&y), &gy, 1e-14);
    assert_close(&f.to_vec::<f64>().unwrap(), &[t.iter().sum::<f64>()], 1e-14);
}

#[test]
fn grad_reused_input_and_diamond() {
    let _s = serial();
    // f = sum(x*x*x) -> 3x^2
    let xv = vec![1.5, -2.0, 0.25];
    let x = leaf64(xv.clone(), &[3]);
    let f = sum_all(&ops::mul(&ops::mul(&x, &x).unwrap(), &x).unwrap());
    backward(&f, false).unwrap();
    assert_close(&grad64(&x), &xv.iter().map(|v| 3.0 * v * v).collect::<Vec<_>>(), 1e-15);

    // Diamond: y = 2x; z = y*y + y; f = sum(z) -> (2y + 1) * 2
    let x = leaf64(xv.clone(), &[3]);
    let y = ops::mul(&x, &ops::scalar(2.0)).unwrap();
    let z = ops::add(&ops::mul(&y, &y).unwrap(), &y).unwrap();
    backward(&sum_all(&z), false).unwrap();
    assert_close(&grad64(&x), &xv.iter().map(|v| (4.0 * v + 1.0) * 2.0).collect::<Vec<_>>(), 1e-15);
}

#[test]
fn grad_broadcasting_is_summed_back() {
    let _s = serial();
    // x [3,1], y [1,4]: f = sum(x*y + x - y); df/dx_i = sum_j y_j + 4; df/dy_j = sum_i x_i - 3
    let xv = vec![1.0, 2.0, -0.5];
    let yv = vec![0.5, -1.0, 3.0, 0.25];
    let x = leaf64(xv.clone(), &[3, 1]);
    let y = leaf64(yv.clone(), &[1, 4]);
    let f = sum_all(&ops::sub(&ops::add(&ops::mul(&x, &y).unwrap(), &x).unwrap(), &y).unwrap());
    backward(&f, false).unwrap();
    let sy: f64 = yv.iter().sum();
    let sx: f64 = xv.iter().sum();
    assert_close(&grad64(&x), &[sy + 4.0; 3], 1e-15);
    assert_close(&grad64(&y), &[sx - 3.0; 4], 1e-15);

    // A 0-dim leaf broadcast against a matrix: f = sum(s * m) -> sum(m)
    let s = leaf64(vec![3.0], &[]);
    let m = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    backward(&sum_all(&ops::mul(&s, &m).unwrap()), false).unwrap();
    assert_eq!(grad64(&s), vec![21.0]);
}

#[test]
fn grad_matmul_weighted_sum() {
    let _s = serial();
    // f = sum((A @ B) * W); dA = W @ B^T, dB = A^T @ W
    let (m, k, n) = (2usize, 3usize, 4usize);
    let av = lcg_values(m * k, 11);
    let bv = lcg_values(k * n, 12);
    let wv = lcg_values(m * n, 13);
    let a = leaf64(av.clone(), &[m, k]);
    let b = leaf64(bv.clone(), &[k, n]);
    let w = Tensor::from_vec(wv.clone(), &[m, n]);
    let f = sum_all(&ops::mul(&ops::matmul(&a, &b).unwrap(), &w).unwrap());
    backward(&f, false).unwrap();
    let mut ga = vec![0.0; m * k];
    let mut gb = vec![0.0; k * n];
    let mut fv = 0.0;
    for i in 0..m {
        for j in 0..n {
            let mut c = 0.0;
            for p in 0..k {
                c += av[i * k + p] * bv[p * n + j];
                ga[i * k + p] += wv[i * n + j] * bv[p * n + j];
                gb[p * n + j] += av[i * k + p] * wv[i * n + j];
            }
            fv += c * wv[i * n + j];
        }
    }
    assert_close(&f.to_vec::<f64>().unwrap(), &[fv], 1e-13);
    assert_close(&grad64(&a), &ga, 1e-13);
    assert_close(&grad64(&b), &gb, 1e-13);
}

#[test]
fn grad_softplus_over_x_and_mean_of_cube() {
    let _s = serial();
    // f = sum(log(exp(x) + 1) / x); df/dx = (sigmoid(x) x - log(1 + e^x)) / x^2
    let xv = vec![0.5, -1.5, 2.0, 3.0];
    let x = leaf64(xv.clone(), &[4]);
    let sp = ops::log(&ops::add(&ops::exp(&x).unwrap(), &ops::scalar(1.0)).unwrap()).unwrap();
    backward(&sum_all(&ops::div(&sp, &x).unwrap()), false).unwrap();
    let want: Vec<f64> = xv
        .iter()
        .map(|&x| {
            let s = 1.0 / (1.0 + (-x).exp());
            (s * x - x.exp().ln_1p()) / (x * x)
        })
        .collect();
    assert_close(&grad64(&x), &want, 1e-13);

    // f = mean(x^3) -> 3x^2 / n; g = sum(sigmoid(x)) -> s(1-s); accumulated into one .grad
    let x = leaf64(xv.clone(), &[4]);
    let f = ops::mean(&ops::pow_scalar(&x, 3.0).unwrap(), None, false, None).unwrap();
    backward(&f, false).unwrap();
    let g = sum_all(&ops::sigmoid(&x).unwrap());
    backward(&g, false).unwrap();
    let want: Vec<f64> = xv
        .iter()
        .map(|&x| {
            let s = 1.0 / (1.0 + (-x).exp());
            3.0 * x * x / 4.0 + s * (1.0 - s)
        })
        .collect();
    assert_close(&grad64(&x), &want, 1e-13);
}

#[test]
fn grad_reduction_over_dim_and_log_softmax() {
    let _s = serial();
    // f = sum(v * sum(x, dim=1)) for x [2,3]: df/dx[i,j] = v[i]
    let x = leaf64(lcg_values(6, 21), &[2, 3]);
    let v = Tensor::from_vec(vec![2.0f64, -3.0], &[2]);
    let r = ops::sum(&x, Some(&[1]), false, None).unwrap();
    assert_eq!(r.shape()[..], [2]);
    backward(&sum_all(&ops::mul(&r, &v).unwrap()), false).unwrap();
    assert_eq!(grad64(&x), vec![2.0, 2.0, 2.0, -3.0, -3.0, -3.0]);

    // f = sum(w * log_softmax(x, dim=1)): df/dx[i,:] = w[i,:] - softmax(x)[i,:] * sum_j w[i,j]
    let xv = lcg_values(6, 22);
    let wv = lcg_values(6, 23);
    let x = leaf64(xv.clone(), &[2, 3]);
    let w = Tensor::from_vec(wv.clone(), &[2, 3]);
    backward(&sum_all(&ops::mul(&ops::log_softmax(&x, 1, None).unwrap(), &w).unwrap()), false).unwrap();
    let mut want = vec![0.0; 6];
    for i in 0..2 {
        let row = &xv[i * 3..i * 3 + 3];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        let ws: f64 = wv[i * 3..i * 3 + 3].iter().sum();
        for j in 0..3 {
            want[i * 3 + j] = wv[i * 3 + j] - (row[j] - mx).exp() / z * ws;
        }
    }
    assert_close(&grad64(&x), &want, 1e-14);
}

// ---------------------------------------------------------------------------------------------
// Threads

/// Graphs recorded on several threads at once, backpropagated, and released on another thread
/// than the one that built them: the shared arena's count comes back to where it was.
#[test]
fn concurrent_record_backward_and_cross_thread_release() {
    let _s = serial();
    let base = live_nodes();
    const THREADS: usize = 4;
    const N: usize = 50_000;
    let (tx, rx) = mpsc::channel::<(Tensor, Tensor)>();
    let builders: Vec<_> = (0..THREADS)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let x = leaf64(vec![t as f64], &[1]);
                let c = ops::scalar(1.0);
                let mut y = x.clone();
                for i in 0..N {
                    y = if i % 2 == 0 { ops::add(&y, &c).unwrap() } else { ops::mul(&y, &x).unwrap() };
                }
                // Every other graph is backpropagated here first.
                if t % 2 == 0 {
                    let s = sum_all(&ops::tanh(&ops::mul(&y, &ops::scalar(1e-300)).unwrap()).unwrap());
                    backward(&s, false).unwrap();
                    assert!(x.grad().is_some());
                }
                tx.send((x, y)).unwrap();
            })
        })
        .collect();
    drop(tx);
    let dropper = std::thread::spawn(move || {
        let mut n = 0;
        for (x, y) in rx {
            drop(y);
            drop(x);
            n += 1;
        }
        n
    });
    for b in builders {
        b.join().unwrap();
    }
    assert_eq!(dropper.join().unwrap(), THREADS);
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// AccumulateGrad

/// torch clones a gradient into `.grad` unless nothing else holds it. Here a gradient tensor
/// the caller passed (`x.backward(g)`, or through a node that passes its gradient through, as
/// AddBackward0) becomes `.grad` itself, so the next backward accumulates *into the caller's
/// tensor*. torch 2.x: g stays [1, 1], x.grad == [2, 2]. Same from Python:
/// `x = ferrograd.tensor([1., 2.], requires_grad=True); g = ferrograd.ones(2);
///  x.backward(g); x.backward(g); print(g)` prints `tensor([2., 2.])`.
#[test]
fn user_gradient_is_not_aliased_into_leaf_grad() {
    let _s = serial();
    // Leaf root with an explicit gradient.
    let x = leaf64(vec![1.0, 2.0], &[2]);
    let g = Tensor::from_vec(vec![1.0f64, 1.0], &[2]);
    for _ in 0..2 {
        run_backward(BackwardRequest {
            roots: std::slice::from_ref(&x),
            grads: vec![Some(g.clone())],
            keep_graph: false,
            create_graph: false,
            inputs: None,
            accumulate: true,
            allow_unused: false,
        })
        .unwrap();
    }
    assert_eq!(grad64(&x), vec![2.0, 2.0]);
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![1.0, 1.0], "the caller's gradient tensor was modified by backward");

    // Through AddBackward0 (passes its gradient through unchanged).
    let x = leaf64(vec![1.0, 2.0], &[2]);
    for _ in 0..2 {
        let y = ops::add(&x, &ops::scalar(0.0)).unwrap();
        run_backward(BackwardRequest {
            roots: std::slice::from_ref(&y),
            grads: vec![Some(g.clone())],
            keep_graph: false,
            create_graph: false,
            inputs: None,
            accumulate: true,
            allow_unused: false,
        })
        .unwrap();
    }
    assert_eq!(grad64(&x), vec![2.0, 2.0]);
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![1.0, 1.0], "the caller's gradient tensor was modified by backward");

    // And after one backward, .grad must not share memory with g.
    let x = leaf64(vec![1.0, 2.0], &[2]);
    let y = ops::add(&x, &ops::scalar(0.0)).unwrap();
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(&y),
        grads: vec![Some(g.clone())],
        keep_graph: false,
        create_graph: false,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    })
    .unwrap();
    assert!(!std::sync::Arc::ptr_eq(&x.grad().unwrap().storage(), &g.storage()), "x.grad shares storage with the caller's gradient");
}

/// Gradients arriving in another dtype are cast to the leaf's dtype; an empty leaf gets an
/// empty gradient.
#[test]
fn accumulate_grad_dtype_and_empty() {
    let _s = serial();
    let a = leaf32(vec![1.0, 2.0], &[2]);
    let b = leaf64(vec![3.0, 4.0], &[2]);
    backward(&sum_all(&ops::mul(&a, &b).unwrap()), false).unwrap();
    let ga = a.grad().unwrap();
    assert_eq!(ga.dtype(), DType::F32);
    assert_eq!(ga.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
    assert_eq!(grad64(&b), vec![1.0, 2.0]);

    let e = leaf64(vec![], &[0]);
    backward(&sum_all(&ops::mul(&e, &e).unwrap()), false).unwrap();
    assert_eq!(e.grad().unwrap().shape()[..], [0]);
}

// ---------------------------------------------------------------------------------------------
// Engine errors for bad requests

#[test]
fn backward_request_errors() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![1.0, 2.0], &[2]);
    let y = ops::mul(&x, &ops::scalar(2.0)).unwrap();
    assert_err_contains(backward(&y, false), "grad can be implicitly created only for scalar outputs");
    // An explicit gradient of the wrong shape.
    let r = run_backward(BackwardRequest {
        roots: std::slice::from_ref(&y),
        grads: vec![Some(Tensor::from_vec(vec![1.0f64; 3], &[3]))],
        keep_graph: false,
        create_graph: false,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    });
    assert_err_contains(r, "Mismatch in shape");
    // An explicit gradient of the right shape works.
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(&y),
        grads: vec![Some(Tensor::from_vec(vec![1.0f64, 10.0], &[2]))],
        keep_graph: false,
        create_graph: false,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    })
    .unwrap();
    assert_eq!(grad64(&x), vec![2.0, 20.0]);
    // A tensor that does not require grad.
    let c = Tensor::from_vec(vec![1.0f64], &[1]);
    assert_err_contains(backward(&c, false), "does not require grad and does not have a grad_fn");
    // autograd.grad of an unused input.
    let u = leaf64(vec![1.0], &[1]);
    let s = sum_all(&ops::mul(&x, &x).unwrap());
    assert_err_contains(grad_of(&s, &[x.clone(), u.clone()]), "appears to not have been used in the graph");
    drop((y, s));
    assert_eq!(live_nodes(), base);
}

// ---------------------------------------------------------------------------------------------
// Slot mode (Note [Slot mode] in engine.rs) against the table way

/// Runs `f` with slot mode on or off, then turns it back on (the default).
fn with_slot_mode<T>(on: bool, f: impl FnOnce() -> T) -> T {
    ferrograd::autograd::engine::set_slot_mode(on);
    let r = f();
    ferrograd::autograd::engine::set_slot_mode(true);
    r
}

/// A DAG of one-element and vector nodes (shared subexpressions, a node used by several others,
/// lane and tensor nodes mixed) over two float32 leaves: the gradients' bits.
fn dag_grad_bits(keep: bool) -> Vec<u32> {
    let a = leaf32(vec![0.7], &[]);
    let b = leaf32(vec![0.2, -0.4, 1.5], &[3]);
    let mut vals = vec![a.clone(), sum_all(&b)];
    for i in 0..300 {
        let x = &vals[vals.len() - 1 - i % 3];
        let y = &vals[vals.len() - 1 - (i * 7) % 5.min(vals.len())];
        let v = match i % 6 {
            0 => ops::tanh(&ops::mul(x, &ops::scalar(0.9)).unwrap()).unwrap(),
            1 => ops::add(x, y).unwrap(),
            2 => ops::mul(x, y).unwrap(),
            3 => ops::sigmoid(&ops::add(x, &ops::scalar(0.1)).unwrap()).unwrap(),
            4 => sum_all(&ops::mul(&b, x).unwrap()),
            _ => ops::exp(&ops::mul(x, &ops::scalar(0.01)).unwrap()).unwrap(),
        };
        vals.push(v);
    }
    let root = ops::add(&ops::add(&vals[vals.len() - 1], &vals[vals.len() - 2]).unwrap(), &ops::tanh(&a).unwrap()).unwrap();
    backward(&root, keep).unwrap();
    if keep {
        backward(&root, false).unwrap();
    }
    let mut out: Vec<u32> = a.grad().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
    out.extend(b.grad().unwrap().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()));
    out
}

#[test]
fn slot_mode_is_bitwise_the_table_way() {
    let _s = serial();
    let base = live_nodes();
    for keep in [false, true] {
        let slots = with_slot_mode(true, || dag_grad_bits(keep));
        let table = with_slot_mode(false, || dag_grad_bits(keep));
        assert_eq!(slots, table, "retain_graph={keep}");
    }
    assert_eq!(live_nodes(), base);
}

/// A pass that fails midway leaves marks behind under an abandoned token: the graph can be
/// backpropagated again (slot mode or the table way), and its nodes are freed.
#[test]
fn slot_mode_after_a_failed_pass_runs_again_and_releases() {
    let _s = serial();
    let base = live_nodes();
    let x = leaf64(vec![0.5], &[]);
    let (mut y, mut u, mut want_low) = (x.clone(), 0.5f64, 1.0f64);
    for _ in 0..1000 {
        y = ops::tanh(&ops::mul(&y, &ops::scalar(1.1)).unwrap()).unwrap();
        let t = (u * 1.1).tanh();
        want_low *= 1.1 * (1.0 - t * t);
        u = t;
    }
    let low = y.clone();
    let mid = ops::tanh(&ops::mul(&low, &ops::scalar(1.1)).unwrap()).unwrap();
    y = mid.clone();
    for _ in 0..1000 {
        y = ops::tanh(&ops::mul(&y, &ops::scalar(1.1)).unwrap()).unwrap();
    }
    // mid's saved output modified in place: backward fails halfway down the chain, leaving the
    // lower half claimed
    mid.bump_version();
    assert_err_contains(backward(&y, true), "modified by an inplace operation");
    assert!(x.grad().is_none());
    // the lower half backpropagates from `low` (its marks are taken over)
    backward(&low, true).unwrap();
    assert_close(&grad64(&x), &[want_low], 1e-9 * want_low.abs());
    x.set_grad(None);
    let y2 = ops::mul(&x, &ops::scalar(3.0)).unwrap();
    backward(&y2, false).unwrap();
    assert_close(&grad64(&x), &[3.0], 0.0);
    x.set_grad(None);
    let z = ops::add(&ops::mul(&x, &ops::scalar(2.0)).unwrap(), &ops::tanh(&x).unwrap()).unwrap();
    with_slot_mode(false, || backward(&z, true)).unwrap();
    with_slot_mode(true, || backward(&z, false)).unwrap();
    let want = 2.0 * (2.0 + (1.0 - 0.5f64.tanh().powi(2)));
    assert_close(&grad64(&x), &[want], 1e-12);
    drop((y, mid, low, y2, z));
    assert_eq!(live_nodes(), base);
}
