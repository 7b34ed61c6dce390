//! Fused optimizer updates: one pass per parameter over parameter, gradient and state, for all the
//! parameters of a group in one call (rayon across parameters and across chunks of large ones).
//!
//! Each update performs torch's single-tensor algorithm (torch.optim's `foreach=False` path, which
//! torch uses on the CPU) in the same order of operations, with the hyper-parameters rounded to
//! the tensor's dtype as torch's kernels round their scalar arguments; float32 results therefore
//! agree with torch's to rounding. Every tensor written is bumped to a new version, as an in-place
//! op would be.

use crate::bail;
use crate::error::Result;
use crate::tensor::{DType, Tensor};

/// Elements below which a whole step runs on the calling thread.
const PARALLEL_MIN: usize = 1 << 15;
/// Elements per parallel work item.
const CHUNK: usize = 1 << 14;

/// The float types the updates run in (the parameter's dtype).
pub trait OptFloat: crate::tensor::Element + Copy + Send + Sync + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self> + std::ops::Neg<Output = Self> + PartialOrd {
    fn c(v: f64) -> Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
    fn abs(self) -> Self;
    /// self * a + b with one rounding (torch's CPU kernels fuse `add(alpha=)`, `addcmul` and `lerp`
    /// this way; inside `with_fma` it is one instruction).
    fn mul_add(self, a: Self, b: Self) -> Self;
}
impl OptFloat for f32 {
    fn c(v: f64) -> f32 {
        v as f32
    }
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
}
impl OptFloat for f64 {
    fn c(v: f64) -> f64 {
        v
    }
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    #[inline(always)]
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
}

/// torch's `lerp` kernel: exact at both ends.
#[inline(always)]
fn lerp<T: OptFloat>(a: T, b: T, w: T) -> T {
    if w.abs() < T::c(0.5) {
        w.mul_add(b - a, a)
    } else {
        (-(b - a)).mul_add(T::c(1.0) - w, b)
    }
}

/// torch.maximum: NaN propagates.
#[inline(always)]
fn maximum<T: OptFloat>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::c(f64::NAN)
    } else if a > b {
        a
    } else {
        b
    }
}

/// Element `i`'s parameter and its gradient as torch's single-tensor updates start: negated for
/// maximize, plus weight_decay·p (coupled weight decay).
///
/// # Safety
/// `i` is below the slot's element count.
#[inline(always)]
unsafe fn param_and_grad<T: OptFloat>(s: &Slot<T>, i: usize, maximize: bool, decay: bool, wd: T) -> (T, T) {
    let p = *s.p.add(i);
    let mut g = *s.g.add(i);
    if maximize {
        g = -g;
    }
    if decay {
        g = p.mul_add(wd, g);
    }
    (p, g)
}

/// Raw element pointers of one parameter's tensors (all contiguous, same dtype and numel).
struct Slot<T> {
    p: *mut T,
    g: *const T,
    s: [*mut T; 3],
    n: usize,
    /// Per-parameter scalars (step-dependent factors), computed before the pass.
    k: [f64; 4],
}
unsafe impl<T> Send for Slot<T> {}
unsafe impl<T> Sync for Slot<T> {}

fn check(t: &Tensor, what: &str, dtype: DType, numel: usize) -> Result<()> {
    if t.dtype() != dtype {
        bail!(Runtime, "fused optimizer step: {} has dtype {} but the parameter has {}", what, t.dtype().name(), dtype.name());
    }
    if t.numel() != numel {
        bail!(Runtime, "fused optimizer step: {} has {} elements but the parameter has {}", what, t.numel(), numel);
    }
    if t.is_cuda() {
        // The host kernels below dereference element pointers: device memory never gets there.
        bail!(Runtime, "fused optimizer step: {} is on {}; this fused kernel runs on the CPU", what, t.device());
    }
    if !t.is_contiguous() {
        bail!(Runtime, "fused optimizer step: {} must be contiguous", what);
    }
    Ok(())
}

fn elem_ptr<T: crate::tensor::Element>(t: &Tensor) -> *mut T {
    let d = t.data();
    let base = d.storage.as_ptr() as *mut T;
    unsafe { base.add(d.layout.offset) }
}

