//! Shape, strides and offset of a tensor view into its storage; broadcasting rules.

use crate::error::{Error, Result};
use smallvec::SmallVec;

pub type Shape = SmallVec<[usize; 4]>;
pub type Strides = SmallVec<[usize; 4]>;

#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Shape,
    pub strides: Strides,
    pub offset: usize,
}

// SmallVec's Clone and From<&[T]> go element by element through `extend` (~50 instructions for
// a 2-d shape); a layout is cloned several times per op, so the copies here are memcpys.
impl Clone for Layout {
    #[inline]
    fn clone(&self) -> Layout {
        Layout { shape: Shape::from_slice(&self.shape), strides: Strides::from_slice(&self.strides), offset: self.offset }
    }
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// numel with overflow detection, for sizes that come from users.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    let mut n: usize = 1;
    for &d in shape {
        n = n.checked_mul(d).ok_or_else(|| {
            Error::runtime(format!("size {:?} is too large: the number of elements overflows", shape))
        })?;
    }
    if n > (isize::MAX as usize) / 8 {
        return Err(Error::runtime(format!("size {:?} is too large to be allocated", shape)));
    }
    Ok(n)
}

/// The number of elements of a view of `shape`, or torch's error when it does not fit in an int64.
/// As torch (`safe_compute_numel`), the product is taken left to right and an overflow on the way
/// counts even when a later dim is 0: (2**62, 2**62, 0) is refused, (0, 2**62, 2**62) accepted.
pub fn checked_view_numel(shape: &[usize]) -> Result<usize> {
    let mut n: u64 = 1;
    let mut overflow = false;
    for &d in shape {
        let (p, o) = n.overflowing_mul(d as u64);
        n = p;
        overflow |= o;
    }
    if overflow || n > i64::MAX as u64 {
        return Err(Error::runtime("numel: integer multiplication overflow"));
    }
    Ok(n as usize)
}

pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1);
    }
    strides
}

/// torch's memory formats: how a tensor made like another (`empty_like`, `zeros_like`, ...) lays
/// its dims out in memory (see `backend::cpu::like_layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryFormat {
    /// the other tensor's order (its strides, when it is dense)
    Preserve,
    /// row-major
    Contiguous,
    /// dim 1 (channels) innermost, of a 4-d tensor
    ChannelsLast,
    /// dim 1 innermost, of a 5-d tensor
    ChannelsLast3d,
}

