"""The cpu kernel set's Winograd F(2x2, 3x3) convolution (``jit_kernels.cpu.winograd``) on
shapes graph.compile does not send it (any batch, channels past the gemm's KC block, no
channels), against a float64 reference; the fused pool bit for bit; the weight transform."""
import numpy as np
import pytest

from jit_kernels.cpu import matmul as mm
from jit_kernels.cpu import winograd as wg

RNG = np.random.default_rng(5)


def _conv64(x, w, b, pads, grid):
    n, c, h, wd = x.shape
    (pt, pl), (oh, ow) = pads, grid
    xp = np.zeros((n, c, oh + 2, ow + 2))
    src = x[:, :, max(0, -pt):, max(0, -pl):]
    hh, ww = min(h, oh + 2 - pt), min(wd, ow + 2 - pl)
    xp[:, :, pt:pt + hh, pl:pl + ww] = src[:, :, :hh, :ww]
    y = np.zeros((n, w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow],
                           w[:, :, i, j].astype(np.float64))
    return y if b is None else y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("n, c, h, w, o, pads, grid, bias", [
    (3, 5, 7, 9, 11, (1, 1), (7, 9), True),        # fewer samples than lanes, odd grid
    (2, 3, 5, 5, 4, (0, 0), (3, 3), False),
    (4, 6, 6, 5, 9, (2, 1), (8, 5), True),         # trailing pads 2 and 1
    (1, 1, 3, 3, 1, (1, 1), (3, 3), True),
    (3, 600, 4, 4, 10, (1, 1), (4, 4), True),      # C past the gemm's KC: two k blocks
    (35, 2, 4, 6, 3, (1, 1), (4, 6), True),        # a second, mostly idle lane block
])
def test_matches_the_float64_conv(n, c, h, w, o, pads, grid, bias):
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    k = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(o).astype(np.float32) if bias else None
    y = wg.conv2d_winograd(x, wg.winograd_weight(k), b, pads, grid)
    want = _conv64(x, k, b, pads, grid)
    assert y.shape == want.shape and y.dtype == np.float32 and y.flags.c_contiguous
    np.testing.assert_allclose(y, want, rtol=0, atol=3e-6 * np.sqrt(c) * np.abs(want).max())


def test_the_pool_is_the_2x2_max_of_the_result_relu_d_bit_for_bit():
    x = RNG.standard_normal((37, 4, 6, 8)).astype(np.float32)
    x[2, 1, 3, 3] = np.nan
    x[7, :, 4:, 4:] = np.inf
    k = RNG.standard_normal((5, 4, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    u = wg.winograd_weight(k)
    y = wg.conv2d_winograd(x, u, b, (1, 1), (6, 8))
    p = wg.conv2d_winograd(x, u, b, (1, 1), (6, 8), pool=True)
    want = np.maximum(y.reshape(37, 5, 3, 2, 4, 2).max(axis=(3, 5)), 0)
    want[np.isnan(y.reshape(37, 5, 3, 2, 4, 2)).any(axis=(3, 5))] = np.nan
    assert p.shape == (37, 5, 3, 4)
    np.testing.assert_array_equal(p, want)
    assert np.isnan(p[2]).any() and not np.isnan(p[3]).any()


@pytest.mark.parametrize("pool", [False, True])
def test_no_input_channels_give_the_bias(pool):
    x = np.zeros((3, 0, 4, 4), np.float32)
    b = np.array([1.5, -2.0], np.float32)
    y = wg.conv2d_winograd(x, np.zeros((16, 2, 0), np.float32), b, (1, 1), (4, 4), pool)
    want = np.maximum(b, 0) if pool else b
    np.testing.assert_array_equal(y, np.broadcast_to(want.reshape(1, 2, 1, 1), y.shape))


def test_the_weight_transform_is_g_g_gt_in_float64():
    k = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
    u = wg.winograd_weight(k)
    assert u.shape == (16, 3, 2) and u.dtype == np.float32
    for o in range(3):
        for c in range(2):
            want = (G @ k[o, c].astype(np.float64) @ G.T).astype(np.float32)
            np.testing.assert_array_equal(u[:, o, c].reshape(4, 4), want)


def test_applies_takes_whole_lane_blocks_small_blocks_and_channels():
    NR = mm.gemm_config(np.dtype(np.float32))[1]
    f32 = np.float32
    assert wg.applies((4 * NR, 16, 4, 4), 32, (4, 4), f32, False)
    assert not wg.applies((4 * NR, 16, 4, 4), 32, (4, 4), np.float64, False)
    assert not wg.applies((NR - 1, 16, 4, 4), 32, (4, 4), f32, False)     # under one block
    assert not wg.applies((NR + 1, 16, 4, 4), 32, (4, 4), f32, False)     # half idle
    assert not wg.applies((4 * NR, 1, 8, 8), 16, (8, 8), f32, False)      # too few channels
    assert wg.applies((4 * NR, 1, 8, 8), 16, (8, 8), f32, True)           # ... unless pooled
    big = wg.BLOCK_BYTES // (4 * NR * 16 * 16) + 1                          # channels too many
    assert not wg.applies((4 * NR, big, 16, 16), 8, (16, 16), f32, True)


@pytest.mark.parametrize("pool", [False, True])
def test_the_serial_twin_gives_the_parallel_bits(pool, monkeypatch):
    """While ``wino_fwd`` builds in the background its serial twin serves: the same tasks in
    order, so the same bits (several tasks: blocks of NR samples over two threads)."""
    NR = mm.gemm_config(np.dtype(np.float32))[1]
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3 * NR, 5, 6, 6)).astype(np.float32)
    u = wg.winograd_weight(rng.standard_normal((7, 5, 3, 3)).astype(np.float32))
    bias = rng.standard_normal(7).astype(np.float32)
    monkeypatch.setattr(mm, "nthreads", lambda: 2)
    monkeypatch.setattr(mm, "GEMM_PAR_MIN", 0)
    want = wg.conv2d_winograd(x, u, bias, (1, 1), (6, 6), pool)
    assert mm._gemm_now(np.dtype(np.float32), "wino_fwd") is not None   # the parallel one ran
    monkeypatch.setattr(mm, "_gemm_now", lambda dtype, driver: None)    # still building
    got = wg.conv2d_winograd(x, u, bias, (1, 1), (6, 6), pool)
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