/// Run `f(slot, start, end)` over every parameter, in chunks, in parallel when large enough.
fn run<T: OptFloat>(slots: &[Slot<T>], f: impl Fn(&Slot<T>, usize, usize) + Sync) {
    let total: usize = slots.iter().map(|s| s.n).sum();
    if total < PARALLEL_MIN || crate::backend::num_threads() <= 1 {
        for s in slots {
            with_fma(|| f(s, 0, s.n));
        }
        return;
    }
    let work: Vec<(usize, usize, usize)> = slots
        .iter()
        .enumerate()
        .flat_map(|(i, s)| (0..s.n).step_by(CHUNK).map(move |a| (i, a, (a + CHUNK).min(s.n))))
        .collect();
    crate::backend::threads::run(work.len(), crate::backend::num_threads(), &|w| {
        let (i, a, b) = work[w];
        with_fma(|| f(&slots[i], a, b))
    });
}

/// `f()` compiled with FMA (and AVX2) where the CPU has them, so `mul_add` in the update loops is
/// one instruction, as in torch's kernels; elsewhere it is the C library's correctly rounded fma.
#[inline(always)]
fn with_fma<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fused<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if crate::backend::cpu::simd::level() >= 1 {
            // SAFETY: the features were detected at run time (simd::level).
            return unsafe { fused(f) };
        }
    }
    f()
}

/// One parameter's tensors for a fused step: the parameter, its gradient, its state tensors
/// (algorithm-specific, `None` where unused) and its step counter (a 0-dim tensor, or `None`).
pub struct ParamState<'a> {
    pub param: &'a Tensor,
    pub grad: &'a Tensor,
    pub state: [Option<&'a Tensor>; 3],
    pub step: Option<&'a Tensor>,
}

