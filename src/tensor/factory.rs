//! Creation functions that need more than a fill: ranges, identity, random numbers.
//!
//! Random numbers come from one process-wide generator seeded by `manual_seed`; sequences are
//! reproducible within ferrograd but are not torch's Mersenne-Twister streams.

use super::{DType, Tensor};
use crate::bail;
use crate::error::Result;
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng as StdRng;
use std::sync::LazyLock;

static RNG: LazyLock<Mutex<(StdRng, u64)>> = LazyLock::new(|| Mutex::new((StdRng::seed_from_u64(0x5eed), 0x5eed)));

pub fn manual_seed(seed: u64) {
    *RNG.lock() = (StdRng::seed_from_u64(seed), seed);
}

/// The seed last given to `manual_seed` (torch.initial_seed).
pub fn initial_seed() -> u64 {
    RNG.lock().1
}

/// Length of the state `get_rng_state` returns.
pub const RNG_STATE_LEN: usize = 8;

/// The generator's whole state as words: the ChaCha key (4), the stream, the position in the
/// stream (2 words) and the initial seed. `set_rng_state` restores it exactly.
pub fn get_rng_state() -> [u64; RNG_STATE_LEN] {
    let g = RNG.lock();
    let key = g.0.get_seed();
    let mut st = [0u64; RNG_STATE_LEN];
    for (i, w) in key.chunks_exact(8).enumerate() {
        st[i] = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
    }
    let pos = g.0.get_word_pos();
    st[4] = g.0.get_stream();
    st[5] = (pos >> 64) as u64;
    st[6] = pos as u64;
    st[7] = g.1;
    st
}

pub fn set_rng_state(st: &[u64; RNG_STATE_LEN]) {
    let mut key = [0u8; 32];
    for i in 0..4 {
        key[i * 8..i * 8 + 8].copy_from_slice(&st[i].to_le_bytes());
    }
    let mut r = StdRng::from_seed(key);
    r.set_stream(st[4]);
    r.set_word_pos(((st[5] as u128) << 64) | st[6] as u128);
    *RNG.lock() = (r, st[7]);
}

fn fill_with(shape: &[usize], dtype: DType, mut f: impl FnMut(&mut StdRng) -> f64) -> Result<Tensor> {
    let t = Tensor::zeros(shape, dtype)?;
    let n = t.numel();
    let mut g = RNG.lock();
    let rng = &mut g.0;
    crate::with_dtype!(dtype, T => {
        let st = t.storage();
        let d = unsafe { st.slice_mut::<T>() };
        for v in d.iter_mut().take(n) {
            *v = <T as super::Element>::from_f64(f(rng));
        }
    });
    Ok(t)
}

/// A seed for a device generator, drawn from the global generator (so manual_seed governs it).
pub fn next_seed() -> u64 {
    RNG.lock().0.random::<u64>()
}

/// rand / randn on `device`: on a GPU with kernels, a counter-based generator seeded from the
/// global one (reproducible under manual_seed, not the CPU's values); else the CPU generator.
pub fn random_on(shape: &[usize], dtype: DType, normal: bool, device: crate::backend::Device) -> Result<Tensor> {
    if device.is_cuda() && crate::backend::cuda::has_kernels() && dtype.is_float() {
        crate::tensor::layout::checked_numel(shape)?;
        return crate::backend::cuda::native::random(shape, dtype, normal, next_seed());
    }
    let t = if normal { randn(shape, dtype)? } else { rand(shape, dtype)? };
    crate::backend::cuda::place(t, device)
}

pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if !dtype.is_float() {
        bail!(Runtime, "\"check_uniform_bounds\" not implemented for '{}'", crate::ops::shape::type_word(dtype));
    }
    fill_with(shape, dtype, |r| r.random::<f64>())
}

/// Standard normal samples (Box-Muller).
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if !dtype.is_float() {
        bail!(Runtime, "\"normal_kernel_cpu\" not implemented for '{}'", crate::ops::shape::type_word(dtype));
    }
    let mut spare: Option<f64> = None;
    fill_with(shape, dtype, move |r| {
        if let Some(s) = spare.take() {
            return s;
        }
        let u1: f64 = 1.0 - r.random::<f64>();
        let u2: f64 = r.random::<f64>();
        let rad = (-2.0 * u1.ln()).sqrt();
        let th = 2.0 * std::f64::consts::PI * u2;
        spare = Some(rad * th.sin());
        rad * th.cos()
    })
}

pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if high <= low {
        bail!(Runtime, "random_ expects 'from' to be less than 'to', but got from={} >= to={}", low, high);
    }
    fill_with(shape, dtype, |r| r.random_range(low..high) as f64)
}

pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    if step == 0.0 {
        bail!(Runtime, "step must be nonzero");
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        bail!(Runtime, "upper bound and larger bound inconsistent with step sign");
    }
    let n = ((end - start) / step).ceil().max(0.0) as usize;
    crate::with_dtype!(dtype, T => {
        let v: Vec<T> = (0..n).map(|i| <T as super::Element>::from_f64(start + i as f64 * step)).collect();
        Ok(Tensor::from_vec(v, &[n]))
    })
}

pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        bail!(Runtime, "number of steps must be non-negative");
    }
    let n = steps as usize;
    let step = if n > 1 { (end - start) / (n - 1) as f64 } else { 0.0 };
    // torch fills the second half from the end, so the last value is exactly `end`
    let half = n / 2;
    crate::with_dtype!(dtype, T => {
        let v: Vec<T> = (0..n).map(|i| {
            let x = if n == 1 { start } else if i < half { start + step * i as f64 } else { end - step * (n - 1 - i) as f64 };
            <T as super::Element>::from_f64(x)
        }).collect();
        Ok(Tensor::from_vec(v, &[n]))
    })
}

pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    let t = Tensor::zeros(&[n, m], dtype)?;
    crate::with_dtype!(dtype, T => {
        let st = t.storage();
        let d = unsafe { st.slice_mut::<T>() };
        for i in 0..n.min(m) {
            d[i * m + i] = <T as super::Element>::from_f64(1.0);
        }
    });
    Ok(t)
}
