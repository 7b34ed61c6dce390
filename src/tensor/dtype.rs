//! Element types, Python-side scalars, and torch's type-promotion rules.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// torch's default floating dtype (torch.set_default_dtype): what creation functions make from
/// Python floats and sizes, and the float type Python floats and integer true division promote to.
/// One process-wide setting, float32 unless changed (index into `DType::ALL`).
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(8);

/// The element types a tensor can hold. Order of variants is not meaningful; see `promote`.
///
/// Note [Storage and compute dtypes]: uint8, int8, int16, int32, float16 and bfloat16 are storage
/// types. Every kernel that computes (arithmetic, math functions, reductions, matmul) runs in the
/// dtype's compute type (`DType::compute`): the narrow integers load as int64 and the result wraps
/// when it is stored back (`as` truncation, which is what torch's int8 arithmetic gives), float16
/// and bfloat16 load as float32 and round once on store (torch's CPU kernels compute these in
/// float32 too, and reductions and matmul accumulate in float32). Only storage-level code (alloc,
/// copies, gathers, indexing, where/masked_fill selects, casts) is instantiated for all ten
/// element types; compute kernels exist for bool, int64, float32 and float64 only, so adding
/// dtypes did not multiply the kernels (binary size, compile time). The price is one extra pass
/// to convert in and out of the compute type for ops on narrow tensors.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    /// The default floating dtype (float32 unless `set_default_float` changed it).
    pub fn default_float() -> DType {
        DType::ALL[DEFAULT_FLOAT.load(Ordering::Relaxed) as usize % DType::ALL.len()]
    }
    /// Make a floating dtype the default (torch.set_default_dtype); an error for any other dtype.
    pub fn set_default_float(dt: DType) -> Result<(), &'static str> {
        if !dt.is_float() {
            return Err("only floating-point types are supported as the default type");
        }
        let i = DType::ALL.iter().position(|&d| d == dt).unwrap_or(8);
        DEFAULT_FLOAT.store(i as u8, Ordering::Relaxed);
        Ok(())
    }
    /// Every dtype, in torch's promotion order (bool, unsigned, signed ints, floats).
    pub const ALL: [DType; 10] = [DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    /// An integer type (not bool).
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }
    /// The dtype kernels compute in (see Note [Storage and compute dtypes]).
    #[inline]
    pub fn compute(self) -> DType {
        match self {
            DType::U8 | DType::I8 | DType::I16 | DType::I32 => DType::I64,
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        }
    }
    /// A storage-only dtype, computed in a wider one.
    #[inline]
    pub fn is_narrow(self) -> bool {
        self.compute() != self
    }
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    /// torch's spelling, without the `torch.` prefix.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// The dtype torch spells `name` (also its aliases: half, int, long, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "uint8" => DType::U8,
            "int8" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            _ => return None,
        })
    }
    /// The legacy type name torch uses in some error messages (`torch.FloatTensor`).
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::U8 => "ByteTensor",
            DType::I8 => "CharTensor",
            DType::I16 => "ShortTensor",
            DType::I32 => "IntTensor",
            DType::I64 => "LongTensor",
            DType::F16 => "HalfTensor",
            DType::BF16 => "BFloat16Tensor",
            DType::F32 => "FloatTensor",
            DType::F64 => "DoubleTensor",
        }
    }
    /// torch's ScalarType name ("Float", "Long", ...), as kernels name it in errors.
    pub fn type_word(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }
    /// The C++ type torch names in "value cannot be converted to type ... without overflow".
    pub fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8_t",
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int",
            DType::I64 => "int64_t",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    /// Whether a number converts to this dtype without overflow, by torch's rule for fills and
    /// tensor() (as measured): integers in range (unsigned types also take integers down to -max,
    /// which wrap), floats in range (into an integer dtype: below max + 1, as they truncate),
    /// infinities and NaN only into float dtypes.
    pub fn fits(self, s: Scalar) -> bool {
        let (lo, hi) = match self {
            DType::Bool | DType::F64 => return true,
            DType::U8 => (0.0, 255.0),
            DType::I8 => (-128.0, 127.0),
            DType::I16 => (-32768.0, 32767.0),
            DType::I32 => (-2147483648.0, 2147483647.0),
            DType::I64 => (-9.223372036854775808e18, 9.223372036854775807e18),
            DType::F16 => (-65504.0, 65504.0),
            DType::BF16 => (-3.3895313892515355e38, 3.3895313892515355e38),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64),
        };
        match s {
            Scalar::Bool(_) => true,
            Scalar::Int(i) if self == DType::U8 => (-255..=255).contains(&i),
            Scalar::Int(i) => self == DType::I64 || (i as f64 >= lo && i as f64 <= hi),
            Scalar::Float(f) if self.is_float() => !f.is_finite() || (f >= lo && f <= hi),
            Scalar::Float(f) if self == DType::I64 => fits_i64(f),
            Scalar::Float(f) => f >= lo && f < hi + 1.0,
        }
    }
    /// Kind order used by promotion: bool < integer < floating.
    fn category(self) -> u8 {
        if self == DType::Bool {
            0
        } else if self.is_int() {
            1
        } else {
            2
        }
    }
    /// Promotion of two dtypes of equal standing (torch.promote_types).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        let (ca, cb) = (a.category(), b.category());
        if ca != cb {
            return if ca > cb { a } else { b };
        }
        match (a, b) {
            // uint8 and int8 meet in the smallest type holding both ranges
            (U8, I8) | (I8, U8) => I16,
            (U8, x) | (x, U8) => x,
            // float16 and bfloat16 hold different ranges: float32 holds both
            (F16, BF16) | (BF16, F16) => F32,
            _ => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name())
    }
}

