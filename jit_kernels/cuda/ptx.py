"""Check that every cuda kernel compiles for a real GPU (PTX), without a GPU.

The simulator runs kernels as Python, so it cannot show that a kernel *compiles* for the device.
This module closes the gap in two steps:

1. ``record`` (run under ``NUMBA_ENABLE_CUDASIM=1``): ``exercise()`` calls every kernel family
   of the cuda set over every dtype combination the runtime uses, on tiny arrays, while
   ``_array.RECORD`` collects each launch's (kernel file, kernel name, argument types).
2. ``compile`` (run *without* the simulator): each distinct launch is compiled with
   ``numba.cuda.compile_ptx(..., cc=(9, 0))`` (Hopper; needs NVRTC/NVVM, e.g. numba-cuda's
   ``cu13`` extra, but no driver or GPU).

``python -m jit_kernels.cuda.ptx record FILE`` / ``python -m jit_kernels.cuda.ptx compile FILE
[--cc 9.0]``; ``tests/cuda/test_ptx.py`` runs both.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

import numpy as np

from jit_kernels import optable

_F32, _F64, _I32, _I64, _B = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64,
                                                     np.bool_))
NUMERIC = (_F32, _F64, _I32, _I64)
#: unary ops whose int inputs the runtime gives a float result (from the op table)
FLOAT_RESULT = optable.FLOAT_RESULT


def exercise(ks) -> None:
    """Call every kernel family over the dtype combinations the runtime asks for."""
    from jit_kernels import BINARY_OPS, REDUCE_OPS, UNARY_OPS
    rng = np.random.default_rng(0)

    def arr(shape, dt):
        if dt.kind == "b":
            return ks.from_host(rng.random(shape) < 0.5)
        return ks.from_host((rng.random(shape) * 4 - 2).astype(dt))

    for dt in NUMERIC + (_B,):
        x = arr((2, 3), dt)
        xt = ks.permute(x, (1, 0))
        for op in UNARY_OPS:
            if op == "logical_not":
                ks.unary(op, x, _B, {})
                continue
            if dt.kind == "b":
                continue
            out = _F32 if (op in FLOAT_RESULT and dt.kind != "f") else dt
            if op == "clamp":
                for attrs in ({"min": -1, "max": 1}, {"min": -1, "max": None},
                              {"min": None, "max": 1}):
                    ks.unary(op, x, out, attrs)
                continue
            ks.unary(op, x, out, {})
        ks.unary("neg" if dt.kind != "b" else "logical_not", xt, dt if dt.kind != "b" else _B, {})
        for op in BINARY_OPS:
            if dt.kind == "b" and op not in ("eq", "ne", "logical_and", "logical_or", "maximum",
                                             "minimum", "add", "mul"):
                continue
            cmp = op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")
            cd = _F32 if (op == "div" and dt.kind != "f") else (_I64 if dt.kind == "b" and not cmp
                                                               else dt)
            out = _B if cmp else cd
            ks.binary(op, x, x, cd, out)
            ks.binary(op, x, arr((3,), dt), cd, out)
            ks.binary(op, x, 2 if dt.kind != "f" else 1.5, cd, out)
        for dst in NUMERIC + (_B,):
            ks.cast(x, dst)
        ks.where(arr((2, 3), _B), x, x, dt)
        ks.where(arr((2, 3), _B), x, 0, dt)
        ks.copy(xt)
        ks.full((2, 2), 1, dt)
        ks.arange(0, 1, 4, dt)
        ks.eye(2, 3, dt)
        ks.to_host(xt)
        ks.cat([x, x], 1)
        ks.slice_assign(x, (slice(0, 2, 1), slice(0, 3, 2)), arr((2, 2), dt))
        ks.take(x, ks.from_host(np.array([1, 0], np.int64)), 1)
        ks.take(x, ks.from_host(np.array([1, 0], np.int32)), 0)
        ks.gather(x, ks.from_host(np.array([[1, 0, 1]], np.int64)), 0)
        ks.gather(x, ks.from_host(np.array([[1, 0, 1]], np.int32)), 1)
        ks.scatter_add(x, ks.from_host(np.array([[1, 0, 1]], np.int64)), x, 0)
        ks.scatter_add(x, ks.from_host(np.array([[1, 0, 1]], np.int32)), x, 1)
        for red in ("prod", "amax", "amin"):
            ks.scatter_reduce(x, ks.from_host(np.array([[1, 0, 1]], np.int64)), x, 0, red)
        for op in ("argmax", "argmin"):
            ks.arg_reduce(op, x, 1, False)
            ks.arg_reduce(op, x, None, False)
            ks.arg_reduce(op, arr((2, 3, 2), dt), 1, False)
        big = arr((40, 3), dt)
        for op in REDUCE_OPS:
            if dt.kind != "f" and op in ("mean", "var", "logsumexp"):
                continue
            if op in ("max", "min"):
                od = dt
            elif dt.kind == "f":
                od = dt
            else:
                od = _I64
            ks.reduce(op, x, (1,), False, od, {"ddof": 0})
            ks.reduce(op, x, (0, 1), False, od, {"ddof": 0})
            ks.reduce(op, arr((3, 2, 2), dt), (0, 2), False, od, {"ddof": 0})
            ks.reduce(op, arr((300,), dt), (0,), False, od, {"ddof": 0})   # two-pass
            ks.reduce(op, big, (0,), False, od, {"ddof": 0})                # cols
            ks.reduce(op, ks.permute(big, (1, 0)), (1,), False, od, {"ddof": 0})
            if dt.kind == "f" and op in ("sum", "mean"):
                ks.reduce(op, x, (1,), False, _F64, {"ddof": 0})
    for dt in (_F32, _F64):
        x = arr((2, 3), dt)
        for log in (False, True):
            ks.softmax(x, 1, log)
            ks.softmax(x, 0, log)
            ks.softmax(arr((2, 3, 2), dt), 1, log)
        ks.rand((5,), dt, 1, 0)
        ks.randn((5,), dt, 1, 0)
        img = arr((1, 2, 3, 3), dt)
        cols = ks.im2col(img, (2, 2), (1, 1), (1, 1), (1, 1), (4, 4))
        ks.col2im(cols, (2, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (4, 4))
    for dt in NUMERIC:
        a = arr((2, 3, 4), dt)
        b = arr((2, 4, 5), dt)
        ks.matmul(a, b)
        ks.matmul(ks.expand(arr((1, 3, 4), dt), (2, 3, 4)), ks.permute(arr((2, 5, 4), dt), (0, 2, 1)))
    _exercise_pooling(ks, arr)
    _exercise_put_pad(ks, arr)


def _exercise_put_pad(ks, arr) -> None:
    """The ``put`` kernels (last write wins) and the one-pass ``pad`` and its gradient."""
    maps = (np.array([1, 0, 1, 0], np.int64), np.array([1, 0, 1, 2, 1], np.int64))
    for dt in NUMERIC + (_B,):
        x = arr((2, 3), dt)
        ks.put(x, ks.from_host(np.array([4, 0, 4], np.int64)), arr((3,), dt), False)
        ks.pad(x, maps, 0)
    for dt in (_F32, _F64):
        ks.pad_backward(arr((4, 5), dt), maps, 0, (2, 3))


def _exercise_pooling(ks, arr) -> None:
    """The pooling kernels: 2x2 windows and two taps per axis on a (1, 2, 3, 3) input."""
    win = (np.array([0, 1], np.int64), np.array([2, 3], np.int64), 1)
    for dt in NUMERIC:
        x = arr((1, 2, 3, 3), dt)
        ks.max_pool2d(x, win, win, False)
        ks.max_pool2d(x, win, win, True)
    for dt in (_F32, _F64):
        x, g = arr((1, 2, 3, 3), dt), arr((1, 2, 2, 2), dt)
        div = np.full((2, 2), 4.0)
        taps = (np.array([0, 1], np.int64), np.array([1, 2], np.int64), np.array([0.25, 0.5], dt))
        ks.max_pool2d_backward(x, g, win, win)
        ks.avg_pool2d(x, win, win, div)
        ks.avg_pool2d_backward(g, win, win, div, (3, 3))
        for nearest in (False, True):
            ks.resample2d(x, taps, taps, nearest)
            ks.resample2d_backward(g, taps, taps, nearest, (3, 3))


def record(path: str) -> int:
    """Run ``exercise`` (under the simulator) recording every launch; write them to ``path``."""
    from jit_kernels.cuda import CudaKernels, _array
    if not _array.SIM:
        raise RuntimeError("record runs under NUMBA_ENABLE_CUDASIM=1")
    _array.RECORD = []
    try:
        exercise(CudaKernels())
        recs = sorted(set(_array.RECORD))
    finally:
        _array.RECORD = None
    with open(path, "w") as f:
        json.dump([[p, n, [list(d) for d in ds]] for p, n, ds in recs], f)
    return len(recs)


def _module_for(path: str):
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.dirname(os.path.abspath(path)) == here:
        return importlib.import_module("jit_kernels.cuda." + os.path.basename(path)[:-3])
    name = os.path.basename(path)[:-3]
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


def _numba_type(desc):
    from numba import types
    from numba.np.numpy_support import from_dtype
    kind = desc[0]
    if kind == "array":
        return types.Array(from_dtype(np.dtype(desc[1])), 1, "C")
    if kind == "scalar":
        return from_dtype(np.dtype(desc[1]))
    if kind == "tuple":
        return types.UniTuple(types.int64, desc[1])
    raise ValueError(desc)


def _pretend_device(cc) -> None:
    """Device functions called from a kernel are compiled for the *current* device's compute
    capability (``dispatcher.compile_device``), which needs a driver; give it ``cc`` instead."""
    from numba.cuda import dispatcher

    class _Dev:
        compute_capability = tuple(cc)

    dispatcher.get_current_device = lambda: _Dev()


def compile_all(path: str, cc=(9, 0), verbose=False) -> list:
    """Compile every recorded launch to PTX for ``cc``; returns the list of failures."""
    from numba import cuda
    if cuda.simulator_enabled if hasattr(cuda, "simulator_enabled") else False:
        raise RuntimeError("compile runs without NUMBA_ENABLE_CUDASIM")
    _pretend_device(cc)
    with open(path) as f:
        recs = json.load(f)
    failures = []
    for p, name, descs in recs:
        try:
            kern = getattr(_module_for(p), name)
            fn = getattr(kern, "py_func", kern)
            sig = tuple(_numba_type(d) for d in descs)
            ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
            assert f".target sm_{cc[0]}{cc[1]}" in ptx
            if verbose:
                print("ok", os.path.basename(p), name, flush=True)
        except Exception as exc:  # report all, not just the first
            failures.append(f"{os.path.basename(p)}:{name}{tuple(map(tuple, descs))}: "
                            f"{type(exc).__name__}: {exc}")
    return failures


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 2 and argv[0] == "record":
        print(f"recorded {record(argv[1])} distinct launches")
        return 0
    if len(argv) >= 2 and argv[0] == "compile":
        cc = (9, 0)
        if "--cc" in argv:
            major, minor = argv[argv.index("--cc") + 1].split(".")
            cc = (int(major), int(minor))
        fails = compile_all(argv[1], cc, verbose="-v" in argv)
        for f in fails:
            print("FAIL", f)
        with open(argv[1]) as f:
            n = len(json.load(f))
        print(f"compiled {n - len(fails)}/{n} kernels for sm_{cc[0]}{cc[1]}")
        return 1 if fails else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
