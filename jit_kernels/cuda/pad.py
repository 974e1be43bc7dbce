"""``pad`` (reflect / replicate / circular) and its gradient for the cuda set (see
``jit_kernels.cpu.pad`` for the protocol: index maps per inner dimension, built by the runtime).

Forward: one thread per output element reads the input element the maps give (one pass).
Backward: one thread per output element adds its gradient to that input element with
``cuda.atomic.add`` (float sums of the few outputs that read the same edge element may differ in
the last bits from run to run, as the pooling gradients).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch
from jit_kernels.cuda.memory import fill, from_host
from jit_kernels.cuda import shape as _shape


@cuda.jit(cache=True)
def _pad(src, so, out, total, ishape, oshape, maps, moff):
    t = cuda.grid(1)
    nd = len(ishape)
    while t < total:
        rem = t
        p = 0
        stride = 1
        for d in range(nd - 1, -1, -1):
            c = rem % oshape[d]
            rem //= oshape[d]
            p += maps[moff[d] + c] * stride
            stride *= ishape[d]
        out[t] = src[so + rem * stride + p]
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _pad_back(g, go, gx, total, ishape, oshape, maps, moff):
    t = cuda.grid(1)
    nd = len(ishape)
    while t < total:
        rem = t
        p = 0
        stride = 1
        for d in range(nd - 1, -1, -1):
            c = rem % oshape[d]
            rem //= oshape[d]
            p += maps[moff[d] + c] * stride
            stride *= ishape[d]
        cuda.atomic.add(gx, rem * stride + p, g[go + t])
        t += cuda.gridsize(1)


def _tables(maps, index):
    oshape = tuple(len(m) for m in maps)
    moff = [0]
    for m in maps[:-1]:
        moff.append(moff[-1] + len(m))
    flat = from_host(np.concatenate([np.asarray(m, dtype=np.int64) for m in maps]), index)
    return oshape, flat, tuple(moff)


def pad(x, maps, lead):
    """See ``jit_kernels.cpu.pad``."""
    oshape, flat, moff = _tables(maps, x.index)
    out = alloc(tuple(x.shape[:lead]) + oshape, x.dtype, x.index)
    total = out.size
    if total == 0:
        return out
    xc = _shape.contiguous(x)
    launch(_pad, blocks_for(total, x.index), TPB, xc.buf, xc.offset, out.buf, total,
           tuple(x.shape[lead:]), oshape, flat.buf, moff)
    return out


def pad_backward(g, maps, lead, in_shape):
    """See ``jit_kernels.cpu.pad``."""
    in_shape = tuple(in_shape)
    gx = fill(alloc(in_shape, g.dtype, g.index), 0)
    total = g.size
    if total == 0 or gx.size == 0:
        return gx
    oshape, flat, moff = _tables(maps, g.index)
    gc = _shape.contiguous(g)
    launch(_pad_back, blocks_for(total, g.index), TPB, gc.buf, gc.offset, gx.buf, total,
           in_shape[lead:], oshape, flat.buf, moff)
    return gx
