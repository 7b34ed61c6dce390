"""torch.autograd.gradcheck / gradgradcheck: analytical gradients against finite differences.

Slow mode compares full Jacobians: the numerical one by central differences, perturbing each input
element in place through `.data` (which does not bump the version counter the graph checks), the
analytical one row by row with `autograd.grad` and one-hot grad_outputs. Fast mode compares the
scalar v^T J u for random unit vectors u (per input) and v (per output); on a mismatch it recomputes
the slow Jacobians for the message, as torch does. Jacobians are compared as NumPy arrays.
"""

import warnings

from .._lazy import numpy as np

from .. import _C
from .function import Function
from .grad_mode import no_grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


_FAILED_NONDET_MSG = (
    "\n\nNOTE: If your op relies on non-deterministic operations, call gradcheck/gradgradcheck with "
    "`nondet_tol=<tol>` as a keyword argument.\n"
)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _is_float(x):
    return _is_tensor(x) and x.is_floating_point()


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _diff_inputs(inputs):
    """(position, tensor) of each input that requires grad."""
    return [(i, a) for i, a in enumerate(inputs) if _is_tensor(a) and a.requires_grad]


def _np(t):
    return t.detach().numpy().astype(np.float64, copy=True).reshape(-1)


def _check_inputs(inputs):
    if not _diff_inputs(inputs):
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True."
        )
    for idx, inp in _diff_inputs(inputs):
        if inp.dtype != _C.float64:
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point or complex. This check "
                "will likely fail if all the inputs are not of double precision floating point or complex. ",
                stacklevel=3,
            )
        if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.size())):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that are "
                "non-overlapping to be able to compute the numerical gradients correctly. You should call "
                ".contiguous on the input before passing it to gradcheck."
            )


# ---------------------------------------------------------------- numerical side
def _float_outputs(func, inputs):
    return tuple(o.detach().clone() for o in _as_tuple(func(*inputs)) if _is_float(o))


def _central_difference(func, inputs, data, delta_fn, eps, where):
    """(f(x + d) - f(x - d)) / 2eps per float output, flattened; `data` is perturbed in place."""
    orig = data.clone()
    with no_grad():
        data.copy_(delta_fn(orig, -1.0))
    outa = _float_outputs(func, inputs)
    with no_grad():
        data.copy_(delta_fn(orig, 1.0))
    outb = _float_outputs(func, inputs)
    with no_grad():
        data.copy_(orig)
    res = []
    for a, b in zip(outa, outb):
        if a.shape != b.shape:
            raise AssertionError(
                f"Expected `func` to return outputs with the same shape when inputs are perturbed {where}by {eps}, "
                f"but got: shapes {a.shape} and {b.shape}."
            )
        if a.dtype != b.dtype:
            raise AssertionError(
                f"Expected `func` to return outputs with the same dtype when inputs are perturbed {where}by {eps}, "
                f"but got: dtypes {a.dtype} and {b.dtype}."
            )
        res.append((_np(b) - _np(a)) / (2 * eps))
    return res


def _numerical_jacobians(func, inputs, eps):
    """jac[j][k]: d float-output k / d diff-input j, shape (numel_in, numel_out)."""
    jacs = []
    for _, inp in _diff_inputs(inputs):
        cols = []
        for e in range(inp.numel()):
            onehot = np.zeros(inp.numel())
            onehot[e] = eps
            step = _C.from_numpy(onehot.reshape(tuple(inp.shape))).to(inp.dtype)
            idx = tuple(int(i) for i in np.unravel_index(e, tuple(inp.shape)))
            cols.append(_central_difference(func, inputs, inp.data, lambda orig, sign: orig + step * sign, eps,
                                            f"on index {idx} "))
        n_out = len(cols[0]) if cols else len(_float_outputs(func, inputs))
        jacs.append([np.stack([c[k] for c in cols]) if cols else np.zeros((0, 0)) for k in range(n_out)])
    return jacs


