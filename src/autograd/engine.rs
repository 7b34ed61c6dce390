//! The backward engine.
//!
//! 1. Discover the nodes reachable from the roots and mark those that lead to something that
//!    needs a gradient (a target, or a leaf when accumulating).
//! 2. Count, for each needed node, the edges arriving from needed nodes.
//! 3. Run nodes whose count reached zero. Sequentially, one at a time, highest sequence number
//!    first (reverse creation order, as torch): every edge goes from a higher number to a lower
//!    one, so nodes run in globally descending order and the gradients summed into one input
//!    arrive by descending producer, then by edge. With several threads and at least two large
//!    nodes, independent ready nodes run concurrently and the sums keep that same order, so the
//!    gradients are bitwise those of the sequential run (Note [Parallel backward]).
//! 4. Undo broadcasting once per edge (sum to the input's shape) and cast to the input's dtype.
//! 5. Leaves accumulate into `.grad` when their last contribution arrived.
//!
//! Note [Parallel backward]: a node is *pure* when running it has no effect but its result: a
//! built-in rule (`Backward::parallel_safe`) with no hooks, retained grads or anomaly stack on
//! it. Everything else is *observable* (custom Python Functions, hooks). The calling thread
//! keeps a *frontier*: the highest-numbered node not yet finished, which is always ready.
//!  - Pure nodes run as soon as they are ready, ahead of the frontier (up to the next barrier,
//!    below): small ones on the calling thread; large ones (`PARALLEL_MIN_ELEMS`) as tasks on
//!    rayon's pool, unless one is all there is to run. The calling thread delivers each result
//!    as it comes back (no wave waits for its slowest node), and waits only when nothing else
//!    can move.
//!  - A node or leaf fed by several edges sums its contributions in the sequential order
//!    (descending producer sequence number, then edge index): a contribution that is not the
//!    next expected one waits in a pending list until those before it arrived (`Order`).
//!  - Observable work runs only at the frontier, so it happens in the sequential order: an
//!    observable node runs on the calling thread when it is the frontier; a leaf whose last
//!    contribution arrived is finished (hooks, `.grad`) once the frontier passes its producer.
//!  - Observable work is also a barrier: pure nodes the sequential engine runs after it wait for
//!    it (a hook may modify a tensor a later node saved, or add a hook to a later node).
//!  - A failing node stops the frontier. Nodes numbered above it still run (the sequential run
//!    would have run them, and one of them may fail first); the error returned is the one the
//!    sequential run would have met first.
//! With two threads or fewer (`ParallelBackward::Auto`: a large node's kernels already use both),
//! with create_graph (nodes recorded from several threads would get sequence numbers in thread
//! order), called from a pool thread, or with fewer than two large pure nodes, the engine runs
//! sequentially and none of this bookkeeping is built. No more nodes run on the pool at once than
//! the threads kernels may use.
//!
//! Note [Scalar lane]: on a chain of one-element ops (micrograd-style code), making a tensor
//! per gradient (four allocations, a dispatch, a lock) was most of a node's backward. A node
//! whose one output is a single float32/float64 CPU element, with no hooks or retained grads,
//! in a sequential run without create_graph, anomaly mode, profiler or captured non-leaves,
//! runs its rule on plain numbers when its backward function has that form
//! (`Backward::apply_scalar`: number ops and the one-input ops with a fused rule): the gradient
//! its producer delivered stays an `f64` holding a value of the node's dtype, and the values it
//! delivers to one-element nodes do too (rounded to the input's dtype, as `conform` casts). The
//! lane computes with the rules' own kernels, in the same dtype, and sums contributions in the
//! same order, so its gradients are those of the tensor path to the bit (tested). A gradient
//! becomes a tensor where anything else needs one: a leaf, a node without the form, a tensor
//! contribution arriving at the same input.

use super::node::{Edge, Grads, NodeExtras, TensorMeta};
use super::tape::{MarkToken, NodeRef};
use super::GradModeGuard;
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::{DType, Tensor};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc;

use super::AddrHasher;
type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<AddrHasher>>;

/// A node counts as large (worth a task on the pool) when its inputs and outputs hold at least
/// this many elements together; a pass runs in parallel only with two large pure nodes or more
/// (and enough threads, `ParallelBackward`). Measured on 2 cores before kernels split on the
/// team (benches/engine.rs, parallel_backward: 16 branches of 4 × (n×n matmul → tanh), float32): forced parallel,
/// n = 64 (nodes of ~12K elements) was 22% slower than sequential, n = 128 (32K-49K) 3% faster.
pub const PARALLEL_MIN_ELEMS: usize = 1 << 15;

/// When a backward pass may run independent nodes on several threads (Note [Parallel backward]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum ParallelBackward {
    /// Never: one node at a time on the calling thread.
    Off = 0,
    /// With more than two threads (the default). With two, a large node's kernels already split
    /// over both (GEMMs and elementwise kernels from 32K elements on), so running two nodes at
    /// once only adds the hand-offs to and from the pool: on the 2-core machine every branched
    /// graph measured was faster one node at a time (the backward of 16 branches of matmuls 4-6%,
    /// 16 branches of elementwise nodes 35-45%; on a 16-core Xeon limited to two threads too,
    /// that matmul graph's backward
    /// 20.4 vs 21.2 ms once a matrix product's two gradients ran at once, one per thread, where
    /// before it was 25.8 vs 20.9); with four threads and more, running them side by side was
    /// faster (the same graphs 1.2-2.5x on the Xeon).
    Auto = 1,
    /// Whenever there are two threads or more (tests of the parallel engine on small machines).
    Always = 2,
}

static PARALLEL: AtomicU8 = AtomicU8::new(ParallelBackward::Auto as u8);
static SLOT_MODE: AtomicBool = AtomicBool::new(true);

/// Let a plain backward run in slot mode (Note [Slot mode]; on by default). Off, every pass
/// keeps a row per node; the gradients are bitwise the same either way (tested). Returns the
/// previous setting.
pub fn set_slot_mode(on: bool) -> bool {
    SLOT_MODE.swap(on, Ordering::Relaxed)
}

/// When independent nodes of one backward may run on several threads (`Auto` by default); the
/// gradients are bitwise the same either way. Returns the previous setting.
pub fn set_parallel_backward(mode: ParallelBackward) -> ParallelBackward {
    match PARALLEL.swap(mode as u8, Ordering::Relaxed) {
        0 => ParallelBackward::Off,
        2 => ParallelBackward::Always,
        _ => ParallelBackward::Auto,
    }
}

/// Whether a pass may run nodes on the pool, with the threads kernels may use now.
fn parallel_allowed() -> bool {
    let threads = crate::backend::num_threads();
    match PARALLEL.load(Ordering::Relaxed) {
        0 => false,
        2 => threads > 1,
        _ => threads > 2,
    }
}

