"""Sorting kernels of the cpu set: ``argsort`` (a stable LSD radix sort on order-preserving
integer keys) and ``topk`` (a per-row bounded insertion buffer), rows of the last axis.

Keys: each element maps to an unsigned integer whose order is the sort order -- floats flip
their sign bit (negatives: all bits), ``-0.0`` maps to ``+0.0`` (equal, as comparisons say),
every NaN maps to one key above ``+inf`` (NaN sorts last ascending, first descending, as in
PyTorch); signed ints flip the sign bit; ``descending`` inverts every key.  A LSD radix sort
is stable, so ``stable=True`` costs nothing and ties always keep their input order.  Rows run
in ``prange`` when there are several; a single long row, with 4 threads or more, runs its passes
chunk-parallel (one histogram per chunk, chunks scattered in order, so still stable).  Digits are 8 bits (11 for a
long row); a pass
whose digit is the same for every key is skipped.  Rows shorter than 48 use insertion sort.

``topk`` keeps the k best so far in a sorted buffer (best first, ties by lower index), so one
comparison rejects most elements; ``largest`` treats NaN as the largest value (PyTorch).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import nthreads

_SMALL = 48
_U32_SIGN = np.uint32(0x80000000)
_U32_ABS = np.uint32(0x7FFFFFFF)
_U32_INF = np.uint32(0x7F800000)
_U32_NAN = np.uint32(0x7FC00000)
_U32_ZERO = np.uint32(0)
_U64_SIGN = np.uint64(0x8000000000000000)
_U64_ABS = np.uint64(0x7FFFFFFFFFFFFFFF)
_U64_INF = np.uint64(0x7FF0000000000000)
_U64_NAN = np.uint64(0x7FF8000000000000)
_U64_ZERO = np.uint64(0)
_MASK8 = np.uint64(255)
_LONG_BITS = 8
_LONG_BINS = 1 << _LONG_BITS
_MASK11 = np.uint64(_LONG_BINS - 1)


# --------------------------------------------------------------------------- keys
@njit(cache=True, parallel=True)
def _keys32(bits, out, kind, desc):
    """kind 0: float32 bits, 1: signed int32 bits, 2: unsigned (bool)."""
    for i in prange(bits.shape[0]):
        b = bits[i]
        if kind == 0:
            if (b & _U32_ABS) > _U32_INF:
                b = _U32_NAN
            elif b == _U32_SIGN:
                b = _U32_ZERO
            if b & _U32_SIGN:
                b = ~b
            else:
                b = b | _U32_SIGN
        elif kind == 1:
            b = b ^ _U32_SIGN
        if desc:
            b = ~b
        out[i] = b


@njit(cache=True, parallel=True)
def _keys64(bits, out, kind, desc):
    for i in prange(bits.shape[0]):
        b = bits[i]
        if kind == 0:
            if (b & _U64_ABS) > _U64_INF:
                b = _U64_NAN
            elif b == _U64_SIGN:
                b = _U64_ZERO
            if b & _U64_SIGN:
                b = ~b
            else:
                b = b | _U64_SIGN
        elif kind == 1:
            b = b ^ _U64_SIGN
        if desc:
            b = ~b
        out[i] = b


def _keys(x2: np.ndarray, descending: bool):
    """Order-preserving unsigned keys of a C-contiguous 2-D array (rows, n)."""
    dt = x2.dtype
    flat = x2.reshape(-1)
    if dt == np.bool_:
        bits, kind, wide = flat.astype(np.uint32), 2, False
    elif dt.itemsize == 4:
        bits, kind, wide = flat.view(np.uint32), (0 if dt.kind == "f" else 1), False
    else:
        bits, kind, wide = flat.view(np.uint64), (0 if dt.kind == "f" else 1), True
    out = np.empty(flat.shape, np.uint64 if wide else np.uint32)
    (_keys64 if wide else _keys32)(bits, out, kind, bool(descending))
    return out.reshape(x2.shape), (8 if wide else 4)


# --------------------------------------------------------------------------- radix sort
@njit(cache=True)
def _sort_row(keys, idx, tk, ti, hist, nbytes):
    """Sort ``keys`` (1-D) stably, writing the permutation into ``idx`` (int64)."""
    n = keys.shape[0]
    if n < _SMALL:
        for i in range(n):
            tk[i] = keys[i]
            ti[i] = i
        for i in range(1, n):
            k = tk[i]
            j = i - 1
            while j >= 0 and tk[j] > k:
                tk[j + 1] = tk[j]
                ti[j + 1] = ti[j]
                j -= 1
            tk[j + 1] = k
            ti[j + 1] = i
        for i in range(n):
            idx[i] = ti[i]
        return
    hist[:, :] = 0
    for i in range(n):
        k = np.uint64(keys[i])
        for d in range(nbytes):
            hist[d, (k >> np.uint64(8 * d)) & _MASK8] += 1
    for i in range(n):
        idx[i] = i
    # ping-pong between (keys copy, idx) and (tk, ti); the caller's keys are not modified
    sk = keys.copy()
    si = idx
    swapped = False
    first = np.uint64(sk[0])
    for d in range(nbytes):
        sh = np.uint64(8 * d)
        if hist[d, (first >> sh) & _MASK8] == n:
            continue
        run = 0
        for b in range(256):
            c = hist[d, b]
            hist[d, b] = run
            run += c
        if not swapped:
            for i in range(n):
                k = sk[i]
                b = (np.uint64(k) >> sh) & _MASK8
                p = hist[d, b]
                hist[d, b] = p + 1
                tk[p] = k
                ti[p] = si[i]
        else:
            for i in range(n):
                k = tk[i]
                b = (np.uint64(k) >> sh) & _MASK8
                p = hist[d, b]
                hist[d, b] = p + 1
                sk[p] = k
                si[p] = ti[i]
        swapped = not swapped
    if swapped:
        for i in range(n):
            idx[i] = ti[i]


@njit(cache=True, parallel=True)
def _sort_rows(keys, out, nbytes):
    rows, n = keys.shape
    for r in prange(rows):
        tk = np.empty(n, keys.dtype)
        ti = np.empty(n, np.int64)
        hist = np.empty((nbytes, 256), np.int64)
        _sort_row(keys[r], out[r], tk, ti, hist, nbytes)


@njit(cache=True, parallel=True)
def _sort_long_row(keys, idx, nbytes, nchunks):
    """One long row, each pass chunk-parallel (stable: chunks scatter in order).  Each pass
    counts its digit per chunk of the current source order, then scatters; a pass whose digit
    is the same for every key is skipped.  Digits are 11 bits (3 passes for 32-bit keys)."""
    n = keys.shape[0]
    chunk = (n + nchunks - 1) // nchunks
    npass = (8 * nbytes + _LONG_BITS - 1) // _LONG_BITS
    hist = np.zeros((nchunks, _LONG_BINS), np.int64)
    sk = keys.copy()
    si = np.arange(n)
    tk = np.empty_like(sk)
    ti = np.empty(n, np.int64)
    for d in range(npass):
        sh = np.uint64(_LONG_BITS * d)
        for c in prange(nchunks):
            lo = c * chunk
            hi = min(lo + chunk, n)
            for b in range(_LONG_BINS):
                hist[c, b] = 0
            for i in range(lo, hi):
                hist[c, (np.uint64(sk[i]) >> sh) & _MASK11] += 1
        b0 = (np.uint64(sk[0]) >> sh) & _MASK11
        total = 0
        for c in range(nchunks):
            total += hist[c, b0]
        if total == n:
            continue
        run = 0
        for b in range(_LONG_BINS):
            for c in range(nchunks):
                cnt = hist[c, b]
                hist[c, b] = run
                run += cnt
        for c in prange(nchunks):
            lo = c * chunk
            hi = min(lo + chunk, n)
            for i in range(lo, hi):
                k = sk[i]
                b = (np.uint64(k) >> sh) & _MASK11
                p = hist[c, b]
                hist[c, b] = p + 1
                tk[p] = k
                ti[p] = si[i]
        sk, tk = tk, sk
        si, ti = ti, si
    idx[:] = si


def argsort(x, axis, descending=False, stable=True):
    """Indices (int64) that sort ``x`` along ``axis`` (stable; see the module docstring)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    axis %= x.ndim
    xm = np.moveaxis(x, axis, -1)
    shape = xm.shape
    n = shape[-1]
    out = np.empty(shape, np.int64)
    if out.size == 0:
        return np.moveaxis(out, -1, axis)
    x2 = np.ascontiguousarray(xm).reshape(-1, n)
    keys, nbytes = _keys(x2, descending)
    o2 = out.reshape(-1, n)
    t = nthreads()
    if x2.shape[0] < t and n >= 1 << 16 and t >= _LONG_ROW_THREADS:
        for r in range(x2.shape[0]):
            _sort_long_row(keys[r], o2[r], nbytes, t)
    else:
        _sort_rows(keys, o2, nbytes)
    return np.moveaxis(out, -1, axis)


