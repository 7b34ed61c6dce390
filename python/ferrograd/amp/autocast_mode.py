"""torch.amp.autocast and its helpers. The state (on/off per device type, dtype, nesting depth, cache) is kept
per thread by the native module (src/ops/autocast.rs, Note [Autocast]); ops cast their inputs by torch's
autocast lists: the op table's `autocast` column, the classes the native bindings give matmul/linear/cat/...,
and `_autocast_ops.autocast_op` on the ops written in Python."""
import functools
import warnings

import ferrograd as _fg
from ferrograd import _C

__all__ = ["autocast", "autocast_decorator", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _check_device_type(device_type):
    """torch's checks on a device_type string: a str whose type part is a known device type."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type.split(":", 1)[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return device_type.split(":", 1)[0]


def is_autocast_available(device_type):
    """Whether torch supports autocast on `device_type`."""
    return _check_device_type(device_type) in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "xla")


def is_autocast_enabled(device_type=None):
    """Whether an autocast region is active for `device_type` on this thread ("cuda" when not given)."""
    kind = "cuda" if device_type is None else _check_device_type(device_type)
    return _C._autocast_is_enabled(kind)


def set_autocast_enabled(device_type, enabled=None):
    """`set_autocast_enabled(device_type, enabled)`, or the legacy `set_autocast_enabled(enabled)` (CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _C._autocast_set_enabled(_check_device_type(device_type), bool(enabled))


_DEFAULT_LOWER = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16", "xpu": "float16", "mtia": "bfloat16",
                  "hpu": "bfloat16", "xla": "bfloat16", "ipu": "float16"}


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on `device_type` (this thread's; bfloat16 on the CPU, float16 on CUDA)."""
    kind = _check_device_type(device_type)
    if kind in ("cpu", "cuda"):
        return _C._autocast_get_dtype(kind)
    return getattr(_fg, _DEFAULT_LOWER.get(kind, "float16"))


def set_autocast_dtype(device_type, dtype):
    _C._autocast_set_dtype(_check_device_type(device_type), dtype)


def is_autocast_cache_enabled():
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled):
    _C._autocast_set_cache_enabled(bool(enabled))


def clear_autocast_cache():
    """Drop the casts of weights cached by autocast regions (done when the outermost region exits)."""
    _C._autocast_clear_cache()


def autocast_increment_nesting():
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting():
    return _C._autocast_decrement_nesting()


# the legacy per-device spellings (torch keeps them, deprecated)
def is_autocast_cpu_enabled():
    return _C._autocast_is_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _C._autocast_set_enabled("cpu", bool(enabled))


def get_autocast_cpu_dtype():
    return _C._autocast_get_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _C._autocast_set_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return _C._autocast_get_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _C._autocast_set_dtype("cuda", dtype)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:
    """Context manager / decorator `torch.amp.autocast(device_type, dtype=None, enabled=True,
    cache_enabled=None)`: inside, ops on `device_type` tensors run in `dtype` (float16/bfloat16) or
    float32 as torch's autocast lists say. Regions nest; `enabled=False` switches autocast off inside
    one; the casts of weights are cached until the outermost region exits."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        kind = _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(kind) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._kind = kind
        if not self._enabled:
            return
        if kind not in ("cpu", "cuda"):
            raise NotImplementedError(
                f"ferrograd implements autocast for the 'cpu' and 'cuda' device types only "
                f"(torch.amp.autocast('{device_type}') was requested)")
        if kind == "cuda" and not _fg.cuda.is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            self._enabled = False
            return
        if kind == "cpu" and self.fast_dtype not in (_fg.bfloat16, _fg.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          stacklevel=2)
            self._enabled = False
            return
        if kind == "cuda" and self.fast_dtype not in (_fg.bfloat16, _fg.float16, _fg.float32):
            warnings.warn("In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CUDA Autocast only supports dtypes of torch.float16, torch.bfloat16 and "
                          "torch.float32 currently.", stacklevel=2)
            self._enabled = False

    def __enter__(self):
        kind = self._kind if self._kind in ("cpu", "cuda") else None
        self.prev_cache_enabled = is_autocast_cache_enabled()
        if kind is None:  # a disabled region of a device type ferrograd has no autocast for
            self.prev = None
            return self
        self.prev = _C._autocast_is_enabled(kind)
        self.prev_fastdtype = _C._autocast_get_dtype(kind)
        _C._autocast_set_enabled(kind, self._enabled)
        if self._enabled:
            _C._autocast_set_dtype(kind, self.fast_dtype)
        _C._autocast_increment_nesting()
        _C._autocast_set_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.prev is None:
            return False
        if _C._autocast_decrement_nesting() == 0:
            _C._autocast_clear_cache()
        _C._autocast_set_enabled(self._kind, self.prev)
        _C._autocast_set_dtype(self._kind, self.prev_fastdtype)
        _C._autocast_set_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)


def _cast(value, device_type, dtype):
    """Floating tensors of `device_type` (not float64) in `value`, recursively, cast to `dtype`."""
    if isinstance(value, _fg.Tensor):
        if value.is_floating_point() and value.device.type == device_type and value.dtype != _fg.float64:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, list) or type(value) is tuple else tuple(items)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd.Function's forward. With `cast_inputs`, inside an autocast region the
    forward runs with autocast off and its floating inputs cast to `cast_inputs`; without it, it runs under the
    region's autocast and records that on ctx for `custom_bwd`."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        enabled = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if enabled:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd.Function's backward: runs it under the autocast state of its forward."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
