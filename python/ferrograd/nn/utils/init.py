"""torch.nn.utils.skip_init: build a module without running its parameter initialisation."""

import inspect


__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` whose parameter values are unspecified (torch leaves them
    uninitialised)."""
    from ..modules.module import Module

    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    # The values are unspecified in torch (uninitialised memory); the normal construction is one valid choice.
    return module_cls(*args, **kwargs)
