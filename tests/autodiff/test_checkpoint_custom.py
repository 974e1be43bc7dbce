"""Balanced checkpointing (identical gradients, values dropped and recomputed) and custom ops."""
import numpy as np
import pytest

import runtime as rt
from runtime.autodiff import tape
from runtime.errors import AUTODIFF_NOT_MARKED


def _net(device, rng, blocks=4, n=8):
    ws = [rt.tensor(rng.normal(size=(n, n)) / np.sqrt(n), device=device).require_grad()
          for _ in range(blocks)]
    x = rt.tensor(rng.normal(size=(3, n)), device=device).require_grad()
    h = x
    for w in ws:
        h = h @ w                                  # compute-bound: kept
        h = rt.tanh(h) * 1.5 + rt.sigmoid(h)       # memory-bound: dropped under balanced
        h = rt.exp(-h * h)[:, :] + rt.relu(h)
    loss = rt.logsumexp(rt.softmax(h, axis=1) * h)
    return loss, [x] + ws


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_balanced_gradients_identical_to_none(dtype):
    results = []
    for mode in ("none", "balanced"):
        loss, params = _net(rt.autodiff(rt.cpu(), checkpointing=mode),
                            np.random.default_rng(0))
        g = loss.backward()
        results.append([p.grad(g).numpy() for p in params] + [loss.numpy()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_balanced_drops_memory_bound_outputs_and_keeps_compute_bound():
    bal = rt.autodiff(rt.cpu(), checkpointing="balanced")
    x = rt.tensor(np.ones((2, 2)), device=bal).require_grad()
    m = x @ x
    e = rt.exp(m)
    assert m._payload.node.value is not None            # matmul keeps its output
    assert e._payload.node.value is None and e._payload.node.ref is not None
    none = rt.autodiff(rt.cpu())
    y = rt.tensor(np.ones((2, 2)), device=none).require_grad()
    assert rt.exp(y)._payload.node.value is not None     # "none" keeps everything


def test_balanced_recomputes_dropped_values(monkeypatch):
    bal = rt.autodiff(rt.cpu(), checkpointing="balanced")
    x = rt.tensor(np.full((2, 2), 0.5), device=bal).require_grad()
    loss = rt.sum(rt.exp(rt.tanh(x @ x)))       # tanh/exp outputs dropped once unreferenced
    exp_node = loss._payload.node.inputs[0]
    assert exp_node.spec.name == "exp" and exp_node.value is None and exp_node.ref() is None
    calls = []
    from runtime.autodiff import checkpoint
    real = checkpoint.value_of

    def spy(node, cache):
        v = real(node, cache)
        calls.append(node.spec.name if node.spec else "leaf")
        return v
    monkeypatch.setattr(tape, "value_of", spy)
    g = loss.backward()
    assert "exp" in calls and "tanh" in calls
    t = np.tanh(np.full((2, 2), 0.5))
    np.testing.assert_allclose(x.grad(g).numpy(),
                               2 * ((np.exp(t) * (1 - t * t)) @ np.full((2, 2), 0.5)))


def test_balanced_retain_graph_recomputes_each_time():
    bal = rt.autodiff(rt.cpu(), checkpointing="balanced")
    x = rt.tensor([0.3, 0.7], dtype=rt.float64, device=bal).require_grad()
    y = rt.sum(rt.sin(rt.exp(x)))
    g1, g2 = y.backward(retain_graph=True), y.backward()
    np.testing.assert_array_equal(x.grad(g1).numpy(), x.grad(g2).numpy())
    with pytest.raises(rt.GradientError, match="retain_graph"):
        y.backward()


# ---------------------------------------------------------------------------- custom ops
def test_custom_op_forward_backward():
    cube = rt.custom_op("test_cube", lambda a: a ** 3,
                        backward=lambda g, x, out: g * x * x * 3)
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, device=ad).require_grad()
    y = cube(x)
    np.testing.assert_array_equal(y.numpy(), [1.0, 8.0])
    g = rt.sum(y).backward()
    np.testing.assert_array_equal(x.grad(g).numpy(), [3.0, 12.0])
    np.testing.assert_array_equal(cube(rt.tensor([3.0])).numpy(), [27.0])   # plain device too


def test_custom_op_two_inputs_shape_fn_and_none_gradient():
    def fwd(a, b):
        return (a[:, None] * b[None, :]).astype(a.dtype)
    outer = rt.custom_op("test_outer", fwd,
                         backward=lambda g, a, b, out: (rt.sum(g * b, axis=1), None),
                         shape=lambda pa, pb: ((pa[0][0], pb[0][0]), pa[1]))
    ad = rt.autodiff(rt.cpu())
    a = rt.tensor([1.0, 2.0], device=ad).require_grad()
    b = rt.tensor([3.0, 4.0, 5.0], device=ad).require_grad()
    y = outer(a, b)
    assert y.shape == (2, 3)
    g = rt.sum(y).backward()
    np.testing.assert_array_equal(a.grad(g).numpy(), [12.0, 12.0])
    assert b.grad(g) is None


def test_custom_op_without_backward_raises_only_when_tracked_and_recording():
    double = rt.custom_op("test_double_nobwd", lambda a: a * 2)
    ad = rt.autodiff(rt.cpu())
    np.testing.assert_array_equal(double(rt.tensor([1.0], device=ad)).numpy(), [2.0])
    x = rt.tensor([1.0], device=ad).require_grad()
    with pytest.raises(rt.AutodiffNotMarkedError) as e:
        double(x)
    assert str(e.value) == AUTODIFF_NOT_MARKED == "Operation not marked for autodiff."
    with rt.no_grad():
        np.testing.assert_array_equal(double(x).numpy(), [2.0])


def test_custom_op_registration_rules():
    rt.custom_op("test_twice", lambda a: a)
    with pytest.raises(ValueError, match="replace=True"):
        rt.custom_op("test_twice", lambda a: a)
    neg = rt.custom_op("test_twice", lambda a: -a, replace=True)
    np.testing.assert_array_equal(neg(rt.tensor([1.0])).numpy(), [-1.0])
    with pytest.raises(ValueError, match="built-in"):
        rt.custom_op("add", lambda a, b: a + b, replace=True)


def test_custom_op_gradient_matches_finite_differences(rng):
    from .gradcheck import check_grad
    soft = rt.custom_op("test_softplus", lambda a: np.log1p(np.exp(a)),
                        backward=lambda g, x, out: g * rt.sigmoid(x))
    check_grad(soft, rng.normal(size=(2, 3)))


def test_custom_op_balanced_keeps_output():
    sq = rt.custom_op("test_sq_bal", lambda a: a * a, backward=lambda g, x, out: g * 2 * x)
    bal = rt.autodiff(rt.cpu(), checkpointing="balanced")
    x = rt.tensor([3.0], device=bal).require_grad()
    y = sq(x)
    assert y._payload.node.value is not None
    np.testing.assert_array_equal(x.grad(rt.sum(y).backward()).numpy(), [6.0])
