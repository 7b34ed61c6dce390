//! `ferrograd.Tensor`: a thin Python handle over an engine tensor. Every method parses its
//! arguments and calls one function of `crate::ops`; nothing here computes gradients.

use super::args::*;
use super::IntoPyResult;
use crate::autograd::{self, BackwardRequest};
use crate::ops::table::AutocastRule;
use crate::ops::{self, IndexItem};
use crate::tensor::{DType, Scalar, Tensor};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyBool, PyEllipsis, PyList, PySlice, PyTuple};

#[pyclass(name = "Tensor", module = "ferrograd", frozen, subclass, weakref)]
pub struct PyTensor {
    pub t: Tensor,
    /// The Python object last handed out as this tensor's `.grad`, held weakly: while it lives and
    /// still wraps the engine's grad tensor, `.grad` returns it again (`x.grad is x.grad`, as torch).
    grad_obj: std::sync::Mutex<Option<Py<pyo3::types::PyWeakrefReference>>>,
}

impl PyTensor {
    pub fn new(t: Tensor) -> Self {
        PyTensor { t, grad_obj: std::sync::Mutex::new(None) }
    }
}

type PyT = PyResult<Py<PyTensor>>;

/// A Python object from the pure-Python side of the package (cached).
fn py_attr<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyAny>>, module: &str, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let obj = cell.get_or_try_init(py, || -> PyResult<Py<PyAny>> { Ok(py.import(module)?.getattr(name)?.unbind()) })?;
    Ok(obj.bind(py).clone())
}

static SIZE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TENSOR_STR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INDEX_TENSOR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The last Size made (`x.shape` of one tensor, or of tensors of one shape, is asked for again and
/// again): a Size is immutable (a tuple without attributes), so the same object serves.
static LAST_SIZE: std::sync::Mutex<Option<(Vec<usize>, Py<PyAny>)>> = std::sync::Mutex::new(None);

pub fn size_obj<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(last) = LAST_SIZE.lock() {
        if let Some((s, obj)) = last.as_ref() {
            if s.as_slice() == shape {
                return Ok(obj.bind(py).clone());
            }
        }
    }
    let tup = PyTuple::new(py, shape)?;
    let obj = py_attr(py, &SIZE, "ferrograd._size", "Size")?.call1((tup,))?;
    let old = LAST_SIZE.lock().ok().and_then(|mut last| last.replace((shape.to_vec(), obj.clone().unbind())));
    drop(old); // (its decref outside the lock)
    Ok(obj)
}

fn return_type<'py>(py: Python<'py>, name: &str, a: Py<PyTensor>, b: Py<PyTensor>) -> PyResult<Bound<'py, PyAny>> {
    py.import("ferrograd.return_types")?.getattr(name)?.call1((a, b))
}

fn not_impl(py: Python<'_>) -> PyResult<Py<PyAny>> {
    Ok(py.NotImplemented())
}

fn t_obj(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    Ok(wrap(py, t)?.into_any())
}

/// Note [NumPy operands]: as torch's, `tensor <op> array` is NumPy's: the tensor's operator
/// returns NotImplemented, NumPy computes on the tensor's memory (`__array__`, which refuses a
/// tensor that requires grad) and `__array_wrap__` makes the result a tensor. `array <op> tensor`
/// is a TypeError: `__array_priority__` makes NumPy defer to the tensor's reflected operator,
/// which takes no array. Only ==, != and array / tensor take the array directly (as torch's do).
fn operand_or_array(other: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if let Some(o) = operand(other) {
        return Ok(Some(o));
    }
    if other.cast::<numpy::PyUntypedArray>().is_ok() {
        return Ok(Some(super::functions::numpy_copy(other, None)?));
    }
    Ok(None)
}

/// Binary dunder: `NotImplemented` for operands that are neither tensors nor numbers.
macro_rules! dunder {
    ($name:ident, $rname:ident, |$a:ident, $b:ident| $e:expr) => {
        #[pymethods]
        impl PyTensor {
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                match operand(other) {
                    Some(o) => {
                        let ($a, $b) = (&self.t, &o);
                        t_obj(py, $e.py()?)
                    }
                    None => not_operand(py, other),
                }
            }
            fn $rname(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                match operand(other) {
                    Some(o) => {
                        let ($a, $b) = (&o, &self.t);
                        t_obj(py, $e.py()?)
                    }
                    None => not_operand(py, other),
                }
            }
        }
    };
}

/// A plain Python float or int operand (not a bool, not a subclass): the operators' fast path
/// to `ops::number_op`, which makes no tensor for the number.
#[inline]
fn plain_number(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if let Ok(f) = obj.cast_exact::<pyo3::types::PyFloat>() {
        return Some(Scalar::Float(f.value()));
    }
    if obj.is_exact_instance_of::<pyo3::types::PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    None
}

/// Binary dunder with the Python-number fast path of `ops::number_op` for `op`.
macro_rules! dunder_number {
    ($name:ident, $rname:ident, $op:expr, |$a:ident, $b:ident| $e:expr) => {
        #[pymethods]
        impl PyTensor {
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                if let Some(s) = plain_number(other) {
                    if let Some(out) = ops::number_op(&self.t, s, $op, false).py()? {
                        return t_obj(py, out);
                    }
                }
                match operand(other) {
                    Some(o) => {
                        let ($a, $b) = (&self.t, &o);
                        t_obj(py, $e.py()?)
                    }
                    None => not_operand(py, other),
                }
            }
            fn $rname(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                if let Some(s) = plain_number(other) {
                    if let Some(out) = ops::number_op(&self.t, s, $op, true).py()? {
                        return t_obj(py, out);
                    }
                }
                match operand(other) {
                    Some(o) => {
                        let ($a, $b) = (&o, &self.t);
                        t_obj(py, $e.py()?)
                    }
                    None => not_operand(py, other),
                }
            }
        }
    };
}

dunder_number!(__add__, __radd__, ops::BinOp::Add, |a, b| ops::add(a, b));
dunder_number!(__mul__, __rmul__, ops::BinOp::Mul, |a, b| ops::mul(a, b));
dunder_number!(__truediv__, __rtruediv_tensor__, ops::BinOp::Div, |a, b| ops::div(a, b));
dunder!(__floordiv__, __rfloordiv__, |a, b| ops::floor_divide(a, b));
dunder!(__mod__, __rmod__, |a, b| ops::remainder(a, b));

dunder!(__and__, __rand__, |a, b| ops::bitwise(a, b, '&'));
dunder!(__or__, __ror__, |a, b| ops::bitwise(a, b, '|'));
dunder!(__xor__, __rxor__, |a, b| ops::bitwise(a, b, '^'));

/// Methods that map one tensor to one tensor.
macro_rules! unary_methods {
    ($($name:ident => $f:expr),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(fn $name(&self, py: Python<'_>) -> PyT {
                wrap(py, ($f)(&self.t).py()?)
            })*
        }
    };
}

unary_methods! {
    clone => ops::clone, __neg__ => ops::neg, __abs__ => ops::abs,
    float => |t: &Tensor| ops::to_dtype(t, DType::F32), double => |t: &Tensor| ops::to_dtype(t, DType::F64),
    long => |t: &Tensor| ops::to_dtype(t, DType::I64), bool => |t: &Tensor| ops::to_dtype(t, DType::Bool),
    half => |t: &Tensor| ops::to_dtype(t, DType::F16), bfloat16 => |t: &Tensor| ops::to_dtype(t, DType::BF16),
    int => |t: &Tensor| ops::to_dtype(t, DType::I32), short => |t: &Tensor| ops::to_dtype(t, DType::I16),
    char => |t: &Tensor| ops::to_dtype(t, DType::I8), byte => |t: &Tensor| ops::to_dtype(t, DType::U8),
    t => ops::t,
}

// ---------------------------------------------------------------------------------------------
// The op table's bindings (src/ops/table.rs): a method per torch name and alias, and the native
// in-place form (`expm1_` records Expm1Backward0, as torch's).

/// One row's Tensor methods: `$name` and its aliases, each calling `$f` on self, its input cast
/// as the row's `autocast` column says (nothing at all for `none`).
macro_rules! table_unary_binding {
    ($f:expr, $ac:ident; $($m:ident)*) => {
        #[pymethods]
        impl PyTensor {
            $(fn $m(&self, py: Python<'_>) -> PyT {
                let x = &self.t;
                table_autocast!($ac; x);
                wrap(py, ($f)(x).py()?)
            })*
        }
    };
}

/// The row's autocast cast of its tensor inputs (Note [Autocast]); nothing for `none` rows.
macro_rules! table_autocast {
    (none; $($x:ident),+) => {};
    ($ac:ident; $($x:ident),+) => { autocast!(crate::__op_autocast!($ac); $($x),+); };
}

/// One row's in-place methods (`$m_` for the name and each alias): `$f` written into self.
macro_rules! table_unary_inplace {
    ($f:expr; $($m:ident)*) => {
        paste::paste! {
            #[pymethods]
            impl PyTensor {
                $(fn [<$m _>]<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
                    ops::inplace(&slf.get().t, &[], $f).py()?;
                    Ok(slf.clone())
                })*
            }
        }
    };
}

/// The bindings of the unary rows (`float_unary_ops!`, `num_unary_ops!`).
macro_rules! unary_row_bindings {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident $($ipgf:literal)?, bind $bind:ident $($flag:ident)*, saves $save:ident,
        kernel $k:tt, backward $b:tt, lane $l:tt;)*) => {
        $(unary_row_bindings!(@bind $bind $name $($tn)?; $ac; $($al)*);
          unary_row_bindings!(@inplace $ip $($ipgf)?; $bind $name; $($al)*);)*
    };
    (@bind method $name:ident; $ac:ident; $($al:ident)*) => { table_unary_binding!(ops::$name, $ac; $name $($al)*); };
    (@bind private $name:ident $tn:literal; $ac:ident; $($al:ident)*) => {
        #[pymethods]
        impl PyTensor {
            #[pyo3(name = $tn)]
            fn $name(&self, py: Python<'_>) -> PyT {
                wrap(py, ops::$name(&self.t).py()?)
            }
        }
    };
    (@bind $other:ident $name:ident $($tn:literal)?; $ac:ident; $($al:ident)*) => {};
    (@inplace native; method $name:ident; $($al:ident)*) => { table_unary_inplace!(|x| ops::$name(x); $name $($al)*); };
    (@inplace method_only; method $name:ident; $($al:ident)*) => { table_unary_inplace!(|x| ops::$name(x); $name $($al)*); };
    (@inplace nograd $gf:literal; method $name:ident; $($al:ident)*) => {
        table_unary_inplace!(|x| ops::inplace_without_derivative(x, ops::$name, stringify!($name), $gf); $name $($al)*);
    };
    (@inplace $ip:ident $($gf:literal)?; $bind:ident $name:ident; $($al:ident)*) => {};
}
crate::float_unary_ops!(unary_row_bindings);
crate::num_unary_ops!(unary_row_bindings);

