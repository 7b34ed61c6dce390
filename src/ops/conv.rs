//! Sliding windows: `unfold` (im2col) and its adjoint `fold` (col2im). Convolution and pooling
//! are compositions of these with matmul / max / mean (python/ferrograd/nn/functional.py), so
//! they need no backward rules of their own.

use super::*;
use crate::bail;
use smallvec::smallvec;

/// Window geometry: kernel, dilation, padding, stride (each (h, w)).
#[derive(Copy, Clone, Debug)]
pub struct Window {
    pub kernel: (usize, usize),
    pub dilation: (usize, usize),
    pub padding: (usize, usize),
    pub stride: (usize, usize),
}

impl Window {
    /// None where the window does not fit, or the sizes overflow (user input: 2**62 paddings).
    fn out_len(size: usize, k: usize, d: usize, p: usize, s: usize) -> Option<usize> {
        let span = k.checked_sub(1)?.checked_mul(d)?.checked_add(1)?;
        let padded = p.checked_mul(2)?.checked_add(size)?;
        if padded < span || s == 0 {
            return None;
        }
        Some((padded - span) / s + 1).filter(|&n| n <= i64::MAX as usize)
    }
    /// Output spatial size for an input of (h, w).
    pub fn out_size(&self, h: usize, w: usize) -> Result<(usize, usize)> {
        let oh = Window::out_len(h, self.kernel.0, self.dilation.0, self.padding.0, self.stride.0);
        let ow = Window::out_len(w, self.kernel.1, self.dilation.1, self.padding.1, self.stride.1);
        match (oh, ow) {
            (Some(a), Some(b)) if a > 0 && b > 0 => Ok((a, b)),
            _ => bail!(
                Runtime,
                "Given input with spatial size ({}, {}), kernel_size={:?}, dilation={:?}, padding={:?}, calculated shape of the array of sliding blocks is non-positive.",
                h, w, self.kernel, self.dilation, self.padding
            ),
        }
    }
    /// The device kernels' description: planes, H, W, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow.
    fn geometry(&self, planes: usize, h: usize, w: usize, oh: usize, ow: usize) -> [i64; 13] {
        let v = [planes, h, w, self.kernel.0, self.kernel.1, self.stride.0, self.stride.1, self.padding.0, self.padding.1, self.dilation.0, self.dilation.1, oh, ow];
        v.map(|x| x as i64)
    }
    /// For kernel column kj: the output columns lo..hi whose input column
    /// `oj * stride + kj * dilation - padding` lies inside 0..w (the others read padding).
    fn valid_cols(&self, w: usize, ow: usize, kj: usize) -> (usize, usize) {
        let off = (kj * self.dilation.1) as isize - self.padding.1 as isize;
        let s = self.stride.1;
        let lo = if off >= 0 { 0 } else { ((-off) as usize).div_ceil(s) };
        let hi = if w as isize - off <= 0 { 0 } else { (((w as isize - off - 1) as usize) / s + 1).min(ow) };
        (lo.min(hi), hi)
    }
    /// Every run of one column-matrix row inside one output row that reads the input:
    /// `f(row, oi, lo, hi, src)` for output columns lo..hi reading the plane from offset `src`
    /// with step stride.1 (input rows in padding and empty runs are skipped).
    fn for_each_run(&self, h: usize, w: usize, (oh, ow): (usize, usize), mut f: impl FnMut(usize, usize, usize, usize, usize)) {
        let (kh, kw) = self.kernel;
        for ki in 0..kh {
            for kj in 0..kw {
                let row = ki * kw + kj;
                let (lo, hi) = self.valid_cols(w, ow, kj);
                if lo >= hi {
                    continue;
                }
                let col0 = (lo * self.stride.1 + kj * self.dilation.1) as isize - self.padding.1 as isize;
                for oi in 0..oh {
                    let hi_in = (oi * self.stride.0 + ki * self.dilation.0) as isize - self.padding.0 as isize;
                    if hi_in < 0 || hi_in as usize >= h {
                        continue;
                    }
                    f(row, oi, lo, hi, hi_in as usize * w + col0 as usize);
                }
            }
        }
    }
}

fn check_float(x: &Tensor, op: &str) -> Result<()> {
    if !x.dtype().is_float() {
        bail!(NotImplemented, "\"{}_out_cpu\" not implemented for '{}'", op, crate::ops::shape::type_word(x.dtype()));
    }
    Ok(())
}

