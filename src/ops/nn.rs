//! Fused neural-network ops that torch runs as one kernel and records as one node: GELU
//! (`GeluBackward0`, and `GeluBackwardBackward0` for its backward), layer normalisation
//! (`NativeLayerNormBackward0`), the mean-squared-error loss (`MseLossBackward0`) and binary cross
//! entropy on logits (`BinaryCrossEntropyWithLogitsBackward0`).
//!
//! Note [Fused nn ops]: on the CPU, for float32/float64 (GELU and layer norm also float16/bfloat16,
//! computed in float32 and rounded once, as torch), the forward is one pass over the data and the
//! backward of a plain `backward()` is one pass too. Everywhere else (a CUDA tensor, and the
//! backward under `create_graph=True`) the same values are composed from the engine's own
//! differentiable ops, so higher-order gradients stay exact and every device records torch's node.

use super::{cast_raw, needs_grad, record_with_scalars, scalar};
use super::{add, clamp, div, exp, log1p, mean, mul, neg, pow_scalar, rsqrt, rsub_scalar, sigmoid, sub, sum, sum_to};
use crate::autograd::{is_grad_enabled, GradModeGuard, SavedScalar, SavedTensor};
use crate::backend::cpu;
use crate::error::Result;
use crate::tensor::{DType, Element, Tensor};
use crate::{bail, saved};
use smallvec::smallvec;
use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// sqrt(2/π), the tanh approximation's scale.
const BETA: f64 = 0.797_884_560_802_865_4;
const KAPPA: f64 = 0.044715;

/// A float32/float64 tensor in host memory: the fused kernels' case.
fn host_float(t: &Tensor) -> bool {
    !t.is_cuda() && matches!(t.dtype(), DType::F32 | DType::F64)
}

fn approximate_name(tanh: bool) -> SavedScalar {
    SavedScalar::Str(if tanh { "tanh" } else { "none" })
}

/// `$body` with `$T` the element type of a float32/float64 `$dt` (float64 for any other).
macro_rules! with_float {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            DType::F32 => {
                type $T = f32;
                $body
            }
            _ => {
                type $T = f64;
                $body
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// GELU

/// gelu(x) = x·Φ(x) (`tanh`: torch's approximation), one node `GeluBackward0`.
pub fn gelu(x: &Tensor, tanh: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::gelu");
    if !x.dtype().is_float() {
        bail!(NotImplemented, "\"GeluKernelImpl\" not implemented for '{}'", x.dtype().type_word());
    }
    let out = if x.is_cuda() {
        let _ng = GradModeGuard::new(false);
        gelu_composed(x, tanh)?
    } else {
        gelu_host(x, tanh)?
    };
    if needs_grad(&[x]) {
        record_with_scalars(&[&out], &[x], "GeluBackward0", saved!(self = SavedTensor::input(x)), [("approximate", approximate_name(tanh))], move |ctx, gs| {
            let x = ctx.saved(0)?;
            Ok(smallvec![Some(gelu_backward(&gs[0], &x, tanh)?)])
        });
    }
    Ok(out)
}

/// erf for float32 in float32, branch-free (the loops vectorise): Abramowitz & Stegun 7.1.26,
/// 1 - (a1·t + ... + a5·t⁵)·e^(-x²) with t = 1/(1 + p·|x|), absolute error under 1.5e-7 in exact
/// arithmetic (under 5e-7 evaluated in float32) — the approximation torch's vectorised CPU kernels
/// use, so gelu's float32 values round as torch's.
#[inline(always)]
fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / a.mul_add(0.327_591_1, 1.0);
    let r = 1.061_405_4f32;
    let r = r.mul_add(t, -1.453_152);
    let r = r.mul_add(t, 1.421_413_8);
    let r = r.mul_add(t, -0.284_496_72);
    let r = r.mul_add(t, 0.254_829_6);
    let y = 1.0 - r * t * cpu::math::exp_f32(-a * a);
    y.copysign(x)
}

fn gelu_host(x: &Tensor, tanh: bool) -> Result<Tensor> {
    match x.dtype() {
        DType::F64 if tanh => cpu::map::<f64, f64>(x, |v| 0.5 * v * (1.0 + (BETA * (v + KAPPA * v * v * v)).tanh())),
        DType::F64 => cpu::map::<f64, f64>(x, |v| v * 0.5 * (1.0 + libm::erf(v * FRAC_1_SQRT_2))),
        DType::F32 if tanh => cpu::map::<f32, f32>(x, |v| {
            let inner = BETA as f32 * (v + KAPPA as f32 * v * v * v);
            0.5 * v * (1.0 + cpu::math::tanh_f32(inner))
        }),
        DType::F32 => cpu::map::<f32, f32>(x, |v| v * 0.5 * (1.0 + erf_f32(v * FRAC_1_SQRT_2 as f32))),
        dt => cast_raw(&gelu_host(&cast_raw(x, DType::F32)?, tanh)?, dt),
    }
}

/// GELU from the engine's ops (the device path, and the reference of the fused kernel).
fn gelu_composed(x: &Tensor, tanh: bool) -> Result<Tensor> {
    if tanh {
        let inner = mul(&add(x, &mul(&pow_scalar(x, 3.0)?, &scalar(KAPPA))?)?, &scalar(BETA))?;
        mul(&mul(x, &scalar(0.5))?, &add(&super::tanh(&inner)?, &scalar(1.0))?)
    } else {
        mul(&mul(x, &scalar(0.5))?, &add(&super::erf(&mul(x, &scalar(FRAC_1_SQRT_2))?)?, &scalar(1.0))?)
    }
}

/// grad · gelu'(x), one node `GeluBackwardBackward0` (torch's `gelu_backward`).
pub fn gelu_backward(grad: &Tensor, x: &Tensor, tanh: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::gelu_backward");
    let fused = !grad.is_cuda() && !x.is_cuda() && grad.dtype() == x.dtype() && grad.shape() == x.shape() && x.dtype().is_float();
    let out = if fused {
        gelu_backward_host(grad, x, tanh)?
    } else {
        let _ng = GradModeGuard::new(false);
        mul(grad, &gelu_derivative(x, tanh)?)?
    };
    if needs_grad(&[grad, x]) {
        record_with_scalars(
            &[&out],
            &[grad, x],
            "GeluBackwardBackward0",
            saved!(grad_output = SavedTensor::input(grad), self = SavedTensor::input(x)),
            [("approximate", approximate_name(tanh))],
            move |ctx, gs| {
                let (g, x) = (ctx.saved(0)?, ctx.saved(1)?);
                let gg = &gs[0];
                let dg = if ctx.needs(0) { Some(gelu_backward(gg, &x, tanh)?) } else { None };
                let dx = if ctx.needs(1) { Some(mul(&mul(gg, &g)?, &gelu_second_derivative(&x, tanh)?)?) } else { None };
                Ok(smallvec![dg, dx])
            },
        );
    }
    Ok(out)
}

fn gelu_backward_host(grad: &Tensor, x: &Tensor, tanh: bool) -> Result<Tensor> {
    let shape = x.shape();
    // 1/sqrt(2π), the normal density's constant
    let k = 0.5 * std::f64::consts::FRAC_2_SQRT_PI * FRAC_1_SQRT_2;
    match x.dtype() {
        DType::F64 if tanh => cpu::zip::<f64, f64>(grad, x, &shape, |g, v| {
            let t = (BETA * (v + KAPPA * v * v * v)).tanh();
            g * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * BETA * (1.0 + 3.0 * KAPPA * v * v))
        }),
        DType::F64 => cpu::zip::<f64, f64>(grad, x, &shape, move |g, v| g * (0.5 * (1.0 + libm::erf(v * FRAC_1_SQRT_2)) + v * (-0.5 * v * v).exp() * k)),
        DType::F32 if tanh => cpu::zip::<f32, f32>(grad, x, &shape, |g, v| {
            let (b, kk) = (BETA as f32, KAPPA as f32);
            let t = cpu::math::tanh_f32(b * (v + kk * v * v * v));
            g * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * b * (1.0 + 3.0 * kk * v * v))
        }),
        DType::F32 => {
            let k = k as f32;
            cpu::zip::<f32, f32>(grad, x, &shape, move |g, v| g * (0.5 * (1.0 + erf_f32(v * FRAC_1_SQRT_2 as f32)) + v * cpu::math::exp_f32(-0.5 * v * v) * k))
        }
        dt => cast_raw(&gelu_backward_host(&cast_raw(grad, DType::F32)?, &cast_raw(x, DType::F32)?, tanh)?, dt),
    }
}

