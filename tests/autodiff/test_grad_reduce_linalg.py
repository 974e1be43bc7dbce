"""Gradients of reductions, softmax and matmul vs central finite differences (ops and input
domains: the rows of tests/opinfo.py)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from opinfo import OPS, ids, rows

from .gradcheck import AD, check_grad

shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


@st.composite
def shape_and_axis(draw):
    shape = draw(shapes)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-len(shape), len(shape) - 1))
    else:
        axis = tuple(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    return shape, axis, draw(st.booleans())


@pytest.mark.parametrize("info", rows("reduce", grad=True), ids=ids)
@settings(max_examples=6)
@given(case=shape_and_axis(), seed=st.integers(0, 2**16))
def test_reduction(info, case, seed):
    shape, axis, keepdims = case
    if info.name == "var_ddof1":
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        if np.prod([shape[a] for a in axes]) < 2:
            return
    (x,) = info.grad([shape], np.random.default_rng(seed))
    check_grad(lambda t: info.differentiate(t, axis=axis, keepdims=keepdims), x)


def test_reduction_of_zero_dim_tensor():
    check_grad(lambda t: rt.sum(t * 2), np.array(1.5))
    check_grad(lambda t: rt.mean(rt.exp(t)), np.array(0.5))


def test_max_min_ties_split_gradient_evenly():
    x = rt.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(rt.max(x, axis=1)).backward()
    np.testing.assert_allclose(x.grad(g).numpy(), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    g = rt.min(x).backward()
    np.testing.assert_allclose(x.grad(g).numpy(), [[1, 0, 0], [0, 0, 0]])


def test_prod_with_zeros():
    # one zero: its gradient is the product of the others; two zeros: all zero
    check_grad(lambda t: rt.prod(t, axis=1), np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0]]))
    x = rt.tensor([[0.0, 2.0, 3.0]], dtype=rt.float64, device=AD).require_grad()
    g = rt.prod(x).backward()
    np.testing.assert_allclose(x.grad(g).numpy(), [[6.0, 0.0, 0.0]])


@pytest.mark.parametrize("info", rows("softmax", grad=True), ids=ids)
@settings(max_examples=6)
@given(shape=shapes, data=st.data())
def test_softmax(info, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    (x,) = info.grad([shape], np.random.default_rng(len(shape) + axis))
    check_grad(lambda t: info.differentiate(t, axis=axis), x)


def test_softmax_large_logits_is_stable():
    x = rt.tensor([[1000.0, 0.0, -1000.0]], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(rt.log_softmax(x) * rt.tensor([[1.0, 2.0, 3.0]], dtype=rt.float64)).backward()
    assert np.all(np.isfinite(x.grad(g).numpy()))


MATMUL = OPS["matmul"]
MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
    ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 2)),
    ((4, 2, 3), (4, 3, 2)), ((3,), (2, 3, 2)), ((2, 2, 3), (3,)),
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_matmul(a_shape, b_shape, rng):
    check_grad(MATMUL.differentiate, *MATMUL.grad([a_shape, b_shape], rng))


@settings(max_examples=10)
@given(batch_a=st.lists(st.integers(1, 2), max_size=2), batch_b=st.lists(st.integers(1, 2), max_size=2),
       m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3), seed=st.integers(0, 99))
def test_matmul_broadcast_batches(batch_a, batch_b, m, k, n, seed):
    try:
        np.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    check_grad(MATMUL.differentiate,
               *MATMUL.grad([tuple(batch_a) + (m, k), tuple(batch_b) + (k, n)], rng))


def test_matmul_mixed_dtypes_and_constant_operand(rng):
    w = rt.tensor(rng.normal(size=(3, 2)).astype(np.float32), device=AD)   # untracked
    check_grad(lambda x: x @ w, rng.normal(size=(2, 3)))
    x = rt.tensor(rng.normal(size=(2, 3)).astype(np.float32), device=AD).require_grad()
    y = rt.tensor(rng.normal(size=(3, 2)), dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(x @ y).backward()
    assert x.grad(g).dtype is rt.float32 and y.grad(g).dtype is rt.float64


@pytest.mark.parametrize("x, axis, ddof, want", [
    # N - ddof = 0: the forward is 0/0 = nan, the gradient 0 * inf = nan (PyTorch: nan);
    # was ZeroDivisionError in the rule
    ([[1.0], [2.0]], 1, 1, [[np.nan], [np.nan]]),
    # ddof > N: the forward divides by max(N - ddof, 0) = 0; the gradient is nan/inf too
    # (was finite: 2 / (N - ddof) < 0)
    ([[1.0, 3.0]], 1, 3, [[-np.inf, np.inf]]),
])
def test_var_gradient_without_degrees_of_freedom(x, axis, ddof, want):
    t = rt.tensor(x, device=AD).require_grad()
    y = t.var(axis=axis, ddof=ddof)
    assert not np.isfinite(y.inner().numpy()).any()
    got = t.grad(y.sum().backward()).numpy()
    np.testing.assert_array_equal(got, np.array(want, np.float32))


def test_var_gradient_of_an_empty_tensor():
    """Was ZeroDivisionError: N = 0."""
    t = rt.zeros(0, device=AD).require_grad()
    g = t.grad(t.var().backward())
    assert g.shape == (0,)
