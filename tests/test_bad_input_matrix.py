"""The bad-input matrix, generated from the op table: every tabled op called with a
non-tensor, with operands on two devices, with shapes that do not broadcast, and with an axis
out of range raises a ``TensorRuntimeError`` whose message names the op.  Everything runs on a
capture device (recording checks every rule and compiles nothing)."""
import numpy as np
import pytest

import runtime as rt
from opinfo import all_rows
from oracle import ACTIVATIONS

# the front-end name an op's errors carry when it differs from the catalogue name
FRONT_END_NAME = {"gelu_tanh": "gelu", "clamp": "clamp"}
ELEMENTWISE = [r for r in all_rows() if r.family in ("unary", "binary", "ternary", "select")]
AXIS_OPS = [r for r in all_rows() if r.family in ("reduce", "arg_reduce", "softmax")]


def _name(info):
    return FRONT_END_NAME.get(info.op, info.op)


def _on(cap, arrays):
    return [rt.tensor(a, device=cap) for a in arrays]


@pytest.fixture
def scope():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        yield cap, s
        x = s.placeholder((1,))
        s.complete(inputs=[x], outputs=[x])


def _inputs(info, cap, shape=(2, 3)):
    dt = info.dtypes[0] if info.dtypes else rt.float32
    return _on(cap, info.inputs(shape, dt, np.random.default_rng(0)))


@pytest.mark.parametrize("info", ELEMENTWISE + AXIS_OPS, ids=lambda r: r.name)
def test_a_list_in_place_of_a_tensor(info, scope):
    cap, _ = scope
    args = _inputs(info, cap)
    # every operand a nested list (the condition alone for where): no tensor to take a device
    # from, so nothing may guess one
    n = 1 if info.family in ("unary", "select", "reduce", "arg_reduce", "softmax") else len(args)
    for k in range(n):
        args[k] = np.asarray(args[k].numpy()).tolist()
    with pytest.raises(rt.TensorRuntimeError, match=_name(info)):
        info.fn(*args)


def _on_cpu(info, cap, args):
    return rt.tensor(np.asarray(args[1].numpy()))                # the second one on cpu


def _not_broadcastable(info, cap, args):
    return _inputs(info, cap, (4,))[1]                          # (4,) against (2, 3)


@pytest.mark.parametrize("second, error, match", [
    (_on_cpu, rt.DeviceMismatchError, r"\(in {op}\)"),
    (_not_broadcastable, rt.ShapeError, r"{op}: .*\(2, 3\).*\(4,\)|{op}: .*\(4,\).*\(2, 3\)"),
], ids=["on-two-devices", "shapes-do-not-broadcast"])
@pytest.mark.parametrize("info", [r for r in ELEMENTWISE if r.arity >= 2 and r.sample is None],
                         ids=lambda r: r.name)
def test_a_bad_second_operand(info, second, error, match, scope):
    cap, _ = scope
    args = _inputs(info, cap)
    args[1] = second(info, cap, args)
    with pytest.raises(error, match=match.format(op=info.op)):
        info.fn(*args)


@pytest.mark.parametrize("info", AXIS_OPS, ids=lambda r: r.name)
def test_an_axis_out_of_range(info, scope):
    cap, _ = scope
    (x,) = _inputs(info, cap)[:1]
    with pytest.raises(rt.AxisError, match=rf"{info.op}: axis 5 is out of range for a tensor of shape \(2, 3\)"):
        info.fn(x, axis=5)


# ---- the ops without a row of the op table (conv, pools, resampling, rearrangements, scatter,
# sorting, data-dependent selection, activations, losses): a hand-made matrix of non-tensors,
# wrong dtypes, wrong ranks, axes out of range, two devices and huge sizes
import functools  # noqa: E402

import runtime.nn.functional as F  # noqa: E402


def _t(cap, shape, dtype=np.float32):
    return rt.tensor(np.zeros(shape, dtype), device=cap)


def _i(cap, shape):
    return rt.tensor(np.zeros(shape, np.int64), device=cap)


def _cpu(shape, dtype=np.float32):
    return rt.tensor(np.zeros(shape, dtype))


