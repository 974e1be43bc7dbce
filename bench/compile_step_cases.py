"""Whole training steps under ``rt.compile`` (``python -m bench --only compile_step``): forward,
cross entropy, backward and the optimiser update as one compiled graph, against the same step
eager in the runtime and in PyTorch (eager, ``foreach=False``), batch 128:

- the demo's CNN (``runtime.demo.DigitsCNN``) with Adam;
- an MLP 784-256-10 with Adam and with SGD.

Each runtime row says in its name whether it is the compiled or the eager step; the ratio
column is PyTorch's time over the row's.  The first call of a compiled step (tracing and
building its kernels) is made before timing.  No NumPy column.
"""
from __future__ import annotations

import numpy as np

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F

BATCH = 128


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _data(kind):
    rng = np.random.default_rng(0)
    x = (rng.random((BATCH, 1, 8, 8), dtype=np.float32) if kind == "cnn"
         else rng.random((BATCH, 784), dtype=np.float32))
    return x, rng.integers(0, 10, BATCH)


def _model(kind):
    rt.manual_seed(0)
    if kind == "cnn":
        from runtime.demo import DigitsCNN
        return DigitsCNN()
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def _runtime_step(kind, opt_name, compiled):
    ad = rt.autodiff(rt.cpu())
    model = _model(kind).to(ad)
    opt = (rt.optim.Adam(model.parameters(), lr=1e-3) if opt_name == "adam"
           else rt.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9))
    x, y = _data(kind)
    xt, yt = rt.tensor(x).to(ad), rt.tensor(y).to(ad)

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    fn = rt.compile(step) if compiled else step
    fn(xt, yt)
    fn(xt, yt)                 # (the first two calls trace: before and after the first step)
    return lambda: fn(xt, yt)


def _torch_step(kind, opt_name):
    torch = _torch()
    if torch is None:
        return None
    tnn = torch.nn
    if kind == "cnn":
        m = tnn.Sequential(tnn.Conv2d(1, 16, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                           tnn.Conv2d(16, 32, 3, padding=1), tnn.ReLU(), tnn.MaxPool2d(2),
                           tnn.Flatten(), tnn.Linear(128, 10))
    else:
        m = tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 10))
    opt = (torch.optim.Adam(m.parameters(), lr=1e-3, foreach=False) if opt_name == "adam"
           else torch.optim.SGD(m.parameters(), lr=1e-2, momentum=0.9, foreach=False))
    x, y = _data(kind)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(tx), ty).backward()
        opt.step()
    return step


def cases():
    """Rows for ``python -m bench``."""
    rows = []
    for kind, opt_name, label in (("cnn", "adam", "cnn (demo model) adam step b128"),
                                  ("mlp", "adam", "mlp 784-256-10 adam step b128"),
                                  ("mlp", "sgd", "mlp 784-256-10 sgd step b128")):
        torch_fn = _torch_step(kind, opt_name)
        rows.append((f"{label}, compiled", _runtime_step(kind, opt_name, True), None, torch_fn))
        rows.append((f"{label}, eager", _runtime_step(kind, opt_name, False), None, torch_fn))
    return rows
