"""Elementwise ops against NumPy (float64 reference, cast) for every dtype they accept."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from oracle import ALL_DTYPES, FLOAT_DTYPES, NP, NUMERIC_DTYPES, assert_close, sample

_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY_REF = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.where(x > 0, x, 0 * x),
    "erf": _erf, "reciprocal": lambda x: 1 / x, "sign": np.sign, "floor": np.floor,
    "ceil": np.ceil,
}
FLOAT_OUT = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "reciprocal"}
POSITIVE = {"log", "sqrt", "rsqrt"}


def _unary_out_dtype(name, dt):
    if name in FLOAT_OUT:
        return dt if dt.is_float else rt.float32
    return dt


@pytest.mark.parametrize("name", sorted(UNARY_REF))
@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_unary_matches_numpy(name, dtype, rng):
    low = 0.1 if name in POSITIVE else -3
    x = sample((3, 5), dtype, rng, low=low if dtype.is_float else (1 if name in POSITIVE else -3))
    if name == "reciprocal" and dtype.is_int:
        x[x == 0] = 1
    got = getattr(rt, name)(rt.tensor(x))
    out = _unary_out_dtype(name, dtype)
    want = UNARY_REF[name](x.astype(np.float64))
    g = got.numpy()
    assert got.dtype is out and got.shape == (3, 5)
    w = want.astype(out.np)
    if out.is_float:
        tol = 2e-6 if out is rt.float32 else 1e-13
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "relu", "floor", "ceil"])
def test_numeric_unary_rejects_bool(name):
    with pytest.raises(rt.DTypeError, match=name):
        getattr(rt, name)(rt.tensor([True, False]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_gelu_both_forms(dtype, rng):
    x = sample((4, 7), dtype, rng).astype(np.float64)
    exact = 0.5 * x * (1 + _erf(x / np.sqrt(2)))
    approx = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    t = rt.tensor(x.astype(dtype.np))
    tol = 2e-6 if dtype is rt.float32 else 1e-12
    np.testing.assert_allclose(rt.gelu(t).numpy(), exact, rtol=tol, atol=tol)
    np.testing.assert_allclose(rt.gelu(t, approximate="tanh").numpy(), approx, rtol=tol, atol=tol)
    with pytest.raises(ValueError):
        rt.gelu(t, approximate="fast")


def test_special_values():
    x = rt.tensor(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30], np.float32))
    np.testing.assert_array_equal(rt.exp(x).numpy()[:3], np.array([np.nan, np.inf, 0.0], np.float32))
    np.testing.assert_array_equal(rt.relu(x).numpy()[[1, 2, 3]], [np.inf, 0, 0])
    assert np.isnan(rt.relu(x).numpy()[0]) and np.isnan(rt.sign(x).numpy()[0])
    np.testing.assert_array_equal(rt.tanh(x).numpy()[1:4], [1, -1, 0])
    np.testing.assert_array_equal(rt.sigmoid(x).numpy()[1:3], [1, 0])
    lg = rt.log(rt.tensor(np.array([0.0, -1.0, np.inf], np.float32))).numpy()
    assert lg[0] == -np.inf and np.isnan(lg[1]) and lg[2] == np.inf


def test_logical_not_and_ops_all_dtypes(rng):
    for dt in ALL_DTYPES:
        x = sample((6,), dt, rng)
        assert_close(rt.logical_not(rt.tensor(x)), np.logical_not(x), rt.bool_)
        assert_close(~rt.tensor(x), np.logical_not(x), rt.bool_)


BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}
CMP = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}


@pytest.mark.parametrize("name", sorted(BINARY_REF))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_binary_same_dtype(name, dtype, rng):
    if dtype is rt.bool_ and name in ("sub",):
        with pytest.raises(rt.DTypeError, match="sub"):
            rt.sub(rt.tensor([True]), rt.tensor([False]))
        return
    a = sample((4, 3), dtype, rng)
    b = sample((4, 3), dtype, rng)
    if name == "div" and not dtype.is_float:
        b = np.where(b == 0, 1, b).astype(b.dtype)
    got = getattr(rt, name)(rt.tensor(a), rt.tensor(b))
    want = BINARY_REF[name](a.astype(np.float64), b.astype(np.float64))
    if name in CMP:
        out = rt.bool_
    elif name == "div":
        out = dtype if dtype.is_float else rt.float32
    else:
        out = dtype
    if dtype is rt.bool_ and name in ("add", "mul", "maximum", "minimum"):
        want = {"add": np.logical_or, "mul": np.logical_and, "maximum": np.maximum,
                "minimum": np.minimum}[name](a, b)
    assert_close(got, want, out)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_pow(dtype, rng):
    a = sample((5,), dtype, rng, low=0.5, high=3) if dtype.is_float else np.array([0, 1, 2, -2, 3], NP[dtype])
    b = np.array([0, 1, 2, 3, 2], NP[dtype])
    assert_close(rt.tensor(a) ** rt.tensor(b), np.power(a.astype(np.float64), b), dtype)
    assert_close(rt.tensor(a) ** 2, np.power(a.astype(np.float64), 2), dtype)


def test_integer_pow_negative_exponent_defined():
    a = rt.tensor(np.array([1, -1, -1, 2, 0, 5], np.int64))
    b = rt.tensor(np.array([-1, -1, -2, -1, 0, -3], np.int64))
    assert (a ** b).tolist() == [1, -1, 1, 0, 1, 0]


def test_integer_division_by_zero_is_float_division():
    a = rt.tensor([1, -1, 0])
    r = (a / rt.tensor([0, 0, 0])).numpy()
    assert r.dtype == np.float32
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=lambda d: d.name)
def test_clamp(dtype, rng):
    x = sample((10,), dtype, rng)
    assert_close(rt.clamp(rt.tensor(x), -1, 2), np.clip(x.astype(np.float64), -1, 2), dtype)
    assert_close(rt.tensor(x).clamp(min=0), np.maximum(x.astype(np.float64), 0), dtype)
    assert_close(rt.tensor(x).clamp(max=0), np.minimum(x.astype(np.float64), 0), dtype)
    with pytest.raises(ValueError):
        rt.clamp(rt.tensor(x))


def test_clamp_keeps_nan():
    r = rt.clamp(rt.tensor([np.nan, 5.0, -5.0]), -1.0, 1.0).numpy()
    assert np.isnan(r[0]) and r[1] == 1 and r[2] == -1


# ------------------------------------------------------------------- promotion
PROMO = [
    (rt.int32, rt.int64, rt.int64), (rt.float32, rt.float64, rt.float64),
    (rt.int64, rt.float32, rt.float32), (rt.bool_, rt.int32, rt.int32),
    (rt.bool_, rt.float64, rt.float64), (rt.int32, rt.float32, rt.float32),
]


@pytest.mark.parametrize("a,b,want", PROMO, ids=lambda x: getattr(x, "name", ""))
def test_tensor_promotion(a, b, want):
    x = rt.ones(3, dtype=a)
    y = rt.ones(3, dtype=b)
    assert (x + y).dtype is want and (y + x).dtype is want
    assert_close(x + y, np.full(3, 2.0) if not (a is rt.bool_ and b is rt.bool_) else np.ones(3), want)


def test_weak_scalars():
    i32 = rt.ones(2, dtype=rt.int32)
    f32 = rt.ones(2, dtype=rt.float32)
    assert (i32 + 1).dtype is rt.int32
    assert (i32 + 1.5).dtype is rt.float32
    assert (f32 * 2.0).dtype is rt.float32
    assert (rt.tensor([True]) + 2).dtype is rt.int64
    assert (rt.tensor([True]) + 2.5).dtype is rt.float32
    assert (rt.ones(2, dtype=rt.float64) + 1).dtype is rt.float64
    assert (1 / i32).dtype is rt.float32
    assert_close(2 - f32, np.ones(2), rt.float32)
    assert_close(2 ** rt.tensor([1.0, 3.0]), np.array([2.0, 8.0]), rt.float32)
    assert_close(np.float32(3) * f32, np.full(2, 3.0), rt.float32)


def test_scalar_operands_need_a_tensor():
    with pytest.raises(TypeError):
        rt.add(1, 2)
    with pytest.raises(TypeError, match="add"):
        rt.add(rt.ones(2), "x")


# ------------------------------------------------------------------- broadcasting (hypothesis)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       st.sampled_from(["add", "mul", "sub", "maximum", "lt"]),
       st.sampled_from([rt.float32, rt.int64]))
def test_broadcasting_binary(shapes, name, dtype):
    rng = np.random.default_rng(0)
    a = sample(shapes.input_shapes[0], dtype, rng)
    b = sample(shapes.input_shapes[1], dtype, rng)
    got = getattr(rt, name)(rt.tensor(a), rt.tensor(b))
    want = BINARY_REF[name](a.astype(np.float64), b.astype(np.float64))
    assert got.shape == shapes.result_shape
    assert_close(got, want)


@given(hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=5), st.data())
def test_binary_on_views(shape, data):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    ta = rt.tensor(a)
    perm = data.draw(st.permutations(range(len(shape))))
    tv = ta.permute(tuple(perm))
    av = a.transpose(perm)
    sl = tuple(slice(None, None, data.draw(st.sampled_from([1, 2, -1]))) for _ in shape)
    assert_close(tv * 2.0 + tv, av.astype(np.float64) * 3)
    assert_close(ta[sl] - ta[sl] * ta[sl], a[sl].astype(np.float64) - a[sl].astype(np.float64) ** 2)
    b = ta.broadcast_to((2,) + shape)
    assert_close(b + 1, np.broadcast_to(a, (2,) + shape).astype(np.float64) + 1)


def test_zero_size_and_0d():
    z = rt.zeros(0, 3)
    assert (z + 1).shape == (0, 3)
    assert rt.exp(z).shape == (0, 3)
    assert (z + rt.ones(3)).shape == (0, 3)
    s = rt.tensor(2.0)
    assert s.shape == () and (s * 3).item() == 6.0
    assert (s + rt.ones(2, 2)).shape == (2, 2)
    assert rt.exp(rt.tensor(0.0)).item() == 1.0


@pytest.mark.parametrize("n", [100_000, 1_000_003])
def test_large_sizes_use_parallel_path(n):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    ta, tb = rt.tensor(a), rt.tensor(b)
    assert_close(ta * tb + ta, a.astype(np.float64) * b + a)
    m = rng.standard_normal((n // 1000, 1000)).astype(np.float32)
    row = rng.standard_normal(1000).astype(np.float32)
    assert_close(rt.tensor(m) + rt.tensor(row), m.astype(np.float64) + row)
    assert_close(rt.exp(ta), np.exp(a.astype(np.float64)))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=lambda d: d.name)
def test_cast(src, dst, rng):
    x = sample((7,), src, rng)
    got = rt.tensor(x).astype(dst)
    assert got.dtype is dst
    if dst is rt.bool_:
        want = x != 0
    elif src.is_float and dst.is_int:
        want = np.trunc(x).astype(NP[dst])
    else:
        want = x.astype(NP[dst])
    np.testing.assert_array_equal(got.numpy(), want)


def test_cast_saturates_and_maps_nan_to_zero():
    x = rt.tensor(np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, -2.7], np.float32))
    assert x.astype(rt.int32).tolist() == [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, -2]
    assert x.astype(rt.int64).tolist()[:3] == [0, 2**63 - 1, -2**63]


def test_where(rng):
    c = rng.random((3, 1)) < 0.5
    a = sample((3, 4), rt.float32, rng)
    b = sample((4,), rt.int64, rng)
    got = rt.where(rt.tensor(c), rt.tensor(a), rt.tensor(b))
    assert_close(got, np.where(c, a.astype(np.float64), b), rt.float32)
    assert_close(rt.where(rt.tensor(c), rt.tensor(a), 0.0), np.where(c, a.astype(np.float64), 0.0))
    with pytest.raises(rt.ShapeError, match="where"):
        rt.where(rt.tensor(c), rt.ones(3, 4), rt.ones(5))
