//! Module-level functions of `ferrograd._C`: creation, NumPy interop, grad mode, autograd
//! entry points, and registry/graph introspection.

use super::args::*;
use super::tensor::{run_backward, tensor_list, PyTensor};
use super::IntoPyResult;
use crate::autograd;
use crate::ops;
use crate::backend::Device;
use crate::tensor::{factory, DType, Layout, Storage, Tensor};
use ndarray::ShapeBuilder;
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::Arc;

fn np_dtype(arr: &Bound<'_, PyUntypedArray>) -> PyResult<DType> {
    let d = arr.dtype();
    if let Some(dt) = native_dtype(&d) {
        return Ok(dt);
    }
    let name: String = d.str()?.extract()?;
    match DType::from_name(&name) {
        Some(dt) if numpy_name(dt).is_some() && numpy_name(dt) == Some(name.as_str()) => Ok(dt),
        _ => Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type numpy.{}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.",
            d.getattr("type")?.getattr("__name__")?.extract::<String>().unwrap_or(name)
        ))),
    }
}

/// NumPy's name of a dtype; None for bfloat16, which NumPy does not have.
pub fn numpy_name(dt: DType) -> Option<&'static str> {
    if dt == DType::BF16 {
        None
    } else {
        Some(dt.name())
    }
}

/// torch's error for `numpy()` of a dtype NumPy does not have.
pub fn no_numpy_dtype(dt: DType) -> PyErr {
    PyTypeError::new_err(format!("Got unsupported ScalarType {}", dt.type_word()))
}

/// A NumPy dtype's engine dtype read from its descriptor (kind, item size, byte order), without
/// the Python-level `str(dtype)`; None for anything else (np_dtype's general path and errors).
fn native_dtype(d: &Bound<'_, numpy::PyArrayDescr>) -> Option<DType> {
    use numpy::PyArrayDescrMethods;
    if d.is_native_byteorder() == Some(false) {
        return None;
    }
    descr_dtype(d)
}

/// The engine dtype of a NumPy dtype's kind and item size, whatever its byte order.
fn descr_dtype(d: &Bound<'_, numpy::PyArrayDescr>) -> Option<DType> {
    use numpy::PyArrayDescrMethods;
    if d.has_fields() || d.has_subarray() {
        return None;
    }
    Some(match (d.kind(), d.itemsize()) {
        (b'f', 2) => DType::F16,
        (b'f', 4) => DType::F32,
        (b'f', 8) => DType::F64,
        (b'i', 1) => DType::I8,
        (b'i', 2) => DType::I16,
        (b'i', 4) => DType::I32,
        (b'i', 8) => DType::I64,
        (b'u', 1) => DType::U8,
        (b'b', 1) => DType::Bool,
        _ => return None,
    })
}

