//! Bindings of matrix-product functions that Python reaches for in its common cases: torch.addmm
//! as one AddmmBackward0 node (torch's graph, torch's saved alpha and beta).

use super::args::wrap;
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::autograd::SavedScalar;
use crate::ops;
use crate::tensor::DType;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

/// A Python number as the value used and as the node shows it (an int stays an int); None for
/// anything else (a bool, a complex, a tensor), which the Python `addmm` handles.
fn number(v: &Bound<'_, PyAny>) -> Option<(f64, SavedScalar)> {
    if v.is_instance_of::<PyBool>() {
        return None;
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v.extract().ok()?;
        return Some((i as f64, SavedScalar::Int(i)));
    }
    if v.is_instance_of::<PyFloat>() {
        let f: f64 = v.extract().ok()?;
        return Some((f, SavedScalar::Float(f)));
    }
    None
}

/// `torch.addmm(input, mat1, mat2, beta=, alpha=)` for float32/float64 matrices on one device:
/// one AddmmBackward0 node. None where the Python composition gives torch's behaviour (other
/// dtypes and shapes, and their errors).
#[pyfunction]
#[pyo3(signature = (input, mat1, mat2, beta, alpha))]
fn _addmm(input: &Bound<'_, PyTensor>, mat1: &Bound<'_, PyTensor>, mat2: &Bound<'_, PyTensor>, beta: &Bound<'_, PyAny>, alpha: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyTensor>>> {
    let (Some((b, shown_b)), Some((a, shown_a))) = (number(beta), number(alpha)) else { return Ok(None) };
    let (x, m1, m2) = (&input.get().t, &mat1.get().t, &mat2.get().t);
    let dt = m1.dtype();
    let plain = matches!(dt, DType::F32 | DType::F64)
        && m2.dtype() == dt
        && x.dtype() == dt
        && m1.ndim() == 2
        && m2.ndim() == 2
        && x.ndim() <= 2
        && m1.shape()[1] == m2.shape()[0]
        && x.device() == m1.device()
        && m2.device() == m1.device();
    if !plain {
        return Ok(None);
    }
    let out = ops::addmm_scaled(x, m1, m2, b, a, [shown_b, shown_a]).py()?;
    Ok(Some(wrap(input.py(), out)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_addmm, m)?)?;
    Ok(())
}
