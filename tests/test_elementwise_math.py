"""The elementwise math beyond the opinfo sweeps (tests/opinfo.py rows give the forward
checks against NumPy, the gradients and the cuda simulator): ``//`` and ``%`` as a user writes
them on negative operands against Python's own operators (ints) and NumPy (floats); integer
division by zero and ``INT_MIN // -1`` (defined values, no trap); the typed refusals of bool
operands, with their exact messages; special values; methods; the ops inside a compiled
(fused) graph."""
import math

import numpy as np
import pytest

import runtime as rt

A = [-7, 7, -7, 7, -1, 1, 0, -8, 9, -9]
B = [2, -2, -2, 2, 3, -3, 5, 4, -4, -5]


def test_floor_divide_and_remainder_operators_on_ints_match_python():
    a, b = rt.tensor(A), rt.tensor(B)
    assert (a // b).tolist() == [x // y for x, y in zip(A, B)]
    assert (a % b).tolist() == [x % y for x, y in zip(A, B)]
    assert (a // b).dtype is rt.int64 and (a % b).dtype is rt.int64
    # a Python scalar on either side (reflected forms) keeps the tensor's dtype
    a32 = rt.tensor(np.array(A, np.int32))
    assert (a32 // 3).dtype is rt.int32
    assert (a32 // 3).tolist() == [x // 3 for x in A]
    assert (a32 % -3).tolist() == [x % -3 for x in A]
    assert (-7 // rt.tensor(B)).tolist() == [-7 // y for y in B]
    assert (-7 % rt.tensor(B)).tolist() == [-7 % y for y in B]
    # fmod keeps the dividend's sign (C, math.fmod)
    assert rt.fmod(a, b).tolist() == [int(math.fmod(x, y)) for x, y in zip(A, B)]


def test_floor_divide_and_remainder_operators_on_floats_match_numpy():
    x = np.array([-7.5, 7.5, -7.5, 7.5, -0.5, 0.5, -1e-3, 5.0, -5.0, 1e6], np.float32)
    y = np.array([2.0, -2.0, -2.0, 2.0, 3.0, -3.0, 1.0, 0.25, 0.3, -7.0], np.float32)
    tx, ty = rt.tensor(x), rt.tensor(y)
    np.testing.assert_array_equal((tx // ty).numpy(), np.floor_divide(x, y))
    np.testing.assert_array_equal((tx % ty).numpy(), np.remainder(x, y))
    np.testing.assert_array_equal((tx // 1.5).numpy(), np.floor_divide(x, np.float32(1.5)))
    np.testing.assert_array_equal((2.5 % ty).numpy(), np.remainder(np.float32(2.5), y))
    np.testing.assert_array_equal((-2.5 // ty).numpy(), np.floor_divide(np.float32(-2.5), y))
    np.testing.assert_array_equal(rt.fmod(tx, ty).numpy(), np.fmod(x, y))
    # int tensor with a float scalar: a float32 result
    assert (rt.tensor(A) // 2.0).dtype is rt.float32
    assert (rt.tensor(A) // 2.0).tolist() == [float(v // 2) for v in A]


def test_integer_division_by_zero_is_zero_and_int_min_wraps():
    for dt, info in ((rt.int64, np.iinfo(np.int64)), (rt.int32, np.iinfo(np.int32))):
        a = rt.tensor(np.array([5, -5, 0, info.min, info.min, info.max], dt.np))
        z = rt.tensor(np.array([0, 0, 0, 0, -1, -1], dt.np))
        assert (a // z).tolist() == [0, 0, 0, 0, info.min, -info.max]
        assert (a % z).tolist() == [0, 0, 0, 0, 0, 0]
        assert rt.fmod(a, z).tolist() == [0, 0, 0, 0, 0, 0]
        assert (a // 0).tolist() == [0] * 6 and (a % 0).tolist() == [0] * 6


def test_float_division_by_zero_follows_ieee():
    x = rt.tensor([1.0, -1.0, 0.0, 2.0])
    fd = (x // 0.0).numpy()
    assert fd[0] == np.inf and fd[1] == -np.inf and np.isnan(fd[2])
    assert np.isnan((x % 0.0).numpy()).all() and np.isnan(rt.fmod(x, 0.0).numpy()).all()
    # remainder/fmod by an infinity, of an infinity (NumPy's values)
    inf = np.float32(np.inf)
    xs = np.array([3.0, -3.0, np.inf], np.float32)
    np.testing.assert_array_equal(rt.fmod(rt.tensor(xs), inf).numpy()[:2], np.fmod(xs, inf)[:2])
    assert np.isnan(rt.fmod(rt.tensor(xs), inf).numpy()[2])


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide"])
def test_two_bool_operands_are_refused_with_a_typed_error(name):
    m = rt.tensor([True, False])
    msg = (f"{name}: not defined for two bool operands (bool, bool); cast one to an int or float "
           f"dtype first")
    with pytest.raises(rt.DTypeError) as e:
        getattr(rt, name)(m, m)
    assert str(e.value) == msg
    if name != "fmod":
        with pytest.raises(rt.DTypeError) as e:
            (m // m) if name == "floor_divide" else (m % m)
        assert str(e.value) == msg
    with pytest.raises(rt.DTypeError) as e:
        getattr(rt, name)(m, True)
    assert str(e.value) == msg
    # one bool with an int is the int (PyTorch's promotion)
    assert getattr(rt, name)(m, rt.tensor([3, 3])).dtype is rt.int64


def test_float_results_and_methods():
    a, b = rt.tensor([1, -1, 0]), rt.tensor([2, 2, -3])
    for name in ("atan2", "hypot", "copysign"):
        r = getattr(a, name)(b)
        assert r.dtype is rt.float32
        ref = getattr(np, {"atan2": "arctan2"}.get(name, name))(a.numpy().astype(np.float64),
                                                               b.numpy().astype(np.float64))
        np.testing.assert_allclose(r.numpy(), ref, rtol=1e-6)
    x = rt.tensor([0.25, 0.5])
    for name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "exp2",
                 "expm1", "log2", "log10"):
        assert np.allclose(getattr(x, name)().numpy(), getattr(rt, name)(x).numpy())
    assert x.fmod(0.2).shape == (2,) and x.remainder(0.2).shape == (2,)
    assert x.floor_divide(0.2).tolist() == [1.0, 2.0]
    assert rt.tensor([2]).acosh().dtype is rt.float32


def test_special_values():
    x = rt.tensor(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32))
    e = rt.expm1(x).numpy()
    assert np.isnan(e[0]) and e[1] == np.inf and e[2] == -1 and e[3] == 0 and np.signbit(e[4])
    assert rt.exp2(rt.tensor([3.0, -1.0, 128.0])).tolist() == [8.0, 0.5, np.inf]
    assert rt.log2(rt.tensor([8.0, 0.0])).tolist() == [3.0, -np.inf]
    assert rt.log10(rt.tensor([100.0])).tolist() == [2.0]
    assert np.isnan(rt.acosh(rt.tensor([0.5, -2.0])).numpy()).all()
    assert rt.atanh(rt.tensor([1.0, -1.0])).tolist() == [np.inf, -np.inf]
    c = rt.copysign(rt.tensor([1.0, 1.0, -2.0]), rt.tensor([-0.0, 0.0, np.inf])).numpy()
    assert c.tolist() == [-1.0, 1.0, 2.0]
    assert rt.hypot(rt.tensor([np.inf, 3.0]), rt.tensor([np.nan, 4.0])).tolist() == [np.inf, 5.0]


def test_floor_divide_is_not_differentiable_and_remainder_is():
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor([2.5, -3.5], device=ad).require_grad()
    assert not (x // 2.0).requires_grad
    g = ((x % 2.0) * 3.0).sum().backward()
    assert x.grad(g).tolist() == [3.0, 3.0]
    y = rt.tensor([2.0, 2.0], device=ad).require_grad()
    g = rt.remainder(rt.tensor([5.0, -5.0], device=ad), y).sum().backward()
    assert y.grad(g).tolist() == [-2.0, 3.0]          # -floor(a / b)


def test_the_ops_fuse_in_a_compiled_graph():
    x = np.linspace(-2.0, 2.0, 24, dtype=np.float32).reshape(4, 6)

    def f(t):
        u = rt.atan2(rt.sinh(t), rt.cosh(t) + 1.0) + rt.expm1(t * 0.5) - rt.log2(rt.abs(t) + 1.0)
        return (u // 0.25 + rt.fmod(t, 0.7) + (t % 0.3) * rt.tan(t * 0.5)).sum(axis=-1)

    g = rt.capture(f, x)
    exe = g.compile()
    got, want = exe(x)[0].numpy(), g.run(x)[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert len(exe.programs) == 1
