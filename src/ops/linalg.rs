//! Matrix products: mm, bmm, mv, dot, outer, and matmul's dispatch over them (torch's rules for
//! 1-d operands and broadcast batch dims). GEMM reads strided operands directly, so transposed
//! views in backward rules cost no copy.

use super::*;
use crate::autograd::SavedTensor;
use crate::bail;
use crate::tensor::layout::broadcast_shapes;
use smallvec::smallvec;

fn same_dtype(a: &Tensor, b: &Tensor, what: &str) -> Result<DType> {
    let (da, db) = (a.dtype(), b.dtype());
    if da != db {
        bail!(Runtime, "expected {} to have the same dtype, but got: {} != {}", what, da, db);
    }
    if da == DType::Bool {
        bail!(NotImplemented, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
    }
    Ok(da)
}

/// [B,m,k] @ [B,k,n] -> [B,m,n] over strided 3-d views, no recording.
fn bmm_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.is_cuda() || b.is_cuda() {
        if crate::backend::cuda::has_kernels() {
            return crate::backend::cuda::native::bmm(a, b);
        }
        return crate::backend::cuda::via_host(&[a, b], |h| bmm_raw(&h[0], &h[1]));
    }
    let dt = a.dtype();
    if dt.is_narrow() {
        // in the compute dtype: float16/bfloat16 products accumulate in float32 and round once,
        // narrow integers wrap once at the end (the same as wrapping at every step)
        let c = dt.compute();
        return cast_raw(&bmm_raw(&cast_raw(a, c)?, &cast_raw(b, c)?)?, dt);
    }
    let (la, lb) = (a.layout(), b.layout());
    let (bs, m, k, n) = (la.shape[0], la.shape[1], la.shape[2], lb.shape[2]);
    let (sa, sb) = (a.storage(), b.storage());
    crate::with_compute_dtype!(dt, T => {
        let (xa, xb) = (sa.slice::<T>(), sb.slice::<T>());
        let run = |(i, o): (usize, &mut [std::mem::MaybeUninit<T>])| {
            cpu::gemm::<T>(m, n, k, xa, la.offset + i * la.strides[0], la.strides[1], la.strides[2],
                xb, lb.offset + i * lb.strides[0], lb.strides[1], lb.strides[2], o);
        };
        // gemm overwrites every element without reading it, so no zero fill first (the fill cost
        // ~5% of a 12-layer 512-wide MLP step in memset).
        let out = cpu::filled_vec::<T>(bs * m * n, |out| {
            // (a batch of tiny products, e.g. 2 x 4x4, is less work than handing half of it to a
            // helper: split only from as much work as a GEMM that is split itself)
            if bs > 1 && m * n * k < 128 * 128 * 128 && bs * m * n * k >= 48 * 48 * 48 && m * n > 0 && crate::backend::num_threads() > 1 {
                crate::backend::threads::for_each_chunk_mut(out, m * n, |i, o| run((i, o)));
            } else if m * n > 0 {
                out.chunks_mut(m * n).enumerate().for_each(run);
            }
        });
        Ok(Tensor::from_vec(out, &[bs, m, n]))
    })
}

/// torch's CPU matrix products have no bool kernel.
fn no_bool(a: &Tensor, kernel: &str) -> Result<()> {
    if a.dtype() == DType::Bool {
        bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", kernel);
    }
    Ok(())
}

pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mm");
    if a.ndim() != 2 {
        bail!(Runtime, "self must be a matrix");
    }
    if b.ndim() != 2 {
        bail!(Runtime, "mat2 must be a matrix");
    }
    let (sa, sb) = (a.shape(), b.shape());
    if sa[1] != sb[0] {
        bail!(Runtime, "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", sa[0], sa[1], sb[0], sb[1]);
    }
    same_dtype(a, b, "m1 and m2")?;
    no_bool(a, "addmm_impl_cpu_")?;
    let out = {
        let r = bmm_raw(&a.view_with_layout(unsq0(a)), &b.view_with_layout(unsq0(b)))?;
        r.view_with_layout(crate::tensor::Layout::contiguous(&[sa[0], sb[1]]))
    };
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "MmBackward0", saved!(self = SavedTensor::input(a), mat2 = SavedTensor::input(b)), |ctx, gs| {
            let a = if ctx.needs(1) { Some(ctx.saved(0)?) } else { None };
            let b = if ctx.needs(0) { Some(ctx.saved(1)?) } else { None };
            let (ga, gb) = mm_grads(&gs[0], a, b)?;
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

/// bias + mat1 @ mat2 for a linear layer (torch's `addmm(bias, x, w.t())`): mat1 (m, k) and mat2
/// (k, n) matrices of one float dtype, bias broadcastable to (m, n) (the engine sums its gradient
/// back to its shape). One node, AddmmBackward0, whose inputs are (bias, mat1, mat2) as torch's.
pub fn addmm(bias: &Tensor, mat1: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    use crate::autograd::SavedScalar::Int;
    addmm_scaled(bias, mat1, mat2, 1.0, 1.0, [Int(1), Int(1)])
}

/// torch.addmm: beta * bias + alpha * (mat1 @ mat2), one node AddmmBackward0 that shows beta and
/// alpha as the caller gave them (`shown`: [beta, alpha]). With beta 0 the bias's values are not
/// read (its NaNs do not reach the result) and its gradient is zeros, as torch's.
pub fn addmm_scaled(bias: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64, shown: [crate::autograd::SavedScalar; 2]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::addmm");
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let p = mm(mat1, mat2)?;
        let dt = p.dtype();
        if bias.dtype() != dt {
            bail!(Runtime, "self and mat2 must have the same dtype, but got {} and {}", bias.dtype().c_name(), dt.c_name());
        }
        let ps = p.shape();
        // bias must broadcast to (m, n): the error of the broadcast itself, or torch's for a bias
        // that would grow the result
        let grown = match broadcast_shapes(&bias.shape(), &ps) {
            Ok(s) => s[..] != ps[..],
            Err(_) => {
                binary_raw(&p, bias, dt, BinOp::Add)?;
                false
            }
        };
        if grown {
            let os = broadcast_shapes(&bias.shape(), &ps)?;
            bail!(Runtime, "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension 1", ps[1], os.get(1).copied().unwrap_or(0));
        }
        let p = if alpha != 1.0 { binary_raw(&p, &scalar(alpha), dt, BinOp::Mul)? } else { p };
        if beta == 0.0 {
            p
        } else {
            let b = if beta != 1.0 { binary_raw(bias, &scalar(beta), dt, BinOp::Mul)? } else { bias.clone() };
            binary_raw(&p, &b, dt, BinOp::Add)?
        }
    };
    if needs_grad(&[bias, mat1, mat2]) {
        let (n1, n2) = (mat1.requires_grad(), mat2.requires_grad());
        let mut saved: smallvec::SmallVec<[SavedTensor; 2]> = smallvec::SmallVec::new();
        if n2 {
            saved.push(SavedTensor::input(mat1));
        }
        if n1 {
            saved.push(SavedTensor::input(mat2));
        }
        let names: &'static [&'static str] = if n2 { &["mat1", "mat2"] } else { &["mat2", "mat1"] };
        let [shown_beta, shown_alpha] = shown;
        record_with_scalars(&[&out], &[bias, mat1, mat2], "AddmmBackward0", crate::autograd::Named(saved, names), [("alpha", shown_alpha), ("beta", shown_beta)], move |ctx, gs| {
            let g = &gs[0];
            let gbias = if !ctx.needs(0) { None } else if beta == 1.0 { Some(g.clone()) } else { Some(mul(g, &scalar(beta))?) };
            let m1 = if ctx.needs(2) { Some(ctx.saved(0)?) } else { None };
            let m2 = if ctx.needs(1) { Some(ctx.saved(n2 as usize)?) } else { None };
            let ga = if alpha == 1.0 { g.clone() } else { mul(g, &scalar(alpha))? };
            let (g1, g2) = mm_grads(&ga, m1, m2)?;
            Ok(smallvec![gbias, g1, g2])
        });
    }
    Ok(out)
}

/// a @ b for matrices already checked, without recording.
fn mm_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let r = bmm_raw(&a.view_with_layout(unsq0(a)), &b.view_with_layout(unsq0(b)))?;
    Ok(r.view_with_layout(crate::tensor::Layout::contiguous(&[a.shape()[0], b.shape()[1]])))
}

