//! Bindings of the fused nn ops (`ops::nn`, Note [Fused nn ops]): the common cases of
//! `nn.functional.gelu/layer_norm/mse_loss/binary_cross_entropy_with_logits`. Each returns None
//! for what it does not cover; the Python function then runs its composition, with torch's checks.

use super::args::wrap;
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::ops;
use crate::tensor::{DType, Tensor};
use pyo3::prelude::*;

fn tensor(obj: &Bound<'_, PyAny>) -> Option<Tensor> {
    obj.cast::<PyTensor>().ok().map(|t| t.get().t.clone())
}

/// None stays None; a tensor is Some(Some(t)); anything else is Some(None) (not covered).
fn optional(obj: &Bound<'_, PyAny>) -> Option<Option<Tensor>> {
    if obj.is_none() {
        Some(None)
    } else {
        tensor(obj).map(Some)
    }
}

fn reduction_code(reduction: &str) -> Option<u8> {
    match reduction {
        "none" => Some(0),
        "mean" => Some(1),
        "sum" => Some(2),
        _ => None,
    }
}

fn float(t: &Tensor) -> bool {
    matches!(t.dtype(), DType::F32 | DType::F64 | DType::F16 | DType::BF16)
}

/// gelu of a float tensor, approximate "none" or "tanh" (one GeluBackward0 node).
#[pyfunction]
fn _gelu(py: Python<'_>, input: &Bound<'_, PyAny>, approximate: &str) -> PyResult<Option<Py<PyTensor>>> {
    let Some(x) = tensor(input) else { return Ok(None) };
    let tanh = match approximate {
        "none" => false,
        "tanh" => true,
        _ => return Ok(None),
    };
    if !float(&x) {
        return Ok(None);
    }
    Ok(Some(wrap(py, ops::nn::gelu(&x, tanh).py()?)?))
}

/// layer_norm with weight/bias of the input's float dtype and of normalized_shape (or None), the
/// shapes already checked by the caller (one NativeLayerNormBackward0 node).
#[pyfunction]
fn _layer_norm(py: Python<'_>, input: &Bound<'_, PyAny>, normalized_shape: Vec<i64>, weight: &Bound<'_, PyAny>, bias: &Bound<'_, PyAny>, eps: f64) -> PyResult<Option<Py<PyTensor>>> {
    let (Some(x), Some(w), Some(b)) = (tensor(input), optional(weight), optional(bias)) else { return Ok(None) };
    if !float(&x) || normalized_shape.is_empty() || normalized_shape.iter().any(|&s| s < 0) {
        return Ok(None);
    }
    let ns: Vec<usize> = normalized_shape.iter().map(|&s| s as usize).collect();
    let xs = x.shape();
    if xs.len() < ns.len() || xs[xs.len() - ns.len()..] != ns[..] {
        return Ok(None);
    }
    for p in [&w, &b].into_iter().flatten() {
        if p.dtype() != x.dtype() || p.shape()[..] != ns[..] || p.device() != x.device() {
            return Ok(None);
        }
    }
    let (out, _, _) = ops::nn::layer_norm(&x, &ns, w.as_ref(), b.as_ref(), eps).py()?;
    Ok(Some(wrap(py, out)?))
}

/// mse_loss of an input and target of one shape and float dtype (one MseLossBackward0 node).
#[pyfunction]
fn _mse_loss(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, reduction: &str) -> PyResult<Option<Py<PyTensor>>> {
    let (Some(x), Some(t)) = (tensor(input), tensor(target)) else { return Ok(None) };
    let Some(r) = reduction_code(reduction) else { return Ok(None) };
    if !matches!(x.dtype(), DType::F32 | DType::F64) || x.dtype() != t.dtype() || x.shape() != t.shape() || x.device() != t.device() {
        return Ok(None);
    }
    Ok(Some(wrap(py, ops::nn::mse_loss(&x, &t, r).py()?)?))
}

/// binary_cross_entropy_with_logits of an input and target of one shape and float dtype, weight
/// and pos_weight of that dtype broadcasting to the input's shape and not requiring grad (one
/// BinaryCrossEntropyWithLogitsBackward0 node).
#[pyfunction]
fn _binary_cross_entropy_with_logits(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>, pos_weight: &Bound<'_, PyAny>, reduction: &str) -> PyResult<Option<Py<PyTensor>>> {
    let (Some(x), Some(t), Some(w), Some(p)) = (tensor(input), tensor(target), optional(weight), optional(pos_weight)) else { return Ok(None) };
    let Some(r) = reduction_code(reduction) else { return Ok(None) };
    if !matches!(x.dtype(), DType::F32 | DType::F64) || x.dtype() != t.dtype() || x.shape() != t.shape() || x.device() != t.device() {
        return Ok(None);
    }
    let xs = x.shape();
    for q in [&w, &p].into_iter().flatten() {
        let qs = q.shape();
        let broadcasts = qs.len() <= xs.len() && qs.iter().rev().zip(xs.iter().rev()).all(|(&a, &b)| a == b || a == 1);
        if q.dtype() != x.dtype() || q.requires_grad() || q.device() != x.device() || !broadcasts {
            return Ok(None);
        }
    }
    Ok(Some(wrap(py, ops::nn::binary_cross_entropy_with_logits(&x, &t, w.as_ref(), p.as_ref(), r).py()?)?))
}

/// scaled_dot_product_attention of 4-d float32/float64 host tensors without dropout, causal or with a
/// boolean/additive mask that does not require grad (one ScaledDotProductFlashAttentionForCpuBackward0
/// node, Note [Fused attention]); the caller has checked is_causal against attn_mask.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask, is_causal, scale))]
fn _scaled_dot_product_attention(py: Python<'_>, query: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, attn_mask: &Bound<'_, PyAny>, is_causal: bool, scale: Option<f64>) -> PyResult<Option<Py<PyTensor>>> {
    let (Some(q), Some(k), Some(v), Some(mask)) = (tensor(query), tensor(key), tensor(value), optional(attn_mask)) else { return Ok(None) };
    if !ops::attention::covers(&q, &k, &v, mask.as_ref()) || (is_causal && mask.is_some()) {
        return Ok(None);
    }
    Ok(Some(wrap(py, ops::attention::fused_attention(&q, &k, &v, mask.as_ref(), is_causal, scale).py()?)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_gelu, m)?)?;
    m.add_function(wrap_pyfunction!(_scaled_dot_product_attention, m)?)?;
    m.add_function(wrap_pyfunction!(_layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_mse_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_binary_cross_entropy_with_logits, m)?)?;
    Ok(())
}
