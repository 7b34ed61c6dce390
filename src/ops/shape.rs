//! Views and shape ops. Views share storage and the version counter with their base; their
//! backward rules are themselves views or their adjoints (`embed`).

use super::{cast_raw, meta, needs_grad, record, zeros_like};
use crate::autograd::{GradModeGuard, SavedTensor};
use crate::backend::cpu;
use crate::bail;
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::layout::{self, checked_view_numel, contiguous_strides, numel, wrap_dim, Layout};
use crate::tensor::storage;
use crate::tensor::{DType, Shape, Tensor, ViewCreation};
use smallvec::{smallvec, SmallVec};
use std::sync::Arc;

/// A differentiable view function, kept by nodes whose backward must re-apply it.
pub type ViewFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// A view of `x` with `layout`, recorded with `rule` as its backward, remembering how to
/// re-create it from its base (`replay`) so in-place ops on it can update the base's history.
fn view_node(
    x: &Tensor,
    layout: Layout,
    name: &'static str,
    rule: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
    replay: ViewFn,
) -> Tensor {
    let out = x.view_with_layout(layout);
    // a view of a view made in no_grad mode or by a multi-output op is made that way too
    let creation = match (crate::autograd::is_grad_enabled(), x.view_creation()) {
        (false, _) => ViewCreation::NoGrad,
        (true, Some(prev)) => prev,
        (true, None) => ViewCreation::Default,
    };
    // Note [Flat view replay]: a view of a view replays from the base in one as_strided when it
    // can, so a chain of views neither holds nor runs (nor drops, recursively) one closure per step
    let (base, replay) = match x.view_info() {
        Some((base, prev)) => {
            let flat = out.with_layout(|ol| base.with_layout(|bl| flat_replay(bl, ol)));
            (base, flat.unwrap_or_else(|| Arc::new(move |t: &Tensor| replay(&prev(t)?)) as ViewFn))
        }
        None => (x.clone(), replay),
    };
    out.set_view_info(base, replay, creation);
    if needs_grad(&[x]) {
        record(&[&out], &[x], name, saved!(), move |_, gs| Ok(smallvec![Some(rule(&gs[0])?)]));
    }
    out
}

/// The grad_fn of view `v` through its base's current history: the view's gradient scattered
/// into the base's shape (torch's AsStridedBackward0). See Note [View + in-place].
pub fn view_grad_fn(v: &Tensor, base: &Tensor, replay: ViewFn) -> Option<crate::autograd::NodeRef> {
    let base_shape = base.shape();
    let vx = v.alias();
    record(&[&vx], &[base], "AsStridedBackward0", saved!(), move |_, gs| Ok(smallvec![Some(embed(&gs[0], &base_shape, replay.clone(), "AsStridedScatterBackward0")?)]));
    vx.grad_fn()
}

/// A stale view torch refuses to regenerate (made in no_grad mode or by a multi-output op): its
/// grad_fn raises torch's error when backward reaches it.
pub fn view_error_fn(v: &Tensor, base: &Tensor, err: Error) -> Option<crate::autograd::NodeRef> {
    let vx = v.alias();
    let msg = err.msg;
    record(&[&vx], &[base], "AsStridedBackward0", saved!(), move |_, _| Err(Error::runtime(msg.clone())));
    vx.grad_fn()
}

/// torch's error for modifying in place a view made in no_grad mode or by a multi-output op
/// (`indirect`: its base or another view of its base was modified).
pub fn view_rebase_error(v: &Tensor, creation: ViewCreation, indirect: bool) -> Error {
    let what = if indirect { "its base or another view of its base has been modified inplace" } else { "is being modified inplace" };
    let head = match v.raw_grad_fn() {
        (Some(n), nr) => format!("Output {} of {} is a view and {}.", nr, function_name(&n.name()), what),
        (None, _) => format!("A view was created in no_grad mode and {} with grad mode enabled.", what),
    };
    let tail = match creation {
        ViewCreation::MultiOutput => " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.",
        _ => " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
    };
    Error::runtime(format!("{}{}", head, tail))
}

/// torch names a function in these errors by its node's name without "Backward0".
fn function_name(node: &str) -> &str {
    let n = node.trim_end_matches(|c: char| c.is_ascii_digit());
    n.strip_suffix("Backward").unwrap_or(node)
}

/// Resolve a shape with at most one -1 against `n` elements.
pub fn infer_shape(shape: &[i64], n: usize) -> Result<Shape> {
    let mut out: Shape = SmallVec::with_capacity(shape.len());
    let mut infer = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                bail!(Runtime, "only one dimension can be inferred");
            }
            infer = Some(i);
            out.push(1);
        } else if s < 0 {
            bail!(Runtime, "invalid shape dimension {}", s);
        } else {
            known = known.saturating_mul(s as usize);
            out.push(s as usize);
        }
    }
    let bad = || Error::runtime(format!("shape '{:?}' is invalid for input of size {}", shape, n));
    match infer {
        Some(_) if known == 0 && n == 0 => bail!(
            Runtime,
            "cannot reshape tensor of 0 elements into shape {:?} because the unspecified dimension size -1 can be any value and is ambiguous",
            shape
        ),
        Some(i) => {
            if known == 0 || n % known != 0 {
                return Err(bad());
            }
            out[i] = n / known;
        }
        None => {
            if known != n {
                return Err(bad());
            }
        }
    }
    checked_view_numel(&out)?;
    Ok(out)
}

