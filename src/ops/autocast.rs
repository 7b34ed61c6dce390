//! Autocast (mixed precision): the per-thread state `torch.autocast` sets, and the casts an op's
//! inputs get under it, by the op's class on the device type (`table::AutocastRule`).
//!
//! Note [Autocast]: torch keeps, per thread, whether autocast is on for each device type, its
//! dtype, a nesting depth and a cache of casts. An op on its device type's lists sees its
//! floating inputs cast before it runs: to the autocast dtype (`LowerPrecision`: matmuls,
//! convolutions), to float32 (`Float32`: exp, losses, norms on CUDA...), or to the widest of
//! them (`Promote`). float64 inputs and tensors of another device type are never cast. The op
//! itself then runs with autocast suspended, as torch's autocast kernels exclude their dispatch
//! key, so what it calls inside is not cast again. Backward rules call the ops directly and never
//! pass through here. The cast of a float32 leaf that requires grad to the lower dtype is cached
//! until the outermost autocast region exits (`clear_cache`), so a weight used by several ops of
//! a step is cast once; its gradient flows back through the cast (`ToCopyBackward0`) into the
//! parameter's own dtype.
//!
//! The check an op makes when autocast was never used is one thread-local byte (`active`).

use super::table::{Autocast, AutocastRule};
use crate::error::Result;
use crate::tensor::{DType, Tensor};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// The device types autocast keeps state for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Cpu = 0,
    Cuda = 1,
}

impl Kind {
    /// "cpu" or "cuda" (torch's device_type strings); None for the others.
    pub fn parse(device_type: &str) -> Option<Kind> {
        match device_type {
            "cpu" => Some(Kind::Cpu),
            "cuda" => Some(Kind::Cuda),
            _ => None,
        }
    }
    fn of(t: &Tensor) -> Kind {
        if t.is_cuda() {
            Kind::Cuda
        } else {
            Kind::Cpu
        }
    }
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
    fn class(self, rule: AutocastRule) -> Autocast {
        match self {
            Kind::Cpu => rule.cpu,
            Kind::Cuda => rule.cuda,
        }
    }
}

struct State {
    /// device types with autocast on (bits of `Kind`)
    enabled: u8,
    /// the autocast dtype per device type (bfloat16 on the CPU, float16 on CUDA by default)
    dtype: [DType; 2],
    nesting: i64,
    cache_enabled: bool,
}

thread_local! {
    /// `enabled`, or 0 while an autocast op runs its body (suspended): the one check per op.
    static ACTIVE: Cell<u8> = const { Cell::new(0) };
    static STATE: RefCell<State> = const { RefCell::new(State { enabled: 0, dtype: [DType::BF16, DType::F16], nesting: 0, cache_enabled: true }) };
    /// leaf (by address) -> (the leaf, kept alive so the address is not reused; its cast)
    static CACHE: RefCell<HashMap<usize, (Tensor, Tensor)>> = RefCell::new(HashMap::new());
}

/// Is autocast on for some device type (and not suspended) on this thread?
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.with(|a| a.get() != 0)
}

pub fn is_enabled(kind: Kind) -> bool {
    STATE.with(|s| s.borrow().enabled & kind.bit() != 0)
}

pub fn set_enabled(kind: Kind, on: bool) {
    let en = STATE.with(|s| {
        let mut s = s.borrow_mut();
        if on {
            s.enabled |= kind.bit();
        } else {
            s.enabled &= !kind.bit();
        }
        s.enabled
    });
    ACTIVE.with(|a| a.set(en));
}

pub fn dtype(kind: Kind) -> DType {
    STATE.with(|s| s.borrow().dtype[kind as usize])
}

pub fn set_dtype(kind: Kind, dt: DType) {
    STATE.with(|s| s.borrow_mut().dtype[kind as usize] = dt);
}

/// Enter an autocast region: the new depth.
pub fn increment_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting += 1;
        s.nesting
    })
}

/// Leave an autocast region: the new depth (0: the outermost region ended).
pub fn decrement_nesting() -> i64 {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.nesting -= 1;
        s.nesting
    })
}

pub fn cache_enabled() -> bool {
    STATE.with(|s| s.borrow().cache_enabled)
}

pub fn set_cache_enabled(on: bool) {
    STATE.with(|s| s.borrow_mut().cache_enabled = on);
}

