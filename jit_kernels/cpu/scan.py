"""Scan kernels of the cpu set: ``cumsum``/``cumprod`` (running sum/product), ``cumargmax``/
``cumargmin`` (the index of the running maximum/minimum) and ``logcumsumexp``, rows of the
last axis (another axis is moved last with one contiguous copy; ``reverse`` scans from the end).

Accumulators: float inputs accumulate in float64 and ints in int64 (PyTorch's cpu ``acc_type``),
each output rounded once; rows run in ``prange``.  A long row when there are fewer rows than
threads (a 1-D cumsum of 1e7) runs the two-pass blocked scan: the sums of ``nthreads * 4``
chunks in parallel, their exclusive prefix on one thread, then each chunk scanned from its
offset in parallel (the chunk sums are reassociated, so the last bits may differ from a serial
scan).  The running max/min follows PyTorch: ties move the index to the later element
(``>=``/``<=``), and once a NaN is seen it stays (its index too).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from jit_kernels.cpu._layout import nthreads

#: a single row at least this long runs the blocked parallel sum scan
BLOCKED_MIN = 1 << 15
_CHUNKS_PER_THREAD = 4


@njit(cache=True, parallel=True)
def _sum_rows(x, out, acc0):
    rows, n = x.shape
    for r in prange(rows):
        a = acc0
        for i in range(n):
            a += x[r, i]
            out[r, i] = a


@njit(cache=True, parallel=True)
def _prod_rows(x, out, acc0):
    rows, n = x.shape
    for r in prange(rows):
        a = acc0
        for i in range(n):
            a *= x[r, i]
            out[r, i] = a


@njit(cache=True, fastmath=True)
def _chunk_sum(x, acc0):
    s = acc0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@njit(cache=True, parallel=True)
def _blocked_sum_row(x, out, part, acc0):
    """Two-pass scan of one long row ``x`` into ``out`` over ``part.shape[0]`` chunks
    (``part``: scratch of the accumulator's dtype; see the module docstring)."""
    n = x.shape[0]
    nchunks = part.shape[0]
    chunk = (n + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = min(c * chunk, n)
        hi = min(lo + chunk, n)
        part[c] = _chunk_sum(x[lo:hi], acc0)
    run = acc0
    for c in range(nchunks):
        s = part[c]
        part[c] = run
        run += s
    for c in prange(nchunks):
        lo = min(c * chunk, n)
        hi = min(lo + chunk, n)
        xs = x[lo:hi]
        os_ = out[lo:hi]
        a = part[c]
        for i in range(hi - lo):
            a += xs[i]
            os_[i] = a


@njit(cache=True, parallel=True)
def _argext_rows(x, out, is_max):
    rows, n = x.shape
    for r in prange(rows):
        if n == 0:
            continue
        best = x[r, 0]
        bi = 0
        out[r, 0] = 0
        for i in range(1, n):
            v = x[r, i]
            if best == best:                 # not NaN (always, for ints)
                if v != v:
                    take = True
                elif is_max:
                    take = v >= best
                else:
                    take = v <= best
                if take:
                    best = v
                    bi = i
            out[r, i] = bi


@njit(cache=True, parallel=True)
def _logcumsumexp_rows(x, out):
    rows, n = x.shape
    for r in prange(rows):
        a = -np.inf
        for i in range(n):
            v = np.float64(x[r, i])
            if a != a or v != v:
                a = np.nan
            else:
                hi = max(a, v)
                lo = min(a, v)
                if hi == -np.inf or hi == np.inf:
                    a = hi if lo == lo else np.nan
                else:
                    a = hi + np.log1p(np.exp(lo - hi))
            out[r, i] = a


def _acc0(dtype, one):
    v = 1 if one else 0
    return np.float64(v) if dtype.kind == "f" else np.int64(v)


def scan(op, x, axis, reverse=False):
    """``op`` ("sum", "prod", "argmax", "argmin", "logsumexp") scanned along ``axis`` of ``x``.

    "sum"/"prod"/"logsumexp" give ``x``'s dtype (the runtime casts ``x`` to the result dtype
    first); "argmax"/"argmin" give int64 indices of the running extreme (no ``reverse``)."""
    if x.ndim == 0:
        x = x.reshape(1)
        return scan(op, x, 0, reverse).reshape(())
    axis %= x.ndim
    xm = np.moveaxis(x, axis, -1)
    if reverse:
        xm = xm[..., ::-1]
    shape = xm.shape
    n = shape[-1]
    out_dt = np.dtype(np.int64) if op in ("argmax", "argmin") else x.dtype
    out = np.empty(shape, out_dt)
    if out.size:
        x2 = np.ascontiguousarray(xm).reshape(-1, n)
        o2 = out.reshape(-1, n)
        if op == "sum":
            acc0 = _acc0(x.dtype, False)
            t = nthreads()
            if x2.shape[0] < t and n >= BLOCKED_MIN and t > 1:
                part = np.empty(t * _CHUNKS_PER_THREAD, type(acc0))
                for r in range(x2.shape[0]):
                    _blocked_sum_row(x2[r], o2[r], part, acc0)
            else:
                _sum_rows(x2, o2, acc0)
        elif op == "prod":
            _prod_rows(x2, o2, _acc0(x.dtype, True))
        elif op in ("argmax", "argmin"):
            if x2.dtype == np.bool_:
                x2 = x2.view(np.uint8)
            _argext_rows(x2, o2, op == "argmax")
        elif op == "logsumexp":
            _logcumsumexp_rows(x2, o2)
        else:
            raise ValueError(f"scan: unknown op {op!r}")
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)
