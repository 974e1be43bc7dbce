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
Average sums in float64.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from jit_kernels.cpu import _pool


def _planes(x):
    """``x`` (N, C, H, W) as a C-contiguous (N*C, H*W) array."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x).reshape(n * c, h * w)


def _lowest(dtype):
    """The start value of a running maximum: -inf, or the integer minimum."""
    dt = np.dtype(dtype)
    return dt.type(-np.inf) if dt.kind == "f" else np.iinfo(dt).min


@njit(parallel=True, cache=True)
def _max_fwd(x, W, hs, he, dh, ws, we, dw, lowest, out, idx, want_idx):
    OH, OW = hs.shape[0], ws.shape[0]
    for p in prange(x.shape[0]):
        xp = x[p]
        for oh in range(OH):
            for ow in range(OW):
                best = lowest
                bi = hs[oh] * W + ws[ow]
                for h in range(hs[oh], he[oh], dh):
                    row = h * W
                    for w in range(ws[ow], we[ow], dw):
                        v = xp[row + w]
                        if v > best or v != v:
                            best = v
                            bi = row + w
                o = oh * OW + ow
                out[p, o] = best
                if want_idx:
                    idx[p, o] = bi


@njit(parallel=True, cache=True)
def _max_bwd(x, g, W, hs, he, dh, ws, we, dw, lowest, gx):
    OH, OW = hs.shape[0], ws.shape[0]
    for p in prange(x.shape[0]):
        xp = x[p]
        gp = gx[p]
        gp[:] = 0
        for oh in range(OH):
            for ow in range(OW):
                best = lowest
                bi = hs[oh] * W + ws[ow]
                for h in range(hs[oh], he[oh], dh):
                    row = h * W
                    for w in range(ws[ow], we[ow], dw):
                        v = xp[row + w]
                        if v > best or v != v:
                            best = v
                            bi = row + w
                gp[bi] += g[p, oh * OW + ow]


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
    out = _out(n, c, oh, ow, x.dtype)
    idx = _out(n, c, oh, ow, np.int64) if want_indices else np.empty((0, 0), np.int64)
    _max_fwd(_planes(x), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), out, idx, want_indices)
    shape = (n, c, oh, ow)
    return out.reshape(shape), (idx.reshape(shape) if want_indices else None)


def max_pool2d_backward(x, g, rows, cols):
    """The gradient of ``max_pool2d``: ``g`` added at each window's (first) maximum."""
    n, c, H, W = x.shape
    (hs, he, dh), (ws, we, dw) = rows, cols
    gx = _pool.empty((n * c, H * W), g.dtype)
    _max_bwd(_planes(x), _planes(g), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), gx)
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
