//! ferrograd: reverse-mode automatic differentiation with a PyTorch-shaped API.
//!
//! Layers, top to bottom: `python` (PyO3 bindings, feature `python`), `ops` (the op registry:
//! forward + backward rule per op), `autograd` (arena tape, engine, grad mode), `tensor`
//! (handles, storage, layouts, dtypes), `backend` (CPU kernels; CUDA stub).

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
