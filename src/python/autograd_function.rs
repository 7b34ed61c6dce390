//! Custom autograd Functions written in Python: the node's backward is a Python callback made
//! from the Rust engine, taking the GIL for that call only. Hook callbacks live here too.

use super::args::wrap;
use super::tensor::PyTensor;
use crate::autograd::{self, Backward, Node, NodeRef, SavedTensor, TensorHook};
use crate::error::{Error, ErrorKind, Result};
use crate::ops;
use crate::tensor::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use smallvec::SmallVec;
use std::sync::Arc;

/// A Python exception carried through the engine unchanged.
pub fn py_error(e: PyErr) -> Error {
    Error { kind: ErrorKind::Runtime, msg: e.to_string(), payload: Some(Box::new(e)) }
}

fn opt_tensor_obj(py: Python<'_>, g: &Option<Tensor>) -> PyResult<Py<PyAny>> {
    match g {
        Some(t) => Ok(wrap(py, t.clone())?.into_any()),
        None => Ok(py.None()),
    }
}

pub struct PyFunctionBackward {
    name: String,
    /// None once the garbage collector broke a ctx -> output -> node -> ctx cycle.
    ctx: Option<Py<PyAny>>,
    backward: Py<PyAny>,
    saved: Vec<Option<SavedTensor>>,
    released: bool,
    n_args: usize,
    tensor_positions: Vec<usize>,
    materialize: bool,
}

impl Backward for PyFunctionBackward {
    fn materialize_grads(&self) -> bool {
        self.materialize
    }
    fn runs_without_grads(&self) -> bool {
        true
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
    fn apply(&mut self, node: &NodeRef, grads: autograd::Grads) -> Result<autograd::Grads> {
        let unpacked: Vec<Option<Tensor>> = if self.released {
            return Err(autograd::node::freed_error());
        } else {
            self.saved.iter().map(|s| s.as_ref().map(|s| s.unpack(node)).transpose()).collect::<Result<_>>()?
        };
        Python::attach(|py| -> PyResult<Vec<Option<Tensor>>> {
            let ctx = self.ctx.as_ref().ok_or_else(|| PyRuntimeError::new_err("the ctx of this Function was released"))?.bind(py);
            let saved = unpacked.iter().map(|t| opt_tensor_obj(py, t)).collect::<PyResult<Vec<_>>>()?;
            ctx.setattr("_saved_unpacked", PyTuple::new(py, saved)?)?;
            let args = grads.iter().map(|g| opt_tensor_obj(py, g)).collect::<PyResult<Vec<_>>>()?;
            let mut all = vec![ctx.clone().unbind()];
            all.extend(args);
            let res = self.backward.bind(py).call1(PyTuple::new(py, all)?);
            ctx.setattr("_saved_unpacked", py.None())?;
            let res = res?;
            let mut items: Vec<Bound<'_, PyAny>> = if let Ok(t) = res.cast::<PyTuple>() { t.iter().collect() } else { vec![res] };
            // torch: gradients past the forward's arguments are allowed when they are all None (a
            // forward with a default argument the call left out)
            if items.len() > self.n_args && items[self.n_args..].iter().all(|g| g.is_none()) {
                items.truncate(self.n_args);
            }
            if items.len() != self.n_args {
                return Err(PyRuntimeError::new_err(format!(
                    "function {} returned an incorrect number of gradients (expected {}, got {})",
                    self.name,
                    self.n_args,
                    items.len()
                )));
            }
            let mut out = Vec::with_capacity(self.tensor_positions.len());
            for (i, item) in items.iter().enumerate() {
                let is_tensor_input = self.tensor_positions.contains(&i);
                if item.is_none() {
                    if is_tensor_input {
                        out.push(None);
                    }
                    continue;
                }
                let Ok(t) = item.cast::<PyTensor>() else {
                    return Err(PyRuntimeError::new_err(format!("expected Variable or None (got {})", item.get_type().name()?)));
                };
                if !is_tensor_input {
                    return Err(PyRuntimeError::new_err(format!(
                        "function {} returned a gradient different than None at position {}, but the corresponding forward input was not a Variable",
                        self.name,
                        i + 1
                    )));
                }
                out.push(Some(t.get().t.clone()));
            }
            Ok(out)
        })
        .map(autograd::Grads::from_vec)
        .map_err(py_error)
    }
    fn release(&mut self) {
        if !self.saved.is_empty() {
            self.saved.clear();
            self.released = true;
            if let Some(ctx) = &self.ctx {
                Python::attach(|py| {
                    let _ = ctx.bind(py).setattr("_saved_released", true);
                });
            }
        }
    }
}

fn ctx_list<'py>(ctx: &Bound<'py, PyAny>, name: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match ctx.getattr(name) {
        Ok(v) if !v.is_none() => v.try_iter()?.collect(),
        _ => Ok(vec![]),
    }
}

