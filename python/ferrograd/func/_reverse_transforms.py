"""torch.func's reverse-mode transforms: grad, grad_and_value, vjp, jacrev, on ferrograd's autograd.

Each call takes a level, makes its inputs fresh nodes of the graph (a view of an input that already
requires grad, so an enclosing transform still sees through it), runs the function with grad mode on
and asks `autograd.grad` for the gradients, with `create_graph` when an enclosing transform (or the
caller's own autograd) will differentiate them again: so `grad(grad(f))`, `jacrev(jacrev(f))` and
`grad` of a model's loss nest.

Note [grad under vmap]
Under vmap the function sees batched tensors whose values hold the whole batch. Gradients are taken
on those values: the gradient of the sum of the per-sample outputs with respect to a batched input is
each sample's own gradient, since the batching rules never mix samples. An input that is *not*
batched (a weight passed with in_dims=None) would get the sum over samples instead, so it is first
made batched at every vmap level running outside this transform, as a stride-0 expand (a view, no
copy): each sample then owns a slice whose gradient is that sample's gradient. The ops' batching rules
see a batched weight (linear and matmul: a batched matmul over the expanded view).
"""

import functools

from .. import _C, _transform_levels
from .._creation import ones_like, zeros_like
from ..autograd import grad as autograd_grad
from ..autograd.grad_mode import enable_grad
from . import _vmap
from ._pytree import tree_flatten, tree_unflatten

# Note [vectorized jacrev]
# torch's jacrev vmaps the backward pass over the rows of the identity. ferrograd's backward runs in the
# engine, on unbatched tensors; instead, after the first call (which gives the outputs' shapes, the value
# and aux), the function runs once more under an internal vmap whose batch is the n output elements,
# on a stride-0 expand of each input (a view: no copy), and one backward pass with the n rows of the
# identity as grad_outputs gives every row: sample r's gradient lands in slice r of the expanded input
# (Note [grad under vmap]). A function that cannot run under vmap (data-dependent control flow, .item())
# gets the rows one backward pass at a time. Random ops in the second run draw as randomness="same".
# chunk_size bounds the batch: one such run and backward pass per chunk of rows.

# Note [reverse under forward]
# grad/vjp/jacrev inside jvp (jacfwd(jacrev(f)), hessian, jvp(grad(f))) receive forward-AD dual tensors.
# The gradient is taken at the primal (peeled off the dual, made a graph input, handed to f as a dual
# again); f's output is a dual whose tangent was computed by ferrograd ops from that primal, so the
# tangent of the gradient is the gradient of the output's tangent, with the same grad_outputs:
# d/dε [u·J(x+εv)] = ∇_x (u·(J v)). The result is a dual of the gradient and that tangent.

__all__ = ["grad", "grad_and_value", "vjp", "jacrev"]


def _is_tensor_like(x):
    return isinstance(x, (_C.Tensor, _transform_levels.TransformWrapper))


def _check_argnums(argnums, nargs):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in argnums):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return out


def _forward_ad():
    """ferrograd.autograd.forward_ad, or None where forward mode is not built."""
    try:
        from ..autograd import forward_ad
    except ImportError:
        return None
    return forward_ad if hasattr(forward_ad, "peel_duals") else None


def _peel(x):
    fad = _forward_ad()
    return fad.peel_duals(x) if fad is not None else (x, [])