/// The gradients of `a @ b` from the output's gradient `g`: g @ b^T where `b` is given (the left
/// operand's gradient is wanted), a^T @ g where `a` is; both at once where `mm_grads_paired`
/// applies, else in turn.
fn mm_grads(g: &Tensor, a: Option<Tensor>, b: Option<Tensor>) -> Result<(Option<Tensor>, Option<Tensor>)> {
    if let (Some(a), Some(b)) = (&a, &b) {
        if let Some((ga, gb)) = mm_grads_paired(g, a, b)? {
            return Ok((Some(ga), Some(gb)));
        }
    }
    let ga = match &b {
        Some(b) => Some(mm(g, &transpose(b, 0, 1)?)?),
        None => None,
    };
    let gb = match &a {
        Some(a) => Some(mm(&transpose(a, 0, 1)?, g)?),
        None => None,
    };
    Ok((ga, gb))
}

/// Both gradients of `a @ b` (g @ b^T and a^T @ g) at once, each product whole on one of the two
/// threads, instead of one after the other with each split in two: one hand-over instead of two,
/// and each thread keeps its own product's operands in its cache. Measured on the 2-core build
/// machine (a @ b and its backward, 16 distinct operand sets): 4-9% faster at 64-96, 17% at
/// 128, 1-4% at 256, 3% at 512, even at 700; a 12-layer MLP step 3-13% faster, the 16-branch matmul
/// graph of benches/compare_torch.py 1-4%. Only with exactly two
/// threads (with more, one thread per product would leave the others idle; sharing the threads
/// out between the two products' blocks would generalise it, not done), for the products
/// the team would split, outside grad mode (a helper thread records nothing). None where it does
/// not apply: the caller computes them in turn. The bits are those of the split products, which
/// do not depend on the split.
fn mm_grads_paired(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Option<(Tensor, Tensor)>> {
    if crate::autograd::is_grad_enabled() || crate::backend::num_threads() != 2 || g.is_cuda() || a.is_cuda() || b.is_cuda() {
        return Ok(None);
    }
    let dt = g.dtype();
    if !matches!(dt, DType::F32 | DType::F64) || a.dtype() != dt || b.dtype() != dt || g.ndim() != 2 || a.ndim() != 2 || b.ndim() != 2 {
        return Ok(None);
    }
    // (the products below do not check shapes: anything unexpected takes mm's checked path)
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    if b.shape()[0] != k || g.shape()[..] != [m, n] {
        return Ok(None);
    }
    let work = m * k * n;
    if !(crate::backend::cpu::GEMM_SPLIT_MIN..crate::backend::cpu::GEMM_CRATE_PAR_MIN).contains(&work) {
        return Ok(None);
    }
    let (bt, at) = (transpose(b, 0, 1)?, transpose(a, 0, 1)?);
    let slots: [std::sync::Mutex<Option<Result<Tensor>>>; 2] = Default::default();
    crate::backend::threads::run(2, 2, &|p| {
        // (the profiler shows each product as the sequential path's aten::mm would)
        let _prof = crate::prof!("aten::mm");
        let r = if p == 0 { mm_raw(g, &bt) } else { mm_raw(&at, g) };
        *slots[p].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    });
    let [ga, gb] = slots.map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()));
    match (ga, gb) {
        (Some(ga), Some(gb)) => Ok(Some((ga?, gb?))),
        _ => Ok(None),
    }
}

/// The layout of `t` with a leading batch dim of 1.
fn unsq0(t: &Tensor) -> crate::tensor::Layout {
    let mut l = t.layout();
    l.shape.insert(0, 1);
    l.strides.insert(0, 0);
    l
}

pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::bmm");
    if a.ndim() != 3 {
        bail!(Runtime, "batch1 must be a 3D tensor");
    }
    if b.ndim() != 3 {
        bail!(Runtime, "batch2 must be a 3D tensor");
    }
    let (sa, sb) = (a.shape(), b.shape());
    if sb[0] != sa[0] || sb[1] != sa[2] {
        bail!(Runtime, "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].", sa[0], sa[2], sb[0], sb[1]);
    }
    same_dtype(a, b, "batch1 and batch2")?;
    no_bool(a, "bmm")?;
    let out = bmm_raw(a, b)?;
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "BmmBackward0", saved!(self = SavedTensor::input(a), mat2 = SavedTensor::input(b)), |ctx, gs| {
            let ga = if ctx.needs(0) { Some(bmm(&gs[0], &transpose(&ctx.saved(1)?, 1, 2)?)?) } else { None };
            let gb = if ctx.needs(1) { Some(bmm(&transpose(&ctx.saved(0)?, 1, 2)?, &gs[0])?) } else { None };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

pub fn mv(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::mv");
    if a.ndim() == 0 {
        bail!(Index, "Dimension specified as 0 but tensor has no dimensions"); // torch sizes its output first
    }
    if a.ndim() != 2 || v.ndim() != 1 {
        bail!(Runtime, "vector + matrix @ vector expected, got {}, {}, {}", 1, a.ndim(), v.ndim());
    }
    let (sa, sv) = (a.shape(), v.shape());
    if sa[1] != sv[0] {
        bail!(Runtime, "size mismatch, got input ({}), mat ({}x{}), vec ({})", sa[0], sa[0], sa[1], sv[0]);
    }
    same_dtype(a, v, "m1 and m2")?;
    no_bool(a, "addmv_impl_cpu")?;
    let vl = {
        let mut l = v.layout();
        l.shape.push(1);
        l.strides.push(1);
        l.shape.insert(0, 1);
        l.strides.insert(0, 0);
        l
    };
    let r = bmm_raw(&a.view_with_layout(unsq0(a)), &v.view_with_layout(vl))?;
    let out = r.view_with_layout(crate::tensor::Layout::contiguous(&[sa[0]]));
    if needs_grad(&[a, v]) {
        record(&[&out], &[a, v], "MvBackward0", saved!(self = SavedTensor::input(a), vec = SavedTensor::input(v)), |ctx, gs| {
            let ga = if ctx.needs(0) { Some(outer(&gs[0], &ctx.saved(1)?)?) } else { None };
            let gv = if ctx.needs(1) { Some(mv(&transpose(&ctx.saved(0)?, 0, 1)?, &gs[0])?) } else { None };
            Ok(smallvec![ga, gv])
        });
    }
    Ok(out)
}

pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::dot");
    if a.ndim() != 1 || b.ndim() != 1 {
        bail!(Runtime, "1D tensors expected, but got {}D and {}D tensors", a.ndim(), b.ndim());
    }
    let (na, nb) = (a.numel(), b.numel());
    if na != nb {
        bail!(Runtime, "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively", na, nb, na, nb);
    }
    let dt = a.dtype();
    if dt != b.dtype() {
        bail!(Runtime, "dot : expected both vectors to have same dtype, but found {} and {}", crate::ops::shape::type_word(dt), crate::ops::shape::type_word(b.dtype()));
    }
    no_bool(a, "dot")?;
    let dev = crate::backend::cuda::common_device(&[a, b])?;
    if a.device() != b.device() {
        return Err(crate::backend::cuda::device_mismatch(a.device(), b.device()));
    }
    let out = if dev.is_cuda() && crate::backend::cuda::has_kernels() && dt.is_float() {
        // [1,n] @ [n,1] through cuBLAS, viewed as a 0-d result
        let r = bmm_raw(&a.view_with_layout(crate::tensor::Layout { shape: smallvec::smallvec![1, 1, na], strides: smallvec::smallvec![0, na.max(1), a.layout().strides[0]], offset: a.layout().offset }),
            &b.view_with_layout(crate::tensor::Layout { shape: smallvec::smallvec![1, nb, 1], strides: smallvec::smallvec![0, b.layout().strides[0], 1], offset: b.layout().offset }))?;
        r.view_with_layout(crate::tensor::Layout::contiguous(&[]))
    } else {
        crate::backend::cuda::place(dot_host(a, b, dt)?, dev)?
    };
    if needs_grad(&[a, b]) {
        record(&[&out], &[a, b], "DotBackward0", saved!(self = SavedTensor::input(a), tensor = SavedTensor::input(b)), |ctx, gs| {
            let ga = if ctx.needs(0) { Some(mul(&gs[0], &ctx.saved(1)?)?) } else { None };
            let gb = if ctx.needs(1) { Some(mul(&gs[0], &ctx.saved(0)?)?) } else { None };
            Ok(smallvec![ga, gb])
        });
    }
    Ok(out)
}

pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::outer");
    if a.ndim() != 1 || b.ndim() != 1 {
        bail!(Runtime, "outer: Expected 1-D argument self, but got {}-D", a.ndim().max(b.ndim()));
    }
    mul(&unsqueeze(a, 1)?, b)
}

