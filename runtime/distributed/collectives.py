"""Collectives on tensors: ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``,
``send``, ``recv``.

MPI reads and writes the tensor's own buffer through the buffer protocol (no pickling): on cpu
the input's array is the send buffer (copied only when it is a non-contiguous view) and the
result is a fresh array from the kernel set; on cuda the device array goes to a CUDA-aware MPI
directly, otherwise through a host copy (``rt.distributed.info()`` says which).  Tensors are
immutable, so every result is a new tensor; no input buffer is written.  An autodiff tensor
takes part through its inner value and gets an untracked autodiff tensor back (collectives
are not recorded on the tape).  Capture tensors raise ``DistributedDeviceError``.
"""
from __future__ import annotations

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ArgumentValueError, DistributedDeviceError, DTypeError, ShapeError
from ..tensor import Tensor
from . import world

__all__ = ["Work", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "send", "recv", "REDUCE_OPS"]

REDUCE_OPS = ("sum", "mean", "max", "min", "prod")


# ---- buffers ----------------------------------------------------------------------------
def _plain(op: str, t):
    """(plain tensor, device to return results on) for ``t``; raises for capture tensors."""
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    if t.device.innermost.family == "capture":
        raise DistributedDeviceError(t.device)
    if t.device.family == "autodiff":
        return t.inner(), t.device
    return t, t.device


def _reducible(x: Tensor):
    """(``x`` in a dtype MPI can reduce, the dtype to round the result back to or None): MPI
    has no float16/bfloat16 arithmetic (their uint16 storage would be summed as integers),
    and small ints must wrap as their dtype, so both reduce in their compute dtype, as every
    op on them does (``runtime/lowprec.py``).  uint32 and uint64 reduce as themselves: MPI has
    both (and uint64's int64 bits would compare wrongly for max/min)."""
    if x.dtype.emulated and x.dtype not in D.WIDE_UNSIGNED:
        return x.astype(x.dtype.compute), x.dtype
    return x, None


def _lift(result: Tensor, device) -> Tensor:
    """``result`` (plain) on ``device``: itself, or an untracked autodiff tensor."""
    return result if result.device == device else result.to(device)


def _staged(device) -> bool:
    return device.kind != "cpu" and not world.cuda_aware()


def _send_buffer(t: Tensor):
    """An MPI-readable contiguous array of ``t``'s values (its own buffer when it can be)."""
    ks = t.device.kernels
    if _staged(t.device):
        return ks.to_host(t._payload)
    p = t._payload
    flags = getattr(p, "flags", None)
    contiguous = flags.c_contiguous if flags is not None else p.is_c_contiguous()
    return p if contiguous else ks.copy(p)


class _Result:
    """A fresh buffer for a collective's result on ``device``: ``.array`` for MPI to write,
    ``.tensor()`` wraps it (copying a host-staged one to the device)."""

    def __init__(self, device, shape, dtype):
        self.device, self.shape, self.dtype = device, tuple(shape), dtype
        self.staged = _staged(device)
        if self.staged:
            import numpy as np
            self.array = np.empty(self.shape, dtype.np)
        else:
            self.array = device.kernels.empty(self.shape, dtype.np, device.index)

    def tensor(self) -> Tensor:
        a = self.array
        if self.staged:
            a = self.device.kernels.from_host(a, self.device.index)
        return Tensor._wrap(a, self.shape, self.dtype, self.device)


def _mpi_op(op: str, dtype, name: str):
    MPI = world.mpi()
    if op not in REDUCE_OPS:
        raise ArgumentValueError(f"{name}: op must be one of {', '.join(REDUCE_OPS)}, got {op!r}")
    if dtype.is_bool:
        if op == "mean":
            raise DTypeError(f"{name}: op 'mean' is not defined for bool tensors; use 'sum' (logical "
                             f"or) or 'min' (logical and), or cast to a float dtype first")
        return MPI.LOR if op in ("sum", "max") else MPI.LAND
    if op == "mean" and not dtype.is_float:
        raise DTypeError(f"{name}: op 'mean' needs a float tensor, got {dtype.name}; use 'sum' and "
                         f"divide, or cast to a float dtype first")
    return {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}[op]


def _divide_inplace(res: _Result, n: int) -> None:
    """Divide the (unshared, just written) result buffer by ``n`` in place."""
    a = res.array
    if hasattr(a, "__array_interface__"):   # host memory (cpu, or a staged cuda result)
        import numpy as np
        np.divide(a, a.dtype.type(n), out=a)
    else:                                   # device memory of a CUDA-aware path: a kernel
        res.array = (Tensor._wrap(a, res.shape, res.dtype, res.device) / n)._payload


def _check_peer(name: str, peer, size: int, what: str = "rank") -> int:
    if not isinstance(peer, int) or isinstance(peer, bool) or not 0 <= peer < size:
        raise ArgumentValueError(f"{name}: {what} must be an int in [0, {size}), got {peer!r}")
    return peer


# ---- collectives ------------------------------------------------------------------------
class Work:
    """A collective in flight (``async_op=True``): ``wait()`` returns its result, ``test()``
    drives MPI's progress and says whether it is done."""

    __slots__ = ("_req", "_res", "_finish", "_op", "_value", "_send")

    def __init__(self, req, res, finish, op, send=None):
        self._req, self._res, self._finish, self._op, self._value = req, res, finish, op, None
        self._send = send           # the send buffer stays alive until MPI is done with it

    def test(self) -> bool:
        return self._value is not None or bool(self._req.Test())

    def wait(self) -> Tensor:
        if self._value is None:
            world.wait(self._req, self._op)
            self._value = self._finish(self._res)
        return self._value


