//! Fused scaled-dot-product attention: `F.scaled_dot_product_attention` of 4-d float32/float64
//! query/key/value in host memory, causal or with a boolean/additive mask, without dropout, as
//! one node `ScaledDotProductFlashAttentionForCpuBackward0` (the name of torch's CPU kernel's
//! node, which torch records for the same calls).
//!
//! Note [Fused attention]: the forward takes one query row at a time: its scores against the keys
//! it may see (a causal row stops at the diagonal), the row's softmax and the weighted sum of
//! the values, all in a scratch row that stays in cache; it keeps the row's logsumexp. No
//! (T x S) attention matrix is ever materialised: the backward recomputes each row's
//! probabilities from the logsumexp, one row at a time again, and accumulates dQ, dK and dV per
//! (batch, head). (batch, head) pairs run in parallel on the team. A row whose every key is
//! masked out gives zeros forward and backward (torch's kernels do the same; a plain softmax
//! would give NaN). K and V are packed transposed per head so that every inner loop runs along
//! contiguous memory (an axpy the compiler vectorises).
//!
//! The backward under `create_graph=True` (and any device other than the host) is composed from
//! the engine's own differentiable ops (matmul, softmax, ...), so higher-order gradients stay
//! exact.

use super::nn::{contiguous_vec, wide, Real};
use super::{add, amax, cast_raw, eq, matmul, mul, needs_grad, record_with_scalars, scalar, softmax, sub, sum, transpose, where_};
use crate::autograd::{is_grad_enabled, SavedScalar, SavedTensor};
use crate::backend::{cpu, threads};
use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Element, Tensor};
use smallvec::smallvec;

/// The sizes of one call: batch, heads, query rows, keys, head dim of q/k, head dim of v.
#[derive(Clone, Copy)]
struct Dims {
    b: usize,
    h: usize,
    t: usize,
    s: usize,
    d: usize,
    dv: usize,
}

/// An additive mask (0 where a key is seen, -inf where not, or any float) as a contiguous
/// buffer with the strides that broadcast it over (batch, head, row, key).
struct Mask<T> {
    values: Vec<T>,
    strides: [usize; 4],
}

impl<T: Copy> Mask<T> {
    /// The mask's row `i` of head `bh` starts here; key j is at `+ j * strides[3]`.
    #[inline]
    fn row(&self, dm: &Dims, bh: usize, i: usize) -> usize {
        (bh / dm.h) * self.strides[0] + (bh % dm.h) * self.strides[1] + i * self.strides[2]
    }
}

/// The strides that broadcast a contiguous mask of `shape` to `target` (None when it does not
/// broadcast: the caller's composition then raises torch's error).
fn broadcast_strides(shape: &[usize], target: [usize; 4]) -> Option<[usize; 4]> {
    if shape.len() > 4 {
        return None;
    }
    let mut full = [1usize; 4];
    full[4 - shape.len()..].copy_from_slice(shape);
    let (mut strides, mut acc) = ([0usize; 4], 1usize);
    for i in (0..4).rev() {
        if full[i] != 1 && full[i] != target[i] {
            return None;
        }
        strides[i] = if full[i] == 1 { 0 } else { acc };
        acc *= full[i];
    }
    Some(strides)
}