/// One binary row's Tensor methods: `$name` and its aliases, the other argument parsed by `$arg`
/// (`operand_arg`: a tensor or number, `tensor_arg`: a tensor).
macro_rules! table_binary_binding {
    ($arg:ident, $f:expr, $ac:ident; $($m:ident)*) => {
        #[pymethods]
        impl PyTensor {
            $(fn $m(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyT {
                let o = $arg(other, stringify!($m), "other")?;
                let (x, o) = (&self.t, &o);
                table_autocast!($ac; x, o);
                wrap(py, ($f)(x, o).py()?)
            })*
        }
    };
}

/// The bindings of the float binary rows (`float_binary_ops!`).
macro_rules! float_binary_row_bindings {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, bind $bind:ident $($flag:ident)*,
        kernel $k:tt, grad_self $ga:tt, grad_other $gb:tt;)*) => {
        $(float_binary_row_bindings!(@bind $bind $name $($tn)?; $ip, $ac; $($al)*);)*
    };
    (@bind method $name:ident; $ip:ident, $ac:ident; $($al:ident)*) => {
        other_row_bindings!(@bind tensor (ops::$name); $ip, $ac; $name $($al)*);
    };
    (@bind private $name:ident $tn:literal; $ip:ident, $ac:ident; $($al:ident)*) => {
        #[pymethods]
        impl PyTensor {
            #[pyo3(name = $tn)]
            fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyT {
                let o = tensor_arg(other, $tn, "other")?;
                wrap(py, ops::$name(&self.t, &o).py()?)
            }
        }
    };
}

/// The bindings of the rows with a hand-written forward (`other_ops!`).
macro_rules! other_row_bindings {
    ($($name:ident: family $fam:ident, grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, out $out:literal, bind $bind:ident $f:tt;)*) => {
        $(other_row_bindings!(@bind $bind $f; $ip, $ac; $name $($al)*);)*
    };
    (@bind unary $f:tt; native, $ac:ident; $($m:ident)*) => {
        table_unary_binding!($f, $ac; $($m)*);
        table_unary_inplace!(|x| ($f)(x); $($m)*);
    };
    (@bind unary $f:tt; method_only, $ac:ident; $($m:ident)*) => {
        table_unary_binding!($f, $ac; $($m)*);
        table_unary_inplace!(|x| ($f)(x); $($m)*);
    };
    (@bind unary $f:tt; $ip:ident, $ac:ident; $($m:ident)*) => { table_unary_binding!($f, $ac; $($m)*); };
    (@bind operand $f:tt; $ip:ident, $ac:ident; $($m:ident)*) => { table_binary_binding!(operand_arg, $f, $ac; $($m)*); };
    (@bind tensor $f:tt; method_only, $ac:ident; $($m:ident)*) => { other_row_bindings!(@bind tensor $f; native, $ac; $($m)*); };
    (@bind tensor $f:tt; native, $ac:ident; $($m:ident)*) => {
        table_binary_binding!(tensor_arg, $f, $ac; $($m)*);
        paste::paste! {
            #[pymethods]
            impl PyTensor {
                $(fn [<$m _>]<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
                    let o = tensor_arg(other, stringify!([<$m _>]), "other")?;
                    ops::inplace(&slf.get().t, &[&o], |x| ($f)(x, &o)).py()?;
                    Ok(slf.clone())
                })*
            }
        }
    };
    (@bind tensor $f:tt; $ip:ident, $ac:ident; $($m:ident)*) => { table_binary_binding!(tensor_arg, $f, $ac; $($m)*); };
    (@bind custom $f:tt; $ip:ident, $ac:ident; $($m:ident)*) => {};
}
crate::other_ops!(other_row_bindings);
crate::float_binary_ops!(float_binary_row_bindings);

/// In-place unary methods (`exp_` ...): return self.
macro_rules! unary_inplace {
    ($($name:ident => $f:expr),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(fn $name<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
                ops::inplace(&slf.get().t, &[], |x| ($f)(x)).py()?;
                Ok(slf.clone())
            })*
        }
    };
}

unary_inplace! {
    round_ => ops::round,
}

#[pymethods]
impl PyTensor {
    fn polygamma(&self, py: Python<'_>, n: Int) -> PyT {
        wrap(py, ops::polygamma(n.v()?, &self.t).py()?)
    }
    fn polygamma_<'py>(slf: &Bound<'py, Self>, n: Int) -> PyResult<Bound<'py, Self>> {
        let n = n.v()?;
        ops::inplace(&slf.get().t, &[], |x| ops::polygamma_as(n, x, "PolygammaBackward1")).py()?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (p))]
    fn mvlgamma(&self, py: Python<'_>, p: Int) -> PyT {
        wrap(py, ops::mvlgamma(&self.t, p.v()?).py()?)
    }
    #[pyo3(signature = (p))]
    fn mvlgamma_<'py>(slf: &Bound<'py, Self>, p: Int) -> PyResult<Bound<'py, Self>> {
        let p = p.v()?;
        ops::inplace(&slf.get().t, &[], |x| ops::mvlgamma(x, p)).py()?;
        Ok(slf.clone())
    }
}

/// Binary methods whose other argument must be a tensor.
/// Each method's autocast rule follows its name (`AutocastRule::NONE` for the plain ones).
macro_rules! tensor_methods {
    ($($name:ident $([$rule:ident])? => $f:expr),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyT {
                let o = tensor_arg(other, stringify!($name), "other")?;
                let (x, o) = (&self.t, &o);
                $(autocast!(AutocastRule::$rule; x, o);)?
                wrap(py, ($f)(x, o).py()?)
            })*
        }
    };
}

// torch's autocast lists: matmul/mm/bmm in lower precision on both device types, mv on CUDA only,
// dot promoted on CUDA (Note [Autocast])
tensor_methods! {
    matmul [LOWER] => ops::matmul, mm [LOWER] => ops::mm, bmm [LOWER] => ops::bmm, mv [CUDA_LOWER] => ops::mv,
    dot [CUDA_PROMOTE] => ops::dot, outer => ops::outer,
    type_as => |a: &Tensor, b: &Tensor| ops::to_dtype(a, b.dtype()),
    expand_as => |a: &Tensor, b: &Tensor| ops::expand_to(a, &b.shape()),
    view_as => |a: &Tensor, b: &Tensor| ops::view(a, &b.shape().iter().map(|&d| d as i64).collect::<Vec<_>>()),
    reshape_as => |a: &Tensor, b: &Tensor| ops::reshape_to(a, &b.shape()),
}

/// In-place binary methods: name => op, and the op's character for the no_grad fast path (or None).
macro_rules! binary_inplace {
    ($($name:ident => $f:expr, $fast:expr),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(fn $name<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
                let o = operand_arg(other, stringify!($name), "other")?;
                // the no_grad in-place fast path, for the ops that have one (`ops::inplace_arith_fast`)
                let fast: Option<char> = $fast;
                if let Some(op) = fast {
                    if ops::inplace_arith_fast(&slf.get().t, &o, op).py()? {
                        return Ok(slf.clone());
                    }
                }
                ops::inplace(&slf.get().t, &[&o], |x| ($f)(x, &o)).py()?;
                Ok(slf.clone())
            })*
        }
    };
}

binary_inplace! {
    mul_ => ops::mul, Some('*'), floor_divide_ => ops::floor_divide, None, remainder_ => ops::remainder, None,
    pow_ => ops::pow, None, maximum_ => ops::maximum, None, minimum_ => ops::minimum, None,
}

/// `x op= other`: in place for a tensor or number; for anything else pyo3 returns NotImplemented
/// (the `Operand` fails to extract) and Python falls back to `x = x op other` (NumPy arrays: NumPy's
/// result, as torch's).
fn arith_inplace(slf: &Bound<'_, PyTensor>, other: Operand, f: fn(&Tensor, &Tensor) -> crate::Result<Tensor>) -> PyResult<()> {
    let o = other.0;
    ops::inplace(&slf.get().t, &[&o], |x| f(x, &o)).py()
}

/// `x op= o` for + - * /: straight into x's buffer when nothing is recorded and the operands
/// are plain (`ops::inplace_arith_fast`), else through `arith_inplace`.
fn arith_inplace_fast(slf: &Bound<'_, PyTensor>, other: Operand, op: char, f: fn(&Tensor, &Tensor) -> crate::Result<Tensor>) -> PyResult<()> {
    if ops::inplace_arith_fast(&slf.get().t, &other.0, op).py()? {
        return Ok(());
    }
    arith_inplace(slf, other, f)
}

