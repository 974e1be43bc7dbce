"""GPU workloads: bandwidth of elementwise ops and ``sum`` as a fraction of the device's peak,
sgemm GFLOP/s, per-op launch overhead, and the same ops in PyTorch / CuPy when installed.

``cases(device="cuda")`` gives rows for the ratio table (``python -m bench --device cuda``):
(name, runtime_fn, cupy_fn_or_None, torch_fn_or_None); every callable synchronises the GPU
before returning, so times are kernel times, not launch times.  ``python -m bench.cuda_cases
[--quick]`` prints the GPU report (GB/s, % of peak, GFLOP/s, ratios to PyTorch/CuPy).

Targets on an H200: elementwise and sum >= 70% of HBM bandwidth on 2^28 float32;
sgemm 4096² >= 0.3x cuBLAS; per-op launch overhead <= 30 µs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import runtime as rt

#: HBM peak in GB/s by device name (the driver's memory clock is not reliable for HBM3e)
PEAK_GBPS = {"H200": 4800.0, "H100 SXM": 3350.0, "H100 PCIe": 2000.0, "H100": 3350.0,
             "A100-SXM4-80GB": 2039.0, "A100": 1555.0, "L40S": 864.0, "L4": 300.0}


def _sync():
    from jit_kernels.cuda import synchronize
    synchronize(0)


def _torch():
    try:
        import torch
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False  # compare with FP32 sgemm, not TF32
            return torch
    except Exception:
        pass
    return None


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def _synced(f, sync):
    def g():
        r = f()
        sync()
        return r
    return g


def _workloads(dev, quick: bool):
    """(name, bytes moved or flops, unit, rt_fn, torch_fn, cupy_fn)"""
    n = 1 << (24 if quick else 28)
    side = 2048 if quick else 4096
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    ta, tb = rt.tensor(a, device=dev), rt.tensor(b, device=dev)
    m1 = rng.standard_normal((side, side), dtype=np.float32)
    m2 = rng.standard_normal((side, side), dtype=np.float32)
    tm1, tm2 = rt.tensor(m1, device=dev), rt.tensor(m2, device=dev)
    one = rt.tensor(np.ones(1, np.float32), device=dev)
    torch = _torch()
    cupy = _cupy()
    tt = cu = None
    if torch:
        tt = {k: torch.from_numpy(v).cuda() for k, v in (("a", a), ("b", b), ("m1", m1), ("m2", m2))}
        tt["one"] = torch.ones(1, device="cuda")
    if cupy:
        cu = {k: cupy.asarray(v) for k, v in (("a", a), ("b", b), ("m1", m1), ("m2", m2))}
    e = f"2^{n.bit_length() - 1}"
    rows = [
        (f"a+b {e} f32", 3 * 4 * n, "GB/s", lambda: ta + tb,
         (lambda: tt["a"] + tt["b"]) if tt else None, (lambda: cu["a"] + cu["b"]) if cu else None),
        (f"a*2 {e} f32", 2 * 4 * n, "GB/s", lambda: ta * 2.0,
         (lambda: tt["a"] * 2.0) if tt else None, (lambda: cu["a"] * 2.0) if cu else None),
        (f"exp(a) {e} f32", 2 * 4 * n, "GB/s", lambda: rt.exp(ta),
         (lambda: torch.exp(tt["a"])) if tt else None, (lambda: cupy.exp(cu["a"])) if cu else None),
        (f"sum {e} f32", 4 * n, "GB/s", lambda: rt.sum(ta),
         (lambda: tt["a"].sum()) if tt else None, (lambda: cu["a"].sum()) if cu else None),
        (f"sum(axis=0) {side}² f32", 4 * side * side, "GB/s", lambda: rt.sum(tm1, axis=0),
         (lambda: tt["m1"].sum(0)) if tt else None, (lambda: cu["m1"].sum(0)) if cu else None),
        (f"sum(axis=1) {side}² f32", 4 * side * side, "GB/s", lambda: rt.sum(tm1, axis=1),
         (lambda: tt["m1"].sum(1)) if tt else None, (lambda: cu["m1"].sum(1)) if cu else None),
        (f"sgemm {side}²", 2 * side ** 3, "GFLOP/s", lambda: tm1 @ tm2,
         (lambda: tt["m1"] @ tt["m2"]) if tt else None, (lambda: cu["m1"] @ cu["m2"]) if cu else None),
        ("launch: x+1 on 1 elem", 1, "µs/op", lambda: one + 1.0,
         (lambda: tt["one"] + 1.0) if tt else None, None),
        ("enqueue: 100 × (x+1)", 100, "µs/op", lambda: _repeat(lambda: one + 1.0),
         (lambda: _repeat(lambda: tt["one"] + 1.0)) if tt else None, None),
    ]
    return rows


def _repeat(f, n=100):
    for _ in range(n):
        f()


def _time(f, sync, min_time=0.05, reps_max=2000, rounds=5):
    f()
    sync()
    res = []
    for _ in range(rounds):
        reps = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            sync()
            dt = time.perf_counter() - t0
            if dt >= min_time or reps >= reps_max:
                break
            reps = min(reps_max, max(reps * 2, int(reps * min_time / max(dt, 1e-9)) + 1))
        res.append(dt / reps)
    return statistics.median(res)


def cases(device="cuda", quick: bool = False):
    """Rows for ``python -m bench``: (name, rt_fn, cupy_fn, torch_fn), all synchronising."""
    dev = rt.device(device)
    torch = _torch()
    cupy = _cupy()
    tsync = torch.cuda.synchronize if torch else None
    csync = cupy.cuda.Device().synchronize if cupy else None
    out = []
    for name, _, _, f_rt, f_t, f_c in _workloads(dev, quick):
        out.append((name, _synced(f_rt, _sync), _synced(f_c, csync) if f_c else None,
                    _synced(f_t, tsync) if f_t else None))
    return out


def report(quick: bool = False) -> int:
    from jit_kernels.cuda import gpu_info
    dev = rt.cuda(0)
    info = gpu_info(0)
    peak = float(os.environ.get("RT_PEAK_GBPS", 0)) or next(
        (v for k, v in PEAK_GBPS.items() if k in info["name"]), None) or info["peak_gbps"]
    print(f"GPU: {info['name']}  cc {info['cc']}  {info['sms']} SMs  "
          f"peak HBM {peak or float('nan'):.0f} GB/s")
    torch = _torch()
    cupy = _cupy()
    tsync = torch.cuda.synchronize if torch else None
    csync = cupy.cuda.Device().synchronize if cupy else None
    head = (f"{'workload':<26}{'runtime':>12}{'figure':>16}{'% peak':>8}"
            f"{'torch':>12}{'torch/rt':>9}{'cupy':>12}{'cupy/rt':>9}")
    print(head)
    print("-" * len(head))
    for name, amount, unit, f_rt, f_t, f_c in _workloads(dev, quick):
        t_rt = _time(f_rt, _sync)
        t_t = _time(f_t, tsync) if f_t else None
        t_c = _time(f_c, csync) if f_c else None
        if unit == "GB/s":
            fig = amount / t_rt / 1e9
            pct = f"{100 * fig / peak:6.1f}%" if peak else "-"
            figs = f"{fig:9.0f} GB/s"
        elif unit == "GFLOP/s":
            fig = amount / t_rt / 1e9
            pct = "-"
            figs = f"{fig:7.0f} GFLOP/s"
        else:  # per-op time: the call runs ``amount`` ops, then one synchronisation
            t_rt, t_t, t_c = (None if t is None else t / amount for t in (t_rt, t_t, t_c))
            figs = f"{t_rt * 1e6:8.1f} µs/op"
            pct = "-"

        def fmt(t):
            return "-" if t is None else (f"{t * 1e3:9.3f} ms" if t >= 1e-4 else f"{t * 1e6:9.1f} µs")

        def ratio(t):
            return "-" if t is None else f"{t / t_rt:7.2f}×"  # noqa: B023  (called in this iteration)
        print(f"{name:<26}{fmt(t_rt):>12}{figs:>16}{pct:>8}{fmt(t_t):>12}{ratio(t_t):>9}"
              f"{fmt(t_c):>12}{ratio(t_c):>9}", flush=True)
    print("ratios are competitor time / runtime time (> 1: the runtime is faster); torch sgemm "
          "with TF32 off")
    return 0


def launch_profile(n: int = 2000) -> int:
    """Where the host time of a small op goes: µs per ``x + 1`` (1 element, no sync) with and
    without the direct launch, the caching allocator's counters, and a cProfile of ``n`` ops."""
    import cProfile
    import io
    import pstats

    from jit_kernels.cuda import _array, _pool
    one = rt.tensor(np.ones(1, np.float32), device=rt.cuda(0))
    for direct in (False, True):
        _array.DIRECT = direct and not _array.SIM
        t = _time(lambda: _repeat(lambda: one + 1.0), _sync) / 100
        print(f"x+1 enqueue, direct launch {'on ' if _array.DIRECT else 'off'}: {t * 1e6:7.1f} µs/op")
    print("pool:", _pool.stats())
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        one + 1.0
    _sync()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
    print(buf.getvalue())
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cuda_cases", description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="profile the host side of small-op launches instead of the report")
    args = p.parse_args(argv)
    return launch_profile() if args.profile else report(args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