/// torch warns once per process about a read-only array (TORCH_WARN_ONCE).
static READONLY_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A tensor sharing memory with a NumPy array (torch.from_numpy). torch's checks in its order
/// (tensor_from_numpy): the read-only warning, the dtype, the strides (multiples of the item size,
/// then non-negative), the byte order.
#[pyfunction]
fn from_numpy(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    use numpy::PyArrayDescrMethods;
    let arr = array.cast::<PyUntypedArray>().map_err(|_| PyTypeError::new_err(format!("expected np.ndarray (got {})", array.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?;
    let flags = unsafe { (*arr.as_array_ptr()).flags };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 && !READONLY_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyUserWarning>(), c"The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This means writing to this tensor will result in undefined behavior. You may want to copy the array to protect its data or make it writable before converting it to a tensor. This type of warning will be suppressed for the rest of this program.", 1)?;
    }
    let d = arr.dtype();
    let dt = match descr_dtype(&d) {
        Some(dt) => dt,
        None => np_dtype(arr)?, // (its TypeError)
    };
    let item = d.itemsize() as isize;
    let shape: Vec<usize> = arr.shape().to_vec();
    let raw = arr.strides();
    if raw.iter().any(|&s| s % item != 0) {
        return Err(PyValueError::new_err("given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory."));
    }
    if raw.iter().any(|&s| s < 0) {
        return Err(PyValueError::new_err("At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) "));
    }
    if d.is_native_byteorder() == Some(false) {
        return Err(PyValueError::new_err("given numpy array has byte order different from the native byte order. Conversion between byte orders is currently not supported."));
    }
    let strides: Vec<usize> = raw.iter().map(|&s| (s / item) as usize).collect();
    let n: usize = shape.iter().product();
    let extent = if n == 0 { 0 } else { 1 + shape.iter().zip(&strides).map(|(d, s)| (d - 1) * s).sum::<usize>() };
    let ptr = unsafe { (*arr.as_array_ptr()).data as *mut u8 };
    let owner: Py<PyAny> = array.clone().unbind();
    let storage = unsafe { Storage::from_foreign(ptr, extent, dt, Box::new(owner)) };
    let t = Tensor::from_storage(Arc::new(storage), Layout { shape: shape.into(), strides: strides.into(), offset: 0 });
    wrap(py, t)
}

/// A copy of a NumPy array as a contiguous tensor, optionally converted.
pub fn numpy_copy(array: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let py = array.py();
    let np = py.import("numpy")?;
    let arr = array.cast::<PyUntypedArray>()?;
    let src = match np_dtype(arr) {
        Ok(d) => d,
        Err(_) => {
            let kind: String = arr.dtype().getattr("kind")?.extract()?;
            match kind.as_str() {
                "f" => DType::F64,
                "i" | "u" => DType::I64,
                "b" => DType::Bool,
                _ => return Err(PyTypeError::new_err(format!("can't convert np.ndarray of type {}", arr.dtype().str()?))),
            }
        }
    };
    let target = dtype.unwrap_or(src);
    if target.is_float() && target.is_narrow() && src != target {
        // float16/bfloat16 (NumPy has no bfloat16): through float32, which is also how torch
        // rounds a double or an int64 to 16 bits
        return ops::to_dtype(&numpy_copy(array, Some(DType::F32))?, target).py();
    }
    let Some(npname) = numpy_name(target) else {
        return Err(no_numpy_dtype(target));
    };
    let c = np.call_method1("asarray", (array, npname))?.call_method1("copy", ("C",))?;
    let shape: Vec<usize> = c.cast::<PyUntypedArray>()?.shape().to_vec();
    let t = crate::with_dtype!(target, T => {
        let a = c.cast::<PyArrayDyn<T>>()?;
        let v: Vec<T> = a.to_vec().map_err(|e| PyValueError::new_err(e.to_string()))?;
        Tensor::from_vec(v, &shape)
    });
    Ok(t)
}

#[pyfunction]
#[pyo3(signature = (array, dtype=None))]
fn _from_numpy_copy(py: Python<'_>, array: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    wrap(py, numpy_copy(array, opt_dtype(dtype)?)?)
}

/// F.linear's common case in one call: a float input (2-d, or contiguous with a 1-d bias), a 2-d
/// weight, an optional 1-d bias, one dtype and device, matching sizes. As torch's: a 2-d input
/// with bias is addmm(bias, x, w.t()) (AddmmBackward0), without bias mm(x, w.t()); a contiguous
/// n-d input is flattened to 2-d, multiplied, and viewed back (UnsafeViewBackward0). None for everything else, which
/// the Python `linear` handles (with torch's errors).
#[pyfunction]
#[pyo3(signature = (input, weight, bias=None))]
fn _linear(py: Python<'_>, input: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>, bias: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyTensor>>> {
    let (Ok(x), Ok(w)) = (input.cast::<PyTensor>(), weight.cast::<PyTensor>()) else { return Ok(None) };
    let b = match bias {
        None => None,
        Some(b) if b.is_none() => None,
        Some(b) => match b.cast::<PyTensor>() {
            Ok(b) => Some(b.get().t.clone()),
            Err(_) => return Ok(None),
        },
    };
    let (mut x, mut w) = (x.get().t.clone(), w.get().t.clone());
    let mut b = b;
    // torch's autocast lists: linear in lower precision (Note [Autocast]); the casts are of one
    // dtype, which the checks below then see
    let mut half_ok = false;
    if crate::ops::autocast::active() {
        let mut ins: Vec<&Tensor> = vec![&x, &w];
        ins.extend(b.as_ref());
        if let Some((k, cdt)) = crate::ops::autocast::target(crate::ops::table::AutocastRule::LOWER, &ins) {
            let cast = |t: &Tensor| crate::ops::autocast::cast(t, k, cdt).py();
            (x, w, b) = (cast(&x)?, cast(&w)?, b.as_ref().map(cast).transpose()?);
            half_ok = true;
        }
    }
    let (x, w) = (&x, &w);
    let dt = x.dtype();
    let xs = x.shape();
    let ws = w.shape();
    if !(matches!(dt, DType::F32 | DType::F64) || half_ok && matches!(dt, DType::F16 | DType::BF16)) || w.dtype() != dt || ws.len() != 2 || xs.is_empty() || xs[xs.len() - 1] != ws[1] || x.device() != w.device() {
        return Ok(None);
    }
    if let Some(b) = &b {
        if b.dtype() != dt || b.ndim() != 1 || b.shape()[0] != ws[0] || b.device() != w.device() {
            return Ok(None);
        }
    }
    let wt = ops::t(w).py()?;
    let out = match (&b, xs.len()) {
        (Some(b), 2) => ops::addmm(b, x, &wt),
        (None, 2) => ops::mm(x, &wt),
        (Some(b), _) if x.is_contiguous() => (|| {
            let rows: usize = xs[..xs.len() - 1].iter().product();
            let flat = ops::reshape(x, &[rows as i64, ws[1] as i64])?;
            let y = ops::addmm(b, &flat, &wt)?;
            let mut shape: Vec<usize> = xs[..xs.len() - 1].to_vec();
            shape.push(ws[0]);
            Ok(ops::unsafe_view(&y, &shape))
        })(),
        _ => return Ok(None),
    }
    .py()?;
    Ok(Some(wrap(py, out)?))
}

/// nll_loss's common case (see `ops::nll_loss`): a (N, C) float32/float64 CPU input, int64 targets
/// (N,), class weights of the input's dtype (C,) or None, reduction "none"/"mean"/"sum". None for
/// anything else, and for targets out of range: the Python `nll_loss` checks and raises as torch.
#[pyfunction]
fn _nll_loss(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>, reduction: &str, ignore_index: i64) -> PyResult<Option<Py<PyTensor>>> {
    let (Ok(x), Ok(t)) = (input.cast::<PyTensor>(), target.cast::<PyTensor>()) else { return Ok(None) };
    let (x, t) = (&x.get().t, &t.get().t);
    let w = if weight.is_none() {
        None
    } else {
        match weight.cast::<PyTensor>() {
            Ok(w) => Some(w.get().t.clone()),
            Err(_) => return Ok(None),
        }
    };
    let r = match reduction {
        "none" => 0,
        "mean" => 1,
        "sum" => 2,
        _ => return Ok(None),
    };
    let dt = x.dtype();
    let xs = x.shape();
    if !matches!(dt, DType::F32 | DType::F64) || xs.len() != 2 || x.is_cuda() || t.is_cuda() || t.dtype() != DType::I64 || t.shape()[..] != [xs[0]] {
        return Ok(None);
    }
    if let Some(w) = &w {
        if w.dtype() != dt || w.is_cuda() || w.shape()[..] != [xs[1]] || w.requires_grad() {
            return Ok(None);
        }
    }
    match ops::nll_loss(x, t, w.as_ref(), r, ignore_index).py()? {
        Some(out) => Ok(Some(wrap(py, out)?)),
        None => Ok(None),
    }
}

/// argsort along a wrapped dim for a CPU tensor of at least one dim (see `ops::argsort_dim`); None
/// for a CUDA tensor (the host path in `_more_ops` handles it).
#[pyfunction]
fn _argsort(py: Python<'_>, input: PyRef<'_, PyTensor>, dim: usize, descending: bool) -> PyResult<Option<Py<PyTensor>>> {
    let x = &input.t;
    if x.is_cuda() || dim >= x.ndim() {
        return Ok(None);
    }
    Ok(Some(wrap(py, ops::argsort_dim(x, dim, descending).py()?)?))
}

/// topk's common call in one step (Python `topk` in `_more_ops`): a CPU tensor of at least one dim,
/// k and dim plain ints in range, largest a bool; the same ops as the Python path (argsort along
/// the dim, a contiguous copy of its first k, gather). None for everything else (the Python path, with torch's errors).
#[pyfunction]
fn _topk(py: Python<'_>, input: &Bound<'_, PyAny>, k: &Bound<'_, PyAny>, dim: &Bound<'_, PyAny>, largest: &Bound<'_, PyAny>) -> PyResult<Option<(Py<PyTensor>, Py<PyTensor>)>> {
    use pyo3::types::{PyBool, PyInt};
    let Ok(x) = input.cast::<PyTensor>() else { return Ok(None) };
    if !k.is_exact_instance_of::<PyInt>() || !dim.is_exact_instance_of::<PyInt>() || !largest.is_exact_instance_of::<PyBool>() {
        return Ok(None);
    }
    let x = &x.get().t;
    let nd = x.ndim() as i64;
    let (Ok(k), Ok(dim)) = (k.extract::<i64>(), dim.extract::<i64>()) else { return Ok(None) };
    if x.is_cuda() || nd == 0 || dim < -nd || dim >= nd {
        return Ok(None);
    }
    let d = dim.rem_euclid(nd) as usize;
    if k < 0 || k as usize > x.shape()[d] {
        return Ok(None);
    }
    let order = ops::argsort_dim(x, d, largest.is_truthy()?).py()?;
    let shape = x.shape();
    let (n, k) = (shape[d], k as usize);
    let idx = if k == n {
        order
    } else {
        // the first k along d, copied to a new contiguous tensor (narrow and contiguous in one step):
        // for each index before d, the first k * inner of its n * inner
        let all = order.to_vec::<i64>().py()?;
        let inner: usize = shape[d + 1..].iter().product();
        let mut v = Vec::with_capacity(all.len() / n.max(1) * k);
        for chunk in all.chunks_exact((n * inner).max(1)) {
            v.extend_from_slice(&chunk[..k * inner]);
        }
        let mut s = shape.to_vec();
        s[d] = k;
        Tensor::from_vec(v, &s)
    };
    let values = ops::gather(x, d as i64, &idx).py()?;
    Ok(Some((wrap(py, values)?, wrap(py, idx)?)))
}

/// The *_like functions' common call, f(input) with every option at its default (Note [the *_like
/// functions] in `_creation`): the values of `kind` (0 zeros, 1 ones, 2 empty, 3 full of
/// `fill_value`, 4 rand, 5 randn) in input's dtype and device, seen with input's shape and
/// preserve_format's strides. None where the Python path is needed (random values of a dtype that
/// is not floating, whose error that path raises).
#[pyfunction]
#[pyo3(signature = (input, kind, fill_value=None))]
fn _like(py: Python<'_>, input: PyRef<'_, PyTensor>, kind: u8, fill_value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyTensor>>> {
    let x = &input.t;
    let (n, dt, dev) = (x.numel(), x.dtype(), x.device());
    let values = match kind {
        0 | 2 => Tensor::zeros_on(&[n], dt, dev).py()?,
        1 => Tensor::full_on(&[n], 1.0, dt, dev).py()?,
        3 => {
            // a float, or an int within int64 (others: the Python path's checks and messages)
            let Some(v) = fill_value.filter(|v| v.is_exact_instance_of::<pyo3::types::PyFloat>() || (v.is_exact_instance_of::<pyo3::types::PyInt>() && v.extract::<i64>().is_ok())) else { return Ok(None) };
            let size = PyTuple::new(py, [n])?;
            let t = full_of(py, "full", size.as_any(), v, None, None, false, Some(x))?;
            let t = t.bind(py).get().t.clone();
            t
        }
        4 | 5 if dt.is_float() => factory::random_on(&[n], dt, kind == 5, dev).py()?,
        _ => return Ok(None),
    };
    let l = crate::backend::cpu::like_layout(&x.layout(), crate::tensor::MemoryFormat::Preserve).py()?;
    wrap(py, values.view_with_layout(l)).map(Some)
}

/// One leaf of plain Python data.
#[derive(Clone, Copy)]
enum Leaf {
    F(f64),
    I(i64),
    B(bool),
}

/// Nested lists/tuples of Python floats, ints (within int64) and bools, walked in torch's order:
/// `sizes` along the first elements, then every sequence checked against its dim's length. None
/// for anything else (NumPy values, tensors, subclasses, ragged or mis-nested data, huge ints):
/// the Python path (`_creation._from_data`) handles those, with torch's errors.
fn plain_leaves(data: &Bound<'_, PyAny>) -> Option<(Vec<usize>, Vec<Leaf>)> {
    fn leaf(o: &Bound<'_, PyAny>) -> Option<Leaf> {
        if o.is_exact_instance_of::<pyo3::types::PyFloat>() {
            o.extract::<f64>().ok().map(Leaf::F)
        } else if o.is_exact_instance_of::<pyo3::types::PyBool>() {
            o.extract::<bool>().ok().map(Leaf::B)
        } else if o.is_exact_instance_of::<pyo3::types::PyInt>() {
            o.extract::<i64>().ok().map(Leaf::I)
        } else {
            None
        }
    }
    fn items<'a, 'py>(o: &'a Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
        if let Ok(l) = o.cast_exact::<PyList>() {
            Some(l.iter().collect())
        } else if let Ok(t) = o.cast_exact::<PyTuple>() {
            Some(t.iter().collect())
        } else {
            None
        }
    }
    fn walk(o: &Bound<'_, PyAny>, sizes: &[usize], dim: usize, out: &mut Vec<Leaf>) -> Option<()> {
        if dim == sizes.len() {
            out.push(leaf(o)?);
            return Some(());
        }
        let v = items(o)?;
        if v.len() != sizes[dim] {
            return None;
        }
        v.iter().try_for_each(|e| walk(e, sizes, dim + 1, out))
    }
    let mut sizes = Vec::new();
    let mut cur = data.clone();
    while let Some(v) = items(&cur) {
        sizes.push(v.len());
        match v.into_iter().next() {
            Some(first) => cur = first,
            None => break,
        }
    }
    let mut out = Vec::with_capacity(sizes.iter().product());
    walk(data, &sizes, 0, &mut out)?;
    Some((sizes, out))
}

/// torch.tensor for plain Python data (see `plain_leaves`) without NumPy: the dtype inferred as
/// torch's (a float makes float32, else an int int64, else bool; empty: float32) or given
/// (float32, float64, int64, bool); values converted as torch's (ints through double, floats to
/// int64 truncated). None where `_creation._from_data` must decide (other dtypes, a float that
/// does not fit int64, data that is not plain).
#[pyfunction]
#[pyo3(signature = (data, dtype=None))]
fn _tensor_plain(py: Python<'_>, data: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyTensor>>> {
    let given = opt_dtype(dtype)?;
    if given.is_some_and(|d| !matches!(d, DType::F32 | DType::F64 | DType::I64 | DType::Bool)) {
        return Ok(None);
    }
    let Some((sizes, leaves)) = plain_leaves(data) else { return Ok(None) };
    let dt = given.unwrap_or_else(|| {
        if leaves.iter().any(|l| matches!(l, Leaf::F(_))) || leaves.is_empty() {
            DType::default_float()
        } else if leaves.iter().any(|l| matches!(l, Leaf::I(_))) {
            DType::I64
        } else {
            DType::Bool
        }
    });
    if !matches!(dt, DType::F32 | DType::F64 | DType::I64 | DType::Bool) {
        return Ok(None); // a float16/bfloat16 default dtype: the Python path converts
    }
    let f = |l: &Leaf| match *l {
        Leaf::F(v) => v,
        Leaf::I(v) => v as f64,
        Leaf::B(v) => v as u8 as f64,
    };
    let t = match dt {
        DType::F32 => Tensor::from_vec(leaves.iter().map(|l| f(l) as f32).collect::<Vec<f32>>(), &sizes),
        DType::F64 => Tensor::from_vec(leaves.iter().map(f).collect::<Vec<f64>>(), &sizes),
        DType::I64 => {
            let mut v = Vec::with_capacity(leaves.len());
            for l in &leaves {
                v.push(match *l {
                    Leaf::I(i) => i,
                    Leaf::B(b) => b as i64,
                    // within int64 (NaN fails too): truncated; else the Python path raises
                    Leaf::F(x) if (-9.223_372_036_854_775_808e18..9.223_372_036_854_775_808e18).contains(&x) => x as i64,
                    Leaf::F(_) => return Ok(None),
                });
            }
            Tensor::from_vec(v, &sizes)
        }
        _ => Tensor::from_vec(leaves.iter().map(|l| f(l) != 0.0).collect::<Vec<bool>>(), &sizes),
    };
    Ok(Some(wrap(py, t)?))
}

/// A NumPy array viewing the tensor's memory, kept alive by the tensor object.
pub fn to_numpy<'py>(slf: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, PyAny>> {
    let t = &slf.get().t;
    if t.is_cuda() {
        return Err(PyTypeError::new_err(format!(
            "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
            t.device()
        )));
    }
    let d = t.data();
    let shape: Vec<usize> = d.layout.shape.to_vec();
    let strides: Vec<usize> = d.layout.strides.to_vec();
    // NumPy refuses (and rust-numpy would not notice) an array whose nominal size overflows,
    // such as an expanded view of 2**62 elements
    if d.layout.numel().checked_mul(d.storage.dtype().size()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.",
        ));
    }
    if numpy_name(d.storage.dtype()).is_none() {
        return Err(no_numpy_dtype(d.storage.dtype()));
    }
    d.storage.mark_exported(); // Note [Exported storage]: the array keeps `slf`, which keeps this buffer
    crate::with_dtype!(d.storage.dtype(), T => {
        let base = d.storage.as_ptr() as *const T;
        let view = unsafe {
            let ptr = if d.storage.is_empty() { std::ptr::NonNull::<T>::dangling().as_ptr() as *const T } else { base.add(d.layout.offset) };
            ndarray::ArrayView::from_shape_ptr(ndarray::IxDyn(&shape).strides(ndarray::IxDyn(&strides)), ptr)
        };
        let arr = unsafe { PyArrayDyn::<T>::borrow_from_array(&view, slf.clone().into_any()) };
        Ok(arr.into_any())
    })
}