/// Strides for viewing `l` as `shape` without copying, if possible (torch's computeStride).
fn view_strides(l: &Layout, shape: &[usize]) -> Option<SmallVec<[usize; 4]>> {
    if l.is_contiguous() {
        return Some(contiguous_strides(shape));
    }
    let n = l.numel();
    if n == 0 {
        return Some(contiguous_strides(shape));
    }
    let mut new_strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, shape.len());
    let mut view_d = shape.len() as isize - 1;
    let mut chunk_base_stride = *l.strides.last().unwrap_or(&1);
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..l.ndim()).rev() {
        tensor_numel *= l.shape[tensor_d];
        if tensor_d == 0 || (l.shape[tensor_d - 1] != 1 && l.strides[tensor_d - 1] != tensor_numel * chunk_base_stride) {
            while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = l.strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}

pub fn view(x: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::view");
    let l = x.layout();
    let shape = infer_shape(shape, l.numel())?;
    let strides = view_strides(&l, &shape).ok_or_else(|| {
        Error::runtime("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    })?;
    let in_shape = l.shape.clone();
    let out_shape = shape.clone();
    Ok(view_node(x, Layout { shape, strides, offset: l.offset }, "ViewBackward0", move |g| reshape_to(g, &in_shape), Arc::new(move |t| reshape_to(t, &out_shape))))
}

pub fn reshape(x: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::reshape");
    let l = x.layout();
    let new_shape = infer_shape(shape, l.numel())?;
    if let Some(strides) = view_strides(&l, &new_shape) {
        let in_shape = l.shape.clone();
        let out_shape = new_shape.clone();
        return Ok(view_node(x, Layout { shape: new_shape, strides, offset: l.offset }, "ViewBackward0", move |g| reshape_to(g, &in_shape), Arc::new(move |t| reshape_to(t, &out_shape))));
    }
    // A copy, then a view of the copy (torch names that node UnsafeViewBackward0).
    Ok(unsafe_view(&contiguous(x)?, &new_shape))
}

/// torch's `_unsafe_view` of a fresh contiguous result c (nobody else sees c): c's data in
/// `shape`, recorded as UnsafeViewBackward0 rather than as a view of c.
pub fn unsafe_view(c: &Tensor, shape: &[usize]) -> Tensor {
    let in_shape = c.shape();
    let out = c.view_with_layout(Layout::contiguous(shape));
    if needs_grad(&[c]) {
        record(&[&out], &[c], "UnsafeViewBackward0", saved!(), move |_, gs| Ok(smallvec![Some(reshape_to(&gs[0], &in_shape)?)]));
    }
    out
}

pub fn reshape_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let s: SmallVec<[i64; 4]> = shape.iter().map(|&d| d as i64).collect();
    reshape(x, &s)
}

pub fn flatten(x: &Tensor, start: i64, end: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::flatten");
    let shape = x.shape();
    let (s, e) = (wrap_dim(start, shape.len())?, wrap_dim(end, shape.len())?);
    if s > e {
        bail!(Runtime, "flatten() has invalid args: start_dim cannot come after end_dim");
    }
    if shape.is_empty() {
        return reshape(x, &[1]);
    }
    if s == e {
        return Ok(x.clone()); // torch returns the tensor itself
    }
    let mut new: SmallVec<[i64; 4]> = shape[..s].iter().map(|&d| d as i64).collect();
    new.push(shape[s..=e].iter().product::<usize>() as i64);
    new.extend(shape[e + 1..].iter().map(|&d| d as i64));
    reshape(x, &new)
}

pub fn unsqueeze(x: &Tensor, dim: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::unsqueeze");
    let l = x.layout();
    let d = wrap_dim(dim, l.ndim() + 1)?;
    let mut shape = l.shape.clone();
    let mut strides = l.strides.clone();
    let st = if d < l.ndim() { l.strides[d] * l.shape[d] } else { 1 };
    shape.insert(d, 1);
    strides.insert(d, st);
    Ok(view_node(x, Layout { shape, strides, offset: l.offset }, "UnsqueezeBackward0", move |g| squeeze_dims(g, &[d as i64], "SqueezeBackward1"), Arc::new(move |t| unsqueeze(t, d as i64))))
}

/// squeeze(dims): None squeezes every size-1 dim.
pub fn squeeze(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::squeeze");
    match dims {
        None => {
            let all: SmallVec<[i64; 4]> = (0..x.ndim() as i64).collect();
            squeeze_dims(x, &all, "SqueezeBackward0")
        }
        Some(ds) => squeeze_dims(x, ds, if ds.len() == 1 { "SqueezeBackward1" } else { "SqueezeBackward2" }),
    }
}

pub(crate) fn squeeze_dims(x: &Tensor, dims: &[i64], name: &'static str) -> Result<Tensor> {
    let l = x.layout();
    let mut drop = vec![false; l.ndim()];
    let mut seen = vec![false; l.ndim()];
    for &d in dims {
        let d = wrap_dim(d, l.ndim())?;
        if l.ndim() > 0 && std::mem::replace(&mut seen[d], true) {
            bail!(Runtime, "dim {} appears multiple times in the list of dims", d);
        }
        if l.ndim() > 0 && l.shape[d] == 1 {
            drop[d] = true;
        }
    }
    let mut shape = Shape::new();
    let mut strides = SmallVec::new();
    for i in 0..l.ndim() {
        if !drop[i] {
            shape.push(l.shape[i]);
            strides.push(l.strides[i]);
        }
    }
    let in_shape = l.shape.clone();
    let out_shape = shape.clone();
    Ok(view_node(x, Layout { shape, strides, offset: l.offset }, name, move |g| reshape_to(g, &in_shape), Arc::new(move |t| reshape_to(t, &out_shape))))
}

pub fn transpose(x: &Tensor, d0: i64, d1: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::transpose");
    let l = x.layout();
    if l.ndim() == 0 {
        wrap_dim(d0, 0)?;
        wrap_dim(d1, 0)?;
        return Ok(view_node(x, l, "TransposeBackward0", |g| Ok(g.clone()), Arc::new(|t| Ok(t.clone()))));
    }
    let (a, b) = (wrap_dim(d0, l.ndim())?, wrap_dim(d1, l.ndim())?);
    let mut nl = l.clone();
    nl.shape.swap(a, b);
    nl.strides.swap(a, b);
    Ok(view_node(x, nl, "TransposeBackward0", move |g| transpose(g, a as i64, b as i64), Arc::new(move |t| transpose(t, a as i64, b as i64))))
}

pub fn permute(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::permute");
    let l = x.layout();
    let nd = l.ndim();
    if dims.len() != nd {
        bail!(Runtime, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}", nd, dims.len());
    }
    let mut seen = vec![false; nd];
    let mut perm = Vec::with_capacity(nd);
    for &d in dims {
        let d = wrap_dim(d, nd)?;
        if seen[d] {
            bail!(Runtime, "permute(): duplicate dims are not allowed.");
        }
        seen[d] = true;
        perm.push(d);
    }
    let nl = Layout { shape: perm.iter().map(|&p| l.shape[p]).collect(), strides: perm.iter().map(|&p| l.strides[p]).collect(), offset: l.offset };
    let mut inv = vec![0i64; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i as i64;
    }
    let fwd: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
    Ok(view_node(x, nl, "PermuteBackward0", move |g| permute(g, &inv), Arc::new(move |t| permute(t, &fwd))))
}

/// x.t(): transpose of a matrix; vectors and scalars come back as views of themselves.
pub fn t(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::t");
    let nd = x.ndim();
    if nd > 2 {
        bail!(Runtime, "t() expects a tensor with <= 2 dimensions, but self is {}D", nd);
    }
    let mut nl = x.layout();
    nl.shape.reverse();
    nl.strides.reverse();
    let swap = nd == 2;
    Ok(view_node(x, nl, "TBackward0", move |g| if swap { t(g) } else { Ok(g.clone()) }, Arc::new(move |v| if swap { t(v) } else { Ok(v.clone()) })))
}

/// Move one dim to another position (a permute).
pub fn movedim(x: &Tensor, src: usize, dst: usize) -> Result<Tensor> {
    let nd = x.ndim();
    let mut order: Vec<i64> = (0..nd as i64).filter(|&d| d != src as i64).collect();
    order.insert(dst, src as i64);
    permute(x, &order)
}

/// expand(sizes): -1 keeps a dim; new leading dims are allowed.
pub fn expand(x: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::expand");
    let l = x.layout();
    if sizes.len() < l.ndim() {
        bail!(Runtime, "expand(torch.FloatTensor{{{:?}}}, size=[{:?}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})", &l.shape[..], sizes, sizes.len(), l.ndim());
    }
    let lead = sizes.len() - l.ndim();
    let mut shape: Shape = SmallVec::with_capacity(sizes.len());
    for (i, &s) in sizes.iter().enumerate() {
        if s == -1 {
            if i < lead {
                bail!(Runtime, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {}", i);
            }
            shape.push(l.shape[i - lead]);
        } else if s < 0 {
            bail!(Runtime, "invalid shape dimension {}", s);
        } else {
            shape.push(s as usize);
        }
    }
    let nl = l.broadcast_to(&shape)?;
    checked_view_numel(&shape)?;
    let in_shape = l.shape.clone();
    let out_shape = shape.clone();
    Ok(view_node(x, nl, "ExpandBackward0", move |g| sum_to(g, &in_shape), Arc::new(move |t| expand_to(t, &out_shape))))
}

pub fn expand_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let s: SmallVec<[i64; 4]> = shape.iter().map(|&d| d as i64).collect();
    expand(x, &s)
}

/// Sum `g` down to `shape` over broadcast dims (the adjoint of expand). Used by the engine.
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sum_to_size");
    let gs = g.shape();
    if gs[..] == *shape {
        return Ok(g.clone());
    }
    let lead = gs.len() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && gs[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    let r = if dims.is_empty() { g.clone() } else { super::sum(g, Some(&dims), true, None)? };
    // drop the leading dims (kept as 1 by keepdim)
    reshape_to(&r, shape)
}

pub fn contiguous(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::contiguous");
    if x.is_contiguous() {
        return Ok(x.clone());
    }
    let out = cpu::contiguous(x)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "CloneBackward0", saved!(), |_, gs| Ok(smallvec![Some(gs[0].clone())]));
    }
    Ok(out)
}

pub fn clone(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::clone");
    let out = cpu::clone_preserving(x)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "CloneBackward0", saved!(), |_, gs| Ok(smallvec![Some(gs[0].clone())]));
    }
    Ok(out)
}

