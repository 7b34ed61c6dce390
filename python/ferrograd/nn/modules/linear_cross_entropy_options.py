"""torch.nn.LinearCrossEntropyOptions: the options of linear_cross_entropy's chunked implementation.

ferrograd validates them as torch does and accepts them, but computes linear_cross_entropy one way (the
reference composition linear -> cross_entropy, which is the documented meaning of the op): the options
select how torch's kernel tiles the batch, not what it computes.
"""

import dataclasses

_VALID_ACC_POLICIES = ("auto", "accurate", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration of linear_cross_entropy's chunked path (torch's fields and checks)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        from ... import _C

        if self.acc_policy not in _VALID_ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}; expected one of "
                             f"{', '.join(map(repr, _VALID_ACC_POLICIES))}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")
