//! Zero-copy exchange with other array libraries: DLPack (`Tensor.__dlpack__`,
//! `__dlpack_device__`, `ferrograd.from_dlpack`) and NumPy's protocols (`__array__`,
//! `__array_interface__`).
//!
//! Note [DLPack ownership]
//! Export: the capsule holds a `DLManagedTensor` (or the versioned struct) whose `manager_ctx` is
//! a boxed `Export` keeping an `Arc` of the storage; its deleter drops the box. The capsule's
//! destructor calls the deleter only while the capsule is unconsumed (still named "dltensor");
//! a consumer renames it "used_dltensor" and calls the deleter when it is done.
//! Import: we rename the capsule and keep the producer's managed tensor in the storage's owner,
//! whose `Drop` calls the producer's deleter, so the producer's memory lives exactly as long as
//! the last ferrograd tensor (or view) over it. Deleters may run on any thread without the GIL:
//! ours only drops an `Arc`, and torch's and NumPy's take the GIL themselves.

use super::args::wrap;
use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::ops;
use crate::tensor::{DType, Layout, Storage, Tensor};
use pyo3::exceptions::{PyAssertionError, PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};
use std::ffi::{c_void, CStr};
use std::sync::Arc;

// ---- the DLPack ABI (dlpack.h, v1.0) --------------------------------------------------------

const KDL_CPU: i32 = 1;
const KDL_CUDA: i32 = 2;
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;
const FLAG_IS_COPIED: u64 = 1 << 1;
const DLPACK_MAJOR: u32 = 1;
const DLPACK_MINOR: u32 = 0;

const NAME: &CStr = c"dltensor";
const USED_NAME: &CStr = c"used_dltensor";
const NAME_V: &CStr = c"dltensor_versioned";
const USED_NAME_V: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    /// In elements; NULL means compact row-major.
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

fn dl_dtype(dt: DType) -> DLDataType {
    let code = match dt {
        DType::Bool => KDL_BOOL,
        DType::U8 => KDL_UINT,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => KDL_INT,
        DType::BF16 => KDL_BFLOAT,
        DType::F16 | DType::F32 | DType::F64 => KDL_FLOAT,
    };
    let bits = (dt.size() * 8) as u8;
    DLDataType { code, bits, lanes: 1 }
}

fn from_dl_dtype(d: DLDataType) -> PyResult<DType> {
    let name = |code: u8| match code {
        KDL_INT => "int",
        KDL_UINT => "uint",
        KDL_FLOAT => "float",
        KDL_BOOL => "bool",
        4 => "bfloat",
        5 => "complex",
        _ => "code ",
    };
    match (d.code, d.bits, d.lanes) {
        (KDL_FLOAT, 16, 1) => Ok(DType::F16),
        (KDL_FLOAT, 32, 1) => Ok(DType::F32),
        (KDL_FLOAT, 64, 1) => Ok(DType::F64),
        (KDL_BFLOAT, 16, 1) => Ok(DType::BF16),
        (KDL_INT, 8, 1) => Ok(DType::I8),
        (KDL_INT, 16, 1) => Ok(DType::I16),
        (KDL_INT, 32, 1) => Ok(DType::I32),
        (KDL_INT, 64, 1) => Ok(DType::I64),
        (KDL_UINT, 8, 1) => Ok(DType::U8),
        (KDL_BOOL, 8, 1) => Ok(DType::Bool),
        (c, b, 1) => Err(PyTypeError::new_err(format!(
            "from_dlpack: unsupported dtype {}{}{}; ferrograd has float16/32/64, bfloat16, int8/16/32/64, uint8 and bool (convert before exchanging)",
            name(c),
            if c > 6 { c.to_string() } else { String::new() },
            b
        ))),
        (_, _, l) => Err(PyTypeError::new_err(format!("from_dlpack: vector dtypes (lanes={}) are not supported", l))),
    }
}

// ---- export -------------------------------------------------------------------------------------

