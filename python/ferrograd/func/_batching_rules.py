"""vmap's batching rules: how each op runs once on a whole batch (Note [batching rules]).

Note [batching rules]
A rule receives the call as the user made it (the public function or Tensor method, with batched
tensors among its arguments) and the vmap level being peeled. It unwraps the values batched at that
level, rearranges them so that one call of the same op computes every sample (the batch moved to the
front and padded for broadcasting, dim arguments shifted past it, the batch folded into an existing
dimension of a matmul or a convolution), and wraps the result with its batch dimension. Rules are kept
by op *class*, and the table that maps ops to classes is built from data: the op table's families
(`_C.op_table()`), nn.functional's pointwise activations, the dim specs of the reductions and shape
ops. An op without a rule runs once per sample (a loop, with a one-time warning naming the op, as
torch does); `FALLBACK_OPS` in the tests lists what still does.
"""

import warnings

from .. import _C
from ._vmap import BatchedTensor, batch_size, randomness, unwrap, wrap

__all__ = ["dispatch", "rule_for", "fallback_names"]

_RULES = None  # func -> rule(func, args, kwargs, level)
_WARNED = set()


def dispatch(func, args, kwargs):
    level = _top_level(args, kwargs)
    if level is None:  # no batched value left (a method called on an outer wrapper): run as it is
        return func(*args, **kwargs)
    rule = rule_for(func)
    return rule(func, args, kwargs, level)


def rule_for(func):
    rules = _rules()
    rule = rules.get(func)
    if rule is None:
        # a wrapped form of a registered function (F.linear's checked body): by module and name
        rule = _BY_NAME.get((getattr(func, "__module__", None), _name(func)))
        if rule is None:
            rule = _decompose if _is_python_method(func) else _fallback
        try:
            rules[func] = rule
        except TypeError:
            pass
    return rule


_BY_NAME = {}


def _top_level(args, kwargs):
    best = None
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        t = type(a)
        if t is BatchedTensor:
            if best is None or a._level > best:
                best = a._level
        elif t in (tuple, list):
            stack.extend(a)
        elif t is dict:
            stack.extend(a.values())
    return best


def _name(func):
    return getattr(func, "__name__", str(func))


# ---- composites: a Tensor method written in Python runs on the batched values ---------------------------

_DECOMPOSING = set()


def _is_python_method(func):
    if type(func).__name__ != "function" or _is_inplace(_name(func)):
        return False
    return getattr(_C.Tensor, _name(func), None) is func


def _decompose(func, args, kwargs, level):
    """A Tensor method written in Python (a composition of ferrograd ops) called with the batched
    values themselves: each op it runs has its own rule. One that needs a value (.item(), control
    flow) or reaches an engine call that refuses a batched tensor runs per sample instead."""
    from ._vmap import _CONTROL_FLOW, _ITEM, _NO_STORAGE

    key = (func, level)
    if key in _DECOMPOSING:  # (the body calls itself at the same level: no progress)
        return _fallback(func, args, kwargs, level)
    _DECOMPOSING.add(key)
    try:
        return func(*args, **kwargs)
    except TypeError:
        pass
    except RuntimeError as e:
        if str(e) not in (_ITEM, _CONTROL_FLOW, _NO_STORAGE):
            raise
    finally:
        _DECOMPOSING.discard(key)
    return _fallback(func, args, kwargs, level)


# ---- the loop over the batch, for an op without a rule ------------------------------------------------

def _fallback(func, args, kwargs, level):
    name = _name(func)
    if name not in _WARNED:
        _WARNED.add(name)
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                      f"{name}. Please file us an issue on GitHub so that we can prioritize its implementation.",
                      UserWarning, stacklevel=4)
    n = batch_size(level)
    inplace = _is_inplace(name)
    if inplace:
        _check_inplace_self(args, kwargs, level)
    if name in _RANDOM and randomness(level) == "error":
        _random_error()
    results = []
    for b in range(n):
        a_b = _select_tree(args, level, b)
        k_b = _select_tree(kwargs, level, b)
        results.append(func(*a_b, **k_b))
    if inplace:
        return args[0]
    return _stack_results(name, results, level)


def _select_tree(tree, level, b):
    t = type(tree)
    if t is BatchedTensor and tree._level == level:
        return tree._value.select(tree._bdim, b)
    if t in (tuple, list):
        return t(_select_tree(v, level, b) for v in tree)
    if t is dict:
        return {k: _select_tree(v, level, b) for k, v in tree.items()}
    return tree


def _stack_results(name, results, level):
    from .. import stack

    first = results[0]
    if isinstance(first, (_C.Tensor, BatchedTensor)) or (hasattr(type(first), "__torch_function__")
                                                        and not isinstance(first, (tuple, list))):
        return BatchedTensor(stack(results), 0, level)
    if isinstance(first, (tuple, list)):
        parts = [_stack_results(name, [r[i] for r in results], level) for i in range(len(first))]
        if hasattr(type(first), "_fields"):
            return type(first)(*parts)
        try:
            return type(first)(parts)
        except TypeError:
            return tuple(parts)
    if all(r == first for r in results):
        return first
    raise RuntimeError(f"vmap: the op {name} returned values that differ between the samples of the batch and are "
                       "not tensors; this is not supported")


def _is_inplace(name):
    if name.startswith("__i") and name.endswith("__"):
        return True
    return name.endswith("_") and not name.endswith("__") and not name.startswith("_")


