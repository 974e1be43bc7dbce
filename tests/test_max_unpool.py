"""``F.max_unpool2d`` / ``nn.MaxUnpool2d`` (runtime/ops/pool.py): consuming the indices of
``max_pool2d(return_indices=True)``; against a NumPy reference and PyTorch (forward, the
gradient on the autodiff device, overlapping windows whose indices repeat), capture/replay,
ONNX MaxUnpool, and the exact errors.  float64 (and one float32 ONNX run), tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from autodiff.gradcheck import AD
from oracle import needs_torch, onnx_op_types, onnx_run, torch


@pytest.fixture
def rng():
    return np.random.default_rng(5)


def ref_unpool(y, idx, out_hw):
    """Each value written at its flat index of its plane (the last write wins)."""
    n, c = y.shape[:2]
    out = np.zeros((n, c, out_hw[0] * out_hw[1]))
    for a, b in np.ndindex(n, c):
        out[a, b][idx[a, b].reshape(-1)] = y[a, b].reshape(-1)
    return out.reshape((n, c) + tuple(out_hw))


# (kernel, stride, padding, output_size): the last two overlap, so indices repeat
CASES = [(2, None, 0, None), (2, 2, 0, (7, 8)), (3, 2, 1, (7, 8)), ((3, 2), 1, 0, None)]


@pytest.mark.parametrize("k,s,p,size", CASES)
def test_forward_matches_numpy_and_torch(k, s, p, size, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    y, idx = F.max_pool2d(rt.tensor(x), k, s, p, return_indices=True)
    u = F.max_unpool2d(y, idx, k, s, p, output_size=size)
    want_hw = size or tuple(u.shape[2:])
    np.testing.assert_array_equal(u.numpy(), ref_unpool(y.numpy(), idx.numpy(), want_hw))
    if torch is not None:
        ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), ti.numpy())
        tu = torch.nn.functional.max_unpool2d(ty, ti, k, s, p, output_size=size)
        np.testing.assert_array_equal(u.numpy(), tu.numpy())


@needs_torch
@pytest.mark.parametrize("k,s,p,size", CASES[1:])
def test_gradient_matches_torch_with_repeated_indices(k, s, p, size, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, return_indices=True)
    yv = rng.standard_normal(tuple(ty.shape))
    t = rt.tensor(yv, device=AD).require_grad()
    u = F.max_unpool2d(t, rt.tensor(ti.numpy(), device=AD), k, s, p, output_size=size)
    w = rng.uniform(0.5, 1.5, size=u.shape)
    got = t.grad(rt.sum(u * rt.tensor(w, device=AD)).backward()).numpy()
    tt = torch.tensor(yv, requires_grad=True)
    (torch.nn.functional.max_unpool2d(tt, ti, k, s, p, output_size=size)
     * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(got, tt.grad.numpy())


def test_pool_unpool_round_trip_through_the_tape(rng):
    """max_pool2d -> max_unpool2d on the tape: the gradient reaches each window's maximum."""
    x = rng.standard_normal((1, 2, 4, 6))
    t = rt.tensor(x, device=AD).require_grad()
    y, idx = F.max_pool2d(t, 2, return_indices=True)
    g = t.grad(rt.sum(F.max_unpool2d(y, idx, 2)).backward()).numpy()
    np.testing.assert_array_equal(g, (ref_unpool(np.ones(y.shape), idx.numpy(), (4, 6)) > 0))


def test_layer_and_unbatched_input(rng):
    x = rng.standard_normal((3, 4, 6))
    y, idx = rt.nn.MaxPool2d(2, return_indices=True)(rt.tensor(x))
    u = rt.nn.MaxUnpool2d(2)(y, idx)
    assert u.shape == (3, 4, 6)
    np.testing.assert_array_equal(u.numpy(), ref_unpool(y.numpy()[None], idx.numpy()[None],
                                                        (4, 6))[0])
    np.testing.assert_array_equal(rt.nn.MaxUnpool2d(2)(y, idx, output_size=(3, 5, 7)).shape,
                                  (3, 5, 7))
    assert repr(rt.nn.MaxUnpool2d(3, 2)) == "MaxUnpool2d(kernel_size=3, stride=2, padding=0)"


