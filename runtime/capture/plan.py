"""The one plan runner behind bound replay (``Executable``), ``CompiledGraph`` and constant
folding.

``build_plan(device, units, inputs, params, outputs)`` lowers each unit once, at bind time, to
one callable over *values* (kernel-set payloads on a plain device, tensors elsewhere):

- an op on a plain device: ``dispatch.plain_step`` (the kernel set's prepared unary/binary
  kernel, or a closure over the catalogue lowering with the operand shapes/dtypes, attrs and
  the rule's plan bound);
- a fused program (plain devices only): the kernel set's ``fused(program, payloads)``, called
  in place;
- an op on any other device (autodiff): ``device.execute(spec, args, attrs, plan)``,
  called in place with its bound spec, attrs and the rule's plan.

Literal (Python scalar) operands get constant slots.  The step list is then unrolled into one
generated function (``_generate``): ``run(v0, v1, ...)`` takes the per-call values (inputs, then
parameters), runs one line ``s<out> = f<k>(s<a>, s<b>)`` (or the ``execute``/``fused`` call) per
step (``s<d> = None`` where a value dies) and returns the outputs (wrapped into tensors on a
plain device).  A call costs one Python call per step and nothing else.  Only slot numbers and
step indices are written into the source; the callables, literals and output metadata are passed
in its namespace.
"""
from __future__ import annotations

import time

from ..core.errors import CaptureError
from ..core.shapes import prod
from ..kernel_sets import supports
from ..ops.catalogue import CATALOGUE, _Meta
from ..tensor import Tensor
from .ir import TensorIr

__all__ = ["GraphPlan", "build_plan", "spec_of"]


def spec_of(name: str):
    """The catalogue entry of graph op ``name`` (``CaptureError`` kind ``UnknownOp`` if none)."""
    s = CATALOGUE.get(name)
    if s is None:
        raise CaptureError("UnknownOp", f"graph op {name!r} is not registered in this process; "
                                        f"register it with rt.custom_op({name!r}, ...) before replaying")
    return s


class GraphPlan:
    """A lowered, unrolled plan: ``plan(values) -> outputs`` (``values``: one tensor per
    per-call slot, inputs then parameters, in the order given to ``build_plan``)."""

    __slots__ = ("device", "plain", "run", "n_steps", "n_args", "parallel")

    def __init__(self, device, plain, run, n_steps, n_args, parallel=False):
        self.device, self.plain, self.run, self.n_steps, self.n_args = (
            device, plain, run, n_steps, n_args)
        self.parallel = parallel    # whether a unit may run a parallel kernel (``keep_warm``)

    def __call__(self, values) -> tuple:
        if not self.plain:
            return self.run(*values)
        try:
            return self.run(*[v._payload for v in values])
        except IndexError as exc:   # kernels check index values, the only thing they see first
            from ..core.errors import IndexOutOfRangeError
            raise IndexOutOfRangeError(f"replay: {exc}") from None

    def __len__(self) -> int:
        return self.n_steps


def _metas(operands) -> tuple:
    return tuple(_Meta(a.shape, a.dtype) if type(a) is TensorIr else a for a in operands)


def build_plan(device, units, inputs, params, outputs) -> GraphPlan:
    """Lower ``units`` (``("op", OperationIr)`` or ``("fused", FusedProgram, in ids, out ids)``,
    in an executable order) for ``device``.  ``inputs`` and ``params`` are the ids whose values
    each call passes (in that order), ``outputs`` the ``TensorIr``s it returns (on a plain
    device wrapped into new tensors of those shapes and dtypes)."""
    from .. import dispatch
    plain = device.family == "plain"
    slot: dict = {}

    def slot_of(tid):
        s = slot.get(tid)
        if s is None:
            s = slot[tid] = len(slot)
        return s

    arg_slots = [slot_of(t) for t in inputs] + [slot_of(t) for t in params]
    literals: dict = {}      # literal slot -> value
    nlit = [0]

    def literal(v):
        k = nlit[0]
        nlit[0] += 1
        literals[k] = v
        return ("k", k)

    ks = dispatch.kernels_for(device) if plain else None
    execute = device.execute
    lowered = []             # (kind, what, operand refs, out slots); kind "call": what(*refs),
    #                          "exec": device.execute(*what with the refs as args), "fused"
    reads: list = []         # per unit: the tensor ids it reads
    big: list = []           # per unit: how large a parallel kernel it may run (elements)
    for unit in units:
        if unit[0] == "op":
            op = unit[1]
            spec = spec_of(op.op)
            out = op.outputs[0]
            attrs = dict(op.attrs)
            refs = tuple(("s", slot_of(a.id)) if type(a) is TensorIr else literal(a)
                         for a in op.args)
            metas = _metas(op.args)
            plan = spec.infer(metas, attrs)     # (the graph is checked: it gives out's shape and dtype)
            if plain:
                fn = dispatch.plain_step(device, spec, metas, attrs, plan)
                lowered.append(("call", fn, refs, (slot_of(out.id),)))
            else:
                lowered.append(("exec", (spec, attrs, plan), refs, (slot_of(out.id),)))
            reads.append([t.id for t in op.inputs])
            big.append(max([prod(out.shape)] + [prod(t.shape) for t in op.inputs]))
        else:
            _, prog, in_ids, out_ids = unit
            if not plain:
                raise CaptureError("CompileOnAutodiff", f"fused programs run on plain devices, "
                                                        f"not on {device}")
            lowered.append(("fused", prog, tuple(("s", slot_of(t)) for t in in_ids),
                            tuple(slot_of(t) for t in out_ids)))
            reads.append(list(in_ids))
            big.append(prod(prog.shape))      # (a fused product's operands say little)
    out_slots = [slot_of(t.id) for t in outputs]

    # a value dies after its last read unless the caller passes or receives it
    keep = set(arg_slots) | set(out_slots)
    last: dict = {}
    for k, ids in enumerate(reads):
        for t in ids:
            last[slot[t]] = k
    dead = [[] for _ in lowered]
    for s, k in last.items():
        if s not in keep:
            dead[k].append(s)
    out_meta = [(t.shape, t.dtype) for t in outputs] if plain else None
    warm = None
    if plain and supports(ks, "keep_warm"):
        # units that may run a parallel kernel: an op with a large operand or result, a fused
        # program with a large result
        warm = (ks.keep_warm, ks.keep_warm_s, [n >= ks.parallel_min for n in big])
        if not any(warm[2]):
            warm = None         # (nothing to keep awake for)
    run = _generate(lowered, dead, arg_slots, out_slots, literals, device, out_meta,
                    execute, ks.fused if plain else None,
                    ks.fused_fn if plain and supports(ks, "fused_fn") else None, warm)
    return GraphPlan(device, plain, run, len(lowered), len(arg_slots), warm is not None)


