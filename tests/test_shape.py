"""Shape ops, views, indexing, take/gather/scatter_add, cat/stack/split, slice_assign."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from oracle import ALL_DTYPES, assert_close, sample


def _shares(t, u):
    # Tests may look at cpu payloads (NumPy arrays); the front end never does.
    return np.shares_memory(t._payload, u._payload)


def test_views_share_storage():
    t = rt.arange(24).reshape(2, 3, 4)
    assert _shares(t, t.reshape(6, 4)) and _shares(t, t.reshape(-1))
    assert _shares(t, t.permute(2, 0, 1)) and _shares(t, t.transpose(0, 2)) and _shares(t, t.T)
    assert _shares(t, t[1, :, ::2]) and _shares(t, t[..., None])
    assert _shares(t, t[:1].expand(5, 3, 4))
    assert _shares(t, t.unsqueeze(0)) and _shares(t, t.flatten())
    np.testing.assert_array_equal(t.T.numpy(), np.arange(24).reshape(2, 3, 4).T)


def test_reshape_of_non_contiguous_copies_correctly():
    a = np.arange(12).reshape(3, 4)
    t = rt.tensor(a).T.reshape(12)
    np.testing.assert_array_equal(t.numpy(), a.T.reshape(12))


@given(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), st.data())
def test_reshape_permute(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    t = rt.tensor(a)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(t.permute(*perm).numpy(), a.transpose(perm))
    np.testing.assert_array_equal(t.reshape(-1).numpy(), a.reshape(-1))
    if a.size:
        np.testing.assert_array_equal(t.permute(*perm).reshape(a.size, -1).numpy(),
                                      a.transpose(perm).reshape(a.size, -1))


@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), st.data())
def test_basic_indexing(shape, data):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    t = rt.tensor(a)
    key = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "all"]))
        if kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            key.append(slice(data.draw(st.integers(-n - 1, n + 1)), data.draw(st.integers(-n - 1, n + 1)),
                             data.draw(st.sampled_from([1, 2, 3, -1, -2]))))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            key.append(slice(None))
    key = tuple(key)
    np.testing.assert_array_equal(t[key].numpy(), a[key])
    np.testing.assert_array_equal(t[..., 0].numpy(), a[..., 0])


def test_permute_axes_and_errors():
    x = rt.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    np.testing.assert_array_equal(x.permute(2, 0, 1).numpy(), x.numpy().transpose(2, 0, 1))
    np.testing.assert_array_equal(x.permute(-1, -3, 1).numpy(), x.numpy().transpose(2, 0, 1))
    np.testing.assert_array_equal(x.permute((np.int64(1), 0, 2)).numpy(),
                                  x.numpy().transpose(1, 0, 2))
    assert x.permute(0, 1, 2) is x
    with pytest.raises(rt.errors.ShapeError,
                       match=r"^permute: expected 3 axes for shape \(2, 3, 4\), got \(0, 1\)$"):
        x.permute(0, 1)
    with pytest.raises(rt.errors.ShapeError, match=r"^permute: \(0, 0, 1\) is not a permutation "
                                                   r"of the axes of shape \(2, 3, 4\)$"):
        x.permute(0, 0, 1)
    with pytest.raises(rt.errors.ShapeError, match=r"^permute: \(0, 2, -1\) is not a permutation"):
        x.permute(0, 2, -1)
    with pytest.raises(rt.errors.ShapeError, match=r"^permute: axis 3 is out of range for a tensor "
                                                   r"of shape \(2, 3, 4\)$"):
        x.permute(0, 1, 3)
    with pytest.raises(rt.errors.ShapeError, match=r"^permute: axis must be an int, got 'a'$"):
        x.permute("a", 0, 2)


def test_index_errors():
    t = rt.zeros(2, 3)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"index 3 is out of bounds for axis 1 with size 3"):
        t[0, 3]
    with pytest.raises(IndexError):
        t[-3]
    with pytest.raises(rt.ShapeError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(TypeError):
        t["a"]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_take_gather(dtype, rng):
    a = sample((4, 5), dtype, rng)
    t = rt.tensor(a)
    idx = np.array([[0, 4], [-1, 2]])
    np.testing.assert_array_equal(rt.take(t, rt.tensor(idx), axis=1).numpy(), np.take(a, idx, axis=1))
    np.testing.assert_array_equal(t.take([3, 0, -4], axis=0).numpy(), np.take(a, [3, 0, -4], axis=0))
    np.testing.assert_array_equal(t.take(rt.tensor([7, 0])).numpy(), np.take(a, [7, 0]))
    np.testing.assert_array_equal(t[rt.tensor([2, 2, 0])].numpy(), a[[2, 2, 0]])
    np.testing.assert_array_equal(t[:, [1, 0]].numpy(), a[:, [1, 0]])
    gi = np.array([[0, 1], [4, 4], [2, 3], [1, 0]])
    np.testing.assert_array_equal(t.gather(1, rt.tensor(gi)).numpy(), np.take_along_axis(a, gi, 1))
    gi0 = np.array([[0, 1, 3, 3, 2]])
    np.testing.assert_array_equal(rt.gather(t, 0, gi0).numpy(), np.take_along_axis(a, gi0, 0))


def test_take_gather_out_of_range():
    t = rt.zeros(3, 4)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"take: index 5 is out of bounds for axis 0 with size 3"):
        rt.take(t, rt.tensor([0, 5]), axis=0)
    with pytest.raises(rt.IndexOutOfRangeError, match="gather"):
        rt.gather(t, 1, rt.tensor([[0], [-5], [1]]))
    with pytest.raises(rt.DTypeError, match="take: indices must be int32 or int64, got float32"):
        rt.take(t, rt.tensor([0.0]), axis=0)
    with pytest.raises(rt.ShapeError, match="gather: indices of shape"):
        rt.gather(t, 1, rt.tensor([0, 1]))


def scatter_add_ref(x, axis, idx, src):
    """``torch.scatter_add`` by ``np.add.at`` in float64 (int64 for ints; bool: logical or)."""
    x, idx, src = np.asarray(x), np.asarray(idx), np.asarray(src)
    if x.ndim == 0:
        return (x | src) if x.dtype == np.bool_ else x.astype(np.float64) + src
    acc = np.int64 if x.dtype.kind in "iub" else np.float64
    out = x.astype(acc)
    axis %= x.ndim
    key = list(np.indices(idx.shape, sparse=True))
    key[axis] = idx % x.shape[axis]
    np.add.at(out, tuple(key), src[tuple(slice(0, n) for n in idx.shape)].astype(acc))
    return out > 0 if x.dtype == np.bool_ else out


SCATTER_CASES = [   # (x shape, index shape, src shape, axis)
    ((5,), (9,), (9,), 0),
    ((4, 3), (6, 3), (6, 3), 0),
    ((4, 3), (2, 2), (3, 5), -2),            # index smaller than src and x
    ((3, 4, 5), (3, 2, 7), (3, 3, 7), -1),
    ((3, 4, 5), (2, 6, 5), (2, 6, 5), 1),
    ((), (), (), 0),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("case", SCATTER_CASES, ids=str)
def test_scatter_add(dtype, case, rng):
    xs, ishape, sshape, axis = case
    a, src = sample(xs, dtype, rng), sample(sshape, dtype, rng)
    n = xs[axis] if xs else 1
    idx = rng.integers(-n, n, size=ishape)                 # negatives and repeats
    for idt in (np.int64, np.int32):
        got = rt.scatter_add(rt.tensor(a), axis, rt.tensor(idx.astype(idt)), rt.tensor(src))
        assert_close(got, scatter_add_ref(a, axis, idx, src), dtype)
    got = rt.tensor(a).scatter_add(axis, idx.tolist(), rt.tensor(src))       # method, list
    assert_close(got, scatter_add_ref(a, axis, idx, src), dtype)


def test_scatter_add_duplicates_accumulate_in_index_order():
    # float32 sums over repeated indices are exactly np.add.at's (same order, same dtype)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    src = rng.standard_normal((50, 6)).astype(np.float32) * 1e3
    idx = rng.integers(0, 4, size=(50, 6))
    want = a.copy()
    np.add.at(want, (idx, np.arange(6)), src)
    got = rt.scatter_add(rt.tensor(a), 0, rt.tensor(idx), rt.tensor(src)).numpy()
    np.testing.assert_array_equal(got, want)
    b = rt.scatter_add(rt.zeros(3, dtype=rt.bool), 0, rt.tensor([1, 1, 2]), rt.tensor([True, False, False]))
    np.testing.assert_array_equal(b.numpy(), [False, True, False])   # bool: logical or


def test_scatter_add_views_and_empty(rng):
    a = rng.standard_normal((5, 4))
    src = rng.standard_normal((5, 8))
    idx = np.array([[1], [4], [1]])                    # broadcast along axis 1: a stride-0 view
    got = rt.scatter_add(rt.tensor(a).T, 1, rt.tensor(idx).expand(3, 5), rt.tensor(src)[::-1, ::2].T)
    want = scatter_add_ref(a.T, 1, np.broadcast_to(idx, (3, 5)), src[::-1, ::2].T)
    assert_close(got, want, rt.float64)
    t = rt.tensor(a)
    assert_close(rt.scatter_add(t, 0, rt.zeros((0, 4), dtype=rt.int64), rt.zeros(2, 4, dtype=rt.float64)), a)
    e = rt.zeros(0, 3)
    assert rt.scatter_add(e, 1, rt.zeros((0, 2), dtype=rt.int64), rt.zeros(0, 2)).shape == (0, 3)


@given(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), st.data())
def test_scatter_add_hypothesis(shape, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    ishape = tuple(data.draw(st.integers(0 if nd > 1 else 1, 6)) if d == axis % nd
                   else data.draw(st.integers(1, n)) for d, n in enumerate(shape))
    sshape = tuple(i + data.draw(st.integers(0, 2)) for i in ishape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    a = rng.standard_normal(shape).astype(np.float32)
    src = rng.standard_normal(sshape).astype(np.float32)
    n = shape[axis]
    idx = rng.integers(-n, n, size=ishape)
    got = rt.scatter_add(rt.tensor(a), axis, rt.tensor(idx), rt.tensor(src))
    assert_close(got, scatter_add_ref(a, axis, idx, src), rt.float32)


def _raises(cls, message, fn):
    with pytest.raises(cls) as e:
        fn()
    assert str(e.value) == message


def test_scatter_add_errors():
    x, src = rt.zeros(3, 4), rt.ones(2, 4)
    _raises(rt.IndexOutOfRangeError, "scatter_add: index 5 is out of bounds for axis 0 with size 3 "
            "(input shapes (3, 4), (2, 1), (2, 4))",
            lambda: rt.scatter_add(x, 0, rt.tensor([[0], [5]]), src))
    _raises(rt.IndexOutOfRangeError, "scatter_add: index -5 is out of bounds for axis 1 with size 4 "
            "(input shapes (3, 4), (1, 3), (2, 4))",
            lambda: rt.scatter_add(x, -1, rt.tensor([[0, -5, 9]]), src))   # the first bad one
    _raises(rt.DTypeError, "scatter_add: src must have the input's dtype, got float32 (input) and "
            "float64 (src)", lambda: rt.scatter_add(x, 0, rt.tensor([[0]]), src.astype(rt.float64)))
    _raises(rt.DTypeError, "scatter_add: src must have the input's dtype, got float32 (input) and "
            "int64 (src)", lambda: rt.scatter_add(x, 0, rt.tensor([[0]]), rt.tensor([[1]])))
    _raises(rt.DTypeError, "scatter_add: indices must be int32 or int64, got float32",
            lambda: rt.scatter_add(x, 0, rt.tensor([[0.0]]), src))
    _raises(rt.ShapeError, "scatter_add: indices of shape (2,) must have the same number of "
            "dimensions as the input of shape (3, 4)", lambda: rt.scatter_add(x, 0, rt.tensor([0, 1]), src))
    _raises(rt.ShapeError, "scatter_add: src of shape (4,) must have the same number of "
            "dimensions as the input of shape (3, 4)", lambda: rt.scatter_add(x, 0, rt.tensor([[0]]), rt.ones(4)))
    _raises(rt.ShapeError, "scatter_add: indices of shape (3, 1) must be no larger than src of "
            "shape (2, 4), and no larger than the input of shape (3, 4) except on axis 0",
            lambda: rt.scatter_add(x, 0, rt.zeros((3, 1), dtype=rt.int64), src))
    _raises(rt.ShapeError, "scatter_add: indices of shape (1, 5) must be no larger than src of "
            "shape (2, 6), and no larger than the input of shape (3, 4) except on axis 0",
            lambda: rt.scatter_add(x, 0, rt.zeros((1, 5), dtype=rt.int64), rt.ones(2, 6)))
    _raises(rt.ShapeError, "scatter_add: cannot scatter into empty axis 0 of shape (0, 4)",
            lambda: rt.scatter_add(rt.zeros(0, 4), 0, rt.zeros((1, 1), dtype=rt.int64), src))
    _raises(rt.ShapeError, "scatter_add: axis 2 is out of range for a tensor of shape (3, 4)",
            lambda: rt.scatter_add(x, 2, rt.tensor([[0]]), src))
    with pytest.raises(IndexError):                       # IndexOutOfRangeError is an IndexError
        rt.scatter_add(x, 0, rt.tensor([[-4]]), src)
    np.testing.assert_array_equal(x.numpy(), np.zeros((3, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_cat_stack_split(dtype, rng):
    a, b = sample((2, 3), dtype, rng), sample((4, 3), dtype, rng)
    np.testing.assert_array_equal(rt.cat([rt.tensor(a), rt.tensor(b)]).numpy(), np.concatenate([a, b]))
    np.testing.assert_array_equal(rt.cat([rt.tensor(a), rt.tensor(a)], axis=-1).numpy(),
                                  np.concatenate([a, a], -1))
    np.testing.assert_array_equal(rt.stack([rt.tensor(a), rt.tensor(a)], axis=1).numpy(),
                                  np.stack([a, a], 1))
    parts = rt.split(rt.tensor(b), 3, axis=0)
    assert [p.shape for p in parts] == [(3, 3), (1, 3)]
    np.testing.assert_array_equal(parts[1].numpy(), b[3:])
    parts = rt.tensor(b).split([1, 3])
    assert [p.shape for p in parts] == [(1, 3), (3, 3)]
    assert [c.shape for c in rt.chunk(rt.tensor(b), 3, axis=0)] == [(2, 3), (2, 3)]


def test_cat_promotes_and_checks():
    r = rt.cat([rt.ones(2, dtype=rt.int32), rt.ones(1, dtype=rt.float64)])
    assert r.dtype is rt.float64 and r.tolist() == [1, 1, 1]
    with pytest.raises(rt.ShapeError, match=r"cat: shapes \(2, 3\), \(2, 4\) differ outside axis 0"):
        rt.cat([rt.ones(2, 3), rt.ones(2, 4)])
    with pytest.raises(rt.ShapeError, match="stack"):
        rt.stack([rt.ones(2), rt.ones(3)])
    with pytest.raises(rt.ShapeError, match="split"):
        rt.split(rt.ones(4), [1, 2])


def test_squeeze_unsqueeze_flatten_expand():
    t = rt.zeros(1, 3, 1, 2)
    assert t.squeeze().shape == (3, 2) and t.squeeze(2).shape == (1, 3, 2)
    assert t.unsqueeze(-1).shape == (1, 3, 1, 2, 1) and t.flatten().shape == (6,)
    assert t.flatten(1, 2).shape == (1, 3, 2)
    assert t.expand(4, -1, 5, -1).shape == (4, 3, 5, 2)
    assert rt.broadcast_to(rt.ones(3), (2, 3)).shape == (2, 3)
    with pytest.raises(rt.ShapeError, match=r"squeeze: axis 1 of shape \(1, 3, 1, 2\) has size 3"):
        t.squeeze(1)
    with pytest.raises(rt.ShapeError, match="expand"):
        rt.ones(3).expand(2, 4)


def test_reshape_errors():
    with pytest.raises(rt.ShapeError, match=r"reshape: cannot reshape tensor of shape \(2, 3\)"):
        rt.zeros(2, 3).reshape(4, 2)
    with pytest.raises(rt.ShapeError, match="only one dimension can be -1"):
        rt.zeros(2, 3).reshape(-1, -1)
    with pytest.raises(rt.ShapeError, match="permute"):
        rt.zeros(2, 3).permute(0, 0)


def test_slice_assign(rng):
    a = sample((4, 5), rt.float32, rng)
    t = rt.tensor(a)
    r = t.slice_assign((slice(1, 3), slice(None, None, 2)), rt.ones(2, 3) * 7)
    want = a.copy()
    want[1:3, ::2] = 7
    np.testing.assert_array_equal(r.numpy(), want)
    np.testing.assert_array_equal(t.numpy(), a)  # functional: input unchanged
    r2 = rt.slice_assign(t, (0,), 5)
    want2 = a.copy()
    want2[0] = 5
    np.testing.assert_array_equal(r2.numpy(), want2)
    r3 = rt.slice_assign(t, (slice(None), 1), rt.tensor([1, 2, 3, 4]))
    assert r3.dtype is rt.float32 and r3.numpy()[:, 1].tolist() == [1, 2, 3, 4]
    with pytest.raises(rt.ShapeError, match="slice_assign"):
        rt.slice_assign(t, (0,), rt.ones(4))
    with pytest.raises(TypeError, match="immutable"):
        t[0] = 1


def test_empty_negative_step_slices_on_inner_axes():
    a = np.arange(120).reshape(4, 5, 6)
    t = rt.tensor(a)
    for key in [(slice(None), slice(-10, None, -1)), (slice(None), slice(None, 10, -1)),
                (Ellipsis, slice(-1, -7, -1)), (slice(None), slice(3, 3))]:
        assert t[key].shape == a[key].shape, key
        np.testing.assert_array_equal(t[key].numpy(), a[key])
        r = rt.slice_assign(t, key, 7)
        w = a.copy()
        w[key] = 7
        np.testing.assert_array_equal(r.numpy(), w)


def test_softmax_of_0d_checks_its_axis():
    """Was accepted while sum rejects the same axis (0-d: only 0 and -1, as NumPy/PyTorch)."""
    x = rt.tensor(1.0)
    assert rt.softmax(x, axis=-1).item() == 1.0 and rt.log_softmax(x, axis=0).item() == 0.0
    with pytest.raises(rt.ShapeError, match="softmax: axis 1 is out of range for a tensor of "
                                            "0 dimension"):
        rt.softmax(x, axis=1)
