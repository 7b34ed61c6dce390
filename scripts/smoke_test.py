"""Smoke test of an installed ferrograd (a wheel in a fresh environment), run from outside the
source tree by scripts/build-wheel --smoke and by CI: import, version, config, a forward and
backward pass with known gradients, NumPy/DLPack interop, and the command line."""
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np

import ferrograd as torch

site = Path(sysconfig.get_paths()["purelib"]).resolve()
where = Path(torch.__file__).resolve()
assert site in where.parents, f"ferrograd imported from {where}, not from the environment's {site}"
pkg = where.parent
assert (pkg / "_C.pyi").is_file() and (pkg / "py.typed").is_file(), "type stub or py.typed missing"

print("ferrograd", torch.__version__, "from", pkg)
torch.show_config()

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x * x).sum() + (2 * x).tanh().sum()
y.backward()
expected = 2 * np.array([1.0, 2.0, 3.0]) + 2 * (1 - np.tanh(2 * np.array([1.0, 2.0, 3.0])) ** 2)
assert np.allclose(x.grad.numpy(), expected, atol=1e-6), (x.grad, expected)
assert type(y.grad_fn).__name__ == "AddBackward0" or "AddBackward0" in repr(y.grad_fn)

a = np.arange(6.0).reshape(2, 3)
t = torch.from_dlpack(a)
t[0, 0] = 42.0
assert a[0, 0] == 42.0, "from_dlpack must share memory"
assert np.from_dlpack(t.t()).shape == (3, 2)

m = torch.nn.Linear(3, 2)
out = m(torch.ones(4, 3)).sum()
out.backward()
assert m.weight.grad.shape == (2, 3)

v = subprocess.run([sys.executable, "-m", "ferrograd", "--version"], capture_output=True, text=True, check=True)
assert v.stdout.strip() == f"ferrograd {torch.__version__}", v.stdout
subprocess.run([sys.executable, "-m", "ferrograd", "selfcheck"], check=True, stdout=subprocess.DEVNULL)
print("smoke test passed")
