//! The op table: one row per op, the single source of what ferrograd knows about it.
//!
//! The rows are written once, in the `*_ops!` macros below, and every list that names an op is
//! generated from them (Note [Op table]):
//!
//! - the op functions themselves, for the families whose forward is a kernel body
//!   (`float_unary_ops!`, `num_unary_ops!`: `ops::expm1` etc. are made in elementwise.rs);
//! - `OPS`, the data of every row (`ops::table::OPS`, what `REGISTRY` and `_C.op_table()` read);
//! - the Tensor methods and native in-place methods (src/python/tensor.rs);
//! - the CUDA expressions and the precompile lists (src/backend/cuda/source.rs);
//! - through `_C.op_table()`, the Python function forms, aliases, `torch.special` names, in-place
//!   functions and their `out=` (python/ferrograd/_function_forms.py), the stub section
//!   (scripts/gen_stub.py), the compatibility page (docs/gen) and the parity tests
//!   (tests/test_op_table.py).
//!
//! Note [Op table]: each `*_ops!` macro is an "X-macro": it takes the name of a macro and calls it
//! with all of its rows, so every consumer sees the same rows and picks the columns it needs. This
//! file imports nothing: a row's kernel body and backward rule are tokens, resolved where the
//! function-generating consumer expands them (elementwise.rs, with the ops in scope); the backend
//! reads only the CUDA expression strings. Forward bodies that are more than a kernel (broadcast
//! and promotion of binary ops, reductions' dims) stay hand-written in elementwise.rs/reduce.rs;
//! their rows (`other_ops!`) hold the rest of the columns.
//!
//! Columns of a unary row (`float_unary_ops!`, `num_unary_ops!`), in this order:
//!   `name [as "torch_name"]`: the Rust function (and torch's name unless `as` gives it);
//!   `grad`: the grad_fn name; `alias`: other torch names (methods and functions, `arcsin`);
//!   `special`: its names in torch.special;
//!   `cuda`: the CUDA C expression over `x` (`CT` its compute type), or `host` (no kernel);
//!   `autocast`: torch's autocast class on the CPU and CUDA (`none`, `fp32`, `cuda_fp32`,
//!   `cuda_promote`, ...: `__op_autocast!`; Note [Autocast] in ops/autocast.rs);
//!   `inplace`: `native` (name_ records `grad`; a method and a torch function), `method_only`
//!   (native, a method only, as torch's), `nograd "Gf"` (torch records Gf and refuses to
//!   differentiate it), `custom` (hand-written) or `none`; `bind`: `method` (a Tensor method, a
//!   torch function), `private` (a `_name` method only), `hidden` (no binding), `custom` (a
//!   hand-written binding), followed by flags: `no_out` (torch's function takes no `out=`),
//!   `no_half` (torch has no float16/bfloat16 kernel: refused, as torch's);
//!   `saves`: `x` (the input, torch's `self`) or `y` (the output, `result`); `kernel`: the CPU body
//!   over one element; `backward`: the rule, in ferrograd's ops; `lane`: the rule on plain
//!   numbers (Note [Scalar lane] in engine.rs) or `()`.

/// The kind of op a row declares; it fixes the row's dtype rules and how it is bound.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Family {
    /// float math (integer and bool inputs compute in float32)
    FloatUnary,
    /// one tensor to one of its dtype (no bool)
    NumUnary,
    /// other one-tensor ops (neg, sign, square, sgn)
    Unary,
    /// float predicates (isnan ...): a bool result
    Predicate,
    /// logical_not, bitwise_not
    LogicalUnary,
    /// tensor (or number) op tensor, with broadcasting and type promotion
    Binary,
    /// binary ops with a float result (atan2, nextafter)
    FloatBinary,
    /// comparisons: a bool result
    Comparison,
    /// logical and bitwise ops
    Logical,
    /// reductions over dims
    Reduction,
}

impl Family {
    pub fn word(self) -> &'static str {
        match self {
            Family::FloatUnary => "float_unary",
            Family::NumUnary => "num_unary",
            Family::Unary => "unary",
            Family::Predicate => "predicate",
            Family::LogicalUnary => "logical_unary",
            Family::Binary => "binary",
            Family::FloatBinary => "float_binary",
            Family::Comparison => "comparison",
            Family::Logical => "logical",
            Family::Reduction => "reduction",
        }
    }
}

/// The dtypes an op accepts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Domain {
    /// every dtype; integers and bool compute in float32 (torch's int-to-float ops)
    FloatResult,
    /// floating-point operands only
    Float,
    /// `FloatResult` without float16/bfloat16 (torch has no kernel for them)
    FloatNoHalf,
    /// every dtype but bool
    Numeric,
    /// every dtype
    All,
    /// bool and integers (bitwise)
    Integral,
}

/// The in-place form of an op.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Inplace {
    /// none in torch
    None,
    /// `name_`, native, recording the op's grad_fn
    Native,
    /// `name_`, native, recording this grad_fn, whose backward raises torch's "not implemented"
    NoGrad(&'static str),
    /// `name_`, with a hand-written binding (its own fast paths)
    Custom,
    /// `name_`, still written in Python (a computed result copied in)
    Python,
}

