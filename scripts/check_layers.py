#!/usr/bin/env python3
"""Check that the Rust crate's dependencies point down its layers.

    python scripts/check_layers.py              # exit 1 on a forbidden edge (see below)
    python scripts/check_layers.py --edges      # every edge between layers, with files and lines
    python scripts/check_layers.py --write-doc  # rewrite the generated sections of docs/architecture.md

The layers, top to bottom, are LAYERS below: bindings (src/python) -> optim -> ops -> autograd ->
backend -> tensor -> op table (ops::table) -> base. The script reads every src/**/*.rs file, finds what it refers to in the
crate (`use crate::...`, `crate::...::` paths, `super::` paths, the crate's exported macros, the
root's re-exports such as `crate::Tensor`) and fails when

  * a reference points to a higher layer, or between the CPU and CUDA backends, and is not in
    ALLOWED (each allowed edge says why it exists);
  * an ALLOWED entry or a CALLBACKS entry matches nothing any more (remove it, then --write-doc);
  * a module belongs to no layer (add it to LAYERS);
  * PyO3 appears outside src/python;
  * the native module imports a module of the Python package that is not in CALLBACKS;
  * docs/architecture.md's generated sections differ from what --write-doc would write.

Only the standard library is used; the script reads the source text, it does not build anything.
"""
import argparse
import bisect
import functools
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = "docs/architecture.md"

# Layers, top to bottom. A module path belongs to the layer of its longest matching prefix
# (module paths are written as in Rust, without `crate::`; "" is the crate root).
LAYERS = [
    ("bindings", ["python"]),
    ("optim", ["optim"]),
    ("ops", ["ops"]),
    ("autograd", ["autograd"]),
    ("backend", ["backend"]),
    ("tensor", ["tensor"]),
    # the op table (one row per op; every list of ops is generated from it) imports nothing, so
    # anything may read it: the CUDA sources take their expressions from it
    ("op table", ["ops::table"]),
    ("base", ["error", "alloc", ""]),
]

# Parts of one layer that must not depend on each other either (the backends do not route each
# other's work): an edge between two of them needs an ALLOWED entry, as an upward edge does.
PEERS = ["backend::cpu", "backend::cuda"]

