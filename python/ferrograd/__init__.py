"""ferrograd: reverse-mode automatic differentiation with a Rust core and PyTorch's API.

`import ferrograd as torch` and write tensor/autograd code as for torch. The native module
`ferrograd._C` holds the engine; this package re-exports it and adds what is naturally Python
(argument shuffling, context managers, printing). No gradient math lives in Python.

Start-up is kept short: submodules with heavier imports (`nn`, `optim`, `utils`, `serialization`,
`viz`, `cuda`; NumPy itself) load on first use, through the module `__getattr__` below.
"""

import builtins as _builtins
import sys as _sys

from . import _C

# Where the NVIDIA pip packages (torch's CUDA libraries) may be: read only when a GPU is first used.
_C._cuda_set_python_paths([_p for _p in __import__("sys").path if _p])
from ._C import Tensor, device, dtype
from ._C import float32, float64, int64, float16, bfloat16, int32, int16, int8, uint8
from ._C import memory_format, preserve_format, contiguous_format, channels_last, channels_last_3d
from ._C import (
    arange,
    cat,
    empty,
    eye,
    from_numpy,
    full,
    is_grad_enabled,
    linspace,
    manual_seed,
    initial_seed,
    result_type,
    get_rng_state,
    set_rng_state,
    ones,
    randint,
    stack,
    zeros,
)
from ._C import where
from ._C import is_anomaly_enabled, is_anomaly_check_nan_enabled
from ._size import Size
from ._creation import (
    as_tensor,
    empty_like,
    full_like,
    logspace,
    ones_like,
    rand,
    rand_like,
    randn,
    randint_like,
    randn_like,
    randperm,
    normal,
    tensor,
    zeros_like,
)
from .autograd.grad_mode import enable_grad, no_grad, set_grad_enabled, inference_mode, is_inference_mode_enabled
from ._function_forms import *  # noqa: F401,F403  (torch.exp(x), torch.sum(x, 1), torch.exp_, out=; from the op table)
from ._function_forms import __all__ as _functional_names
from ._indexing import *  # noqa: F401,F403  (scatter, index_add, index_put, take, put, scatter_reduce, ...)
from ._sorting import *  # noqa: F401,F403  (sort, argsort, topk, kthvalue, unique, searchsorted, ...)
from ._shape_ops import *  # noqa: F401,F403  (hstack, tensor_split, tril, roll, meshgrid, ravel, ...)
from ._linalg_products import *  # noqa: F401,F403  (einsum, tensordot, kron, cross, addmm, inner, cdist, ...)
from ._pointwise import *  # noqa: F401,F403  (hypot, lerp, xlogy, logit, fmax, gcd, frexp, diff, ...)
from ._comparison import *  # noqa: F401,F403  (isclose, allclose, equal)
from ._reductions import *  # noqa: F401,F403  (median, quantile, var_mean, aminmax, cummax, cov, ...)
from ._random_ops import *  # noqa: F401,F403  (bernoulli, multinomial)
from ._inplace_methods import *  # noqa: F401,F403  (gcd_, lcm_, ldexp_)
from ._tensor_properties import *  # noqa: F401,F403  (is_nonzero, conj, adjoint, real, imag, strided, layout, ...)
from . import linalg  # noqa: E402
from .linalg import TOP_LEVEL as _linalg_top
globals().update(_linalg_top)  # det slogdet logdet inverse cholesky matrix_power matrix_exp pinverse
del _linalg_top
from ._tensor_methods import assemble as _assemble_tensor  # noqa: E402

_assemble_tensor()  # every Python Tensor method and property, from the topic modules, once, in one order
del _assemble_tensor
from ._inplace_functions import *  # noqa: F401,F403  (torch.relu_, torch.exp_, torch.zero_, torch.dropout, ...)
from ._windows import *  # noqa: F401,F403  (hann_window, hamming_window, blackman_window, ...)
from ._histograms import *  # noqa: F401,F403  (histogram, histogramdd, bincount, histc)
from ._index_math import *  # noqa: F401,F403  (unravel_index, vander, triu_indices, tril_indices)
from ._torch_forms import *  # noqa: F401,F403  (torch.conv2d, torch.layer_norm, torch.ger, torch.range, ...)
from ._linalg_legacy import *  # noqa: F401,F403  (torch.svd)
from ._linalg_householder import *  # noqa: F401,F403  (torch.geqrf, orgqr, ormqr)
from ._torch_nn_forms import *  # noqa: F401,F403  (torch.conv3d, torch.batch_norm, torch.kl_div, torch.lstm_cell, ...)
from ._view_copies import *  # noqa: F401,F403  (torch.view_copy, torch.transpose_copy, ...)
from ._symbolic_scalars import *  # noqa: F401,F403  (torch.sym_max, torch.sym_int, ...)
from ._runtime_info import *  # noqa: F401,F403  (torch.pi, torch.has_lapack, torch.typename, torch.seed, ...)
from ._buffer_creation import *  # noqa: F401,F403  (torch.asarray, torch.frombuffer, torch.empty_strided, torch.cond)
from ._bitwise import *  # noqa: F401,F403  (bitwise_left_shift/right_shift, <<, >>, <<=, >>=)
from ._C import from_dlpack
from ._out_compositions import install as _install_out  # noqa: E402  (out= for the Python compositions)
_install_out({"": _sys.modules[__name__], "linalg.": linalg})
from . import autograd, random, return_types  # noqa: E402
from ._config import show_config
from ._settings import *  # noqa: F401,F403  (set_default_dtype, set_printoptions, use_deterministic_algorithms, ...)
from ._tensor_types import CPU_TYPES as _CPU_TYPES  # FloatTensor, LongTensor, ...
globals().update(_CPU_TYPES)
del _CPU_TYPES

