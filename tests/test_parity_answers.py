"""Answers that once differed from NumPy's and PyTorch's, and the builtin exception classes a
PyTorch user catches: each case states the expected value (from NumPy or PyTorch's documented
behaviour) and, where torch is installed, also checks it against torch."""
import math

import numpy as np
import pytest

import runtime as rt
from runtime.nn import functional as F
from oracle import needs_torch, torch

INF = math.inf


# --------------------------------------------------------------------------- isclose
def test_isclose_infinities_are_close_only_to_themselves():
    a = [INF, -INF, 0.0, 1e30, INF, -INF, 1.0, math.nan]
    b = [-INF, INF, INF, INF, INF, -INF, 1.0 + 1e-7, math.nan]
    want = np.isclose(np.array(a, np.float32), np.array(b, np.float32))
    assert want.tolist() == [False, False, False, False, True, True, True, False]
    for dt in (rt.float32, rt.float64):
        got = rt.isclose(rt.tensor(a, dtype=dt), rt.tensor(b, dtype=dt)).numpy()
        np.testing.assert_array_equal(got, want)
    # a scalar infinite operand, and equal_nan
    got = rt.isclose(rt.tensor([INF, 1e38, -INF]), INF).numpy()
    np.testing.assert_array_equal(got, [True, False, False])
    got = rt.isclose(rt.tensor(a), rt.tensor(b), equal_nan=True).numpy()
    np.testing.assert_array_equal(got, np.isclose(np.float32(a), np.float32(b), equal_nan=True))
    assert not rt.allclose(rt.tensor([0.0]), rt.tensor([INF]))


