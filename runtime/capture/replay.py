"""Replay: interpret a ``CapturedGraph`` on a real device through the same device ``execute``
that eager ``dispatch`` reaches (SPEC §5).

``Executable`` does every lookup once, at bind time: the catalogue entry, the argument slots,
the attrs and the output shape/dtype of each op (the captured ones: inputs are checked
against the captured shapes and dtypes, so every later shape is the captured one).  A call is
then one tight loop of ``device.execute(spec, args, attrs, shape, dtype)``; on a plain device
each op is resolved at bind time to one ``fn(*payloads)`` (``dispatch.plain_step``: the kernel
set's prepared unary/binary kernel, or a closure over the catalogue lowering), and the loop
``slots[out] = fn(slots[a], slots[b])`` over raw payloads is unrolled into one generated
function (``_compile_steps``); only the graph outputs are wrapped into tensors.
"""
from __future__ import annotations

import numpy as np

from ..device import cpu, device as _parse_device
from ..errors import CaptureError, DTypeError, ShapeError
from ..ops.catalogue import CATALOGUE
from ..tensor import Tensor
from .ir import SCALARS_ATTR

__all__ = ["Executable"]


def _spec(name: str):
    s = CATALOGUE.get(name)
    if s is None:
        raise CaptureError("UnknownOp", f"graph op {name!r} is not registered in this process; "
                                        f"register it with rt.custom_op({name!r}, ...) before replaying")
    return s


def _compile_steps(steps, out_slots):
    """The call loop of a lowered plan, unrolled: ``run(slots) -> output payloads``.

    ``steps`` are ``(fn, operand slots, out slot, dead slots)``; the generated function reads
    the slots no step writes (inputs, constants, scalars) into locals once, then runs one line
    ``s<out> = f<k>(s<a>, s<b>)`` per step (and ``s<d> = None`` where a value dies), so a call
    costs one Python call per op and nothing else.  Only slot numbers and step indices are
    written into the source; the functions are passed in the namespace."""
    written = {out for _, _, out, _ in steps}
    read = []
    seen = set()
    for _, ins, _, _ in steps:
        for x in ins:
            if x not in written and x not in seen:
                seen.add(x)
                read.append(x)
    for x in out_slots:
        if x not in written and x not in seen:
            seen.add(x)
            read.append(x)
    ns = {}
    lines = ["def run(slots):"]
    lines += [f"    s{x} = slots[{x}]" for x in read]
    for k, (fn, ins, out, dead) in enumerate(steps):
        ns[f"f{k}"] = fn
        lines.append(f"    s{out} = f{k}({', '.join(f's{x}' for x in ins)})")
        for d in dead:
            lines.append(f"    s{d} = None")
    lines.append(f"    return ({''.join(f's{x}, ' for x in out_slots)})")
    exec(compile("\n".join(lines), "<replay plan>", "exec"), ns)
    return ns["run"]