/// A new tensor placed on `dev` (made on the host), with requires_grad set.
fn finish_on(py: Python<'_>, t: Tensor, dev: Option<crate::backend::Device>, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    let t = match dev {
        Some(d) => crate::backend::cuda::place(t, d).py()?,
        None => t,
    };
    finish(py, t, requires_grad)
}

/// A creation function called with `out=`: torch's out= semantics in `_out.creation_out`, which
/// calls the function again without it (`kw`: the keyword arguments given, None for the others).
fn creation_out(py: Python<'_>, fname: &str, args: Bound<'_, PyTuple>, kw: &[(&str, Option<Bound<'_, PyAny>>)], out: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let d = pyo3::types::PyDict::new(py);
    for (k, v) in kw {
        d.set_item(*k, v)?;
    }
    let r = py.import("ferrograd._out")?.getattr("creation_out")?.call1((fname, args, d, out))?;
    Ok(r.extract::<Py<PyTensor>>()?)
}

/// rand/randn/randint with a `generator=`: the values come from it (`utils._generator.draw_like`,
/// which raises torch's errors for something that is no Generator or one of another device type),
/// in the dtype and on the device of `like` (zeros of the result: the global generator is not
/// advanced, as in torch).
fn from_generator(py: Python<'_>, kind: &str, g: &Bound<'_, PyAny>, like: Tensor, low: i64, high: i64, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    let like = wrap(py, like)?;
    let r = py.import("ferrograd.utils._generator")?.getattr("draw_like")?.call1((kind, like, g, low, high))?;
    let t = r.extract::<PyRef<'_, PyTensor>>()?.t.clone();
    finish(py, t, requires_grad)
}

fn finish(py: Python<'_>, t: Tensor, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    if !requires_grad {
        return wrap(py, t);
    }
    t.set_requires_grad(true).py()?;
    let obj = wrap(py, t)?;
    super::graph::register_leaf(obj.bind(py))?;
    Ok(obj)
}

fn default_float(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
    Ok(opt_dtype(dtype)?.unwrap_or_else(DType::default_float))
}

/// What a creation function parses before it makes anything: the shape (varargs or `size=`), the
/// dtype and the device, which default to `like`'s (the Tensor.new_* methods) or to float32 on the
/// CPU.
fn creation_args(args: &Bound<'_, PyTuple>, size: Option<Bound<'_, PyAny>>, fname: &str, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, like: Option<&Tensor>) -> PyResult<(Vec<usize>, DType, Device)> {
    let (shape, dt) = (size_args(args, size.as_ref(), fname)?, dtype_arg(dtype, fname)?); // every type before any value
    let dev = parse_device(device)?;
    // (torch's zeros says it its own way)
    let s = sizes(&shape).map_err(|e| if fname == "zeros" { pyo3::exceptions::PyRuntimeError::new_err("zeros: Dimension size must be non-negative.") } else { e })?;
    Ok((s, dt.unwrap_or_else(|| like.map_or_else(DType::default_float, Tensor::dtype)), dev.unwrap_or(like.map_or(Device::Cpu, Tensor::device))))
}

/// torch's `layout=` and `pin_memory=` of the creation functions: ferrograd makes strided tensors
/// (the only layout it has), and pin_memory=True needs a CUDA device as in torch (the host tensor is
/// ordinary memory: no page-locked allocator yet); the wrong types are torch's TypeErrors.
fn check_layout_pin(fname: &str, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    if let Some(l) = layout.filter(|l| !l.is_none()) {
        if l.get_type().name()?.to_string() != "layout" {
            return Err(PyTypeError::new_err(format!("{}(): argument 'layout' must be torch.layout, not {}", fname, type_name(l))));
        }
    }
    if let Some(p) = pin_memory.filter(|p| !p.is_none()) {
        if !p.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(format!("{}(): argument 'pin_memory' must be bool, not {}", fname, type_name(p))));
        }
        if p.is_truthy()? && !crate::backend::cuda::is_available() {
            return Err(crate::backend::cuda::unavailable()).py();
        }
    }
    Ok(())
}

