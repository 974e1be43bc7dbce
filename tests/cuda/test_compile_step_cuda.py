"""``rt.compile`` of a training step on the cuda kernel set (tiny under the simulator): the
compiled steps give the eager cuda steps' losses and parameters."""
import numpy as np

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F

def _run(dev, compiled, big):
    n, i, h = (256, 64, 128) if big else (4, 3, 5)
    data = np.random.default_rng(4)
    x = data.standard_normal((n, i)).astype(np.float32)
    y = data.integers(0, 2, n)
    ad = rt.autodiff(dev)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, 2)).to(ad)
    for p in model.parameters():
        p.value = rt.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.3).to(ad)
    opt = rt.optim.Adam(model.parameters(), lr=1e-2)

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    fn = rt.compile(step) if compiled else step
    xb, yb = rt.tensor(x).to(dev).to(ad), rt.tensor(y).to(dev).to(ad)
    losses = [fn(xb, yb).numpy() for _ in range(3)]
    return losses, [p.value.numpy() for p in model.parameters()]


def test_compiled_step_matches_eager_on_cuda(cuda_dev, big):
    want = _run(cuda_dev, False, big)
    got = _run(cuda_dev, True, big)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