#[pymethods]
impl PyTensor {
    /// The legacy constructor: `Tensor()` (empty), `Tensor(t)` (an alias of t's data, how
    /// subclasses such as nn.Parameter are made), `Tensor(data)` (float32), `Tensor(*sizes)`.
    #[new]
    #[pyo3(signature = (*args))]
    fn py_new(args: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let py = args.py();
        if args.is_empty() {
            return Ok(PyTensor::new(Tensor::zeros(&[0], DType::default_float()).py()?));
        }
        let first = args.get_item(0)?;
        if args.len() == 1 {
            if let Ok(t) = first.cast::<PyTensor>() {
                return Ok(PyTensor::new(t.get().t.alias()));
            }
            if first.is_instance_of::<PyList>() || first.is_instance_of::<PyTuple>() || first.hasattr("__array__")? {
                let t = py.import("ferrograd")?.getattr("tensor")?.call((first,), Some(&[("dtype", dtype_obj(py, DType::default_float())?)].into_py_dict(py)?))?;
                return Ok(PyTensor::new(t.cast::<PyTensor>()?.get().t.clone()));
            }
        }
        let s = sizes(&shape_args(args, "Tensor", "size")?)?;
        Ok(PyTensor::new(Tensor::zeros(&s, DType::default_float()).py()?))
    }
    /// Pickling and deepcopy: the values as a NumPy array, the dtype and requires_grad.
    /// bfloat16 (which NumPy lacks) travels as float32 values, exactly, with its dtype's name.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>, bool, String, Option<String>))> {
        let py = slf.py();
        let t = &slf.get().t;
        let mut host = crate::backend::cuda::to_device(&t.alias(), crate::backend::Device::Cpu).py()?;
        let mut dtype = None;
        if super::functions::numpy_name(t.dtype()).is_none() {
            host = crate::backend::cpu::cast(&host, DType::F32).py()?;
            dtype = Some(t.dtype().name().to_string());
        }
        let arr = super::functions::to_numpy(&Bound::new(py, PyTensor::new(host))?)?.call_method0("copy")?;
        let rebuild = py.import("ferrograd._creation")?.getattr("_rebuild_tensor")?;
        Ok((rebuild, (arr, t.is_leaf() && t.requires_grad(), t.device().to_string(), dtype)))
    }

    // ---- new tensors of this one's dtype and device (new_tensor: python/ferrograd/_creation.py) --

    #[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
    fn new_zeros(&self, py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool) -> PyT {
        super::functions::filled(py, "new_zeros", 0.0, args, size, dtype, device, requires_grad, Some(&self.t))
    }
    #[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
    fn new_ones(&self, py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool) -> PyT {
        super::functions::filled(py, "new_ones", 1.0, args, size, dtype, device, requires_grad, Some(&self.t))
    }
    #[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false))]
    fn new_empty(&self, py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool) -> PyT {
        super::functions::filled(py, "new_empty", 0.0, args, size, dtype, device, requires_grad, Some(&self.t))
    }
    #[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
    fn new_full(&self, py: Python<'_>, size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool) -> PyT {
        super::functions::full_of(py, "new_full", size, fill_value, dtype, device, requires_grad, Some(&self.t))
    }

    // ---- operators ---------------------------------------------------------------------------

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Some(s) = plain_number(other) {
            if let Some(out) = ops::number_op(&self.t, s, ops::BinOp::Sub, false).py()? {
                return t_obj(py, out);
            }
        }
        match operand(other) {
            Some(o) => t_obj(py, ops::sub(&self.t, &o).py()?),
            None => not_operand(py, other),
        }
    }
    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match as_scalar(other) {
            Some(s) => t_obj(py, rsub_number(&self.t, s).py()?),
            None => match operand(other) {
                Some(o) => t_obj(py, ops::sub(&o, &self.t).py()?),
                None => not_operand(py, other),
            },
        }
    }
    fn __pow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        match operand(other) {
            Some(o) => {
                let (x, o) = (&self.t, &o);
                autocast!(row_autocast("pow"); x, o);
                t_obj(py, ops::pow(x, o).py()?)
            }
            None => not_operand(py, other),
        }
    }
    fn __rpow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        match operand(other) {
            Some(o) => {
                let (o, x) = (&o, &self.t);
                autocast!(row_autocast("pow"); o, x);
                t_obj(py, ops::pow(o, x).py()?)
            }
            None => not_operand(py, other),
        }
    }
    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        // s / x is reciprocal(x) * s, as torch records it (MulBackward0 over ReciprocalBackward0)
        match as_scalar(other) {
            Some(s) if self.t.dtype().is_float() => t_obj(py, ops::mul(&ops::reciprocal(&self.t).py()?, &Tensor::wrap_scalar(s)).py()?),
            _ => match operand_or_array(other)? {
                Some(o) => t_obj(py, ops::div(&o, &self.t).py()?),
                None => not_operand(py, other),
            },
        }
    }
    /// `NotImplemented` for non-tensor operands, so Python tries the other side's `__rmatmul__`
    /// (fx proxies, user types); torch raises the TypeError only when neither side handles it.
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyTensor>() else { return not_impl(py) };
        let (a, b) = (&self.t, &o.get().t);
        autocast!(AutocastRule::LOWER; a, b);
        t_obj(py, ops::matmul(a, b).py()?)
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyTensor>() else { return not_impl(py) };
        let (a, b) = (&o.get().t, &self.t);
        autocast!(AutocastRule::LOWER; a, b);
        t_obj(py, ops::matmul(a, b).py()?)
    }
    fn __invert__(&self, py: Python<'_>) -> PyT {
        if self.t.dtype().is_float() {
            return Err(PyTypeError::new_err("~ (operator.invert) is only implemented on integer and Boolean-type tensors"));
        }
        wrap(py, ops::bitwise_not(&self.t).py()?)
    }
    fn contiguous<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let t = &slf.get().t;
        if t.is_contiguous() {
            return Ok(slf.clone().into_any());
        }
        Ok(wrap(slf.py(), ops::contiguous(t).py()?)?.into_bound(slf.py()).into_any())
    }
    /// See Note [NumPy operands].
    #[classattr]
    fn __array_priority__() -> i64 {
        1000
    }
    /// A NumPy result computed from this tensor, as a tensor (Note [NumPy operands]).
    #[pyo3(signature = (array, context=None, return_scalar=false))]
    fn __array_wrap__(&self, py: Python<'_>, array: &Bound<'_, PyAny>, context: Option<&Bound<'_, PyAny>>, return_scalar: bool) -> PyT {
        let _ = (context, return_scalar);
        let arr = py.import("numpy")?.call_method1("asarray", (array,))?;
        wrap(py, super::functions::numpy_copy(&arr, None)?)
    }
    fn __pos__<'py>(slf: &Bound<'py, Self>) -> Bound<'py, Self> {
        slf.clone()
    }
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let o = match op {
            CompareOp::Eq | CompareOp::Ne => operand_or_array(other)?,
            _ => operand(other),
        };
        let Some(o) = o else { return not_operand(py, other) };
        let r = match op {
            CompareOp::Eq => ops::eq(&self.t, &o),
            CompareOp::Ne => ops::ne(&self.t, &o),
            CompareOp::Lt => ops::lt(&self.t, &o),
            CompareOp::Le => ops::le(&self.t, &o),
            CompareOp::Gt => ops::gt(&self.t, &o),
            CompareOp::Ge => ops::ge(&self.t, &o),
        };
        t_obj(py, r.py()?)
    }
    fn __hash__(&self) -> u64 {
        self.t.addr() as u64
    }
    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(Err(e)) = super::autograd_function::with_sole_ctx(&self.t, |ctx| match ctx {
            Some(c) => visit.call(&*c),
            None => Ok(()),
        }) {
            return Err(e);
        }
        Ok(())
    }
    fn __clear__(&self) {
        let taken = super::autograd_function::with_sole_ctx(&self.t, |ctx| ctx.take());
        drop(taken);
    }
    fn __iadd__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace_fast(slf, other, '+', ops::add)
    }
    fn __isub__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace_fast(slf, other, '-', ops::sub)
    }
    fn __imul__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace_fast(slf, other, '*', ops::mul)
    }
    fn __itruediv__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace_fast(slf, other, '/', ops::div)
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace(slf, other, ops::floor_divide)
    }
    fn __imod__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace(slf, other, ops::remainder)
    }
    fn __ipow__(slf: &Bound<'_, Self>, other: Operand, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        arith_inplace(slf, other, ops::pow)
    }
    fn __iand__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace(slf, other, |a, b| ops::bitwise(a, b, '&'))
    }
    fn __ior__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace(slf, other, |a, b| ops::bitwise(a, b, '|'))
    }
    fn __ixor__(slf: &Bound<'_, Self>, other: Operand) -> PyResult<()> {
        arith_inplace(slf, other, |a, b| ops::bitwise(a, b, '^'))
    }

    // ---- arithmetic with keyword options ------------------------------------------------------

    #[pyo3(signature = (other, *, alpha=None))]
    fn add(&self, py: Python<'_>, other: &Bound<'_, PyAny>, #[pyo3(from_py_with = given)] alpha: Option<Bound<'_, PyAny>>) -> PyT {
        let o = other_and_alpha(&self.t, other, alpha.as_ref(), "add")?;
        wrap(py, add_alpha(&self.t, &o, alpha.as_ref(), false).py()?)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(&self, py: Python<'_>, other: &Bound<'_, PyAny>, #[pyo3(from_py_with = given)] alpha: Option<Bound<'_, PyAny>>) -> PyT {
        let o = other_and_alpha(&self.t, other, alpha.as_ref(), "sub")?;
        wrap(py, add_alpha(&self.t, &o, alpha.as_ref(), true).py()?)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn subtract(&self, py: Python<'_>, other: &Bound<'_, PyAny>, #[pyo3(from_py_with = given)] alpha: Option<Bound<'_, PyAny>>) -> PyT {
        self.sub(py, other, alpha)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>, #[pyo3(from_py_with = given)] alpha: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, Self>> {
        let o = other_and_alpha(&slf.get().t, other, alpha.as_ref(), "add_")?;
        if let Some(al) = float_alpha(alpha.as_ref()) {
            if ops::inplace_arith_alpha_fast(&slf.get().t, &o, '+', al).py()? {
                return Ok(slf.clone());
            }
        }
        ops::inplace(&slf.get().t, &[&o], |x| add_alpha(x, &o, alpha.as_ref(), false)).py()?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>, #[pyo3(from_py_with = given)] alpha: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, Self>> {
        let o = other_and_alpha(&slf.get().t, other, alpha.as_ref(), "sub_")?;
        if let Some(al) = float_alpha(alpha.as_ref()) {
            if ops::inplace_arith_alpha_fast(&slf.get().t, &o, '-', al).py()? {
                return Ok(slf.clone());
            }
        }
        ops::inplace(&slf.get().t, &[&o], |x| add_alpha(x, &o, alpha.as_ref(), true)).py()?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>, rounding_mode: Option<String>) -> PyT {
        let o = operand_arg(other, "div", "other")?;
        wrap(py, ops::div_mode(&self.t, &o, rounding_mode.as_deref()).py()?)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>, rounding_mode: Option<String>) -> PyT {
        self.div(py, other, rounding_mode)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn true_divide(&self, py: Python<'_>, other: &Bound<'_, PyAny>, rounding_mode: Option<String>) -> PyT {
        self.div(py, other, rounding_mode)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>, rounding_mode: Option<String>) -> PyResult<Bound<'py, Self>> {
        let o = operand_arg(other, "div_", "other")?;
        if rounding_mode.is_none() && ops::inplace_arith_fast(&slf.get().t, &o, '/').py()? {
            return Ok(slf.clone());
        }
        ops::inplace(&slf.get().t, &[&o], |x| ops::div_mode(x, &o, rounding_mode.as_deref())).py()?;
        Ok(slf.clone())
    }
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyT {
        let o = operand_arg(exponent, "pow", "exponent")?;
        let (x, o) = (&self.t, &o);
        autocast!(row_autocast("pow"); x, o);
        wrap(py, ops::pow(x, o).py()?)
    }
    fn rsub(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyT {
        match as_scalar(other) {
            Some(s) => wrap(py, rsub_number(&self.t, s).py()?),
            None => {
                let o = operand_arg(other, "rsub", "other")?;
                wrap(py, ops::sub(&o, &self.t).py()?)
            }
        }
    }
    #[pyo3(signature = (decimals=Int::of(0)), text_signature = "($self, decimals=0)")]
    fn round(&self, py: Python<'_>, decimals: Int) -> PyT {
        let decimals = decimals.v()?;
        if decimals == 0 {
            return wrap(py, ops::round(&self.t).py()?);
        }
        let f = 10f64.powi(decimals as i32);
        let r = ops::round(&ops::mul(&self.t, &ops::scalar(f)).py()?).py()?;
        wrap(py, ops::div(&r, &ops::scalar(f)).py()?)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(&self, py: Python<'_>, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyT {
        wrap(py, clamp_any(&self.t, min, max)?)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(&self, py: Python<'_>, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyT {
        self.clamp(py, min, max)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(slf: &Bound<'py, Self>, min: Option<&Bound<'py, PyAny>>, max: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Self>> {
        let t = slf.get().t.clone();
        // tensor bounds are inputs of the op (a bound that requires grad makes the result require it)
        let bounds: Vec<Tensor> = [min, max].into_iter().flatten().filter_map(|b| b.cast::<PyTensor>().ok().map(|b| b.get().t.clone())).collect();
        let bound_refs: Vec<&Tensor> = bounds.iter().collect();
        let mut err = None;
        ops::inplace(&t, &bound_refs, |x| {
            clamp_any(x, min, max).map_err(|e| {
                err = Some(e);
                crate::error::Error::runtime("clamp_")
            })
        })
        .map_err(|e| err.take().unwrap_or_else(|| super::to_py(e)))?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(slf: &Bound<'py, Self>, min: Option<&Bound<'py, PyAny>>, max: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Self>> {
        Self::clamp_(slf, min, max)
    }
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyT {
        self.clamp(py, Some(min), None)
    }
    fn clamp_max(&self, py: Python<'_>, max: &Bound<'_, PyAny>) -> PyT {
        self.clamp(py, None, Some(max))
    }
    #[pyo3(name = "where")]
    fn where_(&self, py: Python<'_>, condition: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyT {
        let c = tensor_arg(condition, "where", "condition")?;
        let o = operand_arg(other, "where", "other")?;
        wrap(py, ops::where_(&c, &self.t, &o).py()?)
    }
    fn masked_fill(&self, py: Python<'_>, mask: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyT {
        let m = tensor_arg(mask, "masked_fill", "mask")?;
        let v = operand_arg(value, "masked_fill", "value")?;
        wrap(py, ops::masked_fill(&self.t, &m, &v).py()?)
    }
    fn masked_fill_<'py>(slf: &Bound<'py, Self>, mask: &Bound<'py, PyAny>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let m = tensor_arg(mask, "masked_fill_", "mask")?;
        let v = operand_arg(value, "masked_fill_", "value")?;
        ops::inplace_fill(&slf.get().t, &[&v], |x| ops::masked_fill(x, &m, &v)).py()?;
        Ok(slf.clone())
    }
    fn zero_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        ops::fill_(&slf.get().t, &Tensor::wrap_scalar(Scalar::Float(0.0)), "ZeroBackward0").py()?;
        Ok(slf.clone())
    }
    fn fill_<'py>(slf: &Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = operand_arg(value, "fill_", "value")?;
        ops::fill_(&slf.get().t, &v, "FillBackward2").py()?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(slf: &Bound<'py, Self>, src: &Bound<'py, PyAny>, non_blocking: bool) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let s = operand_arg(src, "copy_", "src")?;
        ops::copy_(&slf.get().t, &s).py()?;
        Ok(slf.clone())
    }

    // ---- reductions ----------------------------------------------------------------------------

    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn sum(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let d = dims_arg(dim)?;
        let dt = opt_dtype(dtype)?;
        let x = &self.t;
        autocast!(opt_dtype_rule("sum", dt); x);
        wrap(py, ops::sum(x, d.as_deref(), keepdim, dt).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn mean(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let d = dims_arg(dim)?;
        wrap(py, ops::mean(&self.t, d.as_deref(), keepdim, opt_dtype(dtype)?).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None))]
    fn prod(&self, py: Python<'_>, #[pyo3(from_py_with = given_int)] dim: Option<Int>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let dim = opt_v(dim)?;
        let dt = opt_dtype(dtype)?;
        let x = &self.t;
        autocast!(opt_dtype_rule("prod", dt); x);
        let x = match dt {
            Some(dt) => ops::to_dtype(x, dt).py()?,
            None => x.clone(),
        };
        let r = ops::prod(&x, dim, keepdim).py()?;
        // an integer product is taken in int64; dtype= asks for the result in that dtype (wrapping, as torch's)
        let r = match dt {
            Some(dt) if r.dtype() != dt => ops::to_dtype(&r, dt).py()?,
            _ => r,
        };
        wrap(py, r)
    }
    #[pyo3(signature = (dim=None, keepdim=None))]
    fn max<'py>(&self, py: Python<'py>, #[pyo3(from_py_with = given)] dim: Option<Bound<'py, PyAny>>, #[pyo3(from_py_with = given_bool)] keepdim: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        self.extreme(py, dim.as_ref(), keepdim, true)
    }
    #[pyo3(signature = (dim=None, keepdim=None))]
    fn min<'py>(&self, py: Python<'py>, #[pyo3(from_py_with = given)] dim: Option<Bound<'py, PyAny>>, #[pyo3(from_py_with = given_bool)] keepdim: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        self.extreme(py, dim.as_ref(), keepdim, false)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyT {
        let d = dims_arg(dim)?.unwrap_or_default();
        wrap(py, ops::amax(&self.t, &d, keepdim, true).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyT {
        let d = dims_arg(dim)?.unwrap_or_default();
        wrap(py, ops::amax(&self.t, &d, keepdim, false).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<Int>, keepdim: bool) -> PyT {
        wrap(py, ops::argmax(&self.t, opt_v(dim)?, keepdim, true).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<Int>, keepdim: bool) -> PyT {
        wrap(py, ops::argmax(&self.t, opt_v(dim)?, keepdim, false).py()?)
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn var(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool, correction: Option<f64>) -> PyT {
        let (d, c) = var_args(dim, unbiased, correction)?;
        wrap(py, ops::var(&self.t, d.as_deref(), c, keepdim, false).py()?)
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None))]
    fn std(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool, correction: Option<f64>) -> PyT {
        let (d, c) = var_args(dim, unbiased, correction)?;
        wrap(py, ops::var(&self.t, d.as_deref(), c, keepdim, true).py()?)
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, py: Python<'_>, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyT {
        let d = seq_ints(dim, "dim")?;
        let x = &self.t;
        autocast!(row_autocast("logsumexp"); x);
        wrap(py, ops::logsumexp(x, &d, keepdim).py()?)
    }
    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(&self, py: Python<'_>, p: Option<&Bound<'_, PyAny>>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let p = norm_p(p)?;
        let x = match opt_dtype(dtype)? {
            Some(dt) => ops::to_dtype(&self.t, dt).py()?,
            None => self.t.clone(),
        };
        let d = dims_arg(dim)?;
        wrap(py, ops::norm(&x, p, d.as_deref(), keepdim).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyT {
        let d = dims_arg(dim)?;
        wrap(py, ops::all_any(&self.t, d.as_deref(), keepdim, true).py()?)
    }
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyT {
        let d = dims_arg(dim)?;
        wrap(py, ops::all_any(&self.t, d.as_deref(), keepdim, false).py()?)
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, py: Python<'_>, dim: Int, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let dt = opt_dtype(dtype)?;
        let x = &self.t;
        autocast!(opt_dtype_rule("cumsum", dt); x);
        wrap(py, ops::cumsum(x, dim.v()?, dt).py()?)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(&self, py: Python<'_>, dim: Int, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let dt = opt_dtype(dtype)?;
        let x = &self.t;
        // torch's CUDA list: float32 unless dtype= is given
        autocast!(if dt.is_none() { AutocastRule::CUDA_FP32 } else { AutocastRule::NONE }; x);
        wrap(py, ops::softmax(x, dim.v()?, dt).py()?)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(&self, py: Python<'_>, dim: Int, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let dt = opt_dtype(dtype)?;
        let x = &self.t;
        autocast!(if dt.is_none() { AutocastRule::CUDA_FP32 } else { AutocastRule::NONE }; x);
        wrap(py, ops::log_softmax(x, dim.v()?, dt).py()?)
    }

    // ---- shape and views -----------------------------------------------------------------------

    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::reshape(&self.t, &shape_args(shape, "reshape", "shape")?).py()?)
    }
    /// view(*shape), or view(dtype): the same memory read as another dtype.
    #[pyo3(signature = (*shape, dtype=None))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyT {
        let as_dtype = match (dtype, shape.len()) {
            (Some(d), 0) => Some(to_dtype(d)?),
            (None, 1) => {
                let a = shape.get_item(0)?;
                if a.is_exact_instance_of::<pyo3::types::PyInt>() {
                    None
                } else if a.cast::<PyDType>().is_ok() || a.get_type().name()?.to_string() == "dtype" { Some(to_dtype(&a)?) } else { None }
            }
            _ => None,
        };
        if let Some(dt) = as_dtype {
            return wrap(py, ops::view_dtype(&self.t, dt).py()?);
        }
        wrap(py, ops::view(&self.t, &shape_args(shape, "view", "size")?).py()?)
    }
    #[pyo3(signature = (start_dim=Int::of(0), end_dim=Int::of(-1)), text_signature = "($self, start_dim=0, end_dim=-1)")]
    fn flatten(slf: &Bound<'_, Self>, start_dim: Int, end_dim: Int) -> PyT {
        let t = &slf.get().t;
        let out = ops::flatten(t, start_dim.v()?, end_dim.v()?).py()?;
        if out.ptr_eq(t) {
            return Ok(slf.clone().unbind()); // torch returns the tensor itself
        }
        wrap(slf.py(), out)
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, py: Python<'_>, #[pyo3(from_py_with = given)] dim: Option<Bound<'_, PyAny>>) -> PyT {
        let dim = dim.as_ref();
        if dim.is_some_and(|d| d.is_none()) {
            return Err(PyTypeError::new_err("squeeze(): argument 'dim' must be int or tuple of ints, not NoneType"));
        }
        let d = dims_arg(dim)?;
        wrap(py, ops::squeeze(&self.t, d.as_deref()).py()?)
    }
    fn unsqueeze(&self, py: Python<'_>, dim: Int) -> PyT {
        wrap(py, ops::unsqueeze(&self.t, dim.v()?).py()?)
    }
    fn transpose(&self, py: Python<'_>, dim0: Int, dim1: Int) -> PyT {
        wrap(py, ops::transpose(&self.t, dim0.v()?, dim1.v()?).py()?)
    }
    fn swapaxes(&self, py: Python<'_>, axis0: Int, axis1: Int) -> PyT {
        self.transpose(py, axis0, axis1)
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::permute(&self.t, &shape_args(dims, "permute", "dims")?).py()?)
    }
    /// movedim(source, destination): ints or sequences of dims; the other dims keep their order.
    fn movedim(&self, py: Python<'_>, source: &Bound<'_, PyAny>, destination: &Bound<'_, PyAny>) -> PyT {
        let nd = self.t.ndim();
        // torch's overloads: (int source, int destination), (int[] source, int[] destination)
        let (src, dst) = match (parse_int(source), parse_int(destination)) {
            (Ok(s), Ok(d)) => (vec![s], vec![d]),
            (Ok(_) | Err(ArgErr::Overflow), Ok(_) | Err(ArgErr::Overflow)) => return Err(ArgErr::Overflow.into_py("int", None)),
            _ => match (parse_int_list(source, 0), parse_int_list(destination, 0)) {
                (Ok(s), Ok(d)) => (s, d),
                _ => {
                    return Err(PyTypeError::new_err(format!(
                        "movedim() received an invalid combination of arguments - got ({}, {}), but expected one of:\n * (int source, int destination)\n * (tuple of ints source, tuple of ints destination)",
                        type_name(source), type_name(destination))))
                }
            },
        };
        if src.len() != dst.len() {
            return Err(PyRuntimeError::new_err(format!(
                "movedim: Invalid source or destination dims: source ({:?} dims) should contain the same number of dims as destination ({:?} dims)", src, dst)));
        }
        let wrap_all = |v: &[i64], what: &str| -> PyResult<Vec<usize>> {
            let w = v.iter().map(|&d| crate::tensor::layout::wrap_dim(d, nd)).collect::<crate::Result<Vec<_>>>().py()?;
            if (1..w.len()).any(|i| w[..i].contains(&w[i])) {
                return Err(PyRuntimeError::new_err(format!("movedim: repeated dim in `{}` ({:?})", what, v)));
            }
            Ok(w)
        };
        let (s, d) = (wrap_all(&src, "source")?, wrap_all(&dst, "destination")?);
        if nd == 0 {
            return wrap(py, ops::permute(&self.t, &[]).py()?); // dims 0 and -1 name the tensor itself
        }
        let mut perm: Vec<Option<i64>> = vec![None; nd];
        for (&si, &di) in s.iter().zip(&d) {
            perm[di] = Some(si as i64);
        }
        let mut rest = (0..nd).filter(|k| !s.contains(k));
        let perm: Vec<i64> = perm.into_iter().map(|p| p.unwrap_or_else(|| rest.next().unwrap_or_default() as i64)).collect();
        wrap(py, ops::permute(&self.t, &perm).py()?)
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::expand(&self.t, &shape_args(sizes, "expand", "size")?).py()?)
    }
    #[pyo3(signature = (*shape))]
    fn broadcast_to(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::expand(&self.t, &shape_args(shape, "broadcast_to", "size")?).py()?)
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::repeat(&self.t, &shape_args(sizes, "repeat", "repeats")?).py()?)
    }
    #[pyo3(signature = (*dims))]
    fn flip(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyT {
        wrap(py, ops::flip(&self.t, &shape_args(dims, "flip", "dims")?).py()?)
    }
    fn narrow(&self, py: Python<'_>, dim: Int, #[pyo3(from_py_with = narrow_start)] start: Result<Int, Bound<'_, PyAny>>, length: Int) -> PyT {
        // the ints are converted before the tensor start is checked (torch's parser, then the op)
        let (dim, length) = (dim.v()?, length.v()?);
        let start = narrow_start_v(start)?;
        wrap(py, ops::narrow(&self.t, dim, start, length).py()?)
    }
    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(&self, py: Python<'_>, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<Int>) -> PyT {
        let size = size_arg(size, "as_strided", "size", 1)?;
        let stride = size_arg(stride, "as_strided", "stride", 2)?;
        let off = storage_offset.map(|o| o.v()).transpose()?;
        wrap(py, ops::as_strided(&self.t, &size, &stride, off).py()?)
    }
    #[pyo3(signature = (offset=Int::of(0), dim1=Int::of(0), dim2=Int::of(1)), text_signature = "($self, offset=0, dim1=0, dim2=1)")]
    fn diagonal(&self, py: Python<'_>, offset: Int, dim1: Int, dim2: Int) -> PyT {
        wrap(py, ops::diagonal(&self.t, offset.v()?, dim1.v()?, dim2.v()?).py()?)
    }
    /// In-place shape ops on a tensor with history: take the geometry and grad_fn of `view`.
    fn _assume_view(&self, view: PyRef<'_, PyTensor>) {
        self.t.assume_view(&view.t);
    }
    /// Whether `resize_` may give this tensor a new buffer (Note [Exported storage]).
    fn _storage_resizable(&self) -> bool {
        self.t.storage().is_resizable()
    }
    fn unfold(&self, py: Python<'_>, dimension: Int, size: Int, step: Int) -> PyT {
        let (dimension, size, step) = (dimension.v()?, size.v()?, step.v()?);
        wrap(py, ops::unfold_windows(&self.t, dimension, size, step).py()?)
    }
    fn select(&self, py: Python<'_>, dim: Int, index: Int) -> PyT {
        wrap(py, ops::select(&self.t, dim.v()?, index.v()?).py()?)
    }
    #[pyo3(signature = (split_size_or_sections, dim=Int::of(0)), text_signature = "($self, split_size_or_sections, dim=0)")]
    fn split<'py>(&self, py: Python<'py>, split_size_or_sections: &Bound<'py, PyAny>, dim: Int) -> PyResult<Bound<'py, PyTuple>> {
        // torch's Tensor.split: an int (a bool is refused), a tensor made an int with int() when it
        // has one element, else a list of sizes
        let s = split_size_or_sections;
        let one = s.cast::<PyTensor>().is_ok_and(|t| t.get().t.numel() == 1);
        let parts = if !s.is_instance_of::<pyo3::types::PyInt>() && !one {
            let s: Vec<usize> = sizes(&size_arg(s, "split_with_sizes", "split_sizes", 2)?)?;
            ops::split_sizes(&self.t, &s, dim.v()?, "SplitWithSizesBackward0").py()?
        } else {
            let n = if one { s.call_method0("__int__")?.extract()? } else { int_arg(s, "split_size")? };
            let dim = dim.v()?;
            if n < 0 {
                return Err(PyRuntimeError::new_err(format!("split expects split_size be non-negative, but got split_size={}", n)));
            }
            ops::split(&self.t, n as usize, dim).py()?
        };
        tuple_of(py, parts)
    }
    #[pyo3(signature = (chunks, dim=Int::of(0)), text_signature = "($self, chunks, dim=0)")]
    fn chunk<'py>(&self, py: Python<'py>, chunks: Int, dim: Int) -> PyResult<Bound<'py, PyTuple>> {
        let (chunks, dim) = (chunks.v()?, dim.v()?);
        if chunks > 0 && self.t.ndim() > 0 {
            // torch: a dim of size 0 gives `chunks` empty pieces (split would give one)
            let d = crate::tensor::layout::wrap_dim(dim, self.t.ndim()).py()?;
            if self.t.shape()[d] == 0 {
                if chunks as u64 > (isize::MAX as u64) / 8 {
                    return Err(PyRuntimeError::new_err("cannot create std::vector larger than max_size()"));
                }
                return tuple_of(py, ops::split_sizes(&self.t, &vec![0; chunks as usize], dim, "SplitWithSizesBackward0").py()?);
            }
        }
        if chunks <= 0 {
            return Err(PyRuntimeError::new_err(format!("chunk expects `chunks` to be greater than 0, got: {}", chunks)));
        }
        tuple_of(py, ops::chunk(&self.t, chunks as usize, dim).py()?)
    }
    #[pyo3(signature = (dim=Int::of(0)), text_signature = "($self, dim=0)")]
    fn unbind<'py>(&self, py: Python<'py>, dim: Int) -> PyResult<Bound<'py, PyTuple>> {
        tuple_of(py, ops::unbind(&self.t, dim.v()?).py()?)
    }
    fn gather(&self, py: Python<'_>, dim: Int, index: &Bound<'_, PyAny>) -> PyT {
        let i = tensor_arg(index, "gather", "index")?;
        wrap(py, ops::gather(&self.t, dim.v()?, &i).py()?)
    }
    fn index_select(&self, py: Python<'_>, dim: Int, index: &Bound<'_, PyAny>) -> PyT {
        let i = tensor_arg(index, "index_select", "index")?;
        wrap(py, ops::index_select(&self.t, dim.v()?, &i).py()?)
    }
    /// nonzero(): [n, ndim] indices; as_tuple=True: one index tensor per dim (a 0-d tensor counts
    /// as 1-d, as torch's).
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        if !as_tuple {
            return Ok(wrap(py, ops::nonzero(&self.t).py()?)?.into_any());
        }
        let c = if self.t.ndim() == 0 { ops::reshape(&self.t, &[1]).py()? } else { self.t.clone() };
        let nz = ops::nonzero(&c).py()?;
        let parts = (0..nz.shape()[1]).map(|i| ops::contiguous_copy(&ops::select(&nz, 1, i as i64)?)).collect::<crate::Result<Vec<_>>>().py()?;
        let objs = parts.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, objs)?.into_any().unbind())
    }
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyAny>) -> PyT {
        let m = tensor_arg(mask, "masked_select", "mask")?;
        if m.dtype() != DType::Bool {
            return Err(PyRuntimeError::new_err("masked_select: expected BoolTensor for mask"));
        }
        let shape = crate::tensor::layout::broadcast_shapes(&self.t.shape(), &m.shape()).py()?;
        let x = ops::expand_to(&self.t, &shape).py()?;
        let m = ops::expand_to(&m, &shape).py()?;
        wrap(py, ops::getitem(&x, &[IndexItem::Tensor(m)]).py()?)
    }
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyT {
        let items = index_items(&self.t, index)?;
        wrap(py, ops::getitem(&self.t, &items).py()?)
    }
    fn __setitem__(&self, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if value.is_exact_instance_of::<pyo3::types::PyInt>() && as_scalar(value).is_none() {
            return Err(ArgErr::Overflow.into_py("int", None)); // torch unpacks an int value as int64
        }
        let v = operand_arg(value, "__setitem__", "value")?;
        // a number too big for an int64 tensor: torch's error when it writes (after the index is read
        // and its basic part applied: their errors first)
        let fits = |v: &Tensor, items: &[IndexItem]| -> PyResult<()> {
            if v.is_wrapped_number() && self.t.dtype() == DType::I64 && !crate::tensor::dtype::fits_i64(v.item_f64().py()?) {
                ops::getitem(&self.t, &basic_part(items, true)).py()?;
                return Err(PyRuntimeError::new_err("value cannot be converted to type int64_t without overflow"));
            }
            Ok(())
        };
        // torch: x[True] = v writes all of x (as x[...] = v), x[False] = v writes nothing
        if let Ok(b) = index.cast::<PyBool>() {
            if !b.is_true() {
                return Ok(());
            }
            fits(&v, &[])?;
            return ops::setitem(&self.t, &[IndexItem::Ellipsis], &v).py();
        }
        let items = index_items(&self.t, index)?;
        fits(&v, &items)?;
        // torch drops the value's leading dims of size 1 (slicePrefix1sSize)
        let lead = v.shape().iter().take_while(|&&d| d == 1).count();
        let v = if lead > 0 && !v.is_wrapped_number() { ops::reshape(&v, &v.shape()[lead..].iter().map(|&d| d as i64).collect::<Vec<_>>()).py()? } else { v };
        ops::setitem(&self.t, &items, &v).py()
    }

    // ---- conversion -----------------------------------------------------------------------------

    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false))]
    fn to(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, non_blocking: bool, copy: bool) -> PyResult<Py<PyTensor>> {
        let _ = non_blocking;
        let py = slf.py();
        let this = slf.get();
        let mut dt = opt_dtype(dtype)?;
        let mut dev = parse_device(device)?;
        // torch's overloads: (Tensor other, ...), (dtype, ...), (device=None, dtype=None, ...); a
        // Python number is an `other` (its tensor's dtype: float64, bool), an int a device
        let invalid = || {
            let got: Vec<String> = args.iter().map(|a| type_name(&a)).collect();
            PyTypeError::new_err(format!(
                "to() received an invalid combination of arguments - got ({}), but expected one of:\n * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False)\n * (torch.dtype dtype, bool non_blocking = False, bool copy = False)\n * (Tensor other, bool non_blocking = False, bool copy = False)",
                got.join(", ")))
        };
        let mut rest = 1;
        if let Some(a) = args.iter().next() {
            if let Ok(o) = a.cast::<PyTensor>() {
                dt = Some(o.get().t.dtype());
                dev = Some(o.get().t.device());
            } else if let Ok(d) = to_dtype(&a) {
                dt = Some(d);
            } else if a.is_none() || a.is_instance_of::<pyo3::types::PyString>() || a.cast::<PyDevice>().is_ok() || (a.is_instance_of::<pyo3::types::PyInt>() && !a.is_instance_of::<PyBool>()) {
                if a.is_instance_of::<pyo3::types::PyInt>() {
                    Int::extract(a.as_borrowed())?.v()?; // beyond int64: torch's ValueError
                }
                dev = parse_device(Some(&a))?;
                if let Some(b) = args.iter().nth(1) {
                    if !b.is_none() {
                        dt = Some(to_dtype(&b).map_err(|_| invalid())?);
                    }
                    rest = 2;
                }
            } else {
                match as_scalar(&a) {
                    Some(s) => dt = Some(if matches!(s, Scalar::Float(_)) { DType::F64 } else { s.dtype() }),
                    None => return Err(invalid()),
                }
            }
        }
        // the remaining positional arguments are non_blocking and copy
        if args.len() > rest + 2 || args.iter().skip(rest).any(|a| !a.is_instance_of::<PyBool>()) {
            return Err(invalid());
        }
        let copy = copy || args.iter().nth(rest + 1).is_some_and(|c| c.is_truthy().unwrap_or(false));
        let mut out = this.t.clone();
        if let Some(d) = dev {
            if d != out.device() {
                out = ops::to_device(&out, d).py()?;
            }
        }
        out = match dt {
            Some(d) if d != out.dtype() => ops::to_dtype(&out, d).py()?,
            _ if copy && out.ptr_eq(&this.t) => ops::clone(&out).py()?,
            _ => out,
        };
        if out.ptr_eq(&this.t) {
            return Ok(slf.clone().unbind()); // nothing to do: torch returns self
        }
        wrap(py, out)
    }
    #[pyo3(signature = (dtype=None))]
    fn r#type(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match opt_dtype(dtype)? {
            None => Ok(format!("torch.{}", self.t.dtype().legacy_name()).into_pyobject(py)?.into_any().unbind()),
            Some(d) => t_obj(py, ops::to_dtype(&self.t, d).py()?),
        }
    }
    fn cpu(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        let t = &slf.get().t;
        if !t.is_cuda() {
            return Ok(slf.clone().unbind());
        }
        wrap(slf.py(), ops::to_device(t, crate::backend::Device::Cpu).py()?)
    }
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(slf: &Bound<'_, Self>, device: Option<&Bound<'_, PyAny>>, non_blocking: bool) -> PyResult<Py<PyTensor>> {
        let _ = non_blocking;
        let dev = match parse_device(device)? {
            None => crate::backend::Device::Cuda(0),
            Some(crate::backend::Device::Cpu) => return Err(PyRuntimeError::new_err("Invalid device, must be cuda device")),
            Some(d) => d,
        };
        crate::backend::cuda::require(0).py()?;
        let t = &slf.get().t;
        if t.device() == dev {
            return Ok(slf.clone().unbind());
        }
        wrap(slf.py(), ops::to_device(t, dev).py()?)
    }
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        scalar_obj(py, self.t.item().py()?)
    }
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        tolist(py, &self.t)
    }
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        let t = &slf.get().t;
        if t.requires_grad() && !force {
            return Err(PyRuntimeError::new_err("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."));
        }
        super::functions::to_numpy(slf)
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!("Boolean value of Tensor with {} values is ambiguous", if self.t.numel() == 0 { "no" } else { "more than one" })));
        }
        Ok(self.t.item_f64().py()? != 0.0)
    }
    fn __float__(&self) -> PyResult<f64> {
        if self.t.numel() != 1 {
            return Err(PyValueError::new_err("only one element tensors can be converted to Python scalars"));
        }
        self.t.item_f64().py()
    }
    fn __int__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.numel() != 1 {
            return Err(PyValueError::new_err("only one element tensors can be converted to Python scalars"));
        }
        Ok(match self.t.item().py()? {
            Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Scalar::Bool(b) => (b as i64).into_pyobject(py)?.into_any().unbind(),
            // Python's int(float): exact for large values, ValueError/OverflowError for nan/inf
            Scalar::Float(f) => py.import("builtins")?.getattr("int")?.call1((f,))?.unbind(),
        })
    }
    fn __index__(&self) -> PyResult<i64> {
        if self.t.numel() != 1 || self.t.dtype().is_float() {
            return Err(PyTypeError::new_err("only integer tensors of a single element can be converted to an index"));
        }
        match self.t.item().py()? {
            Scalar::Int(i) => Ok(i),
            Scalar::Bool(b) => Ok(b as i64),
            Scalar::Float(f) => Ok(f as i64),
        }
    }
    fn __len__(&self) -> PyResult<usize> {
        let s = self.t.shape();
        s.first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.t.ndim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let n = self.t.shape()[0];
        let parts = (0..n).map(|i| ops::select(&self.t, 0, i as i64)).collect::<crate::Result<Vec<_>>>().py()?;
        tuple_of(py, parts)?.try_iter().map(|i| i.into_any())
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        py_attr(py, &TENSOR_STR, "ferrograd._tensor_str", "tensor_repr")?.call1((slf,))?.extract()
    }
    /// torch's: a 0-d Tensor (not a subclass) formats its number; otherwise object.__format__ (the
    /// repr for an empty spec, a TypeError for any other).
    fn __format__(slf: &Bound<'_, Self>, spec: &str) -> PyResult<String> {
        let t = &slf.get().t;
        let py = slf.py();
        if t.ndim() == 0 && slf.get_type().is(&py.get_type::<PyTensor>()) {
            return scalar_obj(py, t.item().py()?)?.bind(py).call_method1("__format__", (spec,))?.extract();
        }
        if !spec.is_empty() {
            return Err(PyTypeError::new_err(format!("unsupported format string passed to {}.__format__", slf.get_type().name()?)));
        }
        Self::__repr__(slf)
    }

    // ---- attributes -----------------------------------------------------------------------------

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        size_obj(py, &self.t.shape())
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<Int>) -> PyResult<Bound<'py, PyAny>> {
        let dim = opt_v(dim)?;
        let s = self.t.shape();
        match dim {
            None => size_obj(py, &s),
            Some(d) => {
                no_dims(d, s.len())?;
                let d = crate::tensor::layout::wrap_dim(d, s.len()).py()?;
                Ok(s.get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any())
            }
        }
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<Int>) -> PyResult<Bound<'py, PyAny>> {
        let dim = opt_v(dim)?;
        let l = self.t.layout();
        match dim {
            None => Ok(PyTuple::new(py, l.strides.iter())?.into_any()),
            Some(d) => {
                no_dims(d, l.ndim())?;
                let d = crate::tensor::layout::wrap_dim(d, l.ndim()).py()?;
                Ok(l.strides.get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any())
            }
        }
    }
    fn storage_offset(&self) -> usize {
        self.t.layout().offset
    }
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    fn ndimension(&self) -> usize {
        self.t.ndim()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    fn numel(&self) -> usize {
        self.t.numel()
    }
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.dtype().size()
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    fn data_ptr(&self) -> usize {
        let d = self.t.data();
        d.storage.as_ptr() as usize + d.layout.offset * d.storage.dtype().size()
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        dtype_obj(py, self.t.dtype())
    }
    #[getter]
    fn device(&self) -> PyDevice {
        device_obj(self.t.device())
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        self.t.is_cuda()
    }
    #[getter]
    #[pyo3(name = "T")]
    fn t_prop(&self, py: Python<'_>) -> PyT {
        let nd = self.t.ndim() as i64;
        let rev: Vec<i64> = (0..nd).rev().collect();
        wrap(py, ops::permute(&self.t, &rev).py()?)
    }
    #[getter]
    #[pyo3(name = "mT")]
    fn mt(&self, py: Python<'_>) -> PyT {
        if self.t.ndim() < 2 {
            return Err(PyRuntimeError::new_err(format!("tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.", self.t.ndim())));
        }
        wrap(py, ops::transpose(&self.t, -2, -1).py()?)
    }
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }
    #[setter(requires_grad)]
    fn set_requires_grad(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let b = value.cast::<PyBool>().map_err(|_| PyTypeError::new_err("requires_grad must be a bool"))?.is_true();
        slf.get().t.set_requires_grad(b).py()?;
        if b {
            super::graph::register_leaf(slf)?;
        }
        Ok(())
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_<'py>(slf: &Bound<'py, Self>, requires_grad: bool) -> PyResult<Bound<'py, Self>> {
        slf.get().t.set_requires_grad(requires_grad).py()?;
        if requires_grad {
            super::graph::register_leaf(slf)?;
        }
        Ok(slf.clone())
    }
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        if !self.t.is_leaf() && !self.t.retains_grad() {
            let warn = py.get_type::<pyo3::exceptions::PyUserWarning>();
            PyErr::warn(py, &warn, c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.", 1)?;
        }
        let Some(g) = self.t.grad() else { return Ok(None) };
        // the lock is never held while Python code may run (a new object can start a GC)
        let cached = self.grad_obj.lock().map_err(|_| PyRuntimeError::new_err("grad cache poisoned"))?.as_ref().map(|w| w.clone_ref(py));
        if let Some(obj) = cached.and_then(|w| w.bind(py).upgrade()) {
            if let Ok(pt) = obj.cast_into::<PyTensor>() {
                if pt.get().t.ptr_eq(&g) {
                    return Ok(Some(pt.unbind()));
                }
            }
        }
        let obj = wrap(py, g)?;
        let weak = pyo3::types::PyWeakrefReference::new(obj.bind(py).as_any())?.unbind();
        *self.grad_obj.lock().map_err(|_| PyRuntimeError::new_err("grad cache poisoned"))? = Some(weak);
        Ok(Some(obj))
    }
    /// The tensor this one is a view of (None when it is not a view). A new Python handle of the
    /// base, not the object the view was taken from (the engine keeps no link back to it).
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        self.t.view_info().map(|(base, _)| wrap(py, base)).transpose()
    }
    fn _is_view(&self) -> bool {
        self.t.view_info().is_some()
    }
    #[setter(grad)]
    fn set_grad(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        match value {
            None => self.t.set_grad(None),
            Some(v) if v.is_none() => self.t.set_grad(None),
            Some(v) => {
                let g = tensor_arg(v, "grad", "value")?;
                if g.dtype() != self.t.dtype() {
                    return Err(PyRuntimeError::new_err("assigned grad has data of a different type"));
                }
                if g.shape() != self.t.shape() {
                    return Err(PyRuntimeError::new_err("assigned grad has data of a different size"));
                }
                self.t.set_grad(Some(g));
            }
        }
        Ok(())
    }
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if let Some(e) = self.t.stale_view_error() {
            return Err(super::to_py(e));
        }
        self.t.grad_fn().map(|n| super::graph::node_object(py, &n)).transpose()
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        self.t.is_leaf()
    }
    #[getter]
    fn output_nr(&self) -> u32 {
        self.t.output_nr()
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<super::autograd_function::PyHandle> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err("cannot register a hook on a tensor that doesn't require gradient"));
        }
        let id = self.t.register_hook(super::autograd_function::tensor_hook(hook)).py()?;
        Ok(super::autograd_function::PyHandle { tensor: Some(self.t.clone()), node: None, id })
    }
    fn register_post_accumulate_grad_hook(slf: &Bound<'_, Self>, hook: Py<PyAny>) -> PyResult<super::autograd_function::PyHandle> {
        let this = &slf.get().t;
        if !this.requires_grad() {
            return Err(PyRuntimeError::new_err("cannot register a hook on a tensor that doesn't require gradient"));
        }
        // the hook receives the very Python object it was registered on (held weakly)
        let weak = pyo3::types::PyWeakrefReference::new(slf)?.unbind();
        let f = std::sync::Arc::new(move |t: &Tensor| {
            Python::attach(|py| -> PyResult<()> {
                let obj = match weak.bind(py).upgrade() {
                    Some(o) => o,
                    None => wrap(py, t.clone())?.into_bound(py).into_any(),
                };
                hook.bind(py).call1((obj,))?;
                Ok(())
            })
            .map_err(super::autograd_function::py_error)
        });
        let id = this.register_post_accumulate_grad_hook(f).py()?;
        Ok(super::autograd_function::PyHandle { tensor: Some(this.clone()), node: None, id })
    }
    fn retain_grad(&self) -> PyResult<()> {
        self.t.retain_grad().py()
    }
    #[getter]
    fn data(&self, py: Python<'_>) -> PyT {
        wrap(py, self.t.alias_fresh_version())
    }
    #[setter(data)]
    fn set_data(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = tensor_arg(value, "data", "value")?;
        self.t.set_data(&v);
        Ok(())
    }
    fn detach(&self, py: Python<'_>) -> PyT {
        wrap(py, ops::detach(&self.t))
    }
    fn detach_<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        let t = &slf.get().t;
        if t.view_info().is_some() {
            return Err(PyRuntimeError::new_err("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."));
        }
        t.set_grad_fn(None, 0);
        t.set_requires_grad(false).py()?;
        Ok(slf.clone())
    }
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward<'py>(slf: &Bound<'py, Self>, gradient: Option<&Bound<'py, PyAny>>, #[pyo3(from_py_with = opt_flag)] retain_graph: Option<bool>, #[pyo3(from_py_with = flag)] create_graph: bool, inputs: Option<&Bound<'py, PyAny>>) -> PyResult<()> {
        let py = slf.py();
        let g = match gradient.filter(|g| !g.is_none()) {
            None => None,
            Some(g) => match g.cast::<PyTensor>() {
                Ok(g) => Some(g.get().t.clone()),
                Err(_) => None,
            },
        };
        if inputs.is_some_and(|i| !i.is_none()) || (gradient.is_some_and(|g| !g.is_none()) && g.is_none()) {
            // torch's argument handling (gradient sequences, inputs): torch.autograd.backward's
            let kw = [("retain_graph", retain_graph.into_pyobject(py)?.into_any()), ("create_graph", PyBool::new(py, create_graph).to_owned().into_any()), ("inputs", inputs.map_or_else(|| py.None().into_bound(py), |i| i.clone()))];
            let f = py.import("ferrograd.autograd")?.getattr("backward")?;
            f.call((slf, gradient), Some(&kw.into_py_dict(py)?))?;
            return Ok(());
        }
        run_backward(py, vec![slf.get().t.clone()], vec![g], retain_graph.unwrap_or(create_graph), create_graph, None, true, false)?;
        Ok(())
    }
}

