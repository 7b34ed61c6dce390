//! Backends. Storage dispatch lives here; `cpu` is always built, `cuda` is a stub unless the
//! `cuda` feature is on.

pub mod cpu;
pub mod cuda;

/// Where a tensor lives. Only the CPU exists until the CUDA backend lands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
        }
    }
}
