"""The Rust crate's dependencies point down its layers (bindings -> optim -> ops -> autograd ->
backend -> tensor -> op table -> base), except for the edges scripts/check_layers.py allows with a reason, and
docs/architecture.md shows that list as it is. The checker itself is tested on made-up file maps:
it must fail on an upward edge, an edge between the backends, PyO3 outside src/python and an
undeclared call back into the Python package.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import AGAINST_TORCH

pytestmark = pytest.mark.skipif(AGAINST_TORCH, reason="checks ferrograd's own source tree")

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_layers", ROOT / "scripts" / "check_layers.py")
cl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cl)

LIB = "pub mod tensor;\npub mod ops;\npub use tensor::Tensor;\n"


def problems(files):
    return cl.check({"src/lib.rs": LIB, **files})[0]


def test_the_tree_passes_and_the_doc_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_layers.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 problem(s)" in r.stdout


def test_a_downward_edge_passes():
    assert problems({
        "src/ops/mod.rs": "use crate::tensor::Tensor;\npub fn f(t: &crate::Tensor) {}\n",
        "src/tensor/mod.rs": "pub struct Tensor;\n",
    }) == []


@pytest.mark.parametrize("code", [
    "use crate::ops::made_up;\n",                       # a use statement
    "fn g() { crate::ops::made_up(); }\n",              # a path in code
    "use crate::{error::Result, ops::{made_up}};\n",    # a nested use tree
    "use crate::ops;\nfn g() { ops::made_up(); }\n",    # a module imported, then its item used
])
def test_a_made_up_upward_edge_fails(code):
    found = problems({"src/tensor/mod.rs": code, "src/ops/mod.rs": "pub fn made_up() {}\n"})
    assert len(found) == 1, found
    assert "src/tensor/mod.rs:" in found[0] and "points up" in found[0] and "ops::made_up" in found[0]


def test_comments_and_strings_are_not_edges():
    assert problems({
        "src/tensor/mod.rs": '// use crate::ops::x;\n/* crate::ops::y */\nconst S: &str = "crate::ops::z";\n',
    }) == []


def test_super_paths_and_exported_macros_are_resolved():
    # `super::` from backend/cpu/mod.rs is backend; a macro exported by ops and invoked in tensor is an edge
    found = problems({
        "src/backend/cpu/mod.rs": "fn g() { super::cuda::made_up(); }\n",
        "src/ops/mod.rs": "#[macro_export]\nmacro_rules! made_up_macro { () => {} }\n",
        "src/tensor/mod.rs": "fn g() { made_up_macro!(); }\n",
    })
    assert len(found) == 2, found
    assert any("across the backends" in p and "backend::cuda::made_up" in p for p in found)
    assert any("points up" in p and "ops::made_up_macro" in p for p in found)


def test_the_op_table_sits_below_the_backends():
    # ops::table imports nothing and anything may read it; the rest of ops stays above the backends
    files = {"src/ops/table.rs": "#[macro_export]\nmacro_rules! made_up_rows { () => {} }\n",
             "src/ops/mod.rs": "pub mod table;\n"}
    assert problems({**files, "src/backend/cuda/source.rs": "const R: () = crate::made_up_rows!();\nuse crate::ops::table::ROWS;\n"}) == []
    found = problems({**files, "src/ops/table.rs": "use crate::tensor::Tensor;\n"})
    assert len(found) == 1 and "points up" in found[0]


def test_an_allowed_edge_passes_but_only_for_its_item():
    allowed = {"src/tensor/mod.rs": "use crate::autograd::NodeRef;\n"}
    assert problems(allowed) == []
    found = problems({"src/tensor/mod.rs": "use crate::autograd::Engine;\n"})
    assert len(found) == 1 and "autograd::Engine" in found[0]


def test_a_module_in_no_layer_fails():
    found = problems({"src/newthing/mod.rs": "pub fn f() {}\n"})
    assert len(found) == 1 and "in no layer" in found[0]


@pytest.mark.parametrize("code", [
    "use pyo3::prelude::*;\n",
    "#[pyfunction]\nfn f() {}\n",
    'fn f() { let a = numpy::PyArray1::<f32>::zeros; }\n',
    '#[cfg(feature = "python")]\nfn f() {}\n',
])
def test_pyo3_outside_the_bindings_fails(code):
    found = problems({"src/ops/mod.rs": code, "src/python/mod.rs": code})
    assert len(found) == 1 and found[0].startswith("src/ops/mod.rs") and "PyO3" in found[0]


def test_an_undeclared_callback_into_the_package_fails():
    code = 'fn f(py: Python<\'_>) { py.import("ferrograd._made_up")?.getattr("thing")?; }\n'
    found = problems({"src/python/mod.rs": code})
    assert len(found) == 1 and "ferrograd._made_up.thing" in found[0]
    declared = 'fn f(py: Python<\'_>) { py.import("ferrograd._size")?.getattr("Size")?; }\n'
    assert problems({"src/python/mod.rs": declared}) == []


def test_stale_allow_list_entries_are_reported():
    _, _, used = cl.check({"src/lib.rs": LIB})
    assert len(cl.stale(used)) == len(cl.ALLOWED) + len(cl.CALLBACKS)
