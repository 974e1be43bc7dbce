"""Elementwise ops against NumPy (float64 reference, cast) for every dtype they accept.

The ops, samples, references and tolerances are the rows of tests/opinfo.py."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from opinfo import OPS, cases, rows
from oracle import assert_close, sample

UNARY_ROWS = rows("unary")          # every unary op and variant (clamp bounds) of the table


@pytest.mark.parametrize("info,dtype", cases(UNARY_ROWS))
def test_unary_matches_numpy(info, dtype, rng):
    (x,) = info.inputs((3, 5), dtype, rng)
    got = info.fn(rt.tensor(x))
    out = info.out(dtype)
    assert got.dtype is out and got.shape == (3, 5)
    assert_close(got, info.reference(x), out, tol=info.tol)


def test_gelu_rejects_an_unknown_approximation():
    with pytest.raises(ValueError):
        rt.gelu(rt.ones(3), approximate="fast")


def test_special_values():
    x = rt.tensor(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30], np.float32))
    np.testing.assert_array_equal(rt.exp(x).numpy()[:3], np.array([np.nan, np.inf, 0.0], np.float32))
    np.testing.assert_array_equal(rt.relu(x).numpy()[[1, 2, 3]], [np.inf, 0, 0])
    assert np.isnan(rt.relu(x).numpy()[0]) and np.isnan(rt.sign(x).numpy()[0])
    np.testing.assert_array_equal(rt.tanh(x).numpy()[1:4], [1, -1, 0])
    np.testing.assert_array_equal(rt.sigmoid(x).numpy()[1:3], [1, 0])
    lg = rt.log(rt.tensor(np.array([0.0, -1.0, np.inf], np.float32))).numpy()
    assert lg[0] == -np.inf and np.isnan(lg[1]) and lg[2] == np.inf


def test_nan_to_num_defaults_to_the_dtype_extremes():
    for dt in (np.float32, np.float64):
        x = np.array([np.nan, np.inf, -np.inf, 1.5], dt)
        np.testing.assert_array_equal(rt.nan_to_num(rt.tensor(x)).numpy(), np.nan_to_num(x))
    assert rt.nan_to_num(rt.tensor([1, 2])).numpy().tolist() == [1, 2]


def test_allclose_is_a_python_bool():
    assert rt.allclose(rt.ones(3), rt.ones(3) + 1e-7) is True
    assert rt.allclose(rt.ones(3), rt.zeros(3)) is False
    assert rt.allclose(rt.tensor([np.nan]), rt.tensor([np.nan]), equal_nan=True) is True


def test_operators_are_pytorchs_bitwise_ops(rng):
    """``~ & | ^ << >>`` are bitwise_not/and/or/xor and the shifts (logical on bools)."""
    a = np.array([5, -3, 12], np.int32)
    b = np.array([3, 1, 40], np.int32)
    ta, tb = rt.tensor(a), rt.tensor(b)
    for got, want in (((ta & tb), a & b), ((ta | tb), a | b), ((ta ^ tb), a ^ b), (~ta, ~a),
                      ((ta << 2), a << 2), ((ta >> 1), a >> 1), ((1 << tb), [8, 2, 0])):
        assert got.dtype is rt.int32
        np.testing.assert_array_equal(got.numpy(), want)
    m, k = np.array([True, False, True]), np.array([True, True, False])
    tm, tk = rt.tensor(m), rt.tensor(k)
    for got, want in (((tm & tk), m & k), ((tm | tk), m | k), ((tm ^ tk), m ^ k), (~tm, ~m)):
        assert got.dtype is rt.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(rt.DTypeError, match="bitwise_and: not defined for float32, float32"):
        rt.ones(2) & rt.ones(2)
    with pytest.raises(rt.DTypeError, match="bitwise_not: not defined for dtype float32"):
        ~rt.ones(2)


@pytest.mark.parametrize("info,dtype", cases(rows("binary")))
def test_binary_same_dtype(info, dtype, rng):
    a, b = info.inputs((4, 3), dtype, rng)
    got = info.fn(rt.tensor(a), rt.tensor(b))
    assert_close(got, info.reference(a, b), info.out(dtype), tol=info.tol)


@pytest.mark.parametrize("dtype", OPS["pow"].dtypes, ids=lambda d: d.name)
def test_pow_operator(dtype, rng):
    a, b = OPS["pow"].inputs(None, dtype, rng)
    assert_close(rt.tensor(a) ** rt.tensor(b), OPS["pow"].reference(a, b), dtype)
    assert_close(rt.tensor(a) ** 2, OPS["pow"].reference(a, 2), dtype)


def test_integer_pow_negative_exponent_defined():
    a = rt.tensor(np.array([1, -1, -1, 2, 0, 5], np.int64))
    b = rt.tensor(np.array([-1, -1, -2, -1, 0, -3], np.int64))
    assert (a ** b).tolist() == [1, -1, 1, 0, 1, 0]


def test_integer_division_by_zero_is_float_division():
    a = rt.tensor([1, -1, 0])
    r = (a / rt.tensor([0, 0, 0])).numpy()
    assert r.dtype == np.float32
    assert r[0] == np.inf and r[1] == -np.inf and np.isnan(r[2])


@pytest.mark.parametrize("dtype", OPS["clamp"].dtypes, ids=lambda d: d.name)
def test_clamp_needs_a_bound(dtype, rng):
    # the values of clamp(x, -1, 2), clamp(x, min=0), clamp(x, max=0): opinfo rows
    (x,) = OPS["clamp"].inputs((10,), dtype, rng)
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
    got = OPS[name].fn(rt.tensor(a), rt.tensor(b))
    want = OPS[name].reference(a, b)
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


CAST = OPS["cast"]


@pytest.mark.parametrize("src", CAST.dtypes, ids=lambda d: d.name)
@pytest.mark.parametrize("dst", CAST.dtypes, ids=lambda d: d.name)
def test_cast(src, dst, rng):
    (x,) = CAST.inputs((7,), src, rng)
    got = rt.tensor(x).astype(dst)
    assert got.dtype is dst
    np.testing.assert_array_equal(got.numpy(), CAST.ref(x, dst))
    np.testing.assert_array_equal(CAST.fn(rt.tensor(x), dst).numpy(), CAST.ref(x, dst))


def test_cast_saturates_and_maps_nan_to_zero():
    x = rt.tensor(np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, -2.7], np.float32))
    assert x.astype(rt.int32).tolist() == [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, -2]
    assert x.astype(rt.int64).tolist()[:3] == [0, 2**63 - 1, -2**63]


def test_where(rng):
    info = OPS["where"]
    c, a, b = info.inputs(None, rt.float32, rng)     # float32 and int64 branches, broadcast
    got = info.fn(rt.tensor(c), rt.tensor(a), rt.tensor(b))
    assert_close(got, info.reference(c, a, b), info.out(rt.float32), tol=info.tol)
    assert_close(rt.where(rt.tensor(c), rt.tensor(a), 0.0), np.where(c, a.astype(np.float64), 0.0))
    with pytest.raises(rt.ShapeError, match="where"):
        rt.where(rt.tensor(c), rt.ones(3, 4), rt.ones(5))