# The exceptions: (from module, to path, why). An edge is allowed when its source module starts
# with `from` and the path it refers to starts with `to` (both compared by `::` components).
ALLOWED = [
    # tensor -> backend: tensor sits below backend, yet a tensor's data lives in a backend.
    ("tensor", "backend::Device",
     "`Device` is defined in backend/mod.rs, and every tensor and storage records its device"),
    ("tensor", "backend::cuda::to_device",
     "reading a device tensor's values on the host (`to_vec`, `item`, `with_contiguous`) copies it to the host first"),
    ("tensor", "backend::cuda::zeros",
     "`Tensor::zeros_on` creates the tensor directly on its device"),
    ("tensor", "backend::cuda::full",
     "`Tensor::full_on` creates the tensor directly on its device"),
    ("tensor", "backend::cuda::place",
     "the random factories (`random_on`, `randint_on`) place a host-made tensor on its device"),
    ("tensor", "backend::cuda::has_kernels",
     "the random factories ask whether the device can draw the numbers itself"),
    ("tensor", "backend::cuda::native::random",
     "`random_on` draws uniform/normal numbers with the device's generator kernel"),
    ("tensor", "backend::cuda::native::randint",
     "`randint_on` draws integers with the device's generator kernel"),
    ("tensor", "backend::cpu::span",
     "host reads of a tensor's values go through the CPU backend's strided view of a buffer"),
    ("tensor", "backend::cpu::contiguous",
     "host reads of a non-contiguous tensor make it contiguous with the CPU kernel first"),
    ("tensor", "backend::cpu::cast",
     "`random_on` draws narrow float dtypes in float32 on the device and casts them"),
    # tensor -> autograd: the autograd metadata a tensor carries.
    ("tensor", "autograd::Edge",
     "a tensor's autograd metadata holds its edge into the graph (`grad_fn` and output index)"),
    ("tensor", "autograd::NodeRef",
     "a tensor's autograd metadata holds a counted reference to its `grad_fn` node"),
    ("tensor", "autograd::TensorHook",
     "a tensor holds its `register_hook` hooks"),
    ("tensor", "autograd::next_hook_id",
     "hook handles are numbered by one counter shared with node hooks"),
    # tensor -> ops: what a view needs to rebuild its history after an in-place change.
    ("tensor", "ops::ViewFn",
     "a view records how to replay itself from its base (torch's view replay, used after an in-place op on the base)"),
    ("tensor", "ops::view_grad_fn",
     "reading `grad_fn` of a view whose base changed in place builds its new node (torch's CopySlices rebase)"),
    ("tensor", "ops::view_rebase_error",
     "a view that may not be rebased (made under no_grad, or by split/unbind) gets torch's error node"),
    ("tensor", "ops::view_error_fn",
     "a view that may not be rebased (made under no_grad, or by split/unbind) gets torch's error node"),
    ("tensor", "ops::shape::type_word",
     "error messages name a dtype as torch does ('Float', 'Long'); the word is kept in ops/shape.rs, not with DType"),
    # backend -> ops
    ("backend::cuda::native", "ops::shape::type_word",
     "the cuBLAS path's \"not implemented for 'Half'\" error names the dtype as torch does"),
    # autograd -> ops: the engine adds, reduces and converts gradients with differentiable ops.
    ("autograd::engine", "ops::add",
     "gradients arriving at one input are summed with the differentiable add, so create_graph=True records it"),
    ("autograd::engine", "ops::sum_to",
     "the engine undoes broadcasting once per edge (sum to the input's shape) with the differentiable sum"),
    ("autograd::engine", "ops::to_device",
     "a gradient is moved to its input's device by the differentiable copy"),
    ("autograd::engine", "ops::to_dtype",
     "a gradient is cast to its input's dtype by the differentiable cast"),
    ("autograd::engine", "ops::contiguous_copy",
     "a gradient stored into `.grad` is copied into a dense tensor of its own, as torch's AccumulateGrad"),
    ("autograd::engine", "ops::add_inplace_raw",
     "without create_graph, a gradient added into an existing `.grad` is added in place, as torch's AccumulateGrad"),
    ("autograd::engine", "ops::has_nan",
     "anomaly mode checks each node's gradients for NaN (torch's \"returned nan values\" error)"),
    ("autograd::engine", "ops::plain_pair",
     "accumulating into a gradient nobody else holds, without grad mode, is done in place (a fast path)"),
    ("autograd::engine", "ops::update_plain",
     "accumulating into a gradient nobody else holds, without grad mode, is done in place (a fast path)"),
    # between the backends
    ("backend::cpu", "backend::cuda::common_device",
     "the CPU primitives (map, zip, select, ...) also run device tensors through host mirrors: the host fallback"),
    ("backend::cpu", "backend::cuda::host_mirror",
     "the host fallback copies a device operand to the host before the CPU kernel runs"),
    ("backend::cpu", "backend::cuda::place",
     "the host fallback moves the CPU kernel's result back to the operands' device"),
    ("backend::cpu", "backend::cuda::has_kernels",
     "`cpu::cast` hands a device tensor to the device's cast kernel when there is one"),
    ("backend::cpu", "backend::cuda::native::cast",
     "`cpu::cast` hands a device tensor to the device's cast kernel when there is one"),
    ("backend::cpu", "backend::cuda::contiguous",
     "`cpu::contiguous` of a device tensor is the device's strided copy"),
    ("backend::cpu", "backend::cuda::copy_into",
     "`cpu::copy_into` into a device tensor is the device's copy"),
    ("backend::cpu", "backend::cuda::to_device",
     "`cpu::copy_into` of a device source into a host tensor copies it to the host first"),
    ("backend::cuda", "backend::cpu::contiguous",
     "device-to-host and host-to-device copies make a strided tensor contiguous with the CPU kernel"),
    ("backend::cuda", "backend::cpu::copy_into",
     "`copy_` into a device tensor of a strided host source runs the CPU copy on a host mirror"),
]

