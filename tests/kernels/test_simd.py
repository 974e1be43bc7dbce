"""The explicit vector micro-kernels (``jit_kernels.cpu._simd``) against scalar references,
bit for bit: the tile kernel's FMA chain over k (in one call or in parts), the dot block, the
vector-block copy, the packers' register transposition and the Winograd transforms (same
operations in the same order)."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from jit_kernels.cpu._simd import copy_kernel, dot_kernel, pack_kernel, tile_kernel, wino_kernels

MR, NV, LANES = 2, 2, 4
NR = NV * LANES
TILE = tile_kernel(MR, NV, LANES)
TILE_STRIDED = tile_kernel(MR, 1, LANES, "strided")
TILE_SHIFTED = tile_kernel(MR, 2, LANES, "packed", "shifted")
TILE_CHAINED = tile_kernel(MR, NV, LANES, chained=True)
PACK_ROWS = pack_kernel(LANES, "rows")
PACK_COLS = pack_kernel(LANES, "cols")
DOT = dot_kernel(4, 4, LANES)
COPY = copy_kernel(LANES)
WIN_IN, WIN_OUT, WIN_POOL = wino_kernels(LANES, NR)


@njit
def _tile(kc, A, ao, B, bo, C, co, ldc, first):
    TILE(kc, A, ao, B, bo, C, co, ldc, first)


@njit
def _tile_strided(kc, A, ao, sam, sak, B, bo, C, co, ldc, first):
    TILE_STRIDED(kc, A, ao, sam, sak, B, bo, C, co, ldc, first)


@njit
def _tile_shifted(kc, A, ao, x, offs, oo, xb0, xb1, C, co, ldc, first):
    TILE_SHIFTED(kc, A, ao, x, offs, oo, xb0, xb1, C, co, ldc, first)


@njit
def _tile_chained(kc, A, ao, B, bo, C, co, ldc, first, S, so, cont, park):
    TILE_CHAINED(kc, A, ao, B, bo, C, co, ldc, first, S, so, cont, park)


@njit
def _pack_rows(n, src, s, st, dst, d, sd):
    PACK_ROWS(n, src, s, st, dst, d, sd)


@njit
def _pack_cols(n, src, s, st, dst, d, sd):
    PACK_COLS(n, src, s, st, dst, d, sd)


@njit(fastmath={"contract"})
def _fma_chain(a, b):
    """sum_k a[k] * b[k] as Numba's scalar ``c += a * b`` under ``contract`` (an FMA a step)."""
    c = a.dtype.type(0)
    for k in range(a.shape[0]):
        c += a[k] * b[k]
    return c


def _rng_arrays(dt, *sizes):
    rng = np.random.default_rng(sum(sizes))
    return [rng.standard_normal(n).astype(dt) for n in sizes]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kc", [0, 1, 7])
