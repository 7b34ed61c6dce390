"""The corpus of complete programs (tests/programs/, see its README.md): each script runs twice in a
subprocess, once with real torch and once with `import torch` resolved to ferrograd by
tests/programs/_launch.py, and the numbers it prints must agree.

Protocol, per script:
1. torch run, with PROGRAM_SAVE_INIT=<tmp>/init_torch.pt: the script saves its freshly initialised
   weights (torch.save of a state_dict, or a dict of them) when that variable is set.
2. the harness converts that file into ferrograd's own format (ferrograd.save) as init_fg.pt.
3. ferrograd run, with PROGRAM_LOAD_INIT=<tmp>/init_fg.pt: the script loads it in place of its fresh
   weights (ferrograd's generator streams are not torch's, so this is how both runs start equal).
4. the `RESULT name v...` lines of both runs must match one for one: integers and words exactly,
   floats within the script's tolerance. `RANDOM name v...` lines (values that depend on the random
   stream, e.g. sampled tokens) must match in name, count and kind (int/float/word, finite or not).

A script that fails under ferrograd today is listed in EXPECTED_FAIL with the reason; its test is a
strict xfail, so it turns into a failure the moment it passes (then remove its entry).
FG_PROGRAMS=name1,name2 restricts the run to some scripts. Torch runs go through the launcher's fork
server (torch imported once per session); ferrograd runs are plain subprocesses.
"""
import json
import math
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from conftest import AGAINST_TORCH, fg

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
LAUNCHER = PROGRAMS / "_launch.py"
TIMEOUT_S = 120

DEFAULT_TOL = (1e-4, 1e-5)  # (rtol, atol) for floats
TOLERANCE = {
    # bfloat16/float16 matmuls under autocast round in 8 or 11 bits (measured: losses within 5e-4 of
    # torch's); the atol lets the accuracy (in 64ths) differ by one flipped prediction
    "amp_train": (5e-3, 2e-2),
}

# script -> why it fails under ferrograd today (strict xfail: remove the entry once it passes).
# "then": what the script met next when the first gap was stubbed out by hand.
EXPECTED_FAIL = {
}

_SCRIPTS = sorted(p.stem for p in PROGRAMS.glob("*.py") if not p.name.startswith("_"))
_ONLY = os.environ.get("FG_PROGRAMS")
if _ONLY:
    _SCRIPTS = [s for s in _SCRIPTS if s in _ONLY.split(",")]

_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)\Z", re.I)


def _kind(tok):
    if _INT.match(tok):
        return "int"
    if _FLOAT.match(tok):
        return "float"
    return "word"


def _records(stdout):
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in ("RESULT", "RANDOM"):
            if len(parts) < 2:
                raise AssertionError(f"malformed line {line!r}")
            out.append((parts[0], parts[1], parts[2:]))
    return out


def _base_env():
    env = dict(os.environ)
    env.pop("PROGRAM_SAVE_INIT", None)
    env.pop("PROGRAM_LOAD_INIT", None)
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("OMP_NUM_THREADS", "1")  # tiny programs: torch's thread pool only costs time here
    pkg = str(HERE.parent / "python")
    env["PYTHONPATH"] = pkg + os.pathsep + env.get("PYTHONPATH", "")
    return env