/// zeros, ones, empty and their Tensor.new_* methods: a tensor filled with `value`.
#[allow(clippy::too_many_arguments)]
pub(super) fn filled(py: Python<'_>, fname: &str, value: f64, args: &Bound<'_, PyTuple>, size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool, like: Option<&Tensor>) -> PyResult<Py<PyTensor>> {
    let (s, dt, dev) = creation_args(args, size, fname, dtype, device, like)?;
    let t = if value == 0.0 { Tensor::zeros_on(&s, dt, dev) } else { Tensor::full_on(&s, value, dt, dev) };
    finish(py, t.py()?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn zeros(py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("zeros", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        // torch's out= semantics live in one Python helper (ferrograd/_out.py); only this path pays
        return creation_out(py, "zeros", args.clone(), &[("size", size), ("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    filled(py, "zeros", 0.0, args, size, dtype, device, requires_grad, None)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn ones(py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("ones", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "ones", args.clone(), &[("size", size.clone()), ("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    filled(py, "ones", 1.0, args, size, dtype, device, requires_grad, None)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, memory_format=None, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn empty(py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, memory_format: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("empty", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "empty", args.clone(), &[("size", size.clone()), ("dtype", dtype.cloned()), ("device", device.cloned()), ("memory_format", memory_format.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    // a new tensor in a format's layout (contiguous by default; preserve_format means nothing here)
    let format = match memory_format {
        Some(f) if !f.is_none() => memory_format_arg(Some(f), "empty")?,
        _ => crate::tensor::MemoryFormat::Contiguous,
    };
    let (s, dt, dev) = creation_args(args, size, "empty", dtype, device, None)?;
    if format == crate::tensor::MemoryFormat::Preserve {
        return Err(pyo3::exceptions::PyRuntimeError::new_err("unsupported memory format Preserve"));
    }
    let t = Tensor::zeros_on(&s, dt, dev).py()?;
    let l = crate::backend::cpu::like_layout(&t.layout(), format).py()?;
    finish(py, t.view_with_layout(l), requires_grad)
}

/// full and Tensor.new_full: the dtype is `like`'s, or else fill_value's.
#[allow(clippy::too_many_arguments)]
pub(super) fn full_of(py: Python<'_>, fname: &str, size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool, like: Option<&Tensor>) -> PyResult<Py<PyTensor>> {
    // torch checks both types, then converts fill_value before size (an unpacking error of size's
    // later elements comes after fill_value's overflow)
    let (shape, v) = (parse_int_list(size, 0), parse_number(fill_value));
    let type_phase = |e: &ArgErr| matches!(e, ArgErr::Type(_) | ArgErr::Element(..));
    let (shape, v) = match (shape, v) {
        (Err(e), _) if type_phase(&e) => return Err(e.into_py("tuple of ints", Some((fname, "size", 1)))),
        (_, Err(e)) => return Err(e.into_py("Number", Some((fname, "fill_value", 2)))),
        (Err(e), _) => return Err(e.into_py("tuple of ints", Some((fname, "size", 1)))),
        (Ok(s), Ok(v)) => (s, v),
    };
    let dev = parse_device(device)?.unwrap_or(like.map_or(Device::Cpu, Tensor::device));
    let s = sizes(&shape)?;
    let dt = dtype_arg(dtype, fname)?.unwrap_or(like.map_or(v.dtype(), Tensor::dtype));
    // (torch does not check a one-element float16/bfloat16 fill)
    if !(dt.is_narrow() && dt.is_float() && s.iter().product::<usize>() == 1) && !dt.fits(v) {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("value cannot be converted to type {} without overflow", dt.c_name())));
    }
    finish(py, Tensor::full_on(&s, v.to_f64(), dt, dev).py()?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn full(py: Python<'_>, size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("full", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "full", PyTuple::new(py, [size.clone(), fill_value.clone()])?, &[("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    full_of(py, "full", size, fill_value, dtype, device, requires_grad, None)
}

/// The *_like functions' result: `values` (a new contiguous tensor of like.numel() elements) seen
/// with like's shape and the strides `memory_format` gives (`cpu::like_layout`).
#[pyfunction]
#[pyo3(signature = (values, like, memory_format=None))]
fn _as_like(py: Python<'_>, values: &Bound<'_, PyAny>, like: &Bound<'_, PyAny>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    let (v, like) = (tensor_arg(values, "_as_like", "values")?, tensor_arg(like, "_as_like", "like")?);
    let l = crate::backend::cpu::like_layout(&like.layout(), memory_format_arg(memory_format, "empty_like")?).py()?;
    let vl = v.layout();
    if !vl.is_contiguous() || vl.offset != 0 || vl.numel() != l.numel() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err("_as_like: values must be a new contiguous tensor of like's numel"));
    }
    wrap(py, v.view_with_layout(l))
}

#[pyfunction]
#[pyo3(signature = (*args, start=None, end=None, step=None, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn arange(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    #[pyo3(from_py_with = given)] start: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = given)] end: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = given)] step: Option<Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = bool_or_none)] requires_grad: bool,
    out: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    pin_memory: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    use crate::tensor::Scalar;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        check_layout_pin("arange", layout, pin_memory)?;
        return creation_out(py, "arange", args.clone(), &[("start", start), ("end", end), ("step", step), ("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    // torch's two overloads, arange(end) and arange(start, end, step=1), positional or by keyword
    let a: Vec<Bound<'_, PyAny>> = args.iter().collect();
    if a.len() > 3 {
        return Err(PyTypeError::new_err(format!("arange() takes from 1 to 3 positional arguments but {} were given", a.len())));
    }
    let (start, end, step) = if start.is_none() && step.is_none() && ((a.len() == 1 && end.is_none()) || (a.is_empty() && end.is_some())) {
        (None, a.into_iter().next().or(end), None)
    } else {
        for (i, (name, kw)) in [("start", &start), ("end", &end), ("step", &step)].iter().enumerate() {
            if i < a.len() && kw.is_some() {
                return Err(PyTypeError::new_err(format!("arange() got multiple values for argument '{}'", name)));
            }
        }
        let mut pos = a.into_iter();
        let (s, e, st) = (pos.next().or(start), pos.next().or(end), pos.next().or(step));
        if s.is_none() || e.is_none() {
            let missing = if e.is_none() { "end" } else { "start" };
            return Err(PyTypeError::new_err(format!("arange() missing 1 required positional arguments: \"{}\"", missing)));
        }
        (s, e, st)
    };
    let end = end.ok_or_else(|| PyTypeError::new_err("arange() missing 1 required positional arguments: \"end\""))?;
    check_layout_pin("arange", layout, pin_memory)?;
    let dev = parse_device(device)?;
    let (s, e, st) = match (&start, &step) {
        (None, _) => (Scalar::Int(0), number_arg(&end, "arange", "end", 1)?, Scalar::Int(1)),
        (Some(s), None) => {
            let v = numbers("arange", &[(s, "start", 1), (&end, "end", 2)])?;
            (v[0], v[1], Scalar::Int(1))
        }
        (Some(s), Some(st)) => {
            let v = numbers("arange", &[(s, "start", 1), (&end, "end", 2), (st, "step", 3)])?;
            (v[0], v[1], v[2])
        }
    };
    let any_float = [s, e, st].iter().any(|v| matches!(v, Scalar::Float(_)));
    let dt = opt_dtype(dtype)?.unwrap_or(if any_float { DType::default_float() } else { DType::I64 });
    finish_on(py, factory::arange(s, e, st, dt).py()?, dev, requires_grad)
}

/// linspace's start and end: Numbers, or tensors of 0 dims (torch's Tensor overloads), checked
/// once every argument has its type (Err: a tensor's dims).
fn linspace_bounds(start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<[Result<f64, usize>; 2]> {
    let tensor = |o: &Bound<'_, PyAny>| -> PyResult<Option<Result<f64, usize>>> {
        let Ok(t) = o.cast::<PyTensor>() else { return Ok(None) };
        let t = &t.get().t;
        Ok(Some(if t.ndim() == 0 { Ok(t.item().py()?.to_f64()) } else { Err(t.ndim()) }))
    };
    let (a, b) = (tensor(start)?, tensor(end)?);
    let mut nums: Vec<(&Bound<'_, PyAny>, &str, usize)> = Vec::new();
    if a.is_none() {
        nums.push((start, "start", 1));
    }
    if b.is_none() {
        nums.push((end, "end", 2));
    }
    let mut v = numbers("linspace", &nums)?.into_iter().map(|s| Ok(s.to_f64()));
    Ok([a.unwrap_or_else(|| v.next().unwrap_or(Ok(0.0))), b.unwrap_or_else(|| v.next().unwrap_or(Ok(0.0)))])
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn linspace(py: Python<'_>, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>, steps: Int, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("linspace", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "linspace", PyTuple::new(py, [start.clone(), end.clone(), steps.v()?.into_pyobject(py)?.into_any()])?, &[("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    // torch converts steps before start and end (an int too big for either: steps' ValueError first)
    let [a, b] = match linspace_bounds(start, end) {
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => {
            steps.v()?;
            return Err(e);
        }
        r => r?,
    };
    let steps = steps.v()?;
    let (start, end) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            let parts: Vec<String> = [("start", a), ("end", b)].iter().filter_map(|(n, r)| r.err().map(|d| format!("{} with {} dimension(s)", n, d))).collect();
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "linspace only supports 0-dimensional start and end tensors, but got {}.", parts.join(" and "))));
        }
    };
    let dev = parse_device(device)?;
    let dt = default_float(dtype)?;
    // torch converts the bounds to the dtype, checked (a whole number as an integer)
    let num = |v: f64| if v.fract() == 0.0 && v.abs() < 9007199254740992.0 { crate::tensor::Scalar::Int(v as i64) } else { crate::tensor::Scalar::Float(v) };
    if !dt.fits(num(start)) || !dt.fits(num(end)) {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("value cannot be converted to type {} without overflow", dt.c_name())));
    }
    finish_on(py, factory::linspace(start, end, steps, dt).py()?, dev, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn eye(py: Python<'_>, n: Int, #[pyo3(from_py_with = given_int)] m: Option<Int>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("eye", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "eye", PyTuple::new(py, std::iter::once(n.v()?).chain(m.map(|m| m.v()).transpose()?).collect::<Vec<i64>>())?, &[("dtype", dtype.cloned()), ("device", device.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    let dev = parse_device(device)?;
    let n = n.v()?;
    let m = opt_v(m)?.unwrap_or(n);
    if n < 0 || m < 0 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("n must be greater or equal to 0, got {}", n.min(m))));
    }
    finish_on(py, factory::eye(n as usize, m as usize, default_float(dtype)?).py()?, dev, requires_grad)
}

#[pyfunction]
#[pyo3(name = "rand", signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn rand_uniform(py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, generator: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("rand", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "rand", args.clone(), &[("size", size.clone()), ("dtype", dtype.cloned()), ("device", device.cloned()), ("generator", generator.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    let (s, dt, dev) = creation_args(args, size, "rand", dtype, device, None)?;
    if let Some(g) = generator.filter(|g| !g.is_none()) {
        return from_generator(py, "rand", g, Tensor::zeros_on(&s, dt, dev).py()?, 0, 0, requires_grad);
    }
    finish(py, factory::random_on(&s, dt, false, dev).py()?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, generator=None, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn randn(py: Python<'_>, args: &Bound<'_, PyTuple>, #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, #[pyo3(from_py_with = bool_or_none)] requires_grad: bool, generator: Option<&Bound<'_, PyAny>>, out: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>, pin_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
    check_layout_pin("randn", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "randn", args.clone(), &[("size", size.clone()), ("dtype", dtype.cloned()), ("device", device.cloned()), ("generator", generator.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    let (s, dt, dev) = creation_args(args, size, "randn", dtype, device, None)?;
    if let Some(g) = generator.filter(|g| !g.is_none()) {
        return from_generator(py, "randn", g, Tensor::zeros_on(&s, dt, dev).py()?, 0, 0, requires_grad);
    }
    finish(py, factory::random_on(&s, dt, true, dev).py()?, requires_grad)
}

#[pyfunction]
#[pyo3(signature = (*args, low=None, high=None, size=None, dtype=None, device=None, requires_grad=false, generator=None, out=None, layout=None, pin_memory=None))]
#[allow(clippy::too_many_arguments)]
fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    #[pyo3(from_py_with = given)] low: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = given)] high: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = given)] size: Option<Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = bool_or_none)] requires_grad: bool,
    generator: Option<&Bound<'_, PyAny>>,
    out: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
    pin_memory: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    check_layout_pin("randint", layout, pin_memory)?;
    if let Some(o) = out.filter(|o| !o.is_none()) {
        return creation_out(py, "randint", args.clone(), &[("low", low), ("high", high), ("size", size), ("dtype", dtype.cloned()), ("device", device.cloned()), ("generator", generator.cloned()), ("requires_grad", Some(pyo3::types::PyBool::new(py, requires_grad).to_owned().into_any()))], o);
    }
    let dev = parse_device(device)?;
    // torch's two overloads, (high, size) and (low, high, size): the first whose parameters the
    // positional and keyword arguments fill exactly
    let a: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let keywords = [("low", &low), ("high", &high), ("size", &size)];
    let bind = |params: &[&str]| -> Option<Vec<Bound<'_, PyAny>>> {
        if a.len() > params.len() || keywords.iter().any(|(k, v)| v.is_some() && !params[a.len()..].contains(k)) {
            return None;
        }
        params.iter().enumerate().map(|(i, p)| a.get(i).cloned().or_else(|| keywords.iter().find(|(k, _)| k == p).and_then(|(_, v)| (*v).clone()))).collect()
    };
    let (low, high, sz) = match (bind(&["high", "size"]), bind(&["low", "high", "size"])) {
        (Some(v), _) => (None, v[0].clone(), v[1].clone()),
        (None, Some(v)) => (Some(v[0].clone()), v[1].clone(), v[2].clone()),
        _ => {
            let got: Vec<String> = a.iter().map(type_name).chain(keywords.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{}={}", k, type_name(v))))).collect();
            return Err(PyTypeError::new_err(format!(
                "randint() received an invalid combination of arguments - got ({}), but expected one of (int high, tuple of ints size) or (int low, int high, tuple of ints size)",
                got.join(", ")
            )));
        }
    };
    // every type first (torch's parser), then the values
    let parsed = (low.as_ref().map(|l| Int::extract(l.as_borrowed())).transpose(), Int::extract(high.as_borrowed()));
    let s = size_arg(&sz, "randint", "size", if a.len() > usize::from(low.is_some()) + 1 { a.len() } else { 0 });
    let (low, high) = (parsed.0?, parsed.1?);
    let s = s?;
    let (low, high) = (opt_v(low)?.unwrap_or(0), high.v()?);
    let s = sizes(&s)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    if let Some(g) = generator.filter(|g| !g.is_none()) {
        // the engine's checks of the bounds and the dtype's range, on an empty result
        factory::randint(low, high, &[0], dt).py()?;
        return from_generator(py, "randint", g, Tensor::zeros_on(&s, dt, dev.unwrap_or(crate::backend::Device::Cpu)).py()?, low, high, requires_grad);
    }
    let t = match dev {
        Some(d) => factory::randint_on(low, high, &s, dt, d),
        None => factory::randint(low, high, &s, dt),
    };
    finish(py, t.py()?, requires_grad)
}

#[pyfunction]
fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    // torch: int(seed), then a seed in [-2**63, 2**64) (a negative one taken modulo 2**64)
    let s: i128 = seed.py().get_type::<pyo3::types::PyInt>().call1((seed,))?.extract().unwrap_or(i128::MAX);
    if !(i64::MIN as i128..=u64::MAX as i128).contains(&s) {
        return Err(PyValueError::new_err("Overflow when unpacking long long"));
    }
    factory::manual_seed(s as u64);
    Ok(())
}

/// torch.result_type: the dtype an op computes two operands (tensors or numbers) in.
#[pyfunction]
fn result_type(py: Python<'_>, tensor1: &Bound<'_, PyAny>, tensor2: &Bound<'_, PyAny>) -> PyResult<Py<PyDType>> {
    let a = operand_arg(tensor1, "result_type", "tensor1")?;
    let b = operand_arg(tensor2, "result_type", "tensor2")?;
    dtype_obj(py, ops::promote_types(&[&a, &b]))
}

#[pyfunction]
fn initial_seed() -> u64 {
    factory::initial_seed()
}

/// The global generator's state as an int64 tensor (torch returns a ByteTensor; both are opaque
/// values for `set_rng_state`).
#[pyfunction]
fn get_rng_state(py: Python<'_>) -> PyResult<Py<PyTensor>> {
    let st: Vec<i64> = factory::get_rng_state().iter().map(|&w| w as i64).collect();
    wrap(py, Tensor::from_vec(st, &[factory::RNG_STATE_LEN]))
}

#[pyfunction]
fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
    let t = new_state
        .cast::<PyTensor>()
        .map_err(|_| PyTypeError::new_err(format!("set_rng_state(): argument 'new_state' must be Tensor, not {}", new_state.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?
        .get()
        .t
        .clone();
    if t.dtype() != DType::I64 || t.shape().as_slice() != [factory::RNG_STATE_LEN] {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "set_rng_state(): expected a state from ferrograd.get_rng_state() (int64, {} elements), got {} of shape {:?}",
            factory::RNG_STATE_LEN,
            t.dtype().name(),
            t.shape()
        )));
    }
    let v = t.with_contiguous::<i64, _>(|s| s.to_vec()).py()?;
    let mut st = [0u64; factory::RNG_STATE_LEN];
    for (d, s) in st.iter_mut().zip(v) {
        *d = s as u64;
    }
    factory::set_rng_state(&st);
    Ok(())
}

/// Note [torch_function dispatch] (python/ferrograd/overrides.py), for a native function: on its
/// failure path only, the call handed to an argument's `__torch_function__` (an fx Proxy's) as a
/// call of the public `ferrograd.<name>` with `args`; `err` when no argument overrides.
fn overridden(py: Python<'_>, name: &str, args: Bound<'_, PyTuple>, err: PyErr) -> PyResult<Py<PyAny>> {
    let Ok(public) = py.import("ferrograd").and_then(|m| m.getattr(name)) else { return Err(err) };
    let r = py.import("ferrograd.overrides")?.getattr("dispatch_if_overridden")?.call1((public, args, pyo3::types::PyDict::new(py)))?;
    if r.is(&py.NotImplemented()) {
        return Err(err);
    }
    Ok(r.unbind())
}

/// cat/stack's arguments as the caller gave them (dim left out when it is the default).
fn list_and_dim<'py>(py: Python<'py>, tensors: &Bound<'py, PyAny>, dim: &Int) -> PyResult<Bound<'py, PyTuple>> {
    match dim.v()? {
        0 => PyTuple::new(py, [tensors.clone()]),
        d => PyTuple::new(py, [tensors.clone(), d.into_pyobject(py)?.into_any()]),
    }
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=Int::of(0)), text_signature = "(tensors, dim=0)")]
fn cat(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: Int) -> PyResult<Py<PyAny>> {
    if tensors.cast::<PyTensor>().is_ok() {
        return Err(PyTypeError::new_err("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"));
    }
    let ts = match tensor_list(tensors) {
        Ok(ts) => ts,
        // a dim that does not fit leaves the list's own TypeError, as torch reports it first
        Err(e) => return list_and_dim(py, tensors, &dim).map_or(Err(e.clone_ref(py)), |args| overridden(py, "cat", args, e)),
    };
    if ts.is_empty() {
        return Err(PyValueError::new_err("torch.cat(): expected a non-empty list of Tensors"));
    }
    // torch's CPU autocast list promotes cat's inputs to the widest (Note [Autocast])
    let ts = crate::ops::autocast::list(crate::ops::table::AutocastRule::CPU_PROMOTE, &ts).py()?.unwrap_or(ts);
    Ok(wrap(py, ops::cat(&ts, dim.v()?).py()?)?.into_any())
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=Int::of(0)), text_signature = "(tensors, dim=0)")]
fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, dim: Int) -> PyResult<Py<PyAny>> {
    if tensors.cast::<PyTensor>().is_ok() {
        return Err(PyTypeError::new_err("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"));
    }
    let ts = match tensor_list(tensors) {
        Ok(ts) => ts,
        // a dim that does not fit leaves the list's own TypeError, as torch reports it first
        Err(e) => return list_and_dim(py, tensors, &dim).map_or(Err(e.clone_ref(py)), |args| overridden(py, "stack", args, e)),
    };
    let ts = crate::ops::autocast::list(crate::ops::table::AutocastRule::CPU_PROMOTE, &ts).py()?.unwrap_or(ts);
    Ok(wrap(py, ops::stack(&ts, dim.v()?).py()?)?.into_any())
}

