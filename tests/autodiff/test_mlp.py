"""A two-layer MLP with cross-entropy against an independent NumPy reference; nn.functional."""
import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional


def numpy_mlp(x, y, w1, b1, w2, b2):
    """Loss and gradients of relu(x w1^T + b1) w2^T + b2 with mean cross-entropy, by hand."""
    n = x.shape[0]
    z1 = x @ w1.T + b1
    a1 = np.maximum(z1, 0)
    z2 = a1 @ w2.T + b2
    m = z2.max(axis=1, keepdims=True)
    logp = z2 - m - np.log(np.exp(z2 - m).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(n), y].mean()
    dz2 = np.exp(logp)
    dz2[np.arange(n), y] -= 1
    dz2 /= n
    dw2, db2 = dz2.T @ a1, dz2.sum(axis=0)
    da1 = dz2 @ w2
    dz1 = da1 * (z1 > 0)
    dw1, db1 = dz1.T @ x, dz1.sum(axis=0)
    return loss, (dw1, db1, dw2, db2)


@pytest.mark.parametrize("mode", ["none", "balanced"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_two_layer_mlp_matches_numpy(mode, dtype):
    rng = np.random.default_rng(0)
    n, d, h, c = 16, 12, 10, 5
    x = rng.normal(size=(n, d)).astype(dtype)
    y = rng.integers(0, c, size=n)
    params = [rng.normal(size=(h, d)) / np.sqrt(d), rng.normal(size=h) * 0.1,
              rng.normal(size=(c, h)) / np.sqrt(h), rng.normal(size=c) * 0.1]
    params = [p.astype(dtype) for p in params]
    ad = rt.autodiff(rt.cpu(), checkpointing=mode)
    ps = [rt.tensor(p, device=ad).require_grad() for p in params]
    xt = rt.tensor(x, device=ad)
    logits = F.linear(rt.relu(F.linear(xt, ps[0], ps[1])), ps[2], ps[3])
    loss = F.cross_entropy(logits, rt.tensor(y))
    grads = loss.backward()
    want_loss, want_grads = numpy_mlp(*(a.astype(np.float64) for a in (x,)), y,
                                      *(p.astype(np.float64) for p in params))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(loss.numpy(), want_loss, rtol=tol, atol=tol)
    for p, w in zip(ps, want_grads):
        g = p.grad(grads)
        assert g.dtype.np == dtype and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w, rtol=tol * 10, atol=tol)


def test_sgd_training_lowers_the_loss():
    rng = np.random.default_rng(1)
    ad = rt.autodiff(rt.cpu())
    xa = rng.normal(size=(64, 4)).astype(np.float32)
    x = rt.tensor(xa, device=ad)
    y = rt.tensor((xa[:, 0] - xa[:, 1] > 0).astype(np.int64))
    w1 = rt.tensor(rng.normal(size=(16, 4)).astype(np.float32) * 0.5, device=ad).require_grad()
    w2 = rt.tensor(rng.normal(size=(2, 16)).astype(np.float32) * 0.5, device=ad).require_grad()
    losses = []
    for _ in range(30):
        loss = F.cross_entropy(F.linear(rt.tanh(F.linear(x, w1)), w2), y)
        g = loss.backward()
        losses.append(float(loss))
        w1 = rt.from_inner(w1.inner() - w1.grad(g) * 0.5).require_grad()
        w2 = rt.from_inner(w2.inner() - w2.grad(g) * 0.5).require_grad()
    assert losses[-1] < 0.5 * losses[0]


def test_cross_entropy_checks_and_large_logits():
    ad = rt.autodiff(rt.cpu())
    logits = rt.tensor([[1000.0, -1000.0], [0.0, 0.0]], dtype=rt.float64, device=ad).require_grad()
    loss = F.cross_entropy(logits, [0, 1])
    np.testing.assert_allclose(loss.numpy(), np.log(2) / 2)
    g = logits.grad(loss.backward()).numpy()
    np.testing.assert_allclose(g, [[0.0, 0.0], [0.25, -0.25]], atol=1e-12)
    with pytest.raises(rt.IndexOutOfRangeError):
        F.cross_entropy(logits, [0, 2])
    with pytest.raises(rt.DTypeError):
        F.cross_entropy(logits, rt.tensor([0.0, 1.0]))
    with pytest.raises(rt.ShapeError):
        F.cross_entropy(logits, [0])
    np.testing.assert_allclose(F.cross_entropy(logits, [0, 1], reduction="sum").numpy(), np.log(2))


def test_mse_loss_and_linear_without_bias(rng):
    from .gradcheck import check_grad
    target = rng.normal(size=(3, 2))
    check_grad(lambda a: F.mse_loss(a, rt.tensor(target)), rng.normal(size=(3, 2)))
    check_grad(lambda a, w: F.linear(a, w), rng.normal(size=(3, 4)), rng.normal(size=(2, 4)))
    check_grad(lambda a, w, b: F.linear(a, w, b), rng.normal(size=(3, 4)),
               rng.normal(size=(2, 4)), rng.normal(size=2))
    assert F.mse_loss(rt.tensor([1.0, 3.0]), rt.tensor([0.0, 0.0]), reduction="none").tolist() == [1.0, 9.0]
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(rt.tensor([1.0]), rt.tensor([1.0]), reduction="avg")


def test_dropout_seeded_scaled_and_differentiable():
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor(np.ones((50, 40)), dtype=rt.float64, device=ad).require_grad()
    rt.manual_seed(3, device=rt.cpu())
    y = F.dropout(x, 0.25)
    rt.manual_seed(3, device=rt.cpu())
    y2 = F.dropout(x, 0.25)
    np.testing.assert_array_equal(y.numpy(), y2.numpy())
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.75])
    assert 0.15 < (y.numpy() == 0).mean() < 0.35
    g = x.grad(rt.sum(y).backward()).numpy()
    np.testing.assert_array_equal(g, y.numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)
