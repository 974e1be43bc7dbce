"""Training and inference workloads for the ratio table (``python -m bench --only nn``).

- the demo's CNN (``runtime.demo.DigitsCNN``: conv-relu-pool ×2, linear) training step on a
  batch of 128 8×8 digits: forward, cross entropy, backward, Adam step — against the same
  model and optimiser in PyTorch (eager, ``foreach=False``);
- its inference on a batch of 256, eager and compiled (``graph.compile``), each against
  PyTorch eager (both runtime rows take the same input tensor, made once);
- one Adam update of a 10M-element float32 parameter (the optimiser's fused update kernel on a
  given gradient) against ``torch.optim.Adam(foreach=True)``'s ``step()`` with ``.grad`` set.

No NumPy column.  Run in one process (the ratios of the table are same-process ratios).
"""
from __future__ import annotations

import numpy as np

import runtime as rt
import runtime.nn.functional as F


def _batch(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 1, 8, 8), dtype=np.float32), rng.integers(0, 10, n)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _torch_cnn(torch, model):
    tnn = torch.nn
    m = tnn.Sequential(tnn.Conv2d(1, 16, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                       tnn.Conv2d(16, 32, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                       tnn.Flatten(), tnn.Linear(128, 10))
    sd = model.state_dict()
    names = ["features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias",
             "classifier.weight", "classifier.bias"]
    with torch.no_grad():
        for p, k in zip(m.parameters(), names):
            p.copy_(torch.from_numpy(sd[k].numpy()))
    return m


def _runtime_train_step():
    from runtime.demo import DigitsCNN
    ad = rt.autodiff(rt.cpu())
    rt.manual_seed(0)
    model = DigitsCNN().to(ad)
    opt = rt.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _batch(128)
    xt, yt = rt.tensor(x).to(ad), rt.tensor(y).to(ad)

    def step():
        opt.step(F.cross_entropy(model(xt), yt).backward())
    return step


def _torch_train_step():
    torch = _torch()
    if torch is None:
        return None
    from runtime.demo import DigitsCNN
    m = _torch_cnn(torch, DigitsCNN())
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, foreach=False)
    x, y = _batch(128)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(tx), ty).backward()
        opt.step()
    return step


def _inference(compiled):
    from runtime.demo import DigitsCNN
    rt.manual_seed(0)
    model = DigitsCNN().eval()
    x, _ = _batch(256, seed=1)
    xt = rt.tensor(x)           # both rows take the same input tensor (no host upload timed)
    if not compiled:
        return lambda: model(xt)
    exe = rt.capture(lambda t: _on(model, t.device)(t), x).compile(rt.cpu())
    return lambda: exe(xt)


def _on(model, device):
    """A copy of ``model`` on ``device`` (a capture device: its parameters become constants)."""
    import copy
    return copy.deepcopy(model).to(device)


def _torch_inference():
    torch = _torch()
    if torch is None:
        return None
    from runtime.demo import DigitsCNN
    rt.manual_seed(0)
    m = _torch_cnn(torch, DigitsCNN()).eval()
    x = torch.from_numpy(_batch(256, seed=1)[0])

    def run():
        with torch.no_grad():
            return m(x)
    return run


N_ADAM = 10_000_000


def _runtime_adam():
    p = rt.nn.Parameter(rt.randn(N_ADAM))
    g = rt.randn(N_ADAM)
    opt = rt.optim.Adam([p], lr=1e-3)
    group, state = opt.param_groups[0], {}

    def step():
        p.value = opt._update(p.value, g, state, group)
    return step


def _torch_adam():
    torch = _torch()
    if torch is None:
        return None
    p = torch.nn.Parameter(torch.randn(N_ADAM))
    p.grad = torch.randn(N_ADAM)
    opt = torch.optim.Adam([p], lr=1e-3, foreach=True)
    return opt.step


def cases():
    """Rows for ``python -m bench``."""
    return [
        ("cnn train step (demo model) b128", _runtime_train_step(), None, _torch_train_step()),
        ("cnn eager inference b256", _inference(False), None, _torch_inference()),
        ("cnn compiled inference b256", _inference(True), None, _torch_inference()),
        ("adam update 10M f32", _runtime_adam(), None, _torch_adam()),
    ]
