//! Graph nodes: the backward function of one op application, its edges to the nodes (or leaves)
//! of its inputs, and the values it saved.

use super::tape::NodeRef;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor, TensorImpl};
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;

/// Where the gradient of one input goes: the node that produced it (and which of that node's
/// outputs it was), or the leaf tensor whose `.grad` accumulates it.
#[derive(Clone)]
pub enum Edge {
    Node(NodeRef, u32),
    Leaf(Tensor),
}

impl Edge {
    pub fn key(&self) -> usize {
        match self {
            Edge::Node(n, _) => n.addr(),
            Edge::Leaf(t) => t.addr(),
        }
    }
}

/// The shape, dtype and device of one input or output of a node, in 24 bytes: a node keeps one
/// per input and output, and most are 0-2-d, so up to two dims are stored inline beside the
/// dtype and device (a struct of a SmallVec, a dtype and a device took 32).
#[derive(Clone)]
pub struct TensorMeta(MetaRepr);

#[derive(Clone)]
enum MetaRepr {
    D0 { dtype: DType, device: crate::backend::Device },
    D1 { dims: [usize; 1], dtype: DType, device: crate::backend::Device },
    D2 { dims: [usize; 2], dtype: DType, device: crate::backend::Device },
    Heap { dims: Box<[usize]>, dtype: DType, device: crate::backend::Device },
}

impl TensorMeta {
    pub fn new(shape: &[usize], dtype: DType, device: crate::backend::Device) -> TensorMeta {
        TensorMeta(match *shape {
            [] => MetaRepr::D0 { dtype, device },
            [a] => MetaRepr::D1 { dims: [a], dtype, device },
            [a, b] => MetaRepr::D2 { dims: [a, b], dtype, device },
            _ => MetaRepr::Heap { dims: shape.into(), dtype, device },
        })
    }
    #[inline]
    pub fn shape(&self) -> &[usize] {
        match &self.0 {
            MetaRepr::D0 { .. } => &[],
            MetaRepr::D1 { dims, .. } => dims,
            MetaRepr::D2 { dims, .. } => dims,
            MetaRepr::Heap { dims, .. } => dims,
        }
    }
    #[inline]
    pub fn dtype(&self) -> DType {
        match &self.0 {
            MetaRepr::D0 { dtype, .. } | MetaRepr::D1 { dtype, .. } | MetaRepr::D2 { dtype, .. } | MetaRepr::Heap { dtype, .. } => *dtype,
        }
    }
    #[inline]
    pub fn device(&self) -> crate::backend::Device {
        match &self.0 {
            MetaRepr::D0 { device, .. } | MetaRepr::D1 { device, .. } | MetaRepr::D2 { device, .. } | MetaRepr::Heap { device, .. } => *device,
        }
    }
}

impl std::fmt::Debug for TensorMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMeta").field("shape", &self.shape()).field("dtype", &self.dtype()).field("device", &self.device()).finish()
    }
}

