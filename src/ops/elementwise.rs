//! Elementwise ops: unary math, binary arithmetic with broadcasting and type promotion,
//! comparisons, logical ops, where, clamp, maximum/minimum.

use super::{cast_raw, needs_grad, promote_types, record, record_holding_values, scalar, to_compute};
use crate::autograd::SavedTensor;
use crate::backend::{cpu, cuda};
use crate::error::{Error, Result};
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Element, Tensor};
use crate::{bail, saved};
use smallvec::smallvec;

/// Numeric element types (not bool) with the arithmetic the kernels need.
pub trait Num:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Neg<Output = Self>
{
    fn zero() -> Self;
    fn one() -> Self;
    fn floor_(self) -> Self;
    fn ceil_(self) -> Self;
    fn round_(self) -> Self;
    fn trunc_(self) -> Self;
    fn div_(self, o: Self) -> Self;
    fn floor_div(self, o: Self) -> Self;
    fn rem_(self, o: Self) -> Self;
    fn pow_(self, o: Self) -> Self;
    fn max_(self, o: Self) -> Self;
    fn min_(self, o: Self) -> Self;
    fn is_nan_(self) -> bool;
}

macro_rules! impl_num_float {
    ($t:ty) => {
        impl Num for $t {
            fn zero() -> Self { 0.0 }
            fn one() -> Self { 1.0 }
            fn floor_(self) -> Self { self.floor() }
            fn ceil_(self) -> Self { self.ceil() }
            fn round_(self) -> Self { self.round_ties_even() }
            fn trunc_(self) -> Self { self.trunc() }
            fn div_(self, o: Self) -> Self { self / o }
            // torch's div_floor: exact near multiples (2.5 // 0.1 == 24), NaN for inf // 1
            fn floor_div(self, o: Self) -> Self {
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div == 0.0 {
                    return (0.0 as $t).copysign(self / o);
                }
                let f = div.floor();
                if div - f > 0.5 { f + 1.0 } else { f }
            }
            fn rem_(self, o: Self) -> Self {
                let r = self % o;
                if r != 0.0 && ((r < 0.0) != (o < 0.0)) { r + o } else { r }
            }
            fn pow_(self, o: Self) -> Self { self.powf(o) }
            // NaN propagates, as torch.maximum/minimum.
            fn max_(self, o: Self) -> Self { if self.is_nan() || o.is_nan() { <$t>::NAN } else if self > o { self } else { o } }
            fn min_(self, o: Self) -> Self { if self.is_nan() || o.is_nan() { <$t>::NAN } else if self < o { self } else { o } }
            fn is_nan_(self) -> bool { self.is_nan() }
        }
    };
}
impl_num_float!(f32);
impl_num_float!(f64);

impl Num for i64 {
    fn zero() -> Self { 0 }
    fn one() -> Self { 1 }
    fn floor_(self) -> Self { self }
    fn ceil_(self) -> Self { self }
    fn round_(self) -> Self { self }
    fn trunc_(self) -> Self { self }
    fn div_(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
    fn floor_div(self, o: Self) -> Self {
        if o == 0 { return 0; }
        let q = self.wrapping_div(o);
        if (self.wrapping_rem(o) != 0) && ((self < 0) != (o < 0)) { q - 1 } else { q }
    }
    fn rem_(self, o: Self) -> Self {
        if o == 0 { return 0; }
        let r = self.wrapping_rem(o); // i64::MIN % -1 overflows: 0, as torch
        if r != 0 && ((r < 0) != (o < 0)) { r + o } else { r }
    }
    fn pow_(self, o: Self) -> Self {
        if o < 0 {
            return if self == 1 { 1 } else if self == -1 { if o % 2 == 0 { 1 } else { -1 } } else { 0 };
        }
        // by squaring, wrapping as torch's: exact modulo 2**64 for any exponent
        let (mut base, mut e, mut acc) = (self, o as u64, 1i64);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.wrapping_mul(base);
            }
            base = base.wrapping_mul(base);
            e >>= 1;
        }
        acc
    }
    fn max_(self, o: Self) -> Self { self.max(o) }
    fn min_(self, o: Self) -> Self { self.min(o) }
    fn is_nan_(self) -> bool { false }
}

/// a·b + c with one rounding (f32/f64 `mul_add`), for generic float kernels.
pub trait FusedMulAdd: Copy {
    fn fused_mul_add(self, b: Self, c: Self) -> Self;
}
impl FusedMulAdd for f32 {
    #[inline(always)]
    fn fused_mul_add(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
}
impl FusedMulAdd for f64 {
    #[inline(always)]
    fn fused_mul_add(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
}

/// Float-only special functions.
pub trait FloatOps: Num {
    fn erf_(self) -> Self;
    fn erfc_(self) -> Self;
    fn lgamma_(self) -> Self;
    /// I0 / I1 (`order` 0 or 1); float32 overflows where its e^|x| does, as torch's.
    fn bessel_i(self, order: u32) -> Self;
}
impl FloatOps for f32 {
    fn erf_(self) -> Self { libm::erff(self) }
    fn erfc_(self) -> Self { libm::erfcf(self) }
    fn lgamma_(self) -> Self { libm::lgammaf(self) }
    fn bessel_i(self, order: u32) -> Self {
        let v = if order == 0 { cpu::special::i0(self as f64) } else { cpu::special::i1(self as f64) };
        if self.is_finite() && self.abs().exp().is_infinite() { f32::INFINITY.copysign(v as f32) } else { v as f32 }
    }
}
impl FloatOps for f64 {
    fn erf_(self) -> Self { libm::erf(self) }
    fn erfc_(self) -> Self { libm::erfc(self) }
    fn lgamma_(self) -> Self { libm::lgamma(self) }
    fn bessel_i(self, order: u32) -> Self { if order == 0 { cpu::special::i0(self) } else { cpu::special::i1(self) } }
}

// ---------------------------------------------------------------------------------------------
// Unary float ops: integer inputs compute in float32, as torch.

/// Apply a float kernel (the device kernel `op` on CUDA), promoting integer inputs to float32.
fn float_map(x: &Tensor, op: &str, f32f: impl Fn(f32) -> f32 + Sync + Send, f64f: impl Fn(f64) -> f64 + Sync + Send) -> Result<Tensor> {
    let x = if x.dtype().is_float() { x.clone() } else { cpu::cast(x, DType::default_float())? };
    // ops without a device kernel (digamma, polygamma, i0 ...) run on the host copy (`cpu::map`)
    let native = x.is_cuda() && cuda::has_kernels() && cuda::source::unary_expr(op).is_some();
    if x.dtype().is_narrow() {
        // float16/bfloat16: in float32, rounded once (on a device: one kernel that converts)
        if native {
            return cuda::native::unary_in(&x, op, DType::F32, x.dtype());
        }
        return cast_raw(&float_map(&cast_raw(&x, DType::F32)?, op, f32f, f64f)?, x.dtype());
    }
    if native {
        return cuda::native::unary(&x, op, x.dtype());
    }
    match x.dtype() {
        DType::F64 => cpu::map::<f64, f64>(&x, f64f),
        _ => cpu::map::<f32, f32>(&x, f32f),
    }
}

/// Makes a float unary op from its row in the op table (src/ops/table.rs): forward body (generic
/// over f32/f64 as `$v`), the grad_fn name, whether the rule needs the input (`x`) or the output
/// (`y`), and the rule.
macro_rules! float_unary {
    ($name:ident, $gf:literal, (|$v:ident| $body:expr), $save:ident, (|$g:ident, $s:ident| $rule:expr), (), [$($flag:ident)*]) => {
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            $(float_unary!(@flag $flag, $name, x);)*
            fn k<T: FloatOps>($v: T) -> T { $body }
            let out = float_map(x, stringify!($name), k::<f32>, k::<f64>)?;
            if needs_grad(&[x]) {
                let s = float_unary!(@save $save, x, out);
                record(&[&out], &[x], $gf, crate::autograd::Named([s], &[float_unary!(@name $save)]), |ctx, gs| {
                    let $g = &gs[0];
                    let $s = ctx.saved(0)?;
                    Ok(smallvec![Some($rule)])
                });
            }
            Ok(out)
        }
    };
    // with the rule on plain numbers (Note [Scalar lane] in engine.rs): `$lane` computes what
    // the rule does, in the same dtype and order
    ($name:ident, $gf:literal, (|$v:ident| $body:expr), $save:ident, (|$g:ident, $s:ident| $rule:expr), (|$lg:ident, $ls:ident| $lk:expr), [$($flag:ident)*]) => {
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            $(float_unary!(@flag $flag, $name, x);)*
            fn k<T: FloatOps>($v: T) -> T { $body }
            let out = float_map(x, stringify!($name), k::<f32>, k::<f64>)?;
            if needs_grad(&[x]) {
                struct L;
                impl crate::autograd::node::Lane for L {
                    const RULE: Option<crate::autograd::ScalarRule> = Some(crate::autograd::ScalarRule { k32: |$lg: f32, $ls: f32| $lk, k64: |$lg: f64, $ls: f64| $lk });
                }
                let s = float_unary!(@save $save, x, out);
                super::record_lane::<L>(&[&out], &[x], $gf, crate::autograd::Named([s], &[float_unary!(@name $save)]), |ctx, gs| {
                    let $g = &gs[0];
                    let $s = ctx.saved(0)?;
                    Ok(smallvec![Some($rule)])
                });
            }
            Ok(out)
        }
    };
    // the row's flags: `no_half` refuses float16/bfloat16 as torch's (no kernel there)
    (@flag no_half, $name:ident, $x:ident) => {
        if $x.dtype().is_narrow() && $x.dtype().is_float() {
            bail!(NotImplemented, "\"{}_cpu\" not implemented for '{}'", stringify!($name), $x.dtype().type_word());
        }
    };
    (@flag $other:ident, $name:ident, $x:ident) => {};
    (@save x, $x:ident, $out:ident) => { SavedTensor::input($x) };
    (@save y, $x:ident, $out:ident) => { SavedTensor::output(&$out, 0) };
    // torch's names for them
    (@name x) => { "self" };
    (@name y) => { "result" };
}

