"""The cpu set's implicit-gemm convolutions (``jit_kernels.cpu.conv.conv2d_gemm`` and
``conv2d_weight_gemm``; drivers ``conv_fwd`` / ``conv_wgrad`` of the generated gemm module): the
same bits as their im2col + gemm stand-ins (which serve while the drivers build), and NumPy
float64 values, on shapes just above the packed gemm's threshold chosen to reach every packing
path: whole in-image stretches (ow == W), outputs straddling samples (L not a multiple of NR),
strides/dilation/asymmetric pads, pads past the kernel's reach, K past one KC block, and the
few-column weight gradient (``_wgrad_small``, values only: it sums in its own order).  The
stride-1 float32 weight gradients are dot products (``_wdot``: values only, its own order too),
with their own cases for the row-shifted planes' edges, tails and block edges.

Compile cost: float32 only; the two drivers (seconds each from cold) built once for the module."""
from __future__ import annotations

import numpy as np
import pytest

from jit_kernels.cpu import _background, conv as cv, matmul as mm

# name: (N, C, O, H, W, kernel, stride, leading pads, dilation)
CASES = {
    "rows": (2, 4, 8, 8, 8, (3, 3), (1, 1), (1, 1), (1, 1)),
    "straddle": (4, 4, 8, 6, 6, (3, 3), (1, 1), (1, 1), (1, 1)),
    "strided-dilated": (4, 3, 16, 9, 11, (3, 2), (2, 1), (1, 0), (1, 2)),
    "pads-past-kernel": (2, 4, 8, 5, 5, (3, 3), (1, 1), (3, 2), (1, 1)),
    "deep": (1, 60, 8, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1)),
    "one-channel": (4, 1, 16, 8, 8, (3, 3), (1, 1), (1, 1), (1, 1)),  # K = 9: dot products
    "one-channel-strided": (16, 1, 16, 9, 9, (3, 3), (2, 2), (1, 1), (1, 1)),  # K <= SMALL_K
    # 7x7 "same" on 7 columns: the last sliver starts at ox 5, past the image for j = 6
    "sliver-past-the-image": (2, 1, 8, 7, 7, (7, 7), (1, 1), (3, 3), (1, 1)),
    # stride 1 with dilation and a kernel taller than wide: the row-shifted form's (kh, 1)
    # kernel keeps the vertical dilation, the shifted planes the horizontal one
    "dilated-rows": (4, 3, 8, 7, 9, (3, 2), (1, 1), (2, 1), (2, 2)),
    # past GEMM_PAR_MIN: prange tasks over slivers (forward), row groups (weight gradient)
    "parallel": (16, 8, 16, 8, 8, (3, 3), (1, 1), (1, 1), (1, 1)),
    # the forward's direct read of the row-shifted planes (``ukx``): 4x4 grids, so each
    # sliver's halves lie in two samples; and output channels not a multiple of MR
    "two-samples-per-sliver": (8, 4, 8, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1)),
    "rows-partial-tile": (4, 4, 12, 8, 8, (3, 3), (1, 1), (1, 1), (1, 1)),
}


@pytest.fixture(scope="module")
def drivers():
    """Build (or load) the conv drivers now: the test is of them, not of the stand-in."""
    def ready(dt):
        for d in mm.CONV_DRIVERS:
            _background.wait(mm._job(np.dtype(dt), d))
            mm._driver(np.dtype(dt), d)
    return ready


def _grid(H, W, kernel, stride, pads, dil):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip((H, W), kernel, stride, pads, dil))


def _cols64(x, kernel, stride, pads, dil, grid):
    """float64 columns (N, C*kh*kw, oh*ow), zero outside the image (pads as symmetric)."""
    N, C = x.shape[:2]
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dil, grid
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0],) * 2, (pads[1],) * 2))
    cols = np.empty((N, C, kh, kw, oh, ow))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                  j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(N, C * kh * kw, oh * ow)


