"""torch.utils.checkpoint: trade compute for memory by recomputing a region in backward.

Both variants are one custom autograd.Function (`CheckpointFunction`) whose node keeps only the
region's inputs; its backward runs the region again with grad enabled and differentiates that
recomputation. The function therefore runs twice, as in torch.

- use_reentrant=True (torch's CheckpointFunction): forward under no_grad; backward recomputes on
  detached inputs and calls `autograd.backward`, so parameters the function closes over get their
  `.grad` from that nested backward. As in torch, this variant is meant for `.backward()`, not for
  `autograd.grad`, and takes no keyword arguments.
- use_reentrant=False: the first run records its graph only long enough to find the leaves it reaches
  (closed-over parameters included), then drops it; those leaves become inputs of the node, so
  `autograd.grad`, `inputs=` and keyword arguments work, and the outputs require grad even when no
  argument does. Backward recomputes on the saved arguments themselves (not detached copies), so
  `create_graph=True` gives higher-order gradients through the region. Unlike torch, the outputs'
  grad_fn is `CheckpointFunctionBackward`, and a non-leaf tensor the function closes over (rather than
  taking as an argument) receives no gradient through the region: pass such tensors as arguments.

RNG (preserve_rng_state): as torch, the global generator's state is saved before the first run and
restored for the recomputation, which therefore draws the same random numbers (dropout masks); the
state current at backward time is put back afterwards, so the checkpoint leaves the random stream of
the program as it would be without recomputation.
"""

import contextlib
import functools
import warnings

from .. import _C
from ..autograd import Function, backward as _backward, grad as _grad
from ..autograd.grad_mode import enable_grad, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction"]


class _RngRegion:
    """Replays the random stream of the first run during the recomputation."""

    def __init__(self, enabled):
        self.state = _C.get_rng_state() if enabled else None

    @contextlib.contextmanager
    def replay(self):
        """Run with the generator as it was before the first run, then restore the current state."""
        if self.state is None:
            yield
            return
        current = _C.get_rng_state()
        _C.set_rng_state(self.state)
        try:
            yield
        finally:
            _C.set_rng_state(current)


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


