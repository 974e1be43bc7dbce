"""``mpiexec -n 2 python -m bench.distributed_cases``: ``rt.distributed.all_reduce`` against
the same ``Allreduce`` done by mpi4py on NumPy arrays, in one job.

Each round starts at a barrier and takes the slowest rank's time; the two alternate round by
round and the medians are reported (GB/s = payload bytes / time, the "algorithm bandwidth").
Options: ``--sizes-mb 100 1 0.004`` and ``--rounds 9``.  Needs the distributed extra.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _timed(comm, fn) -> float:
    """The slowest rank's seconds for one call of ``fn``, started together."""
    from mpi4py import MPI
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    dt = np.array(time.perf_counter() - t0)
    out = np.empty_like(dt)
    comm.Allreduce(dt, out, MPI.MAX)
    return float(out)


def _case(comm, mb: float, rounds: int) -> tuple:
    """(MB, rt GB/s, mpi4py GB/s, rt / mpi4py) for one payload size."""
    import runtime as rt
    from mpi4py import MPI
    D = rt.distributed
    n = max(1, int(mb * 1e6 / 4))
    a = np.full(n, float(comm.Get_rank() + 1), np.float32)
    out = np.empty_like(a)
    t = rt.from_numpy(a)
    reps = 1 if mb >= 10 else max(1, int(10 / mb))  # >= ~10 MB per timed call

    def f_rt():
        for _ in range(reps):
            D.all_reduce(t)

    def f_np():
        for _ in range(reps):
            comm.Allreduce(a, out, MPI.SUM)

    f_rt(), f_np()
    s_rt, s_np = [], []
    for _ in range(rounds):
        s_rt.append(_timed(comm, f_rt) / reps)
        s_np.append(_timed(comm, f_np) / reps)
    assert float(D.all_reduce(t).numpy()[-1]) == float(sum(range(1, comm.Get_size() + 1)))
    m_rt, m_np = statistics.median(s_rt), statistics.median(s_np)
    return mb, n * 4 / m_rt / 1e9, n * 4 / m_np / 1e9, m_np / m_rt


def run(sizes_mb, rounds: int) -> list:
    import runtime as rt
    comm = rt.distributed.init()
    return [_case(comm, mb, rounds) for mb in sizes_mb]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mpiexec -n 2 python -m bench.distributed_cases",
                                description=__doc__.split("\n")[0])
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[100.0, 1.0, 0.004])
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args(argv)
    rows = run(args.sizes_mb, args.rounds)
    import runtime as rt
    if rt.distributed.rank() == 0:
        import llvmlite.binding as llvm
        info = rt.distributed.info()
        print(f"all_reduce (sum, float32) on {info['world_size']} ranks, {info['mpi_library']}, "
              f"cpu {llvm.get_host_cpu_name()}, median of {args.rounds} rounds")
        print(f"{'size':>10} {'rt GB/s':>9} {'mpi4py GB/s':>12} {'rt / mpi4py':>12}")
        for mb, g_rt, g_np, ratio in rows:
            print(f"{mb:>8g}MB {g_rt:9.2f} {g_np:12.2f} {ratio:11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
