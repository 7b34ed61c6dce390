"""torch's checkpoint format (what torch.save writes since torch 1.6), written and read by ferrograd.

A checkpoint is a zip archive of uncompressed records under one folder (`archive/` when written here):

- `data.pkl`: the saved object, pickled (protocol 2 by default). A tensor is pickled as a call of
  `torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks)`, a
  Parameter as `torch._utils._rebuild_parameter(tensor, requires_grad, hooks)`. The storage is a pickle
  *persistent id*, the tuple ('storage', torch.<T>Storage, key, location, numel): its bytes are the
  record `data/<key>`, its element type is named by the storage class (FloatStorage = float32, ...),
  `location` is the device it was saved from ("cpu", "cuda:0"). Tensors that share memory (views)
  name the same key, so they share memory again when loaded.
- `data/<key>`: a storage's raw bytes, each record starting at a multiple of 64 in the file (the zip
  local header carries padding), so that a loader can map the file and use the bytes in place.
- `version` ("3"), `byteorder` ("little"), `.format_version` ("1"), `.storage_alignment` ("64").

ferrograd writes torch's names for its own objects (tensors, dtypes, devices, Size; a ferrograd class
`ferrograd.nn.modules.linear.Linear` is written as `torch.nn.modules.linear.Linear`), so the file loads
in torch; reading maps torch's names back to ferrograd's. Loading is either restricted (the
`weights_only` unpickler of _weights_only.py) or full (`weights_only=False`, any global imported).
"""

import collections
import io
import mmap as _mmap
import os
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np

from . import _C

DEFAULT_PROTOCOL = 2
_ALIGN = 64
_PAD_ID = 0x4246  # the zip extra-field id torch's writer uses for its alignment padding ("FB")

# torch's storage class for each element type ferrograd has, and back
_STORAGE_OF = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF.items()}
# how NumPy holds each element type's bytes (bfloat16, which NumPy lacks, as its 16 bits in an int16)
_NP_OF = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.int16,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
    "bool": np.bool_,
}


def _dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


class TorchName:
    """A global written under torch's name (GLOBAL 'torch._utils _rebuild_tensor_v2', ...): the pickle
    refers to torch's object without ferrograd importing torch."""

    __slots__ = ("module", "name")
    _cache = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._cache:
            self = object.__new__(cls)
            self.module, self.name = module, name
            cls._cache[key] = self
        return cls._cache[key]

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args, **kwargs):  # (pickle's reduce wants a callable; this one only names torch's)
        raise TypeError(f"{self!r} names torch's object in a checkpoint; it cannot be called")


def torch_name(module, qualname, obj=None):
    """torch's (module, qualname) for a global of ferrograd's (`ferrograd.nn.modules.linear`, 'Linear'
    -> `torch.nn.modules.linear`); anything else unchanged. ferrograd files with no counterpart in torch
    (a private module such as `nn/_functional_loss.py`) name the object by the nearest public
    package that exports it (`torch.nn`)."""
    if not (module == "ferrograd" or module.startswith("ferrograd.")):
        return module, qualname
    parts = module.split(".")
    if obj is not None and any(p.startswith("_") for p in parts[1:]):
        for k in range(len(parts) - 1, 0, -1):
            if any(p.startswith("_") for p in parts[1:k]):
                continue
            pkg = sys.modules.get(".".join(parts[:k]))
            if pkg is not None and getattr(pkg, qualname, None) is obj:
                module = ".".join(parts[:k])
                break
    return "torch" + module[len("ferrograd"):], qualname


def ferrograd_global(module, name):
    """The ferrograd object for torch's global `module.name` (or None): the same path under ferrograd,
    else the nearest parent package that has the name (torch.nn.modules.linear.Linear ->
    ferrograd.nn.modules.linear.Linear, or ferrograd.nn.Linear)."""
    import importlib

    parts = ["ferrograd"] + module.split(".")[1:]
    for k in range(len(parts), 0, -1):
        try:
            mod = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        obj = mod
        for attr in name.split("."):
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    return None


# ----------------------------------------------------------------------------------------------
# save
# ----------------------------------------------------------------------------------------------

def _location(t):
    d = t.device
    return "cpu" if d.type == "cpu" else f"{d.type}:{d.index if d.index is not None else 0}"


