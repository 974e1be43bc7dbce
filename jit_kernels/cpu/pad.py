"""``pad`` (reflect / replicate / circular) in one pass, and its gradient in one pass.

The protocol: ``pad(x, maps, lead)`` and ``pad_backward(g, maps, lead, in_shape)``.  ``x`` is
viewed as ``(L, *inner)`` with ``L`` the product of its first ``lead`` (unpadded) dimensions;
``maps`` holds one int64 host array per inner dimension, of the output's length on that
dimension, giving the input index each output index reads (the mode lives in the maps: the
runtime builds them, so one kernel serves every mode).  The output is ``(L, *out_inner)``
reshaped to the full output shape.

Forward: one parallel loop over tasks of up to ``ROWS_PER_TASK`` output rows of one output plane
(the last dimension is a row, the last two a plane); a task finds its input plane from the maps
of the outer dimensions once, then each row its input row through the second-last map, and
copies the middle as a contiguous run (which vectorises) and the edges through the last map.
Backward: the adjoint, a scatter-add of each
output row into the input row it read; it runs in parallel over the ``L`` leading slices (no
two write the same element), each slice in output order, so the sums are deterministic.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, uint64

from jit_kernels.cpu import _pool
from jit_kernels.cpu._layout import PAR_THRESHOLD


#: output rows per forward task: a task finds its input plane once, then walks its rows
ROWS_PER_TASK = 64


@njit(cache=True, error_model="numpy")
def _plane_src(q, ishape, oshape, maps, moff):
    """Element offset, inside one leading slice, of the input plane (all but the last two inner
    dimensions fixed) output plane ``q`` reads."""
    nd = ishape.shape[0]
    rem = q
    soff = 0
    stride = ishape[nd - 1] * (ishape[nd - 2] if nd > 1 else 1)
    for d in range(nd - 3, -1, -1):
        c = rem % oshape[d]
        rem //= oshape[d]
        soff += maps[moff[d] + c] * stride
        stride *= ishape[d]
    return soff


@njit(cache=True, error_model="numpy", inline="always")
def _task(src, out, t, nchunks, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    """Output rows ``[h0, h1)`` of one output plane: the edges through the last map, the middle
    as one contiguous run (which vectorises)."""
    nd = ishape.shape[0]
    W = oshape[nd - 1]
    H = oshape[nd - 2] if nd > 1 else 1
    last = moff[nd - 1]
    p = t // nchunks
    h0 = (t - p * nchunks) * ROWS_PER_TASK
    h1 = min(h0 + ROWS_PER_TASK, H)
    base = (p // planes_per) * in_blk + _plane_src(p % planes_per, ishape, oshape, maps, moff)
    for h in range(h0, h1):
        # flat unsigned offsets, no slices: a slice per row cost ~40% of the copy on 56-wide
        # rows, and signed indices get a negative-index test in the copy loop
        soff = uint64(base + (maps[moff[nd - 2] + h] * n if nd > 1 else 0))
        o = uint64((p * H + h) * W)
        for w in range(lo):
            out[o + uint64(w)] = src[soff + uint64(maps[last + w])]
        om = o + uint64(lo)
        for w in range(uint64(n)):
            out[om + w] = src[soff + w]
        for w in range(lo + n, W):
            out[o + uint64(w)] = src[soff + uint64(maps[last + w])]


@njit(cache=True, error_model="numpy")
def _pad_serial(src, out, tasks, nchunks, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    for t in range(tasks):
        _task(src, out, t, nchunks, planes_per, in_blk, ishape, oshape, maps, moff, lo, n)


@njit(cache=True, parallel=True, error_model="numpy")
def _pad_par(src, out, tasks, nchunks, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    for t in prange(tasks):
        _task(src, out, t, nchunks, planes_per, in_blk, ishape, oshape, maps, moff, lo, n)


@njit(cache=True, error_model="numpy")
def _back_slice(g, gx, l, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    nd = ishape.shape[0]
    W = oshape[nd - 1]
    H = oshape[nd - 2] if nd > 1 else 1
    last = moff[nd - 1]
    base = l * in_blk
    blk = gx[base:base + in_blk]
    for i in range(in_blk):
        blk[i] = 0
    for q in range(planes_per):
        pbase = _plane_src(q, ishape, oshape, maps, moff)
        for h in range(H):
            soff = pbase + (maps[moff[nd - 2] + h] * n if nd > 1 else 0)
            o = ((l * planes_per + q) * H + h) * W
            for w in range(lo):
                blk[soff + maps[last + w]] += g[o + w]
            mid = blk[soff:soff + n]
            s = g[o + lo:o + lo + n]
            for w in range(n):
                mid[w] += s[w]
            for w in range(lo + n, W):
                blk[soff + maps[last + w]] += g[o + w]


@njit(cache=True, error_model="numpy")
def _back_serial(g, gx, L, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    for l in range(L):
        _back_slice(g, gx, l, planes_per, in_blk, ishape, oshape, maps, moff, lo, n)


@njit(cache=True, parallel=True, error_model="numpy")
def _back_par(g, gx, L, planes_per, in_blk, ishape, oshape, maps, moff, lo, n):
    for l in prange(L):
        _back_slice(g, gx, l, planes_per, in_blk, ishape, oshape, maps, moff, lo, n)


_TABLES: dict = {}      # id(maps) -> (maps, in_inner, tables): the runtime passes cached maps


def _tables(maps, in_inner):
    hit = _TABLES.get(id(maps))
    if hit is not None and hit[0] is maps and hit[1] == in_inner:
        return hit[2]
    tables = _tables_of(maps, in_inner)
    if len(_TABLES) >= 64:
        _TABLES.clear()
    _TABLES[id(maps)] = (maps, tuple(in_inner), tables)
    return tables


def _tables_of(maps, in_inner):
    ishape = np.asarray(in_inner, dtype=np.int64)
    oshape = np.asarray([len(m) for m in maps], dtype=np.int64)
    moff = np.zeros(len(maps), dtype=np.int64)
    if len(maps) > 1:
        moff[1:] = np.cumsum(oshape[:-1])
    flat = np.concatenate([np.asarray(m, dtype=np.int64) for m in maps])
    last = np.asarray(maps[-1])
    n = int(ishape[-1])
    # the middle run: outputs lo .. lo+n-1 read inputs 0 .. n-1 (when they do: else no run)
    run = np.arange(n)
    for c in np.flatnonzero(last == 0) if n else ():
        if c + n <= len(last) and np.array_equal(last[c:c + n], run):
            return ishape, oshape, flat, moff, int(c), n
    return ishape, oshape, flat, moff, len(last), 0


def _lead_size(shape, lead):
    return math.prod(shape[:lead])


def _planes_per(oshape):
    return math.prod(int(d) for d in oshape[:-2]) if len(oshape) > 2 else 1


def pad(x, maps, lead):
    """See the module doc."""
    in_inner = x.shape[lead:]
    out_shape = x.shape[:lead] + tuple(len(m) for m in maps)
    out = _pool.empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    src = np.ascontiguousarray(x).reshape(-1)
    in_inner_t = tuple(in_inner)
    ishape, oshape, flat, moff, lo, n = _tables(maps, in_inner_t)
    H = int(oshape[-2]) if len(oshape) > 1 else 1
    nchunks = -(-H // ROWS_PER_TASK)
    planes_per = _planes_per(oshape)
    tasks = _lead_size(x.shape, lead) * planes_per * nchunks
    in_blk = math.prod(in_inner_t)
    ob = out.reshape(-1)
    if x.dtype == np.bool_:
        src, ob = src.view(np.uint8), ob.view(np.uint8)
    kern = _pad_par if out.size >= PAR_THRESHOLD and tasks > 1 else _pad_serial
    kern(src, ob, tasks, nchunks, planes_per, in_blk, ishape, oshape, flat, moff, lo, n)
    return out


def pad_backward(g, maps, lead, in_shape):
    """See the module doc."""
    in_shape = tuple(in_shape)
    gx = _pool.empty(in_shape, g.dtype)
    if gx.size == 0:
        return gx
    if g.size == 0:
        gx[...] = 0
        return gx
    in_inner_t = tuple(in_shape[lead:])
    ishape, oshape, flat, moff, lo, n = _tables(maps, in_inner_t)
    L = _lead_size(in_shape, lead)
    in_blk = math.prod(in_inner_t)
    gb = np.ascontiguousarray(g).reshape(-1)
    kern = _back_par if g.size >= PAR_THRESHOLD and L > 1 else _back_serial
    kern(gb, gx.reshape(-1), L, _planes_per(oshape), in_blk, ishape, oshape, flat, moff, lo, n)
    return gx
