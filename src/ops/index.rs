//! Indexing: `x[...]` (ints, slices with step, None, Ellipsis, bool masks, integer tensors),
//! `x[...] = v`, gather, index_select, nonzero.
//!
//! Note [Advanced indexing]: integer-tensor indices are broadcast together; the indexed dims are
//! permuted to the front and gathered, giving shape B ++ rest; when the indexed dims were adjacent
//! the B dims go back where the first of them was (torch's rule). The backward is the adjoint:
//! scatter-add into zeros, then the inverse placement.

use super::*;
use crate::autograd::{GradModeGuard, SavedTensor};
use crate::bail;
use crate::tensor::layout::{broadcast_shapes, wrap_dim, Layout};
use smallvec::smallvec;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum IndexItem {
    Int(i64),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    Tensor(Tensor),
}

/// Python slice bounds against a dim of `size` (step > 0).
fn slice_bounds(start: Option<i64>, stop: Option<i64>, size: usize) -> (usize, usize) {
    let n = size as i64;
    let norm = |v: i64| -> i64 {
        if v < 0 {
            (v + n).max(0)
        } else {
            v.min(n)
        }
    };
    let s = start.map(norm).unwrap_or(0);
    let e = stop.map(norm).unwrap_or(n);
    (s as usize, e.max(s) as usize)
}

/// All positions of nonzero elements, [n, ndim] int64.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::nonzero");
    let shape = x.shape();
    let nd = shape.len();
    if x.is_cuda() && crate::backend::cuda::has_kernels() && (1..=crate::backend::cuda::source::MAXD).contains(&nd) {
        // counted, ranked and written on the device (the count comes back, as in torch)
        return crate::backend::cuda::native::nonzero(x);
    }
    let mut out: Vec<i64> = Vec::new();
    let mut count = 0;
    cast_raw(x, DType::Bool)?.with_contiguous::<bool, _>(|flags| {
        count = flags.iter().map(|&f| f as usize).sum();
        if nd == 0 {
            return;
        }
        // room for one unconditional write past the last true element
        out = vec![0i64; (count + 1) * nd];
        match nd {
            1 => nonzero_rows::<1>(flags, &shape, &mut out),
            2 => nonzero_rows::<2>(flags, &shape, &mut out),
            3 => nonzero_rows::<3>(flags, &shape, &mut out),
            4 => nonzero_rows::<4>(flags, &shape, &mut out),
            _ => nonzero_rows_dyn(flags, &shape, &mut out),
        }
        out.truncate(count * nd);
    })?;
    crate::backend::cuda::place(Tensor::from_vec(out, &[count, nd]), x.device())
}

/// nonzero's coordinates of a contiguous bool buffer of `shape` (N dims), row by row over the last
/// dim with the leading coordinates advanced as an odometer. A row dense in true elements is
/// written without branches (every element's coordinates stored, the cursor advanced by its flag;
/// `out` has room for one write past the last); a sparse row visits its true elements only.
fn nonzero_rows<const N: usize>(flags: &[bool], shape: &[usize], out: &mut [i64]) {
    let len = shape[N - 1].max(1);
    let mut at = [0i64; N];
    let mut k = 0usize;
    for row in flags.chunks(len) {
        let in_row: usize = row.iter().map(|&f| f as usize).sum();
        if in_row * 8 >= row.len() {
            for (j, &f) in row.iter().enumerate() {
                at[N - 1] = j as i64;
                out[k * N..k * N + N].copy_from_slice(&at);
                k += f as usize;
            }
        } else if in_row > 0 {
            for (j, _) in row.iter().enumerate().filter(|(_, &f)| f) {
                at[N - 1] = j as i64;
                out[k * N..k * N + N].copy_from_slice(&at);
                k += 1;
            }
        }
        next_row(&mut at, shape);
    }
}

/// Advance the leading coordinates `at[..n-1]` of a row-major walk over `shape` to the next row.
fn next_row(at: &mut [i64], shape: &[usize]) {
    for d in (0..at.len() - 1).rev() {
        at[d] += 1;
        if (at[d] as usize) < shape[d] {
            return;
        }
        at[d] = 0;
    }
}

/// `nonzero_rows` for more than four dims.
fn nonzero_rows_dyn(flags: &[bool], shape: &[usize], out: &mut [i64]) {
    let nd = shape.len();
    let len = shape[nd - 1].max(1);
    let mut at = vec![0i64; nd];
    let mut k = 0usize;
    for row in flags.chunks(len) {
        for (j, _) in row.iter().enumerate().filter(|(_, &f)| f) {
            at[nd - 1] = j as i64;
            out[k * nd..k * nd + nd].copy_from_slice(&at);
            k += 1;
        }
        next_row(&mut at, shape);
    }
}

struct Parsed {
    /// Result of the basic (view) part.
    view: Tensor,
    /// Advanced indices: (dim of `view`, int64 index tensor).
    adv: Vec<(usize, Tensor)>,
}

/// Apply ints, slices, None and Ellipsis as views (recorded when `record_views`), collecting
/// tensor indices for the advanced step.
fn parse(x: &Tensor, items: &[IndexItem]) -> Result<Parsed> {
    // torch's index dtypes: int32 indexes as int64, uint8 is a mask (deprecated in torch)
    let items: Vec<IndexItem> = items
        .iter()
        .map(|it| match it {
            IndexItem::Tensor(t) if t.dtype() == DType::I32 => Ok(IndexItem::Tensor(cast_raw(t, DType::I64)?)),
            IndexItem::Tensor(t) if t.dtype() == DType::U8 => Ok(IndexItem::Tensor(cast_raw(t, DType::Bool)?)),
            it => Ok(it.clone()),
        })
        .collect::<Result<_>>()?;
    let items = &items[..];
    let nd = x.ndim();
    let consumed: usize = items
        .iter()
        .map(|it| match it {
            IndexItem::Int(_) | IndexItem::Slice(..) => 1,
            IndexItem::Tensor(t) if t.dtype() == DType::Bool => t.ndim(),
            IndexItem::Tensor(_) => 1,
            _ => 0,
        })
        .sum();
    if consumed > nd {
        bail!(Index, "too many indices for tensor of dimension {}", nd);
    }
    if items.iter().filter(|i| matches!(i, IndexItem::Ellipsis)).count() > 1 {
        bail!(Index, "an index can only have a single ellipsis ('...')");
    }
    let mut cur = x.clone();
    let mut d = 0usize;
    let mut adv: Vec<(usize, Tensor)> = Vec::new();
    for it in items {
        match it {
            IndexItem::Int(i) => {
                let size = cur.shape()[d] as i64;
                if *i < -size || *i >= size {
                    bail!(Index, "index {} is out of bounds for dimension {} with size {}", i, d, size);
                }
                cur = select(&cur, d as i64, *i)?;
                // An int after a tensor index shifts nothing already collected (dims before d).
            }
            IndexItem::Slice(start, stop, step) => {
                if *step <= 0 {
                    bail!(Value, "step must be greater than zero");
                }
                let (s, e) = slice_bounds(*start, *stop, cur.shape()[d]);
                if !(s == 0 && e == cur.shape()[d] && *step == 1) {
                    cur = slice(&cur, d, s, e, *step as usize)?;
                }
                d += 1;
            }
            IndexItem::NewAxis => {
                cur = unsqueeze(&cur, d as i64)?;
                d += 1;
            }
            IndexItem::Ellipsis => {
                d += nd - consumed;
            }
            IndexItem::Tensor(t) => match t.dtype() {
                DType::Bool if t.ndim() == 0 => {
                    // torch: a 0-d mask (or a Python bool) adds a dim of size 1, indexed by [0]
                    // when true and by an empty index when false
                    cur = unsqueeze(&cur, d as i64)?;
                    let idx = if t.item_f64()? != 0.0 { Tensor::from_vec(vec![0i64], &[1]) } else { Tensor::from_vec(Vec::<i64>::new(), &[0]) };
                    adv.push((d, crate::backend::cuda::place(idx, t.device())?));
                    d += 1;
                }
                DType::Bool => {
                    let k = t.ndim();
                    let cs = cur.shape();
                    let ts = t.shape();
                    for j in 0..k {
                        if ts[j] != cs[d + j] {
                            bail!(Index, "The shape of the mask {:?} at index {} does not match the shape of the indexed tensor {:?} at index {}", &ts[..], j, &cs[..], d + j);
                        }
                    }
                    let nz = nonzero(t)?;
                    for j in 0..k {
                        adv.push((d + j, select(&nz, 1, j as i64)?.alias()));
                    }
                    d += k;
                }
                DType::I64 => {
                    adv.push((d, t.clone()));
                    d += 1;
                }
                _ => bail!(Index, "tensors used as indices must be long, int, byte or bool tensors"),
            },
        }
    }
    Ok(Parsed { view: cur, adv })
}

