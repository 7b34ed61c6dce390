"""Autocast for the ops written in Python: `autocast_op(cpu=..., cuda=...)` gives a Python-defined op its
class on torch's autocast lists, per device type, where the op is defined (the op table's rows carry theirs
in the `autocast` column; see Note [Autocast] in src/ops/autocast.rs).

Under an active autocast region the op's floating tensor arguments (and lists of them) are cast by the
native `_C._autocast_args` (lower precision, float32, or the widest of them) and its body runs with autocast
suspended, as torch's autocast kernels run the op below their dispatch key. Outside autocast the cost is one
native thread-local check."""
import functools

from . import _C

__all__ = ["LOWER", "FP32", "PROMOTE", "NONE", "BANNED", "autocast_op", "call"]

LOWER = "lower_precision"
FP32 = "float32"
PROMOTE = "promote"
NONE = "none"
# torch refuses binary_cross_entropy under CUDA autocast (unsafe in float16)
BANNED = "banned"

_active = _C._autocast_active


def _refuse(args, kwargs):
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, _C.Tensor)]
    if _C._autocast_is_enabled("cuda") and any(t.is_cuda for t in tensors):
        raise RuntimeError(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast.")


def call(cpu, cuda, fn, args, kwargs):
    """fn(*args, **kwargs) as an op of classes cpu/cuda under the current autocast state."""
    if cuda == BANNED:
        _refuse(args, kwargs)
        cuda = NONE
    cast = _C._autocast_args(cpu, cuda, args, kwargs)
    if cast is None:  # not on this device type's list: the body's own ops autocast themselves
        return fn(*args, **kwargs)
    args, kwargs = cast
    token = _C._autocast_suspend()
    try:
        return fn(*args, **kwargs)
    finally:
        _C._autocast_resume(token)


def autocast_op(cpu=NONE, cuda=NONE):
    """Decorator: the op's autocast class on the CPU and on CUDA (LOWER, FP32, PROMOTE or NONE)."""

    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _active():
                return fn(*args, **kwargs)
            return call(cpu, cuda, fn, args, kwargs)

        op.__autocast__ = {"cpu": cpu, "cuda": NONE if cuda == BANNED else cuda}
        return op

    return decorate
