"""``python -m bench.cpu_time conv,nn [name filter]``: one-thread CPU-time ratios of bench rows.

For a loaded shared machine, where wall-clock ratios of 2-thread kernels mean little (an
OpenMP barrier waits for a descheduled thread): Numba and PyTorch on one thread each, every
call timed with ``time.thread_time`` (CPU time of this thread only), median of 7 alternating
rounds.  Set ``NUMBA_NUM_THREADS=1`` before anything imports Numba (this module does so when
it is unset).  Prints runtime time, torch time and torch/rt (> 1: the runtime is faster).
"""
from __future__ import annotations

import importlib
import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")


def _cpu_time(f, min_time=0.03):
    reps = 1
    while True:
        t0 = time.thread_time()
        for _ in range(reps):
            f()
        dt = time.thread_time() - t0
        if dt >= min_time:
            return dt / reps
        reps *= 2


def main(argv=None) -> int:
    import torch
    from jit_kernels import kernel_set_for
    torch.set_num_threads(1)
    argv = sys.argv[1:] if argv is None else argv
    groups = (argv[0] if argv else "conv,nn").split(",")
    only = argv[1] if len(argv) > 1 else None
    for g in groups:
        mod = importlib.import_module(f"bench.{g}_cases")
        # again after the import: case modules set torch to 2 threads for the wall-clock
        # table, and this thread's CPU time would then miss the second thread's half
        torch.set_num_threads(1)
        for name, f_rt, _, f_t in mod.cases():
            if f_t is None or (only and only not in name):
                continue
            f_rt()
            kernel_set_for("cpu").synchronize()
            f_rt()
            f_t()
            a, b = [], []
            for _ in range(7):
                a.append(_cpu_time(f_rt))
                b.append(_cpu_time(f_t))
            ra, rb = statistics.median(a), statistics.median(b)
            print(f"{name:<40} rt {ra * 1e3:9.3f} ms  torch {rb * 1e3:9.3f} ms  "
                  f"torch/rt {rb / ra:5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
