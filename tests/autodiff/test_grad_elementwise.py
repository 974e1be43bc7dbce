"""Gradients of elementwise, select and cast ops vs central finite differences (the ops and
their input domains are the rows of tests/opinfo.py)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from opinfo import OPS, ids, rows

from .gradcheck import AD, check_grad

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast together (size-1 and missing leading dims)."""
    out = draw(shapes)
    def sub(s):
        n = draw(st.integers(0, len(s)))
        return tuple(1 if draw(st.booleans()) else d for d in s[len(s) - n:])
    return sub(out), sub(out)


# every unary/cast row of tests/opinfo.py with a gradient domain (clamp variants included)
GRAD_UNARY = rows("unary", "cast", grad=True)
GRAD_BINARY = rows("binary", grad=True)


@pytest.mark.parametrize("info", GRAD_UNARY, ids=ids)
@settings(max_examples=4)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_unary(info, shape, seed):
    (x,) = info.grad([shape], np.random.default_rng(seed))
    check_grad(info.differentiate, x)


@pytest.mark.parametrize("info", GRAD_BINARY, ids=ids)
@settings(max_examples=6)
@given(pair=broadcast_pair(), seed=st.integers(0, 2**16))
def test_binary_broadcasting(info, pair, seed):
    a, b = info.grad(list(pair), np.random.default_rng(seed))
    check_grad(info.differentiate, a, b)


@pytest.mark.parametrize("info", GRAD_BINARY, ids=ids)
def test_binary_with_python_scalars(info, rng):
    fn = info.differentiate
    x = rng.uniform(0.5, 2.0, size=(2, 3))
    check_grad(lambda t: fn(t, 1.5), x)
    check_grad(lambda t: fn(1.25, t), x)


def test_maximum_minimum_ties_split_evenly():
    a = rt.tensor([1.0, 2.0, 3.0], dtype=rt.float64, device=AD).require_grad()
    b = rt.tensor([1.0, 5.0, 3.0], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(rt.maximum(a, b)).backward()
    np.testing.assert_array_equal(a.grad(g).numpy(), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(b.grad(g).numpy(), [0.5, 1.0, 0.5])
    g = rt.sum(rt.minimum(a, b)).backward()
    np.testing.assert_array_equal(a.grad(g).numpy(), [0.5, 1.0, 0.5])


def test_relu_abs_clamp_at_kinks():
    x = rt.tensor([0.0, -1.0, 2.0], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(rt.relu(x) + rt.abs(x) + rt.clamp(x, -1.0, 1.0)).backward()
    # relu'(0)=0, abs'(0)=0, clamp passes the gradient at the bounds (min <= x <= max)
    np.testing.assert_array_equal(x.grad(g).numpy(), [1.0, -1.0 + 1.0, 1.0 + 1.0 + 0.0])


def test_pow_zero_base_and_exponent_follow_pytorch():
    a = rt.tensor([0.0, 2.0], dtype=rt.float64, device=AD).require_grad()
    b = rt.tensor([2.0, 0.0], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(rt.pow(a, b)).backward()
    np.testing.assert_allclose(a.grad(g).numpy(), [0.0, 0.0])
    np.testing.assert_allclose(b.grad(g).numpy(), [0.0, np.log(2.0)])


@settings(max_examples=8)
@given(shapes3=st.tuples(shapes, shapes, shapes), seed=st.integers(0, 2**16))
def test_where_broadcasting(shapes3, seed):
    rng = np.random.default_rng(seed)
    try:
        np.broadcast_shapes(*shapes3)
    except ValueError:
        return
    cond = rt.tensor(rng.random(shapes3[0]) < 0.5, device=AD)
    check_grad(lambda a, b: OPS["where"].fn(cond, a, b),
               rng.uniform(-1, 1, shapes3[1]), rng.uniform(-1, 1, shapes3[2]))


def test_where_with_scalar_branch(rng):
    x = rng.uniform(-1, 1, (3, 2))
    check_grad(lambda t: rt.where(t > 0, t * 2, 0.5), x)


def test_cast_float32_gradient_comes_back_as_float32():
    x = rt.tensor([1.0, 2.0], device=AD).require_grad()
    y = rt.cast(x, rt.float64) * 3
    g = rt.sum(y).backward()
    assert x.grad(g).dtype is rt.float32
    np.testing.assert_array_equal(x.grad(g).numpy(), [3.0, 3.0])


def test_mixed_precision_gradients_keep_each_input_dtype():
    a = rt.tensor([1.0, 2.0], dtype=rt.float32, device=AD).require_grad()
    b = rt.tensor([3.0, 4.0], dtype=rt.float64, device=AD).require_grad()
    g = rt.sum(a * b).backward()
    assert a.grad(g).dtype is rt.float32 and b.grad(g).dtype is rt.float64
    np.testing.assert_array_equal(a.grad(g).numpy(), [3.0, 4.0])


def test_zero_dim_gradients():
    x = rt.tensor(np.float64(1.3), device=AD).require_grad()
    y = rt.exp(x) * x
    assert y.shape == () and y.numpy().shape == ()
    g = y.backward()
    assert x.grad(g).shape == ()
    np.testing.assert_allclose(x.grad(g).numpy(), np.exp(1.3) * 2.3)


def test_pow_gradient_of_a_scalar_zero_base():
    """d/db 0^b: 0 for b >= 0, -inf for b < 0 (0^b log 0 = inf * -inf), the same as for a tensor
    base of zeros and as PyTorch (was nan for the Python-scalar base)."""
    b = rt.tensor([-2.0, -1.0, 0.0, 2.0], device=AD).require_grad()
    got = b.grad(rt.pow(0.0, b).sum().backward()).numpy()
    want = np.array([-np.inf, -np.inf, 0.0, 0.0], np.float32)
    np.testing.assert_array_equal(got, want)
    base = rt.zeros(4, device=AD)
    b2 = rt.tensor([-2.0, -1.0, 0.0, 2.0], device=AD).require_grad()
    np.testing.assert_array_equal(b2.grad(rt.pow(base, b2).sum().backward()).numpy(), want)