pub struct BackwardRequest<'a> {
    pub roots: &'a [Tensor],
    /// One per root; None means "ones" for single-element roots.
    pub grads: Vec<Option<Tensor>>,
    pub keep_graph: bool,
    pub create_graph: bool,
    /// Compute gradients only for these (autograd.grad, or backward(inputs=...)).
    pub inputs: Option<&'a [Tensor]>,
    /// Accumulate into `.grad` (backward) instead of returning the gradients (autograd.grad).
    pub accumulate: bool,
    pub allow_unused: bool,
}

/// Where a contribution comes from: (producer's sequence number, edge index).
type Key = (u64, u32);

/// Parallel runs only: the contributions a node or leaf with several incoming edges expects,
/// in the sequential order, and those that arrived early.
struct Order {
    keys: Vec<Key>,
    next: usize,
    pending: Vec<(Key, usize, Option<Tensor>)>,
}

/// A node's row in a pass: as a chain of millions of nodes has as many rows in table mode, all
/// in memory touched for the first time, it stays small (40 bytes).
struct NodeState {
    node: NodeRef,
    deps: u32,
    needed: bool,
    /// Note [Scalar lane]: the gradient of the node's one output as a value of its dtype, while
    /// no tensor gradient reached it (`tensors` is None then).
    scalar: Option<f64>,
    /// The gradients that reached its outputs as tensors, made on first use.
    tensors: Option<Box<TensorState>>,
}

/// A node's gradients as tensors: one slot per output, and in parallel runs the order its
/// contributions are summed in.
struct TensorState {
    buffer: Grads,
    order: Option<Box<Order>>,
}

impl NodeState {
    fn new(node: &NodeRef, needed: bool) -> NodeState {
        NodeState { node: node.clone(), deps: 0, needed, scalar: None, tensors: None }
    }
    /// The tensor state, made on first use (a number gradient becomes a tensor then).
    fn tensors(&mut self) -> &mut TensorState {
        let (node, scalar) = (&self.node, &mut self.scalar);
        self.tensors.get_or_insert_with(|| {
            let mut buffer = Grads::from_elem(None, node.num_outputs());
            if let Some(v) = scalar.take() {
                buffer[0] = Some(scalar_tensor(v, node.output_meta(0).dtype()));
            }
            Box::new(TensorState { buffer, order: None })
        })
    }
    /// The gradients of the outputs, as tensors, taken out of the row.
    fn take_buffer(&mut self) -> Grads {
        let buffer = std::mem::take(&mut self.tensors().buffer);
        self.tensors = None;
        buffer
    }
}

/// The states of one pass's nodes, each found through the mark in its slot (Note [Engine marks]
/// in tape.rs), or through the fallback map when another pass holds the node.
///
/// Note [Slot mode]: a plain `backward()` (no inputs=, accumulating into every leaf) that runs
/// sequentially needs no row per node: every node is needed, its dependency count fits in its
/// mark (beside the pass's token), and only nodes with gradients waiting need a row, kept by
/// address while they wait (one or two on a chain). Discovery then walks the graph with a
/// worklist as wide as the graph, not as deep (a chain of a million nodes kept a million
/// levels), and the pass touches no memory per node: on this machine, memory touched for the
/// first time cost more than the rest of a scalar chain's backward. A graph that another pass
/// holds a node of, or with two large nodes to run in parallel, goes the table way.
struct NodeTable {
    /// Rows in chunks of `TABLE_CHUNK`: growing never moves rows (a chain of millions of nodes
    /// would otherwise copy its table over and over into freshly faulted pages).
    chunks: Vec<Vec<NodeState>>,
    len: usize,
    token: MarkToken,
    fallback: HashMap<usize, usize>,
    /// Slot mode (Note [Slot mode]).
    slots: Option<SlotRows>,
}

/// Slot mode's rows: the nodes with gradients waiting, by address; the roots, to walk the graph
/// again to give back nodes that never ran (an error stopped the pass); claims and runs counted.
#[derive(Default)]
struct SlotRows {
    rows: HashMap<usize, NodeState>,
    roots: Vec<NodeRef>,
    claimed: usize,
    finished: usize,
}

const TABLE_CHUNK: usize = 4096;

impl NodeTable {
    fn new() -> NodeTable {
        NodeTable { chunks: Vec::new(), len: 0, token: MarkToken::next(), fallback: HashMap::default(), slots: None }
    }
    /// Note [Slot mode]: claim the graph below `roots`, each node's mark counting the edges that
    /// lead to it; leaves as the table way. False (nothing claimed) when the table way must run.
    fn discover_slots(&mut self, roots: &[Edge], on_leaf: &mut dyn FnMut(&Tensor), may_parallel: bool) -> Result<bool> {
        let token = self.token;
        let slots = self.slots.insert(SlotRows::default());
        let mut stack: Vec<NodeRef> = Vec::new();
        let mut fits = true;
        for e in roots {
            if let Edge::Node(n, _) = e {
                if n.claim(token, 0) {
                    slots.claimed += 1;
                    slots.roots.push(n.clone());
                    stack.push(n.clone());
                } else if n.claimed_index(token).is_none() {
                    fits = false;
                }
            }
        }
        let mut large = 0;
        let mut seen = 0usize;
        'walk: while let Some(n) = stack.pop() {
            if may_parallel && node_elems(&n) >= PARALLEL_MIN_ELEMS && !is_observable(&n) {
                large += 1;
                if large == 2 {
                    fits = false;
                    break;
                }
            }
            for e in n.edges().iter().flatten() {
                match e {
                    Edge::Node(c, _) => match c.claimed_index(token) {
                        Some(d) => c.set_claimed(token, d + 1),
                        None => {
                            if !c.claim(token, 1) {
                                fits = false;
                                break 'walk;
                            }
                            slots.claimed += 1;
                            stack.push(c.clone());
                            seen += 1;
                            if seen % 4096 == 0 {
                                if let Err(e) = super::check_interrupt() {
                                    self.leave_slots();
                                    return Err(e);
                                }
                            }
                        }
                    },
                    Edge::Leaf(t) => on_leaf(t),
                }
            }
        }
        if !fits {
            // the part claimed so far is found again from the roots through claimed nodes
            let mut stack = std::mem::take(&mut slots.roots);
            while let Some(n) = stack.pop() {
                if n.claimed_index(token).is_none() {
                    continue;
                }
                n.unclaim(token);
                for e in n.edges().iter().flatten() {
                    if let Edge::Node(c, _) = e {
                        stack.push(c.clone());
                    }
                }
            }
            self.slots = None;
        }
        Ok(fits)
    }
    /// Leave slot mode: nodes it still holds (it stopped early) keep their marks, under a token
    /// given up for good (Note [Abandoned marks] in tape.rs).
    fn leave_slots(&mut self) {
        let Some(slots) = self.slots.take() else { return };
        if slots.claimed != slots.finished {
            self.token.abandon();
            self.token = MarkToken::next();
        }
    }
    /// The row of node `id` (its address in slot mode), made there when missing.
    #[inline]
    fn row(&mut self, id: usize, n: &NodeRef) -> &mut NodeState {
        match &mut self.slots {
            Some(s) => s.rows.entry(id).or_insert_with(|| NodeState::new(n, true)),
            None => &mut self.chunks[id / TABLE_CHUNK][id % TABLE_CHUNK],
        }
    }
    /// One edge into node `id` was delivered: whether it is ready.
    #[inline]
    fn arrived(&mut self, id: usize, n: &NodeRef) -> bool {
        match &self.slots {
            Some(_) => {
                let d = n.claimed_index(self.token).unwrap_or(1).saturating_sub(1);
                n.set_claimed(self.token, d);
                d == 0
            }
            None => {
                let st = &mut self[id];
                st.deps -= 1;
                st.deps == 0
            }
        }
    }
    /// Edges into node `id` not delivered yet.
    fn waiting(&self, id: usize, n: &NodeRef) -> u32 {
        match &self.slots {
            Some(_) => n.claimed_index(self.token).unwrap_or(0),
            None => self[id].deps,
        }
    }
    /// Take node `id`'s row out to run the node: slot mode forgets it (one look-up), the table
    /// keeps it without its gradients.
    #[inline]
    fn take(&mut self, id: usize) -> Result<NodeState> {
        match &mut self.slots {
            Some(s) => s.rows.remove(&id).ok_or_else(|| Error::runtime("internal error: backward reached a ready node without its gradients")),
            None => {
                let st = &mut self.chunks[id / TABLE_CHUNK][id % TABLE_CHUNK];
                Ok(NodeState { node: st.node.clone(), deps: st.deps, needed: st.needed, scalar: st.scalar.take(), tensors: st.tensors.take() })
            }
        }
    }
    /// A node taken out by `take` ran: slot mode gives it back.
    #[inline]
    fn done(&mut self, n: &NodeRef) {
        if let Some(s) = &mut self.slots {
            n.unclaim(self.token);
            s.finished += 1;
        }
    }
    #[inline]
    fn get(&self, n: &NodeRef) -> Option<usize> {
        if self.slots.is_some() {
            return Some(n.addr());
        }
        match n.claimed_index(self.token) {
            Some(i) => Some(i as usize),
            None if self.fallback.is_empty() => None,
            None => self.fallback.get(&n.addr()).copied(),
        }
    }
    /// The row of a discovered node (every edge of a discovered node leads to one).
    #[inline]
    fn index(&self, n: &NodeRef) -> usize {
        self.get(n).expect("backward: a node reached by an edge was not discovered")
    }
    /// Add a row for `n`; its index as the discovery stack keeps it.
    fn insert(&mut self, n: &NodeRef) -> Result<u32> {
        let i = self.len;
        let i32_ = u32::try_from(i).map_err(|_| Error::runtime("backward: the graph has more than 2^32 nodes"))?;
        if !n.claim(self.token, i32_) {
            self.fallback.insert(n.addr(), i);
        }
        if i % TABLE_CHUNK == 0 {
            self.chunks.push(Vec::with_capacity(TABLE_CHUNK));
        }
        let state = NodeState::new(n, false);
        if let Some(c) = self.chunks.last_mut() {
            c.push(state);
        }
        self.len += 1;
        Ok(i32_)
    }
    fn len(&self) -> usize {
        self.len
    }
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut NodeState> {
        self.chunks.iter_mut().flatten()
    }
}

