"""The Tensor class is assembled in one place (ferrograd/_tensor_methods.py), in one order: its
attributes do not depend on which module is imported first, no module patches Tensor when it is
imported, and a name that two installers define raises at assembly. Also: the nn base classes sit
where torch's do (`_NormBase`, `_ConvNd`, ...)."""

import ast
import json
import os
import pathlib
import subprocess
import sys
import types

import pytest

from conftest import fg
import torch

PACKAGE = pathlib.Path(fg.__file__).parent

_DIR_OF_TENSOR = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
import ferrograd
print(json.dumps(sorted(dir(ferrograd.Tensor))))
"""


def _dir_after(*modules):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    out = subprocess.run([sys.executable, "-c", _DIR_OF_TENSOR, *modules], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_tensor_attributes_do_not_depend_on_import_order():
    base = _dir_after("ferrograd")
    assert "scatter" in base and "uniform_" in base and "bitwise_left_shift" in base and "mH" in base
    # a private topic module, a public submodule, or everything lazy loaded first: the same Tensor
    for first in (("ferrograd._bitwise",), ("ferrograd.linalg", "ferrograd._sorting"), ("ferrograd.nn.functional",),
                  ("ferrograd.special", "ferrograd.distributions", "ferrograd.optim", "ferrograd.fx",
                   "ferrograd.nn", "ferrograd.utils.data", "ferrograd._tensor_methods")):
        assert _dir_after(*first) == base, first


def test_same_tensor_after_the_lazy_submodules_load():
    before = sorted(dir(fg.Tensor))
    import ferrograd.distributions  # noqa: F401
    import ferrograd.fx  # noqa: F401
    import ferrograd.nn  # noqa: F401
    import ferrograd.optim  # noqa: F401
    import ferrograd.special  # noqa: F401
    assert sorted(dir(fg.Tensor)) == before


def _tensor_patches(path):
    """Lines of `path` that assign an attribute of Tensor (Tensor.x = ..., setattr(Tensor, ...))."""
    tree = ast.parse(path.read_text())

    def is_tensor(node):
        return (isinstance(node, ast.Name) and node.id == "Tensor") or (
            isinstance(node, ast.Attribute) and node.attr == "Tensor")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and is_tensor(t.value) for t in targets):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and node.args and is_tensor(node.args[0])):
            lines.append(node.lineno)
    return lines


# _inplace_functions.py still sets Tensor.conj_physical_ on import (a file another change owns: its one
# line moves into a TENSOR_ATTRIBUTES table when that change lands)
_KNOWN_PATCHES = {"_inplace_functions.py"}


def test_only_the_assembler_patches_tensor():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ("_tensor_methods.py",) or rel in _KNOWN_PATCHES:
            continue
        lines = _tensor_patches(path)
        if lines:
            found[rel] = lines
    assert found == {}


def test_a_name_installed_twice_raises():
    from ferrograd import _tensor_methods as tm

    def first(input, k):
        return k

    def second(input, k):
        return -k

    a = types.SimpleNamespace(__name__="topic_a", TENSOR_METHODS={"twice": first}, TENSOR_ATTRIBUTES={})
    b = types.SimpleNamespace(__name__="topic_b", TENSOR_METHODS=[], TENSOR_ATTRIBUTES={"twice": second})
    cls = type("T", (), {})
    with pytest.raises(RuntimeError, match="twice.*topic_a.*topic_b"):
        tm.install(cls, (a, b))
    # one installer: installed, as a method
    cls = type("T", (), {})
    installed, replaced = tm.install(cls, (a,))
    assert installed == {"twice": "topic_a"} and replaced == []
    assert cls().twice(3) == 3


def test_the_real_installers_are_disjoint_and_replace_only_tensor_type():
    from ferrograd import _tensor_methods as tm

    # the assembly ran once at import; every installed name came from exactly one installer
    assert tm.INSTALLED and all(getattr(fg.Tensor, n, None) is not None for n in tm.INSTALLED)
    assert tm.NATIVE_REPLACED == ["type"]
    # the declared tables again, into a fresh class: no name declared twice
    cls = type("T", (), {})
    installed, _ = tm.install(cls, tm._TOPICS)
    assert set(installed) <= set(tm.INSTALLED)
    tm.assemble()  # a second call changes nothing
    assert sorted(dir(fg.Tensor)) == sorted(set(dir(fg.Tensor)))


@pytest.mark.parametrize("module, names", [
    ("batchnorm", ["_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]),
    ("instancenorm", ["_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]),
    ("conv", ["_ConvNd", "_ConvTransposeNd", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
              "ConvTranspose3d"]),
    ("loss", ["_Loss", "_WeightedLoss", "HuberLoss", "MarginRankingLoss", "MultiMarginLoss"]),
    ("activation", ["ELU", "PReLU", "RReLU", "Softmin", "GLU"]),
    ("normalization", ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]),
    ("padding", ["ConstantPad1d", "ZeroPad2d", "ReflectionPad1d", "ReplicationPad2d", "CircularPad3d"]),
    ("pooling", ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]),
    ("distance", ["CosineSimilarity", "PairwiseDistance"]),
    ("upsampling", ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]),
    ("pixelshuffle", ["PixelShuffle", "PixelUnshuffle"]),
    ("fold", ["Fold", "Unfold"]),
])
def test_nn_modules_live_where_torchs_do(module, names):
    import importlib

    ours = importlib.import_module(f"ferrograd.nn.modules.{module}")
    theirs = importlib.import_module(f"torch.nn.modules.{module}")
    for name in names:
        assert hasattr(theirs, name), name  # (the list is torch's)
        assert getattr(ours, name).__module__ == ours.__name__, name
        if not name.startswith("_"):
            assert getattr(fg.nn, name) is getattr(ours, name)


def test_norm_and_conv_bases_as_torch():
    from ferrograd.nn.modules import batchnorm, conv, instancenorm

    for L in (fg, torch):
        bn, inn = L.nn.BatchNorm2d(3), L.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
        base = L.nn.modules.batchnorm._NormBase
        assert isinstance(bn, base) and isinstance(inn, base)
        assert isinstance(L.nn.ConvTranspose2d(2, 3, 3), L.nn.modules.conv._ConvNd)
        assert isinstance(L.nn.ConvTranspose1d(2, 3, 3), L.nn.modules.conv._ConvTransposeNd)
    assert issubclass(instancenorm._InstanceNorm, batchnorm._NormBase)
    assert not issubclass(instancenorm._InstanceNorm, batchnorm._BatchNorm)
    assert issubclass(conv._ConvTransposeNd, conv._ConvNd)


@pytest.mark.parametrize("make, shape", [
    (lambda L: L.nn.InstanceNorm2d(4, affine=True, track_running_stats=True), (2, 4, 3, 5)),
    (lambda L: L.nn.InstanceNorm1d(4), (2, 4, 5)),
    (lambda L: L.nn.BatchNorm1d(4, momentum=None), (2, 4, 5)),
])
def test_instance_and_batch_norm_state_and_repr_as_torch(make, shape):
    m, t = make(fg), make(torch)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict())
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    for (name, a), b in zip(m.state_dict().items(), t.state_dict().values()):
        assert a.tolist() == b.tolist(), name
    assert m.state_dict()._metadata[""]["version"] == t.state_dict()._metadata[""]["version"]
    m.reset_parameters()
    t.reset_parameters()
    x = torch.randn(*shape, dtype=torch.float64)
    m.double(), t.double()
    assert torch.allclose(torch.tensor(m(fg.tensor(x.numpy())).tolist(), dtype=torch.float64), t(x))


@pytest.mark.parametrize("make", [
    lambda L: L.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1),
    lambda L: L.nn.ConvTranspose1d(2, 3, 3, bias=False),
    lambda L: L.nn.Conv2d(2, 3, 3, padding="same", padding_mode="reflect"),
])
def test_conv_repr_and_attributes_as_torch(make):
    m, t = make(fg), make(torch)
    assert repr(m) == repr(t)
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                 "output_padding", "transposed", "padding_mode"):
        assert getattr(m, attr) == getattr(t, attr), attr
    assert tuple(m.weight.shape) == tuple(t.weight.shape)


def test_conv_transpose_rejects_other_padding_modes_as_torch():
    for L in (fg, torch):
        with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
            L.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect")
