"""Autodiff over the cuda device (a GPU, or Numba's simulator with NUMBA_ENABLE_CUDASIM=1):
gradients equal those on cpu, checkpointing, and a move across inner devices."""
import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional


def _cuda():
    try:
        return rt.cuda(0)
    except rt.DeviceError as exc:
        pytest.skip(f"needs a GPU: no usable cuda device: {exc}")


def _grads(device, fn, arrays):
    xs = [rt.tensor(a, device=device).require_grad() for a in arrays]
    out = fn(*xs)
    g = rt.sum(out * 0.5 + out * out).backward()
    return out.numpy(), [x.grad(g).numpy() for x in xs], [x.grad(g).device for x in xs]


CASES = {
    "elementwise": (lambda a, b: rt.tanh(a * b) + rt.sigmoid(a) / (rt.exp(b) + 1) - rt.relu(a) ** 2,
                    [(3, 4), (4,)]),
    "reductions": (lambda a: rt.max(a, axis=1) + rt.logsumexp(a, axis=1) + rt.var(a, axis=1)
                   + rt.mean(a, axis=1) * rt.prod(a[:, :2], axis=1), [(3, 4)]),
    "softmax": (lambda a: rt.log_softmax(a, axis=0) * rt.softmax(a, axis=1), [(3, 4)]),
    "matmul": (lambda a, b: rt.matmul(a, b), [(2, 3, 4), (4, 5)]),
    "shape_index": (lambda a: rt.cat([a[1:, ::2], a.T[:2, ::2]], axis=0).reshape(-1)[::3], [(3, 4)]),
    "take_gather": (lambda a: rt.take(a, rt.tensor([0, 2, 2]), axis=1).sum()
                    + rt.gather(a, 1, rt.tensor([[1, 1], [0, 3], [2, 2]])).sum(), [(3, 4)]),
    "slice_assign_where": (lambda a, b: rt.where(a > 0, rt.slice_assign(a, (slice(0, 2),), b), a * 3),
                           [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_cpu(name):
    cuda = _cuda()
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(0.2, 1.5, size=s) * rng.choice([-1, 1], size=s) for s in shapes]

    def run(dev):
        def f(*xs):  # index tensors live on the inner device of xs
            return fn(*xs)
        with rt.default_device(dev):
            return _grads(rt.autodiff(dev), f, arrays)
    out_cpu, g_cpu, _ = run(rt.cpu())
    out_gpu, g_gpu, devs = run(cuda)
    assert all(d == cuda for d in devs)
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-10, atol=1e-12)
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_mlp_training_step_and_checkpointing_on_cuda():
    cuda = _cuda()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(32, 20)).astype(np.float32)
    y = rng.integers(0, 5, size=32)
    params = [rng.normal(size=(16, 20)).astype(np.float32) * 0.3, np.zeros(16, np.float32),
              rng.normal(size=(5, 16)).astype(np.float32) * 0.3, np.zeros(5, np.float32)]
    results = {}
    for name, dev in (("cpu", rt.autodiff(rt.cpu())), ("cuda", rt.autodiff(cuda)),
                      ("cuda_bal", rt.autodiff(cuda, checkpointing="balanced"))):
        ps = [rt.tensor(p, device=dev).require_grad() for p in params]
        logits = F.linear(rt.gelu(F.linear(rt.tensor(x, device=dev), ps[0], ps[1])), ps[2], ps[3])
        loss = F.cross_entropy(logits, rt.tensor(y, device=dev.inner))
        g = loss.backward()
        results[name] = [loss.numpy()] + [p.grad(g).numpy() for p in ps]
    for a, b, c in zip(results["cpu"], results["cuda"], results["cuda_bal"]):
        np.testing.assert_allclose(b, a, rtol=2e-4, atol=2e-5)
        np.testing.assert_array_equal(c, b)


def test_move_between_autodiff_cpu_and_autodiff_cuda():
    cuda = _cuda()
    x = rt.tensor([1.0, 2.0, 3.0], dtype=rt.float64, device=rt.autodiff(rt.cpu())).require_grad()
    y = (x * 2).to(rt.autodiff(cuda))
    assert y.device == rt.autodiff(cuda) and y.requires_grad
    g = rt.sum(y * y).backward()
    assert x.grad(g).device == rt.cpu()
    np.testing.assert_allclose(x.grad(g).numpy(), [8.0, 16.0, 24.0])
    with pytest.raises(rt.AutodiffMoveError):
        y.to(cuda)