# Where the native module (src/python) imports a module of the Python package at run time:
# (Python module, attribute or "*" for a name computed at run time) -> why.
CALLBACKS = {
    ("ferrograd._size", "Size"):
        "`x.shape` / `x.size()` return torch.Size's equivalent, a tuple subclass defined in Python",
    ("ferrograd._tensor_str", "tensor_repr"):
        "`repr(x)` follows torch's printing rules (precision, summarising, suffixes), written in Python",
    ("ferrograd.return_types", "*"):
        "`max(dim)`, `sort`, `topk`, ... return torch's named tuples (`values`, `indices`), defined in Python",
    ("ferrograd._creation", "_index_tensor"):
        "an index given as a Python sequence becomes a bool or int64 tensor by torch's rules for index data",
    ("ferrograd._creation", "_rebuild_tensor"):
        "pickling (`__reduce__`) names the Python function that rebuilds the tensor from its NumPy values",
    ("ferrograd", "tensor"):
        "the legacy constructor `Tensor(data)` with a list, tuple or array builds the values with the public `tensor()`",
    ("ferrograd", "*"):
        "`__torch_function__`, on a native function's failure path only: the public `ferrograd.<name>` is handed to the override",
    ("ferrograd.overrides", "dispatch_if_overridden"):
        "`__torch_function__`, on a native function's failure path only: an argument's override (an fx Proxy's) takes the call",
    ("ferrograd.autograd", "backward"):
        "`Tensor.backward` with `inputs=` or a non-tensor gradient uses `autograd.backward`'s argument handling",
    ("ferrograd._out", "creation_out"):
        "a creation function called with `out=`: torch's out= semantics (resize, warnings, errors) are written in Python",
    ("ferrograd.utils._generator", "draw_like"):
        "rand/randn/randint with `generator=`: the values come from the Generator object, a Python class around NumPy's PCG64",
}

_MARK = "<!-- check_layers:{}:{} (generated by scripts/check_layers.py --write-doc; do not edit) -->"


# --- reading Rust source -------------------------------------------------------------------------

_TOKEN = re.compile(r"""//|/\*|(?<![\w])b?r#*"|b?"|'""")


@functools.lru_cache(maxsize=None)
def strip(code, keep_strings=False):
    """The code with comments (and, unless keep_strings, string and char literals) blanked out;
    newlines and offsets are kept, so line numbers stay right."""
    out = []
    i, n = 0, len(code)

    def blank(a, b, keep=False):
        out.append(code[a:b] if keep else re.sub(r"[^\n]", " ", code[a:b]))

    while i < n:
        m = _TOKEN.search(code, i)
        if not m:
            out.append(code[i:])
            break
        out.append(code[i:m.start()])
        i, tok = m.start(), m.group()
        if tok == "//":
            j = code.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
        elif tok == "/*":
            depth, j = 1, i + 2
            while j < n and depth:
                if code.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif code.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
        elif tok.lstrip("b").startswith("r"):
            hashes = tok.lstrip("b")[1:-1]
            end = code.find('"' + hashes, i + len(tok))
            j = n if end < 0 else end + 1 + len(hashes)
            blank(i, j, keep_strings)
        elif tok.endswith('"'):
            j = i + len(tok)
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" else 1
            j += 1
            blank(i, j, keep_strings)
        else:  # a char literal, or the quote of a lifetime
            c = re.match(r"'(\\.[^']*|[^'\\])'", code[i:i + 12])
            j = i + (c.end() if c else 1)
            blank(i, j, keep_strings or not c)
        i = j
    return "".join(out)


def line_finder(code):
    starts = [m.start() for m in re.finditer("\n", code)]
    return lambda pos: bisect.bisect_left(starts, pos) + 1


def module_of(rel):
    """src/ops/shape.rs -> ["ops", "shape"]; src/ops/mod.rs -> ["ops"]; src/lib.rs -> []."""
    parts = list(Path(rel).with_suffix("").parts[1:])
    if parts and parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def inline_mods(code):
    """(start, end, name) of every `mod name { ... }` block in stripped code."""
    spans = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        spans.append((m.start(), j, m.group(1)))
    return spans


