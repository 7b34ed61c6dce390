"""Runs one generated program in torch and in the library under test, and classifies the pair.

A program is Python source defining `prog(torch)` (see programs.py). Its outcome in one library is a
normalized value tree (tensors become (dtype, shape, float64 array) triples) or an exception, recorded
by kind (the first of KINDS it is an instance of; torch's NotImplementedError counts as RuntimeError,
as in test_api_fuzz.py) with the first line of its message. A pyo3 PanicException (a BaseException,
not an Exception) is recorded as a panic.

Categories of a pair (torch outcome, library outcome):
  ok, wrong_value, wrong_dtype_shape, exception_kind_mismatch, accepted_where_torch_raises,
  refused_where_torch_works, panic; and, found by the batch runner (run.py), crash (the worker died of
  a signal) and hang (no answer within the per-program time limit).
"""
import math
import warnings

import numpy as np

KINDS = (IndexError, KeyError, TypeError, OverflowError, ZeroDivisionError, ValueError, AttributeError,
         RuntimeError)
FAILING = ("crash", "hang", "panic", "wrong_value", "wrong_dtype_shape", "exception_kind_mismatch",
           "accepted_where_torch_raises", "refused_where_torch_works")
CATEGORIES = ("ok",) + FAILING
# Tolerances by dtype (relative, absolute); a program can scale them (several optimizer steps, RNNs).
TOL = {"float64": (1e-7, 1e-9), "float32": (2e-4, 2e-5), "float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}


def kind_name(e):
    if type(e).__name__ == "PanicException":
        return "PanicException"
    for k in KINDS:
        if isinstance(e, k):
            return k.__name__
    return type(e).__name__


def _dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


def normalize(v, depth=0):
    """A JSON-able tree: tensors as {"T": dtype, "shape": [...], "v": [...]}; numbers, strings, None."""
    if depth > 20:
        return {"repr": "too deep"}
    mod = type(v).__module__ or ""
    if type(v).__name__ in ("Tensor", "Parameter") or hasattr(v, "grad_fn") and hasattr(v, "dtype"):
        t = v.detach()
        if hasattr(t, "cpu"):
            t = t.cpu()
        dt = _dtype_name(t.dtype)
        shape = [int(s) for s in t.shape]
        try:
            if dt in ("bfloat16", "float16"):
                t = t.float()
            a = np.asarray(t.numpy(), dtype=np.float64) if dt != "bool" else np.asarray(t.numpy())
            vals = a.reshape(-1).tolist()
        except Exception as e:  # a tensor that cannot be read back is itself a finding
            vals = {"unreadable": kind_name(e)}
        return {"T": dt, "shape": shape, "v": vals}
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (list, tuple)) or (mod.endswith("_size") or type(v).__name__ == "Size"):
        return [normalize(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {str(k): normalize(x, depth + 1) for k, x in v.items()}
    if hasattr(v, "dtype") and hasattr(v, "is_floating_point") is False and "dtype" in type(v).__name__:
        return _dtype_name(v)
    if type(v).__name__ == "dtype":
        return "dtype:" + _dtype_name(v)
    return {"type": type(v).__name__}


def run_program(src, lib):
    """Outcome of prog(lib): {"ok": tree} or {"exc": kind, "msg": first line}."""
    ns = {"np": np, "__name__": "fuzzprog"}
    try:
        exec(compile(src, "<fuzzprog>", "exec"), ns)
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ns["prog"](lib)
        return {"ok": normalize(out)}
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - PanicException derives from BaseException
        msg = (str(e).strip().splitlines() or [""])[0][:300]
        return {"exc": kind_name(e), "msg": msg, "type": type(e).__name__}


def _cmp(a, b, tol, path):
    """First difference between value trees a (torch) and b (library): (category, detail) or None."""
    if isinstance(a, dict) and "T" in a:
        if not (isinstance(b, dict) and "T" in b):
            return "wrong_dtype_shape", f"{path}: tensor vs {type(b).__name__}"
        if a["T"] != b["T"]:
            return "wrong_dtype_shape", f"{path}: dtype {a['T']} vs {b['T']}"
        if a["shape"] != b["shape"]:
            return "wrong_dtype_shape", f"{path}: shape {a['shape']} vs {b['shape']}"
        if isinstance(a["v"], dict) or isinstance(b["v"], dict):
            return ("wrong_value", f"{path}: unreadable {b['v']}") if a["v"] != b["v"] else None
        x, y = np.asarray(a["v"], dtype=np.float64), np.asarray(b["v"], dtype=np.float64)
        rt, at = TOL.get(a["T"], (0.0, 0.0))
        # The absolute tolerance scales with the tensor's magnitude: a value that is 0 in exact
        # arithmetic comes out as rounding noise of the order of its neighbours (LayerNorm over one value).
        rt, at = rt * tol, at * tol + rt * tol * (float(np.nanmax(np.abs(x[np.isfinite(x)]))) if np.isfinite(x).any() else 0.0)
        if not np.allclose(y, x, rtol=rt, atol=at, equal_nan=True):
            bad = ~np.isclose(y, x, rtol=rt, atol=at, equal_nan=True)
            i = int(np.argmax(bad))
            return "wrong_value", f"{path}: [{i}] {x[i]!r} vs {y[i]!r} ({int(bad.sum())} of {x.size} differ)"
        return None
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return "wrong_dtype_shape", f"{path}: dict vs {type(b).__name__}"
        if sorted(a) != sorted(b):
            return "wrong_dtype_shape", f"{path}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            d = _cmp(a[k], b[k], tol, f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            n = len(b) if isinstance(b, list) else type(b).__name__
            return "wrong_dtype_shape", f"{path}: list of {len(a)} vs {n}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _cmp(x, y, tol, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(b, (int, float)) or not isinstance(a, (int, float)):
            return "wrong_dtype_shape", f"{path}: {a!r} vs {b!r}"
        if isinstance(a, float) != isinstance(b, float):
            return "wrong_dtype_shape", f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
        if not math.isclose(a, b, rel_tol=1e-6 * tol, abs_tol=1e-9 * tol):
            return "wrong_value", f"{path}: {a!r} vs {b!r}"
        return None
    if type(a) is not type(b):
        return "wrong_dtype_shape", f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
    if a != b:
        return "wrong_value", f"{path}: {a!r} vs {b!r}"
    return None


def classify(t_out, f_out, tol=1.0):
    """(category, detail) for the outcomes of one program in torch (t_out) and the library (f_out)."""
    if "exc" in f_out and f_out["exc"] == "PanicException":
        return "panic", f_out["msg"]
    if "exc" in t_out and "exc" in f_out:
        if t_out["exc"] == f_out["exc"]:
            return "ok", "both raised " + t_out["exc"]
        return "exception_kind_mismatch", f"torch {t_out['exc']}: {t_out['msg']} | lib {f_out['exc']}: {f_out['msg']}"
    if "exc" in t_out:
        return "accepted_where_torch_raises", f"torch {t_out['exc']}: {t_out['msg']}"
    if "exc" in f_out:
        return "refused_where_torch_works", f"lib {f_out['type']}: {f_out['msg']}"
    d = _cmp(t_out["ok"], f_out["ok"], tol, "out")
    return d if d else ("ok", "")
