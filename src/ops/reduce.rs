//! Reductions over dims (sum, mean, prod, max/min, var/std, logsumexp, norm, all/any, arg*),
//! cumsum, softmax and log_softmax.

use super::*;
use crate::autograd::SavedTensor;
use crate::backend::cuda;
use crate::bail;
use crate::tensor::layout::wrap_dim;
use smallvec::smallvec;

/// Normalise a dim list (None = all dims) against `ndim`.
pub fn reduce_dims(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<usize>> {
    match dims {
        None => Ok((0..ndim).collect()),
        Some(ds) => {
            let mut out = Vec::with_capacity(ds.len());
            for &d in ds {
                let w = wrap_dim(d, ndim)?;
                if ndim == 0 {
                    continue;
                }
                if out.contains(&w) {
                    bail!(Runtime, "dim {} appears multiple times in the list of dims", w);
                }
                out.push(w);
            }
            if ds.is_empty() {
                return Ok((0..ndim).collect());
            }
            out.sort_unstable();
            Ok(out)
        }
    }
}

fn out_shape(in_shape: &[usize], dims: &[usize], keepdim: bool) -> Vec<usize> {
    (0..in_shape.len()).filter_map(|d| if dims.contains(&d) { if keepdim { Some(1) } else { None } } else { Some(in_shape[d]) }).collect()
}

/// Reshape a reduced gradient back to keepdim form and expand it over the input shape.
fn expand_reduced(g: &Tensor, in_shape: &[usize], dims: &[usize]) -> Result<Tensor> {
    let kd: Vec<usize> = (0..in_shape.len()).map(|d| if dims.contains(&d) { 1 } else { in_shape[d] }).collect();
    expand_to(&reshape_to(g, &kd)?, in_shape)
}

fn reduce_raw<U: crate::tensor::Element>(x: &Tensor, dims: &[usize], keepdim: bool, f: impl Fn(&[f64]) -> U + Sync + Send) -> Result<Tensor> {
    let xs = x.shape();
    let x = cast_raw(x, x.dtype().compute())?;
    let x = &x;
    crate::with_compute_dtype!(x.dtype(), T => cpu::reduce_to::<T, U>(x, dims, &out_shape(&xs, dims, keepdim), |s: &[T]| {
        let tmp: smallvec::SmallVec<[f64; 64]> = s.iter().map(|v| v.to_f64()).collect();
        f(&tmp)
    }))
}

/// A device reduction (`kind` as in `native::reduce`) reshaped to the op's output shape, when
/// `x` is on a device with kernels.
fn reduce_cuda(x: &Tensor, dims: &[usize], keepdim: bool, kind: &str, out_dt: DType) -> Result<Option<Tensor>> {
    if !(x.is_cuda() && cuda::has_kernels()) {
        return Ok(None);
    }
    let r = cuda::native::reduce(x, dims, kind, out_dt)?;
    Ok(Some(r.view_with_layout(crate::tensor::Layout::contiguous(&out_shape(&x.shape(), dims, keepdim)))))
}

/// Sum over `dims` giving `dt`: integers and bools in int64 (wrapping), floats in float64 (float32
/// partials on a device); a narrow `dt` is reached from its compute dtype.
fn sum_raw(x: &Tensor, dims: &[usize], keepdim: bool, dt: DType) -> Result<Tensor> {
    let xs = x.shape();
    let shape = out_shape(&xs, dims, keepdim);
    match x.dtype() {
        xd if !xd.is_float() && !dt.is_float() => {
            let xi = cast_raw(x, DType::I64)?;
            if let Some(r) = reduce_cuda(&xi, dims, keepdim, "sum", DType::I64)? {
                return cast_raw(&r, dt);
            }
            let r = cpu::reduce_to::<i64, i64>(&xi, dims, &shape, |s| s.iter().fold(0i64, |a, &b| a.wrapping_add(b)))?;
            cast_raw(&r, dt)
        }
        _ => {
            let c = dt.compute();
            let xc = to_compute(x, dt)?;
            if let Some(r) = reduce_cuda(&xc, dims, keepdim, "sum", c)? {
                return cast_raw(&r, dt);
            }
            // reduced dims that are one contiguous block with dims after it: the middle-axis sum
            let (d0, d1) = (dims.first().copied().unwrap_or(0), dims.last().map_or(0, |&d| d + 1));
            if !xc.is_cuda() && xc.is_contiguous() && !dims.is_empty() && d1 < xs.len() && d1 - d0 == dims.len() && matches!(c, DType::F32 | DType::F64) && xc.numel() > 0 {
                let (outer, r, inner) = (xs[..d0].iter().product::<usize>(), xs[d0..d1].iter().product::<usize>(), xs[d1..].iter().product::<usize>());
                let (st, l) = (xc.storage(), xc.layout());
                let r = crate::with_compute_dtype!(c, T => Tensor::from_vec(cpu::sum_middle::<T>(cpu::span(st.slice::<T>(), l.offset, xc.numel()), outer, r, inner), &shape));
                return cast_raw(&r, dt);
            }
            let r = crate::with_compute_dtype!(c, T => cpu::reduce_to::<T, T>(&xc, dims, &shape, |s| T::from_f64(cpu::sum_slice(s))))?;
            cast_raw(&r, dt)
        }
    }
}

/// sum(dim, keepdim, dtype). Integer and bool inputs sum to int64.
pub fn sum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sum");
    let xs = x.shape();
    let ds = reduce_dims(dims, xs.len())?;
    let dt = dtype.unwrap_or(if x.dtype().is_float() { x.dtype() } else { DType::I64 });
    let out = sum_raw(x, &ds, keepdim, dt)?;
    if needs_grad(&[x]) {
        let name = if dims.is_none() { "SumBackward0" } else { "SumBackward1" };
        record(&[&out], &[x], name, saved!(), move |_, gs| Ok(smallvec![Some(expand_reduced(&gs[0], &xs, &ds)?)]));
    }
    Ok(out)
}