/// Record the node of a custom Function after its forward ran; returns the outputs to hand
/// back (an output that is an unmodified input becomes an alias, as in torch).
#[pyfunction]
pub fn _function_record<'py>(py: Python<'py>, ctx: &Bound<'py, PyAny>, cls: &Bound<'py, PyAny>, args: &Bound<'py, PyTuple>, outputs: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyList>> {
    let mut inputs: Vec<Tensor> = Vec::new();
    let mut positions = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if let Ok(t) = a.cast::<PyTensor>() {
            inputs.push(t.get().t.clone());
            positions.push(i);
        }
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let result = PyList::empty(py);
    if !ops::needs_grad(&refs) {
        for o in outputs.iter() {
            result.append(o)?;
        }
        return Ok(result);
    }
    let dirty: Vec<Tensor> = ctx_list(ctx, "dirty_tensors")?.iter().filter_map(|d| d.cast::<PyTensor>().ok().map(|t| t.get().t.clone())).collect();
    if dirty.iter().any(|d| d.is_leaf() && d.requires_grad()) {
        return Err(PyRuntimeError::new_err("a leaf Variable that requires grad has been used in an in-place operation."));
    }
    let non_diff: Vec<Tensor> = ctx_list(ctx, "non_differentiable")?.iter().filter_map(|d| d.cast::<PyTensor>().ok().map(|t| t.get().t.clone())).collect();
    // outputs: aliases for inputs returned as they are
    // (output, differentiable, an input returned as-is)
    let mut outs: Vec<Option<(Tensor, bool, bool)>> = Vec::new();
    let mut out_objs: Vec<Bound<'py, PyAny>> = Vec::new();
    for o in outputs.iter() {
        match o.cast::<PyTensor>() {
            Ok(t) => {
                let t = t.get().t.clone();
                let diff = !non_diff.iter().any(|n| n.ptr_eq(&t)) && t.dtype().is_float();
                let is_input = inputs.iter().any(|i| i.ptr_eq(&t));
                let is_dirty = dirty.iter().any(|d| d.ptr_eq(&t));
                if is_input && !is_dirty {
                    let a = t.alias();
                    out_objs.push(wrap(py, a.clone())?.into_bound(py).into_any());
                    outs.push(Some((a, diff, true)));
                } else {
                    out_objs.push(o.clone());
                    outs.push(Some((t, diff, false)));
                }
            }
            Err(_) => {
                out_objs.push(o.clone());
                outs.push(None);
            }
        }
    }
    // every tensor output has a gradient slot (non-differentiable ones receive zeros); only
    // differentiable ones get the node as grad_fn
    let tensor_outs: Vec<Tensor> = outs.iter().flatten().map(|o| o.0.clone()).collect();
    let out_flags: Vec<(bool, bool)> = outs.iter().flatten().map(|o| (o.1, o.2)).collect();
    // saved tensors: outputs are kept without their grad_fn (no cycle through this node)
    let mut saved = Vec::new();
    for s in ctx_list(ctx, "to_save")? {
        if s.is_none() {
            saved.push(None);
            continue;
        }
        let t = s.cast::<PyTensor>().map_err(|_| pyo3::exceptions::PyTypeError::new_err("save_for_backward can only save tensors or None"))?.get().t.clone();
        saved.push(Some(match tensor_outs.iter().position(|o| o.ptr_eq(&t)) {
            Some(k) => SavedTensor::output(&t, k as u32),
            None => SavedTensor::input(&t),
        }));
    }
    let name = format!("{}Backward", cls.getattr("__name__")?.extract::<String>()?);
    let materialize = ctx.getattr("materialize_grads").ok().and_then(|v| v.extract::<bool>().ok()).unwrap_or(true);
    let backward = cls.getattr("backward")?.unbind();
    let node = Node::new(
        autograd::NodeKind { name: autograd::node::intern_name(&name), saved: &[] },
        Box::new(PyFunctionBackward {
            name,
            ctx: Some(ctx.clone().unbind()),
            backward,
            saved,
            released: false,
            n_args: args.len(),
            tensor_positions: positions,
            materialize,
        }),
        inputs.iter().map(|t| t.gradient_edge()).collect(),
        inputs.iter().map(ops::meta).collect(),
        tensor_outs.iter().map(ops::meta).collect::<SmallVec<_>>(),
    );
    let node = NodeRef::new(node);
    for (k, (t, &(diff, returned_input))) in tensor_outs.iter().zip(out_flags.iter()).enumerate() {
        if diff {
            t.set_grad_fn(Some(node.clone()), k as u32);
            if returned_input {
                t.set_function_view();
            }
        }
    }
    ctx.setattr("to_save", py.None())?;
    for o in out_objs {
        result.append(o)?;
    }
    Ok(result)
}

/// The ctx of a tensor's custom-Function node, when the tensor alone owns that node: what the
/// garbage collector may see through (Note [ctx cycles]: `ctx.out = out` makes a cycle
/// through Rust that Python's collector could not otherwise find).
pub fn with_sole_ctx<R>(t: &Tensor, f: impl FnOnce(&mut Option<Py<PyAny>>) -> R) -> Option<R> {
    let node = t.sole_grad_fn()?;
    let mut func = node.try_func()?;
    let pf = func.as_any_mut()?.downcast_mut::<PyFunctionBackward>()?;
    Some(f(&mut pf.ctx))
}

