"""Pooling workloads for the ratio table (``python -m bench --only pool``).

``cases()`` returns (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None) zero-arg callables:
``max_pool2d`` 3×3 stride 2 padding 1 on (8, 64, 56, 56) float32 (ResNet's stem pooling),
forward + backward, and ``avg_pool2d`` 2×2 stride 2 forward + backward on the same input,
against PyTorch CPU in the same process.  No NumPy column: NumPy has no pooling.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

SHAPE = (8, 64, 56, 56)


def _data(seed: int = 0):
    return np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)


def _runtime_step(pool):
    """A zero-arg forward + backward of ``pool`` on an autodiff cpu tensor."""
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor(_data(), device=ad).require_grad()

    def step():
        grads = pool(x).sum().backward()
        return x.grad(grads)
    return step


def _torch_step(name, **kw):
    try:
        import torch
    except ImportError:
        return None
    x = torch.from_numpy(_data()).requires_grad_()
    pool = getattr(torch.nn.functional, name)

    def step():
        pool(x, **kw).sum().backward()
        g, x.grad = x.grad, None
        return g
    return step


def cases():
    """Rows for ``python -m bench``."""
    mp = dict(kernel_size=3, stride=2, padding=1)
    ap = dict(kernel_size=2, stride=2)
    return [
        ("max_pool2d 3x3/2 (8,64,56,56) fwd+bwd",
         _runtime_step(lambda x: rt.max_pool2d(x, **mp)), None, _torch_step("max_pool2d", **mp)),
        ("avg_pool2d 2x2/2 (8,64,56,56) fwd+bwd",
         _runtime_step(lambda x: rt.avg_pool2d(x, **ap)), None, _torch_step("avg_pool2d", **ap)),
    ]
