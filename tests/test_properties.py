"""Property tests: hypothesis generates small random programs (elementwise ops with broadcasting, views,
reductions, matmul) and `parity.check_op` compares them with torch, forward and gradients.
"""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torch
from conftest import fg
from parity import In, check_op

# Unary steps keep values in a moderate range so every op stays in its domain.
UNARY = {
    "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "sin": lambda L, x: x.sin(),
    "exp_tanh": lambda L, x: x.tanh().exp(),
    "square": lambda L, x: x * x,
    "neg": lambda L, x: -x,
    "scale": lambda L, x: x * 1.5 - 0.25,
    "log1p_sq": lambda L, x: (x * x).log1p(),
    "sqrt_1p": lambda L, x: (x * x + 1).sqrt(),
    "recip": lambda L, x: 1 / (x * x + 1),
    "relu": lambda L, x: x.relu(),
    "clamp": lambda L, x: x.clamp(-0.5, 0.7),
    "softmax_last": lambda L, x: x.softmax(-1) if x.dim() else x,
    "cumsum": lambda L, x: x.cumsum(0) if x.dim() else x,
    "flip": lambda L, x: x.flip(0) if x.dim() else x,
    # shape-preserving (a later binary step must still broadcast with b): an op on the transposed view
    "transpose": lambda L, x: (x.transpose(0, -1) * 2).transpose(0, -1) if x.dim() else x,
}
BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 1),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "where": lambda L, a, b: L.where(a > b, a, b * 2),
}
REDUCE = {
    "sum": lambda L, x: x.sum(),
    "mean0": lambda L, x: x.mean(0) if x.dim() else x,
    "amax_last": lambda L, x: x.amax(-1) if x.dim() else x,
    "logsumexp0": lambda L, x: x.logsumexp(0) if x.dim() else x,
    "none": lambda L, x: x,
}


@st.composite
def broadcast_pair(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    other = []
    for d in shape[draw(st.integers(0, ndim)):]:  # a suffix of the shape, some dims set to 1
        other.append(1 if draw(st.booleans()) else d)
    if draw(st.booleans()):
        return shape, tuple(other)
    return tuple(other), shape


@st.composite
def program(draw):
    sa, sb = draw(broadcast_pair())
    steps = draw(st.lists(st.one_of(
        st.tuples(st.just("u"), st.sampled_from(sorted(UNARY))),
        st.tuples(st.just("b"), st.sampled_from(sorted(BINARY))),
    ), min_size=1, max_size=5))
    red = draw(st.sampled_from(sorted(REDUCE)))
    return sa, sb, steps, red


def run_program(steps, red):
    def fn(L, a, b):
        x = a
        for kind, name in steps:
            if kind == "u":
                x = UNARY[name](L, x)
            else:
                x = BINARY[name](L, x, b)
        return REDUCE[red](L, x)
    return fn


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(program(), st.integers(0, 2 ** 16))
def test_random_elementwise_programs(prog, seed):
    sa, sb, steps, red = prog
    # A transpose can make the running value's shape incompatible with b's: then both libraries
    # must refuse the program alike (torch's RuntimeError), and there is nothing to compare.
    fn = run_program(steps, red)
    errors = []
    for L in (torch, fg):
        try:
            fn(L, L.zeros(sa), L.zeros(sb))
            errors.append(None)
        except RuntimeError as e:
            errors.append(type(e))
    assert errors[0] == errors[1], f"torch raised {errors[0]}, ours {errors[1]}"
    if errors[0] is not None:
        return
    check_op(run_program(steps, red), In(sa), In(sb), seed=seed, rtol=1e-6, atol=1e-8)


@st.composite
def matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "bmm", "bcast"]))
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    return {
        "vv": ((k,), (k,)), "mv": ((n, k), (k,)), "vm": ((k,), (k, m)), "mm": ((n, k), (k, m)),
        "bmm": (batch + (n, k), batch + (k, m)), "bcast": (batch + (n, k), (k, m)),
    }[kind]


@settings(max_examples=30, deadline=None, database=None)
@given(matmul_shapes(), st.booleans(), st.integers(0, 2 ** 16))
def test_random_matmul(shapes, transpose_a, seed):
    sa, sb = shapes
    a = In(sa, layout="T") if transpose_a and len(sa) >= 2 and min(sa[-2:]) > 1 else In(sa)
    check_op(lambda L, x, y: (x @ y).tanh(), a, In(sb), seed=seed)
