"""Reading a checkpoint's pickle: the weights_only unpickler and its allow-list (the safe globals), the
full unpickler (weights_only=False), and what torch's rebuild globals stand for in ferrograd.

weights_only (torch.load's default since torch 2.6) must never run code a file brings. The restricted
unpickler is pickle's Python unpickler with its opcodes checked:
- a global (GLOBAL / STACK_GLOBAL) resolves only to ferrograd's counterpart of one of torch's allowed
  globals (tensor and storage rebuilds, dtypes, Size, device, Parameter, OrderedDict, set, ...) or to an
  object registered with add_safe_globals; anything else is refused before it is imported;
- a call (REDUCE, NEWOBJ) applies only to such an allowed object;
- BUILD (setting an object's state) only on tensors, ordered dicts and instances of safe classes, never
  on a class or a function;
- the opcodes that look up classes another way (INST, OBJ, EXT1/2/4) are refused.
"""

import _compat_pickle
import collections
import pickle
import types

from . import _C
from ._torch_checkpoint import STORAGE_TYPES, ferrograd_global, tensor_from_storage, torch_name

# ----------------------------------------------------------------------------------------------
# safe globals
# ----------------------------------------------------------------------------------------------

_safe = []  # what add_safe_globals registered: objects, or (object, "module.name") pairs


def add_safe_globals(safe_globals):
    """Allow these globals (classes, functions; or (object, "module.name") pairs) in weights_only loads."""
    _safe.extend(safe_globals)


def get_safe_globals():
    """The globals add_safe_globals registered."""
    return list(_safe)


def clear_safe_globals():
    """Forget every global add_safe_globals registered."""
    _safe.clear()


class safe_globals:
    """Context manager: these globals are allowed in weights_only loads inside the `with` block only."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._before = list(_safe)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe[:] = self._before


def _user_allowed():
    """{qualified name: object} for the registered safe globals (a ferrograd class under its own name and
    torch's, as files name it)."""
    out = {}
    for entry in _safe:
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], str):
            out[entry[1]] = entry[0]
            continue
        module = getattr(entry, "__module__", None)
        qualname = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
        if module is None or qualname is None:
            raise TypeError(f"add_safe_globals: {entry!r} has no __module__/__qualname__; register it as "
                            "(object, 'module.name')")
        out[f"{module}.{qualname}"] = entry
        m, q = torch_name(module, qualname, entry)
        out[f"{m}.{q}"] = entry
    return out


# ----------------------------------------------------------------------------------------------
# torch's rebuild globals, in ferrograd
# ----------------------------------------------------------------------------------------------

def _set_state(obj, state):
    if not state:
        return
    dict_state, slots_state = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part in (dict_state, slots_state):
        if part:
            if not isinstance(part, dict):
                raise pickle.UnpicklingError(f"ferrograd.load: a tensor's state should be a dict, got {type(part).__name__}")
            for k, v in part.items():
                setattr(obj, k, v)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    return tensor_from_storage(storage, storage_offset, size, stride, bool(requires_grad))


