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
