"""Autodiff benchmarks: MLP training step vs PyTorch/NumPy, where the time goes, and the
peak memory of balanced checkpointing (ratios in one process, never absolute targets).

``python bench/bench_autodiff.py [--quick]`` prints:
  * MLP 784-256-10 training step (forward + backward + SGD, batch 128, float32): runtime,
    NumPy (hand-written backward) and PyTorch (when installed) times and the ratio
    runtime / torch (target <= 1.0);
  * a cProfile split of the runtime step: compiled Numba kernels, kernel-set Python
    (layout/launch wrappers), and runtime + tape Python (front end, dispatch, autodiff);
  * tracemalloc peak of forward + backward of 20 blocks of (matmul, then four elementwise
    ops) on 1024² float32 with checkpointing "none" vs "balanced" (target: balanced >= 30%
    lower), and whether the gradients are identical.
Under pytest-benchmark (``pytest bench/bench_autodiff.py``) each workload is a benchmark.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from bench.autodiff_cases import (chain_backward_peak, numpy_mlp_step,
                                  runtime_mlp_step, torch_mlp_step)
from bench.harness import time_call

TORCH_TARGET = 1.0        # runtime step time / torch step time
MEMORY_TARGET = 0.7       # balanced peak / none peak


def mlp_times(rounds: int = 9, min_time: float = 0.2) -> dict:
    """Per-step seconds (min and median over alternating rounds) for each implementation."""
    fns = {"runtime": runtime_mlp_step()[0], "numpy": numpy_mlp_step()}
    t = torch_mlp_step()
    if t is not None:
        fns["torch"] = t
    for f in fns.values():
        for _ in range(3):
            f()
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(time_call(f, min_time))
    return {k: (min(v), statistics.median(v)) for k, v in samples.items()}


def mlp_profile(steps: int = 50) -> dict:
    """Milliseconds per step split into compiled kernels / kernel-set Python / runtime+tape."""
    step, _ = runtime_mlp_step()
    for _ in range(5):
        step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())

    def in_kernels(func) -> bool:
        return "jit_kernels" in func[0]
    # time entering the kernel set from runtime code (its Python wrappers + compiled kernels)
    kernel_set = sum(ct for f, v in st.stats.items() if in_kernels(f)
                     for c, (_, _, _, ct) in v[4].items() if not in_kernels(c))
    # njit-compiled functions appear as leaf entries (no Python callees) in jit_kernels files
    compiled = sum(v[2] for f, v in st.stats.items() if in_kernels(f) and abs(v[2] - v[3]) < 1e-12)
    dispatches = sum(v[1] for f, v in st.stats.items() if f[2] == "dispatch" and "runtime" in f[0])
    top = sorted(((v[2], f"{os.path.basename(k[0])}:{k[2]}", v[0]) for k, v in st.stats.items()),
                 reverse=True)[:10]
    ms = 1e3 / steps
    return {"total_ms": total * ms, "kernel_set_ms": kernel_set * ms,
            "compiled_leaf_ms": compiled * ms,
            "runtime_tape_python_ms": (total - kernel_set) * ms,
            "ops_per_step": dispatches / steps,
            "top": [(f"{t * ms:.3f} ms", name, n // steps) for t, name, n in top]}


def memory_ratio(n: int = 1024, blocks: int = 20) -> dict:
    """tracemalloc peaks of the checkpointing chain, "none" vs "balanced"."""
    chain_backward_peak("none", 2, min(n, 64))          # warm up: compile outside the trace
    chain_backward_peak("balanced", 2, min(n, 64))
    none_peak, g_none = chain_backward_peak("none", blocks, n)
    bal_peak, g_bal = chain_backward_peak("balanced", blocks, n)
    same = all(np.array_equal(a, b) for a, b in zip(g_none, g_bal))
    return {"none_MiB": none_peak / 2**20, "balanced_MiB": bal_peak / 2**20,
            "ratio": bal_peak / none_peak, "identical_gradients": same}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds, 256² memory chain")
    args = p.parse_args(argv)
    t = mlp_times(rounds=3 if args.quick else 9, min_time=0.05 if args.quick else 0.2)
    print("MLP 784-256-10 training step, batch 128, float32 (min / median per step)")
    for k, (lo, med) in t.items():
        print(f"  {k:<8} {lo * 1e3:8.3f} ms / {med * 1e3:8.3f} ms")
    if "torch" in t:
        r_min = t["runtime"][0] / t["torch"][0]
        r_med = t["runtime"][1] / t["torch"][1]
        print(f"  runtime/torch: {r_min:.2f}x (min), {r_med:.2f}x (median); target <= {TORCH_TARGET}x")
    print(f"  runtime/numpy: {t['runtime'][0] / t['numpy'][0]:.2f}x (min)")
    prof = mlp_profile()
    print(f"Profile of one runtime step ({prof['ops_per_step']:.0f} dispatch calls, autodiff ops count twice), "
          f"under cProfile "
          f"(which inflates Python): total {prof['total_ms']:.2f} ms = kernel set "
          f"{prof['kernel_set_ms']:.2f} ms (of which njit leaf functions "
          f"{prof['compiled_leaf_ms']:.2f} ms) + runtime/tape Python "
          f"{prof['runtime_tape_python_ms']:.2f} ms (front end, dispatch, infer, autodiff, tape)")
    for ms, name, calls in prof["top"]:
        print(f"    {ms:>10}  {name} ({calls}/step)")
    m = memory_ratio(n=256 if args.quick else 1024)
    print(f"Checkpointing chain (20 x (matmul + 4 elementwise)): peak none {m['none_MiB']:.1f} MiB, "
          f"balanced {m['balanced_MiB']:.1f} MiB, ratio {m['ratio']:.2f} "
          f"(target <= {MEMORY_TARGET}); identical gradients: {m['identical_gradients']}")
    return 0


# ---------------------------------------------------------------------------- pytest-benchmark
def test_mlp_step_runtime(benchmark):
    step, _ = runtime_mlp_step()
    step()
    benchmark(step)


def test_mlp_step_runtime_balanced(benchmark):
    step, _ = runtime_mlp_step("balanced")
    step()
    benchmark(step)


def test_mlp_step_numpy(benchmark):
    benchmark(numpy_mlp_step())


def test_mlp_step_torch(benchmark):
    import pytest
    step = torch_mlp_step()
    if step is None:
        pytest.skip("PyTorch is not installed")
    benchmark(step)


def test_checkpointing_peak_memory(benchmark):
    m = benchmark.pedantic(memory_ratio, kwargs={"n": 512}, rounds=1, iterations=1)
    benchmark.extra_info.update(m)
    assert m["identical_gradients"] and m["ratio"] <= MEMORY_TARGET


if __name__ == "__main__":
    raise SystemExit(main())
