"""The cpu set's batched conv layouts and the 2x2 max-pool fast path against the generic kernels
they replace (same values bit for bit: they copy, or sum in the same order, or pick the same
argmax), on tiny float32 shapes."""
import numpy as np
import pytest

from jit_kernels.cpu import conv as C, pool as P
from jit_kernels.cpu._layout import nthreads

WINDOWS = [((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 3), (2, 1), (0, 2), (1, 2)),
           ((3, 2), (1, 3), (2, 0), (2, 1))]


def _ref_batched_columns(x, kernel, stride, pad, dil, grid):
    """NumPy: (C*kh*kw, N*oh*ow), row (c*kh + i)*kw + j, column n*oh*ow + oy*ow + ox."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = kernel, stride, pad, dil, grid
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.empty((c, kh, kw, n, oh, ow), x.dtype)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            out[:, i, j] = win.transpose(1, 0, 2, 3)
    return out.reshape(c * kh * kw, n * oh * ow)


@pytest.mark.parametrize("kernel,stride,pad,dil", WINDOWS)
def test_batched_columns_and_their_adjoint(kernel, stride, pad, dil):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 6, 7)).astype(np.float32)
    grid = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(x.shape[2:], kernel, stride, pad, dil))
    b = C.im2col_batched(x, kernel, stride, pad, dil, grid)
    np.testing.assert_array_equal(b, _ref_batched_columns(x, kernel, stride, pad, dil, grid))
    k, length = b.shape[0], grid[0] * grid[1]
    np.testing.assert_array_equal(C.im2col(x, kernel, stride, pad, dil, grid),
                                  b.reshape(k, 3, length).transpose(1, 0, 2))
    # the adjoint: <im2col(x), g> == <x, col2im(g)> for every x, so col2im(g) is the gradient
    g = rng.standard_normal(b.shape).astype(np.float64)
    got = C.col2im_batched(g, 3, x.shape[1:], kernel, stride, pad, dil, grid)
    eye = np.eye(x.size).reshape((x.size,) + x.shape)
    want = np.array([(_ref_batched_columns(e, kernel, stride, pad, dil, grid) * g).sum()
                     for e in eye]).reshape(x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    per = np.ascontiguousarray(g.reshape(k, 3, length).transpose(1, 0, 2))
    np.testing.assert_array_equal(C.col2im(per, x.shape[1:], kernel, stride, pad, dil, grid), got)


def test_swap01_transposes_and_adds_the_bias():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    b = np.array([10, 20], np.float32)
    np.testing.assert_array_equal(C.swap01(x), x.transpose(1, 0, 2))
    np.testing.assert_array_equal(C.swap01(x, b), x.transpose(1, 0, 2) + b[None, :, None])


@pytest.mark.parametrize("hw", [(4, 4), (5, 7)])
def test_2x2_max_pool_fast_path_matches_the_generic_kernels(hw):
    H, W = hw
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (2, 3, H, W)).astype(np.float32)       # ties everywhere
    x[0, 0, 0, :3] = np.nan
    x[1, 2, :2, :2] = np.nan
    oh, ow = H // 2, W // 2
    rows = (2 * np.arange(oh), 2 * np.arange(oh) + 2, 1)
    cols = (2 * np.arange(ow), 2 * np.arange(ow) + 2, 1)
    # the fast path takes even planes (its windows tile them); odd ones run the generic kernels
    assert P._is_2x2(rows, cols, H, W) == (H % 2 == 0 and W % 2 == 0)
    fast, _ = P.max_pool2d(x, rows, cols, False)
    generic, _ = P.max_pool2d(x, rows, cols, True)
    np.testing.assert_array_equal(fast, generic)
    g = rng.standard_normal((2, 3, oh, ow)).astype(np.float32)
    want = np.zeros((6, H * W), np.float32)
    P._max_bwd(P._planes(x), P._planes(g), W, *rows, *cols, P._lowest(x.dtype), want, nthreads())
    np.testing.assert_array_equal(P.max_pool2d_backward(x, g, rows, cols).reshape(6, -1), want)
