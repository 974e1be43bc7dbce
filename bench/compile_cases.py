"""Compiled-graph workloads for the ratio table (``python -m bench``), and the pieces
``bench/bench_compile.py`` uses for its compiled-vs-eager ratios.

Each case is (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None), zero-arg callables over
data prepared once; the runtime side is a ``graph.compile(rt.cpu())`` executable.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

try:  # PyTorch is an optional competitor, never a dependency
    import torch
    torch.set_num_threads(2)
except Exception:  # pragma: no cover - torch absent
    torch = None

CHAIN_N = 10_000_000
SOFTMAX_SIDE = 4096
MLP_BATCH, MLP_SIZES = 256, (784, 512, 512, 10)


# ----------------------------------------------------------------------------- workloads
def chain(x, y):
    """Six elementwise ops: ``relu((x * 1.5 + y) * x - 0.25) * 0.5``."""
    z = x * 1.5
    z = z + y
    z = z * x
    z = z - 0.25
    z = rt.relu(z) if isinstance(z, rt.Tensor) else np.maximum(z, np.float32(0))
    return z * 0.5


def chain_np(x, y):
    z = x * np.float32(1.5)
    z = z + y
    z = z * x
    z = z - np.float32(0.25)
    z = np.maximum(z, np.float32(0))
    return z * np.float32(0.5)


def chain_torch(x, y):
    z = x * 1.5
    z = z + y
    z = z * x
    z = z - 0.25
    z = torch.relu(z)
    return z * 0.5


def softmax_np(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    ps = []
    for fin, fout in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        w = (rng.standard_normal((fout, fin)) / np.sqrt(fin)).astype(np.float32)
        b = (rng.standard_normal(fout) * 0.1).astype(np.float32)
        ps.append((w, b))
    return ps


def mlp(x, params):
    """Linear + ReLU hidden layers, then a linear layer and a softmax."""
    import runtime.nn.functional as F
    dev = x.device
    h = x
    n = len(params)
    for i, (w, b) in enumerate(params):
        h = F.linear(h, rt.tensor(w, device=dev), rt.tensor(b, device=dev))
        if i < n - 1:
            h = rt.relu(h)
    return rt.softmax(h, axis=-1)


def mlp_np(x, params):
    h = x
    n = len(params)
    for i, (w, b) in enumerate(params):
        h = h @ w.T + b
        if i < n - 1:
            h = np.maximum(h, np.float32(0))
    return softmax_np(h)


# ----------------------------------------------------------------------------- setups
def chain_setup(n=CHAIN_N):
    """(compiled fn, runtime eager fn, numpy fn, torch fn or None, graph)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    g = rt.capture(chain, x, y)
    exe = g.compile(rt.cpu())
    tx, ty = rt.tensor(x), rt.tensor(y)
    tt = (torch.from_numpy(x), torch.from_numpy(y)) if torch else None
    return (lambda: exe(tx, ty), lambda: chain(tx, ty), lambda: chain_np(x, y),
            (lambda: chain_torch(*tt)) if torch else None, g)


def softmax_setup(side=SOFTMAX_SIDE):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((side, side)).astype(np.float32)
    g = rt.capture(lambda t: rt.softmax(t, axis=-1), x)
    exe = g.compile(rt.cpu())
    tx = rt.tensor(x)
    xt = torch.from_numpy(x) if torch else None
    return (lambda: exe(tx), lambda: rt.softmax(tx, axis=-1), lambda: softmax_np(x),
            (lambda: torch.softmax(xt, -1)) if torch else None, g)


def mlp_setup(batch=MLP_BATCH):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((batch, MLP_SIZES[0])).astype(np.float32)
    params = mlp_params()
    g = rt.capture(lambda t: mlp(t, params), x)
    exe = g.compile(rt.cpu())
    tx = rt.tensor(x)
    if torch:
        tps = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in params]
        xt = torch.from_numpy(x)

        def f_t():
            h = xt
            for i, (w, b) in enumerate(tps):
                h = torch.nn.functional.linear(h, w, b)
                if i < len(tps) - 1:
                    h = torch.relu(h)
            return torch.softmax(h, -1)
    else:
        f_t = None
    return (lambda: exe(tx), lambda: mlp(tx, params), lambda: mlp_np(x, params), f_t, g)


def cases():
    """Rows for ``python -m bench``: compiled graphs vs NumPy (and PyTorch)."""
    out = []
    for name, setup in [("6-op chain 1e7 f32", chain_setup),
                        (f"row softmax {SOFTMAX_SIDE}² f32", softmax_setup),
                        (f"MLP inference batch {MLP_BATCH}", mlp_setup)]:
        comp, _eager, f_np, f_t, _g = setup()
        out.append((f"compiled {name}", comp, f_np, f_t))
    return out
