//! Bindings of the op profiler (`crate::autograd::profiler`) and of user-annotated scopes
//! (`record_function`). The event grouping and torch's table live in Python.

use crate::autograd::profiler::{self, Scope};
use pyo3::prelude::*;

#[pyfunction]
fn _profiler_start() {
    profiler::start();
}

#[pyfunction]
fn _profiler_enabled() -> bool {
    profiler::is_enabled()
}

/// Stop and return the events as (name, thread, start_ns, end_ns, self_ns, depth, in_backward).
#[pyfunction]
fn _profiler_stop() -> Vec<(String, u64, u64, u64, u64, u32, bool)> {
    profiler::stop()
        .into_iter()
        .map(|e| (e.name.into_owned(), e.thread, e.start_ns, e.end_ns, e.self_ns, e.depth, e.backward))
        .collect()
}

/// A named scope opened by `__enter__` and closed by `__exit__` on the same thread.
#[pyclass(name = "_RecordFunction", module = "ferrograd._C", unsendable)]
pub struct PyRecordFunction {
    name: String,
    scope: Option<Scope>,
}

#[pymethods]
impl PyRecordFunction {
    #[new]
    fn new(name: String) -> Self {
        PyRecordFunction { name, scope: None }
    }
    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyRefMut<'_, Self> {
        if slf.scope.is_none() {
            slf.scope = profiler::scope_owned(slf.name.clone());
        }
        slf
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.scope = None;
        false
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_profiler_start, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_stop, m)?)?;
    m.add_function(wrap_pyfunction!(_profiler_enabled, m)?)?;
    m.add_class::<PyRecordFunction>()?;
    Ok(())
}
