"""Compiled-graph benchmarks: ratios measured in one process.

Targets: a 6-op elementwise chain on 1e7 float32 compiled >= 4x NumPy eager and >= 2.5x the
runtime's own eager; row softmax 4096x4096 float32 >= 2x NumPy; MLP inference (batch 256)
compiled >= 1.2x eager.  ``python bench/bench_compile.py`` prints every ratio;
``pytest bench/bench_compile.py`` runs the pytest-benchmark timings.

Importing PyTorch into the process (its OpenMP pool) slows Numba's parallel kernels, most of
all on a machine with few cores; for clean runtime/NumPy ratios run with torch absent
(``python -c 'import sys; sys.modules["torch"] = None; ...'``) — see docs/compile.md.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import compile_cases as C
from bench.harness import compare

TARGETS = {"chain": (4.0, 2.5), "softmax": (2.0, None), "mlp": (None, 1.2)}
SETUPS = {"chain": C.chain_setup, "softmax": C.softmax_setup, "mlp": C.mlp_setup}


def ratios(rounds: int = 5, min_time: float = 0.1) -> dict:
    """{case: {'compiled': s, 'eager': s, 'numpy': s, 'torch': s?, 'numpy/compiled': r, ...}}."""
    out = {}
    for name, setup in SETUPS.items():
        comp, eager, f_np, f_t, _g = setup()
        fns = {"compiled": comp, "eager": eager, "numpy": f_np}
        t = compare(fns, rounds=rounds, min_time=min_time)
        ratios_ = {f"{k}/compiled": t[k] / t["compiled"] for k in fns if k != "compiled"}
        if f_t is not None:
            # PyTorch's own OpenMP pool spins after each torch op and slows every Numba
            # parallel kernel timed right after it, so torch is timed
            # in its own alternating comparison against the compiled graph.
            t2 = compare({"compiled": comp, "torch": f_t}, rounds=rounds, min_time=min_time)
            t["torch"] = t2["torch"]
            ratios_["torch/compiled"] = t2["torch"] / t2["compiled"]
        t.update(ratios_)
        out[name] = t
    return out


def test_chain_compiled(benchmark):
    benchmark(C.chain_setup()[0])


def test_softmax_compiled(benchmark):
    benchmark(C.softmax_setup()[0])


def test_mlp_compiled(benchmark):
    benchmark(C.mlp_setup()[0])


def main() -> int:
    r = ratios()
    for name, t in r.items():
        tn, te = TARGETS[name]
        parts = [f"{k} {v * 1e3:8.2f} ms" for k, v in t.items() if "/" not in k]
        rs = [f"{k} {v:5.2f}x" for k, v in t.items() if "/" in k]
        tgt = ", ".join(x for x in [f"numpy >= {tn}x" if tn else "", f"eager >= {te}x" if te else ""] if x)
        print(f"{name:8s} {' '.join(parts)} | {' '.join(rs)} (target {tgt})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
