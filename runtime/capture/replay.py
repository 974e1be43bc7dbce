"""Replay: a ``CapturedGraph`` bound to a real device.

``Executable`` does every lookup once, at bind time: the graph is checked
(``CapturedGraph.check``, once per graph), the constants are uploaded as ``.params``, and the
ops are lowered by the one plan runner (``plan.build_plan``) to an unrolled step list over
payloads (plain devices: ``dispatch.plain_step``) or tensors (autodiff: ``device.execute``).
Inputs are checked against the captured shapes and dtypes, so every later shape is the
captured one.  A call is one generated function call (one Python call per op); only the graph
outputs are wrapped into tensors.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..device import cpu, device as _parse_device
from ..ops.create import init_attrs
from ..core.errors import ArgumentTypeError, CaptureError, DTypeError, ShapeError
from ..tensor import Tensor
from .plan import build_plan

__all__ = ["Executable"]


class Executable:
    """A graph bound to a device: ``.params`` (constants on that device) and ``__call__``."""

    def __init__(self, graph, device=None, trainable=None):
        from .. import dispatch
        self.graph = graph
        self.device = dev = cpu() if device is None else _parse_device(device)
        if dev.family == "capture":
            raise CaptureError("ReplayOnCapture", "replay runs on a real device (cpu, cuda:N, "
                                                  "autodiff(...)), not on a capture device")
        graph._ensure_checked()
        input_set = set(graph.inputs)
        self._input_irs = tuple(graph.tensor(t) for t in graph.inputs)
        self._n_inputs = len(self._input_irs)

        # Constants: uploaded once, trainable on an autodiff device.
        if trainable is None:
            trainable = dev.family == "autodiff"
        self.params: dict = {}
        for op in graph.operations:
            if op.op != "init":
                continue
            tid = op.outputs[0].id
            if tid in input_set:
                continue
            t = dispatch.create("init", dev, init_attrs(graph.values[tid], graph.tensor(tid).dtype))
            if trainable and t.dtype.is_float:
                t = t.require_grad()
            self.params[tid] = t
        self._param_ids = tuple(self.params)
        self._plan = build_plan(dev, [("op", op) for op in graph.operations if op.op != "init"],
                                graph.inputs, self._param_ids, graph.output_tensors)

    def parameters(self) -> list:
        """The parameter tensors, in graph order."""
        return list(self.params.values())

    def _input(self, k: int, x) -> Tensor:
        ir = self._input_irs[k]
        dev = self.device
        if isinstance(x, Tensor):
            if x.device is not dev and x.device != dev:
                x = x.to(dev)
            shape, dtype = x.shape, x.dtype
        else:
            try:
                arr = x if isinstance(x, np.ndarray) else np.asarray(x, dtype=ir.dtype.np)
            except (TypeError, ValueError, OverflowError):
                raise ArgumentTypeError(f"graph input {k} (tensor {ir.id}) expects a tensor, an "
                                        f"array or numbers of shape {ir.shape} {ir.dtype.name}, "
                                        f"got {x!r:.60}") from None
            if ir.dtype.is_half and arr.dtype.name == ir.dtype.name and arr.dtype.kind in "fV":
                arr = D.storage_of(arr, ir.dtype)     # a float16 array for a float16 input
            shape, dtype = tuple(arr.shape), arr.dtype
            if dtype == ir.dtype.np and shape == ir.shape:
                from .. import dispatch
                return dispatch.create("init", dev, init_attrs(np.require(arr, requirements="C"),
                                                               ir.dtype))
            dtype = getattr(dtype, "name", dtype)
        if shape != ir.shape:
            raise ShapeError(f"graph input {k} (tensor {ir.id}) expects shape {ir.shape} "
                             f"{ir.dtype.name}, got shape {shape} {getattr(dtype, 'name', dtype)}")
        if dtype is not ir.dtype:
            raise DTypeError(f"graph input {k} (tensor {ir.id}) expects dtype {ir.dtype.name}, "
                             f"got {getattr(dtype, 'name', dtype)}; cast it first")
        return x

    def __call__(self, *inputs) -> tuple:
        """Run the graph; returns one tensor per graph output, in order."""
        if len(inputs) != self._n_inputs:
            raise ArgumentTypeError(f"the graph takes {self._n_inputs} input(s), got {len(inputs)}")
        vals = [self._input(k, x) for k, x in enumerate(inputs)]
        if self._param_ids:
            params = self.params
            vals += [params[t] for t in self._param_ids]
        return self._plan(vals)

    @property
    def parallel(self) -> bool:
        """Whether a step of the plan may run a parallel kernel (its device's worker threads are
        then worth keeping awake before a call: ``dispatch.keep_warm``)."""
        return self._plan.parallel

    def call_trusted(self, values: list) -> tuple:
        """Run on ``values``, tensors on this device with exactly the graph inputs' shapes and
        dtypes (``rt.compile`` checks them once per signature, not per call)."""
        if self._param_ids:
            params = self.params
            values = values + [params[t] for t in self._param_ids]
        return self._plan(values)

    def __repr__(self) -> str:
        return (f"<Executable on {self.device}: {len(self._plan)} ops, "
                f"{len(self.params)} params>")
