"""torch's *_copy functions: the result of a view op (t, transpose, select, slice, expand, ...) as a new
tensor that shares no memory with its input (torch.view_copy, torch.transpose_copy, ...). Each is the
differentiable view followed by clone (contiguous), so autograd goes through the view's backward."""

from . import _C


def _fresh(t):
    """A contiguous copy (contiguous() copies a strided view; clone copies one already contiguous)."""
    return t.clone() if t.is_contiguous() else t.contiguous()


def alias_copy(input):
    return _fresh(input)


def detach_copy(input):
    return _fresh(input.detach())


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _fresh(input.diagonal(offset, dim1, dim2))


def expand_copy(input, size, *, implicit=False):
    return _fresh(input.expand(*size))


def permute_copy(input, dims):
    return _fresh(input.permute(*dims))


def select_copy(input, dim, index):
    return _fresh(input.select(dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along dim, copied."""
    index = [slice(None)] * input.dim()
    index[dim] = slice(start, end, step)
    return _fresh(input[tuple(index)])


def split_copy(input, split_size, dim=0):
    return tuple(_fresh(p) for p in input.split(split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return tuple(_fresh(p) for p in input.split(list(split_sizes), dim))


def squeeze_copy(input, dim=None):
    return _fresh(input.squeeze() if dim is None else input.squeeze(dim))


def t_copy(input):
    return _fresh(input.t())


def transpose_copy(input, dim0, dim1):
    return _fresh(input.transpose(dim0, dim1))


def unbind_copy(input, dim=0):
    return tuple(_fresh(p) for p in input.unbind(dim))


def unfold_copy(input, dimension, size, step):
    return _fresh(input.unfold(dimension, size, step))


def unsqueeze_copy(input, dim):
    return _fresh(input.unsqueeze(dim))


def view_copy(input, size):
    """input.view(size) (or .view(dtype)), copied."""
    if isinstance(size, _C.dtype):
        return _fresh(input.view(size))
    return _fresh(input.view(*size) if isinstance(size, (list, tuple)) else input.view(size))


def as_strided_copy(input, size, stride, storage_offset=None):
    return _fresh(input.as_strided(size, stride, storage_offset))


__all__ = """alias_copy detach_copy diagonal_copy expand_copy permute_copy select_copy slice_copy split_copy
split_with_sizes_copy squeeze_copy t_copy transpose_copy unbind_copy unfold_copy unsqueeze_copy view_copy
as_strided_copy""".split()