/// How the op reaches Python.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// a Tensor method and a torch function, generated from the row
    Method,
    /// a `_name` Tensor method only (used by a Python composition)
    Private,
    /// no binding (a kernel the public op calls)
    Hidden,
    /// a hand-written binding (arguments beyond the tensors)
    Custom,
}

/// Autocast's precision class for an op on one device type (torch's autocast lists; see
/// `ops::autocast`, Note [Autocast]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Autocast {
    /// not on the device's lists: the inputs are left as they are
    None,
    /// floating inputs cast to the autocast dtype (float16/bfloat16): matmuls, convolutions
    LowerPrecision,
    /// floating inputs cast to float32 (torch's fp32 list, and its "fp32 unless dtype= is given")
    Float32,
    /// floating inputs cast to the widest of them (float32 over the autocast dtype)
    Promote,
}

impl Autocast {
    pub fn word(self) -> &'static str {
        match self {
            Autocast::None => "none",
            Autocast::LowerPrecision => "lower_precision",
            Autocast::Float32 => "float32",
            Autocast::Promote => "promote",
        }
    }
}

/// An op's autocast classes on the CPU and on CUDA (torch keeps one list per device type, and
/// they differ: `exp` is float32 on CUDA and untouched on the CPU).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AutocastRule {
    pub cpu: Autocast,
    pub cuda: Autocast,
}

impl AutocastRule {
    pub const NONE: AutocastRule = AutocastRule { cpu: Autocast::None, cuda: Autocast::None };
    pub const LOWER: AutocastRule = AutocastRule { cpu: Autocast::LowerPrecision, cuda: Autocast::LowerPrecision };
    pub const FP32: AutocastRule = AutocastRule { cpu: Autocast::Float32, cuda: Autocast::Float32 };
    pub const PROMOTE: AutocastRule = AutocastRule { cpu: Autocast::Promote, cuda: Autocast::Promote };
    pub const CUDA_LOWER: AutocastRule = AutocastRule { cpu: Autocast::None, cuda: Autocast::LowerPrecision };
    pub const CUDA_FP32: AutocastRule = AutocastRule { cpu: Autocast::None, cuda: Autocast::Float32 };
    pub const CUDA_PROMOTE: AutocastRule = AutocastRule { cpu: Autocast::None, cuda: Autocast::Promote };
    pub const CPU_PROMOTE: AutocastRule = AutocastRule { cpu: Autocast::Promote, cuda: Autocast::None };
    pub const CPU_FP32: AutocastRule = AutocastRule { cpu: Autocast::Float32, cuda: Autocast::None };
}

/// A row's `autocast` column: `none`, `fp32` (both devices), `cuda_fp32`, `cuda_promote`, ...
#[doc(hidden)]
#[macro_export]
macro_rules! __op_autocast {
    (none) => { $crate::ops::table::AutocastRule::NONE };
    (lower) => { $crate::ops::table::AutocastRule::LOWER };
    (fp32) => { $crate::ops::table::AutocastRule::FP32 };
    (promote) => { $crate::ops::table::AutocastRule::PROMOTE };
    (cuda_lower) => { $crate::ops::table::AutocastRule::CUDA_LOWER };
    (cuda_fp32) => { $crate::ops::table::AutocastRule::CUDA_FP32 };
    (cuda_promote) => { $crate::ops::table::AutocastRule::CUDA_PROMOTE };
    (cpu_promote) => { $crate::ops::table::AutocastRule::CPU_PROMOTE };
    (cpu_fp32) => { $crate::ops::table::AutocastRule::CPU_FP32 };
}

/// A rule slot for the next issues (forward-mode JVP, vmap batching): none yet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RuleSlot {
    Unset,
}

/// One row of the table, as data.
#[derive(Debug)]
pub struct OpEntry {
    /// torch's name (Tensor method and torch function)
    pub name: &'static str,
    /// the function in `ops` (and the CUDA kernel's key)
    pub rust: &'static str,
    /// other names: top-level (`arcsin`) or `special.<name>`
    pub aliases: &'static [&'static str],
    /// the grad_fn it records ("" when it is not differentiable)
    pub grad_fn: &'static str,
    pub family: Family,
    pub domain: Domain,
    /// torch's names of the values its node saves
    pub saved: &'static [&'static str],
    /// the CPU kernel body as written ("" for a hand-written forward)
    pub kernel: &'static str,
    /// the CUDA expression, or None: computed on the host (a device tensor's host copy)
    pub cuda: Option<&'static str>,
    /// the backward rule as written ("" for a hand-written forward)
    pub backward: &'static str,
    pub inplace: Inplace,
    /// torch also has the in-place form as a function (`torch.exp_`), not only as a method
    pub inplace_function: bool,
    /// torch's function form takes `out=` (honoured through python/ferrograd/_out.py)
    pub out: bool,
    pub binding: Binding,
    pub jvp: RuleSlot,
    pub batch: RuleSlot,
    /// torch's autocast class on each device type (the `autocast` column)
    pub autocast: AutocastRule,
}

const FLOATS: &[&str] = &["float32", "float64", "float16", "bfloat16"];
const FLOAT_RESULT: &[&str] = &["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"];
const FLOAT_NO_HALF: &[&str] = &["float32", "float64", "int64", "int32", "uint8", "bool"];
const NUMERIC: &[&str] = &["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8"];
const ALL: &[&str] = &["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"];
const INTEGRAL: &[&str] = &["int64", "int32", "int16", "int8", "uint8", "bool"];

