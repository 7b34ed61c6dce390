//! Python views of the backward graph: grad_fn nodes (one Python class per node kind, as torch's
//! `MulBackward0`), AccumulateGrad for leaves, and the values a node saved (`_saved_self`, ...).
//!
//! Note [Graph object identity]: torch hands out one Python object per graph node for as long as
//! the node lives (`y.grad_fn is y.grad_fn`), one AccumulateGrad per leaf, and that
//! AccumulateGrad's `variable` is the leaf's own Python object (a Parameter stays a Parameter, so a
//! graph drawer can find its name by `id()`). The engine knows nothing of Python, so the binding
//! keeps side tables, keyed by the node's (or leaf's) address, of *weak* references to the Python
//! objects it made: a node costs nothing until Python reads it, a Python object never keeps a graph
//! alive through the table, and no cycle is made (the object holds the node; the table holds the
//! object weakly). An address is only looked up through a live object, which holds its node or
//! leaf, so a reused address cannot be mistaken for it (and the object's target is compared too).
//! Dead entries are swept when a table has doubled since its last sweep.

use super::args::wrap;
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::autograd::{Edge, NodeRef};
use crate::tensor::Tensor;
use parking_lot::Mutex;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType, PyWeakrefReference};
use std::collections::HashMap;

/// What a graph object stands for: a node, or a leaf's gradient accumulator.
pub enum Target {
    Node(NodeRef),
    Leaf(Tensor),
}

impl Target {
    fn addr(&self) -> usize {
        match self {
            Target::Node(n) => n.addr(),
            Target::Leaf(t) => t.addr(),
        }
    }
    fn same(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Node(a), Target::Node(b)) => a.ptr_eq(b),
            (Target::Leaf(a), Target::Leaf(b)) => a.ptr_eq(b),
            _ => false,
        }
    }
}

/// A node of the backward graph (`tensor.grad_fn`); each node kind is a subclass of its own name.
#[pyclass(name = "Node", module = "ferrograd.autograd.graph", frozen, subclass, weakref)]
pub struct PyNode {
    pub target: Target,
    metadata: PyOnceLock<Py<PyDict>>,
}

/// The gradient accumulator of a leaf tensor.
#[pyclass(name = "AccumulateGrad", module = "ferrograd.autograd.graph", extends = PyNode, frozen)]
pub struct PyAccumulateGrad {
    /// The leaf's own Python object (Note [Graph object identity]).
    #[pyo3(get)]
    pub variable: Py<PyTensor>,
}

/// A side table of Python objects by address, held weakly (Note [Graph object identity]).
struct Objects {
    map: HashMap<usize, Py<PyWeakrefReference>>,
    sweep_at: usize,
}

static NODES: Mutex<Option<Objects>> = Mutex::new(None);
static ACCUMULATORS: Mutex<Option<Objects>> = Mutex::new(None);
static LEAVES: Mutex<Option<Objects>> = Mutex::new(None);

/// The live object of `table` at `addr`, if any. (The lock is never held while Python code may
/// run: making an object may run the garbage collector, whose finalizers may read a grad_fn.)
fn cached<'py>(py: Python<'py>, table: &Mutex<Option<Objects>>, addr: usize) -> Option<Bound<'py, PyAny>> {
    let weak = table.lock().as_ref()?.map.get(&addr)?.clone_ref(py);
    weak.bind(py).upgrade()
}

fn remember(py: Python<'_>, table: &Mutex<Option<Objects>>, addr: usize, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let weak = PyWeakrefReference::new(obj)?.unbind();
    let mut dropped = Vec::new();
    {
        let mut guard = table.lock();
        let t = guard.get_or_insert_with(|| Objects { map: HashMap::new(), sweep_at: 64 });
        if let Some(old) = t.map.insert(addr, weak) {
            dropped.push(old);
        }
        if t.map.len() >= t.sweep_at {
            let dead: Vec<usize> = t.map.iter().filter(|(_, w)| w.bind(py).upgrade().is_none()).map(|(k, _)| *k).collect();
            dropped.extend(dead.iter().filter_map(|k| t.map.remove(k)));
            t.sweep_at = (2 * t.map.len()).max(64);
        }
    }
    drop(dropped);
    Ok(())
}

thread_local! {
    /// The target of the graph object being made (read by `PyNode::__new__`).
    static PENDING: std::cell::RefCell<Option<Target>> = const { std::cell::RefCell::new(None) };
}

