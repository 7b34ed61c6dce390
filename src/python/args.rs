//! Argument conversion: tensors and Python numbers as operands, dims, shapes, dtypes, devices.

use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::tensor::{DType, MemoryFormat, Scalar, Tensor};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use crate::backend::Device;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyTuple};

/// `ferrograd.float32` and friends.
#[pyclass(name = "dtype", module = "ferrograd", frozen, eq, hash, skip_from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub dt: DType,
}

#[pymethods]
impl PyDType {
    /// torch's spelling (`torch.float32`): scripts print and compare it, and a program written for
    /// torch must print the same lines.
    fn __repr__(&self) -> String {
        format!("torch.{}", self.dt.name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dt.is_float()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.dt.size()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.dt.is_signed()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        false
    }
    /// Pickled by name: `ferrograd.<name>` (the one object of the dtype).
    fn __reduce__(&self) -> String {
        self.dt.name().to_string()
    }
}

static DTYPES: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

/// The one `ferrograd.<dtype>` object of a dtype.
pub fn dtype_obj(py: Python<'_>, dt: DType) -> PyResult<Py<PyDType>> {
    let all = DTYPES.get_or_try_init(py, || -> PyResult<Vec<Py<PyDType>>> { DType::ALL.iter().map(|&dt| Py::new(py, PyDType { dt })).collect() })?;
    let i = DType::ALL.iter().position(|&d| d == dt).unwrap_or(0);
    Ok(all[i].clone_ref(py))
}

/// A dtype argument: a ferrograd dtype, or the Python types float/int/bool (as torch accepts).
pub fn to_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().dt);
    }
    let py = obj.py();
    if obj.is(&py.get_type::<PyFloat>()) {
        return Ok(DType::F64);
    }
    if obj.is(&py.get_type::<PyBool>()) {
        return Ok(DType::Bool);
    }
    if obj.is(&py.get_type::<PyInt>()) {
        return Ok(DType::I64);
    }
    // torch's dtype objects, for interop (not strings: torch rejects those too)
    let tname = obj.get_type().name()?.to_string();
    let name: String = obj.str()?.extract()?;
    let short = name.rsplit('.').next().unwrap_or(&name).to_string();
    if tname == "dtype" {
        if let Some(dt) = DType::from_name(&short) {
            return Ok(dt);
        }
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be ferrograd.dtype (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8 or bool), not {}",
        tname
    )))
}

pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => to_dtype(o).map(Some),
    }
}

/// `ferrograd.preserve_format` and the other memory formats (one object each, made by the module).
#[pyclass(name = "memory_format", module = "ferrograd", frozen, eq, hash, skip_from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyMemoryFormat {
    pub format: MemoryFormat,
}

#[pymethods]
impl PyMemoryFormat {
    fn __repr__(&self) -> String {
        format!("torch.{}", self.format.name())
    }
    /// Pickled by name: `ferrograd.<name>`.
    fn __reduce__(&self) -> String {
        self.format.name().to_string()
    }
}

/// A `memory_format=` argument: a memory format, or None (preserve_format, as torch's).
pub fn memory_format_arg(obj: Option<&Bound<'_, PyAny>>, fname: &str) -> PyResult<MemoryFormat> {
    match obj {
        None => Ok(MemoryFormat::Preserve),
        Some(o) if o.is_none() => Ok(MemoryFormat::Preserve),
        Some(o) => match o.cast::<PyMemoryFormat>() {
            Ok(f) => Ok(f.get().format),
            Err(_) => Err(ArgErr::Type(type_name(o)).into_py("torch.memory_format", Some((fname, "memory_format", 0)))),
        },
    }
}

/// `opt_dtype` with torch's TypeError naming the function.
pub fn dtype_arg(obj: Option<&Bound<'_, PyAny>>, fname: &str) -> PyResult<Option<DType>> {
    opt_dtype(obj).map_err(|_| obj.map_or_else(|| PyTypeError::new_err("dtype"), |o| ArgErr::Type(type_name(o)).into_py("torch.dtype", Some((fname, "dtype", 0)))))
}

