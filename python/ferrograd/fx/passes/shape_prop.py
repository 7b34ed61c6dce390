"""torch.fx.passes.shape_prop: run a GraphModule on example inputs and record, on each node
whose value is a tensor (or holds tensors), `node.meta['tensor_meta']` (shape, dtype, stride, ...)
and `node.meta['type']`."""

from typing import Any, NamedTuple

from ... import _C
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t):
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), None, False, {})


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*example_inputs)` annotates every node of `gm.graph`."""

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, _C.Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
