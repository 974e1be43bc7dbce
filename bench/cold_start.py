"""``python -m bench.cold_start [--demo] [--profile]``: what a first run costs.

Runs, each in a fresh process with empty ``JIT_KERNELS_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` (what
a new venv on a new machine has): the 64x64 matmul snippet cold, the same snippet again while
any background gemm build is still running, and once every build is done; with ``--demo``
also ``python -m runtime demo`` cold and warm.  Prints wall seconds and the host CPU.
``--profile`` prints, for the cold snippet and the cold demo, the kernels that took longest
to compile (self time, nested compiles subtracted, summed over specialisations).
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

from bench import user_env

SNIPPET = "import runtime as rt; (rt.randn(64, 64) @ rt.randn(64, 64)).sum().item()"

PROFILER = r'''
import atexit, collections, sys, time
import numba.core.dispatcher as D
_orig = D.Dispatcher.compile
stack, rows = [], []
def compile(self, sig):
    if self.overloads.get(tuple(getattr(sig, "args", sig))) is not None:
        return _orig(self, sig)
    t0 = time.perf_counter(); stack.append(0.0)
    try:
        return _orig(self, sig)
    finally:
        dt = time.perf_counter() - t0; nested = stack.pop()
        if stack: stack[-1] += dt
        rows.append((dt - nested, self.py_func.__module__ + "." + self.py_func.__qualname__,
                     bool(self.targetoptions.get("parallel"))))
D.Dispatcher.compile = compile
@atexit.register
def report():
    agg = collections.defaultdict(lambda: [0.0, 0, False])
    for s, name, par in rows:
        a = agg[name]; a[0] += s; a[1] += 1; a[2] = par
    tot = sum(r[0] for r in rows)
    print(f"PROFILE {len(rows)} compiles (including cache loads), {tot:.2f} s", file=sys.stderr)
    for name, (s, n, par) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:12]:
        name = name.split("_jkgen_")[-1]
        print(f"PROFILE | {s:6.2f} s | {n:3d} | {'prange' if par else 'serial'} | {name} |",
              file=sys.stderr)
'''


def _wait_for_builds(d, limit=300):
    t0 = time.time()
    while glob.glob(os.path.join(d, "*.building")) and time.time() - t0 < limit:
        time.sleep(0.2)
    return time.time() - t0


def _run(label, argv, env, profile=False):
    if profile:  # the same command under the compile-time profiler
        if argv[1] == "-c":
            tail = f"exec({argv[2]!r})"
        else:  # -m module args...
            tail = (f"import runpy, sys; sys.argv = {argv[2:]!r}; "
                    f"runpy.run_module({argv[2]!r}, run_name='__main__', alter_sys=True)")
        argv = [sys.executable, "-c", PROFILER + "\n" + tail]
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{label} failed:\n{r.stdout}\n{r.stderr}")
    print(f"{label:<52} {dt:7.2f} s", flush=True)
    for line in r.stderr.splitlines():
        if line.startswith("PROFILE"):
            print("   " + line[8:])
    return dt


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.split("\n\n")[0])
    p.add_argument("--demo", action="store_true", help="also time python -m runtime demo")
    p.add_argument("--profile", action="store_true", help="per-kernel compile times")
    args = p.parse_args(argv)
    import llvmlite.binding as ll
    print(f"host CPU: {ll.get_host_cpu_name()}, {os.cpu_count()} cores")
    for what in (["snippet"] + (["demo"] if args.demo else [])):
        with tempfile.TemporaryDirectory() as jk, tempfile.TemporaryDirectory() as nb:
            env = user_env(JIT_KERNELS_CACHE_DIR=jk, NUMBA_CACHE_DIR=nb)
            cmd = ([sys.executable, "-c", SNIPPET] if what == "snippet"
                   else [sys.executable, "-m", "runtime", "demo"])
            _run(f"{what}: cold (empty caches)", cmd, env, profile=args.profile)
            if what == "snippet":
                _run(f"{what}: second process, background build running", cmd, env)
            waited = _wait_for_builds(jk)
            print(f"{'  (waited for background builds)':<52} {waited:7.2f} s")
            _run(f"{what}: a process after the builds", cmd, env)
            _run(f"{what}: warm", cmd, env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
