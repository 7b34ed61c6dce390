"""The safetensors side of ferrograd.save / ferrograd.load (see serialization.py for the dispatch).

`ferrograd.save(obj, "x.safetensors")` writes a tensor, or a state dict (a dict/OrderedDict of tensors,
possibly nested, as an optimizer's state_dict is, with plain Python values beside the tensors), as a
safetensors file through the `safetensors` library; `ferrograd.load` reads it back (and reads any
safetensors file). The format never runs code.

Layout of a file written here:

- every tensor is one safetensors entry. A state dict's tensors keep their names ("0.weight", ...);
  tensors deeper in a nested dict get a dotted path ("state.0.exp_avg"); a bare tensor is stored under
  the key "tensor" (`TENSOR_KEY`). So the file is an ordinary safetensors file: torch's
  `safetensors.torch.load_file` reads a module's state dict from it as is.
- `__metadata__` holds {"format": "pt"} (what safetensors.torch writes) and, under "ferrograd", a JSON
  description of the saved object: its dict/list/tuple structure, key order, the non-tensor values
  (ints, floats, strings, bools, None, dtypes), and which entry each tensor is. `load` rebuilds the
  object from it. A file without it (written by safetensors.torch.save_file, say) loads as a dict of
  tensors, in the file's order.

Dtypes: every ferrograd dtype round trips exactly (F64, F32, F16, BF16, I64, I32, I16, I8, U8,
BOOL). Files written elsewhere may hold dtypes ferrograd has no tensor type for; they are widened
without loss (uint16/uint32/uint64 -> int64) with a warning naming the entries; float8 and uint64
values that do not fit int64 raise.
"""

import json
import math
import os
import warnings
from collections import OrderedDict

import numpy as np

from . import _C


TENSOR_KEY = "tensor"  # the entry a bare tensor is stored under
_META_KEY = "ferrograd"  # the __metadata__ entry holding the JSON structure
_FORMAT_VERSION = 1
_HEADER_LIMIT = 100 * 1024 * 1024  # the safetensors library refuses larger headers too

# safetensors dtype -> (bytes per element, numpy dtype the entry is read as, dtype ferrograd keeps)
_DTYPES = {
    "F64": (8, np.float64, np.float64),
    "F32": (4, np.float32, np.float32),
    "I64": (8, np.int64, np.int64),
    "BOOL": (1, np.bool_, np.bool_),
    "F16": (2, np.float16, np.float16),
    "BF16": (2, None, None),  # numpy has no bfloat16: its bits are read by hand
    "I32": (4, np.int32, np.int32),
    "I16": (2, np.int16, np.int16),
    "I8": (1, np.int8, np.int8),
    "U8": (1, np.uint8, np.uint8),
    "U16": (2, np.uint16, np.int64),
    "U32": (4, np.uint32, np.int64),
    "U64": (8, np.uint64, np.int64),
}
_FP8 = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"}


def _safetensors():
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as e:  # a declared dependency; a clear message if someone removed it
        raise ImportError("ferrograd.save/ferrograd.load need the 'safetensors' package: "
                          "pip install 'safetensors>=0.4'") from e
    return safetensors


def _c_order(a):
    """A C-contiguous copy of `a` when it is not one (np.ascontiguousarray would turn 0-d into 1-d)."""
    return a if a.flags.c_contiguous and a.flags.aligned else np.array(a, order="C", copy=True)


def _name(f):
    """How error messages name the file."""
    if isinstance(f, (str, bytes, os.PathLike)):
        return repr(os.fsdecode(f))
    return repr(getattr(f, "name", f))


# ----------------------------------------------------------------------------------------------
# save
# ----------------------------------------------------------------------------------------------

