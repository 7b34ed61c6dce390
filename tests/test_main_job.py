"""`python -m ferrograd` (train on the packaged digits, selfcheck, --help, --version) and the scripts in
examples/, each run as a user would: in a subprocess, from a scratch directory."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import AGAINST_TORCH

pytestmark = pytest.mark.skipif(AGAINST_TORCH, reason="runs ferrograd's own command line and examples")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
ACCURACY = re.compile(r"test accuracy: ([0-9.]+)% \((\d+)/(\d+)\)")


def run(args, cwd, timeout=60, env=None):
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    e.update(env or {})
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=e)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def accuracy(stdout):
    m = ACCURACY.search(stdout)
    assert m, f"no test accuracy in:\n{stdout}"
    return float(m.group(1)) / 100, int(m.group(2)), int(m.group(3))


def test_train_two_epochs_saves_loadable_weights(tmp_path):
    out = tmp_path / "nested" / "w.safetensors"
    proc = run(["-m", "ferrograd", "train", "--epochs", "2", "--seed", "1", "--hidden", "32",
                "--batch-size", "16", "--lr", "0.003", "--out", str(out), "--progress", "text"], tmp_path)
    acc, correct, total = accuracy(proc.stdout)
    assert total == 359 and 0.8 < acc <= 1.0, proc.stdout
    # the progress bar (stderr): one finished bar per epoch with the running loss
    bars = [line for line in proc.stderr.splitlines() if line.startswith("epoch")]
    assert len(bars) == 2 and all(re.search(r"90/90 .*loss \d+\.\d{4}", b) for b in bars), proc.stderr

    import ferrograd
    from ferrograd import _train

    sd = ferrograd.load(out)
    assert list(sd) == ["1.weight", "1.bias", "3.weight", "3.bias"]
    assert tuple(sd["1.weight"].shape) == (32, 64)
    model = _train.make_model(ferrograd, 32)
    model.load_state_dict(sd)
    # the reloaded weights give the accuracy that was printed, on the same seeded split
    images, labels = _train.load_digits()
    _, test_idx = _train.split_indices(len(labels), 0.2, 1)
    x = ferrograd.from_numpy(images[test_idx].astype(np.float32) / 16.0)
    y = ferrograd.from_numpy(labels[test_idx].astype(np.int64))
    assert _train.evaluate(ferrograd, model, x, y)[1] == correct


def test_default_command_is_train_and_reaches_torch_accuracy(tmp_path):
    """`python -m ferrograd` with its defaults: good accuracy, quickly, and as good as torch running the
    same script (`--lib torch`, same split, same hyperparameters)."""
    proc = run(["-m", "ferrograd", "--progress", "none"], tmp_path)
    acc, _, _ = accuracy(proc.stdout)
    assert acc >= 0.95, proc.stdout
    assert (tmp_path / "digits_mlp.safetensors").exists()
    seconds = float(re.search(r"in ([0-9.]+)s", proc.stdout).group(1))
    assert seconds < 30, proc.stdout

    torch_proc = run(["-m", "ferrograd", "--lib", "torch", "--progress", "none", "--out", ""], tmp_path,
                     env={"OMP_NUM_THREADS": "1"})
    torch_acc, _, _ = accuracy(torch_proc.stdout)
    assert acc >= torch_acc - 0.02, (proc.stdout, torch_proc.stdout)


def test_help_lists_the_options(tmp_path):
    top = run(["-m", "ferrograd", "--help"], tmp_path).stdout
    assert "selfcheck" in top and "train" in top
    train = run(["-m", "ferrograd", "train", "--help"], tmp_path).stdout
    for option in ("--epochs", "--seed", "--hidden", "--lr", "--batch-size", "--out"):
        assert option in train
    assert "--lib" not in train


def test_version(tmp_path):
    import ferrograd

    assert run(["-m", "ferrograd", "--version"], tmp_path).stdout.strip() == f"ferrograd {ferrograd.__version__}"


def test_bad_option_fails(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ferrograd", "train", "--epochs", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--epochs" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "ferrograd", "--no-such-option"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unrecognized" in proc.stderr


def test_selfcheck(tmp_path):
    proc = run(["-m", "ferrograd", "selfcheck"], tmp_path)
    assert "self-check passed" in proc.stdout
    assert "FAIL" not in proc.stdout


def test_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {"mlp_digits.py", "cnn_digits.py", "custom_function.py"} <= names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(tmp_path, script):
    proc = run([str(script)], tmp_path)
    assert proc.stdout.strip(), f"{script.name} printed nothing"
    if "digits" in script.name:  # the training examples: a sane accuracy floor
        m = re.search(r"test accuracy: ([0-9.]+)%", proc.stdout)
        assert m and float(m.group(1)) >= 90, proc.stdout
