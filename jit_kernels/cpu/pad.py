"""``pad`` (reflect / replicate / circular) in one pass, and its gradient in one pass.

The protocol: ``pad(x, maps, lead)`` and ``pad_backward(g, maps, lead, in_shape)``.  ``x`` is
viewed as ``(L, *inner)`` with ``L`` the product of its first ``lead`` (unpadded) dimensions;
``maps`` holds one int64 host array per inner dimension, of the output's length on that
dimension, giving the input index each output index reads (the mode lives in the maps: the
runtime builds them, so one kernel serves every mode).  The output is ``(L, *out_inner)``
reshaped to the full output shape.

Forward: the output is a list of rows (its last dimension; trailing unpadded dimensions are
merged into one row first).  A host table, built once per maps object, holds the index of the
input row each output row of one leading slice reads; one parallel loop over tasks of up to
``ROWS_PER_TASK`` rows of one slice then copies each row: the edges as scalars through the last
map, the middle as one contiguous run (which vectorises).  A slice's input and output offsets
are plain multiples of the slice index: tasks per output plane finding their input plane
through the maps (or a table of plane offsets) would do the same copies more slowly.
Backward: the adjoint, a scatter-add of each
output row into the input row it read; it runs in parallel over the ``L`` leading slices (no
two write the same element), each slice in output order, so the sums are deterministic.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, uint64

from jit_kernels.cpu import _pool
from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import PAR_THRESHOLD


#: output rows per forward task (a task never spans two leading slices)
ROWS_PER_TASK = 64


@njit(cache=True, error_model="numpy")
def _plane_src(q, ishape, oshape, maps, moff):
    """Element offset, inside one leading slice, of the input plane (all but the last two inner
    dimensions fixed) output plane ``q`` reads (the backward's walk)."""
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
def _task(src, out, t, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n):
    """Output rows ``[r0, r1)`` of leading slice ``t // nchunks``: the edges through the last
    map (``edges``) first, then the middle as one contiguous run."""
    l = t // nchunks
    r0 = (t - l * nchunks) * ROWS_PER_TASK
    r1 = min(r0 + ROWS_PER_TASK, rows)
    # flat unsigned offsets, no slices: a slice per row cost ~40% of the copy on 56-wide rows,
    # and signed indices get a negative-index test in the copy loop
    nu = uint64(n)
    hi = W - lo - n
    # the first edge of each side read once per task: LLVM cannot hoist a load of ``edges``
    # past the stores into ``out`` (it cannot prove they do not alias)
    el = uint64(edges[0]) if lo > 0 else uint64(0)
    er = uint64(edges[lo + n]) if hi > 0 else uint64(0)
    sb = uint64(l * in_blk)
    ob = uint64(l * out_blk)
    for r in range(r0, r1):
        # the row index times the row length here: a table of premultiplied offsets is slower
        # (the same copies: the difference is LLVM's code)
        s = sb + uint64(rowidx[r]) * nu
        o = ob + uint64(r * W)
        om = o + uint64(lo)
        if lo > 0:
            out[o] = src[s + el]
            for w in range(1, lo):
                out[o + uint64(w)] = src[s + uint64(edges[w])]
        if hi > 0:
            out[om + nu] = src[s + er]
            for w in range(lo + n + 1, W):
                out[o + uint64(w)] = src[s + uint64(edges[w])]
        for w in range(nu):
            out[om + w] = src[s + w]


@njit(cache=True, error_model="numpy")
def _pad_serial(src, out, tasks, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n):
    for t in range(tasks):
        _task(src, out, t, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n)


@njit(cache=True, parallel=True, error_model="numpy")
def _pad_par(src, out, tasks, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n):
    for t in prange(tasks):
        _task(src, out, t, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n)


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


_TABLES: dict = {}      # id(maps) -> (maps, in_inner, entry): the runtime passes cached maps


def _tables(maps, in_inner):
    """(backward tables, forward plan) for ``maps`` on inner input shape ``in_inner``: built
    once per maps object (``_tables_of``, ``_forward_of``)."""
    hit = _TABLES.get(id(maps))
    if hit is not None and hit[0] is maps and hit[1] == in_inner:
        return hit[2]
    entry = (_tables_of(maps, in_inner), _forward_of(maps, in_inner))
    if len(_TABLES) >= 64:
        _TABLES.clear()
    _TABLES[id(maps)] = (maps, tuple(in_inner), entry)
    return entry


def _run_of(last, n):
    """(lo, n): outputs ``lo .. lo+n-1`` of the last map read inputs ``0 .. n-1`` (a contiguous
    copy), or ``(len(last), 0)`` when no run does (then every output goes through the map)."""
    run = np.arange(n)
    for c in np.flatnonzero(last == 0) if n else ():
        if c + n <= len(last) and np.array_equal(last[c:c + n], run):
            return int(c), n
    return len(last), 0


def _tables_of(maps, in_inner):
    ishape = np.asarray(in_inner, dtype=np.int64)
    oshape = np.asarray([len(m) for m in maps], dtype=np.int64)
    moff = np.zeros(len(maps), dtype=np.int64)
    if len(maps) > 1:
        moff[1:] = np.cumsum(oshape[:-1])
    flat = np.concatenate([np.asarray(m, dtype=np.int64) for m in maps])
    lo, n = _run_of(np.asarray(maps[-1]), int(ishape[-1]))
    return ishape, oshape, flat, moff, lo, n


def _identity(m, n):
    return len(m) == n and np.array_equal(m, np.arange(n))


def _forward_of(maps, in_inner):
    """The forward's plan: (rows, W, nchunks, in_blk, out_blk, rowidx, edges, lo, n,
    out_inner).
    ``rowidx[r]`` is the index, inside one leading slice of the input viewed as rows of ``n``,
    of the input row output row ``r`` of that slice reads; ``edges`` is the last map and
    ``lo .. lo+n-1`` its contiguous run (every map the runtime builds for a non-empty output
    has one: the unpadded middle)."""
    ms = [np.asarray(m, dtype=np.int64) for m in maps]
    dims = [int(d) for d in in_inner]
    # trailing unpadded dimensions merge into one row: a pad of dimension -3 alone then copies
    # whole input planes as rows
    while len(ms) >= 2 and _identity(ms[-1], dims[-1]) and _identity(ms[-2], dims[-2]):
        k = dims[-2] * dims[-1]
        ms[-2:] = [np.arange(k, dtype=np.int64)]
        dims[-2:] = [k]
    rowidx = np.zeros(1, dtype=np.int64)
    stride = 1
    for m, d in zip(reversed(ms[:-1]), reversed(dims[:-1])):
        rowidx = (m[:, None] * stride + rowidx[None, :]).reshape(-1)
        stride *= d
    rows, W = len(rowidx), len(ms[-1])
    lo, n = _run_of(ms[-1], dims[-1])
    if n != dims[-1]:
        raise ValueError(f"pad: the last index map (length {W}) has no contiguous run of "
                         f"the {dims[-1]} inputs")
    return (rows, W, -(-rows // ROWS_PER_TASK), math.prod(dims), rows * W, rowidx, ms[-1],
            lo, n, tuple(len(m) for m in maps))


def _lead_size(shape, lead):
    return math.prod(shape[:lead])


def _planes_per(oshape):
    return math.prod(int(d) for d in oshape[:-2]) if len(oshape) > 2 else 1


def pad(x, maps, lead):
    """See the module doc."""
    rows, W, nchunks, in_blk, out_blk, rowidx, edges, lo, n, out_inner = \
        _tables(maps, x.shape[lead:])[1]
    out = _pool.empty(x.shape[:lead] + out_inner, x.dtype)
    if out.size == 0:
        return out
    src = np.ascontiguousarray(x).reshape(-1)
    ob = out.reshape(-1)
    if x.dtype == np.bool_:
        src, ob = src.view(np.uint8), ob.view(np.uint8)
    tasks = math.prod(x.shape[:lead]) * nchunks
    kern = _pad_par if out.size >= PAR_THRESHOLD and tasks > 1 else _pad_serial
    kern(src, ob, tasks, nchunks, rows, W, in_blk, out_blk, rowidx, edges, lo, n)
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
    ishape, oshape, flat, moff, lo, n = _tables(maps, in_inner_t)[0]
    L = _lead_size(in_shape, lead)
    in_blk = math.prod(in_inner_t)
    gb = np.ascontiguousarray(g).reshape(-1)
    kern = _back_par if g.size >= PAR_THRESHOLD and L > 1 else _back_serial
    kern(gb, gx.reshape(-1), L, _planes_per(oshape), in_blk, ishape, oshape, flat, moff, lo, n)
    return gx