/// How strongly an operand's dtype takes part in promotion (torch's ResultTypeState):
/// tensors with dimensions win over 0-dim tensors, which win over Python scalars,
/// unless the weaker operand is of a higher category (bool < int < float).
#[derive(Copy, Clone, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum Standing {
    Scalar,
    ZeroDim,
    Dim,
}

/// Result dtype of an op over operands given as (dtype, standing).
pub fn result_type(operands: &[(DType, Standing)]) -> DType {
    let mut state: [Option<DType>; 3] = [None; 3];
    for &(dt, st) in operands {
        let slot = &mut state[st as usize];
        *slot = Some(match *slot {
            None => dt,
            Some(p) => DType::promote(p, dt),
        });
    }
    let combine = |higher: Option<DType>, lower: Option<DType>| -> Option<DType> {
        match (higher, lower) {
            (None, l) => l,
            (Some(h), None) => Some(h),
            (Some(h), Some(l)) => {
                if h.is_float() {
                    Some(h)
                } else if h == DType::Bool || l.category() > h.category() {
                    // A weaker operand of a higher category lifts the result to that category;
                    // for floats torch keeps the weaker operand's float type (default dtype for scalars).
                    Some(if l.is_float() { l } else { DType::promote(h, l) })
                } else {
                    Some(h)
                }
            }
        }
    };
    let weak = combine(state[Standing::ZeroDim as usize], state[Standing::Scalar as usize]);
    combine(state[Standing::Dim as usize], weak).unwrap_or_else(DType::default_float)
}

/// A Python number on its way into an op.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::default_float(),
        }
    }
    /// The dtype of the 0-d tensor a Python number is wrapped into (floats keep f64).
    pub fn dtype_wrapped(self) -> DType {
        match self {
            Scalar::Float(_) => DType::F64,
            s => s.dtype(),
        }
    }
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
}

/// Rust element types that back a DType.
pub trait Element: Copy + Send + Sync + PartialOrd + Default + 'static + fmt::Debug {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
    fn to_bool(self) -> bool;
    fn from_bool(v: bool) -> Self;
}

