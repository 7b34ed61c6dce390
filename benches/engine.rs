//! Pure-Rust engine benches (no Python): node record/release, backward scheduling on a chain and
//! on a wide graph, parallel against sequential backward on wide graphs of matmul/tanh branches,
//! elementwise and reduction kernels by size, GEMM throughput.
//!
//!     cargo bench --no-default-features --bench engine            # about a minute
//!     cargo bench --no-default-features --bench engine -- --quick # a few seconds per bench
//!
//! Throughput is in elements: nodes for the graph benches (so criterion prints nodes/s),
//! elements for the kernels, and 2·n³ floating-point operations for GEMM (so "Kelem/s" reads
//! as kFLOP/s, "Gelem/s" as GFLOP/s).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ferrograd::autograd::engine::{set_parallel_backward, ParallelBackward};
use ferrograd::autograd::{run_backward, BackwardRequest, GradModeGuard};
use ferrograd::ops;
use ferrograd::tensor::Tensor;
use std::hint::black_box;
use std::time::Duration;

fn backward(root: &Tensor) {
    run_backward(BackwardRequest {
        roots: std::slice::from_ref(root),
        grads: vec![None],
        keep_graph: false,
        create_graph: false,
        inputs: None,
        accumulate: true,
        allow_unused: false,
    })
    .unwrap();
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn leaf(v: Vec<f32>, shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

/// A chain of `n` scalar ops on a 1-element leaf: `y = y + 0.5` (AddBackward0, saves nothing).
fn scalar_chain(x: &Tensor, c: &Tensor, n: usize) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = ops::add(&y, c).unwrap();
    }
    y
}

/// Node record + release: 1000 scalar ops recorded, then the chain dropped (forward only).
fn bench_record_release(c: &mut Criterion) {
    let mut g = c.benchmark_group("tape");
    const N: usize = 1000;
    g.throughput(Throughput::Elements(N as u64));
    let x = leaf(vec![1.0], &[1]);
    let half = ops::scalar(0.5);
    g.bench_function("record_release_chain_1000", |b| {
        b.iter(|| {
            let y = scalar_chain(&x, &half, N);
            black_box(&y);
            drop(y);
        })
    });
    // The same ops with grad mode off: the op cost without the tape.
    g.bench_function("no_grad_chain_1000", |b| {
        let _ng = GradModeGuard::new(false);
        b.iter(|| black_box(scalar_chain(&x, &half, N)))
    });
    g.finish();
}

