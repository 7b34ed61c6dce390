"""The NCCL backend of ferrograd.distributed on one GPU (world size 1; a process without an MPI
launcher is rank 0 of one). Collectives of one rank leave the tensor as the reduction over that one
rank, so each result is known without a second GPU; what this checks is that NCCL loads,
initialises a communicator and runs each collective on device memory, in place, with the dtype and
op mapping right. Several GPUs are not tested (no such machine). Skipped without a GPU and NCCL."""

import os

import numpy as np
import pytest

import ferrograd as fg
import ferrograd.distributed as dist

if os.environ.get("FG_TEST_AGAINST_TORCH") == "1":
    pytest.skip("ferrograd's own NCCL backend (torch's needs a rendezvous store)", allow_module_level=True)
if not (fg.cuda.is_available() and fg._C._cuda_has_kernels() and dist.is_nccl_available()):
    pytest.skip("needs a CUDA device and the NCCL library", allow_module_level=True)


@pytest.fixture
def group():
    dist.init_process_group("nccl")
    yield
    dist.destroy_process_group()


def test_group(group):
    assert dist.is_initialized() and dist.get_backend() == "nccl"
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert fg._C._nccl_version() >= 21000


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "PRODUCT", "AVG"])
def test_all_reduce(group, dtype, op):
    if op == "AVG" and dtype == "int64":
        pytest.skip("AVG takes floating point tensors")
    a = np.arange(-6, 6).reshape(3, 4).astype(dtype)
    t = fg.tensor(a, device="cuda")
    ptr = t.data_ptr()
    work = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=True)
    work.wait()
    assert t.device.type == "cuda" and t.data_ptr() == ptr  # in place
    np.testing.assert_array_equal(t.cpu().numpy(), a)  # one rank: the reduction is the tensor itself


def test_all_reduce_non_contiguous_and_bool(group):
    t = fg.arange(12.0, device="cuda").reshape(3, 4).t()
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(12.0).reshape(3, 4).T)
    b = fg.tensor([True, False], device="cuda")
    dist.all_reduce(b)
    assert b.tolist() == [True, False]


def test_broadcast_gather_scatter_barrier(group):
    t = fg.arange(6.0, device="cuda")
    dist.broadcast(t, src=0)
    assert t.tolist() == list(range(6))
    out = [fg.zeros(6, device="cuda")]
    dist.all_gather(out, t)
    assert out[0].tolist() == list(range(6))
    big = fg.zeros(6, device="cuda")
    dist.all_gather_into_tensor(big, t)
    assert big.tolist() == list(range(6))
    r = fg.zeros(6, device="cuda")
    dist.reduce_scatter_tensor(r, t * 2)
    assert r.tolist() == [2.0 * i for i in range(6)]
    r2 = fg.zeros(6, device="cuda")
    dist.reduce_scatter(r2, [t * 3])
    assert r2.tolist() == [3.0 * i for i in range(6)]
    dist.barrier()


def test_cpu_tensor_refused(group):
    with pytest.raises(RuntimeError, match="CUDA tensors"):
        dist.all_reduce(fg.ones(2))


def test_ddp_on_one_gpu_matches_plain_training(group):
    fg.manual_seed(0)
    net = fg.nn.Sequential(fg.nn.Linear(8, 16), fg.nn.Tanh(), fg.nn.Linear(16, 2)).to("cuda")
    ref = fg.nn.Sequential(fg.nn.Linear(8, 16), fg.nn.Tanh(), fg.nn.Linear(16, 2)).to("cuda")
    ref.load_state_dict(net.state_dict())
    ddp = fg.nn.parallel.DistributedDataParallel(net)
    o1, o2 = fg.optim.SGD(ddp.parameters(), lr=0.1), fg.optim.SGD(ref.parameters(), lr=0.1)
    x, y = fg.randn(32, 8, device="cuda"), fg.randn(32, 2, device="cuda")
    for _ in range(3):
        for m, o in ((ddp, o1), (ref, o2)):
            o.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            o.step()
    for p, q in zip(net.parameters(), ref.parameters()):
        assert p.grad.device.type == "cuda"
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)