def _data(name, dt):
    N, C, O, H, W, kernel, stride, pads, dil = CASES[name]
    grid = _grid(H, W, kernel, stride, pads, dil)
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((N, C, H, W)).astype(dt)
    w = rng.standard_normal((O, C) + kernel).astype(dt)
    b = rng.standard_normal(O).astype(dt)
    g = rng.standard_normal((N, O) + grid).astype(dt)
    assert O * C * kernel[0] * kernel[1] * N * grid[0] * grid[1] >= mm.GEMM_MIN
    return x, w, b, g, (kernel, stride, pads, dil, grid)


# float32 only: each dtype's two drivers take seconds each to compile from cold (the float64
# ones are the same generated source with float64's tile constants)
PARAMS = [pytest.param(n, np.float32, id=n) for n in CASES]


@pytest.mark.parametrize("name, dt", PARAMS)
def test_forward_bits_of_the_stand_in_and_values(drivers, name, dt):
    drivers(dt)
    x, w, b, _, (kernel, stride, pads, dil, grid) = _data(name, dt)
    cols = _cols64(x, kernel, stride, pads, dil, grid)
    want = np.einsum("ok,nkl->nol", w.reshape(w.shape[0], -1).astype(np.float64), cols)
    tol = 2e-5 if dt == np.float32 else 1e-12
    for bias in (b, None):
        got = cv.conv2d_gemm(x, w, bias, stride, pads, dil, grid)
        assert got.shape == (x.shape[0], w.shape[0]) + grid and got.dtype == dt
        assert np.array_equal(got, cv.conv2d_cols(x, w, bias, stride, pads, dil, grid))
        ref = want if bias is None else want + b[None, :, None]
        np.testing.assert_allclose(got.reshape(ref.shape), ref, rtol=tol,
                                   atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("name, dt", PARAMS)
def test_weight_gradient_bits_of_the_stand_in_and_values(drivers, name, dt):
    drivers(dt)
    x, w, _, g, (kernel, stride, pads, dil, grid) = _data(name, dt)
    got = cv.conv2d_weight_gemm(x, g, kernel, stride, pads, dil)
    assert got.shape == (w.shape[0], w[0].size) and got.dtype == dt
    L = grid[0] * grid[1]
    if w[0].size > cv.SMALL_K and not cv._wdot_applies(x.dtype, stride, L, w[0].size):
        # (the few-column kernel and the dot products sum in their own orders)
        assert np.array_equal(got, cv.conv2d_weight_cols(x, g, kernel, stride, pads, dil))
    cols = _cols64(x, kernel, stride, pads, dil, grid)
    ref = np.einsum("nol,nkl->ok", g.reshape(g.shape[0], g.shape[1], -1).astype(np.float64), cols)
    tol = 2e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())


def test_stand_in_serves_while_the_drivers_build(monkeypatch):
    """With the drivers not ready (their background build pending), the kernel-set methods
    return the stand-in's result."""
    monkeypatch.setattr(mm, "_gemm_now", lambda dt, name: None)
    x, w, b, g, (kernel, stride, pads, dil, grid) = _data("straddle", np.float32)
    np.testing.assert_array_equal(cv.conv2d_gemm(x, w, b, stride, pads, dil, grid),
                                  cv.conv2d_cols(x, w, b, stride, pads, dil, grid))
    # (a strided weight gradient: the stride-1 ones are dot products, with no stand-in)
    x, w, b, g, (kernel, stride, pads, dil, grid) = _data("strided-dilated", np.float32)
    np.testing.assert_array_equal(cv.conv2d_weight_gemm(x, g, kernel, stride, pads, dil),
                                  cv.conv2d_weight_cols(x, g, kernel, stride, pads, dil))