impl OpEntry {
    /// The dtypes the op takes on the CPU (what its parity test iterates).
    pub fn cpu_dtypes(&self) -> &'static [&'static str] {
        match self.domain {
            Domain::FloatResult => FLOAT_RESULT,
            Domain::FloatNoHalf => FLOAT_NO_HALF,
            Domain::Float => FLOATS,
            Domain::Numeric => NUMERIC,
            Domain::All => ALL,
            Domain::Integral => INTEGRAL,
        }
    }

    /// The dtypes the op takes on a CUDA device: the same as on the CPU (a kernel, or the host
    /// copy when `cuda` is None).
    pub fn cuda_dtypes(&self) -> &'static [&'static str] {
        self.cpu_dtypes()
    }

    /// The dtypes a CUDA kernel of the op is compiled for (the precompile list; float16 and
    /// bfloat16 kernels load 16 bits and compute in float32).
    pub fn cuda_kernel_dtypes(&self) -> &'static [&'static str] {
        if self.cuda.is_none() {
            return &[];
        }
        match self.family {
            Family::FloatUnary | Family::FloatBinary => FLOATS,
            Family::Predicate => &["float32", "float64"],
            Family::NumUnary | Family::Unary | Family::Binary | Family::Comparison => &["float32", "float64", "int64", "float16", "bfloat16"],
            Family::Logical | Family::LogicalUnary | Family::Reduction => &[],
        }
    }

    /// Every torch name of the op: its own and its top-level aliases (not `special.*`).
    pub fn torch_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        std::iter::once(self.name).chain(self.aliases.iter().copied().filter(|a| !a.contains('.')))
    }
}

/// `$tn` when a row gives `as "torch_name"`, else the Rust name.
#[doc(hidden)]
#[macro_export]
macro_rules! __op_name {
    ($name:ident) => { stringify!($name) };
    ($name:ident $tn:literal) => { $tn };
}

/// `Some(expr)` for a CUDA column, None for `host`.
#[doc(hidden)]
#[macro_export]
macro_rules! __op_cuda {
    (host) => { None };
    ($e:literal) => { Some($e) };
}