class _Encoder:
    """Turns the object into a JSON-able tree plus a flat {entry name: array} dict of its tensors."""

    def __init__(self):
        self.arrays = {}

    def _entry(self, path):
        name = ".".join(path) if path else TENSOR_KEY
        if name in self.arrays or name == "__metadata__":  # {"a.b": t, "a": {"b": t2}}, ...
            i = 1
            while f"{name}.{i}" in self.arrays:
                i += 1
            name = f"{name}.{i}"
        return name

    def encode(self, obj, path):
        if isinstance(obj, _C.Tensor):
            device = None
            if obj.device.type != "cpu":
                device = obj.device  # restored there by load() (map_location=None), as torch
                obj = obj.cpu()
            name = self._entry(path)
            obj = obj.detach()
            if obj.dtype == _C.bfloat16:  # its bits, as uint16 (numpy has no bfloat16)
                arr = np.asarray(obj.float().numpy().view(np.uint32) >> np.uint32(16))
                self.arrays[name] = ("bfloat16", arr.astype(np.uint16))
            else:
                # .numpy() of a transposed/strided tensor is a strided view: safetensors writes raw
                # memory, so make it contiguous (and owned) first.
                arr = _c_order(obj.numpy())
                self.arrays[name] = (arr.dtype.name, arr)
            return {"T": name, "dev": str(device)} if device is not None else {"T": name}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):  # after bool; int subclasses (IntEnum) become plain ints
            return int(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"F": repr(obj)}  # 'inf', '-inf', 'nan'
        if isinstance(obj, _C.dtype):
            return {"dtype": str(obj).rsplit(".", 1)[-1]}
        if isinstance(obj, _C.device):
            return {"device": str(obj)}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (str, int, float, bool))):
                    raise TypeError(f"ferrograd.save: dict key {k!r} at {self._where(path)} has type "
                                    f"{type(k).__name__}; keys must be str, int, float, bool or None")
                items.append([self.encode(k, None), self.encode(v, path + [str(k)])])
            node = {"D": items}
            if isinstance(obj, OrderedDict):
                node["o"] = 1
            meta = getattr(obj, "_metadata", None)  # Module.state_dict's per-module versions
            if isinstance(meta, dict):
                try:
                    node["m"] = json.loads(json.dumps(meta, allow_nan=False))
                except (TypeError, ValueError):
                    pass  # not JSON-able: dropped, as it is advisory only
            return node
        if isinstance(obj, (list, tuple)):  # torch.Size and namedtuples come back as tuples
            kind = "U" if isinstance(obj, tuple) else "L"
            return {kind: [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), path)
        raise TypeError(f"ferrograd.save: cannot save an object of type {type(obj).__name__} "
                        f"(at {self._where(path)}); the safetensors format holds tensors, and dicts, "
                        "lists and tuples of tensors, numbers, strings, bools and None")

    @staticmethod
    def _where(path):
        return "the top level" if not path else "'" + ".".join(path) + "'"


def save(obj, f):
    """Save a tensor or a (nested) dict of tensors to ``f`` (a path or a binary file object) as safetensors."""
    st = _safetensors()
    if obj is None or not isinstance(obj, (_C.Tensor, dict, list, tuple)):
        raise TypeError(f"ferrograd.save: expected a tensor or a dict of tensors (a state_dict), "
                        f"got {type(obj).__name__}")
    enc = _Encoder()
    tree = enc.encode(obj, [])
    metadata = {
        "format": "pt",
        _META_KEY: json.dumps({"version": _FORMAT_VERSION, "obj": tree}, separators=(",", ":"),
                              allow_nan=False),
    }
    if isinstance(f, (str, bytes, os.PathLike)):
        _serialize(st, enc.arrays, metadata, os.fsdecode(f))
    elif hasattr(f, "write"):
        f.write(_serialize(st, enc.arrays, metadata))
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"ferrograd.save: f must be a path or a writable binary file object, "
                        f"got {type(f).__name__}")