class _Prepared:
    """The inputs of one reverse-mode call: for each tensor leaf, the wrapper the function sees and
    the physical tensor its gradient is taken at (Note [grad under vmap]). Inputs that are forward-AD
    dual tensors (grad inside jvp: `jacfwd(jacrev(f))`, `hessian`) are differentiated at their primal
    and handed to the function as duals again: Note [reverse under forward]."""

    def __init__(self, leaves):
        self.wrapped = []
        self.phys = []
        self.levels = []
        self.was_tracked = False
        self.dual_level = None
        active = [lv for lv, kind in _transform_levels.current_levels("vmap")]
        for leaf in leaves:
            if not _is_tensor_like(leaf):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
            leaf, duals = _peel(leaf)
            for d in duals:
                if self.dual_level not in (None, d._level):
                    raise NotImplementedError("grad/vjp/jacrev of inputs with tangents of several forward-AD "
                                              "levels is not supported")
                self.dual_level = d._level
            phys, levels = _vmap.to_front(leaf)
            if not isinstance(phys, _C.Tensor):
                raise RuntimeError(f"grad/vjp: cannot differentiate with respect to a {type(phys).__name__}")
            if not (phys.is_floating_point() or phys.is_complex()):
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            phys, levels = _batch_at_all(phys, levels, active)
            self.was_tracked = self.was_tracked or phys.requires_grad
            if phys.requires_grad:
                p = phys.view_as(phys)
            else:
                p = phys.detach().requires_grad_()
            self.phys.append(p)
            self.levels.append(levels)
            wrapped = _vmap.from_front(p, levels)
            if duals:
                wrapped = _forward_ad().rewrap_duals(wrapped, duals)
            self.wrapped.append(wrapped)

    def physical(self, out):
        """(physical primal, vmap levels) of an output of the function."""
        primal, _ = _peel(out)
        return _vmap.to_front(primal)

    def _tangent(self, out):
        """The physical tangent of an output at this call's forward-AD level (None: no tangent)."""
        _, duals = _peel(out)
        for d in duals:
            if d._level == self.dual_level:
                return _vmap.to_front(d._tangent)[0]
        return None

    def grads(self, outputs, grad_outputs, create_graph):
        """The gradients at the inputs of `outputs` (the function's outputs) against the physical
        `grad_outputs`, zeros where unused, rewrapped as the inputs are."""
        phys = [self.physical(o)[0] for o in outputs]
        res = self._grad(phys, grad_outputs, create_graph)
        if self.dual_level is None:
            # the inputs carry no tangent, but the outputs may (a closed-over dual, or another argument)
            for o in outputs:
                duals = _peel(o)[1]
                if duals:
                    self.dual_level = duals[-1]._level
                    break
        if self.dual_level is None:
            return [_vmap.from_front(r, levels) for r, levels in zip(res, self.levels)]
        # Note [vectorized jacrev]
# torch's jacrev vmaps the backward pass over the rows of the identity. ferrograd's backward runs in the
# engine, on unbatched tensors; instead, after the first call (which gives the outputs' shapes, the value
# and aux), the function runs once more under an internal vmap whose batch is the n output elements,
# on a stride-0 expand of each input (a view: no copy), and one backward pass with the n rows of the
# identity as grad_outputs gives every row: sample r's gradient lands in slice r of the expanded input
# (Note [grad under vmap]). A function that cannot run under vmap (data-dependent control flow, .item())
# gets the rows one backward pass at a time. Random ops in the second run draw as randomness="same".
# chunk_size bounds the batch: one such run and backward pass per chunk of rows.

# Note [reverse under forward]: the tangent of a gradient is the gradient of the output's
        # tangent (d/dx of grad_outputs·(J v) is the directional derivative of grad_outputs·J).
        tangents = [self._tangent(o) for o in outputs]
        pairs = [(t, g) for t, g in zip(tangents, grad_outputs) if t is not None]
        tres = self._grad([t for t, _ in pairs], [g for _, g in pairs], create_graph)
        fad = _forward_ad()
        return [fad.DualTensor(_vmap.from_front(r, levels), _vmap.from_front(t, levels), self.dual_level)
                for r, t, levels in zip(res, tres, self.levels)]

    def _grad(self, outputs, grad_outputs, create_graph):
        return self._grad_at(outputs, self.phys, grad_outputs, create_graph)

    def _grad_at(self, outputs, inputs, grad_outputs, create_graph):
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if isinstance(o, _C.Tensor) and o.requires_grad]
        if pairs:
            res = autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                                create_graph=create_graph, allow_unused=True)
        else:
            res = [None] * len(inputs)
        out = []
        for r, p in zip(res, inputs):
            if r is None:
                r = zeros_like(p)
            elif not create_graph:
                r = r.detach()
            out.append(r)
        return out


def _batch_at_all(phys, levels, active):
    """phys (batches of `levels` in front) batched at every level in `active` (expanded views where it
    was not): Note [grad under vmap]."""
    if levels == active:
        return phys, levels
    new_levels = []
    i = 0  # next dim of phys
    for lv in active:
        if i < len(levels) and levels[i] == lv:
            i += 1
        else:
            size = _vmap.batch_size(lv)
            pos = len(new_levels)
            phys = phys.unsqueeze(pos)
            shape = list(phys.shape)
            shape[pos] = size
            phys = phys.expand(shape)
        new_levels.append(lv)
    return phys, new_levels


def _needs_graph(prepared):
    """Whether the gradients must themselves be differentiable: an enclosing reverse-mode transform or
    the caller's autograd will differentiate them."""
    if not _C.is_grad_enabled():
        return False
    return prepared.was_tracked or len(_transform_levels.current_levels("grad")) > 1