/// A backward function. Built-in ops use `OpBackward`; custom Python Functions implement this
/// trait in the binding layer.
pub trait Backward: Send + Sync {
    /// Gradients of the inputs (one per edge) from the gradients of the outputs.
    fn apply(&mut self, node: &NodeRef, grads: Grads) -> Result<Grads>;
    /// Free saved values (after a backward without retain_graph).
    fn release(&mut self);
    /// Whether a missing output gradient should be replaced by zeros before `apply`.
    fn materialize_grads(&self) -> bool {
        true
    }
    /// Whether `apply` runs even when no gradient reached the node. The engine skips built-in
    /// nodes then (their inputs get no gradient, as torch's); torch calls a custom Function's
    /// backward anyway (with zeros, or Nones without materialize_grads).
    fn runs_without_grads(&self) -> bool {
        false
    }
    /// The tensors saved for backward (graph inspection); an error once they were freed.
    fn saved_tensors(&self, _node: &NodeRef) -> Result<Vec<Tensor>> {
        Ok(Vec::new())
    }
    /// Whether `apply` may run on a worker thread, concurrently with other nodes: it computes
    /// its result and nothing else (no Python, no hooks). Note [Parallel backward] in engine.rs.
    fn parallel_safe(&self) -> bool {
        false
    }
    /// Note [Scalar lane] (engine.rs): the gradients of the inputs as plain numbers, from the
    /// gradient `g` of the node's one output, a one-element CPU tensor of dtype `dt` (float32 or
    /// float64): values for the inputs in edge order (only those with an edge are read), in `dt`.
    /// `None` when this function has no such form; the engine then goes through tensors.
    fn apply_scalar(&mut self, _node: &NodeRef, _g: f64, _dt: DType) -> Option<Result<[f64; 2]>> {
        None
    }
    /// For the binding layer to reach its own backward types (garbage-collector support).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// A hook on one gradient: may return a replacement.
pub type TensorHook = std::sync::Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A node pre-hook: sees the gradients of the node's outputs, may replace them.
pub type PreHook = std::sync::Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
/// A node post-hook: sees (grad_inputs, grad_outputs), may replace grad_inputs.
pub type PostHook = std::sync::Arc<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// Hooks and retained gradients; rare, so kept out of line. Hooks carry an id for removal.
#[derive(Default, Clone)]
pub struct NodeExtras {
    /// Non-leaf tensors with retain_grad(): (output_nr, tensor).
    pub retained: Vec<(u32, Weak<TensorImpl>)>,
    /// Tensor.register_hook on a non-leaf output: (id, output_nr, hook).
    pub tensor_hooks: Vec<(u64, u32, TensorHook)>,
    pub pre_hooks: Vec<(u64, PreHook)>,
    pub post_hooks: Vec<(u64, PostHook)>,
    /// Anomaly mode: where the forward op was called.
    pub forward_stack: Option<String>,
}

static HOOK_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub fn next_hook_id() -> u64 {
    HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

pub struct Node {
    /// torch's grad_fn name ("MulBackward0"); kept here, not in the backward function, so it
    /// can be read while the function runs (its mutex is held then). A custom Function's name
    /// is interned (`intern_name`): 16 bytes a node instead of a Cow's 24.
    name: &'static str,
    pub(crate) func: Mutex<Box<dyn Backward>>,
    pub edges: SmallVec<[Option<Edge>; 2]>,
    pub inputs: SmallVec<[TensorMeta; 2]>,
    pub outputs: SmallVec<[TensorMeta; 1]>,
    pub seq: u64,
    pub extras: Mutex<Option<Box<NodeExtras>>>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A grad_fn name made at run time (a custom Function's "<class name>Backward") as a `&'static
/// str`: each distinct name is stored once for the life of the process.
pub fn intern_name(name: &str) -> &'static str {
    static NAMES: Mutex<Option<std::collections::HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock();
    let set = names.get_or_insert_with(Default::default);
    if let Some(&n) = set.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(n);
    n
}

impl Node {
    pub fn new(
        name: &'static str,
        func: Box<dyn Backward>,
        edges: SmallVec<[Option<Edge>; 2]>,
        inputs: SmallVec<[TensorMeta; 2]>,
        outputs: SmallVec<[TensorMeta; 1]>,
    ) -> Node {
        let extras = if super::is_anomaly_enabled() {
            super::capture_stack().map(|s| Box::new(NodeExtras { forward_stack: Some(s), ..Default::default() }))
        } else {
            None
        };
        Node {
            name,
            func: Mutex::new(func),
            edges,
            inputs,
            outputs,
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            extras: Mutex::new(extras),
        }
    }
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.name)
    }
    pub fn with_extras<R>(&self, f: impl FnOnce(&mut NodeExtras) -> R) -> R {
        let mut ex = self.extras.lock();
        f(ex.get_or_insert_with(Default::default))
    }
    /// Remove a hook by id from every list.
    pub fn remove_hook(&self, id: u64) {
        if let Some(ex) = self.extras.lock().as_mut() {
            ex.tensor_hooks.retain(|h| h.0 != id);
            ex.pre_hooks.retain(|h| h.0 != id);
            ex.post_hooks.retain(|h| h.0 != id);
        }
    }
}

/// A tensor saved for backward, with the version it had when saved.
///
/// An op's own output is saved without its grad_fn (which is this node) so no node owns a cycle
/// back to itself; `unpack` re-attaches it.
pub struct SavedTensor {
    value: Value,
    version: u64,
    /// Set when saved under `saved_tensors_hooks`: what `pack` returned, and the `unpack`.
    /// (Boxed: rare, and a node's SmallVec of saved values stays small without it.)
    packed: Option<Box<(Box<dyn std::any::Any + Send + Sync>, UnpackHook)>>,
}

/// Note [Saved outputs]: a saved output is most often a fresh contiguous result (tanh, exp,
/// sigmoid, softmax save theirs), and a tensor alias of it costs a whole TensorImpl (224 bytes
/// on the heap) for what the node mostly knows already: its output's shape and dtype are in the
/// node's metadata. So a contiguous output keeps its buffer, version counter and offset only
/// (32 bytes), and `unpack` makes the tensor from them and the node's metadata; other layouts
/// keep an alias.
enum Value {
    /// An input, or any tensor that is not one of the node's outputs.
    Input(Tensor),
    /// Output `nr` of the node, as an alias without grad_fn.
    Output(Tensor, u32),
    /// Output `nr` of the node, contiguous: its buffer alone (Note [Saved outputs]).
    OutputBuffer(Box<OutputBuffer>, u32),
    /// Packed by a hook (the hook decides what is kept); `Some(nr)` for output `nr`.
    Packed(Option<u32>),
}

struct OutputBuffer {
    storage: std::sync::Arc<crate::tensor::Storage>,
    version: std::sync::Arc<AtomicU64>,
    offset: usize,
    /// The bytes it counts in `saved_bytes`.
    bytes: u64,
}

/// Bytes of the tensors currently saved for backward (counted per saved reference: a buffer saved
/// by two nodes counts twice; values packed by hooks are not counted).
static SAVED_BYTES: AtomicU64 = AtomicU64::new(0);

pub fn saved_bytes() -> u64 {
    SAVED_BYTES.load(Ordering::Relaxed)
}

fn tensor_bytes(t: &Tensor) -> u64 {
    (t.numel() * t.dtype().size()) as u64
}

impl Drop for SavedTensor {
    fn drop(&mut self) {
        let bytes = match &self.value {
            Value::Input(t) | Value::Output(t, _) => tensor_bytes(t),
            Value::OutputBuffer(b, _) => b.bytes,
            Value::Packed(_) => return,
        };
        SAVED_BYTES.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// `saved_tensors_hooks(pack, unpack)`: pack sees each tensor as it is saved; unpack turns the
/// packed value back into a tensor when backward needs it.
pub type PackHook = std::sync::Arc<dyn Fn(&Tensor) -> Result<Box<dyn std::any::Any + Send + Sync>> + Send + Sync>;
pub type UnpackHook = std::sync::Arc<dyn Fn(&(dyn std::any::Any + Send + Sync)) -> Result<Tensor> + Send + Sync>;

thread_local! {
    static SAVED_HOOKS: std::cell::RefCell<Vec<(PackHook, UnpackHook)>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub fn push_saved_tensors_hooks(pack: PackHook, unpack: UnpackHook) {
    SAVED_HOOKS.with(|h| h.borrow_mut().push((pack, unpack)));
}

pub fn pop_saved_tensors_hooks() {
    SAVED_HOOKS.with(|h| {
        h.borrow_mut().pop();
    });
}

fn with_hooks_paused<R>(f: impl FnOnce() -> R) -> R {
    let saved = SAVED_HOOKS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    let r = f();
    SAVED_HOOKS.with(|h| *h.borrow_mut() = saved);
    r
}

impl SavedTensor {
    fn make(t: &Tensor, output_nr: Option<u32>) -> SavedTensor {
        let version = t.version();
        let hooks = SAVED_HOOKS.with(|h| h.borrow().last().cloned());
        // hooks are off while a pack hook runs (its own ops must not be packed again)
        let packed = hooks.map(|(pack, unpack)| match with_hooks_paused(|| pack(&if output_nr.is_some() { t.alias() } else { t.clone() })) {
            Ok(p) => (p, unpack),
            // keep the failure for the moment backward asks for the value
            Err(e) => {
                let msg = e.msg.clone();
                let fail: UnpackHook = std::sync::Arc::new(move |_| Err(Error::runtime(msg.clone())));
                (Box::new(()) as Box<dyn std::any::Any + Send + Sync>, fail)
            }
        });
        if let Some(p) = packed {
            return SavedTensor { value: Value::Packed(output_nr), version, packed: Some(Box::new(p)) };
        }
        let bytes = tensor_bytes(t);
        SAVED_BYTES.fetch_add(bytes, Ordering::Relaxed);
        let value = match output_nr {
            None => Value::Input(t.clone()),
            Some(nr) => {
                let d = t.read_data();
                let l = &d.layout;
                if !t.is_wrapped_number() && l.strides[..] == crate::tensor::layout::contiguous_strides(&l.shape)[..] {
                    let b = OutputBuffer { storage: d.storage.clone(), version: d.version.clone(), offset: l.offset, bytes };
                    Value::OutputBuffer(Box::new(b), nr)
                } else {
                    drop(d);
                    Value::Output(t.alias(), nr)
                }
            }
        };
        SavedTensor { value, version, packed: None }
    }
    pub fn input(t: &Tensor) -> SavedTensor {
        SavedTensor::make(t, None)
    }
    pub fn output(t: &Tensor, output_nr: u32) -> SavedTensor {
        SavedTensor::make(t, Some(output_nr))
    }
    pub fn unpack(&self, node: &NodeRef) -> Result<Tensor> {
        self.unpack_as(node, true)
    }
    /// `unpack`, where the caller may ask not to re-attach an output's grad_fn (a rule running
    /// with grad mode off never records, so the saved value itself serves: no new alias).
    fn unpack_as(&self, node: &NodeRef, attach: bool) -> Result<Tensor> {
        if let Some(p) = &self.packed {
            let (value, unpack) = &**p;
            let t = unpack(value.as_ref())?;
            return Ok(match self.value {
                Value::Packed(Some(nr)) => t.alias_with_grad_fn(node.clone(), nr),
                _ => t,
            });
        }
        let (tensor, nr) = match &self.value {
            Value::Input(t) => (t.clone(), None),
            Value::Output(t, nr) => (t.clone(), Some(*nr)),
            Value::OutputBuffer(b, nr) => (b.tensor(&node.outputs[*nr as usize])?, Some(*nr)),
            Value::Packed(_) => return Err(freed_error()),
        };
        let now = tensor.version();
        if now != self.version {
            let (nr, which) = match nr {
                Some(nr) => (nr, node.name()),
                None => (0, Cow::Borrowed("an input")),
            };
            let shape = tensor.shape();
            return Err(Error::runtime(format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.{} {:?}], which is output {} of {}, is at version {}; expected version {} instead. Hint: the backtrace further above can help identify the culprit.",
                tensor.dtype().legacy_name(), &shape[..], nr, which, now, self.version
            )));
        }
        Ok(match nr {
            Some(nr) if attach => tensor.alias_with_grad_fn(node.clone(), nr),
            _ => tensor,
        })
    }
}

impl SavedTensor {
    /// The saved value as a number, when it is one element of a float32/float64 CPU tensor of
    /// dtype `dt` (the scalar lane's read: no tensor is made); version-checked as `unpack`.
    fn scalar(&self, node: &NodeRef, dt: DType) -> Option<Result<f64>> {
        if self.packed.is_some() {
            return None;
        }
        let read = |storage: &crate::tensor::Storage, offset: usize, version: u64| -> Option<Result<f64>> {
            if storage.dtype() != dt || storage.device() != crate::backend::Device::Cpu || offset >= storage.len() {
                return None;
            }
            if version != self.version {
                return Some(self.unpack_as(node, false).map(|_| 0.0));
            }
            Some(Ok(match dt {
                DType::F32 => storage.slice::<f32>()[offset] as f64,
                DType::F64 => storage.slice::<f64>()[offset],
                _ => return None,
            }))
        };
        match &self.value {
            Value::OutputBuffer(b, nr) => {
                if node.outputs[*nr as usize].shape().iter().product::<usize>() != 1 {
                    return None;
                }
                read(&b.storage, b.offset, b.version.load(Ordering::Relaxed))
            }
            Value::Input(t) | Value::Output(t, _) => {
                let d = t.read_data();
                if d.layout.numel() != 1 {
                    return None;
                }
                read(&d.storage, d.layout.offset, d.version.load(Ordering::Relaxed))
            }
            Value::Packed(_) => None,
        }
    }
}

impl OutputBuffer {
    /// The saved output as a tensor of the node's output metadata `meta`.
    fn tensor(&self, meta: &TensorMeta) -> Result<Tensor> {
        let layout = crate::tensor::Layout { offset: self.offset, ..crate::tensor::Layout::contiguous(meta.shape()) };
        let end = self.offset + layout.numel();
        if self.storage.dtype() != meta.dtype() || end > self.storage.len() {
            return Err(Error::runtime(format!("internal error: a saved output's buffer does not hold its {:?} {}", meta.shape(), meta.dtype())));
        }
        Ok(Tensor::from_data(crate::tensor::TensorData { storage: self.storage.clone(), layout, version: self.version.clone() }, false))
    }
}

pub type Grads = SmallVec<[Option<Tensor>; 2]>;

/// What a built-in backward rule sees: the saved tensors and which inputs need a gradient.
pub struct Ctx<'a> {
    saved: &'a [SavedTensor],
    node: &'a NodeRef,
}

impl Ctx<'_> {
    /// Saved tensor `i`, version-checked.
    pub fn saved(&self, i: usize) -> Result<Tensor> {
        self.saved[i].unpack_as(self.node, super::is_grad_enabled())
    }
    /// Does input `i` need a gradient?
    pub fn needs(&self, i: usize) -> bool {
        self.node.edges.get(i).map(|e| e.is_some()).unwrap_or(false)
    }
    pub fn input_count(&self) -> usize {
        self.node.edges.len()
    }
    pub fn input_meta(&self, i: usize) -> &TensorMeta {
        &self.node.inputs[i]
    }
}

