"""DistributedDataParallel: one model replica per process; gradients averaged over the processes
during backward, bucket by bucket, so that communication overlaps the rest of backward.

Note [DDP buckets]: parameters are grouped, in reverse registration order (about the order in which
backward produces their gradients), into buckets of about `bucket_cap_mb` (with the default cap, the
first one 1 MB, so that communication starts early), one dtype per bucket, as torch's reducer does
after its first iteration (torch then re-buckets by the order observed in backward; ferrograd keeps the
static order). Each parameter's post-accumulate-grad hook marks it ready; when every parameter of a
bucket is ready, its gradients are copied into the bucket's flat buffer and an asynchronous all-reduce
(SUM) is issued on it, which the process group's progress thread advances while backward goes on.
Buckets are issued strictly in index order, so that all ranks issue the same collectives in the same
order even if their backward passes run in different orders. When the last bucket has been issued (in
the last parameter's hook, since ferrograd has no `queue_callback`), all are waited for and each
parameter's `.grad` becomes its slice of the averaged buffer (a fresh array per step, so the caller's
old gradient tensors are never overwritten). `loss.backward()` therefore returns with averaged
gradients.

Note [DDP unused parameters]: with `find_unused_parameters=True`, forward walks the autograd graph from
the outputs and records the parameters it cannot reach; they are marked ready (contributing their
current gradient, or zeros) when backward starts. A bitmap of the parameters used on each rank is
all-reduced too: a parameter used on no rank keeps its `.grad` untouched, as torch. Without the flag, a
parameter that gets no gradient leaves its bucket unfinished, and the next forward raises torch's error.
Limits: no `static_graph`, no communication hooks, no `gradient_as_bucket_view`, and unused-parameter
tracking is per backward (not accumulated over `no_sync` iterations).
"""

import threading
from contextlib import contextmanager

import numpy as np

from ... import _C
from ... import distributed as dist
from ...autograd.grad_mode import no_grad
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


class _Bucket:
    def __init__(self, params):
        self.params = params  # [(index, param)] in bucket order, one dtype and device
        self.sizes = [p.numel() for _, p in params]
        self.offsets = [int(o) for o in np.concatenate([[0], np.cumsum(self.sizes)])]
        first = params[0][1]
        # on the parameters' device: MPI reads a CPU buffer in place, NCCL a CUDA one
        self.buffer_t = _C.zeros((self.offsets[-1],), dtype=first.dtype, device=first.device)
        self.pending = 0
        self.work = None


