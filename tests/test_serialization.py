"""ferrograd.save / ferrograd.load: round trips, interop with safetensors.torch, and damaged files.

Round trips of tensors, module and optimizer state dicts go through `fg` (with FG_TEST_AGAINST_TORCH=1
they run on torch.save/torch.load and hold there too); they use torch's checkpoint format (a ".ckpt"
path). A ".safetensors" path is written as safetensors by ferrograd (torch.save pickles there), so the
interop tests (files read by `safetensors.torch`, files written by it) and the damaged-file messages are
ferrograd's own and are skipped against torch. torch's format both ways: test_torch_checkpoints.py.
"""
import io
import math
import os
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ferrograd
from conftest import AGAINST_TORCH, fg

st = pytest.importorskip("safetensors.torch")
ferrograd_only = pytest.mark.skipif(AGAINST_TORCH, reason="the safetensors format is ferrograd's choice")

DTYPES = ["float32", "float64", "int64", "bool", "float16", "bfloat16", "int32", "int16", "int8", "uint8"]


def make(dtype, shape, L=fg):
    rng = np.random.default_rng(sum(shape) + len(dtype))
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dtype == "int64":
        a = rng.integers(-2**40, 2**40, size=shape, dtype=np.int64)
    elif dtype in ("int32", "int16", "int8", "uint8"):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    elif dtype == "bfloat16":  # numpy has none: float32 values rounded to it
        a = rng.standard_normal(shape).astype(np.float32)
        return L.from_numpy(np.ascontiguousarray(a) if a.ndim else np.array(a)).to(L.bfloat16)
    else:
        a = rng.standard_normal(shape).astype(dtype)
    return L.from_numpy(np.ascontiguousarray(a) if a.ndim else np.array(a))


def values(t):
    """A tensor's values as a NumPy array (bfloat16, which NumPy lacks, as float32: exact)."""
    t = t.detach()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy()


def same(a, b):
    assert str(a.dtype).rsplit(".", 1)[-1] == str(b.dtype).rsplit(".", 1)[-1], (a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(values(a), values(b))


def roundtrip(obj, tmp_path, name="obj.ckpt", **load_kwargs):
    # (not .safetensors: torch.load reads such paths with safetensors, but torch.save pickles)
    path = tmp_path / name
    fg.save(obj, path)
    return fg.load(path, **load_kwargs)


def small_net(L=fg):
    L.manual_seed(0)
    nn = L.nn
    return nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 8), nn.LayerNorm(8),
                         nn.Linear(8, 3))