/// What a capsule owns: the DLPack struct (first, so its address is the box's), the storage
/// and the shape/strides arrays the struct points into.
#[repr(C)]
struct Export<M> {
    managed: M,
    _storage: Arc<Storage>,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

unsafe extern "C" fn delete_export(m: *mut DLManagedTensor) {
    if !m.is_null() {
        drop(Box::from_raw((*m).manager_ctx as *mut Export<DLManagedTensor>));
    }
}

unsafe extern "C" fn delete_export_v(m: *mut DLManagedTensorVersioned) {
    if !m.is_null() {
        drop(Box::from_raw((*m).manager_ctx as *mut Export<DLManagedTensorVersioned>));
    }
}

/// Destructor of a capsule we made: frees the tensor unless a consumer took it (renamed it).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
        let m = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
        if let Some(d) = (*m).deleter {
            d(m);
        }
    } else if ffi::PyCapsule_IsValid(cap, NAME_V.as_ptr()) == 1 {
        let m = ffi::PyCapsule_GetPointer(cap, NAME_V.as_ptr()) as *mut DLManagedTensorVersioned;
        if let Some(d) = (*m).deleter {
            d(m);
        }
    }
}

/// DLPack's device of an engine device: (kDLCPU = 1, 0) or (kDLCUDA = 2, ordinal).
fn dl_device_of(d: crate::backend::Device) -> DLDevice {
    match d {
        crate::backend::Device::Cpu => DLDevice { device_type: KDL_CPU, device_id: 0 },
        crate::backend::Device::Cuda(i) => DLDevice { device_type: KDL_CUDA, device_id: i as i32 },
    }
}

fn dl_tensor(t: &Tensor, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    let d = t.data();
    let dt = d.storage.dtype();
    // The view's offset goes into the data pointer (byte_offset 0), as torch and NumPy export.
    let data = unsafe { d.storage.as_ptr().add(d.layout.offset * dt.size()) } as *mut c_void;
    DLTensor {
        data,
        device: dl_device_of(d.storage.device()),
        ndim: shape.len() as i32,
        dtype: dl_dtype(dt),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

fn export_capsule<'py>(py: Python<'py>, t: &Tensor, versioned: bool, copied: bool) -> PyResult<Bound<'py, PyAny>> {
    let d = t.data();
    let mut shape: Vec<i64> = d.layout.shape.iter().map(|&s| s as i64).collect();
    let mut strides: Vec<i64> = d.layout.strides.iter().map(|&s| s as i64).collect();
    let dl = dl_tensor(t, &mut shape, &mut strides);
    let storage = d.storage.clone();
    storage.mark_exported();
    let (ptr, name) = if versioned {
        let managed = DLManagedTensorVersioned {
            version: DLPackVersion { major: DLPACK_MAJOR, minor: DLPACK_MINOR },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_export_v),
            flags: if copied { FLAG_IS_COPIED } else { 0 },
            dl_tensor: dl,
        };
        let b = Box::into_raw(Box::new(Export { managed, _storage: storage, _shape: shape, _strides: strides }));
        unsafe { (*b).managed.manager_ctx = b as *mut c_void };
        (b as *mut c_void, NAME_V)
    } else {
        let managed = DLManagedTensor { dl_tensor: dl, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_export) };
        let b = Box::into_raw(Box::new(Export { managed, _storage: storage, _shape: shape, _strides: strides }));
        unsafe { (*b).managed.manager_ctx = b as *mut c_void };
        (b as *mut c_void, NAME)
    };
    // SAFETY: `ptr` is a live Export whose first field is the managed struct; the destructor
    // frees it unless a consumer renames the capsule first.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
        if cap.is_null() {
            capsule_destructor_raw(ptr, versioned);
        }
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// Free an export whose capsule could not be made.
unsafe fn capsule_destructor_raw(ptr: *mut c_void, versioned: bool) {
    if versioned {
        delete_export_v(ptr as *mut DLManagedTensorVersioned)
    } else {
        delete_export(ptr as *mut DLManagedTensor)
    }
}