/// g * f'(s) in one pass when no graph is being recorded (plain backward); with create_graph
/// the composed rule runs instead, so higher-order gradients stay exact.
fn fused(g: &Tensor, s: &Tensor, cuda_op: &str, k32: impl Fn(f32, f32) -> f32 + Sync + Send + Copy, k64: impl Fn(f64, f64) -> f64 + Sync + Send + Copy, composed: impl FnOnce() -> Result<Tensor>) -> Result<Tensor> {
    if crate::autograd::is_grad_enabled() {
        return composed();
    }
    let (dt, on_cuda) = {
        let (gd, sd) = (g.read_data(), s.read_data());
        if gd.storage.dtype() != sd.storage.dtype() || gd.layout.shape != sd.layout.shape {
            drop((gd, sd));
            return composed();
        }
        (gd.storage.dtype(), gd.storage.device().is_cuda() || sd.storage.device().is_cuda())
    };
    if dt.is_narrow() && dt.is_float() {
        // float16/bfloat16: in float32, rounded once (as torch's backward kernels)
        if on_cuda && cuda::has_kernels() {
            return cuda::native::binary(g, s, cuda_op, DType::F32, dt, None);
        }
        let (gw, sw) = (cast_raw(g, DType::F32)?, cast_raw(s, DType::F32)?);
        return cast_raw(&fused(&gw, &sw, cuda_op, k32, k64, composed)?, dt);
    }
    if on_cuda && cuda::has_kernels() && dt.is_float() {
        return cuda::native::binary(g, s, cuda_op, dt, dt, None);
    }
    // an incoming gradient nobody else holds (the engine's, fresh from the node before) takes
    // the result in its own buffer: no new allocation, one write stream less
    if g.is_sole_owner() && super::shape::plain_pair(g, s) {
        super::shape::update_plain(g, s, k32, k64);
        return Ok(g.clone());
    }
    match dt {
        DType::F32 => cpu::zip::<f32, f32>(g, s, &g.shape(), k32),
        DType::F64 => cpu::zip::<f64, f64>(g, s, &g.shape(), k64),
        _ => composed(),
    }
}

fn c<T: Num>(v: f64) -> T {
    T::from_f64(v)
}

/// The op functions of the table's float unary rows (`ops::exp` ... `ops::special_i1`).
macro_rules! float_unary_fns {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident $($ipgf:literal)?, bind $bind:ident $($flag:ident)*, saves $save:ident,
        kernel $k:tt, backward $b:tt, lane $l:tt;)*) => {
        $(float_unary!($name, $gf, $k, $save, $b, $l, [$($flag)*]);)*
    };
}
crate::float_unary_ops!(float_unary_fns);

const PI: f64 = std::f64::consts::PI;

/// ψ⁽ⁿ⁾(x) (torch.polygamma(n, x)); n = 0 is digamma, recorded as PolygammaBackward0.
pub fn polygamma(n: i64, x: &Tensor) -> Result<Tensor> {
    polygamma_as(n, x, "PolygammaBackward0")
}

/// polygamma recorded as `gf` (torch's in-place polygamma_ is PolygammaBackward1).
pub fn polygamma_as(n: i64, x: &Tensor, gf: &'static str) -> Result<Tensor> {
    let _prof = crate::prof!("aten::polygamma");
    if n < 0 {
        bail!(Runtime, "polygamma(n, x) does not support negative n.");
    }
    let k = n.min(u32::MAX as i64) as u32;
    let out = float_map(x, "polygamma", move |v: f32| cpu::special::polygamma_f32(k, v), move |v| cpu::special::polygamma(k, v))?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], gf, saved!(self = SavedTensor::input(x)), move |ctx, gs| {
            let x = ctx.saved(0)?;
            Ok(smallvec![Some(mul(&gs[0], &polygamma(n + 1, &x)?)?)])
        });
    }
    Ok(out)
}

/// The multivariate log-gamma function of dimension p (torch.mvlgamma).
pub fn mvlgamma(x: &Tensor, p: i64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mvlgamma");
    if p < 1 {
        bail!(Runtime, "p has to be greater than or equal to 1");
    }
    // torch sums over arange(p): a p too large to allocate is its error (not an endless loop)
    if p > u32::MAX as i64 {
        bail!(Runtime, "Storage size calculation overflowed with sizes=[{}]", p);
    }
    crate::tensor::storage::check_alloc(x.dtype(), p as usize)?;
    let k = p as u32;
    let out = float_map(x, "mvlgamma", move |v: f32| cpu::special::mvlgamma(v as f64, k) as f32, move |v| cpu::special::mvlgamma(v, k))?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "MvlgammaBackward0", saved!(self = SavedTensor::input(x)), move |ctx, gs| {
            let x = ctx.saved(0)?;
            // Σ_j ψ(x - j/2)
            let mut s = digamma(&x)?;
            for j in 1..p {
                s = add(&s, &digamma(&add(&x, &scalar(-(j as f64) / 2.0))?)?)?;
            }
            Ok(smallvec![Some(mul(&gs[0], &s)?)])
        });
    }
    Ok(out)
}

/// `f` for torch's in-place forms that have no derivative (asinh_, acosh_, atanh_): the node
/// `gf` is recorded and its backward raises NotImplementedError, as torch's.
pub fn inplace_without_derivative(x: &Tensor, f: fn(&Tensor) -> Result<Tensor>, name: &'static str, gf: &'static str) -> Result<Tensor> {
    let out = {
        let _ng = crate::autograd::GradModeGuard::new(false);
        f(x)?
    };
    if needs_grad(&[x]) {
        record(&[&out], &[x], gf, saved!(), move |_, _| -> Result<crate::autograd::Grads> {
            bail!(NotImplemented, "the derivative for 'inplace version of {}' is not implemented.", name);
        });
    }
    Ok(out)
}

/// sgn: sign for real tensors (bool stays bool), recorded as SgnBackward0 with a zero gradient.
pub fn sgn(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sgn");
    let out = {
        let _ng = crate::autograd::GradModeGuard::new(false);
        sign(x)?
    };
    if needs_grad(&[x]) {
        record(&[&out], &[x], "SgnBackward0", saved!(), |_, gs| Ok(smallvec![Some(crate::ops::zeros_like(&gs[0])?)]));
    }
    Ok(out)
}

/// A binary float op over broadcast operands: integers promote to float32, float16/bfloat16
/// compute in float32 and round once. `op` names the device kernel, if there is one.
fn float_zip_op(a: &Tensor, b: &Tensor, dt: DType, op: &str, f32f: impl Fn(f32, f32) -> f32 + Sync + Send, f64f: impl Fn(f64, f64) -> f64 + Sync + Send) -> Result<Tensor> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let native = (a.is_cuda() || b.is_cuda()) && cuda::has_kernels() && cuda::source::binary_expr(op).is_some();
    if dt.is_narrow() {
        if native {
            return cuda::native::binary(&cast_raw(a, dt)?, &cast_raw(b, dt)?, op, DType::F32, dt, None);
        }
        return cast_raw(&float_zip_op(&to_compute(a, dt)?, &to_compute(b, dt)?, DType::F32, op, f32f, f64f)?, dt);
    }
    if native {
        return cuda::native::binary(a, b, op, dt, dt, None);
    }
    let (a, b) = (cast_raw(a, dt)?, cast_raw(b, dt)?);
    match dt {
        DType::F64 => cpu::zip::<f64, f64>(&a, &b, &shape, f64f),
        _ => cpu::zip::<f32, f32>(&a, &b, &shape, f32f),
    }
}

