//! CPU kernels: elementwise maps with broadcasting, reductions over contiguous groups, strided
//! copies, and GEMM through the `gemm` crate. Inputs arrive as tensors; outputs are new
//! contiguous tensors unless the kernel writes in place.

use crate::error::Result;
use crate::tensor::layout::{numel, Layout};
use crate::tensor::{DType, Element, Tensor};
use rayon::prelude::*;

/// Elementwise work above this many elements is split across rayon's pool.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// out[i] = f(x[i]), x read as T.
pub fn map<T: Element, U: Element>(x: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Tensor {
    let shape = x.shape();
    let v: Vec<U> = x.with_contiguous::<T, _>(|s| {
        if s.len() >= PAR_THRESHOLD {
            s.par_iter().map(|&a| f(a)).collect()
        } else {
            s.iter().map(|&a| f(a)).collect()
        }
    });
    Tensor::from_vec(v, &shape)
}

/// Visit offsets of two layouts broadcast to the same shape, in row-major order.
fn for_each_offset2(a: &Layout, b: &Layout, mut f: impl FnMut(usize, usize)) {
    let n = a.numel();
    if n == 0 {
        return;
    }
    let nd = a.ndim();
    if nd == 0 {
        f(a.offset, b.offset);
        return;
    }
    let inner = a.shape[nd - 1];
    let (sa, sb) = (a.strides[nd - 1], b.strides[nd - 1]);
    let mut idx = vec![0usize; nd];
    let (mut oa, mut ob) = (a.offset, b.offset);
    loop {
        for j in 0..inner {
            f(oa + j * sa, ob + j * sb);
        }
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            oa += a.strides[d];
            ob += b.strides[d];
            if idx[d] < a.shape[d] {
                break;
            }
            oa -= a.strides[d] * a.shape[d];
            ob -= b.strides[d] * b.shape[d];
            idx[d] = 0;
        }
    }
}

/// out[i] = f(a[i], b[i]) over the broadcast shape; a and b already hold T.
pub fn zip<T: Element, U: Element>(a: &Tensor, b: &Tensor, shape: &[usize], f: impl Fn(T, T) -> U + Sync + Send) -> Result<Tensor> {
    let (da, db) = (a.data(), b.data());
    let n = numel(shape);
    let (sa, sb) = (da.storage.slice::<T>(), db.storage.slice::<T>());
    let same = |l: &Layout| l.shape[..] == *shape && l.is_contiguous();
    let v: Vec<U> = if same(&da.layout) && same(&db.layout) {
        let (xa, xb) = (&sa[da.layout.offset..da.layout.offset + n], &sb[db.layout.offset..db.layout.offset + n]);
        if n >= PAR_THRESHOLD {
            xa.par_iter().zip(xb.par_iter()).map(|(&x, &y)| f(x, y)).collect()
        } else {
            xa.iter().zip(xb.iter()).map(|(&x, &y)| f(x, y)).collect()
        }
    } else if same(&da.layout) && db.layout.numel() == 1 {
        let y = sb[db.layout.offset];
        let xa = &sa[da.layout.offset..da.layout.offset + n];
        if n >= PAR_THRESHOLD {
            xa.par_iter().map(|&x| f(x, y)).collect()
        } else {
            xa.iter().map(|&x| f(x, y)).collect()
        }
    } else if same(&db.layout) && da.layout.numel() == 1 {
        let x = sa[da.layout.offset];
        let xb = &sb[db.layout.offset..db.layout.offset + n];
        if n >= PAR_THRESHOLD {
            xb.par_iter().map(|&y| f(x, y)).collect()
        } else {
            xb.iter().map(|&y| f(x, y)).collect()
        }
    } else {
        let (la, lb) = (da.layout.broadcast_to(shape)?, db.layout.broadcast_to(shape)?);
        let mut v = Vec::with_capacity(n);
        for_each_offset2(&la, &lb, |oa, ob| v.push(f(sa[oa], sb[ob])));
        v
    };
    Ok(Tensor::from_vec(v, shape))
}

/// out[i] = f(a[i], b[i], c[i]) over the broadcast shape (used by where/clamp with tensors).
pub fn zip3<A: Element, T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    shape: &[usize],
    f: impl Fn(A, T, T) -> U,
) -> Result<Tensor> {
    let la = a.layout().broadcast_to(shape)?;
    let lb = b.layout().broadcast_to(shape)?;
    let lc = c.layout().broadcast_to(shape)?;
    let (sa, sb, sc) = (a.storage(), b.storage(), c.storage());
    let (xa, xb, xc) = (sa.slice::<A>(), sb.slice::<T>(), sc.slice::<T>());
    let mut oa = Vec::with_capacity(numel(shape));
    la.for_each_offset(|o| oa.push(o));
    let mut ob = Vec::with_capacity(oa.len());
    lb.for_each_offset(|o| ob.push(o));
    let mut v = Vec::with_capacity(oa.len());
    let mut i = 0;
    lc.for_each_offset(|o| {
        v.push(f(xa[oa[i]], xb[ob[i]], xc[o]));
        i += 1;
    });
    Ok(Tensor::from_vec(v, shape))
}

/// A copy of `x` converted to `dtype`, contiguous.
pub fn cast(x: &Tensor, dtype: DType) -> Tensor {
    crate::with_dtype!(x.dtype(), S => {
        crate::with_dtype!(dtype, D => map::<S, D>(x, |v| convert::<S, D>(v)))
    })
}