def _tensor_outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _leaves_reached(outputs, stop):
    """Leaves (requires_grad) reached from the outputs' grad_fns, not descending into `stop` nodes;
    keyed by tensor identity (`hash`)."""
    leaves, seen = {}, set(stop)
    todo = [o.grad_fn for o in outputs if _is_tensor(o) and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or hash(node) in seen:
            continue
        seen.add(hash(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.setdefault(hash(variable), variable)
            continue
        todo.extend(n for n, _ in node.next_functions)
    return list(leaves.values())


class CheckpointFunction(Function):
    """The node of a checkpointed region: inputs are `spec` (what to rerun) and the tensors."""

    @staticmethod
    def forward(ctx, spec, *tensors):
        ctx.spec = spec
        n = len(spec.tensor_positions)
        ctx.save_for_backward(*tensors[:n])
        if spec.outputs is not None:  # non-reentrant: already computed, graph dropped
            outs, spec.outputs = spec.outputs, None
            ctx.mark_non_differentiable(*[o for o, g in zip(outs, spec.output_requires_grad) if _is_tensor(o) and not g])
            return outs if spec.output_is_tuple else outs[0]
        return spec.function(*spec.fill(tensors[:n]))

    @staticmethod
    def backward(ctx, *grads):
        spec = ctx.spec
        saved = ctx.saved_tensors
        if spec.reentrant:
            args = spec.fill([t.detach().requires_grad_(t.requires_grad) for t in saved])
        else:
            args = spec.fill(saved)
        create_graph = _C.is_grad_enabled()
        with spec.rng.replay(), enable_grad():
            outputs = _tensor_outputs(spec.function(*args, **spec.kwargs))
        pairs = [(o, g) for o, g in zip(outputs, grads) if _is_tensor(o) and o.requires_grad]
        if spec.reentrant:
            if not pairs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            _backward([o for o, _ in pairs], [g for _, g in pairs])
            arg_grads = [args[pos].grad for pos in spec.tensor_positions]
            return (None, *arg_grads)
        wrt_positions = [i for i, t in enumerate(saved) if t.requires_grad]
        wrt = [saved[i] for i in wrt_positions] + spec.leaves
        pairs = [(o, g) for o, g in pairs if g is not None]
        result = [None] * (len(saved) + len(spec.leaves))
        if pairs and wrt:
            got = _grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True, create_graph=create_graph)
            for slot, g in zip(wrt_positions + list(range(len(saved), len(result))), got):
                result[slot] = g
        return (None, *result)


class _Spec:
    """What the node needs to run the region again; plain Python, held by the ctx."""

    def __init__(self, function, args, kwargs, preserve_rng_state, reentrant):
        self.function = function
        self.tensor_positions = [i for i, a in enumerate(args) if _is_tensor(a)]
        self.args = tuple(None if _is_tensor(a) else a for a in args)
        self.kwargs = kwargs
        self.reentrant = reentrant
        self.rng = _RngRegion(preserve_rng_state)
        self.outputs = None
        self.output_is_tuple = False
        self.output_requires_grad = ()
        self.leaves = []

    def fill(self, tensors):
        """The arguments, with the tensors put back in their places."""
        args = list(self.args)
        for pos, t in zip(self.tensor_positions, tensors):
            args[pos] = t
        return args


def checkpoint(function=None, *args, use_reentrant=None, preserve_rng_state=True, context_fn=None,
               determinism_check="default", debug=False, **kwargs):
    """Run `function(*args, **kwargs)` without keeping its activations; they are recomputed in backward.
    Without a function, a decorator: `@checkpoint(use_reentrant=False)`."""
    if function is None and not args:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

        def decorate(fn):
            @functools.wraps(fn)
            def run(*a, **k):
                return checkpoint(fn, *a, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state,
                                  context_fn=context_fn, determinism_check=determinism_check, debug=debug, **k)
            return run

        return decorate
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In a future release, "
            "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, "
            "but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to "
            "docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not None or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if context_fn is not None or debug:
        raise NotImplementedError("checkpoint: context_fn and debug are not supported yet")
    if use_reentrant:
        return _checkpoint_reentrant(function, args, preserve_rng_state)
    return _checkpoint_non_reentrant(function, args, kwargs, preserve_rng_state)


def _checkpoint_reentrant(function, args, preserve_rng_state):
    if _C.is_grad_enabled() and not any(_is_tensor(a) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)
    spec = _Spec(function, args, {}, preserve_rng_state, reentrant=True)
    return CheckpointFunction.apply(spec, *[args[i] for i in spec.tensor_positions])


def _checkpoint_non_reentrant(function, args, kwargs, preserve_rng_state):
    if not _C.is_grad_enabled():
        return function(*args, **kwargs)
    spec = _Spec(function, args, kwargs, preserve_rng_state, reentrant=False)
    with enable_grad():
        out = function(*args, **kwargs)
    outs = _tensor_outputs(out)
    stop = [hash(a.grad_fn) for a in args if _is_tensor(a) and a.grad_fn is not None]
    stop += [hash(a) for a in args if _is_tensor(a)]
    spec.leaves = _leaves_reached(outs, stop)
    spec.output_requires_grad = tuple(_is_tensor(o) and o.requires_grad for o in outs)
    spec.output_is_tuple = isinstance(out, (tuple, list))
    spec.output_is_list = isinstance(out, list)
    with no_grad():
        spec.outputs = tuple(o.detach() if _is_tensor(o) else o for o in outs)
    del out, outs  # the first run's graph is released here
    res = CheckpointFunction.apply(spec, *[args[i] for i in spec.tensor_positions], *spec.leaves)
    return list(res) if spec.output_is_list else res


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` in order, in `segments` chunks; every chunk but the last is checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In a future release, we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    from ..nn import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