impl MemoryFormat {
    pub const ALL: [MemoryFormat; 4] = [MemoryFormat::Preserve, MemoryFormat::Contiguous, MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d];
    /// The name torch gives it (`torch.preserve_format`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryFormat::Preserve => "preserve_format",
            MemoryFormat::Contiguous => "contiguous_format",
            MemoryFormat::ChannelsLast => "channels_last",
            MemoryFormat::ChannelsLast3d => "channels_last_3d",
        }
    }
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout { shape: Shape::from_slice(shape), strides: contiguous_strides(shape), offset: 0 }
    }
    /// A dense layout of `shape` whose dims lie in memory in `order` (outermost first), offset 0.
    pub fn dense_in_order(shape: &[usize], order: &[usize]) -> Layout {
        let mut strides: Strides = SmallVec::from_elem(0, shape.len());
        let mut acc = 1usize;
        for &d in order.iter().rev() {
            strides[d] = acc;
            acc *= shape[d].max(1);
        }
        Layout { shape: Shape::from_slice(shape), strides, offset: 0 }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// Whether no two indices of the view reach the same element (dims sorted by stride, each
    /// stride passes the reach of the smaller ones): such a view's elements can be written in parallel.
    pub fn non_overlapping(&self) -> bool {
        let mut dims: Vec<(usize, usize)> = self.strides.iter().zip(&self.shape).filter(|&(_, &n)| n > 1).map(|(&st, &n)| (st, n)).collect();
        dims.sort_unstable();
        let mut reach = 0usize;
        for (st, n) in dims {
            if st <= reach {
                return false;
            }
            reach += (n - 1) * st;
        }
        true
    }
    /// Row-major contiguous (dims of size 1 may have any stride), as torch's is_contiguous.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for i in (0..self.shape.len()).rev() {
            let d = self.shape[i];
            if d == 0 {
                return true;
            }
            if d != 1 {
                if self.strides[i] != expected {
                    return false;
                }
                expected *= d;
            }
        }
        true
    }
    /// Whether the elements fill a block of numel() consecutive storage slots, each once, in some
    /// order of the dims (torch's is_non_overlapping_and_dense): a permuted contiguous tensor.
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.is_contiguous() {
            return true;
        }
        let mut dims: SmallVec<[usize; 6]> = (0..self.shape.len()).filter(|&d| self.shape[d] != 1).collect();
        dims.sort_by_key(|&d| (self.strides[d], self.shape[d]));
        let mut expected = 1usize;
        for d in dims {
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d];
        }
        true
    }
    /// Offsets into storage of every element, in row-major order of the view.
    pub fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        let n = self.numel();
        if n == 0 {
            return;
        }
        if self.is_contiguous() {
            for i in 0..n {
                f(self.offset + i);
            }
            return;
        }
        let nd = self.ndim();
        let inner = self.shape[nd - 1];
        let inner_stride = self.strides[nd - 1];
        let mut idx: SmallVec<[usize; 6]> = SmallVec::from_elem(0, nd);
        let mut base = self.offset;
        loop {
            for j in 0..inner {
                f(base + j * inner_stride);
            }
            // advance the outer index (all dims but the last)
            let mut d = nd - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                base += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                base -= self.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }
    /// Broadcast this layout to `shape` (stride 0 on new or size-1 dims). Caller checked compatibility.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let nd = shape.len();
        if self.ndim() > nd {
            return Err(Error::runtime(format!(
                "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension 0.  Target sizes: {:?}.  Tensor sizes: {:?}",
                nd, self.ndim(), shape, &self.shape[..]
            )));
        }
        let lead = nd - self.ndim();
        let mut strides: Strides = SmallVec::from_elem(0, nd);
        for i in 0..nd {
            if i < lead {
                continue;
            }
            let s = self.shape[i - lead];
            if s == shape[i] {
                strides[i] = self.strides[i - lead];
            } else if s == 1 {
                strides[i] = 0;
            } else {
                return Err(Error::runtime(format!(
                    "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: {:?}.  Tensor sizes: {:?}",
                    shape[i], s, i, shape, &self.shape[..]
                )));
            }
        }
        Ok(Layout { shape: shape.into(), strides, offset: self.offset })
    }
}

/// The broadcast shape of two shapes, or torch's error.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    let nd = a.len().max(b.len());
    let mut out: Shape = SmallVec::from_elem(0, nd);
    for i in (0..nd).rev() {
        let da = if i + a.len() >= nd { a[i + a.len() - nd] } else { 1 };
        let db = if i + b.len() >= nd { b[i + b.len() - nd] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::runtime(format!(
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
                da, db, i
            )));
        };
    }
    Ok(out)
}

/// Wrap a possibly negative dim into [0, ndim); torch's IndexError otherwise.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        )));
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn offsets_of_transposed_view() {
        let l = Layout { shape: [2, 3][..].into(), strides: [1, 2][..].into(), offset: 0 };
        let mut v = vec![];
        l.for_each_offset(|o| v.push(o));
        assert_eq!(v, vec![0, 2, 4, 1, 3, 5]);
        assert!(!l.is_contiguous());
    }
    #[test]
    fn broadcasting() {
        assert_eq!(&broadcast_shapes(&[3, 1], &[4]).unwrap()[..], &[3, 4]);
        assert!(broadcast_shapes(&[3], &[4]).is_err());
    }
    #[test]
    fn view_numel_overflow_is_refused_as_torch() {
        let big = 1usize << 62;
        assert!(checked_view_numel(&[big, big, 0]).is_err());
        assert_eq!(checked_view_numel(&[0, big, big]).unwrap(), 0);
        assert_eq!(checked_view_numel(&[big]).unwrap(), big);
        assert!(checked_view_numel(&[big, 2]).is_err());
    }
}
