use ferrograd::autograd::{live_nodes, run_backward, BackwardRequest};
use ferrograd::ops;
use ferrograd::tensor::Tensor;
use ferrograd::DType;

fn bw(roots: &[Tensor], grads: Vec<Option<Tensor>>) {
    run_backward(BackwardRequest { roots, grads, keep_graph: false, create_graph: false, inputs: None, accumulate: true, allow_unused: false }).unwrap();
}

#[test]
fn user_gradient_aliasing() {
    // leaf root with explicit gradient
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]);
    x.set_requires_grad(true).unwrap();
    let g = Tensor::from_vec(vec![1.0f64, 1.0], &[2]);
    bw(std::slice::from_ref(&x), vec![Some(g.clone())]);
    bw(std::slice::from_ref(&x), vec![Some(g.clone())]);
    eprintln!("leaf root: x.grad {:?} g {:?}", x.grad().unwrap().to_vec::<f64>(), g.to_vec::<f64>());
    // through an add node
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]);
    x.set_requires_grad(true).unwrap();
    let g = Tensor::from_vec(vec![1.0f64, 1.0], &[2]);
    for _ in 0..2 {
        let y = ops::add(&x, &ops::scalar(0.0)).unwrap();
        bw(std::slice::from_ref(&y), vec![Some(g.clone())]);
    }
    eprintln!("add root: x.grad {:?} g {:?}", x.grad().unwrap().to_vec::<f64>(), g.to_vec::<f64>());
    // x + z sharing
    let x = Tensor::from_vec(vec![1.0f64], &[1]);
    x.set_requires_grad(true).unwrap();
    let z = Tensor::from_vec(vec![1.0f64], &[1]);
    z.set_requires_grad(true).unwrap();
    for _ in 0..2 {
        let y = ops::add(&x, &z).unwrap();
        bw(std::slice::from_ref(&y), vec![None]);
    }
    eprintln!("x+z: x.grad {:?} z.grad {:?}", x.grad().unwrap().to_vec::<f64>(), z.grad().unwrap().to_vec::<f64>());
    // mixed dtype
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]);
    a.set_requires_grad(true).unwrap();
    let b = Tensor::from_vec(vec![3.0f64, 4.0], &[2]);
    b.set_requires_grad(true).unwrap();
    let s = ops::sum(&ops::mul(&a, &b).unwrap(), None, false, None).unwrap();
    bw(std::slice::from_ref(&s), vec![None]);
    eprintln!("mixed: a.grad {:?} {:?} b.grad {:?}", a.grad().unwrap().dtype(), a.grad().unwrap().to_vec::<f32>(), b.grad().unwrap().to_vec::<f64>());
    // empty
    let e = Tensor::from_vec(Vec::<f64>::new(), &[0]);
    e.set_requires_grad(true).unwrap();
    let s = ops::sum(&ops::mul(&e, &e).unwrap(), None, false, None).unwrap();
    bw(std::slice::from_ref(&s), vec![None]);
    eprintln!("empty: {:?}", e.grad().map(|g| g.shape()));
    // root aliasing: y = x*1 ; backward with same grad tensor for two roots
    eprintln!("live {}", live_nodes());
    let _ = DType::F32;
}
