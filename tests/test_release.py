"""Release facts: the version (one source, Cargo.toml), `python -m ferrograd --version`,
`ferrograd.show_config()`, and a lean `import ferrograd` (optional modules load on first use).

These describe ferrograd's packaging, not torch's behaviour, so they are skipped when the suite
self-checks against torch. Start-up *time* is measured by benches/import_time.py, not here.
"""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import AGAINST_TORCH

pytestmark = pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's own packaging and start-up")

ROOT = Path(__file__).resolve().parents[1]


def _cargo_version():
    text = (ROOT / "Cargo.toml").read_text()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def _run(code, *args):
    env = dict(os.environ)
    pkg = Path(__import__("ferrograd").__file__).resolve().parents[1]
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, *args, *(["-c", code] if code else [])], env=env, cwd="/",
                          capture_output=True, text=True, timeout=120)


def test_version_is_cargo_version():
    import ferrograd

    assert ferrograd.__version__ == _cargo_version() == ferrograd._C.__version__
    # PEP 440 / SemVer: MAJOR.MINOR.PATCH with an optional pre-release suffix
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", ferrograd.__version__)


def test_python_m_version():
    r = _run(None, "-m", "ferrograd", "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ferrograd {_cargo_version()}"


def test_show_config():
    import ferrograd

    buf = io.StringIO()
    ferrograd.show_config(file=buf)
    out = buf.getvalue()
    for key in ("build features:", "threads:", "SIMD level:", "CUDA:", "CUDA libraries:", "Python:"):
        assert key in out
    assert out.startswith(f"ferrograd {ferrograd.__version__}")
    info = ferrograd._config.config()
    assert "python" in info["features"]
    assert info["num_threads"] == ferrograd.get_num_threads() >= 1
    assert info["simd_level"] in (0, 1, 2)
    assert info["cuda_available"] == ferrograd.cuda.is_available()


def test_import_is_lean_and_submodules_load_on_use():
    code = (
        "import sys, ferrograd\n"
        "heavy = [m for m in ('numpy', 'ferrograd.nn', 'ferrograd.optim', 'ferrograd.utils', 'ferrograd.serialization',"
        " 'ferrograd.viz') if m in sys.modules]\n"
        "print('heavy', heavy)\n"
        "import ferrograd as torch\n"
        "m = torch.nn.Linear(2, 3)\n"
        "print(type(m).__module__, torch.optim.SGD.__name__, callable(torch.save), 'numpy' in sys.modules)\n"
        "print(sorted({'nn', 'optim', 'save', 'load', 'cuda'} - set(dir(torch))))\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "heavy []"
    assert lines[1] == "ferrograd.nn.modules.linear SGD True True"
    assert lines[2] == "[]"


def test_missing_attribute_is_attribute_error():
    import ferrograd

    with pytest.raises(AttributeError, match="no attribute 'not_a_thing'"):
        ferrograd.not_a_thing  # noqa: B018
