"""The type stub of the native module (`python/ferrograd/_C.pyi`) matches the built module:
it is what scripts/gen_stub.py generates from it, and mypy's stubtest finds no difference
between the stub and the runtime (names, parameters, defaults, properties, final classes).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import AGAINST_TORCH

pytestmark = pytest.mark.skipif(AGAINST_TORCH, reason="checks ferrograd's own type stub")

ROOT = Path(__file__).resolve().parents[1]


def _env():
    import ferrograd

    env = dict(os.environ)
    pkg_dir = str(Path(ferrograd.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_dir, env.get("PYTHONPATH")) if p)
    return env


def test_stub_and_marker_are_packaged():
    import ferrograd

    pkg = Path(ferrograd.__file__).parent
    assert (pkg / "_C.pyi").is_file()
    assert (pkg / "py.typed").is_file()


def test_stub_is_generated_from_the_module():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_stub.py"), "--check"], env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + "\n(run `python scripts/gen_stub.py` and commit the stub)"


def test_stubtest():
    try:
        import mypy.stubtest  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (pip install mypy, listed in requirements-test.txt)")
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "ferrograd._C"], env=_env(), cwd=str(ROOT / "tests"),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