def all_reduce(t, op: str = "sum", async_op: bool = False):
    """Elementwise ``op`` (sum, mean, max, min, prod) of ``t`` over every rank; every rank gets
    the result, a new tensor of ``t``'s shape, dtype and device (``async_op=True``: a ``Work``
    whose ``wait()`` returns it)."""
    x, dev = _plain("all_reduce", t)
    x, small = _reducible(x)
    mop = _mpi_op(op, x.dtype, "all_reduce")
    c = world.comm()
    n = c.Get_size()
    send = _send_buffer(x)
    res = _Result(x.device, x.shape, x.dtype)
    req = c.Iallreduce(send, res.array, mop)

    def finish(res):
        if op == "mean" and n > 1:
            _divide_inplace(res, n)
        out = res.tensor()
        return _lift(out if small is None else out.astype(small), dev)

    work = Work(req, res, finish, "all_reduce", send)
    return work if async_op else work.wait()


def broadcast(t, src: int = 0) -> Tensor:
    """Rank ``src``'s ``t`` on every rank (each rank passes a tensor of the same shape and
    dtype; on ``src`` the result is ``t`` itself)."""
    x, dev = _plain("broadcast", t)
    c = world.comm()
    _check_peer("broadcast", src, c.Get_size(), "src")
    if c.Get_rank() == src:
        buf = _send_buffer(x)
        world.wait(c.Ibcast(buf, root=src), "broadcast")
        return t
    res = _Result(x.device, x.shape, x.dtype)
    world.wait(c.Ibcast(res.array, root=src), "broadcast")
    return _lift(res.tensor(), dev)


def all_gather(t) -> Tensor:
    """Every rank's ``t`` stacked on a new leading axis: shape ``(world_size, *t.shape)``, rank
    ``r``'s value at index ``r`` (``rt.cat(list(out))``, or ``out.reshape(-1, ...)``, for
    PyTorch's ``all_gather_into_tensor`` layout)."""
    x, dev = _plain("all_gather", t)
    c = world.comm()
    res = _Result(x.device, (c.Get_size(),) + tuple(x.shape), x.dtype)
    world.wait(c.Iallgather(_send_buffer(x), res.array), "all_gather")
    return _lift(res.tensor(), dev)


def reduce_scatter(t, op: str = "sum") -> Tensor:
    """``all_reduce(t, op)`` split into ``world_size`` equal pieces along axis 0, rank ``r``
    keeping piece ``r`` (PyTorch's ``reduce_scatter_tensor``): ``t.shape[0]`` must be a
    multiple of the world size."""
    x, dev = _plain("reduce_scatter", t)
    x, small = _reducible(x)
    mop = _mpi_op(op, x.dtype, "reduce_scatter")
    c = world.comm()
    n = c.Get_size()
    if x.ndim == 0 or x.shape[0] % n:
        raise ShapeError(f"reduce_scatter: axis 0 of the input must be a multiple of the world size "
                         f"{n}, got shape {x.shape}")
    res = _Result(x.device, (x.shape[0] // n,) + tuple(x.shape[1:]), x.dtype)
    world.wait(c.Ireduce_scatter_block(_send_buffer(x), res.array, mop), "reduce_scatter")
    if op == "mean" and n > 1:
        _divide_inplace(res, n)
    out = res.tensor()
    return _lift(out if small is None else out.astype(small), dev)


def send(t, dst: int, tag: int = 0) -> None:
    """Send ``t``'s values to rank ``dst`` (which calls ``recv`` with the same shape and dtype)."""
    x, _ = _plain("send", t)
    c = world.comm()
    _check_peer("send", dst, c.Get_size(), "dst")
    world.wait(c.Isend(_send_buffer(x), dest=dst, tag=tag), "send")


def recv(shape, dtype=None, src: int = 0, device=None, tag: int = 0) -> Tensor:
    """A new tensor of ``shape`` and ``dtype`` (float32 by default) on ``device`` (the default
    device) holding what rank ``src`` sent; ``ShapeError`` when the sender's message has
    another size."""
    from ..device import current_default, device as _device
    dt = D.float32 if dtype is None else D.as_dtype(dtype)
    dev = current_default() if device is None else _device(device)
    if dev.innermost.family == "capture":
        raise DistributedDeviceError(dev)
    plain = dev.inner if dev.family == "autodiff" else dev
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    c = world.comm()
    MPI = world.mpi()
    _check_peer("recv", src, c.Get_size(), "src")
    res = _Result(plain, shape, dt)
    st = MPI.Status()
    req = c.Irecv(res.array, source=src, tag=tag)
    try:
        _wait_status(req, st)
    except MPI.Exception as exc:
        raise ShapeError(f"recv: the message from rank {src} does not fit shape {shape} "
                         f"{dt.name}: {exc.Get_error_string()}") from None
    got = st.Get_count(MPI.BYTE)
    want = res.array.nbytes if hasattr(res.array, "nbytes") else dt.itemsize * _numel(shape)
    if got != want:
        raise ShapeError(f"recv: rank {src} sent {got} bytes, shape {shape} {dt.name} needs {want}")
    return _lift(res.tensor(), dev)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _wait_status(req, status) -> None:
    """``world.wait`` that also fills ``status`` (for the received size)."""
    world.wait(_StatusRequest(req, status), "recv")


class _StatusRequest:
    __slots__ = ("req", "status")

    def __init__(self, req, status):
        self.req, self.status = req, status

    def Test(self):
        return self.req.Test(self.status)
