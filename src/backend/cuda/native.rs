//! Device kernels behind the ops: each function takes device tensors, launches NVRTC-compiled
//! kernels (see `source`) or cuBLAS on the default stream, and returns device tensors.

use super::driver::{self, Func};
use super::source::{self, Operand, MAXD};
use super::{alloc, common_device, device_mismatch};
use crate::backend::Device;
use crate::error::{Error, Result};
use crate::tensor::layout::{numel, Layout};
use crate::tensor::{DType, Tensor};
use std::ffi::c_void;
use std::sync::Arc;

/// The index description the elementwise kernels take (matches `struct Ix` in the prelude).
#[repr(C)]
#[derive(Copy, Clone)]
struct Ix {
    shape: [i64; MAXD],
    st: [[i64; MAXD]; 4],
    mul: [u32; MAXD],
    shr: [u32; MAXD],
    nd: i32,
    contig: i32,
    fast32: i32,
}

/// Magic numbers (mul, shr) with which `(umulhi(i, mul) + i) >> shr == i / d` for every i < 2^31
/// (round-up reciprocal; the sum cannot overflow 32 bits there since umulhi(i, mul) < i).
fn magic_divider(d: u32) -> (u32, u32) {
    let d = d.max(1) as u64;
    let shr = 64 - (d - 1).leading_zeros() as u64; // smallest s with 2^s >= d (0 for d = 1)
    let shr = if d == 1 { 0 } else { shr };
    let mul = ((1u64 << 32) * ((1u64 << shr) - d)) / d + 1;
    (mul as u32, shr as u32)
}

const BLOCK: u32 = 256;

/// The argument array of a kernel launch: a pointer to each (mutable, live) argument, in order.
macro_rules! kernel_params {
    ($($v:expr),* $(,)?) => {
        [$(&mut $v as *mut _ as *mut c_void),*]
    };
}

fn grid_for(n: usize) -> u32 {
    n.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32
}

/// Device address of a tensor's first element.
fn dptr(t: &Tensor) -> u64 {
    let d = t.read_data();
    d.storage.as_ptr() as u64 + (d.layout.offset * d.storage.dtype().size()) as u64
}

/// A fresh contiguous device tensor (uninitialised).
fn empty(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    let n = crate::tensor::layout::checked_numel(shape)?;
    let _ = device;
    Ok(Tensor::from_storage(Arc::new(alloc(dtype, n)?), Layout::contiguous(shape)))
}

/// Merge dims contiguous in every layout and drop size-1 dims (strides per layout, shared shape).
fn coalesce(shape: &[usize], strides: &[Vec<isize>]) -> (Vec<usize>, Vec<Vec<isize>>) {
    let k = strides.len();
    let mut sh: Vec<usize> = Vec::new();
    let mut st: Vec<Vec<isize>> = vec![Vec::new(); k];
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        if !sh.is_empty() {
            let merge = (0..k).all(|j| st[j].last().copied() == Some(strides[j][d] * shape[d] as isize));
            if merge {
                let last = sh.len() - 1;
                sh[last] *= shape[d];
                for j in 0..k {
                    let l = st[j].len() - 1;
                    st[j][l] = strides[j][d];
                }
                continue;
            }
        }
        sh.push(shape[d]);
        for j in 0..k {
            st[j].push(strides[j][d]);
        }
    }
    (sh, st)
}

/// Launch the elementwise kernel `op` writing `out` (any layout of `shape`) from `ins` (tensors
/// broadcast to `shape`, or scalars).
fn run_elementwise(op: &str, expr: &str, out: &Tensor, comp: DType, ins: &[Arg]) -> Result<()> {
    let shape = out.shape();
    if numel(&shape) == 0 {
        return Ok(());
    }
    let ol = out.layout();
    let mut strides: Vec<Vec<isize>> = vec![ol.strides.iter().map(|&s| s as isize).collect()];
    let mut ptrs = vec![dptr(out)];
    let mut kinds = Vec::new();
    let mut scalars = [0f64; 3];
    for (k, a) in ins.iter().enumerate() {
        match a {
            Arg::T(t) => {
                let l = t.layout().broadcast_to(&shape)?;
                strides.push(l.strides.iter().map(|&s| s as isize).collect());
                kinds.push(Operand::Tensor(t.dtype()));
                ptrs.push(dptr(t));
            }
            Arg::S(v) => {
                strides.push(vec![0; shape.len()]);
                kinds.push(Operand::Scalar);
                scalars[k] = *v;
                ptrs.push(0);
            }
        }
    }
    launch_elementwise(op, expr, out.dtype(), comp, &shape, &strides, &kinds, &ptrs, scalars)
}

