//! Bindings of the fused optimizer updates (`crate::optim`): lists of tensors in, the update done
//! in place with the GIL released. The Python optimizers (`ferrograd.optim`) own state and groups.

use super::tensor::PyTensor;
use super::IntoPyResult;
use crate::optim::{self, ParamState};
use crate::tensor::Tensor;
use pyo3::prelude::*;

type Ts = Vec<Option<Py<PyTensor>>>;

fn tensors(py: Python<'_>, v: &Ts) -> Vec<Option<Tensor>> {
    v.iter().map(|t| t.as_ref().map(|t| t.bind(py).get().t.clone())).collect()
}

/// Pairs each parameter with its gradient, states and step counter.
fn with_items<R>(
    py: Python<'_>,
    params: &[Py<PyTensor>],
    grads: &[Py<PyTensor>],
    states: [&Ts; 3],
    steps: Option<&Ts>,
    f: impl FnOnce(&[ParamState<'_>]) -> crate::error::Result<R> + Send,
) -> PyResult<R>
where
    R: Send,
{
    let n = params.len();
    if grads.len() != n || states.iter().any(|s| !s.is_empty() && s.len() != n) || steps.map(|s| s.len() != n).unwrap_or(false) {
        return Err(pyo3::exceptions::PyValueError::new_err("fused optimizer step: lists of different lengths"));
    }
    let ps: Vec<Tensor> = params.iter().map(|t| t.bind(py).get().t.clone()).collect();
    let gs: Vec<Tensor> = grads.iter().map(|t| t.bind(py).get().t.clone()).collect();
    let ss: Vec<Vec<Option<Tensor>>> = states.iter().map(|s| if s.is_empty() { vec![None; n] } else { tensors(py, s) }).collect();
    let st: Vec<Option<Tensor>> = steps.map(|s| tensors(py, s)).unwrap_or_else(|| vec![None; n]);
    py.detach(move || {
        let items: Vec<ParamState<'_>> = (0..n)
            .map(|i| ParamState { param: &ps[i], grad: &gs[i], state: [ss[0][i].as_ref(), ss[1][i].as_ref(), ss[2][i].as_ref()], step: st[i].as_ref() })
            .collect();
        f(&items)
    })
    .py()
}

#[pyfunction]
#[pyo3(signature = (params, grads, momentum_buffers, first, *, lr, momentum, dampening, weight_decay, nesterov, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_sgd(py: Python<'_>, params: Vec<Py<PyTensor>>, grads: Vec<Py<PyTensor>>, momentum_buffers: Ts, first: Vec<bool>, lr: f64, momentum: f64, dampening: f64, weight_decay: f64, nesterov: bool, maximize: bool) -> PyResult<()> {
    let h = optim::Sgd { lr, momentum, dampening, weight_decay, nesterov, maximize };
    with_items(py, &params, &grads, [&momentum_buffers, &vec![], &vec![]], None, move |items| optim::sgd(items, &first, &h))
}

#[pyfunction]
#[pyo3(signature = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_adam(py: Python<'_>, params: Vec<Py<PyTensor>>, grads: Vec<Py<PyTensor>>, exp_avgs: Ts, exp_avg_sqs: Ts, max_exp_avg_sqs: Ts, steps: Ts, lr: f64, beta1: f64, beta2: f64, eps: f64, weight_decay: f64, decoupled: bool, amsgrad: bool, maximize: bool) -> PyResult<()> {
    let h = optim::Adam { lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize };
    with_items(py, &params, &grads, [&exp_avgs, &exp_avg_sqs, &max_exp_avg_sqs], Some(&steps), move |items| optim::adam(items, &h))
}

#[pyfunction]
#[pyo3(signature = (params, grads, square_avgs, momentum_buffers, grad_avgs, steps, *, lr, alpha, eps, weight_decay, momentum, centered, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_rmsprop(py: Python<'_>, params: Vec<Py<PyTensor>>, grads: Vec<Py<PyTensor>>, square_avgs: Ts, momentum_buffers: Ts, grad_avgs: Ts, steps: Ts, lr: f64, alpha: f64, eps: f64, weight_decay: f64, momentum: f64, centered: bool, maximize: bool) -> PyResult<()> {
    let h = optim::RmsProp { lr, alpha, eps, weight_decay, momentum, centered, maximize };
    with_items(py, &params, &grads, [&square_avgs, &momentum_buffers, &grad_avgs], Some(&steps), move |items| optim::rmsprop(items, &h))
}

#[pyfunction]
#[pyo3(signature = (params, grads, sums, steps, *, lr, lr_decay, weight_decay, eps, maximize))]
#[allow(clippy::too_many_arguments)]
fn _fused_adagrad(py: Python<'_>, params: Vec<Py<PyTensor>>, grads: Vec<Py<PyTensor>>, sums: Ts, steps: Ts, lr: f64, lr_decay: f64, weight_decay: f64, eps: f64, maximize: bool) -> PyResult<()> {
    let h = optim::Adagrad { lr, lr_decay, weight_decay, eps, maximize };
    with_items(py, &params, &grads, [&sums, &vec![], &vec![]], Some(&steps), move |items| optim::adagrad(items, &h))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_fused_sgd, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_adam, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_rmsprop, m)?)?;
    m.add_function(wrap_pyfunction!(_fused_adagrad, m)?)?;
    Ok(())
}
