"""``put`` for the cuda set (see ``jit_kernels.cpu.put``): the same result, deterministic.

Repeated indices: the last write (in C order of the indices) wins, as on cpu.  One thread per
index position records its position with ``cuda.atomic.max`` in an int64 "winner" array of
``x``'s size; a second pass lets only the winning position write.  ``accumulate=True`` is the
``scatter_add`` kernel on the flattened tensor (atomic adds: float sums of duplicates may differ
in the last bits from run to run).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels import _plan
from jit_kernels.cuda import shape as _shape
from jit_kernels.cuda._array import TPB, blocks_for, launch


@cuda.jit(cache=True)
def _claim(win, idx, J, n):
    j = cuda.grid(1)
    while j < J:
        k = idx[j]
        if k < 0:
            k += n
        cuda.atomic.max(win, k, j)
        j += cuda.gridsize(1)


@cuda.jit(cache=True)
def _write(out, win, idx, vals, vo, vs, J, n):
    j = cuda.grid(1)
    while j < J:
        k = idx[j]
        if k < 0:
            k += n
        if win[k] == j:
            out[k] = vals[vo + j * vs]
        j += cuda.gridsize(1)


def put(x, indices, values, accumulate):
    """See ``jit_kernels.cpu.put``."""
    n = x.size
    idx = _shape._flat_indices(indices, x.index)
    if idx.dtype != np.int64:
        from jit_kernels.cuda.elementwise import cast
        idx = cast(idx, np.int64)
    idx = _shape.reshape(idx, (idx.size,))
    J = idx.size
    if tuple(values.shape) != tuple(indices.shape):
        values = _shape.expand(values, indices.shape)
    vals = _shape.reshape(_shape.contiguous(values), (J,))
    if accumulate:
        return _shape.reshape(_shape.scatter_add(_shape.reshape(x, (n,)), idx, vals, 0), x.shape)
    out = _shape.copy(x)
    if J == 0:
        return out
    bad = _shape._first_bad(idx, n)
    if bad is not None:
        raise _plan.index_error(bad, 0, n)
    from jit_kernels.cuda.memory import full
    win = full((n,), -1, np.int64, x.index)
    launch(_claim, blocks_for(J, x.index), TPB, win.buf, idx.buf, J, n)
    launch(_write, blocks_for(J, x.index), TPB, out.buf, win.buf, idx.buf, vals.buf, vals.offset,
           vals.strides[0] if vals.strides else 0, J, n)
    return out
