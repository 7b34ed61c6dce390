"""Modules imported on first use, so that `import ferrograd` stays fast (NumPy alone costs more
than the whole of ferrograd's start-up). `from ._lazy import numpy as np` and use `np` as usual."""

import importlib


class LazyModule:
    """Stands for a module until an attribute is read; then imports it and copies its namespace
    (later reads are plain dict look-ups; names the module creates lazily still resolve)."""

    def __init__(self, name):
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr):
        mod = importlib.import_module(self._lazy_name)
        self.__dict__.update(mod.__dict__)
        return getattr(mod, attr)

    def __repr__(self):
        return f"<lazy module {self._lazy_name!r}>"


numpy = LazyModule("numpy")