impl Drop for NodeTable {
    /// Unmark the nodes before the rows let go of them.
    fn drop(&mut self) {
        self.leave_slots();
        for s in self.chunks.iter().flatten() {
            s.node.unclaim(self.token);
        }
    }
}

/// The table's rows by index (the table way only: slot mode reaches its rows through `row`,
/// `take` and the marks).
impl std::ops::Index<usize> for NodeTable {
    type Output = NodeState;
    #[inline]
    fn index(&self, i: usize) -> &NodeState {
        &self.chunks[i / TABLE_CHUNK][i % TABLE_CHUNK]
    }
}

impl std::ops::IndexMut<usize> for NodeTable {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut NodeState {
        &mut self.chunks[i / TABLE_CHUNK][i % TABLE_CHUNK]
    }
}

/// One more edge leads to leaf `li`.
fn leaves_dep(leaves: &mut [LeafState], li: usize) {
    let l = &mut leaves[li];
    if l.needed {
        l.deps += 1;
    }
}

struct LeafState {
    tensor: Tensor,
    deps: usize,
    needed: bool,
    grad: Option<Tensor>,
    order: Option<Box<Order>>,
}

/// The shape part of torch's Size repr: `torch.Size([2, 3])`.
fn size_str(shape: &[usize]) -> String {
    format!("torch.Size({:?})", shape)
}

fn add_grad(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        // a sum nobody else holds (not a hook, not .grad, not a view) grows in place when
        // nothing is being recorded: no new buffer per contribution
        Some(prev) if !crate::autograd::is_grad_enabled() && prev.is_sole_owner() && ops::plain_pair(&prev, &g) => {
            ops::update_plain(&prev, &g, |a, b| a + b, |a, b| a + b);
            prev
        }
        Some(prev) => ops::add(&prev, &g)?,
    });
    Ok(())
}

/// Add contribution `key` into `slots[nr]`; with an order, in the order's sequence (an early
/// one waits, and the arrival of the next expected one adds the waiting ones that follow it).
fn deliver(slots: &mut [Option<Tensor>], order: Option<&mut Order>, key: Key, nr: usize, g: Option<Tensor>) -> Result<()> {
    let Some(o) = order else {
        return match g {
            Some(g) => add_grad(&mut slots[nr], g),
            None => Ok(()),
        };
    };
    if o.keys.get(o.next) != Some(&key) {
        o.pending.push((key, nr, g));
        return Ok(());
    }
    let (mut nr, mut g) = (nr, g);
    loop {
        if let Some(g) = g {
            add_grad(&mut slots[nr], g)?;
        }
        o.next += 1;
        let Some(&want) = o.keys.get(o.next) else { return Ok(()) };
        let Some(p) = o.pending.iter().position(|p| p.0 == want) else { return Ok(()) };
        (_, nr, g) = o.pending.swap_remove(p);
    }
}

/// Note [Scalar lane]: the dtype of a node that may take the lane: one output, one element of
/// float32/float64 of no dims, on the CPU.
fn lane_dtype(node: &NodeRef) -> Option<DType> {
    if node.num_outputs() != 1 {
        return None;
    }
    let m = node.output_meta(0);
    match m.dtype() {
        dt @ (DType::F32 | DType::F64) if m.device() == crate::backend::Device::Cpu && m.shape().is_empty() => Some(dt),
        _ => None,
    }
}

/// The value of a one-element CPU tensor of dtype `dt` (the lane's entry from a tensor gradient).
fn scalar_of(t: &Tensor, dt: DType) -> Option<f64> {
    let d = t.read_data();
    if d.layout.numel() != 1 {
        return None;
    }
    d.storage.float_at(d.layout.offset, dt)
}