/// The float unary ops: the rows (see this file's header for the columns).
#[macro_export]
macro_rules! float_unary_ops {
    ($m:ident) => { $m! {
        exp: grad "ExpBackward0", alias [], special [], cuda "exp(x)", autocast cuda_fp32, inplace native, bind method, saves y,
            kernel (|v| cpu::math::exp(v)), backward (|g, y| mul(g, &y)?), lane (|g, y| g * y);
        log: grad "LogBackward0", alias [], special [], cuda "log(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| cpu::math::log(v)), backward (|g, x| div(g, &x)?), lane (|g, x| g / x);
        log2: grad "Log2Backward0", alias [], special [], cuda "log2(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().log2().pipe(c)), backward (|g, x| div(g, &mul(&x, &scalar(std::f64::consts::LN_2))?)?), lane ();
        log1p: grad "Log1PBackward0", alias [], special ["log1p"], cuda "log1p(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().ln_1p().pipe(c)), backward (|g, x| div(g, &add(&x, &scalar(1.0))?)?), lane ();
        expm1: grad "Expm1Backward0", alias [], special ["expm1"], cuda "expm1(x)", autocast cuda_fp32, inplace native, bind method, saves y,
            kernel (|v| v.to_f64().exp_m1().pipe(c)), backward (|g, y| mul(g, &add(&y, &scalar(1.0))?)?), lane ();
        sqrt: grad "SqrtBackward0", alias [], special [], cuda "sqrt(x)", autocast none, inplace native, bind method, saves y,
            kernel (|v| v.to_f64().sqrt().pipe(c)),
            backward (|g, y| fused(g, &y, "sqrt_backward", |g, y| g / (2.0 * y), |g, y| g / (2.0 * y), || div(g, &mul(&y, &scalar(2.0))?))?),
            lane (|g, y| g / (2.0 * y));
        rsqrt: grad "RsqrtBackward0", alias [], special [], cuda "(CT)1 / sqrt(x)", autocast cuda_fp32, inplace native, bind method, saves y,
            kernel (|v| (1.0 / v.to_f64().sqrt()).pipe(c)), backward (|g, y| mul(g, &mul(&pow_scalar(&y, 3.0)?, &scalar(-0.5))?)?), lane ();
        sin: grad "SinBackward0", alias [], special [], cuda "sin(x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().sin().pipe(c)), backward (|g, x| mul(g, &cos(&x)?)?), lane ();
        cos: grad "CosBackward0", alias [], special [], cuda "cos(x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().cos().pipe(c)), backward (|g, x| mul(g, &neg(&sin(&x)?)?)?), lane ();
        tan: grad "TanBackward0", alias [], special [], cuda "tan(x)", autocast cuda_fp32, inplace native, bind method, saves y,
            kernel (|v| v.to_f64().tan().pipe(c)), backward (|g, y| mul(g, &add(&mul(&y, &y)?, &scalar(1.0))?)?), lane ();
        tanh: grad "TanhBackward0", alias [], special [], cuda "tanh(x)", autocast none, inplace native, bind method, saves y,
            kernel (|v| cpu::math::tanh(v)),
            backward (|g, y| fused(g, &y, "tanh_backward", |g, y| g * (1.0 - y * y), |g, y| g * (1.0 - y * y), || mul(g, &rsub_scalar(&mul(&y, &y)?, 1.0)?))?),
            lane (|g, y| g * (1.0 - y * y));
        sigmoid: grad "SigmoidBackward0", alias [], special ["expit"], cuda "fg_sigmoid(x)", autocast none, inplace native, bind method, saves y,
            kernel (|v| cpu::math::sigmoid(v)),
            backward (|g, y| fused(g, &y, "sigmoid_backward", |g, y| g * y * (1.0 - y), |g, y| g * y * (1.0 - y), || mul(g, &mul(&y, &rsub_scalar(&y, 1.0)?)?))?),
            lane (|g, y| g * y * (1.0 - y));
        reciprocal: grad "ReciprocalBackward0", alias [], special [], cuda "(CT)1 / x", autocast cuda_fp32, inplace native, bind method, saves y,
            kernel (|v| (1.0 / v.to_f64()).pipe(c)),
            backward (|g, y| fused(g, &y, "reciprocal_backward", |g, y| -g * y * y, |g, y| -g * y * y, || mul(g, &neg(&mul(&y, &y)?)?))?),
            lane (|g, y| -g * y * y);
        erf: grad "ErfBackward0", alias [], special ["erf"], cuda "erf(x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| v.erf_()), backward (|g, x| mul(g, &mul(&exp(&neg(&mul(&x, &x)?)?)?, &scalar(std::f64::consts::FRAC_2_SQRT_PI))?)?), lane ();
        // inverse trigonometric and hyperbolic functions, in float64 (float32 rounded once)
        asin: grad "AsinBackward0", alias [arcsin], special [], cuda "fg_asin(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().asin().pipe(c)), backward (|g, x| mul(g, &rsqrt(&rsub_scalar(&mul(&x, &x)?, 1.0)?)?)?), lane ();
        acos: grad "AcosBackward0", alias [arccos], special [], cuda "fg_acos(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().acos().pipe(c)), backward (|g, x| mul(g, &neg(&rsqrt(&rsub_scalar(&mul(&x, &x)?, 1.0)?)?)?)?), lane ();
        atan: grad "AtanBackward0", alias [arctan], special [], cuda "fg_atan(x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().atan().pipe(c)), backward (|g, x| div(g, &add(&mul(&x, &x)?, &scalar(1.0))?)?), lane ();
        sinh: grad "SinhBackward0", alias [], special [], cuda "fg_sinh(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().sinh().pipe(c)), backward (|g, x| mul(g, &cosh(&x)?)?), lane ();
        cosh: grad "CoshBackward0", alias [], special [], cuda "fg_cosh(x)", autocast cuda_fp32, inplace native, bind method, saves x,
            kernel (|v| v.to_f64().cosh().pipe(c)), backward (|g, x| mul(g, &sinh(&x)?)?), lane ();
        asinh: grad "AsinhBackward0", alias [arcsinh], special [], cuda "fg_asinh(x)", autocast none, inplace nograd "AsinhBackward1", bind method, saves x,
            kernel (|v| v.to_f64().asinh().pipe(c)), backward (|g, x| mul(g, &rsqrt(&add(&mul(&x, &x)?, &scalar(1.0))?)?)?), lane ();
        acosh: grad "AcoshBackward0", alias [arccosh], special [], cuda "fg_acosh(x)", autocast none, inplace nograd "AcoshBackward1", bind method, saves x,
            kernel (|v| v.to_f64().acosh().pipe(c)), backward (|g, x| mul(g, &rsqrt(&add(&mul(&x, &x)?, &scalar(-1.0))?)?)?), lane ();
        atanh: grad "AtanhBackward0", alias [arctanh], special [], cuda "fg_atanh(x)", autocast none, inplace nograd "AtanhBackward1", bind method, saves x,
            kernel (|v| v.to_f64().atanh().pipe(c)), backward (|g, x| div(g, &rsub_scalar(&mul(&x, &x)?, 1.0)?)?), lane ();
        // special functions (src/backend/cpu/special.rs)
        erfc: grad "ErfcBackward0", alias [], special ["erfc"], cuda "fg_erfc(x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| v.erfc_()), backward (|g, x| mul(g, &mul(&exp(&neg(&mul(&x, &x)?)?)?, &scalar(-std::f64::consts::FRAC_2_SQRT_PI))?)?), lane ();
        erfinv: grad "ErfinvBackward0", alias [], special ["erfinv"], cuda "fg_erfinv(x)", autocast cuda_fp32, inplace method_only, bind method, saves y,
            kernel (|v| cpu::special::erfinv(v.to_f64()).pipe(c)), backward (|g, y| mul(g, &mul(&exp(&mul(&y, &y)?)?, &scalar(PI.sqrt() / 2.0))?)?), lane ();
        lgamma: grad "LgammaBackward0", alias [], special ["gammaln"], cuda "fg_lgamma(x)", autocast none, inplace method_only, bind method, saves x,
            kernel (|v| v.lgamma_()), backward (|g, x| mul(g, &digamma(&x)?)?), lane ();
        digamma: grad "DigammaBackward0", alias [], special ["digamma", "psi"], cuda host, autocast none, inplace method_only, bind method, saves x,
            kernel (|v| cpu::special::digamma(v.to_f64()).pipe(c)), backward (|g, x| mul(g, &polygamma(1, &x)?)?), lane ();
        i0: grad "I0Backward0", alias [], special ["i0"], cuda host, autocast none, inplace native, bind method, saves x,
            kernel (|v| v.bessel_i(0)), backward (|g, x| mul(g, &special_i1(&x)?)?), lane ();
        // torch's i1_backward: I0(x) - I1(x)/x, and 1/2 at x = 0
        special_i1 as "_special_i1": grad "SpecialI1Backward0", alias [], special ["i1"], cuda host, autocast none, inplace none, bind private, saves x,
            kernel (|v| v.bessel_i(1)),
            backward (|g, x| {
                let at0 = eq(&x, &scalar(0.0))?;
                let safe = masked_fill_scalar(&x, &at0, 1.0)?;
                let d = sub(&i0(&x)?, &div(&special_i1(&x)?, &safe)?)?;
                mul(g, &masked_fill_scalar(&d, &at0, 0.5)?)?
            }),
            lane ();
        // exp(x²)·erfc(x) without its overflow: the asymptotic series 1/(x√π)·(1 - 1/(2x²) + ...)
        // above 26, and erfcx(x) = 2·exp(x²) - erfcx(-x) below 0; d/dx = 2x·erfcx(x) - 2/√π
        special_erfcx as "_special_erfcx": grad "SpecialErfcxBackward0", alias [], special ["erfcx"],
            cuda "(sizeof(CT) == 4 ? (CT)erfcxf((float)x) : (CT)erfcx((double)x))", autocast none, inplace none, bind private no_half, saves x,
            kernel (|v| {
                let pos = |x: f64| if x < 26.0 { (x * x).exp() * libm::erfc(x) } else {
                    let z = 1.0 / (x * x);
                    (1.0 - z * (0.5 - z * (0.75 - z * (1.875 - z * 6.5625)))) / (x * PI.sqrt())
                };
                let x = v.to_f64();
                (if x >= 0.0 { pos(x) } else if x < -26.7 { f64::INFINITY } else { 2.0 * (x * x).exp() - pos(-x) }).pipe(c)
            }),
            backward (|g, x| mul(g, &sub(&mul(&mul(&x, &special_erfcx(&x)?)?, &scalar(2.0))?, &scalar(std::f64::consts::FRAC_2_SQRT_PI))?)?),
            lane ();
    } };
}