def _serialize(st, arrays, metadata, path=None):
    """Write {name: (safetensors dtype name, C-ordered little-endian array)} with the safetensors
    library (its TensorSpec API from 0.8, the dict API before), to `path` or as bytes."""
    flat = {}
    for k, (dtype, arr) in arrays.items():
        arr = _c_order(arr)
        arrays[k] = (dtype, arr)  # kept alive: TensorSpec holds a raw pointer into it
        if hasattr(st, "TensorSpec"):
            flat[k] = st.TensorSpec(dtype=dtype, shape=arr.shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)
        else:
            flat[k] = {"dtype": dtype, "shape": list(arr.shape), "data": arr.tobytes()}
    if path is not None:
        st.serialize_file(flat, path, metadata=metadata)
        return None
    return st.serialize(flat, metadata=metadata)


# ----------------------------------------------------------------------------------------------
# load
# ----------------------------------------------------------------------------------------------

def _corrupt(name, what):
    return RuntimeError(f"ferrograd.load: {name} is not a valid safetensors file: {what}")


def _read_header(head, size, name):
    """Validate the header (first bytes of the file) against the file size; returns it parsed.

    The safetensors library checks all of this too; doing it here first gives messages that say which
    file is wrong and how (truncated, not safetensors at all, ...).
    """
    if size < 8:
        if size == 0:
            raise _corrupt(name, "the file is empty")
        raise _corrupt(name, f"the file is truncated: {size} bytes, shorter than the 8-byte header length")
    magic = head[:8]
    # (a header length of 128 mod 256 also starts with 0x80: a JSON object after the length is safetensors)
    if magic.startswith(b"PK\x03\x04") or (magic[:1] == b"\x80" and head[8:9] != b"{"):
        raise _corrupt(name, "it looks like a pickle/zip checkpoint written by torch.save; ferrograd "
                             "reads only safetensors files (convert it with safetensors.torch.save_file)")
    n = int.from_bytes(magic, "little")
    if n > _HEADER_LIMIT:
        raise _corrupt(name, f"the header length field says {n} bytes, more than the {_HEADER_LIMIT} "
                             "allowed (not a safetensors file, or a damaged one)")
    if 8 + n > size:
        raise _corrupt(name, f"the file is truncated: the header says it is {n} bytes long, but only "
                             f"{size - 8} bytes follow the length field")
    raw = head[8:8 + n]
    if len(raw) < n:
        raise _corrupt(name, "the file is truncated inside the header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _corrupt(name, f"the {n}-byte header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise _corrupt(name, "the header is not a JSON object")
    end = 0
    spans = []
    for key, info in header.items():
        if key == "__metadata__":
            if not (isinstance(info, dict) and all(isinstance(v, str) for v in info.values())):
                raise _corrupt(name, "__metadata__ is not a map of strings")
            continue
        try:
            dtype, shape, (start, stop) = info["dtype"], info["shape"], info["data_offsets"]
            numel = 1
            for d in shape:
                if not isinstance(d, int) or d < 0:
                    raise ValueError
                numel *= d
            if not (isinstance(start, int) and isinstance(stop, int) and 0 <= start <= stop):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise _corrupt(name, f"the header entry for tensor {key!r} is malformed: {info!r}") from None
        if dtype in _DTYPES and stop - start != numel * _DTYPES[dtype][0]:
            raise _corrupt(name, f"tensor {key!r} has shape {shape} and dtype {dtype}, which needs "
                                 f"{numel * _DTYPES[dtype][0]} bytes, but its data_offsets span {stop - start}")
        end = max(end, stop)
        if stop > start:
            spans.append((start, stop, key))
    spans.sort()
    for (_, stop, a), (start, _, b) in zip(spans, spans[1:]):
        if start < stop:  # the safetensors library refuses this from a path; the same from a file object
            raise _corrupt(name, f"the data of tensors {a!r} and {b!r} overlap")
    data = size - 8 - n
    if end > data:
        raise _corrupt(name, f"the file is truncated: its tensors need {end} bytes of data after the "
                             f"header, but only {data} bytes are there")
    if end < data:
        raise _corrupt(name, f"{data - end} unexpected bytes after the last tensor's data "
                             "(the file is damaged, or not what it seems)")
    return n, header


def _decode_bf16(raw, shape):
    """bfloat16 bits as float32 values (exact; made bfloat16 again once a tensor)."""
    bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).reshape(shape)


