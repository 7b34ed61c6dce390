//! The backward engine.
//!
//! 1. Discover the nodes reachable from the roots and mark those that lead to something that
//!    needs a gradient (a target, or a leaf when accumulating).
//! 2. Count, for each needed node, the edges arriving from needed nodes.
//! 3. Run nodes whose count reached zero, highest sequence number first (reverse creation order,
//!    as torch). Gradients arriving at one input are summed in arrival order, which this fixed
//!    schedule makes the same on every run.
//! 4. Undo broadcasting once per edge (sum to the input's shape) and cast to the input's dtype.
//! 5. Leaves accumulate into `.grad` when their last contribution arrived.

use super::node::{Edge, TensorMeta};
use super::tape::NodeRef;
use super::{GradModeGuard};
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::Tensor;
use std::collections::BinaryHeap;
use std::hash::{BuildHasherDefault, Hasher};

/// Keys are node/tensor addresses: a multiplicative hash is enough and much cheaper than SipHash.
#[derive(Default)]
struct AddrHasher(u64);
impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (v as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<AddrHasher>>;

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

struct NodeState {
    node: NodeRef,
    deps: usize,
    needed: bool,
    buffer: Vec<Option<Tensor>>,
}

struct LeafState {
    tensor: Tensor,
    deps: usize,
    needed: bool,
    grad: Option<Tensor>,
}

/// The shape part of torch's Size repr: `torch.Size([2, 3])`.
fn size_str(shape: &[usize]) -> String {
    format!("torch.Size({:?})", shape)
}

fn add_grad(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(prev) => ops::add(&prev, &g)?,
    });
    Ok(())
}

/// Sum a gradient down to its input's shape and cast it to the input's dtype.
fn conform(g: Tensor, meta: &TensorMeta, name: &str, index: usize) -> Result<Tensor> {
    let shape = g.shape();
    let g = if shape[..] != meta.shape[..] {
        if crate::tensor::layout::broadcast_shapes(&shape, &meta.shape).map(|s| s[..] == shape[..]).unwrap_or(false)
            && shape.len() >= meta.shape.len()
        {
            ops::sum_to(&g, &meta.shape)?
        } else {
            return Err(Error::runtime(format!(
                "Function {} returned an invalid gradient at index {} - got {:?} but expected shape compatible with {:?}",
                name, index, &shape[..], &meta.shape[..]
            )));
        }
    } else {
        g
    };
    if g.dtype() != meta.dtype {
        return ops::to_dtype(&g, meta.dtype);
    }
    Ok(g)
}