/// A contiguous copy that is never recorded (the engine's gradient buffers).
pub fn contiguous_copy(x: &Tensor) -> Result<Tensor> {
    Ok(cpu::contiguous(x)?)
}

/// dst += src without recording (gradient accumulation into an existing `.grad`).
pub fn add_inplace_raw(dst: &Tensor, src: &Tensor) -> Result<()> {
    let _g = GradModeGuard::new(false);
    if plain_pair(dst, src) {
        update_plain(dst, src, |a, b| a + b, |a, b| a + b);
        dst.bump_version();
        return Ok(());
    }
    let sum = super::add(dst, src)?;
    cpu::copy_into(dst, &sum)?;
    dst.bump_version();
    Ok(())
}

/// Differentiable dtype conversion (ToCopyBackward0 between float types).
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let _prof = crate::prof!("aten::to");
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let out = cpu::cast(x, dtype)?;
    if dtype.is_float() && x.dtype().is_float() && needs_grad(&[x]) {
        record(&[&out], &[x], "ToCopyBackward0", saved!(), |ctx, gs| Ok(smallvec![Some(to_dtype(&gs[0], ctx.input_meta(0).dtype())?)]));
    }
    Ok(out)
}

/// Zeros of `shape` with `g` written into the region `region` selects: the adjoint of a view.
/// Its own backward applies the view again, so double backward through views works.
pub fn embed(g: &Tensor, shape: &[usize], region: ViewFn, name: &'static str) -> Result<Tensor> {
    let out = Tensor::zeros_on(shape, g.dtype(), g.device())?;
    let overlapping = {
        let _ng = GradModeGuard::new(false);
        let target = region(&out)?;
        let tl = target.layout();
        if non_overlapping(&tl) {
            cpu::copy_into(&target, g)?;
            None
        } else {
            Some(tl)
        }
    };
    if let Some(tl) = overlapping {
        // several of the view's elements are one of `out`'s (an expanded view): their gradients add up
        return strided_transfer(g, &tl, &out.layout());
    }
    if needs_grad(&[g]) {
        record(&[&out], &[g], name, saved!(), move |_, gs| Ok(smallvec![Some(region(&gs[0])?)]));
    }
    Ok(out)
}

/// Whether no two elements of `l` share a storage position (a sufficient test: the dims of size
/// > 1, by increasing stride, each step past the extent of the smaller ones).
pub fn non_overlapping(l: &Layout) -> bool {
    if l.numel() <= 1 {
        return true;
    }
    let mut dims: SmallVec<[(usize, usize); 4]> = l.shape.iter().copied().zip(l.strides.iter().copied()).filter(|&(n, _)| n > 1).collect();
    dims.sort_by_key(|&(_, st)| st);
    let mut need = 1usize;
    for (n, st) in dims {
        if st < need {
            return false;
        }
        need = match st.checked_mul(n) {
            Some(v) => v,
            None => return true, // the next stride cannot be larger: this is the last dim that counts
        };
    }
    true
}

/// The base index (one entry per base dim) of the storage distance `off` from the base's first
/// element, when the base is non-overlapping (`dims`: its dims of size > 1 by decreasing stride).
fn decode_offset(base: &Layout, dims: &[usize], mut off: usize) -> Option<SmallVec<[usize; 4]>> {
    let mut idx: SmallVec<[usize; 4]> = SmallVec::from_elem(0, base.ndim());
    for &d in dims {
        let j = off / base.strides[d];
        if j >= base.shape[d] {
            return None;
        }
        idx[d] = j;
        off -= j * base.strides[d];
    }
    (off == 0).then_some(idx)
}