/// Makes a float binary op from its row in the op table (`float_binary_ops!`): the promoted
/// float dtype (integers in float32 for `FloatResult`; refused for `Float`), the kernel, and the
/// node with one rule per operand.
macro_rules! float_binary_fns {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, bind $bind:ident $($flag:ident)*,
        kernel $k:tt, grad_self $ga:tt, grad_other $gb:tt;)*) => {
        $(float_binary_fns!(@fn $name, $gf, $dom, $k, $ga, $gb);)*
    };
    (@fn $name:ident, $gf:literal, $dom:ident, (|$x:ident, $y:ident| $body:expr), (|$g1:ident, $a1:ident, $b1:ident| $ra:expr), (|$g2:ident, $a2:ident, $b2:ident| $rb:expr)) => {
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            let dt = float_binary_dtype(a, b, stringify!($name), super::table::Domain::$dom)?;
            fn k<T: FloatOps>($x: T, $y: T) -> T { $body }
            let out = float_zip_op(a, b, dt, stringify!($name), k::<f32>, k::<f64>)?;
            if needs_grad(&[a, b]) {
                record(&[&out], &[a, b], $gf, saved!(self = SavedTensor::input(a), other = SavedTensor::input(b)), |ctx, gs| {
                    let (sa, sb) = (ctx.saved(0)?, ctx.saved(1)?);
                    let ga = if ctx.needs(0) { let ($g1, $a1, $b1) = (&gs[0], &sa, &sb); Some($ra) } else { None };
                    let gb = if ctx.needs(1) { let ($g2, $a2, $b2) = (&gs[0], &sa, &sb); Some($rb) } else { None };
                    Ok(smallvec![ga, gb])
                });
            }
            Ok(out)
        }
    };
}
crate::float_binary_ops!(float_binary_fns);

/// The dtype a float binary op computes in: the promoted float dtype, float32 for integer
/// operands (`FloatResult`), torch's error for them otherwise.
fn float_binary_dtype(a: &Tensor, b: &Tensor, name: &str, domain: super::table::Domain) -> Result<DType> {
    let dt = promote_types(&[a, b]);
    if dt.is_float() {
        return Ok(dt);
    }
    if domain == super::table::Domain::FloatResult {
        return Ok(DType::default_float());
    }
    bail!(NotImplemented, "\"{}_cpu\" not implemented for '{}'", name, dt.type_word())
}

/// 1 / (a² + b²), 0 where that is inf (a = b = 0): atan2's derivative scale, as torch's.
fn atan2_scale(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let r = reciprocal(&add(&mul(a, a)?, &mul(b, b)?)?)?;
    masked_fill_scalar(&r, &isinf(&r)?, 0.0)
}

/// nextafter(a, b): the next float after a towards b (float operands only, as torch's).
pub fn nextafter(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::nextafter");
    let dt = promote_types(&[a, b]);
    if !dt.is_float() {
        bail!(NotImplemented, "\"nextafter_cpu\" not implemented for '{}'", dt.type_word());
    }
    let out = float_zip_op(a, b, dt, "nextafter", libm::nextafterf, libm::nextafter)?;
    if needs_grad(&[a, b]) {
        // torch's rule: the gradient passes to a, zeros to b
        record(&[&out], &[a, b], "NextafterBackward0", saved!(), |ctx, gs| {
            let ga = if ctx.needs(0) { Some(gs[0].clone()) } else { None };
            let gb = if ctx.needs(1) { Some(crate::ops::zeros_like(&gs[0])?) } else { None };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// `x.pipe(f)` = `f(x)`, to keep the op table one line per op.
trait Pipe: Sized {
    fn pipe<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}
impl Pipe for f64 {}

// ---------------------------------------------------------------------------------------------
// Unary ops that keep integer dtypes.

// The kernels are taken as generic callables, never `fn` pointers: a pointer is an indirect
// call per element that the loops in `cpu::simd` cannot inline or vectorise (relu measured 11x
// torch's time that way).
fn num_map<F32, F64, I64>(x: &Tensor, op: &str, f32f: F32, f64f: F64, i64f: I64) -> Result<Tensor>
where
    F32: Fn(f32) -> f32 + Sync + Send + Copy,
    F64: Fn(f64) -> f64 + Sync + Send + Copy,
    I64: Fn(i64) -> i64 + Sync + Send + Copy,
{
    if x.dtype().is_narrow() {
        if x.is_cuda() && cuda::has_kernels() && x.dtype().is_float() {
            return cuda::native::unary_in(x, op, DType::F32, x.dtype());
        }
        // in the compute dtype: integers wrap on the way back (abs(int8 -128) is -128, as torch)
        return cast_raw(&num_map(&cast_raw(x, x.dtype().compute())?, op, f32f, f64f, i64f)?, x.dtype());
    }
    if x.is_cuda() && cuda::has_kernels() && x.dtype() != DType::Bool {
        return cuda::native::unary(x, op, x.dtype());
    }
    Ok(match x.dtype() {
        DType::F32 => cpu::map::<f32, f32>(x, f32f)?,
        DType::F64 => cpu::map::<f64, f64>(x, f64f)?,
        DType::I64 => cpu::map::<i64, i64>(x, i64f)?,
        DType::Bool => bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", op),
        d => crate::tensor::dtype::narrow_in_compute_kernel(d),
    })
}

macro_rules! num_unary {
    ($name:ident, $gf:literal, (|$v:ident| $body:expr), zero, ()) => {
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            fn k<T: Num>($v: T) -> T { $body }
            let out = num_map(x, stringify!($name), k::<f32>, k::<f64>, k::<i64>)?;
            if needs_grad(&[x]) {
                // Piecewise constant: the gradient is zero everywhere torch defines it (zeros,
                // not g * 0, which would be NaN where g is inf or NaN).
                record(&[&out], &[x], $gf, saved!(), |_, gs| Ok(smallvec![Some(crate::ops::zeros_like(&gs[0])?)]));
            }
            Ok(out)
        }
    };
    ($name:ident, $gf:literal, (|$v:ident| $body:expr), $save:ident, (|$g:ident, $s:ident| $rule:expr)) => {
        pub fn $name(x: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            fn k<T: Num>($v: T) -> T { $body }
            let out = num_map(x, stringify!($name), k::<f32>, k::<f64>, k::<i64>)?;
            if needs_grad(&[x]) {
                let s = float_unary!(@save $save, x, out);
                record(&[&out], &[x], $gf, crate::autograd::Named([s], &[float_unary!(@name $save)]), |ctx, gs| {
                    let $g = &gs[0];
                    let $s = ctx.saved(0)?;
                    Ok(smallvec![Some($rule)])
                });
            }
            Ok(out)
        }
    };
}

/// The op functions of the table's integer-keeping unary rows (`ops::abs`, `ops::floor` ...).
macro_rules! num_unary_fns {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident $($ipgf:literal)?, bind $bind:ident $($flag:ident)*, saves $save:ident,
        kernel $k:tt, backward $b:tt, lane $l:tt;)*) => {
        $(num_unary!($name, $gf, $k, $save, $b);)*
    };
}
crate::num_unary_ops!(num_unary_fns);

/// g where y > 0, else 0: relu's backward as an op of (g, y), so double backward sees both.
pub fn threshold_backward(g: &Tensor, y: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::threshold_backward");
    // torch: y <= 0 ? 0 : g (a select, so a NaN y passes g and an inf g stays off the zeros)
    let record_node = needs_grad(&[g, y]);
    let _ng = crate::autograd::GradModeGuard::new(false);
    let shape = broadcast_shapes(&g.shape(), &y.shape())?;
    let passes = || -> Result<Tensor> { logical_not(&le(y, &scalar(0.0))?) };
    let out = match g.dtype() {
        DType::F32 | DType::F64 if g.dtype() == y.dtype() && (g.is_cuda() || y.is_cuda()) && cuda::has_kernels() => {
            cuda::native::binary(g, y, "threshold_backward", g.dtype(), g.dtype(), None)?
        }
        DType::F32 if g.dtype() == y.dtype() => cpu::zip::<f32, f32>(g, y, &shape, |g, y| if y <= 0.0 { 0.0 } else { g })?,
        DType::F64 if g.dtype() == y.dtype() => cpu::zip::<f64, f64>(g, y, &shape, |g, y| if y <= 0.0 { 0.0 } else { g })?,
        _ => masked_fill_scalar(g, &le(y, &scalar(0.0))?, 0.0)?,
    };
    if record_node {
        let mask = passes()?;
        drop(_ng);
        record(&[&out], &[g, y], "ThresholdBackwardBackward0", saved!(SavedTensor::input(&mask)), |ctx, gs| {
            let mask = ctx.saved(0)?;
            let gg = if ctx.needs(0) { Some(threshold_backward(&gs[0], &cast_raw(&mask, gs[0].dtype())?)?) } else { None };
            let gy = if ctx.needs(1) { Some(mul(&gs[0], &scalar(0.0))?) } else { None };
            Ok(smallvec![gg, gy])
        });
    }
    Ok(out)
}
pub fn sign(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sign");
    if x.dtype() == DType::Bool {
        return Ok(cpu::contiguous(x)?);
    }
    sign_num(x)
}
pub fn neg(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::neg");
    if x.dtype() == DType::Bool {
        bail!(Runtime, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    }
    fn k<T: Num>(v: T) -> T {
        -v
    }
    let out = num_map(x, "neg", k::<f32>, k::<f64>, k::<i64>)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "NegBackward0", saved!(), |_, gs| Ok(smallvec![Some(neg(&gs[0])?)]));
    }
    Ok(out)
}