#[pyfunction]
#[pyo3(name = "where", signature = (condition, input=None, other=None))]
fn where_(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = given)] input: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = given)] other: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let given = || PyTuple::new(py, std::iter::once(condition.clone()).chain(input.clone()).chain(other.clone()).collect::<Vec<_>>());
    let c = match tensor_arg(condition, "where", "condition") {
        Ok(c) => c,
        Err(e) => return overridden(py, "where", given()?, e),
    };
    match (input.as_ref(), other.as_ref()) {
        (Some(a), Some(b)) => {
            // every type before any value (an int too big for a scalar)
            let (a, b) = match (operand_arg(a, "where", "input"), operand_arg(b, "where", "other")) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), Ok(_)) | (Ok(_), Err(e)) => return overridden(py, "where", given()?, e),
                (Err(ea), Err(eb)) => return overridden(py, "where", given()?, if eb.is_instance_of::<PyTypeError>(py) && !ea.is_instance_of::<PyTypeError>(py) { eb } else { ea }),
            };
            Ok(wrap(py, ops::where_(&c, &a, &b).py()?)?.into_any())
        }
        (None, None) => {
            // torch: a 0-d condition is a 1-d one of one element
            let c = if c.ndim() == 0 { ops::reshape(&c, &[1]).py()? } else { c };
            let nz = ops::nonzero(&c).py()?;
            let n = nz.shape()[1];
            let parts = (0..n).map(|i| ops::select(&nz, 1, i as i64).map(|t| ops::contiguous_copy(&t))).collect::<crate::Result<crate::Result<Vec<_>>>>().py()?.py()?;
            let objs = parts.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, objs)?.into_any().unbind())
        }
        _ => Err(PyTypeError::new_err("where() takes 1 or 3 arguments")),
    }
}

