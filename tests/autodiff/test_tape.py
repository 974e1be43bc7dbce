"""Tape behaviour: Gradients, reuse, retain_graph, no_grad, leaves, and the tape's errors."""
import threading

import numpy as np
import pytest

import runtime as rt
from runtime.errors import REQUIRES_AUTODIFF

AD = rt.autodiff(rt.cpu())


def leaf(values, dtype=rt.float64):
    return rt.tensor(values, dtype=dtype, device=AD).require_grad()


def test_backward_returns_gradients_on_inner_device():
    x = leaf([1.0, 2.0, 3.0])
    grads = (x * x).backward()               # non-scalar loss: seed is ones
    assert isinstance(grads, rt.Gradients) and len(grads) == 1 and x in grads
    g = x.grad(grads)
    assert g.device == rt.cpu() and not g.is_autodiff
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])


def test_gradients_of_reused_tensor_are_summed():
    x = leaf([3.0])
    y = x * x + x * 2 + x
    g = y.backward()
    np.testing.assert_array_equal(x.grad(g).numpy(), [2 * 3.0 + 2 + 1])


def test_grad_none_for_unused_leaf_and_non_leaf():
    x, unused = leaf([1.0]), leaf([5.0])
    h = x * 2
    g = (h * h).backward(retain_graph=True)
    assert unused.grad(g) is None and h.grad(g) is None
    np.testing.assert_array_equal(x.grad(g).numpy(), [8.0])


def test_grad_remove():
    x = leaf([1.0])
    g = (x * 4).backward()
    np.testing.assert_array_equal(x.grad_remove(g).numpy(), [4.0])
    assert x.grad(g) is None and len(g) == 0


def test_second_backward_over_freed_graph_names_retain_graph():
    x = leaf([1.0])
    y = rt.sum(rt.exp(x) * 2)
    y.backward()
    with pytest.raises(rt.GradientError, match=r"retain_graph=True"):
        y.backward()
    z = y * 3                                # a new graph over the freed one
    with pytest.raises(rt.GradientError, match=r"retain_graph=True"):
        z.backward()


def test_retain_graph_allows_repeated_backward():
    x = leaf([2.0])
    y = rt.sum(x * x * x)
    g1 = y.backward(retain_graph=True)
    g2 = y.backward(retain_graph=True)
    g3 = y.backward()
    for g in (g1, g2, g3):
        np.testing.assert_array_equal(x.grad(g).numpy(), [12.0])


def test_backward_on_untracked_tensor_names_require_grad():
    x = rt.tensor([1.0], device=AD)
    with pytest.raises(rt.GradientError, match=r"require_grad\(\)"):
        (x * 2).backward()


def test_backward_on_plain_tensor_raises_requires_autodiff():
    p = rt.tensor([1.0])
    for call in (p.backward, p.require_grad, p.inner, lambda: p.grad(None)):
        with pytest.raises(rt.RequiresAutodiffError) as e:
            call()
        assert str(e.value) == REQUIRES_AUTODIFF == "Requires autodiff tensor."
    assert not p.requires_grad
    assert p.detach() is p


def test_require_grad_on_int_or_bool_raises_dtype_error():
    for dt in (rt.int32, rt.int64, rt.bool_):
        t = rt.tensor([1], dtype=dt, device=AD)
        with pytest.raises(rt.DTypeError, match=dt.name):
            t.require_grad()


def test_require_grad_marks_in_place_and_returns_same_tensor():
    x = rt.tensor([1.0], device=AD)
    assert x.require_grad() is x and x.requires_grad
    y = x * 2
    assert y.requires_grad and y.require_grad() is y     # non-leaf: no-op


def test_no_grad_records_nothing_and_is_thread_local():
    x = leaf([1.0])
    with rt.no_grad():
        y = x * 2
        seen = {}
        t = threading.Thread(target=lambda: seen.setdefault("tracked", (x * 2).requires_grad))
        t.start()
        t.join()
    assert not y.requires_grad and seen["tracked"]
    assert (x * 2).requires_grad
    with pytest.raises(rt.GradientError):
        y.backward()

    @rt.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad


def test_non_differentiable_ops_stop_gradients():
    x = leaf([1.0, -2.0, 3.0])
    for y in (x > 0, rt.argmax(x), rt.sign(x), rt.floor(x), rt.ceil(x), rt.cast(x, rt.int64),
              rt.logical_not(x > 0), rt.eq(x, 1.0)):
        assert not y.requires_grad
    # a comparison used as a mask: only the selected branch gets gradient
    g = rt.sum(rt.where(x > 0, x, 0.0) + rt.floor(x) + rt.cast(rt.cast(x, rt.int64), rt.float64)).backward()
    np.testing.assert_array_equal(x.grad(g).numpy(), [1.0, 0.0, 1.0])


def test_detach_stops_gradient():
    x = leaf([2.0])
    g = rt.sum(x * x.detach()).backward()
    np.testing.assert_array_equal(x.grad(g).numpy(), [2.0])


def test_gradient_reduced_over_broadcast_dims():
    b = leaf([1.0, 2.0, 3.0])
    x = rt.tensor(np.ones((4, 3)), device=AD)
    g = rt.sum(x * b).backward()
    assert b.grad(g).shape == (3,)
    np.testing.assert_array_equal(b.grad(g).numpy(), [4.0, 4.0, 4.0])


def test_grad_requires_gradients_object():
    x = leaf([1.0])
    with pytest.raises(TypeError, match="Gradients"):
        x.grad({})


def test_backward_of_leaf_itself():
    x = leaf([[1.0, 2.0]])
    np.testing.assert_array_equal(x.grad(x.backward()).numpy(), [[1.0, 1.0]])


def test_deep_chain_does_not_recurse():
    x = leaf([1.0])
    y = x
    for _ in range(3000):
        y = y + 0.0
    np.testing.assert_array_equal(x.grad(y.backward()).numpy(), [1.0])