class DistributedDataParallel(Module):
    """torch.nn.parallel.DistributedDataParallel over ferrograd.distributed's default process group."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if gradient_as_bucket_view or static_graph:
            raise NotImplementedError("ferrograd's DistributedDataParallel has no gradient_as_bucket_view or "
                                      "static_graph (see Note [DDP buckets])")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._first_bucket_bytes = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.world_size = dist.get_world_size(process_group)
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._verify_same_model()
        if init_sync:
            self._broadcast_coalesced(list(module.parameters()) + list(module.buffers()))
        self._buckets, self._where = self._assign_buckets()
        self._lock = threading.Lock()
        self._sync = False  # the last forward asked for a synchronised backward
        self._started = False  # a synchronised backward has begun and not finished
        self._unused = ()
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in self._params]

    # ---- construction -------------------------------------------------------------------------

    def _verify_same_model(self):
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        every = []
        dist.all_gather_object(every, mine, self.process_group)
        for r, theirs in enumerate(every):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {dist.get_rank()} has "
                                   f"{len(mine)} params, while rank {r} has inconsistent {len(theirs)} params.")
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but parameter {i} has shape "
                                       f"{a[0]} {a[1]} on rank {dist.get_rank()} and {b[0]} {b[1]} on rank {r}.")

    def _broadcast_coalesced(self, tensors):
        """Rank 0's values into every rank's tensors, one broadcast per dtype."""
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault((str(t.dtype), str(t.device)), []).append(t)
        with no_grad():
            for group in by_dtype.values():
                flat = _C.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, 0, self.process_group)
                off = 0
                for t in group:
                    n = t.numel()
                    t.detach().copy_(flat[off:off + n].reshape(tuple(t.shape)))
                    off += n

    def _assign_buckets(self):
        """Note [DDP buckets]."""
        open_, done = {}, []
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            key = (str(p.dtype), str(p.device))
            cur = open_.setdefault(key, [[], 0])
            cur[0].append((i, p))
            cur[1] += p.numel() * p.element_size()
            if cur[1] >= (self.bucket_bytes_cap if done else self._first_bucket_bytes):
                done.append(open_.pop(key)[0])
        done.extend(params for params, _ in open_.values())
        buckets = [_Bucket(params) for params in done]
        where = {}
        for b, bucket in enumerate(buckets):
            for slot, (i, p) in enumerate(bucket.params):
                where[hash(p)] = (b, slot)
        return buckets, where

    # ---- forward ------------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        if self._started:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This "
                "error indicates that your module has parameters that were not used in producing loss. You can "
                "enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` "
                "to `torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        # Buffers are rank 0's before a forward that follows a synchronised one (torch's
        # require_forward_param_sync): forwards under no_grad or no_sync, which ranks may run unevenly, skip it.
        if self.require_forward_param_sync and self.broadcast_buffers and self.world_size > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast_coalesced(buffers)
        out = self.module(*inputs, **kwargs)
        self._sync = self.require_forward_param_sync = self.require_backward_grad_sync and _C.is_grad_enabled()
        if self._sync:
            for bucket in self._buckets:
                bucket.pending, bucket.work = len(bucket.params), None
            self._next_bucket = 0
            self._ready = np.zeros(len(self._params), dtype=bool)
            self._unused = self._find_unused(out) if self.find_unused_parameters else ()
        return out

    def _find_unused(self, out):
        """Note [DDP unused parameters]: indices of the parameters the outputs do not depend on."""
        stack, seen, reached = [], set(), set()
        todo = [out]
        while todo:
            o = todo.pop()
            if isinstance(o, _C.Tensor):
                if o.grad_fn is not None:
                    stack.append(o.grad_fn)
                elif o.requires_grad:
                    reached.add(hash(o))
            elif isinstance(o, (list, tuple)):
                todo.extend(o)
            elif isinstance(o, dict):
                todo.extend(o.values())
        while stack:
            fn = stack.pop()
            if fn in seen:
                continue
            seen.add(fn)
            var = getattr(fn, "variable", None)
            if var is not None:
                reached.add(hash(var))
            stack.extend(f for f, _ in fn.next_functions if f is not None)
        return [i for i, p in enumerate(self._params) if hash(p) not in reached]

    # ---- backward -----------------------------------------------------------------------------

    def _grad_ready(self, param):
        if not self._sync:
            return
        with self._lock:
            if not self._started:
                self._started = True
                for i in self._unused:
                    self._mark_ready(*self._where[hash(self._params[i])])
            self._mark_ready(*self._where[hash(param)])
            if self._next_bucket == len(self._buckets):
                self._finish()

    def _mark_ready(self, b, slot):
        bucket = self._buckets[b]
        i = bucket.params[slot][0]
        if self._ready[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter at index {i} has been "
                               "marked as ready twice. This means that multiple autograd engine hooks have fired "
                               "for this particular parameter during this iteration.")
        self._ready[i] = True
        bucket.pending -= 1
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1

    def _launch(self, bucket):
        with no_grad():
            for (_, p), off, n in zip(bucket.params, bucket.offsets, bucket.sizes):
                dst = bucket.buffer_t[off:off + n]
                if p.grad is None:
                    dst.zero_()
                else:
                    dst.copy_(p.grad.detach().reshape(-1))
        bucket.work = dist.all_reduce(bucket.buffer_t, group=self.process_group, async_op=True)

    def _finish(self):
        self._started = self._sync = False
        used = None
        if self.find_unused_parameters:
            flags = (~np.isin(np.arange(len(self._params)), self._unused)).astype(np.int64)
            used = _C.from_numpy(flags).to(self._buckets[0].buffer_t.device)
            dist.all_reduce(used, dist.ReduceOp.MAX, group=self.process_group)
            used = used.tolist()
        with no_grad():
            for bucket in self._buckets:
                bucket.work.wait()
                avg = bucket.buffer_t / self.world_size  # a fresh tensor: Note [DDP buckets]
                for (i, p), off, n in zip(bucket.params, bucket.offsets, bucket.sizes):
                    if used is None or used[i]:
                        p.grad = avg[off:off + n].reshape(tuple(p.shape))

    # ---- gradient accumulation ----------------------------------------------------------------

    @contextmanager
    def no_sync(self):
        """Backward passes of forwards run inside this block accumulate gradients locally, without
        communication; the first synchronised backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old
