"""`ferrograd.profiler`: torch.profiler's entry points over the engine's op profiler (CPU only).

`profile(activities=[ProfilerActivity.CPU])` records the same events as
`ferrograd.autograd.profiler.profile()`; `schedule` and trace handlers are not supported.
"""

import enum

from ..autograd.profiler import EventList, record_function  # noqa: F401
from ..autograd.profiler import profile as _legacy_profile

__all__ = ["profile", "record_function", "ProfilerActivity", "EventList"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


class profile(_legacy_profile):
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None):
        if schedule is not None or on_trace_ready is not None:
            raise NotImplementedError("ferrograd.profiler.profile: schedule and on_trace_ready are not supported")
        acts = set(activities) if activities is not None else {ProfilerActivity.CPU}
        super().__init__(enabled=ProfilerActivity.CPU in acts, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack, with_flops=with_flops)

    def step(self):
        pass

    def start(self):
        self.__enter__()

    def stop(self):
        self.__exit__(None, None, None)