/// How advanced indices lay out the result.
struct AdvPlan {
    perm: Vec<i64>,
    idx: Vec<Tensor>,
    bshape: Vec<usize>,
    /// Where the B dims go in the result (0 when not adjacent).
    place: usize,
    xp_shape: Vec<usize>,
    /// The index tensors stayed on the GPU (`idx`: int64 device views broadcast to B, negative
    /// values not yet wrapped, bounds not yet checked): the device kernels read them there.
    dev: bool,
}

/// torch refuses an index into a dim of size 0 before it compares dtypes and shapes (setitem).
fn check_empty_dims(x: &Tensor, adv: &[(usize, Tensor)]) -> Result<()> {
    let xs = x.shape();
    if adv.iter().any(|(d, t)| xs[*d] == 0 && t.numel() > 0) {
        bail!(Index, "index is out of bounds for dimension with size 0");
    }
    Ok(())
}

/// Every index in range (an index tensor selecting nothing, the broadcast being empty, is not read).
fn check_adv_bounds(x: &Tensor, adv: &[(usize, Tensor)], bshape: &[usize]) -> Result<()> {
    if bshape.contains(&0) {
        return Ok(());
    }
    let xs = x.shape();
    for (d, t) in adv {
        let size = xs[*d] as i64;
        if let Some(bad) = t.to_vec::<i64>()?.into_iter().find(|&v| v < -size || v >= size) {
            bail!(Index, "index {} is out of bounds for dimension {} with size {}", bad, d, size);
        }
    }
    Ok(())
}

/// The plan of an advanced index, its bounds checked first when `checked` (else by the caller before
/// any write: setitem checks the value's shape first, as torch).
fn plan(x: &Tensor, adv: &[(usize, Tensor)]) -> Result<AdvPlan> {
    plan_with(x, adv, true)
}

fn plan_with(x: &Tensor, adv: &[(usize, Tensor)], checked: bool) -> Result<AdvPlan> {
    let xs = x.shape();
    let nd = xs.len();
    let dims: Vec<usize> = adv.iter().map(|(d, _)| *d).collect();
    let mut b: crate::tensor::Shape = smallvec::SmallVec::new();
    for (i, (_, t)) in adv.iter().enumerate() {
        b = if i == 0 {
            t.shape()
        } else {
            broadcast_shapes(&b, &t.shape()).map_err(|_| {
                let shapes: Vec<String> = adv.iter().map(|(_, t)| format!("{:?}", &t.shape()[..])).collect();
                crate::error::Error::index(format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
            })?
        };
    }
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let mut perm: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    perm.extend((0..nd as i64).filter(|d| !dims.contains(&(*d as usize))));
    let xp_shape = perm.iter().map(|&p| xs[p as usize]).collect();
    let place = if adjacent { dims[0] } else { 0 };
    // On a GPU with device index tensors, the indices stay there: the kernels wrap and check them
    if x.is_cuda() && crate::backend::cuda::has_kernels() && adv.len() <= crate::backend::cuda::source::MAXK && adv.iter().all(|(_, t)| t.device() == x.device()) {
        let idx = adv.iter().map(|(_, t)| expand_to(&cast_raw(t, DType::I64)?, &b)).collect::<Result<_>>()?;
        return Ok(AdvPlan { perm, idx, bshape: b.to_vec(), place, xp_shape, dev: true });
    }
    if checked {
        check_adv_bounds(x, adv, &b)?;
    }
    let mut idx = Vec::with_capacity(adv.len());
    for (d, t) in adv {
        let size = xs[*d] as i64;
        let vals = t.to_vec::<i64>()?;
        let wrapped: Vec<i64> = vals.iter().map(|&v| if v < 0 { v + size } else { v }).collect();
        let t = Tensor::from_vec(wrapped, &t.shape());
        idx.push(cpu::contiguous(&expand_to(&t, &b)?)?);
    }
    Ok(AdvPlan { perm, idx, bshape: b.to_vec(), place, xp_shape, dev: false })
}

/// Offsets (into xp, x permuted by the plan: its first k dims indexed) selected by each b. A
/// device plan's indices (taking a host path) are wrapped and checked here; a host plan's were
/// when it was made.
fn lead_offsets(xp: &Layout, p: &AdvPlan) -> Result<Vec<usize>> {
    let mut vals: Vec<Vec<i64>> = p.idx.iter().map(|t| t.to_vec::<i64>()).collect::<Result<_>>()?;
    if p.dev {
        for (j, v) in vals.iter_mut().enumerate() {
            let size = xp.shape[j] as i64;
            for e in v.iter_mut() {
                if *e < -size || *e >= size {
                    bail!(Index, "index {} is out of bounds for dimension {} with size {}", e, p.perm[j], size);
                }
                if *e < 0 {
                    *e += size;
                }
            }
        }
    }
    let nb = vals.first().map(|v| v.len()).unwrap_or(0);
    Ok((0..nb)
        .map(|b| xp.offset + vals.iter().enumerate().map(|(j, v)| v[b] as usize * xp.strides[j]).sum::<usize>())
        .collect())
}

/// An index tensor's strides over a device launch, its dim's size and stride in the target.
type DevIdx = (Vec<isize>, usize, isize);

/// A device plan's launch over its result, in the final dim order: the result's shape, the
/// target's strides on it (0 on the B dims) and each index tensor's (0 on the rest dims), with
/// each index's dim size and stride in the target.
fn dev_launch(x: &Tensor, p: &AdvPlan) -> Result<(Vec<usize>, Vec<isize>, Vec<DevIdx>)> {
    let xl = x.layout();
    let k = p.idx.len();
    let nb = p.bshape.len();
    let xs: Vec<usize> = p.perm.iter().map(|&d| xl.strides[d as usize]).collect();
    // each result dim is a B dim (Ok) or a rest dim (Err): rest[..place], B, rest[place..]
    let nr = p.xp_shape.len() - k;
    let order: Vec<std::result::Result<usize, usize>> = (0..p.place).map(Err).chain((0..nb).map(Ok)).chain((p.place..nr).map(Err)).collect();
    let shape: Vec<usize> = order.iter().map(|o| o.map_or_else(|r| p.xp_shape[k + r], |b| p.bshape[b])).collect();
    let x_strides: Vec<isize> = order.iter().map(|o| o.map_or_else(|r| xs[k + r] as isize, |_| 0)).collect();
    let idx = (0..k)
        .map(|j| {
            let il = p.idx[j].layout();
            let st = order.iter().map(|o| o.map_or(0, |b| il.strides[b] as isize)).collect();
            (st, p.xp_shape[j], xs[j] as isize)
        })
        .collect();
    Ok((shape, x_strides, idx))
}

fn dev_indices<'a>(p: &'a AdvPlan, idx: &[DevIdx]) -> Vec<crate::backend::cuda::native::DevIndex<'a>> {
    idx.iter().zip(&p.idx).map(|((st, size, xst), t)| crate::backend::cuda::native::DevIndex { t, strides: st.clone(), size: *size, xstride: *xst }).collect()
}