/// `dl_device` as (device_type, device_id), when given.
fn device_pair(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<(i64, i64)>> {
    match obj {
        Some(o) if !o.is_none() => {
            let (a, b): (Bound<'_, PyAny>, Bound<'_, PyAny>) = o.extract()?;
            Ok(Some((a.call_method0("__int__")?.extract()?, b.call_method0("__int__")?.extract()?)))
        }
        _ => Ok(None),
    }
}

#[pymethods]
impl PyTensor {
    /// A DLPack capsule sharing this tensor's memory (the array-API `__dlpack__`). With
    /// `max_version >= (1, 0)` the capsule is the versioned "dltensor_versioned" one.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.t.requires_grad() {
            return Err(PyBufferError::new_err("Can't export tensors that require gradient, use tensor.detach()"));
        }
        let on_cuda = self.t.is_cuda();
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            let v: i64 = s.extract().map_err(|_| PyTypeError::new_err("stream must be ``int`` or ``none``"))?;
            if v != -1 && !on_cuda {
                return Err(PyAssertionError::new_err("stream should be None on cpu."));
            }
        }
        if on_cuda {
            // The consumer reads on its own stream: everything queued on ours is finished first
            // (a host wait; ferrograd has one stream, the legacy default one).
            crate::backend::cuda::synchronize().py()?;
        }
        let here = dl_device_of(self.t.device());
        let versioned = match max_version.filter(|v| !v.is_none()) {
            Some(v) => {
                let (major, _minor): (i64, i64) = v.extract().map_err(|_| PyTypeError::new_err("max_version must be a tuple of two ints (major, minor)"))?;
                major >= 1
            }
            None => false,
        };
        if let Some((kind, id)) = device_pair(dl_device)? {
            if (kind, id) != (here.device_type as i64, here.device_id as i64) {
                return Err(PyBufferError::new_err(format!(
                    "Can't export a ferrograd tensor on {} to DLPack device ({}, {}): only ({}, {}) is supported",
                    self.t.device(), kind, id, here.device_type, here.device_id
                )));
            }
        }
        if copy == Some(true) {
            let c = ops::contiguous_copy(&self.t).py()?;
            return export_capsule(py, &c, versioned, true);
        }
        export_capsule(py, &self.t, versioned, false)
    }

    /// (device type, device id) in DLPack's enumeration: (kDLCPU = 1, 0) or (kDLCUDA = 2, ordinal).
    fn __dlpack_device__(&self) -> (i32, i32) {
        let d = dl_device_of(self.t.device());
        (d.device_type, d.device_id)
    }

    /// NumPy's `__array__`: a view of the tensor's memory unless a copy is asked for (`copy=True`)
    /// or needed for `dtype` (then `copy=False` is NumPy's ValueError).
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(slf: &Bound<'py, Self>, dtype: Option<&Bound<'py, PyAny>>, copy: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        if slf.get().t.requires_grad() {
            return Err(PyRuntimeError::new_err("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."));
        }
        let arr = super::functions::to_numpy(slf)?;
        let arr = match dtype.filter(|d| !d.is_none()) {
            Some(d) => {
                let want = slf.py().import("numpy")?.getattr("dtype")?.call1((d,))?;
                let same = arr.getattr("dtype")?.eq(&want)?;
                if same {
                    arr
                } else if copy == Some(false) {
                    return Err(PyValueError::new_err("Unable to avoid copy while creating an array as requested."));
                } else {
                    return arr.call_method1("astype", (d,));
                }
            }
            None => arr,
        };
        if copy == Some(true) {
            return arr.call_method0("copy");
        }
        Ok(arr)
    }

    /// NumPy's array interface (version 3): shape, type string, data pointer and byte strides.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.t.requires_grad() {
            return Err(PyRuntimeError::new_err("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."));
        }
        let d = self.t.data();
        let dt = d.storage.dtype();
        let typestr = match dt {
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::F16 => "<f2",
            DType::I64 => "<i8",
            DType::I32 => "<i4",
            DType::I16 => "<i2",
            DType::I8 => "|i1",
            DType::U8 => "|u1",
            DType::Bool => "|b1",
            DType::BF16 => return Err(super::functions::no_numpy_dtype(dt)),
        };
        d.storage.mark_exported(); // Note [Exported storage]: NumPy keeps this tensor, which keeps the buffer
        let ptr = if d.storage.is_empty() { 0 } else { d.storage.as_ptr() as usize + d.layout.offset * dt.size() };
        let out = PyDict::new(py);
        out.set_item("shape", PyTuple::new(py, d.layout.shape.iter())?)?;
        out.set_item("typestr", typestr)?;
        out.set_item("data", (ptr, false))?;
        if d.layout.is_contiguous() {
            out.set_item("strides", py.None())?;
        } else {
            out.set_item("strides", PyTuple::new(py, d.layout.strides.iter().map(|&s| s * dt.size()))?)?;
        }
        out.set_item("version", 3)?;
        Ok(out)
    }
}

// ---- import -------------------------------------------------------------------------------------

/// The producer's managed tensor, released (its deleter called) with the ferrograd storage.
struct Imported {
    managed: *mut c_void,
    versioned: bool,
}

