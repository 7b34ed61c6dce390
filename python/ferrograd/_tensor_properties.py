"""Tensor properties and small Tensor-only methods: is_cpu, nbytes, itemsize, layout, H, mH, real,
imag and the is_sparse/is_quantized/... flags of a dense real tensor; the predicates is_nonzero,
is_same_size, is_signed, is_complex, is_conj, is_neg; conj and friends (identities: ferrograd has no
complex dtypes), adjoint; apply_/map_/map2_ (element-wise Python callables), new_empty_strided,
module_load, dim_order, get_device, is_pinned, pin_memory, is_shared, const_data_ptr, is_set_to, the dense answers of
dense_dim/sparse_dim/to_dense, the is_xpu/is_mps/... flags; and `torch.layout` / `torch.strided`."""

import builtins

from . import _C



def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """An uninitialised tensor with the given strides: dense strides in any dimension order (what
    copying another tensor's geometry asks for); other strides need as_strided, which ferrograd lacks."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides ({len(stride)})")
    order = sorted(range(len(size)), key=lambda i: (-stride[i], -size[i]))  # outermost first
    out = self.new_empty(tuple(size[i] for i in order), dtype=dtype, device=device)
    out = out.permute(tuple(order.index(i) for i in range(len(size)))) if size else out
    if builtins.any(n > 1 and a != b for n, a, b in zip(size, out.stride(), stride)):
        raise NotImplementedError(f"ferrograd: new_empty_strided with strides {stride} for size {size} needs "
                                  "as_strided, which is not supported yet (dense strides are)")
    return out.requires_grad_(requires_grad) if requires_grad else out


def is_nonzero(input):
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    return input.dtype not in (_C.uint8, _C.bool)


def is_complex(input):
    return False


def is_conj(input):
    return False


def is_neg(input):
    return False


def conj(input):
    return input


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def conj_physical(input):
    return input


def adjoint(input):
    if input.dim() == 0:
        return input
    if input.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return input.transpose(-2, -1)


def real(input):
    return input


def imag(input):
    raise TypeError("imag is not implemented for tensors with non-complex dtypes.")


def apply_(self, callable):
    """Replace every element x by callable(x) (CPU only, slow: one Python call per element)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.detach().reshape(-1).tolist()]
    return _map_write(self, vals, "apply_")


def map_(self, tensor, callable):
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    b = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    vals = [callable(a, c) for a, c in zip(self.detach().reshape(-1).tolist(), b)]
    return _map_write(self, vals, "map_")


def map2_(self, x, y, callable):
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    bx = x.expand(tuple(self.shape)).reshape(-1).tolist()
    by = y.expand(tuple(self.shape)).reshape(-1).tolist()
    vals = [callable(a, b, c) for a, b, c in zip(self.detach().reshape(-1).tolist(), bx, by)]
    return _map_write(self, vals, "map2_")


def _map_write(self, vals, name):
    from ._creation import tensor as _tensor
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    return self.copy_(_tensor(vals, dtype=self.dtype).reshape(tuple(self.shape)))


def module_load(self, other, assign=False):
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def dim_order(self, *, ambiguity_check=False):
    st = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda i: -st[i]))


def get_device(self):
    return -1 if self.device.type == "cpu" else self.device.index


def is_pinned(self, device=None):
    return False


def pin_memory(self, device=None):
    """A CPU copy of the tensor for a fast copy to the GPU (torch's page-locked memory). ferrograd's host
    tensors are ordinary memory and `.to("cuda", non_blocking=True)` works the same from them, so this is
    a plain contiguous copy (is_pinned stays False); without a GPU, torch's RuntimeError."""
    from . import cuda

    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if not cuda.is_available():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
                           "installed a driver from http://www.nvidia.com/Download/index.aspx")
    return self.contiguous().clone()


def is_shared(self):
    return False


def const_data_ptr(self):
    """The address of the first element (data_ptr: ferrograd has no copy-on-write storage)."""
    return self.data_ptr()


def is_set_to(self, tensor):
    """Whether both are the same elements of the same memory: same first element, sizes and strides."""
    return (self.data_ptr() == tensor.data_ptr() and self.device == tensor.device and self.dtype == tensor.dtype
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


def dense_dim(self):
    """The number of dense dims: all of a strided tensor's."""
    return self.dim()


def sparse_dim(self):
    """The number of sparse dims: none for a strided tensor."""
    return 0


def to_dense(self, dtype=None, *, masked_grad=True):
    """A strided tensor is dense already: itself (converted when dtype differs)."""
    return self if dtype is None or dtype == self.dtype else self.to(dtype)


def is_distributed(self):
    return False


class layout:
    """A tensor layout. ferrograd has one, strided (dense), printed as torch prints it."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")


# Tensor properties (installed by _tensor_methods.py)
_PROPERTIES = {
    "is_cpu": lambda self: self.device.type == "cpu",
    "nbytes": lambda self: self.numel() * self.element_size(),
    "itemsize": lambda self: self.element_size(),
    "layout": lambda self: strided,
    "H": lambda self: _H(self),
    "mH": lambda self: _mH(self),
    "is_sparse": lambda self: False,
    "is_quantized": lambda self: False,
    "is_meta": lambda self: False,
    "is_nested": lambda self: False,
    "is_mkldnn": lambda self: False,
    "is_sparse_csr": lambda self: False,
    # devices ferrograd has no backend for: a tensor is never on them
    "is_xpu": lambda self: self.device.type == "xpu",
    "is_mps": lambda self: self.device.type == "mps",
    "is_ipu": lambda self: self.device.type == "ipu",
    "is_xla": lambda self: self.device.type == "xla",
    "is_maia": lambda self: self.device.type == "maia",
    "is_mtia": lambda self: self.device.type == "mtia",
    "is_vulkan": lambda self: self.device.type == "vulkan",
    "real": real,
    "imag": imag,
}


def _H(self):
    if self.dim() == 0:
        return self
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""))
    return self.t()


def _mH(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


# ------------------------------------------------------------------ exports
__all__ = """
is_nonzero is_same_size is_signed is_complex is_conj is_neg conj resolve_conj resolve_neg conj_physical
adjoint real imag strided layout
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
is_nonzero is_same_size is_signed is_complex is_conj is_neg conj resolve_conj resolve_neg conj_physical
adjoint
""".split()
TENSOR_ATTRIBUTES = {n: globals()[n] for n in """
new_empty_strided apply_ map_ map2_ module_load dim_order get_device is_pinned is_shared const_data_ptr is_set_to
dense_dim sparse_dim to_dense is_distributed pin_memory
""".split()}
TENSOR_PROPERTIES = _PROPERTIES
