"""``graph.compile(device)``: a captured graph with its elementwise chains fused.

``CompiledGraph`` is built once: constants are uploaded (and ops whose operands are all
constants are folded into new contiguous constants, e.g. a weight's transpose), the fusion pass
(``fuse.plan_fusion``) groups ops into ``FusedProgram``s, and the steps are lowered by the same
plan runner as ``graph.run`` (``plan.build_plan``): fused programs to the kernel set's ``fused``
(one generated kernel each), every other op to the step ``graph.run`` uses for it.  Constant
folding runs its ops through that runner too.  Results equal ``graph.run``'s
(elementwise bit for bit; reductions and softmax within rounding; a max pool of a relu runs
as the relu of the max pool, one op ``max_pool2d_relu`` (``_pool_before_relu``), which may flip
the sign of a zero; a constant-weight 3x3 stride-1 conv2d may run as Winograd F(2x2, 3x3),
with such a pool after it fused in (``winograd.winograd_rewrite``): within rounding).

Compiled graphs are for inference: ``compile`` on an autodiff device raises ``CaptureError``
kind ``CompileOnAutodiff`` (use ``graph.bind(rt.autodiff(...))`` to train).  A plain device whose
kernel set has no ``fused`` method raises ``DeviceError`` naming the device.
"""
from __future__ import annotations

import hashlib

import numpy as np

from .. import dispatch
from ..device import cpu, device as _parse_device
from ..core.errors import CaptureError, DeviceError
from ..kernel_sets import supports
from ..ops.catalogue import CATALOGUE
from ..ops.create import init_attrs
from .fuse import plan_fusion
from .ir import CapturedGraph, OperationIr
from .plan import build_plan, spec_of as _spec
from .replay import Executable
from .winograd import winograd_rewrite

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


_MAX_POOLS = ("max_pool2d", "adaptive_max_pool2d")


def _pool_before_relu(graph: CapturedGraph) -> CapturedGraph:
    """``max_pool2d(relu(x))`` as ``relu(max_pool2d(x))`` where nothing else reads the relu:
    relu is monotone, so the two agree (a NaN stays a NaN; only the sign of a zero maximum may
    differ), and the relu then runs on the pooled tensor (a quarter of the elements for a
    2x2 pool), as one op ``max_pool2d_relu`` (the cpu kernels apply it as each maximum is
    stored).  Adaptive max pooling likewise (the op's attrs say which pool)."""
    ops = graph.operations
    producer = {t.id: op for op in ops for t in op.outputs}
    readers: dict = {}
    for op in ops:
        for t in op.inputs:
            readers[t.id] = readers.get(t.id, 0) + 1
    keep_out = set(graph.outputs) | set(graph.inputs)
    swaps = {}
    for op in ops:
        if op.op in _MAX_POOLS and len(op.args) == 1:
            y = op.inputs[0]
            r = producer.get(y.id)
            if (r is not None and r.op == "relu" and not r.attrs and len(r.args) == 1
                    and readers.get(y.id) == 1 and y.id not in keep_out):
                swaps[id(op)] = r
    if not swaps:
        return graph
    dropped = {id(r) for r in swaps.values()}
    out_ops = []
    for op in ops:
        if id(op) in dropped:
            continue
        r = swaps.get(id(op))
        if r is None:
            out_ops.append(op)
            continue
        out_ops.append(OperationIr("max_pool2d_relu", (r.inputs[0],), op.outputs,
                                   dict(op.attrs)))
    return CapturedGraph(out_ops, graph.inputs, graph.outputs, graph.values, graph._tensors)


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
        if not supports(ks, "fused"):
            raise DeviceError(f"{dev}: graph.compile is not supported on this device yet (the "
                              f"{dev.kind} kernel set has no fused kernels); use graph.run(..., "
                              f"device={dev}) or compile on cpu")
        graph._ensure_checked()
        self._input_irs = tuple(graph.tensor(t) for t in graph.inputs)
        self.params: dict = {}
        self.folded: list = []
        # max_pool2d(relu(x)) as one op first: the Winograd rewrite takes such a pool into the
        # conv before it (whose constant weight transform the fold then computes)
        work = winograd_rewrite(_pool_before_relu(graph), ks)
        work = self._fold(work) if fold_constants else work
        for op in work.operations:
            if op.op == "init":
                tid = op.outputs[0].id
                if tid not in graph.inputs and tid not in self.params:
                    self.params[tid] = dispatch.create(
                        "init", dev, init_attrs(work.values[tid], work.tensor(tid).dtype))
        work = _pool_before_relu(_drop_dead(work))
        self._work = work
        self.steps = plan_fusion(work)
        self._build_plan()

    # ---- compile time ---------------------------------------------------------------
    def _fold(self, graph: CapturedGraph) -> CapturedGraph:
        """Evaluate ops whose tensor operands are all constants, and the operand-less ops whose
        value their attrs fix (``OpSpec.constant``); they become constants.  The folded ops run
        once, as one plan, through the same runner as every call."""
        inputs = set(graph.inputs)
        values = graph.values
        known = set(values) - inputs          # constants, and the results folded so far
        folded = []
        ops_out = []
        for op in graph.operations:
            if op.op == "init":
                ops_out.append(op)
                continue
            spec = _spec(op.op)
            if ((op.inputs and spec.family not in _NO_FOLD
                 and all(t.id in known for t in op.inputs)) or (not op.inputs and spec.constant)):
                folded.append(op)
                known.add(op.outputs[0].id)
                ops_out.append(OperationIr("init", (), (op.outputs[0],), {}))
            else:
                ops_out.append(op)
        if not folded:
            return graph
        made = {op.outputs[0].id for op in folded}
        needed = {t.id for op in folded for t in op.inputs} - made
        read = [t for t in values if t in needed]
        plan = build_plan(self.device, [("op", op) for op in folded], (), read,
                          [op.outputs[0] for op in folded])
        dev = self.device
        results = plan([dispatch.create("init", dev, init_attrs(values[t], graph.tensor(t).dtype))
                        for t in read])
        values = dict(values)
        for op, t in zip(folded, results):
            values[op.outputs[0].id] = np.require(t.device.to_host(t), requirements="C")
            self.folded.append(str(op))
        # drop constants nothing reads any more (folded away), keep declared inputs/outputs
        read = {t.id for op in ops_out for t in op.inputs} | set(graph.outputs) | inputs
        ops_out = [op for op in ops_out if op.op != "init" or op.outputs[0].id in read]
        keep = {op.outputs[0].id for op in ops_out if op.op == "init"} | inputs
        values = {k: v for k, v in values.items() if k in keep}
        return CapturedGraph(ops_out, graph.inputs, graph.outputs, values, graph._tensors)

    def _build_plan(self):
        self._param_ids = tuple(self.params)
        self._n_inputs = len(self._input_irs)
        self._plan = build_plan(self.device, self.steps, self.graph.inputs, self._param_ids,
                                self.graph.output_tensors)

    # ---- run time -----------------------------------------------------------------------
    def _input(self, k, x):
        return Executable._input(self, k, x)

    # inputs checked and converted, parameters appended, the plan run: as a bound graph
    __call__ = Executable.__call__
    call_trusted = Executable.call_trusted
    parallel = Executable.parallel

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
