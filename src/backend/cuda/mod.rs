//! The CUDA backend. Built without the `cuda` feature this is a stub with the same API: no
//! device is ever available, and asking for one is torch's error.

use crate::error::{Error, Result};

pub fn is_available() -> bool {
    false
}

pub fn device_count() -> usize {
    0
}

pub fn unavailable() -> Error {
    Error::runtime("Torch not compiled with CUDA enabled: ferrograd was built without the `cuda` feature or found no CUDA driver")
}

pub fn require() -> Result<()> {
    Err(unavailable())
}