# --------------------------------------------------------------------------- capture, ONNX
def _net(x):
    y, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    return F.max_unpool2d(rt.relu(y), idx, 3, 2, 1, output_size=(7, 8))


def test_capture_replays_and_exports_max_unpool(rng, tmp_path):
    x = rng.standard_normal((2, 3, 7, 8)).astype(np.float32)
    want = _net(rt.tensor(x)).numpy()
    graph = rt.capture(_net, x)
    assert "max_unpool2d" in [op.op for op in graph.operations]
    np.testing.assert_array_equal(graph.run(x)[0].numpy(), want)
    graph.save(tmp_path / "g.json")
    np.testing.assert_array_equal(rt.load_graph(tmp_path / "g.json").run(x)[0].numpy(), want)
    (got,) = onnx_run(graph, tmp_path / "m.onnx", x)
    np.testing.assert_array_equal(got, want)
    assert "MaxUnpool" in onnx_op_types(tmp_path / "m.onnx")


def test_onnx_refuses_integer_input(tmp_path):
    pytest.importorskip("onnx")
    from runtime.capture.onnx import OnnxExportError
    x = np.arange(4, dtype=np.int64).reshape(1, 1, 2, 2)
    idx = np.array([0, 3, 9, 14], dtype=np.int64).reshape(1, 1, 2, 2)
    graph = rt.capture(lambda t, i: F.max_unpool2d(t, i, 2), x, idx)
    np.testing.assert_array_equal(graph.run(x, idx)[0].numpy(), ref_unpool(x, idx, (4, 4)))
    with pytest.raises(OnnxExportError) as e:
        graph.to_onnx(tmp_path / "m.onnx")
    assert str(e.value) == ("graph.to_onnx: max_unpool2d has no ONNX form for int64 input "
                            "(MaxUnpool takes floats)")


# --------------------------------------------------------------------------- errors
Y = rt.zeros(1, 2, 2, 2)
I = rt.zeros(1, 2, 2, 2, dtype=rt.int64)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: F.max_unpool2d(Y, rt.zeros(1, 2, 2, 2, dtype=rt.int32), 2), rt.DTypeError,
     "max_unpool2d: indices must be int64, got int32"),
    (lambda: F.max_unpool2d(Y, rt.zeros(1, 2, 2, 3, dtype=rt.int64), 2), rt.ShapeError,
     "max_unpool2d: indices of shape (1, 2, 2, 3) must have the input's shape (1, 2, 2, 2)"),
    (lambda: F.max_unpool2d(Y, I, 2, output_size=(2, 4)), rt.ArgumentValueError,
     "max_unpool2d: invalid output_size (2, 4) (dim 0 must be between 2 and 6, exclusive)"),
    (lambda: F.max_unpool2d(Y, I, 2, output_size=(4,)), rt.ArgumentTypeError,
     "max_unpool2d: output_size must be a sequence of 2 ints (or of 4, N, C, H, W), got (4,)"),
    (lambda: F.max_unpool2d(Y, I, 2, padding=-1), rt.ArgumentValueError,
     "max_unpool2d: padding must be non-negative, got (-1, -1)"),
    (lambda: F.max_unpool2d(rt.zeros(2, 2), I, 2), rt.ShapeError,
     "max_unpool2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape (2, 2)"),
    (lambda: F.max_unpool2d(Y, rt.full((1, 2, 2, 2), 16, dtype=rt.int64), 2),
     rt.IndexOutOfRangeError,
     "max_unpool2d: index 16 is out of bounds for axis 2 with size 16 (input shapes "
     "(1, 2, 2, 2), (1, 2, 2, 2))"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value) == msg