pub fn mean(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mean");
    let dt = dtype.unwrap_or(x.dtype());
    if !dt.is_float() {
        bail!(NotImplemented, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", crate::ops::shape::type_word(dt));
    }
    let xs = x.shape();
    let ds = reduce_dims(dims, xs.len())?;
    let n: usize = ds.iter().map(|&d| xs[d]).product();
    let s = sum_raw(x, &ds, keepdim, dt)?;
    // the sum rounded to dt, then divided in the compute dtype (torch's sum().div_())
    let sc = cast_raw(&s, dt.compute())?;
    let out = if sc.is_cuda() && cuda::has_kernels() {
        cuda::native::binary(&sc, &scalar(n as f64), "div", dt.compute(), dt.compute(), None)?
    } else {
        crate::with_compute_dtype!(dt.compute(), T => cpu::map::<T, T>(&sc, move |v| T::from_f64(v.to_f64() / n as f64))?)
    };
    let out = cast_raw(&out, dt)?;
    if needs_grad(&[x]) {
        let name = if dims.is_none() { "MeanBackward0" } else { "MeanBackward1" };
        record(&[&out], &[x], name, saved!(), move |_, gs| {
            let g = div(&gs[0], &scalar(n as f64))?;
            Ok(smallvec![Some(expand_reduced(&g, &xs, &ds)?)])
        });
    }
    Ok(out)
}

pub fn prod(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::prod");
    let xs = x.shape();
    let dims_i: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let ds = reduce_dims(dims_i.as_deref(), xs.len())?;
    let dt = if x.dtype().is_float() { x.dtype() } else { DType::I64 };
    let c = dt.compute();
    let xc = cast_raw(x, c)?;
    let out = match reduce_cuda(&xc, &ds, keepdim, "prod", c)? {
        Some(r) => r,
        None => crate::with_compute_dtype!(c, T => cpu::reduce_to::<T, T>(&xc, &ds, &out_shape(&xs, &ds, keepdim), |s| {
            if T::DTYPE == DType::I64 {
                T::from_i64(s.iter().fold(1i64, |a, b| a.wrapping_mul(b.to_i64())))
            } else {
                T::from_f64(s.iter().fold(1f64, |a, b| a * b.to_f64()))
            }
        }))?,
    };
    let out = cast_raw(&out, dt)?;
    if needs_grad(&[x]) {
        let name = if dim.is_none() { "ProdBackward0" } else { "ProdBackward1" };
        record(&[&out], &[x], name, saved!(self = SavedTensor::input(x), result = SavedTensor::output(&out, 0)), move |ctx, gs| {
            let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
            let ge = expand_reduced(&gs[0], &xs, &ds)?;
            let has_zero = crate::with_dtype!(x.dtype(), T => x.to_vec::<T>()?.iter().any(|v| v.to_f64() == 0.0));
            // d prod / d x_i = product of the others: y / x_i when nothing is zero, else the
            // exclusive product computed directly (exact at zeros, and to every order).
            let others = if ds.is_empty() {
                return Ok(smallvec![Some(gs[0].clone())]);
            } else if !has_zero {
                div(&expand_reduced(&y, &xs, &ds)?, &x)?
            } else {
                exclusive_prod(&x, &ds)?
            };
            Ok(smallvec![Some(mul(&ge, &others)?)])
        });
    }
    Ok(out)
}

/// For every element, the product of the other elements of its group over `ds`.
fn exclusive_prod(x: &Tensor, ds: &[usize]) -> Result<Tensor> {
    let xs = x.shape();
    let nd = xs.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !ds.contains(d)).collect();
    let perm: Vec<i64> = kept.iter().chain(ds.iter()).map(|&d| d as i64).collect();
    let n: usize = ds.iter().map(|&d| xs[d]).product();
    let mut flat_shape: Vec<usize> = kept.iter().map(|&d| xs[d]).collect();
    flat_shape.push(n);
    let flat = reshape_to(&permute(x, &perm)?, &flat_shape)?;
    let mut sq = flat_shape.clone();
    sq.push(n);
    let e = expand_to(&unsqueeze(&flat, -2)?, &sq)?;
    let diag = crate::tensor::factory::eye(n, n, DType::Bool)?;
    let p = prod(&where_(&diag, &scalar(1.0), &e)?, Some(-1), false)?;
    let mut back_shape: Vec<usize> = kept.iter().map(|&d| xs[d]).collect();
    back_shape.extend(ds.iter().map(|&d| xs[d]));
    let back = reshape_to(&p, &back_shape)?;
    let mut inv = vec![0i64; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i as i64;
    }
    permute(&back, &inv)
}