/// The current Python stack, for anomaly mode.
fn python_stack() -> Option<String> {
    Python::attach(|py| -> PyResult<String> {
        let tb = py.import("traceback")?;
        let lines = tb.call_method0("format_stack")?;
        Ok(lines.try_iter()?.filter_map(|l| l.ok()?.extract::<String>().ok()).collect::<Vec<_>>().join(""))
    })
    .ok()
}

/// Runs Python's pending signal handlers (on the main thread); the KeyboardInterrupt a Ctrl-C
/// raises comes back as an engine error carrying the Python exception.
fn python_check_signals() -> crate::Result<()> {
    Python::attach(|py| py.check_signals()).map_err(super::autograd_function::py_error)
}

#[pyfunction]
#[pyo3(signature = (mode, check_nan=true))]
fn _set_anomaly_enabled(mode: bool, check_nan: bool) {
    autograd::set_stack_capture(python_stack);
    autograd::set_anomaly_enabled(mode, check_nan);
}

#[pyfunction]
fn is_anomaly_enabled() -> bool {
    autograd::is_anomaly_enabled()
}

#[pyfunction]
fn is_anomaly_check_nan_enabled() -> bool {
    autograd::is_anomaly_check_nan_enabled()
}

/// Cap the threads kernels and the parallel backward use, at any time, up to the pool's size
/// (`backend::set_num_threads`).
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n > i32::MAX as i64 {
        return Err(pyo3::exceptions::PyValueError::new_err("Overflow when unpacking long"));
    }
    if n < 1 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err("set_num_threads expects a positive integer"));
    }
    crate::backend::set_num_threads(n as usize);
    Ok(())
}

/// When backward may run independent nodes on several threads: "auto" (the default: with more
/// than two threads), "always" (with two or more; the tests of the parallel engine use it on
/// small machines) or "off". Returns the previous setting.
#[pyfunction]
fn _set_parallel_backward(mode: &str) -> PyResult<&'static str> {
    use crate::autograd::engine::{set_parallel_backward, ParallelBackward};
    let mode = match mode {
        "off" => ParallelBackward::Off,
        "auto" => ParallelBackward::Auto,
        "always" => ParallelBackward::Always,
        other => return Err(pyo3::exceptions::PyValueError::new_err(format!("expected 'off', 'auto' or 'always', got '{other}'"))),
    };
    Ok(match set_parallel_backward(mode) {
        ParallelBackward::Off => "off",
        ParallelBackward::Auto => "auto",
        ParallelBackward::Always => "always",
    })
}

/// Registered with os.register_at_fork: kernels run sequentially in the child.
#[pyfunction]
fn _after_fork_in_child() {
    crate::backend::mark_forked_child();
}

#[pyfunction]
fn get_num_threads() -> usize {
    crate::backend::num_threads()
}

/// Enter `saved_tensors_hooks(pack, unpack)` on this thread.
#[pyfunction]
fn _push_saved_tensors_hooks(pack: Py<PyAny>, unpack: Py<PyAny>) {
    let (pack_fn, unpack_fn) = saved_hooks(pack, unpack);
    autograd::push_saved_tensors_hooks(pack_fn, unpack_fn);
}

/// Python pack/unpack hooks as the engine's.
pub(super) fn saved_hooks(pack: Py<PyAny>, unpack: Py<PyAny>) -> (autograd::PackHook, autograd::UnpackHook) {
    let pack_fn: autograd::PackHook = Arc::new(move |t: &Tensor| {
        Python::attach(|py| -> PyResult<Box<dyn std::any::Any + Send + Sync>> {
            let r = pack.bind(py).call1((wrap(py, t.clone())?,))?;
            Ok(Box::new(r.unbind()))
        })
        .map_err(super::autograd_function::py_error)
    });
    let unpack_fn: autograd::UnpackHook = Arc::new(move |v: &(dyn std::any::Any + Send + Sync)| {
        Python::attach(|py| -> PyResult<Tensor> {
            let obj = v.downcast_ref::<Py<PyAny>>().ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("saved tensor was not packed by Python"))?;
            let r = unpack.bind(py).call1((obj.clone_ref(py),))?;
            Ok(r.cast::<PyTensor>().map_err(|_| PyTypeError::new_err("unpack_hook must return a Tensor"))?.get().t.clone())
        })
        .map_err(super::autograd_function::py_error)
    });
    (pack_fn, unpack_fn)
}

#[pyfunction]
fn _pop_saved_tensors_hooks() {
    autograd::pop_saved_tensors_hooks();
}

fn pair(v: &[i64], what: &str) -> PyResult<(usize, usize)> {
    let bad = || PyValueError::new_err(format!("{} must be a non-negative int or a pair of them", what));
    match v {
        [a] if *a >= 0 => Ok((*a as usize, *a as usize)),
        [a, b] if *a >= 0 && *b >= 0 => Ok((*a as usize, *b as usize)),
        _ => Err(bad()),
    }
}