X4, W4, X3, W3 = (1, 2, 5, 5), (3, 2, 3, 3), (1, 2, 5), (3, 2, 3)
NT = rt.ArgumentTypeError
DT, SH, DV, AV = rt.DTypeError, rt.ShapeError, rt.DeviceMismatchError, rt.ArgumentValueError
BIG = 2 ** 40
NEWER = [
    # convolutions: int weights, wrong ranks, two devices, results too big for any tensor
    ("conv2d-list", lambda c: F.conv2d([[[[0.0]]]], _t(c, W4)), NT, "conv2d: expected a Tensor, got list"),
    ("conv2d-int-weight", lambda c: F.conv2d(_t(c, X4), _t(c, W4, np.int64)), DT,
     "conv2d: only float32 and float64 are supported, got float32, int64"),
    ("conv2d-bool", lambda c: F.conv2d(_t(c, X4, np.bool_), _t(c, W4, np.bool_)), DT, "conv2d: only float32"),
    ("conv2d-rank", lambda c: F.conv2d(_t(c, (5,)), _t(c, W4)), SH, r"conv2d: .*\(5,\)"),
    ("conv2d-weight-rank", lambda c: F.conv2d(_t(c, X4), _t(c, W3)), SH, "conv2d: weight must be 4-D"),
    ("conv2d-devices", lambda c: F.conv2d(_t(c, X4), _cpu(W4)), DV, r"\(in conv2d\)"),
    ("conv2d-bias-devices", lambda c: F.conv2d(_t(c, X4), _t(c, W4), _cpu((3,))), DV, r"\(in conv2d\)"),
    ("conv2d-huge", lambda c: F.conv2d(_t(c, X4), _t(c, W4), padding=BIG), SH,
     r"conv2d: the result of shape \(1, 3, 2199023255555, 2199023255555\) has \d+ elements"),
    ("conv1d-int-weight", lambda c: F.conv1d(_t(c, X3), _t(c, W3, np.int64)), DT, "only float32 and float64"),
    ("conv1d-rank", lambda c: F.conv1d(_t(c, X4), _t(c, W3)), SH, "conv1d: input must be 3-D"),
    ("conv1d-devices", lambda c: F.conv1d(_t(c, X3), _cpu(W3)), DV, r"\(in conv"),
    ("conv_transpose2d-int", lambda c: F.conv_transpose2d(_t(c, X4), _t(c, (2, 3, 3, 3), np.int64)), DT,
     "conv_transpose2d: only float32 and float64"),
    ("conv_transpose2d-list", lambda c: F.conv_transpose2d([[[[0.0]]]], _t(c, (1, 3, 3, 3))), NT,
     "conv_transpose2d: expected a Tensor"),
    ("conv_transpose2d-huge", lambda c: F.conv_transpose2d(_t(c, X4), _t(c, (2, 3, 3, 3)), stride=BIG),
     SH, r"conv_transpose2d: the result of shape .* elements"),
    ("unfold-list", lambda c: F.unfold([[[[1.0]]]], 1), NT, "unfold: expected a Tensor"),
    ("unfold-rank", lambda c: F.unfold(_t(c, (4,)), 2), SH, r"unfold: input must be 4-D"),
    ("unfold-huge", lambda c: F.unfold(_t(c, X4), 2, padding=BIG), SH, r"unfold: the result of shape"),
    ("fold-rank", lambda c: F.fold(_t(c, (4,)), output_size=(3, 3), kernel_size=2), SH, "fold: input must be 3-D"),
    ("fold-huge", lambda c: F.fold(_t(c, (1, 8, 4)), output_size=(BIG, BIG), kernel_size=2), SH,
     r"fold: input of shape \(1, 8, 4\) has 4 blocks"),
    # pooling and resampling
    ("max_pool2d-list", lambda c: F.max_pool2d([[[[0.0]]]], 2), NT, "max_pool2d: expected a Tensor"),
    ("max_pool2d-rank", lambda c: F.max_pool2d(_t(c, (5,)), 2), SH, r"max_pool2d: expected a 3-D"),
    ("max_pool2d-bool", lambda c: F.max_pool2d(_t(c, (1, 1, 4, 4), np.bool_), 2), DT,
     "max_pool2d: input must be float32, float64, int32, int64, float16, bfloat16, int8, "
     "uint8 or int16, got bool"),
    ("max_pool2d-huge", lambda c: F.max_pool2d(_t(c, X4), BIG), SH, "max_pool2d: kernel of size"),
    ("max_pool1d-list", lambda c: F.max_pool1d([[[0.0]]], 2), NT, "max_pool1d: expected a Tensor"),
    ("avg_pool2d-int", lambda c: F.avg_pool2d(_t(c, (1, 1, 4, 4), np.int64), 2), DT,
     "avg_pool2d: input must be float32, float64, float16 or bfloat16, got int64"),
    ("avg_pool1d-rank", lambda c: F.avg_pool1d(_t(c, (4,)), 2), SH, "avg_pool1d: expected a 2-D"),
    ("adaptive_avg_pool2d-int", lambda c: F.adaptive_avg_pool2d(_t(c, (1, 1, 4, 4), np.int64), 2), DT,
     "adaptive_avg_pool2d: input must be float32, float64, float16 or bfloat16, got int64"),
    ("adaptive_avg_pool2d-huge", lambda c: F.adaptive_avg_pool2d(_t(c, X4), (BIG, BIG)), SH,
     "adaptive_avg_pool2d: the result of shape"),
    ("adaptive_max_pool2d-rank", lambda c: F.adaptive_max_pool2d(_t(c, (4,)), 2), SH,
     "adaptive_max_pool2d: expected a 3-D"),
    ("interpolate-list", lambda c: F.interpolate([[[[1.0]]]], size=2), NT, "interpolate: expected a Tensor"),
    ("interpolate-int", lambda c: F.interpolate(_t(c, (1, 1, 4, 4), np.int64), size=(2, 2), mode="bilinear"),
     DT, "interpolate: input must be float32 or float64, got int64"),
    ("interpolate-rank", lambda c: F.interpolate(_t(c, (4,)), size=2), SH, "interpolate: expected a 4-D"),
    ("interpolate-huge", lambda c: F.interpolate(_t(c, X4), scale_factor=1e30), SH,
     "interpolate: the result of shape"),
    # rearrangements
    ("pad-list", lambda c: rt.pad([[1.0]], (1, 1)), NT, "pad: expected a Tensor"),
    ("pad-negative", lambda c: rt.pad(_t(c, X4), (-10, 0)), SH, "pad: padding .* leaves a negative size"),
    ("roll-list", lambda c: rt.roll([1.0], 1), NT, "roll: expected a Tensor"),
    ("roll-axis", lambda c: rt.roll(_t(c, X4), 1, 9), SH, r"roll: axis 9 is out of range"),
    ("roll-float-shift", lambda c: rt.roll(_t(c, X4), 1.5, 0), NT, "roll: a shift must be an int"),
    ("flip-list", lambda c: rt.flip([1.0], (0,)), NT, "flip: expected a Tensor"),
    ("flip-axis", lambda c: rt.flip(_t(c, X4), (9,)), SH, r"flip: axis 9 is out of range"),
    ("one_hot-list", lambda c: rt.one_hot([1, 2], 3), NT, "one_hot: expected a Tensor"),
    ("one_hot-float", lambda c: rt.one_hot(_t(c, (3,)), 4), DT, "one_hot: input must be int32 or int64"),
    ("one_hot-huge", lambda c: rt.one_hot(_i(c, (3,)), 2 ** 70), SH, r"one_hot: shape \(3, \d+\) has"),
    ("diag_embed-huge", lambda c: rt.diag_embed(_t(c, (2,)), offset=BIG), SH, r"diag_embed: shape .* has"),
    # scatter family: float indices, axes, ranks, devices
    ("scatter-list", lambda c: rt.scatter([[1.0]], 0, _i(c, (1, 1)), _t(c, (1, 1))), NT, "scatter: expected a Tensor"),
    ("scatter-float-index", lambda c: rt.scatter(_t(c, X4), 0, _t(c, X4), _t(c, X4)), DT,
     "scatter: index must be int32 or int64, got float32"),
    ("scatter-axis", lambda c: rt.scatter(_t(c, X4), 9, _i(c, X4), _t(c, X4)), SH, "scatter: axis 9 is out of range"),
    ("scatter-rank", lambda c: rt.scatter(_t(c, X4), 0, _i(c, (1,)), _t(c, X4)), SH,
     r"indices of shape \(1,\) must have the same number of dimensions"),
    ("scatter-src-dtype", lambda c: rt.scatter(_t(c, X4), 0, _i(c, X4), _t(c, X4, np.int64)), DT,
     "scatter: src must have the input's dtype"),
    ("scatter-devices", lambda c: rt.scatter(_t(c, X4), 0, _cpu(X4, np.int64), _t(c, X4)), DV, r"\(in scatter"),
    ("scatter_reduce-float-index", lambda c: rt.scatter_reduce(_t(c, X4), 0, _t(c, X4), _t(c, X4), "sum"),
     DT, "scatter_reduce: index must be int32 or int64"),
    ("scatter_reduce-reduce", lambda c: rt.scatter_reduce(_t(c, X4), 0, _i(c, X4), _t(c, X4), "nope"),
     AV, "scatter_reduce: reduce must be one of"),
    ("scatter_reduce-axis", lambda c: rt.scatter_reduce(_t(c, X4), -9, _i(c, X4), _t(c, X4), "sum"),
     SH, "scatter_reduce: axis -9 is out of range"),
    ("scatter_reduce-devices", lambda c: rt.scatter_reduce(_t(c, X4), 0, _i(c, X4), _cpu(X4), "sum"),
     DV, r"\(in scatter"),
    ("index_add-list", lambda c: rt.index_add([[1.0]], 0, _i(c, (1,)), _t(c, X4)), NT, "index_add: expected a Tensor"),
    ("index_add-float-index", lambda c: rt.index_add(_t(c, X4), 0, _t(c, (1,)), _t(c, X4)), DT,
     "index_add: index must be int32 or int64"),
    ("index_add-axis", lambda c: rt.index_add(_t(c, X4), 7, _i(c, (1,)), _t(c, X4)), SH,
     "index_add: axis 7 is out of range"),
    ("index_add-rank", lambda c: rt.index_add(_t(c, X4), 0, _i(c, (1, 1)), _t(c, X4)), SH,
     "index_add: index must be 0-d or 1-d"),
    ("index_add-devices", lambda c: rt.index_add(_t(c, X4), 0, _cpu((1,), np.int64), _t(c, X4)), DV,
     r"\(in scatter_add\)"),
    # sorting and selection
    ("sort-list", lambda c: rt.sort([3.0, 1.0]), NT, "sort: expected a Tensor"),
    ("sort-axis", lambda c: rt.sort(_t(c, X4), 9), SH, "sort: axis 9 is out of range"),
    ("argsort-list", lambda c: rt.argsort([3.0]), NT, "argsort: expected a Tensor"),
    ("argsort-axis", lambda c: rt.argsort(_t(c, X4), -9), SH, "argsort: axis -9 is out of range"),
    ("topk-list", lambda c: rt.topk([1.0], 1), NT, "topk: expected a Tensor"),
    ("topk-k", lambda c: rt.topk(_t(c, X4), 99), SH, "topk: k=99 is out of range"),
    ("topk-float-k", lambda c: rt.topk(_t(c, X4), 1.5), NT, "topk: k must be an int"),
    ("topk-axis", lambda c: rt.topk(_t(c, X4), 1, 9), SH, "topk: axis 9 is out of range"),
    ("kthvalue-list", lambda c: rt.kthvalue([1.0], 1), NT, "kthvalue: expected a Tensor"),
    ("kthvalue-k", lambda c: rt.kthvalue(_t(c, X4), 99), SH, "kthvalue: k=99 is out of range"),
    ("kthvalue-axis", lambda c: rt.kthvalue(_t(c, X4), 1, 9), SH, "kthvalue: axis 9 is out of range"),
    ("median-list", lambda c: rt.median([1.0]), NT, "median: expected a Tensor"),
    ("median-axis", lambda c: rt.median(_t(c, X4), 9), SH, "median: axis 9 is out of range"),
    ("unique-list", lambda c: rt.unique([1.0]), NT, "unique: expected a Tensor"),
    ("nonzero-list", lambda c: rt.nonzero([1.0]), NT, "nonzero: expected a Tensor"),
    ("masked_select-list", lambda c: rt.masked_select([1.0], _t(c, (1,), np.bool_)), NT,
     "masked_select: expected a Tensor"),
    ("masked_select-float-mask", lambda c: rt.masked_select(_t(c, X4), _t(c, X4)), DT,
     "masked_select: mask must be bool, got float32"),
    # activations
    *[(f"{n}-list", functools.partial(lambda n, c: getattr(F, n)([1.0]), n), NT,
       f"{n}: expected a Tensor")
      for n in (*ACTIVATIONS, "glu")],
    ("elu-alpha", lambda c: F.elu(_t(c, X4), "a"), NT, "elu: alpha must be a number, got str"),
    ("celu-alpha", lambda c: F.celu(_t(c, X4), None), NT, "celu: alpha must be a number, got NoneType"),
    ("leaky_relu-slope", lambda c: F.leaky_relu(_t(c, X4), [0.1]), NT, "leaky_relu: negative_slope must be a number"),
    ("hardtanh-bound", lambda c: F.hardtanh(_t(c, X4), "x"), NT, "hardtanh: min_val must be a number"),
    ("hardtanh-bool", lambda c: F.hardtanh(_t(c, (3,), np.bool_)), DT, "hardtanh: not defined for dtype bool"),
    ("glu-odd", lambda c: F.glu(_t(c, (3,))), SH, "glu: halving axis -1 needs an even size"),
    ("glu-axis", lambda c: F.glu(_t(c, X4), 9), SH, "glu: axis 9 is out of range"),
    ("softmin-axis", lambda c: F.softmin(_t(c, X4), 9), SH, "softmin: axis 9 is out of range"),
    # losses
    ("mse_loss-list", lambda c: F.mse_loss([1.0], _t(c, (1,))), NT, "mse_loss: input must be a Tensor, got list"),
    ("mse_loss-shape", lambda c: F.mse_loss(_t(c, (2, 3)), _t(c, (4,))), SH, r"mse_loss: input of shape \(2, 3\)"),
    ("mse_loss-devices", lambda c: F.mse_loss(_t(c, (2,)), _cpu((2,))), DV, r"\(in sub\)"),
    ("l1_loss-list", lambda c: F.l1_loss([1.0], _t(c, (1,))), NT, "l1_loss: input must be a Tensor"),
    ("smooth_l1_loss-shape", lambda c: F.smooth_l1_loss(_t(c, (2, 3)), _t(c, (4,))), SH,
     "smooth_l1_loss: target of shape"),
    ("huber_loss-list", lambda c: F.huber_loss([1.0], _t(c, (1,))), NT, "huber_loss: input must be a Tensor"),
    ("nll_loss-float-target", lambda c: F.nll_loss(_t(c, (2, 3)), _t(c, (2,))), DT,
     "nll_loss: target must hold integer class indices"),
    ("nll_loss-shape", lambda c: F.nll_loss(_t(c, (2, 3)), _i(c, (5,))), SH, r"nll_loss: target of shape \(5,\)"),
    ("cross_entropy-float-target", lambda c: F.cross_entropy(_t(c, (2, 3)), _t(c, (2, 4))), DT,
     "cross_entropy: targets must be integer class indices"),
    ("cross_entropy-devices", lambda c: F.cross_entropy(_t(c, (2, 3)), _cpu((2,), np.int64)), DV,
     r"\(in cross_entropy\)"),
    ("binary_cross_entropy-int", lambda c: F.binary_cross_entropy(_t(c, (2,), np.int64), _t(c, (2,), np.int64)),
     DT, "binary_cross_entropy: input must be a float tensor"),
    ("binary_cross_entropy-shape", lambda c: F.binary_cross_entropy(_t(c, (2, 3)), _t(c, (4,))), SH,
     "binary_cross_entropy: target of shape"),
    ("binary_cross_entropy_with_logits-devices",
     lambda c: F.binary_cross_entropy_with_logits(_t(c, (2,)), _cpu((2,))), DV, r"\(in mul\)"),
    ("kl_div-shape", lambda c: F.kl_div(_t(c, (2, 3)), _t(c, (4,))), SH, "kl_div: target of shape"),
]