/// torch's IndexError for a device plan whose kernel found an index out of range (the indices
/// come to the host once more to name it).
fn dev_bounds_error(x: &Tensor, p: &AdvPlan) -> crate::error::Error {
    let adv: Vec<(usize, Tensor)> = p.perm.iter().zip(&p.idx).map(|(&d, t)| (d as usize, t.clone())).collect();
    match check_adv_bounds(x, &adv, &p.bshape) {
        Err(e) => e,
        Ok(()) => crate::error::Error::index("index out of bounds".to_string()),
    }
}

/// A device plan's gather: one kernel writes the result in its final dim order.
fn adv_gather_dev(x: &Tensor, p: &AdvPlan) -> Result<Tensor> {
    let (shape, x_strides, idx) = dev_launch(x, p)?;
    let cs = crate::tensor::layout::contiguous_strides(&shape).iter().map(|&s| s as isize).collect::<Vec<_>>();
    match crate::backend::cuda::native::index_device("take", x, &shape, &x_strides, &cs, None, &dev_indices(p, &idx), true)? {
        Some(out) => Ok(out),
        None => Err(dev_bounds_error(x, p)),
    }
}

/// A device plan's bounds check alone (before a write, so a bad index writes nothing).
fn dev_check(x: &Tensor, p: &AdvPlan) -> Result<()> {
    let nb = p.bshape.len();
    let idx: Vec<DevIdx> = (0..p.idx.len()).map(|j| (p.idx[j].layout().strides[..nb].iter().map(|&s| s as isize).collect(), p.xp_shape[j], 0)).collect();
    let zeros = vec![0isize; nb];
    match crate::backend::cuda::native::index_device("check", x, &p.bshape, &zeros, &zeros, None, &dev_indices(p, &idx), true)? {
        Some(_) => Ok(()),
        None => Err(dev_bounds_error(x, p)),
    }
}

/// Are xp's dims after the k indexed ones one contiguous run (each index position a slice)?
fn rest_is_dense(xp: &Layout, k: usize) -> bool {
    let cs = crate::tensor::layout::contiguous_strides(&xp.shape[k..]);
    xp.shape[k..].iter().zip(&cs).zip(&xp.strides[k..]).all(|((&n, &c), &st)| n == 1 || c == st)
}

fn rest_layout(xp: &Layout, k: usize, base: usize) -> Layout {
    Layout { shape: xp.shape[k..].into(), strides: xp.strides[k..].into(), offset: base }
}

/// Order of result dims: B at `place` among the rest.
fn placement(p: &AdvPlan) -> Option<Vec<i64>> {
    if p.place == 0 {
        return None;
    }
    let nb = p.bshape.len();
    let nr = p.xp_shape.len() - p.idx.len();
    // from (B, rest) to (rest[..place], B, rest[place..])
    let mut order: Vec<i64> = (nb..nb + p.place).map(|v| v as i64).collect();
    order.extend((0..nb).map(|v| v as i64));
    order.extend((nb + p.place..nb + nr).map(|v| v as i64));
    Some(order)
}

fn inverse(order: &[i64]) -> Vec<i64> {
    let mut inv = vec![0i64; order.len()];
    for (i, &o) in order.iter().enumerate() {
        inv[o as usize] = i as i64;
    }
    inv
}

/// Gather for advanced indexing, no recording.
/// The index of a plan that selects along dim 0 with one index tensor (x[idx], embedding), on
/// the device of `on`: what the device's index_select/index_add kernels take.
fn dim0_index(p: &AdvPlan, on: &Tensor) -> Result<Option<Tensor>> {
    let identity = p.perm.iter().enumerate().all(|(i, &v)| v as usize == i);
    // (float16/bfloat16 take the host path: index_add's atomics are float32/float64 only)
    if !(on.is_cuda() && !p.dev && crate::backend::cuda::has_kernels() && on.dtype().is_float() && !on.dtype().is_narrow() && p.idx.len() == 1 && identity && p.place == 0) {
        return Ok(None);
    }
    let idx = crate::backend::cuda::to_device(&p.idx[0], on.device())?;
    let n = idx.numel();
    Ok(Some(idx.view_with_layout(crate::tensor::Layout::contiguous(&[n]))))
}

fn adv_gather_raw(x: &Tensor, p: &AdvPlan) -> Result<Tensor> {
    if let Some(idx) = dim0_index(p, x)? {
        let r = crate::backend::cuda::native::index_select(x, 0, &idx)?;
        let mut shape = p.bshape.clone();
        shape.extend_from_slice(&x.shape()[1..]);
        return Ok(r.view_with_layout(crate::tensor::Layout::contiguous(&shape)));
    }
    if x.is_cuda() {
        if p.dev {
            return adv_gather_dev(x, p);
        }
        if crate::backend::cuda::has_kernels() {
            return adv_gather_device(x, p);
        }
        return crate::backend::cuda::via_host(&[x], |h| adv_gather_raw(&h[0], p));
    }
    if let Some(out) = index_one_dim_host(x, p)? {
        return Ok(out);
    }
    let _ng = GradModeGuard::new(false);
    let xp = permute(&x.alias(), &p.perm)?;
    let xl = xp.layout();
    let k = p.idx.len();
    let rest_n: usize = xl.shape[k..].iter().product();
    let mut shape = p.bshape.clone();
    shape.extend_from_slice(&xl.shape[k..]);
    crate::tensor::storage::check_alloc(x.dtype(), crate::tensor::layout::checked_numel(&shape)?)?;
    let dt = x.dtype();
    // the rest dims as one contiguous run (or none): each index position copies a slice
    let rest_dense = rest_is_dense(&xl, k);
    let out = crate::with_bits!(dt, T => {
        let st = xp.storage();
        let s = st.bits::<T>();
        let mut v: Vec<T> = Vec::with_capacity(p.bshape.iter().product::<usize>() * rest_n);
        let bases = lead_offsets(&xl, p)?;
        if rest_n == 0 {
            // nothing to copy (an empty rest dim: the base offsets may lie past an empty storage)
        } else if rest_dense {
            for base in bases {
                v.extend_from_slice(&s[base..base + rest_n]);
            }
        } else {
            for base in bases {
                rest_layout(&xl, k, base).for_each_offset(|o| v.push(s[o]));
            }
        }
        Tensor::from_bits(v, &shape, dt)
    });
    match placement(p) {
        Some(order) => Ok(cpu::contiguous(&permute(&out, &order)?)?),
        None => Ok(out),
    }
}

/// The advanced gather on a GPU: the host turns the (host) index tensors into one storage offset
/// per index position; one kernel copies the rows.
fn adv_gather_device(x: &Tensor, p: &AdvPlan) -> Result<Tensor> {
    let _ng = GradModeGuard::new(false);
    let (base, rest) = device_rows(x, p)?;
    let rows = crate::backend::cuda::native::take(x, &base, &rest.shape, &rest.strides)?;
    let mut shape = p.bshape.clone();
    shape.extend_from_slice(&rest.shape);
    let out = rows.view_with_layout(crate::tensor::Layout::contiguous(&shape));
    match placement(p) {
        Some(order) => crate::backend::cuda::contiguous(&permute(&out, &order)?),
        None => Ok(out),
    }
}

/// The rows an advanced index selects in `x`, for the device kernels: each index position's storage
/// offset (bounds were checked by the plan), and the layout of the dims not indexed.
fn device_rows(x: &Tensor, p: &AdvPlan) -> Result<(Vec<usize>, Layout)> {
    let xp = permute(&x.alias(), &p.perm)?;
    let xl = xp.layout();
    let k = p.idx.len();
    Ok((lead_offsets(&xl, p)?, rest_layout(&xl, k, 0)))
}

