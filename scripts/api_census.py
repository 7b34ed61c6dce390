#!/usr/bin/env python3
"""API census: which public names of torch's training-code namespaces ferrograd has.

    python scripts/api_census.py                 # one row per namespace: present / total / percent
    python scripts/api_census.py --missing       # and the missing names
    python scripts/api_census.py --json FILE     # the full result (present and missing names) as JSON
    python scripts/api_census.py --missing --all # and the missing names outside the training scope, by reason

Both libraries must be importable (./scripts/test's .venv has them). A name counts as public when it does
not start with an underscore and is not a module; for namespaces that define ``__all__`` that list is the
census, else ``dir()`` filtered to objects defined by torch itself (so ``typing.Optional`` re-exported by
``torch.nn.functional`` is not counted). Existence only: behaviour is what the parity tests check.

Each row also gives the share of the *training scope*: every public name except those that `OUT_OF_SCOPE`
lists, with the reason, as families a training or evaluation program does not use or that ferrograd does
not have at all (TorchScript's IR, quantization, sparse layouts, storages, backend-private kernels,
dtypes without kernels, ...). A name listed there still counts as present in the first share when
ferrograd has it; the scope only moves it out of the second share's denominator.
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


# (reason, names or fnmatch patterns) per namespace: the names outside the training scope
OUT_OF_SCOPE = {
    "torch": [
        ("TorchScript / JIT: IR, types, script objects, futures, serialization internals", [
            "*Type", "AliasDb", "Argument", "ArgumentSpec", "Block", "CallStack", "Capsule", "Code",
            "CompilationUnit", "CompleteArgumentSpec", "ConcreteModuleType*", "DeepCopyMemoTable",
            "DeserializationStorageContext", "ErrorReport", "ExecutionPlan", "FileCheck", "FunctionSchema",
            "Future", "Gradient", "Graph", "GraphExecutorState", "IODescriptor", "JITException",
            "LiteScriptModule", "LockingLogger", "NoopLogger", "Node", "OperatorInfo", "PyTorchFileReader",
            "PyTorchFileWriter", "Script*", "SerializationStorageContext", "StaticModule", "TracingState", "Use",
            "Value", "ModuleDict", "ParameterDict", "BufferDict", "fork", "wait", "import_ir_module*", "parse_ir",
            "parse_schema", "parse_type_comment", "merge_type_from_type_comment", "unify_type_list",
            "AggregationType", "AVG", "SUM", "BenchmarkConfig", "BenchmarkExecutionStats",
            "ThroughputBenchmark"]),
        ("dispatcher internals", ["DispatchKey", "DispatchKeySet", "ExcludeDispatchKeyGuard", "Tag",
                                  "DisableTorchFunction", "DisableTorchFunctionSubclass"]),
        ("quantization", ["q_*", "qint*", "quint*", "qscheme", "quantize_*", "quantized_*", "fake_quantize_*",
                          "fused_moving_avg_obs_fake_quant", "choose_qparams_optimized", "empty_quantized",
                          "dequantize", "int_repr", "fbgemm_*"]),
        ("sparse layouts", ["sparse_*", "*indices_copy", "values_copy", "dsmm", "hsmm", "hspmm", "smm", "spmm",
                            "saddmm", "sspaddmm", "resize_as_sparse_", "native_norm"]),
        ("storages (ferrograd tensors own their memory)", ["*Storage", "TypedStorage", "UntypedStorage"]),
        ("backend-private kernels (cuDNN, MIOpen, oneDNN, SyncBatchNorm's CUDA pieces)", [
            "cudnn_*", "miopen_*", "mkldnn_*", "batch_norm_backward_*", "batch_norm_elemt",
            "batch_norm_gather_stats*", "batch_norm_stats", "batch_norm_update_stats"]),
        ("dtypes ferrograd has no kernels for (sub-byte, float8/float4, wide unsigned)", [
            "bit", "bits*", "float8_*", "float4_*", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1",
            "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "uint16", "uint32", "uint64"]),
        ("complex dtypes and FFT (another helper's work)", [
            "complex", "complex32", "complex64", "complex128", "cdouble", "cfloat", "chalf", "bcomplex32", "polar",
            "view_as_real*", "view_as_complex*", "stft", "istft"]),
        ("autocast / AMP (another helper's work)", ["*autocast*", "GradScaler"]),
        ("compile, vmap and symbolic shapes (other helpers' work)", [
            "compile", "vmap", "SymBool", "SymFloat", "SymInt", "sym_constrain_range*", "sym_fresh_size"]),
    ],
    "Tensor": [
        ("complex dtypes and FFT (another helper's work)", ["cdouble", "cfloat", "chalf", "stft", "istft"]),
        ("quantization", ["dequantize", "int_repr", "q_*", "qscheme"]),
        ("sparse layouts", ["ccol_indices", "coalesce", "col_indices", "crow_indices", "indices", "is_coalesced",
                            "row_indices", "values", "sparse_mask", "sparse_resize_*", "sspaddmm", "smm",
                            "to_sparse*", "resize_as_sparse_"]),
        ("storages (ferrograd tensors own their memory)", ["storage", "untyped_storage", "storage_type", "set_"]),
        ("nested tensors, oneDNN layout, first-class dims", ["to_padded_tensor", "to_mkldnn", "index"]),
        ("devices ferrograd has no backend for", ["ipu", "xpu", "mtia"]),
        ("removed from torch (torch raises RuntimeError)", ["eig", "lstsq", "qr", "solve", "symeig", "reinforce",
                                                            "volatile"]),
    ],
    "nn.functional": [
        ("float8 scaled and grouped GEMMs (CUDA kernels; grouped_mm's CPU backward fails in torch itself)", [
            "ScalingType", "SwizzleType", "scaled_mm", "scaled_addmm", "scaled_addmm_", "scaled_grouped_mm",
            "grouped_mm"]),
    ],
}


def out_of_scope_reason(label: str, name: str):
    import fnmatch

    for reason, patterns in OUT_OF_SCOPE.get(label, []):
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return reason
    return None


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
        scope = [n for n in names if out_of_scope_reason(label, n) is None]
        out_of_scope = {}
        for n in names:
            reason = out_of_scope_reason(label, n)
            if reason is not None:
                out_of_scope.setdefault(reason, []).append(n)
        rows.append({"namespace": label, "total": len(names), "present": present, "missing": missing,
                     "scope_total": len(scope), "scope_present": [n for n in scope if n in set(present)],
                     "scope_missing": [n for n in scope if n not in set(present)], "out_of_scope": out_of_scope})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--missing", action="store_true", help="list the missing names")
    ap.add_argument("--json", metavar="FILE", help="write the full census as JSON")
    ap.add_argument("--all", action="store_true", help="with --missing: also the missing names outside the "
                    "training scope, by reason")
    args = ap.parse_args(argv)
    rows = census()
    import torch

    print(f"ferrograd API census against torch {torch.__version__}")
    print(f"{'namespace':<15} {'present':>7} / {'total':<5} {'share':>6}   {'training scope':>20}")
    all_p = all_t = scope_p = scope_t = 0
    for r in rows:
        p, t = len(r["present"]), r["total"]
        sp, st = len(r["scope_present"]), r["scope_total"]
        all_p, all_t, scope_p, scope_t = all_p + p, all_t + t, scope_p + sp, scope_t + st
        print(f"{r['namespace']:<15} {p:>7} / {t:<5} {100.0 * p / max(t, 1):5.1f}%   "
              f"{sp:>7} / {st:<5} {100.0 * sp / max(st, 1):5.1f}%")
        if args.missing and r["scope_missing"]:
            print("    missing: " + ", ".join(r["scope_missing"]))
        if args.missing and args.all:
            for reason, names in r["out_of_scope"].items():
                absent = [n for n in names if n in set(r["missing"])]
                if absent:
                    print(f"    out of scope ({reason}): " + ", ".join(absent))
    print(f"{'all':<15} {all_p:>7} / {all_t:<5} {100.0 * all_p / max(all_t, 1):5.1f}%   "
          f"{scope_p:>7} / {scope_t:<5} {100.0 * scope_p / max(scope_t, 1):5.1f}%")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "namespaces": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
