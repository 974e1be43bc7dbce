"""Replay (run / bind) equals eager execution for every op family of the catalogue; input checks;
bound parameters; replay on an autodiff device."""
import numpy as np
import pytest

import runtime as rt

RNG = np.random.default_rng(7)
F = RNG.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
G = RNG.uniform(-2.0, 2.0, (3, 4)).astype(np.float32)
ROW = RNG.uniform(-1.0, 1.0, (4,)).astype(np.float32)
I = RNG.integers(-3, 4, (3, 4)).astype(np.int64)
B = RNG.random((3, 4)) < 0.5


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check_replay(fn, *arrays):
    """Capture ``fn`` on example ``arrays``; run, bind and eager give the same results."""
    g = rt.capture(fn, *arrays)
    eager = _as_tuple(fn(*[rt.tensor(a) for a in arrays]))
    ran = g.run(*arrays)
    exe = g.bind(rt.cpu())
    bound = exe(*[rt.tensor(a) for a in arrays])
    again = exe(*arrays)
    assert len(ran) == len(eager) == len(bound) == len(g.outputs)
    for e, r, b, a, ir in zip(eager, ran, bound, again, g.output_tensors):
        for got in (r, b, a):
            assert got.device == rt.cpu()
            assert got.shape == e.shape == ir.shape and got.dtype is e.dtype is ir.dtype
            np.testing.assert_array_equal(got.numpy(), e.numpy())
    return g


def test_family_unary():
    def fn(x, b):
        outs = [getattr(rt, n)(x) for n in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos",
                                              "tanh", "sigmoid", "relu", "gelu", "erf", "reciprocal",
                                              "sign", "floor", "ceil")]
        return outs + [rt.gelu(x, approximate="tanh"), rt.clamp(x, 0.7, 1.5), x.clamp(max=1.0),
                       rt.cast(x, rt.int32), x.astype(rt.float64), rt.logical_not(b), -x, abs(x)]
    g = check_replay(fn, F, B)
    assert "gelu_tanh" in [o.op for o in g.operations]


def test_family_binary_with_scalars_and_broadcasting():
    def fn(x, y, r, i, b):
        return [x + y, x - r, x * 2.0, 3.0 / x, x ** 2, 2.0 ** y, rt.maximum(x, r), rt.minimum(y, 0.0),
                x == y, x != 1.0, x < r, x <= y, 1.0 > y, x >= r, b & (x > 1.0), b | False,
                rt.logical_and(b, b), rt.logical_or(b, i > 0), i + 1, i * x, i / 2, 1 - i]
    check_replay(fn, F, G, ROW, I, B)


def test_family_where():
    check_replay(lambda c, x, y: [rt.where(c, x, y), rt.where(c, x, 0.0), rt.where(c, 1, 2.5)], B, F, G)


def test_family_reductions():
    def fn(x, i):
        out = []
        for name in ("sum", "mean", "prod", "max", "min", "logsumexp"):
            f = getattr(rt, name)
            out += [f(x), f(x, axis=1), f(x, axis=(0, 1), keepdims=True)]
        return out + [rt.var(x, axis=0, ddof=1), rt.var(x), i.sum(axis=0), i.max(),
                      rt.argmax(x, axis=1), rt.argmin(x), rt.argmax(x, axis=0, keepdims=True),
                      rt.softmax(x), rt.log_softmax(x, axis=0)]
    check_replay(fn, G, I)


def test_family_matmul():
    a2 = RNG.standard_normal((3, 4)).astype(np.float32)
    b2 = RNG.standard_normal((4, 5)).astype(np.float32)
    ab = RNG.standard_normal((2, 1, 3, 4)).astype(np.float32)
    bb = RNG.standard_normal((5, 4, 2)).astype(np.float32)
    v = RNG.standard_normal((4,)).astype(np.float32)
    check_replay(lambda a, b, x, y, v: [a @ b, rt.matmul(x, y), a @ v, v @ b, v @ v], a2, b2, ab, bb, v)


def test_family_shape():
    x3 = RNG.standard_normal((2, 1, 3)).astype(np.float32)

    def fn(x, y):
        return [x.reshape(3, 2), x.reshape(-1), x.permute(2, 0, 1), x.transpose(0, 2), x.T,
                rt.broadcast_to(x, (4, 2, 1, 3)),
                x.expand(2, 5, 3), x.squeeze(), x.squeeze(1), x.unsqueeze(0), rt.flatten(x),
                rt.flatten(x, 1), rt.cat([x, x], axis=1), rt.stack([y, y, y], axis=1),
                *rt.split(y, 2, axis=1), *rt.chunk(y, 2, axis=0), *rt.split(y, [1, 3], 1)]
    check_replay(fn, x3, G)