/// Whether `fused_attention` covers this call: 4-d host tensors of one float32/float64 dtype with
/// matching batch/head/length dims, a mask (if any) that broadcasts, is boolean or of that dtype
/// and does not require grad.
pub fn covers(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> bool {
    let dt = q.dtype();
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let host = [q, k, v].iter().all(|t| !t.is_cuda()) && mask.is_none_or(|m| !m.is_cuda());
    host && matches!(dt, DType::F32 | DType::F64)
        && k.dtype() == dt
        && v.dtype() == dt
        && qs.len() == 4
        && ks.len() == 4
        && vs.len() == 4
        && qs[..2] == ks[..2]
        && ks[..3] == vs[..3]
        && qs[3] == ks[3]
        && mask.is_none_or(|m| {
            (m.dtype() == DType::Bool || m.dtype() == dt) && m.ndim() >= 2 && !m.requires_grad() && broadcast_strides(&m.shape(), [qs[0], qs[1], qs[2], ks[2]]).is_some()
        })
}

/// softmax(q·kᵀ·scale + mask)·v over the last two dims, one node (Note [Fused attention]).
/// The caller checks `covers` first.
/// `scale` None: 1/sqrt(head dim), as torch (and the node shows None, as torch's).
pub fn fused_attention(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, causal: bool, scale: Option<f64>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::_scaled_dot_product_flash_attention_for_cpu");
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let dm = Dims { b: qs[0], h: qs[1], t: qs[2], s: ks[2], d: qs[3], dv: vs[3] };
    let dt = q.dtype();
    let shown_scale = scale.map_or(SavedScalar::None, SavedScalar::Float);
    let scale = scale.unwrap_or(1.0 / (dm.d as f64).sqrt());
    // the mask as an additive float mask of q's dtype (a boolean one: 0 where True, -inf where False)
    let additive = match mask {
        Some(m) if m.dtype() == DType::Bool => Some(where_(m, &scalar(0.0), &scalar(f64::NEG_INFINITY)).and_then(|t| cast_raw(&t, dt))?),
        Some(m) => Some(m.clone()),
        None => None,
    };
    let (out, lse) = match dt {
        DType::F32 => forward_host::<f32>(q, k, v, additive.as_ref(), causal, scale, dm)?,
        _ => forward_host::<f64>(q, k, v, additive.as_ref(), causal, scale, dm)?,
    };
    if needs_grad(&[q, k, v]) {
        let saved = crate::autograd::Named(
            [SavedTensor::input(q), SavedTensor::input(k), SavedTensor::input(v), SavedTensor::output(&out, 0), SavedTensor::input(&lse)],
            &["query", "key", "value", "output", "logsumexp"],
        );
        let scalars = [("dropout_p", SavedScalar::Float(0.0)), ("is_causal", SavedScalar::Bool(causal)), ("scale", shown_scale)];
        record_with_scalars(&[&out], &[q, k, v], "ScaledDotProductFlashAttentionForCpuBackward0", saved, scalars, move |ctx, gs| {
            let (q, k, v, o, lse) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?, ctx.saved(3)?, ctx.saved(4)?);
            let g = &gs[0];
            let host = !is_grad_enabled() && !g.is_cuda() && g.dtype() == q.dtype() && g.shape() == o.shape();
            let (dq, dk, dv) = if host {
                match q.dtype() {
                    DType::F32 => backward_host::<f32>(g, &q, &k, &v, &o, &lse, additive.as_ref(), causal, scale, dm)?,
                    _ => backward_host::<f64>(g, &q, &k, &v, &o, &lse, additive.as_ref(), causal, scale, dm)?,
                }
            } else {
                backward_composed(g, &q, &k, &v, additive.as_ref(), causal, scale)?
            };
            Ok(smallvec![Some(dq), Some(dk), Some(dv)])
        });
    }
    Ok(out)
}

fn mask_of<T: Element>(m: Option<&Tensor>, dm: &Dims) -> Result<Option<Mask<T>>> {
    let Some(m) = m else { return Ok(None) };
    let Some(strides) = broadcast_strides(&m.shape(), [dm.b, dm.h, dm.t, dm.s]) else {
        bail!(Runtime, "attn_mask of shape {:?} does not broadcast to the attention's shape", &m.shape()[..]);
    };
    Ok(Some(Mask { values: contiguous_vec::<T>(m)?, strides }))
}

/// Query rows per block: a block's scores (`BLOCK` x keys) are one scratch tile per thread.
const BLOCK: usize = 64;

