//! Graph nodes: the backward function of one op application, its edges to the nodes (or leaves)
//! of its inputs, and the values it saved.

use super::tape::NodeRef;
use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor, TensorImpl};
use parking_lot::lock_api::RawMutex as _;
use parking_lot::{Mutex, RawMutex};
// (`Mutex` guards the name and extras tables)
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
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

/// The shape, dtype and device of one input or output of a node, in 16 bytes: most are 0-2-d
/// with dims below 2^32, kept inline beside the dtype and device; others on the heap.
#[derive(Clone, PartialEq)]
pub struct TensorMeta(MetaRepr);

#[derive(Clone, PartialEq)]
enum MetaRepr {
    D0 { dtype: DType, device: crate::backend::Device },
    D1 { dims: [usize; 1], dtype: DType, device: crate::backend::Device },
    D2 { dims: [u32; 2], dtype: DType, device: crate::backend::Device },
    Heap(Box<(Box<[usize]>, DType, crate::backend::Device)>),
}

const _: () = assert!(std::mem::size_of::<TensorMeta>() == 16);

/// A meta's dims: inline, or borrowed from the heap entry.
pub enum MetaShape<'a> {
    Inline([usize; 2], u8),
    Heap(&'a [usize]),
}

impl std::ops::Deref for MetaShape<'_> {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        match self {
            MetaShape::Inline(d, n) => &d[..*n as usize],
            MetaShape::Heap(d) => d,
        }
    }
}

impl TensorMeta {
    pub fn new(shape: &[usize], dtype: DType, device: crate::backend::Device) -> TensorMeta {
        TensorMeta(match *shape {
            [] => MetaRepr::D0 { dtype, device },
            [a] => MetaRepr::D1 { dims: [a], dtype, device },
            [a, b] if a <= u32::MAX as usize && b <= u32::MAX as usize => MetaRepr::D2 { dims: [a as u32, b as u32], dtype, device },
            _ => MetaRepr::Heap(Box::new((shape.into(), dtype, device))),
        })
    }
    /// A 0-dim CPU tensor of `dtype` (a Python number's operand).
    const fn number(dtype: DType) -> TensorMeta {
        TensorMeta(MetaRepr::D0 { dtype, device: crate::backend::Device::Cpu })
    }
    #[inline]
    pub fn shape(&self) -> MetaShape<'_> {
        match &self.0 {
            MetaRepr::D0 { .. } => MetaShape::Inline([0, 0], 0),
            MetaRepr::D1 { dims, .. } => MetaShape::Inline([dims[0], 0], 1),
            MetaRepr::D2 { dims, .. } => MetaShape::Inline([dims[0] as usize, dims[1] as usize], 2),
            MetaRepr::Heap(h) => MetaShape::Heap(&h.0),
        }
    }
    /// Elements of the tensor it describes.
    #[inline]
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }
    #[inline]
    pub fn is_scalar(&self) -> bool {
        matches!(self.0, MetaRepr::D0 { .. })
    }
    #[inline]
    pub fn dtype(&self) -> DType {
        match &self.0 {
            MetaRepr::D0 { dtype, .. } | MetaRepr::D1 { dtype, .. } | MetaRepr::D2 { dtype, .. } => *dtype,
            MetaRepr::Heap(h) => h.1,
        }
    }
    #[inline]
    pub fn device(&self) -> crate::backend::Device {
        match &self.0 {
            MetaRepr::D0 { device, .. } | MetaRepr::D1 { device, .. } | MetaRepr::D2 { device, .. } => *device,
            MetaRepr::Heap(h) => h.2,
        }
    }
}

impl std::fmt::Debug for TensorMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMeta").field("shape", &&*self.shape()).field("dtype", &self.dtype()).field("device", &self.device()).finish()
    }
}

/// The metas of 0-dim CPU tensors by dtype (indexed by the dtype's discriminant), for number
/// operands.
const _: () = assert!(DType::F64 as usize == 9 && DType::Bool as usize == 0 && DType::F32 as usize == 8);
static NUMBER_METAS: [TensorMeta; 10] = [
    TensorMeta::number(DType::Bool),
    TensorMeta::number(DType::U8),
    TensorMeta::number(DType::I8),
    TensorMeta::number(DType::I16),
    TensorMeta::number(DType::I32),
    TensorMeta::number(DType::I64),
    TensorMeta::number(DType::F16),
    TensorMeta::number(DType::BF16),
    TensorMeta::number(DType::F32),
    TensorMeta::number(DType::F64),
];