def _convert(key, arr, dtype, name, widened):
    """An array as read from the file, in a dtype ferrograd has."""
    if dtype in ("F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"):
        return arr
    if dtype == "U64" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise RuntimeError(f"ferrograd.load: {name}: tensor {key!r} is uint64 with values beyond int64's range; "
                           "ferrograd has no uint64 tensors")
    widened.append(f"{key} ({dtype})")
    return arr.astype(_DTYPES[dtype][2])


class _Decoder:
    def __init__(self, tensors, name, keep_devices=False):
        self.tensors = tensors  # entry name -> Tensor
        self.name = name
        self.used = set()
        self.keep_devices = keep_devices  # map_location=None: tensors go back to the saved device

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or len(node) == 0:
            raise self._bad(f"unexpected node {node!r}")
        if "T" in node:
            entry = node["T"]
            if entry not in self.tensors:
                raise self._bad(f"it refers to tensor {entry!r}, which the file does not hold")
            self.used.add(entry)
            t = self.tensors[entry]
            if self.keep_devices and node.get("dev", "cpu") != "cpu":
                t = t.to(node["dev"])
            return t
        if "D" in node:
            out = OrderedDict() if node.get("o") else {}
            for item in node["D"]:
                if not (isinstance(item, list) and len(item) == 2):
                    raise self._bad(f"bad dict item {item!r}")
                k = self.decode(item[0])
                out[k] = self.decode(item[1])
            if node.get("o") and isinstance(node.get("m"), dict):
                out._metadata = OrderedDict(node["m"])
            return out
        if "L" in node:
            return [self.decode(v) for v in node["L"]]
        if "U" in node:
            return tuple(self.decode(v) for v in node["U"])
        if "F" in node:
            return float(node["F"])
        if "dtype" in node:
            dt = getattr(_C, node["dtype"], None)
            if not isinstance(dt, _C.dtype):
                raise self._bad(f"unknown dtype {node['dtype']!r}")
            return dt
        if "device" in node:
            return _C.device(node["device"])
        raise self._bad(f"unexpected node {node!r}")

    def _bad(self, what):
        return RuntimeError(f"ferrograd.load: {self.name}: the ferrograd structure in __metadata__ is "
                            f"damaged: {what}")


def _map_location_target(map_location):
    """The device tensors end up on, or None for 'leave them where they are saved' (the CPU)."""
    if map_location is None:
        return None
    if callable(map_location) and not isinstance(map_location, _C.device):
        return None  # torch calls it per storage with (storage, 'cpu'); CPU storages stay on the CPU
    if isinstance(map_location, dict):
        target = map_location.get("cpu")
        return None if target is None else _map_location_target(target)
    if isinstance(map_location, (str, _C.device)):
        return _C.device(map_location) if isinstance(map_location, str) else map_location
    raise TypeError(f"ferrograd.load: map_location should be a str, a device, a dict or a callable, "
                    f"got {type(map_location).__name__}")


