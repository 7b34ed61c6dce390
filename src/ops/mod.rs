//! The op registry. Each op is one function here (forward through the backend, then a recorded
//! node whose rule is written with these same differentiable ops). The elementwise and reduction
//! families are declared once, as rows of the op table (`table.rs`), from which their functions,
//! bindings, CUDA kernels, Python forms, stub and tests are generated; the other families (shape,
//! index, linalg, nn) are listed in `REGISTRY` under torch's name with their grad_fn name.
//! `registry()` is both.

pub mod attention;
pub mod autocast;
pub mod conv;
pub mod elementwise;
pub mod index;
pub mod inplace;
pub mod linalg;
pub mod nn;
pub mod reduce;
pub mod shape;
pub mod table;

pub use conv::{fold, unfold, Window};
pub use elementwise::*;
pub use index::*;
pub use inplace::*;
pub use linalg::*;
pub use reduce::*;
pub use shape::*;

use crate::autograd::node::{IntoSaved, Lane};
use crate::autograd::{is_grad_enabled, Backward, Ctx, Grads, Node, NodeKind, NodeRef, OpBackward, TensorMeta};
use crate::backend::cpu;
use crate::error::Result;
use crate::tensor::{result_type, DType, Element, Tensor};
#[allow(unused_imports)]
use crate::saved;
use smallvec::SmallVec;

/// One registered op: torch's name for it and the grad_fn name(s) it records.
pub struct OpInfo {
    pub name: &'static str,
    pub grad_fn: &'static str,
}

macro_rules! registry {
    ($($name:literal => $gf:literal),* $(,)?) => {
        /// The ops outside the op table (shape, index, linalg, nn, conversions).
        pub static REGISTRY: &[OpInfo] = &[$(OpInfo { name: $name, grad_fn: $gf }),*];
    };
}

/// Every registered op: the op table's rows bound under a torch name (each name, aliases included;
/// not the `torch.special`-only ones) and `REGISTRY`.
pub fn registry() -> impl Iterator<Item = OpInfo> {
    let table = table::ops().filter(|e| matches!(e.binding, table::Binding::Method | table::Binding::Custom)).flat_map(|e| e.torch_names().map(move |n| OpInfo { name: n, grad_fn: e.grad_fn }));
    table.chain(REGISTRY.iter().map(|o| OpInfo { name: o.name, grad_fn: o.grad_fn }))
}

registry! {
    "rsub" => "RsubBackward1", "where" => "WhereBackward0", "clamp" => "ClampBackward1",
    "clip" => "ClampBackward1", "polygamma" => "PolygammaBackward0", "mvlgamma" => "MvlgammaBackward0",
    "max" => "MaxBackward1", "min" => "MinBackward1", "norm" => "LinalgVectorNormBackward0",
    "matmul" => "MmBackward0", "mm" => "MmBackward0", "bmm" => "BmmBackward0", "mv" => "MvBackward0",
    "dot" => "DotBackward0", "outer" => "MulBackward0", "softmax" => "SoftmaxBackward0",
    "log_softmax" => "LogSoftmaxBackward0", "reshape" => "ViewBackward0", "view" => "ViewBackward0",
    "flatten" => "ViewBackward0", "squeeze" => "SqueezeBackward1", "unsqueeze" => "UnsqueezeBackward0",
    "transpose" => "TransposeBackward0", "permute" => "PermuteBackward0", "expand" => "ExpandBackward0",
    "expand_as" => "ExpandBackward0", "broadcast_to" => "ExpandBackward0", "contiguous" => "CloneBackward0",
    "clone" => "CloneBackward0", "detach" => "", "cat" => "CatBackward0", "stack" => "StackBackward0",
    "split" => "SplitBackward0", "chunk" => "SplitBackward0", "repeat" => "RepeatBackward0",
    "flip" => "FlipBackward0", "narrow" => "SliceBackward0", "getitem" => "IndexBackward0",
    "setitem" => "IndexPutBackward0", "gather" => "GatherBackward0", "index_select" => "IndexSelectBackward0",
    "scatter_add" => "ScatterAddBackward0", "masked_fill" => "MaskedFillBackward0", "to" => "ToCopyBackward0",
    "float" => "ToCopyBackward0", "double" => "ToCopyBackward0", "long" => "", "bool" => "",
    "type_as" => "ToCopyBackward0", "add_" => "AddBackward0", "sub_" => "SubBackward0",
    "mul_" => "MulBackward0", "div_" => "DivBackward0", "zero_" => "ZeroBackward0",
    "fill_" => "FillBackward2", "copy_" => "CopyBackwards", "clamp_" => "ClampBackward1",
    "nn.functional.unfold" => "Im2ColBackward0", "nn.functional.fold" => "Col2ImBackward0",
}

