//! In-place ops: torch's checks before a write (leaf, view, overlap), the write itself with its
//! history (Note [In-place on a view]: CopySlices on the base, the view rebased onto it), the fast
//! paths of `x op= o` that write straight into x's buffer, and fill_/copy_.

use super::shape::{embed, to_dtype, type_word, view_rebase_error};
use super::{needs_grad, record};
use crate::autograd::GradModeGuard;
use crate::backend::cpu;
use crate::bail;
use crate::error::{Error, Result};
use crate::saved;
use crate::tensor::layout::Layout;
use crate::tensor::{DType, Tensor, ViewCreation};
use smallvec::{smallvec, SmallVec};
use std::sync::Arc;

/// torch's checks before an in-place op on `x`; `requires`: grad mode is on and an input of
/// the op requires grad. See Note [View + in-place].
pub fn check_inplace(x: &Tensor, requires: bool) -> Result<()> {
    if requires {
        if let Some(creation) = x.view_creation() {
            if creation != ViewCreation::Default {
                return Err(view_rebase_error(x, creation, false));
            }
            if x.requires_grad() && x.view_info().is_some_and(|(base, _)| base.is_leaf()) {
                bail!(Runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
            }
        }
        if x.is_leaf() && x.requires_grad() {
            bail!(Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
        }
    }
    if crate::autograd::is_grad_enabled() && x.is_function_view() {
        // torch names the Function's class: the node's name without "Backward"
        let node = x.grad_fn().map(|n| n.name().into_owned()).unwrap_or_default();
        let name = node.strip_suffix("Backward").unwrap_or(&node).to_string();
        bail!(
            Runtime,
            "Output {} of {} is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
            x.output_nr(),
            name
        );
    }
    Ok(())
}

/// torch's refusal to write through a view in which several elements share memory (an
/// expanded tensor): the result would depend on the order of the writes.
pub fn check_no_internal_overlap(x: &Tensor) -> Result<()> {
    if x.with_layout(|l| l.shape.iter().zip(l.strides.iter()).any(|(&n, &st)| st == 0 && n > 1)) {
        bail!(Runtime, "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.");
    }
    Ok(())
}

/// torch's refusal of an input that partly overlaps the tensor written (x.t().add_(x)): the
/// result would depend on the order of the writes. The same elements (x.add_(x)) are allowed;
/// layouts that are not dense are not checked (torch's "too hard").
pub fn check_no_partial_overlap(x: &Tensor, others: &[&Tensor]) -> Result<()> {
    let (xl, xs) = (x.layout(), x.storage());
    for o in others {
        if o.is_wrapped_number() || !Arc::ptr_eq(&xs, &o.storage()) {
            continue;
        }
        let ol = o.layout();
        if same_elements(&ol, &xl) {
            continue;
        }
        if let (Some(a), Some(b)) = (dense_extent(&xl), dense_extent(&ol)) {
            if a.0 < b.1 && b.0 < a.1 {
                bail!(Runtime, "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.");
            }
        }
    }
    Ok(())
}

/// Whether two layouts address the same elements in the same order: the same offset, and the same
/// sizes and strides over the dims of more than one element (a size-1 dim, present in one and not
/// the other or with another stride, changes nothing: `b[:, 0]` of a (1, n) tensor and its value
/// with the leading 1 dropped are the same element).
fn same_elements(a: &Layout, b: &Layout) -> bool {
    let dims = |l: &Layout| l.shape.iter().copied().zip(l.strides.iter().copied()).filter(|&(n, _)| n != 1).collect::<SmallVec<[(usize, usize); 4]>>();
    a.offset == b.offset && dims(a) == dims(b)
}

/// The storage range [first, last + 1) of a non-empty, non-overlapping and dense layout (its
/// strides are a permutation of contiguous ones); None for any other.
fn dense_extent(l: &Layout) -> Option<(usize, usize)> {
    let n = l.numel();
    if n == 0 {
        return None;
    }
    let mut dims: SmallVec<[(usize, usize); 4]> = l.shape.iter().copied().zip(l.strides.iter().copied()).filter(|&(size, _)| size != 1).collect();
    dims.sort_by_key(|&(_, stride)| stride);
    let mut expected = 1;
    for (size, stride) in dims {
        if stride != expected {
            return None;
        }
        expected *= size;
    }
    Some((l.offset, l.offset + n))
}

/// Run an in-place op as `f` out of place, then write the result into `x` and move `x`'s
/// history onto the new node. When recording, `f` sees a snapshot of `x` that keeps its
/// gradient edge, so values saved for backward are the ones before the write.
pub fn inplace(x: &Tensor, others: &[&Tensor], f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<()> {
    inplace_impl(x, others, true, f)
}

/// `inplace` for the writes torch makes without its overlap check (fill_ with a number,
/// masked_fill_, index_put_): an expanded tensor may be filled.
pub fn inplace_fill(x: &Tensor, others: &[&Tensor], f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<()> {
    inplace_impl(x, others, false, f)
}

fn inplace_impl(x: &Tensor, others: &[&Tensor], check_overlap: bool, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<()> {
    let mut all: Vec<&Tensor> = vec![x];
    all.extend_from_slice(others);
    // an integer or bool tensor cannot require grad: writing into it records nothing (torch)
    let recording = needs_grad(&all) && x.dtype().is_float();
    check_inplace(x, recording)?;
    if check_overlap {
        check_no_internal_overlap(x)?;
        check_no_partial_overlap(x, others)?;
    }
    let view = x.view_info();
    let out = if recording {
        let snap = cpu::contiguous(x)?;
        let snap = match x.gradient_edge() {
            Some(crate::autograd::Edge::Node(n, nr)) => snap.alias_with_grad_fn(n, nr),
            _ => snap,
        };
        f(&snap)?
    } else {
        let _ng = GradModeGuard::new(false);
        f(x)?
    };
    let (xd, od) = (x.dtype(), out.dtype());
    if xd != od && !can_cast(od, xd) {
        bail!(Runtime, "result type {} can't be cast to the desired output type {}", type_word(od), type_word(xd));
    }
    let os = out.shape();
    let xs = x.shape();
    if os != xs {
        bail!(Runtime, "output with shape {:?} doesn't match the broadcast shape {:?}", &xs[..], &os[..]);
    }
    match view {
        Some((base, replay)) if recording => {
            // Note [In-place on a view]: the base's new history is "old base with the view's
            // region replaced by `out`" (CopySlices); the view becomes a view of that base.
            let base_old = base.snapshot_with_history()?;
            // a written view in which elements share memory (an expanded tensor, filled): torch
            // refuses its gradient, which would count each shared element more than once
            let overlapping = check_no_internal_overlap(x).is_err();
            cpu::copy_into(x, &out)?;
            x.bump_version();
            let region = replay.clone();
            let base_shape = base.shape();
            let node_out = base.alias();
            record(&[&node_out], &[&base_old, &out], "CopySlices", saved!(), move |ctx, gs| {
                if overlapping {
                    bail!(Runtime, "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.");
                }
                let g = &gs[0];
                let gb = if ctx.needs(0) {
                    let keep = Tensor::full_on(&base_shape, 1.0, g.dtype(), g.device())?;
                    {
                        let _ng = GradModeGuard::new(false);
                        cpu::copy_into(&region(&keep)?, &Tensor::scalar(0.0f64))?;
                    }
                    Some(super::mul(g, &keep)?)
                } else {
                    None
                };
                let go = if ctx.needs(1) { Some(region(g)?) } else { None };
                Ok(smallvec![gb, go])
            });
            if let Some(n) = node_out.grad_fn() {
                base.set_grad_fn(Some(n), 0);
            }
            let region = replay.clone();
            let base_shape = base.shape();
            let vx = x.alias();
            record(&[&vx], &[&base], "AsStridedBackward0", saved!(), move |_, gs| Ok(smallvec![Some(embed(&gs[0], &base_shape, region.clone(), "AsStridedScatterBackward0")?)]));
            if let Some(n) = vx.grad_fn() {
                x.set_grad_fn(Some(n), 0);
            }
            x.mark_view_current();
        }
        _ => {
            cpu::copy_into(x, &out)?;
            x.bump_version();
            if let Some(n) = out.grad_fn() {
                x.set_grad_fn(Some(n), out.output_nr());
            }
        }
    }
    Ok(())
}

/// `x op= o` for `op` in + - * /, written straight into x's buffer when nothing is recorded and
/// the operands are plain (CPU, float32/float64, one dtype, one shape, both contiguous, separate
/// storages): one pass instead of `inplace`'s result buffer and copy back (the update of a
/// training loop, `p -= lr * p.grad`, under no_grad). Ok(false) when the general path must run.
pub fn inplace_arith_fast(x: &Tensor, o: &Tensor, op: char) -> Result<bool> {
    inplace_arith_alpha_fast(x, o, op, 1.0)
}

/// `inplace_arith_fast` with add_/sub_'s alpha: x + alpha·o, x - alpha·o (alpha rounded to the
/// dtype, one fused multiply-add, as `add_alpha` and torch's vectorised kernel).
pub fn inplace_arith_alpha_fast(x: &Tensor, o: &Tensor, op: char, alpha: f64) -> Result<bool> {
    if alpha == 1.0 && o.is_wrapped_number() && !needs_grad(&[x]) && plain_target(x) {
        return inplace_number_fast(x, o, op);
    }
    if needs_grad(&[x, o]) || !plain_pair(x, o) {
        return Ok(false);
    }
    check_inplace(x, false)?;
    match op {
        '+' | '-' if alpha != 1.0 => {
            let al = if op == '-' { -alpha } else { alpha };
            let al32 = al as f32;
            update_plain(x, o, move |a, b: f32| b.mul_add(al32, a), move |a, b: f64| b.mul_add(al, a))
        }
        '+' => update_plain(x, o, |a, b| a + b, |a, b| a + b),
        '-' => update_plain(x, o, |a, b| a - b, |a, b| a - b),
        '*' => update_plain(x, o, |a, b| a * b, |a, b| a * b),
        _ => update_plain(x, o, |a, b| a / b, |a, b| a / b),
    };
    x.bump_version();
    Ok(true)
}

/// `x op= s` for a Python number s on a `plain_target` x: x[i] = x[i] op s on x's buffer, in x's
/// dtype (the number rounded to it first, as torch's and `number_op`'s out-of-place forms).
fn inplace_number_fast(x: &Tensor, o: &Tensor, op: char) -> Result<bool> {
    let v = match o.item()? {
        crate::tensor::Scalar::Float(f) => f,
        crate::tensor::Scalar::Int(i) if i.unsigned_abs() <= 1 << 53 => i as f64,
        _ => return Ok(false),
    };
    check_inplace(x, false)?;
    fn run<T: crate::tensor::Element + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T> + std::ops::Div<Output = T>>(x: &Tensor, s: T, op: char) {
        let (l, st) = (x.layout(), x.storage());
        // SAFETY: x is contiguous, so its numel elements from the offset lie in its storage; the
        // op holds the storage for the duration and nothing else borrows it here.
        let d = unsafe { std::slice::from_raw_parts_mut((st.as_ptr() as *mut T).add(l.offset), l.numel()) };
        match op {
            '+' => cpu::apply_in_place(d, move |a| a + s),
            '-' => cpu::apply_in_place(d, move |a| a - s),
            '*' => cpu::apply_in_place(d, move |a| a * s),
            _ => cpu::apply_in_place(d, move |a| a / s),
        }
    }
    if x.dtype() == DType::F32 {
        run::<f32>(x, v as f32, op);
    } else {
        run::<f64>(x, v, op);
    }
    x.bump_version();
    Ok(true)
}

/// Whether x can be updated straight on its buffer: CPU, float32/float64, contiguous, non-empty.
fn plain_target(x: &Tensor) -> bool {
    !x.is_cuda() && matches!(x.dtype(), DType::F32 | DType::F64) && x.layout().is_contiguous() && x.numel() > 0
}

/// Whether x[i] = f(x[i], o[i]) can run straight on x's buffer: CPU, float32/float64, one dtype,
/// one shape, both contiguous and non-empty, separate storages.
pub fn plain_pair(x: &Tensor, o: &Tensor) -> bool {
    let dt = x.dtype();
    if x.is_cuda() || o.is_cuda() || !matches!(dt, DType::F32 | DType::F64) || o.dtype() != dt {
        return false;
    }
    if Arc::ptr_eq(&x.0, &o.0) {
        return false;
    }
    let (xd, od) = (x.read_data(), o.read_data());
    let (xl, ol) = (&xd.layout, &od.layout);
    xl.shape == ol.shape && xl.is_contiguous() && ol.is_contiguous() && xl.numel() > 0 && !Arc::ptr_eq(&xd.storage, &od.storage)
}

/// x[i] = f(x[i], o[i]) on x's buffer, for a pair that passed `plain_pair` (no version bump, no
/// autograd: the callers decide those).
pub fn update_plain(x: &Tensor, o: &Tensor, f32f: impl Fn(f32, f32) -> f32 + Sync + Send, f64f: impl Fn(f64, f64) -> f64 + Sync + Send) {
    debug_assert!(plain_pair(x, o));
    let (xd, od) = (x.read_data(), o.read_data());
    let (xl, ol) = (&xd.layout, &od.layout);
    let (xs, os) = (&xd.storage, &od.storage);
    let n = xl.numel();
    fn run<T: crate::tensor::Element>(xs: &crate::tensor::Storage, xo: usize, os: &crate::tensor::Storage, oo: usize, n: usize, f: impl Fn(T, T) -> T + Sync + Send) {
        // SAFETY: x's n elements from xo lie in its storage (a contiguous layout), which no other
        // slice borrows here (o's storage is a different allocation).
        let d = unsafe { std::slice::from_raw_parts_mut((xs.as_ptr() as *mut T).add(xo), n) };
        cpu::update_in_place(d, &os.slice::<T>()[oo..oo + n], f);
    }
    if xs.dtype() == DType::F32 {
        run::<f32>(xs, xl.offset, os, ol.offset, n, f32f);
    } else {
        run::<f64>(xs, xl.offset, os, ol.offset, n, f64f);
    }
}

fn can_cast(from: DType, to: DType) -> bool {
    // torch's canCast: never float to integral, nor anything but bool to bool
    let rank = |d: DType| if d == DType::Bool { 0 } else if d.is_int() { 1 } else { 2 };
    rank(from) <= rank(to)
}

/// fill_ / zero_: the node's input gradient is zero.
pub fn fill_(x: &Tensor, value: &Tensor, name: &'static str) -> Result<()> {
    let _prof = crate::prof!("aten::fill_");
    if value.ndim() != 0 {
        bail!(Runtime, "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.", value.ndim());
    }
    let v = value.item_f64()?;
    // torch checks a number (not a tensor value) against the dtype; a one-element float16 or
    // bfloat16 tensor takes another path in torch that does not check
    let dt = x.dtype();
    if value.is_wrapped_number() && !(dt.is_narrow() && dt.is_float() && x.numel() == 1) && !dt.fits(value.item()?) {
        bail!(Runtime, "value cannot be converted to type {} without overflow", x.dtype().c_name());
    }
    // torch fills an expanded tensor with a number, but copies a tensor value (with its check)
    if !value.is_wrapped_number() {
        check_no_internal_overlap(x)?;
    }
    inplace_fill(x, &[], |xin| {
        let out = Tensor::full_on(&xin.shape(), v, xin.dtype(), xin.device())?;
        if needs_grad(&[xin]) {
            record(&[&out], &[xin], name, saved!(), |_, gs| Ok(smallvec![Some(super::mul(&gs[0], &super::scalar(0.0))?)]));
        }
        Ok(out)
    })
}

/// copy_(src): values from src (broadcast, converted); gradient flows to src only.
pub fn copy_(x: &Tensor, src: &Tensor) -> Result<()> {
    let _prof = crate::prof!("aten::copy_");
    let xs = x.shape();
    crate::tensor::layout::broadcast_shapes(&xs, &src.shape()).and_then(|s| {
        if s[..] != xs[..] {
            Err(Error::runtime(format!("output with shape {:?} doesn't match the broadcast shape {:?}", &xs[..], &s[..])))
        } else {
            Ok(())
        }
    })?;
    if !needs_grad(&[x, src]) {
        // Nothing to record: the checks `inplace` makes, then one copy straight into x (not a
        // zeroed result buffer written twice: 5x torch's time on a 16 MB copy_).
        check_inplace(x, false)?;
        check_no_internal_overlap(x)?;
        check_no_partial_overlap(x, &[src])?;
        cpu::copy_into(x, src)?;
        x.bump_version();
        return Ok(());
    }
    let dt = x.dtype();
    inplace(x, &[src], |xin| {
        let out = Tensor::zeros_on(&xs, dt, xin.device())?;
        cpu::copy_into(&out, src)?;
        if needs_grad(&[xin, src]) {
            record(&[&out], &[xin, src], "CopyBackwards", saved!(), |ctx, gs| {
                let gx = if ctx.needs(0) { Some(super::mul(&gs[0], &super::scalar(0.0))?) } else { None };
                let gsrc = if ctx.needs(1) { Some(to_dtype(&gs[0], ctx.input_meta(1).dtype())?) } else { None };
                Ok(smallvec![gx, gsrc])
            });
        }
        Ok(out)
    })
}