def test_tile_is_an_fma_chain_written_or_added(dt, kc):
    Ap, Bp = _rng_arrays(dt, 3 + kc * MR, 5 + kc * NR)
    ldc = NR + 3
    C = np.full(2 + MR * ldc, 7.0, dt)
    _tile(kc, Ap, 3, Bp, 5, C, 2, ldc, True)
    want = np.array([[_fma_chain(Ap[3 + i::MR][:kc], Bp[5 + j::NR][:kc]) for j in range(NR)]
                     for i in range(MR)], dt)
    got = C[2:].reshape(MR, ldc)
    np.testing.assert_array_equal(got[:, :NR], want)
    np.testing.assert_array_equal(got[:, NR:], 7.0)       # the row tails are not touched
    assert C[0] == C[1] == 7.0
    _tile(kc, Ap, 3, Bp, 5, C, 2, ldc, False)              # added onto C
    np.testing.assert_array_equal(C[2:].reshape(MR, ldc)[:, :NR], want + want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("parts", [(5,), (3, 4), (1, 6, 2), (0, 4, 0, 3)])
def test_chained_tile_goes_on_from_its_parked_accumulators(dt, parts):
    # a k loop cut into parts (accumulators parked between them) is the one FMA chain of a
    # single call: the same bits, written or added to C only by the last part
    kc = sum(parts)
    Ap, Bp = _rng_arrays(dt, 3 + kc * MR, 5 + kc * NR)
    ldc = NR + 3
    for first in (True, False):
        want = np.full(2 + MR * ldc, 7.0, dt)
        _tile(kc, Ap, 3, Bp, 5, want, 2, ldc, first)
        C = np.full(2 + MR * ldc, 7.0, dt)
        S = np.full(4 + MR * NR, np.nan, dt)
        k0 = 0
        for q, ki in enumerate(parts):
            last = q == len(parts) - 1
            _tile_chained(ki, Ap, 3 + k0 * MR, Bp, 5 + k0 * NR, C, 2, ldc, first, S, 4,
                          q > 0, not last)
            if not last:                   # parked, C untouched
                np.testing.assert_array_equal(C, 7.0)
            k0 += ki
        np.testing.assert_array_equal(C, want)
        assert np.isnan(S[:4]).all()       # nothing parked outside the tile


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 3, LANES, 2 * LANES + 3])
def test_packers_lay_rows_out_k_major(dt, n):
    src = np.arange(400, dtype=dt)
    want = np.full(3 + max(n, 1) * 6, -1.0, dt)
    for k in range(n):
        for i in range(LANES):
            want[3 + k * 6 + i] = src[7 + i * 30 + k]     # rows 30 apart, contiguous along k
    got = np.full_like(want, -1.0)
    _pack_rows(n, src, 7, 30, got, 3, 6)
    np.testing.assert_array_equal(got, want)
    for k in range(n):
        for i in range(LANES):
            want[3 + k * 6 + i] = src[7 + k * 30 + i]     # k steps 30 apart, contiguous rows
    got = np.full_like(want, -1.0)
    _pack_cols(n, src, 7, 30, got, 3, 6)
    np.testing.assert_array_equal(got, want)
    got = np.full_like(want, -1.0)                          # a negative stride
    _pack_rows(n, src, 7 + 3 * 30, -30, got, 3, 6)
    for k in range(n):
        for i in range(LANES):
            assert got[3 + k * 6 + i] == src[7 + (3 - i) * 30 + k]


def test_tile_strided_a_and_shifted_b():
    dt = np.float32
    kc = 5
    (A,) = _rng_arrays(dt, 64)
    (B,) = _rng_arrays(dt, kc * LANES)
    C = np.zeros(MR * LANES, dt)
    _tile_strided(kc, A, 1, 9, 2, B, 0, C, 0, LANES, True)   # A[1 + i*9 + k*2]
    want = [[_fma_chain(A[1 + 9 * i::2][:kc], B[j::LANES][:kc]) for j in range(LANES)]
            for i in range(MR)]
    np.testing.assert_array_equal(C.reshape(MR, LANES), np.array(want, dt))
    (Ap,) = _rng_arrays(dt, kc * MR)
    (x,) = _rng_arrays(dt, 100)
    offs = np.array([0, 40, 3, 21, 50, 7, 13], np.int64)
    C = np.zeros(MR * NR, dt)
    _tile_shifted(kc, Ap, 0, x, offs, 2, 5, 30, C, 0, NR, True)
    rows = [np.concatenate([x[offs[2 + k] + 5:][:LANES], x[offs[2 + k] + 30:][:LANES]])
            for k in range(kc)]
    want = [[_fma_chain(Ap[i::MR][:kc], np.array([r[j] for r in rows], dt)) for j in range(NR)]
            for i in range(MR)]
    np.testing.assert_array_equal(C.reshape(MR, NR), np.array(want, dt))


@njit
def _dot(g, g0, g1, g2, g3, sg, x, x0, x1, x2, x3, sx, nb, nch, acc, ao):
    DOT(g, g0, g1, g2, g3, sg, x, x0, x1, x2, x3, sx, nb, nch, acc, ao)


@njit(fastmath={"contract"})
def _dot_ref(c, g, x, nb, nch, sg, sx, lanes):
    for n in range(nb):
        for q in range(nch):
            for e in range(lanes):
                c[e] += g[n * sg + q * lanes + e] * x[n * sx + q * lanes + e]


def test_dot_block_adds_lane_sums_in_order():
    dt = np.float32
    g, x = _rng_arrays(dt, 200, 220)
    acc0 = _rng_arrays(dt, 3 + 16 * LANES)[0]
    acc = acc0.copy()
    go, xo, sg, sx, nb, nch = [1, 9, 30, 44], [0, 5, 17, 60], 70, 80, 2, 3
    _dot(g, *go, sg, x, *xo, sx, nb, nch, acc, 3)
    for a in range(4):
        for b in range(4):
            c = acc0[3 + (a * 4 + b) * LANES:][:LANES].copy()
            _dot_ref(c, g[go[a]:], x[xo[b]:], nb, nch, sg, sx, LANES)
            np.testing.assert_array_equal(acc[3 + (a * 4 + b) * LANES:][:LANES], c)
    assert acc[0] == acc0[0] and acc[2] == acc0[2]