/// size(d) / stride(d) of a 0-d tensor: torch's IndexError (these dims do not wrap as a 1-d tensor's).
fn no_dims(d: i64, ndim: usize) -> PyResult<()> {
    if ndim == 0 {
        return Err(PyIndexError::new_err(format!("Dimension specified as {} but tensor has no dimensions", d)));
    }
    Ok(())
}

impl PyTensor {
    /// max/min: over everything, along a dim (values, indices), or elementwise with a tensor;
    /// torch's overloads: (), (Tensor other), (int dim, bool keepdim=False).
    fn extreme<'py>(&self, py: Python<'py>, dim: Option<&Bound<'py, PyAny>>, keepdim: Option<bool>, is_max: bool) -> PyResult<Bound<'py, PyAny>> {
        let name = if is_max { "max" } else { "min" };
        match dim {
            None if keepdim.is_none() => Ok(wrap(py, ops::max_all(&self.t, is_max).py()?)?.into_bound(py).into_any()),
            Some(d) if d.is_none() => Err(PyTypeError::new_err(format!("{}() received an invalid combination of arguments - got (NoneType), but expected one of:\n * ()\n * (Tensor other)\n * (int dim, bool keepdim = False)", name))),
            Some(d) if d.cast::<PyTensor>().is_ok() && (keepdim.is_none() || parse_int(d).is_err()) => {
                if keepdim.is_some() {
                    return Err(PyTypeError::new_err(format!("{}(): argument 'dim' (position 1) must be int, not Tensor", name)));
                }
                let o = d.cast::<PyTensor>()?.get().t.clone();
                let r = if is_max { ops::maximum(&self.t, &o) } else { ops::minimum(&self.t, &o) };
                Ok(wrap(py, r.py()?)?.into_bound(py).into_any())
            }
            None => Err(PyTypeError::new_err(format!("{}() missing required argument 'dim'", name))),
            Some(d) => {
                let d = int_arg(d, "dim")?;
                let (v, i) = ops::max_dim(&self.t, d, keepdim.unwrap_or(false), is_max).py()?;
                return_type(py, if is_max { "max" } else { "min" }, wrap(py, v)?, wrap(py, i)?)
            }
        }
    }
}