# ---------------------------------------------------------------- analytical side
def _analytical_jacobian(inputs, output, nondet_tol, check_grad_dtypes):
    """jac[j]: d output / d diff-input j, shape (numel_in, numel_out); computed twice for reentrancy."""
    from . import grad

    diff = [a for _, a in _diff_inputs(inputs)]

    def rows():
        out = [np.zeros((d.numel(), output.numel())) for d in diff]
        sizes_ok, types_ok = True, True
        for k in range(output.numel()):
            onehot = np.zeros(output.numel())
            onehot[k] = 1.0
            g_out = _C.from_numpy(onehot.reshape(tuple(output.shape))).to(output.dtype)
            gs = grad(output, diff, g_out, retain_graph=True, allow_unused=True)
            for j, (g, d) in enumerate(zip(gs, diff)):
                if g is None:
                    continue
                if g.size() != d.size():
                    sizes_ok = False
                    continue
                if g.dtype != d.dtype:
                    types_ok = False
                out[j][:, k] = _np(g)
        return out, sizes_ok, types_ok

    j1, sizes_ok, types_ok = rows()
    j2, _, _ = rows()
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not all(np.allclose(a, b, rtol=0.0, atol=nondet_tol) for a, b in zip(j1, j2)):
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives "
            "different values, although analytical gradient matches numerical gradient.The tolerance for "
            f"nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG
        )
    return j1


def _show(a):
    a = np.asarray(a)
    return float(a) if a.ndim == 0 else _C.from_numpy(np.ascontiguousarray(a))


def _notallclose_msg(analytical, numerical, output_idx, input_idx):
    return (
        f"Jacobian mismatch for output {output_idx:d} with respect to input {input_idx:d},\n"
        f"numerical:{_show(numerical)}\nanalytical:{_show(analytical)}\n"
    )


def _check_no_differentiable_outputs(func, inputs, eps):
    for per_input in _numerical_jacobians(func, inputs, eps):
        for jac in per_input:
            if np.any(jac != 0):
                raise GradcheckError("Numerical gradient for function expected to be zero")
    return True


def _slow_gradcheck(func, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    func_out = _as_tuple(func(*inputs))
    if not outputs:
        return _check_no_differentiable_outputs(func, inputs, eps)
    numerical = _numerical_jacobians(func, inputs, eps)  # [input][float output]
    float_outs = [o for o in func_out if _is_float(o)]
    keep = [k for k, o in enumerate(float_outs) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))
    return True


def _fast_gradcheck(func, inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol):
    from . import grad

    if not outputs:
        return _check_no_differentiable_outputs(func, inputs, eps)
    rng = np.random.default_rng(0)
    diff = _diff_inputs(inputs)

    def unit(n):
        v = rng.random(n)
        return v / np.linalg.norm(v) if n else v

    all_u = [unit(t.numel()) for _, t in diff]
    all_v = [unit(o.numel()) for o in outputs]
    func_out = [o for o in _as_tuple(func(*inputs)) if _is_float(o)]
    keep = [k for k, o in enumerate(func_out) if o.requires_grad]
    # numerical: v_k . (J_kj u_j), one directional difference per input
    numerical = []
    for (_, inp), u in zip(diff, all_u):
        u_t = _C.from_numpy(u.reshape(tuple(inp.shape))).to(inp.dtype)
        Ju = _central_difference(func, inputs, inp.data, lambda orig, sign: orig + u_t * (sign * eps), eps, "")
        numerical.append([float(np.dot(v, Ju[keep[k]])) for k, v in enumerate(all_v)])
    # analytical: (J_kj^T v_k) . u_j, twice for reentrancy
    for k, (o, v) in enumerate(zip(outputs, all_v)):
        v_t = _C.from_numpy(v.reshape(tuple(o.shape))).to(o.dtype)
        runs = []
        for _ in range(2):
            gs = grad(o, [t for _, t in diff], v_t, retain_graph=True, allow_unused=True)
            row = []
            for g, (_, d), u in zip(gs, diff, all_u):
                if g is not None and g.size() != d.size():
                    raise GradcheckError("Analytical gradient has incorrect size")
                if g is not None and g.dtype != d.dtype and check_grad_dtypes:
                    raise GradcheckError("Gradient has dtype mismatch")
                row.append(0.0 if g is None else float(np.dot(_np(g), u)))
            runs.append(row)
        if not np.allclose(runs[0], runs[1], rtol=0.0, atol=nondet_tol):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and grad_output multiple times "
                "gives different values, although analytical gradient matches numerical gradient.The tolerance for "
                f"nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG
            )
        for j, a in enumerate(runs[0]):
            n = numerical[j][k]
            adjusted_atol = atol * float(all_u[j].sum()) * float(v.sum())
            if not np.isclose(a, n, rtol=rtol, atol=adjusted_atol):
                msg = _notallclose_msg(a, n, k, j)
                slow_n = _numerical_jacobians(func, inputs, eps)[j][keep[k]]
                slow_a = _analytical_jacobian(inputs, o, nondet_tol, check_grad_dtypes)[j]
                msg += (
                    "\nThe above quantities relating the numerical and analytical jacobians are computed \nin fast "
                    "mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
                    f"Numerical:\n {_show(slow_n)}\nAnalytical:\n{_show(slow_a)}\n\n"
                    f"The max per-element difference (slow mode) is: {np.abs(slow_n - slow_a).max()}.\n"
                )
                if np.allclose(slow_a, slow_n, rtol=rtol, atol=atol):
                    msg += (
                        "Fast gradcheck failed but element-wise differences are small. This means that the\ntest "
                        "might've passed in slow_mode!"
                    )
                raise GradcheckError(msg)
    return True


