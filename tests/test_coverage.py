"""Every op in the library's registry has a parity case in test_ops.py (names as torch spells them).

`ferrograd._C.registered_ops()` lists the registered op names. torch has no such registry, so these
tests are skipped when the suite self-checks against torch (FG_TEST_AGAINST_TORCH=1).
"""
import pytest

from conftest import AGAINST_TORCH, fg
from test_ops import covered_op_names

needs_registry = pytest.mark.skipif(AGAINST_TORCH, reason="torch has no op registry to check")

# The engine's core op set, by torch function names; each must be in the registry.
CORE_OPS = """
add sub mul div floor_divide remainder pow neg abs
eq ne lt le gt ge logical_and logical_or logical_not logical_xor where maximum minimum clamp
exp log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu sign floor ceil round trunc
reciprocal square erf
sum mean prod max min amax amin argmax argmin var std logsumexp norm all any cumsum
matmul mm bmm mv dot outer softmax log_softmax
reshape view flatten squeeze unsqueeze transpose permute expand cat stack split chunk repeat flip narrow
clone gather index_select masked_fill
""".split()


def _registered():
    ops = fg._C.registered_ops()
    assert isinstance(ops, (list, tuple)) and all(isinstance(n, str) for n in ops), ops
    return list(ops)


@needs_registry
def test_every_registered_op_has_a_parity_case():
    missing = sorted(set(_registered()) - covered_op_names())
    assert not missing, f"registered ops without a parity case in tests/test_ops.py: {missing}"


@needs_registry
def test_registry_has_no_duplicates():
    ops = _registered()
    dups = sorted({n for n in ops if ops.count(n) > 1})
    assert not dups, f"ops registered twice: {dups}"


@needs_registry
def test_core_ops_are_registered():
    missing = sorted(set(CORE_OPS) - set(_registered()))
    assert not missing, f"core ops missing from the registry: {missing}"


def test_issue_2_ops_have_cases():
    assert not set(CORE_OPS) - covered_op_names()
