"""nn.DataParallel: single-process data parallelism.

Without a GPU (as torch without one) the wrapper calls its module as it is. With GPUs, `device_ids`
defaults to every visible device; the module is moved to the first, and the inputs (tensors, and those
inside tuples, lists and dicts) are moved there before the call. ferrograd runs one GPU per process:
more than one device id raises NotImplementedError at the call (use DistributedDataParallel, one
process per GPU, which is torch's recommendation as well).
"""

from ... import _C
from ..modules.module import Module


def _device_index(d):
    if isinstance(d, int):
        return d
    d = _C.device(d) if isinstance(d, str) else d
    return d.index if d.index is not None else 0


def _to(obj, device):
    if isinstance(obj, _C.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return type(obj)(*(_to(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(v, device) for v in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        from ... import cuda

        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _C.device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        if len(self.device_ids) > 1:
            raise NotImplementedError("DataParallel over more than one GPU is not supported by ferrograd (one GPU "
                                      "per process); use DistributedDataParallel, or device_ids=[one device]")
        return self.module(*_to(inputs, self.src_device_obj), **_to(kwargs, self.src_device_obj))
