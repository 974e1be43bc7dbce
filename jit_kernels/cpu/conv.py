"""im2col / col2im for the cpu set (the kernels of ``unfold``/``fold`` and of the convolutions).

``im2col(x, kernel, stride, padding, dilation, grid)``: ``x`` (N, C, H, W) to columns
(N, C*kh*kw, oh*ow); row ``(c*kh + i)*kw + j`` holds ``x[n, c, oy*sh - pt + i*dh, ox*sw - pl +
j*dw]`` (zero outside the image) at column ``oy*ow + ox``.  ``col2im`` is its adjoint: it sums
every column entry back into the (N, C, H, W) image it was read from.  ``im2col_batched`` /
``col2im_batched`` are the same with the samples side by side, (C*kh*kw, N*oh*ow): one gemm
operand for a whole batch (the convolutions without groups use them directly; ``im2col`` and
``col2im`` are them plus ``swap01``, so there are three kernels to compile, not five).

Stride-1 float32 weight gradients are dot products along the positions (``_wdot``): x's
planes shifted by each kernel column (``_shift_rows``) make every implicit column row a
contiguous stretch, like g's rows, so the generated ``conv_wdot`` multiplies them with no
packing (the gemm's k-major packing of position-contiguous operands is a transpose, which cost
more than the products on small images).

``_im2col_b`` runs one prange task per row (c, i, j) and ``_col2im_b`` one per (n, c) plane:
every col2im task writes its own plane only, so it needs no atomics and sums in a fixed order
(deterministic).  For each output row the in-image column range is computed once, so the inner
loop is a plain (vectorisable) copy or add, with no per-element bounds test; each task slices
its arrays once per (row, sample) and indexes inside with unsigned ints (signed indices get a
negative-index test that stops the copy vectorising; a slice per image row cost more than the
copy on 8x8 images).  ``swap01`` turns (A, B, L) into (B, A, L), plus a bias along A.  ``_im2col_b``, ``_swap01`` and
``_shift_masked`` call a serial per-row (per-plane) body from their ``prange`` loop; a serial
twin runs the same tasks in order (the same bits) while the ``prange`` variant builds in the
background (``_background.parallel_ready``).
Operands are made C-contiguous first (one specialisation per dtype); outputs come from the
caching allocator.
"""
from __future__ import annotations

import functools
import weakref

import numpy as np
from numba import prange, uint64

from jit_kernels.cpu import _matmul_gen, _pool
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import helper, njit


