"""Sorting workloads for the ratio table (``python -m bench --only sort``), with their targets:

- ``argsort`` of 1e6 float32 vs ``np.argsort`` (and ``torch.argsort``); target >= 1.0x.
- ``sort`` of 1e6 float32 (values *and* indices) vs NumPy's ``np.argsort`` + ``take`` (the same
  outputs) and ``torch.sort``; target >= 1.0x.  ``sort values only`` puts the same runtime call
  next to ``np.sort``, which computes no indices.
- ``topk(k=10)`` over the rows of 4096x4096 float32 vs ``torch.topk`` (NumPy: ``argpartition``
  + a sort of the k); target >= 1.0x.

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


def _np_topk(m, k):
    part = np.argpartition(-m, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(m, part, 1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, 1), np.take_along_axis(part, order, 1)


def cases():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1_000_000).astype(np.float32)
    ta = rt.tensor(a)
    t = torch.from_numpy(a) if torch else None
    m = rng.standard_normal((4096, 4096)).astype(np.float32)
    tm = rt.tensor(m)
    mt = torch.from_numpy(m) if torch else None

    def np_sort_both():
        i = np.argsort(a, kind="stable")
        return a[i], i

    return [
        ("argsort 1e6 f32", lambda: rt.argsort(ta), lambda: np.argsort(a),
         (lambda: torch.argsort(t)) if torch else None),
        ("sort 1e6 f32 (values+idx)", lambda: rt.sort(ta), np_sort_both,
         (lambda: torch.sort(t)) if torch else None),
        ("sort values only vs np.sort", lambda: rt.sort(ta), lambda: np.sort(a), None),
        ("topk k=10 4096² f32 rows", lambda: rt.topk(tm, 10), lambda: _np_topk(m, 10),
         (lambda: torch.topk(mt, 10)) if torch else None),
    ]
