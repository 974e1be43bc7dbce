"""The capture rows of the device-movement table, and rt.can_move on them."""
import numpy as np
import pytest

import runtime as rt
from runtime.errors import CaptureMoveError, CaptureScopeError, CaptureValueError


def test_plain_to_capture_is_an_initialized_value():
    cap = rt.CaptureDevice()
    host = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert not rt.can_move(host, cap)
    with pytest.raises(CaptureScopeError, match="must run inside CaptureDevice.capture_scope"):
        host.to(cap)
    with cap.capture_scope() as scope:
        assert rt.can_move(host, cap) and rt.can_move(host, str(cap))
        w = host.to(scope.device)
        assert w.device is cap and rt.is_capture(w) and w.id != host.id
        np.testing.assert_array_equal(w.numpy(), host.numpy())
        y = w.sum()
        scope.complete(outputs=[y])
    g = scope.graph
    assert g.operations[0].op == "init" and g.constants.keys() == {w.id}
    np.testing.assert_array_equal(g.values[w.id], host.numpy())
    with pytest.raises(CaptureScopeError, match="already complete|must run inside"):
        host.to(cap)


def test_capture_to_plain_raises_move_error():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([1.0, 2.0], device=cap)
        y = x + 1.0
        for t in (x, y):
            assert not rt.can_move(t, rt.cpu())
            assert not rt.can_move(t, "cpu")
            with pytest.raises(CaptureMoveError) as ei:
                t.to(rt.cpu())
            assert str(ei.value) == "Cannot move a tensor from a capture device"
        scope.complete(outputs=[y])
    with pytest.raises(CaptureMoveError):
        x.to("cpu")


def test_capture_to_capture_initialized_vs_computed():
    a, b = rt.CaptureDevice(), rt.CaptureDevice()
    with a.capture_scope() as sa:
        x = rt.tensor([1.0, 2.0], device=a)
        y = rt.exp(x)
        assert rt.can_move(x, a) and x.to(a) is x and y.to(a) is y  # same device: itself
        assert not rt.can_move(x, b)  # b has no scope yet
        with pytest.raises(CaptureScopeError, match="must run inside"):
            x.to(b)
        with b.capture_scope() as sb:
            assert rt.can_move(x, b) and not rt.can_move(y, b)
            xb = x.to(b)
            assert xb.device is b and xb.id != x.id
            np.testing.assert_array_equal(xb.numpy(), [1.0, 2.0])
            with pytest.raises(CaptureValueError) as ei:
                y.to(b)
            assert str(ei.value) == f"capture tensor {y.id} has no initialized value"
            zb = xb * 2.0
            sb.complete(outputs=[zb])
        sa.complete(inputs=[x], outputs=[y])
    assert [o.op for o in sb.graph.operations] == ["init", "mul"]
    assert [o.op for o in sa.graph.operations] == ["init", "exp"]
    # An initialized value may move into another scope also after its own scope ended.
    with b.capture_scope() as sb2:
        assert rt.can_move(x, b) and not rt.can_move(y, b)
        x2 = x.to(b)
        with pytest.raises(CaptureValueError, match=f"capture tensor {y.id} has no initialized value"):
            y.to(b)
        sb2.complete(inputs=[x2], outputs=[x2])
    np.testing.assert_array_equal(sb2.graph.values[x2.id], [1.0, 2.0])


def test_capture_to_autodiff_of_another_device_raises():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([1.0], device=cap)
        target = rt.autodiff(rt.cpu())
        assert not rt.can_move(x, target)
        with pytest.raises(CaptureMoveError, match="^Cannot move a tensor from a capture device$"):
            x.to(target)
        scope.complete(outputs=[x])


def test_capture_to_autodiff_of_same_capture_device_is_a_lift():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([1.0, 2.0], device=cap)
        ad = rt.autodiff(cap)
        assert rt.can_move(x, ad)
        xa = x.to(ad)
        assert rt.is_autodiff(xa) and rt.is_capture(xa) and xa.device == ad
        assert not xa.requires_grad
        y = (xa * 3.0).sum()
        with pytest.raises(rt.CaptureAutodiffError, match="^Capture tensors do not support autodiff$"):
            y.backward()
        scope.complete(inputs=[x], outputs=[y.inner()])
    assert [o.op for o in scope.graph.operations] == ["init", "mul", "sum"]
