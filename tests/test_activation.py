"""Activations (runtime/ops/activation.py) beyond their tests/opinfo.py rows: parameters,
gradients at the kinks and in the tails vs PyTorch, one fused kernel each, int inputs,
capture + ONNX, and the exact errors."""
import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import AD, check_grad
from oracle import ACTIVATIONS, onnx_run, torch_or_skip
from runtime.ops.catalogue import CATALOGUE
from runtime.capture.composite import runner

F = rt.nn.functional
ELEMENTWISE = list(ACTIVATIONS)
# every kink of the piecewise ops, and points either side
KINKS = np.array([-6.0, -3.0, -2.5, -1.0, -1e-3, 0.0, 1e-3, 1.0, 2.0, 3.0, 6.0, 7.0])

# (rt call, torch.nn.functional call) with non-default parameters where there are any
CASES = {
    "elu": (lambda x: rt.elu(x, alpha=0.5), lambda f, x: f.elu(x, alpha=0.5)),
    "celu": (lambda x: rt.celu(x, alpha=2.0), lambda f, x: f.celu(x, alpha=2.0)),
    "selu": (rt.selu, lambda f, x: f.selu(x)),
    "leaky_relu": (lambda x: rt.leaky_relu(x, 0.2), lambda f, x: f.leaky_relu(x, 0.2)),
    "relu6": (rt.relu6, lambda f, x: f.relu6(x)),
    "hardtanh": (lambda x: rt.hardtanh(x, -2.5, 2.0), lambda f, x: f.hardtanh(x, -2.5, 2.0)),
    "hardsigmoid": (rt.hardsigmoid, lambda f, x: f.hardsigmoid(x)),
    "hardswish": (rt.hardswish, lambda f, x: f.hardswish(x)),
    "logsigmoid": (rt.logsigmoid, lambda f, x: f.logsigmoid(x)),
    "softsign": (rt.softsign, lambda f, x: f.softsign(x)),
    "quick_gelu": (rt.quick_gelu, lambda f, x: x * f.sigmoid(1.702 * x)),   # (no torch op)
}


def _torch():
    torch = torch_or_skip()
    return torch, torch.nn.functional


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_forward_and_kink_gradients_match_torch(name):
    torch, tf = _torch()
    ours, theirs = CASES[name]
    # float64 (the rows check float32): the same fused kernel serves forward and gradient
    x = np.concatenate([KINKS, [-40.0, 40.0]])
    t = rt.tensor(x, device=AD).require_grad()
    y = ours(t)
    g = t.grad(rt.sum(y).backward()).numpy()
    tt = torch.tensor(x, requires_grad=True)
    ty = theirs(tf, tt)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-13)
    ty.sum().backward()
    # (torch computes float64 hardsigmoid gradients with a float32 1/6: rtol 1e-7)
    np.testing.assert_allclose(g, tt.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["elu", "celu", "selu", "logsigmoid", "softsign"])
def test_tail_gradients_are_finite(name):
    ours = CASES[name][0]
    x = np.array([-1e4, -800.0, -100.0, 100.0, 800.0, 1e4])   # exp(800) overflows float64
    t = rt.tensor(x, device=AD).require_grad()
    y = ours(t)
    g = t.grad(rt.sum(y).backward()).numpy()
    assert np.all(np.isfinite(g)), g
    assert np.all(np.isfinite(y.numpy())), y


def test_logsigmoid_is_stable_in_both_tails():
    y = rt.logsigmoid(rt.tensor(np.array([-200.0, 200.0, -1e-8], np.float32))).numpy()
    np.testing.assert_allclose(y, [-200.0, 0.0, np.log(0.5)], rtol=1e-6, atol=1e-6)
    assert y[1] <= 0


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_each_runs_as_one_kernel_on_cpu(name):
    x = rt.tensor(np.zeros((2, 3), np.float32))
    fn = runner(CATALOGUE[name], rt.cpu(), (x,), {})
    fn = getattr(fn, "flat_of", fn)             # an elementwise composite runs flattened
    if name in ("relu6", "hardtanh"):
        # the decomposition is the native clamp alone: one kernel, nothing to fuse
        assert fn.__name__ == "run_graph"
    else:
        assert fn.__name__ == "run_fused"


def test_softmin_runs_as_one_kernel_and_glu_as_views_and_one_kernel():
    x = rt.tensor(np.zeros((2, 4), np.float32))
    assert runner(CATALOGUE["softmin"], rt.cpu(), (x,), {"axis": 1}).__name__ == "run_fused"
    from runtime.capture.composite import record as _record
    steps = _record(CATALOGUE["glu"], (x,), {"axis": 1}).compile(rt.cpu()).steps
    assert [s[0] for s in steps] == ["op", "op", "fused"]
    assert [s[1].op for s in steps[:2]] == ["index", "index"]     # strided views, no copy