/// Note [Node metas]: a node keeps the meta of each input and output (gradients are conformed to
/// them); most nodes' are all alike (elementwise ops on tensors of one shape and dtype), so one
/// entry serves them all, except at most one 0-dim CPU input without an edge (a Python number's
/// operand: `x * 2.0`), whose dtype the node keeps beside it. Others keep each (inputs, then
/// outputs) in a block of their own.
enum Metas {
    Uniform(TensorMeta),
    /// (A thin box: the enum is then no larger than one meta.)
    Each(Box<SmallVec<[TensorMeta; 3]>>),
}

const _: () = assert!(std::mem::size_of::<Metas>() == 16);

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
    /// Saved value `i` from now on kept as `pack` makes it and restored by `unpack` when backward
    /// reads it (torch's `SavedTensor.register_hooks`).
    fn register_saved_hooks(&mut self, node: &NodeRef, _i: usize, _pack: PackHook, _unpack: UnpackHook) -> Result<()> {
        Err(Error::runtime(format!("the saved values of {} take no hooks", node.name())))
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
    /// The numbers this node keeps for graph inspection, by torch's names (`exponent` of
    /// PowBackward0, `alpha`/`beta` of AddmmBackward0): read as `grad_fn._saved_<name>`.
    fn saved_scalars(&self) -> &[(&'static str, SavedScalar)] {
        &[]
    }
}

/// A number a node shows as a saved value (torch's `_saved_exponent`, `_saved_alpha`, ...).
#[derive(Clone, Debug, PartialEq)]
pub enum SavedScalar {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A string argument (GeluBackward0's `_saved_approximate`).
    Str(&'static str),
    /// A list of ints, shown as a tuple (NativeLayerNormBackward0's `_saved_normalized_shape`).
    Ints(Vec<i64>),
    /// An optional argument left out (ScaledDotProductFlashAttentionForCpuBackward0's `_saved_scale`).
    None,
}

/// A backward function with the numbers it shows (Note [Saved names]); only the ops that have
/// them pay, inside the box the function already lives in (no allocation of their own for up to
/// two, e.g. addmm's alpha and beta on every linear layer).
pub struct WithScalars<B> {
    pub inner: B,
    pub scalars: SmallVec<[(&'static str, SavedScalar); 2]>,
}

impl<B: Backward> Backward for WithScalars<B> {
    fn apply(&mut self, node: &NodeRef, grads: Grads) -> Result<Grads> {
        self.inner.apply(node, grads)
    }
    fn release(&mut self) {
        self.inner.release()
    }
    fn materialize_grads(&self) -> bool {
        self.inner.materialize_grads()
    }
    fn runs_without_grads(&self) -> bool {
        self.inner.runs_without_grads()
    }
    fn saved_tensors(&self, node: &NodeRef) -> Result<Vec<Tensor>> {
        self.inner.saved_tensors(node)
    }
    fn register_saved_hooks(&mut self, node: &NodeRef, i: usize, pack: PackHook, unpack: UnpackHook) -> Result<()> {
        self.inner.register_saved_hooks(node, i, pack, unpack)
    }
    fn parallel_safe(&self) -> bool {
        self.inner.parallel_safe()
    }
    fn apply_scalar(&mut self, node: &NodeRef, g: f64, dt: DType) -> Option<Result<[f64; 2]>> {
        self.inner.apply_scalar(node, g, dt)
    }
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        self.inner.as_any_mut()
    }
    fn saved_scalars(&self) -> &[(&'static str, SavedScalar)] {
        &self.scalars
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
    /// The binding layer's per-node value (Python's `grad_fn.metadata` dict), kept as long as
    /// the node.
    pub metadata: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

static HOOK_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

pub fn next_hook_id() -> u64 {
    HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

/// A graph node: the arena slot is the node, 96 bytes (a node with its own reference count,
/// mutexes, name, hook pointer and lists of edges and metas took 208). Note [Node metas]; Note
/// [Node names]; the hooks of the few nodes that have any are kept in a side table
/// (`EXTRAS`), found through the node's address, with a flag here.
pub struct Node {
    /// References (NodeRef), managed by the tape.
    pub(crate) rc: AtomicU32,
    n_outputs: u32,
    /// The creation sequence number, 48 bits (Note [Node names]).
    seq_lo: u32,
    seq_hi: u16,
    /// The backward function's lock, and the hooks' (a byte each).
    func_lock: RawMutex,
    extras_lock: RawMutex,
    has_extras: std::sync::atomic::AtomicBool,
    /// For a uniform meta block: the input that is a number operand (1 + its index, 0 for none)
    /// and that number's dtype.
    number_at: u8,
    number_dtype: DType,
    /// Edges inline (0-2), or `HEAP_EDGES`: in a block of their own.
    n_edges: u8,
    name_id: u32,
    /// A backward pass's claim on this node (Note [Engine marks] in tape.rs).
    pub(crate) mark: AtomicU64,
    func: UnsafeCell<Box<dyn Backward>>,
    edges: EdgeStore,
    metas: Metas,
}

const _: () = assert!(std::mem::size_of::<Node>() == 96);

const HEAP_EDGES: u8 = u8::MAX;

/// A node's edges: up to two inline, more in a block (which of the two, `Node::n_edges` says).
union EdgeStore {
    inline: std::mem::ManuallyDrop<[Option<Edge>; 2]>,
    heap: std::mem::ManuallyDrop<Box<[Option<Edge>]>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: `n_edges` says which field is live
        unsafe {
            if self.n_edges == HEAP_EDGES {
                std::mem::ManuallyDrop::drop(&mut self.edges.heap);
            } else {
                std::mem::ManuallyDrop::drop(&mut self.edges.inline);
            }
        }
        if *self.has_extras.get_mut() {
            // (dropped outside the table's lock: hooks may hold Python objects whose release
            // frees other nodes)
            let ex = EXTRAS.lock().as_mut().and_then(|m| m.remove(&(self as *const Node as usize)));
            drop(ex);
        }
    }
}

/// The hooks, retained gradients and anomaly stacks of nodes that have any, by node address.
static EXTRAS: Mutex<Option<HashMap<usize, Box<UnsafeCell<NodeExtras>>>>> = Mutex::new(None);

/// Note [Node names]: a node keeps its grad_fn name as a 32-bit id (the name itself, a fat
/// pointer, took 16 bytes a node), interned once per distinct name and call site; the names
/// live for the process in chunks that never move, so reading one takes no lock. The sequence
/// number is 48 bits: 2.8e14 nodes, years of a process making millions a second.
const NAME_CHUNK: usize = 1024;
static NAME_CHUNKS: [std::sync::OnceLock<Box<[std::sync::OnceLock<NodeKind>]>>; 4096] = [const { std::sync::OnceLock::new() }; 4096];
static NAME_IDS: Mutex<Option<HashMap<NodeKind, u32>>> = Mutex::new(None);
static NAME_OVERFLOW: Mutex<Vec<NodeKind>> = Mutex::new(Vec::new());

/// Note [Saved names]: what a node kind tells graph inspection about itself: its grad_fn name and
/// the names torch gives its saved values (`_saved_self`, `_saved_other`, ...), in the order the
/// node keeps them; a node that saved fewer values than it names has None for the rest. The names
/// are written where the op records its node, beside the values (`saved!(self = .., other = ..)`),
/// and travel with the name's id (Note [Node names]): a node pays no byte for them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct NodeKind {
    pub name: &'static str,
    pub saved: &'static [&'static str],
}

thread_local! {
    /// Ids by the name's address and length and the saved names' address (literals at their
    /// call sites).
    static NAME_CACHE: std::cell::RefCell<HashMap<(usize, usize, usize), u32>> = std::cell::RefCell::new(HashMap::default());
}

fn name_id(kind: NodeKind) -> u32 {
    let key = (kind.name.as_ptr() as usize, kind.name.len(), kind.saved.as_ptr() as usize ^ kind.saved.len() << 48);
    if let Some(id) = NAME_CACHE.with(|c| c.borrow().get(&key).copied()) {
        return id;
    }
    let id = {
        let mut ids = NAME_IDS.lock();
        let ids = ids.get_or_insert_with(Default::default);
        match ids.get(&kind) {
            Some(&id) => id,
            None => {
                let id = ids.len() as u32;
                match NAME_CHUNKS.get(id as usize / NAME_CHUNK) {
                    Some(c) => {
                        let chunk = c.get_or_init(|| (0..NAME_CHUNK).map(|_| std::sync::OnceLock::new()).collect());
                        let _ = chunk[id as usize % NAME_CHUNK].set(kind);
                    }
                    // (past 4 million distinct names, behind a lock)
                    None => NAME_OVERFLOW.lock().push(kind),
                }
                ids.insert(kind, id);
                id
            }
        }
    };
    NAME_CACHE.with(|c| c.borrow_mut().insert(key, id));
    id
}

fn kind_of(id: u32) -> NodeKind {
    let found = match NAME_CHUNKS.get(id as usize / NAME_CHUNK) {
        Some(c) => c.get().and_then(|c| c[id as usize % NAME_CHUNK].get().copied()),
        None => NAME_OVERFLOW.lock().get(id as usize - NAME_CHUNKS.len() * NAME_CHUNK).copied(),
    };
    // every id handed out was stored first, under NAME_IDS's lock
    found.unwrap_or(NodeKind { name: "UnknownBackward", saved: &[] })
}

/// Keys are node addresses, name pointers and names.
type HashMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<super::AddrHasher>>;

// The UnsafeCells are only reached through their locks.
unsafe impl Sync for Node {}
unsafe impl Send for Node {}

/// A locked part of a node; unlocks when dropped.
pub struct Locked<'a, T> {
    lock: &'a RawMutex,
    value: &'a mut T,
}

impl<T> std::ops::Deref for Locked<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> std::ops::DerefMut for Locked<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

impl<T> Drop for Locked<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: made only by `lock`/`try_lock` below, which hold the lock
        unsafe { self.lock.unlock() }
    }
}

#[inline]
fn lock<'a, T>(lock: &'a RawMutex, cell: &'a UnsafeCell<T>) -> Locked<'a, T> {
    lock.lock();
    // SAFETY: the lock is held until the guard drops
    Locked { lock, value: unsafe { &mut *cell.get() } }
}

#[inline]
fn try_lock<'a, T>(lock: &'a RawMutex, cell: &'a UnsafeCell<T>) -> Option<Locked<'a, T>> {
    // SAFETY: as `lock`
    lock.try_lock().then(|| Locked { lock, value: unsafe { &mut *cell.get() } })
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
        kind: NodeKind,
        func: Box<dyn Backward>,
        edges: SmallVec<[Option<Edge>; 2]>,
        inputs: SmallVec<[TensorMeta; 2]>,
        outputs: SmallVec<[TensorMeta; 1]>,
    ) -> Node {
        // (2^32 outputs would be 2^32 tensors of 200+ bytes each: no machine holds them)
        let n_outputs = outputs.len() as u32;
        let (metas, number_at, number_dtype) = Node::metas(&edges, inputs, outputs);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let (n_edges, edges) = if edges.len() <= 2 {
            let mut it = edges.into_iter();
            let n = it.len() as u8;
            (n, EdgeStore { inline: std::mem::ManuallyDrop::new([it.next().flatten(), it.next().flatten()]) })
        } else {
            (HEAP_EDGES, EdgeStore { heap: std::mem::ManuallyDrop::new(edges.into_vec().into_boxed_slice()) })
        };
        Node {
            rc: AtomicU32::new(0),
            n_outputs,
            seq_lo: seq as u32,
            seq_hi: (seq >> 32) as u16,
            func_lock: RawMutex::INIT,
            extras_lock: RawMutex::INIT,
            has_extras: std::sync::atomic::AtomicBool::new(false),
            number_at,
            number_dtype,
            n_edges,
            name_id: name_id(kind),
            mark: AtomicU64::new(0),
            func: UnsafeCell::new(func),
            edges,
            metas,
        }
    }
    /// The creation sequence number (the engine runs higher numbers first).
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq_lo as u64 | (self.seq_hi as u64) << 32
    }
    /// One per input: the node (and output) or leaf its gradient goes to, or None.
    #[inline]
    pub fn edges(&self) -> &[Option<Edge>] {
        // SAFETY: `n_edges` says which field is live
        unsafe {
            if self.n_edges == HEAP_EDGES {
                &self.edges.heap
            } else {
                &self.edges.inline[..self.n_edges as usize]
            }
        }
    }
    /// Anomaly mode: remember where the forward op was called (once the node has its place).
    pub(crate) fn placed(&self) {
        if super::is_anomaly_enabled() {
            if let Some(stack) = super::capture_stack() {
                self.with_extras(|ex| ex.forward_stack = Some(stack));
            }
        }
    }
    /// Note [Node metas].
    fn metas(edges: &[Option<Edge>], inputs: SmallVec<[TensorMeta; 2]>, outputs: SmallVec<[TensorMeta; 1]>) -> (Metas, u8, DType) {
        if let Some(first) = outputs.first() {
            if outputs.iter().all(|m| m == first) {
                let mut number = None;
                let mut uniform = true;
                for (i, m) in inputs.iter().enumerate() {
                    if m == first {
                        continue;
                    }
                    let is_number = m.is_scalar() && m.device() == crate::backend::Device::Cpu && edges.get(i).is_some_and(|e| e.is_none());
                    if is_number && number.is_none() && i < 255 {
                        number = Some((i as u8 + 1, m.dtype()));
                    } else {
                        uniform = false;
                        break;
                    }
                }
                if uniform {
                    let (at, dt) = number.unwrap_or((0, DType::Bool));
                    return (Metas::Uniform(first.clone()), at, dt);
                }
            }
        }
        (Metas::Each(Box::new(inputs.into_iter().chain(outputs).collect())), 0, DType::Bool)
    }
    /// The meta of input `i` (one per edge).
    #[inline]
    pub fn input_meta(&self, i: usize) -> &TensorMeta {
        match &self.metas {
            Metas::Uniform(m) => {
                if self.number_at as usize == i + 1 {
                    &NUMBER_METAS[self.number_dtype as usize]
                } else {
                    m
                }
            }
            Metas::Each(ms) => &ms[i],
        }
    }
    /// The meta of output `k`.
    #[inline]
    pub fn output_meta(&self, k: usize) -> &TensorMeta {
        match &self.metas {
            Metas::Uniform(m) => m,
            Metas::Each(ms) => &ms[self.edges().len() + k],
        }
    }
    #[inline]
    pub fn num_outputs(&self) -> usize {
        self.n_outputs as usize
    }
    /// The metas of the inputs, then of the outputs.
    pub fn metas_iter(&self) -> impl Iterator<Item = &TensorMeta> {
        (0..self.edges().len()).map(|i| self.input_meta(i)).chain((0..self.num_outputs()).map(|k| self.output_meta(k)))
    }
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(kind_of(self.name_id).name)
    }
    /// The names of its saved values (Note [Saved names]).
    pub fn saved_names(&self) -> &'static [&'static str] {
        kind_of(self.name_id).saved
    }
    /// The backward function, locked.
    #[inline]
    pub fn func(&self) -> Locked<'_, Box<dyn Backward>> {
        lock(&self.func_lock, &self.func)
    }
    /// The backward function, unless it is running (locked elsewhere).
    pub fn try_func(&self) -> Option<Locked<'_, Box<dyn Backward>>> {
        try_lock(&self.func_lock, &self.func)
    }
    /// Whether the node has hooks, retained gradients or an anomaly stack.
    #[inline]
    pub fn has_extras(&self) -> bool {
        self.has_extras.load(Ordering::Acquire)
    }
    /// A copy of the node's extras, if it has any.
    pub fn extras(&self) -> Option<Box<NodeExtras>> {
        if !self.has_extras() {
            return None;
        }
        self.existing_extras(|ex| Box::new(ex.clone()))
    }
    /// `f` on the node's extras (made if it has none), under the node's hooks lock.
    pub fn with_extras<R>(&self, f: impl FnOnce(&mut NodeExtras) -> R) -> R {
        self.extras_lock.lock();
        let key = self as *const Node as usize;
        let ptr = {
            let mut table = EXTRAS.lock();
            let entry = table.get_or_insert_with(Default::default).entry(key).or_insert_with(|| Box::new(UnsafeCell::new(NodeExtras::default())));
            entry.get()
        };
        self.has_extras.store(true, Ordering::Release);
        // SAFETY: the entry lives until this node drops (not while a reference is held), and
        // the hooks lock is held
        let r = f(unsafe { &mut *ptr });
        unsafe { self.extras_lock.unlock() };
        r
    }
    /// `f` on the node's extras if it has any, under the node's hooks lock.
    fn existing_extras<R>(&self, f: impl FnOnce(&mut NodeExtras) -> R) -> Option<R> {
        if !self.has_extras() {
            return None;
        }
        self.extras_lock.lock();
        let ptr = EXTRAS.lock().as_ref().and_then(|m| m.get(&(self as *const Node as usize)).map(|e| e.get()));
        // SAFETY: as `with_extras`
        let r = ptr.map(|p| f(unsafe { &mut *p }));
        unsafe { self.extras_lock.unlock() };
        r
    }
    /// Remove a hook by id from every list.
    pub fn remove_hook(&self, id: u64) {
        // (the removed hooks drop after the lock is released: they may hold Python objects)
        let removed = self.existing_extras(|ex| {
            let t: Vec<_> = ex.tensor_hooks.extract_if(.., |h| h.0 == id).collect();
            let pre: Vec<_> = ex.pre_hooks.extract_if(.., |h| h.0 == id).collect();
            let post: Vec<_> = ex.post_hooks.extract_if(.., |h| h.0 == id).collect();
            (t, pre, post)
        });
        drop(removed);
    }
}