/// Launch an elementwise kernel over raw operands: `ptrs[0]` the output, then one per input (0
/// for a scalar), each addressed through its element `strides` (which may be negative: flip).
#[allow(clippy::too_many_arguments)]
fn launch_elementwise(op: &str, expr: &str, out_dt: DType, comp: DType, shape: &[usize], strides: &[Vec<isize>], kinds: &[Operand], ptrs: &[u64], sc: [f64; 3]) -> Result<()> {
    let n = numel(shape);
    if n == 0 {
        return Ok(());
    }
    let contiguous = crate::tensor::layout::contiguous_strides(shape);
    let dense = |st: &[isize]| st.iter().zip(shape.iter().zip(&contiguous)).all(|(&s, (&d, &c))| d == 1 || s == c as isize);
    let contig = strides.iter().zip(std::iter::once(None).chain(kinds.iter().map(Some))).all(|(st, k)| matches!(k, Some(Operand::Scalar)) || dense(st));
    let mut ix = index_of(shape, strides)?;
    ix.contig = contig as i32;
    set_fast32(&mut ix, n);
    let name = source::elementwise_name(op, out_dt, comp, kinds);
    let f = driver::function(&name, || source::elementwise(&name, out_dt, comp, kinds, expr))?;
    let mut p = [0u64; 3];
    p[..ptrs.len() - 1].copy_from_slice(&ptrs[1..]);
    let mut n64 = n as i64;
    let mut o = ptrs[0];
    let (mut s0, mut s1, mut s2) = (sc[0], sc[1], sc[2]);
    let mut params = kernel_params!(n64, ix, o, p[0], p[1], p[2], s0, s1, s2);
    let grid = grid_for(n.div_ceil(4)); // FG_UNROLL elements per thread
    // SAFETY: the parameters match the generated kernel; every pointer addresses its operand's
    // elements through the strides, which the index never leaves.
    unsafe { driver::launch(f, (grid, 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// An elementwise operand: a device tensor or a scalar value.
pub enum Arg {
    T(Tensor),
    S(f64),
}

/// Operands for a kernel: device tensors stay, CPU 0-d tensors become scalar values (when the
/// value survives the trip through f64), other CPU tensors are an error.
fn args(ts: &[&Tensor], comp: DType) -> Result<Vec<Arg>> {
    let dev = common_device(ts)?;
    ts.iter()
        .map(|t| {
            if t.device() == dev {
                return Ok(Arg::T((*t).clone()));
            }
            let v = t.item_f64()?;
            if comp == DType::I64 && t.dtype() == DType::I64 && v.abs() > 9007199254740992.0 {
                return Ok(Arg::T(super::to_device(t, dev)?));
            }
            Ok(Arg::S(v))
        })
        .collect()
}

/// Contiguous copy (same dtype).
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    let out = empty(&t.shape(), t.dtype(), t.device())?;
    copy_into(&out, t)?;
    Ok(out)
}

/// dst[...] = src (converted to dst's dtype, broadcast to dst's shape).
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.device() != src.device() {
        return Err(device_mismatch(dst.device(), src.device()));
    }
    let (dl, sl) = (dst.layout(), src.layout().broadcast_to(&dst.shape())?);
    let n = dl.numel();
    if n == 0 {
        return Ok(());
    }
    let sz = dst.dtype().size();
    // One block copy when both are contiguous of the same dtype.
    if dst.dtype() == src.dtype() && dl.is_contiguous() && sl.is_contiguous() && sl.shape[..] == dl.shape[..] {
        // SAFETY: both ranges hold n elements.
        return unsafe { driver::dtod(dptr(dst), dptr(src), n * sz) };
    }
    // A source sharing dst's storage is copied out first (the kernel would read what it wrote).
    let src = if Arc::ptr_eq(&dst.storage(), &src.storage()) { contiguous(src)? } else { src.clone() };
    run_elementwise("copy", source::cast_expr(src.dtype(), dst.dtype()), dst, src.dtype(), &[Arg::T(src)])
}

pub fn cast(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let out = empty(&t.shape(), dtype, t.device())?;
    copy_into(&out, t)?;
    Ok(out)
}

pub fn fill(t: &Tensor, value: f64) -> Result<()> {
    if value == 0.0 && t.is_contiguous() {
        // SAFETY: the range holds numel elements.
        return unsafe { driver::memset0(dptr(t), t.numel() * t.dtype().size()) };
    }
    let v = if t.dtype() == DType::Bool { (value != 0.0) as i64 as f64 } else { value };
    run_elementwise("copy", "x", t, t.dtype(), &[Arg::S(v)])
}

/// A unary op by name (see `source::unary_expr`) computed in x's dtype, giving `out_dt`.
pub fn unary(x: &Tensor, op: &str, out_dt: DType) -> Result<Tensor> {
    unary_in(x, op, x.dtype(), out_dt)
}

/// A unary op computed in `comp` (float16/bfloat16 inputs in float32: one kernel that converts
/// on load and rounds on store).
pub fn unary_in(x: &Tensor, op: &str, comp: DType, out_dt: DType) -> Result<Tensor> {
    let expr = source::unary_expr(op).ok_or_else(|| Error::runtime(format!("no CUDA kernel for {op}")))?;
    let out = empty(&x.shape(), out_dt, x.device())?;
    run_elementwise(op, expr, &out, comp, &[Arg::T(x.clone())])?;
    Ok(out)
}

/// A binary op by name over broadcast operands computed in `comp` (operands of other dtypes are
/// converted on load), giving `out_dt`. `extra` is a third scalar operand (add's alpha).
pub fn binary(a: &Tensor, b: &Tensor, op: &str, comp: DType, out_dt: DType, extra: Option<f64>) -> Result<Tensor> {
    let expr = source::binary_expr(op).ok_or_else(|| Error::runtime(format!("no CUDA kernel for {op}")))?;
    let shape = crate::tensor::layout::broadcast_shapes(&a.shape(), &b.shape())?;
    let mut ins = args(&[a, b], comp)?;
    if let Some(e) = extra {
        ins.push(Arg::S(e));
    }
    let out = empty(&shape, out_dt, common_device(&[a, b])?)?;
    run_elementwise(op, expr, &out, comp, &ins)?;
    Ok(out)
}

/// where(cond, a, b) in dtype `dt` (a and b already converted to it).
pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor, dt: DType) -> Result<Tensor> {
    let shape = crate::tensor::layout::broadcast_shapes(&crate::tensor::layout::broadcast_shapes(&c.shape(), &a.shape())?, &b.shape())?;
    let c = if c.dtype() == DType::Bool { c.clone() } else { cast(c, DType::Bool)? };
    let dev = common_device(&[&c, a, b])?;
    let c = super::to_device(&c, dev)?;
    let ins = {
        let mut v = vec![Arg::T(c)];
        v.extend(args(&[a, b], dt)?);
        v
    };
    let out = empty(&shape, dt, dev)?;
    let expr = match &ins[0] {
        Arg::T(_) => "(a0[p[1]] ? y : z)",
        Arg::S(_) => "(x ? y : z)",
    };
    run_elementwise("where", expr, &out, dt, &ins)?;
    Ok(out)
}

/// Launch a row kernel `(rows, r, x, out)` over a contiguous input (softmax), a block per row.
fn run_rows(f: Func, rows: usize, r: usize, x: &Tensor, out: &Tensor) -> Result<()> {
    if rows == 0 {
        return Ok(());
    }
    let (mut rows64, mut r64, mut xp, mut op) = (rows as i64, r as i64, dptr(x), dptr(out));
    let mut params = kernel_params!(rows64, r64, xp, op);
    // SAFETY: x and out hold rows*r contiguous elements.
    unsafe { driver::launch(f, ((rows.min(1 << 20)) as u32, 1, 1), (threads_for(r), 1, 1), 0, &mut params) }
}

fn threads_for(r: usize) -> u32 {
    if r >= 256 {
        256
    } else {
        r.max(1).next_power_of_two().max(32) as u32
    }
}

/// One launch of a reduction kernel: rows of length r in `nch` chunks, into out[rows * nch].
fn launch_reduce(kind: &str, inp: DType, out_dt: DType, rows: usize, r: usize, nch: usize, x: u64, out: u64) -> Result<()> {
    let name = format!("red_{kind}_{}_{}", source::tag(inp), source::tag(out_dt));
    let f = driver::function(&name, || source::reduce(&name, kind, inp, out_dt))?;
    let (mut rows64, mut r64, mut n64, mut xp, mut op) = (rows as i64, r as i64, nch as i64, x, out);
    let mut params = kernel_params!(rows64, r64, n64, xp, op);
    let grid = (nch.min(65535) as u32, rows.clamp(1, 65535) as u32, 1);
    // SAFETY: x holds rows*r contiguous elements of `inp`, out rows*nch of `out_dt`.
    unsafe { driver::launch(f, grid, (threads_for(r.div_ceil(nch)), 1, 1), 0, &mut params) }
}

/// `x` with dims `dims` moved last and made contiguous: (tensor, rows, r, keepdim shape).
fn rows_view(x: &Tensor, dims: &[usize]) -> Result<(Tensor, usize, usize, Vec<usize>)> {
    let shape = x.shape();
    let nd = shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
    let out_shape: Vec<usize> = (0..nd).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let r: usize = dims.iter().map(|&d| shape[d]).product();
    let rows: usize = kept.iter().map(|&d| shape[d]).product();
    let l = x.layout();
    let mut perm = kept;
    perm.extend(dims.iter().copied());
    let pl = Layout { shape: perm.iter().map(|&p| l.shape[p]).collect(), strides: perm.iter().map(|&p| l.strides[p]).collect(), offset: l.offset };
    let v = x.view_with_layout(pl.clone());
    let v = if pl.is_contiguous() { v } else { contiguous(&v)? };
    Ok((v, rows, r, out_shape))
}

/// Reduce over `dims` (kind: sum, prod, max, min, all, any, argmax, argmin); the result has the
/// reduced dims kept as size 1. Sums of float32 accumulate in float64.
pub fn reduce(x: &Tensor, dims: &[usize], kind: &str, out_dt: DType) -> Result<Tensor> {
    let (v, rows, r, out_shape) = rows_view(x, dims)?;
    let out = empty(&out_shape, out_dt, x.device())?;
    if rows == 0 {
        return Ok(out);
    }
    // Few long rows: a first pass reduces chunks of each row in parallel blocks, a second pass
    // the chunks (sums and products of floats keep float64 partials).
    let nch = if rows < 1024 && r >= 1 << 15 && !kind.starts_with("arg") { (r >> 13).min(1024) } else { 1 };
    if nch == 1 {
        return launch_reduce(kind, x.dtype(), out_dt, rows, r, 1, dptr(&v), dptr(&out)).map(|_| out);
    }
    let part_dt = match kind {
        "sum" | "prod" if x.dtype().is_float() => DType::F64,
        _ => out_dt,
    };
    let part = empty(&[rows, nch], part_dt, x.device())?;
    launch_reduce(kind, x.dtype(), part_dt, rows, r, nch, dptr(&v), dptr(&part))?;
    launch_reduce(kind, part_dt, out_dt, rows, nch, 1, dptr(&part), dptr(&out))?;
    Ok(out)
}

/// softmax / log_softmax along `dim`, result contiguous in x's shape.
pub fn softmax(x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
    let nd = x.ndim();
    let (v, rows, r, _) = rows_view(x, &[dim])?;
    let name = format!("softmax_{}_{}", log as u8, source::tag(x.dtype()));
    let f = driver::function(&name, || source::softmax(&name, x.dtype(), log))?;
    let out = empty(&v.shape(), x.dtype(), x.device())?;
    run_rows(f, rows, r, &v, &out)?;
    if dim + 1 == nd || nd == 0 {
        return Ok(out);
    }
    // Move the reduced axis back where it was.
    let mut perm: Vec<usize> = (0..nd).filter(|&d| d != dim).collect();
    perm.push(dim);
    let mut inv = vec![0; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let ol = out.layout();
    let back = Layout { shape: inv.iter().map(|&i| ol.shape[i]).collect(), strides: inv.iter().map(|&i| ol.strides[i]).collect(), offset: 0 };
    contiguous(&out.view_with_layout(back))
}

/// index_select along `dim` of `src` with int64 `idx` (1-d).
pub fn index_select(src: &Tensor, dim: usize, idx: &Tensor) -> Result<Tensor> {
    let src = if src.is_contiguous() { src.clone() } else { contiguous(src)? };
    let idx = if idx.dtype() != DType::I64 { cast(idx, DType::I64)? } else if idx.is_contiguous() { idx.clone() } else { contiguous(idx)? };
    let shape = src.shape();
    let (outer, nsel, inner): (usize, usize, usize) = (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product());
    let nidx = idx.numel();
    let mut os = shape.to_vec();
    os[dim] = nidx;
    let out = empty(&os, src.dtype(), src.device())?;
    run_index("select", &src, &idx, &out, outer * nidx * inner, nidx, nsel, inner)?;
    Ok(out)
}

/// out (zeros shaped like the source of an index_select) += g scattered back along `dim`.
pub fn index_add(shape: &[usize], dim: usize, idx: &Tensor, g: &Tensor) -> Result<Tensor> {
    let g = if g.is_contiguous() { g.clone() } else { contiguous(g)? };
    let idx = if idx.dtype() != DType::I64 { cast(idx, DType::I64)? } else if idx.is_contiguous() { idx.clone() } else { contiguous(idx)? };
    let (outer, nsel, inner): (usize, usize, usize) = (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product());
    let nidx = idx.numel();
    let out = empty(shape, g.dtype(), g.device())?;
    fill(&out, 0.0)?;
    run_index("add", &g, &idx, &out, outer * nidx * inner, nidx, nsel, inner)?;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn run_index(kind: &str, src: &Tensor, idx: &Tensor, out: &Tensor, total: usize, nidx: usize, nsel: usize, inner: usize) -> Result<()> {
    if total == 0 {
        return Ok(());
    }
    let dt = src.dtype();
    if !dt.is_float() {
        return Err(Error::runtime(format!("index_{kind} on CUDA takes float tensors")));
    }
    let name = format!("index_{kind}_{}", source::tag(dt));
    let f = driver::function(&name, || source::index_select(&name, dt, kind == "add"))?;
    let (mut t, mut ni, mut ns, mut inn) = (total as i64, nidx as i64, nsel as i64, inner as i64);
    let (mut ip, mut sp, mut op) = (dptr(idx), dptr(src), dptr(out));
    let mut params = kernel_params!(t, ni, ns, inn, ip, sp, op);
    // SAFETY: indices were bounds-checked by the caller; buffers are contiguous of these sizes.
    unsafe { driver::launch(f, (grid_for(total), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// [B,m,k] @ [B,k,n] -> [B,m,n] with cuBLAS (strided batched; transposed views read as such).
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let dev = common_device(&[a, b])?;
    if a.device() != dev || b.device() != dev {
        return Err(device_mismatch(a.device(), b.device()));
    }
    let dt = a.dtype();
    let (sa, sb) = (a.shape(), b.shape());
    let (bs, m, k, n) = (sa[0], sa[1], sa[2], sb[2]);
    let out = empty(&[bs, m, n], dt, dev)?;
    if bs * m * n == 0 {
        return Ok(out);
    }
    if k == 0 {
        fill(&out, 0.0)?;
        return Ok(out);
    }
    if !dt.is_float() {
        return Err(Error::new(crate::error::ErrorKind::NotImplemented, format!("\"addmm_cuda\" not implemented for '{}'", crate::ops::shape::type_word(dt))));
    }
    // A matrix operand as cuBLAS sees it (column-major): a row-major [r, c] with unit column
    // stride is the column-major transpose; unit row stride is column-major as is.
    let as_blas = |t: &Tensor| -> Result<(Tensor, bool, i64, i64)> {
        let l = t.layout();
        let (r, c) = (l.shape[1], l.shape[2]);
        let bstride = if l.shape[0] == 1 { 0 } else { l.strides[0] as i64 };
        if l.strides[2] == 1 && l.strides[1] >= c.max(1) {
            return Ok((t.clone(), false, l.strides[1] as i64, bstride)); // row-major: (C^T) col-major
        }
        if l.strides[1] == 1 && l.strides[2] >= r.max(1) {
            return Ok((t.clone(), true, l.strides[2] as i64, bstride));
        }
        let c2 = contiguous(t)?;
        Ok((c2, false, c.max(1) as i64, (r * c) as i64))
    };
    let (ta, a_t, lda, stra) = as_blas(a)?;
    let (tb, b_t, ldb, strb) = as_blas(b)?;
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS computes (n x m) = (n x k)(k x m)
    // with B first. A row-major operand is its own transpose in column-major, so no op ("N");
    // a column-major (transposed view) operand needs "T".
    use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    let opb = if b_t { CUBLAS_OP_T } else { CUBLAS_OP_N };
    let opa = if a_t { CUBLAS_OP_T } else { CUBLAS_OP_N };
    let (pa, pb, pc) = (dptr(&ta), dptr(&tb), dptr(&out));
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let strc = (m * n) as i64;
    driver::with_blas(|h| {
        // SAFETY: pointers address the operands' elements as described by ld/stride; the
        // output is a fresh contiguous [bs, m, n] buffer.
        unsafe {
            match dt {
                DType::F32 if super::allow_tf32() => {
                    // torch.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision("high"):
                    // float32 operands and result, TF32 tensor-core products, float32 accumulation
                    use cudarc::cublas::sys::{cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32, cublasGemmAlgo_t::CUBLAS_GEMM_DFALT, cudaDataType_t::CUDA_R_32F};
                    let (al, be) = (1f32, 0f32);
                    cudarc::cublas::result::gemm_strided_batched_ex(
                        h.0, opb, opa, ni, mi, ki,
                        &al as *const f32 as *const c_void,
                        pb as *const c_void, CUDA_R_32F, ldb as i32, strb,
                        pa as *const c_void, CUDA_R_32F, lda as i32, stra,
                        &be as *const f32 as *const c_void,
                        pc as *mut c_void, CUDA_R_32F, ni, strc,
                        bs as i32, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DFALT,
                    )
                }
                DType::F32 => {
                    let (al, be) = (1f32, 0f32);
                    cudarc::cublas::result::sgemm_strided_batched(h.0, opb, opa, ni, mi, ki, &al, pb as *const f32, ldb as i32, strb, pa as *const f32, lda as i32, stra, &be, pc as *mut f32, ni, strc, bs as i32)
                }
                DType::F16 | DType::BF16 => {
                    // 16-bit operands and result, float32 accumulation (torch's default for
                    // half matmul): alpha and beta are float32 for CUBLAS_COMPUTE_32F
                    use cudarc::cublas::sys::{cublasComputeType_t::CUBLAS_COMPUTE_32F, cublasGemmAlgo_t::CUBLAS_GEMM_DFALT, cudaDataType_t};
                    let ty = if dt == DType::F16 { cudaDataType_t::CUDA_R_16F } else { cudaDataType_t::CUDA_R_16BF };
                    let (al, be) = (1f32, 0f32);
                    cudarc::cublas::result::gemm_strided_batched_ex(
                        h.0, opb, opa, ni, mi, ki,
                        &al as *const f32 as *const c_void,
                        pb as *const c_void, ty, ldb as i32, strb,
                        pa as *const c_void, ty, lda as i32, stra,
                        &be as *const f32 as *const c_void,
                        pc as *mut c_void, ty, ni, strc,
                        bs as i32, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DFALT,
                    )
                }
                _ => {
                    // float64 (the only float type left)
                    let (al, be) = (1f64, 0f64);
                    cudarc::cublas::result::dgemm_strided_batched(h.0, opb, opa, ni, mi, ki, &al, pb as *const f64, ldb as i32, strb, pa as *const f64, lda as i32, stra, &be, pc as *mut f64, ni, strc, bs as i32)
                }
            }
            .map_err(driver::blas_err)
        }
    })?;
    Ok(out)
}

/// im2col of contiguous [P, H, W] planes into [P, kh*kw, L] (`adjoint`: col2im back to planes).
/// `g`: P, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow.
pub fn im2col(src: &Tensor, g: [i64; 13], adjoint: bool, out_shape: &[usize]) -> Result<Tensor> {
    let src = if src.is_contiguous() { src.clone() } else { contiguous(src)? };
    let dt = src.dtype();
    let out = empty(out_shape, dt, src.device())?;
    let total = out.numel();
    if total == 0 {
        return Ok(out);
    }
    let name = format!("{}_{}", if adjoint { "col2im" } else { "im2col" }, source::tag(dt));
    let f = driver::function(&name, || source::im2col(&name, dt, adjoint))?;
    #[repr(C)]
    struct Win([i64; 13]);
    let mut w = Win(g);
    let (mut sp, mut op) = (dptr(&src), dptr(&out));
    let mut params = kernel_params!(w, sp, op);
    // SAFETY: src holds P*H*W (or P*kk*L) contiguous elements, out the other; indices stay inside.
    unsafe { driver::launch(f, (grid_for(total), 1, 1), (BLOCK, 1, 1), 0, &mut params)? };
    Ok(out)
}

/// Uniform [0, 1) (or standard normal) samples on the device from `seed`.
pub fn random(shape: &[usize], dt: DType, normal: bool, seed: u64) -> Result<Tensor> {
    let out = empty(shape, dt, Device::Cuda(0))?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let name = format!("{}_{}", if normal { "randn" } else { "rand" }, source::tag(dt));
    let f = driver::function(&name, || source::random(&name, dt, normal))?;
    let (mut n64, mut sd, mut op) = (n as i64, seed, dptr(&out));
    let mut params = kernel_params!(n64, sd, op);
    // SAFETY: out holds n elements of dt (a fresh allocation: aligned for the paired stores).
    unsafe { driver::launch(f, (grid_for(n.div_ceil(source::random_per_thread(dt, normal))), 1, 1), (BLOCK, 1, 1), 0, &mut params)? };
    Ok(out)
}

/// One fused Adam/AdamW step over contiguous device buffers of one dtype.
#[allow(clippy::too_many_arguments)]
pub fn adam(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor, vmax: Option<&Tensor>, lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, decoupled: bool, maximize: bool, bc1: f64, bc2: f64) -> Result<()> {
    let dt = p.dtype();
    let n = p.numel();
    if n == 0 {
        return Ok(());
    }
    let name = format!("adam_{}", source::tag(dt));
    let f = driver::function(&name, || source::adam(&name, dt))?;
    let mut n64 = n as i64;
    let (mut pp, mut gp, mut mp, mut vp, mut xp) = (dptr(p), dptr(g), dptr(m), dptr(v), vmax.map_or(0, dptr));
    let (mut lr, mut b1, mut b2, mut eps, mut wd, mut bc1, mut bc2) = (lr, b1, b2, eps, wd, bc1, bc2);
    let (mut dec, mut max) = (decoupled as i32, maximize as i32);
    let mut params = kernel_params!(n64, pp, gp, mp, vp, xp, lr, b1, b2, eps, wd, dec, max, bc1, bc2);
    // SAFETY: all buffers (vmax when given: amsgrad) are contiguous with n elements of dt
    // (checked by the caller).
    unsafe { driver::launch(f, (grid_for(n), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

// ---- indexing, scans, random integers, optimizer steps ------------------------------------------

/// Device address of a tensor's storage (element 0 of the buffer, not of the view).
fn sptr(t: &Tensor) -> u64 {
    t.read_data().storage.as_ptr() as u64
}

/// A device int64 vector holding `v`.
fn upload_offsets(v: &[usize], dev: Device) -> Result<Tensor> {
    let host = Tensor::from_vec(v.iter().map(|&o| o as i64).collect::<Vec<i64>>(), &[v.len()]);
    super::to_device(&host, dev)
}

/// 32-bit offsets (`fast32`, with each dim's magic divider) when the `n` elements' index and
/// every operand's reach fit in an int.
fn set_fast32(ix: &mut Ix, n: usize) {
    let nd = ix.nd as usize;
    ix.fast32 = magic_dims(&ix.shape[..nd], &ix.st, n, &mut ix.mul, &mut ix.shr) as i32;
}

/// Each dim's magic divider into `mul`/`shr`; whether `n` elements and every operand's reach over
/// `shape` (strides `st`, rows of at least `shape.len()`) fit the kernels' 32-bit offsets.
fn magic_dims(shape: &[i64], st: &[[i64; MAXD]], n: usize, mul: &mut [u32; MAXD], shr: &mut [u32; MAXD]) -> bool {
    for (d, &len) in shape.iter().enumerate() {
        (mul[d], shr[d]) = magic_divider(len.min(u32::MAX as i64) as u32);
    }
    let reach_ok = st.iter().all(|s| s.iter().zip(shape).map(|(&x, &d)| x.unsigned_abs() as u128 * (d as u128 - 1)).sum::<u128>() < i32::MAX as u128);
    n < i32::MAX as usize && reach_ok
}

/// A zeroed device int32: the flag a kernel sets when it meets an index out of range.
fn error_flag() -> Result<crate::tensor::storage::Storage> {
    let err = alloc(DType::I32, 1)?;
    // SAFETY: a fresh 4-byte (512-byte block) allocation.
    unsafe { driver::memset0(err.as_ptr() as u64, 4)? };
    Ok(err)
}

/// Was the flag set? (Waits for the kernels before it: one sync.)
fn flag_set(err: &crate::tensor::storage::Storage) -> Result<bool> {
    let flag = super::storage_to_host(err)?;
    // SAFETY: the host copy holds one int32.
    Ok(unsafe { *(flag.as_ptr() as *const i32) } != 0)
}

/// The Ix of layouts over one shape (coalesced; at most MAXD dims).
fn index_of(shape: &[usize], strides: &[Vec<isize>]) -> Result<Ix> {
    let (sh, st) = coalesce(shape, strides);
    if sh.len() > MAXD {
        return Err(Error::runtime(format!("CUDA kernels take at most {MAXD} non-mergeable dims; got a {}-d layout", sh.len())));
    }
    let mut ix = Ix { shape: [1; MAXD], st: [[0; MAXD]; 4], mul: [1; MAXD], shr: [0; MAXD], nd: sh.len() as i32, contig: 0, fast32: 0 };
    for (d, &n) in sh.iter().enumerate() {
        ix.shape[d] = n as i64;
        for j in 0..st.len() {
            ix.st[j][d] = st[j][d] as i64;
        }
    }
    Ok(ix)
}

fn istrides(v: &[usize]) -> Vec<isize> {
    v.iter().map(|&s| s as isize).collect()
}

/// Advanced indexing's gather: a contiguous [nb, rest...] result whose row b is the source's
/// elements at storage offset `base[b]` plus the offsets of the rest layout (`rest_shape`,
/// `rest_strides`: the dims not indexed).
pub fn take(src: &Tensor, base: &[usize], rest_shape: &[usize], rest_strides: &[usize]) -> Result<Tensor> {
    let mut shape = vec![base.len()];
    shape.extend_from_slice(rest_shape);
    let out = empty(&shape, src.dtype(), src.device())?;
    run_take("take", src.dtype(), base, rest_shape, rest_strides, sptr(src), dptr(&out), src.device())?;
    Ok(out)
}

/// Advanced indexing's write: dst's elements at `base[b]` + the rest offsets take (or, with
/// `accumulate`, add atomically) the contiguous `vals` [nb, rest...]. False when the dtype has no
/// device atomic add (the caller takes the host path).
pub fn put(dst: &Tensor, base: &[usize], rest_shape: &[usize], rest_strides: &[usize], vals: &Tensor, accumulate: bool) -> Result<bool> {
    let dt = dst.dtype();
    if accumulate && !source::has_atomic_add(dt) {
        return Ok(false);
    }
    let vals = if vals.dtype() != dt { cast(vals, dt)? } else if vals.is_contiguous() { vals.clone() } else { contiguous(vals)? };
    run_take(if accumulate { "put_add" } else { "put" }, dt, base, rest_shape, rest_strides, dptr(&vals), sptr(dst), dst.device())?;
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn run_take(mode: &str, dt: DType, base: &[usize], rest_shape: &[usize], rest_strides: &[usize], a: u64, b: u64, dev: Device) -> Result<()> {
    let r = numel(rest_shape);
    let n = base.len() * r;
    if n == 0 {
        return Ok(());
    }
    let offs = upload_offsets(base, dev)?;
    let mut ix = index_of(rest_shape, &[istrides(rest_strides)])?;
    let name = format!("{mode}_{}", source::tag(dt));
    let f = driver::function(&name, || source::take(&name, dt, mode))?;
    let (mut n64, mut r64, mut bp, mut ap, mut bq) = (n as i64, r as i64, dptr(&offs), a, b);
    let mut params = kernel_params!(n64, r64, ix, bp, ap, bq);
    // SAFETY: every base offset plus rest offset was computed (and bounds-checked) on the host
    // from the target's layout; vals/out hold n contiguous elements.
    unsafe { driver::launch(f, (grid_for(n), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// gather(x, dim, index) with an int64 device index of x's rank: None when an index is out of
/// range (the caller's host path then raises torch's error).
pub fn gather_dim(x: &Tensor, dim: usize, index: &Tensor) -> Result<Option<Tensor>> {
    let is = index.shape();
    let out = empty(&is, x.dtype(), x.device())?;
    let ok = run_gather_dim(false, x.dtype(), &is, dim, &out, index, x)?;
    Ok(ok.then_some(out))
}

/// dst (zeros of the gathered tensor's shape) += src scattered along `dim` by `index` (the
/// adjoint of gather); false when out of range or the dtype has no atomic add.
pub fn scatter_add_dim(dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor) -> Result<bool> {
    if !source::has_atomic_add(dst.dtype()) {
        return Ok(false);
    }
    let src = if src.dtype() != dst.dtype() { cast(src, dst.dtype())? } else { src.clone() };
    run_gather_dim(true, dst.dtype(), &index.shape(), dim, &src, index, dst)
}

/// Over the index's shape: operand 0 `vals` (gather's result / scatter's source), 1 the index,
/// 2 the target `dst` with its `dim` stride zeroed. Returns false when an index was out of range.
fn run_gather_dim(add: bool, dt: DType, is: &[usize], dim: usize, vals: &Tensor, index: &Tensor, dst: &Tensor) -> Result<bool> {
    let n = numel(is);
    if n == 0 {
        return Ok(true);
    }
    let index = if index.dtype() != DType::I64 { cast(index, DType::I64)? } else { index.clone() };
    let (vl, il, dl) = (vals.layout(), index.layout(), dst.layout());
    let mut dstrides = istrides(&dl.strides);
    let dstride = dstrides[dim] as i64;
    dstrides[dim] = 0;
    let mut ix = index_of(is, &[istrides(&vl.strides), istrides(&il.strides), dstrides])?;
    set_fast32(&mut ix, n);
    let err = error_flag()?;
    let name = format!("{}_dim_{}", if add { "scatter_add" } else { "gather" }, source::tag(dt));
    let f = driver::function(&name, || source::gather_dim(&name, dt, add))?;
    let (mut n64, mut ds, mut size) = (n as i64, dstride, dl.shape[dim] as i64);
    let (mut ip, mut vp, mut dp, mut ep) = (dptr(&index), dptr(vals), dptr(dst), err.as_ptr() as u64);
    let mut params = kernel_params!(n64, ix, ds, size, ip, vp, dp, ep);
    // SAFETY: the index's non-indexed coordinates stay within vals' and dst's shapes (checked by
    // the caller); indexed coordinates are checked in the kernel before any access.
    unsafe { driver::launch(f, (grid_for(n.div_ceil(4)), 1, 1), (BLOCK, 1, 1), 0, &mut params)? };
    Ok(!flag_set(&err)?)
}

/// x with the dims marked in `flip` reversed, as a contiguous copy: the copy kernel reading x
/// through negative strides.
pub fn flip(x: &Tensor, flip: &[bool]) -> Result<Tensor> {
    let shape = x.shape();
    let out = empty(&shape, x.dtype(), x.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let l = x.layout();
    let sz = x.dtype().size() as isize;
    let mut start = dptr(x) as isize;
    let mut st = istrides(&l.strides);
    for d in 0..shape.len() {
        if flip[d] {
            start += (shape[d] as isize - 1) * st[d] * sz;
            st[d] = -st[d];
        }
    }
    let cs = istrides(&crate::tensor::layout::contiguous_strides(&shape));
    let dt = x.dtype();
    launch_elementwise("copy", source::cast_expr(dt, dt), dt, dt, &shape, &[cs, st], &[Operand::Tensor(dt)], &[dptr(&out), start as u64], [0.0; 3])?;
    Ok(out)
}

/// Inclusive sum along `dim` of a device tensor of a compute dtype (float32, float64, int64),
/// contiguous result of the same dtype.
pub fn cumsum(x: &Tensor, dim: usize) -> Result<Tensor> {
    let x = if x.is_contiguous() { x.clone() } else { contiguous(x)? };
    let shape = x.shape();
    let dt = x.dtype();
    let out = empty(&shape, dt, x.device())?;
    let (outer, n, inner): (usize, usize, usize) = (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product());
    if outer * n * inner == 0 {
        return Ok(out);
    }
    let name = format!("scan_{}", source::tag(dt));
    let f = driver::function(&name, || source::scan(&name, dt))?;
    let (mut o64, mut n64, mut i64_, mut xp, mut op) = (outer as i64, n as i64, inner as i64, dptr(&x), dptr(&out));
    let mut params = kernel_params!(o64, n64, i64_, xp, op);
    let (grid, block) = if inner == 1 { (outer.min(1 << 20) as u32, threads_for(n)) } else { (grid_for(outer * inner), BLOCK) };
    // SAFETY: x and out hold outer*n*inner contiguous elements of dt.
    unsafe { driver::launch(f, (grid, 1, 1), (block, 1, 1), 0, &mut params)? };
    Ok(out)
}

/// Integers uniform in [low, high) of `dt` on the device (counter-based, seeded from the global
/// generator).
pub fn randint(shape: &[usize], dt: DType, low: i64, high: i64, seed: u64) -> Result<Tensor> {
    let out = empty(shape, dt, Device::Cuda(0))?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let name = format!("randint_{}", source::tag(dt));
    let f = driver::function(&name, || source::randint(&name, dt))?;
    let range = (high as i128 - low as i128) as u64;
    let (mut n64, mut sd, mut lo, mut rg, mut op) = (n as i64, seed, low, range, dptr(&out));
    let mut params = kernel_params!(n64, sd, lo, rg, op);
    let per_thread = if range <= u32::MAX as u64 { 2 } else { 1 };
    // SAFETY: out holds n elements of dt.
    unsafe { driver::launch(f, (grid_for(n.div_ceil(per_thread)), 1, 1), (BLOCK, 1, 1), 0, &mut params)? };
    Ok(out)
}

/// One fused SGD step over contiguous device buffers (`buf`: the momentum buffer, unused
/// without momentum).
#[allow(clippy::too_many_arguments)]
pub fn sgd(p: &Tensor, g: &Tensor, buf: Option<&Tensor>, lr: f64, momentum: f64, dampening: f64, wd: f64, nesterov: bool, maximize: bool, first: bool) -> Result<()> {
    let (dt, n) = (p.dtype(), p.numel());
    if n == 0 {
        return Ok(());
    }
    let name = format!("sgd_{}", source::tag(dt));
    let f = driver::function(&name, || source::sgd(&name, dt))?;
    let (mut n64, mut pp, mut gp, mut bp) = (n as i64, dptr(p), dptr(g), buf.map_or(0, dptr));
    let (mut lr, mut mom, mut damp, mut wd) = (lr, momentum, dampening, wd);
    let (mut nes, mut max, mut fst) = (nesterov as i32, maximize as i32, first as i32);
    let mut params = kernel_params!(n64, pp, gp, bp, lr, mom, damp, wd, nes, max, fst);
    // SAFETY: p, g (and buf when momentum != 0) hold n contiguous elements of dt (checked by the
    // caller); buf is not read without momentum.
    unsafe { driver::launch(f, (grid_for(n), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// One fused RMSprop step (`sq` square_avg; `mb` momentum buffer and `ga` grad_avg when used).
#[allow(clippy::too_many_arguments)]
pub fn rmsprop(p: &Tensor, g: &Tensor, sq: &Tensor, mb: Option<&Tensor>, ga: Option<&Tensor>, lr: f64, alpha: f64, eps: f64, wd: f64, momentum: f64, centered: bool, maximize: bool) -> Result<()> {
    let (dt, n) = (p.dtype(), p.numel());
    if n == 0 {
        return Ok(());
    }
    let name = format!("rmsprop_{}", source::tag(dt));
    let f = driver::function(&name, || source::rmsprop(&name, dt))?;
    let (mut n64, mut pp, mut gp, mut sp, mut mp, mut ap) = (n as i64, dptr(p), dptr(g), dptr(sq), mb.map_or(0, dptr), ga.map_or(0, dptr));
    let (mut lr, mut al, mut eps, mut wd, mut mom) = (lr, alpha, eps, wd, momentum);
    let (mut cen, mut max) = (centered as i32, maximize as i32);
    let mut params = kernel_params!(n64, pp, gp, sp, mp, ap, lr, al, eps, wd, mom, cen, max);
    // SAFETY: every buffer used holds n contiguous elements of dt (checked by the caller); the
    // momentum buffer and grad_avg are read only when momentum > 0 / centered.
    unsafe { driver::launch(f, (grid_for(n), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// One fused Adagrad step (`clr`: this step's decayed learning rate).
#[allow(clippy::too_many_arguments)]
pub fn adagrad(p: &Tensor, g: &Tensor, sum: &Tensor, clr: f64, wd: f64, eps: f64, maximize: bool) -> Result<()> {
    let (dt, n) = (p.dtype(), p.numel());
    if n == 0 {
        return Ok(());
    }
    let name = format!("adagrad_{}", source::tag(dt));
    let f = driver::function(&name, || source::adagrad(&name, dt))?;
    let (mut n64, mut pp, mut gp, mut sp) = (n as i64, dptr(p), dptr(g), dptr(sum));
    let (mut clr, mut wd, mut eps, mut max) = (clr, wd, eps, maximize as i32);
    let mut params = kernel_params!(n64, pp, gp, sp, clr, wd, eps, max);
    // SAFETY: p, g and sum hold n contiguous elements of dt (checked by the caller).
    unsafe { driver::launch(f, (grid_for(n), 1, 1), (BLOCK, 1, 1), 0, &mut params) }
}

/// Compile every kernel source with NVRTC for `arch` (no GPU needed): the CI check that each
/// kernel compiles. Returns how many compiled.
pub fn compile_all(arch: &str) -> Result<usize> {
    use rayon::prelude::*;
    let all = source::all_sources();
    all.par_iter().try_for_each(|(name, src)| driver::compile(src, arch).map(|_| ()).map_err(|e| Error::runtime(format!("kernel {name}: {e}"))))?;
    Ok(all.len())
}

/// Compile every kernel for this device into the disk cache, in parallel (see `driver::precompile`).
pub fn precompile() -> Result<usize> {
    driver::precompile(&source::all_sources())
}

/// Compile one source (returns its PTX length).
pub fn compile_source(src: &str, arch: &str) -> Result<usize> {
    driver::compile(src, arch).map(|p| p.len())
}

/// Folders Python searches (sys.path), where the NVIDIA pip packages may be.
pub fn set_python_paths(paths: Vec<std::path::PathBuf>) {
    driver::set_python_paths(paths)
}

/// (library, path) of the CUDA libraries loaded from the NVIDIA pip packages or the system's
/// CUDA folder (after NVRTC or the device was first used).
pub fn loaded_libraries() -> Vec<(String, String)> {
    driver::PRELOADED.lock().clone()
}

/// Is NVRTC loadable here?
pub fn nvrtc_present() -> bool {
    driver::nvrtc_present()
}

// ---- advanced indexing with device index tensors, nonzero --------------------------------------

use source::MAXK;

/// The index of an advanced-indexing launch (matches `struct IxK` in `source::index_k`).
#[repr(C)]
#[derive(Copy, Clone)]
struct IxK {
    shape: [i64; MAXD],
    st: [[i64; MAXD]; 2 + MAXK],
    mul: [u32; MAXD],
    shr: [u32; MAXD],
    size: [i64; MAXK],
    xst: [i64; MAXK],
    idx: [u64; MAXK],
    nd: i32,
    k: i32,
    fast32: i32,
    pad: i32,
}

/// One index tensor of a device advanced index: int64 on the device, laid out over the result's
/// dims (stride 0 on the dims it does not vary along), selecting along a target dim of `size`
/// elements at element stride `xstride`.
pub struct DevIndex<'a> {
    pub t: &'a Tensor,
    pub strides: Vec<isize>,
    pub size: usize,
    pub xstride: isize,
}

/// Advanced indexing on the device over a result of `shape` (in its final dim order):
/// `x_strides` are the target's strides on the dims not indexed (0 on the index dims); `vals` /
/// the result are addressed by `v_strides`. `mode` "take" returns the contiguous result read from
/// `x`; "put"/"put_add" write `vals` into `x` (and return it); "check" only checks the indices
/// (`shape` then spans the index dims). With `check`, the out-of-range flag is read back (one
/// sync) and Ok(None) means an index was out of range (the caller raises torch's error); without
/// it nothing is read back (indices already checked: the backward).
#[allow(clippy::too_many_arguments)]
pub fn index_device(mode: &str, x: &Tensor, shape: &[usize], x_strides: &[isize], v_strides: &[isize], vals: Option<&Tensor>, idx: &[DevIndex<'_>], check: bool) -> Result<Option<Tensor>> {
    let dt = x.dtype();
    if idx.len() > MAXK {
        return Err(Error::runtime(format!("index_device takes at most {MAXK} index tensors")));
    }
    let n = numel(shape);
    let out = if mode == "take" { Some(empty(shape, dt, x.device())?) } else { None };
    if n == 0 {
        return Ok(Some(out.unwrap_or_else(|| x.clone())));
    }
    let mut strides: Vec<Vec<isize>> = vec![x_strides.to_vec(), v_strides.to_vec()];
    strides.extend(idx.iter().map(|d| d.strides.clone()));
    let (sh, st) = coalesce(shape, &strides);
    if sh.len() > MAXD {
        return Err(Error::runtime(format!("CUDA kernels take at most {MAXD} non-mergeable dims; got a {}-d layout", sh.len())));
    }
    let (mut a, mut b) = match (mode, &out, vals) {
        ("take", Some(o), _) => (dptr(x), dptr(o)),
        ("check", _, _) => (0, 0),
        ("put" | "put_add", _, Some(v)) => (dptr(v), dptr(x)),
        _ => return Err(Error::runtime(format!("index_device: mode {mode:?} without the tensors it needs"))),
    };
    let mut ix = IxK { shape: [1; MAXD], st: [[0; MAXD]; 2 + MAXK], mul: [1; MAXD], shr: [0; MAXD], size: [1; MAXK], xst: [0; MAXK], idx: [0; MAXK], nd: sh.len() as i32, k: idx.len() as i32, fast32: 0, pad: 0 };
    for (d, &len) in sh.iter().enumerate() {
        ix.shape[d] = len as i64;
        for j in 0..st.len() {
            ix.st[j][d] = st[j][d] as i64;
        }
    }
    ix.fast32 = magic_dims(&ix.shape[..sh.len()], &ix.st, n, &mut ix.mul, &mut ix.shr) as i32;
    for (j, d) in idx.iter().enumerate() {
        ix.size[j] = d.size as i64;
        ix.xst[j] = d.xstride as i64;
        ix.idx[j] = dptr(d.t);
    }
    let err = error_flag()?;
    let name = format!("index_{mode}_{}", source::tag(dt));
    let f = driver::function(&name, || source::index_k(&name, dt, mode))?;
    let (mut n64, mut ep) = (n as i64, err.as_ptr() as u64);
    let mut params = kernel_params!(n64, ix, a, b, ep);
    // SAFETY: every offset the kernel forms comes from the layouts above over `shape`, plus index
    // values it has checked against the indexed dims' sizes before any access.
    unsafe { driver::launch(f, (grid_for(n.div_ceil(4)), 1, 1), (BLOCK, 1, 1), 0, &mut params)? };
    if check && flag_set(&err)? {
        return Ok(None);
    }
    Ok(Some(out.unwrap_or_else(|| x.clone())))
}

/// The coordinates of x's nonzero elements, [count, ndim] int64 on the device (x of 1 to MAXD
/// dims): a count per chunk, an inclusive scan of the counts, the total read back (one sync, as
/// torch's), then the coordinates written in flat order.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    let shape = x.shape();
    let nd = shape.len();
    let m = if x.dtype() == DType::Bool { x.clone() } else { cast(x, DType::Bool)? };
    let m = if m.is_contiguous() { m } else { contiguous(&m)? };
    let n = m.numel();
    if n == 0 {
        return empty(&[0, nd], DType::I64, x.device());
    }
    let blocks = n.div_ceil(source::NZ_CHUNK);
    let counts = empty(&[blocks], DType::I64, x.device())?;
    let fc = driver::function("nz_count", source::nonzero_kernels)?;
    let fw = driver::function("nz_write", source::nonzero_kernels)?;
    let (mut n64, mut mp, mut cp) = (n as i64, dptr(&m), dptr(&counts));
    let mut params = kernel_params!(n64, mp, cp);
    // SAFETY: m holds n contiguous bools (bytes); counts one int64 per block.
    unsafe { driver::launch(fc, (blocks as u32, 1, 1), (256, 1, 1), 0, &mut params)? };
    let incl = cumsum(&counts, 0)?;
    let mut total = 0i64;
    // SAFETY: the last element of incl, 8 bytes, into a host int64.
    unsafe { super::dtoh(&mut total as *mut i64 as *mut u8, (dptr(&incl) + 8 * (blocks as u64 - 1)) as *const u8, 8)? };
    let out = empty(&[total as usize, nd], DType::I64, x.device())?;
    if total > 0 {
        #[repr(C)]
        struct Shp([i64; MAXD]);
        let mut shp = Shp([1; MAXD]);
        for (d, &s) in shape.iter().enumerate() {
            shp.0[d] = s as i64;
        }
        let (mut ip, mut nd32, mut op) = (dptr(&incl), nd as i32, dptr(&out));
        let mut params = kernel_params!(n64, mp, ip, nd32, shp, op);
        // SAFETY: out holds total * nd int64; each true element's rank is below total.
        unsafe { driver::launch(fw, (blocks as u32, 1, 1), (256, 1, 1), 0, &mut params)? };
    }
    Ok(out)
}
