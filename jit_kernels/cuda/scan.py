"""Scan kernels of the cuda set: one thread per row of the last axis (another axis is moved
last with a contiguous copy), the cpu set's semantics (float64/int64 accumulators, PyTorch's
running max/min with ties to the later index and NaN sticking, ``reverse`` scanning from the
end).  Simple and correct, not fast: a long single row wants a block-parallel scan (not
written yet).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch
from jit_kernels.cuda.shape import contiguous, permute, reshape

_CODES = {"sum": 0, "prod": 1, "argmax": 2, "argmin": 3, "logsumexp": 4}


@cuda.jit(cache=True)
def _scan_rows(x, xo, rows, n, code, rev, acc0, out):
    r = cuda.grid(1)
    while r < rows:
        base = r * n
        a = acc0
        for k in range(n):
            i = n - 1 - k if rev else k
            v = x[xo + base + i]
            if code == 0:
                a += v
            else:
                a *= v
            out[base + i] = a
        r += cuda.gridsize(1)


@cuda.jit(cache=True)
def _argext_rows(x, xo, rows, n, is_max, out):
    r = cuda.grid(1)
    while r < rows:
        base = r * n
        if n > 0:
            best = x[xo + base]
            bi = 0
            out[base] = 0
            for i in range(1, n):
                v = x[xo + base + i]
                if best == best:
                    take = False
                    if v != v:
                        take = True
                    elif is_max:
                        take = v >= best
                    else:
                        take = v <= best
                    if take:
                        best = v
                        bi = i
                out[base + i] = bi
        r += cuda.gridsize(1)


@cuda.jit(cache=True)
def _logcumsumexp_rows(x, xo, rows, n, rev, out):
    r = cuda.grid(1)
    while r < rows:
        base = r * n
        a = -math.inf
        for k in range(n):
            i = n - 1 - k if rev else k
            v = np.float64(x[xo + base + i])
            if a != a or v != v:
                a = math.nan
            else:
                hi = max(a, v)
                lo = min(a, v)
                if hi == -math.inf or hi == math.inf:
                    a = hi if lo == lo else math.nan
                else:
                    a = hi + math.log1p(math.exp(lo - hi))
            out[base + i] = a
        r += cuda.gridsize(1)


def scan(op, x, axis, reverse=False):
    """See ``jit_kernels.cpu.scan.scan``."""
    if x.ndim == 0:
        return reshape(scan(op, reshape(x, (1,)), 0, reverse), ())
    axis %= x.ndim
    order = tuple(i for i in range(x.ndim) if i != axis) + (axis,)
    xc = contiguous(permute(x, order))
    n = xc.shape[-1]
    idx = op in ("argmax", "argmin")
    out = alloc(xc.shape, np.int64 if idx else x.dtype, x.index)
    if out.size:
        rows = out.size // n
        grid = blocks_for(rows, x.index)
        if idx:
            if xc.dtype == np.bool_:
                from jit_kernels.cuda.elementwise import cast
                xc = cast(xc, np.int32)
            launch(_argext_rows, grid, TPB, xc.buf, xc.offset, rows, n, op == "argmax", out.buf)
        elif op == "logsumexp":
            launch(_logcumsumexp_rows, grid, TPB, xc.buf, xc.offset, rows, n, bool(reverse),
                   out.buf)
        else:
            one = op == "prod"
            acc0 = np.float64(one) if x.dtype.kind == "f" else np.int64(one)
            launch(_scan_rows, grid, TPB, xc.buf, xc.offset, rows, n, _CODES[op],
                   bool(reverse), acc0, out.buf)
    inv = tuple(int(i) for i in np.argsort(np.asarray(order)))
    return contiguous(permute(out, inv))
