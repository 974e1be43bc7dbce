"""The bad-input matrix, generated from the op table (issue 14): every tabled op called with a
non-tensor, with operands on two devices, with shapes that do not broadcast, and with an axis
out of range raises a ``TensorRuntimeError`` whose message names the op.  Everything runs on a
capture device (recording checks every rule and compiles nothing)."""
import numpy as np
import pytest

import runtime as rt
from opinfo import all_rows

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
    with pytest.raises(rt.ShapeError, match=rf"{info.op}: axis 5 is out of range for a tensor of shape \(2, 3\)"):
        info.fn(x, axis=5)