/// gelu'(x) from differentiable ops.
fn gelu_derivative(x: &Tensor, tanh: bool) -> Result<Tensor> {
    if tanh {
        let x2 = mul(x, x)?;
        let t = super::tanh(&mul(&add(x, &mul(&mul(&x2, x)?, &scalar(KAPPA))?)?, &scalar(BETA))?)?;
        let du = mul(&add(&mul(&x2, &scalar(3.0 * KAPPA))?, &scalar(1.0))?, &scalar(BETA))?;
        let left = mul(&add(&t, &scalar(1.0))?, &scalar(0.5))?;
        let right = mul(&mul(&mul(x, &scalar(0.5))?, &rsub_scalar(&mul(&t, &t)?, 1.0)?)?, &du)?;
        add(&left, &right)
    } else {
        let cdf = mul(&add(&super::erf(&mul(x, &scalar(FRAC_1_SQRT_2))?)?, &scalar(1.0))?, &scalar(0.5))?;
        add(&cdf, &mul(x, &normal_pdf(x)?)?)
    }
}

/// exp(-x²/2)/sqrt(2π)
fn normal_pdf(x: &Tensor) -> Result<Tensor> {
    mul(&exp(&mul(&mul(x, x)?, &scalar(-0.5))?)?, &scalar(1.0 / (2.0 * PI).sqrt()))
}

/// gelu''(x) from differentiable ops: φ(x)(2 - x²); tanh: (1-t²)(u' + x/2·(u'' - 2t·u'²)).
fn gelu_second_derivative(x: &Tensor, tanh: bool) -> Result<Tensor> {
    let x2 = mul(x, x)?;
    if tanh {
        let t = super::tanh(&mul(&add(x, &mul(&mul(&x2, x)?, &scalar(KAPPA))?)?, &scalar(BETA))?)?;
        let du = mul(&add(&mul(&x2, &scalar(3.0 * KAPPA))?, &scalar(1.0))?, &scalar(BETA))?;
        let ddu = mul(x, &scalar(6.0 * KAPPA * BETA))?;
        let sech2 = rsub_scalar(&mul(&t, &t)?, 1.0)?;
        let inner = sub(&ddu, &mul(&mul(&t, &mul(&du, &du)?)?, &scalar(2.0))?)?;
        mul(&sech2, &add(&du, &mul(&mul(x, &scalar(0.5))?, &inner)?)?)
    } else {
        mul(&normal_pdf(x)?, &rsub_scalar(&x2, 2.0)?)
    }
}

// ---------------------------------------------------------------------------------------------
// Layer normalisation