@njit
def _copy(dst, d, src, s, n):
    COPY(dst, d, src, s, n)


@pytest.mark.parametrize("n", [0, 1, LANES - 1, LANES, LANES + 1, 3 * LANES + 2])
def test_copy_runs_of_every_length(n):
    src = np.arange(40, dtype=np.float64)
    dst = np.full(40, -1.0)
    _copy(dst, np.uint64(3), src, np.uint64(11), np.uint64(n))
    want = np.full(40, -1.0)
    want[3:3 + n] = src[11:11 + n]
    np.testing.assert_array_equal(dst, want)


@njit
def _win_in(Xt, qs, l0, Vb, vo, cn):
    WIN_IN(Xt, qs, l0, Vb, vo, cn)


@njit
def _win_out(Mb, q, mn, Yt, y0, y1, bv, two_r, two_c):
    WIN_OUT(Mb, q, mn, Yt, y0, y1, bv, two_r, two_c)


@njit
def _win_pool(Mb, q, mn, Yt, y0, bv, zero):
    WIN_POOL(Mb, q, mn, Yt, y0, bv, zero)


_BT = [(0, "-", 2), (1, "+", 2), (2, "-", 1), (1, "-", 3)]


def _op(a, op, b):
    return a + b if op == "+" else a - b


def _out_ref(m, bv):
    """A^T m A + bv on float32 scalars, in the scalar form's order."""
    s = [[m[0][j] + m[1][j] + m[2][j] for j in range(4)],
         [m[1][j] - m[2][j] - m[3][j] for j in range(4)]]
    return [[s[i][0] + s[i][1] + s[i][2] + bv, s[i][1] - s[i][2] - s[i][3] + bv]
            for i in range(2)]


def test_winograd_transforms_match_the_scalar_form():
    f = np.float32
    rng = np.random.default_rng(5)
    Xt = rng.standard_normal(300).astype(f)
    qs = rng.integers(0, 250, 16).astype(np.int64)
    Vb = np.zeros(16 * 10 + 7, f)
    _win_in(Xt, qs, np.uint64(2), Vb, np.uint64(7), np.uint64(10))
    for ln in range(LANES):
        d = [[Xt[qs[4 * i + j] + 2 + ln] for j in range(4)] for i in range(4)]
        e = [[_op(d[p][j], op, d[q][j]) for j in range(4)] for (p, op, q) in _BT]
        for i in range(4):
            for j, (p, op, q) in enumerate(_BT):
                assert Vb[7 + (4 * i + j) * 10 + ln] == _op(e[i][p], op, e[i][q])
    Mb = rng.standard_normal(16 * 9 + 4).astype(f)
    m = [[[Mb[3 + (4 * i + j) * 9 + ln] for j in range(4)] for i in range(4)]
         for ln in range(LANES)]
    bv = f(0.25)
    for two_r in (False, True):
        for two_c in (False, True):
            Yt = np.full(60, 9.0, f)
            _win_out(Mb, np.uint64(3), np.uint64(9), Yt, np.uint64(1), np.uint64(30), bv,
                     two_r, two_c)
            want = np.full(60, 9.0, f)
            for ln in range(LANES):
                r = _out_ref(m[ln], bv)
                want[1 + ln] = r[0][0]
                if two_c:
                    want[1 + NR + ln] = r[0][1]
                if two_r:
                    want[30 + ln] = r[1][0]
                    if two_c:
                        want[30 + NR + ln] = r[1][1]
            np.testing.assert_array_equal(Yt, want)
    Mb[3 + 5 * 9 + 1] = np.nan           # lane 1: a NaN propagates through the pool
    Yt = np.zeros(10, f)
    _win_pool(Mb, np.uint64(3), np.uint64(9), Yt, np.uint64(2), bv, f(0))
    for ln in range(LANES):
        mm = [[Mb[3 + (4 * i + j) * 9 + ln] for j in range(4)] for i in range(4)]
        r = _out_ref(mm, bv)
        h = np.max([r[0][0], r[0][1], r[1][0], r[1][1]])
        want = h if (np.isnan(h) or h >= 0) else f(0)
        np.testing.assert_array_equal(Yt[2 + ln], want)
    assert np.isnan(Yt[3])