/// Is any input tracked by autograd (and grad mode on)?
#[inline]
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// Record a node for `outputs` computed from `inputs` (one edge per input; inputs that do not
/// require grad get an empty edge, as torch's `(None, 0)`).
pub fn record(
    outputs: &[&Tensor],
    inputs: &[&Tensor],
    name: &'static str,
    saved: impl IntoSaved,
    rule: impl Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static,
) {
    let kind = NodeKind { name, saved: saved.names() };
    record_node(outputs, inputs, kind, OpBackward::new(saved, rule));
}

/// `record` for a node that also shows numbers as saved values (torch's `_saved_exponent`,
/// `_saved_alpha`, ...: Note [Saved names]).
pub fn record_with_scalars(
    outputs: &[&Tensor],
    inputs: &[&Tensor],
    name: &'static str,
    saved: impl IntoSaved,
    scalars: impl IntoIterator<Item = (&'static str, crate::autograd::SavedScalar)>,
    rule: impl Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static,
) {
    let kind = NodeKind { name, saved: saved.names() };
    let func = crate::autograd::WithScalars { inner: OpBackward::new(saved, rule), scalars: scalars.into_iter().collect() };
    record_node(outputs, inputs, kind, func);
}

/// `record` for a rule that keeps a saved value of its own (a Python number), freed with the
/// saved tensors after backward: a second backward then raises as torch's. `saved` names what
/// torch's node would save (Note [Saved names]; read as None here).
pub fn record_holding_values(
    outputs: &[&Tensor],
    inputs: &[&Tensor],
    name: &'static str,
    saved: &'static [&'static str],
    rule: impl Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static,
) {
    record_node(outputs, inputs, NodeKind { name, saved }, OpBackward::new([], rule).holding_values());
}

/// `record` for a one-input op whose rule also has a form on plain numbers (Note [Scalar lane]
/// in engine.rs): `L`'s rule computes the same as `rule`'s fused kernel.
pub fn record_lane<L: Lane>(
    outputs: &[&Tensor],
    inputs: &[&Tensor],
    name: &'static str,
    saved: impl IntoSaved,
    rule: impl Fn(&Ctx, &[Tensor]) -> Result<Grads> + Send + Sync + 'static,
) {
    let kind = NodeKind { name, saved: saved.names() };
    record_node(outputs, inputs, kind, OpBackward::new(saved, rule).with_lane::<L>());
}

/// Record the node of `x op number` (see `elementwise::number_op`): one edge for x and an empty
/// one for the number (described by `number`), in operand order.
pub fn record_with_number(out: &Tensor, x: &Tensor, number: TensorMeta, number_left: bool, kind: NodeKind, func: Box<dyn Backward>) {
    let (xe, xm) = (x.gradient_edge(), meta(x));
    let (edges, inputs) = if number_left { (smallvec::smallvec![None, xe], smallvec::smallvec![number, xm]) } else { (smallvec::smallvec![xe, None], smallvec::smallvec![xm, number]) };
    let node = NodeRef::new(Node::new(kind, func, edges, inputs, smallvec::smallvec![meta(out)]));
    out.set_grad_fn(Some(node), 0);
}