/// A tensor saved for backward, with the version it had when saved: 24 bytes.
///
/// An op's own output is saved without its grad_fn (which is this node) so no node owns a cycle
/// back to itself; `unpack` re-attaches it.
pub struct SavedTensor {
    value: Value,
    version: u64,
}

/// Note [Saved outputs]: a saved output is most often a fresh contiguous result (tanh, exp,
/// sigmoid, softmax save theirs), and a tensor alias of it costs a whole TensorImpl (224 bytes
/// on the heap) for what the node mostly knows already: its output's shape and dtype are in the
/// node's metadata. So an output that is its buffer's contiguous tail, under the buffer's own
/// version counter, keeps the buffer and offset only, inline, and `unpack` makes the tensor from
/// them and the node's metadata; other outputs keep an alias.
enum Value {
    /// An input, or any tensor that is not one of the node's outputs.
    Input(Tensor),
    /// Output `nr` of the node, as an alias without grad_fn.
    Output(Tensor, u32),
    /// Output `nr` of the node: its buffer alone (Note [Saved outputs]); it counts the bytes
    /// from `offset` to the buffer's end in `saved_bytes`.
    /// (Only for an output under its storage's version counter: Note [Version counters].)
    OutputBuffer { storage: std::sync::Arc<crate::tensor::Storage>, offset: u32, nr: u16 },
    /// Packed by a `saved_tensors_hooks` pack hook (rare, boxed).
    Packed(Box<Packed>),
}