/// max()/min() over everything: the gradient is shared evenly among ties (MaxBackward1).
pub fn max_all(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let _prof = crate::prof!(if is_max { "aten::max" } else { "aten::min" });
    if x.numel() == 0 {
        bail!(Runtime, "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", if is_max { "max" } else { "min" });
    }
    let ds: Vec<usize> = (0..x.ndim()).collect();
    let out = extreme_raw(x, &ds, false, is_max)?;
    if needs_grad(&[x]) {
        let name = if is_max { "MaxBackward1" } else { "MinBackward1" };
        record_evenly(&out, x, ds, name);
    }
    Ok(out)
}

/// amax/amin over dims (ties share the gradient).
pub fn amax(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let _prof = crate::prof!(if is_max { "aten::amax" } else { "aten::amin" });
    let ds = reduce_dims(if dims.is_empty() { None } else { Some(dims) }, x.ndim())?;
    let xs = x.shape();
    if dims.is_empty() && x.numel() == 0 {
        bail!(Runtime, "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", if is_max { "amax" } else { "amin" });
    }
    if let Some(&d) = ds.iter().find(|&&d| xs[d] == 0) {
        bail!(Index, "{}(): Expected reduction dim {} to have non-zero size.", if is_max { "amax" } else { "amin" }, d);
    }
    let out = extreme_raw(x, &ds, keepdim, is_max)?;
    if needs_grad(&[x]) {
        record_evenly(&out, x, ds, if is_max { "AmaxBackward0" } else { "AminBackward0" });
    }
    Ok(out)
}

fn extreme_raw(x: &Tensor, ds: &[usize], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let xs = x.shape();
    if x.dtype().is_narrow() {
        // exact: the extreme of the widened values is one of them
        return cast_raw(&extreme_raw(&cast_raw(x, x.dtype().compute())?, ds, keepdim, is_max)?, x.dtype());
    }
    if x.dtype() != DType::Bool {
        if let Some(r) = reduce_cuda(x, ds, keepdim, if is_max { "max" } else { "min" }, x.dtype())? {
            return Ok(r);
        }
    }
    crate::with_compute_dtype!(x.dtype(), T => {
        cpu::reduce_to::<T, T>(x, ds, &out_shape(&xs, ds, keepdim), |s| {
            let mut best = s[0];
            for &v in &s[1..] {
                let nan = v.to_f64().is_nan();
                if nan || best.to_f64().is_nan() {
                    if nan { best = v; }
                    continue;
                }
                if (is_max && v > best) || (!is_max && v < best) {
                    best = v;
                }
            }
            best
        })
    })
}

fn record_evenly(out: &Tensor, x: &Tensor, ds: Vec<usize>, name: &'static str) {
    let xs = x.shape();
    record(&[out], &[x], name, saved!(self = SavedTensor::input(x), result = SavedTensor::output(out, 0)), move |ctx, gs| {
        let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
        let ye = expand_reduced(&y, &xs, &ds)?;
        let mask = cast_raw(&eq(&x, &ye)?, gs[0].dtype())?;
        let dims_i: Vec<i64> = ds.iter().map(|&d| d as i64).collect();
        let count = sum(&mask, Some(&dims_i), true, None)?;
        let ge = expand_reduced(&gs[0], &xs, &ds)?;
        Ok(smallvec![Some(div(&mul(&ge, &mask)?, &count)?)])
    });
}

/// max/min along a dim: (values, indices); the gradient goes to the chosen index (MaxBackward0).
pub fn max_dim(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    let _prof = crate::prof!(if is_max { "aten::max" } else { "aten::min" });
    let xs = x.shape();
    let d = wrap_dim(dim, xs.len())?;
    if xs.get(d).copied() == Some(0) {
        bail!(Index, "{}(): Expected reduction dim {} to have non-zero size.", if is_max { "max" } else { "min" }, d);
    }
    let ds = if xs.is_empty() { vec![] } else { vec![d] };
    let idx = arg_raw(x, &ds, keepdim, is_max)?;
    let vals = extreme_raw(x, &ds, keepdim, is_max)?;
    if needs_grad(&[x]) {
        let name = if is_max { "MaxBackward0" } else { "MinBackward0" };
        let idx_saved = idx.clone();
        record(&[&vals], &[x], name, saved!(indices = SavedTensor::input(&idx_saved)), move |ctx, gs| {
            let idx = ctx.saved(0)?;
            Ok(smallvec![Some(scatter_along(&gs[0], &idx, &xs, &ds, keepdim)?)])
        });
    }
    Ok((vals, idx))
}