/// `v` as a value of `dt` (float32 rounds once, as a cast).
#[inline]
fn round_to(v: f64, dt: DType) -> f64 {
    match dt {
        DType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// A 0-dim tensor of `dt` holding `v`.
fn scalar_tensor(v: f64, dt: DType) -> Tensor {
    match dt {
        DType::F32 => Tensor::scalar(v as f32),
        _ => Tensor::scalar(v),
    }
}

/// Sum a gradient down to its input's shape and cast it to the input's dtype.
fn conform(g: Tensor, meta: &TensorMeta, name: &str, index: usize) -> Result<Tensor> {
    {
        // the usual case, under one lock: nothing to do
        let d = g.read_data();
        if d.layout.shape[..] == *meta.shape() && d.storage.dtype() == meta.dtype() && d.storage.device() == meta.device() {
            drop(d);
            return Ok(g);
        }
    }
    let shape = g.shape();
    let g = if shape[..] != *meta.shape() {
        if crate::tensor::layout::broadcast_shapes(&shape, &meta.shape()).map(|s| s[..] == shape[..]).unwrap_or(false)
            && shape.len() >= meta.shape().len()
        {
            ops::sum_to(&g, &meta.shape())?
        } else {
            return Err(Error::runtime(format!(
                "Function {} returned an invalid gradient at index {} - got {:?} but expected shape compatible with {:?}",
                name, index, &shape[..], &*meta.shape()
            )));
        }
    } else {
        g
    };
    let g = if g.device() != meta.device() {
        if g.ndim() != 0 || g.is_cuda() {
            return Err(Error::runtime(format!(
                "Function {} returned an invalid gradient at index {} - expected device {} but got {}",
                name, index, meta.device(), g.device()
            )));
        }
        ops::to_device(&g, meta.device())?
    } else {
        g
    };
    if g.dtype() != meta.dtype() {
        return ops::to_dtype(&g, meta.dtype());
    }
    Ok(g)
}

/// AccumulateGrad: add `g` into `leaf.grad` with torch's rules.
pub fn accumulate_grad(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    match leaf.grad() {
        None => {
            // torch's layout contract: the .grad of a non-overlapping, dense leaf has the leaf's
            // strides (a transposed parameter gets a transposed gradient); of any other leaf,
            // contiguous strides
            let ll = leaf.layout();
            let own_strides = ll.is_non_overlapping_and_dense() && ll.strides != crate::tensor::layout::Layout::contiguous(&ll.shape).strides;
            let g = if create_graph {
                g
            } else if own_strides {
                if g.layout().strides == ll.strides && g.layout().offset == 0 && g.is_leaf() && g.is_sole_owner() {
                    g.alias()
                } else {
                    let l = crate::backend::cpu::like_layout(&ll, crate::tensor::MemoryFormat::Preserve)?;
                    let out = Tensor::zeros_on(&[l.numel()], g.dtype(), g.device())?.view_with_layout(l);
                    crate::backend::cpu::copy_into(&out, &g)?;
                    out
                }
            } else if g.is_contiguous() && g.is_leaf() && g.is_sole_owner() {
                // nobody else holds this buffer (not the caller, not a view): keep it as .grad
                g.alias()
            } else {
                ops::contiguous_copy(&g.alias())?
            };
            leaf.set_grad(Some(g));
        }
        Some(prev) => {
            if create_graph {
                leaf.set_grad(Some(ops::add(&prev, &g)?));
            } else {
                let _guard = GradModeGuard::new(false);
                ops::add_inplace_raw(&prev, &g)?;
            }
        }
    }
    Ok(())
}

/// Anomaly mode: say where the failing node's forward op was called.
fn with_forward_stack(mut e: Error, extras: &Option<Box<NodeExtras>>) -> Error {
    if let Some(stack) = extras.as_ref().and_then(|x| x.forward_stack.as_ref()) {
        if e.payload.is_none() {
            e.msg = format!("{}\n\nTraceback of forward call that caused the error:\n{}", e.msg, stack);
        }
    }
    e
}

/// Elements a node reads and writes: its cost estimate.
/// The elements a node's inputs and outputs hold; 0 for a node on a GPU, which is never large:
/// its kernels queue on one stream, so host threads add no parallelism there, only contention for
/// the driver (torch's engine too runs a device's nodes on one thread).
fn node_elems(node: &NodeRef) -> usize {
    if node.metas_iter().any(|m| m.device() != crate::backend::Device::Cpu) {
        return 0;
    }
    node.metas_iter().map(|m| m.numel()).sum()
}

fn is_observable(node: &NodeRef) -> bool {
    node.has_extras() || !node.func().parallel_safe()
}

/// Run one node from the gradients of its outputs: pre-hooks, the backward function (then free
/// its saved values unless the graph is kept), post-hooks, the anomaly check, and each input's
/// gradient conformed to the input. On an error, the gradients before the failing edge come back
/// with it (the sequential engine delivered those before failing).
fn compute(node: &NodeRef, mut buffer: Grads, extras: &Option<Box<NodeExtras>>, keep_graph: bool) -> (Grads, Option<Error>) {
    let name = node.name();
    let grads_in = (|| -> Result<Grads> {
        if let Some(ex) = extras {
            for (_, h) in &ex.pre_hooks {
                if let Some(r) = h(&buffer)? {
                    buffer = Grads::from_vec(r);
                }
            }
        }
        let grads_out_for_hooks = if extras.as_ref().map(|e| !e.post_hooks.is_empty()).unwrap_or(false) { Some(buffer.clone()) } else { None };
        let mut func = node.func();
        let mut grads_in: Grads = if buffer.iter().all(|g| g.is_none()) && !func.runs_without_grads() {
            drop(func);
            Grads::from_elem(None, node.edges().len())
        } else {
            if func.materialize_grads() {
                for (k, slot) in buffer.iter_mut().enumerate() {
                    if slot.is_none() {
                        let m = node.output_meta(k);
                        *slot = Some(Tensor::zeros_on(&m.shape(), m.dtype(), m.device())?);
                    }
                }
            }
            let _prof = super::profiler::scope_owned(name.clone());
            let out = func.apply(node, std::mem::take(&mut buffer)).map_err(|e| with_forward_stack(e, extras))?;
            if !keep_graph {
                func.release();
            }
            out
        };
        if let (Some(ex), Some(gout)) = (extras, &grads_out_for_hooks) {
            // torch's post hooks see each input's gradient as the input will receive it, in its
            // shape (a broadcast undone); a slot of an input that takes none, as the rule gave it
            for (i, (edge, g)) in node.edges().iter().zip(grads_in.iter_mut()).enumerate() {
                if edge.is_some() {
                    if let Some(t) = g.take() {
                        *g = Some(conform(t, node.input_meta(i), &name, i)?);
                    }
                }
            }
            for (_, h) in &ex.post_hooks {
                if let Some(r) = h(&grads_in, gout)? {
                    grads_in = Grads::from_vec(r);
                }
            }
        }
        if super::is_anomaly_enabled() && super::is_anomaly_check_nan_enabled() {
            for (i, g) in grads_in.iter().enumerate() {
                if let Some(g) = g {
                    if g.dtype().is_float() && ops::has_nan(g)? {
                        let e = Error::runtime(format!("Function '{}' returned nan values in its {}th output.", name, i));
                        return Err(with_forward_stack(e, extras));
                    }
                }
            }
        }
        if grads_in.len() != node.edges().len() {
            return Err(Error::runtime(format!(
                "function {} returned an incorrect number of gradients (expected {}, got {})",
                name,
                node.edges().len(),
                grads_in.len()
            )));
        }
        Ok(grads_in)
    })();
    let mut grads_in = match grads_in {
        Ok(g) => g,
        Err(e) => return (Grads::new(), Some(e)),
    };
    for (i, (edge, g)) in node.edges().iter().zip(grads_in.iter_mut()).enumerate() {
        if let (Some(_), Some(t)) = (edge, g.take()) {
            match conform(t, node.input_meta(i), &name, i) {
                Ok(t) => *g = Some(t),
                Err(e) => {
                    grads_in.truncate(i);
                    return (grads_in, Some(e));
                }
            }
        }
    }
    (grads_in, None)
}

/// Where a node stands in a parallel run.
enum Phase {
    /// Not ready, or ready and waiting in the heap.
    Waiting,
    /// Observable and ready: runs when it is the frontier.
    Held,
    Done,
    Failed(Error),
}

/// One backward pass after discovery: the states, the ready heap and what was captured.
struct Run<'a> {
    nodes: NodeTable,
    leaves: Vec<LeafState>,
    leaf_index: HashMap<usize, usize>,
    targets: Option<Vec<Edge>>,
    captured: Vec<Option<Tensor>>,
    heap: BinaryHeap<(u64, usize)>,
    /// Parallel runs: leaves whose last contribution arrived, by (producer, edge), finished once
    /// the frontier has passed the producer.
    deferred: Option<BinaryHeap<(u64, Reverse<u32>, usize)>>,
    /// Parallel runs: where each node stands, and the highest-numbered failed node (nodes below
    /// it are not started any more).
    phase: Vec<Phase>,
    failed_above: Option<u64>,
    req: &'a BackwardRequest<'a>,
    /// Whether nodes may take the scalar lane in this pass (Note [Scalar lane]).
    lane: bool,
    /// Nodes run since the last look for a pending Ctrl-C, and when that look was.
    polls: u32,
    last_poll: std::time::Instant,
}

impl Run<'_> {
    /// A leaf's gradient is complete: tensor hooks, then capture or accumulate, then
    /// post-accumulate hooks.
    fn finish_leaf(&mut self, li: usize) -> Result<()> {
        let leaf = &mut self.leaves[li];
        let Some(mut g) = leaf.grad.take() else { return Ok(()) };
        let (hooks, post) = leaf.tensor.leaf_hooks();
        for h in &hooks {
            if let Some(r) = h(&g)? {
                g = r;
            }
        }
        if let Some(ts) = &self.targets {
            for (k, t) in ts.iter().enumerate() {
                if t.key() == leaf.tensor.addr() {
                    self.captured[k] = Some(g.clone());
                }
            }
            if !self.req.accumulate {
                return Ok(());
            }
        }
        accumulate_grad(&leaf.tensor, g, self.req.create_graph)?;
        for h in &post {
            h(&leaf.tensor)?;
        }
        Ok(())
    }

    /// Finish the deferred leaves whose producer is numbered above `bound` (all with None).
    fn finish_deferred(&mut self, bound: Option<u64>) -> Result<()> {
        while let Some(&(seq, _, li)) = self.deferred.as_ref().and_then(|d| d.peek()) {
            if bound.is_some_and(|b| seq <= b) {
                break;
            }
            if let Some(d) = self.deferred.as_mut() {
                d.pop();
            }
            self.finish_leaf(li)?;
        }
        Ok(())
    }

    /// A node leaves the heap: capture targets, run tensor hooks and retain_grad on its output
    /// gradients. Returns them (and the node's extras) when the node must run.
    fn begin(&mut self, node: &NodeRef, mut buffer: Grads, needed: bool) -> Result<Option<(Grads, Option<Box<NodeExtras>>)>> {
        if let Some(ts) = &self.targets {
            for (k, t) in ts.iter().enumerate() {
                if let Edge::Node(tn, nr) = t {
                    if tn.ptr_eq(node) {
                        self.captured[k] = buffer[*nr as usize].clone();
                    }
                }
            }
        }
        let extras = node.extras();
        if let Some(ex) = &extras {
            // Tensor hooks first (they may replace the gradient), then retain_grad sees the result.
            for (_, nr, h) in &ex.tensor_hooks {
                if let Some(g) = &buffer[*nr as usize] {
                    if let Some(r) = h(g)? {
                        buffer[*nr as usize] = Some(r);
                    }
                }
            }
            for (nr, weak) in &ex.retained {
                if let (Some(t), Some(g)) = (weak.upgrade(), &buffer[*nr as usize]) {
                    let t = Tensor::from_impl(t);
                    let g = if self.req.create_graph { g.clone() } else { g.alias() };
                    match t.grad() {
                        None => t.set_grad(Some(if self.req.create_graph { g } else { ops::contiguous_copy(&g)? })),
                        Some(prev) => t.set_grad(Some(ops::add(&prev, &g)?)),
                    }
                }
            }
        }
        Ok(needed.then_some((buffer, extras)))
    }

    /// Deliver a node's input gradients along its edges: into the buffers of the nodes they lead
    /// to (pushing those that became ready) and into leaves (finished at once, or deferred).
    fn deliver_all(&mut self, node: &NodeRef, grads: Grads) -> Result<()> {
        for (i, (edge, g)) in node.edges().iter().zip(grads).enumerate() {
            let Some(edge) = edge else { continue };
            self.deliver_edge(node, i, edge, g)?;
        }
        Ok(())
    }

    /// Deliver the gradient of input `i` of `node` along its edge.
    fn deliver_edge(&mut self, node: &NodeRef, i: usize, edge: &Edge, g: Option<Tensor>) -> Result<()> {
        let key = (node.seq(), i as u32);
        match edge {
            Edge::Leaf(t) => {
                let li = self.leaf_index[&t.addr()];
                let leaf = &mut self.leaves[li];
                if !leaf.needed {
                    return Ok(());
                }
                deliver(std::slice::from_mut(&mut leaf.grad), leaf.order.as_deref_mut(), key, 0, g)?;
                leaf.deps -= 1;
                if leaf.deps == 0 {
                    match &mut self.deferred {
                        // finished when the sequential engine would: at its last contribution
                        Some(d) => {
                            let (seq, e) = leaf.order.as_ref().and_then(|o| o.keys.last().copied()).unwrap_or(key);
                            d.push((seq, Reverse(e), li));
                        }
                        None => self.finish_leaf(li)?,
                    }
                }
            }
            Edge::Node(c, nr) => {
                let ci = self.nodes.index(c);
                let ts = self.nodes.row(ci, c).tensors();
                deliver(&mut ts.buffer, ts.order.as_deref_mut(), key, *nr as usize, g)?;
                if self.nodes.arrived(ci, c) {
                    self.heap.push((c.seq(), ci));
                }
            }
        }
        Ok(())
    }

    /// Run one node on this thread, all of it.
    /// Lets Python run its signal handlers every ~20 ms of backward (checked every 64 nodes), so
    /// Ctrl-C stops a long backward as KeyboardInterrupt between two nodes.
    fn poll_interrupt(&mut self) -> Result<()> {
        self.polls += 1;
        if self.polls < 64 {
            return Ok(());
        }
        self.polls = 0;
        let now = std::time::Instant::now();
        if now.duration_since(self.last_poll) < std::time::Duration::from_millis(20) {
            return Ok(());
        }
        self.last_poll = now;
        super::check_interrupt()
    }

    fn step(&mut self, ni: usize) -> Result<()> {
        self.poll_interrupt()?;
        let mut row = self.nodes.take(ni)?;
        if self.lane && row.needed && self.run_lane(&row)? {
            self.nodes.done(&row.node);
            return Ok(());
        }
        let buffer = row.take_buffer();
        let node = row.node;
        let Some((buffer, extras)) = self.begin(&node, buffer, row.needed)? else {
            self.nodes.done(&node);
            return Ok(());
        };
        let (grads, err) = compute(&node, buffer, &extras, self.req.keep_graph);
        self.nodes.done(&node);
        self.deliver_all(&node, grads)?;
        err.map_or(Ok(()), Err)
    }

    /// Note [Scalar lane]: run node `ni` on plain numbers if it can; false when it must go
    /// through tensors (nothing was done then).
    fn run_lane(&mut self, row: &NodeState) -> Result<bool> {
        let node = &row.node;
        let Some(dt) = lane_dtype(node) else { return Ok(false) };
        if node.edges().len() > 2 || node.has_extras() {
            return Ok(false);
        }
        let g = match (row.scalar, &row.tensors) {
            (Some(v), _) => v,
            (None, Some(ts)) => match ts.buffer.first().and_then(|t| t.as_ref()).and_then(|t| scalar_of(t, dt)) {
                Some(v) => v,
                None => return Ok(false),
            },
            (None, None) => return Ok(false),
        };
        let vals = {
            let mut func = node.func();
            match func.apply_scalar(node, g, dt) {
                None => return Ok(false),
                Some(r) => {
                    let vals = r?;
                    if !self.req.keep_graph {
                        func.release();
                    }
                    vals
                }
            }
        };
        for (i, edge) in node.edges().iter().enumerate() {
            let Some(edge) = edge else { continue };
            let m = node.input_meta(i);
            let idt = match m.dtype() {
                d @ (DType::F32 | DType::F64) if m.shape().is_empty() && m.device() == crate::backend::Device::Cpu => d,
                _ => {
                    // an input the lane cannot hand a number to: as the tensor path would
                    let t = conform(scalar_tensor(vals[i], dt), m, &node.name(), i)?;
                    self.deliver_edge(node, i, edge, Some(t))?;
                    continue;
                }
            };
            let v = round_to(vals[i], idt);
            if let Edge::Node(c, 0) = edge {
                let ci = self.nodes.index(c);
                let st = self.nodes.row(ci, c);
                let sum = match (st.scalar, &st.tensors) {
                    (None, None) if st.node.num_outputs() == 1 => Some(v),
                    (Some(prev), None) => Some(round_to(prev + v, idt)),
                    _ => None,
                };
                if let Some(sum) = sum {
                    st.scalar = Some(sum);
                    if self.nodes.arrived(ci, c) {
                        self.heap.push((c.seq(), ci));
                    }
                    continue;
                }
            }
            self.deliver_edge(node, i, edge, Some(scalar_tensor(v, idt)))?;
        }
        Ok(true)
    }

    fn run_sequential(&mut self) -> Result<()> {
        while let Some((_, ni)) = self.heap.pop() {
            self.step(ni)?;
        }
        Ok(())
    }

    /// Note [Parallel backward]. `frontier` lists the nodes that will leave the heap, `barriers`
    /// the places of observable work, both by descending sequence number.
    fn run_parallel(&mut self, frontier: &[usize], barriers: &[u64]) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        let mut in_flight = 0;
        let r = self.schedule(frontier, barriers, &tx, &rx, &mut in_flight);
        // After an error, wait for the nodes still running: none outlives this call.
        while in_flight > 0 && rx.recv().is_ok() {
            in_flight -= 1;
        }
        r
    }

    /// Deliver a pure node's result and record how it ended.
    fn settle(&mut self, ni: usize, node: &NodeRef, (grads, err): Computed) {
        let err = match self.deliver_all(node, grads) {
            Ok(()) => err,
            Err(e) => Some(e),
        };
        self.phase[ni] = match err {
            None => Phase::Done,
            Some(e) => {
                self.failed_above = Some(self.failed_above.map_or(node.seq(), |f| f.max(node.seq())));
                Phase::Failed(e)
            }
        };
    }

    fn schedule(&mut self, frontier: &[usize], barriers: &[u64], tx: &mpsc::Sender<(usize, NodeRef, Computed)>, rx: &mpsc::Receiver<(usize, NodeRef, Computed)>, in_flight: &mut usize) -> Result<()> {
        self.phase = (0..self.nodes.len()).map(|_| Phase::Waiting).collect();
        let (mut fpos, mut bpos) = (0, 0);
        let keep_graph = self.req.keep_graph;
        // Large nodes ready to go on the pool, waiting for a thread: no more run there at once
        // than the threads kernels may use (`set_num_threads` caps them, not the pool's size).
        let mut queued: std::collections::VecDeque<(usize, NodeRef, Grads)> = std::collections::VecDeque::new();
        let cap = crate::backend::num_threads().max(1);
        loop {
            self.poll_interrupt()?;
            // Advance the frontier past finished nodes, running observable ones when they reach it.
            while let Some(&fi) = frontier.get(fpos) {
                match &self.phase[fi] {
                    Phase::Done => {
                        fpos += 1;
                        let bound = frontier.get(fpos).map(|&i| self.nodes[i].node.seq());
                        self.finish_deferred(bound)?;
                    }
                    Phase::Failed(_) => {
                        self.finish_deferred(self.nodes[fi].node.seq().checked_sub(1))?;
                        return match std::mem::replace(&mut self.phase[fi], Phase::Done) {
                            Phase::Failed(e) => Err(e),
                            _ => Ok(()),
                        };
                    }
                    Phase::Held => {
                        self.phase[fi] = match self.step(fi) {
                            Ok(()) => Phase::Done,
                            Err(e) => Phase::Failed(e),
                        }
                    }
                    Phase::Waiting => break,
                }
            }
            let Some(&fi) = frontier.get(fpos) else { break };
            // The next observable work not done yet: nodes the sequential engine runs after it wait.
            let fseq = self.nodes[fi].node.seq();
            while barriers.get(bpos).is_some_and(|&b| b > fseq) {
                bpos += 1;
            }
            let limit = barriers.get(bpos).copied();
            // Ready pure nodes (up to that limit): small ones run here, large ones on the pool.
            let mut large: Vec<(usize, NodeRef, Grads)> = Vec::new();
            let mut moved = false;
            while let Some(&(seq, ni)) = self.heap.peek() {
                if limit.is_some_and(|l| seq < l) {
                    break;
                }
                self.heap.pop();
                moved = true;
                if self.failed_above.is_some_and(|f| seq < f) {
                    continue;
                }
                let node = self.nodes[ni].node.clone();
                if is_observable(&node) {
                    self.phase[ni] = Phase::Held;
                    continue;
                }
                let (buffer, needed) = {
                    let st = &mut self.nodes[ni];
                    (st.take_buffer(), st.needed)
                };
                match self.begin(&node, buffer, needed) {
                    Ok(Some((buffer, _))) if node_elems(&node) >= PARALLEL_MIN_ELEMS => large.push((ni, node, buffer)),
                    Ok(Some((buffer, _))) => {
                        let out = run_pure(&node, buffer, keep_graph);
                        self.settle(ni, &node, out);
                    }
                    Ok(None) => self.phase[ni] = Phase::Done,
                    Err(e) => self.phase[ni] = Phase::Failed(e),
                }
            }
            queued.extend(large);
            // A large node with nothing to run beside it runs here too.
            if *in_flight == 0 && queued.len() == 1 {
                if let Some((ni, node, buffer)) = queued.pop_front() {
                    let out = run_pure(&node, buffer, keep_graph);
                    self.settle(ni, &node, out);
                    // (progress, though the heap may have been empty: a node left from an
                    // earlier round, when the pool was full)
                    moved = true;
                }
            }
            while *in_flight < cap {
                let Some((ni, node, buffer)) = queued.pop_front() else { break };
                *in_flight += 1;
                let tx = tx.clone();
                rayon::spawn(move || {
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_pure(&node, buffer, keep_graph)))
                        .unwrap_or_else(|_| (Grads::new(), Some(Error::runtime(format!("internal error: the backward of {} panicked", node.name())))));
                    let _ = tx.send((ni, node, out));
                });
            }
            // Take the finished nodes; wait for one when nothing else can move.
            let mut done = if moved {
                rx.try_recv().ok()
            } else if *in_flight > 0 {
                rx.recv().ok()
            } else {
                // the frontier node is always ready: it left the heap, and is running or finished
                return Err(Error::runtime("internal error: backward stalled with no ready node"));
            };
            while let Some((ni, node, out)) = done {
                *in_flight -= 1;
                self.settle(ni, &node, out);
                done = rx.try_recv().ok();
            }
        }
        self.finish_deferred(None)
    }
}

