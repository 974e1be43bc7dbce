"""Activation and attention workloads for the ratio table (``python -m bench --only
activation``): ``silu`` on 1e7 float32 (one fused kernel) against NumPy's
``x / (1 + np.exp(-x))`` and torch, and scaled_dot_product_attention (B=8, H=8, L=256, D=64,
float32) forward + backward against torch (no NumPy reference).

``cases()`` returns (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None) zero-arg callables.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

F = rt.nn.functional
N_SILU = 10_000_000
SDPA_SHAPE = (8, 8, 256, 64)


def silu_fns(n: int = N_SILU):
    x = np.random.default_rng(0).normal(size=n).astype(np.float32)
    xt = rt.tensor(x)

    def ours():
        return rt.silu(xt)

    def numpy():
        return x / (1 + np.exp(-x))
    try:
        import torch
    except ImportError:
        return ours, numpy, None
    tx = torch.from_numpy(x)
    return ours, numpy, lambda: torch.nn.functional.silu(tx)


def sdpa_fns(shape=SDPA_SHAPE):
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    ad = rt.autodiff(rt.cpu())
    ts = [rt.tensor(a, device=ad).require_grad() for a in (q, k, v)]

    def ours():
        out = F.scaled_dot_product_attention(*ts, is_causal=True)
        return rt.sum(out).backward()
    try:
        import torch
    except ImportError:
        return ours, None
    tt = [torch.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]

    def theirs():
        for t in tt:
            t.grad = None
        torch.nn.functional.scaled_dot_product_attention(*tt, is_causal=True).sum().backward()
    return ours, theirs


def cases():
    """Rows for ``python -m bench``."""
    s_rt, s_np, s_t = silu_fns()
    a_rt, a_t = sdpa_fns()
    return [
        ("silu 1e7 float32", s_rt, s_np, s_t),
        ("sdpa 8x8x256x64 fwd+bwd", a_rt, None, a_t),
    ]