fn window(kernel_size: &Bound<'_, PyAny>, dilation: &Bound<'_, PyAny>, padding: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>) -> PyResult<ops::Window> {
    let k = pair(&seq_ints(kernel_size, "kernel_size")?, "kernel_size")?;
    let s = pair(&seq_ints(stride, "stride")?, "stride")?;
    let d = pair(&seq_ints(dilation, "dilation")?, "dilation")?;
    if k.0 == 0 || k.1 == 0 || s.0 == 0 || s.1 == 0 || d.0 == 0 || d.1 == 0 {
        return Err(pyo3::exceptions::PyRuntimeError::new_err("kernel_size, stride and dilation must be greater than zero"));
    }
    Ok(ops::Window { kernel: k, dilation: d, padding: pair(&seq_ints(padding, "padding")?, "padding")?, stride: s })
}

/// torch.nn.functional.unfold (im2col).
#[pyfunction]
fn _unfold(py: Python<'_>, input: &Bound<'_, PyAny>, kernel_size: &Bound<'_, PyAny>, dilation: &Bound<'_, PyAny>, padding: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let x = tensor_arg(input, "unfold", "input")?;
    wrap(py, ops::unfold(&x, window(kernel_size, dilation, padding, stride)?).py()?)
}

/// torch.nn.functional.fold (col2im).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _fold(py: Python<'_>, input: &Bound<'_, PyAny>, output_size: &Bound<'_, PyAny>, kernel_size: &Bound<'_, PyAny>, dilation: &Bound<'_, PyAny>, padding: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let x = tensor_arg(input, "fold", "input")?;
    let o = pair(&seq_ints(output_size, "output_size")?, "output_size")?;
    wrap(py, ops::fold(&x, o, window(kernel_size, dilation, padding, stride)?).py()?)
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// Sets grad mode and returns the previous one (the Python context managers use this).
#[pyfunction]
fn _set_grad_enabled(mode: bool) -> bool {
    autograd::set_grad_enabled(mode)
}

fn grads_arg(obj: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<Option<Tensor>>> {
    match obj {
        None => Ok(vec![None; n]),
        Some(o) if o.is_none() => Ok(vec![None; n]),
        Some(o) => {
            if let Ok(t) = o.cast::<PyTensor>() {
                return Ok(vec![Some(t.get().t.clone())]);
            }
            let mut v = Vec::new();
            for item in o.try_iter()? {
                let item = item?;
                v.push(if item.is_none() { None } else { Some(tensor_arg(&item, "backward", "grad_tensors")?) });
            }
            if v.len() != n {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!("grad can be implicitly created only for scalar outputs; got {} gradients for {} outputs", v.len(), n)));
            }
            Ok(v)
        }
    }
}

/// torch.autograd.backward.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors=None, retain_graph=None, create_graph=false, inputs=None))]
fn _backward(py: Python<'_>, tensors: &Bound<'_, PyAny>, grad_tensors: Option<&Bound<'_, PyAny>>, retain_graph: Option<bool>, create_graph: bool, inputs: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let roots = tensor_list(tensors)?;
    let grads = grads_arg(grad_tensors, roots.len())?;
    let inputs = match inputs {
        Some(i) if !i.is_none() => Some(tensor_list(i)?),
        _ => None,
    };
    run_backward(py, roots, grads, retain_graph.unwrap_or(create_graph), create_graph, inputs, true, false)?;
    Ok(())
}

/// torch.autograd.grad.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=None, materialize_grads=false))]
#[allow(clippy::too_many_arguments)]
fn _grad<'py>(py: Python<'py>, outputs: &Bound<'py, PyAny>, inputs: &Bound<'py, PyAny>, grad_outputs: Option<&Bound<'py, PyAny>>, retain_graph: Option<bool>, create_graph: bool, allow_unused: Option<bool>, materialize_grads: bool) -> PyResult<Bound<'py, PyTuple>> {
    let roots = tensor_list(outputs)?;
    let ins = tensor_list(inputs)?;
    let grads = grads_arg(grad_outputs, roots.len())?;
    let allow_unused = allow_unused.unwrap_or(materialize_grads);
    let res = run_backward(py, roots, grads, retain_graph.unwrap_or(create_graph), create_graph, Some(ins.clone()), false, allow_unused)?;
    let objs = res
        .into_iter()
        .zip(ins.iter())
        .map(|(g, i)| -> PyResult<Py<PyAny>> {
            match g {
                Some(g) => Ok(wrap(py, g)?.into_any()),
                None if materialize_grads => Ok(wrap(py, ops::zeros_like(i).py()?)?.into_any()),
                None => Ok(py.None()),
            }
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, objs)
}

/// The torch names of every op in the registry.
#[pyfunction]
fn registered_ops(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, ops::registry().map(|o| o.name))
}

/// The op table (src/ops/table.rs) as a list of dicts, one per row: what Python generates its
/// function forms, aliases, in-place functions, `out=`, stub and parity tests from.
#[pyfunction]
fn op_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    use crate::ops::table::{Binding, Inplace};
    let rows = ops::table::ops()
        .map(|e| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", e.name)?;
            d.set_item("rust", e.rust)?;
            d.set_item("aliases", e.aliases.iter().filter(|a| !a.contains('.')).collect::<Vec<_>>())?;
            d.set_item("special", e.aliases.iter().filter_map(|a| a.strip_prefix("special.")).collect::<Vec<_>>())?;
            d.set_item("grad_fn", if e.grad_fn.is_empty() { None } else { Some(e.grad_fn) })?;
            d.set_item("family", e.family.word())?;
            let dtypes = pyo3::types::PyDict::new(py);
            dtypes.set_item("cpu", e.cpu_dtypes().to_vec())?;
            dtypes.set_item("cuda", e.cuda_dtypes().to_vec())?;
            d.set_item("dtypes", dtypes)?;
            d.set_item("cuda_kernel_dtypes", e.cuda_kernel_dtypes().to_vec())?;
            d.set_item("saved", e.saved.to_vec())?;
            d.set_item("kernel", if e.kernel.is_empty() { None } else { Some(e.kernel) })?;
            d.set_item("cuda", e.cuda)?;
            d.set_item("backward", if e.backward.is_empty() { None } else { Some(e.backward) })?;
            let (inplace, native, inplace_gf): (Option<String>, bool, Option<&str>) = match e.inplace {
                Inplace::None => (None, false, None),
                Inplace::Native => (Some(format!("{}_", e.name)), true, Some(e.grad_fn)),
                Inplace::NoGrad(gf) => (Some(format!("{}_", e.name)), true, Some(gf)),
                Inplace::Custom => (Some(format!("{}_", e.name)), true, None),
                Inplace::Python => (Some(format!("{}_", e.name)), false, None),
            };
            d.set_item("inplace", inplace)?;
            d.set_item("inplace_native", native)?;
            d.set_item("inplace_grad_fn", inplace_gf)?;
            d.set_item("inplace_function", e.inplace_function)?;
            d.set_item("out", e.out)?;
            d.set_item("binding", match e.binding {
                Binding::Method => "method",
                Binding::Private => "private",
                Binding::Hidden => "hidden",
                Binding::Custom => "custom",
            })?;
            // slots the next issues fill (forward-mode AD, vmap): unset now
            d.set_item("jvp", py.None())?;
            d.set_item("batch", py.None())?;
            // torch's autocast class per device type (Note [Autocast])
            let ac = PyDict::new(py);
            ac.set_item("cpu", e.autocast.cpu.word())?;
            ac.set_item("cuda", e.autocast.cuda.word())?;
            d.set_item("autocast", ac)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// Live graph nodes in the arena, the arena's capacity, and the bytes of saved tensors.
#[pyfunction]
fn _graph_stats() -> (usize, usize, u64) {
    (autograd::live_nodes(), autograd::arena_capacity(), autograd::node::saved_bytes())
}

/// torch.set_default_dtype: a floating dtype, else torch's TypeError.
#[pyfunction]
fn _set_default_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    DType::set_default_float(to_dtype(dtype)?).map_err(|m| PyTypeError::new_err(m.to_string()))
}

/// torch.get_default_dtype.
#[pyfunction]
fn _get_default_dtype(py: Python<'_>) -> PyResult<Py<PyDType>> {
    dtype_obj(py, DType::default_float())
}

/// torch.promote_types.
#[pyfunction]
fn _promote_types(py: Python<'_>, type1: &Bound<'_, PyAny>, type2: &Bound<'_, PyAny>) -> PyResult<Py<PyDType>> {
    dtype_obj(py, DType::promote(to_dtype(type1)?, to_dtype(type2)?))
}

/// torch.result_type of two tensors or numbers.
#[pyfunction]
fn _result_type(py: Python<'_>, tensor1: &Bound<'_, PyAny>, tensor2: &Bound<'_, PyAny>) -> PyResult<Py<PyDType>> {
    let a = operand_arg(tensor1, "result_type", "tensor1")?;
    let b = operand_arg(tensor2, "result_type", "tensor2")?;
    dtype_obj(py, ops::promote_types(&[&a, &b]))
}