/// Backward or autograd.grad with the GIL released for the whole pass.
#[allow(clippy::too_many_arguments)]
pub fn run_backward(
    py: Python<'_>,
    roots: Vec<Tensor>,
    grads: Vec<Option<Tensor>>,
    keep_graph: bool,
    create_graph: bool,
    inputs: Option<Vec<Tensor>>,
    accumulate: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<Tensor>>> {
    let grad_mode = autograd::is_grad_enabled();
    py.detach(move || {
        let _g = autograd::GradModeGuard::new(grad_mode);
        autograd::run_backward(BackwardRequest {
            roots: &roots,
            grads,
            keep_graph,
            create_graph,
            inputs: inputs.as_deref(),
            accumulate,
            allow_unused,
        })
    })
    .py()
}

/// The `autocast` column of an op-table row whose binding is written by hand (read only while
/// autocast is on).
fn row_autocast(name: &str) -> AutocastRule {
    ops::table::find(name).map(|e| e.autocast).unwrap_or(AutocastRule::NONE)
}

/// A row of torch's "float32 unless dtype= is given" lists (sum, prod, cumsum): its rule without
/// a dtype, none with one.
fn opt_dtype_rule(name: &str, dtype: Option<DType>) -> AutocastRule {
    if dtype.is_some() {
        AutocastRule::NONE
    } else {
        row_autocast(name)
    }
}

pub fn tensor_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.get().t.clone()]);
    }
    let mut v = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        v.push(tensor_arg(&item, "list", "tensors")?);
    }
    Ok(v)
}