def module_at(base, spans, pos):
    return base + [name for a, b, name in spans if a <= pos < b]


def expand_use(tree):
    """`a::{b, c::{d, self}}` -> [["a","b"], ["a","c","d"], ["a","c"]] (aliases: [path, alias])."""
    tree = re.sub(r"\s+", "", tree)

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            cur += ch
        if cur:
            parts.append(cur)
        return parts

    def go(prefix, s):
        if "{" in s and (s.index("{") < s.index("as") if "as" in s else True):
            head = s[:s.index("{")].rstrip(":")
            inner = s[s.index("{") + 1:s.rindex("}")]
            pre = prefix + ([p for p in head.split("::") if p] if head else [])
            res = []
            for part in split_top(inner):
                res += go(pre, part)
            return res
        alias = None
        m = re.match(r"(.*)as(\w+)$", s)
        if m and "::" in s and not s.endswith("::as"):
            s, alias = m.group(1), m.group(2)
        path = prefix + [p for p in s.split("::") if p]
        if path and path[-1] == "self":
            path = path[:-1]
        return [(path, alias or (path[-1] if path else None))]

    return go([], tree)


def resolve(path, here):
    """A path as written (["crate","ops","add"], ["super","x"]) -> a crate path, or None when it
    is not in the crate (std::, pyo3::, a local child module, ...)."""
    if not path:
        return None
    if path[0] == "crate":
        return path[1:]
    if path[0] in ("super", "self"):
        cur = list(here)
        while path and path[0] in ("super", "self"):
            if path[0] == "super":
                cur = cur[:-1]
            path = path[1:]
        return cur + path
    return None


class Source:
    """What one file refers to in the crate."""

    def __init__(self, rel, text):
        self.rel, self.text = rel, text
        self.code = strip(text)
        self.module = module_of(rel)


def macro_definitions(sources):
    """Exported macros (`#[macro_export] macro_rules! name`) live at the crate root by name; map
    each to the module that defines it."""
    defs = {}
    for s in sources:
        for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(\w+)", s.code):
            defs[m.group(1)] = s.module + [m.group(1)]
    return defs


def root_reexports(sources):
    """`pub use tensor::{DType, Tensor};` in lib.rs: crate::Tensor means tensor::Tensor."""
    names = {}
    for s in sources:
        if s.module == [] and s.rel.endswith("lib.rs"):
            for m in re.finditer(r"\bpub\s+use\s+([^;]+);", s.code):
                for path, alias in expand_use(m.group(1)):
                    if path and path[0] not in ("std", "crate", "self", "super"):
                        names[alias] = path
    return names


_REFS = {}


def references(src, macros, reexports):
    """[(line, target path)] for every reference of this file into the crate."""
    key = (src.rel, src.text, repr(macros), repr(reexports))
    if key not in _REFS:
        _REFS[key] = _references(src, macros, reexports)
    return _REFS[key]


def _references(src, macros, reexports):
    code = src.code
    spans = inline_mods(code)
    line_of = line_finder(code)
    refs, aliases = [], {}
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        here = module_at(src.module, spans, m.start())
        for path, alias in expand_use(m.group(1)):
            target = resolve(path, here)
            if target is None:
                continue
            refs.append((line_of(m.start()), target))
            if alias and alias != "*" and alias[0].islower():
                aliases[alias] = (target, len(refs) - 1)
    body = re.sub(r"\buse\s+[^;]+;", lambda m: re.sub(r"[^\n]", " ", m.group()), code)
    for m in re.finditer(r"(?<![\w:])(crate|super|self)((?:\s*::\s*(?:super|self|\w+))+)", body):
        here = module_at(src.module, spans, m.start())
        path = [m.group(1)] + [p for p in re.split(r"\s*::\s*", m.group(2)) if p]
        if m.group(1) == "self" and len(path) == 1:
            continue
        target = resolve(path, here)
        if target is not None:
            refs.append((line_of(m.start()), target))
    # a module imported by name (`use crate::ops;`) and used as `ops::add(...)`: refer to the items
    refined = set()
    for alias, (target, idx) in aliases.items():
        used = [(line_of(m.start()), target + m.group(1).split("::"))
                for m in re.finditer(r"(?<![\w:])" + re.escape(alias) + r"::(\w+(?:::\w+)*)", body)]
        if used:
            refs += used
            refined.add(idx)
    refs = [r for i, r in enumerate(refs) if i not in refined]
    # the crate's exported macros, invoked without a path
    if macros:
        names = "|".join(re.escape(n) for n in macros)
        for m in re.finditer(r"(?<![\w:])(" + names + r")!", body):
            where = macros[m.group(1)]
            if where[:-1] != src.module:
                refs.append((line_of(m.start()), where))
    out = []
    for line, t in refs:
        if t and t[0] in macros:
            t = macros[t[0]] + t[1:]
        elif t and t[0] in reexports:
            t = reexports[t[0]] + t[1:]
        out.append((line, t))
    return out