/// One index tensor into dim d of a contiguous CPU tensor (x[:, idx], index_select): the result
/// [outer, B, inner] built row by row, out[o, b, :] = x[o, idx[b], :] (the general path would
/// gather along the permuted layout and move the B dims back with another copy). None otherwise.
fn index_one_dim_host(x: &Tensor, p: &AdvPlan) -> Result<Option<Tensor>> {
    if p.idx.len() != 1 || x.is_cuda() || !x.is_contiguous() || x.ndim() == 0 {
        return Ok(None);
    }
    let d = p.perm[0] as usize;
    let rest_in_order = p.perm[1..].iter().enumerate().all(|(i, &v)| v as usize == if i < d { i } else { i + 1 });
    if !rest_in_order || p.place != d {
        return Ok(None);
    }
    let xs = x.shape();
    let (outer, size, inner): (usize, usize, usize) = (xs[..d].iter().product(), xs[d], xs[d + 1..].iter().product());
    let idx = p.idx[0].to_vec::<i64>()?;
    let mut shape: Vec<usize> = xs[..d].to_vec();
    shape.extend_from_slice(&p.bshape);
    shape.extend_from_slice(&xs[d + 1..]);
    crate::tensor::storage::check_alloc(x.dtype(), crate::tensor::layout::checked_numel(&shape)?)?;
    let dt = x.dtype();
    let off = x.layout().offset;
    Ok(Some(crate::with_bits!(dt, T => {
        let st = x.storage();
        let s = st.bits::<T>();
        let mut v: Vec<T> = Vec::with_capacity(outer * idx.len() * inner);
        for o in (0..outer).filter(|_| inner > 0) {
            let plane = off + o * size * inner;
            if inner == 1 {
                v.extend(idx.iter().map(|&b| s[plane + b as usize]));
            } else {
                for &b in &idx {
                    let at = plane + b as usize * inner;
                    v.extend_from_slice(&s[at..at + inner]);
                }
            }
        }
        Tensor::from_bits(v, &shape, dt)
    })))
}

/// Write (or add) `vals` (already in result order and shape) into `x` at the advanced positions
/// (a device plan's indices checked already).
fn adv_put_raw(x: &Tensor, p: &AdvPlan, vals: &Tensor, accumulate: bool) -> Result<()> {
    if p.dev && x.is_cuda() && vals.is_cuda() && (!accumulate || crate::backend::cuda::source::has_atomic_add(x.dtype())) {
        let _ng = GradModeGuard::new(false);
        let vals = if vals.dtype() != x.dtype() { cast_raw(vals, x.dtype())? } else { vals.clone() };
        let (shape, x_strides, idx) = dev_launch(x, p)?;
        let vl = vals.layout().broadcast_to(&shape)?;
        let vs: Vec<isize> = vl.strides.iter().map(|&s| s as isize).collect();
        crate::backend::cuda::native::index_device(if accumulate { "put_add" } else { "put" }, x, &shape, &x_strides, &vs, Some(&vals), &dev_indices(p, &idx), false)?;
        return Ok(());
    }
    if x.is_cuda() && vals.is_cuda() && !p.dev && crate::backend::cuda::has_kernels() {
        let _ng = GradModeGuard::new(false);
        let vals = match placement(p) {
            Some(order) => crate::backend::cuda::contiguous(&permute(&vals.alias(), &inverse(&order))?)?,
            None => vals.clone(),
        };
        let (base, rest) = device_rows(x, p)?;
        if crate::backend::cuda::native::put(x, &base, &rest.shape, &rest.strides, &vals, accumulate)? {
            return Ok(());
        }
    }
    if x.is_cuda() {
        let vals = crate::backend::cuda::host_mirror(vals)?;
        return crate::backend::cuda::modify_on_host(x, |hx| adv_put_raw(hx, p, &vals, accumulate));
    }
    let _ng = GradModeGuard::new(false);
    let vals = match placement(p) {
        Some(order) => cpu::contiguous(&permute(&vals.alias(), &inverse(&order))?)?,
        None => cpu::contiguous(vals)?,
    };
    let vals = cast_raw(&vals, x.dtype())?;
    let xp = permute(&x.alias(), &p.perm)?;
    let xl = xp.layout();
    let k = p.idx.len();
    let dt = x.dtype();
    if !accumulate {
        // a plain write moves bits
        crate::with_bits!(dt, T => {
            let src = vals.bits_vec::<T>()?;
            let st = xp.storage();
            let d = unsafe { st.bits_mut::<T>() };
            let mut i = 0;
            for base in lead_offsets(&xl, p)? {
                rest_layout(&xl, k, base).for_each_offset(|o| {
                    d[o] = src[i];
                    i += 1;
                });
            }
        });
        return Ok(());
    }
    let rest_n: usize = xl.shape[k..].iter().product();
    let rest_dense = rest_is_dense(&xl, k);
    let float = dt.is_float();
    crate::with_dtype!(dt, T => {
        let src = vals.to_vec::<T>()?;
        let st = xp.storage();
        let d = unsafe { st.slice_mut::<T>() };
        // integers add exactly (wrapping, as torch's int64 arithmetic)
        let add = |e: &mut T, v: T| *e = if float { T::from_f64(e.to_f64() + v.to_f64()) } else { T::from_i64(e.to_i64().wrapping_add(v.to_i64())) };
        let bases = lead_offsets(&xl, p)?;
        if rest_n == 0 {
            // nothing to add (an empty rest dim)
        } else if rest_dense {
            for (base, row) in bases.into_iter().zip(src.chunks(rest_n)) {
                for (e, &v) in d[base..base + rest_n].iter_mut().zip(row) {
                    add(e, v);
                }
            }
        } else {
            let mut i = 0;
            for base in bases {
                rest_layout(&xl, k, base).for_each_offset(|o| {
                    add(&mut d[o], src[i]);
                    i += 1;
                });
            }
        }
    });
    Ok(())
}

/// zeros of `shape` (like's dtype and device) with `values` (broadcast to the indexed shape)
/// added at the positions that `indices` select in the leading dims: `index_put_` with
/// `accumulate` into zeros, without a gradient (`_more_ops._index_put_accumulate`; the caller has
/// checked the indices against torch's rules).
pub fn index_put_accumulate_zeros(shape: &[usize], indices: &[Tensor], values: &Tensor, like: &Tensor) -> Result<Tensor> {
    let _ng = GradModeGuard::new(false);
    let out = Tensor::zeros_on(shape, like.dtype(), like.device())?;
    accumulate_into(&out, indices, values)?;
    Ok(out)
}

/// `x.index_put_(indices, values, accumulate=True)` when nothing needs a gradient: int64 indices
/// into x's leading dims, checked as torch checks them (too many, shapes, bounds: nothing is
/// written then), values broadcast to the indexed shape and added into x in place (atomically on
/// a GPU).
pub fn index_put_accumulate_(x: &Tensor, indices: &[Tensor], values: &Tensor) -> Result<()> {
    let _prof = crate::prof!("aten::index_put_");
    let _ng = GradModeGuard::new(false);
    if indices.len() > x.ndim() {
        bail!(Index, "too many indices for tensor of dimension {} (got {})", x.ndim(), indices.len());
    }
    check_inplace(x, false)?;
    check_no_internal_overlap(x)?;
    check_no_partial_overlap(x, &[values])?;
    accumulate_into(x, indices, values)?;
    x.bump_version();
    Ok(())
}

/// x[indices] += values (accumulating repeated positions), indices checked first.
fn accumulate_into(x: &Tensor, indices: &[Tensor], values: &Tensor) -> Result<()> {
    let shape = x.shape();
    let adv: Vec<(usize, Tensor)> = indices.iter().enumerate().map(|(d, t)| Ok((d, cast_raw(t, DType::I64)?))).collect::<Result<_>>()?;
    check_empty_dims(x, &adv)?;
    let p = plan(x, &adv)?;
    let mut vshape = p.bshape.clone();
    vshape.extend_from_slice(&shape[indices.len()..]);
    if broadcast_shapes(&values.shape(), &vshape).ok().as_deref() != Some(&vshape[..]) {
        bail!(Runtime, "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}", &values.shape()[..], vshape);
    }
    let values = if x.is_cuda() && !values.is_cuda() { crate::backend::cuda::to_device(values, x.device())? } else { values.clone() };
    let vals = expand_to(&cast_raw(&values, x.dtype())?, &vshape)?;
    if p.dev {
        dev_check(x, &p)?;
    }
    adv_put_raw(x, &p, &vals, true)
}