/// Gradient of selecting `idx` along the reduced dim: g at the chosen positions, zero elsewhere.
fn scatter_along(g: &Tensor, idx: &Tensor, xs: &[usize], ds: &[usize], keepdim: bool) -> Result<Tensor> {
    if ds.is_empty() {
        return Ok(g.clone());
    }
    let d = ds[0];
    let (g, idx) = if keepdim { (g.clone(), idx.clone()) } else { (unsqueeze(g, d as i64)?, unsqueeze(idx, d as i64)?) };
    let n = xs[d];
    let mut pos_shape = vec![1usize; xs.len()];
    pos_shape[d] = n;
    let pos = cuda::place(Tensor::from_vec((0..n as i64).collect::<Vec<i64>>(), &pos_shape), idx.device())?;
    let mask = eq(&pos, &idx)?;
    mul(&expand_to(&g, xs)?, &cast_raw(&mask, g.dtype())?)
}

fn arg_raw(x: &Tensor, ds: &[usize], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let xs = x.shape();
    if x.dtype().is_narrow() {
        return arg_raw(&cast_raw(x, x.dtype().compute())?, ds, keepdim, is_max);
    }
    if x.dtype() != DType::Bool {
        if let Some(r) = reduce_cuda(x, ds, keepdim, if is_max { "argmax" } else { "argmin" }, DType::I64)? {
            return Ok(r);
        }
    }
    crate::with_compute_dtype!(x.dtype(), T => {
        cpu::reduce_to::<T, i64>(x, ds, &out_shape(&xs, ds, keepdim), |s| {
            let mut bi = 0usize;
            for i in 1..s.len() {
                let (v, b) = (s[i], s[bi]);
                if b.to_f64().is_nan() { break; }
                if v.to_f64().is_nan() || (is_max && v > b) || (!is_max && v < b) {
                    bi = i;
                }
            }
            bi as i64
        })
    })
}

/// argmax/argmin; without dim, over the flattened tensor.
pub fn argmax(x: &Tensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
    let _prof = crate::prof!(if is_max { "aten::argmax" } else { "aten::argmin" });
    let name = if is_max { "argmax" } else { "argmin" };
    if x.dtype() == DType::Bool {
        bail!(NotImplemented, "{}(): does not support bool input", name);
    }
    match dim {
        None => {
            if x.numel() == 0 {
                bail!(Index, "{}(): Expected reduction dim to be specified for input.numel() == 0.", name);
            }
            let flat = reshape(&x.alias(), &[-1])?;
            let r = arg_raw(&flat, &[0], false, is_max)?;
            if keepdim {
                let ones: Vec<i64> = vec![1; x.ndim()];
                return reshape(&r, &ones);
            }
            Ok(r)
        }
        Some(d) => {
            let xs = x.shape();
            let w = wrap_dim(d, xs.len())?;
            if xs.get(w).copied() == Some(0) {
                bail!(Index, "{}(): Expected reduction dim {} to have non-zero size.", name, w);
            }
            let ds = if xs.is_empty() { vec![] } else { vec![w] };
            Ok(arg_raw(x, &ds, keepdim, is_max)?)
        }
    }
}

