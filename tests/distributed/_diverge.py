"""Diverging ranks, run by test_divergence.py as ``mpiexec -n 2 python -m tests.distributed._diverge CASE``.

raise:   rank 1 raises (uncaught) while rank 0 enters an all_reduce: the abort hook ends both.
timeout: rank 1 skips the collective and stalls; rank 0's all_reduce times out after 1 s and
         its (uncaught) DistributedTimeoutError aborts both.
"""
import sys
import time

import runtime as rt

case = sys.argv[1]
D = rt.distributed
D.init(timeout=1.0 if case == "timeout" else 60.0)
print(f"rank {D.rank()} ready", flush=True)
if D.rank() == 1:
    if case == "raise":
        raise ValueError("boom on rank 1")
    time.sleep(600)                   # stalls: never joins the all_reduce below
else:
    D.all_reduce(rt.ones(4))
print("unreachable", flush=True)
