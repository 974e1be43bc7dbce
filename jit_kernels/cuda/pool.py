"""2-D pooling and resampling for the cuda set (the cpu set's ``pool`` module, same tables).

Forward kernels run one thread per output element (grid-stride).  Backward kernels run one
thread per *output-gradient* element and add into the input gradient with
``cuda.atomic.add``: overlapping windows (stride < kernel) then accumulate in no fixed
order, so float results may differ in the last bits from run to run (the cpu set is serial
per plane and deterministic).  Window and tap tables arrive as host arrays and are copied to
the device per call (a few hundred bytes).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch, use
from jit_kernels.cuda.memory import fill
from jit_kernels.cuda.shape import contiguous


def _dev(a, index):
    use(index)
    return cuda.to_device(np.ascontiguousarray(a))


def _lowest(dtype):
    dt = np.dtype(dtype)
    return dt.type(-np.inf) if dt.kind == "f" else np.iinfo(dt).min


@cuda.jit(device=True)
def _argmax(x, xo, plane, W, hs, he, dh, ws, we, dw, oh, ow, lowest):
    best = lowest
    bi = hs[oh] * W + ws[ow]
    for h in range(hs[oh], he[oh], dh):
        for w in range(ws[ow], we[ow], dw):
            v = x[xo + plane + h * W + w]
            if v > best or v != v:
                best = v
                bi = h * W + w
    return best, bi


@cuda.jit(cache=True)
def _max_fwd(x, xo, HW, W, hs, he, dh, ws, we, dw, lowest, out, idx, want_idx, total):
    OH, OW = hs.shape[0], ws.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        p = t // (OW * OH)
        best, bi = _argmax(x, xo, p * HW, W, hs, he, dh, ws, we, dw, oh, ow, lowest)
        out[t] = best
        if want_idx:
            idx[t] = bi
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _max_bwd(x, xo, g, go, HW, W, hs, he, dh, ws, we, dw, lowest, gx, total):
    OH, OW = hs.shape[0], ws.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        p = t // (OW * OH)
        best, bi = _argmax(x, xo, p * HW, W, hs, he, dh, ws, we, dw, oh, ow, lowest)
        cuda.atomic.add(gx, p * HW + bi, g[go + t])
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _avg_fwd(x, xo, HW, W, hs, he, ws, we, div, out, total):
    OH, OW = hs.shape[0], ws.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        base = xo + (t // (OW * OH)) * HW
        acc = 0.0
        for h in range(hs[oh], he[oh]):
            for w in range(ws[ow], we[ow]):
                acc += x[base + h * W + w]
        out[t] = acc / div[oh, ow]
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _avg_bwd(g, go, HW, W, hs, he, ws, we, div, gx, total):
    OH, OW = hs.shape[0], ws.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        base = (t // (OW * OH)) * HW
        v = g[go + t] / div[oh, ow]
        for h in range(hs[oh], he[oh]):
            for w in range(ws[ow], we[ow]):
                cuda.atomic.add(gx, base + h * W + w, v)
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _resample_fwd(x, xo, HW, W, h0, h1, lh, w0, w1, lw, nearest, out, total):
    OH, OW = h0.shape[0], w0.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        base = xo + (t // (OW * OH)) * HW
        a, b = base + h0[oh] * W, base + h1[oh] * W
        if nearest:
            out[t] = x[a + w0[ow]]
        else:
            l1 = lw[ow]
            l0 = 1 - l1
            top = l0 * x[a + w0[ow]] + l1 * x[a + w1[ow]]
            bot = l0 * x[b + w0[ow]] + l1 * x[b + w1[ow]]
            out[t] = (1 - lh[oh]) * top + lh[oh] * bot
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _resample_bwd(g, go, HW, W, h0, h1, lh, w0, w1, lw, nearest, gx, total):
    OH, OW = h0.shape[0], w0.shape[0]
    t = cuda.grid(1)
    while t < total:
        ow = t % OW
        oh = (t // OW) % OH
        base = (t // (OW * OH)) * HW
        a, b = base + h0[oh] * W, base + h1[oh] * W
        v = g[go + t]
        if nearest:
            cuda.atomic.add(gx, a + w0[ow], v)
        else:
            l1 = lw[ow]
            l0 = 1 - l1
            tv = (1 - lh[oh]) * v
            u = lh[oh] * v
            cuda.atomic.add(gx, a + w0[ow], l0 * tv)
            cuda.atomic.add(gx, a + w1[ow], l1 * tv)
            cuda.atomic.add(gx, b + w0[ow], l0 * u)
            cuda.atomic.add(gx, b + w1[ow], l1 * u)
        t += cuda.gridsize(1)


def _tables(tables, index):
    return [_dev(a, index) if isinstance(a, np.ndarray) else int(a) for a in tables]


def _run(kern, total, index, *args):
    if total:
        launch(kern, blocks_for(total, index), TPB, *args, total)


def max_pool2d(x, rows, cols, want_indices):
    """Max over each window: (values, int64 flat indices into H*W or None)."""
    n, c, H, W = x.shape
    shape = (n, c, len(rows[0]), len(cols[0]))
    xc = contiguous(x)
    out = alloc(shape, x.dtype, x.index)
    idx = alloc(shape if want_indices else (1,), np.int64, x.index)
    _run(_max_fwd, out.size, x.index, xc.buf, xc.offset, H * W, W, *_tables(rows, x.index),
         *_tables(cols, x.index), _lowest(x.dtype), out.buf, idx.buf, bool(want_indices))
    return out, (idx if want_indices else None)


def max_pool2d_backward(x, g, rows, cols):
    """The gradient of ``max_pool2d``: ``g`` added at each window's (first) maximum."""
    n, c, H, W = x.shape
    xc, gc = contiguous(x), contiguous(g)
    gx = fill(alloc(x.shape, g.dtype, x.index), 0)
    _run(_max_bwd, gc.size, x.index, xc.buf, xc.offset, gc.buf, gc.offset, H * W, W,
         *_tables(rows, x.index), *_tables(cols, x.index), _lowest(x.dtype), gx.buf)
    return gx


