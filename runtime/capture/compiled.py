"""``graph.compile(device)``: a captured graph with its elementwise chains fused (SPEC §5, §6).

``CompiledGraph`` is built once: constants are uploaded (and ops whose operands are all
constants are folded into new contiguous constants, e.g. a weight's transpose), the fusion pass
(``fuse.plan_fusion``) groups ops into ``FusedProgram``s, and each call runs the steps in order —
fused programs through ``dispatch.run_fused`` (one generated kernel each), every other op through
the device's normal ``execute``, exactly as ``graph.run`` does.  Results equal ``graph.run``'s
(elementwise bit for bit; reductions and softmax within rounding).

Compiled graphs are for inference: ``compile`` on an autodiff device raises ``CaptureError``
kind ``CompileOnAutodiff`` (use ``graph.bind(rt.autodiff(...))`` to train).  A plain device whose
kernel set has no ``fused`` method raises ``DeviceError`` naming the device.
"""
from __future__ import annotations

import hashlib

import numpy as np

from .. import dispatch
from ..device import cpu, device as _parse_device
from ..errors import CaptureError, DeviceError
from ..ops.catalogue import CATALOGUE
from .fuse import plan_fusion
from .ir import SCALARS_ATTR, CapturedGraph, OperationIr, TensorIr
from .replay import Executable, _spec

__all__ = ["CompiledGraph"]

_NO_FOLD = ("create", "custom")


def _drop_dead(graph: CapturedGraph) -> CapturedGraph:
    """The graph without ops whose values nothing reads (creation and custom ops are kept:
    they may draw random numbers or have effects)."""
    live = set(graph.outputs)
    keep = []
    for op in reversed(graph.operations):
        fam = CATALOGUE[op.op].family if op.op in CATALOGUE else "custom"
        if op.op == "init" or fam in _NO_FOLD or any(t.id in live for t in op.outputs):
            keep.append(op)
            live.update(t.id for t in op.inputs)
    if len(keep) == len(graph.operations):
        return graph
    keep.reverse()
    return CapturedGraph(keep, graph.inputs, graph.outputs, graph.values, graph._tensors)


