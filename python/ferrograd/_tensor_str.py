"""Tensor printing in torch's format (torch/_tensor_str.py's rules: one formatter for all
elements, integer-valued floats as `1.`, scientific notation for wide ranges, summarisation of
large tensors, 80-column lines, suffixes for dtype/grad_fn/requires_grad)."""

import math

import numpy as np

from . import _C
from ._settings import PRINT_OPTS as _OPTS  # torch.set_printoptions' values, read at each print


class _Formatter:
    def __init__(self, values, kind):
        self.kind = kind
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if kind == "bool":
            self.max_width = max((len(str(bool(v))) for v in values), default=1)
            return
        if kind == "int":
            self.max_width = max((len(str(int(v))) for v in values), default=1)
            return
        finite = [float(v) for v in values if math.isfinite(v) and v != 0]
        if not finite:
            # only zeros, nans and infs: width from what is printed
            for v in values:
                self.max_width = max(self.max_width, len(self._plain(float(v))))
            return
        absv = [abs(v) for v in finite]
        vmin, vmax = min(absv), max(absv)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if self.int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
        else:
            if vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
                self.sci_mode = True
        if _OPTS.sci_mode is not None:
            self.sci_mode = _OPTS.sci_mode
        for v in finite:
            self.max_width = max(self.max_width, len(self._plain(v)))
        for v in values:
            if not math.isfinite(v):
                self.max_width = max(self.max_width, len(self._plain(float(v))))

    def _plain(self, v):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if self.sci_mode:
            return f"{v:.{_OPTS.precision}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{_OPTS.precision}f}"

    def width(self):
        return self.max_width

    def format(self, v):
        if self.kind == "bool":
            s = str(bool(v))
        elif self.kind == "int":
            s = str(int(v))
        else:
            s = self._plain(float(v))
        return " " * (self.max_width - len(s)) + s


def _summarized_values(arr, summarize):
    if not summarize or arr.ndim == 0:
        return arr.reshape(-1)
    if arr.ndim == 1:
        if arr.shape[0] > 2 * _OPTS.edgeitems:
            return np.concatenate([arr[:_OPTS.edgeitems], arr[-_OPTS.edgeitems:]])
        return arr
    if arr.shape[0] > 2 * _OPTS.edgeitems:
        parts = [_summarized_values(a, summarize) for a in list(arr[:_OPTS.edgeitems]) + list(arr[-_OPTS.edgeitems:])]
    else:
        parts = [_summarized_values(a, summarize) for a in arr]
    return np.concatenate(parts) if parts else arr.reshape(-1)


def _edges(n):
    """Indices that printing a summarised dim of size n reads: its edges, and one between (never
    printed, so the dim keeps more than 2 * _OPTS.edgeitems entries and is still shown with '...')."""
    return list(range(n)) if n <= 2 * _OPTS.edgeitems + 1 else list(range(_OPTS.edgeitems + 1)) + list(range(n - _OPTS.edgeitems, n))


def _summary_array(t):
    """t as a NumPy array cut to what a summarised print reads, without copying t: a view of
    2**62 elements (an expanded tensor) prints as torch's, although NumPy cannot hold it."""
    if t.numel() < 2 ** 59:  # NumPy can view it (its size in bytes fits in an intp)
        arr = _numpy(t.cpu())
        return arr[np.ix_(*[_edges(n) for n in arr.shape])] if arr.ndim else arr
    return np.stack([_summary_array(t[i]) for i in _edges(t.shape[0])])


_INT_NAMES = ("uint8", "int8", "int16", "int32", "int64")


def _numpy(t):
    """The values as a NumPy array; bfloat16 (which NumPy lacks) as float32, exactly."""
    return t.float().numpy() if t.dtype == _C.bfloat16 else t.numpy()


def _vector_str(arr, indent, summarize, fmt):
    element_size = fmt.width() + 2
    per_line = max(1, int(math.floor((_OPTS.linewidth - indent) / element_size)))
    if summarize and arr.shape[0] > 2 * _OPTS.edgeitems:
        data = [fmt.format(v) for v in arr[:_OPTS.edgeitems]] + [" ..."] + [fmt.format(v) for v in arr[-_OPTS.edgeitems:]]
    else:
        data = [fmt.format(v) for v in arr]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(arr, indent, summarize, fmt):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    if summarize and arr.shape[0] > 2 * _OPTS.edgeitems:
        slices = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(_OPTS.edgeitems)]
        slices.append("...")
        slices += [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0] - _OPTS.edgeitems, arr.shape[0])]
    else:
        slices = [_tensor_str(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0])]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > _OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    dt = t.dtype
    name = repr(dt).split(".")[-1]
    kind = "bool" if name == "bool" else ("int" if name in _INT_NAMES else "float")
    # empty tensors show any dtype but the default float one, as torch
    default_float = repr(_C._get_default_dtype()).split(".")[-1]
    default = name == default_float if t.numel() == 0 else name in (default_float, "int64", "bool")
    summarize = t.numel() > _OPTS.threshold
    arr = _summary_array(t.detach()) if summarize else _numpy(t.detach().cpu())
    suffixes = []
    if t.is_cuda:
        suffixes.append(f"device='{t.device}'")
    if t.numel() == 0 and t.dim() != 1:
        body = "[]"
        suffixes.append(f"size={tuple(t.shape)}")
    elif t.numel() == 0:
        body = "[]"
    else:
        fmt = _Formatter(_summarized_values(arr, summarize).tolist() if arr.ndim else [arr.item()], kind)
        body = _tensor_str(arr, indent, summarize, fmt)
    if not default:
        suffixes.append(f"dtype=torch.{name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
