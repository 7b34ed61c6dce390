"""Products and contractions as compositions of the engine's matmul and elementwise ops: einsum,
tensordot, kron, cross, inner, vdot, chain_matmul, the addmm family (addmm, addmv, baddbmm, addbmm,
addr), and the distances and norms cdist, dist and renorm."""

import builtins
import math
import warnings

from . import _C
from ._argcheck import tensor_args
from ._op_utils import Tensor, _broadcast_shape, _wrap_dim
from ._out import out_call
from ._out import store as _store_out
from ._shape_ops import diagonal
from ._autocast_ops import FP32, LOWER, NONE, PROMOTE, autocast_op


def _as_dims(dims):
    return [dims] if isinstance(dims, int) else list(dims)


@autocast_op(cpu=NONE, cuda=PROMOTE)
def tensordot(a, b, dims=2, out=None):
    if out is None:
        return _tensordot(a, b, dims)
    # torch's tensordot is composite: its out= is a copy recorded by autograd
    r = _tensordot(a, b, dims)
    if isinstance(out, Tensor) and out.requires_grad and _C.is_grad_enabled() and tuple(out.shape) != tuple(r.shape):
        raise RuntimeError("tensordot(): the 'out' tensor was specified and requires gradients, and its shape does "
                           "not match the expected result. Either remove the 'out' argument, ensure it does not "
                           "require gradients, or make sure its shape matches the expected output.")
    if not isinstance(out, Tensor):
        raise TypeError(f"tensordot(): argument 'out' must be Tensor, not {type(out).__name__}")
    return _store_out(r, out, track=True, dtype="tensordot: Expected the output tensor to have dtype {r}, but got "
                                                 "an output tensor with dtype {o}")


def _tensordot(a, b, dims):
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    elif isinstance(dims, Tensor):
        return _tensordot(a, b, dims.tolist())
    else:
        da, db = _as_dims(dims[0]), _as_dims(dims[1])
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [_wrap_dim(x, a.dim()) for x in da]
    db = [_wrap_dim(x, b.dim()) for x in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
    ka = [i for i in range(a.dim()) if i not in da]
    kb = [j for j in range(b.dim()) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    am = a.permute(ka + da).reshape(math.prod(a.shape[i] for i in ka), k)
    bm = b.permute(db + kb).reshape(k, math.prod(b.shape[j] for j in kb))
    return am.mm(bm).reshape((*[a.shape[i] for i in ka], *[b.shape[j] for j in kb]))


@tensor_args("input", "other")
def kron(input, other):
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    va, vb = [], []
    for i in range(nd):
        va += [a.shape[i], 1]
        vb += [1, b.shape[i]]
    return (a.reshape(va) * b.reshape(vb)).reshape([a.shape[i] * b.shape[i] for i in range(nd)])


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "other")
def cross(input, other, dim=None):
    shape = _broadcast_shape(tuple(input.shape), tuple(other.shape))
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.", UserWarning, stacklevel=2)
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim, shape)


def _cross(input, other, dim, shape):
    d = _wrap_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d] if input.dim() > d else 1} "
                           f"and {other.shape[d] if other.dim() > d else 1}")
    a, b = input.expand(shape), other.expand(shape)
    a0, a1, a2 = (a.narrow(d, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(d, i, 1) for i in range(3))
    return _C.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _check_einsum_subscripts(eq):
    """torch's error for a character that is no subscript (letters, and the ',', ' ', '...' and
    '->' around them), at its index in the equation as written."""
    i = 0
    while i < len(eq):
        c = eq[i]
        if c == "-" and eq[i + 1:i + 2] == ">":
            i += 2
            continue
        if not ((c.isascii() and c.isalpha()) or c in " ,."):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        i += 1


def _parse_einsum(eq, operands):
    _check_einsum_subscripts(eq)
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
        explicit = True
    else:
        lhs, out, explicit = eq, None, False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    ell_nd = 0
    parsed = []
    for t, x in zip(terms, operands):
        if "..." in t:
            pre, post = t.split("...")
            k = x.dim() - len(pre) - len(post)
            if k < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(pre) + len(post)}) "
                                   f"is more than the number of dimensions ({x.dim()}) for operand")
            ell_nd = builtins.max(ell_nd, k)
            parsed.append((list(pre), k, list(post)))
        else:
            if len(t) != x.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match "
                                   f"the number of dimensions ({x.dim()}) for operand and no ellipsis was given")
            parsed.append((list(t), None, []))
    ell = [f"\x00{i}" for i in range(ell_nd)]
    labels = []
    for pre, k, post in parsed:
        labs = pre + (ell[ell_nd - k:] if k is not None else []) + post
        labels.append(labs)
    if explicit:
        if "..." in out:
            pre, post = out.split("...")
            out_labels = list(pre) + ell + list(post)
        else:
            out_labels = list(out)
    else:
        counts = {}
        for labs in labels:
            for c in labs:
                counts[c] = counts.get(c, 0) + 1
        out_labels = ell + sorted(c for c, n in counts.items() if n == 1 and not c.startswith("\x00"))
    return labels, out_labels


