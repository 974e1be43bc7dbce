"""Timing helpers: median of alternating rounds, so every ratio is measured in one process."""
from __future__ import annotations

import statistics
import time


def time_call(fn, min_time: float = 0.02, max_reps: int = 10_000) -> float:
    """Seconds per call of ``fn``: the mean over enough repetitions to last ``min_time``."""
    fn()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or reps >= max_reps:
            return dt / reps
        reps = min(max_reps, max(reps * 2, int(reps * min_time / max(dt, 1e-9)) + 1))


def _synchronize():
    """Wait for kernels a first call left to the runtime's background builds (else an empty
    cache would time the stand-in kernels)."""
    import sys
    bg = sys.modules.get("jit_kernels.cpu._background")
    if bg is not None:
        bg.wait()


def compare(fns: dict, rounds: int = 7, min_time: float = 0.02) -> dict:
    """Median seconds per call for each named callable, alternating them round by round."""
    for f in fns.values():
        f()  # warm up (JIT compile, caches)
    _synchronize()
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(time_call(f, min_time))
    return {k: statistics.median(v) for k, v in samples.items()}