// The deleter may be called from any thread (DLPack's contract; see Note [DLPack ownership]).
unsafe impl Send for Imported {}
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `managed` came from a consumed capsule of this kind and is released once, here.
        unsafe {
            if self.versioned {
                let m = self.managed as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// Read a DLTensor into (dtype, shape, strides in elements, data pointer), checking that
/// ferrograd can view it.
fn describe(dl: &DLTensor) -> PyResult<(DType, Vec<usize>, Vec<usize>, *mut u8)> {
    check_dl_device(dl.device.device_type as i64, dl.device.device_id as i64)?;
    let dt = from_dl_dtype(dl.dtype)?;
    if dl.ndim < 0 {
        return Err(PyRuntimeError::new_err("from_dlpack: negative ndim"));
    }
    let nd = dl.ndim as usize;
    let raw_shape: &[i64] = if nd == 0 { &[] } else { unsafe { std::slice::from_raw_parts(dl.shape, nd) } };
    if raw_shape.iter().any(|&s| s < 0) {
        return Err(PyRuntimeError::new_err("from_dlpack: negative dimension size"));
    }
    let shape: Vec<usize> = raw_shape.iter().map(|&s| s as usize).collect();
    let strides: Vec<usize> = if dl.strides.is_null() || nd == 0 {
        crate::tensor::layout::contiguous_strides(&shape).to_vec()
    } else {
        let raw: &[i64] = unsafe { std::slice::from_raw_parts(dl.strides, nd) };
        let mut v = Vec::with_capacity(nd);
        for (&s, &n) in raw.iter().zip(&shape) {
            if s < 0 && n > 1 {
                return Err(PyRuntimeError::new_err(
                    "from_dlpack: negative strides are not supported by ferrograd tensors (make a contiguous copy first)",
                ));
            }
            v.push(s.max(0) as usize);
        }
        v
    };
    let numel: usize = shape.iter().product();
    let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    if numel > 0 && (data.is_null() || (data as usize) % dt.size() != 0) {
        return Err(PyRuntimeError::new_err(format!("from_dlpack: the data pointer is not aligned for {}", dt)));
    }
    Ok((dt, shape, strides, data))
}

/// Consume a DLPack capsule into a tensor sharing its memory. Memory flagged read-only is shared
/// too, as torch does: writing to it is the caller's responsibility.
fn consume(cap: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let p = cap.as_ptr();
    let versioned = unsafe { ffi::PyCapsule_IsValid(p, NAME_V.as_ptr()) } == 1;
    if !versioned && unsafe { ffi::PyCapsule_IsValid(p, NAME.as_ptr()) } != 1 {
        return Err(PyRuntimeError::new_err(
            "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
        ));
    }
    let (managed, dl): (*mut c_void, &DLTensor) = unsafe {
        if versioned {
            let m = ffi::PyCapsule_GetPointer(p, NAME_V.as_ptr()) as *mut DLManagedTensorVersioned;
            if (*m).version.major > DLPACK_MAJOR {
                return Err(PyRuntimeError::new_err(format!(
                    "from_dlpack: DLPack version {}.{} is newer than the supported {}.{}",
                    (*m).version.major,
                    (*m).version.minor,
                    DLPACK_MAJOR,
                    DLPACK_MINOR
                )));
            }
            (m as *mut c_void, &(*m).dl_tensor)
        } else {
            let m = ffi::PyCapsule_GetPointer(p, NAME.as_ptr()) as *mut DLManagedTensor;
            (m as *mut c_void, &(*m).dl_tensor)
        }
    };
    let (dt, shape, strides, data) = describe(dl)?;
    // Take ownership: from here on the capsule's destructor leaves the tensor to us.
    let used = if versioned { USED_NAME_V } else { USED_NAME };
    if unsafe { ffi::PyCapsule_SetName(p, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(cap.py()));
    }
    let owner = Imported { managed, versioned };
    let numel: usize = shape.iter().product();
    let extent = if numel == 0 { 0 } else { 1 + shape.iter().zip(&strides).map(|(d, s)| (d - 1) * s).sum::<usize>() };
    // SAFETY: the producer guarantees `extent` elements from `data` until its deleter runs,
    // which happens when `owner` (kept by the storage) is dropped. A CUDA tensor's memory is in
    // the device's primary context, which ferrograd uses too.
    let storage = if dl.device.device_type == KDL_CUDA {
        unsafe { Storage::from_device(data, extent, dt, crate::backend::Device::Cuda(dl.device.device_id as u8), Box::new(owner)) }
    } else {
        unsafe { Storage::from_foreign(data, extent, dt, Box::new(owner)) }
    };
    Ok(Tensor::from_storage(Arc::new(storage), Layout { shape: shape.into(), strides: strides.into(), offset: 0 }))
}

/// CPU memory, or CUDA memory of device 0 when ferrograd has a CUDA device; torch's style of error
/// otherwise.
fn check_dl_device(kind: i64, id: i64) -> PyResult<()> {
    if kind == KDL_CPU as i64 {
        return Ok(());
    }
    if kind == KDL_CUDA as i64 && id == 0 && crate::backend::cuda::has_kernels() {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "from_dlpack: the tensor is on DLPack device ({}, {}); ferrograd takes the CPU (kDLCPU = 1) and, with a CUDA device, cuda:0 (kDLCUDA = 2): move it there first",
        kind, id
    )))
}