def _span(t):
    """Elements of its storage a non-empty tensor reaches: offset + 1 + sum((size - 1) * stride)."""
    return t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _host_array(t):
    """A tensor's values on the host as NumPy (same shape; bfloat16 as its bits, in int16)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == _C.bfloat16:  # bfloat16 -> float32 is exact: its bits are float32's top half
        return (t.float().numpy().view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(np.int16)
    return t.numpy()


class _Storage:
    """One storage being saved: the tensors that live in it and how many elements of it they reach."""

    def __init__(self, key, dtype, location):
        self.key, self.dtype, self.location = key, dtype, location
        self.numel = 0
        self.tensors = []

    def add(self, t):
        self.tensors.append(t)
        if t.numel():
            self.numel = max(self.numel, _span(t))

    def data(self):
        """The storage's bytes as a 1-d NumPy array: read through its tensors (a tensor that covers it
        all when there is one; otherwise each tensor's elements written where its strides put them,
        elements no tensor reaches left zero)."""
        np_dtype = _NP_OF[self.dtype]
        for t in self.tensors:
            if t.storage_offset() == 0 and t.numel() == self.numel and t.is_contiguous():
                return np.ascontiguousarray(_host_array(t)).reshape(-1)
        out = np.zeros(self.numel, np_dtype)
        item = out.itemsize
        for t in self.tensors:
            if t.numel():
                dst = np.lib.stride_tricks.as_strided(out[t.storage_offset():], shape=tuple(t.shape),
                                                      strides=tuple(s * item for s in t.stride()))
                dst[...] = _host_array(t)  # within `out`: numel is at least this tensor's span
        return out


class _Storages:
    """The storages of the tensors pickled so far, one per memory block, in first-use order. `known`
    gives, per memory block, the size a previous pickling pass found (see `write`)."""

    def __init__(self, known=None):
        self.by_memory = {}
        self.all = []
        self.known = known or {}

    def of(self, t, base=None):
        """The storage of detached tensor `t` (`base`: the tensor it is a view of, if any)."""
        dtype = _dtype_name(t.dtype)
        if dtype not in _STORAGE_OF:
            raise RuntimeError(f"ferrograd.save: tensors of dtype {t.dtype} cannot be saved")
        location = _location(t)
        if t.numel() == 0:
            memory = None  # an empty tensor's pointer means nothing: a storage of its own
        else:
            memory = (location, t.data_ptr() - t.storage_offset() * t.element_size())
        st = self.by_memory.get(memory) if memory is not None else None
        if st is None:
            st = _Storage(str(len(self.all)), dtype, location)
            st.memory = memory
            st.announced = None
            self.all.append(st)
            if memory is not None:
                self.by_memory[memory] = st
            if base is not None and base.numel() and base.dtype == t.dtype:
                st.add(base.detach())  # a view: its base's whole storage is saved, as torch does
        elif st.dtype != dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        st.add(t)
        return st

    def announce(self, st):
        """The numel written into the pickle for `st` (fixed at its first reference)."""
        if st.announced is None:
            st.numel = st.announced = max(st.numel, self.known.get(st.memory, 0))
        return st.announced


class _Pickler(pickle._Pickler):
    """pickle's Python pickler, writing ferrograd's tensors, dtypes, devices and classes as torch's."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, storages):
        super().__init__(file, protocol)
        self.storages = storages

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            numel = self.storages.announce(obj)
            return ("storage", TorchName("torch", _STORAGE_OF[obj.dtype]), obj.key, obj.location, numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, _C.device):
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return TorchName("torch", "device"), args
        if type(obj).__name__ == "Size" and type(obj).__module__ == "ferrograd._size":
            return TorchName("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _reduce_tensor(self, obj):
        from .nn.parameter import Parameter

        hooks = collections.OrderedDict()
        if isinstance(obj, Parameter):
            state = dict(getattr(obj, "__dict__", None) or {})
            data = obj.detach()
            if state:
                return TorchName("torch._utils", "_rebuild_parameter_with_state"), (data, obj.requires_grad, hooks, state)
            return TorchName("torch._utils", "_rebuild_parameter"), (data, obj.requires_grad, hooks)
        t = obj.detach()
        st = self.storages.of(t, getattr(obj, "_base", None))
        offset = t.storage_offset() if t.numel() else 0
        args = (st, offset, tuple(t.shape), tuple(t.stride()), obj.requires_grad, hooks)
        rebuild = TorchName("torch._utils", "_rebuild_tensor_v2")
        state = dict(getattr(obj, "__dict__", None) or {})
        if type(obj) is not _C.Tensor or state:  # a subclass, or attributes set on it: torch's wrapper
            cls = TorchName("torch", "Tensor") if type(obj) is _C.Tensor else type(obj)
            return TorchName("torch._tensor", "_rebuild_from_type_v2"), (rebuild, cls, args, state)
        return rebuild, args

    def save_global(self, obj, name=None):
        if isinstance(obj, TorchName):
            module, qualname = obj.module, obj.name
        else:
            cls_module = getattr(obj, "__module__", None) or ""
            if name is not None and not isinstance(obj, type) and cls_module.startswith("ferrograd"):
                module, qualname = "torch", name  # dtype/layout/memory_format objects: torch.float32, ...
            elif cls_module.startswith("ferrograd"):
                module, qualname = torch_name(cls_module, name or obj.__qualname__, obj)
            else:
                return super().save_global(obj, name)
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[TorchName] = save_global


def _pickled(obj, storages, protocol, pickler_base):
    cls = _Pickler if pickler_base is None else type("_Pickler", (_Pickler, pickler_base), {})
    buf = io.BytesIO()
    cls(buf, protocol, storages).dump(obj)
    return buf.getvalue()


def _write_record(zf, name, data, align=False):
    """One uncompressed record; with `align`, its bytes start at a multiple of 64 in the file."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = len(view)
    zip64 = len(view) * 1.05 > zipfile.ZIP64_LIMIT  # (zipfile's own rule for adding its zip64 field)
    if align:
        start = zf.fp.tell() + 30 + len(name.encode("utf-8")) + (20 if zip64 else 0) + 4
        pad = (-start) % _ALIGN
        info.extra = struct.pack("<HH", _PAD_ID, pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as w:
        w.write(view)


def write(obj, f, protocol=DEFAULT_PROTOCOL, pickler_base=None, byteorder_record=True):
    """torch.save's zip format: pickle `obj` (storages by key), then write the archive to `f`."""
    storages = _Storages()
    data = _pickled(obj, storages, protocol, pickler_base)
    if any(st.numel > st.announced for st in storages.all):
        # a view seen later reached past what the first tensor of its storage announced: pickle
        # again, every storage announced at the size the first pass found
        storages = _Storages({st.memory: st.numel for st in storages.all if st.memory is not None})
        data = _pickled(obj, storages, protocol, pickler_base)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, "archive/data.pkl", data)
        _write_record(zf, "archive/.format_version", b"1")
        _write_record(zf, "archive/.storage_alignment", str(_ALIGN).encode())
        if byteorder_record:
            _write_record(zf, "archive/byteorder", b"little")
        for st in storages.all:
            arr = st.data()
            if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            _write_record(zf, f"archive/data/{st.key}", np.ascontiguousarray(arr).view(np.uint8), align=True)
        _write_record(zf, "archive/version", b"3\n")


