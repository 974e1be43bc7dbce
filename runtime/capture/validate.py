"""``complete()``'s boundary validation: the checks in a fixed order, the first failure raised."""
from __future__ import annotations

from ..core.errors import ArgumentTypeError, CaptureError
from ..tensor import Tensor

__all__ = ["boundary_ids", "validate"]


def boundary_ids(what: str, items) -> list:
    """Tensors or ints -> ids (in order)."""
    if isinstance(items, (Tensor, int)):
        items = (items,)
    out = []
    for x in items:
        if isinstance(x, Tensor):
            out.append(x.id)
        elif isinstance(x, int) and not isinstance(x, bool):
            out.append(x)
        else:
            raise ArgumentTypeError(f"complete(): graph {what} must be tensors or tensor ids, "
                            f"got {type(x).__name__}")
    return out


def _err(kind: str, message: str, boundary: str, tid: int) -> CaptureError:
    return CaptureError(kind, message, boundary=boundary, tensor=tid)


def _check_boundary(session, boundary: str, ids) -> None:
    seen = set()
    for tid in ids:
        if tid in seen:
            raise _err("DuplicateBoundary", f"duplicate graph {boundary} tensor {tid}", boundary, tid)
        seen.add(tid)
    for tid in ids:
        if tid not in session.tensors:
            raise _err("UnknownBoundary", f"unknown graph {boundary} tensor {tid}", boundary, tid)


def validate(session, inputs, outputs) -> None:
    """Raise the first boundary error of the session's graph."""
    _check_boundary(session, "input", inputs)
    _check_boundary(session, "output", outputs)
    for tid in inputs:
        if tid in session.produced:
            raise _err("InvalidInput", f"graph input tensor {tid} is produced within the graph",
                       "input", tid)
    if session.placeholders:
        declared = set(inputs)
        for tid in _placeholder_reads(session, outputs):
            if tid not in declared:
                raise _err("UndeclaredInput", f"graph reads undeclared input tensor {tid}",
                           "input", tid)
    # InvalidOutput: an output consumed by an in-place op.  The public API has no in-place op,
    # so every tensor survives the graph; the check is kept for parity with Burn.
    consumed = session.consumed
    for tid in outputs:
        if tid in consumed:
            raise _err("InvalidOutput", f"graph output tensor {tid} does not survive the graph",
                       "output", tid)


def _placeholder_reads(session, outputs):
    """Placeholder ids the graph reads (as an op operand or as an output), in first-use order."""
    ph = session.placeholders
    seen = []
    for op in session.operations:
        for t in op.inputs:
            if t.id in ph and t.id not in seen:
                seen.append(t.id)
    for tid in outputs:
        if tid in ph and tid not in seen:
            seen.append(tid)
    return seen