/// Backward of a 10k scalar chain (building it is set-up, dropping it is outside the timing).
fn bench_backward_chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("backward");
    // Each iteration also pays an untimed set-up (building the graph).
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    const N: usize = 10_000;
    g.throughput(Throughput::Elements(N as u64));
    let x = leaf(vec![1.0], &[1]);
    let half = ops::scalar(0.5);
    g.bench_function("chain_10k", |b| {
        b.iter_batched(
            || scalar_chain(&x, &half, N),
            |y| {
                backward(&y);
                y
            },
            BatchSize::PerIteration,
        )
    });

    // A wide graph: 256 branches `tanh(x * w_i)` over a 64-element leaf, summed pairwise into
    // one root; every branch's gradient lands on the same leaf.
    const B: usize = 256;
    let xw = leaf(values(64, 1), &[64]);
    let ws: Vec<Tensor> = (0..B).map(|i| Tensor::from_vec(values(64, 10 + i as u64), &[64])).collect();
    let build = || {
        let mut level: Vec<Tensor> = ws.iter().map(|w| ops::tanh(&ops::mul(&xw, w).unwrap()).unwrap()).collect();
        while level.len() > 1 {
            level = level.chunks(2).map(|p| ops::add(&p[0], &p[1]).unwrap()).collect();
        }
        ops::sum(&level[0], None, false, None).unwrap()
    };
    // nodes: B mul + B tanh + (B - 1) add + 1 sum
    g.throughput(Throughput::Elements((3 * B) as u64));
    g.bench_function("wide_256_branches", |b| {
        b.iter_batched(
            build,
            |root| {
                backward(&root);
                root
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// W5's graph in Rust: 16 branches of 4 × (n×n matmul → tanh), each summed, the sums added into
/// one root; backward with parallel backward forced on (whatever the thread count) and off (the
/// sequential engine), for n = 64 (nodes below the parallel threshold: both run sequentially),
/// 128 and 256.
fn bench_parallel_backward(c: &mut Criterion) {
    let mut g = c.benchmark_group("parallel_backward");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    const B: usize = 16;
    for &n in &[64usize, 128, 256] {
        let xs: Vec<Tensor> = (0..B).map(|i| Tensor::from_vec(values(n * n, 100 + i as u64), &[n, n])).collect();
        let scale = 1.0 / (n as f32).sqrt();
        let ws: Vec<Vec<Tensor>> = (0..B)
            .map(|i| (0..4).map(|j| leaf(values(n * n, 1000 + (4 * i + j) as u64).iter().map(|v| v * scale).collect(), &[n, n])).collect())
            .collect();
        let build = || {
            let mut total: Option<Tensor> = None;
            for (x, wb) in xs.iter().zip(&ws) {
                let mut h = x.clone();
                for w in wb {
                    w.set_grad(None);
                    h = ops::tanh(&ops::matmul(&h, w).unwrap()).unwrap();
                }
                let s = ops::sum(&h, None, false, None).unwrap();
                total = Some(match total {
                    None => s,
                    Some(t) => ops::add(&t, &s).unwrap(),
                });
            }
            total.unwrap()
        };
        // nodes: 16 × (4 matmul + 4 tanh + 1 sum) + 15 add
        g.throughput(Throughput::Elements((B * 9 + B - 1) as u64));
        for (label, mode) in [("parallel", ParallelBackward::Always), ("sequential", ParallelBackward::Off)] {
            g.bench_with_input(BenchmarkId::new(format!("w5_16x4_{}", label), n), &n, |b, _| {
                set_parallel_backward(mode);
                b.iter_batched(
                    build,
                    |root| {
                        backward(&root);
                        root
                    },
                    BatchSize::PerIteration,
                );
                set_parallel_backward(ParallelBackward::Auto);
            });
        }
    }
    g.finish();
}

/// Elementwise kernels (no grad) at 1k / 64k / 1M float32 elements.
fn bench_elementwise(c: &mut Criterion) {
    let _ng = GradModeGuard::new(false);
    let mut g = c.benchmark_group("elementwise");
    for &n in &[1usize << 10, 1 << 16, 1 << 20] {
        let a = Tensor::from_vec(values(n, 2), &[n]);
        let b = Tensor::from_vec(values(n, 3), &[n]);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("add", n), &n, |bch, _| bch.iter(|| black_box(ops::add(&a, &b).unwrap())));
        g.bench_with_input(BenchmarkId::new("tanh", n), &n, |bch, _| bch.iter(|| black_box(ops::tanh(&a).unwrap())));
    }
    g.finish();
}

/// Full reduction (sum) of 1M float32 elements.
fn bench_reduce(c: &mut Criterion) {
    let _ng = GradModeGuard::new(false);
    let mut g = c.benchmark_group("reduce");
    let n = 1usize << 20;
    let a = Tensor::from_vec(values(n, 4), &[n]);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_with_input(BenchmarkId::new("sum", n), &n, |bch, _| bch.iter(|| black_box(ops::sum(&a, None, false, None).unwrap())));
    g.finish();
}

/// GEMM n×n @ n×n, float32; throughput 2·n³ (FLOP).
fn bench_gemm(c: &mut Criterion) {
    let _ng = GradModeGuard::new(false);
    let mut g = c.benchmark_group("gemm");
    for &n in &[256usize, 1024] {
        let a = Tensor::from_vec(values(n * n, 5), &[n, n]);
        let b = Tensor::from_vec(values(n * n, 6), &[n, n]);
        g.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        if n >= 1024 {
            g.sample_size(10);
        }
        g.bench_with_input(BenchmarkId::new("matmul_f32", n), &n, |bch, _| bch.iter(|| black_box(ops::matmul(&a, &b).unwrap())));
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_record_release, bench_backward_chain, bench_parallel_backward, bench_elementwise, bench_reduce, bench_gemm
}
criterion_main!(benches);