/// A node's input gradients (a prefix of them on an error) and its error.
type Computed = (Grads, Option<Error>);

/// Run a pure node (on any thread): grad mode off, as on the calling thread of a pass without
/// create_graph, and profiler events marked as backward.
fn run_pure(node: &NodeRef, buffer: Grads, keep_graph: bool) -> Computed {
    let _mode = GradModeGuard::new(false);
    let _bw = super::profiler::is_enabled().then(super::profiler::backward_mark);
    compute(node, buffer, &None, keep_graph)
}

pub fn run_backward(req: BackwardRequest) -> Result<Vec<Option<Tensor>>> {
    // Root edges and their initial gradients.
    let mut root_edges = Vec::with_capacity(req.roots.len());
    let mut root_grads = Vec::with_capacity(req.roots.len());
    for (i, (root, g)) in req.roots.iter().zip(req.grads.iter()).enumerate() {
        let edge = root.gradient_edge().ok_or_else(|| {
            Error::runtime(format!("element {} of tensors does not require grad and does not have a grad_fn", i))
        })?;
        let g = match g {
            Some(g) => {
                let (gs, rs) = (g.shape(), root.shape());
                if gs != rs {
                    return Err(Error::runtime(format!(
                        "Mismatch in shape: grad_output[{}] has a shape of {} and output[{}] has a shape of {}.",
                        i, size_str(&gs), i, size_str(&rs)
                    )));
                }
                g.clone()
            }
            None => {
                if root.numel() != 1 {
                    return Err(Error::runtime("grad can be implicitly created only for scalar outputs"));
                }
                Tensor::full_on(&root.shape(), 1.0, root.dtype(), root.device())?
            }
        };
        root_edges.push(edge);
        root_grads.push(g);
    }

    // Targets (inputs=): edges whose gradient is captured.
    let targets: Option<Vec<Edge>> = match req.inputs {
        None => None,
        Some(ts) => Some(
            ts.iter()
                .map(|t| t.gradient_edge().ok_or_else(|| Error::runtime("One of the differentiated Tensors does not require grad")))
                .collect::<Result<_>>()?,
        ),
    };
    // (by the edge's key, the address of its node or leaf: no Edge, nor a node reference count
    // moved, per look)
    let is_target = |key: usize| -> bool { targets.as_ref().is_some_and(|ts| ts.iter().any(|t| t.key() == key)) };

    // 1. Discovery, in post-order so children are settled before parents; and at each node's
    // post-order visit (its children settled), whether it is needed (leads to something that
    // needs a gradient) and, if so, the dependency counts its edges add. The parallel decision:
    // threads to run on and two large nodes that may run on them (not from a pool thread: the
    // calling thread waits for the pool without working for it).
    let may_parallel = !req.create_graph
        && parallel_allowed()
        && rayon::current_thread_index().is_none();
    let mut large = 0;
    let mut nodes = NodeTable::new();
    let mut leaves: Vec<LeafState> = Vec::new();
    let mut leaf_index: HashMap<usize, usize> = HashMap::default();
    // (row, next edge to look at): 8 bytes a level, a chain of N nodes is N levels deep
    let mut stack: Vec<(u32, u32)> = Vec::new();
    let visit_leaf = |t: &Tensor, leaves: &mut Vec<LeafState>, leaf_index: &mut HashMap<usize, usize>| -> usize {
        *leaf_index.entry(t.addr()).or_insert_with(|| {
            let needed = match &targets {
                None => req.accumulate,
                Some(_) => is_target(t.addr()),
            };
            leaves.push(LeafState { tensor: t.clone(), deps: 0, needed, grad: None, order: None });
            leaves.len() - 1
        })
    };
    // Note [Slot mode]: a plain backward first tries to run without a row per node.
    let mut slot_mode = false;
    if targets.is_none() && req.accumulate && SLOT_MODE.load(Ordering::Relaxed) {
        let mut on_leaf = |t: &Tensor| {
            let li = visit_leaf(t, &mut leaves, &mut leaf_index);
            leaves_dep(&mut leaves, li);
        };
        slot_mode = nodes.discover_slots(&root_edges, &mut on_leaf, may_parallel)?;
        if !slot_mode {
            leaves.clear();
            leaf_index.clear();
        }
    }
    if slot_mode {
        for e in &root_edges {
            if let Edge::Leaf(t) = e {
                visit_leaf(t, &mut leaves, &mut leaf_index);
            }
        }
    } else {
        let mut discovered = 0usize;
        for e in &root_edges {
            match e {
                Edge::Leaf(t) => {
                    visit_leaf(t, &mut leaves, &mut leaf_index);
                }
                Edge::Node(n, _) => {
                    if nodes.get(n).is_some() {
                        continue;
                    }
                    stack.push((nodes.insert(n)?, 0));
                    while let Some(&mut (idx, ref mut next)) = stack.last_mut() {
                        let idx = idx as usize;
                        let node = &nodes[idx].node;
                        if (*next as usize) < node.edges().len() {
                            let e = *next as usize;
                            *next += 1;
                            match &node.edges()[e] {
                                Some(Edge::Node(child, _)) => {
                                    if nodes.get(child).is_none() {
                                        let child = child.clone();
                                        stack.push((nodes.insert(&child)?, 0));
                                        discovered += 1;
                                        if discovered % 4096 == 0 {
                                            super::check_interrupt()?; // a graph of millions of nodes takes seconds to walk
                                        }
                                    }
                                }
                                Some(Edge::Leaf(t)) => {
                                    let t = t.clone();
                                    visit_leaf(&t, &mut leaves, &mut leaf_index);
                                }
                                None => {}
                            }
                            continue;
                        }
                        stack.pop();
                        let node = nodes[idx].node.clone();
                        let mut needed = false;
                        for e in node.edges().iter().flatten() {
                            needed |= match e {
                                Edge::Leaf(t) => leaves[leaf_index[&t.addr()]].needed,
                                Edge::Node(c, _) => nodes[nodes.index(c)].needed || is_target(c.addr()),
                            };
                        }
                        nodes[idx].needed = needed;
                        if !needed {
                            continue;
                        }
                        if may_parallel && large < 2 && node_elems(&node) >= PARALLEL_MIN_ELEMS && !is_observable(&node) {
                            large += 1;
                        }
                        for e in node.edges().iter().flatten() {
                            match e {
                                Edge::Leaf(t) => {
                                    let l = &mut leaves[leaf_index[&t.addr()]];
                                    if l.needed {
                                        l.deps += 1;
                                    }
                                }
                                Edge::Node(c, _) => {
                                    let ci = nodes.index(c);
                                    nodes[ci].deps += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let parallel = large == 2;
    let mut frontier = Vec::new();
    let mut barriers = Vec::new();
    if parallel {
        // The sequential order of the contributions to each node and leaf fed by several edges,
        // and the producer each leaf is finished after (its last one, the lowest-numbered).
        let mut leaf_last = vec![u64::MAX; leaves.len()];
        // (any order: the orders' keys are sorted below)
        for idx in 0..nodes.len() {
            if !nodes[idx].needed {
                continue;
            }
            let node = nodes[idx].node.clone();
            for (i, e) in node.edges().iter().enumerate() {
                let key = (node.seq(), i as u32);
                let order = match e {
                    Some(Edge::Leaf(t)) => {
                        let li = leaf_index[&t.addr()];
                        let l = &mut leaves[li];
                        if !l.needed {
                            continue;
                        }
                        leaf_last[li] = leaf_last[li].min(node.seq());
                        if l.deps < 2 {
                            continue;
                        }
                        &mut l.order
                    }
                    Some(Edge::Node(c, _)) => {
                        let ci = nodes.index(c);
                        let st = &mut nodes[ci];
                        if st.deps < 2 {
                            continue;
                        }
                        &mut st.tensors().order
                    }
                    None => continue,
                };
                order.get_or_insert_with(|| Box::new(Order { keys: Vec::new(), next: 0, pending: Vec::new() })).keys.push(key);
            }
        }
        for o in nodes.iter_mut().filter_map(|s| s.tensors.as_mut().and_then(|t| t.order.as_mut())).chain(leaves.iter_mut().filter_map(|l| l.order.as_mut())) {
            o.keys.sort_unstable_by_key(|&(seq, i)| (Reverse(seq), i));
        }
        // The nodes that will leave the heap: the roots and every node an edge leads to.
        let mut is_root = vec![false; nodes.len()];
        for e in &root_edges {
            if let Edge::Node(n, _) = e {
                is_root[nodes.index(n)] = true;
            }
        }
        frontier = (0..nodes.len()).filter(|&i| nodes[i].deps > 0 || is_root[i]).collect();
        frontier.sort_unstable_by_key(|&i| Reverse(nodes[i].node.seq()));
        // Where observable work happens: observable nodes, and leaves with hooks (after their
        // last producer).
        barriers = frontier.iter().map(|&i| &nodes[i].node).filter(|n| is_observable(n)).map(|n| n.seq()).collect();
        for (l, &last) in leaves.iter().zip(&leaf_last) {
            if last != u64::MAX && {
                let (hooks, post) = l.tensor.leaf_hooks();
                !hooks.is_empty() || !post.is_empty()
            } {
                barriers.push(last);
            }
        }
        barriers.sort_unstable_by_key(|&s| Reverse(s));
        barriers.dedup();
    }

    let captured: Vec<Option<Tensor>> = vec![None; targets.as_ref().map(|t| t.len()).unwrap_or(0)];
    let lane = !parallel && !req.create_graph && targets.as_ref().is_none_or(|ts| ts.iter().all(|t| matches!(t, Edge::Leaf(_)))) && !super::is_anomaly_enabled() && !super::profiler::is_enabled();
    let mut run = Run { nodes, leaves, leaf_index, targets, captured, heap: BinaryHeap::new(), deferred: None, phase: Vec::new(), failed_above: None, req: &req, lane, polls: 0, last_poll: std::time::Instant::now() };

    let _bw = super::profiler::is_enabled().then(super::profiler::backward_mark);
    // Seed the roots.
    let _mode = GradModeGuard::new(req.create_graph);
    for (e, g) in root_edges.iter().zip(root_grads) {
        match e {
            Edge::Leaf(t) => {
                let li = run.leaf_index[&t.addr()];
                add_grad(&mut run.leaves[li].grad, g)?;
            }
            Edge::Node(n, nr) => {
                let ni = run.nodes.index(n);
                add_grad(&mut run.nodes.row(ni, n).tensors().buffer[*nr as usize], g)?;
            }
        }
    }
    for e in &root_edges {
        if let Edge::Node(n, _) = e {
            let ni = run.nodes.index(n);
            if run.nodes.waiting(ni, n) == 0 && !run.heap.iter().any(|&(_, i)| i == ni) {
                run.heap.push((n.seq(), ni));
            }
        }
    }
    for li in 0..run.leaves.len() {
        if run.leaves[li].deps == 0 && run.leaves[li].needed {
            run.finish_leaf(li)?;
        }
    }

    // 3. Run.
    if parallel {
        run.deferred = Some(BinaryHeap::new());
        run.run_parallel(&frontier, &barriers)?;
    } else {
        run.run_sequential()?;
    }
    let Run { targets, mut captured, .. } = run;

    // backward(inputs=[non-leaf]): those tensors accumulate what reached them
    if let (Some(ts), Some(ins), true) = (&targets, req.inputs, req.accumulate) {
        for (k, t) in ts.iter().enumerate() {
            if let (Edge::Node(..), Some(g)) = (t, captured[k].take()) {
                accumulate_grad(&ins[k], g, req.create_graph)?;
            }
        }
    }
    if targets.is_some() && !req.accumulate && !req.allow_unused && captured.iter().any(|c| c.is_none()) {
        return Err(Error::runtime(
            "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
        ));
    }
    Ok(captured)
}
