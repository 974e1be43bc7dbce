"""Autodiff workloads for the ratio table (``python -m bench``) and ``bench/bench_autodiff.py``.

``cases()`` returns (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None) zero-arg callables:
an MLP 784-256-10 training step (forward, backward, SGD update; batch 128, float32) with a
NumPy hand-written reference and PyTorch when installed.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

F = rt.nn.functional
SIZES = (784, 256, 10)
BATCH = 128
LR = 0.05


def mlp_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    d, h, c = SIZES
    x = rng.normal(size=(BATCH, d)).astype(np.float32)
    y = rng.integers(0, c, size=BATCH).astype(np.int64)
    params = [(rng.normal(size=(h, d)) / np.sqrt(d)).astype(np.float32),
              np.zeros(h, np.float32),
              (rng.normal(size=(c, h)) / np.sqrt(h)).astype(np.float32),
              np.zeros(c, np.float32)]
    return x, y, params


def runtime_mlp_step(checkpointing: str = "none"):
    """A zero-arg training step on ``rt.autodiff(rt.cpu())``; returns (step, state)."""
    x, y, params = mlp_data()
    ad = rt.autodiff(rt.cpu(), checkpointing=checkpointing)
    xt, yt = rt.tensor(x, device=ad), rt.tensor(y)
    state = {"params": [rt.tensor(p, device=ad).require_grad() for p in params]}

    def step():
        w1, b1, w2, b2 = state["params"]
        logits = F.linear(rt.relu(F.linear(xt, w1, b1)), w2, b2)
        loss = F.cross_entropy(logits, yt)
        grads = loss.backward()
        state["params"] = [rt.from_inner(p.inner() - p.grad(grads) * LR).require_grad()
                           for p in (w1, b1, w2, b2)]
        return loss
    return step, state


def numpy_mlp_step():
    x, y, params = mlp_data()
    state = {"params": params}
    n = x.shape[0]
    rows = np.arange(n)

    def step():
        w1, b1, w2, b2 = state["params"]
        z1 = x @ w1.T + b1
        a1 = np.maximum(z1, 0)
        z2 = a1 @ w2.T + b2
        m = z2.max(axis=1, keepdims=True)
        e = np.exp(z2 - m)
        s = e.sum(axis=1, keepdims=True)
        loss = -(z2[rows, y] - m[:, 0] - np.log(s[:, 0])).mean()
        dz2 = e / s
        dz2[rows, y] -= 1
        dz2 /= n
        dw2, db2 = dz2.T @ a1, dz2.sum(axis=0)
        dz1 = (dz2 @ w2) * (z1 > 0)
        dw1, db1 = dz1.T @ x, dz1.sum(axis=0)
        state["params"] = [w1 - LR * dw1, b1 - LR * db1, w2 - LR * dw2, b2 - LR * db2]
        return loss
    return step


def torch_mlp_step():
    try:
        import torch
    except ImportError:
        return None
    x, y, params = mlp_data()
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ps = [torch.from_numpy(p.copy()).requires_grad_() for p in params]

    def step():
        w1, b1, w2, b2 = ps
        logits = torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(xt, w1, b1)), w2, b2)
        loss = torch.nn.functional.cross_entropy(logits, yt)
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= LR * p.grad
                p.grad = None
        return loss
    return step


# ---------------------------------------------------------------------------- checkpointing
def chain_loss(device, blocks: int = 20, n: int = 1024, seed: int = 0):
    """20 blocks of (matmul, then four elementwise ops) on n×n float32; returns (loss, leaves)."""
    rng = np.random.default_rng(seed)
    x = rt.tensor(rng.normal(size=(n, n)).astype(np.float32), device=device).require_grad()
    ws = [rt.tensor((rng.normal(size=(n, n)) / np.sqrt(n)).astype(np.float32), device=device)
          .require_grad() for _ in range(blocks)]
    h = x
    for w in ws:
        h = h @ w
        h = rt.tanh(h)
        h = h * 1.5
        h = h + 0.1
        h = rt.sigmoid(h)
    return rt.mean(h), [x] + ws


def chain_backward_peak(checkpointing: str, blocks: int = 20, n: int = 1024):
    """(peak bytes traced by tracemalloc over forward + backward, gradients as arrays)."""
    import gc
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    loss, leaves = chain_loss(rt.autodiff(rt.cpu(), checkpointing=checkpointing), blocks, n)
    grads = loss.backward()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, [p.grad(grads).numpy() for p in leaves[:3]]


def cases():
    """Rows for ``python -m bench``."""
    rt_step, _ = runtime_mlp_step()
    bal_step, _ = runtime_mlp_step("balanced")
    return [
        ("mlp 784-256-10 train step", rt_step, numpy_mlp_step(), torch_mlp_step()),
        ("mlp step (balanced ckpt)", bal_step, None, None),
    ]