/// var/std with Bessel-style `correction`.
pub fn var(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, take_sqrt: bool) -> Result<Tensor> {
    let _prof = crate::prof!(if take_sqrt { "aten::std" } else { "aten::var" });
    let dt = x.dtype();
    if !dt.is_float() {
        bail!(NotImplemented, "std and var only support floating point and complex dtypes");
    }
    let xs = x.shape();
    let ds = reduce_dims(dims, xs.len())?;
    let n: usize = ds.iter().map(|&d| xs[d]).product();
    let denom = (n as f64 - correction).max(0.0);
    let out = {
        let v = reduce_raw(x, &ds, keepdim, move |s| {
            let m = s.iter().sum::<f64>() / s.len() as f64;
            let ss: f64 = s.iter().map(|v| (v - m) * (v - m)).sum();
            let r = ss / denom;
            if take_sqrt { r.sqrt() } else { r }
        })?;
        cast_raw(&v, dt)?
    };
    if needs_grad(&[x]) {
        let name = if take_sqrt { "StdBackward0" } else { "VarBackward0" };
        // var's backward needs only the input (as torch's, so var's output may be modified in
        // place); std's needs its output too
        let saved: smallvec::SmallVec<[SavedTensor; 2]> = if take_sqrt { smallvec::smallvec![SavedTensor::input(x), SavedTensor::output(&out, 0)] } else { smallvec::smallvec![SavedTensor::input(x)] };
        record(&[&out], &[x], name, crate::autograd::Named(saved, if take_sqrt { &["self", "result"] } else { &["self"] }), move |ctx, gs| {
            let x = ctx.saved(0)?;
            if xs.is_empty() {
                return Ok(smallvec![Some(mul(&gs[0], &scalar(0.0))?)]);
            }
            let dims_i: Vec<i64> = ds.iter().map(|&d| d as i64).collect();
            let centered = sub(&x, &mean(&x, Some(&dims_i), true, None)?)?;
            let mut ge = expand_reduced(&gs[0], &xs, &ds)?;
            if take_sqrt {
                // d std = d var / (2 std), and 0 where std == 0 (torch's choice there)
                let y = expand_reduced(&ctx.saved(1)?, &xs, &ds)?;
                ge = masked_fill_scalar(&div(&ge, &mul(&y, &scalar(2.0))?)?, &eq(&y, &scalar(0.0))?, 0.0)?;
            }
            // d var = 2 (x - mean) / (N - c)
            Ok(smallvec![Some(mul(&ge, &mul(&centered, &scalar(2.0 / denom))?)?)])
        });
    }
    Ok(out)
}

pub fn logsumexp(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::logsumexp");
    let xf = if x.dtype().is_float() { x.clone() } else { to_dtype(x, DType::default_float())? };
    let dt = xf.dtype();
    let xs = xf.shape();
    if dims.is_empty() && !xs.is_empty() && xf.numel() > 0 {
        // what torch says (its logsumexp(()) reduces nothing, then fails to write the result)
        bail!(Runtime, "output with shape [] doesn't match the broadcast shape {:?}", vec![1; xs.len()]);
    }
    let ds = reduce_dims(Some(dims), xs.len())?;
    let v = reduce_raw(&xf, &ds, keepdim, |s| {
        if s.iter().any(|v| v.is_nan()) {
            return f64::NAN;
        }
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m.is_infinite() {
            return m;
        }
        m + s.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
    })?;
    let out = cast_raw(&v, dt)?;
    if needs_grad(&[&xf]) {
        record(&[&out], &[&xf], "LogsumexpBackward0", saved!(self = SavedTensor::input(&xf), result = SavedTensor::output(&out, 0)), move |ctx, gs| {
            let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
            let p = exp(&sub(&x, &expand_reduced(&y, &xs, &ds)?)?)?;
            Ok(smallvec![Some(mul(&expand_reduced(&gs[0], &xs, &ds)?, &p)?)])
        });
    }
    Ok(out)
}

/// Vector norm: p = 2 (also 'fro'), 1, inf, -inf, 0 or any other p.
pub fn norm(x: &Tensor, p: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::linalg_vector_norm");
    if !x.dtype().is_float() {
        bail!(Runtime, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}", crate::ops::shape::type_word(x.dtype()));
    }
    let dt = x.dtype();
    let xs = x.shape();
    let ds = reduce_dims(dims, xs.len())?;
    let per_out: usize = ds.iter().map(|&d| xs[d]).product();
    let outs: usize = (0..xs.len()).filter(|d| !ds.contains(d)).map(|d| xs[d]).product();
    if per_out == 0 && outs > 0 && (p < 0.0 || p.is_infinite()) {
        bail!(Runtime, "linalg.vector_norm cannot compute the {} norm on an empty tensor because the operation does not have an identity", p);
    }
    // torch: the norm of one element is its absolute value, whatever p (its count for p = 0)
    let single = per_out == 1 && p != 0.0;
    let v = reduce_raw(x, &ds, keepdim, move |s| {
        if single {
            s[0].abs()
        } else if s.is_empty() && p.is_nan() {
            0.0 // torch: the norm of nothing is 0, whatever p
        } else if p == f64::INFINITY {
            // NaN propagates, as torch's
            s.iter().fold(0.0, |a: f64, v| if a.is_nan() || v.is_nan() { f64::NAN } else { a.max(v.abs()) })
        } else if p == f64::NEG_INFINITY {
            s.iter().fold(f64::INFINITY, |a: f64, v| if a.is_nan() || v.is_nan() { f64::NAN } else { a.min(v.abs()) })
        } else if p == 0.0 {
            s.iter().filter(|v| **v != 0.0).count() as f64
        } else if p == 1.0 {
            s.iter().map(|v| v.abs()).sum()
        } else if p == 2.0 {
            s.iter().map(|v| v * v).sum::<f64>().sqrt()
        } else {
            s.iter().map(|v| v.abs().powf(p)).sum::<f64>().powf(1.0 / p)
        }
    })?;
    let out = cast_raw(&v, dt)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "LinalgVectorNormBackward0", saved!(self = SavedTensor::input(x), result = SavedTensor::output(&out, 0)), move |ctx, gs| {
            let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
            let ge = expand_reduced(&gs[0], &xs, &ds)?;
            let ye = expand_reduced(&y, &xs, &ds)?;
            let d = if p == 0.0 {
                mul(&x, &scalar(0.0))?
            } else if p == 1.0 || single {
                sign(&x)?
            } else if p.is_infinite() {
                let ax = abs(&x)?;
                let mask = cast_raw(&eq(&ax, &ye)?, x.dtype())?;
                let dims_i: Vec<i64> = ds.iter().map(|&d| d as i64).collect();
                let count = expand_reduced(&sum(&mask, Some(&dims_i), keepdim, None)?, &xs, &ds)?;
                div(&mul(&sign(&x)?, &mask)?, &count)?
            } else if p == 2.0 {
                let safe = masked_fill_scalar(&ye, &eq(&ye, &scalar(0.0))?, 1.0)?;
                let r = div(&x, &safe)?;
                masked_fill_scalar(&r, &eq(&ye, &scalar(0.0))?, 0.0)?
            } else {
                // sign(x) |x|^(p-1) / ||x||^(p-1)
                let num = mul(&sign(&x)?, &pow_scalar(&abs(&x)?, p - 1.0)?)?;
                let den = pow_scalar(&masked_fill_scalar(&ye, &eq(&ye, &scalar(0.0))?, 1.0)?, p - 1.0)?;
                masked_fill_scalar(&div(&num, &den)?, &eq(&ye, &scalar(0.0))?, 0.0)?
            };
            Ok(smallvec![Some(mul(&ge, &d)?)])
        });
    }
    Ok(out)
}

