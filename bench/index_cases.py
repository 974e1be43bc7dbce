"""Indexing workloads for the ratio table (``python -m bench``): a boolean-mask read
``t[mask]`` on 1e7 float32 against NumPy, and ``pad`` in reflect mode of an (8, 64, 56, 56)
float32 activation against PyTorch (NumPy's ``np.pad(mode="reflect")`` too).

Each case is (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None).
"""
from __future__ import annotations

import numpy as np

import runtime as rt

try:  # PyTorch is an optional competitor
    import torch
    torch.set_num_threads(2)
except Exception:  # pragma: no cover - torch absent
    torch = None


def cases(quick: bool = False):
    rng = np.random.default_rng(0)
    n = 1_000_000 if quick else 10_000_000
    a = rng.standard_normal(n).astype(np.float32)
    t = rt.tensor(a)
    mask, tmask = a > 0, t > 0
    tt = torch.from_numpy(a) if torch else None
    ttm = tt > 0 if torch else None
    out = [(f"t[mask] 1e{len(str(n)) - 1} f32", lambda: t[tmask], lambda: a[mask],
            (lambda: tt[ttm]) if torch else None)]
    shape = (2, 64, 56, 56) if quick else (8, 64, 56, 56)
    x = rng.standard_normal(shape).astype(np.float32)
    tx = rt.tensor(x)
    xt = torch.from_numpy(x) if torch else None
    out.append((f"pad reflect {shape} f32", lambda: rt.pad(tx, (1, 1, 1, 1), mode="reflect"),
                lambda: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect"),
                (lambda: torch.nn.functional.pad(xt, (1, 1, 1, 1), mode="reflect"))
                if torch else None))
    return out
