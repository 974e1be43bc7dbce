"""``python -m bench [--quick] [--device cpu|cuda] [--only GROUP] [--isolate]``: the ratio table.

Every row times the runtime, NumPy and (when installed) PyTorch, and prints the median times
and the ratios competitor / runtime (> 1.0 means the runtime is faster).  By default the three
run in one process, in alternating rounds — what a user who mixes them gets, thread pools
included.  ``--isolate`` times each column of a group in a process of its own (the other
columns' data is built there but never run), so no library's idle thread pool spins on the
cores another one needs: on two cores that stall can halve a BLAS-bound row.
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

from .harness import compare

EXTRA_CASE_MODULES = ("bench.autodiff_cases", "bench.capture_cases", "bench.compile_cases",
                      "bench.conv_cases", "bench.activation_cases",
                      "bench.pool_cases", "bench.sort_cases",
                      "bench.index_cases", "bench.nn_cases", "bench.scan_cases",
                      "bench.compile_step_cases",
                      "bench.small_dtype_cases", "bench.models_cases")


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
    """The rows to time: all groups, or only ``args.only`` — checked against the group names
    before any case is built (building a module's cases allocates its data and compiles)."""
    from .cases import CORE_GROUPS, core_cases
    modules = {mod.split(".")[-1].replace("_cases", ""): mod for mod in EXTRA_CASE_MODULES}
    if args.only and args.only not in CORE_GROUPS and args.only not in modules:
        raise SystemExit(f"python -m bench: no group {args.only!r}; the groups are "
                         + ", ".join(sorted(set(CORE_GROUPS) | set(modules))))
    rows = []
    if not args.only or args.only in CORE_GROUPS:
        rows = [c for c in core_cases(args.device, quick=args.quick)]
        assert {r[0] for r in rows} <= set(CORE_GROUPS), "a core case outside CORE_GROUPS"
    for group, mod in modules.items():
        if args.only and args.only != group:
            continue
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        for name, f_rt, f_np, f_t in m.cases():
            rows.append((group, name, f_rt, f_np, f_t))
    return [r for r in rows if not args.only or r[0] == args.only]


COLUMNS = ("rt", "np", "torch")


def _time_rows(rows, args, columns=COLUMNS) -> list:
    """(group, name, seconds per column or None) for ``rows``, timing only ``columns``."""
    rounds = args.rounds or (3 if args.quick else 7)
    out = []
    for i, (group, name, *fs) in enumerate(rows):
        if not args.json:
            _progress(i, len(rows), name)
        fns = {c: f for c, f in zip(COLUMNS, fs) if f is not None and c in columns}
        t = compare(fns, rounds=rounds, min_time=0.01 if args.quick else 0.03) if fns else {}
        out.append((group, name, *(t.get(c) for c in COLUMNS)))
    if not args.json:
        _progress(len(rows), len(rows), "done")
        sys.stderr.write("\n")
    return out


def _isolated(args) -> list:
    """Each (group, column) timed by ``python -m bench --only G --column C --json`` in a fresh
    process; the rows are merged by name."""
    from .cases import CORE_GROUPS
    groups = [args.only] if args.only else list(CORE_GROUPS) + [
        m.split(".")[-1].replace("_cases", "") for m in EXTRA_CASE_MODULES]
    results: dict = {}
    order = []
    for g in groups:
        for c in COLUMNS:
            sys.stderr.write(f"\r{g}: {c:<8}{' ' * 40}")
            sys.stderr.flush()
            cmd = [sys.executable, "-m", "bench", "--only", g, "--column", c, "--json",
                   "--device", args.device] + (["--quick"] if args.quick else []) + \
                (["--rounds", str(args.rounds)] if args.rounds else [])
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"python -m bench --isolate: {' '.join(cmd[1:])} failed:\n"
                                 + r.stderr[-2000:])
            for name, t in json.loads(r.stdout.strip().splitlines()[-1]):
                if (g, name) not in results:
                    order.append((g, name))
                    results[(g, name)] = dict.fromkeys(COLUMNS)
                results[(g, name)][c] = t
    sys.stderr.write("\n")
    return [(g, n, *(results[(g, n)][c] for c in COLUMNS)) for g, n in order]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    p.add_argument("--device", default="cpu")
    p.add_argument("--only", default=None, help="run one group (elementwise, reduction, ...)")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--isolate", action="store_true",
                   help="time each column (runtime, NumPy, PyTorch) in a process of its own")
    p.add_argument("--column", choices=COLUMNS, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.device.startswith("cuda"):
        # GPU kernels run asynchronously: the cuda report synchronises every timing and gives
        # bandwidth as a fraction of peak, GFLOP/s and launch overhead next to torch/CuPy.
        from .cuda_cases import report
        return report(args.quick)
    if args.json:                       # a child of --isolate: one column, machine-readable
        rows = _time_rows(collect(args), args, (args.column,) if args.column else COLUMNS)
        col = COLUMNS.index(args.column or "rt")
        print(json.dumps([(r[1], r[2 + col]) for r in rows]))
        return 0
    results = _isolated(args) if args.isolate else _time_rows(collect(args), args)
    print("each column in its own process (--isolate)" if args.isolate else
          "one process, the columns alternate round by round (--isolate: one process each)")
    head = f"{'group':<15}{'workload':<30}{'runtime':>13}{'numpy':>13}{'torch':>13}{'np/rt':>9}{'torch/rt':>10}"
    print(head)
    print("-" * len(head))
    for group, name, r, n, t in results:
        print(f"{group:<15}{name:<30}{_fmt(r):>13}{_fmt(n):>13}{_fmt(t):>13}"
              f"{_ratio(n, r):>9}{_ratio(t, r):>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
