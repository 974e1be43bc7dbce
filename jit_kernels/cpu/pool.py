"""2-D pooling and resampling over (N, C, H, W) arrays: max, average (any window table) and
separable two-tap resampling (nearest/bilinear), each with its backward.

Windows come as *window tables*, one per spatial axis: ``(starts, stops, step)`` with
``starts``/``stops`` int64 arrays of the output length (already clipped to the input) and
``step`` the dilation.  So one kernel serves fixed windows (``max_pool2d``) and adaptive ones.
Resampling takes one *tap table* per axis: ``(i0, i1, lam)``, output ``o`` reading input
``i0[o]`` with weight ``1 - lam[o]`` and ``i1[o]`` with weight ``lam[o]``.

Every kernel is ``prange`` over the N*C planes and serial within a plane, so backward
scatters need no atomics and are deterministic.  Max follows PyTorch: the first maximum
wins, a NaN replaces the running maximum (so NaN propagates, the last NaN's index is kept).
Max windows are reduced columns first (a vectorised pass over contiguous rows), then per
window over its columns; the backward finds the argmax again that way, so the tape keeps no
index tensor.  Average sums in float64.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from jit_kernels.cpu import _pool, scalar_math as sm
from jit_kernels.cpu._layout import nthreads


def _planes(x):
    """``x`` (N, C, H, W) as a C-contiguous (N*C, H*W) array."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x).reshape(n * c, h * w)


def _lowest(dtype):
    """The start value of a running maximum: -inf, or the integer minimum."""
    dt = np.dtype(dtype)
    return dt.type(-np.inf) if dt.kind == "f" else np.iinfo(dt).min


def _mx(a, b):
    """``max(a, b)`` inside the kernels (implemented by the overload below)."""


@overload(_mx, inline="always")
def _ov_mx(a, b):
    # llvm.maximum vectorises and propagates NaN; ints take the plain select
    if isinstance(a, types.Float):
        return lambda a, b: sm.fmax_nan(a, b)
    return lambda a, b: a if a >= b else b


@njit(cache=True)
def _chunks(planes, nt):
    """How many prange tasks take ``planes`` planes: a few per thread, so that per-task
    scratch is allocated a few times per call, not once per plane (an allocation inside the
    loop cost more than pooling a small plane)."""
    return max(1, min(planes, 4 * nt))