def _einsum_prep(x, labs, keep):
    """Take diagonals of repeated labels and sum labels not in `keep`."""
    labs = list(labs)
    while True:
        dup = next((c for c in labs if labs.count(c) > 1), None)
        if dup is None:
            break
        i = labs.index(dup)
        j = labs.index(dup, i + 1)
        x = diagonal(x, 0, i, j)  # the diagonal goes last
        labs = [c for k, c in enumerate(labs) if k not in (i, j)] + [dup]
    drop = [k for k, c in enumerate(labs) if c not in keep]
    if drop:
        x = x.sum(drop)
        labs = [c for c in labs if c in keep]
    return x, labs


# einsum's common case, two operands contracted by one bmm: the plan of the general path's ops
# (below) for an equation and two shapes, made once. Its ops without those that leave the values
# as they are (permutes by the identity, expands to the same shape, sums over no label).
_EINSUM_PLANS = {}


def _einsum2_plan(eq, xs, ys):
    """(x's permutation or None, x as (batch, m, k), y's permutation or None, y as (batch, k, n),
    the product's shape, its permutation to the output or None) for x (shape xs) and y (shape ys),
    as einsum's general path computes them; None where that path does more (an ellipsis, a label
    repeated in an operand, a label summed in one operand only, sizes that broadcast) or raises."""
    eq = eq.replace(" ", "")
    if "." in eq or eq.count("->") > 1:
        return None
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    xl, yl = terms
    if len(xl) != len(xs) or len(yl) != len(ys) or len(set(xl)) != len(xl) or len(set(yl)) != len(yl):
        return None
    labels = xl + yl + out
    if labels and not (labels.isascii() and labels.isalpha()):
        return None
    if arrow:
        out_labels = list(out)
        if len(set(out)) != len(out) or any(c not in xl and c not in yl for c in out):
            return None
    else:
        out_labels = sorted(c for c in set(xl + yl) if (xl + yl).count(c) == 1)
    size = dict(zip(xl, xs))
    for c, n in zip(yl, ys):
        if size.setdefault(c, n) != n:
            return None
    keep = set(out_labels)
    if any(c not in keep for c in xl if c not in yl) or any(c not in keep for c in yl if c not in xl):
        return None
    batch = [c for c in xl if c in yl and c in keep]
    contr = [c for c in xl if c in yl and c not in keep]
    xo = [c for c in xl if c not in yl]
    yo = [c for c in yl if c not in xl]

    def perm(labs, order):
        p = [labs.index(c) for c in order]
        return None if p == sorted(p) else p

    prod = math.prod
    nb, m, k, n = prod(size[c] for c in batch), prod(size[c] for c in xo), prod(size[c] for c in contr), \
        prod(size[c] for c in yo)
    labs = batch + xo + yo
    return (perm(xl, batch + xo + contr), (nb, m, k), perm(yl, batch + contr + yo), (nb, k, n),
            tuple(size[c] for c in labs), perm(labs, out_labels))