/// `ferrograd.device`: "cpu" or "cuda[:index]".
#[pyclass(name = "device", module = "ferrograd", frozen, skip_from_py_object)]
#[derive(Clone)]
pub struct PyDevice {
    #[pyo3(get, name = "type")]
    pub kind: String,
    #[pyo3(get)]
    pub index: Option<i64>,
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (kind, index=None))]
    fn new(kind: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<PyDevice> {
        if let Ok(d) = kind.cast::<PyDevice>() {
            return Ok(d.get().clone());
        }
        let s: String = kind.extract()?;
        let (k, i) = match s.split_once(':') {
            Some((k, i)) => (k.to_string(), Some(i.parse::<i64>().map_err(|_| PyRuntimeError::new_err(format!("Invalid device string: '{}'", s)))?)),
            None => (s.clone(), index),
        };
        match k.as_str() {
            "cpu" | "cuda" => Ok(PyDevice { kind: k, index: i }),
            _ => Err(PyRuntimeError::new_err(format!(
                "Expected one of cpu, cuda device type at start of device string: {}",
                s
            ))),
        }
    }
    fn __str__(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{}", self.kind, i),
            None => self.kind.clone(),
        }
    }
    fn __repr__(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={})", self.kind, i),
            None => format!("device(type='{}')", self.kind),
        }
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(d) = other.cast::<PyDevice>() {
            let d = d.get();
            return d.kind == self.kind && d.index == self.index;
        }
        if let Ok(s) = other.extract::<String>() {
            return s == self.__str__();
        }
        false
    }
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.__str__().hash(&mut h);
        h.finish()
    }
}

/// A `device=` argument: None, a device, a string ("cpu", "cuda", "cuda:0") or an int (a CUDA
/// ordinal). CUDA devices are checked to exist (torch's error when there is no GPU).
pub fn parse_device(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Device>> {
    let Some(o) = obj else { return Ok(None) };
    if o.is_none() {
        return Ok(None);
    }
    let (kind, index) = if let Ok(d) = o.cast::<PyDevice>() {
        let d = d.get();
        (d.kind.clone(), d.index)
    } else if let Ok(i) = o.extract::<i64>() {
        ("cuda".to_string(), Some(i))
    } else if let Ok(s) = o.extract::<String>() {
        match s.split_once(':') {
            Some((k, i)) => (k.to_string(), Some(i.parse::<i64>().map_err(|_| PyRuntimeError::new_err(format!("Invalid device string: '{}'", s)))?)),
            None => (s.clone(), None),
        }
    } else {
        return Err(PyTypeError::new_err(format!("expected a device (str, int or torch.device), got {}", o.get_type().name()?)));
    };
    match kind.as_str() {
        "cpu" => Ok(Some(Device::Cpu)),
        "cuda" => {
            let i = index.unwrap_or(0);
            if i < 0 {
                return Err(PyRuntimeError::new_err(format!("Device index must not be negative, got {i}")));
            }
            crate::backend::cuda::require(i as usize).py()?;
            Ok(Some(Device::Cuda(i as u8)))
        }
        _ => Err(PyRuntimeError::new_err(format!("Expected one of cpu, cuda device type at start of device string: {}", kind))),
    }
}

/// The Python device object of an engine device.
pub fn device_obj(d: Device) -> PyDevice {
    match d {
        Device::Cpu => PyDevice { kind: "cpu".into(), index: None },
        Device::Cuda(i) => PyDevice { kind: "cuda".into(), index: Some(i as i64) },
    }
}

/// A Python number as an engine scalar, if it is one.
#[inline]
pub fn as_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Some(Scalar::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Some(Scalar::Float(f.value()));
    }
    // NumPy scalars and other numbers
    let ty = obj.get_type();
    let name = ty.name().ok()?;
    let name = name.to_str().ok()?;
    if name.starts_with("float") {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    if name.starts_with("int") || name.starts_with("uint") {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if name == "bool_" {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    None
}

/// A tensor or a Python number (wrapped), or None.
#[inline]
pub fn operand(obj: &Bound<'_, PyAny>) -> Option<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Some(t.get().t.clone());
    }
    as_scalar(obj).or_else(|| unsigned_scalar(obj)).map(Tensor::wrap_scalar)
}

/// An int in (int64 max, uint64 max]: torch takes it as a scalar (here, a float one).
#[cold]
fn unsigned_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<u64>().ok().map(|v| Scalar::Float(v as f64));
    }
    None
}