/// The classes of node kinds, by grad_fn name: made once each, subclasses of Node.
static KIND_CLASSES: Mutex<Option<HashMap<String, Py<PyType>>>> = Mutex::new(None);

fn kind_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    if let Some(c) = KIND_CLASSES.lock().as_ref().and_then(|m| m.get(name)) {
        return Ok(c.bind(py).clone());
    }
    let ns = PyDict::new(py);
    ns.set_item("__module__", "builtins")?;
    ns.set_item("__slots__", PyTuple::empty(py))?;
    let cls = py.get_type::<PyType>().call1((name, (py.get_type::<PyNode>(),), ns))?.cast_into::<PyType>()?;
    let mut guard = KIND_CLASSES.lock();
    let map = guard.get_or_insert_with(HashMap::new);
    Ok(map.entry(name.to_owned()).or_insert_with(|| cls.unbind()).bind(py).clone())
}

/// The Python object of graph node `n`: the same one while it lives, of the class of its kind.
pub fn node_object(py: Python<'_>, n: &NodeRef) -> PyResult<Py<PyAny>> {
    if let Some(obj) = cached(py, &NODES, n.addr()) {
        if obj.cast::<PyNode>().is_ok_and(|o| matches!(&o.get().target, Target::Node(m) if m.ptr_eq(n))) {
            return Ok(obj.unbind());
        }
    }
    let cls = kind_class(py, &n.name())?;
    PENDING.with(|p| *p.borrow_mut() = Some(Target::Node(n.clone())));
    let made = cls.call0();
    PENDING.with(|p| p.borrow_mut().take());
    let obj = made?;
    remember(py, &NODES, n.addr(), &obj)?;
    Ok(obj.unbind())
}

/// The AccumulateGrad of leaf `t`: one per leaf while it lives.
pub fn accumulator_object(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    if let Some(obj) = cached(py, &ACCUMULATORS, t.addr()) {
        if obj.cast::<PyNode>().is_ok_and(|o| matches!(&o.get().target, Target::Leaf(l) if l.ptr_eq(t))) {
            return Ok(obj.unbind());
        }
    }
    let variable = leaf_object(py, t)?;
    let init = PyClassInitializer::from(PyNode { target: Target::Leaf(t.clone()), metadata: PyOnceLock::new() }).add_subclass(PyAccumulateGrad { variable });
    let obj = Bound::new(py, init)?.into_any();
    remember(py, &ACCUMULATORS, t.addr(), &obj)?;
    Ok(obj.unbind())
}

/// Note that `obj` is the Python object of its tensor, a leaf that requires grad (made with
/// requires_grad=True, or given it): AccumulateGrad.variable returns it.
pub fn register_leaf(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    let t = &obj.get().t;
    if !t.is_leaf() {
        return Ok(());
    }
    if cached(obj.py(), &LEAVES, t.addr()).is_some_and(|o| o.is(obj)) {
        return Ok(());
    }
    remember(obj.py(), &LEAVES, t.addr(), obj.as_any())
}

/// The Python object of leaf `t`: the registered one while it lives, else a new one (registered).
fn leaf_object(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyTensor>> {
    if let Some(obj) = cached(py, &LEAVES, t.addr()) {
        if let Ok(o) = obj.cast::<PyTensor>() {
            if o.get().t.ptr_eq(t) {
                return Ok(o.clone().unbind());
            }
        }
    }
    let obj = wrap(py, t.clone())?;
    register_leaf(obj.bind(py))?;
    Ok(obj)
}

/// A saved value as Python sees it: a leaf that requires grad is saved as itself, and torch gives
/// back the leaf's own object (`mm(w, v).grad_fn._saved_self is w`), so a graph drawer keyed by
/// `id()` finds the parameter it already drew; anything else is a new object.
fn saved_object(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    if t.is_leaf() && t.requires_grad() {
        if let Some(obj) = cached(py, &LEAVES, t.addr()) {
            if obj.cast::<PyTensor>().is_ok_and(|o| o.get().t.ptr_eq(&t)) {
                return Ok(obj.unbind());
            }
        }
    }
    Ok(wrap(py, t)?.into_any())
}

pub fn edge_obj<'py>(py: Python<'py>, e: &Option<Edge>) -> PyResult<Bound<'py, PyTuple>> {
    let (obj, nr) = match e {
        None => (py.None(), 0i64),
        Some(Edge::Node(n, nr)) => (node_object(py, n)?, *nr as i64),
        Some(Edge::Leaf(t)) => (accumulator_object(py, t)?, 0),
    };
    PyTuple::new(py, [obj, nr.into_pyobject(py)?.into_any().unbind()])
}

