"""Sorting kernels of the cuda set: one thread per row (simple, correct, not fast).

``argsort``: a bottom-up merge sort of each row's indices in global scratch, stable, with the
cpu set's order (NaN after every number ascending, before descending; -0.0 equals 0.0 since
only comparisons are used).  ``topk``: the cpu set's bounded insertion buffer, per row.  Rows
of the last axis; another axis is moved last first (a contiguous copy).  These kernels are
meant for correctness on small and medium rows; large sorts on a GPU want a segmented radix
sort (not written yet).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch
from jit_kernels.cuda.shape import contiguous, permute, reshape


@cuda.jit(device=True)
def _before(a, b, desc):
    """a strictly before b in the sort order."""
    if desc:
        return a > b or (a != a and b == b)
    return a < b or (b != b and a == a)


@cuda.jit(cache=True)
def _argsort_rows(x, xo, rows, n, desc, idx, tmp):
    r = cuda.grid(1)
    while r < rows:
        base = r * n
        for i in range(n):
            idx[base + i] = i
        width = 1
        src_is_idx = True
        while width < n:
            lo = 0
            while lo < n:
                mid = min(lo + width, n)
                hi = min(lo + 2 * width, n)
                i = lo
                j = mid
                k = lo
                while k < hi:
                    take_right = False
                    if i >= mid:
                        take_right = True
                    elif j < hi:
                        if src_is_idx:
                            a = x[xo + base + idx[base + i]]
                            b = x[xo + base + idx[base + j]]
                        else:
                            a = x[xo + base + tmp[base + i]]
                            b = x[xo + base + tmp[base + j]]
                        take_right = _before(b, a, desc)
                    if src_is_idx:
                        if take_right:
                            tmp[base + k] = idx[base + j]
                            j += 1
                        else:
                            tmp[base + k] = idx[base + i]
                            i += 1
                    else:
                        if take_right:
                            idx[base + k] = tmp[base + j]
                            j += 1
                        else:
                            idx[base + k] = tmp[base + i]
                            i += 1
                    k += 1
                lo = hi
            src_is_idx = not src_is_idx
            width *= 2
        if not src_is_idx:
            for i in range(n):
                idx[base + i] = tmp[base + i]
        r += cuda.gridsize(1)


@cuda.jit(cache=True)
def _topk_rows(x, xo, rows, n, k, largest, bv, bi, out):
    r = cuda.grid(1)
    while r < rows:
        base = r * n
        kb = r * k
        m = 0
        for j in range(n):
            v = x[xo + base + j]
            if m == k:
                if not _before(v, bv[kb + k - 1], largest):
                    continue
                p = k - 1
            else:
                p = m
                m += 1
            while p > 0 and _before(v, bv[kb + p - 1], largest):
                bv[kb + p] = bv[kb + p - 1]
                bi[kb + p] = bi[kb + p - 1]
                p -= 1
            bv[kb + p] = v
            bi[kb + p] = j
        for j in range(k):
            out[kb + j] = bi[kb + j]
        r += cuda.gridsize(1)


def _rows_last(x, axis):
    """``x`` with ``axis`` moved last, C-contiguous, and the axes order used."""
    order = tuple(i for i in range(x.ndim) if i != axis) + (axis,)
    return contiguous(permute(x, order)), order


def _back(y, order):
    inv = tuple(int(i) for i in np.argsort(np.asarray(order)))
    return contiguous(permute(y, inv))


def argsort(x, axis, descending=False, stable=True):
    if x.ndim == 0:
        x = reshape(x, (1,))
        return reshape(argsort(x, 0, descending, stable), ())
    axis %= x.ndim
    xc, order = _rows_last(x, axis)
    n = xc.shape[-1]
    out = alloc(xc.shape, np.int64, x.index)
    if out.size == 0:
        return _back(out, order)
    rows = out.size // n
    if xc.dtype == np.bool_:
        from jit_kernels.cuda.elementwise import cast
        xc = cast(xc, np.int32)
    tmp = alloc(xc.shape, np.int64, x.index)
    launch(_argsort_rows, blocks_for(rows, x.index), TPB, xc.buf, xc.offset, rows, n,
           bool(descending), out.buf, tmp.buf)
    return _back(out, order)


def topk(x, k, axis, largest=True, sorted=True):
    if x.ndim == 0:
        return reshape(topk(reshape(x, (1,)), k, 0, largest, sorted), (k,) if k != 1 else ())
    axis %= x.ndim
    xc, order = _rows_last(x, axis)
    n = xc.shape[-1]
    out = alloc(xc.shape[:-1] + (k,), np.int64, x.index)
    if out.size == 0 or n == 0:
        return _back(out, order)
    rows = out.size // k
    if xc.dtype == np.bool_:
        from jit_kernels.cuda.elementwise import cast
        xc = cast(xc, np.int32)
    bv = alloc((rows * k,), xc.dtype, x.index)
    bi = alloc((rows * k,), np.int64, x.index)
    launch(_topk_rows, blocks_for(rows, x.index), TPB, xc.buf, xc.offset, rows, n, k,
           bool(largest), bv.buf, bi.buf, out.buf)
    return _back(out, order)