_INPLACE_ERROR = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` "
                  "in extra_args that has more elements than `self`. This happened due to `other` being vmapped over "
                  "but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of "
                  "inplace arithmetic. If said operator is being called inside the PyTorch framework, please file a "
                  "bug report instead.")


def _check_inplace_self(args, kwargs, level):
    if not args or unwrap(args[0], level)[1] is None:
        raise RuntimeError(_INPLACE_ERROR)


def _random_error():
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' "
                       "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


# ---- helpers for the rules ---------------------------------------------------------------------------------

_TENSOR_ATTRS = None


def _call(func, args, kwargs):
    """func(*args, **kwargs); a Tensor method called on a value that is itself a wrapper (an outer
    vmap's batched tensor) is looked up on that value, so the outer level's rule runs next."""
    global _TENSOR_ATTRS
    if args and type(args[0]) is not _C.Tensor:
        if _TENSOR_ATTRS is None:
            _TENSOR_ATTRS = {getattr(_C.Tensor, n): n for n in dir(_C.Tensor)
                             if callable(getattr(_C.Tensor, n, None)) and not isinstance(getattr(_C.Tensor, n), type)}
        name = _TENSOR_ATTRS.get(func) if _hashable(func) else None
        if name is not None:
            return getattr(args[0], name)(*args[1:], **kwargs)
    return func(*args, **kwargs)


def _hashable(f):
    try:
        hash(f)
        return True
    except TypeError:
        return False


def _front(value, bdim):
    """value with its batch dim first."""
    return value if bdim == 0 else value.movedim(bdim, 0)


def _pad_front(value, bdim, rank):
    """value (batch at bdim, logical rank value.dim()-1) as [B, 1, ..., 1, *logical] of logical rank `rank`."""
    value = _front(value, bdim)
    extra = rank - (value.dim() - 1)
    if extra > 0:
        value = value[(slice(None),) + (None,) * extra]
    return value


def _expand_front(value, bdim, level):
    """value with its batch first; an unbatched value expanded (a view) to the batch."""
    if bdim is None:
        return value.unsqueeze(0).expand(batch_size(level), *value.shape)
    return _front(value, bdim)


def _wrap_dim(d, rank, name="dim"):
    if not isinstance(d, int) or isinstance(d, bool):
        d = _C._parse_arg("int", d, "dim", name, 1)
    r = max(rank, 1)
    if not -r <= d < r:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-r}, {r - 1}], but got {d})")
    return d % r


def _logical_rank(value, bdim):
    return value.dim() - (0 if bdim is None else 1)


def _is_tensorish(v):
    return isinstance(v, (_C.Tensor, BatchedTensor)) or (hasattr(type(v), "__torch_function__")
                                                         and not isinstance(v, type))


def _wrap_out(out, bdim, level):
    """Wrap a rule's result (a tensor, or a tuple/namedtuple of them) with batch dim `bdim`."""
    if isinstance(out, tuple):
        parts = [_wrap_out(o, bdim, level) for o in out]
        if hasattr(type(out), "_fields"):
            return type(out)(*parts)
        try:
            return type(out)(parts)
        except TypeError:
            return tuple(parts)
    if isinstance(out, list):
        return [_wrap_out(o, bdim, level) for o in out]
    if _is_tensorish(out):
        return BatchedTensor(out, bdim, level)
    return out


# ---- elementwise: broadcasting ops of any number of tensor arguments ----------------------------------

def _elementwise(func, args, kwargs, level):
    name = _name(func)
    inplace = _is_inplace(name)
    pos = list(args)
    kw = dict(kwargs)
    slots = []  # (container, key, value, bdim)
    for i, v in enumerate(pos):
        if _is_tensorish(v):
            value, bdim = unwrap(v, level)
            slots.append((pos, i, value, bdim))
    for k, v in kw.items():
        if _is_tensorish(v):
            value, bdim = unwrap(v, level)
            slots.append((kw, k, value, bdim))
    if inplace:
        _elementwise_inplace(func, pos, kw, slots, level)
        return args[0]
    ranks = [_logical_rank(value, bdim) for _, _, value, bdim in slots]
    rank = max(ranks)
    bdims = {bdim for _, _, _, bdim in slots if bdim is not None}
    if len(bdims) == 1:
        # fast path: every batched argument has the batch at the same place and the full rank, and the
        # unbatched ones broadcast against the dims after it
        bd = bdims.pop()
        if all((r == rank) if bdim is not None else (r <= rank - bd) for (_, _, _, bdim), r in zip(slots, ranks)):
            for box, key, value, bdim in slots:
                box[key] = value
            return _wrap_out(_call(func, pos, kw), bd, level)
    for box, key, value, bdim in slots:
        box[key] = value if bdim is None else _pad_front(value, bdim, rank)
    return _wrap_out(_call(func, pos, kw), 0, level)


def _elementwise_inplace(func, pos, kw, slots, level):
    """x.add_(y) and friends: written through a view of self's value with the batch in front (so the
    other arguments broadcast as for one sample); refused when self is not batched but another
    argument is (torch's error)."""
    _, _, self_value, self_bdim = slots[0] if slots and slots[0][0] is pos and slots[0][1] == 0 else (None,) * 4
    if self_bdim is None:
        if any(bdim is not None for *_, bdim in slots):
            raise RuntimeError(_INPLACE_ERROR)
    rank = _logical_rank(self_value, self_bdim)
    for box, key, value, bdim in slots:
        if box is pos and key == 0:
            box[key] = value if self_bdim is None else _front(value, bdim)
        elif bdim is None:
            box[key] = value
        else:
            if _logical_rank(value, bdim) > rank:
                raise RuntimeError(_INPLACE_ERROR)
            box[key] = _pad_front(value, bdim, rank)
    _call(func, pos, kw)


# ---- reductions and other ops with dim arguments --------------------------------------------------------

# name -> (parameter names after self, {dim parameter: kind}, {parameter: default})
# kinds: "r" a reduction's dim(s) (None: every dim), "d" one dim of the input, "d+" one dim of the
# output (unsqueeze: rank + 1), "ds" a dim or a tuple of dims
_REDUCE_TUPLE = "sum mean nansum nanmean amax amin logsumexp var std norm count_nonzero all any".split()
_DIM_SPECS = {
    **{n: (("dim", "keepdim", "dtype"), {"dim": "r"}, {}) for n in "sum mean nansum nanmean prod".split()},
    **{n: (("dim", "keepdim"), {"dim": "r"}, {}) for n in "amax amin argmax argmin all any logsumexp count_nonzero".split()},
    **{n: (("dim", "keepdim"), {"dim": "r"}, {}) for n in "max min median nanmedian".split()},
    **{n: (("dim", "unbiased", "keepdim"), {"dim": "r"}, {}) for n in "var std var_mean std_mean".split()},
    "norm": (("p", "dim", "keepdim", "dtype"), {"dim": "r"}, {}),
    "mode": (("dim", "keepdim"), {"dim": "d"}, {"dim": -1}),
    **{n: (("dim", "dtype"), {"dim": "d"}, {}) for n in "cumsum cumprod softmax log_softmax logcumsumexp".split()},
    **{n: (("dim",), {"dim": "d"}, {}) for n in "cummax cummin".split()},
    "sort": (("dim", "descending", "stable"), {"dim": "d"}, {"dim": -1}),
    "argsort": (("dim", "descending", "stable"), {"dim": "d"}, {"dim": -1}),
    "topk": (("k", "dim", "largest", "sorted"), {"dim": "d"}, {"dim": -1}),
    "kthvalue": (("k", "dim", "keepdim"), {"dim": "d"}, {"dim": -1}),
    "transpose": (("dim0", "dim1"), {"dim0": "d", "dim1": "d"}, {}),
    "swapaxes": (("axis0", "axis1"), {"axis0": "d", "axis1": "d"}, {}),
    "swapdims": (("dim0", "dim1"), {"dim0": "d", "dim1": "d"}, {}),
    "movedim": (("source", "destination"), {"source": "ds", "destination": "ds"}, {}),
    "moveaxis": (("source", "destination"), {"source": "ds", "destination": "ds"}, {}),
    "narrow": (("dim", "start", "length"), {"dim": "d"}, {}),
    "select": (("dim", "index"), {"dim": "d"}, {}),
    "split": (("split_size", "dim"), {"dim": "d"}, {"dim": 0}),
    "tensor_split": (("indices_or_sections", "dim"), {"dim": "d"}, {"dim": 0}),
    "chunk": (("chunks", "dim"), {"dim": "d"}, {"dim": 0}),
    "unbind": (("dim",), {"dim": "d"}, {"dim": 0}),
    "unsqueeze": (("dim",), {"dim": "d+"}, {}),
    "flatten": (("start_dim", "end_dim"), {"start_dim": "d", "end_dim": "d"}, {"start_dim": 0, "end_dim": -1}),
    "unflatten": (("dim", "sizes"), {"dim": "d"}, {}),
    "diagonal": (("offset", "dim1", "dim2"), {"dim1": "d", "dim2": "d"}, {"dim1": 0, "dim2": 1}),
    "diag_embed": (("offset", "dim1", "dim2"), {"dim1": "d+", "dim2": "d+"}, {"dim1": -2, "dim2": -1}),
    "roll": (("shifts", "dims"), {"dims": "ds"}, {}),
    "flip": (("dims",), {"dims": "ds"}, {}),
    "cumulative_trapezoid": (("x", "dim"), {"dim": "d"}, {"dim": -1}),
    "diff": (("n", "dim", "prepend", "append"), {"dim": "d"}, {"dim": -1}),
    "glu": (("dim",), {"dim": "d"}, {"dim": -1}),
    "normalize": (("p", "dim", "eps"), {"dim": "d"}, {"dim": 1}),
    "softmin": (("dim",), {"dim": "d"}, {}),
    "vector_norm": (("ord", "dim", "keepdim"), {"dim": "r"}, {}),
    "matrix_norm": (("ord", "dim", "keepdim"), {"dim": "ds"}, {"dim": (-2, -1)}),
    "squeeze": (("dim",), {"dim": "ds"}, {}),
}
# ops whose dim-less full reduction also returns a tuple with a dim (max(x) is a value, max(x, 0) a pair)
_TUPLE_WITH_DIM = {"max", "min", "median", "nanmedian"}
_VARARG_DIMS = {"flip": "dims", "permute": "dims"}


class _Args:
    """The arguments after self of a call, by parameter name, put back as they were given (by position
    or keyword); a parameter that was not given is added by keyword."""

    def __init__(self, params, rest, kwargs):
        self.params = params
        self.pos = list(rest)
        self.kw = dict(kwargs)

    def __contains__(self, p):
        i = self.params.index(p) if p in self.params else None
        return (i is not None and i < len(self.pos)) or p in self.kw

    def get(self, p, default=None):
        i = self.params.index(p) if p in self.params else None
        if i is not None and i < len(self.pos):
            return self.pos[i]
        return self.kw.get(p, default)

    def set(self, p, value):
        i = self.params.index(p) if p in self.params else None
        if i is not None and i < len(self.pos):
            self.pos[i] = value
        else:
            self.kw[p] = value

    def pop(self, p):
        i = self.params.index(p) if p in self.params else None
        if i is not None and i < len(self.pos):
            value = self.pos[i]
            if i == len(self.pos) - 1:
                self.pos.pop()
            else:
                self.pos[i] = None
            return value
        return self.kw.pop(p, None)


def _dims_rule(func, args, kwargs, level):
    name = _name(func)
    params, kinds, defaults = _DIM_SPECS[name]
    self_value, bdim = unwrap(args[0], level)
    rest = args[1:]
    if bdim is None:  # batched only in another argument (diff's prepend=...): per sample
        return _fallback(func, args, kwargs, level)
    if any(type(v) is BatchedTensor and v._level == level for v in list(rest) + list(kwargs.values())):
        if name in ("max", "min"):
            return _elementwise(func, args, kwargs, level)
        return _fallback(func, args, kwargs, level)
    if name in ("max", "min") and ("other" in kwargs or (rest and _is_tensorish(rest[0]))):
        return _elementwise(func, args, kwargs, level)
    rank = self_value.dim() - 1
    x = _front(self_value, bdim)
    if name in _VARARG_DIMS and len(rest) > 1 and all(isinstance(v, int) for v in rest):
        rest = (tuple(rest),)
    a = _Args(params, rest, kwargs)
    if name in ("var", "std", "var_mean", "std_mean") and isinstance(a.get("dim"), bool):
        a.params = ("unbiased", "keepdim")
    if rank == 0 and name not in _SCALAR_AS_IS and (kinds.get("dim") != "r" or a.get("dim") is not None):
        # a 0-d sample: its one dim is a unit dim of the batch, taken away again after the op
        out = _dims_rule(func, (BatchedTensor(x.unsqueeze(1), 0, level), *rest), kwargs, level)
        return _squeeze_unit(out, level)
    for p, kind in kinds.items():
        if kind == "r":
            continue
        if p not in a and p in defaults:
            a.set(p, defaults[p])
        if p not in a:
            continue
        v = a.get(p)
        if kind == "d":
            a.set(p, _wrap_dim(v, rank) + 1)
        elif kind == "d+":
            a.set(p, _wrap_dim(v, rank + 1) + 1)
        elif kind == "ds":
            if v is None:
                if name == "squeeze":
                    dims = tuple(i + 1 for i, s in enumerate(x.shape[1:]) if s == 1)
                    a.pop(p)
                    if not dims:
                        return _wrap_out(x, 0, level)
                    a.set(p, dims)
                elif name == "roll":  # roll without dims: over the flattened sample
                    flat = x.reshape(x.shape[0], -1).roll(a.get("shifts"), 1)
                    return _wrap_out(flat.reshape(x.shape), 0, level)
                continue
            if isinstance(v, (tuple, list)):
                a.set(p, tuple(_wrap_dim(d, rank) + 1 for d in v))
            else:
                a.set(p, _wrap_dim(v, rank) + 1)
    if kinds.get("dim") == "r":
        return _reduce(func, name, x, rank, a, level)
    return _wrap_out(_call(func, (x, *a.pos), a.kw), 0, level)


_SCALAR_AS_IS = {"unsqueeze", "diag_embed", "flatten", "squeeze", "unflatten"}


def _squeeze_unit(out, level):
    if isinstance(out, tuple):
        parts = [_squeeze_unit(o, level) for o in out]
        return type(out)(*parts) if hasattr(type(out), "_fields") else type(out)(parts)
    value, bdim = unwrap(out, level)
    if bdim is None or value.dim() < 2:
        return out
    return BatchedTensor(_front(value, bdim).squeeze(1), 0, level)


def _reduce(func, name, x, rank, a, level):
    dim = a.get("dim")
    keepdim = a.get("keepdim", False)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and name in _REDUCE_TUPLE):
        # every dim of the sample: flatten it, reduce dim 1
        flat = x.reshape(x.shape[0], -1)
        a.set("dim", 1)
        if "keepdim" in a:
            a.set("keepdim", False)
        out = _call(func, (flat, *a.pos), a.kw)
        if name in _TUPLE_WITH_DIM:
            out = out[0]
        if keepdim:
            shape = (x.shape[0],) + (1,) * rank
            out = out.reshape(shape) if not isinstance(out, tuple) else type(out)(*(o.reshape(shape) for o in out))
        return _wrap_out(out, 0, level)
    if isinstance(dim, (tuple, list)):
        a.set("dim", tuple(_wrap_dim(d, rank) + 1 for d in dim))
    else:
        a.set("dim", _wrap_dim(dim, rank) + 1)
    return _wrap_out(_call(func, (x, *a.pos), a.kw), 0, level)


# ---- shape ops with size arguments -----------------------------------------------------------------------

def _sizes(rest):
    if len(rest) == 1 and isinstance(rest[0], (tuple, list)) or (len(rest) == 1 and hasattr(rest[0], "__len__")
                                                                 and not _is_tensorish(rest[0])):
        return tuple(rest[0])
    return tuple(rest)


def _view_rule(func, args, kwargs, level):
    """view/reshape(*shape): the batch kept in front."""
    value, bdim = unwrap(args[0], level)
    rest = args[1:]
    shape = _sizes(rest) if rest else tuple(kwargs.get("shape", kwargs.get("size", ())))
    if rest and len(rest) == 1 and _is_tensorish(rest[0]) or (rest and isinstance(rest[0], _C.dtype)):
        return _fallback(func, args, kwargs, level)  # view(dtype)
    x = _front(value, bdim)
    return _wrap_out(_call(func, (x, (x.shape[0],) + shape), {}), 0, level)


def _permute_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    rest = args[1:]
    dims = _sizes(rest) if rest else tuple(kwargs["dims"])
    rank = value.dim() - 1
    x = _front(value, bdim)
    return _wrap_out(x.permute((0,) + tuple(_wrap_dim(d, rank) + 1 for d in dims)), 0, level)


def _expand_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    rest = args[1:]
    sizes = _sizes(rest) if rest else tuple(kwargs["size"])
    rank = value.dim() - 1
    x = _pad_front(value, bdim, len(sizes))
    return _wrap_out(x.expand((x.shape[0],) + tuple(sizes)), 0, level)


def _repeat_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    sizes = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs["repeats"])
    x = _pad_front(value, bdim, len(sizes))
    return _wrap_out(x.repeat((1,) + tuple(sizes)), 0, level)


def _squeeze_like_t(func, args, kwargs, level):
    """t(): the two dims of a matrix swapped (a vector or scalar as it is)."""
    value, bdim = unwrap(args[0], level)
    x = _front(value, bdim)
    if x.dim() - 1 < 2:
        return _wrap_out(x, 0, level)
    return _wrap_out(x.transpose(1, 2), 0, level)


def _matrix_transpose(func, args, kwargs, level):
    """mT / mH / T: the last two dims swapped (T: every dim reversed)."""
    value, bdim = unwrap(args[0], level)
    x = _front(value, bdim)
    name = _name(func)
    if name == "T":
        rank = x.dim() - 1
        return _wrap_out(x.permute((0,) + tuple(range(rank, 0, -1))), 0, level)
    out = x.transpose(-2, -1)
    if name in ("mH", "H"):
        out = out.conj()
    return _wrap_out(out, 0, level)


def _as_rule(func, args, kwargs, level):
    """view_as / reshape_as / expand_as(other): the other's logical shape."""
    other = args[1] if len(args) > 1 else kwargs["other"]
    name = _name(func)[:-3]
    return getattr(args[0], name)(tuple(other.shape))


def _size_of_rule(func, args, kwargs, level):
    return getattr(args[0], _name(func))(*args[1:], **kwargs)


def _same_shape_rule(func, args, kwargs, level):
    """Ops that keep the shape and see one tensor (clone, contiguous, to, float, detach, ...): the batch
    stays where it is."""
    value, bdim = unwrap(args[0], level)
    rest = tuple(unwrap(a, level)[0] if isinstance(a, BatchedTensor) else a for a in args[1:])
    if _name(func) in ("to", "type_as") and len(args) > 1 and isinstance(args[1], BatchedTensor):
        func, rest = _C.Tensor.to, (args[1].dtype,) + rest[1:]
    out = _call(func, (value,) + tuple(rest), kwargs)
    if _is_inplace(_name(func)):
        return args[0]
    return _wrap_out(out, bdim, level)


def _trailing_rule(func, args, kwargs, level):
    """Ops on the last dims of one tensor (tril, triu, pad, layer_norm without a batched affine, pixel
    shuffles, ...): the batch moved to the front, other arguments unbatched."""
    value, bdim = unwrap(args[0], level)
    if any(type(v) is BatchedTensor and v._level == level for v in list(args[1:]) + list(kwargs.values())):
        return _fallback(func, args, kwargs, level)
    return _wrap_out(_call(func, (_front(value, bdim),) + tuple(args[1:]), kwargs), 0, level)


def _new_factory_rule(func, args, kwargs, level):
    """x.new_zeros(size), new_ones, new_full, new_empty, new_tensor: an unbatched tensor of x's dtype/device."""
    value, _ = unwrap(args[0], level)
    return _call(func, (value,) + tuple(args[1:]), kwargs)


def _like_rule(func, args, kwargs, level):
    """zeros_like(x) and friends: x's layout with its batch (random ones: by `randomness`)."""
    name = _name(func)
    value, bdim = unwrap(args[0], level)
    if name in _RANDOM:
        mode = randomness(level)
        if mode == "error":
            _random_error()
        if mode == "same":
            x = _front(value, bdim)
            one = _call(func, (x[0],) + tuple(args[1:]), kwargs)
            return one
    return _wrap_out(_call(func, (value,) + tuple(args[1:]), kwargs), bdim, level)


# ---- cat / stack -----------------------------------------------------------------------------------------

def _cat_rule(func, args, kwargs, level):
    name = _name(func)
    tensors = args[0] if args else kwargs["tensors"]
    rest = dict(kwargs)
    rest.pop("tensors", None)
    dim = args[1] if len(args) > 1 else rest.pop("dim", 0)
    items = [unwrap(t, level) for t in tensors]
    ranks = [_logical_rank(v, b) for v, b in items]
    rank = max(ranks)
    vals = [_expand_front(v, b, level) for v, b in items]
    if name == "stack":
        d = _wrap_dim(dim, rank + 1) + 1
    else:
        ref = next((r for r in ranks if r > 0), rank)
        d = _wrap_dim(dim, ref) + 1
        vals = [v for v, r in zip(vals, ranks) if not (r == 1 and v.shape[1] == 0 and ref > 1)]
    return _wrap_out(func(vals, d, **rest), 0, level)


def _stack_family_rule(func, args, kwargs, level):
    """hstack / vstack / dstack / column_stack / row_stack: their meaning on one sample (atleast_Nd, then
    cat), written with ops that have rules."""
    from .. import cat

    name = _name(func)
    tensors = list(args[0] if args else kwargs["tensors"])
    if name == "hstack":
        ts = [t if t.dim() else t.reshape(1) for t in tensors]
        return cat(ts, 0 if ts[0].dim() == 1 else 1)
    if name in ("vstack", "row_stack"):
        return cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)
    if name == "dstack":
        def to3(t):
            if t.dim() == 0:
                return t.reshape(1, 1, 1)
            if t.dim() == 1:
                return t.reshape(1, -1, 1)
            return t.unsqueeze(-1) if t.dim() == 2 else t
        return cat([to3(t) for t in tensors], 2)
    return cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors], 1)  # column_stack


def _expand_all_rule(func, args, kwargs, level):
    """Ops that take any number of leading batch dims on every tensor argument (cdist, linalg.solve):
    each tensor argument with the batch in front (unbatched ones expanded)."""
    pos = [(_expand_front(*unwrap(a, level), level) if _is_tensorish(a) else a) for a in args]
    kw = {k: (_expand_front(*unwrap(v, level), level) if _is_tensorish(v) else v) for k, v in kwargs.items()}
    return _wrap_out(_call(func, pos, kw), 0, level)


def _linalg_norm_rule(func, args, kwargs, level):
    """linalg.norm: a vector norm over the given dim(s), or over every dim without ord; a matrix norm
    over two given dims."""
    ord_ = args[1] if len(args) > 1 else kwargs.get("ord")
    dim = args[2] if len(args) > 2 else kwargs.get("dim")
    keepdim = args[3] if len(args) > 3 else kwargs.get("keepdim", False)
    x = args[0]
    from .. import linalg

    if dim is None:
        if ord_ is not None:
            if x.dim() == 2:
                return linalg.matrix_norm(x, ord_, keepdim=keepdim)
            if x.dim() != 1:
                return _fallback(func, args, kwargs, level)
        return linalg.vector_norm(x, 2 if ord_ is None else ord_, None, keepdim)
    if isinstance(dim, (tuple, list)) and len(dim) == 2:
        return linalg.matrix_norm(x, "fro" if ord_ is None else ord_, tuple(dim), keepdim)
    return linalg.vector_norm(x, 2 if ord_ is None else ord_, dim, keepdim)


def _pad_rule(func, args, kwargs, level):
    """F.pad: constant padding of the last dims with the batch in front; the other modes (which want
    (N, C, ...) inputs) with the batch folded into N."""
    value, bdim = unwrap(args[0], level)
    if any(type(v) is BatchedTensor and v._level == level for v in list(args[1:]) + list(kwargs.values())):
        return _fallback(func, args, kwargs, level)
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    if mode == "constant":
        return _trailing_rule(func, args, kwargs, level)
    pad = args[1] if len(args) > 1 else kwargs["pad"]
    return _fold_n_rule(len(pad) // 2)(func, args, kwargs, level)


# ---- matmul family ---------------------------------------------------------------------------------------

def _matmul_values(a, ab, b, bb, level):
    """The batched matmul of a (batch ab) and b (batch bb), batch first in the result."""
    from .. import matmul

    ra, rb = _logical_rank(a, ab), _logical_rank(b, bb)
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    if ab is not None and bb is None:
        a = _front(a, ab)
        if ra == 1:
            return matmul(a, b) if rb <= 2 else matmul(a.unsqueeze(-2)[(slice(None),) + (None,) * (rb - 2)], b)\
                .squeeze(-2)
        if rb <= 2:
            return matmul(a, b)
        return matmul(_pad_front(a, 0, max(ra, rb)), b)
    if ab is None and bb is not None:
        b = _front(b, bb)
        if rb == 1:
            # a @ b_i for each i: the batch becomes the columns of one matrix
            out = matmul(a, b.transpose(0, 1))  # [..., n, B]
            return out.movedim(-1, 0)
        if ra == 1:
            return matmul(a, b)
        return matmul(a, _pad_front(b, 0, max(ra, rb)))
    a = _front(a, ab)
    b = _front(b, bb)
    if ra == 1 and rb == 1:
        return (a * b).sum(-1)
    if ra == 1:
        return matmul(_pad_front(a.unsqueeze(-2), 0, max(2, rb)), b).squeeze(-2)
    if rb == 1:
        return matmul(a, _pad_front(b.unsqueeze(-1), 0, max(2, ra))).squeeze(-1)
    r = max(ra, rb)
    return matmul(_pad_front(a, 0, r), _pad_front(b, 0, r))


def _matmul_rule(func, args, kwargs, level):
    name = _name(func)
    a, b = (args[0], args[1]) if len(args) > 1 else (args[0], kwargs.get("other", kwargs.get("mat2", kwargs.get("vec"))))
    if name in ("__rmatmul__",):
        a, b = b, a
    av, ab = unwrap(a, level)
    bv, bb = unwrap(b, level)
    ra, rb = _logical_rank(av, ab), _logical_rank(bv, bb)
    if name in ("mm",) and (ra != 2 or rb != 2):
        raise RuntimeError(f"self must be a matrix" if ra != 2 else "mat2 must be a matrix")
    if name in ("bmm",) and (ra != 3 or rb != 3):
        raise RuntimeError(f"batch1 must be a 3D tensor" if ra != 3 else "batch2 must be a 3D tensor")
    if name in ("mv",) and (ra != 2 or rb != 1):
        raise RuntimeError("vector + matrix @ vector expected")
    if name in ("dot", "vdot", "inner") and (ra != 1 or rb != 1) and name != "inner":
        raise RuntimeError(f"1D tensors expected, but got {ra}D and {rb}D tensors")
    if name == "outer" or name == "ger":
        return _wrap_out(_matmul_values(_to_front(av, ab).unsqueeze(-1), _zero(ab), _to_front(bv, bb).unsqueeze(-2), _zero(bb), level), 0, level)
    return _wrap_out(_matmul_values(av, ab, bv, bb, level), 0, level)


def _to_front(v, bdim):
    return v if bdim is None else _front(v, bdim)


def _zero(bdim):
    return None if bdim is None else 0


def _linear_rule(func, args, kwargs, level):
    """F.linear(x, W, b) = x @ W.T + b; unbatched W: one call over every sample (batch anywhere in x
    but its last dim); batched W (ensembles, per-sample gradients): a batched matmul."""
    x = args[0] if args else kwargs["input"]
    w = args[1] if len(args) > 1 else kwargs["weight"]
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    xv, xb = unwrap(x, level)
    wv, wb = unwrap(w, level)
    bv, bb = unwrap(b, level) if b is not None else (None, None)
    if wb is None and bb is None:
        if xb is not None and xb != xv.dim() - 1:
            return _wrap_out(func(xv, wv, bv), xb, level)
    out = _matmul_values(xv, xb, wv.transpose(-1, -2) if wb is None else _front(wv, wb).transpose(-1, -2),
                         None if wb is None else 0, level)
    # out: batch first
    if bv is not None:
        rank = _logical_rank(out, 0)
        out = out + (bv if bb is None else _pad_front(bv, bb, rank))
    return _wrap_out(out, 0, level)


def _addmm_rule(func, args, kwargs, level):
    """addmm(input, m1, m2, beta, alpha) = beta·input + alpha·(m1 @ m2), through the batched matmul."""
    from .. import matmul

    inp, m1, m2 = args[:3]
    beta = kwargs.get("beta", 1)
    alpha = kwargs.get("alpha", 1)
    if len(args) > 3:
        return _fallback(func, args, kwargs, level)
    prod = wrap(_matmul_values(*unwrap(m1, level), *unwrap(m2, level), level), 0, level)
    prod = prod if alpha == 1 else prod * alpha
    return (inp if beta == 1 else inp * beta) + prod


def _conv_rule(func, args, kwargs, level):
    """convNd(x, w, b, stride, padding, dilation, groups): a batched input folds into the N dim; a
    batched weight into the channels, with groups × batch."""
    name = _name(func)
    nd = int(name[4]) if name.startswith("conv") and name[4].isdigit() else 2
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    x, w, b = bound["input"], bound["weight"], bound.get("bias")
    groups = bound.get("groups", 1)
    xv, xb = unwrap(x, level)
    wv, wb = unwrap(w, level)
    bv, bb = unwrap(b, level) if b is not None else (None, None)
    opts = {k: bound[k] for k in ("stride", "padding", "dilation") if k in bound}
    n = batch_size(level)
    if wb is None and bb is None:
        x = _front(xv, xb)
        if x.dim() - 1 == nd + 2:
            out = func(x.flatten(0, 1), wv, bv, groups=groups, **opts)
            return _wrap_out(out.unflatten(0, (n, x.shape[1])), 0, level)
        return _wrap_out(func(x, wv, bv, groups=groups, **opts), 0, level)
    # batched weight: [B, O, C/g, k...] -> [B*O, C/g, k...]; input [B, N, C, ...] -> [N, B*C, ...]
    w = _expand_front(wv, wb, level)
    x = _expand_front(xv, xb, level)
    unbatched_input = x.dim() - 1 == nd + 1
    if unbatched_input:
        x = x.unsqueeze(1)
    x = x.movedim(0, 1).flatten(1, 2)  # [N, B*C, ...]
    out = func(x, w.flatten(0, 1), None, groups=groups * n, **opts)  # [N, B*O, ...]
    out = out.unflatten(1, (n, w.shape[1])).movedim(1, 0)  # [B, N, O, ...]
    if bv is not None:
        bias = _expand_front(bv, bb, level)  # [B, O]
        out = out + bias[(slice(None), None, slice(None)) + (None,) * nd]
    if unbatched_input:
        out = out.squeeze(1)
    return _wrap_out(out, 0, level)


def _fold_n_rule(spatial):
    """Pooling and friends on (N, C, *spatial) or (C, *spatial): the batch folded into N."""
    def rule(func, args, kwargs, level):
        value, bdim = unwrap(args[0], level)
        if any(type(v) is BatchedTensor and v._level == level for v in list(args[1:]) + list(kwargs.values())):
            return _fallback(func, args, kwargs, level)
        x = _front(value, bdim)
        n = x.shape[0]
        if x.dim() - 1 == (spatial if spatial is not None else 1) + 2:
            out = func(x.flatten(0, 1), *args[1:], **kwargs)
            fold = lambda o: o.unflatten(0, (n, x.shape[1]))  # noqa: E731
        else:
            out = func(x, *args[1:], **kwargs)
            fold = lambda o: o  # noqa: E731
        if isinstance(out, tuple):
            return tuple(_wrap_out(fold(o), 0, level) for o in out)
        return _wrap_out(fold(out), 0, level)
    return rule


def _unbatched_params(rule):
    """rule for a batched first argument only; a batched weight (or other tensor argument) per sample."""
    def run(func, args, kwargs, level):
        if any(type(v) is BatchedTensor and v._level == level for v in list(args[1:]) + list(kwargs.values())):
            return _fallback(func, args, kwargs, level)
        return rule(func, args, kwargs, level)
    return run


# ---- losses and normalisation ---------------------------------------------------------------------------

def _reduce_per_sample(loss, reduction, level, rank):
    """loss: [B, *sample loss shape]; the sample's 'mean' / 'sum' / 'none'."""
    if reduction == "none":
        return _wrap_out(loss, 0, level)
    flat = loss.reshape(loss.shape[0], -1)
    return _wrap_out(flat.sum(1) if reduction == "sum" else flat.mean(1), 0, level)


def _pointwise_loss_rule(func, args, kwargs, level):
    """mse_loss, l1_loss, binary_cross_entropy, ...: the elementwise loss of every sample at once
    (reduction='none'), then each sample's own reduction."""
    params = _LOSS_PARAMS.get(_name(func), ("input", "target"))
    bound = dict(zip(params, args))
    bound.update(kwargs)
    reduction = bound.pop("reduction", "mean")
    if bound.get("size_average") is not None or bound.get("reduce") is not None:
        return _fallback(func, args, kwargs, level)
    bound.pop("size_average", None)
    bound.pop("reduce", None)
    keys = [k for k, v in bound.items() if _is_tensorish(v)]
    items = {k: unwrap(bound[k], level) for k in keys}
    rank = max(_logical_rank(v, b) for v, b in items.values())
    for k, (v, b) in items.items():
        bound[k] = _expand_front(_pad_front(v, b, rank) if b is not None else v, 0 if b is not None else None, level) \
            if k in ("input", "target") else (v if b is None else _pad_front(v, b, rank))
    loss = func(**bound, reduction="none")
    if _name(func) == "kl_div" and reduction == "batchmean":
        flat = loss.reshape(loss.shape[0], -1)
        per = flat.sum(1) / (loss.shape[1] if loss.dim() > 1 else 1)
        return _wrap_out(per, 0, level)
    return _reduce_per_sample(loss, reduction, level, rank)


_LOSS_PARAMS = {
    "mse_loss": ("input", "target", "size_average", "reduce", "reduction", "weight"),
    "l1_loss": ("input", "target", "size_average", "reduce", "reduction", "weight"),
    "smooth_l1_loss": ("input", "target", "size_average", "reduce", "reduction", "beta"),
    "huber_loss": ("input", "target", "reduction", "delta", "weight"),
    "binary_cross_entropy": ("input", "target", "weight", "size_average", "reduce", "reduction"),
    "binary_cross_entropy_with_logits": ("input", "target", "weight", "size_average", "reduce", "reduction",
                                         "pos_weight"),
    "soft_margin_loss": ("input", "target", "size_average", "reduce", "reduction"),
    "kl_div": ("input", "target", "size_average", "reduce", "reduction", "log_target"),
    "poisson_nll_loss": ("input", "target", "log_input", "full", "size_average", "eps", "reduce", "reduction"),
}


def _class_loss_rule(func, args, kwargs, level):
    """cross_entropy / nll_loss: every sample's (N, C, ...) rows folded into one call with
    reduction='none'; each sample's 'mean' divides by its own total weight, as the unbatched op."""
    from ..nn import functional as F

    name = _name(func)
    params = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing")
    bound = dict(zip(params, args))
    bound.update(kwargs)
    reduction = bound.pop("reduction", "mean")
    if bound.get("size_average") is not None or bound.get("reduce") is not None:
        return _fallback(func, args, kwargs, level)
    bound.pop("size_average", None)
    bound.pop("reduce", None)
    xv, xb = unwrap(bound["input"], level)
    tv, tb = unwrap(bound["target"], level)
    weight = bound.get("weight")
    if weight is not None and unwrap(weight, level)[1] is not None:
        return _fallback(func, args, kwargs, level)
    x = _expand_front(xv, xb, level)
    t = _expand_front(tv, tb, level)
    n = x.shape[0]
    probabilities = x.shape == t.shape and t.is_floating_point()
    unbatched_sample = x.dim() - 1 == 1  # a sample is (C)
    if unbatched_sample:  # (C) per sample: the batch is the N dim
        xs, ts = x, (t if probabilities else t.reshape(n))
    else:  # (N, C, ...) per sample: fold the batch into N
        xs, ts = x.flatten(0, 1), t.flatten(0, 1)
    bound["input"], bound["target"] = xs, ts
    loss = func(**bound, reduction="none")  # per row
    if not unbatched_sample:
        loss = loss.unflatten(0, (n, x.shape[1]))
    if reduction == "none":
        return _wrap_out(loss, 0, level)
    per = loss.reshape(n, -1).sum(1)
    if reduction == "sum":
        return _wrap_out(per, 0, level)
    if probabilities:
        count = loss.reshape(n, -1).shape[1]
        return _wrap_out(per / count, 0, level)
    ignore = bound.get("ignore_index", -100)
    keep = (ts != ignore)
    if weight is not None:
        w = weight.index_select(0, ts.masked_fill(~keep, 0).reshape(-1)).reshape(ts.shape) * keep.to(weight.dtype)
    else:
        w = keep.to(loss.dtype)
    if not unbatched_sample:
        w = w.unflatten(0, (n, x.shape[1]))
    denom = w.reshape(n, -1).sum(1)
    return _wrap_out(per / denom, 0, level)


def _layer_norm_rule(func, args, kwargs, level):
    """layer_norm over the last dims: the batch moved in front; a batched weight/bias applied after."""
    names = ("input", "normalized_shape", "weight", "bias", "eps")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    xv, xb = unwrap(bound["input"], level)
    w, b = bound.get("weight"), bound.get("bias")
    wv, wb = unwrap(w, level) if w is not None else (None, None)
    bv, bbd = unwrap(b, level) if b is not None else (None, None)
    x = _expand_front(xv, xb, level)
    eps = bound.get("eps", 1e-5)
    if wb is None and bbd is None:
        return _wrap_out(func(x, bound["normalized_shape"], wv, bv, eps), 0, level)
    out = func(x, bound["normalized_shape"], None, None, eps)
    rank = out.dim() - 1
    if wv is not None:
        out = out * (wv if wb is None else _pad_front(wv, wb, rank))
    if bv is not None:
        out = out + (bv if bbd is None else _pad_front(bv, bbd, rank))
    return _wrap_out(out, 0, level)


def _batch_norm_rule(func, args, kwargs, level):
    """batch_norm without running statistics (replace_all_batch_norm_modules_): each sample's statistics,
    by folding the batch into the channels; with running statistics only in eval mode."""
    names = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    xv, xb = unwrap(bound["input"], level)
    rm, rv = bound.get("running_mean"), bound.get("running_var")
    training = bound.get("training", False)
    if (rm is not None or rv is not None) and training:
        raise RuntimeError("Batch norm got a batched tensor as input while the running_mean or running_var, which "
                           "will be updated in place, were not batched.\nIf you are using a module and do not need "
                           "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
                           "module and do not need eval mode, please see the functorch website for resources on "
                           "how to patch your module to work with vmap")
    if any(v is not None and unwrap(v, level)[1] is not None for v in (rm, rv)):
        return _fallback(func, args, kwargs, level)
    x = _expand_front(xv, xb, level)  # [B, N, C, ...]
    n = x.shape[0]
    eps = bound.get("eps", 1e-5)
    momentum = bound.get("momentum", 0.1)
    folded = x.movedim(0, 1).flatten(1, 2)  # [N, B*C, ...]
    if rm is not None:
        rm, rv = rm.repeat(n), rv.repeat(n)
    out = func(folded, rm, rv, None, None, training, momentum, eps)
    out = out.unflatten(1, (n, x.shape[2])).movedim(1, 0)  # [B, N, C, ...]
    rank = out.dim() - 1
    tail = (None,) * (rank - 2)
    w, b = bound.get("weight"), bound.get("bias")
    for p, mul in ((w, True), (b, False)):
        if p is None:
            continue
        pv, pb = unwrap(p, level)
        pv = _expand_front(pv, pb, level)  # [B, C]
        p_b = pv[(slice(None), None, slice(None)) + tail]
        out = out * p_b if mul else out + p_b
    return _wrap_out(out, 0, level)


def _embedding_rule(func, args, kwargs, level):
    names = ("input", "weight")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    iv, ib = unwrap(bound.pop("input"), level)
    wv, wb = unwrap(bound.pop("weight"), level)
    if wb is None:
        return _wrap_out(func(iv, wv, **bound), ib, level)
    if bound.get("max_norm") is not None:
        return _fallback(func, args, kwargs, level)
    from .. import arange

    w = _front(wv, wb)  # [B, V, D]
    idx = _expand_front(iv, ib, level)
    rows = arange(w.shape[0], device=w.device)[(slice(None),) + (None,) * (idx.dim() - 1)]
    return _wrap_out(w[rows, idx], 0, level)


def _dropout_rule(func, args, kwargs, level):
    """dropout-like ops: 'different': one mask per sample (the op on the whole batch); 'same': one
    mask shared by every sample."""
    mode = randomness(level)
    names = ("input", "p", "training", "inplace")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    training = bound.get("training", bound.get("train", True))
    if not training or bound.get("p", 0.5) == 0:
        value, bdim = unwrap(bound["input"], level)
        return args[0] if args else kwargs["input"]
    if mode == "error":
        _random_error()
    value, bdim = unwrap(bound["input"], level)
    if mode == "different":
        bound["input"] = value
        return _wrap_out(func(**bound), bdim, level)
    from .. import ones_like

    x = _front(value, bdim)
    mask = func(ones_like(x[0]), **{k: v for k, v in bound.items() if k not in ("input", "inplace")})
    return _wrap_out(x * mask, 0, level)


def _gather_like_rule(func, args, kwargs, level):
    """gather/scatter/scatter_add/scatter_reduce/take_along_dim(dim, index[, src]): every tensor
    argument with the batch in front (unbatched ones expanded), the dim shifted past it."""
    name = _name(func)
    self_value, self_bdim = unwrap(args[0], level)
    inplace = _is_inplace(name)
    if inplace and self_bdim is None:
        raise RuntimeError(_INPLACE_ERROR)
    rank = _logical_rank(self_value, self_bdim)
    pos = list(args[1:])
    kw = dict(kwargs)
    dim_key = 1 if name.startswith("take_along_dim") else 0
    if dim_key < len(pos):
        d = pos[dim_key]
        if d is None:
            return _fallback(func, args, kwargs, level)
        pos[dim_key] = _wrap_dim(d, rank) + 1
    elif "dim" in kw and kw["dim"] is not None:
        kw["dim"] = _wrap_dim(kw["dim"], rank) + 1
    else:
        return _fallback(func, args, kwargs, level)
    for box, keys in ((pos, range(len(pos))), (kw, list(kw))):
        for k in keys:
            v = box[k]
            if _is_tensorish(v):
                value, bdim = unwrap(v, level)
                box[k] = _expand_front(value, bdim, level)
    x = _expand_front(self_value, self_bdim, level)
    out = _call(func, (x, *pos), kw)
    if inplace:
        return args[0]
    return _wrap_out(out, 0, level)


def _index_select_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    index = args[2] if len(args) > 2 else kwargs["index"]
    iv, ib = unwrap(index, level)
    rank = _logical_rank(value, bdim)
    x = _expand_front(value, bdim, level)
    d = _wrap_dim(dim, rank) + 1
    if ib is None:
        return _wrap_out(_call(func, (x, d, iv), {}), 0, level)
    # a batched index: x_b.index_select(d, i_b) for every b, by advanced indexing with the batch
    from .. import arange

    idx = _front(iv, ib)
    if idx.dim() == 1:  # a 0-d index per sample
        idx = idx.unsqueeze(1)
    rows = arange(x.shape[0], device=x.device).unsqueeze(1)
    out = x.movedim(d, 1)[rows, idx]  # [B, k, the other dims]
    return _wrap_out(out.movedim(1, d), 0, level)


def _trace_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    if _logical_rank(value, bdim) != 2:
        return _fallback(func, args, kwargs, level)
    x = _front(value, bdim)
    return _wrap_out(x.diagonal(0, 1, 2).sum(-1), 0, level)


def _diag_rule(func, args, kwargs, level):
    value, bdim = unwrap(args[0], level)
    offset = args[1] if len(args) > 1 else kwargs.get("diagonal", 0)
    x = _front(value, bdim)
    rank = _logical_rank(value, bdim)
    if rank == 1:
        return _wrap_out(x.diag_embed(offset), 0, level)
    if rank == 2:
        return _wrap_out(x.diagonal(offset, 1, 2), 0, level)
    return _fallback(func, args, kwargs, level)


def _random_inplace_rule(func, args, kwargs, level):
    """x.normal_() / uniform_() / bernoulli_(p) / ...: "different": one draw per element of the whole
    batch; "same": one sample's draw, copied to every sample."""
    value, bdim = unwrap(args[0], level)
    if bdim is None:
        return _fallback(func, args, kwargs, level)
    mode = randomness(level)
    if mode == "error":
        _random_error()
    rest = tuple(unwrap(a, level)[0] if type(a) is BatchedTensor and a._level == level else a for a in args[1:])
    if any(type(a) is BatchedTensor and a._level == level for a in args[1:]) or mode == "different":
        if mode == "same":
            return _fallback(func, args, kwargs, level)
        rest = tuple(_pad_front(*unwrap(a, level), _logical_rank(value, bdim)).movedim(0, bdim)
                     if type(a) is BatchedTensor and a._level == level else a for a in args[1:])
        _call(func, (value, *rest), kwargs)
        return args[0]
    x = _front(value, bdim)
    one = x[0].clone()
    _call(func, (one, *rest), kwargs)
    x.copy_(one.expand_as(x))
    return args[0]


def _bernoulli_rule(func, args, kwargs, level):
    """bernoulli(p): "different": one draw per element of the batch; "same" with a batched p is refused,
    as torch refuses it."""
    value, bdim = unwrap(args[0], level)
    mode = randomness(level)
    if mode == "error":
        _random_error()
    if mode == "same":
        raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. Please "
                           "file an issue with functorch")
    return _wrap_out(_call(func, (value,) + tuple(args[1:]), kwargs), bdim, level)


# ---- indexing ------------------------------------------------------------------------------------------------

def _index_parts(index):
    return index if isinstance(index, tuple) else (index,)


def _getitem_rule(func, args, kwargs, level):
    """x[index]: basic indexing with the batch in front; tensor indices (batched or not) as advanced
    indexing with an arange over the batch."""
    value, bdim = unwrap(args[0], level)
    index = args[1]
    parts = _index_parts(index)
    x = _expand_front(value, bdim, level)
    has_tensor = any(_is_tensorish(p) or isinstance(p, (list,)) for p in parts)
    if not has_tensor:
        return _wrap_out(x[(slice(None),) + parts], 0, level)
    return _wrap_out(_advanced_index(x, parts, level), 0, level)


def _advanced_index(x, parts, level):
    """x (batch first): x_b[parts] for every b, with the batch first in the result."""
    from .. import arange, tensor

    rank = x.dim() - 1
    n = x.shape[0]
    # expand Ellipsis
    count = sum(1 for p in parts if p is not None and p is not Ellipsis and not (isinstance(p, bool))
                and not (_is_tensorish(p) and p.dtype == _C.bool))
    count += sum(_logical_rank(*unwrap(p, level)) for p in parts if _is_tensorish(p) and p.dtype == _C.bool)
    if Ellipsis in [p for p in parts if not _is_tensorish(p) and not isinstance(p, list)]:
        i = next(k for k, p in enumerate(parts) if p is Ellipsis and not _is_tensorish(p))
        parts = parts[:i] + (slice(None),) * (rank - count) + parts[i + 1:]
    # bool masks -> the index tensors of their True elements (unbatched masks only)
    new = []
    for p in parts:
        if _is_tensorish(p) and p.dtype == _C.bool:
            v, b = unwrap(p, level)
            if b is not None:
                raise RuntimeError("vmap: indexing with a batched boolean mask is data-dependent and is not supported")
            new.extend(v.nonzero().unbind(1))
        elif isinstance(p, list):
            new.append(tensor(p))
        else:
            new.append(p)
    parts = new
    # None entries: insert unit dims first, with basic indexing
    if any(p is None for p in parts):
        basic = []
        rest = []
        for p in parts:
            if p is None:
                basic.append(None)
            else:
                basic.append(slice(None))
                rest.append(p)
        x = x[(slice(None),) + tuple(basic)]
        parts = [slice(None) if p is None else p for p in parts]
        parts = [(slice(None) if p is None else p) for p in parts]
        # the inserted dims are kept by slices in the next step
    adv = [i for i, p in enumerate(parts) if _is_tensorish(p) or isinstance(p, int)]
    tensor_pos = [i for i, p in enumerate(parts) if _is_tensorish(p)]
    # ints among tensors act as 0-d index tensors; elsewhere they are basic (select)
    adjacent = tensor_pos == list(range(tensor_pos[0], tensor_pos[-1] + 1)) if tensor_pos else True
    idx = []
    out_rank = 0
    for p in parts:
        if _is_tensorish(p):
            v, b = unwrap(p, level)
            idx.append(_expand_front(v, b, level) if b is not None else v.unsqueeze(0))
            out_rank = max(out_rank, idx[-1].dim() - 1)
        else:
            idx.append(p)
    arange_b = arange(n, device=x.device)
    full = [arange_b[(slice(None),) + (None,) * out_rank]]
    for p in idx:
        if _is_tensorish(p):
            full.append(_pad_front(p, 0, out_rank))
        else:
            full.append(p)
    out = x[tuple(full)]  # advanced dims (batch first) first, then the sliced dims
    if adjacent and tensor_pos:
        # the sample's result puts the advanced dims where the first tensor index was
        before = sum(1 for p in parts[:tensor_pos[0]] if isinstance(p, slice))
        if before:
            out = out.movedim(tuple(range(1, 1 + out_rank)), tuple(range(1 + before, 1 + before + out_rank)))
    return out


def _setitem_rule(func, args, kwargs, level):
    self_, index, src = args[0], args[1], args[2]
    value, bdim = unwrap(self_, level)
    sv, sb = unwrap(src, level) if _is_tensorish(src) else (src, None)
    parts = _index_parts(index)
    index_batched = any(type(p) is BatchedTensor and p._level == level for p in parts)
    if bdim is None:
        if sb is not None or index_batched:
            raise RuntimeError(_INPLACE_ERROR)
        value[index] = sv
        return None
    x = _front(value, bdim)
    if not index_batched and not any(_is_tensorish(p) or isinstance(p, list) for p in parts):
        target = x[(slice(None),) + parts]
        if sb is not None:
            sv = _pad_front(sv, sb, target.dim() - 1)
        x[(slice(None),) + parts] = sv
        return None
    return _fallback(func, args, kwargs, level)


# ---- the table ----------------------------------------------------------------------------------------------

_RANDOM = set("""rand_like randn_like randint_like bernoulli bernoulli_ normal_ uniform_ random_ exponential_
geometric_ cauchy_ log_normal_ multinomial dropout dropout1d dropout2d dropout3d alpha_dropout feature_alpha_dropout
rrelu rrelu_ gumbel_softmax""".split())

_F_POINTWISE = """relu relu6 leaky_relu gelu silu elu selu celu softplus softsign hardtanh hardsigmoid hardswish
mish tanhshrink softshrink hardshrink logsigmoid sigmoid tanh threshold relu_ elu_ leaky_relu_ hardtanh_ celu_
selu_ threshold_""".split()

# pointwise methods and functions outside the op table's pointwise families
_MORE_POINTWISE = """clamp clip clamp_min clamp_max clamp_ clip_ clamp_min_ clamp_max_ where masked_fill masked_fill_
lerp lerp_ addcmul addcmul_ addcdiv addcdiv_ hypot xlogy logit fmax fmin fmod fmod_ copysign heaviside nan_to_num
nan_to_num_ frac frac_ exp2 sinc deg2rad rad2deg logaddexp logaddexp2 float_power true_divide multiply divide
subtract rsub negative positive absolute sign_ sign signbit isclose isneginf isposinf isreal erfc_ float_power_
exp_ log_ sqrt_ neg_ abs_ sigmoid_ tanh_ relu_ mul_ add_ sub_ div_ pow_ copy_ fill_ zero_ sgn lgamma mvlgamma
polygamma i0 xlogy_ ldexp gcd lcm bitwise_left_shift bitwise_right_shift __lshift__ __rshift__ __rlshift__
__rrshift__ logical_and_ logical_or_ square_ rsqrt_ reciprocal_ floor_ ceil_ round_ trunc_ sin_ cos_ remainder_
maximum minimum __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__
__rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __neg__ __abs__
__invert__ __pos__ __lt__ __le__ __gt__ __ge__ __eq__ __ne__ __iadd__ __isub__ __imul__ __itruediv__
__ifloordiv__ __imod__ __ipow__ __iand__ __ior__ __ixor__ div_ floor_divide_ erfinv_ expm1_ log1p_ atan2_
log10 angle conj_physical arccos arccosh arcsin arcsinh arctan arctan2 arctanh fix negative not_equal greater
greater_equal less less_equal polygamma mvlgamma""".split()

_SAME_SHAPE = """clone contiguous detach detach_ float double half bfloat16 long int short bool byte char to type
type_as cpu cuda requires_grad_ conj resolve_conj resolve_neg retain_grad pin_memory""".split()

# ops on the last dims that take any number of leading batch dims (linalg)
_LEADING_BATCH = """det inverse logdet slogdet matrix_exp matrix_power pinverse cholesky cholesky_inverse svd lu
triangular_solve""".split()

_TRAILING = """tril triu tril_ triu_ pad pixel_shuffle pixel_unshuffle fft rms_norm local_response_norm""".split()

_POOLS = {**{f"{k}_pool{d}d": d for k in ("max", "avg", "adaptive_avg", "adaptive_max", "lp") for d in (1, 2, 3)},
          "interpolate": None, "upsample": None, "channel_shuffle": None}


def _rules():
    global _RULES
    if _RULES is not None:
        return _RULES
    import ferrograd
    from ..nn import functional as F

    T = _C.Tensor
    rules = {}

    def add(name, rule, where=("T", "fg", "F")):
        for w in where:
            mod = {"T": T, "fg": ferrograd, "F": F, "L": ferrograd.linalg}[w]
            f = getattr(mod, name, None) if (w != "T" or name in dir(T)) else None
            if f is not None and callable(f):
                rules.setdefault(f, rule)
                if w in ("F", "L"):  # (the module a wrapped body says it is from)
                    _BY_NAME.setdefault((mod.__name__, name), rule)

    pointwise_families = {"float_unary", "num_unary", "unary", "predicate", "logical_unary", "binary",
                          "float_binary", "comparison", "logical"}
    for row in _C.op_table():
        if row["family"] in pointwise_families:
            names = [row["name"], *row["aliases"]]
            if row["inplace"]:
                names.append(row["inplace"])
            for n in names:
                add(n, _elementwise, ("T", "fg"))
        elif row["family"] == "reduction":
            for n in [row["name"], *row["aliases"]]:
                if n in _DIM_SPECS:
                    add(n, _dims_rule, ("T", "fg"))
    for n in _F_POINTWISE:
        add(n, _elementwise, ("F",))
    for n in _MORE_POINTWISE:
        add(n, _elementwise, ("T", "fg"))
    for n in _DIM_SPECS:
        add(n, _dims_rule, ("T", "fg"))
    for n in ("normalize", "softmin", "glu", "softmax", "log_softmax"):
        add(n, _dims_rule, ("F",))
    for n in _SAME_SHAPE:
        add(n, _same_shape_rule, ("T", "fg"))
    for n in ("view", "reshape"):
        add(n, _view_rule, ("T", "fg"))
    add("permute", _permute_rule, ("T", "fg"))
    add("expand", _expand_rule, ("T",))
    add("broadcast_to", _expand_rule, ("T", "fg"))
    add("repeat", _repeat_rule, ("T",))
    add("t", _squeeze_like_t, ("T", "fg"))
    for n in ("view_as", "reshape_as", "expand_as"):
        add(n, _as_rule, ("T",))
    for n in ("T", "mT", "H", "mH"):
        rules[getattr(T, n)] = _matrix_transpose
    for n in _TRAILING:
        add(n, _trailing_rule)
    for n in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
        add(n, _new_factory_rule, ("T",))
    for n in ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"):
        add(n, _like_rule, ("fg",))
    for n in ("cat", "concat", "concatenate", "stack"):
        add(n, _cat_rule, ("fg",))
    for n in ("matmul", "mm", "bmm", "mv", "dot", "inner", "outer", "ger", "__matmul__", "__rmatmul__"):
        add(n, _matmul_rule, ("T", "fg"))
    add("addmm", _addmm_rule, ("T", "fg"))
    add("linear", _linear_rule, ("F",))
    for n in ("conv1d", "conv2d", "conv3d"):
        add(n, _conv_rule, ("F",))
    for n, d in _POOLS.items():
        if d is not None:
            add(n, _fold_n_rule(d), ("F",))
    for d in (1, 2, 3):
        add(f"conv_transpose{d}d", _unbatched_params(_fold_n_rule(d)), ("F",))
    for n in _LOSS_PARAMS:
        add(n, _pointwise_loss_rule, ("F",))
    for n in ("cross_entropy", "nll_loss"):
        add(n, _class_loss_rule, ("F",))
    add("layer_norm", _layer_norm_rule, ("F",))
    add("batch_norm", _batch_norm_rule, ("F",))
    add("embedding", _embedding_rule, ("F",))
    for n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        add(n, _dropout_rule, ("F",))
    for n in ("gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
              "take_along_dim"):
        add(n, _gather_like_rule, ("T", "fg"))
    add("index_select", _index_select_rule, ("T", "fg"))
    add("trace", _trace_rule, ("T", "fg"))
    add("diag", _diag_rule, ("T", "fg"))
    for n in _LEADING_BATCH:
        add(n, _trailing_rule, ("T", "fg"))
    # the in-place form of every pointwise op (x.arcsin_(), x.hypot_(y), ...)
    for f, rule in list(rules.items()):
        if rule is _elementwise:
            n = _name(f)
            if not n.startswith("_") and not n.endswith("_"):
                add(n + "_", _elementwise, ("T",))
    for n in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        add(n, _stack_family_rule, ("fg",))
    for n in ("cdist",):
        add(n, _expand_all_rule, ("fg",))
    for n in ("solve", "solve_triangular", "cross", "vecdot"):
        add(n, _expand_all_rule, ("L",)) if n != "cross" else None
    for n in _LEADING_BATCH + ["inv", "eigh", "eigvalsh", "svdvals", "qr", "pinv", "cholesky_ex", "inv_ex",
                               "matrix_rank", "eigvals", "eig"]:
        add(n, _unbatched_params(_trailing_rule), ("L",))
    for n in ("vector_norm", "matrix_norm"):
        add(n, _dims_rule, ("L",))
    add("norm", _linalg_norm_rule, ("L",))
    add("pad", _pad_rule, ("F",))
    add("one_hot", _trailing_rule, ("F",))
    add("unfold", _unbatched_params(_fold_n_rule(2)), ("F",))
    add("fold", _unbatched_params(_fold_n_rule(None)), ("F",))
    for n in ("normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_",
              "log_normal_"):
        add(n, _random_inplace_rule, ("T",))
    add("bernoulli", _bernoulli_rule, ("T", "fg"))
    rules[T.__getitem__] = _getitem_rule
    rules[T.__setitem__] = _setitem_rule
    for f, rule in rules.items():
        module = getattr(f, "__module__", None)
        if isinstance(module, str) and module.startswith("ferrograd"):
            _BY_NAME.setdefault((module, _name(f)), rule)
    _RULES = rules
    return rules


def fallback_names():
    """Names of the Tensor methods that have no batching rule (run per sample); methods written in
    Python that decompose into ops with rules are not among them."""
    rules = _rules()
    out = []
    for name in dir(_C.Tensor):
        if name.startswith("_") or name in BatchedTensor.__dict__ and not hasattr(
                BatchedTensor.__dict__[name], "_dispatches"):
            continue
        f = getattr(_C.Tensor, name, None)
        if callable(f) and rule_for(f) is _fallback:
            out.append(name)
    return out