# --- the check -----------------------------------------------------------------------------------

def starts(path, prefix):
    p = [x for x in prefix.split("::") if x]
    return path[:len(p)] == p


def layer_of(path):
    best, best_len = None, -1
    for rank, (name, prefixes) in enumerate(LAYERS):
        for pre in prefixes:
            n = len([x for x in pre.split("::") if x])
            if pre == "" and not (not path or (len(path) == 1 and not path[0].islower())):
                continue  # the crate root holds items (`crate::GLOBAL`), not every module
            if starts(path, pre) and n > best_len:
                best, best_len = (rank, name), n
    return best


def peer_of(path):
    return next((p for p in PEERS if starts(path, p)), None)


def check(files):
    """files: {"src/ops/add.rs": text}. Returns (problems, edges, used) where edges are every
    reference between different layers or peers: (from module, to path, file, line, kind) with kind
    "down", "up" or "peer", and `used` the ALLOWED/CALLBACKS entries that matched something."""
    sources = [Source(rel, text) for rel, text in sorted(files.items())]
    macros, reexports = macro_definitions(sources), root_reexports(sources)
    problems, edges, used = [], [], set()
    modules = set()
    for s in sources:
        if not s.module:
            continue  # the crate root only declares modules and re-exports
        modules.add("::".join(s.module[:1]))
        src_layer = layer_of(s.module)
        if src_layer is None:
            problems.append(f"{s.rel}: module {'::'.join(s.module)} is in no layer (add it to LAYERS in scripts/check_layers.py)")
            continue
        if not s.rel.startswith("src/python/") and (
                re.search(r"\bpyo3\b|\bnumpy\s*::|#\[py(class|function|methods|module)\b", s.code)
                or re.search(r'feature\s*=\s*"python"', strip(s.text, keep_strings=True))):
            problems.append(f"{s.rel}: PyO3 (or the `python` feature) outside src/python: the engine must "
                            "compile and be tested without Python")
        for line, target in references(s, macros, reexports):
            tgt_layer = layer_of(target)
            if tgt_layer is None:
                problems.append(f"{s.rel}:{line}: crate::{'::'.join(target)} is in no layer (add it to LAYERS)")
                continue
            if tgt_layer[0] > src_layer[0]:
                kind = "down"
            elif tgt_layer[0] < src_layer[0]:
                kind = "up"
            else:
                a, b = peer_of(s.module), peer_of(target)
                kind = "peer" if a and b and a != b else None
            if kind is None:
                continue
            edge = ("::".join(s.module), "::".join(target), s.rel, line, kind)
            edges.append(edge)
            if kind == "down":
                continue
            hit = [i for i, (frm, to, _) in enumerate(ALLOWED) if starts(s.module, frm) and starts(target, to)]
            if hit:
                used.update(("edge", i) for i in hit)
            else:
                problems.append(
                    f"{s.rel}:{line}: {src_layer[1]} ({edge[0]}) -> {tgt_layer[1]} (crate::{edge[1]}) points "
                    + ("up" if kind == "up" else "across the backends")
                    + "; dependencies point down (bindings -> optim -> ops -> autograd -> backend -> tensor -> op table -> base)."
                    " Move the code, or add the edge with its reason to ALLOWED in scripts/check_layers.py")
    for rel, text in sorted(files.items()):
        if rel.startswith("src/python/"):
            for mod, attr, line in callbacks(text):
                key = (mod, attr)
                if key in CALLBACKS:
                    used.add(("callback", key))
                else:
                    problems.append(f"{rel}:{line}: the native module calls back into {mod}.{attr}: add it with its "
                                    "reason to CALLBACKS in scripts/check_layers.py (or avoid the call)")
    return problems, edges, used


