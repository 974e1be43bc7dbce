"""pytest-benchmark versions of the core workloads: ``pytest bench/bench_core.py``.

Each workload of ``bench.cases.core_cases`` is one test, parametrised by competitor
(runtime, numpy, torch when installed), so ``--benchmark-group-by=param:case`` puts the three
side by side.  ``python bench/bench_core.py`` prints the ratio table with the core targets
(competitor time ÷ runtime time, median of alternating rounds in this process).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytest

from bench.cases import core_cases
from bench.harness import compare

QUICK = os.environ.get("BENCH_QUICK", "1") != "0"

#: the core targets: workload prefix -> (competitor, minimum ratio competitor/runtime)
TARGETS = {
    "a*b+c": ("np", 1.5), "exp": ("np", 1.5), "tanh": ("np", 1.5), "log": ("np", 1.5),
    "sigmoid": ("np", 1.5), "sum() ": ("np", 1.5), "sum(axis=-1)": ("np", 1.5),
    "sum(axis=0)": ("np", 1.0), "max(axis=-1)": ("np", 1.0), "argmax(axis=-1)": ("np", 1.0),
    "matmul": ("np", 0.8), "a+b 10 elements": ("torch", 1 / 1.5),
}

_CASES = None


def _cases():
    global _CASES
    if _CASES is None:
        _CASES = core_cases(quick=QUICK)
    return _CASES


def _ids():
    return [f"{g}:{n}" for g, n, *_ in _cases()]


@pytest.mark.parametrize("who", ["runtime", "numpy", "torch"])
@pytest.mark.parametrize("case", range(len(_ids())), ids=_ids())
def test_core(benchmark, case, who):
    group, name, f_rt, f_np, f_t = _cases()[case]
    fn = {"runtime": f_rt, "numpy": f_np, "torch": f_t}[who]
    if fn is None:
        pytest.skip(f"no {who} version")
    benchmark.group = name
    benchmark(fn)


def main() -> int:
    rows = core_cases(quick=False)
    print(f"{'workload':<34}{'np/rt':>8}{'torch/rt':>10}   target")
    for _group, name, f_rt, f_np, f_t in rows:
        fns = {"rt": f_rt, "np": f_np}
        if f_t is not None:
            fns["torch"] = f_t
        t = compare({k: v for k, v in fns.items() if v is not None}, rounds=5)
        r_np = t["np"] / t["rt"] if "np" in t else None
        r_t = t["torch"] / t["rt"] if "torch" in t else None
        tgt = next((v for k, v in TARGETS.items() if name.startswith(k)), None)
        mark = ""
        if tgt:
            r = r_np if tgt[0] == "np" else r_t
            mark = f"{tgt[0]} ≥ {tgt[1]:.2f}: {'met' if r is not None and r >= tgt[1] else 'MISSED'}"
        print(f"{name:<34}{r_np if r_np else 0:8.2f}{r_t if r_t else 0:10.2f}   {mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
