"""``python -m bench.dispatch_calls``: how many Python calls the runtime makes per op.

Counts, with ``sys.setprofile``, the calls into functions defined under ``runtime/`` from the
front-end call to its return (the kernel set's own calls are not counted) for:

- a *cold* tracked binary op (``mul`` of two tracked autodiff tensors of a new shape, after
  ``rt.empty_cache()``: no fast-path decision, no cached rule result),
- its *second* call (the cached plan; it leaves the fast-path decision),
- the same op *warm* (the small-op fast path),
- a tracked reduction with attrs (``sum(x, axis=1)``, never on the fast path).

Each count is given in full and as the op's *spine*: the same calls without the shape/dtype
arithmetic helpers (``dtypes.py``, ``core/shapes.py``, generator expressions) and the
constructors (``__init__``, ``Tensor._wrap``) — the hops between front end, dispatch, device,
rule and kernel set.  ``--list`` prints every call.
"""
from __future__ import annotations

import argparse
import os
import sys

_HELPER_FILES = ("dtypes.py", os.path.join("ops", "shapes.py"))
_HELPER_NAMES = ("<genexpr>", "<listcomp>", "__init__", "_wrap")


def count(fn, root):
    calls = []

    def prof(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(root):
                calls.append((os.path.relpath(code.co_filename, root), code.co_name))
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def spine(calls):
    return [c for c in calls if c[0] not in _HELPER_FILES and c[1] not in _HELPER_NAMES]


def cases():
    import runtime as rt
    dev = rt.autodiff(rt.cpu())

    def pair(n):
        a = rt.tensor([[1.0] * n] * 3, device=dev).require_grad()
        b = rt.tensor([[2.0] * n] * 3, device=dev).require_grad()
        return a, b

    a, b = pair(4)
    rt.mul(a, b)                       # compile the kernels first
    rt.sum(a, axis=1)
    out = []
    a, b = pair(5)
    rt.empty_cache()
    out.append(("cold tracked mul", lambda: rt.mul(a, b)))
    out.append(("second tracked mul", lambda: rt.mul(a, b)))
    out.append(("warm tracked mul", lambda: rt.mul(a, b)))
    out.append(("tracked sum(axis=1)", lambda: rt.sum(a, axis=1)))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.dispatch_calls", description=__doc__.split("\n")[0])
    p.add_argument("--list", action="store_true", help="print every counted call")
    args = p.parse_args(argv)
    import runtime
    root = os.path.dirname(os.path.abspath(runtime.__file__))
    for label, fn in cases():
        calls = count(fn, root)
        sp = spine(calls)
        print(f"{label:24s} {len(calls):3d} calls, spine {len(sp):3d}")
        if args.list:
            for f, n in calls:
                print(f"    {'*' if (f, n) in sp else ' '} {f}:{n}")


if __name__ == "__main__":
    main()
