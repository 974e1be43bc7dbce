"""``python -m runtime warmup``: compile (or load from the disk cache) the common kernels.

Runs every elementwise, reduction, softmax, matmul, shape and creation op once on small
float32 and int64 inputs (both the serial and the parallel variant where the size decides),
so later processes find every kernel in Numba's on-disk cache.  Prints what it ran and the
time; a second run only loads from the cache.
"""
from __future__ import annotations

import time


def _ops(rt, dt, n):
    """(label, thunk) pairs covering the op families on inputs of ``n`` elements."""
    import numpy as np
    is_f = dt == rt.float32
    base = np.linspace(0.1, 2.0, n).astype(np.float32 if is_f else np.int64)
    a = rt.tensor(base.reshape(-1), dtype=dt)
    b = rt.tensor(base[::-1].copy(), dtype=dt)
    m = rt.reshape(a, (-1, 8)) if n % 8 == 0 else rt.reshape(a, (1, n))
    ops = []
    for name in ("add", "sub", "mul", "maximum", "minimum", "eq", "lt", "gt"):
        f = getattr(rt, name)
        ops.append((name, lambda f=f: f(a, b)))
        ops.append((name + " scalar", lambda f=f: f(a, 2)))
    ops.append(("add broadcast", lambda: m + m[0]))
    ops.append(("div", lambda: a / b))
    for name in ("neg", "abs", "relu"):
        f = getattr(rt, name)
        ops.append((name, lambda f=f: f(a)))
    if is_f:
        for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "erf", "rsqrt",
                     "reciprocal", "gelu"):
            f = getattr(rt, name)
            ops.append((name, lambda f=f: f(a)))
        ops.append(("softmax", lambda: rt.softmax(m, axis=-1)))
        ops.append(("log_softmax", lambda: rt.log_softmax(m, axis=-1)))
        ops.append(("mean", lambda: rt.mean(m, axis=-1)))
        ops.append(("var", lambda: rt.var(m, axis=0)))
        ops.append(("logsumexp", lambda: rt.logsumexp(m, axis=-1)))
    ops.append(("where", lambda: rt.where(a > b, a, b)))
    ops.append(("cast", lambda: rt.cast(a, rt.float64 if is_f else rt.float32)))
    ops.append(("clamp", lambda: rt.clamp(a, 0, 1)))
    for name in ("sum", "max", "min"):
        f = getattr(rt, name)
        ops.append((name + "()", lambda f=f: f(m)))
        ops.append((name + "(axis=-1)", lambda f=f: f(m, axis=-1)))
        ops.append((name + "(axis=0)", lambda f=f: f(m, axis=0)))
    ops.append(("argmax(axis=-1)", lambda: rt.argmax(m, axis=-1)))
    ops.append(("argmin()", lambda: rt.argmin(m)))
    sq = rt.reshape(a[:64], (8, 8)) if n >= 64 else None
    if sq is not None:
        ops.append(("matmul", lambda: sq @ sq))
        ops.append(("transpose copy", lambda: (sq.T + 0)))
    ops.append(("getitem", lambda: a[1:5] + 0))
    ops.append(("cat", lambda: rt.cat([a, b])))
    ops.append(("numpy()", lambda: a.numpy()))
    return ops


def main(argv=None) -> int:
    import runtime as rt
    t0 = time.perf_counter()
    total = 0
    for dt in (rt.float32, rt.int64):
        for n in (64, 65_536):  # serial and parallel variants
            t1 = time.perf_counter()
            failed = []
            ops = _ops(rt, dt, n)
            for label, thunk in ops:
                try:
                    thunk()
                except Exception as exc:  # report, keep warming the rest
                    failed.append(f"{label}: {type(exc).__name__}: {exc}")
            total += len(ops)
            print(f"{dt.name:8s} n={n:<6d} {len(ops):3d} ops in {time.perf_counter() - t1:6.2f} s"
                  + (f"  ({len(failed)} failed)" if failed else ""))
            for f in failed:
                print("   failed:", f)
    rt.zeros(4).numpy()
    rt.synchronize()  # the parallel variants this left to the background worker
    print(f"warmed {total} op calls in {time.perf_counter() - t0:.2f} s "
          f"(kernels are now in Numba's disk cache)")
    return 0
