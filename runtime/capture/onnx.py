"""``graph.to_onnx(path)``: a captured graph as an ONNX model.

Pure Python over the IR; ``onnx`` is imported inside :func:`export_onnx` (the ``onnx`` extra:
``pip install 'numba-tensor-runtime[onnx]'``).  Declared inputs become graph inputs
``input_0..``, the outputs ``output_0..`` (each through an ``Identity``), constants (``init``
values that are not inputs) and the creation ops ``full``/``arange``/``eye`` (precomputed with
NumPy: they are deterministic) become initializers, and every other op maps onto ONNX ops or a
short composition of them.  Each op's ONNX operator is the one its catalogue record names
(``CATALOGUE[op].onnx``); ops that need more than a rename (``rsqrt``, ``gelu``, ``var``, ``ne``,
``clamp``, ``cast``, ``index``, ...) keep a lowering of their own, looked up by the record's
name, then by its family; an op whose record names no ONNX operator and that has no lowering
raises :class:`OnnxExportError` ("has no ONNX mapping").  Literal (Python scalar) operands
become 0-d initializers of the op's compute dtype; dtype promotion is made explicit with
``Cast``.

Known differences from ``graph.run`` (also in the README, "ONNX export"):

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
from ..lowprec import MOVES
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


_I64_MIN = -(2 ** 63)


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

    def _upcast(self, op, fn) -> str:
        """An op on a small dtype, as the runtime runs it (``runtime.lowprec``):
        Casts to the compute dtypes, the op there, a Cast back to the recorded dtype."""
        saved = {}
        args = []
        for a in op.args:
            if isinstance(a, TensorIr) and a.dtype.emulated:
                saved.setdefault(a.id, self.names[a.id])
                self.names[a.id] = self.cast(saved[a.id], a.dtype, a.dtype.compute)
                a = TensorIr(a.id, a.shape, a.dtype.compute)
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
        ins = set(g.inputs)
        for op in g.operations:
            if op.op == "init":
                tid = op.outputs[0].id
                if tid not in ins:
                    self.names[tid] = self.value_const(g.values[tid], g.tensor(tid).dtype,
                                                       f"const_{tid}")
                continue
            self.names[op.outputs[0].id] = self.emit(op)
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

    def emit(self, op) -> str:
        name = op.op
        s = CATALOGUE.get(name)
        if s is None or s.family == "custom":
            raise OnnxExportError(name, f"graph.to_onnx: op {name!r} is a custom op (rt.custom_op) "
                                        f"and has no ONNX equivalent; it cannot be exported")
        # a lowering of the record's own (keyed by its name), else its family's, which
        # renames the op to the ONNX operator the record names
        fn = getattr(self, f"op_{s.name}", None)
        if fn is None:
            fn = getattr(self, f"fam_{s.family}", None)
        if fn is None:
            raise _no_mapping(name)
        if name != "cast" and (any(t.dtype.emulated for t in op.inputs)
                               or any(t.dtype.emulated for t in op.outputs)):
            out = op.outputs[0].dtype
            if not (name in MOVES and all(t.dtype is out for t in op.inputs if t.dtype.emulated)):
                return self._upcast(op, fn)
        return fn(op)

    @staticmethod
    def record(op) -> str:
        """The ONNX operator the op's catalogue record names (``CATALOGUE[op].onnx``)."""
        onnx_name = CATALOGUE[op.op].onnx
        if not onnx_name:
            raise _no_mapping(op.op)
        return onnx_name

    # ---- elementwise ------------------------------------------------------------------------
    def fam_unary(self, op) -> str:
        name = op.op
        (xt,) = op.inputs
        x = self.names[xt.id]
        out = op.outputs[0].dtype
        x = self.cast(x, xt.dtype, out)
        if name in ("floor", "ceil") and not out.is_float:
            return x
        if name == "relu" and not out.is_float:
            return self.node("Max", [x, self.scalar(0, out)])
        return self.node(self.record(op), [x])

    def _unary_input(self, op):
        (xt,) = op.inputs
        out = op.outputs[0].dtype
        return self.cast(self.names[xt.id], xt.dtype, out), out

    def op_logical_not(self, op) -> str:
        return self.node(self.record(op), [self.to_bool(op.inputs[0])])

    def op_rsqrt(self, op) -> str:
        x, _ = self._unary_input(op)
        return self.node("Reciprocal", [self.node("Sqrt", [x])])

    def op_gelu(self, op) -> str:          # 0.5 x (1 + erf(x / sqrt 2))
        x, out = self._unary_input(op)
        e = self.node("Erf", [self.node("Mul", [x, self.scalar(0.7071067811865476, out)])])
        return self.node("Mul", [self.node("Mul", [self.scalar(0.5, out), x]),
                                 self.node("Add", [self.scalar(1.0, out), e])])

    def op_gelu_tanh(self, op) -> str:     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        x, out = self._unary_input(op)
        x3 = self.node("Mul", [self.node("Mul", [self.node("Mul", [self.scalar(0.044715, out), x]),
                                                 x]), x])
        t = self.node("Tanh", [self.node("Mul", [self.scalar(0.7978845608028654, out),
                                                 self.node("Add", [x, x3])])])
        return self.node("Mul", [self.node("Mul", [self.scalar(0.5, out), x]),
                                 self.node("Add", [self.scalar(1.0, out), t])])

    def op_clamp(self, op) -> str:
        (xt,) = op.inputs
        out = op.outputs[0].dtype
        x = self.cast(self.names[xt.id], xt.dtype, out)
        lo, hi = op.attrs.get("min"), op.attrs.get("max")
        if lo is not None:   # x < lo ? lo : x  (NaN stays NaN)
            lo_c = self.scalar(lo, out)
            x = self.node("Where", [self.node("Less", [x, lo_c]), lo_c, x])
        if hi is not None:
            hi_c = self.scalar(hi, out)
            x = self.node("Where", [self.node("Greater", [x, hi_c]), hi_c, x])
        return x

    def op_cast(self, op) -> str:
        (xt,) = op.inputs
        src, dst = xt.dtype, op.outputs[0].dtype
        x = self.names[xt.id]
        if src.is_half or dst.is_half:      # the half types convert through float32
            if src.is_half:
                x, src = self.cast(x, src, D.float32), D.float32
            if dst.is_half:
                return self.cast(self.cast(x, src, D.float32) if not src.is_float else x,
                                 src, dst)
        if not (src.is_float and dst.is_int):
            return self.cast(x, src, dst)
        # Saturating float -> int: NaN -> 0, truncation toward zero, out of range -> INT_MIN/MAX.
        info = np.iinfo(dst.np)
        lim = float(2 ** (info.bits - 1))            # exactly representable in every float dtype
        below = np.nextafter(src.np.type(lim), src.np.type(0))
        z = self.node("Where", [self.node("IsNaN", [x]), self.scalar(0, src), x])
        c = self.node("Clip", [z, self.scalar(-lim, src), self.const(np.array(below, src.np))])
        y = self.node("Cast", [c], to=self.elem(dst))
        big = self.node("GreaterOrEqual", [z, self.scalar(lim, src)])
        return self.node("Where", [big, self.scalar(info.max, dst), y])

    def _logical(self, op) -> str:         # operands as truth values
        a, b = op.operands()
        return self.node(self.record(op), [self.to_bool(a), self.to_bool(b)])

    op_logical_and = op_logical_or = _logical

    def fam_binary(self, op) -> str:
        name = op.op
        a, b = op.operands()
        plan = CATALOGUE[name].infer((a, b), {})
        compute, out = plan.compute, plan.dtype
        if compute.is_bool:
            if name in ("add", "maximum"):
                return self.node("Or", [self.to_bool(a), self.to_bool(b)])
            if name in ("mul", "minimum"):
                return self.node("And", [self.to_bool(a), self.to_bool(b)])
            if name not in ("eq", "ne"):   # ordered comparisons of bools: as 0/1 ints
                compute = D.int32
        xa, xb = self.operand(a, compute), self.operand(b, compute)
        r = self.node(self.record(op), [xa, xb])
        # a comparison gives bool already; arithmetic is cast from the compute dtype
        return r if out.is_bool else self.cast(r, compute, out)

    def _mod_operands(self, op):
        """fmod/remainder operands in the result dtype; an integer divisor of 0 or -1 becomes 1
        (the runtime gives 0 there, as ``x mod 1`` does; ONNX leaves ``Mod`` by 0 undefined)."""
        a, b = op.operands()
        dt = CATALOGUE[op.op].infer((a, b), {}).dtype
        xa, xb = self.operand(a, dt), self.operand(b, dt)
        if not dt.is_float:
            bad = self.node("Or", [self.node("Equal", [xb, self.scalar(0, dt)]),
                                   self.node("Equal", [xb, self.scalar(-1, dt)])])
            xb = self.node("Where", [bad, self.scalar(1, dt), xb])
        return xa, xb, dt

    def op_fmod(self, op) -> str:           # C's fmod: Mod with fmod=1 (the dividend's sign)
        xa, xb, _ = self._mod_operands(op)
        return self.node(self.record(op), [xa, xb], fmod=1)

    def op_remainder(self, op) -> str:      # the divisor's sign: Mod (ints), fmod + b (floats)
        xa, xb, dt = self._mod_operands(op)
        if not dt.is_float:
            return self.node(self.record(op), [xa, xb], fmod=0)
        r = self.node(self.record(op), [xa, xb], fmod=1)
        zero = self.scalar(0, dt)
        fix = self.node("And", [self.node("Not", [self.node("Equal", [r, zero])]),
                                self.node("Xor", [self.node("Less", [r, zero]),
                                                  self.node("Less", [xb, zero])])])
        return self.node("Where", [fix, self.node("Add", [r, xb]), r])

    def op_floor_divide(self, op) -> str:   # PyTorch's div_floor from Mod(fmod=1) and Div
        a, b = op.operands()
        dt = CATALOGUE[op.op].infer((a, b), {}).dtype
        xa, xb0 = self.operand(a, dt), self.operand(b, dt)
        _, xb, _ = self._mod_operands(op)                 # ints: divisors 0 and -1 made 1
        zero, one = self.scalar(0, dt), self.scalar(1, dt)
        m = self.node("Mod", [xa, xb], fmod=1)
        fix = self.node("And", [self.node("Not", [self.node("Equal", [m, zero])]),
                                self.node("Xor", [self.node("Less", [m, zero]),
                                                  self.node("Less", [xb, zero])])])
        if dt.is_float:
            d = self.node(self.record(op), [self.node("Sub", [xa, m]), xb])
            d = self.node("Where", [fix, self.node("Sub", [d, one]), d])
            f = self.node("Floor", [d])
            up = self.node("Greater", [self.node("Sub", [d, f]), self.scalar(0.5, dt)])
            f = self.node("Where", [up, self.node("Add", [f, one]), f])
            return self.node("Where", [self.node("Equal", [xb, zero]),
                                       self.node("Div", [xa, xb]), f])
        q = self.node(self.record(op), [xa, xb])           # truncates
        q = self.node("Where", [fix, self.node("Sub", [q, one]), q])
        q = self.node("Where", [self.node("Equal", [xb0, self.scalar(-1, dt)]),
                                self.node("Neg", [xa]), q])
        return self.node("Where", [self.node("Equal", [xb0, zero]), zero, q])

    def _bitwise(self, op, bool_op) -> str:
        """A bitwise op: the logical operator on bools, the record's Bitwise* on integers
        (opset >= 18)."""
        out = op.outputs[0].dtype
        operands = op.operands()
        if out.is_bool:
            return self.node(bool_op, [self.to_bool(a) for a in operands])
        if self.opset < 18:
            raise OnnxExportError(op.op, f"graph.to_onnx: {op.op} of integers needs opset >= 18 "
                                         f"({self.record(op)}), got opset {self.opset}")
        return self.node(self.record(op), [self.operand(a, out) for a in operands])

    def op_bitwise_and(self, op) -> str:
        return self._bitwise(op, "And")

    def op_bitwise_or(self, op) -> str:
        return self._bitwise(op, "Or")

    def op_bitwise_xor(self, op) -> str:
        return self._bitwise(op, "Xor")

    def op_bitwise_not(self, op) -> str:
        return self._bitwise(op, "Not")

    def op_ne(self, op) -> str:             # Not(Equal), in the comparison's dtype
        a, b = op.operands()
        compute = CATALOGUE["ne"].infer((a, b), {}).compute
        return self.node("Not", [self.node("Equal", [self.operand(a, compute),
                                                     self.operand(b, compute)])])

    def op_where(self, op) -> str:
        cond, a, b = op.operands()
        out = op.outputs[0].dtype
        return self.node(self.record(op), [self.to_bool(cond), self.operand(a, out),
                                           self.operand(b, out)])

    # ---- reductions -------------------------------------------------------------------------
    def fam_reduce(self, op) -> str:
        name = op.op
        (xt,) = op.inputs
        out = op.outputs[0].dtype
        axes, keep = op.attrs["axes"], op.attrs["keepdims"]
        x = self.names[xt.id]
        onnx_name = self.record(op)
        if name in ("max", "min"):
            if xt.dtype.is_bool:   # ReduceMax/Min take no bools before opset 20
                r = self.reduce(onnx_name, self.cast(x, D.bool_, D.int32), axes, keep)
                return self.cast(r, D.int32, D.bool_)
            return self.reduce(onnx_name, x, axes, keep)
        return self.reduce(onnx_name, self.cast(x, xt.dtype, out), axes, keep)

    def op_var(self, op) -> str:
        (xt,) = op.inputs
        out = op.outputs[0].dtype
        axes, keep = op.attrs["axes"], op.attrs["keepdims"]
        x = self.cast(self.names[xt.id], xt.dtype, out)
        k = int(np.prod([xt.shape[a] for a in axes], dtype=np.int64))
        d = self.node("Sub", [x, self.reduce("ReduceMean", x, axes, True)])
        s = self.reduce("ReduceSum", self.node("Mul", [d, d]), axes, keep)
        return self.node("Div", [s, self.scalar(float(max(k - op.attrs.get("ddof", 0), 0)), out)])

    def fam_arg_reduce(self, op) -> str:
        (xt,) = op.inputs
        x = self.names[xt.id]
        if xt.dtype.is_bool:
            x = self.cast(x, D.bool_, D.int32)
        onnx_name = self.record(op)
        axis, keep = op.attrs["axis"], op.attrs["keepdims"]
        if axis is None:
            flat = self.reshape(x, [-1]) if len(xt.shape) != 1 else x
            r = self.node(onnx_name, [flat], axis=0, keepdims=0, select_last_index=0)
            return self.reshape(r, op.outputs[0].shape)
        return self.node(onnx_name, [x], axis=int(axis), keepdims=int(keep), select_last_index=0)

    def fam_softmax(self, op) -> str:
        (xt,) = op.inputs
        x = self.cast(self.names[xt.id], xt.dtype, op.outputs[0].dtype)
        return self.node(self.record(op), [x], axis=int(op.attrs["axis"]))

    # ---- linalg and shape -------------------------------------------------------------------
    def op_matmul(self, op) -> str:
        a, b = op.inputs
        out = op.outputs[0]
        xa, xb = self.operand(a, out.dtype), self.operand(b, out.dtype)
        if len(a.shape) > 1 and len(b.shape) > 1:
            return self.node(self.record(op), [xa, xb])
        # A 1-D operand as an explicit row/column, then the result reshaped: onnxruntime 1.32's
        # Transpose+MatMul fusion computes wrong values for a 1-D right operand.
        if len(a.shape) == 1:
            xa = self.reshape(xa, (1,) + tuple(a.shape))
        if len(b.shape) == 1:
            xb = self.reshape(xb, tuple(b.shape) + (1,))
        return self.reshape(self.node(self.record(op), [xa, xb]), out.shape)

    def op_reshape(self, op) -> str:
        return self.node(self.record(op), [self.names[op.inputs[0].id],
                                           self.i64(list(op.attrs["shape"]))], allowzero=1)

    def op_permute(self, op) -> str:
        return self.node(self.record(op), [self.names[op.inputs[0].id]],
                         perm=[int(a) for a in op.attrs["axes"]])

    def op_expand(self, op) -> str:
        return self.node(self.record(op), [self.names[op.inputs[0].id],
                                           self.i64(list(op.attrs["shape"]))])

    def op_index(self, op) -> str:
        (xt,) = op.inputs
        x = self.names[xt.id]
        starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
        axis = out_pos = 0
        for k in op.attrs["key"]:
            if k is None:
                unsqueeze.append(out_pos)
                out_pos += 1
                continue
            n = xt.shape[axis]
            if isinstance(k, slice):
                start, stop, step = k.start, k.stop, k.step
                if len(range(start, stop, step)) == 0:
                    start, stop, step = 0, 0, 1
                elif step < 0 and stop < 0:       # runs down to index 0 inclusive
                    stop = _I64_MIN
                if (start, stop, step) != (0, n, 1):
                    for lst, v in ((starts, start), (ends, stop), (axes, axis), (steps, step)):
                        lst.append(v)
                out_pos += 1
            else:
                for lst, v in ((starts, int(k)), (ends, int(k) + 1), (axes, axis), (steps, 1)):
                    lst.append(v)
                squeeze.append(axis)
            axis += 1
        if axes:
            x = self.node(self.record(op), [x, self.i64(starts), self.i64(ends), self.i64(axes),
                                            self.i64(steps)])
        if squeeze:
            x = self.node("Squeeze", [x, self.i64(squeeze)])
        if unsqueeze:
            x = self.node("Unsqueeze", [x, self.i64(unsqueeze)])
        if not (axes or squeeze or unsqueeze):
            x = self.node("Identity", [x])
        return x

    def op_slice_assign(self, op) -> str:
        xt = op.inputs[0]
        value = op.operands()[1]
        dt = op.outputs[0].dtype
        x = self.names[xt.id]
        key = [k for k in op.attrs["key"] if k is not None]   # one entry per axis of x
        ranges = [range(k.start, k.stop, k.step) if isinstance(k, slice) else range(k, k + 1)
                  for k in key]
        lens = [len(r) for r in ranges]
        if isinstance(value, TensorIr):
            v = self.cast(self.names[value.id], value.dtype, dt)
            region = [len(r) for r, k in zip(ranges, key) if isinstance(k, slice)]
            if tuple(value.shape) != tuple(region):
                v = self.node("Expand", [v, self.i64(region)])
        else:
            v = None
        if not xt.shape:                                    # 0-d: the value replaces x
            return self.reshape(v, []) if v is not None else self.scalar(value, dt)
        if 0 in lens:
            return self.node("Identity", [x])
        updates = (self.reshape(v, lens) if v is not None
                   else self.const(np.full(lens, np.array(value).astype(dt.np), dt.np)))
        grids = np.meshgrid(*[np.asarray(r, np.int64) for r in ranges], indexing="ij")
        idx = np.stack(grids, axis=-1).astype(np.int64)
        return self.node("ScatterND", [x, self.const(idx), updates])

    def op_pad(self, op) -> str:
        (xt,) = op.inputs
        pads, mode = op.attrs["pads"], op.attrs["mode"]
        onnx_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
        if mode == "circular" and self.opset < 19:
            raise OnnxExportError("pad", f"graph.to_onnx: circular pad needs opset >= 19 (Pad "
                                         f"mode='wrap'), got opset {self.opset}")
        amounts = [lo for lo, _ in pads] + [hi for _, hi in pads]
        return self.node(self.record(op), [self.names[xt.id], self.i64(amounts)],
                         mode=onnx_mode)

    def op_put(self, op) -> str:
        xt, it = op.inputs[0], op.inputs[1]
        value = op.operands()[2]
        dt = xt.dtype
        acc = bool(op.attrs["accumulate"])
        if acc and self.opset < 16:
            raise OnnxExportError("put", f"graph.to_onnx: put with accumulate needs opset >= 16 "
                                         f"(ScatterND with reduction='add'), got opset {self.opset}")
        n = int(np.prod(xt.shape, dtype=np.int64))
        ishape = [int(d) for d in it.shape]
        k = int(np.prod(ishape, dtype=np.int64))
        x = self.reshape(self.names[xt.id], [n])
        idx = self.reshape(self.cast(self.names[it.id], it.dtype, D.int64), [k])
        idx = self.node("Mod", [self.node("Add", [idx, self.i64(n)]), self.i64(n)])  # negatives
        idx = self.node("Unsqueeze", [idx, self.i64([1])])
        if isinstance(value, TensorIr):
            v = self.cast(self.names[value.id], value.dtype, dt)
            if tuple(value.shape) != tuple(ishape):
                v = self.node("Expand", [v, self.i64(ishape)])
            v = self.reshape(v, [k])
        else:
            v = self.const(np.full((k,), np.array(value).astype(dt.np), dt.np))
        if acc and dt.is_bool:                # logical or: add as int32, then != 0
            x, v = self.cast(x, dt, D.int32), self.cast(v, dt, D.int32)
        r = (self.node(self.record(op), [x, idx, v], reduction="add") if acc
             else self.node(self.record(op), [x, idx, v]))
        if acc and dt.is_bool:
            r = self.cast(r, D.int32, dt)
        return self.reshape(r, [int(d) for d in xt.shape])

    def op_take(self, op) -> str:
        xt, it = op.inputs
        x = self.names[xt.id]
        axis = op.attrs["axis"]
        if axis is None:
            x = self.reshape(x, [-1]) if len(xt.shape) != 1 else x
            axis = 0
        return self.node(self.record(op), [x, self.names[it.id]], axis=int(axis))

    def op_gather(self, op) -> str:
        xt, it = op.inputs
        return self.node(self.record(op), [self.names[xt.id], self.names[it.id]],
                         axis=int(op.attrs["axis"]))

    def op_scatter_add(self, op) -> str:
        xt, it, st = op.inputs
        if self.opset < 16:
            raise OnnxExportError("scatter_add", f"graph.to_onnx: scatter_add needs opset >= 16 "
                                                 f"(ScatterElements with reduction='add'), got "
                                                 f"opset {self.opset}")
        x, idx, src = self.names[xt.id], self.names[it.id], self.names[st.id]
        ishape = tuple(it.shape)
        if tuple(st.shape) != ishape:     # ONNX wants updates of the indices' shape
            src = self.node("Slice", [src, self.i64([0] * len(ishape)), self.i64(list(ishape)),
                                      self.i64(list(range(len(ishape))))])
        if not ishape:                    # ScatterElements needs rank >= 1
            x, idx, src = (self.reshape(v, [1]) for v in (x, idx, src))
        dt = xt.dtype
        if dt.is_bool:                    # logical or: add as int32, then != 0
            x, src = self.cast(x, dt, D.int32), self.cast(src, dt, D.int32)
        r = self.node(self.record(op), [x, idx, src], axis=int(op.attrs["axis"]),
                      reduction="add")
        if dt.is_bool:
            r = self.cast(r, D.int32, dt)
        return self.reshape(r, []) if not ishape else r

    def op_cat(self, op) -> str:
        out = op.outputs[0].dtype
        return self.node(self.record(op), [self.operand(t, out) for t in op.inputs],
                         axis=int(op.attrs["axis"]))

    # ---- convolution ------------------------------------------------------------------------
    def _window(self, op, kernel) -> dict:
        a = op.attrs
        return {"kernel_shape": list(kernel), "strides": list(a["stride"]),
                "pads": list(a["padding"]), "dilations": list(a["dilation"])}

    def op_conv2d(self, op) -> str:
        w = op.inputs[1]
        return self.node(self.record(op), [self.names[t.id] for t in op.inputs],
                         group=int(op.attrs["groups"]), **self._window(op, w.shape[2:]))

    def op_conv_transpose2d(self, op) -> str:
        w = op.inputs[1]
        return self.node(self.record(op), [self.names[t.id] for t in op.inputs],
                         group=int(op.attrs["groups"]),
                         output_padding=list(op.attrs["output_padding"]),
                         **self._window(op, w.shape[2:]))

    def _one_hot_kernel(self, channels, kernel, dt) -> str:
        """Weights (channels*kh*kw, 1, kh, kw) whose output channel c*kh*kw + i*kw + j picks
        kernel position (i, j) of input channel c: im2col as a grouped ``Conv``."""
        kh, kw = kernel
        eye = np.eye(kh * kw, dtype=dt.np).reshape(kh * kw, 1, kh, kw)
        return self.const(np.tile(eye, (channels, 1, 1, 1)))

    def op_unfold(self, op) -> str:
        # a grouped Conv with one-hot weights, its (N, C*kh*kw, oh, ow) output flattened
        (xt,) = op.inputs
        k = op.attrs["kernel_size"]
        c = xt.shape[1]
        y = self.node("Conv", [self.names[xt.id], self._one_hot_kernel(c, k, xt.dtype)],
                      group=int(c), **self._window(op, k))
        return self.reshape(y, op.outputs[0].shape)

    def op_fold(self, op) -> str:
        # the adjoint: a grouped ConvTranspose with the same one-hot weights; output_padding
        # gives back the rows/columns the window's stride never reached
        (xt,) = op.inputs
        a = op.attrs
        k, size = a["kernel_size"], a["output_size"]
        n, ck, _ = xt.shape
        c = ck // (k[0] * k[1])
        pads, st, dil = a["padding"], a["stride"], a["dilation"]
        grid = [(size[i] + pads[i] + pads[i + 2] - dil[i] * (k[i] - 1) - 1) // st[i] + 1
                for i in range(2)]
        opad = [size[i] - ((grid[i] - 1) * st[i] - pads[i] - pads[i + 2] + dil[i] * (k[i] - 1) + 1)
                for i in range(2)]
        x = self.reshape(self.names[xt.id], [n, ck] + grid)
        return self.node("ConvTranspose", [x, self._one_hot_kernel(c, k, xt.dtype)], group=int(c),
                         output_padding=opad, **self._window(op, k))

    # ---- sorting ----------------------------------------------------------------------------
    def _topk_indices(self, op, k, largest) -> str:
        (xt,) = op.inputs
        x = self.names[xt.id]
        if xt.dtype.is_bool:                 # TopK takes numbers only
            x = self.cast(x, xt.dtype, D.int32)
        _, idx = self.node(self.record(op), [x, self.i64([int(k)])], n_out=2,
                           axis=int(op.attrs["axis"]), largest=int(bool(largest)), sorted=1)
        return idx

    def op_argsort(self, op) -> str:        # TopK with k = the axis length
        xt = op.inputs[0]
        return self._topk_indices(op, xt.shape[op.attrs["axis"]], op.attrs["descending"])

    def op_topk(self, op) -> str:
        return self._topk_indices(op, op.attrs["k"], op.attrs["largest"])

    # ---- scans ------------------------------------------------------------------------------
    def op_cumsum(self, op) -> str:
        (xt,) = op.inputs
        x = self.cast(self.names[xt.id], xt.dtype, op.outputs[0].dtype)
        return self.node(self.record(op), [x, self.i64(int(op.attrs["axis"]))],
                         reverse=int(bool(op.attrs["reverse"])))

    # ---- creation ---------------------------------------------------------------------------
    def op_full(self, op) -> str:
        t = op.outputs[0]
        return self.const(np.full(t.shape, np.array(op.attrs["value"]).astype(t.dtype.np),
                                  t.dtype.np))

    def op_arange(self, op) -> str:
        t = op.outputs[0]
        n = t.shape[0]
        start, step = op.attrs["start"], op.attrs["step"]
        if t.dtype.is_float:
            a = (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(t.dtype.np)
        else:
            a = (np.int64(int(start)) + np.arange(n, dtype=np.int64) * np.int64(int(step)))
            a = a != 0 if t.dtype.is_bool else a.astype(t.dtype.np)
        return self.const(a)

    def op_eye(self, op) -> str:
        t = op.outputs[0]
        return self.const(np.eye(t.shape[0], t.shape[1], dtype=t.dtype.np))

    def op_rand(self, op) -> str:
        t = op.outputs[0]
        return self.node(self.record(op), [], dtype=self.elem(t.dtype), shape=list(t.shape),
                         low=0.0, high=1.0)

    def op_randn(self, op) -> str:
        t = op.outputs[0]
        return self.node(self.record(op), [], dtype=self.elem(t.dtype), shape=list(t.shape),
                         mean=0.0, scale=1.0)

    # ---- pooling and resampling (the ONNX forms come from runtime.ops.pool) -------------------
    def op_max_pool2d(self, op) -> str:
        from ..ops.pool import onnx_pool
        (xt,) = op.inputs
        form = onnx_pool(op.op, op.attrs, xt.shape, xt.dtype)
        if isinstance(form, str):
            raise OnnxExportError(op.op, f"graph.to_onnx: {op.op} {form}")
        op_type, attrs, factor = form
        y = self.node(op_type, [self.names[xt.id]], **attrs)
        return y if factor is None else self.node("Mul", [y, self.scalar(factor, xt.dtype)])

    op_adaptive_max_pool2d = op_avg_pool2d = op_adaptive_avg_pool2d = op_max_pool2d

    def op_max_pool2d_indices(self, op) -> str:
        # MaxPool's Indices count over the whole (N, C, H, W) tensor: subtract each plane's start
        from ..ops.pool import onnx_pool
        (xt,) = op.inputs
        form = onnx_pool(op.op, op.attrs, xt.shape, xt.dtype)
        if isinstance(form, str):
            raise OnnxExportError(op.op, f"graph.to_onnx: {op.op} {form}")
        n, c, h, w = xt.shape
        idx = self.node(form[0], [self.names[xt.id]], n_out=2, **form[1])[1]
        base = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
        return self.node("Sub", [idx, self.const(base)])

    def op_interpolate(self, op) -> str:
        from ..ops.pool import onnx_resize
        (xt,) = op.inputs
        scales = op.attrs["scales"]
        if scales is not None and not op.attrs.get("align_corners"):
            # PyTorch maps coordinates by the given scale_factor, as Resize does with scales
            args = ["", self.const(np.array([1.0, 1.0] + [float(s) for s in scales], np.float32))]
        else:
            args = ["", "", self.i64(list(xt.shape[:2]) + list(op.attrs["size"]))]
        return self.node("Resize", [self.names[xt.id]] + args, **onnx_resize(op.attrs))