def _rebuild_tensor(storage, storage_offset, size, stride):
    return tensor_from_storage(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from .nn.parameter import Parameter

    if not isinstance(data, _C.Tensor):
        raise pickle.UnpicklingError(f"ferrograd.load: a Parameter's data should be a tensor, got {type(data).__name__}")
    p = Parameter(data, bool(requires_grad))
    _set_state(p, state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    from .nn.parameter import Parameter

    ret = func(*args)
    if new_type is not _C.Tensor and type(ret) is not new_type:
        if not (isinstance(new_type, type) and issubclass(new_type, _C.Tensor)):
            raise pickle.UnpicklingError(f"ferrograd.load: {new_type!r} is not a tensor type")
        if issubclass(new_type, Parameter):
            ret = new_type(ret, ret.requires_grad)
        else:
            raise RuntimeError(f"ferrograd.load: the checkpoint holds a tensor subclass {new_type.__qualname__}, "
                               "which ferrograd cannot rebuild")
    _set_state(ret, state)
    return ret


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    t = data.to(dtype=dtype, device=device)
    return t.requires_grad_(True) if requires_grad else t


def _get_layout(name):
    if name == "torch.strided":
        from ._tensor_properties import strided

        return strided
    raise RuntimeError(f"ferrograd.load: the checkpoint holds a tensor of layout {name}; ferrograd has only torch.strided")


def _unsupported(what):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"ferrograd.load: the checkpoint holds {what}, which ferrograd does not support")
    return rebuild


def _latin1_encode(obj, encoding="utf-8", errors="strict"):
    """_codecs.encode as protocol-2 pickles use it (bytes written as a latin-1 string)."""
    import codecs

    if not isinstance(obj, str) or codecs.lookup(encoding).name not in ("iso8859-1", "utf-8", "ascii"):
        raise pickle.UnpicklingError(f"ferrograd.load: _codecs.encode with {encoding!r} is not allowed in a weights_only load")
    return codecs.encode(obj, encoding, errors)


def _torch_globals():
    """torch's globals as a checkpoint names them -> ferrograd's objects (both unpicklers use these)."""
    from ._size import Size
    from .nn.parameter import Parameter

    g = {
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor_from_cpu_tensor,
        "torch.serialization._get_layout": _get_layout,
        "torch._utils._rebuild_qtensor": _unsupported("a quantized tensor"),
        "torch._utils._rebuild_sparse_tensor": _unsupported("a sparse tensor"),
        "torch._utils._rebuild_meta_tensor_no_storage": _unsupported("a meta tensor"),
        "torch._utils._rebuild_wrapper_subclass": _unsupported("a tensor subclass"),
        "torch._utils._rebuild_device_tensor_from_numpy": _unsupported("a tensor saved through NumPy"),
        "torch._utils._rebuild_nested_tensor": _unsupported("a nested tensor"),
        "torch.Size": Size,
        "torch.device": _C.device,
        "torch.Tensor": _C.Tensor,
        "torch.nn.parameter.Parameter": Parameter,
    }
    for name, st in STORAGE_TYPES.items():
        g[f"torch.{name}"] = g[f"torch.cuda.{name}"] = st
    for dt in (_C.float32, _C.float64, _C.float16, _C.bfloat16, _C.int64, _C.int32, _C.int16, _C.int8, _C.uint8,
               _C.bool):
        g[f"torch.{str(dt).rsplit('.', 1)[-1]}"] = dt
    return g


_TORCH = None


def torch_globals():
    global _TORCH
    if _TORCH is None:
        _TORCH = _torch_globals()
    return _TORCH


def _bytearray(source=b"", *args):
    """bytearray as pickles call it (from bytes or a latin-1 string), never bytearray(n): a file must not
    make the loader allocate what it likes."""
    if isinstance(source, int):
        raise pickle.UnpicklingError("ferrograd.load: bytearray(<int>) is not allowed in a weights_only load")
    return bytearray(source, *args)


_PLAIN = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.bytearray": _bytearray,
    "builtins.complex": complex,
    "_codecs.encode": _latin1_encode,
}

_BLOCKED_MODULES = {"os", "posix", "nt", "sys", "subprocess", "builtins", "importlib", "runpy", "shutil", "socket",
                    "pty", "code", "codeop", "pickle", "_pickle", "ctypes", "io", "operator", "functools",
                    "webbrowser", "multiprocessing", "signal", "platform", "types", "marshal", "commands"}

_HINT = ("Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
         "arbitrary code execution. Do it only if you got the file from a trusted source.")


def weights_only_error(detail, fixable=True):
    if fixable:
        msg = ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
               "steps only if you trust the source of the checkpoint. \n\t(1) " + _HINT + "\n\t(2) Alternatively, to "
               "load with `weights_only=True` please check the recommended steps in the following error message."
               f"\n\tWeightsUnpickler error: {detail}")
    else:
        msg = f"Weights only load failed. {_HINT}\n\n{detail}"
    return pickle.UnpicklingError(msg + "\n\nCheck the documentation of torch.load to learn more about types "
                                        "accepted by default with weights_only.")


# ----------------------------------------------------------------------------------------------
# the unpicklers
# ----------------------------------------------------------------------------------------------

def _fix_imports(module, name, proto):
    """Python 2 names of protocol < 3 pickles (__builtin__.set) as Python 3's."""
    if proto < 3:
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
    return module, name