/// [N, C, H, W] -> [N, C*kh*kw, L] (torch.nn.functional.unfold).
pub fn unfold(x: &Tensor, win: Window) -> Result<Tensor> {
    let _prof = crate::prof!("aten::im2col");
    let xs = x.shape();
    if xs.len() != 4 {
        bail!(Runtime, "Input Error: Only 4D input Tensors are supported (got {}D)", xs.len());
    }
    // every dtype: torch's public unfold refuses integers (nn.functional checks), its pooling and
    // convolutions, built on it here, take them
    let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
    let (oh, ow) = win.out_size(h, w)?;
    let total = crate::tensor::layout::checked_numel(&[n, c, win.kernel.0, win.kernel.1, oh, ow])?;
    crate::tensor::storage::check_alloc(x.dtype(), total)?;
    let (kk, l) = (win.kernel.0 * win.kernel.1, oh * ow);
    let out = if x.is_cuda() && crate::backend::cuda::has_kernels() && !x.dtype().is_narrow() {
        crate::backend::cuda::native::im2col(x, win.geometry(n * c, h, w, oh, ow), false, &[n, c * kk, l])?
    } else { let dt = x.dtype(); crate::with_bits!(dt, T => {
        let src = x.bits_vec::<T>()?;
        let mut dst = vec![T::default(); n * c * kk * l];
        let plane = h * w;
        let sw = win.stride.1;
        // one (sample, channel) plane per part, run by run (a contiguous copy at stride 1);
        // (no windows or no elements: nothing to gather)
        if kk * l > 0 && plane > 0 {
            crate::backend::threads::for_each_chunk_mut(&mut dst, kk * l, |p, chunk| {
                let base = &src[p * plane..(p + 1) * plane];
                win.for_each_run(h, w, (oh, ow), |row, oi, lo, hi, at| {
                    let d = &mut chunk[row * l + oi * ow + lo..row * l + oi * ow + hi];
                    if sw == 1 {
                        d.copy_from_slice(&base[at..at + d.len()]);
                    } else {
                        d.iter_mut().enumerate().for_each(|(t, x)| *x = base[at + t * sw]);
                    }
                });
            });
        }
        crate::backend::cuda::place(Tensor::from_bits(dst, &[n, c * kk, l], dt), x.device())?
    }) };
    if needs_grad(&[x]) {
        record(&[&out], &[x], "Im2ColBackward0", saved!(), move |_, gs| Ok(smallvec![Some(fold(&gs[0], (h, w), win)?)]));
    }
    Ok(out)
}

/// [N, C*kh*kw, L] -> [N, C, H, W], summing overlapping windows (torch.nn.functional.fold).
pub fn fold(cols: &Tensor, out_hw: (usize, usize), win: Window) -> Result<Tensor> {
    let _prof = crate::prof!("aten::col2im");
    let cs = cols.shape();
    if cs.len() != 3 {
        bail!(Runtime, "Input Error: Only 3D input Tensors are supported (got {}D)", cs.len());
    }
    check_float(cols, "col2im")?;
    let (h, w) = out_hw;
    let (oh, ow) = win.out_size(h, w)?;
    let kk = crate::tensor::layout::checked_numel(&[win.kernel.0, win.kernel.1])?;
    let l = crate::tensor::layout::checked_numel(&[oh, ow])?;
    if cs[1] % kk != 0 || cs[2] != l {
        bail!(
            Runtime,
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, and dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(1)={}, input.size(2)={}.",
            oh, ow, l, cs[1], cs[2]
        );
    }
    let (n, c) = (cs[0], cs[1] / kk);
    crate::tensor::storage::check_alloc(cols.dtype(), crate::tensor::layout::checked_numel(&[n, c, h, w])?)?;
    let out = if cols.is_cuda() && crate::backend::cuda::has_kernels() && !cols.dtype().is_narrow() {
        crate::backend::cuda::native::im2col(cols, win.geometry(n * c, h, w, oh, ow), true, &[n, c, h, w])?
    } else { crate::with_dtype!(cols.dtype(), T => {
        let mut dst = vec![T::default(); n * c * h * w];
        let sw = win.stride.1;
        // one plane per part; the windows' contributions in the same order as before (row by
        // row of the column matrix), each sum rounded to T as it goes
        cols.with_contiguous::<T, _>(|src| {
            if h * w > 0 && kk * l > 0 {
                crate::backend::threads::for_each_chunk_mut(&mut dst, h * w, |p, plane| {
                    let chunk = &src[p * kk * l..(p + 1) * kk * l];
                    win.for_each_run(h, w, (oh, ow), |row, oi, lo, hi, at| {
                        let s = &chunk[row * l + oi * ow + lo..row * l + oi * ow + hi];
                        for (t, &v) in s.iter().enumerate() {
                            let o = &mut plane[at + t * sw];
                            *o = T::from_f64(o.to_f64() + v.to_f64());
                        }
                    });
                });
            }
        })?;
        crate::backend::cuda::place(Tensor::from_vec(dst, &[n, c, h, w]), cols.device())?
    }) };
    if needs_grad(&[cols]) {
        record(&[&out], &[cols], "Col2ImBackward0", saved!(), move |_, gs| Ok(smallvec![Some(unfold(&gs[0], win)?)]));
    }
    Ok(out)
}
