"""Scan and einsum workloads for the ratio table (``python -m bench --only scan``):

- ``cumsum`` of 1e7 float32 vs ``np.cumsum`` (and ``torch.cumsum``); target >= 1.5x NumPy
  (the two-pass blocked scan: per-chunk sums, then each chunk from its offset, both parallel).
- ``cumsum`` along the rows of 2048x2048 float32 (a prange over rows).
- ``einsum("bij,bjk->bik")`` of 64 batches of 128x128 float32 vs ``np.einsum`` (and
  ``torch.einsum``): one batched matmul.

Each case is (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None).
"""
from __future__ import annotations

import numpy as np

import runtime as rt

try:
    import torch
    torch.set_num_threads(2)
except Exception:  # pragma: no cover - torch absent
    torch = None


def cases():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, 10_000_000).astype(np.float32)
    ta = rt.tensor(a)
    t = torch.from_numpy(a) if torch else None
    m = rng.standard_normal((2048, 2048)).astype(np.float32)
    tm = rt.tensor(m)
    mt = torch.from_numpy(m) if torch else None
    x = rng.standard_normal((64, 128, 128)).astype(np.float32)
    y = rng.standard_normal((64, 128, 128)).astype(np.float32)
    tx, ty = rt.tensor(x), rt.tensor(y)
    px, py = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
    return [
        ("cumsum 1e7 f32", lambda: rt.cumsum(ta, 0), lambda: np.cumsum(a),
         (lambda: torch.cumsum(t, 0)) if torch else None),
        ("cumsum 2048² f32 rows", lambda: rt.cumsum(tm, 1), lambda: np.cumsum(m, 1),
         (lambda: torch.cumsum(mt, 1)) if torch else None),
        ("einsum bij,bjk 64x128³ f32", lambda: rt.einsum("bij,bjk->bik", tx, ty),
         lambda: np.einsum("bij,bjk->bik", x, y),
         (lambda: torch.einsum("bij,bjk->bik", px, py)) if torch else None),
    ]