@njit(cache=True)
def _span(off, s, n_in, n_out):
    """[lo, hi): the outputs ``o`` with ``0 <= o*s + off < n_in``, clipped to [0, n_out)."""
    lo = 0 if off >= 0 else min(n_out, (s - 1 - off) // s)
    hi = 0 if n_in - 1 - off < 0 else min(n_out, (n_in - 1 - off) // s + 1)
    return lo, max(lo, hi)


@helper(error_model="numpy")
def _im2col_row(x, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, r):
    """Row ``r`` = (c, i, j) of ``_im2col_b``'s columns, for every sample."""
    L = oh * ow
    HW = H * W
    c = r // (kh * kw)
    ij = r - c * (kh * kw)
    i = ij // kw
    j = ij - i * kw
    xoff = j * dw - pl
    lo, hi = _span(xoff, sw, W, ow)
    ulo, uhi, uow = uint64(lo), uint64(hi), uint64(ow)
    for n in range(N):
        ob = (r * N + n) * L
        dst = out[ob:ob + L]
        xb = (n * C + c) * HW
        img = x[xb:xb + HW]
        for oy in range(oh):
            o = uint64(oy * ow)
            iy = oy * sh - pt + i * dh
            if iy < 0 or iy >= H:
                for ox in range(uow):
                    dst[o + ox] = 0
                continue
            for ox in range(ulo):
                dst[o + ox] = 0
            if sw == 1:
                src = uint64(iy * W + xoff + lo)
                d = o + ulo
                for k in range(uhi - ulo):
                    dst[d + k] = img[src + k]
            else:
                for ox in range(lo, hi):
                    dst[o + uint64(ox)] = img[uint64(iy * W + xoff + ox * sw)]
            for ox in range(uhi, uow):
                dst[o + ox] = 0


@njit(cache=True, parallel=True, error_model="numpy")
def _im2col_b(x, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow):
    """Batched columns into flat ``out`` (C*kh*kw, N*oh*ow) from flat ``x`` (N, C, H, W); one
    prange task per row (c, i, j).  Per (row, n) one slice of each array and unsigned indices
    inside it (signed ones get a negative-index test that stops the copy vectorising; a slice
    per image row costs more than the copy on small images)."""
    for r in prange(C * kh * kw):   # (an int64 index, as the twin's: one compiled body)
        _im2col_row(x, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, np.int64(r))


@njit(cache=True, error_model="numpy")
def _im2col_b_serial(x, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow):
    """``_im2col_b``'s rows one after another (the same bits; it serves while ``_im2col_b``
    builds in the background)."""
    for r in range(C * kh * kw):
        _im2col_row(x, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, r)


@njit(cache=True, parallel=True, error_model="numpy")
def _col2im_b(cols, out, N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow):
    """The adjoint of ``_im2col_b`` (flat arrays, the same indexing): one prange task per
    (n, c) plane of ``out``, which it zeroes and then sums into in a fixed order."""
    L = oh * ow
    HW = H * W
    for t in prange(N * C):
        n = t // C
        c = t - n * C
        plane = out[t * HW:(t + 1) * HW]
        for k in range(HW):
            plane[k] = 0
        for i in range(kh):
            for j in range(kw):
                cb = (((c * kh + i) * kw + j) * N + n) * L
                src = cols[cb:cb + L]
                xoff = j * dw - pl
                lo, hi = _span(xoff, sw, W, ow)
                if hi <= lo:
                    continue
                ulo, uhi = uint64(lo), uint64(hi)
                for oy in range(oh):
                    iy = oy * sh - pt + i * dh
                    if iy < 0 or iy >= H:
                        continue
                    o = uint64(oy * ow)
                    if sw == 1:
                        d = uint64(iy * W + xoff + lo)
                        e = o + ulo
                        for k in range(uhi - ulo):
                            plane[d + k] += src[e + k]
                    else:
                        for ox in range(lo, hi):
                            plane[uint64(iy * W + xoff + ox * sw)] += src[o + uint64(ox)]


@helper(error_model="numpy")
def _swap01_row(x, out, bias, has_bias, A, L, t):
    """Output row ``t`` = (b, a) of ``_swap01``."""
    b = t // A
    a = t - b * A
    src = x[a, b]
    dst = out[b, a]
    if has_bias:
        v = bias[a]
        for k in range(L):
            dst[k] = src[k] + v
    else:
        for k in range(L):
            dst[k] = src[k]


@njit(cache=True, parallel=True, error_model="numpy")
def _swap01(x, out, bias, has_bias):
    """``out[b, a, :] = x[a, b, :]`` (+ ``bias[a]``): one prange task per output (b, a) row, a
    contiguous copy of ``L`` elements."""
    A, B, L = x.shape
    for t in prange(B * A):
        _swap01_row(x, out, bias, has_bias, A, L, np.int64(t))


@njit(cache=True, error_model="numpy")
def _swap01_serial(x, out, bias, has_bias):
    """``_swap01``'s rows one after another (the same bits; see ``_im2col_b_serial``)."""
    A, B, L = x.shape
    for t in range(B * A):
        _swap01_row(x, out, bias, has_bias, A, L, np.int64(t))


@njit(cache=True, parallel=True, error_model="numpy")
def _shift_rows(x, out, N, C, H, W, kw, pt, pl, dw, hp, ow):
    """The row-shifted planes of flat ``x`` (N, C, H, W) into flat ``out`` (N, C*kw, hp, ow):
    ``out[n, c*kw + j, y, ox] = x[n, c, y - pt, ox + j*dw - pl]`` (zero outside the image), so
    that a stride-1 conv's implicit column row (c, i, j) of sample n is the contiguous stretch
    ``out[n, c*kw + j, i*dh:i*dh + oh].ravel()``.  One prange task per (n, c) plane."""
    HW = H * W
    P = hp * ow
    uow = uint64(ow)
    for t in prange(N * C):
        img = x[t * HW:(t + 1) * HW]
        for j in range(kw):
            ob = (t * kw + j) * P
            dst = out[ob:ob + P]
            xoff = j * dw - pl
            lo, hi = _span(xoff, np.int64(1), W, ow)
            ulo, uhi = uint64(lo), uint64(hi)
            for y in range(hp):
                o = uint64(y * ow)
                iy = y - pt
                if iy < 0 or iy >= H:
                    for ox in range(uow):
                        dst[o + ox] = 0
                    continue
                for ox in range(ulo):
                    dst[o + ox] = 0
                src = uint64(iy * W + xoff + lo)
                d = o + ulo
                for k in range(uhi - ulo):
                    dst[d + k] = img[src + k]
                for ox in range(uhi, uow):
                    dst[o + ox] = 0


@njit(inline="always")
def _shift_reach(sh, kw, P):
    """The lowest and highest offsets past a plane's start that ``_shift_masked`` reads (int64:
    a literal 0 passed on would compile the plane body once more)."""
    lo = np.int64(0)
    hi = np.int64(0)
    for j in range(kw):
        lo = min(lo, sh[j])
        hi = max(hi, sh[j] + P)
    return lo, hi


@helper(error_model="numpy")
def _shift_masked_plane(x, out, T, HW, kw, P, sh, mask, zero, lo, hi, t):
    """Plane ``t`` of ``_shift_masked``."""
    tot = T * HW
    KP = kw * P
    base = t * HW
    dst = out[t * KP:(t + 1) * KP]
    if base + lo >= 0 and base + hi <= tot:
        for j in range(kw):
            s = base + sh[j]
            src = x[s:s + P]
            d = dst[j * P:(j + 1) * P]
            m = mask[j * P:(j + 1) * P]
            for e in range(P):
                d[e] = src[e] if m[e] else zero
    else:
        for j in range(kw):
            s = base + sh[j]
            for e in range(P):
                if mask[j * P + e]:
                    dst[j * P + e] = x[s + e]
                else:
                    dst[j * P + e] = zero


@njit(cache=True, parallel=True, error_model="numpy")
def _shift_masked(x, out, T, HW, kw, P, sh, mask, zero):
    """``_shift_rows`` for a grid as wide as the image (``ow == W``: every "same" stride-1 conv
    and its input gradient's full correlation).  Then shifted plane j of plane t is
    ``x[t*HW + sh[j] + e]`` where ``mask[j*P + e]`` (the source lies in the plane) and 0
    elsewhere, e over the plane's P = hp*W elements: a contiguous load, a select and a store
    per element, vectorised (faster than the index map on small planes and than the row copy
    on mid-sized ones, as fast as the row copy on large ones).  One prange task per plane;
    the first and last planes, whose masked-out elements would lie outside ``x``, read only
    where the mask says."""
    lo, hi = _shift_reach(sh, kw, P)
    for t in prange(T):
        _shift_masked_plane(x, out, T, HW, kw, P, sh, mask, zero, lo, hi, np.int64(t))


@njit(cache=True, error_model="numpy")
def _shift_masked_serial(x, out, T, HW, kw, P, sh, mask, zero):
    """``_shift_masked``'s planes one after another (the same bits; see ``_im2col_b_serial``)."""
    lo, hi = _shift_reach(sh, kw, P)
    for t in range(T):
        _shift_masked_plane(x, out, T, HW, kw, P, sh, mask, zero, lo, hi, t)


@njit(cache=True, parallel=True, error_model="numpy")
def _gather_planes(x, out, idx, T, HW, KP, zero):
    """``out[t*KP + e] = x[t*HW + idx[e]]`` (0 where ``idx[e] == HW``) for each of the T
    planes: the row-shifted planes of small images from one index map per geometry (a loop
    per shifted row cost more than its copy there)."""
    uhw = uint64(HW)
    for t in prange(T):
        img = x[t * HW:(t + 1) * HW]
        dst = out[t * KP:(t + 1) * KP]
        for e in range(KP):
            m = idx[e]
            dst[e] = img[m] if m < uhw else zero


@njit(cache=True, parallel=True, error_model="numpy", fastmath={"contract"})
def _wgrad_small(cols, g, out, N, O, K, L):
    """``out`` (O, K) = g as rows (O, N*L) @ ``cols`` (K, N*L).T for few columns K: one prange
    task per output channel o, which sums over the samples into K x L lanes (vectorised, no
    reassociation) and then over each lane row in order (deterministic)."""
    for o in prange(O):
        acc = np.zeros(K * L, out.dtype)
        for n in range(N):
            gr = g[(n * O + o) * L:(n * O + o) * L + L]
            for k in range(K):
                cr = cols[(k * N + n) * L:(k * N + n) * L + L]
                a = acc[k * L:k * L + L]
                for e in range(L):
                    a[e] += gr[e] * cr[e]
        for k in range(K):
            a = acc[k * L:k * L + L]
            t = a[0]
            for e in range(1, L):
                t += a[e]
            out[o * K + k] = t


def _contiguous(x):
    if x.flags.c_contiguous:
        return x
    from jit_kernels.cpu.shape import copy
    return copy(x)


def im2col(x, kernel, stride, padding, dilation, grid):
    """Columns (N, C*kh*kw, oh*ow) of image ``x`` (N, C, H, W); see the module docstring: the
    batched columns, their (row, sample) axes swapped (one kernel less to compile; the convs
    without groups use the batched layout directly)."""
    N, C = x.shape[:2]
    (kh, kw), (oh, ow) = kernel, grid
    cols = im2col_batched(x, kernel, stride, padding, dilation, grid)
    return swap01(cols.reshape(C * kh * kw, N, oh * ow))


def col2im(cols, image, kernel, stride, padding, dilation, grid):
    """The (N, C, H, W) image (``image`` = (C, H, W)) summing columns ``cols`` back: the
    batched col2im of the columns with their (sample, row) axes swapped."""
    N, K, L = cols.shape
    return col2im_batched(swap01(_contiguous(cols)).reshape(K, N * L), N, image, kernel,
                          stride, padding, dilation, grid)


def im2col_batched(x, kernel, stride, padding, dilation, grid):
    """Batched columns (C*kh*kw, N*oh*ow) of image ``x`` (N, C, H, W): ``im2col``'s rows with
    the samples side by side (column ``n*oh*ow + oy*ow + ox``), one gemm operand for the batch."""
    N, C = x.shape[:2]
    (kh, kw), (oh, ow) = kernel, grid
    out = _pool.empty((C * kh * kw, N * oh * ow), x.dtype)
    if out.size:
        N, C, H, W = x.shape
        args = (_contiguous(x).reshape(-1), out.reshape(-1), N, C, H, W, kh, kw, *stride,
                *padding, *dilation, oh, ow)
        (_im2col_b if parallel_ready(_im2col_b, args) else _im2col_b_serial)(*args)
    return out


def col2im_batched(cols, n, image, kernel, stride, padding, dilation, grid):
    """The (n, C, H, W) image (``image`` = (C, H, W)) summing batched columns ``cols``
    (C*kh*kw, n*oh*ow) back: the adjoint of ``im2col_batched``."""
    C, H, W = image
    (kh, kw), (oh, ow) = kernel, grid
    out = _pool.empty((n, C, H, W), cols.dtype)
    if out.size:
        if cols.size == 0:
            out[...] = 0
        else:
            _col2im_b(_contiguous(cols).reshape(-1), out.reshape(-1), n, C, H, W, kh, kw,
                      *stride, *padding, *dilation, oh, ow)
    return out


def swap01(x, bias=None):
    """``x`` (A, B, L) as contiguous (B, A, L), plus ``bias`` (A,) along A when given: the
    gemm's (O, N, L) conv rows to NCHW (and back) in one pass."""
    A, B, L = x.shape
    out = _pool.empty((B, A, L), x.dtype)
    if out.size:
        b = x[:1, 0, 0] if bias is None else _contiguous(bias).astype(x.dtype, copy=False)
        args = (_contiguous(x), out, b, bias is not None)
        (_swap01 if parallel_ready(_swap01, args) else _swap01_serial)(*args)
    return out


#: weight gradients with at most this many columns (C*kh*kw) that ``_wdot`` does not take
#: (float64, strides) use ``_wgrad_small``, faster there than an implicit gemm or im2col +
#: gemm (its sums are in another order than the gemm's: not the stand-in's bits)
SMALL_K = 16


def _implicit(dt, macs, name):
    """The gemm module with the implicit-gemm conv driver ``name`` ready, or None: for the
    float products the packed gemm would do (``matmul.GEMM_MIN`` multiply-adds or more: smaller
    ones sum in another order), once its background build is done (``matmul._gemm_now``;
    im2col + gemm, the same bits, serve meanwhile)."""
    from jit_kernels.cpu import matmul as mm
    if dt not in mm.GEMM_DTYPES or macs < mm.GEMM_MIN:
        return None
    return mm._gemm_now(dt, name)


#: planes of the row-shifted form up to this many elements (kw * hp * ow) are gathered through
#: an index map (``_gather_planes``); larger ones are copied row by row (``_shift_rows``)
GATHER_MAX = 1024


@functools.lru_cache(maxsize=64)
def _shift_mask(H, W, kw, pt, pl, dw, hp):
    """The shifts and the mask of ``_shift_masked`` (a grid as wide as the image): for each
    kernel column j, the offset ``j*dw - pl - pt*W`` of its plane's element e in the image
    plane, and whether that element's source lies in the image."""
    j, y, ox = np.meshgrid(np.arange(kw), np.arange(hp), np.arange(W), indexing="ij")
    iy, ix = y - pt, ox + j * dw - pl
    inside = (iy >= 0) & (iy < H) & (ix >= 0) & (ix < W)
    sh = np.array([j * dw - pl - pt * W for j in range(kw)], np.int64)
    return sh, inside.astype(np.uint8).reshape(-1)


@functools.lru_cache(maxsize=64)
def _shift_map(H, W, kw, pt, pl, dw, hp, ow):
    """The index map of ``_gather_planes``: for each element of a (kw, hp, ow) block of
    shifted planes, its offset in the (H, W) plane, or H*W outside the image."""
    j, y, ox = np.meshgrid(np.arange(kw), np.arange(hp), np.arange(ow), indexing="ij")
    iy, ix = y - pt, ox + j * dw - pl
    inside = (iy >= 0) & (iy < H) & (ix >= 0) & (ix < W)
    return np.where(inside, iy * W + ix, H * W).astype(np.uint64).reshape(-1)


#: the row-shifted planes of a forward convolution's input, by the identity of the image
#: array: a stride-1 conv's weight gradient (``_wdot``) shifts the very input its forward
#: shifted, so it takes the forward's copy (payloads are never written after they are made:
#: tensors are immutable).  The weight gradient removes the entry it takes, so each copy
#: serves one forward and one gradient (a loop over the same input shifts it each time, as a
#: loop over new inputs does); an entry dies with its image, at most ``SHIFT_KEEP`` are kept
#: (the oldest go first), each of at most ``SHIFT_KEEP_BYTES``.
_SHIFTED: dict = {}
SHIFT_KEEP = 4
SHIFT_KEEP_BYTES = 1 << 24


def _keep_shifted(x, key, out) -> None:
    i = id(x)

    def drop(ref, i=i):
        ent = _SHIFTED.get(i)
        if ent is not None and ent[0] is ref:
            _SHIFTED.pop(i, None)
    while len(_SHIFTED) >= SHIFT_KEEP:
        try:
            _SHIFTED.pop(next(iter(_SHIFTED)), None)
        except (StopIteration, RuntimeError):   # emptied or resized by another thread
            break
    _SHIFTED[i] = (weakref.ref(x, drop), key, out)


def _take_shifted(x, key):
    """The kept planes of ``x`` for ``key`` (removed from the cache), or None."""
    ent = _SHIFTED.get(id(x))
    if ent is None or ent[0]() is not x or ent[1] != key:
        return None
    _SHIFTED.pop(id(x), None)
    return ent[2]


def shift_rows(x, kw, pt, pl, dw, hp, ow, keep=False):
    """The row-shifted planes (N, C*kw, hp, ow) of ``x`` (N, C, H, W), flat: see
    ``_shift_rows``.  ``keep`` (a forward's): leave them for the weight gradient's
    ``_take_shifted``."""
    N, C, H, W = x.shape
    out = _pool.empty((N * C * kw * hp * ow,), x.dtype)
    xf = _contiguous(x).reshape(-1)
    if ow == W:
        sh, mask = _shift_mask(H, W, kw, pt, pl, dw, hp)
        args = (xf, out, N * C, H * W, kw, hp * W, sh, mask, x.dtype.type(0))
        (_shift_masked if parallel_ready(_shift_masked, args) else _shift_masked_serial)(*args)
    elif kw * hp * ow <= GATHER_MAX:
        _gather_planes(xf, out, _shift_map(H, W, kw, pt, pl, dw, hp, ow), N * C, H * W,
                       kw * hp * ow, x.dtype.type(0))
    else:
        _shift_rows(xf, out, N, C, H, W, kw, pt, pl, dw, hp, ow)
    if keep and out.nbytes <= SHIFT_KEEP_BYTES:
        _keep_shifted(x, (kw, pt, pl, dw, hp, ow, x.shape, x.dtype), out)
    return out


#: positions (samples times oh*ow) per ``udot`` call of ``_wdot``
WDOT_POSITIONS = 512


def _wdot(x, g, kernel, padding, dilation, mm):
    """The stride-1 weight gradient as dot products (``conv_wdot`` of the generated gemm
    module) of g's rows and the row-shifted planes of x (``_shift_rows``), both contiguous
    along the positions: nothing is packed or transposed.  (O, C*kh*kw)."""
    N, C, H, W = x.shape
    O, (oh, ow), (kh, kw), (dh, dw) = g.shape[1], g.shape[2:], kernel, dilation
    hp = oh + dh * (kh - 1)
    key = (kw, padding[0], padding[1], dw, hp, ow, x.shape, x.dtype)
    xr = _take_shifted(x, key)
    if xr is None:
        xr = shift_rows(x, kw, padding[0], padding[1], dw, hp, ow)
    mod = mm.dot_now(x.dtype)
    wdot = mod.conv_wdot if mod is not None else mm.dot_standin(x.dtype).conv_wdot_loop
    K = C * kw * kh
    mo, mk = _matmul_gen.DOT_MO, _matmul_gen.DOT_MK
    acc = _pool.empty((((K + mk - 1) // mk) * ((O + mo - 1) // mo) * mo * mk * _dot_lanes(x.dtype),),
                      x.dtype)
    gw = _pool.empty((O, C, kw, kh), x.dtype)
    # samples per udot call: about 512 positions, so its block of x and g stays in cache;
    # one task per thread (each re-reads the g block of its samples)
    nt = mm.nthreads() if O * K * N * oh * ow >= mm.GEMM_PAR_MIN else 1
    wdot(_contiguous(g).reshape(-1), xr, gw.reshape(-1), acc, N, O, C * kw, kh, dh,
         hp, ow, max(1, WDOT_POSITIONS // (oh * ow)), min(nt, (K + mk - 1) // mk))
    return np.ascontiguousarray(gw.transpose(0, 1, 3, 2)).reshape(O, C * kh * kw)


def _wdot_applies(dtype, stride, L, K):
    """Whether ``_wdot`` serves: float32 at stride 1 with a grid of at least one vector,
    whose positions past the last whole vector (summed serially) are at most an eighth of it
    (there it is faster than ``_wgrad_small``)."""
    if dtype != np.float32:
        return False
    v = _dot_lanes(dtype)
    return stride == (1, 1) and K > 0 and L >= v and L % v <= L // 8


def _dot_lanes(dtype):
    """Lanes of ``udot``'s accumulators: half the gemm's NR (one vector register)."""
    from jit_kernels.cpu import matmul as mm
    return mm.gemm_config(np.dtype(dtype))[1] // 2


#: stride-1 forward convolutions with a kernel wider than one column and an output grid
#: narrower than this run in the row-shifted form (``_rows_form``; its copy of the image is kw
#: times the image).  Below this width the rows form beats packing runs of image rows, by most
#: on the smallest grids.
ROWS_MAX_WIDTH = 64


def _rows_form(x, w_shape, stride, padding, dilation, grid):
    """The row-shifted form of a stride-1 conv: ``(x', (kh, 1), (0, 0), (dh, 1))`` with ``x'``
    (N, C*kw, oh + dh*(kh-1), ow) holding each input plane's kw horizontally shifted, padded
    copies (``_shift_rows``), or None where it does not apply.  The conv of x' with the weight
    in (c, j, i) order (``_rows_weight``) and a (kh, 1) kernel without padding is the conv of
    x, and its implicit columns are whole contiguous stretches of x': one copy per sample and
    row of the columns, no per-image-row runs, no edge zeroing.  Only for the products the
    packed gemm would do (``matmul.GEMM_MIN`` multiply-adds or more): below that the copy
    gains nothing and would be one more kernel to compile."""
    from jit_kernels.cpu import matmul as mm
    O, _, kh, kw = w_shape
    oh, ow = grid
    if stride != (1, 1) or kw == 1 or ow >= ROWS_MAX_WIDTH or x.size == 0 or oh * ow == 0 \
            or O * x.shape[0] * x.shape[1] * kh * kw * oh * ow < mm.GEMM_MIN:
        return None
    N, C, H, W = x.shape
    dh, dw = dilation
    hp = oh + dh * (kh - 1)
    out = shift_rows(x, kw, padding[0], padding[1], dw, hp, ow, keep=True)
    out = out.reshape(N, C * kw, hp, ow)
    return out, (kh, 1), (0, 0), (dh, 1)


def _rows_weight(w):
    """(O, C, kh, kw) -> (O, C*kw, kh, 1): the weight of the row-shifted form."""
    O, C, kh, kw = w.shape
    return np.ascontiguousarray(w.transpose(0, 1, 3, 2)).reshape(O, C * kw, kh, 1)


def conv2d_cols(x, w, bias, stride, padding, dilation, grid):
    """``conv2d_gemm`` through materialised columns: im2col, the gemm, ``swap01`` + bias (the
    stand-in: the same sums in the same order, so the same bits; in the row-shifted form
    where ``conv2d_gemm`` uses it)."""
    from jit_kernels.cpu import matmul as mm
    rows = _rows_form(x, w.shape, stride, padding, dilation, grid)
    if rows is not None:
        return conv2d_cols(rows[0], _rows_weight(w), bias, stride, rows[2], rows[3], grid)
    N, O, L = x.shape[0], w.shape[0], grid[0] * grid[1]
    cols = im2col_batched(x, w.shape[2:], stride, padding, dilation, grid)
    K = cols.shape[0]
    y = mm.matmul(_contiguous(w).reshape(1, O, K), cols.reshape(1, K, N * L))
    return swap01(y.reshape(O, N, L), bias).reshape((N, O) + tuple(grid))


def conv2d_weight_cols(x, g, kernel, stride, padding, dilation):
    """``conv2d_weight_gemm`` through materialised columns (im2col, g as rows by ``swap01``,
    the gemm): the stand-in, with the same bits."""
    from jit_kernels.cpu import matmul as mm
    N, O = g.shape[:2]
    grid = tuple(g.shape[2:])
    L = grid[0] * grid[1]
    cols = im2col_batched(x, kernel, stride, padding, dilation, grid)
    K = cols.shape[0]
    rows = swap01(_contiguous(g).reshape(N, O, L)).reshape(1, O, N * L)
    return mm.matmul(rows, cols.reshape(1, K, N * L).transpose(0, 2, 1)).reshape(O, K)


def conv2d_gemm(x, w, bias, stride, padding, dilation, grid):
    """conv2d without groups: ``x`` (N, C, H, W), ``w`` (O, C, kh, kw), ``bias`` (O,) or None
    -> (N, O, oh, ow) contiguous.  The implicit gemm (``conv_fwd``: the columns packed
    straight from the image, the result written as NCHW plus the bias); im2col + gemm +
    ``swap01`` (the same bits) where it does not apply or is still building; on small images
    at stride 1 in the row-shifted form (``_rows_form``), with its stand-in in the same form."""
    rows = _rows_form(x, w.shape, stride, padding, dilation, grid)
    if rows is not None:
        return _conv_fwd(rows[0], _rows_weight(w), bias, stride, rows[2], rows[3], grid, True)
    return _conv_fwd(x, w, bias, stride, padding, dilation, grid, False)


def _conv_fwd(x, w, bias, stride, padding, dilation, grid, rows):
    """``conv2d_gemm`` on x as given (``rows``: the row-shifted form)."""
    from jit_kernels.cpu import matmul as mm
    N, C, H, W = x.shape
    O, _, kh, kw = w.shape
    oh, ow = grid
    K, L = C * kh * kw, oh * ow
    out = _pool.empty((N, O, oh, ow), x.dtype)  # first: a result no machine holds fails here,
    mod = _implicit(x.dtype, O * K * N * L, "conv_fwd")  # before any driver is built
    if mod is None or K == 0:
        return conv2d_cols(x, w, bias, stride, padding, dilation, grid)
    b = w.reshape(-1)[:1] if bias is None else _contiguous(bias).astype(x.dtype, copy=False)
    NR = mm.gemm_config(x.dtype)[1]
    ns = (N * L + NR - 1) // NR
    ntask = min(ns, mm.nthreads()) if O * K * N * L >= mm.GEMM_PAR_MIN else 1
    mod.conv_fwd(_contiguous(w).reshape(-1), _contiguous(x).reshape(-1), out.reshape(-1),
                 _contiguous(b), bias is not None, rows, N, C, H, W, O, kh, kw, *stride, *padding,
                 *dilation, oh, ow, ntask, x.dtype.type(0))
    return out


def conv2d_weight_gemm(x, g, kernel, stride, padding, dilation):
    """conv2d's weight gradient without groups: ``x`` (N, C, H, W), ``g`` (N, O, oh, ow) ->
    (O, C*kh*kw) = g as rows (O, N*oh*ow) @ the columns of x transposed (one gemm reducing
    over batch and grid).  At stride 1 in float32, dot products of g's rows and the
    row-shifted planes of x (``_wdot``: nothing packed, its own summation order); otherwise the
    implicit gemm (``conv_wgrad``: g and the columns packed straight from their NCHW arrays),
    or im2col + ``swap01`` + gemm (the same bits) where it does not apply or is still building."""
    from jit_kernels.cpu import matmul as mm
    N, C, H, W = x.shape
    O, (oh, ow), (kh, kw) = g.shape[1], g.shape[2:], kernel
    K, L = C * kh * kw, oh * ow
    if O * K * N * L >= mm.GEMM_MIN and _wdot_applies(x.dtype, stride, L, K):
        return _wdot(x, g, kernel, padding, dilation, mm)
    if 0 < K <= SMALL_K and O * K * N * L >= mm.GEMM_MIN:
        # a gemm would pad each of the few columns' packed rows to NR (smaller products keep
        # the stand-in's small-product path)
        cols = im2col_batched(x, kernel, stride, padding, dilation, (oh, ow))
        out = _pool.empty((O, K), x.dtype)
        _wgrad_small(cols.reshape(-1), _contiguous(g).reshape(-1), out.reshape(-1), N, O, K, L)
        return out
    mod = _implicit(x.dtype, O * K * N * L, "conv_wgrad")
    if mod is None or N * L == 0:
        return conv2d_weight_cols(x, g, kernel, stride, padding, dilation)
    MR, NR, _, KC, _ = mm.gemm_config(x.dtype)
    out = _pool.empty((O, K), x.dtype)
    ap = _pool.empty((((O + MR - 1) // MR) * MR * N * L,), x.dtype)
    njr, nir = (K + NR - 1) // NR, (O + MR - 1) // MR
    nt = mm.nthreads() if O * K * N * L >= mm.GEMM_PAR_MIN else 1
    ngroups = 1 if njr >= 2 * nt else max(1, min(nir, (2 * nt + njr - 1) // njr))
    mod.conv_wgrad(_contiguous(g).reshape(-1), _contiguous(x).reshape(-1), out.reshape(-1), ap,
                   N, C, H, W, O, kh, kw, *stride, *padding, *dilation, oh, ow, ngroups,
                   x.dtype.type(0))
    return out


__all__ = ["im2col", "col2im", "im2col_batched", "col2im_batched", "swap01", "conv2d_gemm",
           "conv2d_weight_gemm"]