@needs_torch
def test_isclose_matches_torch():
    a = [INF, -INF, 0.0, 1e30, INF, 1.0, 0.0]
    b = [-INF, INF, INF, INF, INF, 1.0 + 1e-6, -0.0]
    want = torch.isclose(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_array_equal(rt.isclose(rt.tensor(a), rt.tensor(b)).numpy(), want)


# --------------------------------------------------------------------------- circular pad
@pytest.mark.parametrize("pad, want", [((1, -2), [2, 0, 1, 2]), ((-2, 1), [2, 3, 4, 2]),
                                       ((2, -1), [2, 3, 0, 1, 2, 3]), ((-1, -1), [1, 2, 3]),
                                       ((0, -2), [0, 1, 2]), ((2, 2), [3, 4, 0, 1, 2, 3, 4, 0, 1])])
def test_circular_pad_crops_first_then_wraps(pad, want):
    got = rt.pad(rt.arange(5.0).reshape(1, 1, 5), pad, mode="circular")
    np.testing.assert_array_equal(got.numpy().reshape(-1), np.array(want, np.float32))


def test_circular_pad_may_not_wrap_more_than_what_the_crop_leaves():
    with pytest.raises(rt.ShapeError) as e:
        rt.pad(rt.arange(5.0).reshape(1, 1, 5), (4, -3), mode="circular")
    assert str(e.value) == ("pad: circular padding (4, -3) must be no larger than the 2 elements "
                            "its negative amount leaves of axis 2 (shape (1, 1, 5))")


@pytest.mark.parametrize("mode, pad, want", [("reflect", (1, -2), [1, 0, 1, 2]),
                                             ("reflect", (-2, 1), [2, 3, 4, 3]),
                                             ("replicate", (2, -1), [0, 0, 0, 1, 2, 3])])
def test_reflect_and_replicate_pad_from_the_whole_axis_then_crop(mode, pad, want):
    got = rt.pad(rt.arange(5.0).reshape(1, 1, 5), pad, mode=mode)
    np.testing.assert_array_equal(got.numpy().reshape(-1), np.array(want, np.float32))


@needs_torch
@pytest.mark.parametrize("pad", [(1, -2, -1, 1), (-1, 2, 2, -1), (0, -3, 1, 0)])
@pytest.mark.parametrize("mode", ["circular", "reflect", "replicate"])
def test_negative_pads_match_torch_in_two_dimensions(pad, mode):
    x = np.arange(40.0, dtype=np.float32).reshape(1, 2, 4, 5)
    want = torch.nn.functional.pad(torch.tensor(x), pad, mode=mode).numpy()
    np.testing.assert_array_equal(rt.pad(rt.tensor(x), pad, mode=mode).numpy(), want)


def test_circular_pad_with_a_negative_amount_has_the_adjoint_gradient():
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor(np.arange(5.0, dtype=np.float32).reshape(1, 1, 5), device=ad).require_grad()
    w = np.array([1.0, 10.0, 100.0, 1000.0], np.float32)       # out = x[2], x[0], x[1], x[2]
    g = (rt.pad(x, (1, -2), mode="circular") * rt.tensor(w, device=ad)).sum().backward()
    np.testing.assert_array_equal(x.grad(g).numpy().reshape(-1), [10.0, 100.0, 1001.0, 0, 0])


# --------------------------------------------------------------------------- flip
def test_flip_refuses_a_repeated_axis():
    for dims in ((0, 0), (0, -1), [1, 1]):
        t = rt.arange(6.0).reshape(2, 3) if dims == [1, 1] else rt.arange(4.0)
        with pytest.raises(rt.ShapeError) as e:
            rt.flip(t, dims)
        assert str(e.value) == f"flip: repeated axis in {tuple(dims)} for shape {t.shape}"
    np.testing.assert_array_equal(rt.flip(rt.arange(6.0).reshape(2, 3), (0, 1)).numpy(),
                                  np.arange(6.0).reshape(2, 3)[::-1, ::-1])


# --------------------------------------------------------------------------- normalize
def _np_normalize(x, p, dim, eps=1e-12):
    a = np.abs(x.astype(np.float64))
    if p == 0:
        n = (a != 0).sum(axis=dim, keepdims=True)
    elif p == INF:
        n = a.max(axis=dim, keepdims=True)
    elif p == -INF:
        n = a.min(axis=dim, keepdims=True)
    else:
        with np.errstate(divide="ignore"):
            n = (a ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
    return x / np.maximum(n, eps)


@pytest.mark.parametrize("p", [0, -1, -2.5, -INF, INF, 1, 2, 0.5])
@pytest.mark.parametrize("dim", [0, 1])
def test_normalize_takes_every_vector_norm_order(p, dim):
    x = np.array([[1.0, 0.0, -2.0], [0.5, 3.0, 0.0]], np.float32)
    got = F.normalize(rt.tensor(x), p=p, dim=dim).numpy()
    np.testing.assert_allclose(got, _np_normalize(x, p, dim), rtol=1e-6)
    if torch is not None:
        want = torch.nn.functional.normalize(torch.tensor(x), p=p, dim=dim).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_normalize_refuses_a_p_that_is_not_a_number():
    for p in ("2", math.nan, None, True):
        with pytest.raises(rt.ArgumentValueError) as e:
            F.normalize(rt.ones(2, 2), p=p)
        assert str(e.value) == f"normalize: p must be a number, got {p!r}"


# --------------------------------------------------------------------------- boolean ranges
@pytest.mark.parametrize("op, call", [("linspace", lambda: rt.linspace(5, 10, 3, dtype=rt.bool)),
                                      ("logspace", lambda: rt.logspace(0, 1, 3, dtype=rt.bool)),
                                      ("arange", lambda: rt.arange(0, 3, dtype=rt.bool))])
def test_a_range_of_booleans_is_refused(op, call):
    with pytest.raises(rt.DTypeError) as e:
        call()
    assert str(e.value) == (f"{op}: dtype bool is not supported (a range of values has no "
                            f"boolean form; cast the result instead)")


# --------------------------------------------------------------------------- scatter
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_])
def test_scatter_keeps_the_last_write_of_duplicate_indices(dtype):
    idx = np.array([[0, 0, 1, 0], [2, 0, 2, 1], [0, 2, 2, 1]])
    src = np.arange(1, 13).reshape(3, 4) % (2 if dtype is rt.bool_ else 100)
    want = np.zeros((3, 4), src.dtype)
    for i in range(idx.shape[0]):               # writes in the row-major order of index
        for j in range(idx.shape[1]):
            want[idx[i, j], j] = src[i, j]
    got = rt.scatter(rt.zeros(3, 4, dtype=dtype), 0, rt.tensor(idx),
                     rt.tensor(src).astype(dtype)).numpy()
    np.testing.assert_array_equal(got, want.astype(got.dtype))
    # the same rule as index_put / slice assignment
    t = rt.zeros(3, dtype=dtype)
    v = rt.tensor([1, 0, 1]).astype(dtype) if dtype is rt.bool_ else rt.tensor([1, 2, 3]).astype(dtype)
    s = rt.scatter(t, 0, rt.tensor([0, 0, 1]), v).numpy()
    assert s[0] == v.numpy()[1] and s[1] == v.numpy()[2]


