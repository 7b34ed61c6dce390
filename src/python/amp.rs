//! Bindings of mixed precision: autocast's per-thread state and its casts for the Python-defined
//! ops (`ops::autocast`, Note [Autocast]), the gradient scaler's fused unscale
//! (`optim::non_finite_check_and_unscale`) and cuBLAS's TF32 switch.

use super::args::{dtype_obj, to_dtype, PyDType};
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::ops::autocast::{self, Kind};
use crate::ops::table::{Autocast, AutocastRule};
use crate::tensor::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// A device type autocast keeps state for; None for the others (no autocast there).
fn kind(device_type: &str) -> Option<Kind> {
    Kind::parse(device_type.split(':').next().unwrap_or(device_type))
}

/// Is autocast on (and not suspended) for some device type on this thread?
#[pyfunction]
fn _autocast_active() -> bool {
    autocast::active()
}

#[pyfunction]
fn _autocast_is_enabled(device_type: &str) -> bool {
    kind(device_type).map(autocast::is_enabled).unwrap_or(false)
}

#[pyfunction]
fn _autocast_set_enabled(device_type: &str, enabled: bool) -> PyResult<()> {
    match kind(device_type) {
        Some(k) => autocast::set_enabled(k, enabled),
        None if enabled => return Err(PyRuntimeError::new_err(format!("User specified an unsupported autocast device_type '{device_type}'"))),
        None => {}
    }
    Ok(())
}

#[pyfunction]
fn _autocast_get_dtype(py: Python<'_>, device_type: &str) -> PyResult<Py<PyDType>> {
    let dt = match kind(device_type) {
        Some(k) => autocast::dtype(k),
        None => DType::BF16,
    };
    dtype_obj(py, dt)
}

#[pyfunction]
fn _autocast_set_dtype(device_type: &str, dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    let dt = to_dtype(dtype)?;
    if let Some(k) = kind(device_type) {
        autocast::set_dtype(k, dt);
    }
    Ok(())
}

#[pyfunction]
fn _autocast_increment_nesting() -> i64 {
    autocast::increment_nesting()
}

#[pyfunction]
fn _autocast_decrement_nesting() -> i64 {
    autocast::decrement_nesting()
}

#[pyfunction]
fn _autocast_cache_enabled() -> bool {
    autocast::cache_enabled()
}

#[pyfunction]
fn _autocast_set_cache_enabled(enabled: bool) {
    autocast::set_cache_enabled(enabled)
}

#[pyfunction]
fn _autocast_clear_cache() {
    autocast::clear_cache()
}

/// Suspend autocast while a listed Python op runs its body; returns the token `_autocast_resume` takes.
#[pyfunction]
fn _autocast_suspend() -> u8 {
    autocast::suspend()
}

#[pyfunction]
fn _autocast_resume(token: u8) {
    autocast::resume(token)
}

fn class(word: &str) -> PyResult<Autocast> {
    Ok(match word {
        "none" => Autocast::None,
        "lower_precision" => Autocast::LowerPrecision,
        "float32" => Autocast::Float32,
        "promote" => Autocast::Promote,
        _ => return Err(PyValueError::new_err(format!("unknown autocast class '{word}'"))),
    })
}

/// The tensors of one argument: a tensor, or a list/tuple of them.
fn collect(obj: &Bound<'_, PyAny>, out: &mut Vec<Tensor>) {
    if let Ok(t) = obj.cast::<PyTensor>() {
        out.push(t.get().t.clone());
    } else if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        if let Ok(it) = obj.try_iter() {
            for item in it.flatten() {
                if let Ok(t) = item.cast::<PyTensor>() {
                    out.push(t.get().t.clone());
                }
            }
        }
    }
}

