"""Shape and layout ops as compositions of the engine's views and copies: broadcasting
(broadcast_tensors, broadcast_shapes), atleast_*d, stacking and splitting (hstack/vstack/dstack,
column_stack, tensor_split, hsplit/vsplit/dsplit, split_with_sizes, unsafe_*), moveaxis, unflatten,
ravel, the triangle/diagonal family (tril, triu, diag, diag_embed, diagflat, diagonal), roll, tile,
repeat_interleave, meshgrid, rot90, flips, block_diag, cartesian_prod, combinations, and the in-place
metadata changes (squeeze_, unsqueeze_, t_, transpose_, swapaxes_, resize_, resize_as_), and the deprecated
out-of-place resize / resize_as."""

import builtins
import itertools
import math
import warnings

from ._lazy import numpy as np

from . import _C
from .overrides import overridable
from ._argcheck import check_arg, tensor_args
from ._inplace_methods import _LEAF_MSG
from ._op_utils import Tensor, _arange, _host, _index_from_host, _result_dtype, _wrap_dim, _zeros
from ._size import Size


def _tensors(tensors, fname):
    """The tensors of a call f(t1, t2, ...) or f([t1, t2, ...])."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                            f"but found element of type {type(t).__name__} at pos {i}")
    return tensors


def broadcast_tensors(*tensors):
    tensors = _tensors(tensors, "broadcast_tensors")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.broadcast_to(shape) for t in tensors)


def broadcast_shapes(*shapes):
    out = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for i, n in enumerate(reversed(s)):
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
            if i == len(out):
                out.append(n)
            elif out[i] == 1:
                out[i] = n
            elif n != 1 and n != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  "
                                   f"Mismatch is at dim {i} with size {n} and {out[i]}")
    return Size(reversed(out))


def _atleast(tensors, n, fname, fix):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    tensors = _tensors(tensors, fname)
    out = tuple(fix(t) if t.dim() < n else t for t in tensors)
    return out[0] if single else out


def atleast_1d(*tensors):
    return _atleast(tensors, 1, "atleast_1d", lambda t: t.reshape(1))


def atleast_2d(*tensors):
    return _atleast(tensors, 2, "atleast_2d", lambda t: t.reshape(1, -1) if t.dim() else t.reshape(1, 1))


def _to_3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1, 1)
    return t.unsqueeze(-1)


def atleast_3d(*tensors):
    return _atleast(tensors, 3, "atleast_3d", _to_3d)


def _stack_args(tensors, fname):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = _tensors(tuple(tensors), fname)
    if not tensors:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return tensors


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def hstack(tensors):
    ts = [atleast_1d(t) for t in _stack_args(tensors, "hstack")]
    return _C.cat(ts, 0 if ts[0].dim() == 1 else 1)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def vstack(tensors):
    return _C.cat([atleast_2d(t) for t in _stack_args(tensors, "vstack")], 0)


def row_stack(tensors):
    return vstack(tensors)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def dstack(tensors):
    return _C.cat([atleast_3d(t) for t in _stack_args(tensors, "dstack")], 2)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def column_stack(tensors):
    ts = _stack_args(tensors, "column_stack")
    return _C.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in ts], 1)


def _split_at(input, bounds, d):
    """Views of input between consecutive bounds along d (bounds clamped to the size, as torch)."""
    n = input.shape[d]

    def at(v):  # a slice bound, as torch's slice reads it
        return builtins.min(builtins.max(v + n if v < 0 else v, 0), n)

    out, start = [], 0
    for b in list(bounds) + [n]:
        s = at(start)
        e = builtins.max(at(b), s)
        out.append(input.narrow(d, s, e - s))
        start = b
    return tuple(out)


@tensor_args("input")
def tensor_split(input, indices_or_sections, dim=0):
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.dim())
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.dim()} dims")
        if ios.dtype != _C.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, "
                               f"but got {str(ios.dtype).replace('ferrograd.', 'torch.')}")
        ios = int(ios.item()) if ios.dim() == 0 else [int(v) for v in ios.tolist()]
    if isinstance(ios, int) and not isinstance(ios, bool):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        n = input.shape[d]
        q, r = divmod(n, ios)
        bounds = list(itertools.accumulate([q + 1] * r + [q] * (ios - r)))[:-1]
        return _split_at(input, bounds, d)
    ios = check_arg("int[]", ios, "tensor_split", "indices", 2)
    return _split_at(input, ios, d)


def _split_dir(input, ios, dim, fname, min_dims):
    if not isinstance(input, Tensor):
        check_arg("Tensor", input, fname, "input", 1)
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{fname} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(ios, int) and not isinstance(ios, bool):
        n = input.shape[dim]
        if ios != 0 and n % ios != 0 or ios == 0:
            raise RuntimeError(f"torch.{fname} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {n} is not divisible by the split_size {ios}!")
    return tensor_split(input, ios, dim)


def hsplit(input, indices_or_sections):
    d = 0 if isinstance(input, Tensor) and input.dim() == 1 else 1
    return _split_dir(input, indices_or_sections, d, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, 2, "dsplit", 3)


@tensor_args("input")
def moveaxis(input, source, destination):
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError(f"moveaxis() received an invalid combination of arguments - got ({type(source).__name__}, "
                        f"{type(destination).__name__}), but expected one of:\n * (int source, int destination)\n"
                        " * (tuple of ints source, tuple of ints destination)\n")
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    nd = input.dim()
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(s, nd) for s in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return input.reshape(())
    order = [None] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(k for k in range(nd) if k not in src)
    order = [o if o is not None else next(rest) for o in order]
    return input.permute(*order) if nd else input.reshape(())


@tensor_args("input")
def swapdims(input, dim0, dim1):
    return input.swapaxes(dim0, dim1)


@tensor_args("input")
def unflatten(input, dim, sizes):
    d = _wrap_dim(dim, input.dim())
    sizes = list(check_arg("int[]", sizes, "unflatten", "sizes", 3))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d] if input.dim() else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                               f"({n}) in the input tensor")
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({n}) "
                           "in the input tensor")
    shape = list(input.shape)
    return input.view(shape[:d] + sizes + shape[d + 1:])


@tensor_args("input")
def diagflat(input, offset=0):
    return diag(input.reshape(-1), offset)


@tensor_args("input")
def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.zeros((0,), dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(input.shape[0]), r))
    if not idx:
        return _C.zeros((0, r), dtype=input.dtype, device=input.device)
    cols = _index_from_host(np.asarray(idx, dtype=np.int64).T.copy(), input)
    return _C.stack([input.index_select(0, cols[k]) for k in range(r)], 1)


def _tri_mask(input, diagonal, lower):
    if input.dim() < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    r, c = input.shape[-2], input.shape[-1]
    diff = _arange(c, input).reshape(1, c) - _arange(r, input).reshape(r, 1)  # col - row
    return diff <= diagonal if lower else diff >= diagonal


@tensor_args("input")
def tril(input, diagonal=0):
    return input.masked_fill(~_tri_mask(input, diagonal, True), 0)


@tensor_args("input")
def triu(input, diagonal=0):
    return input.masked_fill(~_tri_mask(input, diagonal, False), 0)


def tril_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, True), 0)


def triu_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, False), 0)


@tensor_args("input")
def diagonal(input, offset=0, dim1=0, dim2=1):
    return _C.Tensor.diagonal(input, offset, dim1, dim2)  # a view (torch.diagonal is _function_forms')


@tensor_args("input")
def diag(input, diagonal=0):
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal)
    if input.dim() != 1:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.dim()}D")
    n = input.shape[0]
    m = n + builtins.abs(diagonal)
    out = _zeros((m, m), input)
    i = _arange(n, input)
    out[i + builtins.max(-diagonal, 0), i + builtins.max(diagonal, 0)] = input
    return out


@tensor_args("input")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    n = input.shape[-1]
    m = n + builtins.abs(offset)
    out = _zeros(tuple(input.shape[:-1]) + (m, m), input)
    i = _arange(n, input)
    out[..., i + builtins.max(-offset, 0), i + builtins.max(offset, 0)] = input
    return out.movedim((-2, -1), (dim1, dim2))


@tensor_args("input")
def roll(input, shifts, dims=None):
    if isinstance(shifts, int):
        shifts = (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    if isinstance(dims, int):
        dims = (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    x = input
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    for s, dm in zip(shifts, dims):
        d = _wrap_dim(dm, x.dim())
        n = x.shape[d] if x.dim() else 1
        if n == 0 or s % n == 0:
            x = x.clone() if x is input else x
            continue
        s %= n
        x = _C.cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x


@tensor_args("input")
def tile(input, dims):
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims) if dims else input.clone()


def _tile_method(self, *dims):
    """Tensor.tile: the dims as one sequence or as varargs (`x.tile(2, 1)`), as torch's method."""
    if not dims:
        raise TypeError('tile() missing 1 required positional arguments: "dims"')
    return tile(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


def _check_repeat_total(r):
    # NumPy's repeat does not check its output size (a huge count crashes it): refuse it first
    total = builtins.sum(int(v) for v in np.asarray(r).reshape(-1)) if np.asarray(r).size < 4096 else \
        int(np.asarray(r, dtype=np.float64).sum())
    if total > 2 ** 48:
        raise RuntimeError(f"repeat_interleave: the result would have {total} elements, too many to allocate")


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # torch.repeat_interleave(repeats): the indices 0..n-1, each repeated
        r = _host(input)
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        _check_repeat_total(r)
        return _index_from_host(np.repeat(np.arange(r.size), r), input)
    if not isinstance(input, Tensor):
        raise TypeError(f"repeat_interleave(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, x.dim())
    n = x.shape[d] if x.dim() else 1
    if isinstance(repeats, Tensor):
        r = _host(repeats).reshape(-1)
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if r.size == 1:
            r = np.repeat(r, n)
        if r.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{r.size} and input.size({d}) = {n}")
    else:
        r = np.full(n, repeats)
    if (r < 0).any():
        raise RuntimeError("repeats can not be negative")
    _check_repeat_total(r)
    if x.dim() == 0:
        x = x.reshape(1)
    return x.index_select(d, _index_from_host(np.repeat(np.arange(n), r), x))


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = -1
        out.append(t.reshape(view).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@tensor_args("input")
def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap_dim(dims[0], input.dim()), _wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


@tensor_args("input")
def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


@tensor_args("input")
def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def block_diag(*tensors):
    mats = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {len(mats)} "
                               f"has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not mats:
        return _C.zeros((1, 0))
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _result_dtype(_C.zeros(1, dtype=dt), m)
    out = _C.zeros((builtins.sum(m.shape[0] for m in mats), builtins.sum(m.shape[1] for m in mats)), dtype=dt,
                   device=mats[0].device)
    r = c = 0
    for m in mats:
        h, w = m.shape
        if h and w:
            out[r:r + h, c:c + w] = m.to(dt)
        r, c = r + h, c + w
    return out


def cartesian_prod(*tensors):
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def _restride(self, new, name):
    """Give self the shape/strides of `new` (a view of self's storage) in place, bumping the version."""
    if _C.is_grad_enabled() and self.requires_grad:
        if self.is_leaf:
            raise RuntimeError(_LEAF_MSG)
        raise NotImplementedError(f"ferrograd: {name} on a tensor that requires grad is not supported yet "
                                  f"(use the out-of-place {name[:-1]})")
    # (the engine's set_data starts a fresh version counter: after this op it reads 1, not old + 1)
    self.data = new
    from .autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(self)  # an in-place write of the same values: the version counter moves as torch's does
    return self


def _shape_inplace(name):
    op = getattr(Tensor, name[:-1])

    def method(self, *args, **kwargs):
        if _C.is_grad_enabled() and self.requires_grad and not self.is_leaf:
            # torch records the op (TBackward1, ...): self becomes its result, a view of itself
            new = op(self, *args, **kwargs)
            from .autograd.grad_mode import no_grad
            with no_grad():
                self.copy_(self)  # the version counter moves, as for any in-place op
            self._assume_view(new)
            return self
        return _restride(self, op(self.detach(), *args, **kwargs), name)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{name[:-1]}`: self takes the result's shape and strides."
    return method


squeeze_ = _shape_inplace("squeeze_")
unsqueeze_ = _shape_inplace("unsqueeze_")
t_ = _shape_inplace("t_")
transpose_ = _shape_inplace("transpose_")
swapaxes_ = _shape_inplace("swapaxes_")


def resize_(self, *sizes, memory_format=None):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(sizes)
    if not (n <= self.numel() and self.is_contiguous()) and not self._storage_resizable():
        # a buffer from or handed to NumPy/DLPack stays where it is (Note [Exported storage])
        raise RuntimeError("Trying to resize storage that is not resizable")
    if n <= self.numel() and self.is_contiguous():
        new = self.detach().reshape(-1)[:n].view(sizes)  # the same storage, as torch keeps it
    else:
        flat = _C.zeros(n, dtype=self.dtype, device=self.device)
        k = builtins.min(n, self.numel())
        flat[:k] = self.detach().reshape(-1)[:k]
        new = flat.view(sizes)
    return _restride(self, new, "resize_")


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def resize(self, *sizes):
    """The deprecated out-of-place resize: a reshape that keeps the number of elements (autograd's
    Resize), with torch's warning and error."""
    import warnings

    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _legacy_resize(self, sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes)


def resize_as(self, tensor):
    """The deprecated out-of-place resize_as: resize to tensor's shape."""
    import warnings

    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _legacy_resize(self, tuple(tensor.shape))


def _legacy_resize(self, sizes):
    sizes = tuple(sizes)
    n = math.prod(sizes)
    if n != self.numel():
        shape = "x".join(str(v) for v in self.shape)
        raise RuntimeError(f"requested resize to {'x'.join(str(v) for v in sizes)} ({n} elements in total), but the "
                           f"given tensor has a size of {shape} ({self.numel()} elements). autograd's resize can only "
                           "change the shape of a given tensor, while preserving the number of elements. ")
    return self.contiguous().view(sizes)


def ravel(input):
    return input.reshape(-1)


def narrow_copy(input, dim, start, length):
    return input.narrow(dim, start, length).clone()


def split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def sum_to_size(self, *size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    out = self
    if lead:
        out = out.sum(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and out.shape[i] != 1)
    if dims:
        out = out.sum(dims, keepdim=True)
    return out


# ------------------------------------------------------------------ exports
__all__ = """
tril triu diag diag_embed roll tile repeat_interleave meshgrid rot90 fliplr flipud block_diag cartesian_prod
broadcast_tensors broadcast_shapes atleast_1d atleast_2d atleast_3d hstack vstack dstack column_stack
row_stack hsplit vsplit dsplit tensor_split moveaxis swapdims unflatten diagflat combinations ravel
narrow_copy split_with_sizes unsafe_split unsafe_split_with_sizes unsafe_chunk
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
tril triu diag diag_embed roll repeat_interleave rot90 fliplr flipud tril_ triu_ hsplit vsplit dsplit
tensor_split moveaxis swapdims unflatten diagflat ravel narrow_copy split_with_sizes unsafe_split
unsafe_split_with_sizes unsafe_chunk
""".split()
TENSOR_ATTRIBUTES = {n: globals()[n] for n in """
squeeze_ unsqueeze_ t_ transpose_ swapaxes_ resize_ resize_as_ sum_to_size resize resize_as
""".split()}
_tile_method.__name__ = _tile_method.__qualname__ = "tile"  # (the method's name, as torch's)
TENSOR_ATTRIBUTES["tile"] = _tile_method