class _TorchServer:
    """The launcher's fork server for torch runs: torch is imported (and warmed up) once per session
    instead of once per program, which is most of the cost of a torch run."""

    def __init__(self):
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen(
            [sys.executable, str(LAUNCHER), "--serve", "torch"], env=_base_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, script, cwd, env_extra):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        out, err = Path(cwd) / "stdout.txt", Path(cwd) / "stderr.txt"
        req = {"script": str(PROGRAMS / f"{script}.py"), "cwd": str(cwd), "env": env_extra,
               "stdout": str(out), "stderr": str(err)}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = []
        reader = threading.Thread(target=lambda: reply.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(TIMEOUT_S)
        if not reply or not reply[0]:
            self.stop()  # kills a hung program with its server; the next run starts a fresh one
            raise AssertionError(f"{script} under torch did not finish in {TIMEOUT_S} s (or its server died)")
        return json.loads(reply[0])["rc"], out.read_text(), err.read_text()


_SERVER = _TorchServer()


@pytest.fixture(scope="module", autouse=True)
def _torch_server():
    yield
    _SERVER.stop()


def _run(lib, script, cwd, env_extra):
    if lib == "torch":
        rc, stdout, stderr = _SERVER.run(script, cwd, env_extra)
    else:
        env = _base_env()
        env.update(env_extra)
        proc = subprocess.run(
            [sys.executable, str(LAUNCHER), lib, str(PROGRAMS / f"{script}.py")],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
        )
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    if rc != 0:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        raise AssertionError(f"{script} under {lib} exited with {rc}:\n{tail}")
    return stdout


def _to_fg(obj):
    """A loaded torch checkpoint with every tensor turned into a ferrograd tensor (same dtype)."""
    if isinstance(obj, torch.Tensor):
        return fg.from_numpy(obj.detach().cpu().numpy().copy())
    if isinstance(obj, dict):
        return type(obj)((k, _to_fg(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_fg(v) for v in obj)
    return obj


def _convert_init(src, dst):
    obj = torch.load(src, weights_only=True)
    if AGAINST_TORCH:
        torch.save(obj, dst)
    else:
        fg.save(_to_fg(obj), dst)


def _close(a, b, rtol, atol):
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= atol + rtol * abs(y)


def compare(script, ref, got, tol):
    rtol, atol = tol
    r, g = _records(ref), _records(got)
    assert r, f"{script}: the torch run printed no RESULT lines"
    for i, (a, b) in enumerate(zip(r, g)):
        where = f"{script}: line {i} ({a[0]} {a[1]})"
        assert a[:2] == b[:2], f"{where}: ferrograd printed {b[0]} {b[1]} instead"
        assert len(a[2]) == len(b[2]), f"{where}: {len(b[2])} values, torch printed {len(a[2])}: {b[2]} vs {a[2]}"
        for j, (x, y) in enumerate(zip(a[2], b[2])):
            kx, ky = _kind(x), _kind(y)
            if a[0] == "RANDOM":
                ok = kx == ky and (kx != "float" or math.isfinite(float(x)) == math.isfinite(float(y)))
            elif kx == "float" or (kx == "int" and ky == "float"):
                ok = ky in ("float", "int") and _close(y, x, rtol, atol)
            else:
                ok = x == y
            assert ok, f"{where}, value {j}: ferrograd {y}, torch {x} (all: {b[2]} vs {a[2]})"
    assert len(r) == len(g), (
        f"{script}: torch printed {len(r)} records, ferrograd {len(g)}; first unmatched: "
        f"{(r if len(r) > len(g) else g)[min(len(r), len(g))][:2]}"
    )


def _params():
    out = []
    for s in _SCRIPTS:
        marks = []
        if s in EXPECTED_FAIL and not AGAINST_TORCH:
            marks.append(pytest.mark.xfail(strict=True, reason=EXPECTED_FAIL[s]))
        out.append(pytest.param(s, marks=marks, id=s))
    return out


def test_expected_fail_names_exist():
    missing = set(EXPECTED_FAIL) | set(TOLERANCE)
    missing -= {p.stem for p in PROGRAMS.glob("*.py")}
    assert not missing, f"EXPECTED_FAIL/TOLERANCE name scripts that do not exist: {sorted(missing)}"


@pytest.mark.parametrize("script", _params())
def test_program(script, tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "fg").mkdir()
    init_torch = tmp_path / "init_torch.pt"
    init_fg = tmp_path / "init_fg.pt"
    ref = _run("torch", script, tmp_path / "torch", {"PROGRAM_SAVE_INIT": str(init_torch)})
    extra = {}
    if init_torch.exists():
        _convert_init(init_torch, init_fg)
        extra["PROGRAM_LOAD_INIT"] = str(init_fg)
    lib = "torch" if AGAINST_TORCH else "ferrograd"
    got = _run(lib, script, tmp_path / "fg", extra)
    compare(script, ref, got, TOLERANCE.get(script, DEFAULT_TOL))


def test_launcher_aliases_torch_modules(tmp_path):
    """Under the launcher `torch.X` is ferrograd's `ferrograd.X`, registered under both names, the
    module keeping its own spec; a submodule ferrograd lacks is a ModuleNotFoundError naming it."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader\n"
        "import ferrograd, ferrograd.nn.functional\n"
        "print('RESULT same', int(torch is ferrograd), int(F is ferrograd.nn.functional),\n"
        "      int(sys.modules['torch.nn.functional'] is F), int(torch.nn.functional is F))\n"
        "print('RESULT spec', F.__spec__.name, DataLoader.__module__.split('.')[0])\n"
        "try:\n"
        "    import torch.no_such_submodule\n"
        "except ModuleNotFoundError as e:\n"
        "    print('RESULT missing', e.name)\n"
    )
    env = _base_env()
    proc = subprocess.run([sys.executable, str(LAUNCHER), "ferrograd", str(probe)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert _records(proc.stdout) == [
        ("RESULT", "same", ["1", "1", "1", "1"]),
        ("RESULT", "spec", ["ferrograd.nn.functional", "ferrograd"]),
        ("RESULT", "missing", ["torch.no_such_submodule"]),
    ]