@njit(parallel=True, cache=True)
def _max_values(x, W, hs, he, dh, ws, we, dw, lowest, out, nt):
    # rows first: the column maxima of an output row's window rows are one vectorised pass
    # over contiguous rows, then each output takes the max of its columns
    OH, OW = hs.shape[0], ws.shape[0]
    P = x.shape[0]
    nch = _chunks(P, nt)
    for ci in prange(nch):
        r = np.empty(W, x.dtype)
        for p in range(ci * P // nch, (ci + 1) * P // nch):
            xp = x[p]
            for oh in range(OH):
                r[:] = lowest
                for h in range(hs[oh], he[oh], dh):
                    row = xp[h * W:(h + 1) * W]
                    for w in range(W):
                        r[w] = _mx(r[w], row[w])
                o = out[p, oh * OW:(oh + 1) * OW]
                for ow in range(OW):
                    best = lowest
                    for w in range(ws[ow], we[ow], dw):
                        best = _mx(best, r[w])
                    o[ow] = best


@njit(inline="always")
def _plane_argmax(xp, W, hs, he, dh, ws, we, dw, lowest, best, bh, out, idx):
    """Max and flat argmax of every window of one plane, PyTorch's pick: the first maximum
    in row-major order, or the last NaN.  Columns first (vectorised over a row): per column,
    the first row of the column maximum (the last NaN row); then per window the best column,
    comparing (value, row) so that ties go to the lowest row, then the lowest column."""
    OW = ws.shape[0]
    for oh in range(hs.shape[0]):
        best[:] = lowest
        bh[:] = hs[oh]
        for h in range(hs[oh], he[oh], dh):
            row = xp[h * W:(h + 1) * W]
            for w in range(W):
                v = row[w]
                take = (v > best[w]) | (v != v)
                best[w] = v if take else best[w]
                bh[w] = h if take else bh[w]
        for ow in range(OW):
            m = lowest
            mh = hs[oh]
            mw = ws[ow]
            for w in range(ws[ow], we[ow], dw):
                # branch-free: which candidate wins is data-dependent (mispredicted branches
                # cost more than the whole comparison)
                v, vh = best[w], bh[w]
                num = (v == v) & (m == m)
                take = (num & ((v > m) | ((v == m) & (vh < mh)))) | \
                    ((v != v) & ((m == m) | (vh >= mh)))
                m = v if take else m
                mh = vh if take else mh
                mw = w if take else mw
            out[oh * OW + ow] = m
            idx[oh * OW + ow] = mh * W + mw


@njit(parallel=True, cache=True)
def _max_with_indices(x, W, hs, he, dh, ws, we, dw, lowest, out, idx, nt):
    P = x.shape[0]
    nch = _chunks(P, nt)
    for ci in prange(nch):
        best = np.empty(W, x.dtype)
        bh = np.empty(W, np.int64)
        for p in range(ci * P // nch, (ci + 1) * P // nch):
            _plane_argmax(x[p], W, hs, he, dh, ws, we, dw, lowest, best, bh, out[p], idx[p])


@njit(parallel=True, cache=True)
def _max_bwd(x, g, W, hs, he, dh, ws, we, dw, lowest, gx, nt):
    # the argmax again (the tape keeps no index tensor), then a serial scatter per plane
    n = hs.shape[0] * ws.shape[0]
    P = x.shape[0]
    nch = _chunks(P, nt)
    for ci in prange(nch):
        best = np.empty(W, x.dtype)
        bh = np.empty(W, np.int64)
        vals = np.empty(n, x.dtype)
        idx = np.empty(n, np.int64)
        for p in range(ci * P // nch, (ci + 1) * P // nch):
            _plane_argmax(x[p], W, hs, he, dh, ws, we, dw, lowest, best, bh, vals, idx)
            gp = gx[p]
            gp[:] = 0
            for o in range(n):
                gp[idx[o]] += g[p, o]


@njit(parallel=True, cache=True)
def _max2(x, W, OH, OW, out, gx, g, backward, nt):
    """2x2 windows at stride 2 (no padding, no dilation: the common pool): values, or with
    ``backward`` the gradient ``g`` scattered to each window's argmax — the generic kernels'
    pick (row-major first maximum, or the last NaN) as a sequential scan of the 4 taps."""
    P = x.shape[0]
    nch = _chunks(P, nt)
    for ci in prange(nch):
        for p in range(ci * P // nch, (ci + 1) * P // nch):
            xp = x[p]
            if backward:
                gp = gx[p]
                gp[:] = 0
            for oh in range(OH):
                r0 = xp[2 * oh * W:(2 * oh + 1) * W]
                r1 = xp[(2 * oh + 1) * W:(2 * oh + 2) * W]
                if not backward:
                    o = out[p, oh * OW:(oh + 1) * OW]
                    for ow in range(OW):
                        o[ow] = _mx(_mx(r0[2 * ow], r0[2 * ow + 1]),
                                    _mx(r1[2 * ow], r1[2 * ow + 1]))
                    continue
                for ow in range(OW):
                    m = r0[2 * ow]
                    k = 2 * oh * W + 2 * ow
                    for d in range(1, 4):
                        i = 2 * oh * W + 2 * ow + (d // 2) * W + (d % 2)
                        v = xp[i]
                        if v > m or v != v:
                            m = v
                            k = i
                    gp[k] += g[p, oh * OW + ow]


def _is_2x2(rows, cols):
    """Whether both window tables are 2-wide windows at stride 2, unclipped, undilated."""
    for st, sp, step in (rows, cols):
        if step != 1 or not (np.array_equal(st, 2 * np.arange(len(st)))
                             and np.array_equal(sp, st + 2)):
            return False
    return True


@njit(parallel=True, cache=True)
def _avg_fwd(x, W, hs, he, ws, we, div, out):
    OH, OW = hs.shape[0], ws.shape[0]
    for p in prange(x.shape[0]):
        xp = x[p]
        for oh in range(OH):
            for ow in range(OW):
                acc = 0.0
                for h in range(hs[oh], he[oh]):
                    row = h * W
                    for w in range(ws[ow], we[ow]):
                        acc += xp[row + w]
                out[p, oh * OW + ow] = acc / div[oh, ow]


@njit(parallel=True, cache=True)
def _avg_bwd(g, W, hs, he, ws, we, div, gx):
    OH, OW = hs.shape[0], ws.shape[0]
    for p in prange(g.shape[0]):
        gp = gx[p]
        gp[:] = 0
        for oh in range(OH):
            for ow in range(OW):
                v = g[p, oh * OW + ow] / div[oh, ow]
                for h in range(hs[oh], he[oh]):
                    row = h * W
                    for w in range(ws[ow], we[ow]):
                        gp[row + w] += v


@njit(parallel=True, cache=True)
def _resample_fwd(x, W, h0, h1, lh, w0, w1, lw, nearest, out):
    OH, OW = h0.shape[0], w0.shape[0]
    one = lh.dtype.type(1)
    for p in prange(x.shape[0]):
        xp = x[p]
        for oh in range(OH):
            a, b = h0[oh] * W, h1[oh] * W
            for ow in range(OW):
                if nearest:     # no arithmetic: inf/NaN pass unchanged
                    out[p, oh * OW + ow] = xp[a + w0[ow]]
                else:
                    l1 = lw[ow]
                    l0 = one - l1
                    top = l0 * xp[a + w0[ow]] + l1 * xp[a + w1[ow]]
                    bot = l0 * xp[b + w0[ow]] + l1 * xp[b + w1[ow]]
                    out[p, oh * OW + ow] = (one - lh[oh]) * top + lh[oh] * bot


@njit(parallel=True, cache=True)
def _resample_bwd(g, W, h0, h1, lh, w0, w1, lw, nearest, gx):
    OH, OW = h0.shape[0], w0.shape[0]
    one = lh.dtype.type(1)
    for p in prange(g.shape[0]):
        gp = gx[p]
        gp[:] = 0
        for oh in range(OH):
            a, b = h0[oh] * W, h1[oh] * W
            for ow in range(OW):
                v = g[p, oh * OW + ow]
                if nearest:
                    gp[a + w0[ow]] += v
                else:
                    l1 = lw[ow]
                    l0 = one - l1
                    t = (one - lh[oh]) * v
                    u = lh[oh] * v
                    gp[a + w0[ow]] += l0 * t
                    gp[a + w1[ow]] += l1 * t
                    gp[b + w0[ow]] += l0 * u
                    gp[b + w1[ow]] += l1 * u


def _out(n, c, oh, ow, dtype):
    return _pool.empty((n * c, oh * ow), dtype)


def max_pool2d(x, rows, cols, want_indices):
    """Max over each window: (values, int64 flat indices into H*W or None)."""
    n, c, H, W = x.shape
    (hs, he, dh), (ws, we, dw) = rows, cols
    oh, ow = len(hs), len(ws)
    shape = (n, c, oh, ow)
    out = _out(n, c, oh, ow, x.dtype)
    if not want_indices and x.dtype.kind == "f" and _is_2x2(rows, cols):
        _max2(_planes(x), W, oh, ow, out, out, out, False, nthreads())
        return out.reshape(shape), None
    if not want_indices:
        _max_values(_planes(x), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), out, nthreads())
        return out.reshape(shape), None
    idx = _out(n, c, oh, ow, np.int64)
    _max_with_indices(_planes(x), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), out, idx,
                      nthreads())
    return out.reshape(shape), idx.reshape(shape)


def max_pool2d_backward(x, g, rows, cols):
    """The gradient of ``max_pool2d``: ``g`` added at each window's maximum (PyTorch's pick)."""
    n, c, H, W = x.shape
    (hs, he, dh), (ws, we, dw) = rows, cols
    gx = _pool.empty((n * c, H * W), g.dtype)
    if x.dtype.kind == "f" and x.dtype == g.dtype and _is_2x2(rows, cols):
        gp = _planes(g)
        _max2(_planes(x), W, len(hs), len(ws), gp, gx, gp, True, nthreads())
        return gx.reshape(x.shape)
    _max_bwd(_planes(x), _planes(g), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), gx,
             nthreads())
    return gx.reshape(x.shape)


def avg_pool2d(x, rows, cols, divisors):
    """Sum over each (step-1) window divided by ``divisors[oh, ow]`` (float64)."""
    n, c, H, W = x.shape
    (hs, he, _), (ws, we, _) = rows, cols
    out = _out(n, c, len(hs), len(ws), x.dtype)
    _avg_fwd(_planes(x), W, hs, he, ws, we, divisors, out)
    return out.reshape(n, c, len(hs), len(ws))


def avg_pool2d_backward(g, rows, cols, divisors, in_hw):
    """The gradient of ``avg_pool2d`` for an input of spatial size ``in_hw``."""
    n, c = g.shape[:2]
    H, W = in_hw
    (hs, he, _), (ws, we, _) = rows, cols
    gx = _pool.empty((n * c, H * W), g.dtype)
    _avg_bwd(_planes(g), W, hs, he, ws, we, divisors, gx)
    return gx.reshape(n, c, H, W)


def resample2d(x, rows, cols, nearest):
    """Two-tap separable resampling (``rows``/``cols``: (i0, i1, lam) tap tables)."""
    n, c, H, W = x.shape
    (h0, h1, lh), (w0, w1, lw) = rows, cols
    out = _out(n, c, len(h0), len(w0), x.dtype)
    _resample_fwd(_planes(x), W, h0, h1, lh, w0, w1, lw, nearest, out)
    return out.reshape(n, c, len(h0), len(w0))


def resample2d_backward(g, rows, cols, nearest, in_hw):
    """The gradient of ``resample2d`` for an input of spatial size ``in_hw``."""
    n, c = g.shape[:2]
    H, W = in_hw
    (h0, h1, lh), (w0, w1, lw) = rows, cols
    gx = _pool.empty((n * c, H * W), g.dtype)
    _resample_bwd(_planes(g), W, h0, h1, lh, w0, w1, lw, nearest, gx)
    return gx.reshape(n, c, H, W)