/// The trailing dims of `x` that `normalized_shape` names, checked as torch.
fn layer_norm_split(x: &Tensor, normalized_shape: &[usize]) -> Result<(usize, usize)> {
    let xs = x.shape();
    let k = normalized_shape.len();
    if k == 0 {
        bail!(Runtime, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []");
    }
    if xs.len() < k || xs[xs.len() - k..] != *normalized_shape {
        bail!(Runtime, "Given normalized_shape={:?}, expected input with shape [*, {}], but got input of size{:?}", normalized_shape, normalized_shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "), &xs[..]);
    }
    let len: usize = normalized_shape.iter().product();
    let rows: usize = xs[..xs.len() - k].iter().product();
    Ok((rows, len))
}

/// The shape of the per-row statistics: the input's with the normalised dims set to 1 (torch's).
fn stats_shape(x: &Tensor, k: usize) -> Vec<usize> {
    let xs = x.shape();
    let mut s: Vec<usize> = xs[..xs.len() - k].to_vec();
    s.extend(std::iter::repeat_n(1, k));
    s
}

/// layer_norm over the trailing `normalized_shape` dims, affine with `weight`/`bias` (of that
/// shape, the input's dtype), one node `NativeLayerNormBackward0`. Returns (output, mean, rstd).
pub fn layer_norm(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let _prof = crate::prof!("aten::native_layer_norm");
    let (rows, len) = layer_norm_split(x, normalized_shape)?;
    let k = normalized_shape.len();
    for p in [weight, bias].into_iter().flatten() {
        if p.shape()[..] != *normalized_shape {
            bail!(Runtime, "Expected weight and bias to be of the shape of normalized_shape {:?}, but got {:?}", normalized_shape, &p.shape()[..]);
        }
        if p.dtype() != x.dtype() {
            bail!(Runtime, "mixed dtype (CPU): all inputs must share same datatype.");
        }
    }
    if !x.dtype().is_float() {
        bail!(NotImplemented, "\"LayerNormKernelImpl\" not implemented for '{}'", x.dtype().type_word());
    }
    let host = !x.is_cuda() && weight.is_none_or(|w| !w.is_cuda()) && bias.is_none_or(|b| !b.is_cuda());
    let (out, mu, rstd) = if host {
        layer_norm_host(x, weight, bias, rows, len, eps, &stats_shape(x, k))?
    } else {
        let _ng = GradModeGuard::new(false);
        layer_norm_composed(x, k, weight, bias, eps)?
    };
    if needs_grad(&[x]) || weight.is_some_and(|w| needs_grad(&[w])) || bias.is_some_and(|b| needs_grad(&[b])) {
        let none = scalar(0.0);
        let (w_in, b_in) = (weight.unwrap_or(&none), bias.unwrap_or(&none));
        let shape_shown = SavedScalar::Ints(normalized_shape.iter().map(|&s| s as i64).collect());
        let has_w = weight.is_some();
        let ns: Vec<usize> = normalized_shape.to_vec();
        let mut kept = smallvec::SmallVec::<[SavedTensor; 2]>::new();
        kept.extend([SavedTensor::input(x), SavedTensor::input(&mu), SavedTensor::input(&rstd)]);
        if let Some(w) = weight {
            kept.push(SavedTensor::input(w));
            if let Some(b) = bias {
                kept.push(SavedTensor::input(b));
            }
        }
        let named = crate::autograd::Named(kept, &["input", "result1", "result2", "weight", "bias"]);
        record_with_scalars(&[&out], &[x, w_in, b_in], "NativeLayerNormBackward0", named, [("normalized_shape", shape_shown)], move |ctx, gs| {
            let (x, mu, rstd) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
            let w = if has_w { Some(ctx.saved(3)?) } else { None };
            let need = [ctx.needs(0), ctx.needs(1), ctx.needs(2)];
            let g = &gs[0];
            let fused = !is_grad_enabled() && !g.is_cuda() && !x.is_cuda() && w.as_ref().is_none_or(|w| !w.is_cuda()) && g.dtype() == x.dtype();
            let (dx, dw, db) = if fused {
                layer_norm_backward_host(g, &x, &mu, &rstd, w.as_ref(), ns.len(), need)?
            } else {
                layer_norm_backward_composed(g, &x, w.as_ref(), ns.len(), eps, need)?
            };
            Ok(smallvec![dx, dw, db])
        });
    }
    Ok((out, mu, rstd))
}

fn layer_norm_composed(x: &Tensor, k: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let dims: Vec<i64> = (-(k as i64)..0).collect();
    let mu = mean(x, Some(&dims), true, None)?;
    let xc = sub(x, &mu)?;
    let rstd = rsqrt(&add(&mean(&mul(&xc, &xc)?, Some(&dims), true, None)?, &scalar(eps))?)?;
    let mut out = mul(&xc, &rstd)?;
    if let Some(w) = weight {
        out = mul(&out, w)?;
    }
    if let Some(b) = bias {
        out = add(&out, b)?;
    }
    Ok((out, mu, rstd))
}

/// Rows of `len` elements, split over the team in parts of whole rows.
/// `f()` compiled with AVX2 and FMA where the CPU has them (`cpu::simd`'s level), so the row
/// loops inlined into it vectorise eight lanes wide, as the engine's elementwise kernels do.
#[inline(always)]
pub(super) fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn v3<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if cpu::simd::level() >= 1 {
            // SAFETY: the features were detected at run time.
            return unsafe { v3(f) };
        }
    }
    f()
}

/// `out` holds `unit` values per row; `f(first_row, part)` sees whole rows.
fn for_rows<U: Send>(out: &mut [U], rows: usize, len: usize, unit: usize, f: impl Fn(usize, &mut [U]) + Sync) {
    match cpu::rows_per_part(rows, len.max(1), 1) {
        Some(per) => crate::backend::threads::for_each_chunk_mut(out, per * unit.max(1), |i, chunk| wide(|| f(i * per, chunk))),
        None => wide(|| f(0, out)),
    }
}

/// Two sums over `n` terms in float64, in eight lanes (so the loop is not one chain of adds).
#[inline(always)]
fn sum2(n: usize, f: impl Fn(usize) -> (f64, f64)) -> (f64, f64) {
    let (mut a, mut b) = ([0.0f64; 8], [0.0f64; 8]);
    let full = n / 8 * 8;
    for base in (0..full).step_by(8) {
        for k in 0..8 {
            let (u, v) = f(base + k);
            a[k] += u;
            b[k] += v;
        }
    }
    let (mut sa, mut sb) = (a.iter().sum::<f64>(), b.iter().sum::<f64>());
    for i in full..n {
        let (u, v) = f(i);
        sa += u;
        sb += v;
    }
    (sa, sb)
}

/// The float types the fused kernels compute in.
/// (also the fused attention's: `ops::attention`)
pub(super) trait Real: Element + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> + PartialOrd {}
impl<T: Element + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T> + std::ops::Div<Output = T> + PartialOrd> Real for T {}

fn layer_norm_host(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, rows: usize, len: usize, eps: f64, sshape: &[usize]) -> Result<(Tensor, Tensor, Tensor)> {
    let dt = x.dtype();
    if dt.is_narrow() {
        let c = |t: Option<&Tensor>| t.map(|t| cast_raw(t, DType::F32)).transpose();
        let (o, m, r) = layer_norm_host(&cast_raw(x, DType::F32)?, c(weight)?.as_ref(), c(bias)?.as_ref(), rows, len, eps, sshape)?;
        return Ok((cast_raw(&o, dt)?, cast_raw(&m, dt)?, cast_raw(&r, dt)?));
    }
    with_float!(dt, T => layer_norm_kernel::<T>(x, weight, bias, rows, len, eps, sshape))
}