# ----------------------------------------------------------------------------------------------
# load
# ----------------------------------------------------------------------------------------------

def _bad(name, what):
    return RuntimeError(f"ferrograd.load: {name} is not a valid torch checkpoint: {what}")


# what zipfile raises on a damaged archive (bad headers, sizes, names, CRCs, compression methods)
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OverflowError, EOFError,
               struct.error)


class Archive:
    """The records of a checkpoint zip (from a path, which `mmap` maps, or from bytes)."""

    def __init__(self, source, name, mmap=False):
        self.name = name
        self._map = None
        self._source = source
        self.size = len(source) if isinstance(source, (bytes, bytearray)) else os.path.getsize(source)
        try:
            self.zf = zipfile.ZipFile(source if not isinstance(source, (bytes, bytearray)) else io.BytesIO(source))
        except _ZIP_ERRORS as e:
            raise _bad(name, f"the zip archive is damaged ({e})") from None
        if mmap:  # storages are read from a private (copy-on-write) mapping of the whole file
            with open(source, "rb") as fh:
                self._map = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY)
        names = self.zf.namelist()
        pkl = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
        if not pkl:
            if any(n.endswith("/constants.pkl") for n in names):
                raise RuntimeError(f"ferrograd.load: {name} is a TorchScript archive (torch.jit.save); "
                                   "ferrograd cannot load TorchScript")
            raise _bad(name, "it has no data.pkl record")
        self.prefix = pkl[0][: -len("data.pkl")]
        self.names = set(names)
        version = self._small("version") or self._small(".data/version")
        if version is None:
            raise _bad(name, "it has no version record")
        try:
            self.version = int(version.decode("ascii").strip())
        except ValueError:
            raise _bad(name, f"its version record is {version!r}") from None
        order = self._small("byteorder")
        self.byteorder = "little" if order is None else order.decode("ascii", "replace").strip()
        if self.byteorder not in ("little", "big"):
            raise _bad(name, f"its byteorder record says {self.byteorder!r}")

    def _data_start(self, info):
        """Where a record's bytes start in the file (after its local header), or None if the header
        does not check out."""
        if self._map is not None:
            head = self._map[info.header_offset:info.header_offset + 30]
        elif isinstance(self._source, (bytes, bytearray)):
            head = bytes(self._source[info.header_offset:info.header_offset + 30])
        else:
            with open(self._source, "rb") as fh:
                fh.seek(info.header_offset)
                head = fh.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            return None
        n, m = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + n + m
        return start if start + info.file_size <= self.size else None

    def close(self):
        self.zf.close()  # (a mapping stays open while tensors use it)

    def _small(self, record):
        full = self.prefix + record
        try:
            return self.zf.read(full) if full in self.names else None
        except _ZIP_ERRORS as e:
            raise _bad(self.name, f"its record {full!r} is damaged ({e})") from None

    def pickle_bytes(self):
        info = self.zf.getinfo(self.prefix + "data.pkl")
        if info.compress_size > self.size or info.file_size > 1032 * max(info.compress_size, 1):
            raise _bad(self.name, f"its data.pkl claims {info.file_size} bytes, more than the file can hold")
        try:
            return self.zf.read(info)
        except _ZIP_ERRORS as e:
            raise _bad(self.name, f"its data.pkl is damaged ({e})") from None

    def storage_bytes(self, key, nbytes):
        """The record data/<key> as a writable uint8 array (mapped from the file with mmap)."""
        full = f"{self.prefix}data/{key}"
        if full not in self.names:
            raise _bad(self.name, f"the pickle refers to storage {key!r}, which has no record {full!r}")
        info = self.zf.getinfo(full)
        if info.file_size != nbytes:
            raise _bad(self.name, f"storage {key!r} should hold {nbytes} bytes, its record holds {info.file_size}")
        # (sizes are checked against the file before memory is set aside for them: a small damaged or
        # malicious file must not claim gigabytes; deflate expands at most ~1032 times)
        packed = info.compress_size if info.compress_type != zipfile.ZIP_STORED else nbytes
        if packed > self.size or nbytes > 1032 * max(info.compress_size, 1):
            raise _bad(self.name, f"storage record {full!r} claims {nbytes} bytes, more than the file holds")
        start = self._data_start(info) if info.compress_type == zipfile.ZIP_STORED else None
        if start is not None and self._map is not None:
            return np.frombuffer(self._map, np.uint8, nbytes, start)
        if start is not None:  # stored: read straight into the tensor's memory, then check the CRC
            if isinstance(self._source, (bytes, bytearray)):
                buf = np.frombuffer(self._source, np.uint8, nbytes, start).copy()
            else:
                buf = np.empty(nbytes, np.uint8)  # (not zero-filled: every byte is read into it)
                with open(self._source, "rb") as fh:
                    fh.seek(start)
                    if fh.readinto(buf) != nbytes:
                        raise _bad(self.name, f"storage record {full!r} is truncated")
            if zlib.crc32(buf) != info.CRC:
                raise _bad(self.name, f"storage record {full!r} is damaged (bad CRC-32)")
            return buf
        buf = bytearray(nbytes)
        try:
            with self.zf.open(info) as r:
                got = r.readinto(buf)
                r.read(1)  # reaching the end checks the CRC
        except _ZIP_ERRORS as e:
            raise _bad(self.name, f"storage record {full!r} is damaged ({e})") from None
        if got != nbytes:
            raise _bad(self.name, f"storage record {full!r} is truncated")
        return np.frombuffer(buf, np.uint8)


