"""ferrograd.viz.to_dot: the backward graph as Graphviz DOT.

to_dot also reads torch tensors, so the graph drawn for ferrograd is compared with the one drawn for
torch doing the same, saved-tensor boxes included (their shape, dtype and size; torch names each saved
tensor, ferrograd numbers them). Writing
the file, and rendering to SVG when a `dot` program is on PATH (a stand-in program when not).
"""
import os
import re
import shutil
import stat
import sys

import pytest
import torch

from conftest import fg
from ferrograd.viz import to_dot


def build(L):
    x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=L.float64, requires_grad=True)
    w = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
    h = (x * w).sin() + x
    return (h @ w).exp().sum(), h


def without_saved(dot):
    return [line for line in dot.splitlines() if not re.search(r"n\d+_s\d+", line)]


def test_same_graph_as_torch():
    for pick in (lambda r: r[0], lambda r: list(r)):
        expected = without_saved(to_dot(pick(build(torch))))
        got = without_saved(to_dot(pick(build(fg))))
        assert got == expected


def saved_boxes(dot):
    """(node, shape/dtype/size) of every saved-tensor box, the saved tensor's name dropped."""
    boxes = re.findall(r'^\s*(n\d+)_s\d+ \[label="[^"\\]*\\n([^"]*)"', dot, re.M)
    return sorted(boxes)


def test_saved_tensor_boxes_match_torch():
    expected = saved_boxes(to_dot(build(torch)[0]))
    got = saved_boxes(to_dot(build(fg)[0]))
    assert len(expected) == 6
    assert got == expected
    assert ("n2", "(2, 3) float64\\n48 B") in got  # MvBackward0 keeps the matrix: 6 float64


def test_contents():
    out, _ = build(fg)
    dot = "\n".join(without_saved(to_dot(out)))
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    names = re.findall(r'label="([A-Za-z0-9]+)(?:\\n[^"]*)?"', dot)
    assert sorted(set(names)) == sorted({"output", "SumBackward0", "ExpBackward0", "MvBackward0", "AddBackward0",
                                         "SinBackward0", "MulBackward0", "AccumulateGrad"})
    assert names.count("AccumulateGrad") == 2  # one box per leaf, however often it is used
    assert 'label="AccumulateGrad\\n(2, 3) float64"' in dot
    assert 'label="AccumulateGrad\\n(3,) float64"' in dot
    assert 'label="output\\n()"' in dot
    edges = re.findall(r"^\s*(\w+) -> (\w+);$", dot, re.M)
    assert len(edges) == 10  # 9 next_functions edges + the root's


def test_leaf_and_constant():
    leaf = fg.ones(2, requires_grad=True)
    assert 'label="leaf\\n(2,) float32"' in to_dot(leaf)
    assert "->" not in to_dot(fg.ones(2))


def test_writes_dot_without_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    path = tmp_path / "graph.dot"
    dot = to_dot(build(fg)[0], path)
    assert path.read_text() == dot
    assert not (tmp_path / "graph.svg").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="stand-in program is a shell script")
def test_renders_svg_with_graphviz(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    log = tmp_path / "args"
    fake.write_text(f'#!/bin/sh\necho "$@" > {log}\necho "<svg/>" > "$4"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake) if name == "dot" else None)
    to_dot(build(fg)[0], str(tmp_path / "g.dot"))
    assert (tmp_path / "g.svg").read_text().strip() == "<svg/>"
    assert log.read_text().split() == ["-Tsvg", str(tmp_path / "g.dot"), "-o", str(tmp_path / "g.svg")]


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz not installed")
def test_real_graphviz(tmp_path):
    to_dot(build(fg)[0], tmp_path / "g.dot")
    assert "<svg" in (tmp_path / "g.svg").read_text()
    assert os.path.getsize(tmp_path / "g.svg") > 0