/// One argument with its tensors cast.
fn recast<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: Kind, dt: DType) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let c = autocast::cast(&t.get().t, k, dt).py()?;
        if std::sync::Arc::ptr_eq(&c.0, &t.get().t.0) {
            return Ok(obj.clone());
        }
        return Ok(super::args::wrap(py, c)?.into_bound(py).into_any());
    }
    let items = |o: &Bound<'py, PyAny>| -> PyResult<Vec<Bound<'py, PyAny>>> { o.try_iter()?.map(|i| i.and_then(|i| recast(py, &i, k, dt))).collect() };
    if obj.cast::<PyList>().is_ok() {
        return Ok(PyList::new(py, items(obj)?)?.into_any());
    }
    if obj.cast::<PyTuple>().is_ok() && obj.get_type().is(py.get_type::<PyTuple>()) {
        return Ok(PyTuple::new(py, items(obj)?)?.into_any());
    }
    Ok(obj.clone())
}

/// The arguments of a Python-defined op of autocast classes `cpu`/`cuda` as autocast hands them to
/// it: `(args, kwargs)` with their floating tensors (and lists of tensors) cast, or None when
/// autocast leaves them (off, another device type, not on that device type's list).
#[pyfunction]
#[pyo3(signature = (cpu, cuda, args, kwargs=None))]
fn _autocast_args<'py>(py: Python<'py>, cpu: &str, cuda: &str, args: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Option<(Bound<'py, PyTuple>, Bound<'py, PyDict>)>> {
    if !autocast::active() {
        return Ok(None);
    }
    let rule = AutocastRule { cpu: class(cpu)?, cuda: class(cuda)? };
    let mut ts = Vec::new();
    for a in args.iter() {
        collect(&a, &mut ts);
    }
    if let Some(kw) = kwargs {
        for (_, v) in kw.iter() {
            collect(&v, &mut ts);
        }
    }
    let refs: Vec<&Tensor> = ts.iter().collect();
    let Some((k, dt)) = autocast::target(rule, &refs) else { return Ok(None) };
    let new_args = PyTuple::new(py, args.iter().map(|a| recast(py, &a, k, dt)).collect::<PyResult<Vec<_>>>()?)?;
    let new_kwargs = PyDict::new(py);
    if let Some(kw) = kwargs {
        for (key, v) in kw.iter() {
            new_kwargs.set_item(key, recast(py, &v, k, dt)?)?;
        }
    }
    Ok(Some((new_args, new_kwargs)))
}

/// torch._amp_foreach_non_finite_check_and_unscale_(scaled_grads, found_inf, inv_scale): one call
/// for all the gradients (see `optim::non_finite_check_and_unscale`), the GIL released.
#[pyfunction]
fn _amp_foreach_non_finite_check_and_unscale_(py: Python<'_>, scaled_grads: Vec<Py<PyTensor>>, found_inf: &Bound<'_, PyTensor>, inv_scale: &Bound<'_, PyTensor>) -> PyResult<()> {
    let gs: Vec<Tensor> = scaled_grads.iter().map(|t| t.bind(py).get().t.clone()).collect();
    let (f, i) = (found_inf.get().t.clone(), inv_scale.get().t.clone());
    py.detach(move || crate::optim::non_finite_check_and_unscale(&gs, &f, &i)).py()
}

/// torch.backends.cuda.matmul.allow_tf32, as the CUDA matmul reads it.
#[pyfunction]
fn _set_cublas_allow_tf32(allow: bool) {
    crate::backend::cuda::set_allow_tf32(allow)
}

#[pyfunction]
fn _cublas_allow_tf32() -> bool {
    crate::backend::cuda::allow_tf32()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_autocast_active, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_is_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_set_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_get_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_set_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_increment_nesting, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_decrement_nesting, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_set_cache_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_clear_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_suspend, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_resume, m)?)?;
    m.add_function(wrap_pyfunction!(_autocast_args, m)?)?;
    m.add_function(wrap_pyfunction!(_amp_foreach_non_finite_check_and_unscale_, m)?)?;
    m.add_function(wrap_pyfunction!(_set_cublas_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(_cublas_allow_tf32, m)?)?;
    Ok(())
}