@needs_torch
def test_scatter_with_duplicates_matches_torch_on_cpu():
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3, (4, 5))
    src = rng.standard_normal((4, 6)).astype(np.float32)
    want = torch.zeros(3, 5).scatter(0, torch.tensor(idx), torch.tensor(src)).numpy()
    got = rt.scatter(rt.zeros(3, 5), 0, rt.tensor(idx), rt.tensor(src)).numpy()
    np.testing.assert_array_equal(got, want)


def test_scatter_gives_the_gradient_to_the_winning_write_only():
    ad = rt.autodiff(rt.cpu())
    src = rt.tensor([1.0, 2.0, 3.0], device=ad).require_grad()
    x = rt.zeros(3, device=ad).require_grad()
    out = rt.scatter(x, 0, rt.tensor([0, 0, 1], device=ad), src)
    g = (out * rt.tensor([1.0, 10.0, 100.0], device=ad)).sum().backward()
    np.testing.assert_array_equal(src.grad(g).numpy(), [0.0, 1.0, 10.0])
    np.testing.assert_array_equal(x.grad(g).numpy(), [0.0, 0.0, 100.0])


def test_scatter_with_an_empty_index_is_the_input():
    x = rt.arange(3.0)
    got = rt.scatter(x, 0, rt.zeros(0, dtype=rt.int64), rt.ones(0))
    np.testing.assert_array_equal(got.numpy(), [0.0, 1.0, 2.0])


SC_IDX = np.array([[0, 0, 1], [2, 0, 1]])                  # (2, 3) into (3, 4), repeats on dim 0
SC_SRC = np.array([[2, 3, 4, 9], [5, 6, 7, 9], [1, 1, 1, 1]])   # larger than the index


def _scatter_ref(x, src, reduce):
    out = x.copy()
    for i in range(SC_IDX.shape[0]):
        for j in range(SC_IDX.shape[1]):
            v = src if np.isscalar(src) else src[i, j]
            if reduce == "add":
                out[SC_IDX[i, j], j] += v
            else:
                out[SC_IDX[i, j], j] *= v
    return out


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", [rt.float32, rt.int64])
def test_scatter_reduce_argument_combines_every_write(reduce, dtype):
    # PyTorch's scatter(..., reduce=): each value landing on a place is added to (multiplied
    # into) it, repeats included; a tensor src, a positional scalar and value=
    x = (np.arange(12).reshape(3, 4) % 5 + 1).astype(dtype.np)
    src = SC_SRC.astype(dtype.np)
    t, i = rt.tensor(x), rt.tensor(SC_IDX)
    got = rt.scatter(t, 0, i, rt.tensor(src), reduce=reduce)
    assert got.dtype is dtype
    np.testing.assert_array_equal(got.numpy(), _scatter_ref(x, src, reduce))
    np.testing.assert_array_equal(t.scatter(0, i, 3, reduce=reduce).numpy(), _scatter_ref(x, 3, reduce))
    np.testing.assert_array_equal(rt.scatter(t, 0, i, value=2, reduce=reduce).numpy(),
                                  _scatter_ref(x, 2, reduce))
    if torch is not None:
        tx, ti = torch.tensor(x), torch.tensor(SC_IDX)
        np.testing.assert_array_equal(got.numpy(),
                                      torch.scatter(tx, 0, ti, torch.tensor(src), reduce=reduce).numpy())
        np.testing.assert_array_equal(t.scatter(0, i, 3, reduce=reduce).numpy(),
                                      torch.scatter(tx, 0, ti, 3, reduce=reduce).numpy())


