"""``graph.to_onnx(path)``: a captured graph as an ONNX model.

Pure Python over the IR; ``onnx`` is imported inside :func:`export_onnx` (the ``onnx`` extra:
``pip install 'numba-tensor-runtime[onnx]'``).  Declared inputs become graph inputs
``input_0..``, the outputs ``output_0..`` (each through an ``Identity``), constants (``init``
values that are not inputs) and the creation ops ``full``/``arange``/``eye`` (precomputed with
NumPy: they are deterministic) become initializers, and every other op maps onto ONNX ops or a
short composition of them.  Each op's lowering sits on its catalogue record, beside it in the
family module (``OpSpec.onnx_lower``, or ``OpSpec.onnx`` itself for an op that exports as a
composition with no one ONNX operator to name): ``lower(exporter, op)`` builds the nodes through
this module's helpers (``node``, ``cast``, ``operand``, ``scalar``, ``i64``, ...) and takes the
ONNX operator from the record (``record(op)``, that is ``CATALOGUE[op].onnx``); an op whose record
has no lowering, or names no ONNX operator where its lowering needs one, raises
:class:`OnnxExportError` ("has no ONNX mapping").  Literal (Python scalar) operands
become 0-d initializers of the op's compute dtype; dtype promotion is made explicit with
``Cast``.  An op a graph holds whole though it has a decomposition (``OpSpec.record_whole``:
a recurrent layer's recurrence) is written as that decomposition.

Known differences from ``graph.run`` (also in docs/capture.md, "ONNX export"):

- ``rand``/``randn`` become ``RandomUniform``/``RandomNormal``: other values than the runtime's
  seeded stream.
- ``cast`` float→int keeps our semantics (truncate, saturate, NaN→0) through a composition
  (``IsNaN``/``Where``/``Clip``/``Cast``); plain ONNX ``Cast`` leaves out-of-range values undefined.
- Float reductions, ``matmul``, ``softmax`` and transcendentals are onnxruntime's own kernels:
  equal within float rounding, not bit for bit.  ``argmax``/``argmin`` on NaN (we give the
  first NaN's index) and integer ``0 ** negative`` (we give 0) follow onnxruntime.

Custom ops (``rt.custom_op``) have no ONNX form: exporting a graph that holds one raises
:class:`OnnxExportError` naming the op; so does ``scatter_add`` below opset 16
(``ScatterElements`` gained ``reduction="add"`` there).
"""
from __future__ import annotations

import os

import numpy as np

from ..core import dtypes as D
from ..core.errors import ArgumentValueError, TensorRuntimeError
from ..ops.catalogue import CATALOGUE
from ..core.registry import Plan
from ..lowprec import has_uint64, needs_upcast, uint64_way
from .ir import CapturedGraph, OperationIr, TensorIr

__all__ = ["export_onnx", "OnnxExportError", "OnnxNotInstalledError", "MIN_OPSET"]

#: Lowest opset the exporter writes (Reshape ``allowzero``, Squeeze/Unsqueeze/ReduceSum axes
#: as inputs, per-axis Softmax).
MIN_OPSET = 14

_INSTALL_HINT = ("graph.to_onnx needs the optional `onnx` extra (packages onnx and, to run "
                 "the model, onnxruntime): pip install 'numba-tensor-runtime[onnx]'")


class OnnxNotInstalledError(ImportError):
    """The ``onnx`` package (the ``onnx`` extra) is not installed."""


class OnnxExportError(TensorRuntimeError, ValueError):
    """An op of the graph has no ONNX form (``.op`` names it)."""

    def __init__(self, op: str, message: str):
        super().__init__(message)
        self.op = op


def export_onnx(graph: CapturedGraph, path=None, opset: int = 17):
    """Write ``graph`` as an ONNX model to ``path`` (when given) and return the ``ModelProto``."""
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:
        raise OnnxNotInstalledError(_INSTALL_HINT) from e
    opset = int(opset)
    if opset < MIN_OPSET:
        raise ArgumentValueError(f"graph.to_onnx: opset must be >= {MIN_OPSET}, got {opset}")
    b = _Builder(graph, opset, onnx, helper, numpy_helper)
    model = b.build()
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model


def _no_mapping(name: str) -> OnnxExportError:
    why = getattr(CATALOGUE.get(name), "onnx_skip", None)
    return OnnxExportError(name, f"graph.to_onnx: op {name!r} has no ONNX mapping"
                                 + (f" ({why})" if why else ""))