fn tuple_of<'py>(py: Python<'py>, parts: Vec<Tensor>) -> PyResult<Bound<'py, PyTuple>> {
    let objs = parts.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, objs)
}

fn rsub_number(t: &Tensor, s: Scalar) -> crate::Result<Tensor> {
    let st = Tensor::wrap_scalar(s);
    ops::check_sub(&st, t)?;
    if t.dtype().is_float() || matches!(s, Scalar::Float(_)) {
        if !t.requires_grad() || !crate::autograd::is_grad_enabled() {
            return ops::sub(&st, t);
        }
        return ops::rsub_scalar(t, s.to_f64());
    }
    ops::sub(&st, t)
}

/// add_/sub_'s alpha as a float for the in-place fast path: 1.0 when absent, None when it is not
/// a float or an integer (the general path then decides).
fn float_alpha(alpha: Option<&Bound<'_, PyAny>>) -> Option<f64> {
    match alpha.map(|a| parse_number(a).ok()) {
        None => Some(1.0),
        Some(Some(Scalar::Float(v))) => Some(v),
        Some(Some(Scalar::Int(v))) => Some(v as f64),
        Some(_) => None,
    }
}

fn add_alpha(a: &Tensor, b: &Tensor, alpha: Option<&Bound<'_, PyAny>>, negate: bool) -> crate::Result<Tensor> {
    // alpha was checked by other_and_alpha
    let alpha = alpha.and_then(|a| parse_number(a).ok());
    if negate {
        ops::check_sub(a, b)?;
    }
    match (alpha, negate) {
        (None, false) => ops::add(a, b),
        (None, true) => ops::sub(a, b),
        (Some(s), neg) if a.dtype().is_float() && b.dtype().is_float() && matches!(s, Scalar::Float(_) | Scalar::Int(_)) => {
            let v = match s {
                Scalar::Float(v) => v,
                Scalar::Int(v) => v as f64,
                _ => 1.0,
            };
            ops::add_alpha(a, b, if neg { -v } else { v })
        }
        (Some(s), neg) => {
            // alpha · other in the result's dtype (an int other of a float sum is not scaled as an int)
            let dt = ops::promote_types(&[a, b]);
            let b = if b.dtype() != dt { ops::to_dtype(b, dt)? } else { b.clone() };
            let s = if dt == DType::Bool { Scalar::Bool(s.to_f64() != 0.0) } else { s };
            let scaled = ops::mul(&b, &Tensor::wrap_scalar(s))?;
            if neg {
                ops::sub(a, &scaled)
            } else {
                ops::add(a, &scaled)
            }
        }
    }
}

