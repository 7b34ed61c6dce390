//! Autograd: grad mode, graph nodes on the arena tape, and the backward engine.

pub mod engine;
pub mod node;
pub mod profiler;
pub mod tape;

pub use engine::{run_backward, BackwardRequest};
pub use node::{pop_saved_tensors_hooks, push_saved_tensors_hooks, PackHook, UnpackHook};
pub use node::{SavedScalar, WithScalars};
pub use node::{next_hook_id, Backward, Ctx, Edge, Grads, Named, Node, NodeExtras, NodeKind, OpBackward, PostHook, PreHook, SavedTensor, ScalarRule, TensorHook, TensorMeta};
pub use tape::{arena_capacity, live_nodes, NodeRef};

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Keys are node/tensor addresses (and a few small keys): a multiplicative hash is enough and
/// much cheaper than SipHash.
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (self.0.rotate_left(8) ^ (v as u64 >> 4)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

static ANOMALY: AtomicBool = AtomicBool::new(false);
static ANOMALY_CHECK_NAN: AtomicBool = AtomicBool::new(true);
static STACK_CAPTURE: OnceLock<fn() -> Option<String>> = OnceLock::new();

/// Anomaly mode: nodes remember where they were created; backward checks for NaN.
pub fn set_anomaly_enabled(on: bool, check_nan: bool) {
    ANOMALY.store(on, Ordering::Relaxed);
    ANOMALY_CHECK_NAN.store(check_nan, Ordering::Relaxed);
}
pub fn is_anomaly_enabled() -> bool {
    ANOMALY.load(Ordering::Relaxed)
}
pub fn is_anomaly_check_nan_enabled() -> bool {
    ANOMALY_CHECK_NAN.load(Ordering::Relaxed)
}
static INTERRUPT_CHECK: OnceLock<fn() -> crate::error::Result<()>> = OnceLock::new();

/// The binding layer installs how to learn that the user interrupted (Ctrl-C): Python's signal
/// handlers run only when the interpreter gets control, and backward runs with the GIL released.
pub fn set_interrupt_check(f: fn() -> crate::error::Result<()>) {
    let _ = INTERRUPT_CHECK.set(f);
}

/// Err (the KeyboardInterrupt) when a signal handler raised since the last check.
pub(crate) fn check_interrupt() -> crate::error::Result<()> {
    match INTERRUPT_CHECK.get() {
        Some(f) => f(),
        None => Ok(()),
    }
}

/// The binding layer installs how to capture the caller's stack (a Python traceback).
pub fn set_stack_capture(f: fn() -> Option<String>) {
    let _ = STACK_CAPTURE.set(f);
}
pub(crate) fn capture_stack() -> Option<String> {
    STACK_CAPTURE.get().and_then(|f| f())
}

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Set grad mode for this thread; returns the previous mode.
pub fn set_grad_enabled(on: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(on))
}

/// Restores the previous grad mode when dropped.
pub struct GradModeGuard(bool);

impl GradModeGuard {
    pub fn new(on: bool) -> GradModeGuard {
        GradModeGuard(set_grad_enabled(on))
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.0);
    }
}