fn layer_norm_kernel<T: Real>(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, rows: usize, len: usize, eps: f64, sshape: &[usize]) -> Result<(Tensor, Tensor, Tensor)> {
    let wv = weight.map(contiguous_vec::<T>).transpose()?;
    let bv = bias.map(contiguous_vec::<T>).transpose()?;
    x.with_contiguous::<T, _>(|xv| {
        // per-row mean and 1/sqrt(var + eps): the sums of x and x² in float64
        let mut stats = vec![(0.0f64, 0.0f64); rows];
        for_rows(&mut stats, rows, len, 1, |r0, part| {
            for (j, s) in part.iter_mut().enumerate() {
                let row = &xv[(r0 + j) * len..(r0 + j + 1) * len];
                let (s1, s2) = sum2(len, |i| {
                    let v = row[i].to_f64();
                    (v, v * v)
                });
                let m = s1 / len as f64;
                let var = (s2 / len as f64 - m * m).max(0.0);
                *s = (m, 1.0 / (var + eps).sqrt());
            }
        });
        let mut out = vec![T::default(); rows * len];
        for_rows(&mut out, rows, len, len, |r0, part| {
            for (j, o) in part.chunks_mut(len).enumerate() {
                let (m, rs) = stats[r0 + j];
                // y = x·rstd - mean·rstd, then the affine part (torch's order)
                let (scale, shift) = (T::from_f64(rs), T::from_f64(-m * rs));
                let xr = &xv[(r0 + j) * len..(r0 + j + 1) * len];
                let o = &mut o[..len]; // (lengths the compiler can see: no bounds checks in the loops)
                match (&wv, &bv) {
                    (Some(w), Some(b)) => {
                        let (w, b) = (&w[..len], &b[..len]);
                        for i in 0..len {
                            o[i] = (xr[i] * scale + shift) * w[i] + b[i];
                        }
                    }
                    (Some(w), None) => {
                        let w = &w[..len];
                        for i in 0..len {
                            o[i] = (xr[i] * scale + shift) * w[i];
                        }
                    }
                    (None, Some(b)) => {
                        let b = &b[..len];
                        for i in 0..len {
                            o[i] = xr[i] * scale + shift + b[i];
                        }
                    }
                    (None, None) => {
                        for i in 0..len {
                            o[i] = xr[i] * scale + shift;
                        }
                    }
                }
            }
        });
        let mu: Vec<T> = stats.iter().map(|s| T::from_f64(s.0)).collect();
        let rs: Vec<T> = stats.iter().map(|s| T::from_f64(s.1)).collect();
        (Tensor::from_vec(out, &x.shape()), Tensor::from_vec(mu, sshape), Tensor::from_vec(rs, sshape))
    })
}

pub(super) fn contiguous_vec<T: Element>(t: &Tensor) -> Result<Vec<T>> {
    t.with_contiguous::<T, _>(|s| s.to_vec())
}

type Grad = Option<Tensor>;

/// dx, dweight, dbias of layer_norm (plain backward on the CPU): dx in one pass over the rows,
/// dweight and dbias in one more, each split over the team.
fn layer_norm_backward_host(g: &Tensor, x: &Tensor, mu: &Tensor, rstd: &Tensor, w: Option<&Tensor>, k: usize, need: [bool; 3]) -> Result<(Grad, Grad, Grad)> {
    let dt = x.dtype();
    if dt.is_narrow() {
        let c = |t: &Tensor| cast_raw(t, DType::F32);
        let wf = w.map(c).transpose()?;
        let (dx, dw, db) = layer_norm_backward_host(&c(g)?, &c(x)?, &c(mu)?, &c(rstd)?, wf.as_ref(), k, need)?;
        let back = |t: Grad| t.map(|t| cast_raw(&t, dt)).transpose();
        return Ok((back(dx)?, back(dw)?, back(db)?));
    }
    with_float!(dt, T => layer_norm_backward_kernel::<T>(g, x, mu, rstd, w, k, need))
}

