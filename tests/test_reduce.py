"""Reductions, softmax family and argmax/argmin against NumPy (rows of tests/opinfo.py)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from opinfo import OPS, cases, rows
from oracle import FLOAT_DTYPES, assert_close, sample


@pytest.mark.parametrize("info,dtype", cases(rows("reduce")))
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
def test_reduce_all_dtypes(info, dtype, axis, rng):
    (x,) = info.inputs((3, 4, 5), dtype, rng)
    got = info.fn(rt.tensor(x), axis=axis)
    out = info.out(dtype)
    assert got.dtype is out
    assert_close(got, info.reference(x, axis=axis, keepdims=False), out, tol=info.tol)


@given(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6), st.data())
def test_reduce_axes_keepdims(shape, data):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float64)
    axes = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1)
                               .map(tuple)))
    keep = data.draw(st.booleans())
    t = rt.tensor(x)
    for name in ("sum", "max", "mean"):
        got = OPS[name].fn(t, axis=axes, keepdims=keep)
        want = OPS[name].reference(x, axis=axes, keepdims=keep)
        assert got.shape == np.shape(want)
        # atol: the kernels' summation order follows the host's vector width, so a sum that
        # nearly cancels differs from NumPy's by rounding (~1e-16 absolute), not by rtol
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    tv = t.permute(tuple(reversed(range(len(shape)))))
    np.testing.assert_allclose(rt.sum(tv, axis=0).numpy(), x.T.sum(axis=0), rtol=1e-12,
                               atol=1e-12)


def test_var_ddof():
    x = np.random.default_rng(3).standard_normal((4, 6))
    assert_close(rt.var(rt.tensor(x), axis=1, ddof=1), np.var(x, axis=1, ddof=1))
    assert_close(rt.tensor(x).var(), np.var(x))


def test_sum_precision_no_worse_than_numpy():
    x = np.random.default_rng(4).uniform(0, 1, 1_000_000).astype(np.float32)
    exact = np.sum(x.astype(np.float64))
    ours = abs(float(rt.tensor(x).sum().item()) - exact)
    theirs = abs(float(np.sum(x)) - exact)
    assert ours <= theirs * 1.01 + 1e-3


def test_nan_propagates_in_max_min_and_argmax():
    x = rt.tensor(np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32))
    assert np.isnan(rt.max(x).item()) and np.isnan(rt.min(x, axis=1).numpy()[0])
    assert rt.max(x, axis=1).numpy()[1] == 6.0
    assert rt.argmax(x, axis=1).tolist() == [1, 2]
    assert rt.argmin(x, axis=1).tolist() == [1, 0]


@pytest.mark.parametrize("info,dtype", cases(rows("arg_reduce")))
def test_argmax_argmin(info, dtype, rng):
    (x,) = info.inputs((4, 6), dtype, rng)
    t = rt.tensor(x)
    assert info.fn(t).item() == info.reference(x)
    np.testing.assert_array_equal(info.fn(t, axis=0).numpy(), info.reference(x, axis=0))
    np.testing.assert_array_equal(info.fn(t, axis=-1, keepdims=True).numpy(),
                                  info.reference(x, axis=-1, keepdims=True))
    assert info.fn(t, axis=1).dtype is info.out(dtype)


def test_argmax_first_of_ties():
    assert rt.argmax(rt.tensor([1, 3, 3, 2])).item() == 1
    assert rt.argmin(rt.tensor([[2, 0, 0]]), axis=1).tolist() == [1]


# softmax, log_softmax and logsumexp over one axis, on a wide range (-20, 20)
@pytest.mark.parametrize("info,dtype", cases(rows("softmax") + [OPS["logsumexp"]],
                                             dtypes=FLOAT_DTYPES))
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_family(info, dtype, axis, rng):
    low, high = OPS["softmax"].domain
    x = sample((3, 5, 4), dtype, rng, low=low, high=high)
    got = info.fn(rt.tensor(x), axis=axis)
    assert_close(got, info.reference(x, axis=axis), info.out(dtype), tol=info.tol)


def test_softmax_extremes_and_ints():
    x = rt.tensor(np.array([[1000.0, 1000.0], [-np.inf, 0.0]], np.float32))
    np.testing.assert_allclose(rt.softmax(x).numpy(), [[0.5, 0.5], [0.0, 1.0]])
    assert rt.logsumexp(rt.tensor([-np.inf, -np.inf])).item() == -np.inf
    assert rt.softmax(rt.tensor([1, 2, 3])).dtype is rt.float32


def test_empty_and_0d_reductions():
    z = rt.zeros(0, 3)
    assert rt.sum(z).item() == 0 and rt.sum(z, axis=0).tolist() == [0, 0, 0]
    assert rt.prod(z).item() == 1
    assert rt.sum(z, axis=1).shape == (0,)
    assert np.isnan(rt.mean(z).item())
    s = rt.tensor(3.5)
    assert rt.sum(s).item() == 3.5 and rt.max(s).item() == 3.5 and rt.argmax(s).item() == 0
    assert rt.sum(rt.tensor([1, 2, 3]), axis=()).tolist() == [1, 2, 3]
    with pytest.raises(rt.ShapeError, match=r"max: cannot reduce a zero-size axis.*\(0, 3\)"):
        rt.max(z, axis=0)
    with pytest.raises(rt.ShapeError, match="argmax"):
        rt.argmax(z)


def test_large_reductions_parallel_paths():
    x = np.random.default_rng(6).standard_normal((513, 700)).astype(np.float32)
    t = rt.tensor(x)
    np.testing.assert_allclose(rt.sum(t).item(), x.astype(np.float64).sum(), rtol=1e-5)
    np.testing.assert_allclose(rt.sum(t, axis=0).numpy(), x.astype(np.float64).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rt.sum(t, axis=1).numpy(), x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(rt.max(t, axis=1).numpy(), x.max(1))
    np.testing.assert_array_equal(rt.argmax(t, axis=1).numpy(), x.argmax(1))
    np.testing.assert_array_equal(rt.argmax(t, axis=0).numpy(), x.argmax(0))


@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (64, 16, 9, 8)])   # serial, parallel (split)
def test_per_channel_reductions_over_one_outer_dim(shape):
    """Reductions over (0, 2, 3) of NCHW (the conv bias gradient and batch-norm statistics):
    the reduced dims coalesce to (N, H*W), walked without the per-row index division; also a
    channel-sliced view (strided rows) and the one-pass ops' kernels for max/min/mean."""
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    t = rt.tensor(x)
    ref = x.astype(np.float64)
    np.testing.assert_allclose(rt.sum(t, axis=(0, 2, 3)).numpy(), ref.sum((0, 2, 3)),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(rt.mean(t, axis=(0, 2, 3)).numpy(), ref.mean((0, 2, 3)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(rt.max(t, axis=(0, 2, 3)).numpy(), x.max((0, 2, 3)))
    np.testing.assert_array_equal(rt.min(t, axis=(0, 2, 3), keepdims=True).numpy(),
                                  x.min((0, 2, 3), keepdims=True))
    v = t[:, 1::2]
    np.testing.assert_allclose(rt.sum(v, axis=(0, 2, 3)).numpy(), ref[:, 1::2].sum((0, 2, 3)),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("info", [r for r in rows("reduce") if r.dtypes], ids=lambda r: r.name)
@pytest.mark.parametrize("shape", [(40, 3, 2, 3), (9, 2, 4, 4), (5, 1, 1, 7)])
def test_reduce_over_all_but_the_channel_axis(info, shape, rng):
    # a conv bias gradient's reduction: short contiguous rows per channel, summed column by
    # column; few channels, so the work of one is split between tasks, mid-row
    dtype = info.dtypes[0]
    (x,) = info.inputs(shape, dtype, rng)
    got = info.fn(rt.tensor(x), axis=(0, 2, 3))
    assert_close(got, info.reference(x, axis=(0, 2, 3), keepdims=False), info.out(dtype),
                 tol=info.tol)