/// Note [Flat view replay]: the view with layout `view` of a base with layout `base` as one
/// as_strided of any tensor `t` of the base's shape, when the base is non-overlapping and each
/// step along each view dim moves by a whole base index (so does every view made by view ops).
/// Then the view's element i is the base's element start + Σ_k i_k·delta_k, found in `t` at
/// t.offset + Σ_d (start_d + Σ_k i_k·delta_kd)·t.stride_d: a view of `t`, whatever its strides.
/// None when the view cannot be expressed so (the caller composes the steps' replays instead).
pub fn flat_replay(base: &Layout, view: &Layout) -> Option<ViewFn> {
    let bnd = base.ndim();
    let base_shape = base.shape.clone();
    let view_shape = view.shape.clone();
    if view.numel() == 0 {
        return Some(Arc::new(move |t: &Tensor| {
            let l = t.layout();
            if l.shape != base_shape {
                bail!(Runtime, "view replay: expected a tensor of shape {:?}, got {:?}", &base_shape[..], &l.shape[..]);
            }
            let nl = Layout { strides: contiguous_strides(&view_shape), shape: view_shape.clone(), offset: l.offset };
            Ok(strided_view(t, nl))
        }));
    }
    if !non_overlapping(base) || view.offset < base.offset {
        return None;
    }
    let mut dims: SmallVec<[usize; 4]> = (0..bnd).filter(|&d| base.shape[d] > 1).collect();
    dims.sort_by(|&a, &b| base.strides[b].cmp(&base.strides[a]));
    let start = decode_offset(base, &dims, view.offset - base.offset)?;
    let mut deltas: Vec<SmallVec<[usize; 4]>> = Vec::with_capacity(view.ndim());
    let mut reach = start.clone();
    for k in 0..view.ndim() {
        let dk = if view.shape[k] > 1 { decode_offset(base, &dims, view.strides[k])? } else { SmallVec::from_elem(0, bnd) };
        for d in 0..bnd {
            reach[d] = reach[d].checked_add(dk[d].checked_mul(view.shape[k] - 1)?)?;
        }
        deltas.push(dk);
    }
    if (0..bnd).any(|d| reach[d] >= base.shape[d].max(1)) {
        return None;
    }
    Some(Arc::new(move |t: &Tensor| {
        let l = t.layout();
        if l.shape != base_shape {
            bail!(Runtime, "view replay: expected a tensor of shape {:?}, got {:?}", &base_shape[..], &l.shape[..]);
        }
        let strides = deltas.iter().map(|dk| (0..bnd).map(|d| dk[d] * l.strides[d]).sum::<usize>()).collect();
        let offset = l.offset + (0..bnd).map(|d| start[d] * l.strides[d]).sum::<usize>();
        Ok(strided_view(t, Layout { shape: view_shape.clone(), strides, offset }))
    }))
}

/// The view of `x` with `layout` (in x's storage, already checked to lie inside it), recorded as
/// AsStridedBackward0.
fn strided_view(x: &Tensor, layout: Layout) -> Tensor {
    let xl = x.layout();
    let vl = layout.clone();
    let replay: ViewFn = match flat_replay(&xl, &layout) {
        Some(f) => f,
        None => {
            let (xl, vl) = (xl.clone(), vl.clone());
            Arc::new(move |t: &Tensor| {
                let tl = t.layout();
                if tl.shape != xl.shape || tl.strides != xl.strides || tl.offset + vl.offset < xl.offset {
                    bail!(NotImplemented, "ferrograd: replaying an as_strided view of a tensor whose elements overlap is not supported");
                }
                Ok(strided_view(t, Layout { offset: tl.offset + vl.offset - xl.offset, ..vl.clone() }))
            })
        }
    };
    view_node(x, layout, "AsStridedBackward0", move |g| strided_transfer(g, &vl, &xl), replay)
}

/// x.as_strided(size, stride, storage_offset): the view of x's storage with that geometry
/// (storage_offset defaults to x's), checked to lie inside the storage.
pub fn as_strided(x: &Tensor, size: &[i64], stride: &[i64], storage_offset: Option<i64>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::as_strided");
    if size.len() != stride.len() {
        bail!(Runtime, "mismatch in length of strides and shape");
    }
    if stride.iter().any(|&s| s < 0) {
        bail!(Runtime, "as_strided: Negative strides are not supported at the moment, got strides: {:?}", stride);
    }
    if let Some(&n) = size.iter().find(|&&n| n < 0) {
        bail!(Runtime, "Trying to create tensor with negative dimension {}: {:?}", n, size);
    }
    let l = x.layout();
    let offset = match storage_offset {
        Some(o) if o < 0 => bail!(Runtime, "Tensor: invalid storage offset {}", o),
        Some(o) => o as usize,
        None => l.offset,
    };
    let shape: Shape = size.iter().map(|&n| n as usize).collect();
    checked_view_numel(&shape)?;
    let strides: SmallVec<[usize; 4]> = stride.iter().map(|&s| s as usize).collect();
    let nl = Layout { shape, strides, offset };
    let st = x.storage();
    let need = if nl.numel() == 0 {
        Some(0)
    } else {
        nl.shape.iter().zip(nl.strides.iter()).try_fold(offset as u128 + 1, |acc, (&n, &s)| Some(acc + (n as u128 - 1) * s as u128))
    };
    let have = st.len() as u128;
    if need.is_none_or(|n| n > have) {
        let isz = x.dtype().size();
        bail!(
            Runtime,
            "setStorage: sizes {:?}, strides {:?}, storage offset {}, and itemsize {} requiring a storage size of {} are out of bounds for storage of size {}",
            size,
            stride,
            offset,
            isz,
            need.unwrap_or(u128::MAX).saturating_mul(isz as u128),
            have * isz as u128
        );
    }
    Ok(strided_view(x, nl))
}