@autocast_op(cpu=NONE, cuda=LOWER)
def einsum(*args):
    if len(args) == 3 and isinstance(args[1], Tensor) and isinstance(args[2], Tensor) and type(args[0]) is str:
        eq, x, y = args
        key = (eq, x.shape, y.shape)
        plan = _EINSUM_PLANS.get(key, False)
        if plan is False:
            if len(_EINSUM_PLANS) >= 1024:
                _EINSUM_PLANS.clear()
            plan = _EINSUM_PLANS[key] = _einsum2_plan(eq, x.shape, y.shape)
        if plan is not None:
            xperm, x3, yperm, y3, shape, operm = plan
            if xperm is not None:
                x = x.permute(xperm)
            if yperm is not None:
                y = y.permute(yperm)
            r = x.reshape(x3).bmm(y.reshape(y3)).reshape(shape)
            return r if operm is None else r.permute(operm)
    return _einsum(*args)


def _einsum(*args):
    if len(args) < 1 or not isinstance(args[0], str):
        raise TypeError("einsum(): argument 'equation' must be str")
    eq, ops = args[0], args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    labels, out_labels = _parse_einsum(eq, ops)
    sizes = {}
    for x, labs in zip(ops, labels):
        for c, s in zip(labs, x.shape):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped)")
            sizes[c] = builtins.max(sizes.get(c, 1), s) if c in sizes else s
    terms = list(zip(ops, labels))
    x, labs = terms[0]
    rest = [l for _, l in terms[1:]]
    x, labs = _einsum_prep(x, labs, set(out_labels).union(*rest) if rest else set(out_labels))
    for k in range(1, len(terms)):
        y, ylabs = terms[k]
        later = set(out_labels).union(*[l for _, l in terms[k + 1:]]) if k + 1 < len(terms) else set(out_labels)
        y, ylabs = _einsum_prep(y, ylabs, later | set(labs))
        x, labs = _contract(x, labs, y, ylabs, later)
    # labels summed after the last contraction (single operand)
    x, labs = _einsum_prep(x, labs, set(out_labels))
    for c in out_labels:
        if c not in labs:  # an ellipsis dim absent from every operand
            x = x.unsqueeze(-1)
            labs.append(c)
    x = x.permute([labs.index(c) for c in out_labels]) if labs else x
    return x


def _contract(x, xl, y, yl, keep):
    """x (labels xl) times y (labels yl), summing the shared labels not in keep: via bmm."""
    batch = [c for c in xl if c in yl and c in keep]
    contr = [c for c in xl if c in yl and c not in keep]
    xo = [c for c in xl if c not in yl]
    yo = [c for c in yl if c not in xl]
    # labels of one side that are not kept are summed first
    if [c for c in xo if c not in keep] or [c for c in yo if c not in keep]:
        x, xl = _einsum_prep(x, xl, keep | set(yl))
        y, yl = _einsum_prep(y, yl, keep | set(xl))
        return _contract(x, xl, y, yl, keep)
    size = {}
    for c, s in list(zip(xl, x.shape)) + list(zip(yl, y.shape)):
        size[c] = s if size.get(c, 1) == 1 else size[c]  # a size 1 broadcasts (to 0 too)
    xp = x.permute([xl.index(c) for c in batch + xo + contr]) if xl else x
    yp = y.permute([yl.index(c) for c in batch + contr + yo]) if yl else y
    xp = xp.expand((*[size[c] for c in batch], *[size[c] for c in xo], *xp.shape[len(batch) + len(xo):])) \
        if batch else xp
    yp = yp.expand((*[size[c] for c in batch], *yp.shape[len(batch):])) if batch else yp
    # a contracted label of size 1 on one side broadcasts: expand both to the common size
    xp = xp.expand((*xp.shape[:len(batch) + len(xo)], *[size[c] for c in contr]))
    yp = yp.expand((*yp.shape[:len(batch)], *[size[c] for c in contr], *yp.shape[len(batch) + len(contr):]))
    nb = math.prod(size[c] for c in batch)
    m = math.prod(xp.shape[len(batch) + i] for i in range(len(xo)))
    kk = math.prod(size[c] for c in contr)
    n = math.prod(yp.shape[len(batch) + len(contr) + i] for i in range(len(yo)))
    r = xp.reshape(nb, m, kk).bmm(yp.reshape(nb, kk, n))
    r = r.reshape((*[size[c] for c in batch], *xp.shape[len(batch):len(batch) + len(xo)],
                  *yp.shape[len(batch) + len(contr):]))
    return r, batch + xo + yo