/// Drop the cached casts (torch does it when the outermost autocast region exits).
pub fn clear_cache() {
    let old = CACHE.with(|c| std::mem::take(&mut *c.borrow_mut()));
    drop(old);
}

/// Suspend autocast on this thread (while a listed op runs its body); returns what `resume` needs.
pub fn suspend() -> u8 {
    ACTIVE.with(|a| a.replace(0))
}

/// Undo `suspend`.
pub fn resume(saved: u8) {
    ACTIVE.with(|a| a.set(saved));
}

/// Suspends autocast until dropped.
pub struct Suspended(u8);

impl Suspended {
    pub fn new() -> Suspended {
        Suspended(suspend())
    }
}

impl Default for Suspended {
    fn default() -> Self {
        Suspended::new()
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        resume(self.0);
    }
}

/// Would autocast cast `t` for an op of device type `kind`: a floating tensor of that device
/// type, not float64.
fn eligible(t: &Tensor, kind: Kind) -> bool {
    let dt = t.dtype();
    dt.is_float() && dt != DType::F64 && Kind::of(t) == kind && !t.is_wrapped_number()
}

/// The device type and dtype an op of `rule` casts `inputs` to, or None when it leaves them.
pub fn target(rule: AutocastRule, inputs: &[&Tensor]) -> Option<(Kind, DType)> {
    let on = ACTIVE.with(|a| a.get());
    if on == 0 {
        return None;
    }
    let kind = if inputs.iter().any(|t| t.is_cuda()) { Kind::Cuda } else { Kind::Cpu };
    if on & kind.bit() == 0 {
        return None;
    }
    let lower = dtype(kind);
    let dt = match kind.class(rule) {
        Autocast::None => return None,
        Autocast::LowerPrecision => lower,
        Autocast::Float32 => DType::F32,
        Autocast::Promote => {
            let mut any = false;
            let mut widest = lower;
            for t in inputs.iter().filter(|t| eligible(t, kind)) {
                any = true;
                if t.dtype() != lower {
                    widest = DType::F32;
                }
            }
            if !any {
                return None;
            }
            widest
        }
    };
    Some((kind, dt))
}

/// `t` as an op of device type `kind` sees it under autocast to `dt` (a cast, cached for a
/// float32 leaf that requires grad when `dt` is the lower dtype).
pub fn cast(t: &Tensor, kind: Kind, dt: DType) -> Result<Tensor> {
    if !eligible(t, kind) || t.dtype() == dt {
        return Ok(t.clone());
    }
    let cacheable = dt != DType::F32 && t.dtype() == DType::F32 && t.requires_grad() && t.is_leaf() && crate::autograd::is_grad_enabled() && cache_enabled();
    if !cacheable {
        return super::to_dtype(t, dt);
    }
    let key = std::sync::Arc::as_ptr(&t.0) as usize;
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).filter(|(_, v)| v.dtype() == dt).map(|(_, v)| v.clone())) {
        return Ok(hit);
    }
    let out = super::to_dtype(t, dt)?;
    CACHE.with(|c| c.borrow_mut().insert(key, (t.clone(), out.clone())));
    Ok(out)
}

/// The inputs of an op of `rule` as autocast hands them to it; None when autocast leaves them
/// (off, another device type, not on the lists). The caller runs the op under `Suspended`.
#[inline]
pub fn inputs<const N: usize>(rule: AutocastRule, ts: [&Tensor; N]) -> Result<Option<[Tensor; N]>> {
    if !active() {
        return Ok(None);
    }
    let Some((kind, dt)) = target(rule, &ts) else { return Ok(None) };
    let mut out: [Option<Tensor>; N] = std::array::from_fn(|_| None);
    for (o, t) in out.iter_mut().zip(ts) {
        *o = Some(cast(t, kind, dt)?);
    }
    Ok(Some(out.map(|t| t.unwrap_or_else(|| Tensor::scalar(0.0f32)))))
}

/// `inputs` for a list of tensors (cat, stack).
pub fn list(rule: AutocastRule, ts: &[Tensor]) -> Result<Option<Vec<Tensor>>> {
    if !active() {
        return Ok(None);
    }
    let refs: Vec<&Tensor> = ts.iter().collect();
    let Some((kind, dt)) = target(rule, &refs) else { return Ok(None) };
    ts.iter().map(|t| cast(t, kind, dt)).collect::<Result<Vec<_>>>().map(Some)
}