/// torch.matmul's dispatch.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::matmul");
    let (na, nb) = (a.ndim(), b.ndim());
    if na == 0 || nb == 0 {
        bail!(Runtime, "both arguments to matmul need to be at least 1D, but they are {}D and {}D", na, nb);
    }
    match (na, nb) {
        (1, 1) => dot(a, b),
        (2, 2) => mm(a, b),
        (1, 2) => {
            let (sa, sb) = (a.shape(), b.shape());
            if sa[0] != sb[0] {
                bail!(Runtime, "mat1 and mat2 shapes cannot be multiplied (1x{} and {}x{})", sa[0], sb[0], sb[1]);
            }
            // torch squeezes its mm result in place: SqueezeBackward4
            squeeze_dims(&mm(&unsqueeze(a, 0)?, b)?, &[0], "SqueezeBackward4")
        }
        (2, 1) => mv(a, b),
        _ if na >= 3 && nb <= 2 && (b.requires_grad() || folds_without_copy(a)) => {
            // torch's fold: the batch dims of a into its rows, one mm (mv), viewed back
            // (UnsafeViewBackward0); it folds even through a copy of a when b requires grad, which
            // keeps b's gradient one mm instead of a batch of them summed
            let sa = a.shape();
            let k = sa[na - 1];
            let rows: usize = sa[..na - 1].iter().product();
            let folded = reshape_to(a, &[rows, k])?;
            let mut out_shape: Vec<usize> = sa[..na - 1].to_vec();
            let r = if nb == 2 {
                out_shape.push(b.shape()[1]);
                mm(&folded, b)?
            } else {
                mv(&folded, b)?
            };
            Ok(unsafe_view(&r, &out_shape))
        }
        _ => {
            // Batched: move 1-d operands to matrices, broadcast batch dims, bmm, restore.
            let a2 = if na == 1 { unsqueeze(a, 0)? } else { a.clone() };
            let b2 = if nb == 1 { unsqueeze(b, 1)? } else { b.clone() };
            let (sa, sb) = (a2.shape(), b2.shape());
            let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
            let (k2, n) = (sb[sb.len() - 2], sb[sb.len() - 1]);
            let batch = broadcast_shapes(&sa[..sa.len() - 2], &sb[..sb.len() - 2])?;
            let bsz: usize = batch.iter().product();
            if k != k2 {
                // (the sizes of the operands as torch's bmm sees them: expanded to the batch)
                bail!(Runtime, "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].", bsz, k, bsz, k2);
            }
            let mut ea: Vec<usize> = batch.to_vec();
            ea.extend([m, k]);
            let mut eb: Vec<usize> = batch.to_vec();
            eb.extend([k, n]);
            let a3 = reshape_to(&expand_to(&a2, &ea)?, &[bsz, m, k])?;
            let b3 = reshape_to(&expand_to(&b2, &eb)?, &[bsz, k, n])?;
            let r = bmm(&a3, &b3)?;
            let mut out_shape: Vec<usize> = batch.to_vec();
            if na > 1 {
                out_shape.push(m);
            }
            if nb > 1 {
                out_shape.push(n);
            }
            // (torch views its fresh bmm result back with _unsafe_view too)
            Ok(unsafe_view(&r, &out_shape))
        }
    }
}

/// Whether x's dims before the last merge into one without a copy (torch's should_fold test).
fn folds_without_copy(x: &Tensor) -> bool {
    x.with_layout(|l| l.numel() == 0 || (0..l.ndim() - 2).all(|i| l.strides[i] == l.strides[i + 1] * l.shape[i + 1]))
}

/// dot on the host (integers exactly, floats summed in float64).
fn dot_host(a: &Tensor, b: &Tensor, dt: DType) -> Result<Tensor> {
    if dt.is_narrow() {
        let c = dt.compute();
        return cast_raw(&dot_host(&cast_raw(a, c)?, &cast_raw(b, c)?, c)?, dt);
    }
    Ok(crate::with_compute_dtype!(dt, T => {
        let (va, vb) = (a.to_vec::<T>()?, b.to_vec::<T>()?);
        let s = if dt == DType::I64 {
            T::from_i64(va.iter().zip(&vb).fold(0i64, |acc, (x, y)| acc.wrapping_add(x.to_i64().wrapping_mul(y.to_i64()))))
        } else {
            T::from_f64(va.iter().zip(&vb).map(|(x, y)| x.to_f64() * y.to_f64()).sum::<f64>())
        };
        Tensor::scalar(s)
    }))
}
