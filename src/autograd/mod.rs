//! Autograd: grad mode, graph nodes on the arena tape, and the backward engine.

pub mod engine;
pub mod node;
pub mod tape;

pub use engine::{run_backward, BackwardRequest};
pub use node::{next_hook_id, Backward, Ctx, Edge, Grads, Node, NodeExtras, OpBackward, PostHook, PreHook, SavedTensor, TensorHook, TensorMeta};
pub use tape::{arena_capacity, live_nodes, NodeRef};

use std::cell::Cell;

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