fn record_node(outputs: &[&Tensor], inputs: &[&Tensor], kind: NodeKind, func: impl Backward + 'static) {
    let node = Node::new(
        kind,
        Box::new(func),
        inputs.iter().map(|t| t.gradient_edge()).collect(),
        inputs.iter().map(|t| meta(t)).collect(),
        outputs.iter().map(|t| meta(t)).collect(),
    );
    let node = NodeRef::new(node);
    for (i, out) in outputs.iter().enumerate() {
        out.set_grad_fn(Some(node.clone()), i as u32);
    }
}

pub fn meta(t: &Tensor) -> TensorMeta {
    let d = t.read_data();
    TensorMeta::new(&d.layout.shape, d.storage.dtype(), d.storage.device())
}

/// The dtype torch computes a binary/ternary op in.
pub fn promote_types(ts: &[&Tensor]) -> DType {
    let keys: SmallVec<[_; 3]> = ts.iter().map(|t| t.promotion_key()).collect();
    result_type(&keys)
}

/// Promotion over any number of operands (cat, stack).
pub fn promote_types_all(ts: &[&Tensor]) -> DType {
    promote_types(ts)
}

/// `t` converted to `dtype` without recording (a no-op when it already is).
pub fn cast_raw(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t.clone())
    } else {
        cpu::cast(t, dtype)
    }
}

/// `t` in the compute dtype of `dt` (Note [Storage and compute dtypes]), without recording: first
/// converted to `dt` (so a number wraps or rounds as torch converts it to dt), then widened.
pub fn to_compute(t: &Tensor, dt: DType) -> Result<Tensor> {
    let c = dt.compute();
    if t.dtype() == c && dt == c {
        return Ok(t.clone());
    }
    cast_raw(&cast_raw(t, dt)?, c)
}

/// `x` on `device`, differentiable (ToCopyBackward0: the gradient goes back to x's device).
pub fn to_device(x: &Tensor, device: crate::backend::Device) -> Result<Tensor> {
    if x.device() == device {
        return Ok(x.clone());
    }
    let out = crate::backend::cuda::to_device(x, device)?;
    if needs_grad(&[x]) {
        let src = x.device();
        record(&[&out], &[x], "ToCopyBackward0", saved!(), move |_, gs| Ok(smallvec::smallvec![Some(to_device(&gs[0], src)?)]));
    }
    Ok(out)
}

/// A Python number as a wrapped 0-dim tensor.
pub fn scalar(v: f64) -> Tensor {
    Tensor::wrap_scalar(crate::tensor::Scalar::Float(v))
}

/// Any NaN among the elements (anomaly mode's check).
pub fn has_nan(t: &Tensor) -> Result<bool> {
    match t.dtype() {
        DType::F32 => t.with_contiguous::<f32, _>(|s| s.iter().any(|v| v.is_nan())),
        DType::F64 => t.with_contiguous::<f64, _>(|s| s.iter().any(|v| v.is_nan())),
        DType::F16 => t.with_contiguous::<half::f16, _>(|s| s.iter().any(|v| v.is_nan())),
        DType::BF16 => t.with_contiguous::<half::bf16, _>(|s| s.iter().any(|v| v.is_nan())),
        _ => Ok(false),
    }
}

/// Zeros with the shape, dtype and device of `t`.
pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
    Tensor::zeros_on(&t.shape(), t.dtype(), t.device())
}

/// The saved tensors of a node, as an array: kept inline in its backward function (`IntoSaved`).
#[macro_export]
macro_rules! saved {
    () => { [] };
    // with torch's names for them (Note [Saved names]); names after `;` are of values this node
    // did not save (read as None)
    ($($n:ident = $e:expr),+ $(; $($absent:ident),+)? $(,)?) => {
        $crate::autograd::Named([$($e),+], &[$(stringify!($n)),+ $($(, stringify!($absent))+)?])
    };
    ($($e:expr),+ $(,)?) => { [$($e),+] };
}
