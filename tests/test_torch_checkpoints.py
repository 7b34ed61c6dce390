"""torch.save / torch.load in torch's zip checkpoint format: files written by `fg` load in the real torch
and files written by torch load in `fg` (tensors of each dtype, views sharing storage, state dicts, whole
modules, optimizer state and resumed training), weights_only loading and its safe globals, malicious
pickles that must never run, map_location and mmap.

With FG_TEST_AGAINST_TORCH=1 `fg` is torch, and every test holds torch-vs-torch.
"""
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

from conftest import fg

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def make(L, dtype, shape, seed=0):
    """The same values in library L (fg or torch): drawn in NumPy, bfloat16 rounded from float32."""
    rng = np.random.default_rng(seed + len(shape) + len(dtype))
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dtype.startswith("int") or dtype == "uint8":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    else:
        a = rng.standard_normal(shape).astype("float32" if dtype == "bfloat16" else dtype)
    t = L.from_numpy(np.array(a))
    return t.to(L.bfloat16) if dtype == "bfloat16" else t


def vals(t):
    t = t.detach()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy()


def dname(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def same(a, b, geometry=True):
    """Same dtype, shape, values (and strides / storage offset when `geometry`)."""
    assert dname(a) == dname(b), (a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    if geometry and a.numel():
        assert tuple(a.stride()) == tuple(b.stride()) or a.numel() == 1
        assert a.storage_offset() == b.storage_offset()
    np.testing.assert_array_equal(vals(a), vals(b))


def views(L, dtype):
    """Tensors that share one storage (as views do), with a 0-d, an empty, an expanded and a bare one."""
    x = make(L, dtype, (4, 6))
    return {"x": x, "rows": x[1:3], "cols": x[:, 1::2], "t": x.t(), "elem": x[2, 3],
            "expanded": make(L, dtype, (3,), seed=1).expand(2, 3), "scalar": make(L, dtype, (), seed=2),
            "empty": make(L, dtype, (0, 3), seed=3), "other": make(L, dtype, (5,), seed=4)}


def fg_to_torch(obj, tmp_path, **kw):
    fg.save(obj, tmp_path / "fg.pt")
    return torch.load(tmp_path / "fg.pt", **kw)


def torch_to_fg(obj, tmp_path, **kw):
    torch.save(obj, tmp_path / "torch.pt")
    return fg.load(tmp_path / "torch.pt", **kw)


def small_net(L):
    L.manual_seed(0)
    nn = L.nn
    net = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    with L.no_grad():  # the same weights in both libraries
        for i, p in enumerate(net.parameters()):
            p.copy_(L.from_numpy(np.random.default_rng(i).standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


# ----------------------------------------------------------------------------------------------
# tensors both ways
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_fg_tensors_load_in_torch(tmp_path, dtype):
    src = views(fg, dtype)
    back = fg_to_torch(src, tmp_path)  # torch's default: weights_only=True
    assert type(back) is dict and list(back) == list(src)
    for k in src:
        same(back[k], src[k])
    # the views share one storage in torch too: a write through x shows through the others
    back["x"][2, 3] = back["x"][2, 3] + 1 if dtype != "bool" else ~back["x"][2, 3]
    assert back["elem"].item() == back["x"][2, 3].item() == back["t"][3, 2].item()
    assert back["cols"][2, 1].item() == back["x"][2, 3].item()


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_tensors_load_in_fg(tmp_path, dtype):
    src = views(torch, dtype)
    back = torch_to_fg(src, tmp_path)
    assert type(back) is dict and list(back) == list(src)
    for k in src:
        assert isinstance(back[k], fg.Tensor)
        same(back[k], src[k])
    back["x"][2, 3] = back["x"][2, 3] + 1 if dtype != "bool" else ~back["x"][2, 3]
    assert back["elem"].item() == back["x"][2, 3].item() == back["t"][3, 2].item()
    assert back["rows"][1, 3].item() == back["x"][2, 3].item()
    assert back["cols"][2, 1].item() == back["x"][2, 3].item()


def test_views_are_saved_once_with_their_whole_storage(tmp_path):
    x = fg.arange(24.0).reshape(4, 6)
    fg.save({"a": x[1:2], "b": x[3:, ::2]}, tmp_path / "v.pt")
    with zipfile.ZipFile(tmp_path / "v.pt") as z:
        data = [n for n in z.namelist() if "/data/" in n]
        assert len(data) == 1 and z.getinfo(data[0]).file_size == 24 * 4
    back = torch.load(tmp_path / "v.pt")
    np.testing.assert_array_equal(back["a"].numpy(), x[1:2].numpy())
    assert back["a"].untyped_storage().data_ptr() == back["b"].untyped_storage().data_ptr()


def test_archive_layout_is_torchs(tmp_path):
    fg.save({"w": fg.ones(3)}, tmp_path / "w.pt")
    with zipfile.ZipFile(tmp_path / "w.pt") as z:
        names = z.namelist()
        prefix = names[0].split("/")[0]
        assert f"{prefix}/data.pkl" in names and f"{prefix}/byteorder" in names
        assert z.read(f"{prefix}/version").strip() == b"3"
        assert z.read(f"{prefix}/byteorder") == b"little"
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            if "/data/" in info.filename:  # storages start at a multiple of 64 bytes in the file
                with open(tmp_path / "w.pt", "rb") as fh:
                    fh.seek(info.header_offset + 26)
                    n, m = np.frombuffer(fh.read(4), "<u2")
                assert (info.header_offset + 30 + n + m) % 64 == 0


def test_requires_grad_and_parameters_both_ways(tmp_path):
    obj = {"p": fg.nn.Parameter(fg.randn(3, 2)), "leaf": fg.randn(2, requires_grad=True), "plain": fg.ones(2)}
    back = fg_to_torch(obj, tmp_path)
    assert isinstance(back["p"], torch.nn.Parameter) and back["p"].requires_grad
    assert back["leaf"].requires_grad and not back["plain"].requires_grad
    np.testing.assert_array_equal(back["p"].detach().numpy(), obj["p"].detach().numpy())
    tobj = {"p": torch.nn.Parameter(torch.randn(3, 2)), "leaf": torch.randn(2, requires_grad=True)}
    back = torch_to_fg(tobj, tmp_path)
    assert isinstance(back["p"], fg.nn.Parameter) and back["p"].requires_grad and back["p"].is_leaf
    assert back["leaf"].requires_grad and back["leaf"].is_leaf
    np.testing.assert_array_equal(back["p"].detach().numpy(), tobj["p"].detach().numpy())


def test_python_values_both_ways(tmp_path):
    def obj(L):
        return {"ints": (1, -2, 2**62), "floats": [0.5, float("inf")], "text": "ünï", "none": None,
                "bytes": b"\x00\xffab", "set": {1, 2}, "complex": 1 + 2j, "dtype": L.float64,
                "device": L.device("cpu"), "size": L.Size([2, 3]), 7: "int key",
                "od": collections.OrderedDict([("b", 1), ("a", L.zeros(2, dtype=L.int64))])}

    for back, L in ((fg_to_torch(obj(fg), tmp_path), torch), (torch_to_fg(obj(torch), tmp_path), fg)):
        ref = obj(L)
        for k in ("ints", "floats", "text", "none", "bytes", "set", "complex", 7):
            assert back[k] == ref[k] and type(back[k]) is type(ref[k])
        assert back["dtype"] == L.float64 and back["device"] == L.device("cpu")
        assert back["size"] == L.Size([2, 3]) and isinstance(back["size"], L.Size)
        assert type(back["od"]) is collections.OrderedDict and list(back["od"]) == ["b", "a"]
        same(back["od"]["a"], ref["od"]["a"])


def test_numpy_arrays_need_weights_only_false_or_safe_globals(tmp_path):
    obj = {"n": np.arange(6, dtype=np.float32).reshape(2, 3), "t": fg.ones(2)}
    fg.save(obj, tmp_path / "n.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        fg.load(tmp_path / "n.pt")
    back = fg.load(tmp_path / "n.pt", weights_only=False)
    np.testing.assert_array_equal(back["n"], obj["n"])
    np.testing.assert_array_equal(torch.load(tmp_path / "n.pt", weights_only=False)["n"], obj["n"])
    reconstruct = np.ndarray.__reduce__(obj["n"])[0]
    allowed = [reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float32))]
    with fg.serialization.safe_globals(allowed):
        np.testing.assert_array_equal(fg.load(tmp_path / "n.pt")["n"], obj["n"])


# ----------------------------------------------------------------------------------------------
# modules and optimizers
# ----------------------------------------------------------------------------------------------

def test_state_dict_both_ways(tmp_path):
    fnet, tnet = small_net(fg), small_net(torch)
    x = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    fnet(fg.from_numpy(x)), tnet(torch.from_numpy(x))  # moves BatchNorm's running stats
    tsd = fg_to_torch(fnet.state_dict(), tmp_path)
    assert isinstance(tsd, collections.OrderedDict) and list(tsd) == list(tnet.state_dict())
    for k, v in fnet.state_dict().items():
        np.testing.assert_array_equal(tsd[k].numpy(), v.numpy())  # carried exactly
        np.testing.assert_allclose(tsd[k].numpy(), tnet.state_dict()[k].numpy(), rtol=1e-5, atol=1e-7)
    assert tsd["1.num_batches_tracked"].dtype == torch.int64
    assert getattr(tsd, "_metadata", None) == getattr(tnet.state_dict(), "_metadata", None)

    fsd = torch_to_fg(tnet.state_dict(), tmp_path)
    fresh = small_net(fg)
    fresh.load_state_dict(fsd)
    fresh.eval(), tnet.eval()
    with fg.no_grad(), torch.no_grad():
        np.testing.assert_allclose(fresh(fg.from_numpy(x)).numpy(), tnet(torch.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_whole_module_both_ways(tmp_path):
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    fnet = small_net(fg).eval()
    tnet = fg_to_torch(fnet, tmp_path, weights_only=False)
    assert isinstance(tnet, torch.nn.Sequential) and isinstance(tnet[0], torch.nn.Linear)
    with fg.no_grad(), torch.no_grad():
        np.testing.assert_allclose(tnet(torch.from_numpy(x)).numpy(), fnet(fg.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    tnet = small_net(torch).eval()
    fnet = torch_to_fg(tnet, tmp_path, weights_only=False)
    assert isinstance(fnet, fg.nn.Sequential) and isinstance(fnet[0], fg.nn.Linear)
    assert isinstance(fnet[0].weight, fg.nn.Parameter)
    assert [n for n, _ in fnet.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    with fg.no_grad(), torch.no_grad():
        np.testing.assert_allclose(fnet(fg.from_numpy(x)).numpy(), tnet(torch.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    # a whole module is refused by weights_only, and allowed once its classes are safe globals
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*Sequential"):
        fg.load(tmp_path / "torch.pt")
    with fg.serialization.safe_globals([fg.nn.Sequential, fg.nn.Linear, fg.nn.BatchNorm1d, fg.nn.ReLU, set]):
        assert isinstance(fg.load(tmp_path / "torch.pt")[3], fg.nn.Linear)


def _train_setup(L):
    net = small_net(L)
    opt = L.optim.Adam(net.parameters(), lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-3)
    return net, opt


def _steps(L, net, opt, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = L.from_numpy(rng.standard_normal((8, 5)).astype(np.float32))
        y = L.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))
        opt.zero_grad()
        L.nn.functional.mse_loss(net(x), y).backward()
        opt.step()


@pytest.mark.parametrize("writer", ["torch", "fg"])
def test_resume_training_from_checkpoint(tmp_path, writer):
    """A script's checkpoint {"model", "optimizer", "epoch", "args"}, written by one library, resumed by
    the other: three more steps give torch's parameters."""
    W, R = (torch, fg) if writer == "torch" else (fg, torch)
    net, opt = _train_setup(W)
    _steps(W, net, opt, 3, seed=1)
    ckpt = {"model": net.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
            "args": {"lr": 1e-2, "batch": 8, "name": "run", "betas": (0.8, 0.99), "flags": [True, None]}}
    W.save(ckpt, tmp_path / "ckpt.pt")

    back = R.load(tmp_path / "ckpt.pt")
    assert back["epoch"] == 3 and back["args"] == ckpt["args"]
    net2, opt2 = _train_setup(R)
    net2.load_state_dict(back["model"])
    opt2.load_state_dict(back["optimizer"])
    assert sorted(back["optimizer"]["state"]) == sorted(ckpt["optimizer"]["state"])
    _steps(R, net2, opt2, 3, seed=2)

    tnet, topt = _train_setup(torch)  # torch resuming its own reading of the same file
    tback = torch.load(tmp_path / "ckpt.pt")
    tnet.load_state_dict(tback["model"])
    topt.load_state_dict(tback["optimizer"])
    _steps(torch, tnet, topt, 3, seed=2)
    for (name, p), q in zip(tnet.named_parameters(), net2.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


# ----------------------------------------------------------------------------------------------
# weights_only and safe globals
# ----------------------------------------------------------------------------------------------

class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def test_weights_only_refuses_unknown_globals(tmp_path):
    fg.save({"p": Point(1, fg.ones(2))}, tmp_path / "p.pt")
    with pytest.raises(pickle.UnpicklingError) as info:
        fg.load(tmp_path / "p.pt")
    msg = str(info.value)
    assert "Weights only load failed" in msg and "weights_only" in msg
    assert f"{__name__}.Point" in msg and "add_safe_globals" in msg
    back = fg.load(tmp_path / "p.pt", weights_only=False)
    assert back["p"].x == 1 and isinstance(back["p"].y, fg.Tensor)
    with pytest.raises(RuntimeError, match="pickle_module"):
        fg.load(tmp_path / "p.pt", pickle_module=pickle, weights_only=True)
    assert fg.load(tmp_path / "p.pt", pickle_module=pickle)["p"].x == 1  # a pickle_module: full load


def test_safe_globals_registry(tmp_path):
    fg.save({"p": Point(2, 3)}, tmp_path / "p.pt")
    before = fg.serialization.get_safe_globals()
    try:
        with fg.serialization.safe_globals([Point]):
            assert Point in fg.serialization.get_safe_globals()
            assert fg.load(tmp_path / "p.pt")["p"].y == 3
        assert Point not in fg.serialization.get_safe_globals()
        with pytest.raises(pickle.UnpicklingError):
            fg.load(tmp_path / "p.pt")
        fg.serialization.add_safe_globals([Point])
        assert fg.load(tmp_path / "p.pt")["p"].x == 2
        fg.serialization.clear_safe_globals()
        assert fg.serialization.get_safe_globals() == [] or fg is torch
        with pytest.raises(pickle.UnpicklingError):
            fg.load(tmp_path / "p.pt")
        fg.serialization.add_safe_globals([(Point, f"{__name__}.Point")])  # the (object, name) form
        assert fg.load(tmp_path / "p.pt")["p"].x == 2
    finally:
        fg.serialization.clear_safe_globals()
        fg.serialization.add_safe_globals(before)


class Evil:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return os.system, (self.cmd,)


def _rewrite_pickle(src, dst, data):
    """A copy of checkpoint `src` with its data.pkl replaced by `data`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, data if info.filename.endswith("/data.pkl") else zin.read(info))
    return dst


def _crafted(tmp_path, payload, name="bad.pt"):
    torch.save({"w": torch.ones(2)}, tmp_path / "base.pt")
    return _rewrite_pickle(tmp_path / "base.pt", tmp_path / name, payload)


def _malicious_payloads(marker):
    cmd = f"touch {marker}".encode()
    evil = pickle.dumps(Evil(cmd.decode()), protocol=2)
    return {
        "reduce os.system": evil,
        "protocol 4 reduce": pickle.dumps(Evil(cmd.decode()), protocol=4),
        "builtins eval": b"\x80\x02cbuiltins\neval\nX" + len(b"__import__('os').system('" + cmd + b"')").to_bytes(4, "little")
                         + b"__import__('os').system('" + cmd + b"')\x85R.",
        "INST opcode": b"(S'" + cmd + b"'\nios\nsystem\n.",
        "OBJ opcode": b"\x80\x02(cos\nsystem\nX" + len(cmd).to_bytes(4, "little") + cmd + b"o.",
        # BUILD on an allowed class (not an instance): would set attributes on collections.OrderedDict
        "BUILD on a class": b"\x80\x02ccollections\nOrderedDict\nN}X\x08\x00\x00\x00__repr__N\x86b.",
        # a call of something that is not an allowed global (a list)
        "REDUCE of a non-global": b"\x80\x02])R.",
        "subprocess": b"\x80\x02csubprocess\ncall\nX\x05\x00\x00\x00touch\x85R.",
    }


@pytest.mark.parametrize("payload", sorted(_malicious_payloads("m")))
def test_malicious_pickles_never_run(tmp_path, payload):
    marker = tmp_path / "pwned"
    path = _crafted(tmp_path, _malicious_payloads(marker)[payload])
    for kwargs in ({}, {"weights_only": True}, {"mmap": True}):
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            fg.load(path, **kwargs)
        with open(path, "rb") as fh:
            with pytest.raises(pickle.UnpicklingError):
                fg.load(io.BytesIO(fh.read()), **{k: v for k, v in kwargs.items() if k != "mmap"})
    assert not marker.exists()


def test_evil_saved_by_fg_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    fg.save({"w": fg.ones(2), "x": Evil(f"touch {marker}")}, tmp_path / "e.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        fg.load(tmp_path / "e.pt")
    assert not marker.exists()


def test_out_of_bounds_geometry_is_refused(tmp_path):
    torch.save(torch.arange(4.0), tmp_path / "a.pt")
    with zipfile.ZipFile(tmp_path / "a.pt") as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    assert data.count(b"QK\x00K\x04\x85") == 1  # BINPERSID, offset 0, size (4,)
    for bad in (b"QK\x00Kd\x85", b"QK\x03K\x02\x85"):  # size 100; offset 3 + 2 elements
        path = _rewrite_pickle(tmp_path / "a.pt", tmp_path / "b.pt", data.replace(b"QK\x00K\x04\x85", bad))
        for weights_only in (True, False):
            with pytest.raises((RuntimeError, pickle.UnpicklingError), match="out of bounds|not resizable"):
                fg.load(path, weights_only=weights_only)


def test_damaged_archives(tmp_path):
    fg.save({"w": fg.ones(100)}, tmp_path / "ok.pt")
    raw = (tmp_path / "ok.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RuntimeError):
        fg.load(tmp_path / "cut.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as zin, zipfile.ZipFile(tmp_path / "short.pt", "w") as zout:
        for info in zin.infolist():
            body = zin.read(info)
            zout.writestr(info.filename, body[:-4] if "/data/" in info.filename else body)
    with pytest.raises(RuntimeError):
        fg.load(tmp_path / "short.pt")


@pytest.mark.parametrize("protocol", [2, 4])
def test_legacy_format_loads(tmp_path, protocol):
    """torch's pre-1.6 format (_use_new_zipfile_serialization=False): read, views sharing again."""
    if fg is torch and protocol == 4:
        pytest.skip("torch's own weights_only unpickler lacks protocol 4's FRAME opcode")
    src = views(torch, "float32")
    src.update(bf=make(torch, "bfloat16", (3,)), p=torch.nn.Parameter(torch.ones(2)), n={"a": (1, "b")})
    torch.save(src, tmp_path / "old.pt", _use_new_zipfile_serialization=False, pickle_protocol=protocol)
    back = fg.load(tmp_path / "old.pt")
    for k, v in src.items():
        if isinstance(v, torch.Tensor):
            same(back[k], v)
    assert isinstance(back["p"], fg.nn.Parameter) and back["n"] == {"a": (1, "b")}
    back["x"][2, 3] = 100.0
    assert back["elem"].item() == back["t"][3, 2].item() == 100.0
    with open(tmp_path / "old.pt", "rb") as fh:
        same(fg.load(fh)["cols"], src["cols"])
    torch.save(torch.nn.Linear(2, 3), tmp_path / "lin.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        fg.load(tmp_path / "lin.pt")
    assert isinstance(fg.load(tmp_path / "lin.pt", weights_only=False), fg.nn.Linear)
    with pytest.raises(RuntimeError, match="mmap"):
        fg.load(tmp_path / "old.pt", mmap=True)


# ----------------------------------------------------------------------------------------------
# map_location, mmap, file objects
# ----------------------------------------------------------------------------------------------

def _cuda_saved(tmp_path):
    """A checkpoint as a CUDA machine writes it: the storage's location says cuda:0."""
    torch.save({"w": torch.arange(3.0)}, tmp_path / "c0.pt")
    with zipfile.ZipFile(tmp_path / "c0.pt") as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    return _rewrite_pickle(tmp_path / "c0.pt", tmp_path / "cuda.pt",
                           data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"))


@pytest.mark.parametrize("how", ["str", "device", "dict", "callable", "callable None"])
def test_map_location(tmp_path, how):
    path = _cuda_saved(tmp_path)
    seen = []

    def keep(storage, location):
        seen.append(location)
        return storage

    ml = {"str": "cpu", "device": fg.device("cpu"), "dict": {"cuda:0": "cpu"}, "callable": keep,
          "callable None": lambda s, loc: None}[how]
    if how == "callable None" and torch.cuda.is_available():
        pytest.skip("restores to cuda:0 here")
    if how == "callable None":
        with pytest.raises(RuntimeError, match="is_available"):
            fg.load(path, map_location=ml)
        return
    back = fg.load(path, map_location=ml)
    assert back["w"].device.type == "cpu"
    np.testing.assert_array_equal(back["w"].numpy(), [0.0, 1.0, 2.0])
    if how == "callable":
        assert seen == ["cuda:0"]


def test_cuda_location_without_cuda(tmp_path):
    if fg.cuda.is_available():
        back = fg.load(_cuda_saved(tmp_path))
        assert back["w"].device.type == "cuda"
        return
    with pytest.raises(RuntimeError, match="torch.cuda.is_available\\(\\) is False"):
        fg.load(_cuda_saved(tmp_path))


@pytest.mark.parametrize("writer", ["torch", "fg"])
def test_mmap(tmp_path, writer):
    L = torch if writer == "torch" else fg
    src = {"a": make(L, "float32", (64, 3)), "b": make(L, "bfloat16", (5,)), "c": make(L, "int64", (2, 2)).t()}
    L.save(src, tmp_path / "m.pt")
    before = (tmp_path / "m.pt").read_bytes()
    back = fg.load(tmp_path / "m.pt", mmap=True)
    for k in src:
        same(back[k], src[k], geometry=False)
    back["a"].add_(1)  # copy-on-write: the file stays as it was
    assert (tmp_path / "m.pt").read_bytes() == before
    with pytest.raises(ValueError, match="file path"):
        fg.load(io.BytesIO(before), mmap=True)


def test_file_objects(tmp_path):
    src = views(fg, "float32")
    buf = io.BytesIO()
    fg.save(src, buf)
    buf.seek(0)
    back = torch.load(buf)
    for k in src:
        same(back[k], src[k])
    tbuf = io.BytesIO()
    torch.save(views(torch, "float64"), tbuf)
    tbuf.seek(0)
    back = fg.load(tbuf)
    for k, v in views(torch, "float64").items():
        same(back[k], v)
    with pytest.raises(AttributeError, match="write"):
        fg.save(fg.ones(1), 3)


def test_get_unsafe_globals_in_checkpoint(tmp_path):
    fg.save({"p": Point(1, 2), "t": fg.ones(2), "od": collections.OrderedDict(), "b": b"x", "s": {1}}, tmp_path / "a.pt")
    torch.save(torch.nn.Linear(2, 3), tmp_path / "b.pt")
    fg.save(fg.nn.Linear(2, 3), tmp_path / "c.pt")
    for name in ("a.pt", "b.pt", "c.pt"):
        expected = set(torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / name))
        assert set(fg.serialization.get_unsafe_globals_in_checkpoint(tmp_path / name)) == expected
        with open(tmp_path / name, "rb") as fh:
            assert set(fg.serialization.get_unsafe_globals_in_checkpoint(fh)) == expected
    assert set(fg.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "a.pt")) == {f"{__name__}.Point"}


def test_damaged_pickles_fail_cleanly(tmp_path):
    """Seeded random damage to a checkpoint's pickle: every load raises an exception (never crashes,
    never reads outside a storage), with weights_only and without."""
    src = {"w": torch.arange(12.0).reshape(3, 4), "v": torch.arange(6).reshape(2, 3).t(), "n": 3, "s": "x"}
    torch.save(src, tmp_path / "src.pt")
    with zipfile.ZipFile(tmp_path / "src.pt") as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    rng = np.random.default_rng(0)
    for i in range(60):
        bad = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            bad[rng.integers(2, len(bad))] = rng.integers(0, 256)
        path = _rewrite_pickle(tmp_path / "src.pt", tmp_path / "bad.pt", bytes(bad))
        try:
            out = fg.load(path)
        except Exception as e:  # a clean error (ferrograd: always one of these two)
            assert fg is torch or isinstance(e, (RuntimeError, pickle.UnpicklingError)), repr(e)
            continue
        assert isinstance(out, dict)
    # the legacy format: damage anywhere, truncation
    torch.save(src, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    raw = (tmp_path / "old.pt").read_bytes()
    for i in range(60):
        bad = bytearray(raw)
        for _ in range(rng.integers(1, 4)):
            bad[rng.integers(0, len(bad))] = rng.integers(0, 256)
        if i % 5 == 0:
            bad = bad[: rng.integers(1, len(bad))]
        try:
            fg.load(io.BytesIO(bytes(bad)))
        except Exception as e:
            assert fg is torch or isinstance(e, (RuntimeError, pickle.UnpicklingError)), repr(e)


def test_whole_model_and_optimizer_objects(tmp_path):
    """weights_only=False: the objects themselves (the optimizer keeps pointing at the model's
    parameters, its state keyed by them); every layer class comes back as torch's in torch."""
    net = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ELU(), fg.nn.GELU(), fg.nn.Linear(4, 2))
    opt = fg.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(fg.ones(2, 3)).sum().backward()
    opt.step()
    fg.save({"net": net, "opt": opt}, tmp_path / "all.pt")
    back = fg.load(tmp_path / "all.pt", weights_only=False)
    params = list(back["net"].parameters())
    assert all(p is q for p, q in zip(back["opt"].param_groups[0]["params"], params))
    for p, q in zip(net.parameters(), params):
        np.testing.assert_array_equal(back["opt"].state[q]["momentum_buffer"].numpy(),
                                      opt.state[p]["momentum_buffer"].numpy())
    fg.save(net, tmp_path / "net.pt")
    tnet = torch.load(tmp_path / "net.pt", weights_only=False)
    assert [type(m).__name__ for m in tnet] == ["Linear", "ELU", "GELU", "Linear"]
    assert all(type(m).__module__.startswith("torch.nn") for m in tnet)
    with torch.no_grad(), fg.no_grad():
        np.testing.assert_allclose(tnet(torch.ones(2, 3)).numpy(), net(fg.ones(2, 3)).numpy(), rtol=1e-5, atol=1e-6)


def test_sizes_a_file_claims_are_checked_before_allocating(tmp_path):
    """A small file must not make the loader set aside what it claims: bytearray(2**40), a BYTEARRAY8
    of 2**40 bytes, a tensor of more elements than int64 counts (torch itself allocates the first)."""
    if fg is torch:
        pytest.skip("ferrograd's own guards")
    payloads = [b"\x80\x02c__builtin__\nbytearray\n\x8a\x06\x00\x00\x00\x00\x00\x01\x85R.",
                b"\x80\x05\x96\x00\x00\x00\x00\x00\x01\x00\x00."]
    for payload in payloads:
        with pytest.raises(pickle.UnpicklingError):
            fg.load(_crafted(tmp_path, payload))
    torch.save(torch.ones(()).expand(2, 3), tmp_path / "e.pt")
    with zipfile.ZipFile(tmp_path / "e.pt") as z:
        data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    huge = b"\x8a\x08" + (2**62).to_bytes(8, "little")
    assert data.count(b"K\x02K\x03\x86") == 1  # size (2, 3)
    path = _rewrite_pickle(tmp_path / "e.pt", tmp_path / "h.pt", data.replace(b"K\x02K\x03\x86", huge + huge + b"\x86"))
    with pytest.raises(RuntimeError, match="int64"):
        fg.load(path)