/// An operand of an in-place operator (`x += other`): a tensor or a number; anything else fails to
/// extract, and pyo3 answers NotImplemented.
pub struct Operand(pub Tensor);

impl<'a, 'py> FromPyObject<'a, 'py> for Operand {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        operand(&obj).map(Operand).ok_or_else(|| PyTypeError::new_err("not a tensor or a number"))
    }
}

/// Like `operand`, with torch's TypeError naming the argument (an int beyond what a scalar holds:
/// OverflowError, as torch's).
pub fn operand_arg(obj: &Bound<'_, PyAny>, fname: &str, arg: &str) -> PyResult<Tensor> {
    if let Some(t) = operand(obj) {
        return Ok(t);
    }
    match parse_number(obj) {
        Ok(s) => Ok(Tensor::wrap_scalar(s)),
        Err(ArgErr::Type(_)) => Err(PyTypeError::new_err(format!("{}(): argument '{}' must be Tensor or Number, not {}", fname, arg, type_name(obj)))),
        Err(e) => Err(e.into_py("Number", Some((fname, arg, 0)))),
    }
}

/// What a binary operator returns for an operand that is neither a tensor nor a number: torch's
/// OverflowError for an int too big for a scalar, else NotImplemented (Python's TypeError).
pub fn not_operand(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    match parse_number(obj) {
        Err(ArgErr::NumberOverflow) => Err(ArgErr::NumberOverflow.into_py("Number", None)),
        _ => Ok(py.NotImplemented()),
    }
}

pub fn tensor_arg(obj: &Bound<'_, PyAny>, fname: &str, arg: &str) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.get().t.clone());
    }
    Err(PyTypeError::new_err(format!("{}(): argument '{}' must be Tensor, not {}", fname, arg, type_name(obj))))
}

// ---- torch's argument types --------------------------------------------------------------------
//
// Note [argument parsing]
// torch's C++ argument parser decides which Python values an argument of each declared type
// takes; ferrograd follows it here, in one place, for the bindings (the `Int` extractor and the
// helpers below) and for the Python package (`_C._parse_arg`, through `_argcheck.parse_args`):
//  * int: a Python int (a bool is refused), a NumPy integer, a 0-d integer tensor; beyond int64,
//    ValueError("Overflow when unpacking long long");
//  * tuple of ints: a tuple or list (torch.Size is one) whose first element is an int as above or
//    a one-element integer tensor, the others converted with __index__ (so a bool after the first
//    counts as 0 or 1, as in torch); `int[N]` (a dim list) also takes a single int;
//  * float: a real Python or NumPy number (bool included) or a 0-d tensor that does not require grad;
//  * Number: the same as a scalar of its own type (ints beyond int64: OverflowError);
//  * bool: True or False only; Tensor: a tensor only; None only where the argument is optional.
// As torch's parser, a call checks every argument's type before it converts any value: a wrong
// type in a later argument is reported before an int too big in an earlier one (`Int` defers its
// ValueError to `.v()`, `numbers` orders several Numbers).