/// The gradient that flows from a view with layout `from` (g's geometry) to a tensor with layout
/// `to` over the same storage: g summed into the storage positions the view's elements read, then
/// read at `to`'s positions (averaged over `to`'s elements that share a position, as torch's
/// as_strided backward). Its adjoint is the same transfer the other way, so double backward works.
pub fn strided_transfer(g: &Tensor, from: &Layout, to: &Layout) -> Result<Tensor> {
    let out = {
        let _ng = GradModeGuard::new(false);
        if to.numel() == 0 || from.numel() == 0 {
            Tensor::zeros_on(&to.shape, g.dtype(), g.device())?
        } else {
            let extent = |l: &Layout| l.offset + l.shape.iter().zip(l.strides.iter()).map(|(&n, &s)| (n - 1) * s).sum::<usize>();
            let lo = from.offset.min(to.offset);
            let hi = extent(from).max(extent(to)) + 1;
            let positions = |l: &Layout| -> Result<Tensor> {
                let mut pos: Vec<i64> = Vec::with_capacity(l.numel());
                l.for_each_offset(|o| pos.push((o - lo) as i64));
                let n = pos.len();
                let p = Tensor::from_vec(pos, &[n]);
                if g.is_cuda() { crate::backend::cuda::to_device(&p, g.device()) } else { Ok(p) }
            };
            let flat = reshape_to(g, &[from.numel()])?;
            let buf = super::index_put_accumulate_zeros(&[hi - lo], &[positions(from)?], &flat, g)?;
            let rel = Layout { shape: to.shape.clone(), strides: to.strides.clone(), offset: to.offset - lo };
            let read = cpu::contiguous(&buf.view_with_layout(rel.clone()))?;
            if non_overlapping(to) {
                read
            } else {
                let ones = Tensor::full_on(&[to.numel()], 1.0, g.dtype(), g.device())?;
                let count = super::index_put_accumulate_zeros(&[hi - lo], &[positions(to)?], &ones, g)?;
                let count = cpu::contiguous(&count.view_with_layout(rel))?;
                super::div(&read, &count)?
            }
        }
    };
    if needs_grad(&[g]) {
        let (from, to) = (from.clone(), to.clone());
        record(&[&out], &[g], "AsStridedBackwardBackward0", saved!(), move |_, gs| Ok(smallvec![Some(strided_transfer(&gs[0], &to, &from)?)]));
    }
    Ok(out)
}

/// x.diagonal(offset, dim1, dim2): the view of the diagonal of the (dim1, dim2) planes, as a
/// last dim.
pub fn diagonal(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::diagonal");
    let l = x.layout();
    let nd = l.ndim();
    let (d1, d2) = (wrap_dim(dim1, nd)?, wrap_dim(dim2, nd)?);
    if d1 == d2 {
        bail!(Runtime, "diagonal dimensions cannot be identical {}, {}", dim1, dim2);
    }
    let (r, c) = (l.shape[d1] as i64, l.shape[d2] as i64);
    let n = (r + offset.min(0)).min(c - offset.max(0)).max(0) as usize;
    let mut nl = Layout { shape: Shape::new(), strides: SmallVec::new(), offset: l.offset };
    if n > 0 {
        nl.offset += if offset >= 0 { offset as usize * l.strides[d2] } else { (-offset) as usize * l.strides[d1] };
    }
    for d in 0..nd {
        if d != d1 && d != d2 {
            nl.shape.push(l.shape[d]);
            nl.strides.push(l.strides[d]);
        }
    }
    nl.shape.push(n);
    nl.strides.push(l.strides[d1] + l.strides[d2]);
    let in_shape = l.shape.clone();
    let region: ViewFn = Arc::new(move |t: &Tensor| diagonal(t, offset, d1 as i64, d2 as i64));
    let replay = region.clone();
    Ok(view_node(x, nl, "DiagonalBackward0", move |g| embed(g, &in_shape, region.clone(), "DiagonalBackwardBackward0"), replay))
}

pub fn narrow(x: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::narrow");
    let nd = x.ndim();
    if nd == 0 {
        bail!(Runtime, "narrow() cannot be applied to a 0-dim tensor.");
    }
    if length < 0 {
        bail!(Runtime, "narrow(): length must be non-negative.");
    }
    let d = wrap_dim(dim, nd)?;
    let size = x.shape()[d] as i64;
    if start < -size || start > size {
        bail!(Index, "start out of range (expected to be in range of [{}, {}], but got {})", -size, size, start);
    }
    let start = if start < 0 { start + size } else { start };
    if length > size - start {
        bail!(Runtime, "start ({}) + length ({}) exceeds dimension size ({}).", start, length, size);
    }
    slice(x, d, start as usize, (start + length) as usize, 1)
}

/// x[..., start:end:step, ...] along `dim` (bounds already clamped by the caller).
pub fn slice(x: &Tensor, dim: usize, start: usize, end: usize, step: usize) -> Result<Tensor> {
    let _prof = crate::prof!("aten::slice");
    let l = x.layout();
    let mut nl = l.clone();
    let len = if end > start { (end - start).div_ceil(step) } else { 0 };
    nl.offset = l.offset + start * l.strides[dim];
    nl.shape[dim] = len;
    nl.strides[dim] = l.strides[dim] * step;
    if len == 0 {
        nl.offset = l.offset;
    }
    let in_shape = l.shape.clone();
    let region: ViewFn = Arc::new(move |t: &Tensor| slice(t, dim, start, end, step));
    let replay = region.clone();
    Ok(view_node(x, nl, "SliceBackward0", move |g| embed(g, &in_shape, region.clone(), "SliceBackwardBackward0"), replay))
}

/// x.select(dim, index): the view with `dim` removed.
pub fn select(x: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::select");
    let l = x.layout();
    if l.ndim() == 0 {
        bail!(Index, "select() cannot be applied to a 0-dim tensor.");
    }
    let d = wrap_dim(dim, l.ndim())?;
    let size = l.shape[d] as i64;
    if index < -size || index >= size {
        bail!(Index, "index {} is out of bounds for dimension {} with size {}", index, d, size);
    }
    let i = if index < 0 { index + size } else { index } as usize;
    let mut nl = l.clone();
    nl.offset = l.offset + i * l.strides[d];
    nl.shape.remove(d);
    nl.strides.remove(d);
    let in_shape = l.shape.clone();
    let region: ViewFn = Arc::new(move |t: &Tensor| select(t, d as i64, i as i64));
    let replay = region.clone();
    Ok(view_node(x, nl, "SelectBackward0", move |g| embed(g, &in_shape, region.clone(), "SelectBackwardBackward0"), replay))
}

