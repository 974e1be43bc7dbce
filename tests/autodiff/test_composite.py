"""Composite catalogue ops ``linear`` and ``cross_entropy`` (rt.nn.functional): values against a
NumPy float64 oracle and against their primitive decomposition, finite-difference gradients of
their rules, one tape node each, and primitives only in captured graphs."""
import numpy as np
import pytest

import runtime as rt
from runtime.ops.catalogue import CATALOGUE

from .gradcheck import AD, check_grad

F = rt.nn.functional


def _decomposed(name, *args, **attrs):
    return CATALOGUE[name].decompose(args, attrs)


# ------------------------------------------------------------------------------------ linear
@pytest.mark.parametrize("x_shape", [(5, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_gradients(rng, x_shape, bias):
    w = rng.normal(size=(3, 4))
    if bias:
        check_grad(lambda x, w, b: F.linear(x, w, b), rng.normal(size=x_shape), w,
                   rng.normal(size=3))
    else:
        check_grad(lambda x, w: F.linear(x, w), rng.normal(size=x_shape), w)


def test_linear_untracked_input_and_broadcast_bias(rng):
    x = rng.normal(size=(4, 5))
    check_grad(lambda w, b: F.linear(rt.tensor(x, device=AD), w, b), rng.normal(size=(2, 5)),
               rng.normal(size=(1, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_values_match_numpy_and_the_decomposition(rng, dtype):
    x = rng.normal(size=(7, 6)).astype(dtype)
    w = rng.normal(size=(3, 6)).astype(dtype)
    b = rng.normal(size=3).astype(dtype)
    got = F.linear(rt.tensor(x), rt.tensor(w), rt.tensor(b))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), x.astype(np.float64) @ w.T.astype(np.float64) + b,
                               rtol=tol, atol=tol)
    want = _decomposed("linear", rt.tensor(x), rt.tensor(w), rt.tensor(b))
    np.testing.assert_array_equal(got.numpy(), want.numpy())    # the same kernels
    assert got.dtype is want.dtype


def test_linear_mixed_dtypes_promote_like_the_composition(rng):
    x = rt.tensor(rng.normal(size=(4, 3)).astype(np.float32))
    w = rt.tensor(rng.normal(size=(2, 3)))                      # float64
    b = rt.tensor(np.array([1, 2], np.int64))
    got, want = F.linear(x, w, b), _decomposed("linear", x, w, b)
    assert got.dtype is want.dtype is rt.float64
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_linear_shape_errors_name_the_op():
    x, w = rt.ones(4, 3), rt.ones(2, 5)
    with pytest.raises(rt.ShapeError, match="matmul: shapes"):
        F.linear(x, w)
    with pytest.raises(rt.ShapeError, match=r"^linear: shapes \(4, 2\) and \(4,\) cannot be broadcast"):
        F.linear(x, rt.ones(2, 3), rt.ones(4))
    with pytest.raises(rt.ShapeError, match="weight must be 2-D"):
        F.linear(x, rt.ones(3))


# ----------------------------------------------------------------------------- cross_entropy
def _np_cross_entropy(z, t, reduction):
    z = z.astype(np.float64)
    m = z.max(axis=1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    per = -logp[np.arange(len(t)), t]
    return per.mean() if reduction == "mean" else per.sum() if reduction == "sum" else per


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradients(rng, reduction):
    t = rt.tensor(np.array([2, 0, 3, 3, 1]))
    check_grad(lambda z: F.cross_entropy(z, t, reduction=reduction), rng.normal(size=(5, 4)) * 3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_values_match_numpy_and_the_decomposition(rng, reduction, dtype):
    z = (rng.normal(size=(9, 6)) * 4).astype(dtype)
    t = rng.integers(0, 6, size=9)
    got = F.cross_entropy(rt.tensor(z), rt.tensor(t), reduction=reduction)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), _np_cross_entropy(z, t, reduction), rtol=tol, atol=tol)
    want = _decomposed("cross_entropy", rt.tensor(z), rt.tensor(t), reduction=reduction)
    assert got.shape == want.shape and got.dtype is want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_cross_entropy_gradient_against_numpy_float64(rng):
    z = rng.normal(size=(6, 5)) * 2
    t = np.array([4, 0, 1, 1, 2, 3], np.int32)                   # int32 targets too
    zt = rt.tensor(z, device=AD).require_grad()
    loss = F.cross_entropy(zt, rt.tensor(t))
    g = zt.grad(loss.backward()).numpy()
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(6), t] -= 1
    np.testing.assert_allclose(g, p / 6, rtol=1e-12, atol=1e-15)


def test_cross_entropy_int_logits_and_empty_batch():
    got = F.cross_entropy(rt.tensor([[1, 2, 3]]), [2])
    assert got.dtype is rt.float32
    np.testing.assert_allclose(got.numpy(), _np_cross_entropy(np.array([[1, 2, 3]]), [2], "mean"),
                               rtol=1e-6)
    empty = F.cross_entropy(rt.zeros(0, 3), rt.tensor(np.zeros(0, np.int64)), reduction="sum")
    assert empty.shape == () and float(empty) == 0.0


def test_cross_entropy_bad_reduction():
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(rt.ones(2, 3), [0, 1], reduction="max")


# ---------------------------------------------------------------------------- tape and capture
def test_each_composite_is_one_tape_node(rng):
    w = rt.tensor(rng.normal(size=(3, 4)), device=AD).require_grad()
    b = rt.tensor(rng.normal(size=3), device=AD).require_grad()
    h = F.linear(rt.tensor(rng.normal(size=(5, 4)), device=AD), w, b)
    loss = F.cross_entropy(h, [0, 1, 2, 0, 1])
    node = loss._payload.node
    assert node.spec.name == "cross_entropy" and node.inputs[0] is h._payload.node
    assert h._payload.node.spec.name == "linear"
    assert h._payload.node.inputs[1:] == (w._payload.node, b._payload.node)


def test_balanced_checkpointing_gives_the_same_gradients(rng):
    x = rng.normal(size=(8, 6)).astype(np.float32)
    ps = [rng.normal(size=(5, 6)), rng.normal(size=5), rng.normal(size=(3, 5)), rng.normal(size=3)]
    out = []
    for mode in ("none", "balanced"):
        ad = rt.autodiff(rt.cpu(), checkpointing=mode)
        ts = [rt.tensor(p.astype(np.float32), device=ad).require_grad() for p in ps]
        logits = F.linear(rt.relu(F.linear(rt.tensor(x, device=ad), ts[0], ts[1])), ts[2], ts[3])
        grads = F.cross_entropy(logits, [0, 1, 2, 0, 1, 2, 0, 1]).backward()
        out.append([t.grad(grads).numpy() for t in ts])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_capture_records_the_primitive_ops(rng):
    w = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    t = np.array([0, 2, 1, 1, 0])

    def fn(xt):
        d = xt.device
        h = F.linear(xt, rt.tensor(w, device=d), rt.tensor(b, device=d))
        return [h, F.cross_entropy(h, rt.tensor(t, device=d))]

    g = rt.capture(fn, x)
    names = [op.op for op in g.operations]
    assert "linear" not in names and "cross_entropy" not in names
    assert {"permute", "matmul", "add", "log_softmax", "eq", "mul", "sum", "neg", "mean"} <= set(names)
    got = g.run(x)
    want = fn(rt.tensor(x))
    for a, e in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), e.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_backward_op_matches_its_decomposition(rng, reduction, dtype):
    from runtime.dispatch import dispatch
    z = rt.tensor((rng.normal(size=(7, 5)) * 3).astype(dtype))
    t = rt.tensor(rng.integers(0, 5, size=7))
    g = rt.tensor(rng.uniform(0.5, 2.0, size=(7,) if reduction == "none" else ()).astype(dtype))
    attrs = {"reduction": reduction}
    got = dispatch("cross_entropy_backward", (z, t, g), attrs)
    want = _decomposed("cross_entropy_backward", z, t, g, **attrs)
    assert got.shape == want.shape == (7, 5) and got.dtype is want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(rt.ShapeError, match="does not match the loss"):
        dispatch("cross_entropy_backward", (z, t, rt.ones(3)), attrs)


def test_autodiff_devices_are_shared_values():
    ad = rt.autodiff(rt.cpu())
    t = rt.from_inner(rt.ones(2))
    assert t.device is ad and rt.autodiff("cpu") is ad
    bal = rt.from_inner(rt.ones(2), checkpointing="balanced").device
    assert bal is rt.autodiff(rt.cpu(), checkpointing="balanced") and bal.checkpointing == "balanced"
    assert bal == ad and bal is not ad            # equal devices, strategies kept apart
    with pytest.raises(ValueError):
        rt.autodiff(rt.cpu(), checkpointing="sometimes")
    with pytest.raises(rt.NestedAutodiffError):
        rt.autodiff(ad)


def test_linear_and_cross_entropy_errors():
    x = rt.tensor(np.ones((4, 3), np.float32))
    with pytest.raises(rt.errors.ShapeError, match=r"^linear: weight must be 2-D \(out_features, "
                                                   r"in_features\), got shape \(3,\)$"):
        F.linear(x, rt.tensor(np.ones(3, np.float32)))
    y = rt.tensor(np.array([0, 1, 2, 0]))
    with pytest.raises(rt.errors.ShapeError,
                       match=r"^cross_entropy: target of shape \(4,\) does not match logits of "
                             r"shape \(12,\) \(expected \(\)\)$"):
        F.cross_entropy(x.reshape(12), y)        # unbatched logits take a 0-d target
    with pytest.raises(rt.errors.DTypeError, match=r"^cross_entropy: targets must be integer "
                                                   r"class indices, got float32$"):
        F.cross_entropy(x, rt.tensor(np.zeros(4, np.float32)))
    with pytest.raises(rt.errors.ShapeError, match=r"^cross_entropy: target of shape \(3,\) does "
                                                   r"not match logits of shape \(4, 3\) "
                                                   r"\(expected \(4,\)\)$"):
        F.cross_entropy(x, [0, 1, 2])
    with pytest.raises(ValueError, match=r"^cross_entropy: reduction must be 'mean', 'sum' or "
                                         r"'none', got 'avg'$"):
        F.cross_entropy(x, y, reduction="avg")
    with pytest.raises(ValueError, match=r"^cross_entropy: reduction must be 'mean', 'sum' or "
                                         r"'none', got 'avg'$"):
        F.cross_entropy(rt.tensor(np.ones((0, 3), np.float32)), [], reduction="avg")
    with pytest.raises(rt.errors.IndexOutOfRangeError,
                       match=r"^cross_entropy: target 3 is out of range for 3 classes$"):
        F.cross_entropy(x, [0, 3, 1, 2])


@pytest.mark.parametrize("x_shape, w_shape", [((2, 1, 3), (0, 3)), ((2, 1, 0), (4, 0)),
                                              ((0, 2, 3), (4, 3))])
def test_linear_gradients_with_a_zero_size_dim(x_shape, w_shape):
    """Was ShapeError: cannot reshape tensor of shape (2, 1, 0) into (-1, 0)."""
    x = rt.ones(*x_shape, device=AD).require_grad()
    w = rt.ones(*w_shape, device=AD).require_grad()
    grads = F.linear(x, w).sum().backward()
    gx, gw = x.grad(grads), w.grad(grads)
    assert gx.shape == x_shape and gw.shape == w_shape
    np.testing.assert_array_equal(gx.numpy(), np.full(x_shape, w_shape[0], np.float32))
    np.testing.assert_array_equal(gw.numpy(), np.full(w_shape, np.prod(x_shape[:-1]), np.float32))


def test_an_elementwise_composite_runs_flattened_one_runner_per_size():
    """Operands of one shape run as 1-D: a (3, 4) and a (2, 6) call share the runner (and the
    generated kernel), a transposed view gives the same values as its copy."""
    from runtime.capture import composite
    from runtime.ops.catalogue import CATALOGUE
    composite.RUNNERS.clear()
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    a = rt.silu(rt.tensor(x))
    b = rt.silu(rt.tensor(x.reshape(2, 6)))
    assert len(composite.RUNNERS) == 1
    np.testing.assert_array_equal(a.numpy().reshape(-1), b.numpy().reshape(-1))
    t = rt.tensor(x).T                                  # a strided view: copied flat, same values
    np.testing.assert_array_equal(rt.silu(t).numpy(), a.numpy().T)
    assert composite._one_shape(CATALOGUE["silu"], (rt.tensor(x),)) == (3, 4)
    assert composite._one_shape(CATALOGUE["softmin"], (rt.tensor(x),)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_op_matches_its_decomposition_and_relus_gradient(rng, dtype):
    from runtime.dispatch import dispatch
    x = rng.normal(size=(6, 7)).astype(dtype)
    x[0, :3] = [0.0, -0.0, np.nan]   # nothing passes at 0 (PyTorch's) nor at NaN (x > 0 is False)
    g = rng.normal(size=(6, 7)).astype(dtype)
    got = dispatch("relu_backward", (rt.tensor(x), rt.tensor(g)))
    want = _decomposed("relu_backward", rt.tensor(x), rt.tensor(g))
    assert got.dtype is want.dtype and got.shape == (6, 7)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(got.numpy(), np.where(x > 0, g, 0).astype(dtype))
    t = rt.tensor(x, device=AD).require_grad()
    grads = (rt.relu(t) * rt.tensor(g, device=AD)).sum().backward()
    np.testing.assert_array_equal(t.grad(grads).numpy(), np.where(x > 0, g, 0).astype(dtype))
    with pytest.raises(rt.ShapeError, match=r"^relu_backward: the input's shape \(6, 7\) and "
                                            r"the gradient's \(7,\) differ$"):
        dispatch("relu_backward", (rt.tensor(x), rt.tensor(g[0])))
    other = np.float64 if dtype == np.float32 else np.float32
    with pytest.raises(rt.DTypeError, match=rf"^relu_backward: the input's dtype "
                                            rf"{np.dtype(dtype).name} and the gradient's "
                                            rf"{np.dtype(other).name} differ$"):
        dispatch("relu_backward", (rt.tensor(x), rt.tensor(g.astype(other))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("key", [(slice(1, 3, 1),), (0, slice(0, 4, 2)), (slice(2, None, -1), 1),
                                 (None, slice(0, 0, 1)), (slice(0, 4, 1), slice(3, 0, -2))])
def test_index_backward_op_matches_its_decomposition(rng, dtype, key):
    """Basic indexing's gradient (``index_backward``, one record) gives the bits of its
    composition, ``slice_assign`` of the gradient into zeros, for slices, steps, negative steps,
    ints, new axes and empty regions; indexing's gradient on the tape is it."""
    from runtime.dispatch import dispatch
    from runtime.ops.index import _normalize_key, index_shape
    shape = (4, 5)
    k = _normalize_key(rt.zeros(shape), key)
    region = index_shape(shape, k)
    g = (rng.normal(size=region) * 3).astype(dtype)
    got = dispatch("index_backward", (rt.tensor(g),), {"key": k, "shape": shape})
    want = _decomposed("index_backward", rt.tensor(g), key=k, shape=shape)
    assert got.dtype is want.dtype and got.shape == shape
    assert got.numpy().tobytes() == want.numpy().tobytes()
    if dtype == np.float64:
        x = rt.tensor(rng.normal(size=shape), device=AD).require_grad()
        gt = rt.tensor(g, device=AD)
        grads = (x[key] * gt).sum().backward()
        assert x.grad(grads).numpy().tobytes() == want.numpy().tobytes()


def test_index_backward_refuses_a_gradient_of_another_shape():
    from runtime.dispatch import dispatch
    with pytest.raises(rt.ShapeError, match=r"^index_backward: gradient of shape \(3,\) for an "
                                            r"indexed region of shape \(2,\) \(tensor shape "
                                            r"\(4,\)\)$"):
        dispatch("index_backward", (rt.tensor(np.zeros(3, np.float32)),),
                 {"key": (slice(0, 2, 1),), "shape": (4,)})
