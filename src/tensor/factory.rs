//! Creation functions that need more than a fill: ranges, identity, random numbers.
//!
//! Random numbers come from one process-wide generator seeded by `manual_seed`; sequences are
//! reproducible within ferrograd but are not torch's Mersenne-Twister streams.

use super::{DType, Scalar, Tensor};
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
        if dtype.is_narrow() {
            // float16/bfloat16 samples are float32 samples rounded (as torch's)
            let t = crate::backend::cuda::native::random(shape, DType::F32, normal, next_seed())?;
            return crate::backend::cpu::cast(&t, dtype);
        }
        return crate::backend::cuda::native::random(shape, dtype, normal, next_seed());
    }
    let t = if normal { randn(shape, dtype)? } else { rand(shape, dtype)? };
    crate::backend::cuda::place(t, device)
}

pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if !dtype.is_float() {
        bail!(NotImplemented, "\"check_uniform_bounds\" not implemented for '{}'", crate::ops::shape::type_word(dtype));
    }
    fill_with(shape, dtype, |r| r.random::<f64>())
}

/// Standard normal samples (Box-Muller).
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    if !dtype.is_float() {
        bail!(NotImplemented, "\"normal_kernel_cpu\" not implemented for '{}'", crate::ops::shape::type_word(dtype));
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
    // torch's bounds for the dtype (named as its C++ type)
    let range = match dtype {
        DType::Bool => Some(("bool", 0, 1)),
        DType::U8 => Some(("unsigned char", 0, 255)),
        DType::I8 => Some(("signed char", -128, 127)),
        DType::I16 => Some(("short int", -32768, 32767)),
        DType::I32 => Some(("int", i32::MIN as i64, i32::MAX as i64)),
        DType::F16 => Some(("c10::Half", -65504, 65504)),
        _ => None,
    };
    if let Some((name, lo, hi)) = range {
        if low < lo || low > hi {
            bail!(Runtime, "from is out of bounds for {}", name);
        }
        if high - 1 > hi {
            bail!(Runtime, "to - 1 is out of bounds for {}", name);
        }
    }
    fill_with(shape, dtype, |r| r.random_range(low..high) as f64)
}

/// randint on `device`: on a GPU with kernels, the device's counter-based generator seeded from
/// the global one (after the same checks); else the CPU's values moved there.
pub fn randint_on(low: i64, high: i64, shape: &[usize], dtype: DType, device: crate::backend::Device) -> Result<Tensor> {
    if device.is_cuda() && crate::backend::cuda::has_kernels() {
        // the checks, on an empty tensor
        randint(low, high, &[0], dtype)?;
        crate::tensor::layout::checked_numel(shape)?;
        return crate::backend::cuda::native::randint(shape, dtype, low, high, next_seed());
    }
    crate::backend::cuda::place(randint(low, high, shape, dtype)?, device)
}

/// A number as torch's error messages print it (C++ stream style: 0, 1.5, inf, nan).
fn num_str(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else {
        format!("{}", v)
    }
}

/// torch.arange(start, end, step). The length is ceil((end - start) / step) in f64, or in int64
/// arithmetic (wrapping, as torch's) when every bound is an int and the dtype is int64; values of
/// an integer dtype are start + i * step in int64 with start and step truncated, as torch's.
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
    let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
    if dtype == DType::Bool {
        bail!(NotImplemented, "\"arange_cpu\" not implemented for 'Bool'");
    }
    if !st.is_finite() {
        bail!(Runtime, "step must be finite but got {}", num_str(st));
    }
    if st == 0.0 {
        bail!(Runtime, "step must be nonzero");
    }
    if !s.is_finite() || !e.is_finite() {
        bail!(Runtime, "unsupported range: {} -> {}", num_str(s), num_str(e));
    }
    if !((st > 0.0 && e >= s) || (st < 0.0 && e <= s)) {
        bail!(Runtime, "upper bound and lower bound inconsistent with step sign");
    }
    let size = match (start, end, step) {
        (Scalar::Int(s), Scalar::Int(e), Scalar::Int(st)) if dtype == DType::I64 => {
            e.wrapping_sub(s).wrapping_add(st).wrapping_sub(st.signum()).wrapping_div(st) as f64
        }
        _ => ((e - s) / st).ceil(),
    };
    if !(size >= 0.0 && size <= i64::MAX as f64) {
        bail!(Runtime, "invalid size, possible overflow?");
    }
    let n = size as usize;
    let t = Tensor::zeros(&[n], dtype)?;
    let (si, sti) = (start.to_i64(), step.to_i64());
    crate::with_dtype!(dtype, T => {
        let st_ = t.storage();
        let d = unsafe { st_.slice_mut::<T>() };
        if dtype.is_float() {
            for (i, v) in d.iter_mut().enumerate() {
                *v = <T as super::Element>::from_f64(s + i as f64 * st);
            }
        } else {
            for (i, v) in d.iter_mut().enumerate() {
                *v = <T as super::Element>::from_i64(si.wrapping_add((i as i64).wrapping_mul(sti)));
            }
        }
    });
    Ok(t)
}

pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        bail!(Runtime, "number of steps must be non-negative");
    }
    // an integer dtype takes the bounds as its values first (uint8: -1 is 255), as torch's
    let (start, end) = if dtype.is_float() {
        (start, end)
    } else {
        (Tensor::full(&[], start, dtype)?.item_f64()?, Tensor::full(&[], end, dtype)?.item_f64()?)
    };
    let n = steps as usize;
    let t = Tensor::zeros(&[n], dtype)?;
    let step = if n > 1 { (end - start) / (n - 1) as f64 } else { 0.0 };
    // torch fills the second half from the end, so the last value is exactly `end`
    let half = n / 2;
    crate::with_dtype!(dtype, T => {
        let st = t.storage();
        let d = unsafe { st.slice_mut::<T>() };
        for (i, v) in d.iter_mut().enumerate() {
            let x = if n == 1 { start } else if i < half { start + step * i as f64 } else { end - step * (n - 1 - i) as f64 };
            *v = <T as super::Element>::from_f64(x);
        }
    });
    Ok(t)
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