/// x.unfold(dim, size, step): the windows of `size` elements every `step` along `dim`, as a view
/// with one more dim (the window's elements, last). A 0-dim x gives a 1-element view.
pub fn unfold_windows(x: &Tensor, dim: i64, size: i64, step: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::unfold");
    let l = x.layout();
    let nd = l.ndim();
    let d = wrap_dim(dim, nd.max(1))?;
    let n = if nd == 0 { 1 } else { l.shape[d] as i64 };
    if size > n {
        bail!(Runtime, "maximum size for tensor at dimension {} is {} but size is {}", d, n, size);
    }
    if size < 0 {
        bail!(Runtime, "size is {} but must be >= 0", size);
    }
    if step <= 0 {
        bail!(Runtime, "step is {} but must be > 0", step);
    }
    if nd == 0 {
        return unsqueeze(x, 0);
    }
    let (size, step) = (size as usize, step as usize);
    let windows = (l.shape[d] - size) / step + 1;
    let mut nl = l.clone();
    nl.shape[d] = windows;
    nl.strides[d] = l.strides[d] * step;
    nl.shape.push(size);
    nl.strides.push(l.strides[d]);
    let in_shape = l.shape.clone();
    let replay: ViewFn = Arc::new(move |t: &Tensor| unfold_windows(t, d as i64, size as i64, step as i64));
    let region = replay.clone();
    Ok(view_node(x, nl, "UnfoldBackward0", move |g| unfold_backward(g, &in_shape, d, size, step, region.clone()), replay))
}

/// unfold's gradient: each window's gradient added back where the window came from. Windows that do
/// not overlap (step >= size) are one embed; overlapping ones are summed over the window offset j,
/// each a strided slice (j, j + step, ...) that no other window position shares.
fn unfold_backward(g: &Tensor, in_shape: &[usize], d: usize, size: usize, step: usize, region: ViewFn) -> Result<Tensor> {
    if step >= size {
        return embed(g, in_shape, region, "UnfoldBackwardBackward0");
    }
    let windows = g.shape()[d];
    let last = g.ndim() as i64 - 1;
    let mut acc: Option<Tensor> = None;
    for j in 0..size {
        let gj = select(g, last, j as i64)?;
        let end = j + (windows - 1) * step + 1;
        let at: ViewFn = Arc::new(move |t: &Tensor| slice(t, d, j, end, step));
        let e = embed(&gj, in_shape, at, "UnfoldBackwardBackward0")?;
        acc = Some(match acc {
            None => e,
            Some(a) => super::add(&a, &e)?,
        });
    }
    match acc {
        Some(a) => Ok(a),
        None => Tensor::zeros_on(in_shape, g.dtype(), g.device()),
    }
}

pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::cat");
    if tensors.is_empty() {
        bail!(Runtime, "torch.cat(): expected a non-empty list of Tensors");
    }
    // Legacy rule: 1-d empty tensors are skipped (yet they are inputs of the node, as torch's).
    let skipped = |t: &Tensor| t.ndim() == 1 && t.numel() == 0;
    let parts: Vec<&Tensor> = tensors.iter().filter(|t| !skipped(t)).collect();
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let dt = super::promote_types_all(&refs);
    if parts.is_empty() {
        let out = cpu::contiguous(&cast_raw(&tensors[0], dt)?)?.alias();
        if needs_grad(&refs) {
            record(&[&out], &refs, "CatBackward0", saved!(), |ctx, gs| (0..ctx.input_count()).map(|_| Ok(Some(gs[0].clone()))).collect());
        }
        return Ok(out);
    }
    let nd = parts[0].ndim();
    if nd == 0 {
        bail!(Runtime, "zero-dimensional tensor (at position 0) cannot be concatenated");
    }
    let d = wrap_dim(dim, nd)?;
    let first = parts[0].shape();
    let mut total = 0;
    for (i, t) in parts.iter().enumerate() {
        let s = t.shape();
        if s.len() != nd {
            bail!(Runtime, "Tensors must have same number of dimensions: got {} and {}", nd, s.len());
        }
        for k in 0..nd {
            if k != d && s[k] != first[k] {
                bail!(Runtime, "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor number {} in the list.", d, first[k], s[k], i);
            }
        }
        total = s[d].checked_add(total).ok_or_else(|| Error::runtime("cat: the size of the result overflows"))?;
    }
    let mut shape = first.clone();
    shape[d] = total;
    let dev = crate::backend::cuda::common_device(&parts)?;
    if parts.iter().any(|t| t.device() != dev) {
        return Err(crate::backend::cuda::device_mismatch(dev, crate::backend::Device::Cpu));
    }
    let out = Tensor::zeros_on(&shape, dt, dev)?;
    let mut sizes = Vec::with_capacity(parts.len());
    let mut off = 0;
    for t in &parts {
        let n = t.shape()[d];
        let _ng = GradModeGuard::new(false);
        cpu::copy_into(&slice(&out, d, off, off + n, 1)?, t)?;
        sizes.push(n);
        off += n;
    }
    if needs_grad(&refs) {
        let empty: Vec<bool> = tensors.iter().map(skipped).collect();
        record(&[&out], &refs, "CatBackward0", saved!(), move |_, gs| {
            let mut r = SmallVec::new();
            let (mut off, mut k) = (0, 0);
            for &e in &empty {
                if e {
                    r.push(Some(Tensor::zeros_on(&[0], gs[0].dtype(), gs[0].device())?));
                    continue;
                }
                let n = sizes[k];
                r.push(Some(slice(&gs[0], d, off, off + n, 1)?));
                off += n;
                k += 1;
            }
            Ok(r)
        });
    }
    Ok(out)
}

pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::stack");
    if tensors.is_empty() {
        bail!(Runtime, "stack expects a non-empty TensorList");
    }
    let s0 = tensors[0].shape();
    let d = wrap_dim(dim, s0.len() + 1)?; // torch checks the dim first
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != s0 {
            bail!(Runtime, "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {}", &s0[..], &t.shape()[..], i);
        }
    }
    let _ng = GradModeGuard::new(false);
    let parts: Vec<Tensor> = tensors.iter().map(|t| unsqueeze(t, d as i64)).collect::<Result<_>>()?;
    let out = cat(&parts, d as i64)?;
    drop(_ng);
    let ins: Vec<&Tensor> = tensors.iter().collect();
    if needs_grad(&ins) {
        let n = tensors.len();
        record(&[&out], &ins, "StackBackward0", saved!(), move |_, gs| (0..n).map(|i| Ok(Some(select(&gs[0], d as i64, i as i64)?))).collect());
    }
    Ok(out)
}