/// A rule's form on plain numbers (Note [Scalar lane] in engine.rs): the gradient of a one-input
/// node from its output's gradient `g` and its one saved value `s` (0 when it saved none), in the
/// node's float dtype. The same functions as the rule's fused kernels, so both paths agree to the bit.
pub struct ScalarRule {
    pub k32: fn(f32, f32) -> f32,
    pub k64: fn(f64, f64) -> f64,
}

/// The backward function of every built-in op: saved tensors and a rule written with ferrograd's
/// own differentiable ops (so create_graph works for every op). One allocation with the rule's
/// captures inline (the rule was a box of its own: 64 bytes a node more); the saved tensors sit
/// in a block of their own, exactly as many as the op saved (none for most nodes).
pub struct OpBackward<F> {
    saved: Box<[SavedTensor]>,
    /// The rule on plain numbers, where the op has one (one-element nodes of a scalar chain).
    lane: Option<&'static ScalarRule>,
    /// The rule holds saved values of its own (a Python number's value): released like saved
    /// tensors, so a second backward fails as torch's (which saves the number as a tensor).
    holds_values: bool,
    released: bool,
    rule: F,
}

impl<F: Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static> OpBackward<F> {
    #[inline]
    pub fn new(saved: SmallVec<[SavedTensor; 2]>, rule: F) -> OpBackward<F> {
        let saved: Box<[SavedTensor]> = if saved.is_empty() { Box::new([]) } else { saved.into_vec().into_boxed_slice() };
        OpBackward { saved, lane: None, holds_values: false, released: false, rule }
    }
    /// Mark the rule as holding saved values of its own (see `holds_values`).
    pub fn holding_values(mut self) -> OpBackward<F> {
        self.holds_values = true;
        self
    }
    /// The rule's form on plain numbers (Note [Scalar lane]).
    pub fn with_lane(mut self, lane: &'static ScalarRule) -> OpBackward<F> {
        self.lane = Some(lane);
        self
    }
}