pub fn square(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::square");
    if x.dtype() == DType::Bool {
        return pow_scalar(&cast_raw(x, DType::I64)?, 2.0);
    }
    pow_scalar(x, 2.0)
}

// ---------------------------------------------------------------------------------------------
// Binary arithmetic.

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Rem,
    Pow,
    Max,
    Min,
}

fn bin_kernel<T: Num>(op: BinOp) -> fn(T, T) -> T {
    match op {
        BinOp::Add => |a, b| a + b,
        BinOp::Sub => |a, b| a - b,
        BinOp::Mul => |a, b| a * b,
        BinOp::Div => |a, b| a.div_(b),
        BinOp::FloorDiv => |a, b| a.floor_div(b),
        BinOp::Rem => |a, b| a.rem_(b),
        BinOp::Pow => |a, b| a.pow_(b),
        BinOp::Max => |a, b| a.max_(b),
        BinOp::Min => |a, b| a.min_(b),
    }
}

/// A float binary op with the operation inlined into the kernel (a closure per op, not a
/// function pointer), so the common ops compile to vector loops.
fn float_zip<T: Num>(a: &Tensor, b: &Tensor, shape: &[usize], op: BinOp) -> Result<Tensor> {
    match op {
        BinOp::Add => cpu::zip::<T, T>(a, b, shape, |x, y| x + y),
        BinOp::Sub => cpu::zip::<T, T>(a, b, shape, |x, y| x - y),
        BinOp::Mul => cpu::zip::<T, T>(a, b, shape, |x, y| x * y),
        BinOp::Div => cpu::zip::<T, T>(a, b, shape, |x, y| x.div_(y)),
        _ => cpu::zip::<T, T>(a, b, shape, bin_kernel::<T>(op)),
    }
}

/// `x op s` (or `s op x` when `scalar_left`) for a float tensor and one value already in its dtype.
fn float_map_scalar<T: Num>(x: &Tensor, s: T, op: BinOp, scalar_left: bool) -> Result<Tensor> {
    match (op, scalar_left) {
        (BinOp::Add, _) => cpu::map::<T, T>(x, move |v| v + s),
        (BinOp::Mul, _) => cpu::map::<T, T>(x, move |v| v * s),
        (BinOp::Sub, false) => cpu::map::<T, T>(x, move |v| v - s),
        (BinOp::Sub, true) => cpu::map::<T, T>(x, move |v| s - v),
        (BinOp::Div, false) => cpu::map::<T, T>(x, move |v| v.div_(s)),
        (BinOp::Div, true) => cpu::map::<T, T>(x, move |v| s.div_(v)),
        (_, false) => {
            let k = bin_kernel::<T>(op);
            cpu::map::<T, T>(x, move |v| k(v, s))
        }
        (_, true) => {
            let k = bin_kernel::<T>(op);
            cpu::map::<T, T>(x, move |v| k(s, v))
        }
    }
}

/// Forward of a binary op in dtype `dt` over the broadcast shape, without recording.
pub fn binary_raw(a: &Tensor, b: &Tensor, dt: DType, op: BinOp) -> Result<Tensor> {
    // torch refuses int ** negative for a number exponent only; an int64 tensor exponent gives
    // 1, -1 or 0 (base 1, base -1, other bases)
    if dt.is_int() && op == BinOp::Pow && b.is_wrapped_number() && b.item_f64()? < 0.0 {
        bail!(Runtime, "Integers to negative integer powers are not allowed.");
    }
    if dt.is_narrow() {
        // Operands take dt's values (a number wraps or rounds to it), then the op runs in the
        // compute dtype and the result is stored back once. torch's float16/bfloat16 mul, div
        // and floor_divide read a one-element second operand at float32 precision instead (and
        // a Python number times a tensor is the tensor times the number there).
        let c = dt.compute();
        let exact_b = dt.is_float() && matches!(op, BinOp::Mul | BinOp::Div | BinOp::FloorDiv) && b.numel() == 1;
        let exact_a = dt.is_float() && op == BinOp::Mul && a.is_wrapped_number();
        if dt.is_float() && cuda::has_kernels() && (a.is_cuda() || b.is_cuda()) {
            // one kernel: 16-bit operands load as float32, the result rounds once on store
            let (ad, bd) = (if exact_a { a.clone() } else { cast_raw(a, dt)? }, if exact_b { b.clone() } else { cast_raw(b, dt)? });
            return binary_cuda(&ad, &bd, c, dt, op);
        }
        let ac = if exact_a { cast_raw(a, c)? } else { to_compute(a, dt)? };
        let bc = if exact_b { cast_raw(b, c)? } else { to_compute(b, dt)? };
        return cast_raw(&binary_raw(&ac, &bc, c, op)?, dt);
    }
    if cuda::has_kernels() && (a.is_cuda() || b.is_cuda()) {
        return binary_cuda(a, b, dt, dt, op);
    }
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    // A one-element operand of another dtype (typically a Python number): convert the value
    // instead of materialising a cast tensor; same result as cast-then-op.
    if dt.is_float() {
        for (x, s, scalar_left) in [(a, b, false), (b, a, true)] {
            if s.numel() == 1 && s.dtype() != dt && x.dtype() == dt && x.shape() == shape {
                let v = s.item_f64()?;
                if s.dtype() == DType::I64 && v.abs() > 9007199254740992.0 {
                    break; // not exact in f64: let the cast below round the integer once
                }
                return match dt {
                    DType::F32 => float_map_scalar::<f32>(x, v as f32, op, scalar_left),
                    _ => float_map_scalar::<f64>(x, v, op, scalar_left),
                };
            }
        }
    }
    let (a, b) = (cast_raw(a, dt)?, cast_raw(b, dt)?);
    match dt {
        DType::F32 => float_zip::<f32>(&a, &b, &shape, op),
        DType::F64 => float_zip::<f64>(&a, &b, &shape, op),
        DType::I64 => {
            if matches!(op, BinOp::Div | BinOp::FloorDiv | BinOp::Rem) {
                let zero = b.with_contiguous::<i64, _>(|s| s.iter().any(|&v| v == 0))?;
                if zero {
                    bail!(Runtime, "ZeroDivisionError");
                }
            }
            cpu::zip::<i64, i64>(&a, &b, &shape, bin_kernel::<i64>(op))
        }
        DType::Bool => match op {
            BinOp::Add | BinOp::Max => cpu::zip::<bool, bool>(&a, &b, &shape, |x, y| x | y),
            BinOp::Mul | BinOp::Min => cpu::zip::<bool, bool>(&a, &b, &shape, |x, y| x & y),
            BinOp::Sub => bail!(Runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."),
            _ => {
                let r = binary_raw(&a, &b, DType::I64, op)?;
                Ok(cast_raw(&r, DType::Bool)?)
            }
        },
        d => crate::tensor::dtype::narrow_in_compute_kernel(d),
    }
}

/// `binary_raw` with a device operand: one kernel that converts operands to `dt` as it loads them
/// and gives `out` (dt, or the float16/bfloat16 type dt = float32 computes for).
fn binary_cuda(a: &Tensor, b: &Tensor, dt: DType, out: DType, op: BinOp) -> Result<Tensor> {
    if dt == DType::I64 {
        if matches!(op, BinOp::Div | BinOp::FloorDiv | BinOp::Rem) && b.with_contiguous::<i64, _>(|s| s.contains(&0))? {
            bail!(Runtime, "ZeroDivisionError");
        }
    }
    if dt == DType::Bool {
        return match op {
            BinOp::Add | BinOp::Max => cuda::native::binary(a, b, "or", dt, dt, None),
            BinOp::Mul | BinOp::Min => cuda::native::binary(a, b, "and", dt, dt, None),
            BinOp::Sub => bail!(Runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."),
            _ => cast_raw(&binary_cuda(a, b, DType::I64, DType::I64, op)?, DType::Bool),
        };
    }
    let name = match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::FloorDiv => "floor_divide",
        BinOp::Rem => "remainder",
        BinOp::Pow => "pow",
        BinOp::Max => "maximum",
        BinOp::Min => "minimum",
    };
    cuda::native::binary(a, b, name, dt, out, None)
}

fn check_same_device_and_shape(a: &Tensor, b: &Tensor) -> Result<crate::tensor::Shape> {
    broadcast_shapes(&a.shape(), &b.shape())
}

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::add");
    let dt = promote_types(&[a, b]);
    let out = binary_raw(a, b, dt, BinOp::Add)?;
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "AddBackward0", saved!(), |_, gs| Ok(smallvec![Some(gs[0].clone()), Some(gs[0].clone())]));
    }
    Ok(out)
}