def avg_pool2d(x, rows, cols, divisors):
    """Sum over each (step-1) window divided by ``divisors[oh, ow]`` (float64)."""
    n, c, H, W = x.shape
    xc = contiguous(x)
    out = alloc((n, c, len(rows[0]), len(cols[0])), x.dtype, x.index)
    _run(_avg_fwd, out.size, x.index, xc.buf, xc.offset, H * W, W, *_tables(rows[:2], x.index),
         *_tables(cols[:2], x.index), _dev(divisors, x.index), out.buf)
    return out


def avg_pool2d_backward(g, rows, cols, divisors, in_hw):
    """The gradient of ``avg_pool2d`` for an input of spatial size ``in_hw``."""
    H, W = in_hw
    gc = contiguous(g)
    gx = fill(alloc(g.shape[:2] + (H, W), g.dtype, g.index), 0)
    _run(_avg_bwd, gc.size, g.index, gc.buf, gc.offset, H * W, W, *_tables(rows[:2], g.index),
         *_tables(cols[:2], g.index), _dev(divisors, g.index), gx.buf)
    return gx


def resample2d(x, rows, cols, nearest):
    """Two-tap separable resampling (``rows``/``cols``: (i0, i1, lam) tap tables)."""
    n, c, H, W = x.shape
    xc = contiguous(x)
    out = alloc((n, c, len(rows[0]), len(cols[0])), x.dtype, x.index)
    _run(_resample_fwd, out.size, x.index, xc.buf, xc.offset, H * W, W, *_tables(rows, x.index),
         *_tables(cols, x.index), bool(nearest), out.buf)
    return out


def resample2d_backward(g, rows, cols, nearest, in_hw):
    """The gradient of ``resample2d`` for an input of spatial size ``in_hw``."""
    H, W = in_hw
    gc = contiguous(g)
    gx = fill(alloc(g.shape[:2] + (H, W), g.dtype, g.index), 0)
    _run(_resample_bwd, gc.size, g.index, gc.buf, gc.offset, H * W, W, *_tables(rows, g.index),
         *_tables(cols, g.index), bool(nearest), gx.buf)
    return gx