def callbacks(text):
    """(Python module, attribute, line) for every import of the Python package in a binding file."""
    code = strip(text, keep_strings=True)
    line_of = line_finder(code)
    found = []
    for m in re.finditer(r'\bimport\(\s*"(ferrograd(?:\.\w+)*)"\s*\)', code):
        rest = code[m.end():m.end() + 120]
        g = re.match(r'\s*\??\s*\.\s*getattr\(\s*"(\w+)"\s*\)', rest)
        found.append((m.group(1), g.group(1) if g else "*", line_of(m.start())))
    # a cached lookup helper called with ("ferrograd.module", "name")
    for m in re.finditer(r'"(ferrograd(?:\.\w+)*)"\s*,\s*"(\w+)"\s*\)', code):
        found.append((m.group(1), m.group(2), line_of(m.start())))
    return found


def stale(used):
    out = []
    for i, (frm, to, _) in enumerate(ALLOWED):
        if ("edge", i) not in used:
            out.append(f"ALLOWED entry {frm} -> {to} matches no reference any more: remove it from "
                       "scripts/check_layers.py and run it with --write-doc")
    for key in CALLBACKS:
        if ("callback", key) not in used:
            out.append(f"CALLBACKS entry {key[0]}.{key[1]} matches no call any more: remove it and run --write-doc")
    return out


def read_tree(root=ROOT):
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted((root / "src").rglob("*.rs"))}


# --- the generated sections of docs/architecture.md --------------------------------------------

def unit(path):
    """The row/column an edge is counted under in the matrix: backend splits into its parts."""
    parts = path.split("::")
    if parts[0] == "backend" and len(parts) > 1 and parts[1] in ("cpu", "cuda", "threads"):
        return "backend::" + parts[1]
    return parts[0] or "(root)"


