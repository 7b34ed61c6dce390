//! Vectorisable float32 transcendental functions.
//!
//! std's `f32::tanh`/`exp` call libm one element at a time (tanh through f64 costs about 25 ns).
//! These compute in f64 with branch-free polynomial code that the loops in `simd` vectorise,
//! then round once to f32: the f64 intermediate is accurate to about 1e-9 relative, so the f32
//! result is the correctly rounded value except in rare near-tie cases (then one ulp away) —
//! within the ≤ 1 ulp of torch's own vectorised (Sleef) kernels.

const LOG2E: f64 = std::f64::consts::LOG2_E;
// fdlibm's split of ln 2: n * LN2_HI is exact for |n| < 2^11.
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
// 1.5 * 2^52: adding it rounds to an integer held in the low mantissa bits.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// e^x for |x| <= 700 (no NaN/overflow handling), relative error below 3e-10: enough for a
/// result rounded to f32 (ulp 6e-8), not for an f64 result.
#[inline(always)]
fn exp_core(x: f64) -> f64 {
    let t = x * LOG2E + MAGIC;
    let n = t - MAGIC;
    let r = (x - n * LN2_HI) - n * LN2_LO; // |r| <= ln2/2
    // Taylor to degree 8: truncation error < r^9/9! * e^r ~ 2.9e-10.
    let p = 1.0 / 40_320.0;
    let p = p * r + 1.0 / 5_040.0;
    let p = p * r + 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // 2^n from the integer in t's low bits: (n + 1023) << 52, valid for -1022 <= n <= 1023.
    let scale = f64::from_bits(t.to_bits().wrapping_add(1023) << 52);
    p * scale
}

/// e^x for float32 x (NaN in, NaN out; overflow to inf, underflow to 0 as f32).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let xd = x as f64;
    // f32 results overflow above 88.8 and vanish below -104; clamping keeps exp_core in range.
    let xc = if xd < 200.0 { xd } else { 200.0 };
    let xc = if xc > -200.0 { xc } else { -200.0 };
    let y = exp_core(xc);
    (if xd.is_nan() { xd } else { y }) as f32
}

/// tanh for float32 x.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let xd = x as f64;
    let a = xd.abs();
    // tanh(20) rounds to 1 even in f64.
    let ac = if a < 20.0 { a } else { 20.0 };
    let e = exp_core(2.0 * ac);
    let big = 1.0 - 2.0 / (e + 1.0);
    // Near zero the formula above cancels; the odd series is exact to f64 rounding below 0.04.
    let a2 = a * a;
    let small = a + a * a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0 + a2 * (62.0 / 2835.0))));
    let t = if a < 0.04 { small } else { big };
    let t = t.copysign(xd);
    (if xd.is_nan() { xd } else { t }) as f32
}

/// 1 / (1 + e^-x) for float32 x.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    let xd = -(x as f64);
    let xc = if xd < 200.0 { xd } else { 200.0 };
    let xc = if xc > -200.0 { xc } else { -200.0 };
    let y = 1.0 / (1.0 + exp_core(xc));
    (if xd.is_nan() { xd } else { y }) as f32
}

/// tanh of an f32 or f64 element: the fast path for f32, std (libm) for f64.
#[inline(always)]
pub fn tanh<T: crate::tensor::Element>(v: T) -> T {
    if T::DTYPE == crate::tensor::DType::F32 {
        T::from_f64(tanh_f32(v.to_f64() as f32) as f64)
    } else {
        T::from_f64(v.to_f64().tanh())
    }
}

/// e^x of an f32 or f64 element.
#[inline(always)]
pub fn exp<T: crate::tensor::Element>(v: T) -> T {
    if T::DTYPE == crate::tensor::DType::F32 {
        T::from_f64(exp_f32(v.to_f64() as f32) as f64)
    } else {
        T::from_f64(v.to_f64().exp())
    }
}

/// sigmoid of an f32 or f64 element.
#[inline(always)]
pub fn sigmoid<T: crate::tensor::Element>(v: T) -> T {
    if T::DTYPE == crate::tensor::DType::F32 {
        T::from_f64(sigmoid_f32(v.to_f64() as f32) as f64)
    } else {
        T::from_f64(1.0 / (1.0 + (-v.to_f64()).exp()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn f32_kernels_match_f64_reference() {
        let mut worst = [0u32; 3];
        let mut x = -120.0f32;
        while x < 120.0 {
            for v in [x, x * 1e-3, x * 1e-6, x * 1e-30] {
                worst[0] = worst[0].max(ulps(tanh_f32(v), (v as f64).tanh() as f32));
                worst[1] = worst[1].max(ulps(exp_f32(v), (v as f64).exp() as f32));
                worst[2] = worst[2].max(ulps(sigmoid_f32(v), (1.0 / (1.0 + (-(v as f64)).exp())) as f32));
            }
            x += 0.000_37;
        }
        assert!(worst.iter().all(|&w| w <= 1), "worst ulps {worst:?}");
        for f in [tanh_f32 as fn(f32) -> f32, exp_f32, sigmoid_f32] {
            assert!(f(f32::NAN).is_nan());
        }
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
    }
}

#[cfg(test)]
mod timing {
    /// `cargo test --release --no-default-features --lib -- --ignored --nocapture kernel_timing`
    #[test]
    #[ignore]
    fn kernel_timing() {
        use crate::backend::cpu::simd;
        use std::mem::MaybeUninit;
        let n = 8192;
        let src: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.001).sin() * 3.0).collect();
        let mut dst: Vec<MaybeUninit<f32>> = (0..n).map(|_| MaybeUninit::uninit()).collect();
        let mut row = |name: &str, f: &(dyn Fn(&[f32], &mut [MaybeUninit<f32>]) + Sync)| {
            let mut best = f64::MAX;
            for _ in 0..200 {
                let t = std::time::Instant::now();
                for _ in 0..10 {
                    f(&src, &mut dst);
                }
                best = best.min(t.elapsed().as_secs_f64() / 10.0);
            }
            println!("{name:>10}: {:.3} ns/elem (level {})", best * 1e9 / n as f64, simd::level());
        };
        row("exp", &|s, d| simd::map_run(s, d, &super::exp_f32));
        row("tanh", &|s, d| simd::map_run(s, d, &super::tanh_f32));
        row("sigmoid", &|s, d| simd::map_run(s, d, &super::sigmoid_f32));
        row("std tanh", &|s, d| simd::map_run(s, d, &|x: f32| (x as f64).tanh() as f32));
        row("mul", &|s, d| simd::map_run(s, d, &|x: f32| x * 1.5));
    }
}
