"""Matmul benchmarks: the cpu kernel set's packed gemm vs NumPy (OpenBLAS) and PyTorch.

Targets: float32 1024² and 2048² at >= 0.8x NumPy's speed and >= 1.0x PyTorch's.
``python bench/bench_matmul.py [--rounds N] [--repeat R]`` prints GFLOP/s and ratios, each the
median of alternating rounds in one process; ``--repeat`` runs the whole comparison R times and
reports the range (on cores shared with other processes single figures wander).
Under pytest-benchmark (``pytest bench/bench_matmul.py``) each case is a separate benchmark.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import pytest

from bench.harness import compare
from jit_kernels.cpu import matmul as mm

try:  # PyTorch is an optional competitor
    import torch
    torch.set_num_threads(2)
except Exception:  # pragma: no cover
    torch = None

NUMPY_TARGET = 0.8
TORCH_TARGET = 1.0


def _data(n, dtype=np.float32):
    rng = np.random.default_rng(n)
    return (rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype))


def case(n, dtype=np.float32):
    """{'ours': fn, 'numpy': fn, 'torch': fn?} for an n x n @ n x n product."""
    x, y = _data(n, dtype)
    x3, y3 = x[None], y[None]
    fns = {"ours": lambda: mm.matmul(x3, y3), "numpy": lambda: x @ y}
    if torch is not None:
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: xt @ yt
    return fns


def ratios(sizes=(1024, 2048), rounds: int = 7, min_time: float = 0.2) -> dict:
    res = {}
    for n in sizes:
        t = compare(case(n), rounds=rounds, min_time=min_time)
        flop = 2.0 * n ** 3
        row = {f"{k}_gflops": flop / v / 1e9 for k, v in t.items()}
        row["vs_numpy"] = t["numpy"] / t["ours"]
        if "torch" in t:
            row["vs_torch"] = t["torch"] / t["ours"]
        res[n] = row
    return res


@pytest.mark.parametrize("impl", ["ours", "numpy", "torch"])
@pytest.mark.parametrize("n", [1024, 2048])
def test_matmul_f32(benchmark, n, impl):
    fns = case(n)
    if impl not in fns:
        pytest.skip("torch not installed")
    benchmark.extra_info["gflop"] = 2.0 * n ** 3 / 1e9
    benchmark(fns[impl])


@pytest.mark.parametrize("n", [8, 64, 256])
def test_matmul_small(benchmark, n):
    x, y = _data(n)
    benchmark(mm.matmul, x[None], y[None])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048])
    args = ap.parse_args()
    allr = []
    for r in range(args.repeat):
        res = ratios(tuple(args.sizes), rounds=args.rounds)
        allr.append(res)
        for n, row in res.items():
            s = (f"[{r}] matmul {n}² f32: ours {row['ours_gflops']:6.1f} GFLOP/s, numpy "
                 f"{row['numpy_gflops']:6.1f} -> {row['vs_numpy']:.2f}x (target >= {NUMPY_TARGET})")
            if "vs_torch" in row:
                s += (f", torch {row['torch_gflops']:6.1f} -> {row['vs_torch']:.2f}x "
                      f"(target >= {TORCH_TARGET})")
            print(s, flush=True)
    if args.repeat > 1:
        for n in args.sizes:
            for key in ("vs_numpy", "vs_torch"):
                v = [res[n][key] for res in allr if key in res[n]]
                if v:
                    print(f"matmul {n}² {key}: {min(v):.2f}-{max(v):.2f} over {len(v)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
