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

    python tests/programs/_launch.py --serve torch

is a fork server for the harness: it imports torch once (importing it costs seconds, more than most
programs take), then reads one JSON request per line on stdin ({"script", "cwd", "env", "stdout",
"stderr"}), forks a child that runs the program exactly as above with stdout/stderr sent to the given
files, and answers one JSON line {"rc": exit status}. Nothing random is drawn before the fork, so
each child starts from torch's freshly imported state.
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


def _run_child(req):
    os.chdir(req["cwd"])
    os.environ.update(req["env"])
    for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    sys.stdin = open(os.devnull)
    status = 0
    try:
        sys.argv = [req["script"]]
        runpy.run_path(req["script"], run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        status = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


def _warm_up(torch):
    """Run each kind of op once (first calls pay for lazy set-up), leaving the random state as it was."""
    state = torch.get_rng_state()
    nn, F = torch.nn, torch.nn.functional
    x = torch.ones(2, 3, 4, 4, requires_grad=True)
    y = F.conv2d(x, torch.ones(2, 3, 3, 3)).relu().sum()
    lin = nn.Linear(4, 2)
    lstm, gru = nn.LSTM(4, 3), nn.GRU(4, 3)
    z = lin(x).tanh().mean() + lstm(x[0])[0].sum() + gru(x[0])[0].sum() + y
    z = z + F.cross_entropy(lin(x[0, 0]), torch.zeros(4, dtype=torch.long))
    z.backward()
    opt = torch.optim.Adam(lin.parameters())
    opt.step()
    torch.set_rng_state(state)


def serve(lib):
    import json
    if lib == TARGET:
        install()
    importlib.import_module("torch")
    for name in ("torch.nn", "torch.nn.functional", "torch.optim", "torch.utils.data"):
        importlib.import_module(name)
    _warm_up(sys.modules["torch"])
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        out.flush()
        pid = os.fork()
        if pid == 0:
            _run_child(req)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        out.write(json.dumps({"rc": rc}) + "\n")
        out.flush()


def main(argv):
    if argv and argv[0] == "--serve":
        return serve(argv[1])
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
