//! Element types, Python-side scalars, and torch's type-promotion rules.

use std::fmt;

/// The element types a tensor can hold. Order of variants is not meaningful; see `promote`.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum DType {
    Bool,
    I64,
    F32,
    F64,
}

impl DType {
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    pub fn size(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::I64 | DType::F64 => 8,
            DType::F32 => 4,
        }
    }
    /// torch's spelling, without the `torch.` prefix.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// The legacy type name torch uses in some error messages (`torch.FloatTensor`).
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::I64 => "LongTensor",
            DType::F32 => "FloatTensor",
            DType::F64 => "DoubleTensor",
        }
    }
    /// Kind order used by promotion: bool < integer < floating.
    fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::I64 => 1,
            DType::F32 | DType::F64 => 2,
        }
    }
    /// Promotion of two dtypes of equal standing (torch.promote_types).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            (x, y) if x == y => x,
            (F64, _) | (_, F64) => F64,
            (F32, _) | (_, F32) => F32,
            (I64, _) | (_, I64) => I64,
            _ => Bool,
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
    combine(state[Standing::Dim as usize], weak).unwrap_or(DType::F32)
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
            Scalar::Float(_) => DType::F32,
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

/// Run `$body` with `$T` bound to the Rust type of `$dt`.
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
        }
    };
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
    }
}