def sections(edges):
    files = read_tree()
    # which modules refer to which, measured (presence only: counts would change with every edit)
    counts = defaultdict(int)
    for frm, to, rel, line, kind in all_references(files):
        counts[(unit(frm), unit(to))] += 1
    order = ["python", "optim", "ops", "autograd", "backend", "backend::cpu", "backend::cuda", "backend::threads",
             "tensor", "error", "alloc"]
    names = sorted({a for a, _ in counts} | {b for _, b in counts}, key=lambda u: (order.index(u) if u in order else 99, u))
    rank = {u: (layer_of(u.split("::")) or (99, ""))[0] for u in names}
    head = "| from \\ to | " + " | ".join(f"`{n}`" for n in names) + " |"
    rows = [head, "|---" * (len(names) + 1) + "|"]
    for a in names:
        cells = []
        for b in names:
            c = counts.get((a, b), 0) if a != b else 0
            mark = ""
            if c and (rank[b] < rank[a] or (peer_of(a.split("::")) and peer_of(b.split("::")) and peer_of(a.split("::")) != peer_of(b.split("::")))):
                mark = " ↑" if rank[b] < rank[a] else " ↔"
            cells.append(("↑" if mark == " ↑" else "↔" if mark == " ↔" else "•") if c else "")
        rows.append(f"| `{a}` | " + " | ".join(cells) + " |")
    matrix = "\n".join(rows)

    where = defaultdict(set)
    for frm, to, rel, line, kind in edges:
        if kind == "down":
            continue
        for i, (f, t, _) in enumerate(ALLOWED):
            if starts(frm.split("::"), f) and starts(to.split("::"), t):
                where[i].add(rel.removeprefix("src/"))
    allowed = ["| from | to | why | in |", "|---|---|---|---|"]
    for i, (f, t, why) in enumerate(ALLOWED):
        allowed.append(f"| `{f}` | `{t}` | {why} | {', '.join(f'`{w}`' for w in sorted(where[i]))} |")

    where_cb = defaultdict(set)
    for rel, text in files.items():
        if rel.startswith("src/python/"):
            for mod, attr, line in callbacks(text):
                where_cb[(mod, attr)].add(rel.removeprefix("src/"))
    cbs = ["| Python module | name | why | called from |", "|---|---|---|---|"]
    for (mod, attr), why in CALLBACKS.items():
        name = "(computed at run time)" if attr == "*" else f"`{attr}`"
        cbs.append(f"| `{mod}` | {name} | {why} | {', '.join(f'`{w}`' for w in sorted(where_cb[(mod, attr)]))} |")
    heads = ['??? note "Every file of src/, with the first sentence of its header comment"', "",
             "    | file | what it holds |", "    |---|---|"]
    for rel, text in sorted(files.items()):
        heads.append(f"    | `{rel.removeprefix('src/')}` | {header(text)} |")
    layers = ["| layer (top to bottom) | modules |", "|---|---|"]
    for name, prefixes in LAYERS:
        layers.append(f"| {name} | " + ", ".join(f"`{p or '(crate root)'}`" for p in prefixes) + " |")
    layers.append("")
    layers.append("Peers (same layer, no edges between them without a reason): " + ", ".join(f"`{p}`" for p in PEERS) + ".")
    return {"layers": "\n".join(layers), "matrix": matrix, "allowed": "\n".join(allowed), "callbacks": "\n".join(cbs),
            "files": "\n".join(heads)}


def header(text):
    """The first sentence of a file's `//!` header (what the file says it owns)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("//!"):
            if lines or line.strip():
                break
            continue
        body = line[3:].strip()
        if not body:
            break
        lines.append(body)
    words = " ".join(lines)
    m = re.match(r"(.+?\.)(\s|$)", words)
    first = m.group(1) if m else words
    return first.replace("|", "\\|") or "(no header comment)"


def all_references(files):
    """Every reference between different top-level modules (for the matrix), not only cross-layer ones."""
    sources = [Source(rel, text) for rel, text in sorted(files.items())]
    macros, reexports = macro_definitions(sources), root_reexports(sources)
    for s in sources:
        if not s.module:
            continue
        for line, target in references(s, macros, reexports):
            if unit("::".join(s.module)) != unit("::".join(target)):
                yield "::".join(s.module), "::".join(target), s.rel, line, None


def render_doc(text, secs):
    for name, body in secs.items():
        begin, end = _MARK.format(name, "begin"), _MARK.format(name, "end")
        pat = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        if not pat.search(text):
            raise SystemExit(f"{DOC}: missing the markers of section '{name}':\n{begin}\n{end}")
        text = pat.sub(lambda _: f"{begin}\n{body}\n{end}", text)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edges", action="store_true", help="print every edge between layers")
    ap.add_argument("--write-doc", action="store_true", help=f"rewrite the generated sections of {DOC}")
    args = ap.parse_args(argv)
    problems, edges, used = check(read_tree())
    problems += stale(used)
    if args.edges:
        for frm, to, rel, line, kind in edges:
            print(f"{kind:4}  {frm} -> {to}   ({rel}:{line})")
    doc_path = ROOT / DOC
    text = doc_path.read_text(encoding="utf-8")
    new = render_doc(text, sections(edges))
    if args.write_doc:
        if new != text:
            doc_path.write_text(new, encoding="utf-8")
            print(f"rewrote {DOC}")
    elif new != text:
        problems.append(f"{DOC} is out of date: run python scripts/check_layers.py --write-doc")
    for p in problems:
        print(p, file=sys.stderr)
    up = sum(1 for e in edges if e[4] != "down")
    print(f"check_layers: {len(edges)} references between layers, {up} of them up or across "
          f"({len(ALLOWED)} allowed edges), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