/// a + alpha * b (torch.add with alpha).
pub fn add_alpha(a: &Tensor, b: &Tensor, alpha: f64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::add");
    if alpha == 1.0 {
        return add(a, b);
    }
    let dt = promote_types(&[a, b]);
    if !needs_grad(&[a, b]) && dt.is_narrow() && dt.is_float() && dt == a.dtype() && dt == b.dtype() {
        // float16/bfloat16: a + alpha·b in float32 with alpha rounded to dt, the result rounded
        // once (torch's)
        let alpha = crate::tensor::Tensor::full(&[], alpha, dt)?.item_f64()?;
        return cast_raw(&add_alpha(&cast_raw(a, DType::F32)?, &cast_raw(b, DType::F32)?, alpha)?, dt);
    }
    if !needs_grad(&[a, b]) && dt.is_float() && !dt.is_narrow() && dt == a.dtype() && dt == b.dtype() {
        // one pass, a + alpha·b with alpha rounded to the dtype and one rounding (a fused
        // multiply-add, as torch's vectorised kernel computes it)
        let shape = broadcast_shapes(&a.shape(), &b.shape())?;
        return match dt {
            DType::F32 => {
                let al = alpha as f32;
                cpu::zip::<f32, f32>(a, b, &shape, move |x, y| y.mul_add(al, x))
            }
            _ => cpu::zip::<f64, f64>(a, b, &shape, move |x, y| y.mul_add(alpha, x)),
        };
    }
    add(a, &mul(b, &scalar(alpha))?)
}

/// torch refuses subtraction with a bool operand (a Python bool included).
pub fn check_sub(a: &Tensor, b: &Tensor) -> Result<()> {
    match (a.dtype() == DType::Bool, b.dtype() == DType::Bool) {
        (true, true) => bail!(NotImplemented, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."),
        (true, false) | (false, true) => bail!(NotImplemented, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."),
        _ => Ok(()),
    }
}

/// torch's CPU kernels of some ops have no bool version.
fn check_not_bool(dt: DType, kernel: &str) -> Result<()> {
    if dt == DType::Bool {
        bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", kernel);
    }
    Ok(())
}

pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sub");
    check_sub(a, b)?;
    let dt = promote_types(&[a, b]);
    let out = binary_raw(a, b, dt, BinOp::Sub)?;
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "SubBackward0", saved!(), |ctx, gs| {
            let gb = if ctx.needs(1) { Some(neg(&gs[0])?) } else { None };
            Ok(smallvec![Some(gs[0].clone()), gb])
        });
    }
    Ok(out)
}

/// s - x for a Python number s (torch's rsub).
pub fn rsub_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::rsub");
    let sv = scalar(s);
    check_sub(&sv, x)?;
    let dt = promote_types(&[x, &sv]);
    let out = binary_raw(&sv, x, dt, BinOp::Sub)?;
    if needs_grad(&[x]) {
        record(&[&out], &[x], "RsubBackward1", saved!(), |_, gs| Ok(smallvec![Some(neg(&gs[0])?)]));
    }
    Ok(out)
}

/// `x op s` (`s op x` when `number_left`) for a Python number `s` and a floating-point CPU tensor
/// `x`: the fast path of `x * 2.0`-like expressions. The result has x's dtype (a number never
/// lifts a float tensor's dtype), the number is applied as a value (no wrapped tensor is made),
/// and the node records the number's slot as an empty edge, as torch's. `None` when the general
/// path must run (other dtypes or devices, an integer not exact in f64, s / x, other ops).
pub fn number_op(x: &Tensor, s: crate::tensor::Scalar, op: BinOp, number_left: bool) -> Result<Option<Tensor>> {
    use crate::tensor::Scalar;
    let v = match s {
        Scalar::Float(f) => f,
        Scalar::Int(i) if i.unsigned_abs() <= 1 << 53 => i as f64,
        _ => return Ok(None),
    };
    // `2.0 * x` is torch's `x.__rmul__(2.0)`, mul(x, 2.0): x is the first operand (its edge
    // first in next_functions) of a commutative op, and the value is the same
    let number_left = number_left && !matches!(op, BinOp::Add | BinOp::Mul);
    let dt = x.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || x.is_cuda() || (number_left && op == BinOp::Div) {
        return Ok(None);
    }
    let name = match (op, number_left) {
        (BinOp::Add, _) => "AddBackward0",
        (BinOp::Mul, _) => "MulBackward0",
        (BinOp::Sub, false) => "SubBackward0",
        (BinOp::Sub, true) => "RsubBackward1",
        (BinOp::Div, false) => "DivBackward0",
        _ => return Ok(None),
    };
    let _prof = crate::prof!(match op { BinOp::Add => "aten::add", BinOp::Sub => "aten::sub", BinOp::Mul => "aten::mul", _ => "aten::div" });
    let out = match dt {
        DType::F32 => float_map_scalar::<f32>(x, v as f32, op, number_left)?,
        _ => float_map_scalar::<f64>(x, v, op, number_left)?,
    };
    if needs_grad(&[x]) {
        let number = crate::autograd::TensorMeta::new(&[], s.dtype_wrapped(), crate::backend::Device::Cpu);
        let record = |saved: &'static [&'static str], func: Box<dyn crate::autograd::Backward>| super::record_with_number(&out, x, number, number_left, crate::autograd::NodeKind { name, saved }, func);
        match (op, number_left) {
            (BinOp::Add | BinOp::Sub, false) => record(&[], Box::new(PassBackward::<false, false>)),
            (BinOp::Sub, true) => record(&[], Box::new(PassBackward::<true, true>)),
            // (torch's node saves the number as `other`, which reads as None here)
            _ => record(&["self", "other"], Box::new(NumberBackward { value: v, int: matches!(s, crate::tensor::Scalar::Int(_)), div: op == BinOp::Div, left: number_left, released: false })),
        }
    }
    Ok(Some(out))
}

/// The backward of `x * number` and `x / number` (see `number_op`): the number kept as its value
/// (16 bytes, where a boxed closure and its backward took 64), with the rule on plain numbers too
/// (Note [Scalar lane] in engine.rs). The number is freed after backward (a second backward then
/// fails as torch's, which saves `other`).
struct NumberBackward {
    value: f64,
    /// The number was an integer (exact in `value`).
    int: bool,
    div: bool,
    left: bool,
    released: bool,
}

impl NumberBackward {
    fn number(&self) -> crate::tensor::Scalar {
        if self.int {
            crate::tensor::Scalar::Int(self.value as i64)
        } else {
            crate::tensor::Scalar::Float(self.value)
        }
    }
}

/// The gradient `g` of one operand, placed at its position among two.
fn place(g: Tensor, left: bool) -> crate::autograd::Grads {
    if left {
        smallvec![None, Some(g)]
    } else {
        smallvec![Some(g), None]
    }
}

fn place_value(v: f64, left: bool) -> [f64; 2] {
    if left {
        [0.0, v]
    } else {
        [v, 0.0]
    }
}

/// The one output gradient of a node with one output.
fn only_grad(node: &crate::autograd::NodeRef, grads: crate::autograd::Grads) -> Result<Tensor> {
    crate::autograd::node::materialized(node, grads)?.into_iter().next().ok_or_else(|| crate::error::Error::runtime(format!("{}: missing output gradient", node.name())))
}

impl crate::autograd::Backward for NumberBackward {
    fn apply(&mut self, node: &crate::autograd::NodeRef, grads: crate::autograd::Grads) -> Result<crate::autograd::Grads> {
        if self.released {
            return Err(crate::autograd::node::freed_error());
        }
        let g = only_grad(node, grads)?;
        let gx = if self.div { div_number(&g, self.number())? } else { mul_number(&g, self.number())? };
        Ok(place(gx, self.left))
    }
    fn release(&mut self) {
        self.released = true;
    }
    fn parallel_safe(&self) -> bool {
        true
    }
    fn apply_scalar(&mut self, _node: &crate::autograd::NodeRef, g: f64, dt: DType) -> Option<Result<[f64; 2]>> {
        if self.released {
            return Some(Err(crate::autograd::node::freed_error()));
        }
        let c = self.value;
        // as number_op computes g * c or g / c: in the gradient's dtype
        let v = match (dt, self.div) {
            (DType::F32, false) => (g as f32 * c as f32) as f64,
            (DType::F32, true) => (g as f32 / c as f32) as f64,
            (DType::F64, false) => g * c,
            (DType::F64, true) => g / c,
            _ => return None,
        };
        Some(Ok(place_value(v, self.left)))
    }
}