/// clamp's overloads: (Tensor? min, Tensor? max), else (Number? min, Number? max) (a 0-d tensor
/// that does not require grad is a Number, so clamp(t, 1) takes it).
fn clamp_any(t: &Tensor, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
    let min = min.filter(|m| !m.is_none());
    let max = max.filter(|m| !m.is_none());
    let given: Vec<&Bound<'_, PyAny>> = [min, max].into_iter().flatten().collect();
    if !given.is_empty() && given.iter().all(|o| o.cast::<PyTensor>().is_ok()) {
        let lo = min.map(|m| m.cast::<PyTensor>().map(|m| m.get().t.clone())).transpose()?;
        let hi = max.map(|m| m.cast::<PyTensor>().map(|m| m.get().t.clone())).transpose()?;
        return ops::clamp_tensor(t, lo.as_ref(), hi.as_ref()).py();
    }
    let num = |o: Option<&Bound<'_, PyAny>>| -> Result<Option<Scalar>, ArgErr> { o.map(parse_number).transpose() };
    match (num(min), num(max)) {
        (Ok(lo), Ok(hi)) => {
            let bounds: Vec<Tensor> = lo.iter().chain(hi.iter()).map(|&s| Tensor::wrap_scalar(s)).collect();
            let mut all: Vec<&Tensor> = vec![t];
            all.extend(bounds.iter());
            if ops::promote_types(&all) == DType::Bool && !bounds.is_empty() {
                let k = match (lo, hi) {
                    (Some(_), Some(_)) => "clamp_scalar_cpu",
                    (Some(_), None) => "clamp_min_scalar_cpu",
                    _ => "clamp_max_scalar_cpu",
                };
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!("\"{}\" not implemented for 'Bool'", k)));
            }
            ops::clamp(t, lo.map(Scalar::to_f64), hi.map(Scalar::to_f64)).py()
        }
        // a wrong type anywhere is reported before an int too big for a scalar (torch's parser)
        (Ok(_) | Err(ArgErr::NumberOverflow), Ok(_) | Err(ArgErr::NumberOverflow)) => Err(ArgErr::NumberOverflow.into_py("Number", None)),
        _ => {
            let got: Vec<String> = given.iter().map(|o| type_name(o)).collect();
            Err(PyTypeError::new_err(format!(
                "clamp() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor min = None, Tensor max = None)\n * (Number min = None, Number max = None)",
                got.join(", "))))
        }
    }
}

