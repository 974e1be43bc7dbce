"""``python -m runtime {devices,demo,tour,warmup,bench}``."""
from __future__ import annotations

import argparse
import os
import sys


def _devices(args) -> int:
    import runtime as rt
    for d in rt.devices():
        print(d)
    why = rt.cuda_unavailable_reason()
    if why is not None:
        print(f"(no cuda device: {why})")
    return 0


def _demo(args) -> int:
    if getattr(args, "distributed", False):
        # one thread per rank (ranks share the cores); numba reads this on import, which has
        # not happened yet ("import runtime" imports no numba)
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    from .demo import run
    return run(args)


def _tour(args) -> int:
    from .tour import main as tour
    return tour([])


def _warmup(args) -> int:
    from .warmup import main as warmup
    return warmup([])


def _bench(args) -> int:
    # the benchmarks live in the repository's bench/ (not in the installed package): run them
    # as their own program, from a checkout
    import importlib.util
    import subprocess
    if importlib.util.find_spec("bench") is None:
        print("python -m runtime bench: the benchmarks are in the repository's bench/ folder, "
              "which is not installed; run it from a checkout of the repository", file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, "-m", "bench", *args.rest])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime",
                                description="numba-tensor-runtime command line")
    sub = p.add_subparsers(dest="cmd", metavar="{devices,demo,tour,warmup,bench}")
    sub.add_parser("devices", help="list the usable devices (and why no GPU is listed)",
                   description="List the usable devices; say why no cuda device is listed.")
    d = sub.add_parser("demo", help="train a CNN on handwritten digits, checkpoint it, capture, "
                       "replay, compile and export its inference graph",
                       description="Train a small CNN on scikit-learn's 8x8 digits (Adam, one-cycle "
                       "schedule), plot its curves and predictions, save and reload a checkpoint, "
                       "capture/replay/compile/ONNX-export its inference graph.  Needs the demo "
                       "extra.")
    from .demo import add_arguments
    add_arguments(d)
    sub.add_parser("tour", help="tour the ops, train an MLP, capture/replay/compile its graph",
                   description="Tour the ops with NumPy timings, train an MLP with autodiff, "
                   "capture, replay, compile and save its inference graph.  The first run "
                   "compiles its kernels (see docs/first-run.md).")
    sub.add_parser("warmup", help="compile the common kernels into the disk cache",
                   description="Compile (or load from the disk cache) the common kernels so "
                   "later processes start fast.")
    b = sub.add_parser("bench", help="the benchmark ratio table (python -m bench)",
                       description="Run python -m bench; arguments after 'bench' go to it.",
                       add_help=False)
    b.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.cmd is None:
        p.print_help()
        return 2
    return {"devices": _devices, "demo": _demo, "tour": _tour, "warmup": _warmup,
            "bench": _bench}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