class CompiledGraph:
    """An executable: ``exe(*inputs)`` returns what ``graph.run(*inputs, device=...)`` returns;
    ``explain()`` lists the generated kernels and the ops each covers."""

    def __init__(self, graph: CapturedGraph, device=None, fold_constants: bool = True):
        self.graph = graph
        self.device = dev = cpu() if device is None else _parse_device(device)
        if dev.family == "autodiff":
            raise CaptureError("CompileOnAutodiff",
                               f"graph.compile({dev}): compiled graphs are for inference and do not "
                               f"record gradients; use graph.bind({dev}) or graph.run(..., "
                               f"device={dev}) to train, and compile on {dev.inner}")
        if dev.family != "plain":
            raise CaptureError("ReplayOnCapture", "compile runs on a real device (cpu, cuda:N), "
                                                  "not on a capture device")
        ks = dispatch.kernels_for(dev)
        if not callable(getattr(ks, "fused", None)):
            raise DeviceError(f"{dev}: graph.compile is not supported on this device yet (the "
                              f"{dev.kind} kernel set has no fused kernels); use graph.run(..., "
                              f"device={dev}) or compile on cpu")
        self._input_irs = tuple(graph.tensor(t) for t in graph.inputs)
        self.params: dict = {}
        self.folded: list = []
        work = self._fold(graph) if fold_constants else graph
        for op in work.operations:
            if op.op == "init":
                tid = op.outputs[0].id
                if tid not in graph.inputs and tid not in self.params:
                    self.params[tid] = dispatch.create("init", dev, {"value": work.values[tid]})
        work = _drop_dead(work)
        self._work = work
        self.steps = plan_fusion(work)
        self._build_plan()

    # ---- compile time ---------------------------------------------------------------
    def _fold(self, graph: CapturedGraph) -> CapturedGraph:
        """Evaluate ops whose tensor operands are all constants; they become constants."""
        inputs = set(graph.inputs)
        const: dict = {}                       # tid -> Tensor on the device
        values = dict(graph.values)
        ops_out = []
        tensors = dict(graph._tensors)
        for op in graph.operations:
            if op.op == "init":
                ops_out.append(op)
                continue
            spec = _spec(op.op)
            is_const = (op.inputs and spec.family not in _NO_FOLD
                        and all(t.id not in inputs and t.id in values for t in op.inputs))
            if not is_const:
                ops_out.append(op)
                continue
            args = []
            for o in op.operands():
                if isinstance(o, TensorIr):
                    t = const.get(o.id)
                    if t is None:
                        t = const[o.id] = dispatch.create("init", self.device,
                                                          {"value": values[o.id]})
                    args.append(t)
                else:
                    args.append(o)
            attrs = {k: v for k, v in op.attrs.items() if k != SCALARS_ATTR}
            out = op.outputs[0]
            t = self.device.execute(spec, tuple(args), attrs, out.shape, out.dtype)
            arr = np.require(t.numpy(), requirements="C")
            values[out.id] = arr
            const[out.id] = dispatch.create("init", self.device, {"value": arr})
            ops_out.append(OperationIr("init", (), (out,), {}))
            self.folded.append(str(op))
        if not self.folded:
            return graph
        # drop constants nothing reads any more (folded away), keep declared inputs/outputs
        read = {t.id for op in ops_out for t in op.inputs} | set(graph.outputs) | inputs
        ops_out = [op for op in ops_out if op.op != "init" or op.outputs[0].id in read]
        keep = {op.outputs[0].id for op in ops_out if op.op == "init"} | inputs
        values = {k: v for k, v in values.items() if k in keep}
        return CapturedGraph(ops_out, graph.inputs, graph.outputs, values, tensors)

    def _build_plan(self):
        slot: dict = {}

        def slot_of(tid):
            s = slot.get(tid)
            if s is None:
                s = slot[tid] = len(slot)
            return s

        self._input_slots = tuple(slot_of(t) for t in self.graph.inputs)
        self._param_slots = tuple((slot_of(t), t) for t in self.params)
        plan = []
        for step in self.steps:
            if step[0] == "op":
                op = step[1]
                spec = CATALOGUE[op.op]
                attrs = {k: v for k, v in op.attrs.items() if k != SCALARS_ATTR}
                ops = op.operands()
                template = tuple(None if isinstance(o, TensorIr) else o for o in ops)
                tslots = tuple((i, slot_of(o.id)) for i, o in enumerate(ops)
                               if isinstance(o, TensorIr))
                out = op.outputs[0]
                plan.append(("op", spec, template, tslots, attrs, out.shape, out.dtype,
                             slot_of(out.id)))
            else:
                _, prog, in_ids, out_ids = step
                plan.append(("fused", prog, tuple(slot_of(t) for t in in_ids),
                             tuple(slot_of(t) for t in out_ids)))
        self._out_slots = tuple(slot_of(t) for t in self.graph.outputs)
        self._nslots = len(slot)
        self._plan = tuple(plan)

    # ---- run time -----------------------------------------------------------------------
    def _input(self, k, x):
        return Executable._input(self, k, x)

    def __call__(self, *inputs) -> tuple:
        """Run the compiled graph; returns one tensor per graph output, in order."""
        run_fused = dispatch.run_fused
        n = len(self._input_slots)
        if len(inputs) != n:
            raise TypeError(f"the graph takes {n} input(s), got {len(inputs)}")
        env = [None] * self._nslots
        for k, (s, x) in enumerate(zip(self._input_slots, inputs)):
            env[s] = self._input(k, x)
        params = self.params
        for s, tid in self._param_slots:
            env[s] = params[tid]
        dev = self.device
        execute = dev.execute
        for step in self._plan:
            if step[0] == "op":
                _, spec, template, tslots, attrs, shape, dtype, out = step
                args = list(template)
                for i, s in tslots:
                    args[i] = env[s]
                env[out] = execute(spec, tuple(args), attrs, shape, dtype)
            else:
                _, prog, ins, outs = step
                res = run_fused(dev, prog, [env[s] for s in ins])
                for s, t in zip(outs, res):
                    env[s] = t
        return tuple(env[s] for s in self._out_slots)

    # ---- introspection --------------------------------------------------------------------
    @property
    def programs(self) -> list:
        """The fused programs, in execution order."""
        return [s[1] for s in self.steps if s[0] == "fused"]

    def explain(self) -> str:
        """The generated kernels (one per fused program) with the ops each covers, then the ops
        that run through normal dispatch and the constants folded at compile time."""
        lines = [f"CompiledGraph on {self.device}: {len(self.programs)} fused kernel(s), "
                 f"{sum(1 for s in self.steps if s[0] == 'op')} unfused op(s), "
                 f"{len(self.folded)} folded op(s)"]
        k = 0
        for step in self.steps:
            if step[0] == "fused":
                prog = step[1]
                h = hashlib.sha256(prog.key().encode()).hexdigest()[:10]
                lines.append(f"kernel {k}: {prog.kind} shape={list(prog.shape)} "
                             f"inputs={len(prog.inputs)} outputs={len(prog.outputs)} "
                             f"[{h}] covers {len(prog.ops)} op(s):")
                lines += [f"    {c}" for c in prog.covers]
                k += 1
            else:
                lines.append(f"dispatch: {step[1]}")
        for f in self.folded:
            lines.append(f"folded: {f}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<CompiledGraph on {self.device}: {len(self.programs)} kernels, "
                f"{len(self.steps)} steps>")