def _physical(x, what):
    phys, levels = _vmap.to_front(x)
    return phys, levels


def _detach_tree(tree, keep):
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    out = []
    for v in leaves:
        if _is_tensor_like(v):
            phys, levels = _vmap.to_front(v)
            if isinstance(phys, _C.Tensor):
                v = _vmap.from_front(phys.detach(), levels)
        out.append(v)
    return tree_unflatten(out, spec)


def _split_aux(name, out, has_aux):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for v in tree_flatten(out[1])[0]:
        if not _is_tensor_like(v):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(v)}")
    return out


# ---- grad / grad_and_value --------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """torch.func.grad_and_value: (gradient of func's scalar output at args[argnums], output)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_and_value(func, argnums, has_aux, args, kwargs)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: the gradient of func's scalar output with respect to args[argnums]."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, (value, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs, pair=True)
        return (g, aux) if has_aux else g
    return wrapper


def _run_prepared(func, nums, args, kwargs):
    """Call func with the arguments at `nums` (pytrees) replaced by prepared leaves, under grad mode:
    (the _Prepared leaves, each argument's (leaves, spec), func's output)."""
    flat = [tree_flatten(args[i]) for i in nums]
    prep = _Prepared([v for f, _ in flat for v in f])
    new_args = list(args)
    k = 0
    for i, (f, spec) in zip(nums, flat):
        new_args[i] = tree_unflatten(prep.wrapped[k:k + len(f)], spec)
        k += len(f)
    with enable_grad():
        out = func(*new_args, **kwargs)
    return prep, flat, out