/// Differentiable advanced gather (IndexBackward0 / IndexSelectBackward0).
fn adv_index(x: &Tensor, adv: &[(usize, Tensor)], name: &'static str) -> Result<Tensor> {
    let p = std::sync::Arc::new(plan(x, adv)?);
    let out = adv_gather_raw(x, &p)?;
    if needs_grad(&[x]) {
        let xs = x.shape();
        record(&[&out], &[x], name, saved!(), move |_, gs| Ok(smallvec![Some(adv_scatter(&gs[0], &xs, p.clone())?)]));
    }
    Ok(out)
}

/// The adjoint of `adv_index`: zeros of `shape` with `g` added at the indexed positions.
fn adv_scatter(g: &Tensor, shape: &[usize], p: std::sync::Arc<AdvPlan>) -> Result<Tensor> {
    let out = match dim0_index(&p, g)? {
        Some(idx) => {
            let gc = crate::backend::cpu::contiguous(g)?;
            let mut gs = vec![idx.numel()];
            gs.extend_from_slice(&shape[1..]);
            crate::backend::cuda::native::index_add(shape, 0, &idx, &gc.view_with_layout(crate::tensor::Layout::contiguous(&gs)))?
        }
        None => {
            let out = Tensor::zeros_on(shape, g.dtype(), g.device())?;
            adv_put_raw(&out, &p, g, true)?;
            out
        }
    };
    if needs_grad(&[g]) {
        record(&[&out], &[g], "IndexPutBackward0", saved!(), move |_, gs| Ok(smallvec![Some(adv_gather_raw_rec(&gs[0], &p)?)]));
    }
    Ok(out)
}

fn adv_gather_raw_rec(x: &Tensor, p: &std::sync::Arc<AdvPlan>) -> Result<Tensor> {
    let out = adv_gather_raw(x, p)?;
    if needs_grad(&[x]) {
        let xs = x.shape();
        let p = p.clone();
        record(&[&out], &[x], "IndexBackward0", saved!(), move |_, gs| Ok(smallvec![Some(adv_scatter(&gs[0], &xs, p.clone())?)]));
    }
    Ok(out)
}

/// `x[items]`.
pub fn getitem(x: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let _prof = crate::prof!("aten::index");
    if let [IndexItem::Tensor(m)] = items {
        if let Some(out) = masked_select_host(x, m)? {
            return Ok(out);
        }
    }
    let parsed = parse(x, items)?;
    if parsed.adv.is_empty() {
        if parsed.view.ptr_eq(x) {
            // x[...] or x[:] is a view of the whole tensor
            return slice_all(x);
        }
        return Ok(parsed.view);
    }
    adv_index(&parsed.view, &parsed.adv, "IndexBackward0")
}

/// x[mask] on the CPU for a bool mask of x's shape when no gradient is needed: one pass over both
/// (the general path finds the mask's indices first). None for every other case.
fn masked_select_host(x: &Tensor, m: &Tensor) -> Result<Option<Tensor>> {
    if m.dtype() != DType::Bool || x.ndim() == 0 || m.shape() != x.shape() || needs_grad(&[x]) {
        return Ok(None);
    }
    if x.is_cuda() || m.is_cuda() {
        return Ok(None);
    }
    let flags = m.to_vec::<bool>()?;
    let dt = x.dtype();
    let out = crate::with_bits!(dt, T => {
        let st = x.storage();
        let s = st.bits::<T>();
        let l = x.layout();
        let count: usize = flags.iter().map(|&f| f as usize).sum();
        let mut v: Vec<T> = Vec::with_capacity(count + 1);
        if l.is_contiguous() && count * 8 >= flags.len() {
            // dense: every element stored, the cursor advanced by its flag (no branch to mispredict)
            let xs = cpu::span(s, l.offset, flags.len());
            v.resize(count + 1, T::default());
            let mut k = 0;
            for (&e, &f) in xs.iter().zip(&flags) {
                v[k] = e;
                k += f as usize;
            }
            v.truncate(count);
        } else if l.is_contiguous() {
            let xs = cpu::span(s, l.offset, flags.len());
            v.extend(xs.iter().zip(&flags).filter(|(_, &f)| f).map(|(&e, _)| e));
        } else {
            let mut i = 0;
            l.for_each_offset(|o| {
                if flags[i] {
                    v.push(s[o]);
                }
                i += 1;
            });
        }
        let n = v.len();
        Tensor::from_bits(v, &[n], dt)
    });
    Ok(Some(out))
}

fn slice_all(x: &Tensor) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(super::shape::view(x, &[])?);
    }
    slice(x, 0, 0, x.shape()[0], 1)
}

/// Write `v` into `x[items]` of a fresh copy, without recording.
fn put_raw(target: &Tensor, items: &[IndexItem], v: &Tensor) -> Result<()> {
    let _ng = GradModeGuard::new(false);
    let parsed = parse(target, items)?;
    if parsed.adv.is_empty() {
        let vs = v.shape();
        let rs = parsed.view.shape();
        let b = broadcast_shapes(&rs, &vs)?;
        if b[..] != rs[..] {
            bail!(Runtime, "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}", &vs[..], &rs[..]);
        }
        return cpu::copy_into(&parsed.view, v);
    }
    check_empty_dims(&parsed.view, &parsed.adv)?;
    let p = plan_with(&parsed.view, &parsed.adv, false)?;
    let mut rshape: Vec<usize> = p.bshape.clone();
    rshape.extend_from_slice(&p.xp_shape[p.idx.len()..]);
    if let Some(order) = placement(&p) {
        rshape = order.iter().map(|&o| rshape[o as usize]).collect();
    }
    let vs = v.shape();
    // a number (0-d CPU tensor) written into a device tensor goes there once, before it is expanded
    let v = &if p.dev && !v.is_cuda() && v.ndim() == 0 { crate::backend::cuda::to_device(v, parsed.view.device())? } else { v.clone() };
    let vb = expand_to(v, &rshape).map_err(|_| {
        crate::error::Error::runtime(format!("shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}", &vs[..], rshape))
    })?;
    if p.dev {
        dev_check(&parsed.view, &p)?;
    } else {
        check_adv_bounds(&parsed.view, &parsed.adv, &p.bshape)?;
    }
    adv_put_raw(&parsed.view, &p, &vb, false)
}

