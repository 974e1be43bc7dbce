"""The runtime over cuda: devices, movement, mismatch errors, autodiff, capture replay, custom ops."""
import numpy as np
import pytest

import runtime as rt


def test_devices_and_errors(cuda_dev):
    assert str(cuda_dev) == "cuda:0"
    assert rt.device("cuda:0") == cuda_dev
    assert cuda_dev in rt.devices()
    with pytest.raises(rt.DeviceError, match="cuda:99"):
        rt.cuda(99)


def test_movement(cuda_dev):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = rt.tensor(x)
    g = t.to(cuda_dev)
    assert g.device == cuda_dev and g.to(cuda_dev) is g
    np.testing.assert_array_equal(g.numpy(), x)
    np.testing.assert_array_equal(g.T.to(rt.cpu()).numpy(), x.T)
    assert (g + 1).sum().item() == float((x + 1).sum())
    assert "cuda:0" in repr(g)
    with pytest.raises(rt.DeviceMismatchError, match="not on the same backend"):
        t + g


def test_autodiff_on_cuda_matches_cpu(cuda_dev):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 5)).astype(np.float32)
    ws = rng.standard_normal((5, 3)).astype(np.float32)
    res = {}
    for d in (rt.cpu(), cuda_dev):
        ad = rt.autodiff(d)
        x = rt.tensor(xs, device=ad).require_grad()
        w = rt.tensor(ws, device=ad).require_grad()
        y = rt.log_softmax(rt.tanh(x @ w), axis=-1)
        loss = (y * y).mean()
        grads = loss.backward()
        gx, gw = x.grad(grads), w.grad(grads)
        assert gx.device == d
        res[str(d)] = (loss.inner().item(), gx.numpy(), gw.numpy())
    c, g = res["cpu"], res["cuda:0"]
    np.testing.assert_allclose(g[0], c[0], rtol=1e-5)
    np.testing.assert_allclose(g[1], c[1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g[2], c[2], rtol=1e-4, atol=1e-6)


def test_capture_replay_on_cuda(cuda_dev):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    ex = rng.standard_normal((2, 4)).astype(np.float32)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(ex, device=scope.device)
        wt = rt.from_numpy(w).to(scope.device)
        y = rt.softmax(rt.relu(x @ wt) + 1.0, axis=-1)
        scope.complete(inputs=[x], outputs=[y])
    graph = scope.graph
    (yc,) = graph.run(ex, device=rt.cpu())
    (yg,) = graph.run(ex, device=cuda_dev)
    assert yg.device == cuda_dev
    np.testing.assert_allclose(yg.numpy(), yc.numpy(), rtol=1e-5)


def test_custom_op_on_cuda(cuda_dev):
    name = "cuda_test_square_plus_one"
    op = rt.custom_op(name, lambda a: a * a + 1, backward=lambda g, a, out: g * 2 * a, replace=True)
    x = rt.tensor(np.array([1.0, -2.0, 3.0], np.float32), device=cuda_dev)
    y = op(x)
    assert y.device == cuda_dev
    np.testing.assert_allclose(y.numpy(), [2.0, 5.0, 10.0])