/// The backward of `x + number`, `x - number` (the gradient passes through) and `number - x`
/// (`NEG`: negated, at the second place): nothing kept, so no allocation.
struct PassBackward<const LEFT: bool, const NEG: bool>;

impl<const LEFT: bool, const NEG: bool> crate::autograd::Backward for PassBackward<LEFT, NEG> {
    fn apply(&mut self, node: &crate::autograd::NodeRef, grads: crate::autograd::Grads) -> Result<crate::autograd::Grads> {
        let g = only_grad(node, grads)?;
        Ok(place(if NEG { neg(&g)? } else { g }, LEFT))
    }
    fn release(&mut self) {}
    fn parallel_safe(&self) -> bool {
        true
    }
    fn apply_scalar(&mut self, _node: &crate::autograd::NodeRef, g: f64, dt: DType) -> Option<Result<[f64; 2]>> {
        if !matches!(dt, DType::F32 | DType::F64) {
            return None;
        }
        Some(Ok(place_value(if NEG { -g } else { g }, LEFT)))
    }
}

/// g * s for a Python number s (the general path when the fast one does not apply).
fn mul_number(g: &Tensor, s: crate::tensor::Scalar) -> Result<Tensor> {
    match number_op(g, s, BinOp::Mul, false)? {
        Some(t) => Ok(t),
        None => mul(g, &Tensor::wrap_scalar(s)),
    }
}

/// g / s for a Python number s.
fn div_number(g: &Tensor, s: crate::tensor::Scalar) -> Result<Tensor> {
    match number_op(g, s, BinOp::Div, false)? {
        Some(t) => Ok(t),
        None => div(g, &Tensor::wrap_scalar(s)),
    }
}

/// The value of the Python-number operand of a binary op and the position (0 or 1) of the
/// other operand, when exactly one of them is a wrapped number not requiring grad.
fn wrapped_operand(a: &Tensor, b: &Tensor) -> Result<Option<(crate::tensor::Scalar, usize)>> {
    Ok(if b.is_wrapped_number() && !b.requires_grad() && !a.is_wrapped_number() {
        Some((b.item()?, 0))
    } else if a.is_wrapped_number() && !a.requires_grad() && !b.is_wrapped_number() {
        Some((a.item()?, 1))
    } else {
        None
    })
}

pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mul");
    let dt = promote_types(&[a, b]);
    let out = binary_raw(a, b, dt, BinOp::Mul)?;
    if needs_grad(&[a, b]) {
        // A Python number (a wrapped 0-d tensor, which never requires grad) is kept in the rule
        // as its value instead of a saved tensor: no tensor kept alive per node, and torch does
        // not pass it through saved_tensors_hooks either.
        if let Some((s, x_nr)) = wrapped_operand(a, b)? {
            record_holding_values(&[&out], &[a, b], "MulBackward0", &["self", "other"], move |_, gs| {
                let g = Some(mul_number(&gs[0], s)?);
                Ok(if x_nr == 0 { smallvec![g, None] } else { smallvec![None, g] })
            });
            return Ok(out);
        }
        // save only what a needed gradient uses: b for grad(a), a for grad(b)
        let (need_a, need_b) = (a.requires_grad(), b.requires_grad());
        let mut saved: smallvec::SmallVec<[SavedTensor; 2]> = smallvec::SmallVec::new();
        if need_a {
            saved.push(SavedTensor::input(b));
        }
        if need_b {
            saved.push(SavedTensor::input(a));
        }
        let names: &'static [&'static str] = if need_a { &["other", "self"] } else { &["self", "other"] };
        record(&[&out], &[a, b], "MulBackward0", crate::autograd::Named(saved, names), move |ctx, gs| {
            let ga = if ctx.needs(0) { Some(mul(&gs[0], &ctx.saved(0)?)?) } else { None };
            // the last use of the incoming gradient: its buffer may take the product
            let gb = if ctx.needs(1) { Some(mul_last_use(&gs[0], &ctx.saved(need_a as usize)?)?) } else { None };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// g * s in backward where g is not used afterwards: written into g's buffer when nothing is
/// recorded and nobody else holds g (see `fused`), else a new tensor.
fn mul_last_use(g: &Tensor, s: &Tensor) -> Result<Tensor> {
    if !crate::autograd::is_grad_enabled() && g.is_sole_owner() && super::shape::plain_pair(g, s) {
        super::shape::update_plain(g, s, |a, b| a * b, |a, b| a * b);
        return Ok(g.clone());
    }
    mul(g, s)
}

pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::div");
    let mut dt = promote_types(&[a, b]);
    if !dt.is_float() {
        dt = DType::default_float(); // true division of integers gives the default float dtype
    }
    let out = binary_raw(a, b, dt, BinOp::Div)?;
    if needs_grad(&[a, b]) {
        if b.is_wrapped_number() && !b.requires_grad() {
            // a / number: the number is kept as a value (see mul)
            let s = b.item()?;
            record_holding_values(&[&out], &[a, b], "DivBackward0", &["self", "other"], move |_, gs| Ok(smallvec![Some(div_number(&gs[0], s)?), None]));
            return Ok(out);
        }
        // b is always needed; a only for grad(b)
        let mut saved: smallvec::SmallVec<[SavedTensor; 2]> = smallvec![SavedTensor::input(b)];
        if b.requires_grad() {
            saved.push(SavedTensor::input(a));
        }
        record(&[&out], &[a, b], "DivBackward0", crate::autograd::Named(saved, &["other", "self"]), |ctx, gs| {
            let b = ctx.saved(0)?;
            let ga = if ctx.needs(0) { Some(div(&gs[0], &b)?) } else { None };
            let gb = if ctx.needs(1) {
                let a = ctx.saved(1)?;
                Some(neg(&div(&mul(&gs[0], &a)?, &mul(&b, &b)?)?)?)
            } else {
                None
            };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// Division with a rounding mode (torch.div(..., rounding_mode=...)).
pub fn div_mode(a: &Tensor, b: &Tensor, mode: Option<&str>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::div");
    match mode {
        None => div(a, b),
        Some("floor") => floor_divide(a, b),
        Some("trunc") => {
            let dt = promote_types(&[a, b]);
            if dt.is_float() {
                trunc(&div(a, b)?)
            } else {
                let q = binary_raw(a, b, dt, BinOp::Div)?;
                Ok(q)
            }
        }
        Some(m) => bail!(Runtime, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'", m),
    }
}

pub fn floor_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::floor_divide");
    let dt = promote_types(&[a, b]);
    check_not_bool(dt, "div_floor_cpu")?;
    let out = binary_raw(a, b, dt, BinOp::FloorDiv)?;
    if needs_grad(&[a, b]) {
        // Piecewise constant in both arguments.
        record(&[&out], &[a, b], "FloorDivideBackward0", saved!(), |_, gs| {
            let z = mul(&gs[0], &scalar(0.0))?;
            Ok(smallvec![Some(z.clone()), Some(z)])
        });
    }
    Ok(out)
}

pub fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::remainder");
    let dt = promote_types(&[a, b]);
    check_not_bool(dt, "remainder_cpu")?;
    let out = binary_raw(a, b, dt, BinOp::Rem)?;
    if needs_grad(&[a, b]) {
        let name = if b.is_wrapped_number() { "RemainderBackward0" } else { "RemainderBackward1" };
        record(&[&out], &[a, b], name, saved!(self = SavedTensor::input(a), other = SavedTensor::input(b)), |ctx, gs| {
            // a - floor(a/b) * b: d/da = 1, d/db = -floor(a/b)
            let gb = if ctx.needs(1) {
                let (a, b) = (ctx.saved(0)?, ctx.saved(1)?);
                Some(neg(&mul(&gs[0], &floor_divide(&a, &b)?)?)?)
            } else {
                None
            };
            Ok(smallvec![Some(gs[0].clone()), gb])
        });
    }
    Ok(out)
}

/// x ** e for a Python number e.
pub fn pow_scalar(x: &Tensor, e: f64) -> Result<Tensor> {
    let _prof = crate::prof!("aten::pow");
    let es = if e.fract() == 0.0 && !x.dtype().is_float() { Tensor::wrap_scalar(crate::tensor::Scalar::Int(e as i64)) } else { scalar(e) };
    let dt = promote_types(&[x, &es]);
    let out = if dt.is_float() && e.abs() == 0.5 {
        // torch computes x ** ±0.5 as sqrt / rsqrt: NaN for -inf (C's pow gives inf and 0)
        if e > 0.0 {
            float_map(&cast_raw(x, dt)?, "sqrt", |v| v.sqrt(), |v| v.sqrt())?
        } else {
            float_map(&cast_raw(x, dt)?, "rsqrt", |v| 1.0 / v.sqrt(), |v| 1.0 / v.sqrt())?
        }
    } else {
        binary_raw(x, &es, dt, BinOp::Pow)?
    };
    if needs_grad(&[x]) {
        // (the exponent as a Python int when it is integral: x ** 2 shows 2, as torch's)
        let shown = if e.fract() == 0.0 && e.abs() < 9.0e15 { crate::autograd::SavedScalar::Int(e as i64) } else { crate::autograd::SavedScalar::Float(e) };
        super::record_with_scalars(&[&out], &[x], "PowBackward0", saved!(self = SavedTensor::input(x)), [("exponent", shown)], move |ctx, gs| {
            if e == 0.0 {
                return Ok(smallvec![Some(mul(&gs[0], &scalar(0.0))?)]);
            }
            let x = ctx.saved(0)?;
            let d = mul(&pow_scalar(&x, e - 1.0)?, &scalar(e))?;
            Ok(smallvec![Some(mul(&gs[0], &d)?)])
        });
    }
    Ok(out)
}

/// a ** b for tensors (b may be a wrapped number on the left: s ** x).
pub fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::pow");
    if b.is_wrapped_number() && b.dtype() == DType::Bool && a.dtype() == DType::Bool {
        // torch keeps bool ** True / False bool: x itself, or all true
        return if b.item_f64()? != 0.0 { cpu::contiguous(a) } else { Tensor::full_on(&a.shape(), 1.0, DType::Bool, a.device()) };
    }
    if b.is_wrapped_number() {
        // a float number makes an integer or bool base float (torch's promotion): 2 ** 2.0 is 4.
        let a = if b.dtype().is_float() && !a.dtype().is_float() { cast_raw(a, DType::default_float())? } else { a.clone() };
        return pow_scalar(&a, b.item_f64()?);
    }
    let dt = promote_types(&[a, b]);
    check_not_bool(dt, "pow")?;
    let out = binary_raw(a, b, dt, BinOp::Pow)?;
    if needs_grad(&[a, b]) {
        let name = if a.is_wrapped_number() { "PowBackward2" } else { "PowBackward1" };
        let inputs: smallvec::SmallVec<[&Tensor; 2]> = if a.is_wrapped_number() { smallvec![b] } else { smallvec![a, b] };
        let a_is_scalar = a.is_wrapped_number();
        record(
            &[&out],
            &inputs,
            name,
            saved!(self = SavedTensor::input(a), exponent = SavedTensor::input(b), result = SavedTensor::output(&out, 0)),
            move |ctx, gs| {
                let (a, b, y) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
                // d/db a^b = a^b ln a, taken as 0 where a == 0 and b >= 0 (torch's convention)
                let grad_b = |g: &Tensor| -> Result<Tensor> {
                    let mask = logical_and(&eq(&a, &scalar(0.0))?, &ge(&b, &scalar(0.0))?)?;
                    let d = mul(&y, &log(&a)?)?;
                    mul(g, &where_(&mask, &scalar(0.0), &d)?)
                };
                if a_is_scalar {
                    return Ok(smallvec![Some(grad_b(&gs[0])?)]);
                }
                let ga = if ctx.needs(0) {
                    let d = mul(&b, &pow(&a, &sub(&b, &scalar(1.0))?)?)?;
                    let d = where_(&eq(&b, &scalar(0.0))?, &scalar(0.0), &d)?;
                    Some(mul(&gs[0], &d)?)
                } else {
                    None
                };
                let gb = if ctx.needs(1) { Some(grad_b(&gs[0])?) } else { None };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

pub fn maximum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::maximum");
    min_max(a, b, BinOp::Max, "MaximumBackward0")
}

pub fn minimum(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::minimum");
    min_max(a, b, BinOp::Min, "MinimumBackward0")
}

fn min_max(a: &Tensor, b: &Tensor, op: BinOp, name: &'static str) -> Result<Tensor> {
    check_same_device_and_shape(a, b)?;
    let dt = promote_types(&[a, b]);
    let out = binary_raw(a, b, dt, op)?;
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], name, saved!(self = SavedTensor::input(a), other = SavedTensor::input(b)), move |ctx, gs| {
            let (a, b) = (ctx.saved(0)?, ctx.saved(1)?);
            // The loser gets no gradient and ties split it evenly (torch's convention); where a
            // NaN makes every comparison false, both inputs get all of it, as torch's.
            let (lose_a, lose_b) = if op == BinOp::Max { (lt(&a, &b)?, gt(&a, &b)?) } else { (gt(&a, &b)?, lt(&a, &b)?) };
            let dt = gs[0].dtype();
            let half = mul(&cast_raw(&eq(&a, &b)?, dt)?, &scalar(0.5))?;
            let ma = rsub_scalar(&add(&cast_raw(&lose_a, dt)?, &half)?, 1.0)?;
            let mb = rsub_scalar(&add(&cast_raw(&lose_b, dt)?, &half)?, 1.0)?;
            Ok(smallvec![Some(mul(&gs[0], &ma)?), Some(mul(&gs[0], &mb)?)])
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Comparisons and logical ops (never differentiable; bool results).

#[derive(Copy, Clone)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// `op` over a and b (already in the common dtype): one monomorphised loop per comparison.
fn cmp_zip<T: Element>(a: &Tensor, b: &Tensor, shape: &[usize], op: CmpOp) -> Result<Tensor> {
    match op {
        CmpOp::Eq => cpu::zip::<T, bool>(a, b, shape, |a, b| a == b),
        CmpOp::Ne => cpu::zip::<T, bool>(a, b, shape, |a, b| a != b),
        CmpOp::Lt => cpu::zip::<T, bool>(a, b, shape, |a, b| a < b),
        CmpOp::Le => cpu::zip::<T, bool>(a, b, shape, |a, b| a <= b),
        CmpOp::Gt => cpu::zip::<T, bool>(a, b, shape, |a, b| a > b),
        CmpOp::Ge => cpu::zip::<T, bool>(a, b, shape, |a, b| a >= b),
    }
}

fn cmp_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
    }
}

pub fn compare(a: &Tensor, b: &Tensor, op: CmpOp) -> Result<Tensor> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let dt = promote_types(&[a, b]);
    if dt.is_narrow() {
        // operands take dt's values first (uint8 == -1 compares with 255, as torch)
        if dt.is_float() && (a.is_cuda() || b.is_cuda()) && cuda::has_kernels() {
            return cuda::native::binary(&cast_raw(a, dt)?, &cast_raw(b, dt)?, cmp_name(op), DType::F32, DType::Bool, None);
        }
        return compare(&to_compute(a, dt)?, &to_compute(b, dt)?, op);
    }
    if (a.is_cuda() || b.is_cuda()) && cuda::has_kernels() {
        return cuda::native::binary(a, b, cmp_name(op), dt, DType::Bool, None);
    }
    let (a, b) = (cast_raw(a, dt)?, cast_raw(b, dt)?);
    crate::with_compute_dtype!(dt, T => cmp_zip::<T>(&a, &b, &shape, op))
}

/// A float predicate per element (isnan/isinf/isfinite); integer and bool tensors hold only
/// finite numbers, so they give `int_value`.
fn float_predicate(x: &Tensor, op: &str, f32f: impl Fn(f32) -> bool + Sync + Send + Copy, f64f: impl Fn(f64) -> bool + Sync + Send + Copy, int_value: bool) -> Result<Tensor> {
    if x.dtype().is_narrow() && x.dtype().is_float() {
        return float_predicate(&cast_raw(x, DType::F32)?, op, f32f, f64f, int_value);
    }
    if x.is_cuda() && cuda::has_kernels() && x.dtype().is_float() {
        return cuda::native::unary(x, op, DType::Bool);
    }
    Ok(match x.dtype() {
        DType::F32 => cpu::map::<f32, bool>(x, f32f)?,
        DType::F64 => cpu::map::<f64, bool>(x, f64f)?,
        _ => Tensor::full_on(&x.shape(), if int_value { 1.0 } else { 0.0 }, DType::Bool, x.device())?,
    })
}
pub fn isnan(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::isnan");
    float_predicate(x, "isnan", f32::is_nan, f64::is_nan, false)
}
pub fn isinf(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::isinf");
    float_predicate(x, "isinf", f32::is_infinite, f64::is_infinite, false)
}
pub fn isfinite(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::isfinite");
    float_predicate(x, "isfinite", f32::is_finite, f64::is_finite, true)
}

/// The comparison ops, one function each (the op table's comparison rows name them).
macro_rules! comparison_fns {
    ($($name:ident => $op:ident),* $(,)?) => {$(
        pub fn $name(a: &Tensor, b: &Tensor) -> Result<Tensor> {
            let _prof = crate::prof!(concat!("aten::", stringify!($name)));
            compare(a, b, CmpOp::$op)
        }
    )*};
}

comparison_fns!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);

fn logical(a: &Tensor, b: &Tensor, f: impl Fn(bool, bool) -> bool + Sync + Send + Copy) -> Result<Tensor> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    if (a.is_cuda() || b.is_cuda()) && cuda::has_kernels() {
        let name = if f(true, false) && f(true, true) { "logical_or" } else if f(true, false) { "logical_xor" } else { "logical_and" };
        return cuda::native::binary(a, b, name, DType::Bool, DType::Bool, None);
    }
    let (a, b) = (cast_raw(a, DType::Bool)?, cast_raw(b, DType::Bool)?);
    cpu::zip::<bool, bool>(&a, &b, &shape, f)
}
pub fn logical_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::logical_and");
    logical(a, b, |x, y| x & y)
}
pub fn logical_or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::logical_or");
    logical(a, b, |x, y| x | y)
}
pub fn logical_xor(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::logical_xor");
    logical(a, b, |x, y| x ^ y)
}
pub fn logical_not(a: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::logical_not");
    let a = cast_raw(a, DType::Bool)?;
    if a.is_cuda() && cuda::has_kernels() {
        return cuda::native::unary(&a, "logical_not", DType::Bool);
    }
    cpu::map::<bool, bool>(&a, |x| !x)
}