/// add/sub's other and alpha, as torch's parser takes them: both types, then the values (an int too
/// big for a scalar), then alpha's checks (bool only for a bool result, float only for a floating one).
fn other_and_alpha(a: &Tensor, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>, fname: &str) -> PyResult<Tensor> {
    let o = operand_arg(other, fname, "other");
    let type_err = |e: &PyErr| Python::attach(|py| e.is_instance_of::<PyTypeError>(py));
    if let Some(alpha) = alpha {
        let s = parse_number(alpha);
        if let Err(e) = s {
            let oe = o.as_ref().err();
            if !matches!(e, ArgErr::NumberOverflow) && !oe.is_some_and(type_err) {
                return Err(e.into_py("Number", Some((fname, "alpha", 0))));
            }
        }
    }
    let o = o?;
    alpha_arg(a, &o, alpha, fname)?;
    Ok(o)
}

fn alpha_arg(a: &Tensor, b: &Tensor, alpha: Option<&Bound<'_, PyAny>>, fname: &str) -> PyResult<()> {
    let Some(alpha) = alpha else { return Ok(()) };
    let s = number_arg(alpha, fname, "alpha", 0)?;
    let dt = ops::promote_types(&[a, b]);
    match s {
        Scalar::Bool(_) if dt != DType::Bool => Err(PyRuntimeError::new_err("Boolean alpha only supported for Boolean results.")),
        Scalar::Float(_) if !dt.is_float() => Err(PyRuntimeError::new_err("For integral input tensors, argument alpha must not be a floating point number.")),
        _ => Ok(()),
    }
}

fn var_args(dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, correction: Option<f64>) -> PyResult<(Option<Vec<i64>>, f64)> {
    // x.var(False) passes `unbiased` positionally
    if let Some(d) = dim {
        if let Ok(b) = d.cast::<PyBool>() {
            return Ok((None, if b.is_true() { 1.0 } else { 0.0 }));
        }
    }
    let d = dims_arg(dim)?;
    let c = match (correction, unbiased) {
        (Some(c), _) => c,
        (None, Some(u)) => {
            if u {
                1.0
            } else {
                0.0
            }
        }
        (None, None) => 1.0,
    };
    Ok((d, c))
}

/// norm's p: a Number (2 when None), or 'fro' (2).
fn norm_p(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match p {
        None => Ok(2.0),
        Some(p) if p.is_none() => Ok(2.0),
        Some(p) => {
            if let Ok(s) = p.extract::<String>() {
                return match s.as_str() {
                    "fro" => Ok(2.0),
                    _ => Err(PyRuntimeError::new_err(format!("linalg.matrix_norm: Order {} not supported.", s))),
                };
            }
            Ok(number_arg(p, "linalg_vector_norm", "ord", 2)?.to_f64())
        }
    }
}

pub fn scalar_obj(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

fn tolist(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    let shape = t.shape();
    let flat: Vec<Scalar> = crate::with_dtype!(t.dtype(), T => {
        t.to_vec::<T>().py()?.into_iter().map(|v| {
            use crate::tensor::Element;
            match T::DTYPE {
                DType::Bool => Scalar::Bool(v.to_bool()),
                d if d.is_int() => Scalar::Int(v.to_i64()),
                _ => Scalar::Float(v.to_f64()),
            }
        }).collect()
    });
    // nested lists made at their length and filled in place (no list of items per level)
    fn build(py: Python<'_>, shape: &[usize], flat: &[Scalar], pos: &mut usize) -> PyResult<Py<PyAny>> {
        if shape.is_empty() {
            let s = flat[*pos];
            *pos += 1;
            return scalar_obj(py, s);
        }
        let list = unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyList_New(shape[0] as pyo3::ffi::Py_ssize_t))? };
        for i in 0..shape[0] {
            let item = build(py, &shape[1..], flat, pos)?;
            // (PyList_SetItem steals the reference, and cannot fail at an index in range)
            unsafe { pyo3::ffi::PyList_SetItem(list.as_ptr(), i as pyo3::ffi::Py_ssize_t, item.into_ptr()) };
        }
        Ok(list.unbind())
    }
    let mut pos = 0;
    build(py, &shape, &flat, &mut pos)
}

/// Python index → engine index items, as torch reads an index: an int alone is converted at once
/// (beyond int64: ValueError); a tuple, or a short list that holds a tensor, a sequence, a slice,
/// None or `...` (NumPy's legacy rule), is a tuple of indices, whose count is checked against the
/// tensor's dims before any is converted; a `...` after the first is ignored.
fn index_items(x: &Tensor, index: &Bound<'_, PyAny>) -> PyResult<Vec<IndexItem>> {
    let ndim = x.ndim();
    if index.is_instance_of::<pyo3::types::PyInt>() && !index.is_instance_of::<PyBool>() {
        return Ok(vec![IndexItem::Int(Int::extract(index.as_borrowed())?.v()?)]);
    }
    let parts: Vec<Bound<'_, PyAny>> = if treat_as_tuple(index)? { index.try_iter()?.collect::<PyResult<_>>()? } else { vec![index.clone()] };
    let specified: usize = parts.iter().map(|p| match p.cast::<PyTensor>() {
        Ok(t) if t.get().t.dtype() == DType::Bool => t.get().t.ndim(),
        Ok(_) => 1,
        Err(_) if p.is_none() || p.is_instance_of::<PyEllipsis>() || p.is_instance_of::<PyBool>() => 0,
        Err(_) => 1,
    }).sum();
    if specified > ndim {
        return Err(PyIndexError::new_err(format!("too many indices for tensor of dimension {}", ndim)));
    }
    let mut items = Vec::with_capacity(parts.len());
    let mut ellipsis = false;
    for p in &parts {
        if p.is_instance_of::<PyEllipsis>() && std::mem::replace(&mut ellipsis, true) {
            continue;
        }
        match index_item(p) {
            Ok(i) => items.push(i),
            Err(e) => {
                // torch applies the basic indices before it converts the next one: their errors first
                ops::getitem(x, &basic_part(&items, false)).py()?;
                return Err(e);
            }
        }
    }
    Ok(items)
}

/// What torch applies of an index before it converts the rest: ints, slices, None and `...` (and,
/// when `masks`, bool masks, whose shapes setitem checks before it converts the value); each other
/// tensor index a full slice over the dims it indexes.
fn basic_part(items: &[IndexItem], masks: bool) -> Vec<IndexItem> {
    items.iter().flat_map(|i| match i {
        IndexItem::Tensor(t) if t.dtype() == DType::Bool && masks => vec![i.clone()],
        IndexItem::Tensor(t) => vec![IndexItem::Slice(None, None, 1); if t.dtype() == DType::Bool { t.ndim() } else { 1 }],
        i => vec![i.clone()],
    }).collect()
}

/// Python's sequences as torch's indexing sees them (not tensors, not dicts).
fn is_sequence(o: &Bound<'_, PyAny>) -> bool {
    o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>() || o.is_instance_of::<pyo3::types::PyString>()
        || o.is_instance_of::<pyo3::types::PyRange>() || o.cast::<numpy::PyUntypedArray>().is_ok_and(|a| numpy::PyUntypedArrayMethods::ndim(a) > 0)
}

fn treat_as_tuple(index: &Bound<'_, PyAny>) -> PyResult<bool> {
    if index.is_instance_of::<PyTuple>() {
        return Ok(true);
    }
    if index.cast::<PyTensor>().is_ok() || !is_sequence(index) || index.len()? >= 32 {
        return Ok(false);
    }
    for o in index.try_iter()? {
        let o = o?;
        if o.cast::<PyTensor>().is_ok() || is_sequence(&o) || o.is_instance_of::<PySlice>() || o.is_none() || o.is_instance_of::<PyEllipsis>() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn slice_part(o: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if o.is_none() {
        return Ok(None);
    }
    Ok(Some(int_arg(o, "slice indices")?))
}

fn index_item(i: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
    if i.is_none() {
        return Ok(IndexItem::NewAxis);
    }
    if i.is_instance_of::<PyEllipsis>() {
        return Ok(IndexItem::Ellipsis);
    }
    if let Ok(s) = i.cast::<PySlice>() {
        let start = slice_part(&s.getattr("start")?)?;
        let stop = slice_part(&s.getattr("stop")?)?;
        let step = slice_part(&s.getattr("step")?)?.unwrap_or(1);
        return Ok(IndexItem::Slice(start, stop, step));
    }
    if let Ok(t) = i.cast::<PyTensor>() {
        let t = &t.get().t;
        // a 0-d integer tensor indexes as an int (a 0-d uint8 one is a mask, as torch)
        if t.ndim() == 0 && t.dtype().is_int() && t.dtype() != DType::U8 {
            return Ok(IndexItem::Int(t.item_f64().py()? as i64));
        }
        return Ok(IndexItem::Tensor(t.clone()));
    }
    if let Ok(b) = i.cast::<PyBool>() {
        return Ok(IndexItem::Tensor(Tensor::scalar(b.is_true()))); // as a 0-d mask, as torch
    }
    if is_sequence(i) {
        // torch's indexing_tensor_from_data: a bool tensor, or an int64 one (floats truncated)
        let t = py_attr(i.py(), &INDEX_TENSOR, "ferrograd._creation", "_index_tensor")?.call1((i,))?;
        return Ok(IndexItem::Tensor(t.cast::<PyTensor>()?.get().t.clone()));
    }
    if let Some(Scalar::Int(v)) = as_scalar(i) {
        return Ok(IndexItem::Int(v));
    }
    if i.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(IndexItem::Int(Int::extract(i.as_borrowed())?.v()?)); // beyond int64: ValueError
    }
    Err(PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
        i.get_type().name()?
    )))
}