/// The unary ops that keep integer dtypes (no bool): the rows. `saves zero` declares a
/// piecewise-constant op (a zero gradient, torch's, not g * 0).
#[macro_export]
macro_rules! num_unary_ops {
    ($m:ident) => { $m! {
        abs: grad "AbsBackward0", alias [absolute], special [], cuda "(x < (CT)0 ? -x : x)", autocast none, inplace native, bind method, saves x,
            kernel (|v| if v < T::zero() { -v } else { v }), backward (|g, x| mul(g, &sign(&x)?)?), lane ();
        // NaN stays NaN (v != v only for NaN), as torch's relu
        relu: grad "ReluBackward0", alias [], special [], cuda "((x > (CT)0 || x != x) ? x : (CT)0)", autocast none, inplace native, bind method no_out, saves y,
            kernel (|v| if v > T::zero() || v != v { v } else { T::zero() }), backward (|g, y| threshold_backward(g, &y)?), lane ();
        // 0 for zeros and NaN, as torch's sign (the kernel of `sign`, which passes bool through)
        sign_num: grad "SignBackward0", alias [], special [], cuda "fg_sign(x)", autocast none, inplace none, bind hidden, saves zero,
            kernel (|v| if v > T::zero() { T::one() } else if v < T::zero() { -T::one() } else { T::zero() }), backward (), lane ();
        floor: grad "FloorBackward0", alias [], special [], cuda "fg_floor(x)", autocast none, inplace native, bind method, saves zero,
            kernel (|v| v.floor_()), backward (), lane ();
        ceil: grad "CeilBackward0", alias [], special [], cuda "fg_ceil(x)", autocast none, inplace native, bind method, saves zero,
            kernel (|v| v.ceil_()), backward (), lane ();
        round: grad "RoundBackward0", alias [], special ["round"], cuda "fg_round(x)", autocast none, inplace custom, bind custom, saves zero,
            kernel (|v| v.round_()), backward (), lane ();
        trunc: grad "TruncBackward0", alias [fix], special [], cuda "fg_trunc(x)", autocast none, inplace native, bind method, saves zero,
            kernel (|v| v.trunc_()), backward (), lane ();
    } };
}