/// Wrap a Python callable `hook(grad) -> grad | None` as an engine tensor hook.
pub fn tensor_hook(f: Py<PyAny>) -> TensorHook {
    Arc::new(move |g: &Tensor| {
        Python::attach(|py| -> PyResult<Option<Tensor>> {
            let r = f.bind(py).call1((wrap(py, g.clone())?,))?;
            if r.is_none() {
                return Ok(None);
            }
            let t = r.cast::<PyTensor>().map_err(|_| pyo3::exceptions::PyTypeError::new_err("a tensor hook must return a Tensor or None"))?.get().t.clone();
            check_hook_value(&hook_name(f.bind(py)), g, &t)?;
            Ok(Some(t))
        })
        .map_err(py_error)
    })
}

fn grads_tuple<'py>(py: Python<'py>, gs: &[Option<Tensor>]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, gs.iter().map(|g| opt_tensor_obj(py, g)).collect::<PyResult<Vec<_>>>()?)
}

/// A hook's name as torch's errors give it (its `__name__`).
fn hook_name(f: &Bound<'_, PyAny>) -> String {
    f.getattr("__name__").map(|n| n.to_string()).unwrap_or_else(|_| "hook".into())
}

/// torch's checks of a value a hook returned in place of `was`: the same size, dtype and device.
fn check_hook_value(name: &str, was: &Tensor, got: &Tensor) -> PyResult<()> {
    if got.shape() != was.shape() {
        return Err(PyRuntimeError::new_err(format!("hook '{}' has changed the size of value", name)));
    }
    if got.dtype() != was.dtype() || got.device() != was.device() {
        let legacy = |t: &Tensor| format!("torch.{}{}", if t.is_cuda() { "cuda." } else { "" }, t.dtype().legacy_name());
        return Err(PyRuntimeError::new_err(format!("hook '{}' has changed the type of value (was {} got {})", name, legacy(was), legacy(got))));
    }
    Ok(())
}

fn grads_from(r: &Bound<'_, PyAny>, was: &[Option<Tensor>], name: &str) -> PyResult<Option<Vec<Option<Tensor>>>> {
    if r.is_none() {
        return Ok(None);
    }
    // torch takes a tuple only (a Tensor returned in its place is iterable, but is a TypeError there)
    if !r.is_instance_of::<PyTuple>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("expected tuple, but hook returned '{}'", r.get_type().name()?)));
    }
    let n = was.len();
    let items: Vec<Bound<'_, PyAny>> = r.try_iter()?.collect::<PyResult<_>>()?;
    if items.len() != n {
        return Err(PyRuntimeError::new_err(format!("hook '{}' has returned an incorrect number of values (got {}, but expected {})", name, items.len(), n)));
    }
    let mut got: Vec<Option<Tensor>> = Vec::with_capacity(n);
    for (w, item) in was.iter().zip(items.iter()) {
        if item.is_none() {
            got.push(None);
            continue;
        }
        let g = item
            .cast::<PyTensor>()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("expected Variable, but hook returned '{}'", item.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?
            .get()
            .t
            .clone();
        // torch's check of each returned value: a slot without a gradient stays without one
        let Some(w) = w else {
            return Err(PyRuntimeError::new_err("can't replace a None gradient with a non-None value"));
        };
        check_hook_value(name, w, &g)?;
        got.push(Some(g));
    }
    Ok(Some(got))
}

pub fn pre_hook(f: Py<PyAny>) -> autograd::PreHook {
    Arc::new(move |gout: &[Option<Tensor>]| {
        Python::attach(|py| grads_from(&f.bind(py).call1((grads_tuple(py, gout)?,))?, gout, &hook_name(f.bind(py)))).map_err(py_error)
    })
}

pub fn post_hook(f: Py<PyAny>) -> autograd::PostHook {
    Arc::new(move |gin: &[Option<Tensor>], gout: &[Option<Tensor>]| {
        Python::attach(|py| grads_from(&f.bind(py).call1((grads_tuple(py, gin)?, grads_tuple(py, gout)?))?, gin, &hook_name(f.bind(py)))).map_err(py_error)
    })
}

/// `handle.remove()` for every kind of hook.
#[pyclass(name = "RemovableHandle", module = "ferrograd.utils.hooks", frozen)]
pub struct PyHandle {
    pub tensor: Option<Tensor>,
    pub node: Option<NodeRef>,
    #[pyo3(get)]
    pub id: u64,
}

#[pymethods]
impl PyHandle {
    fn remove(&self) {
        if let Some(t) = &self.tensor {
            t.remove_hook(self.id);
        }
        if let Some(n) = &self.node {
            n.remove_hook(self.id);
        }
    }
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }
    fn __exit__(&self, _a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) {
        self.remove();
    }
}