pub fn all_any(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, is_all: bool) -> Result<Tensor> {
    let _prof = crate::prof!(if is_all { "aten::all" } else { "aten::any" });
    if x.dtype() == DType::U8 {
        // torch keeps uint8 for uint8 inputs (its legacy mask type)
        return cast_raw(&all_any(&cast_raw(x, DType::Bool)?, dims, keepdim, is_all)?, DType::U8);
    }
    let xs = x.shape();
    if dims.is_some_and(|d| d.is_empty()) {
        return cpu::contiguous(&cast_raw(x, DType::Bool)?); // torch: all(()) reduces no dim
    }
    let ds = reduce_dims(dims, xs.len())?;
    let xb = cast_raw(x, DType::Bool)?;
    if let Some(r) = reduce_cuda(&xb, &ds, keepdim, if is_all { "all" } else { "any" }, DType::Bool)? {
        return Ok(r);
    }
    cpu::reduce_to::<bool, bool>(&xb, &ds, &out_shape(&xs, &ds, keepdim), move |s| if is_all { s.iter().all(|&b| b) } else { s.iter().any(|&b| b) })
}

pub fn cumsum(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::cumsum");
    let xs = x.shape();
    let d = wrap_dim(dim, xs.len())?;
    let dt = dtype.unwrap_or(if x.dtype().is_float() { x.dtype() } else { DType::I64 });
    // scanned in the compute dtype (float16 sums in float32 and higher, as torch), each output
    // stored as dt
    let c = dt.compute();
    let xc = to_compute(x, dt)?;
    let out = if xs.is_empty() {
        cpu::contiguous(&xc)?
    } else if xc.is_cuda() && cuda::has_kernels() && matches!(c, DType::F32 | DType::F64 | DType::I64) && xc.dtype() == c {
        cuda::native::cumsum(&xc, d)?
    } else {
        crate::tensor::storage::check_alloc(c, xc.numel())?;
        let (outer, n, inner): (usize, usize, usize) = (xs[..d].iter().product(), xs[d], xs[d + 1..].iter().product());
        let scanned = crate::with_compute_dtype!(c, T => {
            let v: Vec<T> = xc.with_contiguous::<T, _>(|s| scan_rows(s, outer, n, inner, dt.is_narrow()))?;
            Tensor::from_vec(v, &xs)
        });
        cuda::place(scanned, x.device())?
    };
    let out = cast_raw(&out, dt)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "CumsumBackward0", saved!(), move |_, gs| {
            // reverse cumulative sum of the gradient
            let f = flip(&gs[0], &[d as i64])?;
            Ok(smallvec![Some(flip(&cumsum(&f, d as i64, None)?, &[d as i64])?)])
        });
    }
    Ok(out)
}