def _target_device(location, map_location, storage):
    """Where a storage saved at `location` goes, as torch.load's map_location decides (a callable may
    return a storage moved already: its device)."""
    if map_location is None:
        dev = location
    elif isinstance(map_location, dict):
        dev = map_location.get(location, location)
    elif isinstance(map_location, (str, _C.device)):
        dev = map_location
    elif callable(map_location):
        res = map_location(storage, location)
        dev = res.device if isinstance(res, LoadedStorage) else location if res is None else res
    else:
        raise TypeError(f"ferrograd.load: map_location should be a str, a device, a dict or a callable, "
                        f"got {type(map_location).__name__}")
    dev = _C.device(dev) if isinstance(dev, str) else dev
    if not isinstance(dev, _C.device):
        raise TypeError(f"ferrograd.load: map_location gave {dev!r} for location {location!r}; "
                        "expected a device or a device string")
    if dev.type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                               "is False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
        index = dev.index or 0
        if index >= cuda.device_count():
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but "
                               f"torch.cuda.device_count() is {cuda.device_count()}. Please use torch.load with "
                               "map_location to map your storages to an existing device.")
    elif dev.type != "cpu":
        raise RuntimeError(f"don't know how to restore data location of torch.storage.UntypedStorage "
                           f"(tagged with {dev})")
    return dev


