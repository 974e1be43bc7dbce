"""``python -m bench [--quick] [--device cpu|cuda] [--only GROUP]``: the ratio table.

Every row times the runtime, NumPy and (when installed) PyTorch in the same process, in
alternating rounds, and prints the median times and the ratios competitor / runtime
(> 1.0 means the runtime is faster).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .harness import compare

EXTRA_CASE_MODULES = ("bench.autodiff_cases", "bench.capture_cases", "bench.compile_cases",
                      "bench.conv_cases", "bench.activation_cases",
                      "bench.pool_cases", "bench.sort_cases",
                      "bench.index_cases", "bench.nn_cases", "bench.small_dtype_cases")


def _progress(i, n, label):
    width = 30
    done = int(width * i / n)
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label[:40]:<40}")
    sys.stderr.flush()


def _fmt(t):
    if t is None:
        return "-"
    return f"{t * 1e3:9.3f} ms" if t >= 1e-4 else f"{t * 1e6:9.2f} µs"


def _ratio(other, ours):
    return f"{other / ours:6.2f}×" if other is not None and ours else "     -"


def collect(args):
    from .cases import core_cases
    rows = [c for c in core_cases(args.device, quick=args.quick)]
    for mod in EXTRA_CASE_MODULES:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        for name, f_rt, f_np, f_t in m.cases():
            rows.append((mod.split(".")[-1].replace("_cases", ""), name, f_rt, f_np, f_t))
    if args.only:
        groups = sorted({r[0] for r in rows})
        rows = [r for r in rows if r[0] == args.only]
        if not rows:
            raise SystemExit(f"python -m bench: no group {args.only!r}; the groups are "
                             + ", ".join(groups))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    p.add_argument("--device", default="cpu")
    p.add_argument("--only", default=None, help="run one group (elementwise, reduction, ...)")
    p.add_argument("--rounds", type=int, default=None)
    args = p.parse_args(argv)
    if args.device.startswith("cuda"):
        # GPU kernels run asynchronously: the cuda report synchronises every timing and gives
        # bandwidth as a fraction of peak, GFLOP/s and launch overhead next to torch/CuPy.
        from .cuda_cases import report
        return report(args.quick)
    rounds = args.rounds or (3 if args.quick else 7)
    rows = collect(args)
    results = []
    for i, (group, name, f_rt, f_np, f_t) in enumerate(rows):
        _progress(i, len(rows), name)
        fns = {"rt": f_rt}
        if f_np is not None:
            fns["np"] = f_np
        if f_t is not None:
            fns["torch"] = f_t
        t = compare(fns, rounds=rounds, min_time=0.01 if args.quick else 0.03)
        results.append((group, name, t.get("rt"), t.get("np"), t.get("torch")))
    _progress(len(rows), len(rows), "done")
    sys.stderr.write("\n")
    head = f"{'group':<15}{'workload':<30}{'runtime':>13}{'numpy':>13}{'torch':>13}{'np/rt':>9}{'torch/rt':>10}"
    print(head)
    print("-" * len(head))
    for group, name, r, n, t in results:
        print(f"{group:<15}{name:<30}{_fmt(r):>13}{_fmt(n):>13}{_fmt(t):>13}"
              f"{_ratio(n, r):>9}{_ratio(t, r):>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