/// `x[items] = v` (in place; recorded as CopySlices / IndexPutBackward0).
pub fn setitem(x: &Tensor, items: &[IndexItem], v: &Tensor) -> Result<()> {
    let _prof = crate::prof!("aten::index_put_");
    let has_adv = items.iter().any(|i| matches!(i, IndexItem::Tensor(_)));
    if has_adv && x.is_cuda() && !v.is_cuda() && v.ndim() != 0 {
        return Err(crate::backend::cuda::device_mismatch(x.device(), v.device()));
    }
    if !has_adv && !v.is_wrapped_number() {
        // torch copies a tensor into a basic-indexed region, with copy_'s overlap check
        let _ng = GradModeGuard::new(false);
        let region = parse(x, items)?.view;
        check_no_internal_overlap(&region)?;
        check_no_partial_overlap(&region, &[v])?;
    }
    // torch's masked_fill path: one bool mask and a single value (converted); else the dtypes must match
    let one_mask = items.iter().filter(|i| matches!(i, IndexItem::Tensor(_))).count() == 1
        && items.iter().any(|i| matches!(i, IndexItem::Tensor(t) if t.dtype() == DType::Bool));
    if has_adv && !v.is_wrapped_number() && v.dtype() != x.dtype() && !(one_mask && v.numel() == 1) {
        {
            let _ng = GradModeGuard::new(false);
            let p = parse(x, items)?; // a bad index is torch's IndexError, before the dtypes are compared
            check_empty_dims(&p.view, &p.adv)?;
        }
        let word = |t: &Tensor| crate::ops::shape::type_word(t.dtype());
        bail!(Runtime, "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.", word(x), word(v));
    }
    if !needs_grad(&[x, v]) {
        // nothing to record: write the region itself (an expanded x shares memory between
        // elements, so writing back a modified copy of all of x would undo the write)
        check_inplace(x, false)?;
        let v = if Arc::ptr_eq(&x.storage(), &v.storage()) { contiguous_copy(v)? } else { v.clone() };
        put_raw(x, items, &v)?;
        x.bump_version();
        return Ok(());
    }
    if !has_adv && !x.with_layout(crate::ops::non_overlapping) {
        // an expanded x: write through the indexed view (as torch's select/slice then copy_), so
        // the write reaches the shared memory once and the view's base records it
        let region = getitem(x, items)?;
        return if v.is_wrapped_number() { crate::ops::fill_(&region, v, "FillBackward0") } else { crate::ops::copy_(&region, v) };
    }
    let items_owned: Vec<IndexItem> = items.to_vec();
    inplace_fill(x, &[v], move |xin| {
        let out = cpu::contiguous(xin)?;
        put_raw(&out, &items_owned, v)?;
        // a Python number is not an input of the node (torch's edges)
        let inputs: Vec<&Tensor> = if v.is_wrapped_number() { vec![xin] } else { vec![xin, v] };
        if needs_grad(&inputs) {
            let name = if has_adv { "IndexPutBackward0" } else { "CopySlices" };
            let shape = xin.shape();
            record(&[&out], &inputs, name, saved!(), move |ctx, gs| {
                let g = &gs[0];
                let gx = if ctx.needs(0) {
                    let keep = Tensor::full_on(&shape, 1.0, g.dtype(), g.device())?;
                    put_raw(&keep, &items_owned, &Tensor::scalar(0.0f64))?;
                    Some(mul(g, &keep)?)
                } else {
                    None
                };
                let mut r = smallvec![gx];
                if ctx.input_count() > 1 {
                    r.push(if ctx.needs(1) { Some(getitem(g, &items_owned)?) } else { None });
                }
                Ok(r)
            });
        }
        Ok(out)
    })
}

pub fn index_select(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::index_select");
    if x.device() != index.device() {
        return Err(crate::backend::cuda::device_mismatch(x.device(), index.device()));
    }
    let d = wrap_dim(dim, x.ndim())?;
    if index.ndim() > 1 {
        bail!(Index, "index_select(): Index is supposed to be a vector");
    }
    if !matches!(index.dtype(), DType::I64 | DType::I32) {
        bail!(Runtime, "index_select(): Expected dtype int32 or int64 for index");
    }
    if x.ndim() == 0 && index.numel() > 1 {
        bail!(Runtime, "index_select(): Index to scalar can have only 1 value, got {} value(s)", index.numel());
    }
    let index = &cast_raw(index, DType::I64)?;
    let idx = if index.ndim() == 0 { reshape(index, &[1])? } else { index.clone() };
    let size = x.shape().get(d).copied().unwrap_or(1) as i64;
    if size == 0 && idx.numel() > 0 && x.ndim() > 1 {
        bail!(Runtime, "index_select(): self indexing axis dim should be positive");
    }
    // unlike indexing with [], index_select and gather take no negative indices
    if let Some(bad) = idx.to_vec::<i64>()?.into_iter().find(|&v| v < 0 || v >= size) {
        // torch's CPU kernel for dim 1 of a matrix or more reports it as a RuntimeError
        if d == 1 && x.ndim() >= 2 {
            bail!(Runtime, "INDICES element is out of DATA bounds, id={} axis_dim={}", bad, size);
        }
        bail!(Index, "index out of range in self");
    }
    if x.ndim() == 0 {
        return adv_index(&reshape(x, &[1])?, &[(0, idx)], "IndexSelectBackward0").and_then(|r| reshape(&r, &[]));
    }
    adv_index(x, &[(d, idx)], "IndexSelectBackward0")
}

fn check_gather(x: &Tensor, dim: usize, index: &Tensor, op: &str) -> Result<()> {
    if index.numel() == 0 {
        return Ok(()); // torch: an empty index gives an empty result, whatever its dtype and rank
    }
    if !matches!(index.dtype(), DType::I64 | DType::I32) {
        bail!(Runtime, "{}(): Expected dtype int32/int64 for index", op);
    }
    let (xs, is) = (x.shape(), index.shape());
    if xs.len().max(1) != is.len().max(1) {
        bail!(Runtime, "Index tensor must have the same number of dimensions as input tensor");
    }
    for k in 0..is.len() {
        if k != dim && is[k] > xs[k] {
            bail!(Runtime, "Size does not match at dimension {} expected index {:?} to be no larger than self {:?} apart from dimension {}", k, &is[..], &xs[..], dim);
        }
    }
    Ok(())
}

pub fn gather(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::gather");
    if x.device() != index.device() {
        return Err(crate::backend::cuda::device_mismatch(x.device(), index.device()));
    }
    let d = wrap_dim(dim, x.ndim())?;
    check_gather(x, d, index, "gather")?;
    let index = &cast_raw(index, DType::I64)?;
    // On a GPU: one kernel, the index read on the device (an index out of range leaves the
    // result to the host path below, which raises torch's error).
    let native = if x.is_cuda() && index.is_cuda() && x.ndim() > 0 && crate::backend::cuda::has_kernels() { crate::backend::cuda::native::gather_dim(x, d, index)? } else { None };
    let out = match native {
        Some(out) => out,
        None => crate::backend::cuda::via_host(&[x], |h| {
            let x = &h[0];
            if x.ndim() > 0 {
                return gather_host(x, d, index);
            }
            // a 0-d input is indexed as a dim of size 1
            if let Some(v) = index.to_vec::<i64>()?.into_iter().find(|&v| v != 0) {
                bail!(Runtime, "index {} is out of bounds for dimension 0 with size 1", v);
            }
            let (dt, o) = (x.dtype(), x.layout().offset);
            Ok(crate::with_bits!(dt, T => {
                let st = x.storage();
                Tensor::from_bits(vec![st.bits::<T>()[o]; index.numel()], &index.shape(), dt)
            }))
        })?,
    };
    if needs_grad(&[x]) {
        let xs = x.shape();
        record(&[&out], &[x], "GatherBackward0", saved!(index = SavedTensor::input(index); self), move |ctx, gs| {
            Ok(smallvec![Some(scatter_add_zeros(&gs[0], &xs, d, &ctx.saved(0)?)?)])
        });
    }
    Ok(out)
}

/// Rows of an index of shape `is` (its last dim) addressing a tensor of layout (`strides`,
/// `offset`) along `d`: (row length, the stride of the last dim outside `d` (0 when the last dim
/// is `d`), and the storage offset of row r's coordinates other than `d` and the last dim).
fn index_rows<'a>(is: &'a [usize], strides: &'a [usize], offset: usize, d: usize) -> (usize, usize, impl Fn(usize) -> usize + Sync + 'a) {
    let last = is.len() - 1;
    let len = is[last].max(1);
    let sl = if last == d { 0 } else { strides[last] };
    let cs = crate::tensor::layout::contiguous_strides(is);
    let base = move |r: usize| -> usize {
        let lin = r * len;
        (0..last).filter(|&k| k != d).map(|k| ((lin / cs[k]) % is[k]) * strides[k]).sum::<usize>() + offset
    };
    (len, sl, base)
}

/// torch's error for the first index (in order) outside [0, size) (a kernel that found one).
fn index_range_error(iv: &[i64], size: usize, d: usize) -> crate::error::Error {
    let bad = iv.iter().find(|&&v| v as u64 >= size as u64).copied().unwrap_or(0);
    crate::error::Error::new(crate::error::ErrorKind::Runtime, format!("index {} is out of bounds for dimension {} with size {}", bad, d, size))
}

