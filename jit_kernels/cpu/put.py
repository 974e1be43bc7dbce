"""``put``: a copy of ``x`` with values written (or added) at flat positions.

``put(x, indices, values, accumulate)``: ``out.flat[indices[j]] = values[j]`` for every position
``j`` of ``indices`` in C order, so with repeated indices the **last write wins** (NumPy's
``a[idx] = v`` and ``np.put``); ``accumulate=True`` adds instead (``np.add.at``), through the
``scatter_add`` kernel on the flattened tensor.  Every index is checked (``[-n, n)``, negatives
count from the end) before anything is written.  The overwrite is one serial pass: it is
memory-bound and a parallel one would need a rule for which duplicate wins.
"""
from __future__ import annotations

import numpy as np

from jit_kernels.cpu import shape as _shape
from jit_kernels.cpu._jit import njit


@njit(cache=True, error_model="numpy")
def _put_last(ob, idx, vals, n):
    for j in range(idx.shape[0]):
        k = idx[j]
        if k < 0:
            k += n
        ob[k] = vals[j]


def put(x, indices, values, accumulate):
    """See the module doc; ``values`` has ``indices``' shape (or broadcasts to it)."""
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1)
    n = x.size
    if accumulate:
        flat = _shape.reshape(x, (n,))
        src = np.ascontiguousarray(np.broadcast_to(values, indices.shape)).reshape(-1)
        return _shape.scatter_add(flat, idx, src, 0).reshape(x.shape)
    out = _shape.copy(x)
    if idx.shape[0] == 0:
        return out
    _shape._check_indices(idx, 0, n)
    vals = np.ascontiguousarray(np.broadcast_to(values, indices.shape)).reshape(-1)
    ob = out.reshape(-1)
    if x.dtype == np.bool_:
        ob, vals = ob.view(np.uint8), vals.view(np.uint8)
    _put_last(ob, idx, vals, n)
    return out