fn layer_norm_backward_kernel<T: Real>(g: &Tensor, x: &Tensor, mu: &Tensor, rstd: &Tensor, w: Option<&Tensor>, k: usize, need: [bool; 3]) -> Result<(Grad, Grad, Grad)> {
    let xs = x.shape();
    let nshape: Vec<usize> = xs[xs.len() - k..].to_vec();
    let len: usize = nshape.iter().product();
    let rows: usize = xs[..xs.len() - k].iter().product();
    let mv = contiguous_vec::<T>(mu)?;
    let rv = contiguous_vec::<T>(rstd)?;
    let wv = w.map(contiguous_vec::<T>).transpose()?;
    let gc = super::contiguous(&super::detach(g))?;
    let xc = super::contiguous(&super::detach(x))?;
    let (gd, xd) = (gc.read_data(), xc.read_data());
    let (gv, xv) = (&gd.storage.slice::<T>()[gd.layout.offset..][..rows * len], &xd.storage.slice::<T>()[xd.layout.offset..][..rows * len]);
    let dx = if need[0] {
        let mut dx = vec![T::default(); rows * len];
        for_rows(&mut dx, rows, len, len, |r0, part| {
            for (j, d) in part.chunks_mut(len).enumerate() {
                let r = r0 + j;
                let (m, rs) = (mv[r].to_f64(), rv[r].to_f64());
                let (xr, gr) = (&xv[r * len..(r + 1) * len], &gv[r * len..(r + 1) * len]);
                // a = Σ g·w, s = Σ g·w·x; dx = rstd·g·w + c1·x + c0 with
                // c1 = -rstd³·(s - mean·a)/n, c0 = -c1·mean - rstd·a/n
                let (a, s) = match &wv {
                    Some(wv) => sum2(len, |i| {
                        let gw = gr[i].to_f64() * wv[i].to_f64();
                        (gw, gw * xr[i].to_f64())
                    }),
                    None => sum2(len, |i| {
                        let gi = gr[i].to_f64();
                        (gi, gi * xr[i].to_f64())
                    }),
                };
                let n = len as f64;
                let c1 = -rs * rs * rs * (s - m * a) / n;
                let c0 = -c1 * m - rs * a / n;
                let (rs_t, c1_t, c0_t) = (T::from_f64(rs), T::from_f64(c1), T::from_f64(c0));
                let d = &mut d[..len];
                match &wv {
                    Some(wv) => {
                        let wv = &wv[..len];
                        for i in 0..len {
                            d[i] = gr[i] * wv[i] * rs_t + xr[i] * c1_t + c0_t;
                        }
                    }
                    None => {
                        for i in 0..len {
                            d[i] = gr[i] * rs_t + xr[i] * c1_t + c0_t;
                        }
                    }
                }
            }
        });
        Some(Tensor::from_vec(dx, &xs))
    } else {
        None
    };
    let (dw, db) = if need[1] || need[2] {
        // per part of the rows: Σ g·xhat and Σ g per column in float64, then the parts summed
        let per = cpu::rows_per_part(rows, len.max(1), 1).unwrap_or(rows.max(1));
        let parts = rows.div_ceil(per).max(1);
        let mut partial = vec![0.0f64; parts * 2 * len];
        if len > 0 {
            crate::backend::threads::for_each_chunk_mut(&mut partial, 2 * len, |p, buf| wide(|| {
                let (pw, pb) = buf.split_at_mut(len);
                let pb = &mut pb[..len];
                for r in p * per..((p + 1) * per).min(rows) {
                    let (m, rs) = (mv[r].to_f64(), rv[r].to_f64());
                    let (xr, gr) = (&xv[r * len..(r + 1) * len], &gv[r * len..(r + 1) * len]);
                    for i in 0..len {
                        let gi = gr[i].to_f64();
                        pw[i] += gi * ((xr[i].to_f64() - m) * rs);
                        pb[i] += gi;
                    }
                }
            }));
        }
        let (mut dw, mut db) = (vec![0.0f64; len], vec![0.0f64; len]);
        for buf in partial.chunks(2 * len.max(1)) {
            for i in 0..len {
                dw[i] += buf[i];
                db[i] += buf[len + i];
            }
        }
        let make = |v: Vec<f64>| Tensor::from_vec(v.into_iter().map(T::from_f64).collect::<Vec<T>>(), &nshape);
        (need[1].then(|| make(dw)), need[2].then(|| make(db)))
    } else {
        (None, None)
    };
    Ok((dx, dw, db))
}

/// layer_norm's gradients from differentiable ops, the statistics recomputed from x so that
/// their dependence on x is differentiated too (double backward, and the device path).
fn layer_norm_backward_composed(g: &Tensor, x: &Tensor, w: Option<&Tensor>, k: usize, eps: f64, need: [bool; 3]) -> Result<(Grad, Grad, Grad)> {
    let dims: Vec<i64> = (-(k as i64)..0).collect();
    let mu = mean(x, Some(&dims), true, None)?;
    let xc = sub(x, &mu)?;
    let rstd = rsqrt(&add(&mean(&mul(&xc, &xc)?, Some(&dims), true, None)?, &scalar(eps))?)?;
    let xhat = mul(&xc, &rstd)?;
    let nshape: Vec<usize> = x.shape()[x.ndim() - k..].to_vec();
    let dx = if need[0] {
        let gw = match w {
            Some(w) => mul(g, w)?,
            None => g.clone(),
        };
        let a = mean(&gw, Some(&dims), true, None)?;
        let b = mean(&mul(&gw, &xhat)?, Some(&dims), true, None)?;
        Some(mul(&rstd, &sub(&sub(&gw, &a)?, &mul(&xhat, &b)?)?)?)
    } else {
        None
    };
    let dw = if need[1] { Some(sum_to(&mul(g, &xhat)?, &nshape)?) } else { None };
    let db = if need[2] { Some(sum_to(g, &nshape)?) } else { None };
    Ok((dx, dw, db))
}

// ---------------------------------------------------------------------------------------------
// Batch normalisation (training mode)

/// batch_norm of x [N, C, *] with the batch's statistics (training mode), affine with weight/bias
/// ([C] or None), one node `NativeBatchNormBackward0`. Float32/float64 in host memory (the caller
/// checks). Returns (output, per-channel mean, per-channel biased variance); the caller updates
/// the running statistics from them, as torch's kernel does.
pub fn batch_norm_train(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let _prof = crate::prof!("aten::native_batch_norm");
    let xs = x.shape();
    if xs.len() < 2 || !host_float(x) {
        bail!(Runtime, "batch_norm_train: expected a float32/float64 host tensor of at least 2 dims");
    }
    let c = xs[1];
    for p in [weight, bias].into_iter().flatten() {
        if p.shape()[..] != [c] || p.dtype() != x.dtype() || p.is_cuda() {
            bail!(Runtime, "batch_norm_train: weight and bias must be [{}] host tensors of the input's dtype", c);
        }
    }
    let (out, mean_t, invstd, var) = with_float!(x.dtype(), T => batch_norm_kernel::<T>(x, weight, bias, eps)?);
    if needs_grad(&[x]) || weight.is_some_and(|w| needs_grad(&[w])) || bias.is_some_and(|b| needs_grad(&[b])) {
        let none = scalar(0.0);
        let (w_in, b_in) = (weight.unwrap_or(&none), bias.unwrap_or(&none));
        let has_w = weight.is_some();
        let mut kept = smallvec::SmallVec::<[SavedTensor; 2]>::new();
        kept.extend([SavedTensor::input(x), SavedTensor::input(&mean_t), SavedTensor::input(&invstd)]);
        if let Some(w) = weight {
            kept.push(SavedTensor::input(w));
        }
        let named = crate::autograd::Named(kept, &["input", "result1", "result2", "weight"]);
        record_with_scalars(&[&out], &[x, w_in, b_in], "NativeBatchNormBackward0", named, [("eps", SavedScalar::Float(eps)), ("training", SavedScalar::Bool(true))], move |ctx, gs| {
            let (x, mu, invstd) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
            let w = if has_w { Some(ctx.saved(3)?) } else { None };
            let need = [ctx.needs(0), ctx.needs(1), ctx.needs(2)];
            let g = &gs[0];
            let fused = !is_grad_enabled() && !g.is_cuda() && g.dtype() == x.dtype() && g.shape() == x.shape();
            let (dx, dw, db) = if fused {
                with_float!(x.dtype(), T => batch_norm_backward_kernel::<T>(g, &x, &mu, &invstd, w.as_ref(), need)?)
            } else {
                batch_norm_backward_composed(g, &x, w.as_ref(), eps, need)?
            };
            Ok(smallvec![dx, dw, db])
        });
    }
    Ok((out, mean_t, var))
}