pub fn freed_error() -> Error {
    Error::runtime(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
    )
}

impl<F: Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static> Backward for OpBackward<F> {
    fn apply(&mut self, node: &NodeRef, grads: Grads) -> Result<Grads> {
        if self.released {
            return Err(freed_error());
        }
        // Built-in rules see materialized gradients (the engine fills missing ones with zeros).
        let mut gs: SmallVec<[Tensor; 1]> = SmallVec::with_capacity(grads.len());
        for g in grads {
            match g {
                Some(g) => gs.push(g),
                None => return Err(Error::runtime(format!("{}: missing output gradient", node.name()))),
            }
        }
        let ctx = Ctx { saved: &self.saved, node };
        (self.rule)(&ctx, &gs)
    }
    /// Built-in rules are pure, unless a saved value was packed by `saved_tensors_hooks` (its
    /// unpack hook may be Python code, e.g. checkpoint's recomputation).
    fn parallel_safe(&self) -> bool {
        self.saved.iter().all(|s| s.packed.is_none())
    }
    fn saved_tensors(&self, node: &NodeRef) -> Result<Vec<Tensor>> {
        if self.released {
            return Err(freed_error());
        }
        self.saved.iter().map(|s| s.unpack(node)).collect()
    }
    fn apply_scalar(&mut self, node: &NodeRef, g: f64, dt: DType) -> Option<Result<[f64; 2]>> {
        let lane = self.lane?;
        if self.released {
            return Some(Err(freed_error()));
        }
        if node.edges.len() != 1 || self.saved.len() > 1 {
            return None;
        }
        let s = match self.saved.first() {
            None => 0.0,
            Some(sv) => match sv.scalar(node, dt)? {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            },
        };
        Some(Ok(match dt {
            DType::F32 => [(lane.k32)(g as f32, s as f32) as f64, 0.0],
            DType::F64 => [(lane.k64)(g, s), 0.0],
            _ => return None,
        }))
    }
    fn release(&mut self) {
        if !self.saved.is_empty() || self.holds_values {
            if !self.saved.is_empty() {
                self.saved = Box::new([]);
            }
            self.released = true;
        }
    }
}
