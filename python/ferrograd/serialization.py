"""torch.save / torch.load, and the safe-globals registry of weights_only loading.

`save(obj, f)` writes torch's checkpoint format (a zip of a pickle and the tensors' raw storages, see
_torch_checkpoint.py): any picklable object, with tensors sharing memory saved once. A file written here
loads in torch, and torch's files load here. A path ending in ".safetensors" is written as a
safetensors file instead (tensors and dicts of tensors only; see _safetensors_format.py): the format
that never runs code on load, which torch.load also reads from such a path.

`load(f)` reads either format, and torch's pre-1.6 legacy format (not written here). With
`weights_only=True`, the default as in torch >= 2.6, the pickle is read by a restricted unpickler that
resolves only tensors, storages, primitive containers, and the globals allowed with
`add_safe_globals` / `safe_globals` (_checkpoint_unpickling.py); `weights_only=False` unpickles fully
and must only be used on trusted files.
"""

import os
import pickle

from . import _safetensors_format
from ._checkpoint_unpickling import (WeightsUnpickler, add_safe_globals, clear_safe_globals, full_unpickler,
                                     get_safe_globals, safe_globals, unsafe_globals, weights_only_error)
from ._safetensors_format import TENSOR_KEY
from ._torch_checkpoint import DEFAULT_PROTOCOL, Archive, StorageLoader, open_legacy, write

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL", "TENSOR_KEY"]


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


def _name(f):
    if _is_path(f):
        return repr(os.fsdecode(f))
    return repr(getattr(f, "name", f))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` to ``f`` (a path or a writable binary file object) in torch's checkpoint format.

    Any picklable object: tensors (views sharing storage are saved once and share it again when
    loaded), modules, optimizer state dicts, NumPy arrays, nested containers. A path ending in
    ".safetensors" gets a safetensors file instead (a tensor or a dict of tensors).
    """
    if _is_path(f) and os.fsdecode(f).endswith(".safetensors"):
        _safetensors_format.save(obj, f)
        return
    if not (_is_path(f) or hasattr(f, "write")):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ferrograd.save: torch's legacy (pre-1.6) format is not written; "
                                  "leave _use_new_zipfile_serialization=True")
    base = None if pickle_module is None or pickle_module is pickle else pickle_module.Pickler
    if _is_path(f):
        with open(os.fsdecode(f), "wb") as fh:
            write(obj, fh, pickle_protocol, base, not _disable_byteorder_record)
    else:
        write(obj, f, pickle_protocol, base, not _disable_byteorder_record)
        if hasattr(f, "flush"):
            f.flush()


def _weights_only_default(weights_only, pickle_module):
    """torch.load's rule: weights_only unless a pickle_module is given; the environment can force it."""
    force_on = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true")
    force_off = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in ("1", "y", "yes", "true")
    if force_on:
        return True
    if weights_only is None:
        return False if force_off else pickle_module is None
    return bool(weights_only)


def _safetensors_layout(head, size):
    """Whether the first 9 bytes read as a safetensors header: an 8-byte length that fits the file,
    then the '{' of the JSON header."""
    return len(head) >= 9 and head[8:9] == b"{" and 8 + int.from_bytes(head[:8], "little") <= size


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved with :func:`save` or torch.save (or a safetensors file) from ``f``.

    ``weights_only`` (default True, as torch >= 2.6): only tensors, primitive containers and the
    globals allowed by :func:`add_safe_globals` are unpickled; anything else raises
    ``pickle.UnpicklingError`` ("Weights only load failed ...") before it is imported.
    ``weights_only=False`` unpickles anything: only for files from a trusted source.
    ``map_location``: where tensors go ('cpu', a device, a dict {saved location: location}, or a
    callable(storage, location)); by default where they were saved. ``mmap=True`` maps the file
    (a path) and uses the tensors' bytes in place, copy-on-write.
    """
    weights_only = _weights_only_default(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    elif pickle_module is None:
        pickle_module = pickle
    name = _name(f)
    pickle_load_args.setdefault("encoding", "utf-8")

    if _is_path(f):
        path = os.fsdecode(f)
        with open(path, "rb") as fh:  # FileNotFoundError / IsADirectoryError as open raises them
            magic = fh.read(9)
            size = os.fstat(fh.fileno()).st_size
        blob = None
    elif hasattr(f, "read"):
        if mmap:
            raise ValueError("f must be a file path in order to use the mmap argument")
        blob = f.read()
        if isinstance(blob, str):
            raise TypeError(f"ferrograd.load: {name} was opened in text mode; open it with 'rb'")
        blob, magic, path = bytes(blob), bytes(blob[:9]), None
        size = len(blob)
    else:
        raise TypeError(f"ferrograd.load: f must be a path or a readable binary file object, got {type(f).__name__}")

    if magic[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        archive = Archive(path if blob is None else blob, name, mmap=bool(mmap) and blob is None)
        try:
            return _unpickle(archive, map_location, weights_only, pickle_module, pickle_load_args)
        finally:
            archive.close()
    # A pickle starts with 0x80; so does a safetensors file whose header length is 128 mod 256: the
    # safetensors layout (a little-endian length that fits the file, then a JSON object) decides.
    if magic[:1] == b"\x80" and not _safetensors_layout(magic, size):
        if mmap:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(_use_new_zipfile_serialization="
                               "True)`, please torch.save your checkpoint with this option in order to use mmap.")
        import io

        with (io.BytesIO(blob) if blob is not None else open(path, "rb")) as fh:
            size = len(blob) if blob is not None else os.fstat(fh.fileno()).st_size
            return _unpickle_from(fh, open_legacy(fh, name, size), map_location, weights_only, pickle_module,
                                  pickle_load_args, size)
    if mmap:
        raise RuntimeError(f"ferrograd.load: mmap=True needs a checkpoint in torch's zip format; {name} is not one")
    return _safetensors_format.load(f, map_location, blob)


def get_unsafe_globals_in_checkpoint(f):
    """The globals in checkpoint ``f`` that a weights_only load would refuse ("module.name" strings),
    read from its pickle's opcodes without unpickling anything."""
    if hasattr(f, "read"):
        f = f.read()
    archive = Archive(f, _name(f) if not isinstance(f, bytes) else "the checkpoint")
    try:
        return unsafe_globals(archive.pickle_bytes())
    finally:
        archive.close()


def _unpickle(archive, map_location, weights_only, pickle_module, pickle_load_args):
    import io

    raw = archive.pickle_bytes()
    return _unpickle_from(io.BytesIO(raw), archive, map_location, weights_only, pickle_module, pickle_load_args,
                          len(raw))


def _unpickle_from(data, archive, map_location, weights_only, pickle_module, pickle_load_args, size=None):
    """Unpickle the object at `data`'s position, its storages from `archive`."""
    storages = StorageLoader(archive, map_location)
    if not weights_only:
        cls = full_unpickler(pickle_module.Unpickler)
        return cls(data, storages, **pickle_load_args).load()
    unpickler = WeightsUnpickler(data, storages, encoding=pickle_load_args.get("encoding", "utf-8"), size=size)
    try:
        return unpickler.load()
    except (pickle.UnpicklingError, RuntimeError, MemoryError):
        raise
    except Exception as e:  # a malformed pickle (truncated, a call with the wrong arguments, ...)
        raise weights_only_error(f"{type(e).__name__}: {e}", fixable=False) from None