/// C (m x n, contiguous) = A @ B for strided views (offset, row stride, col stride) of slices,
/// on the calling thread (`cpu::gemm` inside a team part runs serially).
#[allow(clippy::too_many_arguments)]
fn gemm_into<T: Element>(c: &mut [T], m: usize, n: usize, k: usize, a: (&[T], usize, usize, usize), b: (&[T], usize, usize, usize)) {
    let out = &mut c[..m * n];
    // SAFETY: MaybeUninit<T> has T's layout; gemm writes every element of `out`.
    let out = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut std::mem::MaybeUninit<T>, m * n) };
    cpu::gemm(m, n, k, a.0, a.1, a.2, a.3, b.0, b.1, b.2, b.3, out);
}

/// The keys rows i0..i1 of a block see: all, or up to the last row's diagonal (torch's top-left
/// causal mask; the triangle inside the block is masked per row).
#[inline(always)]
fn block_keys(i1: usize, s: usize, causal: bool) -> usize {
    if causal {
        i1.min(s)
    } else {
        s
    }
}

/// Scale the raw scores of block rows i0.. (row stride `n`) and mask them: the additive mask,
/// and -inf right of the diagonal when causal.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn scale_and_mask<T: Real>(sc: &mut [T], rows: usize, n: usize, i0: usize, scale: T, mask: &Option<Mask<T>>, dm: &Dims, bh: usize, causal: bool) {
    let ninf = T::from_f64(f64::NEG_INFINITY);
    for r in 0..rows {
        let i = i0 + r;
        let row = &mut sc[r * n..(r + 1) * n];
        match mask {
            Some(m) => {
                let (at, cs) = (m.row(dm, bh, i), m.strides[3]);
                if cs == 1 {
                    let mv = &m.values[at..at + n];
                    for j in 0..n {
                        row[j] = row[j] * scale + mv[j];
                    }
                } else {
                    for (j, x) in row.iter_mut().enumerate() {
                        *x = *x * scale + m.values[at + j * cs];
                    }
                }
            }
            None => row.iter_mut().for_each(|x| *x = *x * scale),
        }
        if causal && i + 1 < n {
            row[i + 1..].fill(ninf);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn forward_host<T: Real>(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, causal: bool, scale: f64, dm: Dims) -> Result<(Tensor, Tensor)> {
    let (qv, kv, vv) = (contiguous_vec::<T>(q)?, contiguous_vec::<T>(k)?, contiguous_vec::<T>(v)?);
    let mask = mask_of::<T>(mask, &dm)?;
    let Dims { b, h, t, s, d, dv } = dm;
    let sc = T::from_f64(scale);
    let (zero, ninf) = (T::default(), T::from_f64(f64::NEG_INFINITY));
    let heads = threads::map_collect(b * h, |bh| {
        wide(|| {
            let (q, k, v) = (&qv[bh * t * d..(bh + 1) * t * d], &kv[bh * s * d..(bh + 1) * s * d], &vv[bh * s * dv..(bh + 1) * s * dv]);
            let (mut o, mut lse) = (vec![zero; t * dv], vec![zero; t]);
            let mut scores = vec![zero; BLOCK.min(t) * s];
            for i0 in (0..t).step_by(BLOCK) {
                let (i1, n) = ((i0 + BLOCK).min(t), block_keys((i0 + BLOCK).min(t), s, causal));
                let rows = i1 - i0;
                if n == 0 {
                    lse[i0..i1].fill(T::from_f64(f64::INFINITY));
                    continue;
                }
                // scores = Q_block @ K[..n]ᵀ, then scale and mask
                gemm_into(&mut scores, rows, n, d, (q, i0 * d, d, 1), (k, 0, 1, d));
                scale_and_mask(&mut scores, rows, n, i0, sc, &mask, &dm, bh, causal);
                // each row's softmax, in place (a fully masked row: zeros, logsumexp +inf)
                for r in 0..rows {
                    let row = &mut scores[r * n..(r + 1) * n];
                    let m = row.iter().fold(ninf, |m, &x| if x > m || x.to_f64().is_nan() { x } else { m });
                    if m == ninf {
                        row.fill(zero);
                        lse[i0 + r] = T::from_f64(f64::INFINITY);
                        continue;
                    }
                    row.iter_mut().for_each(|x| *x = cpu::math::exp(*x - m));
                    let l = cpu::sum_slice(row);
                    let inv = T::from_f64(1.0 / l);
                    row.iter_mut().for_each(|x| *x = *x * inv);
                    lse[i0 + r] = T::from_f64(m.to_f64() + l.ln());
                }
                // O_block = P @ V[..n]
                gemm_into(&mut o[i0 * dv..], rows, dv, n, (&scores, 0, n, 1), (v, 0, dv, 1));
            }
            (o, lse)
        })
    });
    let mut out = Vec::with_capacity(b * h * t * dv);
    let mut lse = Vec::with_capacity(b * h * t);
    for (o, l) in heads {
        out.extend_from_slice(&o);
        lse.extend_from_slice(&l);
    }
    Ok((Tensor::from_vec(out, &[b, h, t, dv]), Tensor::from_vec(lse, &[b, h, t])))
}

#[allow(clippy::too_many_arguments)]
fn backward_host<T: Real>(g: &Tensor, q: &Tensor, k: &Tensor, v: &Tensor, o: &Tensor, lse: &Tensor, mask: Option<&Tensor>, causal: bool, scale: f64, dm: Dims) -> Result<(Tensor, Tensor, Tensor)> {
    let (gv, qv, kv, vv, ov, lv) = (contiguous_vec::<T>(g)?, contiguous_vec::<T>(q)?, contiguous_vec::<T>(k)?, contiguous_vec::<T>(v)?, contiguous_vec::<T>(o)?, contiguous_vec::<T>(lse)?);
    let mask = mask_of::<T>(mask, &dm)?;
    let Dims { b, h, t, s, d, dv } = dm;
    let sc = T::from_f64(scale);
    let zero = T::default();
    let pinf = T::from_f64(f64::INFINITY);
    let heads = threads::map_collect(b * h, |bh| {
        wide(|| {
            let q = &qv[bh * t * d..(bh + 1) * t * d];
            let k = &kv[bh * s * d..(bh + 1) * s * d];
            let v = &vv[bh * s * dv..(bh + 1) * s * dv];
            let (go, o, lse) = (&gv[bh * t * dv..(bh + 1) * t * dv], &ov[bh * t * dv..(bh + 1) * t * dv], &lv[bh * t..(bh + 1) * t]);
            let (mut dq, mut dk, mut dvv) = (vec![zero; t * d], vec![zero; s * d], vec![zero; s * dv]);
            let rows_max = BLOCK.min(t);
            let (mut p, mut dp) = (vec![zero; rows_max * s], vec![zero; rows_max * s]);
            let mut part = vec![zero; s * d.max(dv)];
            for i0 in (0..t).step_by(BLOCK) {
                let (i1, n) = ((i0 + BLOCK).min(t), block_keys((i0 + BLOCK).min(t), s, causal));
                let rows = i1 - i0;
                if n == 0 {
                    continue;
                }
                // P from the saved logsumexp (0 where masked, and in fully masked rows)
                gemm_into(&mut p, rows, n, d, (q, i0 * d, d, 1), (k, 0, 1, d));
                scale_and_mask(&mut p, rows, n, i0, sc, &mask, &dm, bh, causal);
                for r in 0..rows {
                    let (row, li) = (&mut p[r * n..(r + 1) * n], lse[i0 + r]);
                    if li == pinf {
                        row.fill(zero);
                    } else {
                        row.iter_mut().for_each(|x| *x = cpu::math::exp(*x - li));
                    }
                }
                // dP = gO_block @ V[..n]ᵀ; dS = P ∘ (dP - rowsum(gO ∘ O)) · scale
                gemm_into(&mut dp, rows, n, dv, (go, i0 * dv, dv, 1), (v, 0, 1, dv));
                for r in 0..rows {
                    let i = i0 + r;
                    let (gi, oi) = (&go[i * dv..(i + 1) * dv], &o[i * dv..(i + 1) * dv]);
                    let di = gi.iter().zip(oi).fold(zero, |acc, (&a, &b)| acc + a * b);
                    let (pr, dr) = (&p[r * n..(r + 1) * n], &mut dp[r * n..(r + 1) * n]);
                    for j in 0..n {
                        dr[j] = pr[j] * (dr[j] - di) * sc;
                    }
                }
                // dQ_block = dS @ K[..n]
                gemm_into(&mut dq[i0 * d..], rows, d, n, (&dp, 0, n, 1), (k, 0, d, 1));
                // dK[..n] += dSᵀ @ Q_block; dV[..n] += Pᵀ @ gO_block
                gemm_into(&mut part, n, d, rows, (&dp, 0, 1, n), (q, i0 * d, d, 1));
                dk[..n * d].iter_mut().zip(&part[..n * d]).for_each(|(a, &b)| *a = *a + b);
                gemm_into(&mut part, n, dv, rows, (&p, 0, 1, n), (go, i0 * dv, dv, 1));
                dvv[..n * dv].iter_mut().zip(&part[..n * dv]).for_each(|(a, &b)| *a = *a + b);
            }
            (dq, dk, dvv)
        })
    });
    let (mut dq, mut dk, mut dvv) = (Vec::with_capacity(b * h * t * d), Vec::with_capacity(b * h * s * d), Vec::with_capacity(b * h * s * dv));
    for (a, bk, c) in heads {
        dq.extend_from_slice(&a);
        dk.extend_from_slice(&bk);
        dvv.extend_from_slice(&c);
    }
    Ok((Tensor::from_vec(dq, &[b, h, t, d]), Tensor::from_vec(dk, &[b, h, s, d]), Tensor::from_vec(dvv, &[b, h, s, dv])))
}

/// The attention probabilities composed from differentiable ops (fully masked rows zero).
fn probabilities(q: &Tensor, k: &Tensor, mask: Option<&Tensor>, causal: bool, scale: f64) -> Result<Tensor> {
    let mut scores = mul(&matmul(q, &transpose(k, -2, -1)?)?, &scalar(scale))?;
    if let Some(m) = mask {
        scores = add(&scores, m)?;
    }
    if causal {
        let (t, s) = (q.shape()[2], k.shape()[2]);
        let cm: Vec<bool> = (0..t * s).map(|x| x % s <= x / s).collect();
        let cm = Tensor::from_vec(cm, &[t, s]);
        scores = where_(&cm, &scores, &cast_raw(&scalar(f64::NEG_INFINITY), scores.dtype())?)?;
    }
    let dead = eq(&amax(&scores, &[-1], true, true)?, &scalar(f64::NEG_INFINITY))?;
    let zero = cast_raw(&scalar(0.0), scores.dtype())?;
    let p = softmax(&where_(&dead, &zero, &scores)?, -1, None)?;
    where_(&dead, &zero, &p)
}

/// dQ, dK, dV from differentiable ops (the backward under create_graph, and off the host).
fn backward_composed(g: &Tensor, q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, causal: bool, scale: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let p = probabilities(q, k, mask, causal, scale)?;
    let dv = matmul(&transpose(&p, -2, -1)?, g)?;
    let dp = matmul(g, &transpose(v, -2, -1)?)?;
    let rows = sum(&mul(&dp, &p)?, Some(&[-1]), true, None)?;
    let ds = mul(&mul(&p, &sub(&dp, &rows)?)?, &scalar(scale))?;
    let dq = matmul(&ds, k)?;
    let dk = matmul(&transpose(&ds, -2, -1)?, q)?;
    Ok((dq, dk, dv))
}
