"""The captured graph IR: ``TensorIr``, ``OperationIr`` and ``CapturedGraph``.

The IR is plain data: an op name (the catalogue name), its operands in call order, result
``TensorIr``s (id, shape, dtype) and a dict of plain attribute values.  An operand is a
``TensorIr`` or a Python scalar literal (``bool``, ``int``, ``float``): ``x * 2.0`` records
``mul`` with operands ``(%x, 2.0)``.  Scalars are never constants (no ``init``, no value).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import dtypes as D

__all__ = ["TensorIr", "OperationIr", "CapturedGraph", "LITERAL_TYPES"]

#: The types of literal (Python scalar) operands.
LITERAL_TYPES = (bool, int, float)


class TensorIr(NamedTuple):
    """One tensor of the IR: its id, shape and dtype (a ``DType``)."""

    id: int
    shape: tuple
    dtype: D.DType

    def __str__(self) -> str:
        return f"%{self.id}:{self.dtype.name}{list(self.shape)}"


class OperationIr:
    """One recorded operation: ``op`` (catalogue name), ``args`` (its operands in call order:
    ``TensorIr``s and Python scalar literals), ``outputs`` (``TensorIr``) and ``attrs`` (plain
    values).  ``inputs`` is the tensor operands alone, in order (for consumers that only need
    tensors); ``operands()`` the call-order list.

    ``OperationIr(op, operands, outputs, attrs)``: ``operands`` in call order; with no scalar
    literal it is exactly ``inputs``.  (``inputs=`` may pass the tensor operands when the caller
    has them already; it must be what ``operands`` holds.)"""

    __slots__ = ("op", "args", "inputs", "outputs", "attrs")

    def __init__(self, op: str, operands: tuple, outputs: tuple, attrs: dict, inputs=None):
        self.op = op
        if inputs is None:  # (the recorder passes the tensor operands it already has)
            operands = inputs = tuple(operands)
            for a in operands:
                if type(a) is not TensorIr:
                    inputs = tuple([a for a in operands if type(a) is TensorIr])
                    break
        self.args = operands
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs

    def __eq__(self, other) -> bool:
        return (isinstance(other, OperationIr) and self.op == other.op
                and self.inputs == other.inputs and self.outputs == other.outputs
                and _attrs_equal(self.args, other.args)
                and _attrs_equal(self.attrs, other.attrs))

    __hash__ = None

    def operands(self) -> list:
        """The operand list in call order: ``TensorIr``s and scalar literals."""
        return list(self.args)

    def with_tensors(self, fn) -> "OperationIr":
        """A copy with every ``TensorIr`` (operands and outputs) replaced by ``fn(t)``."""
        return OperationIr(self.op, tuple(fn(a) if type(a) is TensorIr else a for a in self.args),
                           tuple(fn(t) for t in self.outputs), dict(self.attrs))

    def __repr__(self) -> str:
        return (f"OperationIr({self.op!r}, operands={list(self.args)}, "
                f"outputs={list(self.outputs)}, attrs={self.attrs!r})")

    def __str__(self) -> str:
        outs = ", ".join(str(o) for o in self.outputs)
        args = ", ".join(f"%{a.id}" if isinstance(a, TensorIr) else repr(a) for a in self.args)
        attrs = self.attrs
        extra = " " + ", ".join(f"{k}={_fmt(v)}" for k, v in attrs.items()) if attrs else ""
        return f"{outs} = {self.op}({args}){extra}"


def _fmt(v) -> str:
    if isinstance(v, slice):
        return f"{'' if v.start is None else v.start}:{'' if v.stop is None else v.stop}" + \
               ("" if v.step is None else f":{v.step}")
    if isinstance(v, tuple):
        return "(" + ", ".join(_fmt(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _attrs_equal(a, b) -> bool:
    """Equality of attr values that also tells 1 from 1.0 and True from 1 (exact round trip)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_attrs_equal(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_attrs_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, slice):
        return _attrs_equal((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a == b


class CapturedGraph:
    """A validated capture: ``operations``, ordered ``inputs``/``outputs`` ids and ``values``.

    ``values`` maps every initialized tensor id to its NumPy array (declared inputs' example
    values too); the constants (parameters) are the entries whose id is not an input.
    """

    def __init__(self, operations, inputs, outputs, values, tensors):
        self.operations = list(operations)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.values = dict(values)
        self._tensors = dict(tensors)  # id -> TensorIr for every tensor of the graph
        self._checked = False          # check() passed (bind/compile run it once per graph)
        self._run_cache: dict = {}     # (device, checkpointing) -> Executable of graph.run

    # ---- introspection ------------------------------------------------------------
    def tensor(self, tid: int) -> TensorIr:
        """The ``TensorIr`` (id, shape, dtype) of graph tensor ``tid``."""
        return self._tensors[tid]

    @property
    def input_tensors(self) -> list:
        """The ``TensorIr`` of each declared input, in order."""
        return [self._tensors[i] for i in self.inputs]

    @property
    def output_tensors(self) -> list:
        """The ``TensorIr`` of each output, in order."""
        return [self._tensors[i] for i in self.outputs]

    @property
    def constants(self) -> dict:
        """The initialized values that are not declared inputs (the graph's parameters)."""
        ins = set(self.inputs)
        return {k: v for k, v in self.values.items() if k not in ins}

    def __eq__(self, other) -> bool:
        if not isinstance(other, CapturedGraph):
            return NotImplemented
        return (self.inputs == other.inputs and self.outputs == other.outputs
                and self.operations == other.operations
                and self.values.keys() == other.values.keys()
                and all(_attrs_equal(v, other.values[k]) for k, v in self.values.items())
                and self._tensors == other._tensors)

    __hash__ = None

    def __str__(self) -> str:
        ins = set(self.inputs)
        lines = [f"CapturedGraph(inputs=[{', '.join(f'%{i}' for i in self.inputs)}], "
                 f"outputs=[{', '.join(f'%{i}' for i in self.outputs)}], "
                 f"{len(self.operations)} ops)"]
        declared = {o.outputs[0].id for o in self.operations if o.op == "init"}
        for i in self.inputs:
            if i not in declared:
                lines.append(f"  {self._tensors[i]} = placeholder  # input {self.inputs.index(i)}")
        for op in self.operations:
            line = f"  {op}"
            if op.op == "init":
                tid = op.outputs[0].id
                line += f"  # input {self.inputs.index(tid)}" if tid in ins else "  # constant"
            lines.append(line)
        lines.append(f"  return {', '.join(f'%{i}' for i in self.outputs)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"<CapturedGraph: {len(self.operations)} ops, inputs={self.inputs}, "
                f"outputs={self.outputs}>")

    def check(self) -> None:
        """Re-run every op's shape/dtype rule and check ids and stored values; raises
        ``CaptureError`` (``.kind == "InvalidGraph"``) naming the first op that disagrees.
        ``rt.load_graph`` calls it on every file it reads."""
        from .check import check_graph
        check_graph(self)
        self._checked = True

    def _ensure_checked(self) -> None:
        """``check()`` once per graph (what ``bind``/``compile`` call first); an op that is not
        registered in this process raises ``CaptureError`` kind ``UnknownOp`` first, naming
        ``rt.custom_op``.  Graphs are not mutated through the public API, so a passed check
        is kept."""
        if self._checked:
            return
        from .plan import spec_of
        for op in self.operations:
            if isinstance(op.op, str):
                spec_of(op.op)
        self.check()

    # ---- consumers --------------------------------------------------------------------
    def bind(self, device=None, trainable=None):
        """An executable for ``device``: constants uploaded once as ``.params``, the dispatch
        plan precomputed; ``exe(*inputs)`` runs it.  On an autodiff device the float
        parameters require grad unless ``trainable=False``."""
        from .replay import Executable
        return Executable(self, device, trainable)

    def run(self, *inputs, device=None):
        """Replay the graph on ``device`` (default: cpu); returns one tensor per output.

        The bound executable is built on the first run per device and kept on the graph; its
        constants are never trainable (``trainable=False``), so nothing a caller trains on an
        autodiff device (through ``bind``) is seen by ``run``."""
        from ..device import cpu, device as _parse_device
        dev = cpu() if device is None else _parse_device(device)
        key = (dev, getattr(dev, "checkpointing", None))
        exe = self._run_cache.get(key)
        if exe is None:
            from .replay import Executable
            exe = self._run_cache.setdefault(key, Executable(self, dev, trainable=False))
        return exe(*inputs)

    def compile(self, device=None):
        """An executable for ``device`` (default cpu) returning what ``run`` returns, with chains
        of elementwise ops (and around last-axis reductions/softmax, and matmul epilogues)
        fused into generated kernels; see docs/compile.md.  Not for autodiff devices."""
        from .compiled import CompiledGraph
        return CompiledGraph(self, device)

    def save(self, path) -> None:
        """Write the graph to ``path`` (deterministic; ids renumbered canonically)."""
        from .serialize import save_graph
        save_graph(self, path)

    def to_onnx(self, path, opset: int = 17):
        """Write the graph as an ONNX model (needs the ``onnx`` extra); docs/capture.md, "ONNX export"."""
        from .onnx import export_onnx
        return export_onnx(self, path, opset)

    def canonical(self) -> "CapturedGraph":
        """This graph with ids renumbered 1, 2, ... in order of appearance (what ``save`` writes)."""
        from .serialize import canonicalize
        return canonicalize(self)