/// Bitwise ops: on bool tensors these are the logical ops; on integers, bitwise.
pub fn bitwise(a: &Tensor, b: &Tensor, op: char) -> Result<Tensor> {
    let _prof = crate::prof!("aten::bitwise");
    let dt = promote_types(&[a, b]);
    let name = match op {
        '&' => "bitwise_and",
        '|' => "bitwise_or",
        _ => "bitwise_xor",
    };
    match dt {
        DType::Bool => logical(a, b, match op {
            '&' => |x, y| x & y,
            '|' => |x, y| x | y,
            _ => |x, y| x ^ y,
        }),
        d if d.is_narrow() && d.is_int() => cast_raw(&bitwise(&to_compute(a, d)?, &to_compute(b, d)?, op)?, d),
        DType::I64 => {
            let shape = broadcast_shapes(&a.shape(), &b.shape())?;
            let (a, b) = (cast_raw(a, dt)?, cast_raw(b, dt)?);
            cpu::zip::<i64, i64>(&a, &b, &shape, match op {
                '&' => |x, y| x & y,
                '|' => |x, y| x | y,
                _ => |x, y| x ^ y,
            })
        }
        _ => bail!(NotImplemented, "\"{}_cpu\" not implemented for '{}'", name, dt.type_word()),
    }
}

pub fn bitwise_not(a: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::bitwise_not");
    match a.dtype() {
        DType::Bool => logical_not(a),
        DType::I64 => Ok(cpu::map::<i64, i64>(a, |x| !x)?),
        d if d.is_int() => cast_raw(&bitwise_not(&cast_raw(a, DType::I64)?)?, d),
        dt => bail!(Runtime, "\"bitwise_not_cpu\" not implemented for '{}'", dt.type_word()),
    }
}

// ---------------------------------------------------------------------------------------------
// where, masked_fill, clamp.

pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::where");
    if cond.dtype() != DType::Bool {
        bail!(Runtime, "where expected condition to be a boolean tensor, but got a tensor with dtype {}", cond.dtype().type_word());
    }
    let shape = broadcast_shapes(&broadcast_shapes(&cond.shape(), &a.shape())?, &b.shape())?;
    let dt = promote_types(&[a, b]);
    let out = if (cond.is_cuda() || a.is_cuda() || b.is_cuda()) && cuda::has_kernels() {
        cuda::native::where_(cond, a, b, dt)?
    } else {
        let (ac, bc) = (cast_raw(a, dt)?, cast_raw(b, dt)?);
        cpu::select(cond, &ac, &bc, &shape)?
    };
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "WhereBackward0", saved!(condition = SavedTensor::input(cond)), |ctx, gs| {
            let cond = ctx.saved(0)?;
            // a select, not a product with the mask: a NaN or inf gradient on the other side stays
            // off (torch gives 0 there)
            let ga = if ctx.needs(0) { Some(masked_fill_scalar(&gs[0], &logical_not(&cond)?, 0.0)?) } else { None };
            let gb = if ctx.needs(1) { Some(masked_fill_scalar(&gs[0], &cond, 0.0)?) } else { None };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

pub fn masked_fill_scalar(x: &Tensor, mask: &Tensor, value: f64) -> Result<Tensor> {
    masked_fill(x, mask, &scalar(value))
}

pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::masked_fill");
    if mask.dtype() != DType::Bool {
        bail!(Runtime, "masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype());
    }
    if value.ndim() != 0 {
        bail!(Runtime, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).", value.ndim());
    }
    if x.dtype() == DType::I64 && value.dtype().is_float() && !crate::tensor::dtype::fits_i64(value.item_f64()?) {
        bail!(Runtime, "value cannot be converted to type int64_t without overflow");
    }
    // out of place the input broadcasts to the mask too (masked_fill_ then refuses a larger result)
    let shape = broadcast_shapes(&x.shape(), &mask.shape())?;
    let dt = x.dtype();
    let out = if (x.is_cuda() || mask.is_cuda()) && cuda::has_kernels() {
        cuda::native::where_(mask, value, x, dt)?
    } else {
        let v = cast_raw(value, dt)?;
        let out = cpu::select(mask, &v, x, &shape)?;
        // torch fills a contiguous clone (not the inputs' memory order of an elementwise op)
        if out.is_contiguous() { out } else { cpu::contiguous(&out)? }
    };
    if needs_grad(&[x, value]) {
        record(&[&out], &[x, value], "MaskedFillBackward0", saved!(mask = SavedTensor::input(mask)), |ctx, gs| {
            let mask = ctx.saved(0)?;
            let gx = if ctx.needs(0) { Some(masked_fill_scalar(&gs[0], &mask, 0.0)?) } else { None };
            // the value receives the sum of the gradient over the filled positions
            let gv = if ctx.needs(1) { Some(super::sum(&where_(&mask, &gs[0], &scalar(0.0))?, None, false, None)?) } else { None };
            Ok(smallvec![gx, gv])
        });
    }
    Ok(out)
}

/// clamp with Python-number bounds (ClampBackward1).
pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::clamp");
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let mut y = x.clone();
        if let Some(lo) = min {
            y = maximum(&y, &bound(lo, x))?;
        }
        if let Some(hi) = max {
            y = minimum(&y, &bound(hi, x))?;
        }
        if y.ptr_eq(x) {
            y = cpu::contiguous(x)?;
        }
        y
    };
    if needs_grad(&[x]) {
        record(&[&out], &[x], "ClampBackward1", saved!(self = SavedTensor::input(x)), move |ctx, gs| {
            let x = ctx.saved(0)?;
            // torch passes the gradient only strictly inside the bounds
            let mut keep = gt(&x, &bound(min.unwrap_or(f64::NEG_INFINITY), &x))?;
            keep = logical_and(&keep, &lt(&x, &bound(max.unwrap_or(f64::INFINITY), &x))?)?;
            // selected, not multiplied by the mask: a NaN/inf gradient outside the bounds gives 0
            Ok(smallvec![Some(masked_fill_scalar(&gs[0], &logical_not(&keep)?, 0.0)?)])
        });
    }
    Ok(out)
}

/// A bound as a wrapped number of x's kind (an integer bound stays integral for int tensors).
fn bound(v: f64, x: &Tensor) -> Tensor {
    if !x.dtype().is_float() && v.fract() == 0.0 && v.is_finite() {
        Tensor::wrap_scalar(crate::tensor::Scalar::Int(v as i64))
    } else {
        scalar(v)
    }
}

/// clamp with tensor bounds (ClampBackward0).
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    let _prof = crate::prof!("aten::clamp");
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        check_not_bool(super::promote_types(&[x, lo, hi]), "clamp_cpu")?;
    }
    let mut y = x.clone();
    if let Some(lo) = min {
        y = maximum(&y, lo)?;
    }
    if let Some(hi) = max {
        y = minimum(&y, hi)?;
    }
    Ok(y)
}

/// An error for ops that need matching dtypes.
pub fn dtype_mismatch(op: &str, a: DType, b: DType) -> Error {
    Error::runtime(format!("{}: expected both tensors to have the same dtype, but got {} and {}", op, a, b))
}
