//! The PyO3 binding layer, and nothing else: wrappers, argument parsing, error mapping.
//! The public Python names are re-exported by `python/ferrograd/__init__.py`.
#![allow(non_snake_case)] // the native module is `_C`, as torch's

/// Shadow the tensors `$x` (each a `&Tensor`) by what autocast hands an op of `$rule`
/// (Note [Autocast] in ops/autocast.rs): one thread-local check when autocast is off.
macro_rules! autocast {
    ($rule:expr; $($x:ident),+) => {
        let cast = if crate::ops::autocast::active() { crate::ops::autocast::inputs($rule, [$($x),+]).py()? } else { None };
        let [$($x),+] = match &cast {
            Some([$($x),+]) => [$($x),+],
            None => [$($x),+],
        };
    };
}

mod amp;
mod args;
mod config;
mod dlpack;
mod autograd_function;
mod functions;
mod graph;
mod linalg_functions;
mod nn_functions;
mod optim;
mod profiler;
mod tensor;

pub use graph::{PyAccumulateGrad, PyNode, PySavedTensor};
pub use tensor::PyTensor;

use crate::error::{Error, ErrorKind};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The one mapping from engine errors to the exception torch raises for the same mistake.
pub fn to_py(e: Error) -> PyErr {
    if let Some(p) = e.payload {
        if let Ok(err) = p.downcast::<PyErr>() {
            return *err;
        }
    }
    match e.kind {
        ErrorKind::Runtime => PyRuntimeError::new_err(e.msg),
        ErrorKind::Index => PyIndexError::new_err(e.msg),
        ErrorKind::Type => PyTypeError::new_err(e.msg),
        ErrorKind::Value => PyValueError::new_err(e.msg),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(e.msg),
    }
}

/// `.map_err(to_py)` shorthand.
pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}
impl<T> IntoPyResult<T> for crate::error::Result<T> {
    #[inline]
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

#[pymodule]
fn _C(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTensor>()?;
    m.add_class::<PyNode>()?;
    m.add_class::<PyAccumulateGrad>()?;
    m.add_class::<PySavedTensor>()?;
    m.add_class::<autograd_function::PyHandle>()?;
    m.add_function(wrap_pyfunction!(autograd_function::_function_record, m)?)?;
    m.add_class::<args::PyDType>()?;
    m.add_class::<args::PyDevice>()?;
    for dt in crate::DType::ALL {
        m.add(dt.name(), args::dtype_obj(m.py(), dt)?)?;
    }
    m.add_class::<args::PyMemoryFormat>()?;
    for format in crate::tensor::MemoryFormat::ALL {
        m.add(format.name(), Py::new(m.py(), args::PyMemoryFormat { format })?)?;
    }
    functions::register(m)?;
    nn_functions::register(m)?;
    config::register(m)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    profiler::register(m)?;
    optim::register(m)?;
    amp::register(m)?;
    linalg_functions::register(m)?;
    Ok(())
}
