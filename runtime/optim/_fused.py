"""Each optimiser's per-parameter update as one fused kernel.

An update is a function of flat tensors (parameter, gradient, state) and 0-d hyperparameter
tensors that returns the new parameter and state.  It is captured once per (update, variant,
size, dtype, device) on placeholders and compiled with ``graph.compile``'s fusion pass into one
generated kernel with one output per result (the kernel itself is shape-generic and disk-cached,
so a new size costs a capture, not a compile).  Hyperparameters are inputs, not constants, so a
scheduler changing the learning rate compiles nothing."""
from __future__ import annotations

import functools

from ..capture.device import CaptureDevice
from ..ops import api

__all__ = ["run_update"]


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