impl PyNode {
    fn node(&self) -> PyResult<&NodeRef> {
        match &self.target {
            Target::Node(n) => Ok(n),
            Target::Leaf(_) => Err(PyRuntimeError::new_err("AccumulateGrad saves no tensors")),
        }
    }
    /// The names of the node's saved values (Note [Saved names] in autograd/node.rs).
    fn saved_names(&self) -> &'static [&'static str] {
        match &self.target {
            Target::Node(n) => n.saved_names(),
            Target::Leaf(_) => &[],
        }
    }
    /// A number the node shows as saved (`_saved_exponent`); None for any other name.
    fn saved_scalar(&self, name: &str) -> Option<crate::autograd::SavedScalar> {
        let Target::Node(node) = &self.target else { return None };
        let func = node.try_func()?;
        func.saved_scalars().iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }
    fn scalar_names(&self) -> Vec<&'static str> {
        let Target::Node(node) = &self.target else { return Vec::new() };
        node.try_func().map(|f| f.saved_scalars().iter().map(|(n, _)| *n).collect()).unwrap_or_default()
    }
    fn saved(&self) -> PyResult<Vec<Tensor>> {
        let node = self.node()?;
        let func = node.try_func().ok_or_else(|| PyRuntimeError::new_err(format!("the saved tensors of {} cannot be read while its backward runs", node.name())))?;
        let saved = func.saved_tensors(node).py()?;
        Ok(saved)
    }
}

