"""torch.cuda: availability queries. The CUDA backend is not built yet, so no device is ever
available; moving a tensor to "cuda" raises torch's error."""

from .. import _C


def is_available():
    return _C._cuda_is_available()


def device_count():
    return _C._cuda_device_count()