const _: () = assert!(std::mem::size_of::<SavedTensor>() == 24);

/// What `pack` returned, the `unpack` to turn it back into a tensor, and for an output its number.
struct Packed {
    value: Box<dyn std::any::Any + Send + Sync>,
    unpack: UnpackHook,
    output_nr: Option<u32>,
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

fn buffer_bytes(storage: &crate::tensor::Storage, offset: u32) -> u64 {
    ((storage.len() - offset as usize) * storage.dtype().size()) as u64
}

impl Drop for SavedTensor {
    fn drop(&mut self) {
        let bytes = match &self.value {
            Value::Input(t) | Value::Output(t, _) => tensor_bytes(t),
            Value::OutputBuffer { storage, offset, .. } => buffer_bytes(storage, *offset),
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
        if let Some((pack, unpack)) = hooks {
            // hooks are off while a pack hook runs (its own ops must not be packed again)
            let (value, unpack) = match with_hooks_paused(|| pack(&if output_nr.is_some() { t.alias() } else { t.clone() })) {
                Ok(p) => (p, unpack),
                // keep the failure for the moment backward asks for the value
                Err(e) => {
                    let msg = e.msg.clone();
                    let fail: UnpackHook = std::sync::Arc::new(move |_| Err(Error::runtime(msg.clone())));
                    (Box::new(()) as Box<dyn std::any::Any + Send + Sync>, fail)
                }
            };
            return SavedTensor { value: Value::Packed(Box::new(Packed { value, unpack, output_nr })), version };
        }
        let bytes = tensor_bytes(t);
        SAVED_BYTES.fetch_add(bytes, Ordering::Relaxed);
        let value = match output_nr {
            None => Value::Input(t.clone()),
            Some(nr) => {
                let d = t.read_data();
                let l = &d.layout;
                let tail = u32::try_from(l.offset).ok().filter(|&o| buffer_bytes(&d.storage, o) == bytes);
                match (tail, u16::try_from(nr)) {
                    (Some(offset), Ok(nr))
                        if !t.is_wrapped_number() && matches!(d.version, crate::tensor::Version::Storage) && l.strides[..] == crate::tensor::layout::contiguous_strides(&l.shape)[..] =>
                    {
                        Value::OutputBuffer { storage: d.storage.clone(), offset, nr }
                    }
                    _ => {
                        drop(d);
                        Value::Output(t.alias(), nr)
                    }
                }
            }
        };
        SavedTensor { value, version }
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
    /// Keep the value as `pack` makes it from now on, `unpack` restoring it (torch's
    /// `SavedTensor.register_hooks`: once per saved value; pack runs now).
    pub fn repack(&mut self, node: &NodeRef, pack: PackHook, unpack: UnpackHook) -> Result<()> {
        if matches!(self.value, Value::Packed(_)) {
            return Err(Error::runtime("SavedTensor hooks have already been set for this SavedTensor. Please don't call register_hooks on it more than once."));
        }
        let output_nr = match &self.value {
            Value::Output(_, nr) => Some(*nr),
            Value::OutputBuffer { nr, .. } => Some(*nr as u32),
            _ => None,
        };
        let t = self.unpack_as(node, false)?;
        let value = with_hooks_paused(|| pack(&t))?;
        let version = self.version;
        *self = SavedTensor { value: Value::Packed(Box::new(Packed { value, unpack, output_nr })), version };
        Ok(())
    }
    /// `unpack`, where the caller may ask not to re-attach an output's grad_fn (a rule running
    /// with grad mode off never records, so the saved value itself serves: no new alias).
    fn unpack_as(&self, node: &NodeRef, attach: bool) -> Result<Tensor> {
        let (tensor, nr) = match &self.value {
            Value::Input(t) => (t.clone(), None),
            Value::Output(t, nr) => (t.clone(), Some(*nr)),
            Value::OutputBuffer { storage, offset, nr } => (buffer_tensor(storage, *offset, node.output_meta(*nr as usize))?, Some(*nr as u32)),
            Value::Packed(p) => {
                let t = (p.unpack)(p.value.as_ref())?;
                return Ok(match p.output_nr {
                    Some(nr) => t.alias_with_grad_fn(node.clone(), nr),
                    None => t,
                });
            }
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
        let read = |storage: &crate::tensor::Storage, offset: usize, version: u64| -> Option<Result<f64>> {
            let v = storage.float_at(offset, dt)?;
            if version != self.version {
                // the tensor path's error
                return Some(self.unpack_as(node, false).map(|_| v));
            }
            Some(Ok(v))
        };
        match &self.value {
            Value::OutputBuffer { storage, offset, nr } => {
                if node.output_meta(*nr as usize).numel() != 1 {
                    return None;
                }
                read(storage, *offset as usize, storage.version().load(Ordering::Relaxed))
            }
            Value::Input(t) | Value::Output(t, _) => {
                let d = t.read_data();
                if d.layout.numel() != 1 {
                    return None;
                }
                read(&d.storage, d.layout.offset, d.counter().load(Ordering::Relaxed))
            }
            Value::Packed(_) => None,
        }
    }
}

/// A saved output's buffer as a tensor of the node's output metadata `meta`.
fn buffer_tensor(storage: &std::sync::Arc<crate::tensor::Storage>, offset: u32, meta: &TensorMeta) -> Result<Tensor> {
    let layout = crate::tensor::Layout { offset: offset as usize, ..crate::tensor::Layout::contiguous(&meta.shape()) };
    let end = layout.offset + layout.numel();
    if storage.dtype() != meta.dtype() || end > storage.len() {
        return Err(Error::runtime(format!("internal error: a saved output's buffer does not hold its {:?} {}", &*meta.shape(), meta.dtype())));
    }
    Ok(Tensor::from_data(crate::tensor::TensorData { storage: storage.clone(), layout, version: crate::tensor::Version::Storage }, false))
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
        self.node.edges().get(i).map(|e| e.is_some()).unwrap_or(false)
    }
    pub fn input_count(&self) -> usize {
        self.node.edges().len()
    }
    pub fn input_meta(&self, i: usize) -> &TensorMeta {
        self.node.input_meta(i)
    }
}

/// A rule's form on plain numbers (Note [Scalar lane] in engine.rs): the gradient of a one-input
/// node from its output's gradient `g` and its one saved value `s` (0 when it saved none), in the
/// node's float dtype. The same functions as the rule's fused kernels, so both paths agree to the bit.
pub struct ScalarRule {
    pub k32: fn(f32, f32) -> f32,
    pub k64: fn(f64, f64) -> f64,
}

/// Where a node's saved tensors live: inline in its backward function, exactly as many as the
/// op saves (`[SavedTensor; N]`, what `saved!` makes), or in a block of their own when the
/// number is known only at run time (a `SmallVec`).
pub trait SavedSet: Send + Sync + 'static {
    fn as_slice(&self) -> &[SavedTensor];
    fn as_mut_slice(&mut self) -> &mut [SavedTensor];
    /// Free them (after backward).
    fn clear(&mut self);
}

impl<const N: usize> SavedSet for Option<[SavedTensor; N]> {
    #[inline]
    fn as_slice(&self) -> &[SavedTensor] {
        match self {
            Some(a) => a,
            None => &[],
        }
    }
    fn as_mut_slice(&mut self) -> &mut [SavedTensor] {
        match self {
            Some(a) => a,
            None => &mut [],
        }
    }
    fn clear(&mut self) {
        *self = None;
    }
}

impl SavedSet for Box<[SavedTensor]> {
    #[inline]
    fn as_slice(&self) -> &[SavedTensor] {
        self
    }
    fn as_mut_slice(&mut self) -> &mut [SavedTensor] {
        self
    }
    fn clear(&mut self) {
        *self = Box::new([]);
    }
}

/// What a recorded op hands over as its saved tensors.
pub trait IntoSaved {
    type Set: SavedSet;
    fn into_set(self) -> Self::Set;
    /// Their names (Note [Saved names]).
    fn names(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Saved tensors with their names (what `saved!(self = .., other = ..)` makes): the names of all
/// the values the node may save, those saved first, in order (Note [Saved names]).
pub struct Named<S>(pub S, pub &'static [&'static str]);

impl<S: IntoSaved> IntoSaved for Named<S> {
    type Set = S::Set;
    #[inline]
    fn into_set(self) -> Self::Set {
        self.0.into_set()
    }
    #[inline]
    fn names(&self) -> &'static [&'static str] {
        self.1
    }
}

impl<const N: usize> IntoSaved for [SavedTensor; N] {
    type Set = Option<[SavedTensor; N]>;
    #[inline]
    fn into_set(self) -> Self::Set {
        Some(self)
    }
}

impl IntoSaved for SmallVec<[SavedTensor; 2]> {
    type Set = Box<[SavedTensor]>;
    fn into_set(self) -> Self::Set {
        if self.is_empty() {
            Box::new([])
        } else {
            self.into_vec().into_boxed_slice()
        }
    }
}

/// The backward function of every built-in op: saved tensors and a rule written with ferrograd's
/// own differentiable ops (so create_graph works for every op). One allocation, with the rule's
/// captures and the saved tensors inline (tanh's node kept three blocks: 96 bytes, now 48).
pub struct OpBackward<F, S, L = NoLane> {
    saved: S,
    /// The rule on plain numbers, where the op has one (one-element nodes of a scalar chain): a
    /// type, so it costs the node no bytes.
    lane: std::marker::PhantomData<L>,
    /// The rule holds saved values of its own (a Python number's value): released like saved
    /// tensors, so a second backward fails as torch's (which saves the number as a tensor).
    holds_values: bool,
    released: bool,
    rule: F,
}

/// An op's rule on plain numbers (Note [Scalar lane]), as a type.
pub trait Lane: Send + Sync + 'static {
    const RULE: Option<ScalarRule>;
}

/// No rule on plain numbers.
pub struct NoLane;

impl Lane for NoLane {
    const RULE: Option<ScalarRule> = None;
}

impl<F: Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static, S: SavedSet> OpBackward<F, S, NoLane> {
    #[inline]
    pub fn new(saved: impl IntoSaved<Set = S>, rule: F) -> OpBackward<F, S, NoLane> {
        OpBackward { saved: saved.into_set(), lane: std::marker::PhantomData, holds_values: false, released: false, rule }
    }
    /// The rule's form on plain numbers (Note [Scalar lane]).
    pub fn with_lane<L: Lane>(self) -> OpBackward<F, S, L> {
        OpBackward { saved: self.saved, lane: std::marker::PhantomData, holds_values: self.holds_values, released: self.released, rule: self.rule }
    }
}

impl<F, S, L> OpBackward<F, S, L> {
    /// Mark the rule as holding saved values of its own (see `holds_values`).
    pub fn holding_values(mut self) -> OpBackward<F, S, L> {
        self.holds_values = true;
        self
    }
}

/// The output gradients a built-in rule sees: all present (the engine fills missing ones with
/// zeros for functions that `materialize_grads`).
pub fn materialized(node: &NodeRef, grads: Grads) -> Result<SmallVec<[Tensor; 1]>> {
    grads.into_iter().map(|g| g.ok_or_else(|| Error::runtime(format!("{}: missing output gradient", node.name())))).collect()
}

pub fn freed_error() -> Error {
    Error::runtime(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
    )
}

impl<F: Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static, S: SavedSet, L: Lane> Backward for OpBackward<F, S, L> {
    fn apply(&mut self, node: &NodeRef, grads: Grads) -> Result<Grads> {
        if self.released {
            return Err(freed_error());
        }
        let gs = materialized(node, grads)?;
        let ctx = Ctx { saved: self.saved.as_slice(), node };
        (self.rule)(&ctx, &gs)
    }
    /// Built-in rules are pure, unless a saved value was packed by `saved_tensors_hooks` (its
    /// unpack hook may be Python code, e.g. checkpoint's recomputation).
    fn parallel_safe(&self) -> bool {
        self.saved.as_slice().iter().all(|s| !matches!(s.value, Value::Packed(_)))
    }
    fn saved_tensors(&self, node: &NodeRef) -> Result<Vec<Tensor>> {
        if self.released {
            return Err(freed_error());
        }
        self.saved.as_slice().iter().map(|s| s.unpack(node)).collect()
    }
    fn register_saved_hooks(&mut self, node: &NodeRef, i: usize, pack: PackHook, unpack: UnpackHook) -> Result<()> {
        if self.released {
            return Err(freed_error());
        }
        match self.saved.as_mut_slice().get_mut(i) {
            Some(s) => s.repack(node, pack, unpack),
            None => Err(Error::runtime("None is forbidden")),
        }
    }
    fn apply_scalar(&mut self, node: &NodeRef, g: f64, dt: DType) -> Option<Result<[f64; 2]>> {
        let lane = L::RULE?;
        if self.released {
            return Some(Err(freed_error()));
        }
        let saved = self.saved.as_slice();
        if node.edges().len() != 1 || saved.len() > 1 {
            return None;
        }
        let s = match saved.first() {
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
        if !self.saved.as_slice().is_empty() || self.holds_values {
            self.saved.clear();
            self.released = true;
        }
    }
}
