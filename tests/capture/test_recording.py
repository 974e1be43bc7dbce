"""What a scope records: init values, OperationIr/TensorIr contents, plain attrs, the listing."""
import numpy as np
import pytest

import runtime as rt
from runtime.capture import OperationIr, TensorIr


def test_ops_record_catalogue_shapes_and_dtypes_without_running():
    cap = rt.CaptureDevice()
    xv = np.ones((2, 3), np.float32)
    wv = np.ones((3, 4), np.float64)
    with cap.capture_scope() as scope:
        x = rt.tensor(xv, device=cap)
        w = rt.from_numpy(wv).to(scope.device)
        y = rt.relu(x @ w)
        i = rt.argmax(y, axis=1)
        b = y > 0.5
        scope.complete(inputs=[x], outputs=[y, i, b])
    g = scope.graph
    ops = g.operations
    assert [o.op for o in ops] == ["init", "init", "matmul", "relu", "argmax", "gt"]
    mm = ops[2]
    assert mm.inputs == (TensorIr(x.id, (2, 3), rt.float32), TensorIr(w.id, (3, 4), rt.float64))
    assert mm.outputs[0].shape == (2, 4) and mm.outputs[0].dtype is rt.float64
    assert ops[3].outputs[0].id == y.id and y.shape == (2, 4) and y.dtype is rt.float64
    assert ops[4].attrs == {"axis": 1, "keepdims": False} and i.dtype is rt.int64 and i.shape == (2,)
    assert ops[5].attrs == {} and ops[5].operands() == [ops[3].outputs[0], 0.5]
    assert b.dtype is rt.bool_
    assert isinstance(ops[0], OperationIr) and ops[0].inputs == () and ops[0].attrs == {}
    assert set(g.values) == {x.id, w.id}
    np.testing.assert_array_equal(g.values[x.id], xv)
    assert g.values[w.id].dtype == np.float64
    assert g.constants.keys() == {w.id}
    assert g.inputs == [x.id] and g.outputs == [y.id, i.id, b.id]


def test_scalars_are_literal_operands_in_call_order_not_constants():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([1, 2, 3], device=cap)  # int64
        a = 2 - x
        b = x ** 2
        c = rt.where(x > 1, 1.5, x)
        d = rt.clamp(x, min=0, max=np.int64(2))
        scope.complete(inputs=[x], outputs=[a, b, c, d])
    ops = scope.graph.operations
    assert [o.op for o in ops] == ["init", "sub", "pow", "gt", "where", "clamp"]
    assert ops[1].attrs == {} and ops[1].inputs[0].id == x.id
    assert ops[1].operands() == [2, ops[1].inputs[0]] and ops[1].args == (2, ops[1].inputs[0])
    assert type(ops[1].args[0]) is int
    assert ops[2].attrs == {} and ops[2].operands() == [ops[2].inputs[0], 2]
    assert ops[4].attrs == {} and len(ops[4].inputs) == 2
    assert ops[4].operands() == [ops[3].outputs[0], 1.5, ops[4].inputs[1]]
    assert "where(%" in str(ops[4]) and ", 1.5, %" in str(ops[4])
    assert ops[5].attrs == {"min": 0, "max": 2} and type(ops[5].attrs["max"]) is int
    assert list(scope.graph.values) == [x.id]  # no constant for any scalar
    assert c.dtype is rt.float32


def test_creation_ops_and_shape_op_attrs_are_plain_values():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        z = rt.zeros(2, 3, device=cap)
        r = rt.arange(0, 6, 2, device=cap)
        e = rt.eye(3, device=cap)
        u = rt.rand(2, 2, device=cap)
        v = z[None, ..., 1:3]
        t = rt.cast(e, rt.int32)
        p = v.permute(0, 2, 1)
        scope.complete(outputs=[r, u, p, t])
    ops = scope.graph.operations
    assert [o.op for o in ops] == ["full", "arange", "eye", "rand", "index", "cast", "permute"]
    assert ops[0].attrs == {"shape": (2, 3), "dtype": "float32", "value": 0}
    assert ops[1].attrs == {"shape": (3,), "dtype": "int64", "start": 0, "step": 2}
    assert ops[3].attrs == {"shape": (2, 2), "dtype": "float32"}
    assert ops[4].attrs == {"key": (None, slice(0, 2, 1), slice(1, 3, 1))}
    assert ops[5].attrs == {"dtype": "int32"} and t.dtype is rt.int32
    assert ops[6].attrs == {"axes": (0, 2, 1)}
    assert scope.graph.values == {}  # nothing was initialized from data


def test_custom_op_records_by_name():
    double = rt.custom_op("capture_test_double", lambda a: a * 2,
                          shape=lambda p: (p[0] + (1,), p[1]), replace=True)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([[1.0, 2.0]], device=cap)
        y = double(x)
        scope.complete(inputs=[x], outputs=[y])
    op = scope.graph.operations[-1]
    assert op.op == "capture_test_double" and op.outputs[0].shape == (1, 2, 1)


def test_str_listing():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(np.ones((2, 3), np.float32), device=cap)
        p = scope.placeholder((3,))
        y = (x + p).sum(axis=0) * 2.0
        scope.complete(inputs=[p], outputs=[y])
    text = str(scope.graph)
    lines = text.splitlines()
    assert lines[0].startswith("CapturedGraph(inputs=[%") and "4 ops" in lines[0]
    assert "placeholder" in lines[1] and f"%{p.id}:float32[3]" in lines[1]
    assert any("= init()" in ln and "constant" in ln for ln in lines)
    assert any(f"= add(%{x.id}, %{p.id})" in ln for ln in lines)
    assert any("sum(" in ln and "axes=(0,)" in ln for ln in lines)
    assert any("mul(" in ln and "2.0" in ln for ln in lines)
    assert lines[-1] == f"  return %{y.id}"
    assert repr(scope.graph).startswith("<CapturedGraph: 4 ops")


def test_autodiff_device_over_capture_records_into_the_scope():
    cap = rt.CaptureDevice()
    ad = rt.autodiff(cap)
    with cap.capture_scope() as scope:
        x = rt.tensor([1.0, 2.0], device=ad).require_grad()
        y = (x * x).sum()
        assert rt.is_capture(y) and rt.is_autodiff(y)
        with pytest.raises(rt.CaptureAutodiffError, match="^Capture tensors do not support autodiff$"):
            y.backward()
        scope.complete(inputs=[x], outputs=[y])
    assert [o.op for o in scope.graph.operations] == ["init", "mul", "sum"]
