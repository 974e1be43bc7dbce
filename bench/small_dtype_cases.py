"""Small-dtype workloads for the ratio table (``python -m bench --only small_dtype``).

``cases()`` returns (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None) zero-arg callables:
float32 -> float16/bfloat16 casts, a float16 ``a*b+c``, a float16 row sum and a 512² float16
matmul (each computed in float32 and rounded, ``runtime/lowprec.py``), and an int8 add, against
NumPy's float16/int8 arithmetic and PyTorch CPU in the same process.  NumPy has no bfloat16.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

N = 1 << 20
M = 512


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def cases():
    """Rows for ``python -m bench``."""
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal(N).astype(np.float32)
    a16, b16, c16 = (rng.standard_normal(N).astype(np.float16) for _ in range(3))
    m16 = rng.standard_normal((M, M)).astype(np.float16)
    i8 = rng.integers(-100, 100, N).astype(np.int8)
    rx = rt.tensor(x32)
    ra, rb, rc = rt.tensor(a16), rt.tensor(b16), rt.tensor(c16)
    rm = rt.tensor(m16)
    ri = rt.tensor(i8)
    rows2d = rt.tensor(a16.reshape(1024, -1))
    torch = _torch()
    t = None
    if torch is not None:
        tx, ta, tb, tc = (torch.from_numpy(v) for v in (x32, a16, b16, c16))
        tm, ti = torch.from_numpy(m16), torch.from_numpy(i8)
        trows = ta.reshape(1024, -1)
        t = {
            "f16": lambda: tx.to(torch.float16), "bf16": lambda: tx.to(torch.bfloat16),
            "fma": lambda: ta * tb + tc, "sum": lambda: trows.sum(dim=1),
            "mm": lambda: tm @ tm, "i8": lambda: ti + ti,
        }
    t = t or {}
    return [
        ("f32->f16 cast 1M", lambda: rx.half(), lambda: x32.astype(np.float16), t.get("f16")),
        ("f32->bf16 cast 1M", lambda: rx.bfloat16(), None, t.get("bf16")),
        ("f16 a*b+c 1M", lambda: ra * rb + rc, lambda: a16 * b16 + c16, t.get("fma")),
        ("f16 sum(axis=1) 1024x1024", lambda: rows2d.sum(axis=1),
         lambda: a16.reshape(1024, -1).sum(axis=1), t.get("sum")),
        (f"f16 matmul {M}x{M}", lambda: rm @ rm, lambda: m16 @ m16, t.get("mm")),
        ("int8 add 1M", lambda: ri + ri, lambda: i8 + i8, t.get("i8")),
    ]