/// Why a value is not an argument of a type (made into torch's exception by `ArgErr::into_py`).
pub enum ArgErr {
    /// TypeError: "must be {expected}, not {type}"
    Type(String),
    /// TypeError: an element of a tuple of ints that is not one
    Element(String, usize),
    /// TypeError: an element that failed to convert (its error)
    Unpack(usize, String),
    /// ValueError: an int beyond int64
    Overflow,
    /// OverflowError: a Number beyond what a scalar holds
    NumberOverflow,
    /// any other error, raised as it is
    Py(PyErr),
}

impl From<PyErr> for ArgErr {
    fn from(e: PyErr) -> Self {
        ArgErr::Py(e)
    }
}

impl ArgErr {
    /// torch's exception, naming the function and argument where known.
    pub fn into_py(self, expected: &str, ctx: Option<(&str, &str, usize)>) -> PyErr {
        let at = |with_pos: bool| match ctx {
            None => "argument".to_string(),
            Some(("", a, _)) => format!("argument '{}'", a),
            Some((f, a, p)) if p == 0 || !with_pos => format!("{}(): argument '{}'", f, a),
            Some((f, a, p)) => format!("{}(): argument '{}' (position {})", f, a, p),
        };
        match self {
            ArgErr::Type(tn) => PyTypeError::new_err(format!("{} must be {}, not {}", at(true), expected, tn)),
            ArgErr::Element(tn, i) => PyTypeError::new_err(format!("{} must be {}, but found element of type {} at pos {}", at(true), expected, tn, i)),
            // (torch names no position here)
            ArgErr::Unpack(i, e) => PyTypeError::new_err(format!("{} failed to unpack the object at pos {} with error \"{}\"", at(false), i + 1, e)),
            ArgErr::Overflow => PyValueError::new_err("Overflow when unpacking long long"),
            ArgErr::NumberOverflow => PyOverflowError::new_err("int too big to convert"),
            ArgErr::Py(e) => e,
        }
    }
}

/// A type's name as torch's messages spell it (`int`, `NoneType`, `Tensor`, `numpy.ndarray`).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    if obj.cast::<PyTensor>().is_ok() {
        return "Tensor".into();
    }
    let ty = obj.get_type();
    let name = ty.name().map(|n| n.to_string()).unwrap_or_default();
    match ty.module().map(|m| m.to_string()).as_deref() {
        Ok("numpy") => format!("numpy.{}", name),
        Ok(m) if m.starts_with("ferrograd") => format!("ferrograd.{}", name),
        _ => name,
    }
}

/// A NumPy scalar of the given kind ('i': integer, 'f': floating, 'b': bool), without importing NumPy.
fn numpy_scalar(obj: &Bound<'_, PyAny>, kind: char) -> bool {
    let ty = obj.get_type();
    if !ty.module().is_ok_and(|m| m.to_str().is_ok_and(|m| m == "numpy")) {
        return false;
    }
    let name = ty.name().map(|n| n.to_string()).unwrap_or_default();
    match kind {
        'i' => name.starts_with("int") || name.starts_with("uint") || name == "longlong" || name == "ulonglong",
        'f' => name.starts_with("float") || name == "double" || name == "longdouble",
        _ => name == "bool" || name == "bool_",
    }
}

fn integral(dt: DType) -> bool {
    !dt.is_float() && dt != DType::Bool
}

/// A Python int (exact value) as i64: Err(Overflow) beyond its range.
fn py_long(obj: &Bound<'_, PyAny>) -> Result<i64, ArgErr> {
    obj.extract::<i64>().map_err(|e| if e.is_instance_of::<PyOverflowError>(obj.py()) { ArgErr::Overflow } else { ArgErr::Py(e) })
}

/// torch's `int`.
pub fn parse_int(obj: &Bound<'_, PyAny>) -> Result<i64, ArgErr> {
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return py_long(obj);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.ndim() == 0 && integral(t.dtype()) && !t.requires_grad() {
            return Ok(t.item().py()?.to_i64());
        }
    } else if numpy_scalar(obj, 'i') {
        return py_long(&obj.call_method0("__index__")?);
    }
    Err(ArgErr::Type(type_name(obj)))
}