class WeightsUnpickler(pickle._Unpickler):
    """The weights_only unpickler (see the module docstring)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, persistent_load, encoding="utf-8", size=None):
        super().__init__(file, encoding=encoding)
        self._load_storage = persistent_load
        self._size = size  # the pickle's length: no length field may say more
        self._user = _user_allowed()
        self._allowed_ids = {id(o) for o in (*torch_globals().values(), *_PLAIN.values(), *self._user.values())}
        self._safe_classes = tuple(o for o in self._user.values() if isinstance(o, type))

    def persistent_load(self, pid):
        return self._load_storage(pid)

    def find_class(self, module, name):
        module, name = _fix_imports(module, name, self.proto)
        full = f"{module}.{name}"
        if full in self._user:
            return self._user[full]
        if full in _PLAIN:
            return _PLAIN[full]
        if module == "torch" or module.startswith("torch."):
            obj = torch_globals().get(full)
            if obj is not None:
                return obj
        if module.split(".")[0] in _BLOCKED_MODULES and full not in _PLAIN:
            raise weights_only_error(f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.",
                                     fixable=False)
        raise weights_only_error(
            f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{full}])` or the `torch.serialization.safe_globals([{full}])` "
            "context manager to allowlist this global if you trust this class/function.")

    def _check_callable(self, obj, what):
        if id(obj) not in self._allowed_ids:
            raise weights_only_error(f"{what} of {type(obj).__name__} {obj!r}, which is not an allowed global",
                                     fixable=False)

    def load_reduce(self):
        self._check_callable(self.stack[-2], "REDUCE (a call)")
        pickle._Unpickler.load_reduce(self)

    def load_newobj(self):
        self._check_callable(self.stack[-2], "NEWOBJ (an instance)")
        pickle._Unpickler.load_newobj(self)

    def load_newobj_ex(self):
        self._check_callable(self.stack[-3], "NEWOBJ_EX (an instance)")
        pickle._Unpickler.load_newobj_ex(self)

    def load_build(self):
        inst = self.stack[-2]
        if id(inst) in self._allowed_ids or isinstance(inst, (type, types.FunctionType, types.BuiltinFunctionType,
                                                                types.MethodType, types.ModuleType)):
            raise weights_only_error(f"BUILD (setting the state) of {inst!r} is not allowed", fixable=False)
        if isinstance(inst, _C.Tensor) or type(inst) in (collections.OrderedDict, collections.Counter):
            state = self.stack.pop()
            _set_state(inst, state)  # attributes only (an ordered dict's _metadata, a tensor's fields)
            return
        if self._safe_classes and isinstance(inst, self._safe_classes):
            pickle._Unpickler.load_build(self)
            return
        raise weights_only_error(f"BUILD (setting the state) of a {type(inst).__name__} is not allowed: only "
                                 "tensors, OrderedDicts and the classes allowed with add_safe_globals", fixable=False)

    def load_bytearray8(self):  # (pickle's allocates the length the file claims before reading)
        n = int.from_bytes(self.read(8), "little")
        if self._size is not None and n > self._size:
            raise weights_only_error(f"BYTEARRAY8 claims {n} bytes, more than the whole pickle", fixable=False)
        b = bytearray(n)
        self.readinto(b)
        self.append(b)

    def _refused(self):
        raise weights_only_error("this pickle looks classes up with an opcode (INST, OBJ, EXT) that weights_only "
                                 "loading does not allow", fixable=False)

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8
    for _op in (pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _refused
    del _op


def full_unpickler(base):
    """weights_only=False: `base` (pickle's Unpickler, or a pickle_module's) loading any global, torch's
    names resolved to ferrograd's objects."""

    class FullUnpickler(base):
        def __init__(self, file, persistent_load, **kwargs):
            super().__init__(file, **kwargs)
            self._load_storage = persistent_load

        def persistent_load(self, pid):
            return self._load_storage(pid)

        def find_class(self, module, name):
            if module == "torch" or module.startswith("torch."):
                obj = torch_globals().get(f"{module}.{name}")
                if obj is None:
                    obj = ferrograd_global(module, name)
                if obj is None:
                    raise pickle.UnpicklingError(f"ferrograd.load: the checkpoint refers to {module}.{name}, "
                                                 "which ferrograd does not have")
                return obj
            return super().find_class(module, name)

    return FullUnpickler


def unsafe_globals(data):
    """The globals a pickle names that a weights_only load would refuse, in order of first use, found by
    reading its opcodes (nothing is unpickled)."""
    import pickletools

    allowed = set(_user_allowed()) | set(_PLAIN) | set(torch_globals())
    found, memo, pushed, proto = [], {}, [], 0
    strings = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING"}

    def add(module, name):
        full = ".".join(_fix_imports(module, name, proto))
        if full not in allowed and full not in found:
            found.append(full)

    for op, arg, _ in pickletools.genops(data):
        if op.name == "PROTO":
            proto = arg
        elif op.name in ("GLOBAL", "INST"):
            add(*arg.split(" ", 1))
            pushed.append(None)
        elif op.name == "STACK_GLOBAL":
            if len(pushed) >= 2 and isinstance(pushed[-2], str) and isinstance(pushed[-1], str):
                add(pushed[-2], pushed[-1])
            pushed.append(None)
        elif op.name in strings:
            pushed.append(arg)
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[arg] = pushed[-1] if pushed else None
        elif op.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed.append(memo.get(arg))
        else:
            pushed.append(None)
    return found