def test_family_indexing():
    idx = np.array([2, 0, 2], np.int64)
    gidx = RNG.integers(0, 4, (3, 2)).astype(np.int64)

    def fn(x, i, gi):
        return [x[1], x[:, 1:3], x[::2, None, -1], x[..., 0], x[-1, ::-1],
                rt.take(x, i, axis=1), rt.take(x, i), x[i], rt.gather(x, 1, gi),
                x.slice_assign((slice(0, 2), 1), 9.0), x.slice_assign((0,), x[1] * 2.0),
                x.take([0, 3], axis=1)]
    g = check_replay(fn, G, idx, gidx)
    ops = [o.op for o in g.operations]
    assert {"index", "take", "gather", "slice_assign"} <= set(ops)


def test_scatter_add_replays_and_compiles():
    idx = np.array([[2, 0, 2, -1], [0, 0, 1, 2]], np.int64)

    def fn(x, i, s):
        return rt.scatter_add(x, 0, i, s * 2.0), x.scatter_add(1, i[:, :2], s[:2]) + 1.0
    g = check_replay(fn, G, idx, F)
    assert "scatter_add" in [o.op for o in g.operations]
    exe = g.compile(rt.cpu())
    for got, want in zip(exe(F, idx[::-1], G), fn(rt.tensor(F), rt.tensor(idx[::-1]), rt.tensor(G))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(rt.IndexOutOfRangeError, match="index 3 is out of bounds for axis 0 with size 3"):
        g.run(G, idx + 1, F)


def test_family_creation_inside_the_graph():
    def fn(x):
        d = x.device
        return [x + rt.ones(3, 4, device=d), rt.full((2,), 7, device=d), rt.arange(1.0, 2.0, 0.25, device=d),
                rt.eye(3, 4, dtype=rt.float64, device=d), rt.zeros_like(x), rt.ones_like(x, rt.int32)]
    g = check_replay(fn, F)
    assert g.values.keys() == set(g.inputs)  # created ops are replayed, not stored


def test_family_nn_functional():
    F_ = rt.nn.functional
    w = RNG.standard_normal((5, 4)).astype(np.float32)
    bias = RNG.standard_normal((5,)).astype(np.float32)
    tgt = np.array([0, 4, 2], np.int64)

    def fn(x, w, b, t):
        h = F_.linear(x, w, b)
        return [h, F_.cross_entropy(h, t), F_.mse_loss(h, rt.zeros_like(h))]
    check_replay(fn, G, w, bias, tgt)


def test_random_ops_replay_from_the_device_stream():
    def fn(x):
        return x + rt.rand(3, 4, device=x.device), rt.randn(2, device=x.device, dtype=rt.float64)
    g = rt.capture(fn, F)
    rt.manual_seed(11, device=rt.cpu())
    eager = fn(rt.tensor(F))
    rt.manual_seed(11, device=rt.cpu())
    ran = g.run(F)
    for e, r in zip(eager, ran):
        np.testing.assert_array_equal(r.numpy(), e.numpy())
    second = g.run(F)  # a fresh draw each call, as eagerly
    assert not np.array_equal(second[0].numpy(), ran[0].numpy())


# ---- run / bind behaviour -------------------------------------------------------------------
def _affine_graph():
    cap = rt.CaptureDevice()
    w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with cap.capture_scope() as scope:
        x = rt.tensor(np.zeros((3, 2), np.float32), device=cap)
        wc = rt.from_numpy(w).to(cap)
        y = rt.relu(x @ wc) + 1.0
        scope.complete(inputs=[x], outputs=[y, x])
    return scope.graph, w, wc.id


def test_inputs_are_checked_against_captured_shapes_and_dtypes():
    g, w, _ = _affine_graph()
    ok = np.ones((3, 2), np.float32)
    with pytest.raises(rt.ShapeError, match=r"graph input 0 \(tensor \d+\) expects shape \(3, 2\)"):
        g.run(np.ones((2, 2), np.float32))
    with pytest.raises(rt.DTypeError, match="expects dtype float32, got float64"):
        g.run(ok.astype(np.float64))
    with pytest.raises(rt.DTypeError, match="expects dtype float32, got int64"):
        g.bind()(rt.tensor(np.ones((3, 2), np.int64)))
    with pytest.raises(TypeError, match="takes 1 input"):
        g.run()
    with pytest.raises(TypeError, match="takes 1 input"):
        g.run(ok, ok)
    y, x = g.run(ok.tolist())  # lists convert to the captured dtype
    np.testing.assert_array_equal(y.numpy(), np.maximum(ok @ w, 0) + 1)
    np.testing.assert_array_equal(x.numpy(), ok)


def test_bind_params_are_constants_on_the_device_and_replaceable():
    g, w, wid = _affine_graph()
    exe = g.bind(rt.cpu())
    assert list(exe.params) == [wid] and exe.parameters()[0].device == rt.cpu()
    np.testing.assert_array_equal(exe.params[wid].numpy(), w)
    assert not exe.params[wid].requires_grad
    x = np.full((3, 2), 0.5, np.float32)
    np.testing.assert_allclose(exe(x)[0].numpy(), np.maximum(x @ w, 0) + 1)
    exe.params[wid] = rt.tensor(-w)
    np.testing.assert_allclose(exe(x)[0].numpy(), np.maximum(x @ -w, 0) + 1)
    with pytest.raises(rt.CaptureError):
        g.bind(rt.CaptureDevice())


def test_run_with_tensor_inputs_moved_to_the_device_and_placeholders():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        p = scope.placeholder((2,), rt.float64)
        q = scope.placeholder((2,), rt.float64)
        y = p * q - 1.0
        scope.complete(inputs=[q, p], outputs=[y])
    a = rt.tensor(np.array([1.0, 2.0]))
    b = rt.tensor(np.array([3.0, 5.0]))
    (out,) = scope.graph.run(a, b, device="cpu")
    np.testing.assert_array_equal(out.numpy(), [2.0, 9.0])
    with cap.capture_scope() as s2:  # a capture tensor cannot move to cpu: the move error
        c = rt.tensor(np.array([1.0, 2.0]), device=cap)
        with pytest.raises(rt.CaptureMoveError):
            scope.graph.run(c, c)
        s2.complete(outputs=[c])


def test_capture_helper_single_and_multiple_outputs():
    g = rt.capture(lambda x: x * 2.0, np.arange(3, dtype=np.float32))
    assert g.inputs and len(g.outputs) == 1 and list(g.values) == g.inputs
    (y,) = g.run(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0, 6.0])
    g2 = rt.capture(lambda x, t: (x + t.astype(rt.float32), t), [1.0, 2.0], rt.tensor([3, 4]))
    a, t = g2.run(np.array([0.0, 0.0], np.float32), np.array([1, 1]))
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])
    assert t.dtype is rt.int64