def _addmm_like(input, prod, beta, alpha):
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:  # input is ignored (its NaNs too), as in torch; its gradient is zeros, not None
        return p - input.masked_fill(_C.full((), True, dtype=_C.bool, device=input.device), 0) \
            if input.requires_grad else p
    return (input if beta == 1 else input * beta) + p


@autocast_op(cpu=LOWER, cuda=LOWER)
@tensor_args("input", "mat1", "mat2")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'mat1' if mat1.dim() != 2 else 'mat2'} must be a matrix, got "
                           f"{(mat1 if mat1.dim() != 2 else mat2).dim()}-D tensor")
    out = _C._addmm(input, mat1, mat2, beta, alpha)  # one AddmmBackward0 node, as torch's
    return out if out is not None else _addmm_like(input, mat1.mm(mat2), beta, alpha)


@autocast_op(cpu=NONE, cuda=LOWER)
@tensor_args("input", "mat", "vec")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _addmm_like(input, mat.mv(vec), beta, alpha)


@autocast_op(cpu=LOWER, cuda=LOWER)
@tensor_args("input", "batch1", "batch2")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm_like(input, batch1.bmm(batch2), beta, alpha)


@autocast_op(cpu=LOWER, cuda=LOWER)
@tensor_args("input", "batch1", "batch2")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm_like(input, batch1.bmm(batch2).sum(0), beta, alpha)


@autocast_op(cpu=NONE, cuda=LOWER)
@tensor_args("input", "vec1", "vec2")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _addmm_like(input, vec1.outer(vec2), beta, alpha)


@autocast_op(cpu=FP32, cuda=FP32)
@tensor_args("x1", "x2")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2} got: "
                           f"{(x1 if x1.dim() < 2 else x2).dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


@tensor_args("input", "other")
def inner(input, other):
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([input.dim() - 1], [other.dim() - 1]))


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "other")
def vdot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return input.dot(other)


@autocast_op(cpu=NONE, cuda=FP32)
@tensor_args("input", "other")
def dist(input, other, p=2):
    return (input - other).norm(p=float(p))


@autocast_op(cpu=NONE, cuda=FP32)
@tensor_args("input")
def renorm(input, p, dim, maxnorm):
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not input.is_floating_point():
        from .linalg import _word  # (torch's renorm is its vector_norm's message)
        raise NotImplementedError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                  f"Got {_word(input.dtype)}")
    d = _wrap_dim(dim, input.dim())
    others = [k for k in range(input.dim()) if k != d]
    norm = input.norm(p=float(p), dim=others, keepdim=True) if others else input.abs()
    # torch's factor maxnorm / (norm + 1e-7) where the norm is above maxnorm; its backward (renorm_backward)
    # differentiates through the factor, as this composition does
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), _C.ones((), dtype=input.dtype, device=input.device))
    return input * factor


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))  # (renorm's backward reads the old values)


@autocast_op(cpu=NONE, cuda=LOWER)
def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                  "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                  "than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:  # (torch: a copy, recorded by autograd, castable into out)
        return out_call("chain_matmul", matrices[0].clone, out, grad=False, track=True, dtype="cast")
    from .linalg import multi_dot
    return multi_dot(list(matrices), out=out)


# ------------------------------------------------------------------ exports
__all__ = """
tensordot kron cross einsum addmm addmv baddbmm addbmm addr cdist inner vdot dist renorm chain_matmul
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
kron cross addmm addmv baddbmm addbmm addr inner vdot dist renorm renorm_
""".split()
TENSOR_ATTRIBUTES = {}