def load(f, map_location=None, blob=None):
    """Load what :func:`save` wrote (or any safetensors file) from ``f``, a path or a binary file object
    (whose bytes, already read, are ``blob``).

    Returns a tensor, or the saved dict structure; a safetensors file written by another library loads
    as a dict {name: tensor}. ``map_location`` as torch.load's ('cpu', a device, a dict, a callable).
    Raises RuntimeError naming the file when it is corrupt or truncated.
    """
    st = _safetensors()
    name = _name(f)
    target = _map_location_target(map_location)

    if blob is not None:
        size, head, path = len(blob), blob, None
    elif isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with open(path, "rb") as fh:  # FileNotFoundError / IsADirectoryError as open raises them
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) == 8:
                n = int.from_bytes(head, "little")
                if n <= _HEADER_LIMIT:
                    head += fh.read(min(n, max(size - 8, 0)))
        blob = None
    elif hasattr(f, "read"):
        blob = f.read()
        if isinstance(blob, str):
            raise TypeError(f"ferrograd.load: {name} was opened in text mode; open it with 'rb'")
        blob = bytes(blob)
        size, head, path = len(blob), blob, None
    else:
        raise TypeError(f"ferrograd.load: f must be a path or a readable binary file object, "
                        f"got {type(f).__name__}")

    n, header = _read_header(head, size, name)
    metadata = header.get("__metadata__") or {}
    entries = [k for k in header if k != "__metadata__"]

    arrays = {}
    try:
        if path is not None:
            with st.safe_open(path, framework="numpy") as sf:
                for key in entries:
                    if header[key]["dtype"] in ("BF16",) or header[key]["dtype"] in _FP8:
                        continue
                    arrays[key] = sf.get_tensor(key)
        else:
            readable = [k for k in entries if header[k]["dtype"] not in _FP8 and header[k]["dtype"] != "BF16"]
            if len(readable) == len(entries):
                arrays = st.numpy.load(blob)
            else:  # the numpy loader cannot skip entries: feed it a copy without them
                arrays = {}
                for key in readable:
                    a, b = header[key]["data_offsets"]
                    dt = _DTYPES[header[key]["dtype"]][1]
                    raw = blob[8 + n + a:8 + n + b]
                    arrays[key] = np.frombuffer(raw, dtype=np.dtype(dt).newbyteorder("<")).reshape(
                        header[key]["shape"]).copy()
    except (OSError, MemoryError):
        raise
    except Exception as e:  # safetensors' SafetensorError and friends
        raise RuntimeError(f"ferrograd.load: {name} could not be read as safetensors: {e}") from e

    widened = []
    tensors = {}
    for key in entries:
        dtype = header[key]["dtype"]
        if dtype in _FP8 or dtype not in _DTYPES:
            raise RuntimeError(f"ferrograd.load: {name}: tensor {key!r} has dtype {dtype}, which ferrograd "
                               "cannot represent")
        if dtype == "BF16":
            a, b = header[key]["data_offsets"]
            if blob is not None:
                raw = blob[8 + n + a:8 + n + b]
            else:
                with open(path, "rb") as fh:
                    fh.seek(8 + n + a)
                    raw = fh.read(b - a)
            arr = _decode_bf16(raw, header[key]["shape"])
        else:
            arr = arrays[key]
        arr = _convert(key, arr, dtype, name, widened)
        t = _C.from_numpy(_c_order(arr))
        if dtype == "BF16":
            t = t.to(_C.bfloat16)
        if target is not None and target.type != "cpu":
            t = t.to(target)
        tensors[key] = t
    if widened:
        warnings.warn(f"ferrograd.load: {name}: widened tensors of dtypes ferrograd does not have: "
                      + ", ".join(widened), stacklevel=2)

    structure = metadata.get(_META_KEY)
    if structure is None:  # an ordinary safetensors file: its tensors, in the file's order
        return {k: tensors[k] for k in entries}
    try:
        structure = json.loads(structure)
    except (ValueError, RecursionError) as e:
        raise RuntimeError(f"ferrograd.load: {name}: the ferrograd structure in __metadata__ is not "
                           f"valid JSON ({e})") from None
    decoder = _Decoder(tensors, name, keep_devices=map_location is None)
    if not isinstance(structure, dict) or "obj" not in structure:
        raise decoder._bad("it is not an object with an 'obj' entry")
    tree, version = structure["obj"], structure.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise decoder._bad(f"its format version {version!r} is not a positive integer")
    if version > _FORMAT_VERSION:
        raise RuntimeError(f"ferrograd.load: {name} was written by a newer ferrograd (format version "
                           f"{version}; this one reads up to {_FORMAT_VERSION})")
    try:
        return decoder.decode(tree)
    except RecursionError:
        raise decoder._bad("it is nested too deeply") from None
    except RuntimeError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise decoder._bad(f"{type(e).__name__}: {e}") from None