# One version, from Cargo.toml (the wheel's version is the same; see CHANGELOG.md).
__version__ = _C.__version__

# dtype aliases, as torch spells them (they shadow the builtins in this module's namespace, as
# torch's do: code below uses _builtins.int and friends)
globals()["bool"] = _C.bool
float = float32
double = float64
long = int64
half = float16
globals()["int"] = int32
short = int16
concat = cat
concatenate = cat

del _builtins


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.numel()


def promote_types(type1, type2):
    return _C._promote_types(type1, type2)


def can_cast(from_, to):
    return _C._can_cast(from_, to)


def result_type(tensor1, tensor2):
    return _C._result_type(tensor1, tensor2)


from ._finfo import finfo, iinfo  # noqa: E402


from ._C import set_num_threads, get_num_threads  # noqa: E402


def _threads_from_env():
    import os

    import builtins

    n = os.environ.get("FERROGRAD_NUM_THREADS")
    if n:
        set_num_threads(builtins.int(n))


def _register_fork_handler():
    import os

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_C._after_fork_in_child)


_threads_from_env()
_register_fork_handler()

# name -> (module to import, attribute of it or None for the module itself), loaded on first use.
_LAZY = {
    "nn": ("ferrograd.nn", None),
    "optim": ("ferrograd.optim", None),
    "utils": ("ferrograd.utils", None),
    "cuda": ("ferrograd.cuda", None),
    "viz": ("ferrograd.viz", None),
    "fx": ("ferrograd.fx", None),
    "func": ("ferrograd.func", None),
    "vmap": ("ferrograd.func", "vmap"),
    "compile": ("ferrograd.compiler", "compile"),
    "compiler": ("ferrograd.compiler", None),
    "_dynamo": ("ferrograd._dynamo", None),
    "_logging": ("ferrograd._logging", None),
    "profiler": ("ferrograd.profiler", None),
    "special": ("ferrograd.special", None),
    "signal": ("ferrograd.signal", None),
    "distributions": ("ferrograd.distributions", None),
    "serialization": ("ferrograd.serialization", None),
    "save": ("ferrograd.serialization", "save"),
    "load": ("ferrograd.serialization", "load"),
    "Generator": ("ferrograd.utils._generator", "Generator"),
    "default_generator": ("ferrograd.utils._generator", "default_generator"),
    "thread_safe_generator": ("ferrograd.random", "thread_safe_generator"),
    "backends": ("ferrograd.backends", None),
    "accelerator": ("ferrograd.accelerator", None),
    "onnx": ("ferrograd.onnx", None),
    "ops": ("ferrograd._ops", "ops"),
    "amp": ("ferrograd.amp", None),
    "cpu": ("ferrograd.cpu", None),
    "autocast": ("ferrograd.amp.autocast_mode", "autocast"),
    "is_autocast_enabled": ("ferrograd.amp.autocast_mode", "is_autocast_enabled"),
    "get_autocast_dtype": ("ferrograd.amp.autocast_mode", "get_autocast_dtype"),
    "set_autocast_enabled": ("ferrograd.amp.autocast_mode", "set_autocast_enabled"),
    "set_autocast_dtype": ("ferrograd.amp.autocast_mode", "set_autocast_dtype"),
    "is_autocast_cache_enabled": ("ferrograd.amp.autocast_mode", "is_autocast_cache_enabled"),
    "set_autocast_cache_enabled": ("ferrograd.amp.autocast_mode", "set_autocast_cache_enabled"),
    "clear_autocast_cache": ("ferrograd.amp.autocast_mode", "clear_autocast_cache"),
    "autocast_increment_nesting": ("ferrograd.amp.autocast_mode", "autocast_increment_nesting"),
    "autocast_decrement_nesting": ("ferrograd.amp.autocast_mode", "autocast_decrement_nesting"),
    "is_autocast_cpu_enabled": ("ferrograd.amp.autocast_mode", "is_autocast_cpu_enabled"),
    "set_autocast_cpu_enabled": ("ferrograd.amp.autocast_mode", "set_autocast_cpu_enabled"),
    "get_autocast_cpu_dtype": ("ferrograd.amp.autocast_mode", "get_autocast_cpu_dtype"),
    "set_autocast_cpu_dtype": ("ferrograd.amp.autocast_mode", "set_autocast_cpu_dtype"),
    "get_autocast_gpu_dtype": ("ferrograd.amp.autocast_mode", "get_autocast_gpu_dtype"),
    "set_autocast_gpu_dtype": ("ferrograd.amp.autocast_mode", "set_autocast_gpu_dtype"),
    "_amp_foreach_non_finite_check_and_unscale_": ("ferrograd._C", "_amp_foreach_non_finite_check_and_unscale_"),
    "_amp_update_scale_": ("ferrograd.amp.grad_scaler", "_amp_update_scale_"),
}


def __getattr__(name):
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'ferrograd' has no attribute '{name}'")
    import importlib

    value = importlib.import_module(entry[0])
    if entry[1] is not None:
        value = getattr(value, entry[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