/// (N, C, S) of a [N, C, *] shape.
fn ncs(xs: &[usize]) -> (usize, usize, usize) {
    (xs[0], xs[1], xs[2..].iter().product())
}

/// Per channel: Σ f(n, row) over the N rows of S elements, two sums in float64.
fn channel_sums(nb: usize, c: usize, f: impl Fn(usize, usize) -> (f64, f64) + Sync) -> Vec<(f64, f64)> {
    crate::backend::threads::map_collect(c, |ch| {
        wide(|| {
            let (mut a, mut b) = (0.0, 0.0);
            for n in 0..nb {
                let (u, v) = f(n, ch);
                a += u;
                b += v;
            }
            (a, b)
        })
    })
}

#[allow(clippy::type_complexity)]
fn batch_norm_kernel<T: Real>(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let xs = x.shape();
    let (nb, c, s) = ncs(&xs);
    let m = (nb * s) as f64;
    let wv = weight.map(contiguous_vec::<T>).transpose()?;
    let bv = bias.map(contiguous_vec::<T>).transpose()?;
    x.with_contiguous::<T, _>(|xv| {
        // the mean first, then Σ (x - mean)² (two passes: no cancellation for large means)
        let sums = channel_sums(nb, c, |n, ch| {
            let row = &xv[(n * c + ch) * s..(n * c + ch + 1) * s];
            sum2(s, |i| (row[i].to_f64(), 0.0))
        });
        let mean: Vec<f64> = sums.iter().map(|p| p.0 / m).collect();
        let sq = channel_sums(nb, c, |n, ch| {
            let row = &xv[(n * c + ch) * s..(n * c + ch + 1) * s];
            let mu = mean[ch];
            sum2(s, |i| {
                let d = row[i].to_f64() - mu;
                (d * d, 0.0)
            })
        });
        let var: Vec<f64> = sq.iter().map(|p| p.0 / m).collect();
        let invstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let mut out = vec![T::default(); nb * c * s];
        for_rows(&mut out, nb * c, s, s, |r0, part| {
            for (j, o) in part.chunks_mut(s).enumerate() {
                let r = r0 + j;
                let ch = r % c;
                let (w, b) = (wv.as_ref().map_or(1.0, |w| w[ch].to_f64()), bv.as_ref().map_or(0.0, |b| b[ch].to_f64()));
                // y = (x - mean)·(invstd·w) + b (an element equal to the mean gives exactly b)
                let (sc, mu, sh) = (T::from_f64(invstd[ch] * w), T::from_f64(mean[ch]), T::from_f64(b));
                let xr = &xv[r * s..(r + 1) * s];
                let o = &mut o[..s];
                for i in 0..s {
                    o[i] = (xr[i] - mu) * sc + sh;
                }
            }
        });
        let to_t = |v: &[f64]| Tensor::from_vec(v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>(), &[c]);
        (Tensor::from_vec(out, &xs), to_t(&mean), to_t(&invstd), to_t(&var))
    })
}

fn batch_norm_backward_kernel<T: Real>(g: &Tensor, x: &Tensor, mu: &Tensor, invstd: &Tensor, w: Option<&Tensor>, need: [bool; 3]) -> Result<(Grad, Grad, Grad)> {
    let xs = x.shape();
    let (nb, c, s) = ncs(&xs);
    let m = (nb * s) as f64;
    let mv = contiguous_vec::<T>(mu)?;
    let iv = contiguous_vec::<T>(invstd)?;
    let wv = w.map(contiguous_vec::<T>).transpose()?;
    let gc = super::contiguous(&super::detach(g))?;
    let xc = super::contiguous(&super::detach(x))?;
    let (gd, xd) = (gc.read_data(), xc.read_data());
    let (gv, xv) = (&gd.storage.slice::<T>()[gd.layout.offset..][..nb * c * s], &xd.storage.slice::<T>()[xd.layout.offset..][..nb * c * s]);
    // per channel: Σ g and Σ g·(x - mean)
    let sums = channel_sums(nb, c, |n, ch| {
        let at = (n * c + ch) * s;
        let (xr, gr) = (&xv[at..at + s], &gv[at..at + s]);
        let mu = mv[ch].to_f64();
        sum2(s, |i| {
            let gi = gr[i].to_f64();
            (gi, gi * (xr[i].to_f64() - mu))
        })
    });
    let dx = if need[0] {
        let mut dx = vec![T::default(); nb * c * s];
        for_rows(&mut dx, nb * c, s, s, |r0, part| {
            for (j, d) in part.chunks_mut(s).enumerate() {
                let r = r0 + j;
                let ch = r % c;
                let (mu, is) = (mv[ch].to_f64(), iv[ch].to_f64());
                let w = wv.as_ref().map_or(1.0, |w| w[ch].to_f64());
                let (sg, sgx) = sums[ch];
                // dx = w·invstd·(g - Σg/M - (x - mean)·invstd²·Σg(x - mean)/M) = a·g + b·x + k
                let a = w * is;
                let bcoef = -a * is * is * sgx / m;
                let k = -a * sg / m - bcoef * mu;
                let (a, bcoef, k) = (T::from_f64(a), T::from_f64(bcoef), T::from_f64(k));
                let (xr, gr) = (&xv[r * s..(r + 1) * s], &gv[r * s..(r + 1) * s]);
                let d = &mut d[..s];
                for i in 0..s {
                    d[i] = gr[i] * a + xr[i] * bcoef + k;
                }
            }
        });
        Some(Tensor::from_vec(dx, &xs))
    } else {
        None
    };
    let make = |f: &dyn Fn(usize) -> f64| Tensor::from_vec((0..c).map(|ch| T::from_f64(f(ch))).collect::<Vec<T>>(), &[c]);
    let dw = need[1].then(|| make(&|ch| sums[ch].1 * iv[ch].to_f64()));
    let db = need[2].then(|| make(&|ch| sums[ch].0));
    Ok((dx, dw, db))
}