class LoadedStorage:
    """A storage read from a checkpoint: its bytes (host), element type and device. What a
    map_location callable receives (as torch's untyped storage: .device, .cpu(), .cuda(), .to())."""

    def __init__(self, raw, dtype, device):
        self._raw, self.dtype, self.device = raw, dtype, device
        self._flat = None

    def nbytes(self):
        return self._raw.size

    size = __len__ = nbytes

    def to(self, device=None, non_blocking=False):
        return LoadedStorage(self._raw, self.dtype, _C.device(device) if isinstance(device, str) else device)

    def cpu(self):
        return self.to(_C.device("cpu"))

    def cuda(self, device=None, non_blocking=False):
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def __repr__(self):
        return f"<ferrograd checkpoint storage of {self._raw.size} bytes, {self.dtype}, on {self.device}>"

    def flat(self):
        """The storage as a 1-d tensor on its device (made once; every tensor of it is a view of it)."""
        if self._flat is None:
            arr = self._raw.view(_NP_OF[self.dtype])
            t = _C.from_numpy(arr)
            if self.dtype == "bfloat16":
                t = t.view(dtype=_C.bfloat16)
            if self.device.type != "cpu":
                t = t.to(self.device)
            self._flat = t
        return self._flat


def _strided(flat, offset, size, stride):
    """The view of the 1-d `flat` with torch's (storage_offset, size, stride), from view ops only:
    the dims with a step are peeled off one window (`unfold`) at a time, dims of size 1 or stride 0
    put back by unsqueeze/expand."""
    size, stride = list(size), list(stride)
    numel = 1
    for n in size:
        numel *= n
    if numel == 0:
        return flat.narrow(0, 0, 0).reshape(tuple(size))
    expected, contiguous = 1, True
    for n, s in zip(reversed(size), reversed(stride)):
        if n != 1 and s != expected:
            contiguous = False
        expected *= n
    if contiguous:
        return flat.narrow(0, offset, numel).view(tuple(size))
    real = [i for i in range(len(size)) if size[i] > 1 and stride[i] > 0]
    span = 1 + sum((size[i] - 1) * stride[i] for i in real)
    z = flat.narrow(0, offset, span)
    rest = span
    for i in real:
        rest -= (size[i] - 1) * stride[i]
        z = z.unfold(-1, rest, stride[i]).narrow(-2, 0, size[i])
    z = z.select(-1, 0)
    for i in range(len(size)):
        if i not in real:
            z = z.unsqueeze(i)
    return z.expand(tuple(size))


def check_bounds(storage_numel, offset, size, stride, itemsize):
    ok = (isinstance(offset, int) and offset >= 0 and len(size) == len(stride)
          and all(isinstance(n, int) and n >= 0 for n in size) and all(isinstance(s, int) and s >= 0 for s in stride))
    if not ok:
        raise RuntimeError(f"ferrograd.load: invalid tensor geometry in the checkpoint: size {list(size)}, "
                           f"stride {list(stride)}, storage offset {offset}")
    numel = 1
    for n in size:
        numel *= n
    if numel >= 2**63:
        raise RuntimeError(f"ferrograd.load: a tensor of size {list(size)} in the checkpoint has more elements "
                           "than int64 can count")
    need = 0 if numel == 0 else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > storage_numel:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {need * itemsize} are out of bounds "
                           f"for storage of size {storage_numel * itemsize}")


