//! ferrograd: reverse-mode automatic differentiation with a PyTorch-shaped API.
//!
//! Layers, top to bottom: `python` (PyO3 bindings, feature `python`), `optim` (fused optimizer
//! steps), `ops` (the op registry: forward + backward rule per op), `autograd` (arena tape,
//! engine, grad mode), `backend` (CPU kernels; CUDA, or a backend with no device without the
//! `cuda` feature), `tensor` (handles, storage, layouts, dtypes), then `error` and `alloc`.
//! docs/architecture.md shows the edges that point up, and why; scripts/check_layers.py fails on
//! a new one.

mod alloc;

#[global_allocator]
static GLOBAL: alloc::Allocator = alloc::Allocator;

pub mod autograd;
pub mod backend;
pub mod error;
pub mod ops;
pub mod optim;
pub mod tensor;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, ErrorKind, Result};
pub use tensor::{DType, Tensor};