def test_custom_op_replays_where_registered():
    sq = rt.custom_op("capture_test_square", lambda a: a * a, replace=True)
    g = rt.capture(lambda x: sq(x) + 1.0, np.array([1.0, 3.0], np.float32))
    (y,) = g.run(np.array([2.0, 4.0], np.float32))
    np.testing.assert_array_equal(y.numpy(), [5.0, 17.0])
    g.operations[0 if g.operations[0].op != "init" else 1].op = "capture_test_not_registered"
    with pytest.raises(rt.CaptureError, match="capture_test_not_registered.*not registered"):
        g.bind()


# ---- replay on an autodiff device -------------------------------------------------------------
def test_run_on_autodiff_device_gradients_reach_the_inputs():
    w = RNG.standard_normal((4, 3)).astype(np.float32)

    def fn(x):
        return (rt.tanh(x @ rt.tensor(w, device=x.device)) * 2.0).sum()
    g = rt.capture(fn, G)
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor(G, device=ad).require_grad()
    (loss,) = g.run(x, device=ad)
    assert loss.device == ad and rt.is_autodiff(loss)
    gx = x.grad(loss.backward())
    xe = rt.tensor(G, device=ad).require_grad()
    le = fn(xe)
    ge = xe.grad(le.backward())
    np.testing.assert_array_equal(loss.numpy(), le.numpy())
    np.testing.assert_allclose(gx.numpy(), ge.numpy(), rtol=1e-6)


def test_bind_on_autodiff_device_makes_params_trainable():
    g, w, wid = _affine_graph()
    ad = rt.autodiff(rt.cpu())
    exe = g.bind(ad)
    p = exe.params[wid]
    assert p.device == ad and p.requires_grad
    x = np.full((3, 2), 0.5, np.float32)
    y, _ = exe(x)
    grads = y.sum().backward()
    gw = p.grad(grads)
    np.testing.assert_allclose(gw.numpy(), x.T @ ((x @ w) > 0).astype(np.float32), rtol=1e-6)
    assert not g.bind(ad, trainable=False).params[wid].requires_grad


def test_out_of_range_index_values_raise_on_replay():
    g = rt.capture(lambda x, i: rt.take(x, i, axis=1), G, np.array([0, 1], np.int64))
    with pytest.raises(rt.IndexOutOfRangeError):
        g.run(G, np.array([0, 9], np.int64))


def test_zero_dim_inputs_keep_their_shape():
    def f(x):
        return rt.slice_assign(x, (), 5.0), x * 2

    g = rt.capture(f, rt.tensor(3.0))
    x = np.array(3.0, np.float32)
    for out in (g.run(x), g.bind(rt.cpu())(x), g.compile(rt.cpu())(x)):
        assert [o.numpy().shape for o in out] == [(), ()]
        assert [o.item() for o in out] == [5.0, 6.0]
