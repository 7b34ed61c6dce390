//! Python views of the backward graph: grad_fn nodes and AccumulateGrad for leaves.

use super::args::wrap;
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::autograd::{Edge, NodeRef};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A node of the backward graph (`tensor.grad_fn`).
#[pyclass(name = "Node", module = "ferrograd.autograd.graph", frozen)]
pub struct PyNode {
    pub node: NodeRef,
}

/// The gradient accumulator of a leaf tensor.
#[pyclass(name = "AccumulateGrad", module = "ferrograd.autograd.graph", frozen)]
pub struct PyAccumulateGrad {
    #[pyo3(get)]
    pub variable: Py<PyTensor>,
}

pub fn edge_obj<'py>(py: Python<'py>, e: &Option<Edge>) -> PyResult<Bound<'py, PyTuple>> {
    match e {
        None => PyTuple::new(py, [py.None(), 0i64.into_pyobject(py)?.into_any().unbind()]),
        Some(Edge::Node(n, nr)) => {
            let obj = Py::new(py, PyNode { node: n.clone() })?.into_any();
            PyTuple::new(py, [obj, (*nr as i64).into_pyobject(py)?.into_any().unbind()])
        }
        Some(Edge::Leaf(t)) => {
            let obj = Py::new(py, PyAccumulateGrad { variable: wrap(py, t.clone())? })?.into_any();
            PyTuple::new(py, [obj, 0i64.into_pyobject(py)?.into_any().unbind()])
        }
    }
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name().into_owned()
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self.node.edges().iter().map(|e| edge_obj(py, e)).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    fn __repr__(&self) -> String {
        format!("<{} object at {:#x}>", self.node.name(), self.node.addr())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().map(|o| o.get().node.ptr_eq(&self.node)).unwrap_or(false)
    }
    fn __hash__(&self) -> u64 {
        self.node.addr() as u64
    }
    fn register_hook(&self, hook: Py<PyAny>) -> super::function::PyHandle {
        let id = crate::autograd::next_hook_id();
        self.node.with_extras(|ex| ex.post_hooks.push((id, super::function::post_hook(hook))));
        super::function::PyHandle { tensor: None, node: Some(self.node.clone()), id }
    }
    fn register_prehook(&self, hook: Py<PyAny>) -> super::function::PyHandle {
        let id = crate::autograd::next_hook_id();
        self.node.with_extras(|ex| ex.pre_hooks.push((id, super::function::pre_hook(hook))));
        super::function::PyHandle { tensor: None, node: Some(self.node.clone()), id }
    }
    /// The tensors this node saved for backward, in the order its rule uses them (torch exposes
    /// them one by one as `_saved_self`, `_saved_other`, ...). RuntimeError once freed.
    #[getter]
    fn _saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let func = self.node.try_func().ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(format!("the saved tensors of {} cannot be read while its backward runs", self.node.name()))
        })?;
        let saved = func.saved_tensors(&self.node).py()?;
        drop(func);
        let items = saved.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyDict> {
        pyo3::types::PyDict::new(py)
    }
}

#[pymethods]
impl PyAccumulateGrad {
    fn name(&self) -> &'static str {
        "torch::autograd::AccumulateGrad"
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        Ok(PyTuple::empty(py))
    }
    fn __repr__(&self) -> String {
        format!("<AccumulateGrad object at {:#x}>", self.variable.get().t.addr())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyAccumulateGrad>().map(|o| o.get().variable.get().t.ptr_eq(&self.variable.get().t)).unwrap_or(false)
    }
    fn __hash__(&self) -> u64 {
        self.variable.get().t.addr() as u64
    }
}