def test_scatter_reduce_argument_differentiates_and_captures():
    # (PyTorch has no derivative for scatter with reduce; here it is scatter_add's and
    # scatter_reduce("prod")'s, checked by finite differences)
    from autodiff.gradcheck import check_grad
    x = np.arange(1.0, 13.0).reshape(3, 4) / 4
    src = SC_SRC / 3.0
    for reduce in ("add", "multiply"):
        check_grad(lambda a, b, r=reduce: rt.scatter(a, 0, rt.tensor(SC_IDX, device=a.device), b,
                                                     reduce=r), x, src)
        check_grad(lambda a, r=reduce: rt.scatter(a, 0, rt.tensor(SC_IDX, device=a.device), 1.5,
                                                  reduce=r), x)
    xf, sf = x.astype(np.float32), src.astype(np.float32)
    graph = rt.capture(lambda a, b: rt.scatter(a, 0, rt.tensor(SC_IDX, device=a.device), b,
                                               reduce="multiply"), xf, sf)
    (replayed,) = graph.run(rt.tensor(xf), rt.tensor(sf))
    np.testing.assert_allclose(replayed.numpy(), _scatter_ref(xf, sf, "multiply"), rtol=1e-6)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: rt.scatter(rt.zeros(3, 4), 0, rt.tensor(SC_IDX), rt.ones(2, 3), reduce="mean"),
     rt.ArgumentValueError, "scatter: reduce must be 'add' or 'multiply', got 'mean'"),
    (lambda: rt.scatter(rt.zeros(3, 4, dtype=rt.int64), 0, rt.tensor(SC_IDX), 2.5, reduce="add"),
     rt.DTypeError, "scatter: value 2.5 does not fit the input's dtype int64"),
    (lambda: rt.scatter(rt.zeros(3, 4, dtype=rt.int32), 0, rt.tensor(SC_IDX), 2 ** 40, reduce="multiply"),
     rt.DTypeError, "scatter: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.scatter(rt.zeros(3, 4), 0, rt.tensor(SC_IDX), rt.ones(2, 3, dtype=rt.float64), reduce="add"),
     rt.DTypeError, "scatter: src must have the input's dtype, got float32 (input) and float64 (src)"),
])
def test_scatter_reduce_argument_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# --------------------------------------------------------------------------- exception classes
@pytest.mark.parametrize("op, call", [
    ("sum", lambda: rt.sum(rt.ones(3), 2)),
    ("squeeze", lambda: rt.ones(3).squeeze(2)),
    ("stack", lambda: rt.stack([rt.ones(3)], 3)),
    ("cumsum", lambda: rt.cumsum(rt.ones(3), -2)),
    ("softmax", lambda: rt.softmax(rt.ones(2, 3), 2)),
])
def test_an_axis_out_of_range_is_also_an_index_error(op, call):
    with pytest.raises(IndexError) as e:
        call()
    assert isinstance(e.value, rt.AxisError) and isinstance(e.value, rt.ShapeError)
    assert str(e.value).startswith(f"{op}: axis ")
    assert "is out of range for a tensor of" in str(e.value)


def test_an_unknown_pad_mode_is_also_not_implemented():
    with pytest.raises(NotImplementedError) as e:
        rt.pad(rt.ones(1, 1, 3), (1, 1), mode="foo")
    assert isinstance(e.value, rt.UnsupportedOptionError)
    assert isinstance(e.value, rt.ArgumentValueError)
    assert str(e.value) == ("pad: mode must be one of constant, reflect, replicate, circular, "
                            "got 'foo'")


@needs_torch
def test_torch_raises_the_same_builtins():
    with pytest.raises(IndexError):
        torch.ones(3).sum(2)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.pad(torch.ones(1, 1, 3), (1, 1), mode="foo")