class _Builder:
    def __init__(self, graph, opset, onnx, helper, numpy_helper):
        self.g = graph
        self.opset = opset
        self.onnx = onnx
        self.h = helper
        self.nh = numpy_helper
        self.nodes = []
        self.inits = []
        self.names = {}        # tensor id -> ONNX value name
        self.n = 0
        self.consts = {}       # (dtype, shape, bytes) -> name (dedup of small constants)

    # ---- helpers ----------------------------------------------------------------------
    def fresh(self, stem="v") -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def elem(self, dt: D.DType) -> int:
        if dt.is_half:
            from onnx import TensorProto
            return TensorProto.FLOAT16 if dt is D.float16 else TensorProto.BFLOAT16
        return self.h.np_dtype_to_tensor_dtype(np.dtype(dt.np))

    def value_const(self, storage, dt: D.DType, name) -> str:
        """An initializer holding a graph value (a half type's uint16 bits as that type)."""
        if dt is D.float16:
            return self.const(np.asarray(storage).view(np.float16), name=name)
        if dt is D.bfloat16:
            a = np.ascontiguousarray(storage, dtype=np.uint16)
            self.inits.append(self.h.make_tensor(name, self.elem(dt), list(a.shape),
                                                 a.astype("<u2").tobytes(), raw=True))
            return name
        return self.const(np.asarray(storage), name=name)

    def _upcast(self, op, fn, u64=D.int64) -> str:
        """An op on a small dtype, as the runtime runs it (``runtime.lowprec``):
        Casts to the compute dtypes (uint64 to ``u64``: its int64 bits, or a float dtype), the
        op there, a Cast back to the recorded dtype."""
        saved = {}
        args = []
        for a in op.args:
            if isinstance(a, TensorIr) and a.dtype.emulated:
                to = u64 if a.dtype is D.uint64 else a.dtype.compute
                saved.setdefault(a.id, self.names[a.id])
                self.names[a.id] = self.cast(saved[a.id], a.dtype, to)
                a = TensorIr(a.id, a.shape, to)
            elif type(a) is int and a >= 1 << 63:   # a uint64 scalar: its int64 bits
                a -= 1 << 64
            args.append(a)
        outs = tuple(TensorIr(t.id, t.shape, t.dtype.compute) for t in op.outputs)
        attrs = op.attrs
        if "dtype" in attrs and D.as_dtype(attrs["dtype"]).emulated:
            attrs = dict(attrs, dtype=D.as_dtype(attrs["dtype"]).compute.name)
        try:
            y = fn(OperationIr(op.op, tuple(args), outs, attrs))
        finally:
            self.names.update(saved)
        return self.cast(y, outs[0].dtype, op.outputs[0].dtype)

    def node(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh() for _ in range(n_out)]
        self.nodes.append(self.h.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, array, name=None) -> str:
        a = np.asarray(array)
        small = name is None and a.size <= 64
        key = (a.dtype.str, a.shape, a.tobytes()) if small else None
        if key is not None and key in self.consts:
            return self.consts[key]
        name = name or self.fresh("c")
        self.inits.append(self.nh.from_array(a if a.flags.c_contiguous else a.copy(order="C"), name))
        if key is not None:
            self.consts[key] = name
        return name

    def scalar(self, value, dt: D.DType) -> str:
        return self.const(np.array(value).astype(dt.np))

    def i64(self, values) -> str:
        return self.const(np.asarray(values, dtype=np.int64))

    def cast(self, name, src: D.DType, dst: D.DType) -> str:
        if src is dst:
            return name
        return self.node("Cast", [name], to=self.elem(dst))

    def operand(self, x, dt: D.DType) -> str:
        """A tensor operand cast to ``dt``, or a Python scalar as a 0-d ``dt`` constant."""
        if isinstance(x, TensorIr):
            return self.cast(self.names[x.id], x.dtype, dt)
        return self.scalar(x, dt)

    def to_bool(self, x) -> str:
        return self.operand(x, D.bool_) if isinstance(x, TensorIr) else self.scalar(bool(x), D.bool_)

    def reduce(self, op_type, x, axes, keepdims) -> str:
        axes = [int(a) for a in axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.node(op_type, [x, self.i64(axes)], keepdims=int(keepdims))
        return self.node(op_type, [x], axes=axes, keepdims=int(keepdims))

    def reshape(self, x, shape) -> str:
        return self.node("Reshape", [x, self.i64(list(shape))], allowzero=1)

    # ---- the model ----------------------------------------------------------------------
    def build(self):
        g, h = self.g, self.h
        inputs = []
        for k, tid in enumerate(g.inputs):
            t = g.tensor(tid)
            self.names[tid] = f"input_{k}"
            inputs.append(h.make_tensor_value_info(f"input_{k}", self.elem(t.dtype), list(t.shape)))
        self._emit_all(lambda tid: f"const_{tid}")
        outputs = []
        for k, tid in enumerate(g.outputs):
            t = g.tensor(tid)
            self.nodes.append(h.make_node("Identity", [self.names[tid]], [f"output_{k}"]))
            outputs.append(h.make_tensor_value_info(f"output_{k}", self.elem(t.dtype), list(t.shape)))
        graph = h.make_graph(self.nodes, "captured_graph", inputs, outputs, self.inits)
        opsets = [h.make_opsetid("", self.opset)]
        try:
            ir = h.find_min_ir_version_for(opsets)
        except Exception:  # an opset newer than this onnx knows
            ir = self.onnx.IR_VERSION
        return h.make_model(graph, opset_imports=opsets, ir_version=ir,
                            producer_name="numba-tensor-runtime")

    def _emit_all(self, const_name):
        """Every op of ``self.g`` (constants that are not inputs as initializers)."""
        g = self.g
        ins = set(g.inputs)
        for op in g.operations:
            if op.op == "init":
                tid = op.outputs[0].id
                if tid not in ins:
                    self.names[tid] = self.value_const(g.values[tid], g.tensor(tid).dtype,
                                                       const_name(tid))
                continue
            self.names[op.outputs[0].id] = self.emit(op)

    def _inline(self, op, spec) -> str:
        """An op the graph holds whole (its kernel runs when the graph runs) written as its
        decomposition: the ops ``spec.decompose`` records on operands like ``op``'s."""
        from .composite import record
        sub = record(spec, op.args, op.attrs)
        outer = self.g, self.names
        tensors = [a for a in op.args if isinstance(a, TensorIr)]
        self.g = sub
        self.names = {tid: outer[1][t.id] for tid, t in zip(sub.inputs, tensors)}
        try:
            self._emit_all(lambda tid: self.fresh("inlined_const_"))
            return self.names[sub.outputs[0]]
        finally:
            self.g, self.names = outer

    def emit(self, op) -> str:
        name = op.op
        s = CATALOGUE.get(name)
        if s is None or s.family == "custom":
            raise OnnxExportError(name, f"graph.to_onnx: op {name!r} is a custom op (rt.custom_op) "
                                        f"and has no ONNX equivalent; it cannot be exported")
        # the record's lowering (``OpSpec.onnx_lowering``), written beside it in its family module
        lower = s.onnx_lowering
        if lower is None:
            if s.record_whole and s.decompose is not None and not s.onnx_skip:
                return self._inline(op, s)
            raise _no_mapping(name)
        out = op.outputs[0]
        plan = Plan(out.shape, out.dtype, out.dtype)
        if needs_upcast(s, op.inputs, op.attrs, plan):
            u64 = D.int64
            if has_uint64(op.args, op.attrs, plan):
                way = uint64_way(s, op.args, plan)
                if way in ("order", "index", "refuse"):
                    raise OnnxExportError(name, f"graph.to_onnx: {name} on uint64 (operands "
                                                f"{', '.join(t.dtype.name for t in op.inputs)}) "
                                                f"has no ONNX lowering (the runtime computes "
                                                f"uint64 in int64); cast to int64 or float64 "
                                                f"first")
                if way == "float":
                    u64 = out.dtype.compute
            return self._upcast(op, lambda o: lower(self, o), u64)
        return lower(self, op)

    @staticmethod
    def record(op) -> str:
        """The ONNX operator the op's catalogue record names (``CATALOGUE[op].onnx``)."""
        onnx_name = CATALOGUE[op.op].onnx
        if not onnx_name or not isinstance(onnx_name, str):
            raise _no_mapping(op.op)
        return onnx_name

    @staticmethod
    def is_tensor(x) -> bool:
        """Whether operand ``x`` is a graph tensor (else a Python scalar)."""
        return isinstance(x, TensorIr)

    @staticmethod
    def error(op: str, message: str) -> OnnxExportError:
        """The typed error a lowering raises for an op it cannot export."""
        return OnnxExportError(op, message)
