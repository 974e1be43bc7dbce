"""graph.to_onnx: the exported model run in onnxruntime matches graph.run on cpu."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import runtime as rt

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from oracle import onnx_session  # noqa: E402
from runtime.capture.onnx import OnnxExportError, OnnxNotInstalledError  # noqa: E402

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def i64(*shape, lo=-5, hi=6):
    return RNG.integers(lo, hi, shape).astype(np.int64)


def export(graph, tmp_path, opset=17):
    return onnx_session(graph, tmp_path / "model.onnx", opset)


def compare(graph, tmp_path, *inputs, opset=17, rtol=1e-5, atol=1e-5):
    """Export, run in onnxruntime and compare every output with graph.run on cpu."""
    sess = export(graph, tmp_path, opset)
    assert [i.name for i in sess.get_inputs()] == [f"input_{k}" for k in range(len(inputs))]
    assert [o.name for o in sess.get_outputs()] == [f"output_{k}" for k in range(len(graph.outputs))]
    got = sess.run(None, {f"input_{k}": np.asarray(x) for k, x in enumerate(inputs)})
    want = [t.numpy() for t in graph.run(*inputs)]
    assert len(got) == len(want)
    for k, (g, w, t) in enumerate(zip(got, want, graph.output_tensors)):
        assert g.dtype == w.dtype, (k, g.dtype, w.dtype)
        assert g.shape == tuple(t.shape), (k, g.shape, t.shape)
        w = w.reshape(t.shape)   # (a 0-d slice_assign result comes back from cpu as shape (1,))
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"output {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
    return got


def check(fn, tmp_path, *inputs, **kw):
    return compare(rt.capture(fn, *inputs), tmp_path, *inputs, **kw)


# ---------------------------------------------------------------------------- elementwise
def test_unary_float(tmp_path):
    x = f32(3, 4)
    x[0, 0] = 0.0

    def fn(x):
        p = rt.abs(x) + 0.25
        return (rt.neg(x), rt.abs(x), rt.exp(x), rt.log(p), rt.sqrt(p), rt.rsqrt(p), rt.sin(x),
                rt.cos(x), rt.tanh(x), rt.sigmoid(x), rt.relu(x), rt.gelu(x),
                rt.gelu(x, approximate="tanh"), rt.erf(x), rt.reciprocal(p), rt.sign(x),
                rt.floor(x * 3.0), rt.ceil(x * 3.0), rt.logical_not(x))
    check(fn, tmp_path, x)


def test_unary_int_and_promoting(tmp_path):
    x = i64(2, 5).astype(np.int32)

    def fn(x):
        return (rt.neg(x), rt.abs(x), rt.sign(x), rt.relu(x), rt.floor(x), rt.ceil(x),
                rt.exp(x), rt.sqrt(rt.abs(x)), rt.sigmoid(x), rt.reciprocal(x),
                rt.logical_not(x))
    check(fn, tmp_path, x)


def test_binary_with_scalars_and_promotion(tmp_path):
    a, b = f32(3, 4), f32(4)
    i, j = i64(3, 4).astype(np.int32), i64(4, lo=1, hi=5)

    def fn(a, b, i, j):
        return (a + b, a - 1.5, 2.0 - a, a * b, a / b, 3.0 / (rt.abs(b) + 1.0),
                rt.pow(rt.abs(a) + 0.5, b), a ** 2.0, 2.0 ** a, rt.maximum(a, b), rt.minimum(a, 0.0),
                i + j, i * 3, i + 1.5, i / j, i - j, 7 - i, i ** 2, rt.pow(j, 3),
                rt.maximum(i, j), rt.minimum(i, 2), a + i)
    check(fn, tmp_path, a, b, i, j)


def test_comparisons_and_logical(tmp_path):
    a, b = f32(3, 4), f32(3, 4)
    b[0] = a[0]
    i = i64(3, 4)
    m, n = a > 0, b > 0

    def fn(a, b, i, m, n):
        return (a == b, a != b, a < b, a <= b, a > b, a >= b, a < 0.5, 1 > a, i == 2, i != a,
                i >= 0, rt.logical_and(a, i), rt.logical_or(m, 0), m & n, m | n,
                m + n, m * n, rt.maximum(m, n), rt.minimum(m, n), m == n, m != n, m < n, m >= n,
                m + 2, m * 1.5)
    check(fn, tmp_path, a, b, i, m, n)


def test_nan_propagation(tmp_path):
    a = np.array([np.nan, 1.0, -2.0, np.nan, 3.0], np.float32)
    b = np.array([0.0, np.nan, -1.0, np.nan, 2.0], np.float32)

    def fn(a, b):
        return (rt.maximum(a, b), rt.minimum(a, b), rt.clamp(a, -1.0, 1.0), rt.relu(a),
                a == a, a != b)
    check(fn, tmp_path, a, b)


def test_where_cast_clamp(tmp_path):
    x = np.array([[-3.7, -0.5, 0.0, 0.5, 2.9, np.nan],
                  [1e10, -1e10, np.inf, -np.inf, 2147483520.0, -2147483648.0]], np.float32)
    i = np.array([[-3, 0, 1, 7, 2 ** 40, -(2 ** 40)]] * 2, np.int64)
    m = RNG.random((2, 6)) > 0.5

    def fn(x, i, m):
        return (rt.where(m, x, i), rt.where(x > 0, 1.0, x), rt.where(i, 2, i),
                rt.where(m, 1, 0.5),
                x.astype(rt.int32), x.astype(rt.int64), x.astype(rt.bool), x.astype(rt.float64),
                rt.cast(x, rt.float64).astype(rt.int32), i.astype(rt.int32), i.astype(rt.float32),
                i.astype(rt.bool), m.astype(rt.float32), m.astype(rt.int64),
                rt.clamp(x, -1.0, 1.0), rt.clamp(x, min=0.0), rt.clamp(x, max=0.0),
                rt.clamp(i, -2, 5), rt.clamp(i, 0.5, 3.5), rt.clamp(x, 1.0, -1.0))
    check(fn, tmp_path, x, i, m)


# ---------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("opset", [17, 18])
def test_reductions(tmp_path, opset):
    x = f32(2, 3, 4)
    i = i64(2, 3, 4).astype(np.int32)
    m = x > 0

    def fn(x, i, m):
        outs = []
        for axis, keep in ((None, False), (1, False), ((0, 2), True), (-1, True)):
            outs += [rt.sum(x, axis, keep), rt.mean(x, axis, keep), rt.prod(x, axis, keep),
                     rt.max(x, axis, keep), rt.min(x, axis, keep), rt.var(x, axis, keep),
                     rt.var(x, axis, keep, ddof=1), rt.logsumexp(x, axis, keep),
                     rt.sum(i, axis, keep), rt.prod(i, axis, keep), rt.max(i, axis, keep),
                     rt.mean(i, axis, keep), rt.sum(m, axis, keep), rt.max(m, axis, keep),
                     rt.min(m, axis, keep)]
        outs.append(rt.logsumexp(x * 1000.0, -1))       # stable for large values
        outs.append(rt.var(x[:, :, :1], -1, ddof=1))     # K - ddof == 0
        return tuple(outs)
    check(fn, tmp_path, x, i, m, opset=opset, rtol=2e-5)


def test_arg_reductions(tmp_path):
    x = np.array([[1, 5, 5, 0], [7, 7, 2, 7], [0, 0, 0, 0]], np.float32)
    i = x.astype(np.int32)

    def fn(x, i):
        return (rt.argmax(x), rt.argmin(x), rt.argmax(x, keepdims=True), rt.argmax(x, 0),
                rt.argmin(x, 1), rt.argmax(x, 1, keepdims=True), rt.argmin(x, -1, True),
                rt.argmax(i, 1), rt.argmin(i), rt.argmax(x > 2, 1))
    check(fn, tmp_path, x, i)


def test_softmax(tmp_path):
    x = f32(3, 5) * 10
    i = i64(3, 5)

    def fn(x, i):
        return (rt.softmax(x), rt.softmax(x, 0), rt.log_softmax(x), rt.log_softmax(x, 0),
                rt.softmax(i, 1))
    check(fn, tmp_path, x, i)


# ---------------------------------------------------------------------------- linalg / shape
def test_matmul(tmp_path):
    a, b, v, w = f32(2, 3, 4), f32(4, 5), f32(4), f32(5, 1, 4, 2)
    i, j = i64(3, 4).astype(np.int32), i64(4, 2)

    def fn(a, b, v, w, i, j):
        return (a @ b, v @ b, b.T @ v, v @ v, a @ w, a[0] @ b, i @ j, i @ b)
    check(fn, tmp_path, a, b, v, w, i, j)


def test_shape_ops(tmp_path):
    x = f32(2, 3, 4)

    def fn(x):
        return (x.reshape(6, 4), x.reshape(-1), rt.permute(x, 2, 0, 1), rt.transpose(x, 0, 2), x.T,
                rt.expand(x[:, :1], 2, 3, 4), rt.broadcast_to(x, (5, 2, 3, 4)),
                rt.unsqueeze(x, 1), rt.squeeze(x[:, :1], 1), rt.flatten(x, 1),
                rt.stack([x, x], 1), *rt.split(x, 2, 2), *rt.chunk(x, 2, 1))
    check(fn, tmp_path, x)


def test_index(tmp_path):
    x = f32(4, 5, 6)

    def fn(x):
        return (x[1], x[:, ::-1], x[::-2, 1:4, None], x[..., 0], x[None], x[3:1], x[-1, -1, -1],
                x[:, 4::-2, ::3], x[2:, None, :, 1], x[::-1, ::-1, ::-1], x[:, 5:-10:-1])
    check(fn, tmp_path, x)


def test_take_gather_cat(tmp_path):
    x = f32(3, 4)
    idx = np.array([[2, 0], [1, -1]], np.int64)
    g = np.array([[0, 3, 1], [2, 2, 0], [1, 0, 3]], np.int64)
    k = i64(3, 2).astype(np.int32)

    def fn(x, idx, g, k):
        return (rt.take(x, idx), rt.take(x, idx, 1), rt.take(x, idx[0], 0), x[:, [0, 3, 3]],
                rt.gather(x, 1, g), rt.gather(x, 0, rt.minimum(g[:2], 2)),
                rt.cat([x, k], 1), rt.cat([x, x * 2.0, x], 0))
    check(fn, tmp_path, x, idx, g, k)


@pytest.mark.parametrize("opset", [16, 17])
def test_scatter_add(tmp_path, opset):
    x = f32(3, 4)
    src = f32(5, 6)
    idx = np.array([[2, 0, -1, 2], [2, 1, 0, -3]], np.int64)     # repeats and negatives
    k = i64(3, 4).astype(np.int32)
    m = x > 0

    def fn(x, src, idx, k, m):
        i32 = rt.cast(rt.minimum(rt.maximum(idx, -4), 3), rt.int32)
        return (rt.scatter_add(x, 0, idx, src[:2, :4]),        # index shape == src shape
                rt.scatter_add(x, 0, idx, src),                  # src larger: sliced
                rt.scatter_add(x, -1, i32[:, :3], src),
                rt.scatter_add(k, 1, i32[:, :2] - 1, k[:2, :2] * 5),
                rt.scatter_add(m, 0, idx, src > 0),              # bool: logical or
                rt.scatter_add(x[0, 0], 0, idx[0, 2], src[1, 1]))    # 0-d
    check(fn, tmp_path, x, src, idx, k, m, opset=opset)


def test_scatter_add_needs_opset_16(tmp_path):
    graph = rt.capture(lambda x, i: rt.scatter_add(x, 0, i, x), f32(3), np.array([0, 0, 1]))
    with pytest.raises(OnnxExportError, match="scatter_add needs opset >= 16") as e:
        graph.to_onnx(tmp_path / "m.onnx", opset=15)
    assert e.value.op == "scatter_add"


def test_slice_assign(tmp_path):
    x = f32(4, 5)
    v = f32(5)
    i = i64(4, 5)
    s = np.array(2.5, np.float32)

    def fn(x, v, i, s):
        return (rt.slice_assign(x, (slice(1, 3),), v), rt.slice_assign(x, (0, slice(None, None, 2)), 7.0),
                rt.slice_assign(x, (slice(None, None, -2), 1), v[:2]),
                rt.slice_assign(x, (slice(3, 1),), 1.0), rt.slice_assign(i, (None, 2), 9),
                rt.slice_assign(i, (slice(None), slice(1, 3)), v[:2]),
                rt.slice_assign(s, (), 4.0), rt.slice_assign(s, (), v[0]))
    check(fn, tmp_path, x, v, i, s)


# ---------------------------------------------------------------------------- constants / creation
def test_constants_and_creation(tmp_path):
    w = f32(4, 3)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.placeholder((2, 4))
        wc = rt.from_numpy(w).to(scope.device)
        i = rt.tensor([1, 2, 3], device=scope.device)
        outs = (x @ wc + rt.ones(3, device=scope.device), rt.full((2, 2), 2.5, device=scope.device),
                rt.full((3,), 7, dtype=rt.int32, device=scope.device) + i,
                rt.arange(5, device=scope.device), rt.arange(0.0, 1.0, 0.25, device=scope.device),
                rt.arange(10, 0, -3, dtype=rt.float64, device=scope.device),
                rt.eye(3, 4, device=scope.device), rt.eye(2, dtype=rt.int64, device=scope.device),
                rt.zeros(2, 3, dtype=rt.bool, device=scope.device), wc, i)
        scope.complete(inputs=[x], outputs=list(outs))
    graph = scope.graph
    compare(graph, tmp_path, f32(2, 4))
    model = onnx.load(str(tmp_path / "model.onnx"))
    inits = {t.name for t in model.graph.initializer}
    assert any(n.startswith("const_") for n in inits)          # w, i as initializers
    assert [i.name for i in model.graph.input] == ["input_0"]  # constants are not inputs


def test_input_as_output_and_onnx_names(tmp_path):
    x = f32(2, 2)
    graph = rt.capture(lambda x, y: (x, y * 2.0, y), x, x + 1)
    compare(graph, tmp_path, x, x + 1)


def test_random_ops_export(tmp_path):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.placeholder((3, 4))
        u = rt.rand(3, 4, device=scope.device)
        n = rt.randn(3, 4, dtype=rt.float64, device=scope.device)
        scope.complete(inputs=[x], outputs=[x + u, n])
    sess = export(scope.graph, tmp_path)
    xv = f32(3, 4)
    a, b = sess.run(None, {"input_0": xv})
    assert a.dtype == np.float32 and a.shape == (3, 4) and b.dtype == np.float64
    d = a - xv
    assert (d >= -1e-6).all() and (d <= 1 + 1e-6).all()   # values differ from rt's stream


def test_custom_op_raises(tmp_path):
    triple = rt.custom_op("onnx_test_triple", lambda a: a * 3, replace=True)
    graph = rt.capture(lambda x: triple(x) + 1.0, f32(2))
    with pytest.raises(OnnxExportError, match="onnx_test_triple") as e:
        graph.to_onnx(tmp_path / "m.onnx")
    assert e.value.op == "onnx_test_triple"


def test_missing_onnx_is_import_error(tmp_path, monkeypatch):
    graph = rt.capture(lambda x: x + 1.0, f32(2))
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match="`onnx` extra") as e:
        graph.to_onnx(tmp_path / "m.onnx")
    assert isinstance(e.value, OnnxNotInstalledError)


def test_old_opset_rejected(tmp_path):
    graph = rt.capture(lambda x: x + 1.0, f32(2))
    with pytest.raises(ValueError, match="opset"):
        graph.to_onnx(tmp_path / "m.onnx", opset=11)


# ---------------------------------------------------------------------------- models
def test_mlp_with_softmax(tmp_path):
    w1, b1, w2, b2 = f32(8, 16) * 0.3, f32(16), f32(16, 4) * 0.3, f32(4)

    def model(x):
        d = x.device
        h = rt.relu(x @ rt.from_numpy(w1).to(d) + rt.from_numpy(b1).to(d))
        return rt.softmax(h @ rt.from_numpy(w2).to(d) + rt.from_numpy(b2).to(d))
    x = f32(5, 8)
    graph = rt.capture(model, x)
    compare(graph, tmp_path, x)
    compare(rt.load_graph(_saved(graph, tmp_path)), tmp_path, x)   # also after save/load


def _saved(graph, tmp_path):
    p = tmp_path / "g.rtg"
    graph.save(p)
    return p


def test_layer_norm(tmp_path):
    gamma, beta = f32(6), f32(6)

    def ln(x):
        d = x.device
        m = rt.mean(x, -1, keepdims=True)
        v = rt.var(x, -1, keepdims=True)
        y = (x - m) * rt.rsqrt(v + 1e-5)
        return y * rt.from_numpy(gamma).to(d) + rt.from_numpy(beta).to(d)
    x = f32(2, 3, 6)
    check(ln, tmp_path, x)


# ---------------------------------------------------------------------------- the catalogue record
# Ops whose lowering is a composition of its own, not the operator the record names.
OWN_LOWERING = {"rsqrt", "gelu", "gelu_tanh", "var", "ne", "clamp", "cast", "slice_assign",
                "full", "arange", "eye", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                "unfold", "fold"}
# (composite ops are recorded as their decompositions: their parts are in the graph instead)
# pooling: runtime.ops.pool.onnx_pool picks the operator from the attrs (MaxPool, GlobalMaxPool...);
# max_unpool2d adds each plane's start to its indices before MaxUnpool
OWN_LOWERING |= {"max_pool2d", "max_pool2d_indices", "adaptive_max_pool2d", "avg_pool2d",
                 "adaptive_avg_pool2d", "interpolate", "max_unpool2d"}


def _every_op(x, i, m):
    d = x.device
    p = rt.abs(x) + 0.5
    idx = rt.tensor(np.array([[1, 0, 2, 0]], np.int64), device=d)
    outs = [getattr(rt, n)(x) for n in ("neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid",
                                        "relu", "erf", "sign", "floor", "ceil", "gelu")]
    outs += [rt.log(p), rt.sqrt(p), rt.rsqrt(p), rt.reciprocal(p), rt.gelu(x, approximate="tanh"),
             rt.logical_not(m), rt.clamp(x, -0.5, 0.5), rt.cast(x, rt.int32)]
    u = rt.tanh(x) * 0.9                                  # in (-1, 1)
    outs += [rt.tan(x), rt.asin(u), rt.acos(u), rt.atan(x), rt.sinh(x), rt.cosh(x), rt.asinh(x),
             rt.acosh(p + 1.0), rt.atanh(u)]
    k = rt.cast(i, rt.int32)                              # ints with zeros (and maybe -1s)
    outs += [rt.fmod(x, p), rt.fmod(-x, 0.3), rt.remainder(x, -p), rt.remainder(x, 0.3),
             rt.fmod(k, k - 1), rt.remainder(k, k + 1), rt.remainder(k, -2), rt.fmod(7, k),
             x // p, x // -0.3, -7.5 // p, k // (k - 1), k // -2, 7 // k]
    outs += [x + 1.0, x - i, x * 2.0, x / p, p ** 2.0, rt.maximum(x, 0.0), rt.minimum(x, i),
             x == i, x != 0.0, x < 0.5, x <= i, x > 0.0, x >= i, rt.logical_and(m, x > 0),
             rt.logical_or(m, False), rt.where(m, x, 0.0), m & (x > 0), m | False, m ^ (x < 0), ~m]
    outs += [getattr(rt, n)(x, axis=1) for n in ("sum", "mean", "prod", "max", "min", "var",
                                                 "logsumexp", "norm", "argmax", "argmin")]
    x4, w4 = x.reshape(1, 1, 3, 4), rt.tensor(np.full((2, 1, 2, 2), 0.5, np.float32), device=d)
    outs += [rt.conv2d(x4, w4, padding=1), rt.conv_transpose2d(x4, w4.reshape(1, 2, 2, 2), stride=2),
             rt.unfold(x4, 2), rt.fold(rt.unfold(x4, 2), (3, 4), 2)]
    F = rt.nn.functional
    outs += [F.max_pool2d(x4, 2, 1), F.max_pool2d(x4, 2, return_indices=True)[1],
             F.adaptive_max_pool2d(x4, (1, 2)), F.avg_pool2d(x4, 2, 1, 1),
             F.adaptive_avg_pool2d(x4, 1), F.interpolate(x4, scale_factor=2, mode="bilinear"),
             F.max_unpool2d(*F.max_pool2d(x4, 2, return_indices=True), 2)]
    outs += [rt.pad(x, (1, 1), mode="reflect"), x.slice_assign(([0, 2], [1, 3]), 2.0)]
    outs += [rt.softmax(x, axis=-1), rt.log_softmax(x, axis=0), x @ x.T, x.reshape(4, 3),
             rt.expand(x[:, :1], 3, 4), x[1:, ::2], rt.take(x, rt.tensor(np.array([0, 2]), device=d), 1),
             rt.gather(x, 1, rt.minimum(idx.expand(3, 4), 3)), rt.scatter_add(x, 0, idx, x[:1]),
             rt.cat([x, x], 0), rt.slice_assign(x, (0,), 1.0), rt.sort(x, dim=1)[0],
             rt.topk(x, 2, dim=0).indices, rt.cumsum(x, 1), rt.full((2,), 3.0, device=d),
             rt.arange(3, device=d), rt.eye(2, device=d), rt.linalg.det(x[:, :3]),
             x + rt.rand(3, 4, device=d), x + rt.randn(3, 4, device=d)]
    return tuple(outs)


def _every_op_graph():
    x = f32(3, 4)
    return rt.capture(_every_op, x, (x * 3).astype(np.int32).astype(np.float32), x > 0)


def _node_types(graph):
    from runtime.capture.onnx import _Builder
    from onnx import helper, numpy_helper
    model = _Builder(graph, 17, onnx, helper, numpy_helper).build()
    return {n.op_type for n in model.graph.node}


def test_every_op_is_exported_as_its_record_names_it(monkeypatch):
    """Each op's ONNX operator comes from ``CATALOGUE[op].onnx``: renaming the record renames
    the exported node (ops with a lowering of their own excepted), and a record without a
    name gives the typed "no ONNX mapping" error."""
    from runtime.ops.catalogue import CATALOGUE
    graph = _every_op_graph()
    names = {o.op for o in graph.operations} - {"init"}
    assert names >= {s for s, r in CATALOGUE.items() if r.family != "custom"
                     and r.decompose is None and r.name != "init" and not r.onnx_skip}
    for name in sorted(names - OWN_LOWERING):
        spec = CATALOGUE[name]
        assert spec.onnx, name
        monkeypatch.setattr(spec, "onnx", f"Record{name.title().replace('_', '')}")
        assert spec.onnx in _node_types(graph), name
        monkeypatch.setattr(spec, "onnx", None)
        with pytest.raises(OnnxExportError, match=f"op '{name}' has no ONNX mapping") as e:
            _node_types(graph)
        assert e.value.op == name
        monkeypatch.undo()


def test_every_op_exports_and_matches_run(tmp_path):
    graph = _every_op_graph()
    sess = export(graph, tmp_path)
    x = f32(3, 4)
    ins = (x, (x * 3).astype(np.int32).astype(np.float32), x > 0)
    got = sess.run(None, {f"input_{k}": a for k, a in enumerate(ins)})
    want = graph.run(*ins)
    for k, (g, w) in enumerate(zip(got, want)):
        if k >= len(got) - 2:       # rand/randn: another stream
            assert g.shape == w.shape
            continue
        np.testing.assert_allclose(g, w.numpy().reshape(g.shape), rtol=2e-5, atol=2e-5,
                                   err_msg=f"output {k}")


def test_a_new_reduction_reads_its_record(tmp_path, monkeypatch):
    """A reduction added to the catalogue exports as the operator its record names, or raises
    the typed error when the record names none (was: KeyError from a dict of the exporter)."""
    import dataclasses

    from runtime import dispatch
    from runtime.ops.catalogue import CATALOGUE
    x = np.abs(f32(3, 4))

    def capture(record):
        monkeypatch.setitem(CATALOGUE, "test_l2", dataclasses.replace(
            CATALOGUE["sum"], name="test_l2", onnx=record))
        return rt.capture(lambda t: dispatch.dispatch("test_l2", (t,), {"axes": (1,),
                                                                        "keepdims": False}), x)

    with pytest.raises(OnnxExportError, match="op 'test_l2' has no ONNX mapping") as e:
        capture(None).to_onnx(tmp_path / "m.onnx")
    assert e.value.op == "test_l2"
    sess = export(capture("ReduceL2"), tmp_path)
    (got,) = sess.run(None, {"input_0": x})
    np.testing.assert_allclose(got, np.sqrt((x.astype(np.float64) ** 2).sum(1)), rtol=1e-5)


def test_bitwise_ops_of_integers_need_opset_18(tmp_path):
    a = np.array([5, -3, 12], np.int32)
    g = rt.capture(lambda t: ((t & 6) | (t ^ 3), ~t), a)
    with pytest.raises(OnnxExportError, match=r"bitwise_and of integers needs opset >= 18 "
                                              r"\(BitwiseAnd\), got opset 17"):
        g.to_onnx(tmp_path / "m17.onnx")
    sess = onnx_session(g, tmp_path / "m.onnx", opset=18)
    got = sess.run(None, {sess.get_inputs()[0].name: a})
    np.testing.assert_array_equal(got[0], (a & 6) | (a ^ 3))
    np.testing.assert_array_equal(got[1], ~a)


def test_signed_shifts_have_no_onnx_operator(tmp_path):
    g = rt.capture(lambda t: t << 1, np.array([1, 2], np.int64))
    with pytest.raises(OnnxExportError, match="left_shift"):
        g.to_onnx(tmp_path / "m.onnx")