# --------------------------------------------------------------------------- top-k
@njit(inline="always")
def _better(a, b, largest):
    """a strictly before b in top-k order (NaN is the largest value)."""
    if largest:
        return a > b or (a != a and b == b)
    return a < b or (b != b and a == a)


@njit(cache=True, parallel=True)
def _topk_rows(x, k, largest, out):
    rows, n = x.shape
    for r in prange(rows):
        row = x[r]
        bv = np.empty(k, x.dtype)
        bi = np.empty(k, np.int64)
        m = 0
        for j in range(n):
            v = row[j]
            if m == k:
                if not _better(v, bv[k - 1], largest):
                    continue
                p = k - 1
            else:
                p = m
                m += 1
            while p > 0 and _better(v, bv[p - 1], largest):
                bv[p] = bv[p - 1]
                bi[p] = bi[p - 1]
                p -= 1
            bv[p] = v
            bi[p] = j
        for j in range(k):
            out[r, j] = bi[j]


#: a single long row runs chunk-parallel only with this many threads: on fewer, the serial
#: sort (one histogram pass for every digit, then the scatters) beats the chunk-parallel one
#: (which recounts per pass)
_LONG_ROW_THREADS = 4

#: above this k (or k beyond n / 8) a full sort of the row is faster than the buffer
TOPK_BUFFER_MAX = 64


def topk(x, k, axis, largest=True, sorted=True):
    """Indices (int64) of the k largest (smallest) along ``axis``, best first, ties by index."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    axis %= x.ndim
    xm = np.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    if k == 0 or xm.size == 0:
        return np.moveaxis(np.empty(xm.shape[:-1] + (k,), np.int64), -1, axis)
    if k > TOPK_BUFFER_MAX or k * 8 > n:
        idx = argsort(xm, -1, descending=largest)[..., :k]
        return np.moveaxis(np.ascontiguousarray(idx), -1, axis)
    x2 = np.ascontiguousarray(xm).reshape(-1, n)
    if x2.dtype == np.bool_:
        x2 = x2.view(np.uint8)
    out = np.empty((x2.shape[0], k), np.int64)
    _topk_rows(x2, k, bool(largest), out)
    return np.moveaxis(out.reshape(xm.shape[:-1] + (k,)), -1, axis)