/// torch's test of the first element of a tuple of ints (and of a single int for `int[N]`).
fn int_like(obj: &Bound<'_, PyAny>) -> bool {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        return t.numel() == 1 && !t.dtype().is_float();
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
        return false;
    }
    obj.is_instance_of::<PyInt>() || obj.hasattr("__index__").unwrap_or(false)
}

/// One element of a tuple of ints: an int or anything with __index__ (a bool is 0 or 1).
fn unpack_index(obj: &Bound<'_, PyAny>, pos: usize) -> Result<i64, ArgErr> {
    let unpack = |e: String| ArgErr::Unpack(pos, e);
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.numel() != 1 || t.dtype().is_float() {
            return Err(unpack("type must be tuple of ints,but got Tensor".into()));
        }
        if t.dtype() == DType::Bool {
            return Err(ArgErr::Py(PyRuntimeError::new_err("Expected scalar.isIntegral( false) to be true, but got false.")));
        }
        return Ok(t.item().py()?.to_i64());
    }
    let idx = if obj.is_instance_of::<PyInt>() {
        obj.clone()
    } else {
        match obj.call_method0("__index__") {
            Ok(i) => i,
            Err(_) => return Err(unpack(format!("type must be tuple of ints,but got {}", type_name(obj)))),
        }
    };
    idx.extract::<i64>().map_err(|_| unpack("Overflow when unpacking long long".into()))
}

/// torch's `int[N]` (N > 0: a single int is repeated N times) or `int[]` (N = 0).
pub fn parse_int_list(obj: &Bound<'_, PyAny>, n: usize) -> Result<Vec<i64>, ArgErr> {
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        let items: Vec<Bound<'_, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
        if let Some(first) = items.first() {
            if !int_like(first) {
                return Err(ArgErr::Element(type_name(first), 0));
            }
        }
        return items.iter().enumerate().map(|(i, o)| unpack_index(o, i)).collect();
    }
    if n > 0 && int_like(obj) {
        let v = if obj.is_instance_of::<PyInt>() { py_long(obj)? } else { unpack_index(obj, 1)? };
        return Ok(vec![v; n]);
    }
    Err(ArgErr::Type(type_name(obj)))
}

/// torch's `float`.
pub fn parse_float(obj: &Bound<'_, PyAny>) -> Result<f64, ArgErr> {
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(f.value());
    }
    if obj.is_instance_of::<PyInt>() || numpy_scalar(obj, 'f') || numpy_scalar(obj, 'i') || numpy_scalar(obj, 'b') {
        return Ok(obj.extract::<f64>()?);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.ndim() == 0 && !t.requires_grad() {
            return Ok(t.item().py()?.to_f64());
        }
    }
    Err(ArgErr::Type(type_name(obj)))
}

/// torch's `Number` (a Scalar): bool, int, float, their NumPy kinds, a 0-d tensor that does not
/// require grad. Ints up to 2**64 - 1 are taken, those beyond int64 as floats.
pub fn parse_number(obj: &Bound<'_, PyAny>) -> Result<Scalar, ArgErr> {
    if let Some(s) = as_scalar(obj).or_else(|| unsigned_scalar(obj)) {
        return Ok(s);
    }
    if obj.is_instance_of::<PyInt>() {
        return Err(ArgErr::NumberOverflow);
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.ndim() == 0 && !t.requires_grad() {
            return Ok(t.item().py()?);
        }
    }
    Err(ArgErr::Type(type_name(obj)))
}

// Extractors for binding signatures (`#[pyo3(from_py_with = flag)] create_graph: bool`, `dim: Int`):
// pyo3 names the argument in a note of the error ("while processing 'dim'").

