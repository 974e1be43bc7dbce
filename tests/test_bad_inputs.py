"""Bad inputs get typed errors naming the op: Python ints that do not
fit never wrap, 0-d tensors with an axis, malformed arguments, wrong-shaped custom-op results,
sizes no allocation could hold, and the plain TypeError/ValueError cases, which are
``TensorRuntimeError`` subclasses too."""
import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match) as info:
        fn()
    assert isinstance(info.value, rt.TensorRuntimeError)
    return info.value


# ---- finding 7: out-of-range Python ints ----------------------------------------------------
def test_comparison_with_an_int_beyond_the_dtype_widens_it():
    x = rt.tensor([5, -7], dtype=rt.int32)
    np.testing.assert_array_equal((x < 2**40).numpy(), [True, True])
    np.testing.assert_array_equal((x > -(2**40)).numpy(), [True, True])
    np.testing.assert_array_equal((x == 2**40 + 5).numpy(), [False, False])
    np.testing.assert_array_equal((rt.tensor([2**62]) == 2**62).numpy(), [True])


@pytest.mark.parametrize("fn, match", [
    (lambda: rt.tensor([0]) == 2**64, "eq: Python integer 18446744073709551616 is out of bounds for int64"),
    (lambda: rt.tensor([5], dtype=rt.int32) + (2**40 + 3),
     "add: Python integer 1099511627779 is out of bounds for int32"),
    (lambda: rt.tensor([5], dtype=rt.int32).clamp(max=2**40),
     "clamp: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.tensor([2**63]), "tensor: Python integer 9223372036854775808 is out of bounds for int64"),
    (lambda: rt.tensor([2**64]), "tensor: Python integer 18446744073709551616 is out of bounds for int64"),
    (lambda: rt.tensor([2**40], dtype=rt.int32), "tensor: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.full((2,), 2**40, dtype=rt.int32), "full: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.arange(2**63 - 2, 2**63 + 2), "arange: Python integer 9223372036854775809 is out of bounds for int64"),
    (lambda: rt.arange(0, 2**40, 2**39, dtype=rt.int32),
     "arange: Python integer 549755813888 is out of bounds for int32"),
    (lambda: rt.where(rt.tensor([True]), rt.tensor([1], dtype=rt.int32), 2**40),
     "where: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.zeros(3, dtype=rt.int32).slice_assign(0, 2**40),
     "slice_assign: Python integer 1099511627776 is out of bounds for int32"),
])
def test_ints_that_do_not_fit_raise(fn, match):
    _raises(rt.DTypeError, match, fn)


def test_a_cached_small_int_decision_does_not_cover_a_big_int():
    x = rt.tensor([5], dtype=rt.int32)
    for _ in range(3):                       # fill the fast path with int32 + int
        assert (x + 3).numpy().tolist() == [8]
    _raises(rt.DTypeError, "out of bounds for int32", lambda: x + 2**40)
    ad = rt.autodiff(rt.cpu())
    y = rt.tensor([5], dtype=rt.int32, device=ad)
    assert (y + 3).numpy().tolist() == [8]
    _raises(rt.DTypeError, "out of bounds for int32", lambda: y + 2**40)


# ---- finding 8: wrong answers or shapes accepted silently ----------------------------------
def test_cross_entropy_with_no_classes_raises():
    _raises(rt.IndexOutOfRangeError, r"cross_entropy: logits of shape \(2, 0\) have no classes",
            lambda: F.cross_entropy(rt.zeros(2, 0), rt.tensor([0, 0])))
    assert F.cross_entropy(rt.zeros(0, 3), rt.tensor(np.zeros(0, np.int64)), "sum").numpy() == 0


@pytest.mark.parametrize("out, exc, match", [
    (lambda a: np.zeros(7, np.float32), rt.ShapeError,
     r"forward returned float32\[7\], but its shape rule gives float32\[2\]"),
    (lambda a: np.zeros(2, np.float16), rt.DTypeError, r"forward returned float16\[2\]"),
    (lambda a: None, rt.DTypeError, r"forward returned object\[\]"),
])
def test_custom_op_result_must_match_its_shape_rule(out, exc, match):
    f = rt.custom_op(f"bad_{exc.__name__}_{abs(hash(match)) % 10**6}", out)
    _raises(exc, match, lambda: f(rt.zeros(2)))


@pytest.mark.parametrize("fn, match", [
    (lambda: rt.split(rt.zeros(3), 1.5), "split: the split size must be an int, got 1.5"),
    (lambda: rt.chunk(rt.zeros(3), 1.5), "chunk: chunks must be an int, got 1.5"),
    (lambda: rt.var(rt.zeros(3), ddof=1.5), "var: ddof must be an int, got 1.5"),
    (lambda: rt.manual_seed(1.5), "manual_seed: seed must be an int, got 1.5"),
])
def test_float_where_an_int_is_needed_raises(fn, match):
    _raises(rt.ArgumentTypeError, match, fn)


@pytest.mark.parametrize("key", [True, False, (True, 0), (0, False), (Ellipsis, True),
                                 (slice(None), False, 1), (None, True)])
def test_bool_scalar_keys_index_as_numpy(key):
    a = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    got = rt.tensor(a)[key]
    assert got.shape == a[key].shape
    np.testing.assert_array_equal(got.numpy(), a[key])


def test_default_dtypes_are_float32_when_none():
    for make in (lambda: rt.zeros(2, dtype=None), lambda: rt.ones(2, dtype=None),
                 lambda: rt.empty(2, dtype=None), lambda: rt.eye(2, dtype=None),
                 lambda: rt.rand(2, dtype=None), lambda: rt.randn(2, dtype=None)):
        assert make().dtype is rt.float32


def test_softmax_of_a_0d_tensor_takes_only_axis_0_or_minus_1():
    assert rt.softmax(rt.tensor(1.0), axis=-1).numpy() == 1.0
    _raises(rt.ShapeError, "softmax: axis 1 is out of range", lambda: rt.softmax(rt.tensor(1.0), axis=1))


# ---- finding 9: untyped errors ----------------------------------------------------------------
def test_0d_tensors_with_an_axis():
    s = rt.tensor(3.0)
    for fn in (rt.max, rt.min, rt.sum, rt.mean):
        assert fn(s, axis=0).numpy() == 3.0 and fn(s, axis=-1).shape == ()
    assert rt.gather(s, 0, rt.tensor(0)).numpy() == 3.0
    assert rt.scatter_add(s, 0, rt.tensor(0), rt.tensor(2.0)).numpy() == 5.0
    assert rt.squeeze(s, 0).shape == () and rt.transpose(s, 0, 0).shape == ()
    _raises(rt.ShapeError, "take: a 0-d tensor has no axis", lambda: rt.take(s, [0], axis=0))
    _raises(rt.ShapeError, "split: expected a tensor with at least one dimension", lambda: rt.split(s, 1))
    _raises(rt.ShapeError, "chunk: expected a tensor with at least one dimension", lambda: rt.chunk(s, 1))


def test_clamp_with_tensor_bounds_is_minimum_of_maximum():
    x = rt.tensor([-2.0, 0.5, 3.0])
    got = rt.clamp(x, rt.zeros(3), rt.ones(3)).numpy()
    np.testing.assert_array_equal(got, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(rt.clamp(x, min=rt.tensor(0.0)).numpy(), [0.0, 0.5, 3.0])


@pytest.mark.parametrize("exc, match, fn", [
    (rt.ArgumentValueError, r"arange: start, stop and step must be finite, got \(0, nan, 1\)",
     lambda: rt.arange(0, float("nan"))),
    (rt.ShapeError, r"getitem: slice step cannot be zero \(axis 0 of shape \(3,\)\)", lambda: rt.zeros(3)[::0]),
    (rt.ShapeError, r"zeros: shape \(4294967296, 4294967296\) has 18446744073709551616 elements",
     lambda: rt.zeros(2**32, 2**32)),
    (rt.ShapeError, r"expand: shape \(4611686018427387904, 4\) has", lambda: rt.zeros(1).expand(2**62, 4)),
    (rt.ShapeError, r"add: broadcasting shapes \(1099511627776, 1\) and \(1, 1099511627776\)",
     lambda: rt.zeros(1, 1).expand(2**40, 1) + rt.zeros(1, 1).expand(1, 2**40)),
    (rt.ShapeError, r"reshape: shape must be a tuple of ints, got \(None,\)", lambda: rt.zeros(3).reshape(None)),
    (rt.ArgumentTypeError, "cat: expected a sequence of tensors, got NoneType", lambda: rt.cat(None)),
    (rt.ArgumentTypeError, "linear: expected a Tensor, got NoneType", lambda: F.linear(rt.zeros(2, 3), None)),
    (rt.ArgumentTypeError, "cross_entropy: expected a Tensor, got list",
     lambda: F.cross_entropy([[1.0]], rt.tensor([0]))),
    (rt.ShapeError, r"take: indices must form a rectangular array", lambda: rt.take(rt.zeros(3), [[0], [0, 1]])),
    (rt.ArgumentTypeError, "exp: expected a Tensor, got list", lambda: rt.exp([1.0])),
    (rt.ArgumentTypeError, "add: at least one operand must be a Tensor", lambda: rt.add(1, 2)),
    (rt.ArgumentValueError, "clamp: at least one of min and max must be given", lambda: rt.clamp(rt.zeros(1))),
    (rt.ArgumentValueError, "gelu: approximate must be 'none' or 'tanh'", lambda: rt.gelu(rt.zeros(1), "x")),
])
def test_typed_errors(exc, match, fn):
    err = _raises(exc, match, fn)
    # also the builtin class Python code catches
    assert isinstance(err, (TypeError, ValueError, IndexError))


def test_an_allocation_that_fails_is_a_typed_memory_error():
    err = _raises(rt.OutOfMemoryError, r"full: cannot allocate the float32 result of shape "
                  r"\(33554432, 33554432\) on cpu", lambda: rt.zeros(2**25, 2**25))
    assert isinstance(err, MemoryError)


def test_graph_inputs_that_are_not_numbers_are_typed_errors():
    g = rt.capture(lambda a: a + 1, np.ones(2, np.float32))
    _raises(rt.ArgumentTypeError, r"graph input 0 \(tensor \d+\) expects a tensor, an array or numbers",
            lambda: g.run("abc"))
    _raises(rt.ArgumentTypeError, "the graph takes 1 input", lambda: g.run(1, 2))
    _raises(rt.ArgumentTypeError, "the graph takes 1 input", lambda: g.compile()(1, 2))