@pytest.mark.parametrize("call, error, match", [c[1:] for c in NEWER], ids=[c[0] for c in NEWER])
def test_the_newer_ops_refuse_bad_inputs(call, error, match, scope):
    cap, _ = scope
    with pytest.raises(error, match=match) as e:
        call(cap)
    assert isinstance(e.value, rt.TensorRuntimeError)


def _saved_graph():
    return rt.capture(lambda t: t * 2.0, np.ones(2, np.float32))


def _placeholder(shape):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        try:
            s.placeholder(shape)
        finally:
            x = s.placeholder((1,))
            s.complete(inputs=[x], outputs=[x])


# arguments that once escaped as a raw Python error from deep inside (AttributeError,
# TypeError, ValueError) or were accepted: each is a typed error naming the op
ENTRY_POINTS = [
    ("dropout-none", lambda: F.dropout(None), NT, "dropout: expected a Tensor, got NoneType"),
    ("dropout-p-str", lambda: F.dropout(_cpu((2,)), p="a"), NT, "dropout: p must be a number, got str"),
    ("dropout2d-none", lambda: F.dropout2d(None), NT, "dropout2d: expected a Tensor, got NoneType"),
    ("full-none", lambda: rt.full(None, 1.0), SH,
     "full: shape must be an int or a tuple of ints, got None"),
    ("zeros_like-list", lambda: rt.zeros_like([1.0, 2.0]), NT, "zeros_like: expected a Tensor, got list"),
    ("zeros_like-none", lambda: rt.zeros_like(None), NT, "zeros_like: expected a Tensor, got NoneType"),
    ("ones_like-none", lambda: rt.ones_like(None), NT, "ones_like: expected a Tensor, got NoneType"),
    ("placeholder-str", lambda: _placeholder("ab"), SH,
     "placeholder: shape must be a tuple of ints, got 'ab'"),
    ("placeholder-none", lambda: _placeholder(None), SH,
     "placeholder: shape must be a tuple of ints, got None"),
    ("graph.save-none", lambda: _saved_graph().save(None), NT,
     "graph.save: path must be a str, bytes or os.PathLike, got NoneType"),
    ("load_graph-none", lambda: rt.load_graph(None), NT,
     "load_graph: path must be a str, bytes or os.PathLike, got NoneType"),
    ("autodiff-none", lambda: rt.autodiff(None), NT,
     "autodiff: expected a device or a device string such as 'cpu', got None"),
    # scalar arguments that are not numbers fail at the front end, not deep in a conversion
    ("full-str", lambda: rt.full((2,), "a"), NT, "full: fill value must be a number, got str"),
    ("full_like-tensor", lambda: rt.full_like(_cpu((2,)), _cpu((2,))), NT,
     "full_like: fill_value must be a number, got Tensor"),
    ("softplus-beta-none", lambda: rt.softplus(_cpu((2,)), None), NT,
     "softplus: beta must be a number, got NoneType"),
    ("nan_to_num-str", lambda: rt.nan_to_num(_cpu((2,)), "a"), NT,
     "nan_to_num: nan must be a number, got str"),
    ("isclose-rtol-none", lambda: rt.isclose(_cpu((2,)), _cpu((2,)), None), NT,
     "isclose: rtol must be a number, got NoneType"),
    ("l1_loss-target-str", lambda: F.l1_loss(_cpu((2,)), "a"), NT,
     "l1_loss: target must be a Tensor or numbers, got str"),
    ("layer_norm-none", lambda: F.layer_norm(_cpu((2, 3)), None), SH,
     "layer_norm: normalized_shape must be an int or a tuple of ints, got None"),
    ("group_norm-none", lambda: F.group_norm(_cpu((2, 4)), None), NT,
     "group_norm: num_groups must be an int, got None"),
    ("capture-none", lambda: rt.capture(None), NT, "capture: fn must be callable, got NoneType"),
    # layer and optimiser constructors: sizes are ints (never truncated), hyperparameters numbers
    ("Linear-float", lambda: rt.nn.Linear(2.5, 3), NT, "Linear: in_features must be an int, got 2.5"),
    ("Linear-negative", lambda: rt.nn.Linear(3, -1), AV,
     "Linear: out_features must be non-negative, got -1"),
    ("Embedding-none", lambda: rt.nn.Embedding(None, 3), NT,
     "Embedding: num_embeddings must be an int, got None"),
    ("Dropout-str", lambda: rt.nn.Dropout("a"), NT, "Dropout: p must be a number, got str"),
    ("Dropout2d-range", lambda: rt.nn.Dropout2d(1.5), AV,
     "Dropout2d: p must be between 0 and 1, got 1.5"),
    ("BatchNorm2d-str", lambda: rt.nn.BatchNorm2d("a"), NT,
     "BatchNorm2d: num_features must be an int, got 'a'"),
    ("LayerNorm-none", lambda: rt.nn.LayerNorm(None), NT,
     "LayerNorm: normalized_shape must be an int, got None"),
    ("RMSNorm-float", lambda: rt.nn.RMSNorm((2, 2.5)), NT,
     "RMSNorm: normalized_shape must be an int, got 2.5"),
    ("GroupNorm-str", lambda: rt.nn.GroupNorm(2, "a"), NT,
     "GroupNorm: num_channels must be an int, got 'a'"),
    ("SGD-params-none", lambda: rt.optim.SGD(None, lr=0.1), NT,
     "SGD: params must be an iterable of Parameters or dicts, got NoneType"),
    ("SGD-momentum-str", lambda: rt.optim.SGD(rt.nn.Linear(2, 2).parameters(), momentum="a"), NT,
     "SGD: momentum must be a number, got str"),
    ("Adam-betas", lambda: rt.optim.Adam(rt.nn.Linear(2, 2).parameters(), betas=(0.9,)), NT,
     "Adam: betas must be a pair of numbers, got (0.9,)"),
    ("AdamW-eps-none", lambda: rt.optim.AdamW(rt.nn.Linear(2, 2).parameters(), eps=None), NT,
     "AdamW: eps must be a number, got NoneType"),
    ("RMSprop-weight_decay-str",
     lambda: rt.optim.RMSprop(rt.nn.Linear(2, 2).parameters(), weight_decay="a"), NT,
     "RMSprop: weight_decay must be a number, got str"),
    # typed errors name the function the user called (not an internal op, not a bare lookup),
    # and a tensor where a flag, number, size or dtype belongs is refused by name
    ("astype-str", lambda: rt.astype(_cpu((2,)), "nope"), DT,
     "cast: unsupported dtype 'nope'; expected one of"),
    ("tensor-dtype-str", lambda: rt.tensor([1.0], dtype="nope"), DT,
     "tensor: unsupported dtype 'nope'; expected one of"),
    ("zeros-dtype-str", lambda: rt.zeros(2, dtype="nope"), DT,
     "zeros: unsupported dtype 'nope'; expected one of"),
    ("zeros_like-dtype-str", lambda: rt.zeros_like(_cpu((2,)), "nope"), DT,
     "zeros_like: unsupported dtype 'nope'; expected one of"),
    ("empty_like-dtype-tensor", lambda: rt.empty_like(_cpu((2,)), _cpu((2,))), DT,
     "empty_like: unsupported dtype tensor("),
    ("rand_like-dtype-tensor", lambda: rt.rand_like(_cpu((2,)), _cpu((2,))), DT,
     "rand_like: unsupported dtype tensor("),
    ("sum-dtype-str", lambda: rt.sum(_cpu((2,)), dtype="nope"), DT,
     "sum: unsupported dtype 'nope'; expected one of"),
    ("cumsum-dtype-str", lambda: rt.cumsum(_cpu((2,)), 0, dtype="nope"), DT,
     "cumsum: unsupported dtype 'nope'; expected one of"),
    ("Linear-dtype-str", lambda: rt.nn.Linear(2, 2, dtype="nope"), DT,
     "Linear: unsupported dtype 'nope'; expected one of"),
    ("default_device-str", lambda: rt.default_device("a"), rt.DeviceError,
     "default_device: unknown device 'a'"),
    ("synchronize-str", lambda: rt.synchronize("a"), rt.DeviceError,
     "synchronize: unknown device 'a'"),
    ("from_dlpack-device-str", lambda: rt.from_dlpack(np.zeros(2), device="a"), rt.DeviceError,
     "from_dlpack: unknown device 'a'"),
    ("rand-device-str", lambda: rt.rand(2, device="a"), rt.DeviceError, "rand: unknown device 'a'"),
    ("tensor-device-list", lambda: rt.tensor([1.0], device=[1]), rt.DeviceError,
     "tensor: cannot make a device from [1]"),
    ("to-str", lambda: _cpu((2,)).to("a"), rt.DeviceError, "to: unknown device 'a'"),
    ("autodiff-list", lambda: rt.autodiff([1]), rt.DeviceError,
     "autodiff: cannot make a device from [1]"),
    ("zeros-device-capture-id", lambda: rt.zeros(2, device="capture:x"), rt.DeviceError,
     "zeros: cannot parse device 'capture:x': the capture id must be an integer"),
    ("manual_seed-device-str", lambda: rt.manual_seed(0, device="a"), rt.DeviceError,
     "manual_seed: unknown device 'a'"),
    ("Linear-device-str", lambda: rt.nn.Linear(2, 2, device="a"), rt.DeviceError,
     "Linear: unknown device 'a'"),
    ("expand-tensor", lambda: rt.expand(_cpu((2,)), _cpu((2,))), SH,
     "expand: shape must be a tuple of ints, got (tensor("),
    ("broadcast_to-mismatch", lambda: rt.broadcast_to(_cpu((2, 3)), (4, 5)), SH,
     "broadcast_to: cannot expand shape (2, 3) to (4, 5)"),
    ("sum-keepdim-tensor", lambda: rt.sum(_cpu((2,)), keepdim=_cpu((2,))), NT,
     "sum: keepdims must be a bool, got Tensor"),
    ("amax-keepdim-tensor", lambda: rt.amax(_cpu((2,)), keepdim=_cpu((2,))), NT,
     "amax: keepdim must be a bool, got Tensor"),
    ("amax-axis-str", lambda: rt.amax(_cpu((2,)), "a"), SH, "amax: axis must be an int, got 'a'"),
    ("count_nonzero-axis-float", lambda: rt.count_nonzero(_cpu((2,)), 2.5), SH,
     "count_nonzero: axis must be an int, got 2.5"),
    ("var_mean-ddof-none", lambda: rt.var_mean(_cpu((2,)), ddof=None), NT,
     "var_mean: ddof must be an int, got None"),
    ("nonzero-as_tuple-tensor", lambda: rt.nonzero(_cpu((2,)), as_tuple=_cpu((2,))), NT,
     "nonzero: as_tuple must be a bool, got Tensor"),
    ("addcmul-value-tensor", lambda: rt.addcmul(_cpu((2,)), _cpu((2,)), _cpu((2,)), _cpu((2,))), NT,
     "addcmul: value must be a number, got Tensor"),
    ("div-rounding_mode-tensor", lambda: rt.div(_cpu((2,)), 2.0, rounding_mode=_cpu((2,))), AV,
     "div: rounding_mode must be None, 'trunc' or 'floor', got tensor("),
    ("gelu-approximate-tensor", lambda: rt.gelu(_cpu((2,)), _cpu((2,))), AV,
     "gelu: approximate must be 'none' or 'tanh', got tensor("),
    ("meshgrid-indexing-tensor", lambda: rt.meshgrid(_cpu((2,)), indexing=_cpu((2,))), AV,
     "meshgrid: indexing must be 'ij' or 'xy', got tensor("),
    ("allclose-none", lambda: rt.allclose(None, _cpu((2,))), NT,
     "allclose: unsupported operand of type NoneType"),
    ("allclose-rtol-none", lambda: rt.allclose(_cpu((2,)), _cpu((2,)), None), NT,
     "allclose: rtol must be a number, got NoneType"),
    ("slice_assign-str-key", lambda: rt.slice_assign(_cpu((2,)), "a", 0.0), NT,
     "slice_assign: unsupported index 'a' of type str"),
    ("tile-negative", lambda: rt.tile(_cpu((2,)), (-1,)), SH,
     "tile: repeat counts must be non-negative, got (-1,)"),
    ("avg_pool1d-negative", lambda: rt.avg_pool1d(_cpu((1, 2, 5)), -1), AV,
     "avg_pool1d: kernel_size must be positive, got (-1,)"),
    ("max_pool1d-negative", lambda: rt.max_pool1d(_cpu((1, 2, 5)), -1), AV,
     "max_pool1d: kernel_size must be positive, got (-1,)"),
    ("normal-std-none", lambda: rt.normal(_cpu((2,)), None), NT,
     "normal: std must be a real number, got None"),
    ("normal-size-float", lambda: rt.normal(0.0, 1.0, 2.5), SH,
     "normal: shape must be a tuple of ints, got (2.5,)"),
    ("save-path-none", lambda: rt.save(_cpu((2,)), None), NT,
     "save: path must be a str, bytes or os.PathLike, got NoneType"),
    ("load-path-none", lambda: rt.load(None), NT,
     "load: path must be a str, bytes or os.PathLike, got NoneType"),
    ("mse_loss-target-none", lambda: F.mse_loss(_cpu((2,)), None), NT,
     "mse_loss: target must be a Tensor or a number, got NoneType"),
    ("mse_loss-reduction-tensor", lambda: F.mse_loss(_cpu((2,)), _cpu((2,)), _cpu((2,))), AV,
     "mse_loss: reduction must be 'mean', 'sum' or 'none', got tensor("),
    ("linear-input-none", lambda: F.linear(None, _cpu((2, 3))), NT,
     "linear: expected a Tensor, got NoneType"),
    ("linear-bias-str", lambda: F.linear(_cpu((2, 3)), _cpu((2, 3)), "a"), NT,
     "linear: bias must be a Tensor or a number, got str"),
    ("linear-bias-shape", lambda: F.linear(_cpu((2, 3)), _cpu((2, 3)), _cpu((2, 3))), SH,
     "linear: shapes (2, 2) and (2, 3) cannot be broadcast together"),
    ("bce_with_logits-weight-str",
     lambda: F.binary_cross_entropy_with_logits(_cpu((2,)), _cpu((2,)), "a"), NT,
     "binary_cross_entropy_with_logits: weight must be a Tensor or a number, got str"),
    ("cross_entropy-target-none", lambda: F.cross_entropy(_cpu((2, 3)), None), NT,
     "cross_entropy: target must be a Tensor or integers, got NoneType"),
    ("nll_loss-target-str", lambda: F.nll_loss(_cpu((2, 3)), "a"), NT,
     "nll_loss: target must be a Tensor or integers, got str"),
    ("embedding-input-none", lambda: F.embedding(None, _cpu((2, 3))), NT,
     "embedding: input must be a Tensor or integers, got NoneType"),
    ("cosine_similarity-dim-str", lambda: F.cosine_similarity(_cpu((2, 3)), _cpu((2, 3)), "a"), NT,
     "cosine_similarity: dim must be an int, got 'a'"),
    ("sdpa-mask-shape",
     lambda: F.scaled_dot_product_attention(_cpu((2, 3)), _cpu((2, 3)), _cpu((2, 3)), _cpu((2, 3))),
     SH,
     "scaled_dot_product_attention: shapes (2, 2) and (2, 3) cannot be broadcast together"),
    ("Conv2d-in_channels-none", lambda: rt.nn.Conv2d(None, 2, 2), NT,
     "Conv2d: in_channels must be an int, got None"),
    ("Conv2d-kernel_size-none", lambda: rt.nn.Conv2d(2, 2, None), NT,
     "Conv2d: kernel_size must be an int, got None"),
    ("Conv2d-out_channels-negative", lambda: rt.nn.Conv2d(2, -1, 2), AV,
     "Conv2d: out_channels must be non-negative, got -1"),
    ("Conv2d-padding_mode-tensor", lambda: rt.nn.Conv2d(2, 2, 2, padding_mode=_cpu((2,))), AV,
     "Conv2d: padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], got "),
    ("BatchNorm2d-eps-str", lambda: rt.nn.BatchNorm2d(3, "a"), NT,
     "BatchNorm2d: eps must be a number, got str"),
    ("BatchNorm2d-affine-tensor", lambda: rt.nn.BatchNorm2d(3, affine=_cpu((2,))), NT,
     "BatchNorm2d: affine must be a bool, got Tensor"),
    ("BatchNorm2d-forward-none", lambda: rt.nn.BatchNorm2d(3)(None), NT,
     "BatchNorm2d: expected a Tensor, got NoneType"),
    ("LayerNorm-eps-tensor", lambda: rt.nn.LayerNorm(3, _cpu((2,))), NT,
     "LayerNorm: eps must be a number, got Tensor"),
    ("GroupNorm-eps-none", lambda: rt.nn.GroupNorm(1, 3, None), NT,
     "GroupNorm: eps must be a number, got NoneType"),
    ("MultiheadAttention-embed_dim-none", lambda: rt.nn.MultiheadAttention(None, 2), NT,
     "MultiheadAttention: embed_dim must be an int, got None"),
    ("MultiheadAttention-dropout-str", lambda: rt.nn.MultiheadAttention(4, 2, "a"), NT,
     "MultiheadAttention: dropout must be a number, got str"),
    ("MultiheadAttention-forward-none",
     lambda: rt.nn.MultiheadAttention(4, 2)(None, None, None), NT,
     "MultiheadAttention: query must be a Tensor, got NoneType"),
    ("TransformerEncoderLayer-d_model-none", lambda: rt.nn.TransformerEncoderLayer(None, 2), NT,
     "TransformerEncoderLayer: d_model must be an int, got None"),
    ("TransformerEncoderLayer-forward-none",
     lambda: rt.nn.TransformerEncoderLayer(4, 2, 8)(None), NT,
     "TransformerEncoderLayer: src must be a Tensor, got NoneType"),
    ("TransformerDecoderLayer-dim_feedforward-none",
     lambda: rt.nn.TransformerDecoderLayer(4, 2, None), NT,
     "TransformerDecoderLayer: dim_feedforward must be an int, got None"),
    ("Transformer-d_model-float", lambda: rt.nn.Transformer(2.5, 2), NT,
     "Transformer: d_model must be an int, got 2.5"),
    ("RNN-nonlinearity-tensor", lambda: rt.nn.RNN(3, 4, nonlinearity=_cpu((2,))), AV,
     "RNN: unknown nonlinearity tensor("),
    ("GRUCell-bias-tensor", lambda: rt.nn.GRUCell(3, 4, _cpu((2,))), NT,
     "GRUCell: bias must be a bool, got Tensor"),
    ("Embedding-padding_idx-range", lambda: rt.nn.Embedding(2, 2, padding_idx=2), AV,
     "Embedding: padding_idx 2 is out of range for 2 embeddings"),
    ("Embedding-padding_idx-str", lambda: rt.nn.Embedding(2, 2, padding_idx="a"), NT,
     "Embedding: padding_idx must be an int, got 'a'"),
    ("batch_norm-training-tensor",
     lambda: F.batch_norm(_cpu((2, 3)), None, None, training=_cpu((2,))), NT,
     "batch_norm: training must be a bool, got Tensor"),
    ("cross_entropy-label_smoothing-none",
     lambda: F.cross_entropy(_cpu((2, 3)), [0, 1], label_smoothing=None), NT,
     "cross_entropy: label_smoothing must be a number, got NoneType"),
    ("sdpa-dropout_p-none",
     lambda: F.scaled_dot_product_attention(_cpu((2, 3)), _cpu((2, 3)), _cpu((2, 3)), dropout_p=None),
     NT, "scaled_dot_product_attention: dropout_p must be a number, got NoneType"),
    ("sdpa-scale-str",
     lambda: F.scaled_dot_product_attention(_cpu((2, 3)), _cpu((2, 3)), _cpu((2, 3)), scale="a"),
     NT, "scaled_dot_product_attention: scale must be a number, got str"),
    ("bce_with_logits-pos_weight-float",
     lambda: F.binary_cross_entropy_with_logits(_cpu((2,)), _cpu((2,)), pos_weight=2.0), NT,
     "binary_cross_entropy_with_logits: pos_weight must be a Tensor, got float"),
    ("TransformerEncoderLayer-bias-tensor",
     lambda: rt.nn.TransformerEncoderLayer(4, 2, 8, bias=_cpu((2,))), NT,
     "TransformerEncoderLayer: bias must be a bool, got Tensor"),
    ("TransformerDecoderLayer-dtype-str", lambda: rt.nn.TransformerDecoderLayer(4, 2, 8, dtype="nope"),
     DT, "TransformerDecoderLayer: unsupported dtype 'nope'; expected one of"),
    ("Transformer-device-str", lambda: rt.nn.Transformer(4, 2, 1, 1, 8, device="a"), rt.DeviceError,
     "Transformer: unknown device 'a'"),
    ("MultiheadAttention-key-width",
     lambda: rt.nn.MultiheadAttention(4, 2)(_cpu((2, 4)), _cpu((2, 3)), _cpu((2, 4))), SH,
     "MultiheadAttention: expected d_model 4 as the last dimension of key, got shape (2, 3)"),
    ("MultiheadAttention-value-length",
     lambda: rt.nn.MultiheadAttention(4, 2)(_cpu((2, 4)), _cpu((2, 4)), _cpu((3, 4))), SH,
     "MultiheadAttention: value of shape (3, 4) does not match key of shape (2, 4)"),
    ("MultiheadAttention-key_padding_mask-str",
     lambda: rt.nn.MultiheadAttention(4, 2)(_cpu((2, 4)), _cpu((2, 4)), _cpu((2, 4)), key_padding_mask="a"),
     NT, "MultiheadAttention: key_padding_mask must be a Tensor, got str"),
    ("TransformerEncoderLayer-src_mask-str", lambda: rt.nn.TransformerEncoderLayer(4, 2, 8)(_cpu((2, 4)), "a"),
     NT, "TransformerEncoderLayer: src_mask must be a Tensor, got str"),
    # an int tensor of several elements where an int belongs: a TypeError from __index__, so
    # each front end's int check names itself (not item's conversion error)
    ("sum-axis-int-tensor", lambda: rt.sum(_cpu((2, 3)), rt.tensor([0, 1])), SH,
     "sum: axis must be an int, got tensor("),
    ("zeros-shape-int-tensor", lambda: rt.zeros(rt.tensor([2, 3])), SH,
     "zeros: shape must be a tuple of ints, got (tensor("),
    ("narrow-start-int-tensor", lambda: rt.narrow(_cpu((4,)), 0, rt.tensor([0, 1]), 1), NT,
     "narrow: start must be an int, got tensor("),
    ("embedding-index-range", lambda: F.embedding(rt.tensor([0, 5]), _cpu((2, 3))), rt.IndexOutOfRangeError,
     "embedding: index 5 is out of bounds for axis 0 with size 2"),
    ("BatchNorm1d-int-input", lambda: rt.nn.BatchNorm1d(3)(_cpu((2, 3), np.int64)), DT,
     "BatchNorm1d: input must be a float tensor, got int64"),
    ("conv1d-int-input", lambda: F.conv1d(_cpu((1, 2, 5), np.int64), _cpu((3, 2, 3))), DT,
     "conv1d: only float32 and float64 are supported, got int64, float32"),
    # rt.nn.init: each initialiser names itself (not init, rand or calculate_gain)
    ("kaiming_uniform_-none", lambda: rt.nn.init.kaiming_uniform_(None), AV,
     "kaiming_uniform_: expected a Parameter or Tensor, got NoneType"),
    ("uniform_-a-none", lambda: rt.nn.init.uniform_(_cpu((2, 3)), None), NT,
     "uniform_: a must be a number, got NoneType"),
    ("xavier_normal_-int", lambda: rt.nn.init.xavier_normal_(_cpu((2, 3), np.int64)), DT,
     "xavier_normal_: expected a float tensor, got int64"),
    ("xavier_uniform_-1d", lambda: rt.nn.init.xavier_uniform_(_cpu((3,))), SH,
     "xavier_uniform_: fan in and fan out need at least 2 dimensions, got shape (3,)"),
    ("kaiming_normal_-nonlinearity", lambda: rt.nn.init.kaiming_normal_(_cpu((2, 3)), nonlinearity="nope"),
     AV, "kaiming_normal_: unsupported nonlinearity 'nope'"),
    ("calculate_gain-tensor", lambda: rt.nn.init.calculate_gain(_cpu((2,))), AV,
     "calculate_gain: unsupported nonlinearity tensor("),
    # rt.linalg: a tensor where a mode string belongs is refused by name, never compared
    ("linalg.qr-mode-tensor", lambda: rt.linalg.qr(_cpu((2, 2)), _cpu((2,))), AV,
     "linalg.qr: qr received unrecognized mode 'tensor("),
    ("linalg.matrix_norm-ord-tensor", lambda: rt.linalg.matrix_norm(_cpu((2, 2)), _cpu((2,))), AV,
     "linalg.matrix_norm: Order tensor("),
    ("linalg.lstsq-driver-tensor", lambda: rt.linalg.lstsq(_cpu((2, 2)), _cpu((2, 2)), driver=_cpu((2,))),
     AV, "linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got tensor("),
    ("linalg.vector_norm-dtype-str", lambda: rt.linalg.vector_norm(_cpu((2,)), dtype="nope"), DT,
     "linalg.vector_norm: unsupported dtype 'nope'; expected one of"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in ENTRY_POINTS],
                         ids=[c[0] for c in ENTRY_POINTS])
def test_entry_points_refuse_bad_arguments_with_typed_errors(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("call, match", [
    (lambda: F.conv2d(_cpu(X4), _cpu(W4), padding=2 ** 20),
     r"conv2d: cannot allocate the float32 result of shape \(1, 3, 2097155, 2097155\) on cpu"),
    (lambda: rt.one_hot(_cpu((3,), np.int64), BIG),
     r"one_hot: cannot allocate the int64 result of shape \(3, 1099511627776\) on cpu"),
    (lambda: _cpu((2,)).expand(BIG, 2).numpy(),
     r"numpy: cannot allocate the float32 array of shape \(1099511627776, 2\) on the host"),
], ids=["conv2d", "one_hot", "numpy-of-a-huge-view"])
def test_huge_results_on_cpu_are_memory_errors(call, match):
    """Sizes a tensor may have but no machine holds: the allocation fails first (before any
    kernel is built) with a typed error naming the op."""
    with pytest.raises(rt.OutOfMemoryError, match=match):
        call()