/// The float binary ops (tensor op tensor, broadcast, promoted to a float dtype; float16/bfloat16
/// computed in float32): the rows. Columns as the unary rows', with `domain` (`FloatResult`: integer
/// operands compute in float32; `Float`: float operands only), `kernel` over two elements and one
/// rule per operand, `grad_self` and `grad_other` (the node saves both operands: self, other).
#[macro_export]
macro_rules! float_binary_ops {
    ($m:ident) => { $m! {
        atan2: grad "Atan2Backward0", alias [arctan2], special [], domain FloatResult, cuda "fg_atan2(x, y)", autocast cuda_promote, inplace native, bind method,
            kernel (|a, b| a.to_f64().atan2(b.to_f64()).pipe(c)),
            // 1 / (a² + b²), 0 where that is inf (both 0), as torch's
            grad_self (|g, a, b| mul(&mul(g, b)?, &atan2_scale(a, b)?)?),
            grad_other (|g, a, b| mul(&mul(g, &neg(a)?)?, &atan2_scale(a, b)?)?);
        // x·log1p(y), 0 where x = 0 (unless y is NaN)
        special_xlog1py as "_special_xlog1py": grad "SpecialXlog1PyBackward0", alias [], special ["xlog1py"], domain FloatResult,
            cuda "(y != y ? y : (x == (CT)0 ? (CT)0 : x * log1p(y)))", autocast none, inplace none, bind private,
            kernel (|a, b| {
                let (x, y) = (a.to_f64(), b.to_f64());
                (if y.is_nan() { y } else if x == 0.0 { 0.0 } else { x * y.ln_1p() }).pipe(c)
            }),
            grad_self (|g, a, b| mul(g, &special_xlog1py(&ne(a, &scalar(0.0))?, b)?)?),
            grad_other (|g, a, b| div(&mul(g, a)?, &add(b, &scalar(1.0))?)?);
    } };
}

/// The ops whose forward is written by hand (promotion, broadcasting, dims, several kernels):
/// their rows. Columns: `name: family F, grad "..", alias [..], special [], domain D, cuda "expr"|host,
/// inplace native|custom|python|none, out true|false, bind <binding>` where the binding is
/// `operand (f)` (the other argument a tensor or number), `tensor (f)` (a tensor), `unary (f)`
/// (a one-tensor method), or `custom` (hand-written, extra arguments).
#[macro_export]
macro_rules! other_ops {
    ($m:ident) => { $m! {
        neg: family Unary, grad "NegBackward0", alias [negative], special [], domain Numeric, cuda "-x", autocast none, inplace native, out true, bind unary (ops::neg);
        sign: family Unary, grad "SignBackward0", alias [], special [], domain All, cuda host, autocast none, inplace method_only, out true, bind unary (ops::sign);
        sgn: family Unary, grad "SgnBackward0", alias [], special [], domain All, cuda host, autocast none, inplace method_only, out true, bind unary (ops::sgn);
        square: family Unary, grad "PowBackward0", alias [], special [], domain All, cuda host, autocast cuda_fp32, inplace native, out true, bind unary (ops::square);
        isnan: family Predicate, grad "", alias [], special [], domain All, cuda "x != x", autocast none, inplace none, out false, bind unary (ops::isnan);
        isinf: family Predicate, grad "", alias [], special [], domain All, cuda "(x == (CT)1/(CT)0 || x == -(CT)1/(CT)0)", autocast none, inplace none, out false, bind unary (ops::isinf);
        isfinite: family Predicate, grad "", alias [], special [], domain All, cuda "(x == x && x != (CT)1/(CT)0 && x != -(CT)1/(CT)0)", autocast none, inplace none, out false, bind unary (ops::isfinite);
        logical_not: family LogicalUnary, grad "", alias [], special [], domain All, cuda "!((bool)x)", autocast none, inplace python, out true, bind unary (ops::logical_not);
        bitwise_not: family LogicalUnary, grad "", alias [], special [], domain Integral, cuda "~x", autocast none, inplace python, out true, bind unary (ops::bitwise_not);
        add: family Binary, grad "AddBackward0", alias [], special [], domain All, cuda "x + y", autocast none, inplace custom, out true, bind custom ();
        sub: family Binary, grad "SubBackward0", alias [subtract], special [], domain Numeric, cuda "x - y", autocast none, inplace custom, out true, bind custom ();
        mul: family Binary, grad "MulBackward0", alias [multiply], special [], domain All, cuda "x * y", autocast none, inplace custom, out true, bind operand (ops::mul);
        div: family Binary, grad "DivBackward0", alias [divide, true_divide], special [], domain All, cuda "fg_div(x, y)", autocast none, inplace custom, out true, bind custom ();
        floor_divide: family Binary, grad "", alias [], special [], domain Numeric, cuda "fg_floordiv(x, y)", autocast none, inplace custom, out true, bind operand (ops::floor_divide);
        remainder: family Binary, grad "RemainderBackward0", alias [], special [], domain Numeric, cuda "fg_rem(x, y)", autocast none, inplace custom, out true, bind operand (ops::remainder);
        pow: family Binary, grad "PowBackward0", alias [], special [], domain Numeric, cuda "fg_pow(x, y)", autocast cuda_fp32, inplace custom, out true, bind custom ();
        maximum: family Binary, grad "MaximumBackward0", alias [], special [], domain All, cuda "fg_max(x, y)", autocast none, inplace none, out true, bind tensor (ops::maximum);
        minimum: family Binary, grad "MinimumBackward0", alias [], special [], domain All, cuda "fg_min(x, y)", autocast none, inplace none, out true, bind tensor (ops::minimum);
        nextafter: family FloatBinary, grad "NextafterBackward0", alias [], special [], domain Float, cuda "fg_nextafter(x, y)", autocast none, inplace method_only, out true, bind tensor (ops::nextafter);
        eq: family Comparison, grad "", alias [], special [], domain All, cuda "x == y", autocast none, inplace python, out true, bind operand (ops::eq);
        ne: family Comparison, grad "", alias [not_equal], special [], domain All, cuda "x != y", autocast none, inplace python, out true, bind operand (ops::ne);
        lt: family Comparison, grad "", alias [less], special [], domain All, cuda "x < y", autocast none, inplace python, out true, bind operand (ops::lt);
        le: family Comparison, grad "", alias [less_equal], special [], domain All, cuda "x <= y", autocast none, inplace python, out true, bind operand (ops::le);
        gt: family Comparison, grad "", alias [greater], special [], domain All, cuda "x > y", autocast none, inplace python, out true, bind operand (ops::gt);
        ge: family Comparison, grad "", alias [greater_equal], special [], domain All, cuda "x >= y", autocast none, inplace python, out true, bind operand (ops::ge);
        logical_and: family Logical, grad "", alias [], special [], domain All, cuda "((bool)x && (bool)y)", autocast none, inplace python, out true, bind tensor (ops::logical_and);
        logical_or: family Logical, grad "", alias [], special [], domain All, cuda "((bool)x || (bool)y)", autocast none, inplace python, out true, bind tensor (ops::logical_or);
        logical_xor: family Logical, grad "", alias [], special [], domain All, cuda "((bool)x != (bool)y)", autocast none, inplace python, out true, bind tensor (ops::logical_xor);
        bitwise_and: family Logical, grad "", alias [], special [], domain Integral, cuda "(x & y)", autocast none, inplace python, out true, bind operand (|a: &Tensor, b: &Tensor| ops::bitwise(a, b, '&'));
        bitwise_or: family Logical, grad "", alias [], special [], domain Integral, cuda "(x | y)", autocast none, inplace python, out true, bind operand (|a: &Tensor, b: &Tensor| ops::bitwise(a, b, '|'));
        bitwise_xor: family Logical, grad "", alias [], special [], domain Integral, cuda "(x ^ y)", autocast none, inplace python, out true, bind operand (|a: &Tensor, b: &Tensor| ops::bitwise(a, b, '^'));
        sum: family Reduction, grad "SumBackward0", alias [], special [], domain All, cuda host, autocast cuda_fp32, inplace none, out true, bind custom ();
        mean: family Reduction, grad "MeanBackward0", alias [], special [], domain Float, cuda host, autocast none, inplace none, out true, bind custom ();
        prod: family Reduction, grad "ProdBackward0", alias [], special [], domain All, cuda host, autocast fp32, inplace none, out true, bind custom ();
        amax: family Reduction, grad "AmaxBackward0", alias [], special [], domain All, cuda host, autocast none, inplace none, out true, bind custom ();
        amin: family Reduction, grad "AminBackward0", alias [], special [], domain All, cuda host, autocast none, inplace none, out true, bind custom ();
        argmax: family Reduction, grad "", alias [], special [], domain Numeric, cuda host, autocast none, inplace none, out true, bind custom ();
        argmin: family Reduction, grad "", alias [], special [], domain Numeric, cuda host, autocast none, inplace none, out true, bind custom ();
        var: family Reduction, grad "VarBackward0", alias [], special [], domain Float, cuda host, autocast none, inplace none, out true, bind custom ();
        std: family Reduction, grad "StdBackward0", alias [], special [], domain Float, cuda host, autocast none, inplace none, out true, bind custom ();
        logsumexp: family Reduction, grad "LogsumexpBackward0", alias [], special ["logsumexp"], domain FloatResult, cuda host, autocast cuda_fp32, inplace none, out true, bind custom ();
        all: family Reduction, grad "", alias [], special [], domain All, cuda host, autocast none, inplace none, out true, bind custom ();
        any: family Reduction, grad "", alias [], special [], domain All, cuda host, autocast none, inplace none, out true, bind custom ();
        cumsum: family Reduction, grad "CumsumBackward0", alias [], special [], domain All, cuda host, autocast cuda_fp32, inplace python, out true, bind custom ();
    } };
}