def _grad_and_value(func, argnums, has_aux, args, kwargs, pair=False):
    name = "grad_and_value(f)(*args)"
    nums = _check_argnums(argnums, len(args))
    level = _transform_levels.enter_level("grad")
    try:
        prep, flat, out = _run_prepared(func, nums, args, kwargs)
        out, aux = _split_aux(name, out, has_aux)
        if not _is_tensor_like(out):
            raise RuntimeError(f"{name}: Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"{name}: Expected f(*args) to return a scalar Tensor, got tensor with {out.dim()} "
                               "dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        keep = _needs_graph(prep)
        phys, _ = prep.physical(out)
        if not isinstance(phys, _C.Tensor):
            raise RuntimeError(f"{name}: cannot differentiate a {type(phys).__name__}")
        grads = prep.grads([out], [ones_like(phys)], keep)
        result = []
        k = 0
        for f, spec in flat:
            result.append(tree_unflatten(grads[k:k + len(f)], spec))
            k += len(f)
        g = result[0] if isinstance(argnums, int) else tuple(result)
        value = _detach_tree(out, keep)
        aux = _detach_tree(aux, keep)
        if pair:
            return g, (value, aux)
        return g, ((value, aux) if has_aux else value)
    finally:
        _transform_levels.exit_level(level)


# ---- vjp ----------------------------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) gives the vector-Jacobian
    products with respect to each primal (a tuple, one per primal)."""
    name = "vjp(f, *primals)"
    level = _transform_levels.enter_level("grad")
    try:
        flat, spec = tree_flatten(primals)
        prep = _Prepared(flat)
        wrapped = tree_unflatten(prep.wrapped, spec)
        with enable_grad():
            out = func(*wrapped)
        out, aux = _split_aux(name, out, has_aux)
        out_flat, out_spec = tree_flatten(out)
        for v in out_flat:
            if not _is_tensor_like(v):
                raise RuntimeError(f"{name}: expected f(*primals) to return only tensors, got unsupported type "
                                   f"{type(v)}")
        keep = _needs_graph(prep)
        phys_outs = [prep.physical(v) for v in out_flat]
    finally:
        _transform_levels.exit_level(level)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_flat, ct_spec = tree_flatten(cotangents)
        if len(ct_flat) != len(out_flat):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        cg = keep if create_graph is None else create_graph
        cg = cg or _C.is_grad_enabled() and any(getattr(_vmap.to_front(c)[0], "requires_grad", False)
                                                for c in ct_flat)
        gos = []
        for (p, levels), c, v in zip(phys_outs, ct_flat, out_flat):
            cphys, clevels = _vmap.to_front(c)
            if tuple(c.shape) != tuple(v.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] has a "
                                   f"shape of {v.shape}.")
            if clevels != levels:
                extra = [lv for lv in clevels if lv not in levels]
                if extra:
                    return _vjp_over_batched_cotangents(vjp_fn, cotangents, extra[-1])
                cphys, _ = _batch_at_all(cphys, clevels, levels)
            gos.append(cphys)
        grads = prep.grads(out_flat, gos, cg)
        return tree_unflatten(grads, spec)

    out = _detach_tree(out, keep)
    if has_aux:
        return out, vjp_fn, _detach_tree(aux, keep)
    return out, vjp_fn


def _vjp_over_batched_cotangents(vjp_fn, cotangents, level):
    """vmap(vjp_fn)(cotangents): a vmap that began after the forward pass batches only the cotangents;
    the graph holds no batch for it, so each sample's cotangent runs its own backward."""
    from .. import stack

    n = _vmap.batch_size(level)
    rows = []
    for b in range(n):
        ct = _select_level(cotangents, level, b)
        rows.append(tree_flatten(vjp_fn(ct))[0])
    _, spec = tree_flatten(vjp_fn(_select_level(cotangents, level, 0))) if not rows else (None, None)
    first = vjp_fn(_select_level(cotangents, level, 0))
    leaves, spec = tree_flatten(first)
    out = []
    for i in range(len(leaves)):
        out.append(_vmap.BatchedTensor(stack([r[i] for r in rows]), 0, level))
    return tree_unflatten(out, spec)


def _select_level(tree, level, b):
    leaves, spec = tree_flatten(tree)
    out = []
    for v in leaves:
        if type(v) is _vmap.BatchedTensor and v._level == level:
            v = v._value.select(v._bdim, b)
        out.append(v)
    return tree_unflatten(out, spec)


# ---- jacrev -------------------------------------------------------------------------------------------------

def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian of func at args[argnums] by reverse mode, one vector-Jacobian
    product per output element (`chunk_size` of them at a time)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _jacrev(func, argnums, has_aux, chunk_size, args, kwargs)
    return wrapper


def _jacrev(func, argnums, has_aux, chunk_size, args, kwargs):
    name = "jacrev(f, ...)(*args)"
    nums = _check_argnums(argnums, len(args))
    level = _transform_levels.enter_level("grad")
    try:
        prep, flat, out = _run_prepared(func, nums, args, kwargs)
        out, aux = _split_aux(name, out, has_aux)
        out_flat, out_spec = tree_flatten(out)
        for v in out_flat:
            if not _is_tensor_like(v):
                raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported "
                                   f"type {type(v)}")
        keep = _needs_graph(prep)
        jac = None
        if prep.dual_level is None:
            jac = _jacobian_vectorized(func, args, kwargs, nums, flat, prep, out_flat, keep, has_aux, chunk_size)
        if jac is None:
            jac = _jacobian_rows(prep, out_flat, [v for f, _ in flat for v in f], keep, chunk_size)
        # jac[o][i]: output o's shape + input i's shape
        per_output = []
        for o in range(len(out_flat)):
            per_input = []
            k = 0
            for f, spec in flat:
                per_input.append(tree_unflatten(jac[o][k:k + len(f)], spec))
                k += len(f)
            per_output.append(per_input[0] if isinstance(argnums, int) else tuple(per_input))
        result = tree_unflatten(per_output, out_spec)
        if has_aux:
            return result, _detach_tree(aux, keep)
        return result
    finally:
        _transform_levels.exit_level(level)