def _test_backward_mul_by_grad_output(outputs, inputs):
    from . import grad

    diff = [a for _, a in _diff_inputs(inputs)]
    zeros = [_C.from_numpy(np.zeros(tuple(o.shape))).to(o.dtype) for o in outputs]
    for gi, di in zip(grad(outputs, diff, zeros, allow_unused=True), diff):
        if gi is None:
            continue
        if np.any(_np(gi) != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.device != di.device:
            raise GradcheckError("grad is incorrect device")
        if gi.size() != di.size():
            raise GradcheckError("grad is incorrect size")
    return True


class UndefinedGrad(Function):
    """An identity whose backward sends no gradient (torch's UndefinedGrad)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


def _test_undefined_backward_mode(func, outputs, inputs):
    from . import grad

    diff = [a for _, a in _diff_inputs(inputs)]

    def check(outs):
        zeros = [_C.from_numpy(np.zeros(tuple(o.shape))).to(o.dtype) for o in outs]
        try:
            gis = grad(outs, diff, zeros, allow_unused=True)
        except RuntimeError as e:
            raise GradcheckError(
                'Expected backward function to handle undefined output grads. Please look at "Notes about undefined '
                'output gradients" in "tools/autograd/derivatives.yaml"'
            ) from e
        for gi in gis:
            if gi is not None and np.any(_np(gi) != 0):
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are undefined or zero. "
                    'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
                )

    check([UndefinedGrad.apply(o) for o in _differentiable_outputs(func(*inputs))])
    if len(outputs) > 1:
        for u in range(len(outputs)):
            outs = _differentiable_outputs(func(*inputs))
            check([UndefinedGrad.apply(o) if i == u else o for i, o in enumerate(outs)])
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True when the gradients of `func` at `inputs` match finite differences; otherwise raises
    GradcheckError (or returns False with raise_exception=False)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_forward_ad or check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck: forward-mode AD and batched gradients are not supported yet")
    try:
        return _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                                 check_backward_ad, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                      check_backward_ad, fast_mode):
    tupled_inputs = _as_tuple(inputs)
    _check_inputs(tupled_inputs)
    outputs = _differentiable_outputs(func(*tupled_inputs))
    if not check_backward_ad:
        return True
    check = _fast_gradcheck if fast_mode else _slow_gradcheck
    check(func, tupled_inputs, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
    # fresh outputs: the numerical pass ran func again on perturbed and restored inputs
    outputs = _differentiable_outputs(func(*tupled_inputs))
    _test_backward_mul_by_grad_output(outputs, tupled_inputs)
    if check_undefined_grad:
        _test_undefined_backward_mode(func, outputs, tupled_inputs)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the gradients of `func`: second derivatives against finite differences of the
    first. Random grad_outputs (from ferrograd's global RNG) when none are given."""
    from . import grad

    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            (_C.rand(tuple(x.shape), dtype=x.dtype if x.is_floating_point() else _C.float64) * 2 - 1).requires_grad_()
            for x in outputs
        )
        if gen_non_contig_grad_outputs:
            tupled_grad_outputs = tuple(
                _C.stack([g.detach(), g.detach()], -1).select(-1, 0).requires_grad_() for g in tupled_grad_outputs
            )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_idx = {i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad}
    diff_grad_output_idx = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args):
        input_args = tuple(x.requires_grad_() if i in diff_input_idx else x for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        grad_outs = tuple(x.requires_grad_() if i in diff_grad_output_idx else x
                          for i, x in enumerate(args[-num_outputs:]))
        diff_args = tuple(x for i, x in enumerate(input_args) if i in diff_input_idx)
        grad_inputs = grad(outputs, diff_args, grad_outs, create_graph=True, allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev, masked=masked)
