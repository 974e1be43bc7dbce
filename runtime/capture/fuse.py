"""The fusion pass: group a captured graph's ops into fused programs.

Pure Python over the IR; no kernel is touched here.  ``plan_fusion(graph)`` walks the ops in
order and returns a list of steps, each either a plain op (run through normal dispatch) or a
``FusedProgram`` — plain data that a kernel set's ``fused(program, arrays)`` turns into one
generated kernel.

Which ops join which group is decided by the op record's ``fusion`` class (``OpSpec.fusion``),
never by its name.  Groups (all members of a group have the group's full shape ``S``; external
inputs broadcast):

- ``elementwise``: a DAG of ops of class unary/binary/select/clamp (``cast`` is unary).
- ``rows``: elementwise ops around last-axis reductions (class ``row_reduce``: ``sum mean max
  min`` of float inputs over the last axis) and last-axis softmaxes (class ``row_softmax``:
  ``softmax``/``log_softmax``); values are *elem*-level (shape
  ``S``) or *row*-level (shape ``S[:-1] + (1,)``: keepdims reductions and ops on them).  A
  ``keepdims=False`` reduction may only be an output of the group.  Softmax, layer-norm.
- ``matmul``: a 2-D @ 2-D float matmul (class ``matmul``, one dtype) with an elementwise
  epilogue (bias, activation) applied to its output in place.

A member's value leaves the group (is materialised) only when a graph output or an op outside
the group reads it.  A group never depends on itself through an outside op (cycle check), so
the steps run in order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .. import kernel_sets
from ..ops.catalogue import CATALOGUE, _Meta

__all__ = ["FusedInput", "FusedOp", "FusedProgram", "plan_fusion", "ELEMENTWISE_FAMILIES",
           "ROW_REDUCTIONS"]

ELEMENTWISE_FAMILIES = ("unary", "binary", "select")
#: the ``OpSpec.fusion`` classes of the elementwise members of a group
ELEMENTWISE_CLASSES = ("unary", "binary", "select", "clamp")
# the row ops the kernel sets' fused kernels compute (jit_kernels' op table)
ROW_REDUCTIONS, _ROW_OPS = kernel_sets.fused_row_ops()
ROW_SOFTMAX = tuple(o for o in _ROW_OPS if o not in ROW_REDUCTIONS)


@dataclass(frozen=True)
class FusedInput:
    """An array operand of a fused program: its shape and dtype (NumPy name)."""

    shape: tuple
    dtype: str


@dataclass(frozen=True)
class FusedOp:
    """One op of a fused program.

    ``args`` are refs: ``("in", k)`` input array k, ``("op", j)`` the value of op j,
    ``("sc", k)`` scalar k of the program, ``None`` an absent operand (clamp bounds).
    ``compute`` is the dtype operands are converted to (binary: the promoted type; unary,
    where, cast: the output type), ``dtype`` the result dtype, ``level`` "elem" or "row".
    """

    op: str
    args: tuple
    compute: str
    dtype: str
    level: str = "elem"
    attrs: tuple = ()

    def attr(self, name, default=None):
        for k, v in self.attrs:
            if k == name:
                return v
        return default


@dataclass(frozen=True)
class FusedProgram:
    """A fused kernel's description: plain data, hashable, independent of array values.

    ``kind`` is "elementwise", "rows" or "matmul"; ``shape`` the group's full shape; ``inputs``
    the array operands; ``scalars`` ``(value, dtype)`` pairs passed at call time (not part of
    ``key``); ``ops`` in evaluation order; ``outputs`` op indices whose values are returned,
    with their IR shapes in ``output_shapes``.  ``covers`` lists the graph ops it replaces.
    """

    kind: str
    shape: tuple
    inputs: tuple
    scalars: tuple
    ops: tuple
    outputs: tuple
    output_shapes: tuple
    covers: tuple = field(default=(), compare=False)

    def key(self) -> str:
        """The structure the generated kernel depends on: kind, ops, dtypes and ranks."""
        return self._key

    def __hash__(self) -> int:
        # kernel sets look programs up on every call: hash the cached key string, not every
        # field of every op (equal programs have equal keys)
        return hash(self._key)

    @cached_property
    def _key(self) -> str:
        # computed once per program: kernel sets look their kernels up by it on every call
        ins = ",".join(f"{i.dtype}{len(i.shape)}" for i in self.inputs)
        sc = ",".join(d for _, d in self.scalars)
        ops = ";".join(f"{o.op}:{o.level}:{o.compute}>{o.dtype}({','.join(map(_ref, o.args))})"
                       f"{''.join(f'{k}={v!r}' for k, v in o.attrs)}" for o in self.ops)
        outs = ",".join(map(str, self.outputs))
        return f"{self.kind}|r{len(self.shape)}|{ins}|{sc}|{ops}|{outs}"

    @property
    def output_dtypes(self) -> tuple:
        return tuple(self.ops[j].dtype for j in self.outputs)

    def describe(self) -> str:
        """One line per covered op (for ``explain``)."""
        return "\n".join(self.covers)


def _ref(r) -> str:
    return "-" if r is None else f"{r[0]}{r[1]}"


# ------------------------------------------------------------------------------ classification
def _np(dt) -> str:
    return dt.np.name if hasattr(dt.np, "name") else str(dt.np)


def _small(op) -> bool:
    """An op on or to a small dtype: it runs unfused, upcast (``runtime.lowprec``)."""
    return any(t.dtype.emulated for t in op.inputs) or any(t.dtype.emulated for t in op.outputs)


def _fusion(op):
    """The op's ``OpSpec.fusion`` class (None for an op the catalogue lacks)."""
    s = CATALOGUE.get(op.op)
    return None if s is None else s.fusion