/// batch_norm's training-mode gradients from differentiable ops, the statistics recomputed from x
/// (double backward, and any case the fused kernel does not take).
fn batch_norm_backward_composed(g: &Tensor, x: &Tensor, w: Option<&Tensor>, eps: f64, need: [bool; 3]) -> Result<(Grad, Grad, Grad)> {
    let nd = x.ndim();
    let dims: Vec<i64> = std::iter::once(0).chain(2..nd as i64).collect();
    let c = x.shape()[1];
    let mut cshape = vec![1usize; nd];
    cshape[1] = c;
    let mu = mean(x, Some(&dims), true, None)?;
    let xc = sub(x, &mu)?;
    let invstd = rsqrt(&add(&mean(&mul(&xc, &xc)?, Some(&dims), true, None)?, &scalar(eps))?)?;
    let xhat = mul(&xc, &invstd)?;
    let dx = if need[0] {
        let gw = match w {
            Some(w) => mul(g, &super::reshape(w, &cshape.iter().map(|&v| v as i64).collect::<Vec<_>>())?)?,
            None => g.clone(),
        };
        let a = mean(&gw, Some(&dims), true, None)?;
        let b = mean(&mul(&gw, &xhat)?, Some(&dims), true, None)?;
        Some(mul(&invstd, &sub(&sub(&gw, &a)?, &mul(&xhat, &b)?)?)?)
    } else {
        None
    };
    let dw = if need[1] { Some(sum(&mul(g, &xhat)?, Some(&dims), false, None)?) } else { None };
    let db = if need[2] { Some(sum(g, Some(&dims), false, None)?) } else { None };
    Ok((dx, dw, db))
}

// ---------------------------------------------------------------------------------------------
// Losses

/// torch's reduction codes: 0 none, 1 mean, 2 sum.
fn reduce(t: &Tensor, reduction: u8) -> Result<Tensor> {
    match reduction {
        0 => Ok(t.clone()),
        1 => mean(t, None, false, None),
        _ => sum(t, None, false, None),
    }
}

fn check_reduction(reduction: u8) -> Result<()> {
    if reduction > 2 {
        bail!(Value, "{} is not a valid value for reduction", reduction);
    }
    Ok(())
}

/// A tensor of `dt` (float32/float64) from float64 values.
fn from_f64s(v: Vec<f64>, shape: &[usize], dt: DType) -> Tensor {
    match dt {
        DType::F32 => Tensor::from_vec(v.into_iter().map(|e| e as f32).collect::<Vec<f32>>(), shape),
        _ => Tensor::from_vec(v, shape),
    }
}

/// mse_loss(input, target) of one shape and float dtype, one node `MseLossBackward0`.
pub fn mse_loss(x: &Tensor, t: &Tensor, reduction: u8) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mse_loss");
    check_reduction(reduction)?;
    if x.shape() != t.shape() || x.dtype() != t.dtype() || !x.dtype().is_float() {
        bail!(Runtime, "mse_loss: input and target must have the same shape and floating dtype");
    }
    let host = host_float(x) && host_float(t);
    let out = if host {
        let shape = x.shape();
        if reduction == 0 {
            with_float!(x.dtype(), T => cpu::zip::<T, T>(x, t, &shape, |a, b| (a - b) * (a - b))?)
        } else {
            // the sum of squares in float64 lanes, in one pass
            let (xc, tc) = (super::contiguous(&super::detach(x))?, super::contiguous(&super::detach(t))?);
            let total = with_float!(x.dtype(), T => xc.with_contiguous::<T, _>(|xv| tc.with_contiguous::<T, _>(|tv| sum2(xv.len(), |i| {
                let d = xv[i].to_f64() - tv[i].to_f64();
                (d * d, 0.0)
            }).0))??);
            let n = x.numel();
            from_f64s(vec![if reduction == 1 { total / n as f64 } else { total }], &[], x.dtype())
        }
    } else {
        let _ng = GradModeGuard::new(false);
        let d = sub(x, t)?;
        reduce(&mul(&d, &d)?, reduction)?
    };
    if needs_grad(&[x, t]) {
        let saved = saved!(self = SavedTensor::input(x), target = SavedTensor::input(t));
        record_with_scalars(&[&out], &[x, t], "MseLossBackward0", saved, [("reduction", SavedScalar::Int(reduction as i64))], move |ctx, gs| {
            let (x, t) = (ctx.saved(0)?, ctx.saved(1)?);
            let g = &gs[0];
            let n = x.numel();
            // the engine's parallel kernels (two passes) beat one scalar pass here
            let coef = if reduction == 1 { 2.0 / n as f64 } else { 2.0 };
            let gx = mul(&sub(&x, &t)?, &mul(g, &scalar(coef))?)?;
            let gt = if ctx.needs(1) { Some(neg(&gx)?) } else { None };
            Ok(smallvec![ctx.needs(0).then_some(gx), gt])
        });
    }
    Ok(out)
}

