"""matmul: 1-D, 2-D, batched with broadcast batch dims, every numeric dtype, views."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runtime as rt
from oracle import NUMERIC_DTYPES, sample


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4,)), ((4,), (4, 2)), ((3, 4), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (4, 1))])
def test_matmul_shapes(dtype, sa, sb, rng):
    a = sample(sa, dtype, rng)
    b = sample(sb, dtype, rng)
    got = rt.tensor(a) @ rt.tensor(b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == np.shape(want)
    tol = 1e-5 if dtype is rt.float32 else 1e-12
    if dtype.is_float:
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got.numpy(), want.astype(dtype.np))


@given(st.integers(1, 70), st.integers(0, 70), st.integers(1, 70), st.booleans(), st.booleans())
def test_matmul_sizes_and_transposed_views(m, k, n, ta, tb):
    rng = np.random.default_rng(m * 10000 + k * 100 + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    A = rt.tensor(a).T if ta else rt.tensor(a)
    B = rt.tensor(b).T if tb else rt.tensor(b)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose((A @ B).numpy(), want, rtol=1e-4, atol=1e-4)


def test_matmul_large_accuracy_vs_numpy():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((300, 257)).astype(np.float32)
    b = rng.standard_normal((257, 190)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    ours = np.abs((rt.tensor(a) @ rt.tensor(b)).numpy() - exact).max()
    theirs = np.abs(a @ b - exact).max()
    assert ours <= 4 * theirs + 1e-5


def test_matmul_mixed_dtypes_promote():
    r = rt.ones(2, 3, dtype=rt.int32) @ rt.ones(3, 2, dtype=rt.float64)
    assert r.dtype is rt.float64 and r.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_matmul_errors():
    with pytest.raises(rt.ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) are not aligned"):
        rt.ones(2, 3) @ rt.ones(4, 5)
    with pytest.raises(rt.ShapeError, match="at least one dimension"):
        rt.tensor(1.0) @ rt.ones(2)
    with pytest.raises(rt.ShapeError, match="batch"):
        rt.ones(2, 3, 4) @ rt.ones(3, 4, 5)
    with pytest.raises(rt.DTypeError, match="matmul.*bool"):
        rt.tensor([[True]]) @ rt.tensor([[True]])