def _is_elementwise(op) -> bool:
    return _fusion(op) in ELEMENTWISE_CLASSES and len(op.outputs) == 1 and not _small(op)


def _row_reduction(op) -> bool:
    cls = _fusion(op)
    if cls is None or len(op.inputs) != 1 or _small(op):
        return False
    x = op.inputs[0]
    if len(x.shape) == 0 or x.shape[-1] <= 1 or not x.dtype.is_float:
        return False
    if cls == "row_reduce":
        return tuple(op.attrs.get("axes", ())) == (len(x.shape) - 1,) \
            and op.outputs[0].dtype is x.dtype
    if cls == "row_softmax":
        return op.attrs.get("axis") == len(x.shape) - 1 and op.outputs[0].dtype is x.dtype
    return False


def _fusable_matmul(op) -> bool:
    if _fusion(op) != "matmul" or _small(op):
        return False
    a, b = op.inputs
    return (len(a.shape) == 2 and len(b.shape) == 2 and a.dtype is b.dtype and a.dtype.is_float
            and all(d > 0 for d in a.shape + b.shape))


# ------------------------------------------------------------------------------ grouping
class _Group:
    __slots__ = ("gid", "kind", "shape", "members", "level")

    def __init__(self, gid, kind, shape):
        self.gid, self.kind, self.shape = gid, kind, tuple(shape)
        self.members: list = []        # op indices, in graph order
        self.level: dict = {}          # op index -> "elem" | "row"