/// gather on the CPU (x of at least one dim, an int64 index of its rank or 0-d): rows of the
/// index's last dim filled on the team, each row's offset computed once, each index checked as it
/// is read (one pass over the index); torch's error for the first index out of range, in order,
/// once every row has run.
fn gather_host(x: &Tensor, d: usize, index: &Tensor) -> Result<Tensor> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    // a 0-d index of a 1-d input: one element, as a 1-d index of size 1
    let is: Vec<usize> = if index.ndim() == 0 { vec![1; x.ndim()] } else { index.shape().to_vec() };
    let xl = x.layout();
    let size = xl.shape[d];
    let n = index.numel();
    let dt = x.dtype();
    let sd = xl.strides[d];
    let (len, sl, row_base) = index_rows(&is, &xl.strides, xl.offset, d);
    index.with_contiguous::<i64, _>(|idx| -> Result<Tensor> {
        let bad = AtomicBool::new(false);
        let out = crate::with_bits!(dt, T => {
            let st = x.storage();
            let s = st.bits::<T>();
            let mut v: Vec<T> = Vec::with_capacity(n);
            // rows r0.. of the result, written into `o`; a row stops at its first index out of range
            let fill = |r0: usize, o: &mut [std::mem::MaybeUninit<T>]| {
                for (i, o) in o.chunks_mut(len).enumerate() {
                    let r = r0 + i;
                    let iv = &idx[r * len..r * len + o.len()];
                    let b = row_base(r);
                    let ok = if sl == 0 && sd == 1 {
                        // the gathered dim is the last and dense: one row of x, read at the indices
                        let xr = &s[b..b + size];
                        o.iter_mut().zip(iv).all(|(e, &k)| xr.get(k as usize).map(|&v| e.write(v)).is_some())
                    } else {
                        o.iter_mut().zip(iv).enumerate().all(|(j, (e, &k))| (k as u64) < size as u64 && {
                            e.write(s[b + j * sl + k as usize * sd]);
                            true
                        })
                    };
                    if !ok {
                        bad.store(true, Relaxed);
                    }
                }
            };
            let o = &mut v.spare_capacity_mut()[..n];
            match cpu::rows_per_part(n / len, len, 1) {
                Some(per) => crate::backend::threads::for_each_chunk_mut(o, per * len, |c, o| fill(c * per, o)),
                None => fill(0, o),
            }
            if bad.load(Relaxed) {
                None
            } else {
                // SAFETY: with every index in range, every row above wrote all of its elements.
                unsafe { v.set_len(n) };
                Some(Tensor::from_bits(v, &index.shape(), dt))
            }
        });
        match out {
            Some(out) => Ok(out),
            None => Err(index_range_error(idx, size, d)),
        }
    })?
}

/// The indices that sort x along dim d (CPU): a stable sort, NaN after every number ascending and
/// before every number descending, ties in their original order either way (the order of
/// `_more_ops._argsort_host`, which is torch's). Integers and bools compare as int64, floats as f64.
pub fn argsort_dim(x: &Tensor, d: usize, descending: bool) -> Result<Tensor> {
    let _prof = crate::prof!("aten::sort");
    let shape = x.shape();
    let n = shape[d];
    let outer: usize = shape[..d].iter().product();
    let inner: usize = shape[d + 1..].iter().product();
    let xc = contiguous(x)?;
    let mut out = vec![0i64; xc.numel()];
    fn run<K: Copy>(keys: &[K], out: &mut [i64], outer: usize, n: usize, inner: usize, cmp: impl Fn(&K, &K) -> std::cmp::Ordering) {
        let mut idx: Vec<usize> = Vec::with_capacity(n);
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| (o * n + j) * inner + i;
                idx.clear();
                idx.extend(0..n);
                idx.sort_by(|&a, &b| cmp(&keys[at(a)], &keys[at(b)]));
                for (j, &k) in idx.iter().enumerate() {
                    out[at(j)] = k as i64;
                }
            }
        }
    }
    let dt = x.dtype();
    if dt.is_float() {
        let keys: Vec<f64> = crate::with_dtype!(dt, T => xc.to_vec::<T>()?.into_iter().map(|v| v.to_f64()).collect());
        // NaN as the greatest value
        let asc = |a: &f64, b: &f64| match (a.is_nan(), b.is_nan()) {
            (false, false) => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
            (x, y) => x.cmp(&y),
        };
        if descending {
            run(&keys, &mut out, outer, n, inner, |a, b| asc(b, a));
        } else {
            run(&keys, &mut out, outer, n, inner, asc);
        }
    } else {
        let keys: Vec<i64> = crate::with_dtype!(dt, T => xc.to_vec::<T>()?.into_iter().map(|v| v.to_i64()).collect());
        if descending {
            run(&keys, &mut out, outer, n, inner, |a, b| b.cmp(a));
        } else {
            run(&keys, &mut out, outer, n, inner, |a, b| a.cmp(b));
        }
    }
    Ok(Tensor::from_vec(out, &shape))
}

/// nll_loss of a (N, C) float input (log-probabilities) against int64 class targets (N,), with
/// optional class weights (C,): -w[t_n]·x[n, t_n] per row, 0 where t_n == ignore_index; reduced
/// by `reduction` 0 none, 1 mean (over the summed weights of the rows not ignored), 2 sum. One
/// node, NllLossBackward0 (torch's): the gradient is g times a constant (N, C) matrix holding
/// -w[t_n] (/ total weight) at (n, t_n), so it is differentiable in g (double backward).
/// Ok(None) when a target is out of [0, C) (the caller raises torch's IndexError).
pub fn nll_loss(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, reduction: u8, ignore_index: i64) -> Result<Option<Tensor>> {
    let _prof = crate::prof!("aten::nll_loss");
    let xs = x.shape();
    let (n, c) = (xs[0], xs[1]);
    let dt = x.dtype();
    let t = target.to_vec::<i64>()?;
    if t.iter().any(|&v| v != ignore_index && !(0..c as i64).contains(&v)) {
        return Ok(None);
    }
    let w: Option<Vec<f64>> = match weight {
        Some(w) => Some(crate::with_dtype!(w.dtype(), T => w.to_vec::<T>()?.into_iter().map(|v| v.to_f64()).collect())),
        None => None,
    };
    let xv: Vec<f64> = crate::with_dtype!(dt, T => {
        let xc = contiguous(x)?;
        let v = xc.to_vec::<T>()?;
        v.into_iter().map(|e| e.to_f64()).collect()
    });
    // per-row weights (0 for ignored rows) and the picked values
    let rw: Vec<f64> = t.iter().map(|&v| if v == ignore_index { 0.0 } else { w.as_ref().map_or(1.0, |w| w[v as usize]) }).collect();
    let per_row: Vec<f64> = (0..n).map(|i| if t[i] == ignore_index { 0.0 } else { -rw[i] * xv[i * c + t[i] as usize] }).collect();
    let total: f64 = rw.iter().sum();
    let out_f64: Vec<f64> = match reduction {
        0 => per_row.clone(),
        1 => vec![per_row.iter().sum::<f64>() / total],
        _ => vec![per_row.iter().sum::<f64>()],
    };
    let shape: Vec<usize> = if reduction == 0 { vec![n] } else { vec![] };
    let make = |v: Vec<f64>, shape: &[usize]| -> Tensor {
        match dt {
            DType::F32 => Tensor::from_vec(v.into_iter().map(|e| e as f32).collect::<Vec<f32>>(), shape),
            _ => Tensor::from_vec(v, shape),
        }
    };
    let out = crate::backend::cuda::place(make(out_f64, &shape), x.device())?;
    if needs_grad(&[x]) {
        // the constant of the gradient: -w[t_n] (/ total) at (n, t_n)
        let scale = if reduction == 1 { total } else { 1.0 };
        let mut m = vec![0.0f64; n * c];
        for i in 0..n {
            if t[i] != ignore_index {
                m[i * c + t[i] as usize] = -rw[i] / scale;
            }
        }
        let coef = crate::backend::cuda::place(make(m, &[n, c]), x.device())?;
        record(&[&out], &[x], "NllLossBackward0", saved!(), move |_, gs| {
            let g = if reduction == 0 { unsqueeze(&gs[0], 1)? } else { gs[0].clone() };
            Ok(smallvec![Some(mul(&g, &coef)?)])
        });
    }
    Ok(Some(out))
}

