"""Data parallelism: ``DistributedDataParallel`` and ``average_gradients``.

PyTorch DDP's design: the trainable parameters are grouped, in reverse order (the order
backward produces their gradients), into buckets of about ``bucket_cap_mb`` MB of one dtype;
when every gradient of a bucket is final, the bucket is flattened into one fresh buffer and its
sum over the ranks starts as a non-blocking all-reduce, while backward goes on with the
earlier layers.  Buckets start in a fixed order on every rank (MPI matches collectives by
order).  When backward ends, each bucket is waited for, divided by the world size and split
back into the ``Gradients``, so ``opt.step(grads)`` sees the average over the ranks.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..autodiff.grad_mode import is_recording
from ..autodiff.tape import arm_backward_observer
from ..core.errors import ArgumentTypeError, ArgumentValueError, DistributedError
from ..nn.module import Module, Parameter
from ..ops import api
from . import collectives, world

__all__ = ["DistributedDataParallel", "average_gradients", "broadcast_parameters",
           "check_same_parameters"]

DEFAULT_BUCKET_MB = 25.0


class _Bucket:
    __slots__ = ("index", "params", "numels", "dtype", "device", "grads", "pending", "work")

    def __init__(self, index, params, dtype, device):
        self.index, self.params, self.dtype, self.device = index, params, dtype, device
        self.numels = [p.value.size for p in params]
        self.grads, self.pending, self.work = {}, len(params), None


def _buckets(params, cap_bytes) -> list:
    """Reverse-order buckets of at most ``cap_bytes`` (a larger single parameter gets its own),
    one dtype and device each."""
    out, cur, size = [], [], 0
    for p in reversed(params):
        v = p.value
        nbytes = v.size * v.dtype.itemsize
        if cur and (size + nbytes > cap_bytes or v.dtype is not cur[0].value.dtype
                    or v.device != cur[0].value.device):
            out.append(cur)
            cur, size = [], 0
        cur.append(p)
        size += nbytes
    if cur:
        out.append(cur)
    return [_Bucket(i, ps, ps[0].value.dtype, ps[0].value.device) for i, ps in enumerate(out)]


def _node(p: Parameter):
    node = getattr(p.value._payload, "node", None)
    if node is None:
        raise ArgumentTypeError(f"DistributedDataParallel: parameter of shape {p.shape} is not a "
                                f"tracked autodiff tensor: move the model to rt.autodiff(device) "
                                f"first")
    return node


class GradientReducer:
    """The bucketed all-reduce of one model's gradients (a backward observer, see
    ``runtime.autodiff.tape.arm_backward_observer``)."""

    def __init__(self, params, bucket_cap_mb: float = DEFAULT_BUCKET_MB):
        if not bucket_cap_mb > 0:
            raise ArgumentValueError(f"bucket_cap_mb must be > 0, got {bucket_cap_mb}")
        self.params = [p for p in params if p.requires_grad]
        self.cap = int(bucket_cap_mb * 1024 * 1024)
        self.buckets = _buckets(self.params, self.cap)
        self._where = {}
        self._next = 0

    # -- the observer -----------------------------------------------------------------
    def arm(self) -> None:
        """Reduce the gradients of the next ``backward()`` in this thread."""
        self._start()
        arm_backward_observer(self)

    def _start(self) -> None:
        where = {}
        for b in self.buckets:
            b.grads, b.pending, b.work = {}, len(b.params), None
            for k, p in enumerate(b.params):
                where[_node(p)] = (b, k)
        self._where, self._next = where, 0

    def leaf_ready(self, node, g) -> None:
        hit = self._where.get(node)
        if hit is None:
            return
        b, k = hit
        if k not in b.grads:
            b.grads[k] = g
            b.pending -= 1
            if b.pending == 0:
                self._launch_ready()
        for bb in self.buckets[:self._next]:       # drive MPI's progress while backward runs
            bb.work.test()

    def _launch_ready(self) -> None:
        while self._next < len(self.buckets) and self.buckets[self._next].pending == 0:
            self._launch(self.buckets[self._next])
            self._next += 1

    def _launch(self, b: _Bucket) -> None:
        parts = []
        for k, p in enumerate(b.params):
            g = b.grads.get(k)
            if g is None:       # no gradient here (unused on this rank): zeros keep ranks in step
                g = api.zeros(p.value.shape, dtype=b.dtype, device=b.device.inner
                              if b.device.family == "autodiff" else b.device)
            parts.append(api.reshape(g, (-1,)))
        flat = parts[0] if len(parts) == 1 else api.cat(parts, axis=0)
        b.work = collectives.all_reduce(flat, "mean", async_op=True)

    def finish(self, grads) -> None:
        """Start what backward left (buckets with unused parameters), agree on which parameters
        have a gradient on any rank, wait, and write the averages into ``grads``."""
        for b in self.buckets[self._next:]:
            b.pending = 0
        self._launch_ready()
        present = np.zeros(len(self.params) or 1, np.uint8)
        nodes = []
        i = 0
        for b in self.buckets:
            for k, p in enumerate(b.params):
                present[i] = k in b.grads
                nodes.append(_node(p))
                i += 1
        MPI = world.mpi()
        anyp = np.empty_like(present)
        world.wait(world.comm().Iallreduce(present, anyp, MPI.MAX), "DistributedDataParallel")
        i = 0
        for b in self.buckets:
            flat = b.work.wait()
            off = 0
            for k, p in enumerate(b.params):
                n = b.numels[k]
                if anyp[i]:
                    grads._set(nodes[i], api.reshape(flat[off:off + n], p.value.shape))
                off += n
                i += 1
            b.work, b.grads = None, {}

    # -- after backward ---------------------------------------------------------------
    def reduce(self, grads):
        """Average ``grads`` (from a ``backward()`` that ran without this observer)."""
        self._start()
        for p in reversed(self.params):
            g = p.grad(grads)
            if g is not None:
                self.leaf_ready(_node(p), g)
        self.finish(grads)
        return grads


def average_gradients(grads, params, bucket_cap_mb: float = DEFAULT_BUCKET_MB):
    """Replace every gradient in ``grads`` of the parameters ``params`` by its mean over the
    ranks, with bucketed non-blocking all-reduces (after backward: no overlap); returns
    ``grads``.  Every rank must pass the same parameters in the same order."""
    return GradientReducer(list(params), bucket_cap_mb).reduce(grads)


def _signature(module: Module) -> list:
    sig = [("param", n, tuple(p.shape), p.value.dtype.name, bool(p.requires_grad))
           for n, p in module.named_parameters()]
    sig += [("buffer", n, tuple(b.shape), b.dtype.name) for n, b in module.named_buffers()
            if b is not None]
    return sig


def check_same_parameters(module: Module) -> None:
    """Raise ``DistributedError`` on every rank when the ranks' parameters or buffers differ in
    names, shapes, dtypes or ``requires_grad`` (one small all-gather; the rest only then)."""
    sig = _signature(module)
    digest = np.frombuffer(hashlib.sha256(repr(sig).encode()).digest(), np.uint8).copy()
    c = world.comm()
    everyone = np.empty((c.Get_size(), digest.size), np.uint8)
    world.wait(c.Iallgather(digest, everyone), "DistributedDataParallel")
    if (everyone == everyone[0]).all():
        return
    sigs = c.allgather(sig)          # every rank saw the mismatch, so every rank is here
    lines = []
    for r, s in enumerate(sigs[1:], start=1):
        if s != sigs[0]:
            a, b = set(sigs[0]), set(s)
            diff = sorted(a ^ b, key=repr)[:6]
            lines.append(f"rank {r} differs from rank 0 in {len(a ^ b)} entr(y/ies), e.g. "
                         + "; ".join(f"{'rank 0' if e in a else f'rank {r}'}: {e[0]} {e[1]} "
                                     f"{e[2]} {e[3]}" for e in diff))
    raise DistributedError(f"DistributedDataParallel: the ranks' models differ (rank "
                           f"{c.Get_rank()} of {c.Get_size()} reporting): " + " | ".join(lines)
                           + ". Every rank must build the same model.")


def broadcast_parameters(module: Module, src: int = 0) -> None:
    """Replace every parameter and buffer of ``module`` by rank ``src``'s value."""
    for p in module.parameters():
        p.value = collectives.broadcast(p.value, src)
    for m in module.modules():
        for name, b in list(m._buffers.items()):
            if b is not None:
                m._buffers[name] = collectives.broadcast(b, src)


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` (PyTorch's ``DistributedDataParallel``): checks that
    every rank built the same model, copies rank 0's parameters and buffers to every rank, and
    makes the ``backward()`` that follows each forward in training mode average the gradients
    over the ranks with bucketed all-reduces overlapping backward.  ``ddp.module`` is the
    wrapped model; state dict keys get the ``module.`` prefix, as PyTorch's."""

    def __init__(self, module: Module, bucket_cap_mb: float = DEFAULT_BUCKET_MB,
                 broadcast_buffers: bool = True):
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentTypeError(f"DistributedDataParallel: expected an rt.nn.Module, got "
                                    f"{type(module).__name__}")
        self.module = module
        object.__setattr__(self, "_ddp_world", world.world_size())
        check_same_parameters(module)
        if self._ddp_world > 1:
            if broadcast_buffers:
                broadcast_parameters(module, 0)
            else:
                for p in module.parameters():
                    p.value = collectives.broadcast(p.value, 0)
        object.__setattr__(self, "reducer", GradientReducer(list(module.parameters()), bucket_cap_mb))

    def forward(self, *args, **kwargs):
        if self.training and is_recording() and self._ddp_world > 1:
            self.reducer.arm()
        return self.module(*args, **kwargs)

    def average_gradients(self, grads):
        """Average ``grads`` over the ranks now (for a ``backward()`` the forward did not arm)."""
        return self.reducer.reduce(grads) if self._ddp_world > 1 else grads