def tensor_from_storage(storage, offset, size, stride, requires_grad=False):
    """A tensor viewing a loaded storage (tensors of one storage share its memory, as in torch)."""
    if not isinstance(storage, LoadedStorage):
        raise pickle.UnpicklingError(f"expected a storage, got {type(storage).__name__}")
    size, stride = tuple(size), tuple(stride)
    itemsize = np.dtype(_NP_OF[storage.dtype]).itemsize
    check_bounds(storage.nbytes() // itemsize, offset, size, stride, itemsize)
    from .autograd.grad_mode import no_grad

    with no_grad():
        t = _strided(storage.flat(), offset, size, stride).detach()
    if requires_grad:
        t.requires_grad_(True)
    return t


class StorageLoader:
    """persistent_load for a checkpoint: ('storage', storage class, key, location, numel) -> a storage,
    each record read once (tensors of one key share it; another element type views the same bytes)."""

    def __init__(self, archive, map_location):
        self.archive, self.map_location = archive, map_location
        self.raw = {}
        self.typed = {}

    def __call__(self, pid):
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "module":
            return pid[1]  # the legacy format's ('module', class, source file, source): the class
        # (the legacy format adds a sixth item, a view of the storage: None since torch 0.4)
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage" and pid[5:] in ((), (None,))):
            raise pickle.UnpicklingError(f"ferrograd.load: unsupported persistent id {pid!r} in {self.archive.name}")
        _, kind, key, location, numel = pid[:5]
        dtype = kind.dtype if isinstance(kind, StorageType) else None
        if dtype is None:
            raise pickle.UnpicklingError(f"ferrograd.load: {self.archive.name}: {kind!r} is not a storage type")
        if not (isinstance(key, str) and isinstance(location, str) and isinstance(numel, int) and numel >= 0):
            raise pickle.UnpicklingError(f"ferrograd.load: {self.archive.name}: malformed storage id {pid!r}")
        if (key, dtype) in self.typed:
            return self.typed[key, dtype]
        np_dtype = np.dtype(_NP_OF[dtype])
        if key not in self.raw:
            raw = self.archive.storage_bytes(key, numel * np_dtype.itemsize)
            if self.archive.byteorder != sys.byteorder and np_dtype.itemsize > 1:
                raw = raw.view(np_dtype).byteswap().view(np.uint8)
            self.raw[key] = raw
        raw = self.raw[key]
        if raw.size % np_dtype.itemsize:
            raise _bad(self.archive.name, f"storage {key!r} of {raw.size} bytes viewed as {dtype}")
        st = LoadedStorage(raw, dtype, _C.device("cpu"))
        st.device = _target_device(location, self.map_location, st)
        self.typed[key, dtype] = st
        return st


class StorageType:
    """torch.FloatStorage and its kind, as read from a checkpoint: names the element type."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"torch.{self.name}"


STORAGE_TYPES = {name: StorageType(name, dt) for name, dt in _DTYPE_OF_STORAGE.items()}


# ----------------------------------------------------------------------------------------------
# torch's legacy format (torch < 1.6, or _use_new_zipfile_serialization=False): read only
# ----------------------------------------------------------------------------------------------
# Five pickles in a row, then the storages' bytes: the magic number, the protocol version (1001), a
# dict of system facts (byte order), the object (persistent ids ('storage', torch.<T>Storage, key,
# location, numel, None)), the list of storage keys; then per key, in that order, its element count
# (8 bytes) and its bytes. The bytes come after the object, and their sizes need the element types
# the object's pickle names, so that pickle is first read as opcodes only (nothing is executed),
# then the storages, then the object is unpickled for real.

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_STRINGS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING"}


def legacy_storage_types(file):
    """{storage key: storage class name} of the persistent ids in the pickle at `file`'s position,
    read by following the opcodes' stack effects (pickletools), leaving `file` after the pickle."""
    import pickletools

    found, memo, stack, marks = {}, {}, [], []
    for op, arg, _ in pickletools.genops(file):
        name = op.name
        if name == "MARK":
            marks.append(len(stack))
            continue
        if name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[arg] = stack[-1] if stack else None
            continue
        if name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else None
            continue
        popped = []
        if pickletools.markobject in op.stack_before:  # the items above the mark, then those below it
            start = marks.pop() if marks else 0
            popped = stack[start:]
            del stack[start:]
            below = op.stack_before.index(pickletools.markobject)
        else:
            below = len(op.stack_before)
            popped = stack[len(stack) - below:] if below else []
        del stack[max(len(stack) - below, 0):]
        value = None
        if name in _STRINGS:
            value = arg
        elif name in ("GLOBAL", "INST"):
            value = ("global", arg.replace(" ", "."))
        elif name == "STACK_GLOBAL" and len(popped) == 2 and all(isinstance(p, str) for p in popped):
            value = ("global", f"{popped[0]}.{popped[1]}")
        elif name in ("BINGET", "LONG_BINGET", "GET"):
            value = memo.get(arg)
        elif name in ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
            if (len(popped) >= 5 and popped[0] == "storage" and isinstance(popped[1], tuple)
                    and isinstance(popped[2], str)):
                found[popped[2]] = popped[1][1]
        stack.extend([value] * len(op.stack_after))
    return found


class LegacyStorages:
    """The storages of a legacy-format file, read ahead of its object's pickle: what StorageLoader
    asks an archive for."""

    def __init__(self, file, name, size, kinds, byteorder):
        self.name, self.byteorder = name, byteorder
        self.raw = {}
        keys = _plain_pickle(file)
        if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            raise _bad(name, "the legacy storage key list is malformed")
        for key in keys:
            kind = kinds.get(key, "").rsplit(".", 1)[-1]
            if kind not in _DTYPE_OF_STORAGE:
                raise RuntimeError(f"ferrograd.load: {name}: storage {key!r} is a {kinds.get(key) or 'storage of an unknown type'}, "
                                   "which ferrograd cannot read")
            count = int.from_bytes(file.read(8), byteorder)
            nbytes = count * np.dtype(_NP_OF[_DTYPE_OF_STORAGE[kind]]).itemsize
            if nbytes > size:
                raise _bad(name, f"storage {key!r} claims {nbytes} bytes, more than the file holds")
            buf = bytearray(nbytes)
            if file.readinto(buf) != nbytes:
                raise _bad(name, f"the file is truncated inside storage {key!r}")
            self.raw[key] = np.frombuffer(buf, np.uint8)

    def storage_bytes(self, key, nbytes):
        raw = self.raw.get(key)
        if raw is None:
            raise _bad(self.name, f"the pickle refers to storage {key!r}, which the file does not hold")
        if raw.size != nbytes:
            raise _bad(self.name, f"storage {key!r} should hold {nbytes} bytes, the file holds {raw.size}")
        return raw


def _plain_pickle(file):
    """One pickle of plain values (a number, a list of strings, a dict of facts): nothing to resolve."""
    from ._checkpoint_unpickling import WeightsUnpickler

    return WeightsUnpickler(file, None).load()


def open_legacy(file, name, size):
    """Read a legacy file's header and storages; returns the StorageLoader archive, with `file` at the
    object's pickle."""
    try:
        magic = _plain_pickle(file)
    except Exception:
        magic = None
    if magic != LEGACY_MAGIC:
        raise pickle.UnpicklingError(f"ferrograd.load: {name}: Invalid magic number; corrupt file?")
    try:
        return _open_legacy(file, name, size)
    except (RuntimeError, pickle.UnpicklingError, MemoryError):
        raise
    except Exception as e:  # a damaged file: pickletools' and the plain pickles' own errors
        raise _bad(name, f"damaged legacy-format file ({type(e).__name__}: {e})") from None


def _open_legacy(file, name, size):
    version = _plain_pickle(file)
    if version != 1001:
        raise RuntimeError(f"Invalid protocol version: {version}")
    info = _plain_pickle(file)
    byteorder = "little" if not isinstance(info, dict) or info.get("little_endian", True) else "big"
    start = file.tell()
    kinds = legacy_storage_types(file)
    storages = LegacyStorages(file, name, size, kinds, byteorder)
    file.seek(start)
    return storages