def test_softmin_and_glu_match_torch_along_each_dim(rng):
    torch, tf = _torch()
    x = rng.normal(size=(2, 4, 6)).astype(np.float32)
    for dim in (0, -1):
        np.testing.assert_allclose(rt.softmin(rt.tensor(x), dim).numpy(),
                                   tf.softmin(torch.tensor(x), dim).numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(rt.glu(rt.tensor(x), dim).numpy(),
                                   tf.glu(torch.tensor(x), dim).numpy(), rtol=1e-6, atol=1e-7)
    # PyTorch's implicit softmin dim: 0 for a 3-d input (and 1 for a 2-d one)
    np.testing.assert_allclose(rt.softmin(rt.tensor(x)).numpy(),
                               tf.softmin(torch.tensor(x), 0).numpy(), rtol=1e-6, atol=1e-7)
    assert rt.softmin(rt.tensor(x[0])).numpy().sum(axis=1) == pytest.approx([1.0] * 4)


def test_glu_gradient_along_dim_0(rng):
    check_grad(lambda t: rt.glu(t, 0), rng.normal(size=(4, 3)))


def test_int_inputs():
    i = rt.tensor(np.array([-7, -1, 0, 2, 9]))
    assert rt.relu6(i).dtype is rt.int64 and rt.relu6(i).tolist() == [0, 0, 0, 2, 6]
    assert rt.hardtanh(i, -2, 3).dtype is rt.int64 and rt.hardtanh(i, -2, 3).tolist() == [-2, -1, 0, 2, 3]
    assert rt.hardtanh(i).dtype is rt.float32          # float default bounds promote
    e = rt.elu(i)
    assert e.dtype is rt.float32
    np.testing.assert_allclose(e.numpy(), np.where([-7, -1, 0, 2, 9] > np.zeros(5), [-7, -1, 0, 2, 9],
                                                   np.expm1([-7, -1, 0, 2, 9])), rtol=1e-6)


def test_reachable_from_rt_and_functional():
    for name in ELEMENTWISE + ["softmin", "glu"]:
        assert getattr(F, name) is getattr(rt, name), name
        assert not hasattr(rt.Tensor, name), name       # not Tensor methods (nor in PyTorch)


def test_default_parameters_make_no_attrs():
    # a default call is attr-less: one composite signature and dispatch's fast path
    x = rt.tensor(np.linspace(-2, 2, 5, dtype=np.float32))
    np.testing.assert_array_equal(rt.elu(x, 1.0).numpy(), rt.elu(x).numpy())
    np.testing.assert_array_equal(rt.hardtanh(x, -1.0, 1.0).numpy(), rt.hardtanh(x).numpy())
    assert rt.leaky_relu(x, 0.01).tolist() == rt.leaky_relu(x).tolist()


def test_capture_and_onnx_round_trip(tmp_path):
    x = np.linspace(-5, 5, 24, dtype=np.float32).reshape(2, 12)

    def fn(t):
        return [rt.hardswish(t), rt.elu(t, 0.5), rt.logsigmoid(t), rt.glu(t, 1), rt.softmin(t, 1)]
    graph = rt.capture(fn, x)
    got = onnx_run(graph, tmp_path / "act.onnx", x, opset=17)
    want = [y.numpy() for y in fn(rt.tensor(x))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, exc, message", [
    (lambda x: rt.celu(x, 0.0), rt.ArgumentValueError, "celu: alpha must not be 0 (it divides x)"),
    (lambda x: rt.hardtanh(x, 2.0, 1.0), rt.ArgumentValueError,
     "hardtanh: min_val (2.0) must not exceed max_val (1.0)"),
    (lambda x: rt.glu(x, 1), rt.ShapeError,
     "glu: halving axis 1 needs an even size, got 3 (shape (2, 3))"),
    (lambda x: rt.glu(x[0, 0]), rt.ShapeError, "glu: a 0-d tensor has no axis to halve"),
    (lambda x: rt.glu(x, 1.0), rt.ArgumentTypeError, "glu: dim must be an int, got 1.0"),
    (lambda x: rt.glu(x, 2), rt.ShapeError, "glu: axis 2 is out of range for a tensor of shape (2, 3)"),
    (lambda x: rt.softmin(x, 2), rt.ShapeError,
     "softmin: axis 2 is out of range for a tensor of shape (2, 3)"),
    (lambda x: rt.softmin(x, 0, axis=1), rt.ArgumentTypeError, "softmin: got both dim= and axis="),
    (lambda x: rt.hardtanh(x > 0), rt.DTypeError,
     "hardtanh: not defined for dtype bool (cast to an int or float dtype first)"),
    (lambda x: rt.relu6(x > 0), rt.DTypeError,
     "relu6: not defined for dtype bool (cast to an int or float dtype first)"),
    (lambda x: rt.elu([1.0]), rt.ArgumentTypeError, "elu: expected a Tensor, got list"),
])
def test_errors(call, exc, message):
    x = rt.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(exc) as info:
        call(x)
    assert str(info.value) == message