# --------------------------------------------------------------------------- op variants
def _trunc_div(a, b):
    q = np.trunc(a.astype(np.float64) / np.where(b == 0, 1, b))
    return np.where(b == 0, 0, q).astype(a.dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_div_rounding_modes_on_ints(dtype):
    a = np.array([-7, 7, -6, 7, 0, -1, 5, -9, 9], dtype)
    b = np.array([2, -2, 2, 2, 3, 3, 0, -4, 4], dtype)
    ta, tb = rt.tensor(a), rt.tensor(b)
    got = rt.div(ta, tb, rounding_mode="trunc")
    assert got.dtype is rt.tensor(a).dtype
    np.testing.assert_array_equal(got.numpy(), _trunc_div(a, b))
    floor = ta.div(tb, rounding_mode="floor").numpy()
    np.testing.assert_array_equal(floor[b != 0], (a // np.where(b == 0, 1, b))[b != 0])
    # scalar operands on either side
    np.testing.assert_array_equal(rt.div(ta, 2, rounding_mode="trunc").numpy(),
                                  _trunc_div(a, np.full_like(a, 2)))
    np.testing.assert_array_equal(rt.div(-7, tb[:4], rounding_mode="trunc").numpy(),
                                  _trunc_div(np.full(4, -7, dtype), b[:4]))


def test_div_rounding_modes_on_floats():
    a = np.array([-7.5, 7.5, -6.0, 1e30, -0.5, 3.0], np.float32)
    b = np.array([2.0, -2.0, 2.0, 3.0, 4.0, -1.0], np.float32)
    got = rt.div(rt.tensor(a), rt.tensor(b), rounding_mode="trunc").numpy()
    np.testing.assert_array_equal(got, np.trunc(a / b))
    assert np.signbit(got[4])                                   # trunc(-0.125) is -0.0
    got = rt.div(rt.tensor(a), rt.tensor(b), rounding_mode="floor").numpy()
    np.testing.assert_array_equal(got, np.floor_divide(a, b))
    np.testing.assert_array_equal(rt.div(rt.tensor(a), rt.tensor(b)).numpy(), a / b)
    with pytest.raises(rt.ArgumentValueError) as e:
        rt.div(rt.tensor(a), 2, rounding_mode="round")
    assert str(e.value) == "div: rounding_mode must be None, 'trunc' or 'floor', got 'round'"


@needs_torch
@pytest.mark.parametrize("mode", ["trunc", "floor", None])
def test_div_rounding_modes_match_torch(mode):
    rng = np.random.default_rng(3)
    a, b = rng.integers(-50, 50, 64), rng.integers(1, 9, 64) * rng.choice([-1, 1], 64)
    want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode).numpy()
    np.testing.assert_array_equal(rt.div(rt.tensor(a), rt.tensor(b), rounding_mode=mode).numpy(),
                                  want)
    af, bf = a * 0.37, b * 1.1
    want = torch.div(torch.tensor(af), torch.tensor(bf), rounding_mode=mode).numpy()
    np.testing.assert_array_equal(
        rt.div(rt.tensor(af), rt.tensor(bf), rounding_mode=mode).numpy(), want)


def test_div_rounding_modes_record_into_a_graph_that_compiles():
    x = np.array([7, -7, 8, -1], np.int64)
    g = rt.capture(lambda t: rt.div(t, 3, rounding_mode="trunc"), x)
    np.testing.assert_array_equal(g.run(x)[0].numpy(), [2, -2, 2, 0])
    np.testing.assert_array_equal(g.compile()(x)[0].numpy(), [2, -2, 2, 0])


def test_isposinf_and_isneginf():
    x = np.array([INF, -INF, math.nan, 1.0, -0.0, 3e38], np.float32)
    np.testing.assert_array_equal(rt.isposinf(rt.tensor(x)).numpy(), np.isposinf(x))
    np.testing.assert_array_equal(rt.tensor(x).isneginf().numpy(), np.isneginf(x))
    assert not rt.isposinf(rt.tensor([1, 2])).numpy().any()
    assert rt.isneginf(rt.tensor([1, 2])).dtype is rt.bool_


def test_quick_gelu_and_its_layer():
    x = np.linspace(-8, 8, 33)
    want = x / (1 + np.exp(-1.702 * x))
    np.testing.assert_allclose(F.quick_gelu(rt.tensor(x)).numpy(), want, rtol=1e-12)
    layer = rt.nn.QuickGELU()
    np.testing.assert_allclose(layer(rt.tensor(x)).numpy(), want, rtol=1e-12)
    assert repr(layer) == "QuickGELU()"


# --------------------------------------------------------------------------- Tensor.unfold
def _np_windows(x, d, size, step):
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return np.take(w, np.arange(0, x.shape[d] - size + 1, step), axis=d)


@pytest.mark.parametrize("d, size, step", [(0, 1, 1), (1, 2, 1), (2, 2, 2), (2, 3, 1),
                                           (-1, 4, 3), (2, 0, 1), (1, 1, 5)])
def test_tensor_unfold_gives_sliding_windows(d, size, step):
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    got = rt.tensor(x).unfold(d, size, step).numpy()
    want = _np_windows(x, d % 3, size, step)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if torch is not None:
        np.testing.assert_array_equal(got, torch.tensor(x).unfold(d, size, step).numpy())


def test_tensor_unfold_gradient_and_errors():
    ad = rt.autodiff(rt.cpu())
    t = rt.tensor(np.arange(5.0), device=ad).require_grad()
    g = t.unfold(0, 2, 1).sum().backward()
    np.testing.assert_array_equal(t.grad(g).numpy(), [1.0, 2.0, 2.0, 2.0, 1.0])
    assert rt.tensor(3.0).unfold(0, 1, 1).shape == (1,)
    x = rt.zeros(2, 3)
    with pytest.raises(rt.ShapeError) as e:
        x.unfold(0, 3, 1)
    assert str(e.value) == "unfold: size 3 does not fit axis 0 of size 2 (shape (2, 3))"
    with pytest.raises(rt.ArgumentValueError) as e:
        x.unfold(1, 1, 0)
    assert str(e.value) == "unfold: step must be positive, got 0"
    with pytest.raises(rt.AxisError):
        x.unfold(2, 1, 1)