/// split by sizes along dim; one node with several view outputs (SplitBackward0).
pub fn split_sizes(x: &Tensor, sizes: &[usize], dim: i64, name: &'static str) -> Result<Vec<Tensor>> {
    let _prof = crate::prof!("aten::split_with_sizes");
    if x.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, x.ndim())?;
    let total = x.shape()[d];
    if sizes.iter().try_fold(0usize, |a, &n| a.checked_add(n)) != Some(total) {
        bail!(Runtime, "split_with_sizes expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got split_sizes={:?}", total, d, sizes);
    }
    let creation = multi_output_creation();
    let _ng = GradModeGuard::new(false);
    let mut outs = Vec::with_capacity(sizes.len());
    let mut off = 0;
    for &n in sizes {
        outs.push(slice(x, d, off, off + n, 1)?);
        off += n;
    }
    drop(_ng);
    outs.iter().for_each(|o| o.set_view_creation(creation));
    if needs_grad(&[x]) {
        let refs: Vec<&Tensor> = outs.iter().collect();
        record(&refs, &[x], name, saved!(), move |_, gs| Ok(smallvec![Some(cat(gs, d as i64)?)]));
    }
    Ok(outs)
}

/// How the views an op returns several of are made: torch refuses in-place ops on them.
fn multi_output_creation() -> ViewCreation {
    if crate::autograd::is_grad_enabled() {
        ViewCreation::MultiOutput
    } else {
        ViewCreation::NoGrad
    }
}

/// unbind(dim): every slice along `dim`, as views recorded by one node (UnbindBackward0).
pub fn unbind(x: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let _prof = crate::prof!("aten::unbind");
    if x.ndim() == 0 {
        bail!(Index, "Dimension specified as {} but tensor has no dimensions", dim);
    }
    let d = wrap_dim(dim, x.ndim())?;
    let creation = multi_output_creation();
    let _ng = GradModeGuard::new(false);
    let outs = (0..x.shape()[d]).map(|i| select(x, d as i64, i as i64)).collect::<Result<Vec<_>>>()?;
    drop(_ng);
    outs.iter().for_each(|o| o.set_view_creation(creation));
    if needs_grad(&[x]) && !outs.is_empty() {
        let refs: Vec<&Tensor> = outs.iter().collect();
        record(&refs, &[x], "UnbindBackward0", saved!(), move |_, gs| Ok(smallvec![Some(stack(gs, d as i64)?)]));
    }
    Ok(outs)
}

pub fn split(x: &Tensor, size: usize, dim: i64) -> Result<Vec<Tensor>> {
    let _prof = crate::prof!("aten::split");
    if x.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, x.ndim())?;
    let total = x.shape()[d];
    if size == 0 && total != 0 {
        bail!(Runtime, "split_size can only be 0 if dimension size is 0, but got dimension size of {}", total);
    }
    let mut sizes = vec![];
    let mut left = total;
    while left > 0 {
        sizes.push(size.min(left));
        left -= size.min(left);
    }
    if sizes.is_empty() {
        sizes.push(0);
    }
    split_sizes(x, &sizes, d as i64, "SplitBackward0")
}

pub fn chunk(x: &Tensor, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
    let _prof = crate::prof!("aten::chunk");
    if chunks == 0 {
        bail!(Runtime, "chunk expects `chunks` to be greater than 0, got: 0");
    }
    if x.ndim() == 0 {
        bail!(Runtime, "chunk expects at least a 1-dimensional tensor");
    }
    let d = wrap_dim(dim, x.ndim())?;
    let total = x.shape()[d];
    let size = total.div_ceil(chunks).max(1);
    split(x, size, d as i64)
}

