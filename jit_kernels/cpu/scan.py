"""Scan kernels of the cpu set: ``cumsum``/``cumprod`` (running sum/product), ``cumargmax``/
``cumargmin`` (the index of the running maximum/minimum) and ``logcumsumexp``, rows of the
last axis (another axis is moved last with one contiguous copy; ``reverse`` scans from the end).

Accumulators: float inputs accumulate in float64 and ints in int64 (PyTorch's cpu ``acc_type``),
each output rounded once.  Each op is one row function; small inputs run a serial loop over
the rows (cheap to compile), inputs of ``PAR_THRESHOLD`` elements or more with several rows a
``prange`` over rows (built in the background worker meanwhile; each row gives the same values
either way).  A long row when there are fewer rows than
threads (a 1-D cumsum of 1e7) runs the two-pass blocked scan: the sums of ``nthreads * 4``
chunks in parallel, their exclusive prefix on one thread, then each chunk scanned from its
offset in parallel (the chunk sums are reassociated, so the last bits may differ from a serial
scan).  The running max/min follows PyTorch: ties move the index to the later element
(``>=``/``<=``), and once a NaN is seen it stays (its index too).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels.cpu import _pool
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import PAR_THRESHOLD, nthreads

#: a single row at least this long runs the blocked parallel sum scan
BLOCKED_MIN = 1 << 15
_CHUNKS_PER_THREAD = 4


# --------------------------------------------------------------------------- one row
@njit(cache=True)
def _sum_row(x, out, acc0):
    a = acc0
    for i in range(x.shape[0]):
        a += x[i]
        out[i] = a


@njit(cache=True)
def _prod_row(x, out, acc0):
    a = acc0
    for i in range(x.shape[0]):
        a *= x[i]
        out[i] = a


@njit(cache=True)
def _argext_row(x, out, is_max):
    n = x.shape[0]
    if n == 0:
        return
    best = x[0]
    bi = 0
    out[0] = 0
    for i in range(1, n):
        v = x[i]
        if best == best:                     # not NaN (always, for ints)
            if v != v:
                take = True
            elif is_max:
                take = v >= best
            else:
                take = v <= best
            if take:
                best = v
                bi = i
        out[i] = bi


@njit(cache=True)
def _lcse_row(x, out):
    a = -np.inf
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        if a != a or v != v:
            a = np.nan
        else:
            hi = max(a, v)
            lo = min(a, v)
            if hi == -np.inf or hi == np.inf:
                a = hi if lo == lo else np.nan
            else:
                a = hi + np.log1p(np.exp(lo - hi))
        out[i] = a


# --------------------------------------------------------------------------- rows: serial
# variants for small inputs (cheap to compile: the tests' shapes), prange ones above
# PAR_THRESHOLD (built in the background worker meanwhile: each row is computed the same way)
@njit(cache=True)
def _sum_serial(x, out, acc0):
    for r in range(x.shape[0]):
        _sum_row(x[r], out[r], acc0)


@njit(cache=True, parallel=True)
def _sum_par(x, out, acc0):
    for r in prange(x.shape[0]):
        _sum_row(x[r], out[r], acc0)


@njit(cache=True)
def _prod_serial(x, out, acc0):
    for r in range(x.shape[0]):
        _prod_row(x[r], out[r], acc0)


@njit(cache=True, parallel=True)
def _prod_par(x, out, acc0):
    for r in prange(x.shape[0]):
        _prod_row(x[r], out[r], acc0)


@njit(cache=True)
def _argext_serial(x, out, is_max):
    for r in range(x.shape[0]):
        _argext_row(x[r], out[r], is_max)


@njit(cache=True, parallel=True)
def _argext_par(x, out, is_max):
    for r in prange(x.shape[0]):
        _argext_row(x[r], out[r], is_max)


@njit(cache=True)
def _lcse_serial(x, out, unused):
    for r in range(x.shape[0]):
        _lcse_row(x[r], out[r])


@njit(cache=True, parallel=True)
def _lcse_par(x, out, unused):
    for r in prange(x.shape[0]):
        _lcse_row(x[r], out[r])


# --------------------------------------------------------------------------- one long row
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


_KERNELS = {"sum": (_sum_serial, _sum_par), "prod": (_prod_serial, _prod_par),
            "argmax": (_argext_serial, _argext_par), "argmin": (_argext_serial, _argext_par),
            "logsumexp": (_lcse_serial, _lcse_par)}


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
    out = _pool.empty(shape, out_dt)
    if out.size:
        x2 = np.ascontiguousarray(xm).reshape(-1, n)
        o2 = out.reshape(-1, n)
        if op not in _KERNELS:
            raise ValueError(f"scan: unknown op {op!r}")
        if op in ("argmax", "argmin"):
            if x2.dtype == np.bool_:
                x2 = x2.view(np.uint8)
            extra = op == "argmax"
        else:
            extra = _acc0(x.dtype, op == "prod")
        t = nthreads()
        if op == "sum" and x2.shape[0] < t and n >= BLOCKED_MIN and t > 1:
            part = np.empty(t * _CHUNKS_PER_THREAD, type(extra))
            for r in range(x2.shape[0]):
                _blocked_sum_row(x2[r], o2[r], part, extra)
        else:
            serial, par = _KERNELS[op]
            args = (x2, o2, extra)
            if x2.shape[0] > 1 and out.size >= PAR_THRESHOLD and parallel_ready(par, args):
                par(*args)
            else:               # (also while par builds in the background: the same values)
                serial(*args)
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)