/// torch.can_cast: never float to integral, nor a number to bool.
#[pyfunction]
fn _can_cast(from_: &Bound<'_, PyAny>, to: &Bound<'_, PyAny>) -> PyResult<bool> {
    let (f, t) = (to_dtype(from_)?, to_dtype(to)?);
    let rank = |d: DType| if d == DType::Bool { 0 } else if d.is_int() { 1 } else { 2 };
    Ok(rank(f) <= rank(t))
}

#[pyfunction]
fn _cuda_is_available() -> bool {
    crate::backend::cuda::is_available()
}

#[pyfunction]
fn _cuda_device_count() -> usize {
    crate::backend::cuda::device_count()
}

#[pyfunction]
fn _cuda_device_name(index: usize) -> PyResult<String> {
    crate::backend::cuda::device_name(index).py()
}

#[pyfunction]
fn _cuda_capability(index: usize) -> PyResult<(i32, i32)> {
    crate::backend::cuda::capability(index).py()
}

#[pyfunction]
fn _cuda_synchronize() -> PyResult<()> {
    crate::backend::cuda::synchronize().py()
}

/// (allocated, peak, reserved, driver allocations) in bytes.
#[pyfunction]
fn _cuda_memory_stats() -> (usize, usize, usize, u64) {
    let s = crate::backend::cuda::memory_stats();
    (s.allocated, s.peak, s.reserved, s.alloc_calls)
}

#[pyfunction]
fn _cuda_reset_peak_memory_stats() {
    crate::backend::cuda::reset_peak_memory_stats()
}

#[pyfunction]
fn _cuda_empty_cache() {
    crate::backend::cuda::empty_cache()
}

/// Compile every kernel with NVRTC for `arch` (no GPU needed); the number compiled.
#[pyfunction]
fn _cuda_compile_all(py: Python<'_>, arch: &str) -> PyResult<usize> {
    py.detach(|| crate::backend::cuda::native::compile_all(arch)).py()
}

/// Compile one CUDA C source with NVRTC (the compile check's negative control).
#[pyfunction]
fn _cuda_compile_source(src: &str, arch: &str) -> PyResult<usize> {
    crate::backend::cuda::native::compile_source(src, arch).py()
}

// ---- NCCL (ferrograd.distributed's "nccl" backend) --------------------------------------------

use crate::backend::cuda::nccl;

#[pyfunction]
fn _nccl_available() -> bool {
    nccl::available()
}

#[pyfunction]
fn _nccl_version() -> PyResult<i32> {
    nccl::version().py()
}

/// The 128-byte id rank 0 makes and every rank passes to `_nccl_init`.
#[pyfunction]
fn _nccl_unique_id(py: Python<'_>) -> PyResult<Py<pyo3::types::PyBytes>> {
    let id = nccl::unique_id().py()?;
    Ok(pyo3::types::PyBytes::new(py, &id).unbind())
}

/// A communicator (an opaque address) for `rank` of `nranks`.
#[pyfunction]
fn _nccl_init(py: Python<'_>, id: Vec<u8>, nranks: i32, rank: i32) -> PyResult<usize> {
    py.detach(|| nccl::init(&id, nranks, rank)).py()
}

#[pyfunction]
fn _nccl_destroy(comm: usize) -> PyResult<()> {
    nccl::destroy(comm).py()
}

#[pyfunction]
fn _nccl_all_reduce(comm: usize, tensor: PyRef<'_, PyTensor>, op: &str) -> PyResult<()> {
    nccl::all_reduce(comm, &tensor.t, op).py()
}

#[pyfunction]
fn _nccl_broadcast(comm: usize, tensor: PyRef<'_, PyTensor>, root: i32) -> PyResult<()> {
    nccl::broadcast(comm, &tensor.t, root).py()
}

#[pyfunction]
fn _nccl_all_gather(comm: usize, out: PyRef<'_, PyTensor>, inp: PyRef<'_, PyTensor>) -> PyResult<()> {
    nccl::all_gather(comm, &out.t, &inp.t).py()
}

#[pyfunction]
fn _nccl_reduce_scatter(comm: usize, out: PyRef<'_, PyTensor>, inp: PyRef<'_, PyTensor>, op: &str) -> PyResult<()> {
    nccl::reduce_scatter(comm, &out.t, &inp.t, op).py()
}

/// Where to look for the NVIDIA pip packages' libraries (Python's sys.path).
#[pyfunction]
fn _cuda_set_python_paths(paths: Vec<std::path::PathBuf>) {
    crate::backend::cuda::native::set_python_paths(paths)
}

/// Is the NVRTC library loadable (built with the `cuda` feature)?
#[pyfunction]
fn _cuda_nvrtc_present() -> bool {
    crate::backend::cuda::native::nvrtc_present()
}

/// zeros(shape).scatter_add(dim, index, src) for `_more_ops._scatter_add_zeros` (src and index
/// of one shape, bounds already checked), differentiable in src.
#[pyfunction]
fn _scatter_add_zeros(py: Python<'_>, src: PyRef<'_, PyTensor>, shape: Vec<usize>, dim: usize, index: PyRef<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    wrap(py, ops::scatter_add_zeros(&src.t, &shape, dim, &index.t).py()?)
}

/// input.scatter_add(dim, index, src) as one node, for `_more_ops.scatter_add` (dims, shapes and
/// dtypes checked there, src narrowed to the index's shape).
#[pyfunction]
fn _scatter_add(py: Python<'_>, input: PyRef<'_, PyTensor>, dim: usize, index: PyRef<'_, PyTensor>, src: PyRef<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    wrap(py, ops::scatter_add(&input.t, dim, &index.t, &src.t).py()?)
}

/// zeros(shape).index_put_(indices, values, accumulate=True) without a gradient, for
/// `_more_ops._index_put_accumulate` (indices checked there; like: the dtype and device).
#[pyfunction]
fn _index_put_accumulate(py: Python<'_>, shape: Vec<usize>, indices: Vec<PyRef<'_, PyTensor>>, values: PyRef<'_, PyTensor>, like: PyRef<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    let idx: Vec<crate::tensor::Tensor> = indices.iter().map(|t| t.t.clone()).collect();
    wrap(py, ops::index_put_accumulate_zeros(&shape, &idx, &values.t, &like.t).py()?)
}

/// self.index_put_(indices, values, accumulate=True) in place when nothing needs a gradient, for
/// `_more_ops.index_put_` (int64 indices; torch's checks and errors).
#[pyfunction]
fn _index_put_accumulate_(indices: Vec<PyRef<'_, PyTensor>>, values: PyRef<'_, PyTensor>, this: PyRef<'_, PyTensor>) -> PyResult<()> {
    let idx: Vec<crate::tensor::Tensor> = indices.iter().map(|t| t.t.clone()).collect();
    ops::index_put_accumulate_(&this.t, &idx, &values.t).py()
}

/// Compile every CUDA kernel for the current device into the disk cache, in parallel (releases
/// the GIL); the number of kernels.
#[pyfunction]
fn _cuda_precompile(py: Python<'_>) -> PyResult<usize> {
    py.detach(crate::backend::cuda::native::precompile).py()
}

/// Do device tensors run kernels (false for the fake device of FERROGRAD_FAKE_CUDA=1)?
#[pyfunction]
fn _cuda_has_kernels() -> bool {
    crate::backend::cuda::has_kernels()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    autograd::set_interrupt_check(python_check_signals);
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(_from_numpy_copy, m)?)?;
    m.add_function(wrap_pyfunction!(_tensor_plain, m)?)?;
    m.add_function(wrap_pyfunction!(_set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_linear, m)?)?;
    m.add_function(wrap_pyfunction!(_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_argsort, m)?)?;
    m.add_function(wrap_pyfunction!(_promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(_result_type, m)?)?;
    m.add_function(wrap_pyfunction!(_can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(rand_uniform, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_unfold, m)?)?;
    m.add_function(wrap_pyfunction!(_fold, m)?)?;
    m.add_function(wrap_pyfunction!(_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_pop_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_after_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(_set_parallel_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_arg, m)?)?;
    m.add_function(wrap_pyfunction!(_as_like, m)?)?;
    m.add_function(wrap_pyfunction!(_like, m)?)?;
    m.add_function(wrap_pyfunction!(_topk, m)?)?;
    m.add_function(wrap_pyfunction!(_wrapped_number, m)?)?;
    m.add_function(wrap_pyfunction!(_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_grad, m)?)?;
    m.add_function(wrap_pyfunction!(registered_ops, m)?)?;
    m.add_function(wrap_pyfunction!(op_table, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_name, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_capability, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_compile_all, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_nvrtc_present, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_python_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_compile_source, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_available, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_version, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_unique_id, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_init, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_destroy, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_all_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_broadcast, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_all_gather, m)?)?;
    m.add_function(wrap_pyfunction!(_nccl_reduce_scatter, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_has_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter_add, m)?)?;
    m.add_function(wrap_pyfunction!(_scatter_add_zeros, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_precompile, m)?)?;
    m.add_function(wrap_pyfunction!(_index_put_accumulate, m)?)?;
    m.add_function(wrap_pyfunction!(_index_put_accumulate_, m)?)?;
    Ok(())
}