#[inline(always)]
pub fn convert<S: Element, D: Element>(v: S) -> D {
    match D::DTYPE {
        DType::Bool => D::from_bool(v.to_bool()),
        DType::I64 => D::from_i64(if S::DTYPE.is_float() { v.to_f64() as i64 } else { v.to_i64() }),
        _ => D::from_f64(v.to_f64()),
    }
}

/// Contiguous copy of `x` (same dtype).
pub fn contiguous(x: &Tensor) -> Tensor {
    crate::with_dtype!(x.dtype(), T => Tensor::from_vec(x.to_vec::<T>(), &x.shape()))
}

/// Write `src` (broadcast to dst's shape, converted to dst's dtype) through dst's layout.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let dl = dst.layout();
    let src = if src.dtype() != dst.dtype() { cast(src, dst.dtype()) } else { src.clone() };
    let sl = src.layout().broadcast_to(&dl.shape)?;
    crate::with_dtype!(dst.dtype(), T => {
        // Read the source fully first: src may alias dst.
        let ss = src.storage();
        let s = ss.slice::<T>();
        let mut vals: Vec<T> = Vec::with_capacity(dl.numel());
        sl.for_each_offset(|o| vals.push(s[o]));
        let ds = dst.storage();
        let d = unsafe { ds.slice_mut::<T>() };
        let mut i = 0;
        dl.for_each_offset(|o| {
            d[o] = vals[i];
            i += 1;
        });
    });
    Ok(())
}

/// Reduce each group of `x` over `dims` with `f` (which sees one group as a contiguous slice).
/// Returns the output shape with reduced dims kept as 1 (`keepdim` decides the caller's view).
pub fn reduce<T: Element, U: Element>(x: &Tensor, dims: &[usize], f: impl Fn(&[T]) -> U + Sync + Send) -> (Vec<U>, Vec<usize>) {
    let shape = x.shape();
    let nd = shape.len();
    let kept: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
    let out_shape: Vec<usize> = (0..nd).map(|d| if dims.contains(&d) { 1 } else { shape[d] }).collect();
    let group: usize = dims.iter().map(|&d| shape[d]).product();
    let outer: usize = kept.iter().map(|&d| shape[d]).product();
    // Permute reduced dims last, then every group is a contiguous run.
    let mut perm = kept.clone();
    perm.extend(dims.iter().copied());
    let l = x.layout();
    let pl = Layout {
        shape: perm.iter().map(|&p| l.shape[p]).collect(),
        strides: perm.iter().map(|&p| l.strides[p]).collect(),
        offset: l.offset,
    };
    let v: Vec<U> = x.view_with_layout(pl).with_contiguous::<T, _>(|s| {
        if group == 0 {
            return (0..outer).map(|_| f(&[])).collect();
        }
        if s.len() >= PAR_THRESHOLD && outer > 1 {
            s.par_chunks(group).map(&f).collect()
        } else {
            s.chunks(group).map(&f).collect()
        }
    });
    (v, out_shape)
}

/// Sum in f64 for accuracy (pairwise in chunks keeps rounding small for long float32 rows).
#[inline]
pub fn sum_slice<T: Element>(s: &[T]) -> f64 {
    if s.len() >= PAR_THRESHOLD {
        return s.par_chunks(4096).map(|c| c.iter().map(|v| v.to_f64()).sum::<f64>()).sum();
    }
    let mut acc = [0f64; 4];
    let mut chunks = s.chunks_exact(4);
    for c in &mut chunks {
        acc[0] += c[0].to_f64();
        acc[1] += c[1].to_f64();
        acc[2] += c[2].to_f64();
        acc[3] += c[3].to_f64();
    }
    let mut tail = 0.0;
    for v in chunks.remainder() {
        tail += v.to_f64();
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// C[m,n] = A[m,k] @ B[k,n] for strided 2-d operands, written into a fresh contiguous buffer.
/// `a`/`b` are (ptr offset, row stride, col stride) views into their storages.
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: Element>(m: usize, n: usize, k: usize, a: &[T], a_off: usize, a_rs: usize, a_cs: usize, b: &[T], b_off: usize, b_rs: usize, b_cs: usize, out: &mut [T]) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.iter_mut().for_each(|o| *o = T::default());
        return;
    }
    match T::DTYPE {
        DType::F32 | DType::F64 => {
            let par = if m * n * k >= 64 * 64 * 64 { gemm::Parallelism::Rayon(rayon::current_num_threads()) } else { gemm::Parallelism::None };
            unsafe {
                gemm::gemm::<T>(
                    m, n, k,
                    out.as_mut_ptr(), 1, n as isize,
                    false,
                    a.as_ptr().add(a_off), a_cs as isize, a_rs as isize,
                    b.as_ptr().add(b_off), b_cs as isize, b_rs as isize,
                    T::from_f64(0.0), T::from_f64(1.0),
                    false, false, false,
                    par,
                );
            }
        }
        _ => {
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0i64;
                    for p in 0..k {
                        acc = acc.wrapping_add(a[a_off + i * a_rs + p * a_cs].to_i64().wrapping_mul(b[b_off + p * b_rs + j * b_cs].to_i64()));
                    }
                    out[i * n + j] = T::from_i64(acc);
                }
            }
        }
    }
}
