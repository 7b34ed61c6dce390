//! Argument conversion: tensors and Python numbers as operands, dims, shapes, dtypes, devices.

use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::tensor::{DType, Scalar, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
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
    fn __repr__(&self) -> String {
        format!("ferrograd.{}", self.dt.name())
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
    as_scalar(obj).map(Tensor::wrap_scalar)
}

/// Like `operand`, with torch's TypeError naming the argument.
pub fn operand_arg(obj: &Bound<'_, PyAny>, fname: &str, arg: &str) -> PyResult<Tensor> {
    operand(obj).ok_or_else(|| {
        let tn = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!("{}(): argument '{}' must be Tensor or Number, not {}", fname, arg, tn))
    })
}

pub fn tensor_arg(obj: &Bound<'_, PyAny>, fname: &str, arg: &str) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.get().t.clone());
    }
    let tn = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(PyTypeError::new_err(format!("{}(): argument '{}' must be Tensor, not {}", fname, arg, tn)))
}

fn int_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
        let tn = obj.get_type().name()?.to_string();
        return Err(PyTypeError::new_err(format!("{} must be int, not {}", what, tn)));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        if t.numel() == 1 && !t.dtype().is_float() {
            return Ok(t.item_f64().py()? as i64);
        }
    }
    obj.extract::<i64>().map_err(|_| {
        let tn = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!("{} must be int, not {}", what, tn))
    })
}

pub fn int_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    int_of(obj, what)
}

/// A dim argument: int, tuple/list of ints, or None.
pub fn dims_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    let Some(o) = obj else { return Ok(None) };
    if o.is_none() {
        return Ok(None);
    }
    if o.is_instance_of::<PyTuple>() || o.is_instance_of::<PyList>() {
        let mut v = Vec::new();
        for item in o.try_iter()? {
            v.push(int_of(&item?, "dim")?);
        }
        return Ok(Some(v));
    }
    Ok(Some(vec![int_of(o, "dim")?]))
}

/// A shape given as varargs (`zeros(2, 3)`) or one sequence (`zeros((2, 3))`).
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if a.is_instance_of::<PyTuple>() || a.is_instance_of::<PyList>() {
            return seq_ints(&a, "size");
        }
    }
    let mut v = Vec::with_capacity(args.len());
    for a in args.iter() {
        v.push(int_of(&a, "size")?);
    }
    Ok(v)
}

pub fn seq_ints(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    if !(obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>()) {
        return Ok(vec![int_of(obj, what)?]);
    }
    let mut v = Vec::new();
    for item in obj.try_iter()? {
        v.push(int_of(&item?, what)?);
    }
    Ok(v)
}

/// Non-negative sizes for creation functions.
pub fn sizes(v: &[i64]) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&d| {
            if d < 0 {
                Err(PyRuntimeError::new_err(format!("Dimension size must be non-negative (got {} in {:?}).", d, v)))
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

/// Wrap an engine tensor as a Python object.
#[inline]
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyTensor>> {
    Py::new(py, PyTensor { t })
}
