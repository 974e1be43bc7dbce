"""``rt.grad`` and ``rt.value_and_grad``: values and gradients against NumPy (float64), tuple
``argnums``, the same results inside ``rt.compile``, and the typed errors."""
import numpy as np
import pytest

import runtime as rt

W = np.array([0.5, -1.0, 2.0, 0.25])
X = np.array([1.0, 2.0, -3.0, 0.5])


def f(w, x):
    return rt.sum(rt.tanh(w * x) ** 2)


def _want(w, x):
    t = np.tanh(w * x)
    return (t ** 2).sum(), 2 * t * (1 - t ** 2) * x, 2 * t * (1 - t ** 2) * w


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_value_and_grad_against_numpy(compiled):
    g = rt.value_and_grad(f, argnums=(0, 1))
    g = rt.compile(g) if compiled else g
    v, (gw, gx) = g(rt.tensor(W), rt.tensor(X))
    want_v, want_gw, want_gx = _want(W, X)
    np.testing.assert_allclose(v.numpy(), want_v, rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), want_gw, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), want_gx, rtol=1e-12)
    assert v.device == rt.cpu() and gw.device == rt.cpu()


def test_grad_of_one_argument_and_an_unused_one():
    gw = rt.grad(f)(rt.tensor(W), rt.tensor(X))
    np.testing.assert_allclose(gw.numpy(), _want(W, X)[1], rtol=1e-12)
    g_unused = rt.grad(lambda a, b: rt.sum(a * 2.0), argnums=1)(rt.tensor(W), rt.tensor(X))
    np.testing.assert_array_equal(g_unused.numpy(), np.zeros(4))


def test_autodiff_arguments_are_taken_as_fresh_leaves():
    ad = rt.autodiff(rt.cpu())
    w = rt.tensor(W).to(ad).require_grad()
    gw = rt.grad(f)(w * 1.0, rt.tensor(X).to(ad))
    np.testing.assert_allclose(gw.numpy(), _want(W, X)[1], rtol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda: rt.grad(None), rt.ArgumentTypeError, "grad: fn must be callable, got NoneType"),
    (lambda: rt.grad(f, argnums="0"), rt.ArgumentTypeError,
     "grad: argnums must be an int or a non-empty tuple of ints, got '0'"),
    (lambda: rt.grad(f, argnums=2)(rt.tensor(W), rt.tensor(X)), rt.ArgumentTypeError,
     "grad: argnums 2 is out of range for 2 argument(s)"),
    (lambda: rt.grad(f)(W, rt.tensor(X)), rt.ArgumentTypeError,
     "grad: argument 0 must be a Tensor, got ndarray"),
    (lambda: rt.value_and_grad(lambda w: w * 2.0)(rt.tensor(W)), rt.GradientError,
     "value_and_grad: fn must return a 0-d tensor (a scalar loss), got a tensor of shape (4,)"),
], ids=["not-callable", "argnums-str", "argnums-range", "not-a-tensor", "not-scalar"])
def test_misuse_is_typed(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value).startswith(message)
