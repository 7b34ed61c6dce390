//! Without the `cuda` feature there are no kernels; `has_kernels()` is false, so none of these
//! is ever called. Same signatures as `native.rs`.
#![allow(unused_variables, clippy::too_many_arguments)]

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};

pub enum Arg {
    T(Tensor),
    S(f64),
}

fn none() -> Error {
    super::unavailable()
}

pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    Err(none())
}

pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    Err(none())
}

pub fn cast(t: &Tensor, dtype: DType) -> Result<Tensor> {
    Err(none())
}

pub fn fill(t: &Tensor, value: f64) -> Result<()> {
    Err(none())
}

pub fn unary(x: &Tensor, op: &str, out_dt: DType) -> Result<Tensor> {
    Err(none())
}

pub fn unary_in(x: &Tensor, op: &str, comp: DType, out_dt: DType) -> Result<Tensor> {
    Err(none())
}

pub fn binary(a: &Tensor, b: &Tensor, op: &str, comp: DType, out_dt: DType, extra: Option<f64>) -> Result<Tensor> {
    Err(none())
}

pub fn where_(c: &Tensor, a: &Tensor, b: &Tensor, dt: DType) -> Result<Tensor> {
    Err(none())
}

pub fn reduce(x: &Tensor, dims: &[usize], kind: &str, out_dt: DType) -> Result<Tensor> {
    Err(none())
}

pub fn softmax(x: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
    Err(none())
}

pub fn index_select(src: &Tensor, dim: usize, idx: &Tensor) -> Result<Tensor> {
    Err(none())
}

pub fn index_add(shape: &[usize], dim: usize, idx: &Tensor, g: &Tensor) -> Result<Tensor> {
    Err(none())
}

pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Err(none())
}

pub fn adam(p: &Tensor, g: &Tensor, m: &Tensor, v: &Tensor, vmax: Option<&Tensor>, lr: f64, b1: f64, b2: f64, eps: f64, wd: f64, decoupled: bool, maximize: bool, bc1: f64, bc2: f64) -> Result<()> {
    Err(none())
}

pub fn compile_all(arch: &str) -> Result<usize> {
    Err(none())
}

pub fn nvrtc_present() -> bool {
    false
}

pub fn set_python_paths(paths: Vec<std::path::PathBuf>) {}

pub fn compile_source(src: &str, arch: &str) -> Result<usize> {
    Err(none())
}

pub fn loaded_libraries() -> Vec<(String, String)> {
    Vec::new()
}

pub fn im2col(src: &Tensor, g: [i64; 13], adjoint: bool, out_shape: &[usize]) -> Result<Tensor> {
    Err(none())
}

pub fn random(shape: &[usize], dt: DType, normal: bool, seed: u64) -> Result<Tensor> {
    Err(none())
}

pub fn take(src: &Tensor, base: &[usize], rest_shape: &[usize], rest_strides: &[usize]) -> Result<Tensor> {
    Err(none())
}

pub fn put(dst: &Tensor, base: &[usize], rest_shape: &[usize], rest_strides: &[usize], vals: &Tensor, accumulate: bool) -> Result<bool> {
    Err(none())
}

pub fn gather_dim(x: &Tensor, dim: usize, index: &Tensor) -> Result<Option<Tensor>> {
    Err(none())
}

pub fn scatter_add_dim(dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor) -> Result<bool> {
    Err(none())
}

pub fn flip(x: &Tensor, flip: &[bool]) -> Result<Tensor> {
    Err(none())
}

pub fn cumsum(x: &Tensor, dim: usize) -> Result<Tensor> {
    Err(none())
}

pub fn randint(shape: &[usize], dt: DType, low: i64, high: i64, seed: u64) -> Result<Tensor> {
    Err(none())
}

pub fn sgd(p: &Tensor, g: &Tensor, buf: Option<&Tensor>, lr: f64, momentum: f64, dampening: f64, wd: f64, nesterov: bool, maximize: bool, first: bool) -> Result<()> {
    Err(none())
}

pub fn rmsprop(p: &Tensor, g: &Tensor, sq: &Tensor, mb: Option<&Tensor>, ga: Option<&Tensor>, lr: f64, alpha: f64, eps: f64, wd: f64, momentum: f64, centered: bool, maximize: bool) -> Result<()> {
    Err(none())
}

pub fn adagrad(p: &Tensor, g: &Tensor, sum: &Tensor, clr: f64, wd: f64, eps: f64, maximize: bool) -> Result<()> {
    Err(none())
}

pub fn precompile() -> Result<usize> {
    Err(none())
}

pub struct DevIndex<'a> {
    pub t: &'a Tensor,
    pub strides: Vec<isize>,
    pub size: usize,
    pub xstride: isize,
}

pub fn index_device(mode: &str, x: &Tensor, shape: &[usize], x_strides: &[isize], v_strides: &[isize], vals: Option<&Tensor>, idx: &[DevIndex<'_>], check: bool) -> Result<Option<Tensor>> {
    Err(none())
}

pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    Err(none())
}
