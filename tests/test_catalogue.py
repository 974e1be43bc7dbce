"""The catalogue is complete: walking every record, each op has a front-end function that
reaches it, a backward rule or an explicit ``differentiable=False`` (or a decomposition to
differentiate), a lowering on both kernel sets (the kernel table's op lists) or a
decomposition, and an ONNX mapping, an explicit opt-out or a decomposition.  (The table row of
each op is tests/test_opinfo_coverage.py's check.)  Adding an op that misses one of them fails
here, naming it."""
import numpy as np
import pytest

import jit_kernels
import runtime as rt
import runtime.nn.functional as F
from opinfo import OPS, all_rows
from runtime.capture.onnx import _Builder
from runtime.ops.catalogue import CATALOGUE, FRONTEND, METHODS
from runtime.ops.recurrent import gru_layer, lstm_layer, rnn_layer

BUILTIN = {n: s for n, s in CATALOGUE.items() if s.family != "custom"}

# Ops with no rt.<name> of their own, and the front-end call that reaches each (on a capture
# device: recording runs every op's shape/dtype rule and compiles nothing).
REACHED_BY = {
    "init": lambda x: rt.tensor(np.ones(2, np.float32), device=x.device),
    "cast": lambda x: x.astype(rt.int32),
    "gelu_tanh": lambda x: rt.gelu(x, approximate="tanh"),
    "index": lambda x: x[0],
    "linear": lambda x: F.linear(x, rt.ones(4, 3, device=x.device)),
    "cross_entropy": lambda x: F.cross_entropy(x, rt.tensor([0, 1], device=x.device)),
    "reshape": lambda x: x.reshape(-1),
    "permute": lambda x: x.T,
    "expand": lambda x: x[:, :1].expand(2, 5),
    "cat": lambda x: rt.cat([x, x]),
    "max_unpool2d": lambda x: F.max_unpool2d(*F.max_pool2d(x.reshape(1, 1, 2, 3), 2, 1,
                                                            return_indices=True), 2, 1),
    "slice_assign": lambda x: x.slice_assign(0, 1.0),
    "take": lambda x: x.take(rt.tensor([0], device=x.device), axis=1),
    "gather": lambda x: x.gather(1, rt.tensor([[0], [1]], device=x.device)),
    "scatter_add": lambda x: x.scatter_add(1, rt.tensor([[0], [1]], device=x.device), x[:, :1]),
    "full": lambda x: rt.zeros(2, device=x.device),
    "arange": lambda x: rt.arange(3, device=x.device),
    "eye": lambda x: rt.eye(2, device=x.device),
    "rand": lambda x: rt.rand(2, device=x.device),
    "randn": lambda x: rt.randn(2, device=x.device),
    "unfold": lambda x: rt.unfold(rt.reshape(x, (1, 1, 2, 3)), 2),
    "fold": lambda x: rt.fold(rt.reshape(x, (1, 2, 3)), (2, 3), (2, 1)),
    "conv2d": lambda x: F.conv2d(rt.reshape(x, (1, 1, 2, 3)), rt.ones(1, 1, 2, 2, device=x.device)),
    "conv_transpose2d": lambda x: F.conv_transpose2d(rt.reshape(x, (1, 1, 2, 3)),
                                                     rt.ones(1, 1, 2, 2, device=x.device)),
    "max_pool2d": lambda x: F.max_pool2d(x.reshape(1, 1, 2, 3), 2, 1),
    "max_pool2d_indices": lambda x: F.max_pool2d(x.reshape(1, 1, 2, 3), 2, 1, return_indices=True),
    "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x.reshape(1, 1, 2, 3), 1),
    "avg_pool2d": lambda x: F.avg_pool2d(x.reshape(1, 1, 2, 3), 2, 1),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x.reshape(1, 1, 2, 3), 1),
    "interpolate": lambda x: F.interpolate(x.reshape(1, 1, 2, 3), scale_factor=2),
    "argsort": lambda x: rt.sort(x),
    "topk": lambda x: rt.topk(x, 2),
    "scatter_reduce": lambda x: x.scatter_reduce(1, rt.tensor([[0], [1]], device=x.device),
                                                 x[:, :1], "amax"),
    "cumargmax": lambda x: rt.cummax(x, 1),
    "cumargmin": lambda x: rt.cummin(x, 0),
}
# Reached only inside another op's gradient: that op's backward rule dispatches it.
INTERNAL = {"cross_entropy_backward": "cross_entropy", "max_pool2d_backward": "max_pool2d",
            "avg_pool2d_backward": "avg_pool2d", "interpolate_backward": "interpolate",
            "conv2d_weight_grad": "conv2d", "relu_backward": "relu", "index_backward": "index"}