/// AccumulateGrad: add `g` into `leaf.grad` with torch's rules.
pub fn accumulate_grad(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    match leaf.grad() {
        None => {
            let g = if create_graph {
                g
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
fn with_forward_stack(mut e: Error, extras: &Option<Box<super::NodeExtras>>) -> Error {
    if let Some(stack) = extras.as_ref().and_then(|x| x.forward_stack.as_ref()) {
        if e.payload.is_none() {
            e.msg = format!("{}\n\nTraceback of forward call that caused the error:\n{}", e.msg, stack);
        }
    }
    e
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
                Tensor::full(&root.shape(), 1.0, root.dtype())?
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
    let is_target = |e: &Edge| -> bool {
        match &targets {
            None => false,
            Some(ts) => ts.iter().any(|t| t.key() == e.key()),
        }
    };

    // 1. Discovery, in post-order so children are settled before parents.
    let mut nodes: Vec<NodeState> = Vec::new();
    let mut node_index: HashMap<usize, usize> = HashMap::default();
    let mut leaves: Vec<LeafState> = Vec::new();
    let mut leaf_index: HashMap<usize, usize> = HashMap::default();
    let mut post: Vec<usize> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut visit_leaf = |t: &Tensor, leaves: &mut Vec<LeafState>| -> usize {
        *leaf_index.entry(t.addr()).or_insert_with(|| {
            leaves.push(LeafState { tensor: t.clone(), deps: 0, needed: false, grad: None });
            leaves.len() - 1
        })
    };
    for e in &root_edges {
        match e {
            Edge::Leaf(t) => {
                visit_leaf(t, &mut leaves);
            }
            Edge::Node(n, _) => {
                if node_index.contains_key(&n.addr()) {
                    continue;
                }
                node_index.insert(n.addr(), nodes.len());
                nodes.push(NodeState { node: n.clone(), deps: 0, needed: false, buffer: vec![None; n.outputs.len()] });
                stack.push((nodes.len() - 1, 0));
                while let Some(&mut (idx, ref mut next)) = stack.last_mut() {
                    let node = nodes[idx].node.clone();
                    if *next < node.edges.len() {
                        let e = *next;
                        *next += 1;
                        match &node.edges[e] {
                            Some(Edge::Node(child, _)) => {
                                if !node_index.contains_key(&child.addr()) {
                                    node_index.insert(child.addr(), nodes.len());
                                    nodes.push(NodeState {
                                        node: child.clone(),
                                        deps: 0,
                                        needed: false,
                                        buffer: vec![None; child.outputs.len()],
                                    });
                                    stack.push((nodes.len() - 1, 0));
                                }
                            }
                            Some(Edge::Leaf(t)) => {
                                visit_leaf(t, &mut leaves);
                            }
                            None => {}
                        }
                    } else {
                        post.push(idx);
                        stack.pop();
                    }
                }
            }
        }
    }

    // Which leaves and nodes are needed.
    for leaf in leaves.iter_mut() {
        leaf.needed = match &targets {
            None => req.accumulate,
            Some(_) => is_target(&Edge::Leaf(leaf.tensor.clone())),
        };
    }
    for &idx in &post {
        let node = nodes[idx].node.clone();
        let mut needed = false;
        for e in node.edges.iter().flatten() {
            needed |= match e {
                Edge::Leaf(t) => leaves[leaf_index[&t.addr()]].needed,
                Edge::Node(c, nr) => nodes[node_index[&c.addr()]].needed || is_target(&Edge::Node(c.clone(), *nr)),
            };
        }
        nodes[idx].needed = needed;
    }

    // 2. Dependency counts over edges between needed things.
    for &idx in &post {
        if !nodes[idx].needed {
            continue;
        }
        let node = nodes[idx].node.clone();
        for e in node.edges.iter().flatten() {
            match e {
                Edge::Leaf(t) => {
                    let l = &mut leaves[leaf_index[&t.addr()]];
                    if l.needed {
                        l.deps += 1;
                    }
                }
                Edge::Node(c, _) => {
                    let ci = node_index[&c.addr()];
                    nodes[ci].deps += 1;
                }
            }
        }
    }

    let mut captured: Vec<Option<Tensor>> = vec![None; targets.as_ref().map(|t| t.len()).unwrap_or(0)];
    let finish_leaf = |leaf: &mut LeafState, captured: &mut Vec<Option<Tensor>>| -> Result<()> {
        let Some(mut g) = leaf.grad.take() else { return Ok(()) };
        let (hooks, post) = leaf.tensor.leaf_hooks();
        for h in &hooks {
            if let Some(r) = h(&g)? {
                g = r;
            }
        }
        if let Some(ts) = &targets {
            for (k, t) in ts.iter().enumerate() {
                if t.key() == leaf.tensor.addr() {
                    captured[k] = Some(g.clone());
                }
            }
            if !req.accumulate {
                return Ok(());
            }
        }
        accumulate_grad(&leaf.tensor, g, req.create_graph)?;
        for h in &post {
            h(&leaf.tensor)?;
        }
        Ok(())
    };

    let _bw = super::profiler::is_enabled().then(super::profiler::backward_mark);
    // Seed the roots.
    let _mode = GradModeGuard::new(req.create_graph);
    let mut heap: BinaryHeap<(u64, usize)> = BinaryHeap::new();
    for (e, g) in root_edges.iter().zip(root_grads) {
        match e {
            Edge::Leaf(t) => {
                let li = leaf_index[&t.addr()];
                add_grad(&mut leaves[li].grad, g)?;
            }
            Edge::Node(n, nr) => {
                let ni = node_index[&n.addr()];
                add_grad(&mut nodes[ni].buffer[*nr as usize], g)?;
            }
        }
    }
    for e in &root_edges {
        if let Edge::Node(n, _) = e {
            let ni = node_index[&n.addr()];
            if nodes[ni].deps == 0 && !heap.iter().any(|&(_, i)| i == ni) {
                heap.push((n.seq, ni));
            }
        }
    }
    for li in 0..leaves.len() {
        if leaves[li].deps == 0 && leaves[li].needed {
            finish_leaf(&mut leaves[li], &mut captured)?;
        }
    }

    // 3. Run.
    while let Some((_, ni)) = heap.pop() {
        let node = nodes[ni].node.clone();
        let mut buffer = std::mem::take(&mut nodes[ni].buffer);

        if let Some(ts) = &targets {
            for (k, t) in ts.iter().enumerate() {
                if let Edge::Node(tn, nr) = t {
                    if tn.ptr_eq(&node) {
                        captured[k] = buffer[*nr as usize].clone();
                    }
                }
            }
        }
        let extras = node.extras.lock().clone();
        if let Some(ex) = &extras {
            // Tensor hooks first (they may replace the gradient), then retain_grad sees the result.
            for (_, nr, h) in &ex.tensor_hooks {
                if let Some(g) = &buffer[*nr as usize] {
                    if let Some(r) = h(g)? {
                        buffer[*nr as usize] = Some(r);
                    }
                }
            }
        }
        let retained = extras.as_ref().map(|ex| ex.retained.clone());
        if let Some(retained) = retained {
            for (nr, weak) in retained {
                if let (Some(t), Some(g)) = (weak.upgrade(), &buffer[nr as usize]) {
                    let t = Tensor::from_impl(t);
                    let g = if req.create_graph { g.clone() } else { g.alias() };
                    match t.grad() {
                        None => t.set_grad(Some(if req.create_graph { g } else { ops::contiguous_copy(&g)? })),
                        Some(prev) => t.set_grad(Some(ops::add(&prev, &g)?)),
                    }
                }
            }
        }
        if !nodes[ni].needed {
            continue;
        }

        let name = node.name();
        if let Some(ex) = &extras {
            for (_, h) in &ex.pre_hooks {
                if let Some(r) = h(&buffer)? {
                    buffer = r;
                }
            }
        }
        let grads_out_for_hooks = if extras.as_ref().map(|e| !e.post_hooks.is_empty()).unwrap_or(false) { Some(buffer.clone()) } else { None };
        let mut grads_in: Vec<Option<Tensor>> = if buffer.iter().all(|g| g.is_none()) {
            vec![None; node.edges.len()]
        } else {
            let mut func = node.func.lock();
            if func.materialize_grads() {
                for (k, slot) in buffer.iter_mut().enumerate() {
                    if slot.is_none() {
                        let m = &node.outputs[k];
                        *slot = Some(Tensor::zeros(&m.shape, m.dtype)?);
                    }
                }
            }
            let _prof = super::profiler::scope_owned(name.clone());
            let out = match func.apply(&node, std::mem::take(&mut buffer)) {
                Ok(o) => o,
                Err(e) => return Err(with_forward_stack(e, &extras)),
            };
            if !req.keep_graph {
                func.release();
            }
            out
        };
        if let (Some(ex), Some(gout)) = (&extras, &grads_out_for_hooks) {
            for (_, h) in &ex.post_hooks {
                if let Some(r) = h(&grads_in, gout)? {
                    grads_in = r;
                }
            }
        }
        if super::is_anomaly_enabled() && super::is_anomaly_check_nan_enabled() {
            for (i, g) in grads_in.iter().enumerate() {
                if let Some(g) = g {
                    if g.dtype().is_float() && ops::has_nan(g) {
                        let e = Error::runtime(format!("Function '{}' returned nan values in its {}th output.", name, i));
                        return Err(with_forward_stack(e, &extras));
                    }
                }
            }
        }
        if grads_in.len() != node.edges.len() {
            return Err(Error::runtime(format!(
                "function {} returned an incorrect number of gradients (expected {}, got {})",
                name,
                node.edges.len(),
                grads_in.len()
            )));
        }
        for (i, (edge, g)) in node.edges.iter().zip(grads_in).enumerate() {
            let Some(edge) = edge else { continue };
            let g = match g {
                Some(g) => Some(conform(g, &node.inputs[i], &name, i)?),
                None => None,
            };
            match edge {
                Edge::Leaf(t) => {
                    let li = leaf_index[&t.addr()];
                    let leaf = &mut leaves[li];
                    if !leaf.needed {
                        continue;
                    }
                    if let Some(g) = g {
                        add_grad(&mut leaf.grad, g)?;
                    }
                    leaf.deps -= 1;
                    if leaf.deps == 0 {
                        finish_leaf(leaf, &mut captured)?;
                    }
                }
                Edge::Node(c, nr) => {
                    let ci = node_index[&c.addr()];
                    let st = &mut nodes[ci];
                    if let Some(g) = g {
                        add_grad(&mut st.buffer[*nr as usize], g)?;
                    }
                    st.deps -= 1;
                    if st.deps == 0 {
                        heap.push((c.seq, ci));
                    }
                }
            }
        }
    }

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
