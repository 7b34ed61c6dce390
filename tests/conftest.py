"""Shared pytest setup: selects the library under test.

`fg` is ferrograd, the library under test. With FG_TEST_AGAINST_TORCH=1 it is torch itself, which
self-checks the suite: every test must pass torch-vs-torch, which proves that the tests encode torch's
behaviour and not ferrograd's. Test modules do `from conftest import fg` (and AGAINST_TORCH where needed).
"""
import os

import numpy as np
import pytest
import torch

AGAINST_TORCH = os.environ.get("FG_TEST_AGAINST_TORCH") == "1"

if AGAINST_TORCH:
    fg = torch
else:
    import ferrograd as fg  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same torch and numpy global seeds."""
    torch.manual_seed(0)
    np.random.seed(0)
    yield