/// Inclusive running sums along the middle axis of a contiguous [outer, n, inner] buffer: int64
/// (wrapping) for integers and bools; for floats torch's CPU accumulators, float64 (for float32
/// too) or float32 for a float16/bfloat16 result (`narrow`); each partial sum stored in T.
fn scan_rows<T: crate::tensor::Element>(s: &[T], outer: usize, n: usize, inner: usize, narrow: bool) -> Vec<T> {
    if T::DTYPE == DType::I64 || T::DTYPE == DType::Bool {
        scan_with(s, outer, n, inner, 0i64, |a, v| a.wrapping_add(v.to_i64()), T::from_i64)
    } else if narrow {
        scan_with(s, outer, n, inner, 0f32, |a, v| a + v.to_f64() as f32, |a| T::from_f64(a as f64))
    } else {
        scan_with(s, outer, n, inner, 0f64, |a, v| a + v.to_f64(), T::from_f64)
    }
}

/// Columns of one piece of a scan with inner > 1 (its sums stay in the L1 cache).
const SCAN_COLS: usize = 256;

/// `scan_rows` with the accumulator A: sum = step(sum, x) from `zero`, each sum stored as put(sum).
/// Along the last dim (inner 1) four rows are scanned side by side, so four independent sums are in
/// flight (the additions of one wait on each other); otherwise a piece is up to SCAN_COLS columns
/// of one [n, inner] block, a running sum per column. Rows or pieces run on the team above the
/// threshold; each sum adds the same elements in the same order either way.
fn scan_with<T: crate::tensor::Element, A: Copy + Send + Sync>(s: &[T], outer: usize, n: usize, inner: usize, zero: A, step: impl Fn(A, T) -> A + Sync, put: impl Fn(A) -> T + Sync) -> Vec<T> {
    use crate::backend::threads::{self, SendPtr};
    let total = s.len();
    let mut v: Vec<T> = Vec::with_capacity(total);
    if total == 0 {
        return v;
    }
    let out = SendPtr(v.as_mut_ptr());
    // SAFETY (both writers below): each output element is written once, by the one part that
    // owns its row or piece, inside the `total` elements reserved.
    let put_at = |i: usize, a: A| unsafe { out.get().add(i).write(put(a)) };
    if inner == 1 {
        // rows r0..r1, four at a time
        let rows = |r0: usize, r1: usize| {
            let mut r = r0;
            while r + 4 <= r1 {
                let src: [&[T]; 4] = std::array::from_fn(|l| &s[(r + l) * n..(r + l + 1) * n]);
                let mut a = [zero; 4];
                for j in 0..n {
                    for l in 0..4 {
                        a[l] = step(a[l], src[l][j]);
                        put_at((r + l) * n + j, a[l]);
                    }
                }
                r += 4;
            }
            for r in r..r1 {
                let mut a = zero;
                for (j, &x) in s[r * n..(r + 1) * n].iter().enumerate() {
                    a = step(a, x);
                    put_at(r * n + j, a);
                }
            }
        };
        match cpu::rows_per_part(outer, n, 4) {
            Some(per) => threads::run(outer.div_ceil(per), crate::backend::num_threads(), &|c| rows(c * per, ((c + 1) * per).min(outer))),
            None => rows(0, outer),
        }
    } else {
        let blocks = inner.div_ceil(SCAN_COLS);
        // pieces p0..p1: piece p is columns [c0, c1) of block p / blocks
        let pieces = |p0: usize, p1: usize| {
            let mut acc = [zero; SCAN_COLS];
            for p in p0..p1 {
                let (o, c0) = (p / blocks, (p % blocks) * SCAN_COLS);
                let w = SCAN_COLS.min(inner - c0);
                let acc = &mut acc[..w];
                acc.fill(zero);
                for i in 0..n {
                    let at = (o * n + i) * inner + c0;
                    for (j, (a, &x)) in acc.iter_mut().zip(&s[at..at + w]).enumerate() {
                        *a = step(*a, x);
                        put_at(at + j, *a);
                    }
                }
            }
        };
        let count = outer * blocks;
        match cpu::rows_per_part(count, n * SCAN_COLS.min(inner), 1) {
            Some(per) => threads::run(count.div_ceil(per), crate::backend::num_threads(), &|c| pieces(c * per, ((c + 1) * per).min(count))),
            None => pieces(0, count),
        }
    }
    // SAFETY: every element was written above (each row, or each column of each block, was scanned).
    unsafe { v.set_len(total) };
    v
}

fn check_float(x: &Tensor, op: &str) -> Result<()> {
    if !x.dtype().is_float() {
        bail!(NotImplemented, "\"{}_lastdim_kernel_impl\" not implemented for '{}'", op, crate::ops::shape::type_word(x.dtype()));
    }
    Ok(())
}