# name: (N, C, O, H, W, kernel, leading pads, dilation): stride-1 weight gradients by dot products
DOT_CASES = {
    # O and K (= C*kh*kw = 45) not multiples of the 4 x 4 block; 7x6 grid: 42 positions, a
    # 10-position serial tail past the two whole vectors (applies: called directly)
    "edges-and-tail": (3, 5, 9, 9, 6, (5, 3), (2, 1), (1, 2)),
    # a pad larger than the kernel's reach on one side, a grid wider than the image
    "wide-pads": (2, 3, 6, 6, 5, (3, 3), (0, 2), (1, 1)),
    # many samples per udot call (16 positions each) and a block count not dividing N
    "small-grid": (37, 4, 8, 4, 4, (3, 3), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("name", list(DOT_CASES))
def test_weight_gradient_dot_products_values(name):
    N, C, O, H, W, kernel, pads, dil = DOT_CASES[name]
    grid = _grid(H, W, kernel, (1, 1), pads, dil)
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    g = rng.standard_normal((N, O) + grid).astype(np.float32)
    cols = _cols64(x, kernel, (1, 1), pads, dil, grid)
    ref = np.einsum("nol,nkl->ok", g.reshape(N, O, -1).astype(np.float64), cols)
    for gg in (g, np.asfortranarray(g)):  # a non-contiguous gradient is made contiguous
        got = cv._wdot(x, gg, kernel, pads, dil, mm)
        assert got.shape == (O, C * kernel[0] * kernel[1]) and got.dtype == np.float32
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())
    # and through the kernel-set entry point where it applies
    if cv._wdot_applies(x.dtype, (1, 1), grid[0] * grid[1], C * kernel[0] * kernel[1]):
        np.testing.assert_array_equal(
            cv.conv2d_weight_gemm(x, g, kernel, (1, 1), pads, dil), cv._wdot(x, g, kernel, pads,
                                                                             dil, mm))


@pytest.mark.parametrize("name", list(DOT_CASES) + ["demo-conv2"])
def test_weight_gradient_standin_gives_the_same_bits(name, monkeypatch):
    """``conv_wdot_loop`` (serial: the stand-in while the parallel ``conv_wdot`` builds in the
    background) sums every lane as ``conv_wdot`` does: the same bits, edges and tails too."""
    N, C, O, H, W, kernel, pads, dil = DOT_CASES.get(
        name, (128, 16, 32, 4, 4, (3, 3), (1, 1), (1, 1)))
    grid = _grid(H, W, kernel, (1, 1), pads, dil)
    rng = np.random.default_rng(7 + len(name))
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    g = rng.standard_normal((N, O) + grid).astype(np.float32)
    want = cv._wdot(x, g, kernel, pads, dil, mm)
    monkeypatch.setattr(mm, "dot_now", lambda dtype: None)      # still building
    got = cv._wdot(x, g, kernel, pads, dil, mm)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


def test_dot_now_sends_the_build_and_returns_none_meanwhile(monkeypatch):
    dt = np.dtype(np.float32)
    sent = []
    monkeypatch.setattr(mm, "_DOT", {})
    monkeypatch.setattr(_background, "submit", lambda name, job: sent.append((name, job)) or True)
    assert mm.dot_now(dt) is None
    assert sent == [(f"{mm._gemm_source(dt)[1]}.dot",
                     {"call": ["jit_kernels.cpu.matmul", "_build_dot_named", "float32"]})]
    monkeypatch.setattr(mm, "_DOT", {dt: "built"})            # built: no job, no compile
    assert mm.dot_now(dt) == "built" and len(sent) == 1


# (H, W, kw, pt, pl, dw, hp, ow): "same" 3x3, a crop (fewer rows than the image), a grid
# wider than the image, dilation, and pads past the image on both sides
SHIFTS = [(4, 4, 3, 1, 1, 1, 6, 4), (5, 5, 3, 0, 1, 1, 3, 5), (3, 4, 3, 2, 2, 1, 7, 6),
          (6, 5, 3, 1, 2, 2, 8, 5), (2, 3, 2, 3, 4, 1, 9, 9)]
# planes as wide as the grid (``_shift_masked``): "same" 3x3, a crop with dilation, a shift
# past the whole row, more pad rows than image rows, a one-row image
SAME_SHIFTS = [(8, 8, 3, 1, 1, 1, 10, 8), (9, 8, 3, 0, 3, 2, 7, 8), (8, 9, 2, 0, 9, 1, 8, 9),
               (1, 64, 3, 2, 1, 1, 5, 64), (4, 4, 3, 1, 1, 1, 6, 4), (6, 5, 3, 1, 2, 2, 8, 5)]


@pytest.mark.parametrize("H, W, kw, pt, pl, dw, hp, ow", SHIFTS)
def test_row_shifted_planes(H, W, kw, pt, pl, dw, hp, ow):
    x = np.random.default_rng(H * W).standard_normal((2, 3, H, W)).astype(np.float32)
    want = np.zeros((2, 3, kw, hp, ow), np.float32)
    for j in range(kw):
        for y in range(hp):
            for ox in range(ow):
                iy, ix = y - pt, ox + j * dw - pl
                if 0 <= iy < H and 0 <= ix < W:
                    want[:, :, j, y, ox] = x[:, :, iy, ix]
    got = np.full(want.size, np.nan, np.float32)
    cv._shift_rows(x.reshape(-1), got, 2, 3, H, W, kw, pt, pl, dw, hp, ow)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("H, W, kw, pt, pl, dw, hp, ow", [s for s in SHIFTS if s[7] != s[1]])
def test_row_shifted_planes_by_index_map(H, W, kw, pt, pl, dw, hp, ow):
    """The small-plane path of grids wider than the image (``shift_rows`` gathers below
    ``GATHER_MAX``) equals the row copy."""
    x = np.random.default_rng(H + W).standard_normal((2, 3, H, W)).astype(np.float32)
    want = np.full(2 * 3 * kw * hp * ow, np.nan, np.float32)
    cv._shift_rows(x.reshape(-1), want, 2, 3, H, W, kw, pt, pl, dw, hp, ow)
    assert kw * hp * ow <= cv.GATHER_MAX
    np.testing.assert_array_equal(cv.shift_rows(x, kw, pt, pl, dw, hp, ow), want)


@pytest.mark.parametrize("H, W, kw, pt, pl, dw, hp, ow", SAME_SHIFTS)
def test_row_shifted_planes_as_wide_as_the_image(H, W, kw, pt, pl, dw, hp, ow):
    """The masked-copy path (``shift_rows`` with ow == W) equals the row copy, every element
    written (the output starts as NaN), on 1 plane (first and last at once), 3 and 6."""
    for n, c in ((1, 1), (1, 3), (2, 3)):
        x = np.random.default_rng(H * W + pl).standard_normal((n, c, H, W)).astype(np.float32)
        want = np.full(n * c * kw * hp * ow, np.nan, np.float32)
        cv._shift_rows(x.reshape(-1), want, n, c, H, W, kw, pt, pl, dw, hp, ow)
        assert ow == W
        np.testing.assert_array_equal(cv.shift_rows(x, kw, pt, pl, dw, hp, ow), want)


def test_the_forward_leaves_its_shifted_input_to_one_weight_gradient(drivers):
    """A row-shifted forward keeps x's shifted planes by the identity of x; the weight gradient
    of that x takes them (once: the entry goes), with the bits of shifting x again; the entry
    dies with x, and another array of the same values is not served from it."""
    import gc
    drivers(np.float32)
    rng = np.random.default_rng(7)
    N, C, O, H = CASES["rows"][:4]
    x = rng.standard_normal((N, C, H, H)).astype(np.float32)
    w = rng.standard_normal((O, C, 3, 3)).astype(np.float32)
    g = rng.standard_normal((N, O, H, H)).astype(np.float32)
    window = ((1, 1), (1, 1), (1, 1))
    cv._SHIFTED.clear()
    cv.conv2d_gemm(x, w, None, *window, (H, H))
    key = (3, 1, 1, 1, H + 2, H, x.shape, x.dtype)
    assert cv._SHIFTED[id(x)][1] == key
    kept = cv._SHIFTED[id(x)][2]
    np.testing.assert_array_equal(kept, cv.shift_rows(x, 3, 1, 1, 1, H + 2, H))
    taken = cv.conv2d_weight_gemm(x, g, (3, 3), *window)
    assert id(x) not in cv._SHIFTED
    again = cv.conv2d_weight_gemm(x, g, (3, 3), *window)     # shifts x itself
    np.testing.assert_array_equal(taken, again)
    # another array with the same values: no entry of its own, so it is shifted afresh
    cv.conv2d_gemm(x, w, None, *window, (H, H))
    assert cv._take_shifted(x.copy(), key) is None
    del x
    gc.collect()
    assert not cv._SHIFTED