/// A float converted to int64 as torch's CPU kernels do (x86's conversion): NaN, infinities and
/// values out of range give INT64_MIN (Rust's `as` would saturate).
#[inline(always)]
pub fn f64_to_i64(v: f64) -> i64 {
    if v >= -9.223372036854775808e18 && v < 9.223372036854775808e18 {
        v as i64
    } else {
        i64::MIN
    }
}

/// A float converted to int32 as x86's conversion does (INT32_MIN out of range): the first step
/// of torch's float to int8/int16/int32 casts, which then keep the low bits.
#[inline(always)]
pub fn f64_to_i32(v: f64) -> i32 {
    if v >= -2147483648.0 && v < 2147483648.0 {
        v as i32
    } else {
        i32::MIN
    }
}

/// Whether a float converts to int64 exactly enough for torch (fill_, full): finite and in range.
pub fn fits_i64(v: f64) -> bool {
    v >= -9.223372036854775808e18 && v < 9.223372036854775808e18
}

macro_rules! impl_element_num {
    ($t:ty, $dt:expr, $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from_f64(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != (0 as $t)
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                (v as i64) as $t
            }
        }
    };
}
impl_element_num!(f32, DType::F32, |v: f64| v as f32);
impl_element_num!(f64, DType::F64, |v: f64| v);
impl_element_num!(i64, DType::I64, f64_to_i64);
// torch: float to int8/int16/int32 through int32 (then the low bits); float to uint8 through int64
impl_element_num!(i32, DType::I32, f64_to_i32);
impl_element_num!(i16, DType::I16, |v: f64| f64_to_i32(v) as i16);
impl_element_num!(i8, DType::I8, |v: f64| f64_to_i32(v) as i8);
impl_element_num!(u8, DType::U8, |v: f64| f64_to_i64(v) as u8);

/// float16 and bfloat16: every conversion goes through float32, as torch's (a float64 or an int64
/// rounds to float32 first, then to the 16-bit type: torch's double rounding, kept on purpose).
macro_rules! impl_element_half {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                f64_to_i64(self.to_f32() as f64)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self.to_f32() != 0.0
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                <$t>::from_f32(v as i32 as f32)
            }
        }
    };
}
impl_element_half!(half::f16, DType::F16);
impl_element_half!(half::bf16, DType::BF16);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        self as i64 as f64
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn to_bool(self) -> bool {
        self
    }
    fn from_bool(v: bool) -> Self {
        v
    }
}

/// Run `$body` with `$T` bound to the Rust type of `$dt` (any of the ten): for storage-level
/// code. Compute kernels use `with_compute_dtype!` (see Note [Storage and compute dtypes]).
#[macro_export]
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::tensor::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::tensor::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
        }
    };
}

/// Run `$body` with `$T` bound to the Rust type of a compute dtype (bool, int64, float32,
/// float64). The caller has converted its operands with `DType::compute` first; a narrow dtype
/// reaching here is a bug (a missing conversion), reported as an internal error, never a read
/// of the buffer as the wrong type.
#[macro_export]
macro_rules! with_compute_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            d => $crate::tensor::dtype::narrow_in_compute_kernel(d),
        }
    };
}

/// Unsigned integers of each element size: what storage-level code (copies, gathers, selects)
/// moves. It never looks at the values, so it dispatches on the size (`with_bits!`: four
/// instantiations, not ten).
pub trait Bits: Copy + Send + Sync + Default + 'static {}
impl Bits for u8 {}
impl Bits for u16 {}
impl Bits for u32 {}
impl Bits for u64 {}

/// Run `$body` with `$C` bound to the unsigned integer of `$dt`'s element size.
#[macro_export]
macro_rules! with_bits {
    ($dt:expr, $C:ident => $body:expr) => {
        match $dt.size() {
            1 => {
                type $C = u8;
                $body
            }
            2 => {
                type $C = u16;
                $body
            }
            4 => {
                type $C = u32;
                $body
            }
            _ => {
                type $C = u64;
                $body
            }
        }
    };
}