/// torch's `int` as a binding argument: its type is checked when pyo3 extracts the arguments, its
/// value converted when the body asks (`.v()?`), so that, as in torch, a wrong type in any argument
/// is reported before an int beyond int64 (ValueError) in an earlier one.
#[derive(Clone, Copy)]
pub struct Int(Result<i64, ()>);

impl Int {
    pub const fn of(v: i64) -> Int {
        Int(Ok(v))
    }
    pub fn v(self) -> PyResult<i64> {
        self.0.map_err(|_| ArgErr::Overflow.into_py("int", None))
    }
    fn parse(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
        match parse_int(obj) {
            Ok(v) => Ok(Int(Ok(v))),
            Err(ArgErr::Overflow) => Ok(Int(Err(()))),
            Err(e) => Err(e.into_py("int", None)),
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Int::parse(&obj)
    }
}

/// An Int that may be left out (torch's overloads with and without it) but is never None.
pub fn given_int(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    Int::parse(obj).map(Some)
}

/// The values of optional Ints.
pub fn opt_v(i: Option<Int>) -> PyResult<Option<i64>> {
    i.map(Int::v).transpose()
}

/// torch's `bool` that may be left out but is never None.
pub fn given_bool(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    obj.cast::<PyBool>().map(|b| Some(b.is_true())).map_err(|_| PyTypeError::new_err(format!("argument must be bool, not {}", type_name(obj))))
}

/// torch's `bool?` that means false when None (requires_grad of the creation functions).
pub fn bool_or_none(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.is_none() {
        return Ok(false);
    }
    obj.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| PyTypeError::new_err(format!("argument must be bool, not {}", type_name(obj))))
}

/// A flag that torch's autograd takes as any integer (retain_graph=1).
pub fn flag(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(b.is_true());
    }
    Ok(obj.call_method0("__index__").map_err(|_| PyTypeError::new_err(format!("'{}' object cannot be interpreted as an integer", type_name(obj))))?.extract::<i128>().unwrap_or(1) != 0)
}

/// `flag`, or None.
pub fn opt_flag(obj: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
    if obj.is_none() {
        return Ok(None);
    }
    flag(obj).map(Some)
}

/// An int argument, named in the error (`what`: "dim", "size", ...).
pub fn int_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    parse_int(obj).map_err(|e| e.into_py("int", Some(("", what, 0))))
}

/// A dim argument: int, tuple/list of ints, or None (torch's `int[1]? dim`).
pub fn dims_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    let Some(o) = obj else { return Ok(None) };
    if o.is_none() {
        return Ok(None);
    }
    parse_int_list(o, 1).map(Some).map_err(|e| e.into_py("tuple of ints", Some(("", "dim", 0))))
}

/// A shape given as varargs (`zeros(2, 3)`) or one sequence (`zeros((2, 3))`), as torch's parser:
/// the first argument if it is a tuple of ints, else all the arguments as one.
pub fn shape_args(args: &Bound<'_, PyTuple>, fname: &str, what: &str) -> PyResult<Vec<i64>> {
    if args.is_empty() {
        // torch's `int[] size` is required (ones() is no 0-d tensor)
        return Err(PyTypeError::new_err(format!("{fname}() missing 1 required positional arguments: \"{what}\"")));
    }
    // the common call, plain ints within int64 (view(-1), reshape(4, 4)), without the general parse
    if args.iter().all(|a| a.is_exact_instance_of::<PyInt>()) {
        if let Ok(v) = args.iter().map(|a| a.extract::<i64>()).collect::<PyResult<Vec<i64>>>() {
            return Ok(v);
        }
    }
    let named = |e: ArgErr| e.into_py("tuple of ints", Some((fname, what, 1)));
    if args.len() == 1 {
        let a = args.get_item(0)?;
        return match parse_int_list(&a, 0) {
            Ok(v) => Ok(v),
            Err(ArgErr::Type(_)) if int_like(&a) => parse_int_list(args.as_any(), 0).map_err(named),
            Err(e) => Err(named(e)),
        };
    }
    if let Some(first) = args.iter().next() {
        if !int_like(&first) {
            return Err(named(ArgErr::Type(type_name(&first))));
        }
    }
    parse_int_list(args.as_any(), 0).map_err(named)
}