# advanced-index assignment and the native pad
REACHED_BY["pad"] = lambda x: rt.pad(x, (1, 1), mode="reflect")
REACHED_BY["put"] = lambda x: x.slice_assign(([0, 1], [2, 0]), 1.0)
INTERNAL["pad_backward"] = "pad"
# the fused softmax of scaled_dot_product_attention
REACHED_BY["attention_softmax"] = lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True)
INTERNAL["attention_softmax_backward"] = "attention_softmax"
# an LSTM layer's recurrence (rt.nn.LSTM calls it on autodiff devices): T=1, N=2, H=1
REACHED_BY["lstm_layer"] = lambda x: lstm_layer(rt.cat([x, x[:, :1]], 1).reshape(1, 2, 4),
                                                x[:, :1], x[:, 1:2], x.reshape(-1)[:4].reshape(4, 1))
INTERNAL["lstm_layer_backward"] = "lstm_layer"
REACHED_BY["gru_layer"] = lambda x: gru_layer(x.reshape(2, 1, 3), x[:1, :1],
                                              x.reshape(-1)[:3].reshape(3, 1))
INTERNAL["gru_layer_backward"] = "gru_layer"
REACHED_BY["rnn_layer"] = lambda x: rnn_layer(x.reshape(2, 3, 1), x[0].reshape(3, 1), x[:1, :1])
INTERNAL["rnn_layer_backward"] = "rnn_layer"
# rt.linalg (no rt.<name>): the LAPACK-backed records, on square/rectangular slices of x
REACHED_BY["linalg_inv"] = lambda x: rt.linalg.inv(x[:, :2])
REACHED_BY["linalg_solve"] = lambda x: rt.linalg.solve(x[:, :2], x[:, 2])
REACHED_BY["linalg_det"] = lambda x: rt.linalg.det(x[:, :2])
REACHED_BY["linalg_slogdet"] = lambda x: rt.linalg.slogdet(x[:, :2])
REACHED_BY["linalg_cholesky"] = lambda x: rt.linalg.cholesky(x[:, :2])
REACHED_BY["linalg_qr"] = lambda x: rt.linalg.qr(x)
REACHED_BY["linalg_eigh"] = lambda x: rt.linalg.eigh(x[:, :2])
REACHED_BY["linalg_svd"] = lambda x: rt.linalg.svd(x)
# Made by graph.compile's rewrites only (never recorded by capture): what compile makes it of
COMPILED = {"max_pool2d_relu": lambda x: F.max_pool2d(rt.relu(x.reshape(1, 1, 2, 3)), 2, 1)}


def _winograd_conv(x):
    # a constant 3x3 weight, stride 1, a batch of whole lane blocks, 8 channels: the cpu
    # kernel set takes the Winograd form (its transform of the weight is folded)
    w = rt.tensor(np.linspace(-1, 1, 4 * 8 * 9, dtype=np.float32).reshape(4, 8, 3, 3),
                  device=x.device)
    return F.conv2d(x.reshape(1, 1, 2, 3).expand(64, 8, 2, 3), w, padding=1)


COMPILED["winograd_weight"] = COMPILED["conv2d_winograd"] = _winograd_conv
#: compile-made ops whose results agree with replay's within rounding, not bit for bit
ROUNDED = {"winograd_weight", "conv2d_winograd"}


def _spy(monkeypatch):
    from runtime.dispatch import clear_dispatch_cache
    clear_dispatch_cache()          # a cached rule result would skip the spy
    seen = set()
    for name, spec in BUILTIN.items():
        def infer(args, attrs, _name=name, _infer=spec.infer):
            seen.add(_name)
            return _infer(args, attrs)
        monkeypatch.setattr(spec, "infer", infer)
    return seen


