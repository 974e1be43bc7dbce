"""The dispatch layer's caches (small-op fast path, cached inference) never change a result:
repeated calls on autodiff and capture devices (which use the cached inference) give the same
shapes, dtypes and errors as the first call."""
import numpy as np
import pytest

import runtime as rt
from runtime import dispatch


@pytest.fixture(params=["cpu", "autodiff", "capture"])
def run_on(request):
    """fn(build) -> (shape, dtype) of build(x, y) with x int32 (2, 3), y float32 (3,)."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = np.array([0.5, 1.5, 2.5], np.float32)

    def run(build):
        if request.param == "capture":
            dev = rt.CaptureDevice()
            with dev.capture_scope() as scope:
                out = build(rt.tensor(x, device=dev), rt.tensor(y, device=dev))
                scope.complete(outputs=[out])
            return out.shape, out.dtype
        dev = rt.cpu() if request.param == "cpu" else rt.autodiff(rt.cpu())
        out = build(rt.tensor(x, device=dev), rt.tensor(y, device=dev))
        return out.shape, out.dtype
    return run


CASES = [
    (lambda x, y: x + 1, ((2, 3), rt.int32)),
    (lambda x, y: x + 1.0, ((2, 3), rt.float32)),
    (lambda x, y: x + True, ((2, 3), rt.int32)),
    (lambda x, y: x + y, ((2, 3), rt.float32)),
    (lambda x, y: x / 2, ((2, 3), rt.float32)),
    (lambda x, y: x < y, ((2, 3), rt.bool_)),
    (lambda x, y: rt.exp(x), ((2, 3), rt.float32)),
    (lambda x, y: -x, ((2, 3), rt.int32)),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_repeated_calls_infer_the_same(run_on, k):
    build, want = CASES[k]
    dispatch.clear_dispatch_cache()
    assert run_on(build) == want
    assert run_on(build) == want          # from the caches
    for other, other_want in CASES:       # other scalar types / shapes do not collide
        assert run_on(other) == other_want


def test_a_cached_shape_never_hides_a_broadcast_error(run_on):
    ok = run_on(lambda x, y: x * y)
    assert ok == ((2, 3), rt.float32)
    with pytest.raises(rt.errors.ShapeError, match="mul"):
        run_on(lambda x, y: x * y[:2])
    with pytest.raises(rt.errors.DTypeError, match="sub"):
        run_on(lambda x, y: (x < 1) - (x > 1))
    assert run_on(lambda x, y: x * y) == ok


def test_full_caches_drop_their_oldest_entries(monkeypatch):
    """A process whose shapes keep changing keeps its fast path."""
    from runtime import dispatch
    monkeypatch.setattr(dispatch, "_FAST_MAX", 4)
    rt.empty_cache()
    for n in range(1, 11):
        for _ in range(2):              # a signature's second call leaves its decision
            rt.add(rt.zeros(n), rt.zeros(n))
    assert 0 < len(dispatch._FAST) <= 4 and 0 < len(dispatch._INFER) <= 4
    newest = [k for k in dispatch._FAST if k[0] == "add" and k[2] == (10,)]
    assert newest, "the newest shape must be cached"
    rt.empty_cache()


# ---- the plans of ops with attrs (``dispatch._RULES``) ----------------------------------------
def _counting(monkeypatch, name):
    from runtime.ops.catalogue import CATALOGUE
    spec = CATALOGUE[name]
    calls = []

    def infer(args, attrs, _f=spec.infer):
        calls.append(dict(attrs))
        return _f(args, attrs)
    monkeypatch.setattr(spec, "infer", infer)
    dispatch.clear_dispatch_cache()
    return calls


@pytest.mark.parametrize("dev", [rt.cpu(), rt.autodiff(rt.cpu())], ids=["cpu", "autodiff"])
def test_an_op_with_attrs_runs_its_rule_once_per_signature(dev, monkeypatch):
    # (a capture device is keyed by itself: each new one runs the rule again)
    import runtime.nn.functional as F
    calls = _counting(monkeypatch, "max_pool2d")
    x = rt.tensor(np.array([[[[0.5, 1.5, 2.5]]]], np.float32), device=dev)
    outs = [F.max_pool2d(x, (1, 2), 1) for _ in range(3)]
    assert all(o.shape == (1, 1, 1, 2) and o.dtype is rt.float32 for o in outs)
    np.testing.assert_array_equal(outs[2].numpy(), [[[[1.5, 2.5]]]])
    assert len(calls) == 1
    F.max_pool2d(x, (1, 3), 1)                          # other attrs: the rule again
    assert len(calls) == 2
    dispatch.clear_dispatch_cache()
    F.max_pool2d(x, (1, 2), 1)
    assert len(calls) == 3


def test_a_rule_that_raised_raises_again(run_on):
    import runtime.nn.functional as F
    msg = ("max_pool2d: kernel of size (1, 5) (kernel_size (1, 5), dilation (1, 1)) is larger "
           "than the input of shape (1, 1, 1, 3) with padding (0, 0): the output would be 1x-1")
    for _ in range(3):
        with pytest.raises(rt.ShapeError) as e:
            run_on(lambda x, y: F.max_pool2d(rt.reshape(y, (1, 1, 1, 3)), (1, 5), 1))
        assert str(e.value) == msg


def test_attr_keys_tell_the_types_apart():
    dev = rt.cpu()
    x = rt.zeros((2, 3))
    keys = {dispatch._rule_key("sum", dev, (x,), {"axes": (0,), "keepdims": v})
            for v in (1, True, 1.0)}
    assert len(keys) == 3
    # a tuple of ints keys as itself: no other attr value may equal it
    tuples = [(0, 1), (False, True), (0.0, 1.0), (0, True), (int, 1), 0, ((0, 1),), ()]
    keys = [dispatch._rule_key("sum", dev, (x,), {"axes": v}) for v in tuples]
    assert keys[4] is None                                # a type is not a plain value
    assert len({k for k in keys if k is not None}) == len(tuples) - 1
    assert dispatch._rule_key("sum", dev, (x,), {"axes": [0]}) is None        # not a plain value
    assert dispatch._rule_key("sum", dev, (x, object()), {"axes": (0,)}) is None
    assert dispatch._rule_key("sum", dev, (x,), {"axes": (0,)}) != \
        dispatch._rule_key("sum", dev, (rt.zeros((2, 3), dtype=rt.float64),), {"axes": (0,)})


def test_pieces_cut_views_with_or_without_the_kernel_sets_split(monkeypatch):
    shapes = [(2, 3), (4,), (1, 1, 2)]
    t = rt.tensor(np.arange(12, dtype=np.float32))
    fast = dispatch.pieces(t, shapes)
    ks = dispatch.kernels_for(rt.cpu())
    monkeypatch.setattr(type(ks), "capabilities", ks.capabilities - {"split"})
    slow = dispatch.pieces(t, shapes)
    want = [np.arange(6).reshape(2, 3), np.arange(6, 10), np.arange(10, 12).reshape(1, 1, 2)]
    for a, b, w in zip(fast, slow, want):
        assert a.shape == b.shape == w.shape and a.dtype is b.dtype is rt.float32
        np.testing.assert_array_equal(a.numpy(), w)
        np.testing.assert_array_equal(b.numpy(), w)
    with pytest.raises(rt.ShapeError):
        dispatch.pieces(t, [(5,)])


# ---- the warm path's own decisions: fast front ends, prepared matmuls, view decisions --------
def test_a_decision_never_outlives_its_record(monkeypatch):
    """A hit runs its cached decision without looking the record up: replacing the record
    (here by writing to the catalogue directly) drops the decisions."""
    import dataclasses
    from runtime.ops.catalogue import CATALOGUE
    x = rt.tensor(np.array([-1.5, 2.0, -3.0], np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(rt.neg(x).numpy(), [1.5, -2.0, 3.0])
    assert any(k[0] == "neg" for k in dispatch._FAST)
    abs_kernel = CATALOGUE["abs"].kernel
    monkeypatch.setitem(CATALOGUE, "neg", dataclasses.replace(CATALOGUE["neg"], kernel=abs_kernel,
                                                              lowering=None))
    assert not dispatch._FAST and not dispatch._INFER
    for _ in range(3):
        np.testing.assert_array_equal(rt.neg(x).numpy(), [1.5, 2.0, 3.0])
    monkeypatch.undo()
    np.testing.assert_array_equal(rt.neg(x).numpy(), [1.5, -2.0, 3.0])


def _repeated(builds) -> list:
    """The first call of each build, after checking three more rounds of calls give its shape,
    dtype and bits."""
    first = [f() for f in builds]
    for _ in range(3):
        for f, want in zip(builds, first):
            got = f()
            assert got.shape == want.shape and got.dtype is want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    return first


@pytest.mark.parametrize("dev", [rt.cpu(), rt.autodiff(rt.cpu())], ids=["cpu", "autodiff"])
def test_repeated_small_matmuls_give_the_first_calls_bits(dev):
    rng = np.random.default_rng(3)
    m = rng.standard_normal((5, 4)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    b = rng.standard_normal((2, 4, 3)).astype(np.float32)
    tm, tv, tb = (rt.tensor(a, device=dev) for a in (m, v, b))
    t64 = rt.tensor(m[:3].astype(np.float64), device=dev)
    dispatch.clear_dispatch_cache()
    builds = [lambda: tm @ tm.T, lambda: tm.T @ tm, lambda: tm @ tv, lambda: tm @ tb,
              lambda: rt.matmul(tm[:, :3], t64), lambda: tm[::2] @ tm[1:4].T]
    first = _repeated(builds)
    np.testing.assert_allclose(first[0].numpy(), m @ m.T, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(first[5].numpy(), m[::2] @ m[1:4].T, rtol=1e-6, atol=1e-6)
    if dev == rt.cpu():    # two matrices of the result dtype have a decision of their own
        assert any(k[0] == "matmul" and len(k[2]) == len(k[4]) == 2 for k in dispatch._FAST)


@pytest.mark.parametrize("dev", [rt.cpu(), rt.autodiff(rt.cpu())], ids=["cpu", "autodiff"])
def test_repeated_linears_give_the_first_calls_bits(dev):
    """``linear`` with a bias (three operands) keeps a decision per signature: later calls run
    the prepared product and the bias's add, bit for bit the first call's lowering."""
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (3, 5), (3,)))
    tx, tw, tb = (rt.tensor(a, device=dev) for a in (x, w, b))
    t3 = rt.tensor(rng.standard_normal((2, 6, 5)).astype(np.float32), device=dev)
    tb64 = rt.tensor(b.astype(np.float64), device=dev)
    dispatch.clear_dispatch_cache()
    tw_view = rt.tensor(np.ascontiguousarray(w.T), device=dev).T          # a transposed view
    tx_view = rt.tensor(np.concatenate([x, x], axis=1), device=dev)[:, ::2]  # strided rows
    builds = [lambda: rt.nn.functional.linear(tx, tw, tb),
              lambda: rt.nn.functional.linear(t3, tw, tb),        # batched: the general way
              lambda: rt.nn.functional.linear(tx, tw, tb64),      # a float64 bias
              lambda: rt.nn.functional.linear(tx_view, tw_view, tb)]
    first = _repeated(builds)
    np.testing.assert_allclose(first[0].numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert first[2].dtype is rt.float64
    np.testing.assert_allclose(first[3].numpy(), np.concatenate([x, x], axis=1)[:, ::2] @ w.T + b,
                               rtol=1e-5, atol=1e-6)
    assert any(k[0] == "linear" and len(k) == 8 for k in dispatch._FAST)
    if dev != rt.cpu():
        tw.require_grad()
        tb.require_grad()
        for _ in range(2):
            g = (rt.nn.functional.linear(tx, tw, tb) ** 2).sum().backward()
            y = x @ w.T + b
            np.testing.assert_allclose(tw.grad(g).numpy(), 2 * y.T @ x, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(tb.grad(g).numpy(), 2 * y.sum(0), rtol=1e-4, atol=1e-5)


def test_the_fast_front_ends_keep_their_errors():
    x, y = rt.zeros((2, 3)), rt.zeros((4,))
    for _ in range(3):
        assert (x @ x.T).shape == (2, 2) and (x + x).shape == (2, 3)
    with pytest.raises(rt.errors.ShapeError, match=r"matmul: shapes \(2, 3\) and \(2, 3\) are "
                                                   r"not aligned \(3 != 2\)"):
        x @ x
    with pytest.raises(rt.errors.ArgumentTypeError, match="matmul: expected a Tensor, got list"):
        rt.matmul(x, [[1.0]])
    with pytest.raises(rt.errors.ShapeError, match="add"):
        x + y


@pytest.mark.parametrize("dev", [rt.cpu(), rt.autodiff(rt.cpu())], ids=["cpu", "autodiff"])
def test_repeated_views_are_the_views(dev):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = rt.tensor(a, device=dev)
    for _ in range(3):
        np.testing.assert_array_equal(t.T.numpy(), a.T)
        np.testing.assert_array_equal(rt.permute(t, (1, 0, 2)).numpy(), a.transpose(1, 0, 2))
        np.testing.assert_array_equal(rt.permute(t, -1, 0, 1).numpy(), a.transpose(2, 0, 1))
        v = rt.tensor(a[0, 0], device=dev)
        assert v.T is v
    if dev == rt.cpu():
        assert any(k[0] == "permute" for k in dispatch._FAST)
    else:
        w = rt.tensor(a[0], device=dev).require_grad()
        g = (w.T * rt.tensor(a[1].T, device=dev)).sum().backward()
        np.testing.assert_array_equal(w.grad(g).numpy(), a[1])


def test_prepared_kernels_given_the_shape_match_the_general_ones():
    """The kernel set's prepared elementwise kernels and product, decided for one shape, give
    the bits of the general kernels (and take strided operands the general way)."""
    ks = dispatch.kernels_for(rt.cpu())
    rng = np.random.default_rng(5)
    f4 = np.dtype(np.float32)
    for shape in [(7,), (3, 5), ()]:
        a = rng.standard_normal(shape).astype(f4)
        b = rng.standard_normal(shape).astype(f4)
        add = ks.binary_fn("sub", f4, f4, f4, f4, shape)
        exp = ks.unary_fn("exp", f4, f4, shape)
        np.testing.assert_array_equal(add(a, b), ks.binary("sub", a, b, f4, f4))
        np.testing.assert_array_equal(exp(a), ks.unary("exp", a, f4))
    m = rng.standard_normal((6, 6)).astype(f4)
    add, exp = ks.binary_fn("sub", f4, f4, f4, f4, (3, 6)), ks.unary_fn("exp", f4, f4, (3, 6))
    np.testing.assert_array_equal(add(m[::2], m[1::2]), m[::2] - m[1::2])
    np.testing.assert_array_equal(exp(m[::2]), ks.unary("exp", np.ascontiguousarray(m[::2]), f4))
    for (mm, k, n), (a, b) in [((4, 3, 5), (rng.standard_normal((4, 3)), rng.standard_normal((5, 3)).T)),
                               ((3, 0, 2), (np.zeros((3, 0)), np.zeros((0, 2))))]:
        a, b = a.astype(f4), b.astype(f4)
        got = ks.matmul_fn(mm, k, n, f4)(a, b)
        want = ks.matmul(a[None], b[None])[0]
        assert got.shape == (mm, n)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [rt.float32, rt.float64])
@pytest.mark.parametrize("value", [0.1, -3.0, 1e30, 1e-45, float("inf")])
def test_dispatch_scalar_is_full_without_the_dispatch(dtype, value):
    got = dispatch.scalar(rt.cpu(), value, dtype)
    want = rt.full((), value, dtype=dtype)
    assert got.shape == () and got.dtype is dtype and got.device == rt.cpu()
    assert got.numpy().tobytes() == want.numpy().tobytes()
