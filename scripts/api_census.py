#!/usr/bin/env python3
"""API census: which public names of torch's training-code namespaces ferrograd has.

    python scripts/api_census.py                 # one row per namespace: present / total / percent
    python scripts/api_census.py --missing       # and the missing names
    python scripts/api_census.py --json FILE     # the full result (present and missing names) as JSON

Both libraries must be importable (./scripts/test's .venv has them). A name counts as public when it does
not start with an underscore and is not a module; for namespaces that define ``__all__`` that list is the
census, else ``dir()`` filtered to objects defined by torch itself (so ``typing.Optional`` re-exported by
``torch.nn.functional`` is not counted). Existence only: behaviour is what the parity tests check.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import types

# (row label, torch module path, the same module path in ferrograd)
NAMESPACES = [
    ("torch", "torch", "ferrograd"),
    ("Tensor", "torch.Tensor", "ferrograd.Tensor"),
    ("nn", "torch.nn", "ferrograd.nn"),
    ("nn.functional", "torch.nn.functional", "ferrograd.nn.functional"),
    ("nn.init", "torch.nn.init", "ferrograd.nn.init"),
    ("nn.utils", "torch.nn.utils", "ferrograd.nn.utils"),
    ("optim", "torch.optim", "ferrograd.optim"),
    ("lr_scheduler", "torch.optim.lr_scheduler", "ferrograd.optim.lr_scheduler"),
    ("utils.data", "torch.utils.data", "ferrograd.utils.data"),
    ("distributions", "torch.distributions", "ferrograd.distributions"),
    ("autograd", "torch.autograd", "ferrograd.autograd"),
]


def resolve(path: str):
    """A module, or an attribute of one (``torch.Tensor``); None when it cannot be imported."""
    try:
        return importlib.import_module(path)
    except ImportError:
        pass
    mod, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError):
        return None


def torch_public_names(obj) -> list[str]:
    if isinstance(obj, type):  # a class (Tensor): its public attributes
        return sorted(n for n in dir(obj) if not n.startswith("_"))
    names = getattr(obj, "__all__", None)
    if names is None:
        names = []
        for n in dir(obj):
            if n.startswith("_"):
                continue
            value = getattr(obj, n, None)
            owner = getattr(value, "__module__", None) or ""
            if owner.startswith("torch"):
                names.append(n)
    public = []
    for n in names:
        if n.startswith("_"):
            continue
        if isinstance(getattr(obj, n, None), types.ModuleType):
            continue
        public.append(n)
    return sorted(set(public))


def has_name(obj, name: str) -> bool:
    if obj is None:
        return False
    try:
        return hasattr(obj, name)
    except Exception:  # a lazy attribute that fails to import counts as missing
        return False


def census():
    import torch  # noqa: F401  (the reference)
    import ferrograd  # noqa: F401

    rows = []
    for label, tpath, fpath in NAMESPACES:
        tobj, fobj = resolve(tpath), resolve(fpath)
        names = torch_public_names(tobj)
        present = [n for n in names if has_name(fobj, n)]
        missing = [n for n in names if n not in set(present)]
        rows.append({"namespace": label, "total": len(names), "present": present, "missing": missing})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", action="store_true", help="list the missing names")
    ap.add_argument("--json", metavar="FILE", help="write the full census as JSON")
    args = ap.parse_args(argv)
    rows = census()
    import torch

    print(f"ferrograd API census against torch {torch.__version__}")
    print(f"{'namespace':<15} {'present':>7} / {'total':<5} {'share':>6}")
    all_p = all_t = 0
    for r in rows:
        p, t = len(r["present"]), r["total"]
        all_p += p
        all_t += t
        print(f"{r['namespace']:<15} {p:>7} / {t:<5} {100.0 * p / max(t, 1):5.1f}%")
        if args.missing and r["missing"]:
            print("    missing: " + ", ".join(r["missing"]))
    print(f"{'all':<15} {all_p:>7} / {all_t:<5} {100.0 * all_p / max(all_t, 1):5.1f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "namespaces": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