// ---------------------------------------------------------------------------------------------
// The rows as data.

macro_rules! unary_entries {
    ($family:ident, $domain:ident; $($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident $($ipgf:literal)?, bind $bind:ident $($flag:ident)*, saves $save:ident,
        kernel $k:tt, backward $b:tt, lane $l:tt;)*) => {
        &[$(OpEntry {
            name: crate::__op_name!($name $($tn)?),
            rust: stringify!($name),
            aliases: &[$(stringify!($al),)* $(concat!("special.", $sp)),*],
            grad_fn: $gf,
            family: Family::$family,
            domain: unary_entries!(@domain $domain; $($flag)*),
            saved: unary_entries!(@saved $save),
            kernel: stringify!($k),
            cuda: crate::__op_cuda!($cuda),
            backward: unary_entries!(@backward $save $b),
            inplace: unary_entries!(@inplace $ip $($ipgf)?),
            inplace_function: unary_entries!(@inplace_fn $ip),
            out: unary_entries!(@out $($flag)*),
            binding: unary_entries!(@bind $bind),
            jvp: RuleSlot::Unset,
            batch: RuleSlot::Unset,
            autocast: crate::__op_autocast!($ac),
        }),*]
    };
    (@saved x) => { &["self"] };
    (@saved y) => { &["result"] };
    (@saved zero) => { &[] };
    (@backward zero $b:tt) => { "zero" };
    (@backward $s:ident $b:tt) => { stringify!($b) };
    (@inplace native) => { Inplace::Native };
    (@inplace method_only) => { Inplace::Native };
    (@inplace none) => { Inplace::None };
    (@inplace custom) => { Inplace::Custom };
    (@inplace nograd $gf:literal) => { Inplace::NoGrad($gf) };
    (@inplace_fn method_only) => { false };
    (@inplace_fn none) => { false };
    (@inplace_fn $ip:ident) => { true };
    (@out) => { true };
    (@out no_out $($r:ident)*) => { false };
    (@out $f:ident $($r:ident)*) => { unary_entries!(@out $($r)*) };
    (@domain $d:ident;) => { Domain::$d };
    (@domain $d:ident; no_half $($r:ident)*) => { Domain::FloatNoHalf };
    (@domain $d:ident; $f:ident $($r:ident)*) => { unary_entries!(@domain $d; $($r)*) };
    (@bind method) => { Binding::Method };
    (@bind private) => { Binding::Private };
    (@bind hidden) => { Binding::Hidden };
    (@bind custom) => { Binding::Custom };
}

