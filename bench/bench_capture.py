"""Capture benchmarks: recording cost vs eager, bound replay vs eager (ratios, one process).

Run ``python bench/bench_capture.py`` for the two ratios (targets: recording <= 1.0x eager per
op; bound replay of a 200-op small-op graph <= 0.5x eager), or under pytest-benchmark
(``pytest bench/bench_capture.py``).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.capture_cases import recording_case, replay_case
from bench.harness import compare

RECORD_TARGET = 1.0
REPLAY_TARGET = 0.5


def ratios(rounds: int = 5, min_time: float = 0.05) -> dict:
    """{'record/eager': r1, 'bind/eager': r2, ...} measured in this process."""
    record, eager = recording_case()
    t = compare({"record": record, "eager": eager}, rounds=rounds, min_time=min_time)
    bound, eager2, np_fn, graph = replay_case()
    t2 = compare({"bind": bound, "eager": eager2, "numpy": np_fn}, rounds=rounds,
                 min_time=min_time)
    n_ops = len([o for o in graph.operations if o.op != "init"])
    return {"record/eager": t["record"] / t["eager"], "bind/eager": t2["bind"] / t2["eager"],
            "record_s": t["record"], "eager_record_s": t["eager"],
            "bind_s": t2["bind"], "eager_replay_s": t2["eager"], "numpy_replay_s": t2["numpy"],
            "replay_ops": n_ops}


def test_record_vs_eager(benchmark):
    record, _ = recording_case()
    benchmark(record)


def test_bind_replay(benchmark):
    bound, _, _, _ = replay_case()
    benchmark(bound)


def main() -> int:
    r = ratios()
    print(f"recording (55 small ops, scope incl.): {r['record_s'] * 1e6:8.1f} µs vs eager "
          f"{r['eager_record_s'] * 1e6:8.1f} µs  -> {r['record/eager']:.2f}x "
          f"(target <= {RECORD_TARGET}x)")
    print(f"bind replay ({r['replay_ops']} small ops): {r['bind_s'] * 1e6:8.1f} µs vs eager "
          f"{r['eager_replay_s'] * 1e6:8.1f} µs -> {r['bind/eager']:.2f}x "
          f"(target <= {REPLAY_TARGET}x); numpy {r['numpy_replay_s'] * 1e6:8.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
