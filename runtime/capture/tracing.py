"""The tracing service: record a function on placeholders, compile the graph for a device, and
keep the runner by signature.

Three users share it: composite ops (their decomposition runs as one fused kernel on a plain
device, ``runtime.capture.composite``), the optimisers' fused updates (``runtime.optim``), and
whole-function compilation.  ``trace`` records, ``compile_for`` makes the runner (the fused
kernels of ``graph.compile`` where the device's kernel set has them, op-by-op replay
otherwise), and a ``TraceCache`` keeps runners by signature; every ``TraceCache`` empties on
``rt.empty_cache()``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable

from ..kernel_sets import for_device, on_empty_cache, supports
from .device import CaptureDevice
from .ir import CapturedGraph

__all__ = ["trace", "compile_for", "signature", "TraceCache"]


def _is_stand_in(a) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype")


def trace(fn: Callable, inputs) -> CapturedGraph:
    """Record ``fn`` on a private capture device.

    ``inputs`` gives ``fn``'s arguments: each (shape, dtype) stand-in (a ``Meta``, or anything
    with ``shape`` and ``dtype``) becomes a placeholder input of the graph, in order; any other
    value is passed as it is (a Python scalar is baked into the graph).  ``fn`` returns a tensor
    or a sequence of tensors: the graph's outputs."""
    cap = CaptureDevice()
    with cap.capture_scope() as scope:
        placeholders, call = [], []
        for a in inputs:
            if _is_stand_in(a):
                ph = scope.placeholder(a.shape, a.dtype)
                placeholders.append(ph)
                call.append(ph)
            else:
                call.append(a)
        out = fn(*call)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        scope.complete(inputs=placeholders, outputs=outs)
    return scope.graph


def compile_for(graph: CapturedGraph, device):
    """``graph``'s runner on plain ``device``: ``graph.compile`` (fused kernels) where the
    device's kernel set has fused kernels, else ``graph.bind`` (op-by-op replay)."""
    if supports(for_device(device), "fused"):
        return graph.compile(device)
    return graph.bind(device)


def signature(args, attrs=None) -> tuple:
    """A hashable signature of a call: (shape, dtype) per tensor or stand-in, (type, value) per
    other argument (``1``, ``1.0`` and ``True`` differ), and the attrs as sorted
    (name, type, value) triples."""
    sig = tuple((tuple(a.shape), a.dtype) if _is_stand_in(a) else (type(a), a) for a in args)
    frozen = tuple(sorted((k, type(v), v) for k, v in attrs.items())) if attrs else ()
    return sig, frozen


class TraceCache:
    """A least-recently-used map from a signature to what was built for it (a runner), of at
    most ``maxsize`` entries; emptied by ``rt.empty_cache()``."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        on_empty_cache(self.clear)

    def get(self, key: Hashable, build: Callable[[], object]):
        """The entry of ``key``, built by ``build()`` on a miss."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        value = build()          # outside the lock: a build may trace and compile for seconds
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
