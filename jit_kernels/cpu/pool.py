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
index tensor.  Average sums in float64.  The common 2x2/stride-2 max pool over even planes has
kernels of its own (``_max2_fwd``/``_max2_bwd``, prange over blocks of row pairs, two
vectorised passes; the backward writes every gradient position once, no zeroing and scatter).
Each of those two is a serial task body called from a ``prange`` loop; a serial twin runs the
same tasks in order (the same bits) while the ``prange`` variant builds in the background
(``_background.parallel_ready``).
"""
from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from jit_kernels.cpu import _pool, scalar_math as sm
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import helper, njit
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


# 2x2 windows at stride 2 tiling the plane (H, W even; no padding, no dilation: the common
# pool).  Then the planes are one run of row pairs (N*C*H/2 of them, each 2*W contiguous
# values), and each kernel is two passes over a block of row pairs: a flat pass over the
# horizontal tap pairs (a stride-2 deinterleave, vectorised), then the vertical pairs.  The
# first pass of the per-window scan that picks PyTorch's argmax (row-major first maximum, a NaN
# replaces the running maximum) is the pair (left, right); its result against the next row's
# pair is the same rule again (the pick is associative), so the two passes give the scan's
# answer.  Branch-free selects throughout: which tap wins is data-dependent.
_BLOCK = 4096          # horizontal pairs per block (the scratch of a prange task)


@njit(inline="always")
def _take(m, v):
    """Whether the scan's running maximum ``m`` gives way to the next tap ``v``."""
    return (v > m) | (v != v)


# The vertical passes below take the plane's output width K as an argument of an inlined helper
# so that each kernel passes a literal for the narrow widths of small images (1, 2, 4): LLVM then
# unrolls the loop over a row pair's K windows and vectorises the loop over row pairs as
# interleaved loads and stores, where a loop of a run-time 2 or 4 iterations runs scalar (the
# backward at K = 4 is slower with the literal, so there it keeps the run-time loop).
@njit(inline="always")
def _max2_rows(h, o, nr, K, relu, zero):
    """``o[K*r + q] = max(h[2K*r + q], h[2K*r + K + q])`` (relu'd when ``relu``), r < nr."""
    for r in range(nr):
        t = 2 * K * r
        for q in range(K):
            m = _mx(h[t + q], h[t + K + q])
            o[K * r + q] = zero if relu and m < zero else m


@njit(inline="always")
def _max2_rows_bwd(hm, hk, gs, gxs, nr, K, zero):
    """The backward's vertical pass: does the bottom pair win?  Writes all 4 taps."""
    for r in range(nr):
        for q in range(K):
            t = 2 * K * r + q
            u = t + K
            v = gs[K * r + q]
            bottom = _take(hm[t], hm[u])
            vt = zero if bottom else v
            vb = v if bottom else zero
            gxs[2 * t] = zero if hk[t] else vt
            gxs[2 * t + 1] = vt if hk[t] else zero
            gxs[2 * u] = zero if hk[u] else vb
            gxs[2 * u + 1] = vb if hk[u] else zero


