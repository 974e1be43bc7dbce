"""Graph capture: a device whose kernels record IR instead of computing.

``cap = rt.CaptureDevice()``; ``with cap.capture_scope() as scope: ...; scope.complete(...)``;
``scope.graph`` is a ``CapturedGraph`` that replays (``run``/``bind``) on any device and
saves/loads (``save``/``rt.load_graph``).  See docs/capture.md.
"""
from __future__ import annotations

from ..core.errors import ArgumentTypeError
from .device import CaptureDevice, CaptureScope, CompletionToken
from .ir import CapturedGraph, OperationIr, TensorIr
from .replay import Executable
from .serialize import load_graph
from . import movement as _movement
from . import composite as _composite  # (installs the plain-device lowering of composite ops)

__all__ = ["CaptureDevice", "CaptureScope", "CompletionToken", "CapturedGraph", "OperationIr",
           "TensorIr", "Executable", "capture", "load_graph"]


def capture(fn, *example_inputs) -> CapturedGraph:
    """Capture ``fn(*example_inputs)`` on a fresh capture device: the example inputs (tensors,
    arrays or data) are the declared inputs and the returned tensor(s) the outputs."""
    import numpy as np
    from ..ops.api import tensor
    from ..tensor import Tensor
    if not callable(fn):
        raise ArgumentTypeError(f"capture: fn must be callable, got {type(fn).__name__}")
    dev = CaptureDevice()
    with dev.capture_scope() as scope:
        xs = []
        for x in example_inputs:
            if isinstance(x, Tensor):
                xs.append(x.to(dev))
            elif isinstance(x, np.ndarray):
                xs.append(tensor(x, device=dev))
            else:
                xs.append(tensor(x, device=dev))
        out = fn(*xs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        scope.complete(inputs=xs, outputs=outs)
    return scope.graph