/// The fused CPU row kernel for softmax/log_softmax over the last dim of a contiguous float32/64
/// tensor (`cpu::softmax_lastdim`); None when the composed path must run.
fn softmax_lastdim(x: &Tensor, d: usize, log: bool) -> Result<Option<Tensor>> {
    let xs = x.shape();
    if x.is_cuda() || !x.is_contiguous() || xs.is_empty() || d + 1 != xs.len() || xs[d] == 0 || !matches!(x.dtype(), DType::F32 | DType::F64) {
        return Ok(None);
    }
    let n = xs[d];
    let rows = x.numel() / n;
    let (st, l) = (x.storage(), x.layout());
    Ok(Some(match x.dtype() {
        DType::F32 => Tensor::from_vec(cpu::softmax_lastdim::<f32>(cpu::span(st.slice::<f32>(), l.offset, rows * n), rows, n, log), &xs),
        _ => Tensor::from_vec(cpu::softmax_lastdim::<f64>(cpu::span(st.slice::<f64>(), l.offset, rows * n), rows, n, log), &xs),
    }))
}

pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::softmax");
    let x = match dtype {
        Some(dt) => to_dtype(x, dt)?,
        None => x.clone(),
    };
    let xs = x.shape();
    let d = wrap_dim(dim, xs.len())?; // torch checks the dim before the dtype
    check_float(&x, "softmax")?;
    let out = if x.dtype().is_narrow() {
        // float16/bfloat16: in float32, rounded once (torch's kernel)
        let _ng = crate::autograd::GradModeGuard::new(false);
        cast_raw(&softmax(&cast_raw(&x, DType::F32)?, dim, None)?, x.dtype())?
    } else if x.is_cuda() && cuda::has_kernels() && !xs.is_empty() {
        cuda::native::softmax(&x, d, false)?
    } else {
        let _ng = crate::autograd::GradModeGuard::new(false);
        // as torch's kernel, over a contiguous input: the result is contiguous
        let x = if x.is_contiguous() { x.clone() } else { cpu::contiguous(&x)? };
        let dd = [d as i64];
        if let Some(r) = softmax_lastdim(&x, d, false)? {
            r
        } else {
            let m = if xs.is_empty() || xs[d] == 0 { x.alias() } else { amax(&x, &dd, true, true)? };
            let e = exp(&sub(&x, &m)?)?;
            let s = if xs.is_empty() { e.clone() } else { sum(&e, Some(&dd), true, None)? };
            div(&e, &s)?
        }
    };
    if needs_grad(&[&x]) {
        record(&[&out], &[&x], "SoftmaxBackward0", saved!(result = SavedTensor::output(&out, 0)), move |ctx, gs| {
            let y = ctx.saved(0)?;
            // y (contiguous) first: the gradient is contiguous, as torch's softmax_backward
            let gy = mul(&y, &gs[0])?;
            let s = if xs.is_empty() { gy.clone() } else { sum(&gy, Some(&[d as i64]), true, None)? };
            Ok(smallvec![Some(sub(&gy, &mul(&y, &s)?)?)])
        });
    }
    Ok(out)
}

pub fn log_softmax(x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::log_softmax");
    let x = match dtype {
        Some(dt) => to_dtype(x, dt)?,
        None => x.clone(),
    };
    let xs = x.shape();
    let d = wrap_dim(dim, xs.len())?;
    check_float(&x, "log_softmax")?;
    let out = {
        let _ng = crate::autograd::GradModeGuard::new(false);
        if x.dtype().is_narrow() {
            cast_raw(&log_softmax(&cast_raw(&x, DType::F32)?, dim, None)?, x.dtype())?
        } else if xs.is_empty() {
            mul(&x, &scalar(0.0))?
        } else if x.is_cuda() && cuda::has_kernels() {
            cuda::native::softmax(&x, d, true)?
        } else if xs[d] == 0 {
            x.alias()
        } else {
            // as torch's kernel, over a contiguous input: the result is contiguous
            let x = if x.is_contiguous() { x.clone() } else { cpu::contiguous(&x)? };
            // (x - max) - log(sum(exp(x - max))), as torch: subtracting max + log(...) in one step
            // would round to the ulp of max (2e-4 at |x| ~ 1e4 in float32); a row holding +inf
            // gives NaN, as torch's
            let dd = [d as i64];
            if let Some(r) = softmax_lastdim(&x, d, true)? {
                r
            } else {
                let shifted = sub(&x, &amax(&x, &dd, true, true)?)?;
                let s = sum(&exp(&shifted)?, Some(&dd), true, None)?;
                sub(&shifted, &log(&s)?)?
            }
        }
    };
    if needs_grad(&[&x]) {
        record(&[&out], &[&x], "LogSoftmaxBackward0", saved!(result = SavedTensor::output(&out, 0)), move |ctx, gs| {
            let y = ctx.saved(0)?;
            let s = if xs.is_empty() { gs[0].clone() } else { sum(&gs[0], Some(&[d as i64]), true, None)? };
            // g - e^y * s, written (e^y * -s) + g (the same roundings) so the contiguous operand
            // comes first and the gradient is contiguous, as torch's log_softmax_backward
            Ok(smallvec![Some(add(&mul(&exp(&y)?, &neg(&s)?)?, &gs[0])?)])
        });
    }
    Ok(out)
}
