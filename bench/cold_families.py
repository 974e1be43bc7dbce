"""``python -m bench.cold_families [--limit S] [--only NAME,...]``: each kernel family from an
empty cache -- its first call, the time until it runs at full speed, and its warm time.

For each family a fresh process with empty ``JIT_KERNELS_CACHE_DIR`` and ``NUMBA_CACHE_DIR``
(what a new venv on a new machine has) makes the family's first call, then calls it again and
again for ``--limit`` seconds (or until the background builds it started are done and three
more seconds of calls are made), recording when each call ended and how long it took.  A
second fresh process on the filled caches then measures the warm time (the median call of the
later half of at least two seconds of calls).  The children run with the user's OpenMP
settings (``bench.user_env``).  "Full speed" is the first moment after which the calls ran
within 1.3x the warm time, judged per second of calls (its median call: the host is shared and
noisy); it counts from the start of the first call.  Prints one row per family and the host CPU.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from bench import user_env

BUCKET_S = 1.0   # the time buckets the cold calls are judged in

#: family -> (setup code defining ``call()``, description); the setup runs after ``import
#: runtime as rt`` and NumPy as ``np`` and is not timed
FAMILIES = {
    "elementwise": ("a, b, c = (rt.tensor(np.random.default_rng(i).random(1 << 20, "
                    "dtype=np.float32)) for i in range(3))\n"
                    "def call(): (a * b + c).numpy()", "a*b+c, 2^20 float32"),
    "reduce": ("a = rt.tensor(np.random.default_rng(0).random((1024, 1024), dtype=np.float32))\n"
               "def call(): a.sum(-1).numpy()", "sum(-1), 1024x1024 float32"),
    "softmax": ("import runtime.nn.functional as F\n"
                "a = rt.tensor(np.random.default_rng(0).random((256, 1024), dtype=np.float32))\n"
                "def call(): F.softmax(a, -1).numpy()", "softmax(-1), 256x1024 float32"),
    "matmul": ("a = rt.tensor(np.random.default_rng(0).random((512, 512), dtype=np.float32))\n"
               "def call(): (a @ a).numpy()", "512x512 @ 512x512 float32"),
    "mlp-matmul": ("a = rt.tensor(np.random.default_rng(0).random((128, 784), dtype=np.float32))\n"
                   "w = rt.tensor(np.random.default_rng(1).random((784, 256), dtype=np.float32))\n"
                   "def call(): (a @ w).numpy()", "128x784 @ 784x256 float32"),
    "conv2d": ("import runtime.nn.functional as F\n"
               "x = rt.tensor(np.random.default_rng(0).random((128, 16, 8, 8), dtype=np.float32))\n"
               "w = rt.tensor(np.random.default_rng(1).random((32, 16, 3, 3), dtype=np.float32))\n"
               "def call(): F.conv2d(x, w, padding=1).numpy()", "conv2d 16->32 3x3, 128x16x8x8"),
    "conv2d-backward": (
        "import runtime.nn.functional as F\n"
        "ad = rt.autodiff(rt.cpu())\n"
        "x = rt.tensor(np.random.default_rng(0).random((128, 16, 8, 8), dtype=np.float32)).to(ad)\n"
        "w = rt.tensor(np.random.default_rng(1).random((32, 16, 3, 3), dtype=np.float32)).to(ad)"
        ".require_grad()\n"
        "def call(): w.grad(F.conv2d(x, w, padding=1).sum().backward()).numpy()",
        "conv2d 16->32 forward + weight gradient"),
    "max_pool2d": ("import runtime.nn.functional as F\n"
                   "x = rt.tensor(np.random.default_rng(0).random((128, 16, 8, 8), "
                   "dtype=np.float32))\n"
                   "def call(): F.max_pool2d(x, 2).numpy()", "max_pool2d 2x2, 128x16x8x8"),
    "cnn-step": (
        "import runtime.nn.functional as F\n"
        "from runtime.demo import DigitsCNN\n"
        "ad = rt.autodiff(rt.cpu()); rt.manual_seed(0)\n"
        "model = DigitsCNN().to(ad)\n"
        "opt = rt.optim.Adam(model.parameters(), lr=1e-3)\n"
        "rng = np.random.default_rng(0)\n"
        "xb = rt.tensor(rng.random((128, 1, 8, 8), dtype=np.float32)).to(ad)\n"
        "yb = rt.tensor(rng.integers(0, 10, 128)).to(ad)\n"
        "def call():\n"
        "    loss = F.cross_entropy(model(xb), yb)\n"
        "    opt.step(loss.backward()); loss.item()", "digits CNN Adam step (eager), batch 128"),
}

CHILD = r'''
import glob, json, os, sys, time
t_start = time.perf_counter()
import numpy as np
import runtime as rt
exec(sys.argv[1])
limit, cache, warm = float(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
calls = []
t0 = time.perf_counter()
t_check = 0.0
t_done = None   # when no build was left
while True:
    t_a = time.perf_counter()
    call()
    t_b = time.perf_counter()
    calls.append((t_b - t0, t_b - t_a))
    if warm:
        if (len(calls) >= 30 and t_b - t0 > 2) or t_b - t0 > limit:
            break
        continue
    if t_b - t0 > limit:
        break
    # the builds are looked for ten times a second, not between every two calls (a listing
    # per call slowed the calls it measured); three seconds of calls after the last one landed
    # show whether the process runs at full speed (it settles over a second or two)
    if t_done is None and t_b - t0 > 1 and t_b - t_check > 0.1:
        t_check = t_b
        if not glob.glob(os.path.join(cache, "*.building")):
            t_done = t_b
    if t_done is not None and t_b - t_done > 3 and t_b - t0 > 4:
        break
print("RESULT " + json.dumps({"import": t0 - t_start, "calls": calls}))
'''


def _child(setup, limit, jk, nb, warm):
    env = user_env(JIT_KERNELS_CACHE_DIR=jk, NUMBA_CACHE_DIR=nb)
    r = subprocess.run([sys.executable, "-c", CHILD, setup, str(limit), jk, "1" if warm else "0"],
                       env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"child failed:\n{r.stdout}\n{r.stderr}")


def measure(name, limit=60.0):
    """(first call s, time to full speed s or None, warm s, calls made cold) for a family."""
    setup = FAMILIES[name][0]
    with tempfile.TemporaryDirectory() as jk, tempfile.TemporaryDirectory() as nb:
        cold = _child(setup, limit, jk, nb, warm=False)
        t = time.monotonic()
        while glob.glob(os.path.join(jk, "*.building")) and time.monotonic() - t < 600:
            time.sleep(0.2)   # the builds left running land in the cache
        warm = _child(setup, 10.0, jk, nb, warm=True)
    half = sorted(d for _, d in warm["calls"][len(warm["calls"]) // 2:])  # loads are done
    w = half[len(half) // 2]
    calls = cold["calls"]
    # the host is shared: speed is judged per second of calls (its median call), the first
    # call aside; full speed from the first second after which none is slower than 1.3x warm
    buckets: dict = {}
    for end, d in calls[1:]:
        buckets.setdefault(int(end / BUCKET_S), [end - d, []])[1].append(d)
    rows = [(start, sorted(ds)[len(ds) // 2]) for start, ds in
            (buckets[k] for k in sorted(buckets))]
    full = None
    for i in range(len(rows)):
        if all(m <= 1.3 * w for _, m in rows[i:]):
            full = rows[i][0] if i else calls[0][0]
            break
    return calls[0][1], full, w, len(calls)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cold_families",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--limit", type=float, default=60.0,
                   help="seconds of calls in the cold process at most (default 60)")
    p.add_argument("--only", default="", help="comma-separated family names")
    args = p.parse_args(argv)
    import llvmlite.binding as ll
    names = [n for n in FAMILIES if not args.only or n in args.only.split(",")]
    print(f"host CPU: {ll.get_host_cpu_name()}, {os.cpu_count()} cores; empty caches; "
          f"full speed = every later second of calls within 1.3x warm (its median)")
    print("| family | first call s | full speed after s | warm ms | cold calls |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        first, full, warm, n = measure(name, args.limit)
        fs = f"{full:.1f}" if full is not None else f"> {args.limit:.0f}"
        print(f"| {name} ({FAMILIES[name][1]}) | {first:.2f} | {fs} | {warm * 1e3:.3f} | {n} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