def _generate(lowered, dead, arg_slots, out_slots, literals, device, out_meta, execute, fused,
              fused_fn=None, warm=None):
    ns: dict = {"X": execute, "FU": fused}
    lines = [f"def run({', '.join(f'a{i}' for i in range(len(arg_slots)))}):"]
    for i, s in enumerate(arg_slots):
        lines.append(f"    s{s} = a{i}")
    for k, v in literals.items():
        ns[f"k{k}"] = v
    if warm is not None:
        # the kernel set's workers sleep a while after a parallel kernel, and waking them costs
        # more than a small kernel: a serial unit with a unit that may run one after it starts
        # with a no-op parallel region (``keep_warm``) once that while is nearly over
        ns["KW"], ns["KWS"], par = warm
        ns["CLK"] = time.perf_counter
        lines.append("    T = CLK()")
        last_par = max(k for k, p in enumerate(par) if p)

    def ref(r):
        return f"s{r[1]}" if r[0] == "s" else f"k{r[1]}"

    for k, ((kind, what, refs, outs), d) in enumerate(zip(lowered, dead)):
        args = ", ".join(ref(r) for r in refs)
        if warm is not None and not par[k] and k < last_par:
            lines.append("    if CLK() - T > KWS:")
            lines.append("        KW()")
            lines.append("        T = CLK()")
        if kind == "call":          # a prepared step: f(*payloads)
            ns[f"f{k}"] = what
            lines.append(f"    s{outs[0]} = f{k}({args})")
        elif kind == "exec":        # device.execute(spec, args, attrs, plan)
            ns[f"p{k}"], ns[f"t{k}"], ns[f"h{k}"] = what
            lines.append(f"    s{outs[0]} = X(p{k}, ({args}{',' if refs else ''}), t{k}, h{k})")
        elif fused_fn is not None:  # a fused program's prepared runner: g(payloads)
            ns[f"g{k}"] = fused_fn(what)
            lines.append(f"    {''.join(f's{o}, ' for o in outs)}= g{k}([{args}])")
        else:                       # a fused program: kernel set's fused(program, payloads)
            ns[f"g{k}"] = what
            lines.append(f"    {''.join(f's{o}, ' for o in outs)}= FU(g{k}, [{args}])")
        if warm is not None and par[k]:
            lines.append("    T = CLK()")
        for x in d:
            lines.append(f"    s{x} = None")
    if warm is not None and not par[-1]:
        # ending on serial units: the caller's Python between two calls (a training loop's)
        # then starts from workers that spin afresh
        lines.append("    if CLK() - T > KWS:")
        lines.append("        KW()")
    if out_meta is None:
        lines.append(f"    return ({''.join(f's{x}, ' for x in out_slots)})")
    else:
        ns["W"] = Tensor._wrap
        ns["DEV"] = device
        rets = []
        for j, (s, meta) in enumerate(zip(out_slots, out_meta)):
            ns[f"S{j}"], ns[f"D{j}"] = meta
            rets.append(f"W(s{s}, S{j}, D{j}, DEV)")
        lines.append(f"    return ({''.join(r + ', ' for r in rets)})")
    exec(compile("\n".join(lines), "<capture plan>", "exec"), ns)
    return ns["run"]
