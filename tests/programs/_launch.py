"""Run a corpus program with `torch` resolved to ferrograd, without editing the program.

    python tests/programs/_launch.py ferrograd tests/programs/gpt_train.py [args...]
    python tests/programs/_launch.py torch     tests/programs/gpt_train.py [args...]

With `ferrograd`, a meta-path finder is installed ahead of the normal ones: `import torch`,
`import torch.nn.functional as F`, `from torch.utils.data import DataLoader`, `import torch.fx` ...
each resolve to the ferrograd module of the same dotted path (`ferrograd`, `ferrograd.nn.functional`,
...) and that same module object is registered under the torch name in `sys.modules`, so
`torch.nn.functional is sys.modules["torch.nn.functional"]` holds as it does with torch. A torch
submodule that ferrograd lacks raises ModuleNotFoundError naming the torch module, as a missing
module would. With `torch`, the program runs as it is (the launcher only sets up argv/path, so that
both runs see the same `sys.argv[0]` and `__name__ == "__main__"`).
"""
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

ALIAS = "torch"
TARGET = "ferrograd"


def _target_name(fullname):
    if fullname == ALIAS:
        return TARGET
    if fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Hands back an already-imported ferrograd module for a torch name."""

    def __init__(self, module):
        self.module = module
        self.own_spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # the import machinery stamped the torch-named spec on the module; give it its own back
        module.__spec__ = self.own_spec


class _TorchToFerrograd(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        name = _target_name(fullname)
        if name is None:
            return None
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is not None and (e.name == name or name.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named {fullname!r} (ferrograd has no {name!r})", name=fullname
                ) from None
            raise
        is_pkg = hasattr(module, "__path__")
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module), is_package=is_pkg)


def install():
    sys.meta_path.insert(0, _TorchToFerrograd())


def main(argv):
    if len(argv) < 2 or argv[0] not in (ALIAS, TARGET):
        raise SystemExit("usage: _launch.py {torch|ferrograd} program.py [args...]")
    lib, script = argv[0], argv[1]
    if lib == TARGET:
        install()
    sys.argv = [script] + argv[2:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