class Executable:
    """A graph bound to a device: ``.params`` (constants on that device) and ``__call__``."""

    def __init__(self, graph, device=None, trainable=None):
        from .. import dispatch
        self.graph = graph
        self.device = dev = cpu() if device is None else _parse_device(device)
        if dev.family == "capture":
            raise CaptureError("ReplayOnCapture", "replay runs on a real device (cpu, cuda:N, "
                                                  "autodiff(...)), not on a capture device")
        inputs = list(graph.inputs)
        input_set = set(inputs)
        slot: dict = {}

        def slot_of(tid):
            s = slot.get(tid)
            if s is None:
                s = slot[tid] = len(slot)
            return s

        self._input_slots = tuple(slot_of(t) for t in inputs)
        self._input_irs = tuple(graph.tensor(t) for t in inputs)

        # Constants: uploaded once, trainable on an autodiff device.
        if trainable is None:
            trainable = dev.family == "autodiff"
        self.params: dict = {}
        param_slots = []
        for op in graph.operations:
            if op.op != "init":
                continue
            tid = op.outputs[0].id
            if tid in input_set:
                continue
            t = dispatch.create("init", dev, {"value": graph.values[tid]})
            if trainable and t.dtype.is_float:
                t = t.require_grad()
            self.params[tid] = t
            param_slots.append((slot_of(tid), tid))
        self._param_slots = tuple(param_slots)

        # The plan: (spec, arg slots, scalar template, attrs, shape, dtype, out slot, dead slots).
        last_use: dict = {}
        ops = [op for op in graph.operations if op.op != "init"]
        for k, op in enumerate(ops):
            for t in op.inputs:
                last_use[t.id] = k
        keep = input_set | set(graph.outputs) | set(self.params)
        plan = []
        for k, op in enumerate(ops):
            spec = _spec(op.op)
            attrs = dict(op.attrs)
            scalars = attrs.pop(SCALARS_ATTR, ())
            slots = tuple(slot_of(t.id) for t in op.inputs)
            if scalars:
                n = len(op.inputs) + len(scalars)
                template = [None] * n
                spos = {p for p, _ in scalars}
                for p, v in scalars:
                    template[p] = v
                positions = tuple(p for p in range(n) if p not in spos)
                template = (tuple(template), positions)
            else:
                template = None
            out = op.outputs[0]
            dead = tuple(slot[t.id] for t in op.inputs
                         if last_use.get(t.id) == k and t.id not in keep)
            plan.append((spec, slots, template, attrs, out.shape, out.dtype,
                         slot_of(out.id), dead))
        self._plan = tuple(plan)
        for tid in graph.outputs:
            slot_of(tid)
        self._out_slots = tuple(slot[t] for t in graph.outputs)
        self._nslots = len(slot)
        self._execute = dev.execute
        self._lowered = self._lower(graph) if dev.family == "plain" else None

    def _lower(self, graph):
        """For a plain device: the plan resolved to one ``fn(*payloads)`` per op.

        Every shape and dtype is known at bind time, so each op is resolved once with
        ``dispatch.plain_step``: attr-less unary/binary ops to the kernel set's prepared
        kernel, everything else to a closure over the catalogue lowering with its operand
        shapes/dtypes, attrs and output bound.  Scalar operands get constant slots, so the
        call loop only moves payloads from slot to slot and wraps the graph outputs."""
        from ..dispatch import plain_step
        from ..ops.catalogue import _Meta
        dev = self.device
        consts = [None] * self._nslots
        steps = []
        for (spec, slots, template, attrs, shape, dtype, out, dead), op in zip(
                self._plan, [o for o in graph.operations if o.op != "init"]):
            operands = op.operands()
            metas = tuple(_Meta(a.shape, a.dtype) if hasattr(a, "dtype") else a for a in operands)
            if template is None:
                ins = slots
            else:
                fixed, positions = template
                ins = [None] * len(fixed)
                for q, sl in zip(positions, slots):
                    ins[q] = sl
                for q, v in enumerate(fixed):
                    if ins[q] is None:
                        ins[q] = len(consts)
                        consts.append(v)
                ins = tuple(ins)
            steps.append((plain_step(dev, spec, metas, attrs, shape, dtype), ins, out, dead))
        outs = tuple((s, ir.shape, ir.dtype) for s, ir in zip(self._out_slots, graph.output_tensors))
        return tuple(consts), _compile_steps(steps, self._out_slots), outs

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
            arr = x if isinstance(x, np.ndarray) else np.asarray(x, dtype=ir.dtype.np)
            shape, dtype = tuple(arr.shape), arr.dtype
            if dtype == ir.dtype.np and shape == ir.shape:
                from .. import dispatch
                return dispatch.create("init", dev, {"value": np.require(arr, requirements="C")})
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
        n = len(self._input_slots)
        if len(inputs) != n:
            raise TypeError(f"the graph takes {n} input(s), got {len(inputs)}")
        env = [None] * self._nslots
        for k, (s, x) in enumerate(zip(self._input_slots, inputs)):
            env[s] = self._input(k, x)
        params = self.params
        for s, tid in self._param_slots:
            env[s] = params[tid]
        if self._lowered is not None:
            return self._run_lowered(env)
        execute = self._execute
        for spec, slots, template, attrs, shape, dtype, out, dead in self._plan:
            if template is None:
                args = tuple([env[s] for s in slots])
            else:
                fixed, positions = template
                args = list(fixed)
                for p, s in zip(positions, slots):
                    args[p] = env[s]
                args = tuple(args)
            env[out] = execute(spec, args, attrs, shape, dtype)
            for s in dead:
                env[s] = None
        return tuple([env[s] for s in self._out_slots])

    def _run_lowered(self, env) -> tuple:
        from ..errors import IndexOutOfRangeError
        consts, run, outs = self._lowered
        slots = list(consts)
        for i, t in enumerate(env):
            if t is not None:
                slots[i] = t._payload
        try:
            results = run(slots)
        except IndexError as exc:
            raise IndexOutOfRangeError(f"replay: {exc}") from None
        wrap = Tensor._wrap
        dev = self.device
        return tuple([wrap(p, shape, dtype, dev) for p, (_, shape, dtype) in zip(results, outs)])

    def __repr__(self) -> str:
        return (f"<Executable on {self.device}: {len(self._plan)} ops, "
                f"{len(self.params)} params>")
