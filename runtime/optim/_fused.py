"""Each optimiser's per-parameter update as one fused kernel.

An update is a function of tensors of one shape (parameter, gradient, state) and 0-d
hyperparameter tensors that returns the new parameter and state.  It is captured once per
(update, variant, shape, dtype, device) on placeholders and compiled with ``graph.compile``'s
fusion pass into one generated kernel with one output per result (the kernel itself is
shape-generic and disk-cached, so a new shape costs a capture, not a compile; the operands are
not flattened first, which cost a reshape dispatch per operand and result).  Hyperparameters
are inputs, not constants, so a scheduler changing the learning rate compiles nothing.

``run_update_many`` updates several small parameters in one call: one captured graph flattens
and concatenates each operand kind, runs the same update once over the concatenation (the same
generated kernel as one parameter's) and cuts the results back into the parameters' shapes.
A kind whose tensors are still the pieces of an earlier call's flat output (the parameters and
moments, from one step to the next) comes as that flat tensor instead: no concatenation.
On a small model the per-call cost (the graph call, the kernel's operand set-up)
was most of an optimiser step; copying a few thousand elements is not."""
from __future__ import annotations

import math

from .. import dispatch
from ..capture import active as _active
from ..capture.tracing import TraceCache, compile_for, trace
from ..core.registry import Meta
from ..ops import api

__all__ = ["run_update", "run_update_many"]

_UPDATES = TraceCache(256)
_UPDATES_MANY = TraceCache(64)


def _compiled(fn, variant, n_tensors, n_scalars, shape, dtype, device):
    def build():
        inputs = [Meta(shape, dtype)] * n_tensors + [Meta((), dtype)] * n_scalars
        return compile_for(trace(lambda *ts: fn(variant, *ts), inputs), device)
    return _UPDATES.get((fn, variant, n_tensors, n_scalars, shape, dtype, device), build)


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
    """``fn(variant, *tensors, *0-d scalars) -> outputs`` on ``tensors`` (plain tensors of
    one shape, dtype and device) and Python-float ``scalars``: the outputs, in ``tensors[0]``'s
    shape."""
    t0 = tensors[0]
    shape, dtype, device = t0.shape, t0.dtype, t0.device
    step = _active.current_step()
    if step is not None and device is step.device:
        # rt.compile is tracing: the update's ops go into its graph, the scalars as inputs
        return tuple(fn(variant, *tensors, *step.scalar_inputs(variant, scalars, dtype)))
    exe = _compiled(fn, variant, len(tensors), len(scalars), shape, dtype, device)
    # (the graph was traced for exactly these shapes, dtypes and this device: no input checks)
    return tuple(exe.call_trusted(list(tensors) + [_scalar(float(s), dtype, device)
                                                   for s in scalars]))


def _compiled_many(fn, variant, n_tensors, n_scalars, shapes, dtype, device, flat_kinds):
    """The graph of ``run_update_many``: operand kind ``k`` comes as one flat tensor when
    ``flat_kinds[k]``, else one tensor per parameter (flattened and concatenated here); the
    outputs are the flat ones (``dispatch.pieces`` cuts them)."""
    sizes = [math.prod(s) for s in shapes]

    def update(*placeholders):
        it = iter(placeholders)
        flat = []
        for k in range(n_tensors):
            if flat_kinds[k]:
                flat.append(next(it))
            else:
                ts = [next(it) for _ in shapes]
                flat.append(api.cat([api.reshape(t, (n,)) for t, n in zip(ts, sizes)]))
        return fn(variant, *flat, *it)

    def build():
        inputs = []
        for k in range(n_tensors):
            inputs += [Meta((sum(sizes),), dtype)] if flat_kinds[k] else [Meta(s, dtype) for s in shapes]
        inputs += [Meta((), dtype)] * n_scalars
        return compile_for(trace(update, inputs), device)
    return _UPDATES_MANY.get((fn, variant, n_tensors, n_scalars, shapes, dtype, device, flat_kinds),
                             build)


def run_update_many(fn, variant, tensor_lists, scalars, flat=None):
    """``run_update`` for several parameters at once: ``tensor_lists`` holds one tuple of
    tensors per parameter (each tuple of one shape; all of one dtype and device), ``scalars``
    are shared.  ``flat`` may give, per operand kind, the concatenation of that kind's tensors
    (a flat output of an earlier call, whose pieces they are) or None.  Returns (one tuple of
    outputs per parameter, the flat outputs)."""
    t0 = tensor_lists[0][0]
    dtype, device = t0.dtype, t0.device
    shapes = tuple(ts[0].shape for ts in tensor_lists)
    n_tensors = len(tensor_lists[0])
    flat = flat or (None,) * n_tensors
    kinds = tuple(f is not None for f in flat)
    exe = _compiled_many(fn, variant, n_tensors, len(scalars), shapes, dtype, device, kinds)
    args = []
    for k in range(n_tensors):
        if kinds[k]:
            args.append(flat[k])
        else:
            args += [ts[k] for ts in tensor_lists]
    outs = tuple(exe(*args, *[_scalar(float(s), dtype, device) for s in scalars]))
    cut = [dispatch.pieces(o, shapes) for o in outs]
    return [tuple(c[i] for c in cut) for i in range(len(shapes))], outs