macro_rules! float_unary_entries {
    ($($t:tt)*) => { unary_entries!(FloatUnary, FloatResult; $($t)*) };
}
macro_rules! num_unary_entries {
    ($($t:tt)*) => { unary_entries!(NumUnary, Numeric; $($t)*) };
}

macro_rules! other_entries {
    ($($name:ident: family $fam:ident, grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, out $out:literal, bind $bind:ident $f:tt;)*) => {
        &[$(OpEntry {
            name: stringify!($name),
            rust: stringify!($name),
            aliases: &[$(stringify!($al),)* $(concat!("special.", $sp)),*],
            grad_fn: $gf,
            family: Family::$fam,
            domain: Domain::$dom,
            saved: &[],
            kernel: "",
            cuda: crate::__op_cuda!($cuda),
            backward: "",
            inplace: other_entries!(@inplace $ip),
            inplace_function: other_entries!(@inplace_fn $ip),
            out: $out,
            binding: other_entries!(@bind $bind),
            jvp: RuleSlot::Unset,
            batch: RuleSlot::Unset,
            autocast: crate::__op_autocast!($ac),
        }),*]
    };
    (@inplace native) => { Inplace::Native };
    (@inplace method_only) => { Inplace::Native };
    (@inplace none) => { Inplace::None };
    (@inplace custom) => { Inplace::Custom };
    (@inplace python) => { Inplace::Python };
    (@inplace_fn native) => { true };
    (@inplace_fn $ip:ident) => { false };
    (@bind custom) => { Binding::Custom };
    (@bind $b:ident) => { Binding::Method };
}

macro_rules! float_binary_entries {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, bind $bind:ident $($flag:ident)*,
        kernel $k:tt, grad_self $ga:tt, grad_other $gb:tt;)*) => {
        &[$(OpEntry {
            name: crate::__op_name!($name $($tn)?),
            rust: stringify!($name),
            aliases: &[$(stringify!($al),)* $(concat!("special.", $sp)),*],
            grad_fn: $gf,
            family: Family::FloatBinary,
            domain: Domain::$dom,
            saved: &["self", "other"],
            kernel: stringify!($k),
            cuda: crate::__op_cuda!($cuda),
            backward: concat!("self: ", stringify!($ga), "; other: ", stringify!($gb)),
            inplace: unary_entries!(@inplace $ip),
            inplace_function: false,
            out: unary_entries!(@out $($flag)*),
            binding: unary_entries!(@bind $bind),
            jvp: RuleSlot::Unset,
            batch: RuleSlot::Unset,
            autocast: crate::__op_autocast!($ac),
        }),*]
    };
}

/// The float unary rows.
pub static FLOAT_UNARY: &[OpEntry] = crate::float_unary_ops!(float_unary_entries);
/// The integer-keeping unary rows.
pub static NUM_UNARY: &[OpEntry] = crate::num_unary_ops!(num_unary_entries);
/// The float binary rows.
pub static FLOAT_BINARY: &[OpEntry] = crate::float_binary_ops!(float_binary_entries);
/// The rows with a hand-written forward.
pub static OTHER: &[OpEntry] = crate::other_ops!(other_entries);

/// Every row, in table order.
pub fn ops() -> impl Iterator<Item = &'static OpEntry> {
    FLOAT_UNARY.iter().chain(NUM_UNARY.iter()).chain(FLOAT_BINARY.iter()).chain(OTHER.iter())
}

/// The row of an op by its torch name or a top-level alias.
pub fn find(name: &str) -> Option<&'static OpEntry> {
    ops().find(|e| e.name == name || e.aliases.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = ops().flat_map(|e| e.torch_names()).collect();
        names.sort_unstable();
        let dups: Vec<_> = names.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
        assert!(dups.is_empty(), "names declared twice: {dups:?}");
    }

    #[test]
    fn differentiable_rows_name_a_grad_fn() {
        for e in FLOAT_UNARY.iter().chain(NUM_UNARY.iter()) {
            assert!(e.grad_fn.ends_with("Backward0"), "{}", e.name);
        }
    }
}