def plan_fusion(graph, min_ops: int = 2):
    """Steps for ``graph``: a list of ``("op", OperationIr)`` and ``("fused", FusedProgram,
    [input ids], [output ids])`` in an executable order.  Groups of fewer than ``min_ops``
    ops run unfused (a lone op gains nothing from a generated kernel)."""
    ops = [op for op in graph.operations if op.op != "init"]
    producer: dict = {}                 # tid -> op index
    for k, op in enumerate(ops):
        for t in op.outputs:
            producer[t.id] = k
    group_of: dict = {}                 # op index -> _Group
    deps: dict = {}                     # tid -> frozenset of gids it (transitively) depends on
    groups: dict = {}
    row_out_nokeep: set = set()         # op indices of keepdims=False reductions (output only)

    alias: dict = {}                    # merged gid -> gid it was merged into

    def resolve(gid):
        while gid in alias:
            gid = alias[gid]
        return gid

    def tdeps(tid):
        return {resolve(x) for x in deps.get(tid, ())}

    def ext_inputs(g):
        for m in g.members:
            for t in ops[m].inputs:
                pk = producer.get(t.id)
                if pk is None or group_of.get(pk) is not g:
                    yield t.id

    def try_merge(a, b):
        """Merge elementwise group b into a (same shape) when neither reads the other
        through an outside op."""
        if any(a.gid in tdeps(t) for t in ext_inputs(b) if group_of.get(producer.get(t)) is not a):
            return False
        if any(b.gid in tdeps(t) for t in ext_inputs(a) if group_of.get(producer.get(t)) is not b):
            return False
        for m in b.members:
            group_of[m] = a
            a.level[m] = b.level[m]
        a.members = sorted(a.members + b.members)
        alias[b.gid] = a.gid
        del groups[b.gid]
        return True

    def can_join(g, k, op):
        # every operand not produced in g must not depend on g (no cycle through outside ops)
        for t in op.inputs:
            pk = producer.get(t.id)
            if pk is not None and group_of.get(pk) is g:
                if pk in row_out_nokeep:
                    return False
                continue
            if g.gid in tdeps(t.id):
                return False
        return True

    def level_in(g, op):
        """The level op would have in row group g, or None if it does not fit."""
        out = op.outputs[0]
        S = g.shape
        if _row_reduction(op):
            return "red" if tuple(op.inputs[0].shape) == S else None
        if tuple(out.shape) == S:
            return "elem"
        if g.kind == "rows" and tuple(out.shape) == S[:-1] + (1,):
            # row-level: every in-group operand must be row-level
            for t in op.inputs:
                pk = producer.get(t.id)
                if pk is not None and group_of.get(pk) is g and g.level.get(pk) != "row":
                    return None
            return "row"
        return None

    next_gid = 0
    for k, op in enumerate(ops):
        ew = _is_elementwise(op)
        red = _row_reduction(op)
        mm = _fusable_matmul(op)
        placed = None
        if ew or red:
            # try the groups of this op's producers, latest first
            cands = []
            for t in op.inputs:
                pk = producer.get(t.id)
                if pk is not None and pk in group_of and group_of[pk] not in cands:
                    cands.append(group_of[pk])
            if ew and len(cands) > 1:
                # independent elementwise chains meeting here: merge them into one group
                main = max(cands, key=lambda g: (g.kind != "elementwise", g.members[-1]))
                for g in list(cands):
                    if g is not main and g.kind == "elementwise" and g.shape == main.shape \
                            and tuple(op.outputs[0].shape) == main.shape and try_merge(main, g):
                        cands.remove(g)
            for g in sorted(cands, key=lambda g: -g.members[-1]):
                if red and g.kind == "matmul":
                    continue
                lvl = level_in(g, op) if (g.kind == "rows" or red) else (
                    "elem" if tuple(op.outputs[0].shape) == g.shape else None)
                if lvl is None or not can_join(g, k, op):
                    continue
                if red and g.kind == "elementwise":
                    g.kind = "rows"
                placed = g
                if lvl == "red":
                    g.level[k] = "row" if _fusion(op) == "row_reduce" else "elem"
                else:
                    g.level[k] = lvl
                break
            if placed is None:
                if red:
                    placed = _Group(next_gid, "rows", op.inputs[0].shape)
                    placed.level[k] = "row" if _fusion(op) == "row_reduce" else "elem"
                else:
                    placed = _Group(next_gid, "elementwise", op.outputs[0].shape)
                    placed.level[k] = "elem"
                groups[next_gid] = placed
                next_gid += 1
        elif mm:
            placed = _Group(next_gid, "matmul", op.outputs[0].shape)
            placed.level[k] = "elem"
            groups[next_gid] = placed
            next_gid += 1
        d = frozenset().union(*[tdeps(t.id) for t in op.inputs]) if op.inputs else frozenset()
        if placed is not None:
            placed.members.append(k)
            group_of[k] = placed
            d = d | {placed.gid}
            if red and _fusion(op) == "row_reduce" and not op.attrs.get("keepdims"):
                row_out_nokeep.add(k)
        for t in op.outputs:
            deps[t.id] = d

    # which member values leave their group
    graph_outputs = set(graph.outputs)
    needed_outside: set = set()
    for k, op in enumerate(ops):
        g = group_of.get(k)
        for t in op.inputs:
            pk = producer.get(t.id)
            if pk is not None and pk in group_of and group_of[pk] is not g:
                needed_outside.add(t.id)

    # build programs; a group whose cost is not worth a kernel runs unfused
    programs: dict = {}
    for g in groups.values():
        if not any(ops[k].outputs[0].id in graph_outputs or ops[k].outputs[0].id in needed_outside
                   for k in g.members):
            continue  # dead group (its values are never read)
        if len(g.members) < min_ops and g.kind != "rows":
            continue  # a lone row reduction/softmax still gains (one pass, fast exp)
        if g.kind == "matmul" and len(g.members) == 1:
            continue
        programs[g.gid] = _build_program(g, ops, producer, group_of, graph_outputs,
                                         needed_outside)

    return _order_steps(ops, group_of, programs)