@njit(inline="always")
def _max2_grid(R, OW, nt):
    """(row pairs per block, blocks, tasks) of the 2x2 kernels over R row pairs."""
    blk = max(1, _BLOCK // (2 * OW))
    nb = (R + blk - 1) // blk
    return blk, nb, max(1, min(nb, 4 * nt))


@helper
def _max2_fwd_task(x, OW, out, relu, zero, R, blk, nb, nch, ci):
    """Task ``ci`` of ``nch`` of the 2x2 max pool: its blocks of ``blk`` row pairs."""
    h = np.empty(2 * OW * blk, x.dtype)
    for b in range(ci * nb // nch, (ci + 1) * nb // nch):
        r0 = b * blk
        r1 = min(R, r0 + blk)
        n = 2 * OW * (r1 - r0)
        xs = x[4 * OW * r0:4 * OW * r1]
        for k in range(n):
            h[k] = _mx(xs[2 * k], xs[2 * k + 1])
        o = out[OW * r0:OW * r1]
        if OW == 2:         # a constant width: the loop over r vectorises (see above)
            _max2_rows(h, o, r1 - r0, 2, relu, zero)
        elif OW == 4:
            _max2_rows(h, o, r1 - r0, 4, relu, zero)
        elif OW == 1:
            _max2_rows(h, o, r1 - r0, 1, relu, zero)
        else:
            _max2_rows(h, o, r1 - r0, OW, relu, zero)


@njit(parallel=True, cache=True)
def _max2_fwd(x, OW, out, nt, relu, zero):
    # ``relu``: each maximum m stored as relu's kernel has it (``zero if m < zero else m``)
    R = out.shape[0] // OW                   # row pairs
    blk, nb, nch = _max2_grid(R, OW, nt)
    for ci in prange(nch):      # (an int64 index, as the twin's: one compiled body)
        _max2_fwd_task(x, OW, out, relu, zero, R, blk, nb, nch, np.int64(ci))


@njit(cache=True)
def _max2_fwd_serial(x, OW, out, nt, relu, zero):
    """``_max2_fwd``'s tasks one after another (the same bits; it serves while ``_max2_fwd``
    builds in the background)."""
    R = out.shape[0] // OW
    blk, nb, nch = _max2_grid(R, OW, nt)
    for ci in range(nch):
        _max2_fwd_task(x, OW, out, relu, zero, R, blk, nb, nch, ci)


@helper
def _max2_bwd_task(x, g, OW, gx, R, blk, nb, nch, ci):
    """Task ``ci`` of ``nch`` of the 2x2 max pool's backward: its blocks of row pairs."""
    zero = gx.dtype.type(0)
    hm = np.empty(2 * OW * blk, x.dtype)
    hk = np.empty(2 * OW * blk, np.bool_)
    for b in range(ci * nb // nch, (ci + 1) * nb // nch):
        r0 = b * blk
        r1 = min(R, r0 + blk)
        n = 2 * OW * (r1 - r0)
        xs = x[4 * OW * r0:4 * OW * r1]
        for k in range(n):            # horizontal pairs: the right tap wins?
            a, c = xs[2 * k], xs[2 * k + 1]
            right = _take(a, c)
            hm[k] = c if right else a
            hk[k] = right
        gs = g[OW * r0:OW * r1]
        gxs = gx[4 * OW * r0:4 * OW * r1]
        if OW == 2:         # (a constant width 4 measured slower than the loop below)
            _max2_rows_bwd(hm, hk, gs, gxs, r1 - r0, 2, zero)
        elif OW == 1:
            _max2_rows_bwd(hm, hk, gs, gxs, r1 - r0, 1, zero)
        else:
            _max2_rows_bwd(hm, hk, gs, gxs, r1 - r0, OW, zero)


@njit(parallel=True, cache=True)
def _max2_bwd(x, g, OW, gx, nt):
    R = g.shape[0] // OW
    blk, nb, nch = _max2_grid(R, OW, nt)
    for ci in prange(nch):
        _max2_bwd_task(x, g, OW, gx, R, blk, nb, nch, np.int64(ci))


@njit(cache=True)
def _max2_bwd_serial(x, g, OW, gx, nt):
    """``_max2_bwd``'s tasks one after another (the same bits; see ``_max2_fwd_serial``)."""
    R = g.shape[0] // OW
    blk, nb, nch = _max2_grid(R, OW, nt)
    for ci in range(nch):
        _max2_bwd_task(x, g, OW, gx, R, blk, nb, nch, ci)


_TWO_BY_TWO: dict = {}


def _is_2x2(rows, cols, H, W):
    """Whether both window tables are 2-wide windows at stride 2, unclipped, undilated, tiling
    an even H x W plane.  The tables are the front end's cached arrays, so the answer is cached
    by their identity (the entry keeps them alive, so an id is never reused while cached)."""
    key = (id(rows[0]), id(cols[0]), H, W)
    hit = _TWO_BY_TWO.get(key)
    if hit is not None and hit[0] is rows[0] and hit[1] is cols[0]:
        return hit[2]
    ok = H % 2 == 0 and W % 2 == 0 and len(rows[0]) == H // 2 and len(cols[0]) == W // 2
    for st, sp, step in (rows, cols):
        ok = ok and step == 1 and np.array_equal(st, 2 * np.arange(len(st))) \
            and np.array_equal(sp, st + 2)
    if len(_TWO_BY_TWO) > 256:
        _TWO_BY_TWO.clear()
    _TWO_BY_TWO[key] = (rows[0], cols[0], bool(ok))
    return bool(ok)


def _max2(par, serial, args):
    """Run a 2x2 kernel: its ``prange`` variant, or while that builds in the background its
    serial twin (the same tasks in order: the same bits)."""
    (par if parallel_ready(par, args) else serial)(*args)


def _flat(x):
    """``x`` as a C-contiguous 1-D array (a view when it is contiguous)."""
    return np.ascontiguousarray(x).reshape(-1)


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
    if not want_indices and x.dtype.kind == "f" and _is_2x2(rows, cols, H, W):
        _max2(_max2_fwd, _max2_fwd_serial,
              (_flat(x), ow, out.reshape(-1), nthreads(), False, x.dtype.type(0)))
        return out.reshape(shape), None
    if not want_indices:
        _max_values(_planes(x), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), out, nthreads())
        return out.reshape(shape), None
    idx = _out(n, c, oh, ow, np.int64)
    _max_with_indices(_planes(x), W, hs, he, dh, ws, we, dw, _lowest(x.dtype), out, idx,
                      nthreads())
    return out.reshape(shape), idx.reshape(shape)


def max_pool2d_relu(x, rows, cols):
    """``relu(max_pool2d(x))`` in the 2x2 pool's pass (relu on each maximum as it is stored),
    or None where that pass does not apply (the caller runs the pool, then relu)."""
    n, c, H, W = x.shape
    if x.dtype.kind != "f" or not _is_2x2(rows, cols, H, W):
        return None
    ow = len(cols[0])
    out = _out(n, c, len(rows[0]), ow, x.dtype)
    _max2(_max2_fwd, _max2_fwd_serial,
          (_flat(x), ow, out.reshape(-1), nthreads(), True, x.dtype.type(0)))
    return out.reshape(n, c, len(rows[0]), ow)


def max_pool2d_backward(x, g, rows, cols):
    """The gradient of ``max_pool2d``: ``g`` added at each window's maximum (PyTorch's pick)."""
    n, c, H, W = x.shape
    (hs, he, dh), (ws, we, dw) = rows, cols
    gx = _pool.empty((n * c, H * W), g.dtype)
    if x.dtype.kind == "f" and x.dtype == g.dtype and _is_2x2(rows, cols, H, W):
        _max2(_max2_bwd, _max2_bwd_serial,
              (_flat(x), _flat(g), len(ws), gx.reshape(-1), nthreads()))
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