/// Validate every parameter first (nothing is written when one is wrong), then advance the step
/// counters and gather raw pointers.
fn slots<T: OptFloat>(items: &[ParamState<'_>], k: impl Fn(usize, f64) -> [f64; 4]) -> Result<Vec<Slot<T>>> {
    for it in items {
        let (dt, n) = (it.param.dtype(), it.param.numel());
        check(it.param, "param", dt, n)?;
        check(it.grad, "grad", dt, n)?;
        for st in it.state.iter().flatten() {
            check(st, "optimizer state", dt, n)?;
        }
        if let Some(st) = it.step {
            if st.numel() != 1 {
                bail!(Runtime, "fused optimizer step: the step counter must have one element, got {}", st.numel());
            }
        }
    }
    let mut out = Vec::with_capacity(items.len());
    for (idx, it) in items.iter().enumerate() {
        let mut s = [std::ptr::null_mut(); 3];
        for (j, st) in it.state.iter().enumerate() {
            if let Some(st) = st {
                s[j] = elem_ptr::<T>(st);
            }
        }
        let step = advance_step(it)?;
        out.push(Slot { p: elem_ptr::<T>(it.param), g: elem_ptr::<T>(it.grad), s, n: it.param.numel(), k: k(idx, step) });
    }
    Ok(out)
}

/// The parameter's step counter advanced by one (its new value; 0 for an optimizer without one).
fn advance_step(it: &ParamState<'_>) -> Result<f64> {
    let Some(st) = it.step else { return Ok(0.0) };
    let v = st.item_f64()? + 1.0;
    crate::ops::copy_(st, &Tensor::full(&[], v, st.dtype())?)?;
    Ok(v)
}

fn bump(items: &[ParamState<'_>]) {
    for it in items {
        it.param.bump_version();
        for st in it.state.iter().flatten() {
            st.bump_version();
        }
    }
}

fn dtype_of(items: &[ParamState<'_>]) -> Result<Option<DType>> {
    let Some(first) = items.first() else { return Ok(None) };
    let dt = first.param.dtype();
    if !dt.is_float() {
        bail!(Runtime, "fused optimizer step: parameters must be floating point, got {}", dt.name());
    }
    if items.iter().any(|it| it.param.dtype() != dt) {
        bail!(Runtime, "fused optimizer step: all parameters of a call must have one dtype");
    }
    Ok(Some(dt))
}

macro_rules! dispatch {
    ($items:expr, $body:ident, $($arg:expr),*) => {{
        match dtype_of($items)? {
            None => Ok(()),
            Some(DType::F32) => $body::<f32>($items, $($arg),*),
            Some(DType::F64) => $body::<f64>($items, $($arg),*),
            Some(d) => bail!(Runtime, "fused optimizer step: parameters must be float32 or float64, got {}", d.name()),
        }
    }};
}

// ---------------------------------------------------------------------------------------------
// SGD

#[derive(Clone, Copy, Debug)]
pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub maximize: bool,
}

/// state[0]: momentum buffer (when momentum != 0); `first[i]`: the buffer is new this step
/// (torch then sets it to the gradient instead of decaying it).
pub fn sgd(items: &[ParamState<'_>], first: &[bool], h: &Sgd) -> Result<()> {
    if h.momentum != 0.0 && items.iter().any(|it| it.state[0].is_none()) {
        bail!(Runtime, "fused SGD: a momentum buffer is needed for every parameter");
    }
    if items.iter().any(|it| it.param.is_cuda()) {
        return on_device(items, "SGD", |i, it, _| {
            let buf = if h.momentum != 0.0 { it.state[0] } else { None };
            crate::backend::cuda::native::sgd(it.param, it.grad, buf, h.lr, h.momentum, h.dampening, h.weight_decay, h.nesterov, h.maximize, first.get(i).copied().unwrap_or(false))
        });
    }
    dispatch!(items, sgd_t, first, h)
}

fn sgd_t<T: OptFloat>(items: &[ParamState<'_>], first: &[bool], h: &Sgd) -> Result<()> {
    let sl = slots::<T>(items, |i, _| [if first.get(i).copied().unwrap_or(false) { 1.0 } else { 0.0 }, 0.0, 0.0, 0.0])?;
    let (wd, mom, damp1, neg_lr) = (T::c(h.weight_decay), T::c(h.momentum), T::c(1.0 - h.dampening), T::c(-h.lr));
    run(&sl, |s, a, b| {
        let is_first = s.k[0] != 0.0;
        for i in a..b {
            unsafe {
                let (p, mut g) = param_and_grad(s, i, h.maximize, h.weight_decay != 0.0, wd);
                if h.momentum != 0.0 {
                    let buf = s.s[0].add(i);
                    let bv = if is_first { g } else { g.mul_add(damp1, *buf * mom) };
                    *buf = bv;
                    g = if h.nesterov { bv.mul_add(mom, g) } else { bv };
                }
                *s.p.add(i) = g.mul_add(neg_lr, p);
            }
        }
    });
    bump(items);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW

#[derive(Clone, Copy, Debug)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// AdamW: p ← p·(1 − lr·wd) instead of adding wd·p to the gradient.
    pub decoupled: bool,
    pub amsgrad: bool,
    pub maximize: bool,
}

/// state: [exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad)]; `step` counters are advanced here.
pub fn adam(items: &[ParamState<'_>], h: &Adam) -> Result<()> {
    if items.iter().any(|it| it.state[0].is_none() || it.state[1].is_none() || it.step.is_none() || (h.amsgrad && it.state[2].is_none())) {
        bail!(Runtime, "fused Adam: exp_avg, exp_avg_sq, step (and max_exp_avg_sq with amsgrad) are needed for every parameter");
    }
    if items.iter().any(|it| it.param.is_cuda()) {
        return adam_cuda(items, h);
    }
    dispatch!(items, adam_t, h)
}

/// Adam/AdamW on device parameters: one kernel launch per parameter.
fn adam_cuda(items: &[ParamState<'_>], h: &Adam) -> Result<()> {
    on_device(items, "Adam", |_, it, step| {
        let (m, v) = match (it.state[0], it.state[1]) {
            (Some(m), Some(v)) => (m, v),
            _ => bail!(Runtime, "fused Adam: exp_avg and exp_avg_sq are needed"),
        };
        let bc1 = 1.0 - h.beta1.powf(step);
        let bc2 = 1.0 - h.beta2.powf(step);
        let vmax = if h.amsgrad { it.state[2] } else { None };
        crate::backend::cuda::native::adam(it.param, it.grad, m, v, vmax, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.decoupled, h.maximize, bc1, bc2)
    })
}

/// A fused step on device parameters: every tensor checked first (nothing is written when one
/// is wrong), then per parameter its step counter advanced and `f(index, item, step)` launched.
fn on_device(items: &[ParamState<'_>], what: &str, f: impl Fn(usize, &ParamState<'_>, f64) -> Result<()>) -> Result<()> {
    if !crate::backend::cuda::has_kernels() {
        bail!(Runtime, "fused {} on CUDA needs a device with kernels", what);
    }
    for it in items {
        let (dt, n, dev) = (it.param.dtype(), it.param.numel(), it.param.device());
        for (t, name) in std::iter::once((it.param, "the parameter")).chain(std::iter::once((it.grad, "grad"))).chain(it.state.iter().flatten().map(|t| (*t, "optimizer state"))) {
            if t.dtype() != dt || t.numel() != n || !t.is_contiguous() || t.device() != dev {
                bail!(Runtime, "fused {} on CUDA: {} must be a contiguous {} tensor of {} elements on {}", what, name, dt.name(), n, dev);
            }
        }
    }
    for (i, it) in items.iter().enumerate() {
        f(i, it, advance_step(it)?)?;
    }
    bump(items);
    Ok(())
}

fn adam_t<T: OptFloat>(items: &[ParamState<'_>], h: &Adam) -> Result<()> {
    let sl = slots::<T>(items, |_, step| {
        let bc1 = 1.0 - h.beta1.powf(step);
        let bc2 = 1.0 - h.beta2.powf(step);
        [h.lr / bc1, bc2.sqrt(), 0.0, 0.0]
    })?;
    let (w1, b2, w2, eps, wd) = (T::c(1.0 - h.beta1), T::c(h.beta2), T::c(1.0 - h.beta2), T::c(h.eps), T::c(h.weight_decay));
    let decay = T::c(1.0 - h.lr * h.weight_decay);
    run(&sl, |s, a, b| {
        let (neg_step, bc2_sqrt) = (T::c(-s.k[0]), T::c(s.k[1]));
        for i in a..b {
            unsafe {
                let mut p = *s.p.add(i);
                let mut g = *s.g.add(i);
                if h.maximize {
                    g = -g;
                }
                if h.weight_decay != 0.0 {
                    if h.decoupled {
                        p = p * decay;
                    } else {
                        g = p.mul_add(wd, g);
                    }
                }
                let m = lerp(*s.s[0].add(i), g, w1);
                *s.s[0].add(i) = m;
                let v = (w2 * g).mul_add(g, *s.s[1].add(i) * b2);
                *s.s[1].add(i) = v;
                let v = if h.amsgrad {
                    let mx = maximum(*s.s[2].add(i), v);
                    *s.s[2].add(i) = mx;
                    mx
                } else {
                    v
                };
                let denom = v.sqrt() / bc2_sqrt + eps;
                *s.p.add(i) = p + neg_step * m / denom;
            }
        }
    });
    bump(items);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// RMSprop

#[derive(Clone, Copy, Debug)]
pub struct RmsProp {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
    pub maximize: bool,
}

/// state: [square_avg, momentum_buffer (momentum > 0), grad_avg (centered)].
pub fn rmsprop(items: &[ParamState<'_>], h: &RmsProp) -> Result<()> {
    if items.iter().any(|it| it.state[0].is_none() || (h.momentum > 0.0 && it.state[1].is_none()) || (h.centered && it.state[2].is_none())) {
        bail!(Runtime, "fused RMSprop: square_avg (and momentum_buffer / grad_avg when used) are needed for every parameter");
    }
    if items.iter().any(|it| it.param.is_cuda()) {
        return on_device(items, "RMSprop", |_, it, _| {
            let sq = it.state[0].ok_or_else(|| crate::error::Error::runtime("fused RMSprop: square_avg missing"))?;
            let mb = if h.momentum > 0.0 { it.state[1] } else { None };
            let ga = if h.centered { it.state[2] } else { None };
            crate::backend::cuda::native::rmsprop(it.param, it.grad, sq, mb, ga, h.lr, h.alpha, h.eps, h.weight_decay, h.momentum, h.centered, h.maximize)
        });
    }
    dispatch!(items, rmsprop_t, h)
}

fn rmsprop_t<T: OptFloat>(items: &[ParamState<'_>], h: &RmsProp) -> Result<()> {
    let sl = slots::<T>(items, |_, _| [0.0; 4])?;
    let (alpha, w, eps, wd, mom, neg_lr) = (T::c(h.alpha), T::c(1.0 - h.alpha), T::c(h.eps), T::c(h.weight_decay), T::c(h.momentum), T::c(-h.lr));
    run(&sl, |s, a, b| {
        for i in a..b {
            unsafe {
                let (p, g) = param_and_grad(s, i, h.maximize, h.weight_decay != 0.0, wd);
                let sq = (w * g).mul_add(g, *s.s[0].add(i) * alpha);
                *s.s[0].add(i) = sq;
                let avg = if h.centered {
                    let ga = lerp(*s.s[2].add(i), g, w);
                    *s.s[2].add(i) = ga;
                    (-ga).mul_add(ga, sq).sqrt()
                } else {
                    sq.sqrt()
                } + eps;
                if h.momentum > 0.0 {
                    let buf = *s.s[1].add(i) * mom + g / avg;
                    *s.s[1].add(i) = buf;
                    *s.p.add(i) = buf.mul_add(neg_lr, p);
                } else {
                    *s.p.add(i) = p + neg_lr * g / avg;
                }
            }
        }
    });
    bump(items);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Adagrad

#[derive(Clone, Copy, Debug)]
pub struct Adagrad {
    pub lr: f64,
    pub lr_decay: f64,
    pub weight_decay: f64,
    pub eps: f64,
    pub maximize: bool,
}

/// state: [sum].
pub fn adagrad(items: &[ParamState<'_>], h: &Adagrad) -> Result<()> {
    if items.iter().any(|it| it.state[0].is_none() || it.step.is_none()) {
        bail!(Runtime, "fused Adagrad: the state sum and step are needed for every parameter");
    }
    if items.iter().any(|it| it.param.is_cuda()) {
        return on_device(items, "Adagrad", |_, it, step| {
            let sum = it.state[0].ok_or_else(|| crate::error::Error::runtime("fused Adagrad: the state sum is missing"))?;
            crate::backend::cuda::native::adagrad(it.param, it.grad, sum, h.lr / (1.0 + (step - 1.0) * h.lr_decay), h.weight_decay, h.eps, h.maximize)
        });
    }
    dispatch!(items, adagrad_t, h)
}

fn adagrad_t<T: OptFloat>(items: &[ParamState<'_>], h: &Adagrad) -> Result<()> {
    let sl = slots::<T>(items, |_, step| [h.lr / (1.0 + (step - 1.0) * h.lr_decay), 0.0, 0.0, 0.0])?;
    let (wd, eps) = (T::c(h.weight_decay), T::c(h.eps));
    run(&sl, |s, a, b| {
        let neg_clr = T::c(-s.k[0]);
        for i in a..b {
            unsafe {
                let (p, g) = param_and_grad(s, i, h.maximize, h.weight_decay != 0.0, wd);
                let sum = g.mul_add(g, *s.s[0].add(i));
                *s.s[0].add(i) = sum;
                *s.p.add(i) = p + neg_clr * g / (sum.sqrt() + eps);
            }
        }
    });
    bump(items);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Mixed precision: the gradient scaler's unscale.

/// torch's `_amp_foreach_non_finite_check_and_unscale_`: every gradient multiplied in place by
/// `inv_scale` (a one-element float32 tensor), and `found_inf` (likewise) set to 1.0 when any of
/// them holds an inf or NaN (left as it is otherwise). One call for all the gradients of an
/// optimizer: the contiguous float32/float64 host gradients in one pass, chunked across threads;
/// the others (16-bit, strided, device) with the engine's ops, one check and one product each.
pub fn non_finite_check_and_unscale(grads: &[Tensor], found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    for (t, what) in [(found_inf, "found_inf"), (inv_scale, "inv_scale")] {
        if t.numel() != 1 {
            bail!(Runtime, "{} must be a 1-element tensor.", what);
        }
        if t.dtype() != DType::F32 {
            bail!(Runtime, "{} must be a float tensor.", what);
        }
    }
    for g in grads {
        if g.device() != inv_scale.device() || g.device() != found_inf.device() {
            bail!(Runtime, "scaled_grads, found_inf and inv_scale must be on the same device, got {}, {} and {}", g.device(), found_inf.device(), inv_scale.device());
        }
        if !g.dtype().is_float() {
            let kernel = if g.is_cuda() { "_amp_foreach_non_finite_check_and_unscale_cuda" } else { "_amp_foreach_non_finite_check_and_unscale_cpu" };
            bail!(NotImplemented, "\"{}\" not implemented for '{}'", kernel, crate::ops::shape::type_word(g.dtype()));
        }
    }
    let inv = inv_scale.item_f64()? as f32;
    let mut found = false;
    let mut host: Vec<(usize, usize, bool)> = Vec::new(); // (element pointer, numel, is float64)
    for g in grads {
        let plain = !g.is_cuda() && g.is_contiguous() && matches!(g.dtype(), DType::F32 | DType::F64);
        if plain {
            let f64s = g.dtype() == DType::F64;
            let ptr = if f64s { elem_ptr::<f64>(g) as usize } else { elem_ptr::<f32>(g) as usize };
            host.push((ptr, g.numel(), f64s));
            continue;
        }
        let _no_grad = crate::autograd::GradModeGuard::new(false);
        let finite = crate::ops::all_any(&crate::ops::isfinite(g)?, None, false, true)?;
        if finite.item_f64()? == 0.0 {
            found = true;
        }
        if inv != 1.0 {
            let scaled = crate::ops::mul(g, &Tensor::full(&[], inv as f64, DType::F32)?)?;
            crate::ops::copy_(g, &scaled)?;
        }
    }
    let work: Vec<(usize, usize, usize)> = host.iter().enumerate().flat_map(|(i, &(_, n, _))| (0..n).step_by(CHUNK).map(move |a| (i, a, (a + CHUNK).min(n)))).collect();
    let any = std::sync::atomic::AtomicBool::new(false);
    let pass = |w: usize| {
        let (i, a, b) = work[w];
        let (ptr, _, f64s) = host[i];
        // SAFETY: each work item addresses its own range of one contiguous host gradient
        // (the pointers were taken from live tensors above, which the caller holds).
        let bad = unsafe {
            if f64s {
                unscale_range(ptr as *mut f64, a, b, inv as f64)
            } else {
                unscale_range(ptr as *mut f32, a, b, inv)
            }
        };
        if bad {
            any.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let total: usize = host.iter().map(|h| h.1).sum();
    if total < PARALLEL_MIN || crate::backend::num_threads() <= 1 {
        (0..work.len()).for_each(pass);
    } else {
        crate::backend::threads::run(work.len(), crate::backend::num_threads(), &pass);
    }
    for g in grads {
        g.bump_version();
    }
    if found || any.load(std::sync::atomic::Ordering::Relaxed) {
        crate::ops::copy_(found_inf, &Tensor::full(&[], 1.0, DType::F32)?)?;
    }
    Ok(())
}

/// Elements a..b of one gradient: multiplied by `inv` (unless it is 1, as torch's kernel), and
/// whether one of them was inf or NaN.
unsafe fn unscale_range<T: OptFloat>(p: *mut T, a: usize, b: usize, inv: T) -> bool {
    let s = unsafe { std::slice::from_raw_parts_mut(p.add(a), b - a) };
    // v - v is 0 for finite v and NaN for inf/NaN: one test per element, no branch in the loop
    let mut acc = T::c(0.0);
    for v in s.iter() {
        acc = acc + (*v - *v);
    }
    if inv != T::c(1.0) {
        for v in s.iter_mut() {
            *v = *v * inv;
        }
    }
    acc.is_nan()
}