/// A narrow dtype reached a compute kernel without conversion (a bug, never user error).
#[cold]
#[inline(never)]
pub fn narrow_in_compute_kernel(d: DType) -> ! {
    panic!("internal error: a {d} tensor reached a compute kernel without conversion to {}", d.compute())
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;
    use Standing::*;

    #[test]
    fn promotion_follows_torch() {
        assert_eq!(result_type(&[(F32, Dim), (F64, Scalar)]), F32);
        assert_eq!(result_type(&[(I64, Dim), (F32, Scalar)]), F32);
        assert_eq!(result_type(&[(I64, Dim), (F64, ZeroDim)]), F64);
        assert_eq!(result_type(&[(F32, Dim), (F64, ZeroDim)]), F32);
        assert_eq!(result_type(&[(Bool, Dim), (I64, Scalar)]), I64);
        assert_eq!(result_type(&[(I64, Dim), (F64, Dim)]), F64);
        assert_eq!(result_type(&[(Bool, Dim), (Bool, Dim)]), Bool);
        assert_eq!(result_type(&[(I8, Dim), (I64, Scalar)]), I8);
        assert_eq!(result_type(&[(U8, Dim), (I8, ZeroDim)]), U8);
        assert_eq!(result_type(&[(I8, Dim), (F64, ZeroDim)]), F64);
        assert_eq!(result_type(&[(F16, Dim), (F64, ZeroDim)]), F16);
        assert_eq!(result_type(&[(I32, Dim), (F32, Scalar)]), F32);
    }

    #[test]
    fn promote_types_table() {
        // torch.promote_types over (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)
        let rows = [
            "bool u8 i8 i16 i32 i64 f16 bf16 f32 f64",
            "u8 u8 i16 i16 i32 i64 f16 bf16 f32 f64",
            "i8 i16 i8 i16 i32 i64 f16 bf16 f32 f64",
            "i16 i16 i16 i16 i32 i64 f16 bf16 f32 f64",
            "i32 i32 i32 i32 i32 i64 f16 bf16 f32 f64",
            "i64 i64 i64 i64 i64 i64 f16 bf16 f32 f64",
            "f16 f16 f16 f16 f16 f16 f16 f32 f32 f64",
            "bf16 bf16 bf16 bf16 bf16 bf16 f32 bf16 f32 f64",
            "f32 f32 f32 f32 f32 f32 f32 f32 f32 f64",
            "f64 f64 f64 f64 f64 f64 f64 f64 f64 f64",
        ];
        let short = |s: &str| DType::ALL[["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"].iter().position(|x| *x == s).unwrap()];
        for (i, row) in rows.iter().enumerate() {
            for (j, want) in row.split(' ').enumerate() {
                assert_eq!(DType::promote(DType::ALL[i], DType::ALL[j]), short(want), "{:?} {:?}", DType::ALL[i], DType::ALL[j]);
            }
        }
    }

    #[test]
    fn narrow_conversions_follow_torch() {
        assert_eq!(<i8 as Element>::from_f64(300.0), 44);
        assert_eq!(<i8 as Element>::from_f64(3e9), 0);
        assert_eq!(<u8 as Element>::from_f64(-1.0), 255);
        assert_eq!(<u8 as Element>::from_f64(4294967297.0), 1);
        assert_eq!(<i16 as Element>::from_f64(1e9), -13824);
        assert_eq!(<i32 as Element>::from_f64(f64::NAN), i32::MIN);
        // float64 -> float16 rounds through float32 (1 + 2^-11 + 2^-40 ties to even there)
        assert_eq!(<half::f16 as Element>::from_f64(1.0 + 2f64.powi(-11) + 2f64.powi(-40)).to_f64(), 1.0);
        assert_eq!(<half::bf16 as Element>::from_i64((1 << 24) + (1 << 16) + 1).to_f64(), 16777216.0);
    }
}