fn is_cpu_device(device: &Bound<'_, PyAny>) -> PyResult<bool> {
    let s: String = device.str()?.extract()?;
    Ok(s == "cpu" || s == "cpu:0")
}

/// `ferrograd.from_dlpack(ext_tensor, *, device=None, copy=None)`: a tensor sharing memory with
/// any object that has `__dlpack__` (torch, NumPy, JAX, CuPy on the host), or a DLPack capsule.
#[pyfunction]
#[pyo3(signature = (ext_tensor, *, device=None, copy=None))]
pub fn from_dlpack(py: Python<'_>, ext_tensor: &Bound<'_, PyAny>, device: Option<&Bound<'_, PyAny>>, copy: Option<bool>) -> PyResult<Py<PyTensor>> {
    let device = device.filter(|d| !d.is_none());
    let target = match device {
        Some(d) if !is_cpu_device(d)? => Some(crate::python::args::parse_device(Some(d))?.unwrap_or(crate::backend::Device::Cpu)),
        _ => None,
    };
    if ext_tensor.cast::<PyCapsule>().is_ok() {
        if device.is_some() || copy.is_some() {
            return Err(PyAssertionError::new_err("device and copy kwargs not supported when ext_tensor is already a DLPack capsule."));
        }
        return wrap(py, consume(ext_tensor)?);
    }
    if !ext_tensor.hasattr("__dlpack__")? {
        return Err(PyRuntimeError::new_err(format!(
            "from_dlpack received an invalid capsule: expected an object with __dlpack__ or a DLPack capsule, got {}",
            ext_tensor.get_type().name()?
        )));
    }
    let mut on_cuda = false;
    if ext_tensor.hasattr("__dlpack_device__")? {
        let dev = ext_tensor.call_method0("__dlpack_device__")?;
        let (kind, id): (Bound<'_, PyAny>, Bound<'_, PyAny>) = dev.extract()?;
        let kind: i64 = kind.call_method0("__int__")?.extract()?;
        let id: i64 = id.call_method0("__int__")?.extract()?;
        check_dl_device(kind, id)?;
        on_cuda = kind == KDL_CUDA as i64;
    }
    // Newest protocol first; older producers reject the keywords with a TypeError (as torch does).
    let mut attempts = vec![(true, copy.is_some()), (false, copy.is_some()), (false, false)];
    attempts.dedup();
    let mut last_err = None;
    for (with_version, with_copy) in attempts {
        let kw = PyDict::new(py);
        if with_version {
            kw.set_item("max_version", (DLPACK_MAJOR, DLPACK_MINOR))?;
        }
        if with_copy {
            kw.set_item("copy", copy)?;
        }
        if on_cuda {
            kw.set_item("stream", 1)?; // ferrograd works on the legacy default stream
        }
        match ext_tensor.call_method("__dlpack__", (), Some(&kw)) {
            Ok(cap) => {
                let mut t = consume(&cap)?;
                if let Some(d) = target {
                    if d != t.device() {
                        t = crate::backend::cuda::to_device(&t, d).py()?; // a copy, as torch's device= does
                    }
                }
                if copy == Some(true) && !with_copy {
                    return wrap(py, ops::contiguous_copy(&t).py()?);
                }
                return wrap(py, t);
            }
            Err(e) if e.is_instance_of::<PyTypeError>(py) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| PyTypeError::new_err("from_dlpack: __dlpack__ failed")))
}