/// A creation function's size (zeros, rand, Tensor.new_zeros, ...): varargs as `shape_args`, or
/// the `size=` keyword, which takes a tuple of ints only; not both (torch's TypeError).
pub fn size_args(args: &Bound<'_, PyTuple>, size: Option<&Bound<'_, PyAny>>, fname: &str) -> PyResult<Vec<i64>> {
    let Some(size) = size else { return shape_args(args, fname, "size") };
    if !args.is_empty() {
        return Err(PyTypeError::new_err(format!("{fname}() got multiple values for argument 'size'")));
    }
    size_arg(size, fname, "size", 0)
}

/// A tuple of ints (`int[N]`: N > 0 also takes a single int), named in the error.
pub fn seq_ints(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    parse_int_list(obj, 1).map_err(|e| e.into_py("tuple of ints", Some(("", what, 0))))
}

/// Non-negative sizes for creation functions (torch's message for a negative one).
pub fn sizes(v: &[i64]) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&d| {
            if d < 0 {
                Err(PyRuntimeError::new_err(format!("Trying to create tensor with negative dimension {}: {:?}", d, v)))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

/// Wrap an engine tensor as a Python object.
#[inline]
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
    Py::new(py, PyTensor::new(t))
}

/// narrow's `start`: an int, or a tensor (torch's `Tensor start` overload), which must have 0 dims
/// and an integer dtype (checked by the body: `narrow_start_v`).
pub fn narrow_start<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Result<Int, Bound<'py, PyAny>>> {
    if obj.cast::<PyTensor>().is_ok() {
        return Ok(Err(obj.clone()));
    }
    Int::parse(obj).map(Ok)
}

pub fn narrow_start_v(start: Result<Int, Bound<'_, PyAny>>) -> PyResult<i64> {
    match start {
        Ok(i) => i.v(),
        Err(obj) => {
            let t = &obj.cast::<PyTensor>()?.get().t;
            if t.ndim() != 0 || !integral(t.dtype()) {
                return Err(PyRuntimeError::new_err("start must be an 0-dim integral Tensor."));
            }
            Ok(t.item().py()?.to_i64())
        }
    }
}

/// Any value, given (Some) or left out (None): for arguments that may be omitted but not None.
pub fn given<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(Some(obj.clone()))
}

/// A size argument that takes no single int (torch's `int[] size` of full, randint, ...).
/// (`pos` 0: given by keyword, where torch's parser names the sequence, not a bad first element)
pub fn size_arg(obj: &Bound<'_, PyAny>, fname: &str, what: &str, pos: usize) -> PyResult<Vec<i64>> {
    parse_int_list(obj, 0).map_err(|e| match e {
        ArgErr::Element(..) if pos == 0 => ArgErr::Type(type_name(obj)),
        e => e,
    }.into_py("tuple of ints", Some((fname, what, pos))))
}

