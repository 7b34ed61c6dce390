"""torch.func's forward-mode transforms: jvp, jacfwd, linearize, hessian.

Each call of `jvp` takes a transform level of its own (ferrograd._transform_levels), wraps the primals
in dual tensors of that level (ferrograd.autograd.forward_ad.DualTensor) and unwraps the outputs, so
jvp nests inside itself and inside/outside the other transforms (`jacfwd(jacrev(f))`, `vmap(jvp(f))`,
`jvp(grad(f))`). `jacfwd` pushes the columns of the identity through `jvp`, all at once by vmap (as
torch), or one at a time where vmap cannot batch the composition; `hessian` is `jacfwd(jacrev(f))`, as
torch's. The pytree helpers are ferrograd.func's (_pytree.py)."""

import functools

import ferrograd as _fg

from .. import _C
from .._transform_levels import TransformWrapper
from ..autograd import forward_ad as _fad
from ._pytree import spec_str, tree_flatten, tree_unflatten
from ._reverse_transforms import _check_argnums

__all__ = ["jvp", "jacfwd", "linearize", "hessian"]


def _is_tensor(v):
    return isinstance(v, (_C.Tensor, TransformWrapper))


# ---------------------------------------------------------------------------------------------------
# jvp

_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents), and func's aux output when has_aux."""
    if strict:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): strict=True is not supported.")
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{spec_str(spec_p)} and tangents with structure {spec_str(spec_t)}")
    if not flat_p:
        raise RuntimeError(f"{_JVP}: Expected primals to contain at least one Tensor.")
    for p in flat_p:
        if not _is_tensor(p):
            raise RuntimeError(f"{_JVP}: Expected primals to only contain Tensors, got unsupported type {type(p)}")
    for t in flat_t:
        if not _is_tensor(t):
            raise RuntimeError(f"{_JVP}: Expected tangents to only contain Tensors, got unsupported type {type(t)}")
    level = _fad._new_level("jvp")
    try:
        duals = [_fad._make_dual_at(p, t, level) for p, t in zip(flat_p, flat_t)]
        result = func(*tree_unflatten(duals, spec_p))
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, aux) if has_aux is True")
            result, aux = result
        flat_out, spec_out = tree_flatten(result)
        for o in flat_out:
            if not _is_tensor(o):
                raise RuntimeError(f"{_JVP}: expected f(*primals) to return only tensors, got unsupported type "
                                   f"{type(o)}")
        prim, tang = [], []
        for o in flat_out:
            p, t = _split(o, level)
            prim.append(p)
            tang.append(_fg.zeros_like(p) if t is None else t)
        out = (tree_unflatten(prim, spec_out), tree_unflatten(tang, spec_out))
        if has_aux:
            aux_flat, aux_spec = tree_flatten(aux)
            out = out + (tree_unflatten([_split(a, level)[0] if _is_tensor(a) else a for a in aux_flat], aux_spec),)
        return out
    finally:
        _fad._end_level(level)


def _split(value, level):
    """(primal, tangent) of an output at `level` (duals of inner levels that have ended stand for their primal)."""
    v = value
    while isinstance(v, _fad.DualTensor) and v._level > level:
        v = v._primal
    if isinstance(v, _fad.DualTensor) and v._level == level:
        return v._primal, v._tangent
    return _fad._strip_dead(v), None


# ---------------------------------------------------------------------------------------------------
# jacfwd

