"""torch.func's forward-mode transforms: jvp, jacfwd, linearize, hessian.

Each call of `jvp` takes a transform level of its own (ferrograd._transform_levels), wraps the primals
in dual tensors of that level (ferrograd.autograd.forward_ad.DualTensor) and unwraps the outputs, so
jvp nests inside itself and inside/outside the other transforms (`jacfwd(jacrev(f))`, `vmap(jvp(f))`,
`jvp(grad(f))`). `jacfwd` pushes the columns of the identity through `jvp`, one per input element
(torch batches them with vmap; the values are the same); `hessian` is `jacfwd(jacrev(f))`, as torch's.
"""

import functools

import ferrograd as _fg

from .. import _C
from .._transform_levels import TransformWrapper
from ..autograd import forward_ad as _fad

__all__ = ["jvp", "jacfwd", "linearize", "hessian"]


# ---------------------------------------------------------------------------------------------------
# pytrees (tuples, lists, dicts, namedtuples; anything else is a leaf)

class _Spec:
    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta, children):
        self.kind, self.meta, self.children = kind, meta, children

    def __eq__(self, other):
        return (isinstance(other, _Spec) and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        return f"TreeSpec({self.kind}, {self.meta}, [{inner}])"


_LEAF = _Spec("leaf", None, [])


def tree_flatten(tree):
    leaves = []

    def go(v):
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return _Spec("namedtuple", type(v), [go(c) for c in v])
        if type(v) is tuple:
            return _Spec("tuple", None, [go(c) for c in v])
        if type(v) is list:
            return _Spec("list", None, [go(c) for c in v])
        if type(v) is dict:
            return _Spec("dict", tuple(v.keys()), [go(c) for c in v.values()])
        leaves.append(v)
        return _LEAF

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def go(s):
        if s.kind == "leaf":
            return next(it)
        kids = [go(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(kids)
        if s.kind == "list":
            return kids
        if s.kind == "namedtuple":
            return s.meta(*kids)
        return dict(zip(s.meta, kids))

    return go(spec)


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
                           f"{spec_p} and tangents with structure {spec_t}")
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

def _check_argnums(argnums, n):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) and not isinstance(a, bool) for a in argnums):
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        out.append(a % n)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return out


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
    if True:
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
            raise RuntimeError(f"Expected the tangents {spec_t} to have the same argspec as the primals {spec_p}")
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
# hessian = jacfwd(jacrev(f)), with a reverse-mode Jacobian of our own until ferrograd.func's jacrev is
# here (Note [jvp of a gradient] in autograd/_jvp_rules.py makes its autograd.grad forward-differentiable)

def _fresh_input(x):
    """x as a leaf that requires grad, keeping the tangents of the dual tensors around it."""
    if isinstance(x, _fad.DualTensor):
        return _fad.DualTensor(_fresh_input(x._primal), x._tangent, x._level)
    return x.detach().requires_grad_()


def _jacrev(func, argnums=0):
    @functools.wraps(func)
    def wrapper(*args):
        nums = _check_argnums(argnums, len(args))
        full = list(args)
        xs = []
        for a in nums:
            full[a] = _fresh_input(args[a])
            xs.append(full[a])
        # a graph of the Jacobian only for an outer reverse-mode differentiation
        keep = _fg.is_grad_enabled() and any(_fad._strip(args[a]).requires_grad for a in nums)
        with _fg.enable_grad():
            out = func(*full)
            flat = out.reshape(-1)
            rows = []
            for i in range(flat.shape[0]):
                gs = _fg.autograd.grad(flat[i], xs, retain_graph=True, create_graph=keep, allow_unused=True)
                rows.append([_fg.zeros_like(x) if g is None else g for g, x in zip(gs, xs)])
        jacs = []
        for k, x in enumerate(xs):
            if rows:
                j = _fg.stack([r[k] for r in rows]).reshape(tuple(out.shape) + tuple(x.shape))
            else:
                j = _fg.zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype)
            jacs.append(j)
        return jacs[0] if isinstance(argnums, int) else tuple(jacs)

    return wrapper


def _reverse_jacobian():
    """ferrograd.func.jacrev once that package is here, else the private one above."""
    try:
        from . import jacrev  # noqa: F401  (ferrograd.func, built beside this module)

        return jacrev
    except ImportError:
        return _jacrev


def hessian(func, argnums=0):
    """The Hessian of a scalar function: jacfwd(jacrev(func, argnums), argnums), as torch.func."""
    return jacfwd(_reverse_jacobian()(func, argnums), argnums)


