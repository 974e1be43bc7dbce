"""Gradients of shape and indexing ops vs central finite differences."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from .gradcheck import AD, check_grad

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=8)
@given(shape=shapes, data=st.data())
def test_reshape_flatten_squeeze_unsqueeze(shape, data):
    x = np.random.default_rng(0).normal(size=shape)
    check_grad(lambda t: rt.reshape(t, (-1,)) * rt.arange(x.size, dtype=rt.float64), x)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_grad(lambda t: rt.unsqueeze(t, axis), x)
    check_grad(lambda t: rt.squeeze(rt.unsqueeze(t, 0), 0), x)
    check_grad(lambda t: rt.flatten(t), x)


@settings(max_examples=8)
@given(shape=shapes, data=st.data())
def test_permute_transpose(shape, data):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.random.default_rng(1).normal(size=shape)
    check_grad(lambda t: rt.permute(t, perm), x)
    check_grad(lambda t: t.T, x)
    if len(shape) >= 2:
        check_grad(lambda t: rt.transpose(t, 0, -1), x)


@settings(max_examples=8)
@given(shape=shapes, data=st.data())
def test_expand_broadcast_to(shape, data):
    src = tuple(1 if data.draw(st.booleans()) else d for d in shape)
    lead = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    x = np.random.default_rng(2).normal(size=src)
    check_grad(lambda t: rt.broadcast_to(t, lead + shape), x)
    check_grad(lambda t: t.expand(*((-1,) * 0 + lead + shape)), x)


@st.composite
def basic_key(draw, shape):
    key = []
    for d in shape:
        kind = draw(st.sampled_from(["int", "slice", "full", "none"]))
        if kind == "int":
            key.append(draw(st.integers(-d, d - 1)))
        elif kind == "slice":
            start = draw(st.integers(-d, d))
            stop = draw(st.one_of(st.none(), st.integers(-d, d)))
            step = draw(st.sampled_from([1, 2, -1]))
            key.append(slice(start, stop, step))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            key.append(slice(None))
    return tuple(key)


@settings(max_examples=15)
@given(data=st.data())
def test_getitem_basic(data):
    shape = data.draw(shapes)
    key = data.draw(basic_key(shape))
    x = np.random.default_rng(3).normal(size=shape)
    if x[key].size == 0:
        return
    check_grad(lambda t: t[key], x)


def test_getitem_negative_step(rng):
    check_grad(lambda t: t[1::-1], rng.normal(size=(3,)))
    check_grad(lambda t: t[::-2, 1:], rng.normal(size=(4, 3)))


def test_getitem_ellipsis_and_new_axis(rng):
    check_grad(lambda t: t[..., None, 1], rng.normal(size=(2, 3)))
    check_grad(lambda t: t[1, ::2], rng.normal(size=(3, 5)))


@settings(max_examples=10)
@given(data=st.data())
def test_slice_assign_both_inputs(data):
    shape = data.draw(shapes)
    key = tuple(slice(0, data.draw(st.integers(1, d))) for d in shape)
    region = tuple(k.stop for k in key)
    vshape = tuple(1 if data.draw(st.booleans()) else d for d in region)
    rng = np.random.default_rng(4)
    check_grad(lambda t, v: rt.slice_assign(t, key, v), rng.normal(size=shape), rng.normal(size=vshape))
    check_grad(lambda t: rt.slice_assign(t, key, 2.5), rng.normal(size=shape))


@settings(max_examples=10)
@given(shape=shapes, data=st.data())
def test_take(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(0, len(shape) - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    ishape = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    idx = np.random.default_rng(5).integers(-n, n, size=ishape)     # repeats and negatives
    x = np.random.default_rng(6).normal(size=shape)
    check_grad(lambda t: rt.take(t, rt.tensor(idx, device=AD), axis=axis), x)


@settings(max_examples=10)
@given(shape=shapes, data=st.data())
def test_gather(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    ishape = tuple(data.draw(st.integers(1, d)) if i != axis else data.draw(st.integers(1, 4))
                   for i, d in enumerate(shape))
    idx = np.random.default_rng(7).integers(0, shape[axis], size=ishape)
    x = np.random.default_rng(8).normal(size=shape)
    check_grad(lambda t: rt.gather(t, axis, rt.tensor(idx)), x)


@settings(max_examples=10)
@given(shape=shapes, data=st.data())
def test_scatter_add(shape, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    ishape = tuple(data.draw(st.integers(1, 4)) if d == axis % nd else data.draw(st.integers(1, n))
                   for d, n in enumerate(shape))
    sshape = tuple(i + data.draw(st.integers(0, 1)) for i in ishape)   # src may be larger
    n = shape[axis]
    idx = np.random.default_rng(10).integers(-n, n, size=ishape)      # repeats and negatives
    rng = np.random.default_rng(11)
    x, src = rng.normal(size=shape), rng.normal(size=sshape)
    check_grad(lambda t, s: rt.scatter_add(t, axis, rt.tensor(idx), s), x, src)
    # a nonlinear use, so the gradient depends on the values scattered together
    check_grad(lambda t, s: rt.scatter_add(t * t, axis, rt.tensor(idx), s * 3.0) ** 2, x, src)
    check_grad(lambda s: rt.scatter_add(rt.tensor(x, device=AD), axis, rt.tensor(idx), s), src)


def test_scatter_add_grad_of_src_only_where_indexed():
    ad = rt.autodiff(rt.cpu())
    x = rt.zeros(3, 2, device=ad).require_grad()
    src = rt.tensor(np.arange(12.0).reshape(4, 3), dtype=rt.float64, device=ad).require_grad()
    idx = rt.tensor([[2, 0], [2, 1]])
    y = rt.scatter_add(x.astype(rt.float64), 0, idx, src)
    w = np.arange(6.0).reshape(3, 2) + 1
    grads = (y * rt.tensor(w)).sum().backward()
    np.testing.assert_array_equal(src.grad(grads).numpy(),
                                  [[5, 2, 0], [5, 4, 0], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(x.grad(grads).numpy(), w)


@pytest.mark.parametrize("axis", [0, None])
def test_take_backward_is_a_scatter_not_a_one_hot_matmul(axis, monkeypatch):
    """An embedding-sized table: the gradient is scatter-added, with no (50000 x 64) one-hot
    matrix and no matmul behind it."""
    from runtime.dispatch import kernels_for_kind
    ks = kernels_for_kind("cpu")
    calls = []
    real = ks.scatter_add

    def spy(x, indices, src, ax):
        calls.append((x.shape, indices.shape, src.shape))
        return real(x, indices, src, ax)

    def no_matmul(*a):
        raise AssertionError("take's backward ran a matmul")
    monkeypatch.setattr(ks, "scatter_add", spy)
    monkeypatch.setattr(ks, "matmul", no_matmul)
    rng = np.random.default_rng(12)
    table = rng.standard_normal((50000, 8)).astype(np.float32)
    idx = rng.integers(-50000, 50000, size=(4, 16))
    idx[1, :4] = idx[0, :4]                                    # repeated rows accumulate
    w = rt.tensor(table, device=AD).require_grad()
    g_out = rng.standard_normal((4, 16, 8) if axis == 0 else (4, 16)).astype(np.float32)
    y = rt.take(w, rt.tensor(idx), axis=axis)
    grads = (y * rt.tensor(g_out)).sum().backward()
    got = w.grad(grads).numpy()
    want = np.zeros_like(table)
    if axis == 0:
        np.add.at(want, idx.reshape(-1) % 50000, g_out.reshape(64, 8))
    else:
        np.add.at(want.reshape(-1), idx.reshape(-1) % 400000, g_out.reshape(-1))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert calls == [((50000, 8), (64, 8), (64, 8))] if axis == 0 else [((400000,), (64,), (64,))]


def test_integer_array_getitem(rng):
    check_grad(lambda t: t[[2, 0, 2]], rng.normal(size=(3, 2)))
    check_grad(lambda t: t[:, [1, 1]], rng.normal(size=(3, 2)))


@settings(max_examples=8)
@given(shape=shapes, data=st.data())
def test_cat_stack_split_chunk(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(9)
    other = list(shape)
    other[axis] = data.draw(st.integers(1, 3))
    a, b = rng.normal(size=shape), rng.normal(size=other)
    check_grad(lambda s, t: rt.cat([s, t, s], axis=axis), a, b)
    check_grad(lambda s, t: rt.stack([s, t * 2], axis=axis), a, rng.normal(size=shape))
    w = rng.normal(size=shape)
    check_grad(lambda t: rt.split(t, 1, axis)[0] * 2 + rt.split(t, 1, axis)[-1], a)
    check_grad(lambda t: rt.chunk(t * rt.tensor(w), 2, axis)[-1], a)
