"""Core workloads for the ratio table: elementwise, transcendental, reduction, matmul, small ops,
allocation and start-up (start-up compares fresh interpreters).

Each case is (group, name, runtime_fn, numpy_fn, torch_fn_or_None); all are zero-arg callables
over data prepared once.  Ratios are competitor time / runtime time (> 1: the runtime is faster).
"""
from __future__ import annotations

import numpy as np

import runtime as rt

try:  # PyTorch is an optional competitor, never a dependency
    import torch
    torch.set_num_threads(2)
except Exception:  # pragma: no cover - torch absent
    torch = None


def _pair(shape, dtype=np.float32, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.1
    return a


# the groups of core_cases' rows (``python -m bench --only`` checks a name before building)
CORE_GROUPS = ("elementwise", "transcendental", "reduction", "matmul", "small op", "allocation",
               "start-up")


def core_cases(device=None, quick: bool = False, startup: bool | None = None):
    """The core groups' rows; ``startup`` (default: not ``quick``) adds the fresh-process row."""
    dev = rt.cpu() if device is None else rt.device(device)
    n = 1_000_000 if quick else 10_000_000
    side = 1024 if quick else 4096
    out = []
    a, b, c = (_pair(n, seed=s) for s in range(3))
    ta, tb, tc = (rt.tensor(x, device=dev) for x in (a, b, c))
    tt = [torch.from_numpy(x) for x in (a, b, c)] if torch else None
    out.append(("elementwise", f"a*b+c 1e{len(str(n)) - 1} f32", lambda: ta * tb + tc,
                lambda: a * b + c, (lambda: tt[0] * tt[1] + tt[2]) if torch else None))
    m = _pair((side, side), seed=4)
    row = _pair((side,), seed=5)
    tm, trow = rt.tensor(m, device=dev), rt.tensor(row, device=dev)
    tmt, trowt = (torch.from_numpy(m), torch.from_numpy(row)) if torch else (None, None)
    out.append(("elementwise", f"m+row {side}² f32", lambda: tm + trow, lambda: m + row,
               (lambda: tmt + trowt) if torch else None))
    pos = np.abs(a) + 0.1
    tpos = rt.tensor(pos, device=dev)
    tpost = torch.from_numpy(pos) if torch else None
    for name, f_rt, f_np, f_t in [
        ("exp", rt.exp, np.exp, "exp"), ("tanh", rt.tanh, np.tanh, "tanh"),
        ("log", rt.log, np.log, "log"),
        ("sigmoid", rt.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "sigmoid"),
    ]:
        src, tsrc, tsrct = (pos, tpos, tpost) if name == "log" else (a, ta, tt[0] if torch else None)
        out.append(("transcendental", f"{name} 1e{len(str(n)) - 1} f32",
                    (lambda f=f_rt, t=tsrc: f(t)), (lambda f=f_np, x=src: f(x)),
                    (lambda f=f_t, x=tsrct: getattr(torch, f)(x)) if torch else None))
    mt = torch.from_numpy(m) if torch else None
    for label, f_rt, f_np, f_t in [
        ("sum()", lambda: tm.sum(), lambda: m.sum(), lambda: mt.sum()),
        ("sum(axis=-1)", lambda: tm.sum(axis=-1), lambda: m.sum(axis=-1), lambda: mt.sum(-1)),
        ("sum(axis=0)", lambda: tm.sum(axis=0), lambda: m.sum(axis=0), lambda: mt.sum(0)),
        ("max(axis=-1)", lambda: tm.max(axis=-1), lambda: m.max(axis=-1), lambda: mt.amax(-1)),
        ("argmax(axis=-1)", lambda: tm.argmax(axis=-1), lambda: m.argmax(axis=-1), lambda: mt.argmax(-1)),
        ("softmax(axis=-1)", lambda: rt.softmax(tm), lambda: _np_softmax(m),
         lambda: torch.softmax(mt, -1)),
    ]:
        out.append(("reduction", f"{label} {side}² f32", f_rt, f_np, f_t if torch else None))
    for s in ((256, 512) if quick else (1024, 2048)):
        x, y = _pair((s, s), seed=6), _pair((s, s), seed=7)
        tx, ty = rt.tensor(x, device=dev), rt.tensor(y, device=dev)
        xt, yt = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
        out.append(("matmul", f"matmul {s}² f32", (lambda tx=tx, ty=ty: tx @ ty),
                    (lambda x=x, y=y: x @ y), (lambda xt=xt, yt=yt: xt @ yt) if torch else None))
    sa, sb = _pair(10, seed=8), _pair(10, seed=9)
    tsa, tsb = rt.tensor(sa, device=dev), rt.tensor(sb, device=dev)
    sat, sbt = (torch.from_numpy(sa), torch.from_numpy(sb)) if torch else (None, None)
    out.append(("small op", "a+b 10 elements", lambda: tsa + tsb, lambda: sa + sb,
                (lambda: sat + sbt) if torch else None))
    m8 = _pair((8, 8), seed=10)
    tm8 = rt.tensor(m8, device=dev)
    m8t = torch.from_numpy(m8) if torch else None
    out.append(("small op", "relu(a@a.T) 8×8", lambda: rt.relu(tm8 @ tm8.T),
                lambda: np.maximum(m8 @ m8.T, 0), (lambda: torch.relu(m8t @ m8t.T)) if torch else None))
    # allocation: a fresh 40 MB output (the caching allocator reuses freed blocks)
    out.append(("allocation", f"a+b fresh out 1e{len(str(n)) - 1} f32", lambda: ta + tb,
                lambda: a + b, (lambda: tt[0] + tt[1]) if torch else None))
    if (not quick) if startup is None else startup:
        out.append(("start-up", "import + first op (fresh proc)", _startup("runtime"),
                    _startup("numpy"), _startup("torch") if torch else None))
    return out


_STARTUP_SRC = {
    "runtime": "import numpy as np, runtime as rt; a = rt.tensor(np.ones(10, np.float32)); (a + a).numpy()",
    "numpy": "import numpy as np; a = np.ones(10, np.float32); a + a",
    "torch": "import torch; a = torch.ones(10); a + a",
}


def _startup(which):
    """A fresh interpreter importing ``which`` and running its first op (warm disk cache)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", _STARTUP_SRC[which]]
    return lambda: subprocess.run(cmd, env=env, check=True)


def _np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