/// Several Number arguments (value, name, position) of `fname`, as torch's parser takes them: every
/// type checked before any value is converted, so a wrong type in a later argument is reported
/// before an int too big for a scalar in an earlier one.
pub fn numbers(fname: &str, args: &[(&Bound<'_, PyAny>, &str, usize)]) -> PyResult<Vec<Scalar>> {
    let parsed: Vec<Result<Scalar, ArgErr>> = args.iter().map(|(o, _, _)| parse_number(o)).collect();
    if let Some(i) = parsed.iter().position(|r| matches!(r, Err(e) if !matches!(e, ArgErr::NumberOverflow))) {
        let (_, name, pos) = args[i];
        return Err(parsed.into_iter().nth(i).and_then(|r| r.err()).map(|e| e.into_py("Number", Some((fname, name, pos)))).unwrap_or_else(|| PyTypeError::new_err("bad argument")));
    }
    parsed.into_iter().map(|r| r.map_err(|e| e.into_py("Number", None))).collect()
}

/// A Number argument, named in the error.
pub fn number_arg(obj: &Bound<'_, PyAny>, fname: &str, what: &str, pos: usize) -> PyResult<Scalar> {
    parse_number(obj).map_err(|e| e.into_py("Number", Some((fname, what, pos))))
}

/// One argument of a function written in Python, checked and converted as torch's parser does
/// (Note [argument parsing]): `kind` is "int", "int[]", "int[N]", "float", "Number", "bool",
/// "Tensor", "str", "dtype" or "memory_format", with a trailing "?" where None is allowed. Returns the value
/// converted (an int, a tuple of ints, a float, a Python number, or the value itself).
#[pyfunction]
pub fn _parse_arg<'py>(kind: &str, value: &Bound<'py, PyAny>, fname: &str, name: &str, pos: usize) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let (kind, optional) = match kind.strip_suffix('?') {
        Some(k) => (k, true),
        None => (kind, false),
    };
    if optional && value.is_none() {
        return Ok(value.clone());
    }
    let ctx = Some((fname, name, pos));
    Ok(match kind {
        "int" => parse_int(value).map_err(|e| e.into_py("int", ctx))?.into_pyobject(py)?.into_any(),
        "float" => parse_float(value).map_err(|e| e.into_py("float", ctx))?.into_pyobject(py)?.into_any(),
        "Number" => {
            let s = parse_number(value).map_err(|e| e.into_py("Number", ctx))?;
            super::tensor::scalar_obj(py, s)?.into_bound(py)
        }
        "bool" if value.is_instance_of::<PyBool>() => value.clone(),
        "Tensor" if value.cast::<PyTensor>().is_ok() => value.clone(),
        "str" if value.is_instance_of::<pyo3::types::PyString>() => value.clone(),
        "dtype" => dtype_obj(py, to_dtype(value).map_err(|_| ArgErr::Type(type_name(value)).into_py("torch.dtype", ctx))?)?.into_bound(py).into_any(),
        "memory_format" if value.cast::<PyMemoryFormat>().is_ok() => value.clone(),
        "memory_format" => return Err(ArgErr::Type(type_name(value)).into_py("torch.memory_format", ctx)),
        // ferrograd's one layout, torch.strided (ferrograd._methods.layout)
        "layout" if value.get_type().name()?.to_string() == "layout" => value.clone(),
        "layout" => return Err(ArgErr::Type(type_name(value)).into_py("torch.layout", ctx)),
        "bool" | "Tensor" | "str" => return Err(ArgErr::Type(type_name(value)).into_py(kind, ctx)),
        k if k.starts_with("int[") => {
            let n: usize = k[4..k.len() - 1].parse().unwrap_or(0);
            PyTuple::new(py, parse_int_list(value, n).map_err(|e| e.into_py("tuple of ints", ctx))?)?.into_any()
        }
        _ => return Err(PyRuntimeError::new_err(format!("_parse_arg: unknown kind '{}'", kind))),
    })
}

/// A Python number as torch's parser makes it for a Tensor argument that takes numbers (torch.add(1,
/// x)): a wrapped-number tensor; anything else is the TypeError of a Tensor argument.
#[pyfunction]
pub fn _wrapped_number(py: Python<'_>, value: &Bound<'_, PyAny>, fname: &str) -> PyResult<Py<PyTensor>> {
    match parse_number(value) {
        Ok(s) if value.cast::<PyTensor>().is_err() => wrap(py, Tensor::wrap_scalar(s)),
        Err(e @ ArgErr::NumberOverflow) => Err(e.into_py("Number", None)),
        _ => Err(ArgErr::Type(type_name(value)).into_py("Tensor", Some((fname, "input", 1)))),
    }
}
