"""Central finite differences in float64 against the tape's gradients."""
from __future__ import annotations

import numpy as np

import runtime as rt

AD = rt.autodiff(rt.cpu())


def numeric_grads(fn, arrays, weights, eps=1e-6):
    """d(sum(fn(*arrays) * weights))/d(array) for each array, by central differences."""
    def value(arrs):
        out = fn(*[rt.tensor(a) for a in arrs]).numpy().astype(np.float64)
        return float(np.sum(out * weights))

    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a, dtype=np.float64)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (value(plus) - value(minus)) / (2 * eps)
        grads.append(g)
    return grads


def check_grad(fn, *arrays, rtol=1e-5, atol=1e-6, seed=0, device=AD):
    """Assert the autodiff gradients of ``fn`` match finite differences (float64)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    xs = [rt.tensor(a, device=device).require_grad() for a in arrays]
    out = fn(*xs)
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.5, 1.5, size=out.shape)
    loss = rt.sum(out * rt.tensor(weights, device=device))
    grads = loss.backward()
    want = numeric_grads(fn, arrays, weights)
    for i, (x, w) in enumerate(zip(xs, want)):
        g = x.grad(grads)
        got = np.zeros_like(w) if g is None else g.numpy()
        assert g is None or g.device == device.inner
        assert got.shape == w.shape, (i, got.shape, w.shape)
        np.testing.assert_allclose(got, w, rtol=rtol, atol=atol, err_msg=f"input {i}")
    return out
