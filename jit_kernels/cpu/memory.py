"""Host transfer and array creation: from_host/to_host/empty/full/arange/eye.

Payloads are NumPy arrays.  ``from_host`` returns the array itself (the runtime copies when it
needs to); ``to_host`` returns a C-contiguous copy made by the copy kernel.  ``full``, ``arange``
and ``eye`` fill freshly allocated arrays with Numba kernels.  ``arange`` computes
``start + i*step`` in float64 for float dtypes (then rounds once) and in int64 for int dtypes
(then wraps); for bool it is ``(start + i*step) != 0``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import PAR_THRESHOLD, nthreads, scalar_array


@njit(cache=True)
def _fill_serial(out, v):
    for i in range(out.shape[0]):
        out[i] = v


@njit(cache=True, parallel=True)
def _fill_par(out, v, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
            o = out[lo:hi]
            for i in range(hi - lo):
                o[i] = v


def fill(out: np.ndarray, value) -> np.ndarray:
    """Fill C-contiguous ``out`` with ``value`` (converted like ``cast``)."""
    if out.size == 0:
        return out
    v = scalar_array(value, out.dtype)[()]
    o = out.reshape(-1)
    if o.size >= PAR_THRESHOLD:
        _fill_par(o, v, nthreads())
    else:
        _fill_serial(o, v)
    return out


def from_host(array, index=0):
    return array if isinstance(array, np.ndarray) else np.asarray(array)


def to_host(x):
    from jit_kernels.cpu.shape import copy
    return copy(x)


def empty(shape, dtype, index=0):
    """An uninitialised C-contiguous array (large ones from the caching allocator, ``_pool``:
    a reused block costs no page faults; the collectives of ``rt.distributed`` receive into it)."""
    from jit_kernels.cpu import _pool
    return _pool.empty(tuple(shape), np.dtype(dtype))


def full(shape, value, dtype, index=0):
    """A new array of ``value`` (large ones from the caching allocator, as ``empty``: a
    gradient's zeros, say, fill a reused block instead of faulting fresh pages in)."""
    return fill(empty(shape, dtype), value)


@njit(cache=True)
def _arange_f(out, start, step):
    for i in range(out.shape[0]):
        out[i] = start + i * step


@njit(cache=True)
def _arange_i(out, start, step):
    for i in range(out.shape[0]):
        out[i] = start + np.int64(i) * step


@njit(cache=True)
def _arange_b(out, start, step):
    for i in range(out.shape[0]):
        out[i] = (start + np.int64(i) * step) != 0


def arange(start, step, n, dtype, index=0):
    dt = np.dtype(dtype)
    out = np.empty(int(n), dtype=dt)
    if n <= 0:
        return out
    if dt.kind == "f":
        _arange_f(out, float(start), float(step))
    elif dt.kind == "b":
        _arange_b(out, np.int64(int(start)), np.int64(int(step)))
    else:
        _arange_i(out, np.int64(int(start)), np.int64(int(step)))
    return out


@njit(cache=True)
def _eye(out, one, zero):
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            out[i, j] = zero
        if i < m:
            out[i, i] = one


def eye(n, m, dtype, index=0):
    dt = np.dtype(dtype)
    out = np.empty((int(n), int(m)), dtype=dt)
    if out.size:
        _eye(out, dt.type(1), dt.type(0))
    return out
