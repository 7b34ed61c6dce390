"""The backends' switches, with torch's defaults: one dict, written by torch.backends.* and by
torch.set_float32_matmul_precision, for the backends to read (see backends/__init__.py)."""

import contextlib

FLAGS = {
    # float32 matmul precision: "highest" (IEEE float32), "high" (TF32), "medium" (bfloat16 allowed);
    # torch.backends.cuda.matmul.allow_tf32 is precision != "highest"
    "float32_matmul_precision": "highest",
    "matmul.allow_fp16_reduced_precision_reduction": True,
    "matmul.allow_bf16_reduced_precision_reduction": True,
    "matmul.allow_fp16_accumulation": False,
    "cudnn.enabled": True,
    "cudnn.benchmark": False,
    "cudnn.benchmark_limit": 10,
    "cudnn.deterministic": False,
    "cudnn.allow_tf32": True,
    "sdp.flash": True,
    "sdp.mem_efficient": True,
    "sdp.math": True,
    "sdp.cudnn": True,
    "sdp.fp16_bf16_reduction_math": False,
    "mkldnn.enabled": True,
    "mkldnn.deterministic": False,
    "opt_einsum.enabled": False,  # torch's value without the opt_einsum package
    "opt_einsum.strategy": "auto",
}

_PRECISIONS = ("highest", "high", "medium")


def set_matmul_precision(precision):
    """The float32 matmul precision, told to the CUDA matmul too: anything but "highest" lets cuBLAS use TF32
    tensor-core math (torch's torch.backends.cuda.matmul.allow_tf32)."""
    from .. import _C

    FLAGS["float32_matmul_precision"] = precision
    _C._set_cublas_allow_tf32(precision != "highest")


def check_bool(name, value):
    """torch's setters take a bool only (its RuntimeError otherwise)."""
    if not isinstance(value, bool):
        raise RuntimeError(f"{name} expects a bool, but got {type(value).__name__}")
    return value


@contextlib.contextmanager
def overridden(prefix, **values):
    """Set FLAGS[prefix + name] for each given (not None) value for the duration of the block."""
    saved = {}
    try:
        for name, value in values.items():
            if value is not None:
                key = prefix + name
                saved[key] = FLAGS[key]
                FLAGS[key] = value
        yield
    finally:
        FLAGS.update(saved)


class FlagModule:
    """A module whose listed attributes read and write FLAGS (`torch.backends.cudnn.benchmark = True`):
    install with `sys.modules[__name__].__class__ = <subclass of FlagModule and ModuleType>`, with
    `_FLAG_NAMES` mapping attribute -> FLAGS key."""

    _FLAG_NAMES: dict = {}

    def __getattr__(self, name):
        key = type(self)._FLAG_NAMES.get(name)
        if key is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return FLAGS[key]

    def __setattr__(self, name, value):
        key = type(self)._FLAG_NAMES.get(name)
        if key is None:
            super().__setattr__(name, value)
            return
        if isinstance(FLAGS[key], bool):
            check_bool(f"set {self.__name__}.{name}", value)
        FLAGS[key] = value