/// binary_cross_entropy_with_logits of input and target of one shape and float dtype, weight and
/// pos_weight (of that dtype, broadcast to the input's shape; not differentiated, as torch), one
/// node `BinaryCrossEntropyWithLogitsBackward0`.
pub fn binary_cross_entropy_with_logits(x: &Tensor, t: &Tensor, weight: Option<&Tensor>, pos_weight: Option<&Tensor>, reduction: u8) -> Result<Tensor> {
    let _prof = crate::prof!("aten::binary_cross_entropy_with_logits");
    check_reduction(reduction)?;
    if x.shape() != t.shape() || x.dtype() != t.dtype() || !x.dtype().is_float() {
        bail!(Runtime, "binary_cross_entropy_with_logits: input and target must have the same shape and floating dtype");
    }
    let shape = x.shape();
    let w = weight.map(|w| super::expand_to(w, &shape)).transpose()?;
    let pw = pos_weight.map(|p| super::expand_to(p, &shape)).transpose()?;
    // (one engine-op pass per term: a scalar float64 loop measured 2.5x slower than this)
    let out = {
        let _ng = GradModeGuard::new(false);
        bce_logits_composed(x, t, w.as_ref(), pw.as_ref(), reduction)?
    };
    if needs_grad(&[x, t]) {
        let mut kept = smallvec::SmallVec::<[SavedTensor; 2]>::new();
        kept.extend([SavedTensor::input(x), SavedTensor::input(t)]);
        // torch's names in its order; a missing weight shows None (the pos_weight after it then too)
        let mut names: &'static [&'static str] = &["self", "target", "weight", "pos_weight"];
        match (weight, pos_weight) {
            (Some(w), Some(p)) => kept.extend([SavedTensor::input(w), SavedTensor::input(p)]),
            (Some(w), None) => kept.push(SavedTensor::input(w)),
            (None, Some(p)) => {
                kept.push(SavedTensor::input(p));
                names = &["self", "target", "pos_weight", "weight"];
            }
            (None, None) => {}
        }
        let (has_w, has_p) = (weight.is_some(), pos_weight.is_some());
        let named = crate::autograd::Named(kept, names);
        record_with_scalars(&[&out], &[x, t], "BinaryCrossEntropyWithLogitsBackward0", named, [("reduction", SavedScalar::Int(reduction as i64))], move |ctx, gs| {
            let (x, t) = (ctx.saved(0)?, ctx.saved(1)?);
            let shape = x.shape();
            let mut i = 2;
            let mut next = |on: bool| -> Result<Option<Tensor>> {
                if !on {
                    return Ok(None);
                }
                let v = super::expand_to(&ctx.saved(i)?, &shape)?;
                i += 1;
                Ok(Some(v))
            };
            let w = next(has_w)?;
            let pw = next(has_p)?;
            let g = &gs[0];
            let n = x.numel();
            let g = if reduction == 1 { div(g, &scalar(n as f64))? } else { g.clone() };
            let scale = |d: Tensor| -> Result<Tensor> {
                let d = match &w {
                    Some(w) => mul(&d, w)?,
                    None => d,
                };
                mul(&d, &g)
            };
            let gx = if ctx.needs(0) {
                let s = sigmoid(&x)?;
                let d = match &pw {
                    Some(p) => {
                        let pt = mul(p, &t)?;
                        sub(&mul(&add(&sub(&pt, &t)?, &scalar(1.0))?, &s)?, &pt)?
                    }
                    None => sub(&s, &t)?,
                };
                Some(scale(d)?)
            } else {
                None
            };
            let gt = if ctx.needs(1) {
                let d = match &pw {
                    Some(p) => sub(&neg(&x)?, &mul(&sub(p, &scalar(1.0))?, &log_sigmoid(&x)?)?)?,
                    None => neg(&x)?,
                };
                Some(scale(d)?)
            } else {
                None
            };
            Ok(smallvec![gx, gt])
        });
    }
    Ok(out)
}

/// log σ(x) = min(x, 0) - log1p(e^-|x|), from differentiable ops (-|x| = 2·min(x, 0) - x).
fn log_sigmoid(x: &Tensor) -> Result<Tensor> {
    let m = clamp(x, None, Some(0.0))?;
    let neg_abs = sub(&mul(&m, &scalar(2.0))?, x)?;
    sub(&m, &log1p(&exp(&neg_abs)?)?)
}

fn bce_logits_composed(x: &Tensor, t: &Tensor, w: Option<&Tensor>, pw: Option<&Tensor>, reduction: u8) -> Result<Tensor> {
    let ls = log_sigmoid(x)?;
    let ls = match pw {
        Some(p) => mul(&ls, &add(&mul(&sub(p, &scalar(1.0))?, t)?, &scalar(1.0))?)?,
        None => ls,
    };
    let mut loss = sub(&mul(&rsub_scalar(t, 1.0)?, x)?, &ls)?;
    if let Some(w) = w {
        loss = mul(&loss, w)?;
    }
    reduce(&loss, reduction)
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_f32_within_the_approximation_bound() {
        let mut worst = 0.0f64;
        for i in -60_000..=60_000 {
            let x = i as f32 * 1e-4;
            worst = worst.max((erf_f32(x) as f64 - libm::erf(x as f64)).abs());
        }
        // the formula's 1.5e-7, plus float32 rounding of a result near 1 (a few ulps of 6e-8)
        assert!(worst < 6e-7, "{worst}");
        assert!(erf_f32(f32::NAN).is_nan());
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
    }

    #[test]
    fn layer_norm_rows_have_zero_mean_and_unit_variance() {
        let x = Tensor::from_vec((0..24).map(|i| (i * i) as f64 * 0.1).collect::<Vec<f64>>(), &[3, 8]);
        let (y, mu, rstd) = layer_norm(&x, &[8], None, None, 0.0).unwrap();
        assert_eq!(&mu.shape()[..], &[3, 1]);
        assert_eq!(&rstd.shape()[..], &[3, 1]);
        let v = y.to_vec::<f64>().unwrap();
        for row in v.chunks(8) {
            let m: f64 = row.iter().sum::<f64>() / 8.0;
            let var: f64 = row.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / 8.0;
            assert!(m.abs() < 1e-12 && (var - 1.0).abs() < 1e-12);
        }
        assert!(layer_norm(&x, &[4], None, None, 1e-5).is_err());
    }

    #[test]
    fn gelu_backward_matches_a_difference_quotient() {
        for tanh in [false, true] {
            let xs: Vec<f64> = (-40..40).map(|i| i as f64 * 0.1 + 0.05).collect();
            let x = Tensor::from_vec(xs.clone(), &[xs.len()]);
            let ones = Tensor::from_vec(vec![1.0f64; xs.len()], &[xs.len()]);
            let d = gelu_backward(&ones, &x, tanh).unwrap().to_vec::<f64>().unwrap();
            let h = 1e-6;
            let f = |v: f64| gelu(&Tensor::from_vec(vec![v], &[1]), tanh).unwrap().to_vec::<f64>().unwrap()[0];
            for (i, &v) in xs.iter().enumerate() {
                assert!((d[i] - (f(v + h) - f(v - h)) / (2.0 * h)).abs() < 1e-7);
            }
        }
    }
}
