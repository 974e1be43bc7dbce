"""Each optimiser's per-parameter update as one fused kernel.

An update is a function of flat tensors (parameter, gradient, state) and 0-d hyperparameter
tensors that returns the new parameter and state.  It is captured once per (update, variant,
size, dtype, device) on placeholders and compiled with ``graph.compile``'s fusion pass into one
generated kernel with one output per result (the kernel itself is shape-generic and disk-cached,
so a new size costs a capture, not a compile).  Hyperparameters are inputs, not constants, so a
scheduler changing the learning rate compiles nothing.

``run_update_many`` updates several small parameters in one call: one captured graph flattens
and concatenates each operand kind, runs the same update once over the concatenation (the same
generated kernel as one parameter's) and cuts the results back into the parameters' shapes.
On a small model the per-call cost (about 35 µs: the graph call, the kernel's operand set-up)
was most of an optimiser step; copying a few thousand elements is not."""
from __future__ import annotations

import functools
import math

from ..capture.device import CaptureDevice
from ..ops import api

__all__ = ["run_update", "run_update_many"]


@functools.lru_cache(maxsize=256)
def _compiled(fn, variant, n_tensors, n_scalars, size, dtype, device):
    cap = CaptureDevice()
    with cap.capture_scope() as scope:
        tensors = [scope.placeholder((size,), dtype) for _ in range(n_tensors)]
        scalars = [scope.placeholder((), dtype) for _ in range(n_scalars)]
        outs = fn(variant, *tensors, *scalars)
        scope.complete(inputs=tensors + scalars, outputs=list(outs))
    return scope.graph.compile(device)


_SCALARS: dict = {}      # (value, dtype, device) -> 0-d tensor (tensors are immutable)


def _scalar(value, dtype, device):
    """The 0-d ``value`` tensor, shared between steps: most hyperparameters repeat, and a
    fresh ``full`` per scalar per parameter was a visible part of a small model's step."""
    key = (value, dtype, device)
    t = _SCALARS.get(key)
    if t is None:
        if len(_SCALARS) >= 4096:
            _SCALARS.clear()
        t = _SCALARS[key] = api.full((), value, dtype, device)
    return t


def run_update(fn, variant, tensors, scalars):
    """``fn(variant, *flat tensors, *0-d scalars) -> outputs`` on ``tensors`` (plain tensors of
    one shape, dtype and device) and Python-float ``scalars``: the outputs, in ``tensors[0]``'s
    shape."""
    t0 = tensors[0]
    shape, dtype, device = t0.shape, t0.dtype, t0.device
    size = t0.numel()
    exe = _compiled(fn, variant, len(tensors), len(scalars), size, dtype, device)
    flat = tensors if len(shape) == 1 else [api.reshape(t, (size,)) for t in tensors]
    vals = [_scalar(float(s), dtype, device) for s in scalars]
    outs = exe(*flat, *vals)
    return tuple(outs) if len(shape) == 1 else tuple(api.reshape(o, shape) for o in outs)


@functools.lru_cache(maxsize=64)
def _compiled_many(fn, variant, n_tensors, n_scalars, shapes, dtype, device):
    sizes = [math.prod(s) for s in shapes]
    cap = CaptureDevice()
    with cap.capture_scope() as scope:
        kinds = [[scope.placeholder(s, dtype) for s in shapes] for _ in range(n_tensors)]
        scalars = [scope.placeholder((), dtype) for _ in range(n_scalars)]
        flat = [api.cat([api.reshape(t, (n,)) for t, n in zip(ts, sizes)]) for ts in kinds]
        pieces = []
        for out in fn(variant, *flat, *scalars):
            start = 0
            for s, n in zip(shapes, sizes):
                pieces.append(api.reshape(out[start:start + n], s))
                start += n
        scope.complete(inputs=[t for ts in kinds for t in ts] + scalars, outputs=pieces)
    return scope.graph.compile(device)


def run_update_many(fn, variant, tensor_lists, scalars):
    """``run_update`` for several parameters at once: ``tensor_lists`` holds one tuple of
    tensors per parameter (each tuple of one shape; all of one dtype and device), ``scalars``
    are shared; returns one tuple of outputs per parameter."""
    t0 = tensor_lists[0][0]
    dtype, device = t0.dtype, t0.device
    shapes = tuple(ts[0].shape for ts in tensor_lists)
    n_tensors = len(tensor_lists[0])
    exe = _compiled_many(fn, variant, n_tensors, len(scalars), shapes, dtype, device)
    args = [ts[k] for k in range(n_tensors) for ts in tensor_lists]
    outs = exe(*args, *[_scalar(float(s), dtype, device) for s in scalars])
    n = len(shapes)
    return [tuple(outs[j * n + i] for j in range(len(outs) // n)) for i in range(n)]
