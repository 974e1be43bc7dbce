"""The nightly fuzz driver: many programs or file mutations, in child processes.

    python -m tests.fuzz_nightly programs --n 10000 --shards 20 --log fuzz-programs.log
    python -m tests.fuzz_nightly files --n 5000 --shards 10 --log fuzz-files.log

``programs`` runs the differential checks of tests/test_fuzz_programs.py (``check_program``:
eager against NumPy float64, replay, save+load, compile; ``check_gradients``: autodiff against
central finite differences, on every other example) over hypothesis-drawn programs; ``files``
runs the mutations of tests/fuzz_graph_files.py.  The work is split into shards, each one child
process (hypothesis seed / mutation seed = ``--seed`` + shard number), so a segfault or abort is
recorded as a crash of that shard (its return code) instead of ending the run; a child appends a
progress line to ``--log`` every ``--every`` items and a summary when it ends; the parent adds the
totals.  A divergence (a failed check, or a ``TensorRuntimeError`` where none is expected) is
logged with its case and the run goes on.

``--compile-every K`` (programs) compiles one program in K: every compile of a new program
builds a fresh Numba kernel (seconds each, where the rest of a program costs far less on a
warm kernel cache), so a 10,000-program night checks ``graph.compile`` on a sample; CI's
test_random_programs_agree_everywhere compiles every program it draws.

Run it at low priority next to other work:
``nice -n 19 env NUMBA_NUM_THREADS=1 python -m tests.fuzz_nightly ...``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
for p in (TESTS, ROOT):
    if p not in sys.path:
        sys.path.insert(0, p)


def _log(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def _programs_shard(args) -> dict:
    from hypothesis import HealthCheck, given, seed, settings, strategies as st

    import test_fuzz_programs as T
    import runtime as rt

    c = {"programs": 0, "values": 0, "grads": 0, "compiled": 0, "divergences": 0, "errors": 0,
         "examples": 0}
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="fuzz-programs-")

    def report(final=False):
        _log(args.log, f"{time.strftime('%H:%M:%S')} programs shard {args.shard} "
                       f"{'done' if final else 'progress'}: {json.dumps(c)} "
                       f"({time.time() - t0:.0f} s)")

    @seed(args.seed)
    @settings(max_examples=args.n, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(case=T.programs(), smooth=T.programs(smooth=True), dtype=st.sampled_from([T.F32, T.F64]))
    def one(case, smooth, dtype):
        c["examples"] += 1
        grads = c["examples"] % 2 == 0
        what = "grads" if grads else "values"
        try:
            if grads:
                ran = T.check_gradients(smooth)
            else:
                do_compile = args.compile_every > 0 and c["values"] % args.compile_every == 0
                ran = T.check_program(case, dtype, tmp, compile=do_compile)
                c["compiled"] += bool(ran and do_compile)
        except (AssertionError, rt.TensorRuntimeError):
            c["divergences"] += 1
            _log(args.log, f"DIVERGENCE shard {args.shard} ({what}): "
                           f"{smooth if grads else (case, dtype)!r}\n{traceback.format_exc()}"[:20000])
            ran = True
        except Exception:                             # a raw error: a bug of its own kind
            c["errors"] += 1
            _log(args.log, f"ERROR shard {args.shard} ({what}): "
                           f"{smooth if grads else (case, dtype)!r}\n{traceback.format_exc()}"[:20000])
            ran = True
        if ran:
            c["programs"] += 1
            c[what] += 1
            if c["programs"] % args.every == 0:
                report()

    one()
    report(final=True)
    return c


def _files_shard(args) -> dict:
    import fuzz_graph_files as F

    t0 = time.time()

    def progress(c, final=False):
        _log(args.log, f"{time.strftime('%H:%M:%S')} files shard {args.shard} "
                       f"{'done' if final else 'progress'}: {json.dumps(c)} "
                       f"({time.time() - t0:.0f} s)")

    def failure(kind, desc, tb):
        _log(args.log, f"{kind} shard {args.shard}: {desc}\n{tb}"[:20000])

    c = F.run_mutations(args.n, args.seed, every=args.every, progress=progress,
                        failure=failure, state=args.state, compile_every=args.compile_every)
    progress(c, final=True)
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["programs", "files"])
    ap.add_argument("--n", type=int, default=1000, help="examples in all (split over shards)")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", default="fuzz.log")
    ap.add_argument("--every", type=int, default=500, help="a progress line every N items")
    ap.add_argument("--compile-every", type=int, default=1,
                    help="compile one program (files: one loaded graph) in K; 0: none")
    ap.add_argument("--shard", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--state", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.shard is not None:                         # a child: one shard
        if args.what == "files":  # a crafted graph must not take the machine's memory either
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        c = (_programs_shard if args.what == "programs" else _files_shard)(args)
        print("RESULT " + json.dumps(c))
        return 0
    per = -(-args.n // args.shards)
    total: dict = {}
    crashes = 0
    t0 = time.time()
    _log(args.log, f"{time.strftime('%H:%M:%S')} {args.what}: {args.n} in {args.shards} shards "
                   f"of {per}, seed {args.seed}")
    for s in range(args.shards):
        state = os.path.join(tempfile.gettempdir(), f"fuzz-{args.what}-{os.getpid()}-{s}.state")
        cmd = [sys.executable, os.path.abspath(__file__), args.what, "--n", str(per),
               "--seed", str(args.seed + s), "--log", args.log, "--every", str(args.every),
               "--compile-every", str(args.compile_every), "--shard", str(s), "--state", state]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        result = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode != 0 or not result:
            crashes += 1
            last = open(state).read() if os.path.exists(state) else "?"
            _log(args.log, f"CRASH shard {s}: return code {p.returncode}, last item {last}\n"
                           f"{p.stderr[-4000:]}")
            continue
        for k, v in json.loads(result[-1][7:]).items():
            total[k] = total.get(k, 0) + v
        if os.path.exists(state):
            os.remove(state)
    total["crashes"] = crashes
    line = (f"{time.strftime('%H:%M:%S')} {args.what} TOTAL: {json.dumps(total)} "
            f"({time.time() - t0:.0f} s wall)")
    _log(args.log, line)
    print(line)
    return 1 if crashes or total.get("divergences") or total.get("errors") \
        or total.get("failures") else 0


if __name__ == "__main__":
    sys.exit(main())