def test_every_op_is_reached_by_a_front_end_function(monkeypatch):
    seen = _spy(monkeypatch)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.placeholder((2, 3))
        for name in BUILTIN:
            if name in INTERNAL or name in COMPILED:
                continue
            if name in REACHED_BY:
                REACHED_BY[name](x)
                continue
            assert name in FRONTEND, f"op {name!r} has no front-end function (rt.{name}) and no " \
                                     f"entry in REACHED_BY"
            row = OPS.get(name)
            assert row is not None, f"op {name!r} has no tests/opinfo.py row to call it with"
            args = [rt.tensor(a, device=cap) for a in row.inputs((2, 3), row.dtypes[0] if row.dtypes
                                                                  else rt.float32,
                                                                  np.random.default_rng(0))]
            row.fn(*args)
        scope.complete(inputs=[x], outputs=[x])
    missing = sorted(set(BUILTIN) - seen - set(INTERNAL) - set(COMPILED))
    assert not missing, f"ops no front-end call reached: {missing}"


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compile_made_ops_are_reached_by_graph_compile(monkeypatch, name):
    x = np.arange(6, dtype=np.float32) - 3
    g = rt.capture(COMPILED[name], x.reshape(2, 3))
    assert name not in {op.op for op in g.operations}   # capture keeps what it is made of
    seen = _spy(monkeypatch)
    exe = g.compile()
    assert name in seen
    got, want = exe(x.reshape(2, 3))[0].numpy(), g.run(x.reshape(2, 3))[0].numpy()
    if name in ROUNDED:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


def test_internal_ops_are_reached_by_their_owners_rule(monkeypatch):
    seen = _spy(monkeypatch)
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor(np.zeros((2, 3), np.float32), device=ad).require_grad()
    F.cross_entropy(x, rt.tensor([0, 1], device=ad)).backward()
    rt.relu(x).sum().backward()
    x4 = rt.tensor(np.zeros((1, 1, 2, 3)), device=ad).require_grad()   # float64: test_pool's
    for pool in (lambda t: F.max_pool2d(t, 2, 1), lambda t: F.avg_pool2d(t, 2, 1),
                 lambda t: F.interpolate(t, size=(3, 4))):
        pool(x4).sum().backward()
    rt.pad(x4, (1, 1), mode="reflect").sum().backward()
    w4 = rt.tensor(np.ones((1, 1, 1, 2)), device=ad).require_grad()
    F.conv2d(x4, w4).sum().backward()
    F.scaled_dot_product_attention(x4, x4, x4, is_causal=True).sum().backward()
    rt.nn.LSTM(3, 1).to(ad)(x)[0].sum().backward()
    rt.nn.GRU(3, 1).to(ad)(x)[0].sum().backward()
    rt.nn.RNN(3, 1).to(ad)(x)[0].sum().backward()
    assert set(INTERNAL) <= seen


def test_every_front_end_function_is_documented():
    undocumented = sorted(n for n, f in FRONTEND.items() if not (f.__doc__ or "").strip())
    assert not undocumented, f"front-end functions without a docstring: {undocumented}"
    assert set(METHODS) <= set(FRONTEND)
    for n in METHODS:
        assert callable(getattr(rt.Tensor, n)), n


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_op_has_a_rule_or_an_opt_out(name):
    s = BUILTIN[name]
    if s.differentiable:
        assert s.backward is not None or s.decompose is not None, \
            f"{name}: differentiable, but no backward rule and no decomposition"
    else:
        assert s.backward is None, f"{name}: a backward rule on a non-differentiable op"


_KERNEL_LISTS = {"unary": jit_kernels.UNARY_OPS, "binary": jit_kernels.BINARY_OPS,
                 "reduce": jit_kernels.REDUCE_OPS}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_op_has_kernels_or_a_decomposition(name):
    s = BUILTIN[name]
    if s.composite:
        assert s.decompose is not None
        return
    assert callable(s.kernel), f"{name}: no lowering"
    if s.lowering in _KERNEL_LISTS:
        assert name in _KERNEL_LISTS[s.lowering], \
            f"{name}: lowered as the kernel sets' {s.lowering}({name!r}), but jit_kernels' op " \
            f"table has no {s.lowering} op {name!r}"
    if s.family == "arg_reduce":
        assert name in jit_kernels.ARG_REDUCE_OPS


def test_the_kernel_table_has_no_op_the_catalogue_lacks():
    lowered = {n for n, s in BUILTIN.items() if s.lowering in _KERNEL_LISTS}
    table = set(jit_kernels.UNARY_OPS) | set(jit_kernels.BINARY_OPS) | set(jit_kernels.REDUCE_OPS)
    assert table == lowered, (sorted(table - lowered), sorted(lowered - table))


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_op_has_an_onnx_mapping_or_an_opt_out(name):
    s = BUILTIN[name]
    assert (s.onnx or s.onnx_skip or s.decompose is not None
            or hasattr(_Builder, f"op_{name}")), \
        f"{name}: no ONNX name (OpSpec.onnx), no opt-out (onnx_skip), no decomposition and no " \
        f"exporter lowering (op_{name})"


def test_every_table_row_names_a_catalogue_op():
    for r in all_rows():
        assert r.op in CATALOGUE, r