def _order_steps(ops, group_of, programs):
    """Topological order of units (plain ops and whole groups), stable by first appearance."""
    unit_of = {}
    units = []
    for k in range(len(ops)):
        g = group_of.get(k)
        if g is not None and g.gid in programs:
            key = ("g", g.gid)
        else:
            key = ("o", k)
        if key not in unit_of:
            unit_of[key] = len(units)
            units.append(key)
        unit_of[("k", k)] = unit_of[key]
    producer_unit = {}
    for k, op in enumerate(ops):
        for t in op.outputs:
            producer_unit[t.id] = unit_of[("k", k)]
    preds = [set() for _ in units]
    for k, op in enumerate(ops):
        u = unit_of[("k", k)]
        for t in op.inputs:
            pu = producer_unit.get(t.id)
            if pu is not None and pu != u:
                preds[u].add(pu)
    done = [False] * len(units)
    order = []
    remaining = list(range(len(units)))
    while remaining:
        progressed = False
        rest = []
        for u in remaining:
            if all(done[p] for p in preds[u]):
                done[u] = True
                order.append(u)
                progressed = True
            else:
                rest.append(u)
        if not progressed:  # cannot happen (groups are convex); fall back to graph order
            raise AssertionError("fusion produced a cyclic plan")
        remaining = rest
    steps = []
    for u in order:
        kind, idx = units[u]
        if kind == "o":
            steps.append(("op", ops[idx]))
        else:
            steps.append(("fused",) + programs[idx])
    return steps


def _build_program(g, ops, producer, group_of, graph_outputs, needed_outside):
    """(FusedProgram, input ids, output ids) for group ``g``."""
    member_index = {k: j for j, k in enumerate(g.members)}
    inputs: list = []
    input_ids: list = []
    in_index: dict = {}
    scalars: list = []
    fops: list = []

    def in_ref(t):
        k = in_index.get(t.id)
        if k is None:
            k = in_index[t.id] = len(inputs)
            inputs.append(FusedInput(tuple(t.shape), _np(t.dtype)))
            input_ids.append(t.id)
        return ("in", k)

    def sc_ref(v, dtype):
        scalars.append((v, dtype))
        return ("sc", len(scalars) - 1)

    def ref(t):
        pk = producer.get(t.id)
        if pk is not None and group_of.get(pk) is g:
            return ("op", member_index[pk])
        return in_ref(t)

    for k in g.members:
        op = ops[k]
        out = op.outputs[0]
        level = g.level[k]
        cls = CATALOGUE[op.op].fusion
        attrs = op.attrs
        if cls == "matmul":
            a, b = op.inputs
            fops.append(FusedOp(op.op, (in_ref(a), in_ref(b)), _np(out.dtype), _np(out.dtype)))
            continue
        operands = op.operands()
        if cls == "binary":
            metas = [_Meta(o.shape, o.dtype) if hasattr(o, "dtype") else o for o in operands]
            plan = CATALOGUE[op.op].infer(tuple(metas), {})
            cd, od = plan.compute, plan.dtype
            args = tuple(ref(o) if hasattr(o, "dtype") else sc_ref(o, _np(cd)) for o in operands)
            fops.append(FusedOp(op.op, args, _np(cd), _np(od), level))
        elif cls == "select":
            od = _np(out.dtype)
            cv = ("bool", od, od)
            args = tuple(ref(o) if hasattr(o, "dtype") else sc_ref(o, cv[i])
                         for i, o in enumerate(operands))
            fops.append(FusedOp(op.op, args, od, od, level))
        elif cls == "clamp":
            od = _np(out.dtype)
            lo, hi = attrs.get("min"), attrs.get("max")
            args = (ref(operands[0]), None if lo is None else sc_ref(lo, od),
                    None if hi is None else sc_ref(hi, od))
            fops.append(FusedOp(op.op, args, od, od, level))
        elif cls == "unary":   # unary ops and cast
            od = _np(out.dtype)
            fops.append(FusedOp(op.op, (ref(operands[0]),), od, od, level))
        else:                  # row reduction / softmax
            x = op.inputs[0]
            at = (("keepdims", bool(attrs.get("keepdims", True))),) if cls == "row_reduce" else ()
            fops.append(FusedOp(op.op, (ref(x),), _np(out.dtype), _np(out.dtype), level, at))

    outputs, output_ids, output_shapes = [], [], []
    for k in g.members:
        t = ops[k].outputs[0]
        if t.id in graph_outputs or t.id in needed_outside:
            outputs.append(member_index[k])
            output_ids.append(t.id)
            output_shapes.append(tuple(t.shape))
    covers = tuple(str(ops[k]) for k in g.members)
    prog = FusedProgram(g.kind, g.shape, tuple(inputs), tuple(scalars), tuple(fops),
                        tuple(outputs), tuple(output_shapes), covers)
    return prog, input_ids, output_ids
