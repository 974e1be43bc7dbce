"""``CapturedGraph.check()``: re-derive every shape and dtype of a graph from its ops.

A graph read from a file is untrusted: replay and compile trust the declared shapes (they size
outputs and pick kernels by them), so a file whose stored values or declared results disagree
with what the ops compute must be refused before anything runs.  ``check`` walks the ops in
order and raises ``CaptureError(kind="InvalidGraph")`` naming the op (its index and name) at the
first of: an unknown op; an operand that is neither a graph input nor an earlier result; a
result id defined twice; a stored value whose shape or dtype is not its tensor's; a catalogue
shape/dtype rule that rejects the operands and attrs (an operand that is neither a ``TensorIr``
nor a bool/int/float literal included), or gives another result than the one
declared; a boundary tensor that does not exist.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core.errors import CaptureError, TensorRuntimeError
from ..core.shapes import MAX_ELEMENTS
from .ir import LITERAL_TYPES, TensorIr

__all__ = ["check_graph", "INVALID"]

INVALID = "InvalidGraph"


class _Operand:
    """A tensor operand as the catalogue's rules read it (shape, dtype, ndim)."""

    __slots__ = ("shape", "dtype", "ndim")

    def __init__(self, t: TensorIr):
        self.shape, self.dtype, self.ndim = tuple(t.shape), t.dtype, len(t.shape)


#: attrs whose type is the same for every op that has them (the rules read them as flags or
#: axes without checking their type; a crafted file could give them any JSON value)
_FLAGS = frozenset(("keepdims", "ceil_mode", "count_include_pad"))


def _is_int(v) -> bool:
    return type(v) is int


def _bad_attr(attrs: dict):
    """(name, value) of the first flag or axis attr of the wrong type, or None."""
    for k, v in attrs.items():
        if k in _FLAGS and type(v) is not bool:
            return k, v
        if k == "axes" and not (isinstance(v, tuple) and all(map(_is_int, v))):
            return k, v
        if k == "axis" and not (v is None or _is_int(v)
                                or (isinstance(v, tuple) and all(map(_is_int, v)))):
            return k, v
    return None


def _fail(message: str, tensor: int | None = None) -> CaptureError:
    return CaptureError(INVALID, f"invalid graph: {message}", tensor=tensor)


def _value_matches(value, t: TensorIr) -> bool:
    return (isinstance(value, np.ndarray) and tuple(value.shape) == tuple(t.shape)
            and value.dtype == t.dtype.np)


def _shape_ok(shape) -> bool:
    if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        return False
    n = 1
    for d in shape:
        n *= d
    return n <= MAX_ELEMENTS       # more than a tensor can have: no device could hold it


def check_graph(graph) -> None:
    """Raise ``CaptureError`` (``kind="InvalidGraph"``) unless every op's declared result is
    what the catalogue's rule gives for its operands, and every value and id is consistent."""
    from ..ops.catalogue import CATALOGUE

    tensors = graph._tensors
    for tid, t in tensors.items():
        if not isinstance(t, TensorIr) or t.id != tid or not _shape_ok(t.shape) \
                or not isinstance(t.dtype, D.DType):
            raise _fail(f"tensor {tid} is declared as {t!r}", tid)
    for what, ids in (("input", graph.inputs), ("output", graph.outputs)):
        for tid in ids:
            if tid not in tensors:
                raise _fail(f"graph {what} {tid!r} is not a tensor of the graph", None)
    if len(set(graph.inputs)) != len(graph.inputs):
        raise _fail("a graph input is declared twice")
    defined = set(graph.inputs)
    for tid, v in graph.values.items():
        if tid not in tensors or not _value_matches(v, tensors[tid]):
            got = (f"{v.dtype.name}{list(v.shape)}" if isinstance(v, np.ndarray)
                   else type(v).__name__)
            raise _fail(f"the stored value of tensor {tid} is {got}, declared "
                        f"{tensors[tid] if tid in tensors else 'nowhere'}", tid)
    for k, op in enumerate(graph.operations):
        where = f"operation {k} ({op.op!r})"
        spec = CATALOGUE.get(op.op) if isinstance(op.op, str) else None
        if spec is None:
            raise _fail(f"{where} is not an op of the catalogue")
        if len(op.outputs) != 1:
            raise _fail(f"{where} has {len(op.outputs)} results, not 1")
        out = op.outputs[0]
        if tensors.get(out.id) != out:
            raise _fail(f"{where}: result {out} is not the graph's tensor {out.id}", out.id)
        for a in op.args:
            if type(a) is not TensorIr and type(a) not in LITERAL_TYPES:
                raise _fail(f"{where}: operand {a!r:.60} is neither a tensor nor a bool, int or "
                            f"float literal", out.id)
        for t in op.inputs:
            if t.id not in defined:
                raise _fail(f"{where} reads tensor {t.id} before it is defined", t.id)
            if tensors.get(t.id) != t:
                raise _fail(f"{where}: operand {t} is not the graph's tensor {t.id}", t.id)
        if out.id in defined and not (op.op == "init" and out.id in graph.inputs):
            raise _fail(f"{where} defines tensor {out.id} a second time", out.id)
        defined.add(out.id)
        if op.op == "init":
            if out.id not in graph.values:
                raise _fail(f"{where}: constant {out.id} has no stored value", out.id)
            continue
        attrs = dict(op.attrs)
        try:
            args = tuple(_Operand(a) if type(a) is TensorIr else a for a in op.args)
            shape, dtype = spec.infer(args, attrs)[:2]
        except TensorRuntimeError as exc:
            raise _fail(f"{where} rejects its operands: {exc}", out.id) from None
        except Exception as exc:  # a malformed attr or scalar the rule cannot even read
            raise _fail(f"{where} has malformed operands or attrs "
                        f"({type(exc).__name__}: {exc})", out.id) from None
        bad = _bad_attr(attrs)   # what the rule let through, the kernels could not read
        if bad is not None:
            raise _fail(f"{where} has a malformed attr {bad[0]!r} ({bad[1]!r:.60})", out.id)
        if tuple(shape) != tuple(out.shape) or dtype != out.dtype:
            raise _fail(f"{where} gives {dtype.name}{list(shape)}, the graph declares "
                        f"{out.dtype.name}{list(out.shape)}", out.id)
    for tid in graph.outputs:
        if tid not in defined:
            raise _fail(f"graph output {tid} is never defined", tid)
