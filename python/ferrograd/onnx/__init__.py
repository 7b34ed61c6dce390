"""torch.onnx: ferrograd does not export ONNX. The module imports, so scripts that import it or
check `is_in_onnx_export()` run; `export` raises an error that says so (a NotImplementedError that
is also torch.onnx.OnnxExporterError, so either `except` catches it)."""

import contextlib
import enum

from .. import __version__

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "OnnxExporterError", "TrainingMode", "OperatorExportTypes",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic", "select_model_mode_for_export",
           "producer_name", "producer_version"]

producer_name = "ferrograd"
producer_version = __version__


class OnnxExporterError(RuntimeError):
    """Errors of the ONNX exporter (torch.onnx.OnnxExporterError)."""


class _NoOnnxExport(OnnxExporterError, NotImplementedError):
    pass


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def _unsupported(what):
    return _NoOnnxExport(f"ferrograd does not export ONNX ({what} is not supported): export the model with "
                         "PyTorch itself (load the state_dict saved by ferrograd.save into the torch model)")


def export(model, args=(), f=None, **kwargs):
    """Not supported: ferrograd has no ONNX exporter (raises NotImplementedError / OnnxExporterError)."""
    raise _unsupported("torch.onnx.export")


def dynamo_export(model, *args, **kwargs):
    raise _unsupported("torch.onnx.dynamo_export")


def is_in_onnx_export():
    """Whether an ONNX export is running: never, in ferrograd."""
    return False


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Accepted and ignored: there is no exporter to use the symbolic function."""


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Accepted and ignored (see register_custom_op_symbolic)."""


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """Put `model` in training or eval mode for the block (TrainingMode), then restore it."""
    was_training = model.training
    if mode == TrainingMode.TRAINING:
        model.train(True)
    elif mode == TrainingMode.EVAL:
        model.train(False)
    try:
        yield
    finally:
        model.train(was_training)