def _jacobian_vectorized(func, args, kwargs, nums, flat, prep, out_flat, keep, has_aux, chunk_size):
    """Every row of the Jacobian from one backward pass per chunk of rows (Note [vectorized jacrev]);
    None when the function cannot run under vmap (the rows are then computed one by one)."""
    from .. import cat, eye

    sizes = []
    for o in out_flat:
        phys, olevels = prep.physical(o)
        if not isinstance(phys, _C.Tensor) or not phys.is_floating_point():
            return None
        sizes.append((tuple(phys.shape[len(olevels):]), phys.numel() // max(1, _prod(phys.shape[:len(olevels)]))))
    n = sum(k for _, k in sizes)
    if n <= 1:
        return None
    _vmap._ensure_installed()
    basis = eye(n, dtype=prep.phys[0].dtype, device=prep.phys[0].device)
    step = n if chunk_size is None else chunk_size
    parts = []
    for start in range(0, n, step):
        rows = _jacobian_chunk(func, args, kwargs, nums, flat, prep, sizes, basis[start:start + step], keep, has_aux)
        if rows is None:
            return None
        parts.append(rows)
    grads = parts[0] if len(parts) == 1 else [cat(gs, len(levels)) for gs, levels in zip(zip(*parts), prep.levels)]
    result = []
    offset = 0
    for lshape, k in sizes:
        per_input = []
        for g, levels in zip(grads, prep.levels):
            nl = len(levels)
            rows = g.narrow(nl, offset, k)  # [batches, k, input shape]
            rows = rows.reshape(tuple(rows.shape[:nl]) + lshape + tuple(rows.shape[nl + 1:]))
            per_input.append(_vmap.from_front(rows, levels))
        result.append(per_input)
        offset += k
    return result


def _jacobian_chunk(func, args, kwargs, nums, flat, prep, sizes, basis, keep, has_aux):
    """The gradients (physical, the rows of `basis` after the inputs' batch dims) of the outputs
    against those rows, from the function run under an internal vmap over them."""
    m = basis.shape[0]
    level = _transform_levels.enter_level("vmap")
    _vmap._LEVELS[level] = (m, "same")
    try:
        qs, wrapped = [], []
        for p, levels in zip(prep.phys, prep.levels):
            k = len(levels)
            q = p.unsqueeze(k)
            shape = list(q.shape)
            shape[k] = m
            q = q.expand(shape)  # (a view of the prepared input: each row's gradient lands in its slice)
            qs.append(q)
            wrapped.append(_vmap.from_front(q, levels + [level]))
        new_args = list(args)
        i = 0
        for a, (f, spec) in zip(nums, flat):
            new_args[a] = tree_unflatten(wrapped[i:i + len(f)], spec)
            i += len(f)
        try:
            with enable_grad():
                out = func(*new_args, **kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError):
            return None
        out, _ = _split_aux("jacrev(f, ...)(*args)", out, has_aux)
        outs = tree_flatten(out)[0]
        if len(outs) != len(sizes):
            return None
        phys_outs, gos = [], []
        offset = 0
        for o, (lshape, k) in zip(outs, sizes):
            phys, olevels = _vmap.to_front(o)
            if isinstance(phys, _C.Tensor) and olevels and olevels[-1] == level:
                phys_outs.append(phys)
                gos.append(basis[:, offset:offset + k].reshape((m,) + lshape).expand(phys.shape))
            # (else the output does not depend on the inputs: zero rows)
            offset += k
        return prep._grad_at(phys_outs, qs, gos, keep)
    finally:
        del _vmap._LEVELS[level]
        _transform_levels.exit_level(level)


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _stack_rows(rows, levels, lshape, dual_level):
    """The Jacobian of one output and input from its rows (one gradient per output element): the
    output's shape in front of the input's, batched as the input (a dual when the rows are)."""
    from .. import stack

    if dual_level is not None:
        fad = _forward_ad()
        return fad.DualTensor(_stack_rows([r._primal for r in rows], levels, lshape, None),
                              _stack_rows([r._tangent for r in rows], levels, lshape, None), dual_level)
    nl = len(levels)
    st = stack([_vmap.to_front(r)[0] for r in rows], nl)  # batches, numel, input shape
    st = st.reshape(tuple(st.shape[:nl]) + lshape + tuple(st.shape[nl + 1:]))
    return _vmap.from_front(st, levels)


def _jacobian_rows(prep, out_flat, leaves, keep, chunk_size):
    """For each output and input: the Jacobian (logical shape out + in), from one backward pass per
    output element, batched over the vmap levels the values carry."""
    from .. import eye, zeros

    result = []
    for o in out_flat:
        phys, olevels = prep.physical(o)
        nlev = len(olevels)
        lshape = tuple(phys.shape[nlev:])
        numel = 1
        for s in lshape:
            numel *= s
        rows = []  # per output element: one grad per input (physical, batch in front)
        basis = eye(numel, dtype=phys.dtype, device=phys.device) if numel else None
        for e in range(numel):
            go = basis[e].view(lshape)  # the cotangent that picks element e (of every sample)
            if nlev:
                go = go.expand(phys.shape)
            rows.append(prep.grads([o], [go], keep))
        per_input = []
        for i, leaf in enumerate(leaves):
            p_levels = prep.levels[i]
            if numel == 0:
                pphys = prep.phys[i]
                shape = tuple(pphys.shape[:len(p_levels)]) + lshape + tuple(pphys.shape[len(p_levels):])
                per_input.append(_vmap.from_front(zeros(shape, dtype=pphys.dtype), p_levels))
                continue
            per_input.append(_stack_rows([r[i] for r in rows], p_levels, lshape, prep.dual_level))
        result.append(per_input)
    return result