_RANDOMNESS = ("error", "different", "same")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to the positional arguments `argnums`, by forward mode."""
    @functools.wraps(func)
    def wrapper(*args):
        if randomness not in _RANDOMNESS:  # (checked when called, as torch's)
            raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                               f"Got {randomness}")
        nums = _check_argnums(argnums, len(args))
        flat_in, specs = [], []
        for a in nums:
            leaves, spec = tree_flatten(args[a])
            flat_in.append(leaves)
            specs.append(spec)
        inputs = [leaf for leaves in flat_in for leaf in leaves]
        sizes = [x.numel() for x in inputs]
        total = sum(sizes)

        def call(tangent_flat):
            tangents = []
            k = 0
            for leaves in flat_in:
                tangents.append(tangent_flat[k:k + len(leaves)])
                k += len(leaves)

            def f(*diff):
                full = list(args)
                for a, spec, vals in zip(nums, specs, diff):
                    full[a] = tree_unflatten(list(vals), spec)
                return func(*full)

            primals = tuple(tuple(leaves) for leaves in flat_in)
            return jvp(lambda *xs: f(*xs), primals, tuple(tuple(t) for t in tangents), has_aux=has_aux)

        stacked_by_vmap = _columns_by_vmap(call, inputs, sizes, total, has_aux) if randomness == "error" else None
        if stacked_by_vmap is not None:
            out0, aux, stacked_all = stacked_by_vmap
            return _assemble(out0, aux, has_aux, stacked_all, flat_in, specs, argnums)
        columns = []
        out0 = aux = None
        state = _fg.get_rng_state() if randomness != "different" else None
        for j in range(max(total, 1) if total else 0):
            if randomness == "same" and j:
                _fg.set_rng_state(state)
            basis = []
            k = j
            for x, n in zip(inputs, sizes):
                if 0 <= k < n:
                    e = _fg.zeros(n, dtype=x.dtype, device=x.device)
                    e[k] = 1.0
                    basis.append(e.reshape(x.shape))
                else:
                    basis.append(_fg.zeros_like(x))
                k -= n
            res = call(basis)
            if j == 0:
                if randomness == "error" and not _fg.equal(state, _fg.get_rng_state()):
                    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either "
                                       "use the 'same' or 'different' randomness flags on vmap or perform the "
                                       "randomness operation out of vmap")
                out0 = res[0]
                if has_aux:
                    aux = res[2]
            columns.append(res[1])
        if total == 0:
            res = call([_fg.zeros_like(x) for x in inputs])
            out0, columns = res[0], []
            if has_aux:
                aux = res[2]
        flat_out, _ = tree_flatten(out0)
        col_flat = [tree_flatten(c)[0] for c in columns]
        stacked_all = [_fg.stack([c[oi] for c in col_flat], dim=-1) if columns else None
                       for oi in range(len(flat_out))]
        return _assemble(out0, aux, has_aux, stacked_all, flat_in, specs, argnums)

    return wrapper


def _columns_by_vmap(call, inputs, sizes, total, has_aux):
    """The JVPs of all the basis vectors at once, as torch's jacfwd: vmap over the basis (ferrograd.func's
    vmap, when it is here). (primal output, aux, [out.shape + (total,) per output leaf]), or None."""
    try:
        from ._vmap import vmap
    except ImportError:
        return None
    if total == 0:
        return None
    first = inputs[0]
    eye = _fg.eye(total, dtype=first.dtype, device=first.device)
    basis = []
    start = 0
    for x, n in zip(inputs, sizes):
        basis.append(eye.narrow(1, start, n).reshape((total,) + tuple(x.shape)).to(x.dtype))
        start += n
    res = call([_fg.zeros_like(x) for x in inputs])  # the value (and aux), once
    out0 = res[0]
    aux = res[2] if has_aux else None

    def tangents(*ts):
        return tuple(tree_flatten(call(list(ts))[1])[0])

    try:
        cols = vmap(tangents, in_dims=0, out_dims=-1)(*basis)
    except (NotImplementedError, TypeError):
        # a composition vmap cannot batch yet (a reverse transform of a dual whose primal vmap batches, a
        # vmap of this vmap): one basis vector at a time instead, which every composition supports
        return None
    return out0, aux, list(cols)


def _assemble(out0, aux, has_aux, stacked_all, flat_in, specs, argnums):
    """The Jacobian's pytree from each output leaf's columns (out.shape + (total,))."""
    flat_out, spec_out = tree_flatten(out0)
    jac_per_out = []
    for oi, o in enumerate(flat_out):
        stacked = stacked_all[oi]
        if stacked is None:
            stacked = _fg.zeros(tuple(o.shape) + (0,), dtype=o.dtype, device=o.device)
        per_arg = []
        start = 0
        for leaves in flat_in:
            blocks = []
            for x in leaves:
                n = x.numel()
                blk = stacked.narrow(-1, start, n) if n else stacked.narrow(-1, start, 0)
                blocks.append(blk.reshape(tuple(o.shape) + tuple(x.shape)))
                start += n
            per_arg.append(blocks)
        jac_per_out.append(per_arg)
    # structure: output tree of (argnums tree of input trees)
    result_leaves = []
    for per_arg in jac_per_out:
        trees = [tree_unflatten(blocks, spec) for blocks, spec in zip(per_arg, specs)]
        result_leaves.append(trees[0] if isinstance(argnums, int) else tuple(trees))
    jac = tree_unflatten(result_leaves, spec_out)
    return (jac, aux) if has_aux else jac


# ---------------------------------------------------------------------------------------------------
# linearize

def linearize(func, *primals):
    """(func(*primals), jvp_fn) where jvp_fn(*tangents) is the JVP of func at primals."""
    flat_p, spec_p = tree_flatten(primals)
    output = func(*primals)

    def jvp_fn(*tangents):
        flat_t, spec_t = tree_flatten(tangents)
        if spec_t != spec_p:
            raise RuntimeError(f"Expected the tangents {spec_str(spec_t)} to have the same argspec as the primals "
                               f"{spec_str(spec_p)}")
        for i, (p, t) in enumerate(zip(flat_p, flat_t)):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


# ---------------------------------------------------------------------------------------------------
# hessian

def hessian(func, argnums=0):
    """The Hessian of a scalar function: jacfwd(jacrev(func, argnums), argnums), as torch.func
    (forward-over-reverse: Note [reverse under forward] in _reverse_transforms.py)."""
    from ._reverse_transforms import jacrev

    return jacfwd(jacrev(func, argnums), argnums)