# ----------------------------------------------------------------------------------------------
# round trips
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (7,), (2, 3, 4)])
def test_tensor_roundtrip(tmp_path, dtype, shape):
    t = make(dtype, shape)
    back = roundtrip(t, tmp_path)
    assert isinstance(back, fg.Tensor)
    same(back, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_tensor_roundtrip(tmp_path, dtype):
    t = make(dtype, (3, 5)).t()
    assert not t.is_contiguous()
    same(roundtrip(t, tmp_path), t)
    sliced = make(dtype, (6, 4))[::2, 1:]
    same(roundtrip({"s": sliced}, tmp_path)["s"], sliced)


def test_requires_grad_tensor_and_parameter(tmp_path):
    p = fg.nn.Parameter(fg.randn(3, 2))
    x = fg.randn(4, requires_grad=True)
    back = roundtrip({"p": p, "x": x * 2}, tmp_path)
    same(back["p"], p)
    same(back["x"], x * 2)


def test_dict_of_each_dtype_roundtrip(tmp_path):
    sd = {f"t_{d}": make(d, (2, 3)) for d in DTYPES}
    sd["scalar"] = fg.tensor(3.5)
    back = roundtrip(sd, tmp_path)
    assert type(back) is dict and list(back) == list(sd)
    for k in sd:
        same(back[k], sd[k])


def test_module_state_dict_roundtrip(tmp_path):
    net = small_net()
    net.train()
    net(fg.randn(6, 5))  # moves BatchNorm's running stats and num_batches_tracked off their defaults
    sd = net.state_dict()
    back = roundtrip(sd, tmp_path)
    assert isinstance(back, OrderedDict)
    assert list(back) == list(sd)
    for k in sd:
        same(back[k], sd[k])
    assert getattr(back, "_metadata", None) == getattr(sd, "_metadata", None)

    fresh = fg.nn.Sequential(fg.nn.Linear(5, 8), fg.nn.BatchNorm1d(8), fg.nn.ReLU(), fg.nn.Linear(8, 8),
                             fg.nn.LayerNorm(8), fg.nn.Linear(8, 3))
    result = fresh.load_state_dict(back)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    x = fg.randn(4, 5)
    net.eval(), fresh.eval()
    with fg.no_grad():
        same(fresh(x), net(x))


def test_embedding_state_dict_roundtrip(tmp_path):
    emb = fg.nn.Embedding(10, 4)
    back = roundtrip(emb.state_dict(), tmp_path)
    fresh = fg.nn.Embedding(10, 4)
    fresh.load_state_dict(back)
    idx = fg.tensor([[1, 2], [9, 0]])
    same(fresh(idx), emb(idx))


def test_optimizer_state_dict_roundtrip(tmp_path):
    def setup():
        fg.manual_seed(1)
        model = fg.nn.Sequential(fg.nn.Linear(4, 6), fg.nn.Tanh(), fg.nn.Linear(6, 2))
        return model, fg.optim.Adam(model.parameters(), lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-3)

    x, y = fg.randn(8, 4), fg.randn(8, 2)

    def step(model, opt):
        opt.zero_grad()
        fg.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    model, opt = setup()
    for _ in range(3):
        step(model, opt)
    osd = opt.state_dict()
    back = roundtrip({"model": model.state_dict(), "optimizer": osd, "epoch": 3}, tmp_path)
    assert back["epoch"] == 3
    bo = back["optimizer"]
    assert sorted(bo["state"]) == sorted(osd["state"])  # int keys stay ints
    assert all(isinstance(k, int) for k in bo["state"])
    assert bo["param_groups"] == osd["param_groups"]  # floats, tuples (betas), None, bools, lists
    assert isinstance(bo["param_groups"][0]["betas"], tuple)
    for i, st_i in osd["state"].items():
        for k, v in st_i.items():
            if isinstance(v, fg.Tensor):
                same(bo["state"][i][k], v)
            else:
                assert bo["state"][i][k] == v

    model2, opt2 = setup()
    model2.load_state_dict(back["model"])
    opt2.load_state_dict(bo)
    for _ in range(2):
        step(model, opt)
        step(model2, opt2)
    for p, q in zip(model.parameters(), model2.parameters()):
        same(q, p)


def test_nested_python_values_roundtrip(tmp_path):
    obj = {
        "floats": [1.0, -0.0, 1e-300, math.inf, -math.inf],
        "nan": math.nan,
        "ints": (0, -5, 2**62),
        "misc": [None, True, False, "text ünïcode", ""],
        "nested": OrderedDict([("b", {"deep": [fg.ones(2), (fg.zeros(1, dtype=fg.int64),)]}), ("a", 1)]),
        7: "int key",
        "dtype": fg.float64,
        "empty": {},
        "empty_list": [],
    }
    back = roundtrip(obj, tmp_path)
    assert back["floats"][:3] == [1.0, -0.0, 1e-300] and back["floats"][3:] == [math.inf, -math.inf]
    assert math.copysign(1, back["floats"][1]) == -1
    assert math.isnan(back["nan"])
    assert back["ints"] == (0, -5, 2**62) and isinstance(back["ints"], tuple)
    assert back["misc"] == [None, True, False, "text ünïcode", ""]
    assert type(back["nested"]) is OrderedDict and list(back["nested"]) == ["b", "a"]
    same(back["nested"]["b"]["deep"][0], fg.ones(2))
    same(back["nested"]["b"]["deep"][1][0], fg.zeros(1, dtype=fg.int64))
    assert back[7] == "int key"
    assert back["dtype"] == fg.float64
    assert back["empty"] == {} and back["empty_list"] == []


def test_colliding_names_roundtrip(tmp_path):
    a, b = fg.ones(2), fg.zeros(3)
    back = roundtrip({"a.b": a, "a": {"b": b}}, tmp_path)
    same(back["a.b"], a)
    same(back["a"]["b"], b)


def test_file_objects_and_path_types(tmp_path):
    sd = small_net().state_dict()
    buf = io.BytesIO()
    fg.save(sd, buf)
    buf.seek(0)
    back = fg.load(buf)
    for k in sd:
        same(back[k], sd[k])
    path = tmp_path / "p.ckpt"
    with open(path, "wb") as fh:
        fg.save(sd, fh)
    for f in (path, str(path)):
        back = fg.load(f)
        same(back["0.weight"], sd["0.weight"])
    with open(path, "rb") as fh:
        same(fg.load(fh)["0.weight"], sd["0.weight"])


@pytest.mark.parametrize("map_location", ["cpu", "device", "dict", "callable", None])
def test_map_location_cpu(tmp_path, map_location):
    t = make("float32", (3, 2))
    ml = {"device": fg.device("cpu"), "dict": {"cpu": "cpu"}, "callable": lambda storage, loc: storage}.get(
        map_location, map_location)
    back = roundtrip(t, tmp_path, map_location=ml)
    same(back, t)
    assert back.device.type == "cpu"


@pytest.mark.parametrize("weights_only", [True, False])
def test_weights_only_accepted(tmp_path, weights_only):
    sd = {"w": make("float64", (2, 2))}
    same(roundtrip(sd, tmp_path, weights_only=weights_only)["w"], sd["w"])


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        fg.load(tmp_path / "nope.safetensors")


# ----------------------------------------------------------------------------------------------
# interop with the safetensors library's torch side
# ----------------------------------------------------------------------------------------------

def torch_dtype(d):
    return getattr(torch, d)


@ferrograd_only
@pytest.mark.parametrize("dtype", DTYPES)
def test_ferrograd_file_loads_in_safetensors_torch(tmp_path, dtype):
    sd = {"a": make(dtype, (3, 4)), "b.c": make(dtype, ()), "empty": make(dtype, (0, 2)),
          "strided": make(dtype, (4, 3)).t()}
    path = tmp_path / "fg.safetensors"
    ferrograd.save(sd, path)
    loaded = st.load_file(str(path))
    assert set(loaded) == set(sd)
    for k, v in sd.items():
        assert loaded[k].dtype == torch_dtype(dtype)
        assert tuple(loaded[k].shape) == tuple(v.shape)
        np.testing.assert_array_equal(values(loaded[k]), values(v))


@ferrograd_only
def test_bare_tensor_key(tmp_path):
    t = make("float32", (2, 2))
    ferrograd.save(t, tmp_path / "t.safetensors")
    loaded = st.load_file(str(tmp_path / "t.safetensors"))
    assert list(loaded) == [ferrograd.serialization.TENSOR_KEY]
    np.testing.assert_array_equal(loaded["tensor"].numpy(), t.numpy())


@ferrograd_only
def test_ferrograd_weights_run_in_torch(tmp_path):
    net = small_net(ferrograd)
    net(ferrograd.randn(6, 5))
    net.eval()
    path = tmp_path / "net.safetensors"
    ferrograd.save(net.state_dict(), path)

    tnet = small_net(torch)
    tnet.load_state_dict(st.load_file(str(path)))
    tnet.eval()
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    with torch.no_grad(), ferrograd.no_grad():
        np.testing.assert_allclose(tnet(torch.from_numpy(x)).numpy(), net(ferrograd.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)


@ferrograd_only
def test_safetensors_torch_file_loads_in_ferrograd(tmp_path):
    tnet = small_net(torch)
    tnet(torch.randn(6, 5))
    tnet.eval()
    path = tmp_path / "torch.safetensors"
    st.save_file(tnet.state_dict(), str(path))
    sd = ferrograd.load(path)
    assert set(sd) == set(tnet.state_dict())
    for k, v in tnet.state_dict().items():
        assert str(sd[k].dtype).rsplit(".", 1)[-1] == str(v.dtype).rsplit(".", 1)[-1]
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())

    net = small_net(ferrograd)
    net.load_state_dict(sd)
    net.eval()
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    with torch.no_grad(), ferrograd.no_grad():
        np.testing.assert_allclose(net(ferrograd.from_numpy(x)).numpy(), tnet(torch.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)


@ferrograd_only
@pytest.mark.parametrize("dtype", DTYPES)
def test_safetensors_torch_each_dtype(tmp_path, dtype):
    t = {"x": torch.from_numpy(values(make(dtype, (3, 2), L=ferrograd))).to(torch_dtype(dtype)),
         "s": torch.ones((), dtype=torch_dtype(dtype))}
    st.save_file(t, str(tmp_path / "t.safetensors"))
    back = ferrograd.load(tmp_path / "t.safetensors")
    for k in t:
        assert str(back[k].dtype) == f"torch.{dtype}"
        assert tuple(back[k].shape) == tuple(t[k].shape)
        np.testing.assert_array_equal(values(back[k]), values(t[k]))


@ferrograd_only
@pytest.mark.parametrize("dtype,kept", [("uint16", "int64"), ("uint32", "int64")])
def test_safetensors_torch_other_dtypes_widen(tmp_path, dtype, kept):
    src = torch.tensor([[0, 1, 2], [3, 255, 5]]).to(torch_dtype(dtype))
    st.save_file({"x": src}, str(tmp_path / "t.safetensors"))
    with pytest.warns(UserWarning, match="widened.*x"):
        back = ferrograd.load(tmp_path / "t.safetensors")
    assert str(back["x"].dtype) == f"torch.{kept}"
    np.testing.assert_array_equal(back["x"].numpy(), src.to(torch_dtype(kept)).numpy())


@ferrograd_only
def test_unsupported_dtype_is_named(tmp_path):
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("no float8 in this torch")
    st.save_file({"f8": torch.zeros(2, dtype=torch.float8_e4m3fn)}, str(tmp_path / "f8.safetensors"))
    with pytest.raises(RuntimeError, match="f8.*F8_E4M3"):
        ferrograd.load(tmp_path / "f8.safetensors")


@ferrograd_only
def test_round_trip_through_torch_both_ways(tmp_path):
    net = small_net(ferrograd)
    ferrograd.save(net.state_dict(), tmp_path / "a.safetensors")
    st.save_file(st.load_file(str(tmp_path / "a.safetensors")), str(tmp_path / "b.safetensors"))
    back = ferrograd.load(tmp_path / "b.safetensors")
    for k, v in net.state_dict().items():
        same(back[k], v)


# ----------------------------------------------------------------------------------------------
# damaged files
# ----------------------------------------------------------------------------------------------

@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    ferrograd.save(small_net(ferrograd).state_dict(), path)
    return path


def write(tmp_path, data, name="bad.safetensors"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def header_len(data):
    return int.from_bytes(data[:8], "little")


@ferrograd_only
@pytest.mark.parametrize("cut", ["empty", "4 bytes", "in header", "after header", "mid data", "last byte"])
def test_truncated_file(tmp_path, good_file, cut):
    data = good_file.read_bytes()
    n = header_len(data)
    keep = {"empty": 0, "4 bytes": 4, "in header": 8 + n // 2, "after header": 8 + n,
            "mid data": 8 + n + (len(data) - 8 - n) // 2, "last byte": len(data) - 1}[cut]
    path = write(tmp_path, data[:keep])
    with pytest.raises(RuntimeError, match=r"bad\.safetensors.*(truncated|empty)"):
        ferrograd.load(path)
    # the same bytes through a file object
    with pytest.raises(RuntimeError, match="truncated|empty"):
        ferrograd.load(io.BytesIO(data[:keep]))


@ferrograd_only
@pytest.mark.parametrize("damage,pattern", [
    ("garbage header", "not valid JSON"),
    ("huge length", "header length"),
    ("random bytes", "not a valid safetensors file"),
    ("trailing bytes", "unexpected bytes"),
    ("bad entry", "malformed"),
    ("size mismatch", "needs .* bytes"),
    ("not an object", "not a JSON object"),
    ("damaged structure", "structure"),
    ("missing tensor", "does not hold"),
])
def test_corrupt_file(tmp_path, good_file, damage, pattern):
    data = good_file.read_bytes()
    n = header_len(data)
    header, body = data[8:8 + n], data[8 + n:]

    def with_header(h):
        h = h.encode()
        return len(h).to_bytes(8, "little") + h + body

    import json
    parsed = json.loads(header)
    first = next(k for k in parsed if k != "__metadata__")
    if damage == "garbage header":
        bad = data[:8] + b"{" + b"\x00\xff" * ((n - 1) // 2) + b"}" * ((n - 1) % 2) + body
    elif damage == "huge length":
        bad = (2**62).to_bytes(8, "little") + data[8:]
    elif damage == "random bytes":
        bad = np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    elif damage == "trailing bytes":
        bad = data + b"\x00" * 16
    elif damage == "bad entry":
        parsed[first] = {"dtype": "F32", "shape": "oops", "data_offsets": [0, 4]}
        bad = with_header(json.dumps(parsed))
    elif damage == "size mismatch":
        a, b = parsed[first]["data_offsets"]
        parsed[first]["shape"] = [(b - a) // 4 + 1]
        bad = with_header(json.dumps(parsed))
    elif damage == "not an object":
        bad = with_header(json.dumps([1, 2, 3]))
    elif damage == "damaged structure":
        parsed["__metadata__"]["ferrograd"] = "{not json"
        bad = with_header(json.dumps(parsed))
    else:  # the structure names a tensor that is not in the file
        parsed["__metadata__"]["ferrograd"] = parsed["__metadata__"]["ferrograd"].replace(
            f'"T":"{first}"', '"T":"nonexistent"')
        bad = with_header(json.dumps(parsed))
    path = write(tmp_path, bad)
    with pytest.raises(RuntimeError, match=pattern) as info:
        ferrograd.load(path)
    assert "bad.safetensors" in str(info.value)


@ferrograd_only
def test_torch_checkpoint_is_recognised(tmp_path):
    """A torch.save file loads whatever its name (even ".safetensors", where torch.load would fail)."""
    for name in ("ckpt.pt", "ckpt.safetensors"):
        torch.save({"w": torch.ones(2)}, tmp_path / name)
        np.testing.assert_array_equal(ferrograd.load(tmp_path / name)["w"].numpy(), [1.0, 1.0])


@ferrograd_only
def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match="object"):
        ferrograd.save({"a": object()}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="key"):
        ferrograd.save({(1, 2): ferrograd.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="tensor or a dict"):
        ferrograd.save(3, tmp_path / "x.safetensors")
    assert not os.path.exists(tmp_path / "x.safetensors")


@ferrograd_only
def test_exported_like_torch():
    assert ferrograd.save is ferrograd.serialization.save
    assert ferrograd.load is ferrograd.serialization.load
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf = io.BytesIO()
        ferrograd.save(ferrograd.ones(1), buf)
        buf.seek(0)
        ferrograd.load(buf)


@ferrograd_only
def test_torch_load_reads_ferrograd_safetensors(tmp_path):
    """torch.load reads a `.safetensors` path with safetensors (recent torch): a state dict saved by
    ferrograd loads there as is."""
    import inspect

    if "safetensors" not in inspect.getsource(torch.serialization.load):
        pytest.skip("this torch.load does not read safetensors files")
    net = small_net(ferrograd)
    ferrograd.save(net.state_dict(), tmp_path / "w.safetensors")
    sd = torch.load(tmp_path / "w.safetensors", map_location="cpu")
    tnet = small_net(torch)
    tnet.load_state_dict(sd)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(tnet.state_dict()[k].numpy(), v.numpy())


@pytest.mark.parametrize("header_len", [128, 128 + 256])
def test_safetensors_header_length_starting_with_pickle_byte(tmp_path, header_len):
    """A safetensors file whose 8-byte header length starts with 0x80 (the first byte of a pickle) is
    still read as safetensors, from a path and from a file object (torch's safetensors reader agrees)."""
    import io
    import json

    import numpy as np
    from safetensors.numpy import load_file

    raw = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    raw += b" " * (header_len - len(raw))
    blob = header_len.to_bytes(8, "little") + raw + np.array([1.5, -2.0], dtype="<f4").tobytes()
    assert blob[:1] == b"\x80"
    p = tmp_path / "w.safetensors"
    p.write_bytes(blob)
    np.testing.assert_array_equal(load_file(str(p))["a"], [1.5, -2.0])
    for src in (str(p), io.BytesIO(blob)):
        assert fg.load(src)["a"].tolist() == [1.5, -2.0]
