"""The cpu set's one-pass cross-entropy kernels against the kernels they replace, bit for bit on
hypothesis shapes: the per-row losses (the log-softmax, ``gather`` of the target's entry and
``neg``) and the logits gradient (the softmax, ``scatter_add`` of -1 at the target, the scale's
division and the product); their index errors; and where they decline."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jit_kernels.cpu import CpuKernels, reduce as R
from jit_kernels.cpu._layout import PAR_THRESHOLD

KS = CpuKernels()


def _composition(x, t, g, reduction):
    n = x.shape[0]
    dt = x.dtype
    d = KS.scatter_add(KS.softmax(x, 1, False), t.reshape(n, 1), KS.full((n, 1), -1, dt, 0), 1)
    if reduction == "none":
        scale = g.reshape(n, 1)
    elif reduction == "mean":
        scale = KS.binary("div", g, max(n, 1), dt, dt)
    else:
        scale = g
    return KS.binary("mul", d, scale, dt, dt)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), c=st.integers(1, 30), dtype=st.sampled_from([np.float32, np.float64]),
       reduction=st.sampled_from(["mean", "sum", "none"]), seed=st.integers(0, 2**31 - 1),
       big=st.booleans())
def test_bit_for_bit_the_composition(n, c, dtype, reduction, seed, big):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * (80 if big else 3)).astype(dtype)
    if big and n > 1:
        x[0, 0] = np.inf                                  # a row of NaN, like the softmax's
    t = rng.integers(-c, c, n)
    g = rng.standard_normal(n if reduction == "none" else ()).astype(dtype)
    got = R.cross_entropy_grad(x, t, np.asarray(g), reduction)
    want = _composition(x, t, np.asarray(g), reduction)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_strided_logits_and_int32_targets():
    x = np.random.default_rng(1).standard_normal((6, 10)).astype(np.float32)[:, ::2]
    t = np.array([0, 4, 1, 2, 3, 4], np.int32)
    g = np.array(2.5, np.float32)
    np.testing.assert_array_equal(R.cross_entropy_grad(x, t, g, "sum"),
                                  _composition(np.ascontiguousarray(x), t.astype(np.int64), g, "sum"))


@pytest.mark.parametrize("bad", [5, -6])
def test_a_target_out_of_range_raises_the_protocol_index_error(bad):
    x = np.zeros((3, 5), np.float32)
    with pytest.raises(IndexError, match=f"^index {bad} is out of bounds for axis 1 with size 5$"):
        R.cross_entropy_grad(x, np.array([0, bad, 1]), np.array(1, np.float32), "mean")


def test_declines_where_the_parallel_kernels_serve():
    n = PAR_THRESHOLD // 10 + 1
    x = np.zeros((n, 10), np.float32)
    assert R.cross_entropy_grad(x, np.zeros(n, np.int64), np.array(1, np.float32), "mean") is None
    assert R.cross_entropy_grad(np.zeros((2, 0), np.float32), np.zeros(2, np.int64),
                                np.array(1, np.float32), "mean") is None
    out = R.cross_entropy_grad(np.zeros((0, 4), np.float32), np.zeros(0, np.int64),
                               np.array(1, np.float32), "mean")
    assert out.shape == (0, 4)


def _loss_composition(x, t):
    n = x.shape[0]
    picked = KS.gather(KS.softmax(x, 1, True), t.reshape(n, 1), 1).reshape(n)
    return KS.unary("neg", picked, x.dtype, {})


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), c=st.integers(1, 30), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**31 - 1), big=st.booleans())
def test_the_losses_bit_for_bit_the_composition(n, c, dtype, seed, big):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * (80 if big else 3)).astype(dtype)
    if big and n > 1:
        x[0, 0] = np.inf                                  # a row of NaN, like the softmax's
        x[-1, -1] = -np.inf
    t = rng.integers(-c, c, n)
    got = R.cross_entropy_loss(x, t)
    want = _loss_composition(x, t)
    assert got.dtype == want.dtype and got.shape == want.shape == (n,)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_the_losses_of_strided_logits_and_int32_targets():
    x = np.random.default_rng(2).standard_normal((6, 10)).astype(np.float32)[:, ::2]
    t = np.array([0, 4, 1, -2, 3, 4], np.int32)
    np.testing.assert_array_equal(R.cross_entropy_loss(x, t),
                                  _loss_composition(np.ascontiguousarray(x), t.astype(np.int64)))


@pytest.mark.parametrize("bad", [5, -6])
def test_a_loss_target_out_of_range_raises_the_protocol_index_error(bad):
    with pytest.raises(IndexError, match=f"^index {bad} is out of bounds for axis 1 with size 5$"):
        R.cross_entropy_loss(np.zeros((3, 5), np.float32), np.array([0, bad, 1]))


def test_the_losses_decline_where_the_parallel_kernels_serve():
    n = PAR_THRESHOLD // 10 + 1
    assert R.cross_entropy_loss(np.zeros((n, 10), np.float32), np.zeros(n, np.int64)) is None
    assert R.cross_entropy_loss(np.zeros((2, 0), np.float32), np.zeros(2, np.int64)) is None
    assert R.cross_entropy_loss(np.zeros((0, 4), np.float32), np.zeros(0, np.int64)).shape == (0,)