pub fn repeat(x: &Tensor, reps: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::repeat");
    let xs = x.shape();
    if reps.len() < xs.len() {
        bail!(Runtime, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    }
    let lead = reps.len() - xs.len();
    let padded: Vec<usize> = (0..reps.len()).map(|i| if i < lead { 1 } else { xs[i - lead] }).collect();
    // torch checks the result's sizes: a negative count repeats an empty dim into an empty one
    let target: Vec<i64> = reps.iter().zip(&padded).map(|(&r, &s)| r.saturating_mul(s as i64)).collect();
    if let Some(&neg) = target.iter().find(|&&t| t < 0) {
        bail!(Runtime, "Trying to create tensor with negative dimension {}: {:?}", neg, target);
    }
    // (r0, s0, r1, s1, ...) by expanding (1, s0, 1, s1, ...), then merge pairs.
    let mut inter_view: Vec<i64> = vec![];
    let mut inter_exp: Vec<i64> = vec![];
    let mut final_shape: Vec<usize> = vec![];
    for (i, &s) in padded.iter().enumerate() {
        inter_view.extend([1, s as i64]);
        inter_exp.extend([reps[i].max(0), s as i64]);
        let size = reps[i].checked_mul(s as i64).ok_or_else(|| {
            Error::runtime(format!("repeat: the size of dimension {} ({} * {}) overflows int64: repeats {:?} of a tensor of size {:?}", i, reps[i], s, reps, &xs[..]))
        })?;
        final_shape.push(size as usize);
    }
    let _ng = GradModeGuard::new(false);
    let out = if layout::numel(&final_shape) == 0 {
        Tensor::zeros_on(&final_shape, x.dtype(), x.device())?
    } else {
        // the full result is allocated by the copy below: check that it can be
        storage::check_alloc(x.dtype(), layout::checked_numel(&final_shape)?)?;
        let v = reshape(&contiguous(x)?, &inter_view)?;
        let e = expand(&v, &inter_exp)?;
        let out = cpu::contiguous(&e)?;
        reshape_to(&out, &final_shape)?.alias()
    };
    drop(_ng);
    if needs_grad(&[x]) {
        let in_shape = xs.clone();
        record(&[&out], &[x], "RepeatBackward0", saved!(), move |_, gs| {
            if gs[0].numel() == 0 {
                return Ok(smallvec![Some(Tensor::zeros_on(&in_shape, gs[0].dtype(), gs[0].device())?)]);
            }
            let g = reshape(&gs[0], &inter_exp)?;
            let dims: Vec<i64> = (0..padded.len()).map(|i| 2 * i as i64).collect();
            let s = super::sum(&g, Some(&dims), false, None)?;
            Ok(smallvec![Some(reshape_to(&s, &in_shape)?)])
        });
    }
    Ok(out)
}

pub fn flip(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::flip");
    let l = x.layout();
    let nd = l.ndim();
    let mut fl = vec![false; nd.max(1)];
    for &d in dims {
        let d = wrap_dim(d, nd)?;
        if fl[d] {
            bail!(Runtime, "dim {} appears multiple times in the list of dims", d);
        }
        fl[d] = true;
    }
    if nd == 0 {
        return clone(x);
    }
    let out = if x.is_cuda() && crate::backend::cuda::has_kernels() {
        crate::backend::cuda::native::flip(x, &fl)?
    } else {
        storage::check_alloc(x.dtype(), l.numel())?;
        crate::backend::cuda::via_host(&[x], |h| flip_host(&h[0], &fl))?
    };
    if needs_grad(&[x]) {
        let dims = dims.to_vec();
        record(&[&out], &[x], "FlipBackward0", saved!(), move |_, gs| Ok(smallvec![Some(flip(&gs[0], &dims)?)]));
    }
    Ok(out)
}

/// A contiguous copy of the host tensor `x` read with the dims marked in `fl` reversed: row by row
/// over the last dim (a slice copy when it is contiguous and not reversed), the rows' start
/// offsets advanced as an odometer; runs of rows on the team above the threshold, each part
/// starting its odometer at its first row.
fn flip_host(x: &Tensor, fl: &[bool]) -> Result<Tensor> {
    let l = x.layout();
    let (shape, strides) = (l.shape.clone(), l.strides.clone());
    let nd = shape.len();
    let n = l.numel();
    let dt = x.dtype();
    Ok(crate::with_bits!(dt, T => {
        let mut v: Vec<T> = Vec::with_capacity(n);
        if n > 0 {
            let st = x.storage();
            let s = st.bits::<T>();
            let last = nd - 1;
            let (len, sl) = (shape[last], strides[last]);
            // rows r0.. of the result, written into `o`
            let fill = |r0: usize, o: &mut [std::mem::MaybeUninit<T>]| {
                // row r0's coordinates and start: a reversed dim's coordinate counts from its end
                let mut at = vec![0usize; nd];
                let mut rem = r0;
                for k in (0..last).rev() {
                    at[k] = rem % shape[k];
                    rem /= shape[k];
                }
                let mut row = l.offset as isize;
                for k in 0..nd {
                    let c = if fl[k] { shape[k] - 1 - at[k] } else { at[k] };
                    row += (c * strides[k]) as isize;
                }
                for o in o.chunks_mut(len) {
                    let r = row as usize;
                    if fl[last] && sl == 1 {
                        o.iter_mut().zip(s[r + 1 - len..=r].iter().rev()).for_each(|(e, &x)| { e.write(x); });
                    } else if fl[last] {
                        o.iter_mut().enumerate().for_each(|(j, e)| { e.write(s[r - j * sl]); });
                    } else if sl == 1 {
                        o.iter_mut().zip(&s[r..r + len]).for_each(|(e, &x)| { e.write(x); });
                    } else {
                        o.iter_mut().enumerate().for_each(|(j, e)| { e.write(s[r + j * sl]); });
                    }
                    for k in (0..last).rev() {
                        let step = if fl[k] { -(strides[k] as isize) } else { strides[k] as isize };
                        at[k] += 1;
                        row += step;
                        if at[k] < shape[k] {
                            break;
                        }
                        row -= step * shape[k] as isize;
                        at[k] = 0;
                    }
                }
            };
            let o = &mut v.spare_capacity_mut()[..n];
            match cpu::rows_per_part(n / len, len, 1) {
                Some(per) => crate::backend::threads::for_each_chunk_mut(o, per * len, |c, o| fill(c * per, o)),
                None => fill(0, o),
            }
            // SAFETY: every row of the result was written above.
            unsafe { v.set_len(n) };
        }
        Tensor::from_bits(v, &shape, dt)
    }))
}

/// x.view(dtype): the same bytes read as `dtype`, with torch's rules when the element sizes
/// differ (the last dim, of stride 1, is split or merged). Not differentiable, as torch's.
pub fn view_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let (from, l) = (x.dtype(), x.layout());
    if dtype == DType::Bool && from != DType::Bool {
        // torch allows it, but a byte other than 0 or 1 is not a valid Rust bool: refused
        bail!(Runtime, "ferrograd does not view {} as bool (bytes other than 0 and 1 are not valid booleans); use x != 0", from.name());
    }
    let (old, new) = (from.size(), dtype.size());
    let what = || format!("to view {} as {} (different element sizes)", from.type_word(), dtype.type_word());
    let nd = l.shape.len();
    let mut out = l.clone();
    if old != new {
        if nd == 0 {
            bail!(Runtime, "self.dim() cannot be 0 {}", what());
        }
        if old > new {
            let r = old / new;
            if l.strides[nd - 1] != 1 {
                bail!(Runtime, "self.stride(-1) must be 1 {}, but got {}", what(), l.strides[nd - 1]);
            }
            for d in 0..nd - 1 {
                out.strides[d] = l.strides[d] * r;
            }
            out.shape[nd - 1] = l.shape[nd - 1] * r;
            out.offset = l.offset * r;
        } else {
            let r = new / old;
            if l.shape[nd - 1] % r != 0 {
                bail!(Runtime, "self.size(-1) must be divisible by {} {}, but got {}", r, what(), l.shape[nd - 1]);
            }
            if l.offset % r != 0 {
                bail!(Runtime, "self.storage_offset() must be divisible by {} {}, but got {}", r, what(), l.offset);
            }
            if l.strides[nd - 1] != 1 {
                bail!(Runtime, "self.stride(-1) must be 1 {}, but got {}", what(), l.strides[nd - 1]);
            }
            for d in 0..nd - 1 {
                if l.strides[d] % r != 0 {
                    bail!(Runtime, "self.stride({}) must be divisible by {} {}, but got {}", d, r, what(), l.strides[d]);
                }
                out.strides[d] = l.strides[d] / r;
            }
            out.shape[nd - 1] = l.shape[nd - 1] / r;
            out.offset = l.offset / r;
        }
    }
    Ok(x.reinterpret(dtype, out))
}

pub fn detach(x: &Tensor) -> Tensor {
    x.alias()
}

pub fn type_word(d: DType) -> &'static str {
    d.type_word()
}

/// (moved to inplace.rs; kept here for the paths that name them)
pub use super::inplace::{plain_pair, update_plain};

/// Unused-variable guard for helpers above.
#[allow(dead_code)]
fn _uses() -> (fn(&Tensor) -> Result<Tensor>, fn(&[usize]) -> usize, fn(&Tensor) -> crate::autograd::TensorMeta) {
    (zeros_like, numel, meta)
}

#[allow(dead_code)]
fn _saved(_: SavedTensor) {}
