"""Shared test oracle: dtype lists, random samples and NumPy comparisons (float64 reference, cast)."""
import numpy as np

import runtime as rt

NP = {rt.float32: np.float32, rt.float64: np.float64, rt.int32: np.int32,
      rt.int64: np.int64, rt.bool_: np.bool_}
ALL_DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_]
FLOAT_DTYPES = [rt.float32, rt.float64]
NUMERIC_DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64]


def sample(shape, dtype, rng, low=-3.0, high=3.0):
    """Random test data of an rt dtype as a NumPy array."""
    if dtype is rt.bool_:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        return rng.integers(int(low) - 2, int(high) + 3, size=shape).astype(NP[dtype])
    return rng.uniform(low, high, size=shape).astype(NP[dtype])


def assert_close(got, want, dtype=None, tol=None):
    """Compare a tensor (or array) with a float64 reference cast to the result dtype.

    ``tol``: rtol (= atol) for float results, default 1e-5 (float32) / 1e-12 (float64); a
    ``{dtype: tol}`` dict (an ``opinfo`` row's) is looked up by the result dtype."""
    g = got.numpy() if isinstance(got, rt.Tensor) else np.asarray(got)
    w = np.asarray(want)
    if isinstance(got, rt.Tensor):
        assert g.shape == tuple(got.shape)
        if dtype is not None:
            assert got.dtype is dtype, (got.dtype, dtype)
        w = w.astype(got.dtype.np) if got.dtype is not rt.bool_ else w.astype(bool)
    assert g.shape == w.shape, (g.shape, w.shape)
    if g.dtype.kind == "f":
        rtol = 1e-5 if g.dtype == np.float32 else 1e-12
        if isinstance(tol, dict):
            tol = tol[rt.float32 if g.dtype == np.float32 else rt.float64]
        rtol = rtol if tol is None else tol
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