#[pymethods]
impl PyNode {
    /// Graph objects are made by the engine only (torch: "cannot create 'MulBackward0' instances").
    #[new]
    #[classmethod]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(cls: &Bound<'_, PyType>, _args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyNode> {
        match PENDING.with(|p| p.borrow_mut().take()) {
            Some(target) => Ok(PyNode { target, metadata: PyOnceLock::new() }),
            None => Err(PyTypeError::new_err(format!("cannot create '{}' instances", cls.name()?))),
        }
    }
    fn name(&self) -> String {
        match &self.target {
            Target::Node(n) => n.name().into_owned(),
            Target::Leaf(_) => "torch::autograd::AccumulateGrad".to_owned(),
        }
    }
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        match &self.target {
            Target::Node(n) => {
                let items = n.edges().iter().map(|e| edge_obj(py, e)).collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, items)
            }
            Target::Leaf(_) => Ok(PyTuple::empty(py)),
        }
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        Ok(format!("<{} object at {:#x}>", slf.get_type().name()?, slf.as_ptr() as usize))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().map(|o| o.get().target.same(&self.target)).unwrap_or(false)
    }
    fn __hash__(&self) -> u64 {
        self.target.addr() as u64
    }
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<super::autograd_function::PyHandle> {
        let node = self.hooked("register_hook")?;
        let id = crate::autograd::next_hook_id();
        node.with_extras(|ex| ex.post_hooks.push((id, super::autograd_function::post_hook(hook))));
        Ok(super::autograd_function::PyHandle { tensor: None, node: Some(node.clone()), id })
    }
    fn register_prehook(&self, hook: Py<PyAny>) -> PyResult<super::autograd_function::PyHandle> {
        let node = self.hooked("register_prehook")?;
        let id = crate::autograd::next_hook_id();
        node.with_extras(|ex| ex.pre_hooks.push((id, super::autograd_function::pre_hook(hook))));
        Ok(super::autograd_function::PyHandle { tensor: None, node: Some(node.clone()), id })
    }
    /// The tensors this node saved for backward, in the order its rule uses them (torch exposes
    /// them one by one as `_saved_self`, `_saved_other`, ..., which these are too).
    /// RuntimeError once freed.
    #[getter]
    fn _saved_tensors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self.saved()?.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    /// A dict kept with the node (as torch's), not with this Python object.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let node = match &self.target {
            Target::Node(n) => n,
            Target::Leaf(_) => return Ok(self.metadata.get_or_init(py, || PyDict::new(py).unbind()).bind(py).clone()),
        };
        let kept = node.with_extras(|ex| ex.metadata.clone());
        if let Some(d) = kept.as_ref().and_then(|m| m.downcast_ref::<Py<PyDict>>()) {
            return Ok(d.bind(py).clone());
        }
        let d = PyDict::new(py);
        let value: std::sync::Arc<dyn std::any::Any + Send + Sync> = std::sync::Arc::new(d.clone().unbind());
        node.with_extras(|ex| ex.metadata = Some(value));
        Ok(d)
    }
    /// `_saved_<name>` (a tensor, or None where this node did not save it) and `_raw_saved_<name>`
    /// (a SavedTensor) for the names of its kind (Note [Saved names]).
    fn __getattr__(slf: &Bound<'_, Self>, attr: &str) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let names = this.saved_names();
        let (raw, name) = match (attr.strip_prefix("_raw_saved_"), attr.strip_prefix("_saved_")) {
            (Some(n), _) => (true, Some(n)),
            (None, n) => (false, n),
        };
        if let (false, Some(name)) = (raw, name) {
            if let Some(v) = this.saved_scalar(name) {
                return Ok(match v {
                    crate::autograd::SavedScalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
                    crate::autograd::SavedScalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
                    crate::autograd::SavedScalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind(),
                    crate::autograd::SavedScalar::Str(s) => pyo3::types::PyString::new(py, s).into_any().unbind(),
                    crate::autograd::SavedScalar::Ints(v) => PyTuple::new(py, v)?.into_any().unbind(),
                    crate::autograd::SavedScalar::None => py.None(),
                });
            }
        }
        let index = name.and_then(|name| names.iter().position(|n| *n == name));
        let Some(index) = index else {
            return Err(PyAttributeError::new_err(format!("'{}' object has no attribute '{}'", slf.get_type().name()?, attr)));
        };
        if raw {
            let node = this.node()?.clone();
            return Ok(Py::new(py, PySavedTensor { node, index })?.into_any());
        }
        match this.saved()?.into_iter().nth(index) {
            Some(t) => saved_object(py, t),
            None => Ok(py.None()),
        }
    }
    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        let py = slf.py();
        let mut names: Vec<String> = py.get_type::<pyo3::types::PyAny>().getattr("__dir__")?.call1((slf,))?.extract()?;
        // (ferrograd's `_saved_tensors` tuple stays readable, but unlisted: a drawer taking every
        // `_saved_*` attribute would show each value twice)
        names.retain(|n| n != "_saved_tensors");
        for n in slf.get().saved_names() {
            names.push(format!("_saved_{n}"));
            names.push(format!("_raw_saved_{n}"));
        }
        names.extend(slf.get().scalar_names().into_iter().map(|n| format!("_saved_{n}")));
        names.sort();
        names.dedup();
        Ok(names)
    }
}

impl PyNode {
    fn hooked(&self, what: &str) -> PyResult<&NodeRef> {
        match &self.target {
            Target::Node(n) => Ok(n),
            Target::Leaf(_) => Err(pyo3::exceptions::PyNotImplementedError::new_err(format!("AccumulateGrad.{what} is not supported: use the leaf tensor's register_hook"))),
        }
    }
}

/// One value a node saved for backward (`grad_fn._raw_saved_self`): torch's SavedTensor.
#[pyclass(name = "SavedTensor", module = "ferrograd.autograd.graph", frozen)]
pub struct PySavedTensor {
    node: NodeRef,
    index: usize,
}

#[pymethods]
impl PySavedTensor {
    /// From now on the value is kept as `pack_hook(tensor)` returns it and restored by
    /// `unpack_hook(packed)` when backward needs it; once per saved value.
    fn register_hooks(&self, py: Python<'_>, pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) -> PyResult<()> {
        if !pack_hook.bind(py).is_callable() || !unpack_hook.bind(py).is_callable() {
            return Err(PyTypeError::new_err("register_hooks: pack_hook and unpack_hook must be callable"));
        }
        let (pack, unpack) = super::functions::saved_hooks(pack_hook, unpack_hook);
        let mut func = self.node.try_func().ok_or_else(|| PyRuntimeError::new_err("register_hooks: the node's backward is running"))?;
        func.register_saved_hooks(&self.node, self.index, pack, unpack).py()
    }
    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!("<ferrograd.autograd.graph.SavedTensor object at {:#x}>", slf.as_ptr() as usize)
    }
}