/// zeros(shape).scatter_add(dim, index, src): the adjoint of gather.
pub fn scatter_add_zeros(src: &Tensor, shape: &[usize], dim: usize, index: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::scatter_add");
    let out = match scatter_add_device(src, shape, dim, index)? {
        Some(out) => out,
        None => scatter_add_host(None, src, shape, dim, index)?,
    };
    if needs_grad(&[src]) {
        let index = index.clone();
        record(&[&out], &[src], "ScatterAddBackward0", saved!(), move |_, gs| Ok(smallvec![Some(gather(&gs[0], dim as i64, &index)?)]));
    }
    Ok(out)
}

/// x.scatter_add(dim, index, src) as one node, torch's ScatterAddBackward0: x's gradient is the
/// incoming one, src's that one gathered at the index. The caller (`_more_ops.scatter_add`) has
/// checked dims, shapes and dtypes as torch does and narrowed src to the index's shape. On the
/// CPU, a contiguous copy of x (torch's result is contiguous too) is added into in index order, as
/// torch's kernel does; on a device, x + the scatter into zeros.
pub fn scatter_add(x: &Tensor, dim: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let _prof = crate::prof!("aten::scatter_add");
    let shape = x.shape();
    let host = !(x.is_cuda() || index.is_cuda() || src.is_cuda()) && x.dtype() == src.dtype();
    let out = if host {
        scatter_add_host(Some(x), src, &shape, dim, index)?
    } else {
        let _ng = GradModeGuard::new(false);
        add(x, &scatter_add_zeros(src, &shape, dim, index)?)?
    };
    if needs_grad(&[x, src]) {
        record(&[&out], &[x, src], "ScatterAddBackward0", saved!(index = SavedTensor::input(index)), move |ctx, gs| {
            let gx = ctx.needs(0).then(|| gs[0].clone());
            let gsrc = if ctx.needs(1) { Some(gather(&gs[0], dim as i64, &ctx.saved(0)?)?) } else { None };
            Ok(smallvec![gx, gsrc])
        });
    }
    Ok(out)
}

/// scatter_add into zeros by the device kernel: None when it cannot run there (not on a GPU, a
/// dtype without atomic add, an index out of range: the host path raises the error).
fn scatter_add_device(src: &Tensor, shape: &[usize], dim: usize, index: &Tensor) -> Result<Option<Tensor>> {
    if !(src.is_cuda() && index.is_cuda() && !shape.is_empty() && crate::backend::cuda::has_kernels() && crate::backend::cuda::source::has_atomic_add(src.dtype())) {
        return Ok(None);
    }
    let out = crate::backend::cuda::zeros(shape, src.dtype(), src.device())?;
    let index = cast_raw(index, DType::I64)?;
    Ok(crate::backend::cuda::native::scatter_add_dim(&out, dim, &index, src)?.then_some(out))
}

/// `*e += v` as torch's CPU scatter_add, in a compute dtype: float32 rounded once (its float64
/// sum rounds to the same value: float64 has more than twice its digits), int64 wrapping.
#[inline(always)]
fn add_elem<T: Element>(e: &mut T, v: T) {
    *e = if T::DTYPE.is_float() { T::from_f64(e.to_f64() + v.to_f64()) } else { T::from_i64(e.to_i64().wrapping_add(v.to_i64())) };
}

/// `base` (a CPU tensor of `shape`; zeros when None) with `src` (the index's shape) added at the
/// positions `index` selects along `dim`: a new contiguous tensor, placed on src's device. Rows of
/// the index's last dim run on the team where they write disjoint elements (rows that differ in
/// a coordinate before `dim`; every row when `dim` is the last), each index checked as it is
/// read; torch's error for the first index out of range, in order, once all have run.
fn scatter_add_host(base: Option<&Tensor>, src: &Tensor, shape: &[usize], dim: usize, index: &Tensor) -> Result<Tensor> {
    use crate::backend::threads::{self, SendPtr};
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let dt = src.dtype();
    if dt.is_narrow() {
        // added in the compute dtype, each sum rounded once when stored (float16 and bfloat16
        // as torch's kernel, in float32; the narrow integers wrap the same either way)
        let c = dt.compute();
        let base = base.map(|b| cast_raw(b, c)).transpose()?;
        return cast_raw(&scatter_add_host(base.as_ref(), &cast_raw(src, c)?, shape, dim, index)?, dt);
    }
    let out = match base {
        Some(b) => cpu::contiguous(b)?,
        None => Tensor::zeros(shape, dt)?,
    };
    // a 0-d index of a 1-d target: one element, as a 1-d index of size 1
    let is: Vec<usize> = if index.ndim() == 0 { vec![1; shape.len()] } else { index.shape().to_vec() };
    let n = index.numel();
    // the writes below go through a raw pointer: every position must lie inside `out`
    let fits = shape.is_empty() || (is.len() == shape.len() && (0..is.len()).all(|k| k == dim || is[k] <= shape[k]));
    if !fits || src.numel() != n || out.dtype() != dt || out.shape()[..] != shape[..] {
        bail!(Runtime, "scatter_add: index {:?} and src {:?} do not fit a target of shape {:?}", &is[..], &src.shape()[..], shape);
    }
    crate::with_dtype!(dt, T => {
        let st = out.storage();
        // SAFETY: `out` is a new tensor that nothing else refers to yet.
        let d = unsafe { st.slice_mut::<T>() };
        src.with_contiguous::<T, _>(|vals| -> Result<()> {
            if shape.is_empty() {
                for &v in vals {
                    add_elem(&mut d[0], v);
                }
                return Ok(());
            }
            index.with_contiguous::<i64, _>(|idx| -> Result<()> {
                let size = shape[dim];
                let ol = out.layout();
                let sd = ol.strides[dim];
                let (len, sl, row_base) = index_rows(&is, &ol.strides, 0, dim);
                let rows = n / len;
                let bad = AtomicBool::new(false);
                let p = SendPtr(d.as_mut_ptr());
                // rows r0..r1 of the index; a row stops at its first index out of range (what it
                // added is dropped with `out`)
                let run = |r0: usize, r1: usize| {
                    for r in r0..r1 {
                        let (iv, vv) = (&idx[r * len..(r + 1) * len], &vals[r * len..(r + 1) * len]);
                        let b = row_base(r);
                        let ok = if sl == 0 && sd == 1 {
                            // SAFETY: the row of `out` at b (coordinates inside its shape, checked
                            // above) is written by this row of the index only (`dim` is the last).
                            let o = unsafe { std::slice::from_raw_parts_mut(p.get().add(b), size) };
                            iv.iter().zip(vv).all(|(&k, &v)| o.get_mut(k as usize).map(|e| add_elem(e, v)).is_some())
                        } else {
                            iv.iter().zip(vv).enumerate().all(|(j, (&k, &v))| (k as u64) < size as u64 && {
                                // SAFETY: inside `out` (coordinates checked above and here); rows
                                // that may write the same element run in one part, in turn.
                                add_elem(unsafe { &mut *p.get().add(b + j * sl + k as usize * sd) }, v);
                                true
                            })
                        };
                        if !ok {
                            bad.store(true, Relaxed);
                        }
                    }
                };
                // the rows that share every coordinate before `dim` may add into the same elements
                let group = if dim + 1 == is.len() { 1 } else { is[dim..is.len() - 1].iter().product() };
                match cpu::rows_per_part(rows, len, group) {
                    Some(per) => threads::run(rows.div_ceil(per), crate::backend::num_threads(), &|c| run(c * per, ((c + 1) * per).min(rows))),
                    None => run(0, rows),
                }
                if bad.load(Relaxed) {
                    return Err(index_range_error(idx, size, dim));
                }
                Ok(())
            })?
        })??;
    });
    crate::backend::cuda::place(out, src.device())
}
