"""Elementwise ops: unary, binary (NumPy broadcasting, Python-scalar operands), ``where``,
``cast``, ``clamp``, and composites written as their decomposition.

A native op is one ``_unary``/``_binary`` line here (dtype rule, ONNX name, gradient) plus its
scalar body in ``jit_kernels``' op table; a composite is one ``_composite`` record here.

Gradient conventions at non-differentiable points (as in PyTorch): ``abs``/``relu`` use 0 at 0;
``clamp`` passes the gradient where ``min <= x <= max``; ``maximum``/``minimum`` split it evenly
between tied operands.
"""
from __future__ import annotations

import builtins as _b
import math

import numpy as np

from ..dispatch import dispatch as run, fast_binary, fast_unary
from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..tensor import Tensor
from .args import bool_arg, number_arg, operand, tensor_arg
from ..core.registry import (CATALOGUE, Meta, OpSpec, Plan, dtype_names, float_of, front_end, register,
                             shape_of)
from ..core.shapes import broadcast_shapes

# --------------------------------------------------------------------------- dtype rules
# dtype rule per unary op: "same" keeps a numeric dtype (bool rejected), "float" maps
# ints/bools to float32, "bool" always gives bool, "clamp" promotes by the bounds.
# kind per binary op: "arith" (promoted), "div" (true division), "cmp" (bool out),
# "logical" (operands as truth values, bool out).
BINARY: dict = {}     # name -> (kind, onnx name): binary_dtypes reads the kind
# Two bool tensors: these stay bool (logical meaning, as in PyTorch); sub/pow/div are rejected
# or promoted by their own rules.
_BOOL_OK = {"add", "mul", "maximum", "minimum"}


def unary_dtype(name: str, rule: str, x, attrs) -> D.DType:
    dt = x.dtype
    if rule == "same":
        if dt.is_bool:
            raise DTypeError(f"{name}: not defined for dtype bool (cast to an int or float dtype first)")
        return dt
    if rule == "float":
        return dt if dt.is_float else D.float32
    if rule == "bool":
        return D.bool_
    if rule == "integer":                   # bitwise_not: ints and bools
        if dt.is_float:
            raise DTypeError(f"{name}: not defined for dtype {dt.name} (integer and bool tensors "
                             f"only)")
        return dt
    # clamp: the tensor's dtype, promoted by float bounds (int tensor, float bound -> float32)
    if dt.is_bool:
        raise DTypeError("clamp: not defined for dtype bool")
    out = dt
    for bound in (attrs.get("min"), attrs.get("max")):
        if bound is not None:
            out = D.result_type(Meta((), out), bound, "clamp")
    return out


def _infer_same(name, rule="same"):
    """The rule of a composite unary op whose dtype follows ``unary_dtype``'s ``rule``."""
    def infer(args, attrs):
        (x,) = args
        dt = unary_dtype(name, rule, x, attrs)
        return Plan(x.shape, dt, dt, "same")
    return infer


def layout_of(shape, args) -> str:
    """``Plan.layout`` of an elementwise op with result shape ``shape``."""
    for a in args:
        if getattr(a, "shape", shape) != shape:
            return "broadcast"
    return "same"


def _cmp_dtype(name, a, b) -> D.DType:
    """A comparison's compute dtype: the promoted one, widened to int64 when a Python int
    operand does not fit it (``int32 < 2**40`` compares in int64, as NumPy 2 gets right)."""
    for s, t in ((a, b), (b, a)):
        if type(s) is int and hasattr(t, "dtype") and not t.dtype.is_float:
            dt = D.result_type(t, 0)
            if not D.fits(s, dt):
                D.check_scalar(name, s, D.int64)
                return D.int64
    return D.result_type(a, b, name)


def binary_dtypes(name: str, a, b) -> tuple:
    """(compute dtype, output dtype) of binary op ``name`` on operands ``a``, ``b``."""
    kind = BINARY[name][0]
    if kind == "logical":
        return D.bool_, D.bool_
    if kind == "cmp":
        return _cmp_dtype(name, a, b), D.bool_
    dt = D.result_type(a, b, name)
    if kind == "bitwise" or kind == "shift":
        if dt.is_float or (kind == "shift" and dt.is_bool):
            raise DTypeError(f"{name}: not defined for {dtype_names((a, b))} operands (integer "
                             f"{'' if kind == 'shift' else 'and bool '}operands only)")
        return dt, dt
    if kind == "div":
        dt = dt if dt.is_float else D.float32
        return dt, dt
    if dt.is_bool and name not in _BOOL_OK:
        raise DTypeError(f"{name}: not defined for two bool operands ({dtype_names((a, b))}); "
                         f"cast one to an int or float dtype first")
    return dt, dt


# --------------------------------------------------------------------------- ONNX lowerings
# ``lower(exporter, op) -> value name`` (``OpSpec.onnx_lower``): ``exporter`` is the ONNX
# exporter (``runtime.capture.onnx``), whose helpers build the nodes; ``op`` the captured op.
def _onnx_unary_input(ex, op):
    """The operand cast to the result dtype, and that dtype."""
    (xt,) = op.inputs
    out = op.outputs[0].dtype
    return ex.cast(ex.names[xt.id], xt.dtype, out), out


def onnx_unary(ex, op) -> str:
    """The record's operator on the operand in the result dtype."""
    x, _ = _onnx_unary_input(ex, op)
    return ex.node(ex.record(op), [x])


def _onnx_rounding(ex, op) -> str:          # floor/ceil: an integer is its own
    x, out = _onnx_unary_input(ex, op)
    if not out.is_float:
        return x
    return ex.node(ex.record(op), [x])


def _onnx_relu(ex, op) -> str:              # Relu takes floats: Max(x, 0) on integers
    x, out = _onnx_unary_input(ex, op)
    if not out.is_float:
        return ex.node("Max", [x, ex.scalar(0, out)])
    return ex.node(ex.record(op), [x])


def _onnx_logical_not(ex, op) -> str:
    return ex.node(ex.record(op), [ex.to_bool(op.inputs[0])])


def _onnx_rsqrt(ex, op) -> str:
    x, _ = _onnx_unary_input(ex, op)
    return ex.node("Reciprocal", [ex.node("Sqrt", [x])])


def _onnx_gelu(ex, op) -> str:              # 0.5 x (1 + erf(x / sqrt 2))
    x, out = _onnx_unary_input(ex, op)
    e = ex.node("Erf", [ex.node("Mul", [x, ex.scalar(0.7071067811865476, out)])])
    return ex.node("Mul", [ex.node("Mul", [ex.scalar(0.5, out), x]),
                           ex.node("Add", [ex.scalar(1.0, out), e])])


def _onnx_gelu_tanh(ex, op) -> str:         # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    x, out = _onnx_unary_input(ex, op)
    x3 = ex.node("Mul", [ex.node("Mul", [ex.node("Mul", [ex.scalar(0.044715, out), x]), x]), x])
    t = ex.node("Tanh", [ex.node("Mul", [ex.scalar(0.7978845608028654, out),
                                         ex.node("Add", [x, x3])])])
    return ex.node("Mul", [ex.node("Mul", [ex.scalar(0.5, out), x]),
                           ex.node("Add", [ex.scalar(1.0, out), t])])


def _onnx_clamp(ex, op) -> str:
    x, out = _onnx_unary_input(ex, op)
    lo, hi = op.attrs.get("min"), op.attrs.get("max")
    if lo is not None:   # x < lo ? lo : x  (NaN stays NaN)
        lo_c = ex.scalar(lo, out)
        x = ex.node("Where", [ex.node("Less", [x, lo_c]), lo_c, x])
    if hi is not None:
        hi_c = ex.scalar(hi, out)
        x = ex.node("Where", [ex.node("Greater", [x, hi_c]), hi_c, x])
    return x


def _onnx_cast(ex, op) -> str:
    (xt,) = op.inputs
    src, dst = xt.dtype, op.outputs[0].dtype
    x = ex.names[xt.id]
    if src.is_half or dst.is_half:      # the half types convert through float32
        if src.is_half:
            x, src = ex.cast(x, src, D.float32), D.float32
        if dst.is_half:
            return ex.cast(ex.cast(x, src, D.float32) if not src.is_float else x, src, dst)
    if not (src.is_float and dst.is_int):
        return ex.cast(x, src, dst)
    # Saturating float -> int: NaN -> 0, truncation toward zero, out of range -> INT_MIN/MAX.
    info = np.iinfo(dst.np)
    lim = float(2 ** (info.bits - 1))            # exactly representable in every float dtype
    below = np.nextafter(src.np.type(lim), src.np.type(0))
    z = ex.node("Where", [ex.node("IsNaN", [x]), ex.scalar(0, src), x])
    c = ex.node("Clip", [z, ex.scalar(-lim, src), ex.const(np.array(below, src.np))])
    y = ex.node("Cast", [c], to=ex.elem(dst))
    big = ex.node("GreaterOrEqual", [z, ex.scalar(lim, src)])
    return ex.node("Where", [big, ex.scalar(info.max, dst), y])


def onnx_binary(on_bools=None):
    """The lowering of a binary op: the record's operator on the operands in the compute
    dtype, the result cast to the output dtype (a comparison gives bool already).  Two bool
    operands: ``on_bools`` "Or"/"And" is the logical operator the op is on truth values,
    "bool" keeps them bool (equality), None compares them as 0/1 int32."""
    def lower(ex, op) -> str:
        a, b = op.operands()
        plan = CATALOGUE[op.op].infer((a, b), {})
        compute, out = plan.compute, plan.dtype
        if compute.is_bool:
            if on_bools in ("Or", "And"):
                return ex.node(on_bools, [ex.to_bool(a), ex.to_bool(b)])
            if on_bools is None:
                compute = D.int32
        xa, xb = ex.operand(a, compute), ex.operand(b, compute)
        r = ex.node(ex.record(op), [xa, xb])
        return r if out.is_bool else ex.cast(r, compute, out)
    return lower


def _onnx_logical(ex, op) -> str:           # operands as truth values
    a, b = op.operands()
    return ex.node(ex.record(op), [ex.to_bool(a), ex.to_bool(b)])


def _onnx_mod_operands(ex, op):
    """fmod/remainder operands in the result dtype; an integer divisor of 0 or -1 becomes 1
    (the runtime gives 0 there, as ``x mod 1`` does; ONNX leaves ``Mod`` by 0 undefined)."""
    a, b = op.operands()
    dt = CATALOGUE[op.op].infer((a, b), {}).dtype
    xa, xb = ex.operand(a, dt), ex.operand(b, dt)
    if not dt.is_float:
        bad = ex.node("Or", [ex.node("Equal", [xb, ex.scalar(0, dt)]),
                             ex.node("Equal", [xb, ex.scalar(-1, dt)])])
        xb = ex.node("Where", [bad, ex.scalar(1, dt), xb])
    return xa, xb, dt


def _onnx_fmod(ex, op) -> str:              # C's fmod: Mod with fmod=1 (the dividend's sign)
    xa, xb, _ = _onnx_mod_operands(ex, op)
    return ex.node(ex.record(op), [xa, xb], fmod=1)


def _onnx_remainder(ex, op) -> str:         # the divisor's sign: Mod (ints), fmod + b (floats)
    xa, xb, dt = _onnx_mod_operands(ex, op)
    if not dt.is_float:
        return ex.node(ex.record(op), [xa, xb], fmod=0)
    r = ex.node(ex.record(op), [xa, xb], fmod=1)
    zero = ex.scalar(0, dt)
    fix = ex.node("And", [ex.node("Not", [ex.node("Equal", [r, zero])]),
                          ex.node("Xor", [ex.node("Less", [r, zero]),
                                          ex.node("Less", [xb, zero])])])
    return ex.node("Where", [fix, ex.node("Add", [r, xb]), r])


def _onnx_floor_divide(ex, op) -> str:      # PyTorch's div_floor from Mod(fmod=1) and Div
    a, b = op.operands()
    dt = CATALOGUE[op.op].infer((a, b), {}).dtype
    xa, xb0 = ex.operand(a, dt), ex.operand(b, dt)
    _, xb, _ = _onnx_mod_operands(ex, op)           # ints: divisors 0 and -1 made 1
    zero, one = ex.scalar(0, dt), ex.scalar(1, dt)
    m = ex.node("Mod", [xa, xb], fmod=1)
    fix = ex.node("And", [ex.node("Not", [ex.node("Equal", [m, zero])]),
                          ex.node("Xor", [ex.node("Less", [m, zero]),
                                          ex.node("Less", [xb, zero])])])
    if dt.is_float:
        d = ex.node(ex.record(op), [ex.node("Sub", [xa, m]), xb])
        d = ex.node("Where", [fix, ex.node("Sub", [d, one]), d])
        f = ex.node("Floor", [d])
        up = ex.node("Greater", [ex.node("Sub", [d, f]), ex.scalar(0.5, dt)])
        f = ex.node("Where", [up, ex.node("Add", [f, one]), f])
        return ex.node("Where", [ex.node("Equal", [xb, zero]), ex.node("Div", [xa, xb]), f])
    q = ex.node(ex.record(op), [xa, xb])            # truncates
    q = ex.node("Where", [fix, ex.node("Sub", [q, one]), q])
    q = ex.node("Where", [ex.node("Equal", [xb0, ex.scalar(-1, dt)]), ex.node("Neg", [xa]), q])
    return ex.node("Where", [ex.node("Equal", [xb0, zero]), zero, q])


def _onnx_bitwise(bool_op):
    """A bitwise op: ``bool_op`` (the logical operator) on bools, the record's Bitwise* on
    integers (opset >= 18)."""
    def lower(ex, op) -> str:
        out = op.outputs[0].dtype
        operands = op.operands()
        if out.is_bool:
            return ex.node(bool_op, [ex.to_bool(a) for a in operands])
        if ex.opset < 18:
            raise ex.error(op.op, f"graph.to_onnx: {op.op} of integers needs opset >= 18 "
                                  f"({ex.record(op)}), got opset {ex.opset}")
        return ex.node(ex.record(op), [ex.operand(a, out) for a in operands])
    return lower


def _onnx_ne(ex, op) -> str:                # Not(Equal), in the comparison's dtype
    a, b = op.operands()
    compute = CATALOGUE[op.op].infer((a, b), {}).compute
    return ex.node("Not", [ex.node("Equal", [ex.operand(a, compute), ex.operand(b, compute)])])


def _onnx_where(ex, op) -> str:
    cond, a, b = op.operands()
    out = op.outputs[0].dtype
    return ex.node(ex.record(op), [ex.to_bool(cond), ex.operand(a, out), ex.operand(b, out)])


# --------------------------------------------------------------------------- record makers
def _unary(name, rule, onnx, grad=None, *, api=True, doc=None, onnx_skip=None,
           onnx_lower=onnx_unary, fusion=None, uint64=None):
    """A native unary op: its record, and its front-end function (a Tensor method too)."""
    def infer(args, attrs):
        (x,) = args
        dt = unary_dtype(name, rule, x, attrs)
        return Plan(x.shape, dt, dt, "same")

    def kernel(ks, p, args, attrs, plan, device):
        return ks.unary(name, p[0], plan.dtype.np, attrs)

    register(OpSpec(name, "unary", infer, kernel, differentiable=grad is not None,
                    backward=None if grad is None else (lambda c, g: (grad(c, g),)),
                    onnx=onnx, onnx_lower=onnx_lower, onnx_skip=onnx_skip, lowering="unary",
                    fusion=fusion, uint64=uint64))
    if not api:
        return None

    def fn(x):
        if type(x) is Tensor:
            return run(name, (x,))
        return run(name, (tensor_arg(name, x),))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}``."
    return front_end(fast_unary(name, fn), method=True)


def _binary(name, kind, onnx, grad=None, onnx_skip=None, doc=None, onnx_lower=None, api=True,
            uint64=None):
    """A native binary op: its record and its front-end function (a Tensor method too; only
    the record when not ``api``: the family module defines the function)."""
    def infer(args, attrs):
        a, b = args
        sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
        if sa == sb:
            shape, layout = (() if sa is None else sa), "same"
        elif sa is None or sb is None:          # a Python scalar operand
            shape, layout = sb if sa is None else sa, "same"
        else:
            shape, layout = broadcast_shapes(name, sa, sb), "broadcast"
        # the dtype decision depends on the operands' dtypes (a scalar's type) only, except
        # for a Python int, whose value decides whether it fits: cache all but those
        ka = a.dtype if sa is not None else type(a)
        kb = b.dtype if sb is not None else type(b)
        dts = None if ka is int or kb is int else dtype_cache.get((ka, kb))
        if dts is None:
            dts = binary_dtypes(name, a, b)
            if ka is not int and kb is not int:
                dtype_cache[(ka, kb)] = dts
        return Plan(shape, dts[1], dts[0], layout)

    dtype_cache: dict = {}          # (dtype or scalar type per operand) -> (compute, out)

    def kernel(ks, p, args, attrs, plan, device):
        return ks.binary(name, p[0], p[1], plan.compute.np, plan.dtype.np)

    BINARY[name] = (kind, onnx)
    register(OpSpec(name, "binary", infer, kernel, differentiable=grad is not None,
                    backward=grad, onnx=onnx, onnx_lower=onnx_lower or onnx_binary(),
                    onnx_skip=onnx_skip, lowering="binary", uint64=uint64))
    return front_end(_binary_fn(name, doc), method=True) if api else None


def _operands(name, args) -> tuple:
    """The operands of an elementwise op: tensors, Python scalars, NumPy arrays as tensors on the
    first tensor's device; ArgumentTypeError when none is a tensor."""
    like = next((a for a in args if isinstance(a, Tensor)), None)
    out = tuple(operand(name, a, like) for a in args)
    if like is None:
        raise ArgumentTypeError(f"{name}: at least one operand must be a Tensor")
    return out


def _binary_fn(name, doc=None):
    def fn(a, b):
        if type(a) is Tensor and type(b) is Tensor:  # the common case, straight to dispatch
            return run(name, (a, b))
        return run(name, _operands(name, (a, b)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or f"Elementwise ``{name}`` with NumPy broadcasting and scalar operands."
    return fast_binary(name, fn)


def _composite(name, arity, decompose, grad=None, doc=None, result="float",
               differentiable=True, api=True, uint64=None):
    """A composite elementwise op (no kernel: it runs as its decomposition) of ``arity``
    broadcasting operands: its record and front-end function (a Tensor method).  ``result``:
    "float" (ints and bools computed as float32), "same" (the promoted dtype; bool rejected)
    or "bool"."""
    def infer(args, attrs):
        if arity == 1:
            shape, dt = args[0].shape, args[0].dtype
        else:
            shape = broadcast_shapes(name, *(shape_of(a) for a in args))
            dt = D.result_type(args[0], args[1], name)
            for a in args[2:]:
                dt = D.result_type(Meta((), dt), a, name)
        if result == "float":
            dt = float_of(dt)
        elif result == "bool":
            dt = D.bool_
        elif dt.is_bool:
            raise DTypeError(f"{name}: not defined for dtype bool (cast to an int or float "
                             f"dtype first)")
        return Plan(shape, dt, dt, layout_of(shape, args))

    fam = {1: "unary", 2: "binary"}.get(arity, "elementwise")
    register(OpSpec(name, fam, infer, decompose=decompose, backward=grad,
                    differentiable=differentiable, uint64=uint64))
    if not api:
        return None
    if arity == 1:
        def fn(x):
            return run(name, (tensor_arg(name, x),))
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = doc
        return front_end(fast_unary(name, fn), method=True)
    elif arity == 2:
        return front_end(_binary_fn(name, doc), method=True)
    else:
        def fn(*args):
            if len(args) != arity:
                raise ArgumentTypeError(f"{name}: expected {arity} operands, got {len(args)}")
            return run(name, _operands(name, args))
    fn.__name__ = name
    fn.__doc__ = doc
    return front_end(fn, method=True)


def _as_float(x):
    """A decomposition's operand in its float compute dtype (ints and bools as float32)."""
    if isinstance(x, Tensor) and not x.dtype.is_float:
        return cast(x, D.float32)
    return x


# --------------------------------------------------------------------------- unary
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K = math.sqrt(2.0 / math.pi)


def _grad_gelu(c, g):
    x = c.input(0)                          # Phi(x) + x phi(x)
    cdf = mul(add(erf(mul(x, _SQRT1_2)), 1), 0.5)
    pdf = mul(exp(mul(mul(x, x), -0.5)), _INV_SQRT_2PI)
    return mul(g, add(cdf, mul(x, pdf)))


def _grad_gelu_tanh(c, g):
    x = c.input(0)
    x2 = mul(x, x)
    t = tanh(mul(add(x, mul(mul(x2, x), 0.044715)), _K))
    du = mul(add(mul(x2, 3 * 0.044715), 1), _K)
    d = add(mul(add(t, 1), 0.5), mul(mul(x, sub(1, mul(t, t))), mul(du, 0.5)))
    return mul(g, d)


def _grad_rsqrt(c, g):
    y = c.output()                          # d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
    return mul(g, mul(mul(y, mul(y, y)), -0.5))


def _grad_tanh(c, g):
    y = c.output()
    return mul(g, sub(1, mul(y, y)))


def _grad_sigmoid(c, g):
    y = c.output()
    return mul(g, mul(y, sub(1, y)))


neg = _unary("neg", "same", "Neg", lambda c, g: neg(g), uint64="modular")
abs = _unary("abs", "same", "Abs", lambda c, g: mul(g, sign(c.input(0))))
sign = _unary("sign", "same", "Sign")
relu = _unary("relu", "same", "Relu", lambda c, g: run("relu_backward", (c.input(0), g)),
              onnx_lower=_onnx_relu)
floor = _unary("floor", "same", "Floor", onnx_lower=_onnx_rounding, uint64="modular")
ceil = _unary("ceil", "same", "Ceil", onnx_lower=_onnx_rounding, uint64="modular")
exp = _unary("exp", "float", "Exp", lambda c, g: mul(g, c.output()))
log = _unary("log", "float", "Log", lambda c, g: div(g, c.input(0)))
sqrt = _unary("sqrt", "float", "Sqrt", lambda c, g: div(mul(g, 0.5), c.output()))
rsqrt = _unary("rsqrt", "float", _onnx_rsqrt, _grad_rsqrt)
sin = _unary("sin", "float", "Sin", lambda c, g: mul(g, cos(c.input(0))))
cos = _unary("cos", "float", "Cos", lambda c, g: neg(mul(g, sin(c.input(0)))))
tanh = _unary("tanh", "float", "Tanh", _grad_tanh)
sigmoid = _unary("sigmoid", "float", "Sigmoid", _grad_sigmoid)
_unary("gelu", "float", _onnx_gelu, _grad_gelu, api=False)
_unary("gelu_tanh", "float", _onnx_gelu_tanh, _grad_gelu_tanh, api=False)
erf = _unary("erf", "float", "Erf",
             lambda c, g: mul(g, mul(exp(neg(mul(c.input(0), c.input(0)))), 2.0 / math.sqrt(math.pi))))
reciprocal = _unary("reciprocal", "float", "Reciprocal",
                    lambda c, g: neg(mul(g, mul(c.output(), c.output()))))
logical_not = _unary("logical_not", "bool", "Not", onnx_lower=_onnx_logical_not)
negative = neg
front_end(neg, name="negative", method=False)


@front_end(method=True)
def gelu(x, approximate: str = "none") -> Tensor:
    """GELU: exact erf form, or the tanh approximation with ``approximate="tanh"``."""
    if not isinstance(approximate, str) or approximate not in ("none", "tanh"):
        raise ArgumentValueError(f"gelu: approximate must be 'none' or 'tanh', got "
                                 f"{approximate!r}")
    return run("gelu" if approximate == "none" else "gelu_tanh", (tensor_arg("gelu", x),))


# clamp: a unary op with its bounds as attrs (the kernel set's ``unary("clamp", ...)``)
def _grad_clamp(c, g):
    x = c.input(0)
    lo, hi = c.attrs.get("min"), c.attrs.get("max")
    keep = None
    if lo is not None:
        keep = ge(x, lo)
    if hi is not None:
        k = le(x, hi)
        keep = k if keep is None else logical_and(keep, k)
    return where(keep, g, 0)


_unary("clamp", "clamp", "Clip", _grad_clamp, api=False, onnx_lower=_onnx_clamp,
       fusion="clamp")


@front_end(method=True, aliases=("clip",))
def clamp(x, min=None, max=None) -> Tensor:
    """Limit values to [min, max] (either bound may be None, a scalar or a tensor that
    broadcasts; with tensor bounds it is ``minimum(maximum(x, min), max)``, as PyTorch's)."""
    x = tensor_arg("clamp", x)
    if min is None and max is None:
        raise ArgumentValueError("clamp: at least one of min and max must be given")
    min = operand("clamp", min, x) if min is not None else None
    max = operand("clamp", max, x) if max is not None else None
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        y = x if min is None else maximum(x, min)
        return y if max is None else minimum(y, max)
    attrs = {"min": min, "max": max}
    return run("clamp", (x,), attrs)


clip = clamp


# --------------------------------------------------------------------------- binary
def _grad_add(c, g):
    return (g if c.needs(0) else None, g if c.needs(1) else None)


def _grad_sub(c, g):
    return (g if c.needs(0) else None, neg(g) if c.needs(1) else None)


def _grad_mul(c, g):
    return (mul(g, c.input(1)) if c.needs(0) else None,
            mul(g, c.input(0)) if c.needs(1) else None)


def _grad_div(c, g):
    b = c.input(1)
    ga = div(g, b) if c.needs(0) else None
    gb = None
    if c.needs(1):                          # d(a/b)/db = -a / b^2
        gb = neg(div(mul(g, c.input(0)), mul(b, b)))
    return ga, gb


def _grad_pow(c, g):
    a, b = c.input(0), c.input(1)
    a_scalar, b_scalar = not hasattr(a, "shape"), not hasattr(b, "shape")
    ga = gb = None
    if c.needs(0):                          # b a^(b-1); 0 where b == 0 (as in PyTorch)
        if b_scalar:
            ga = mul(g, mul(pow(a, b - 1), b)) if b != 0 else mul(g, 0)
        else:
            d = mul(pow(a, sub(b, 1)), b)
            ga = where(eq(b, 0), 0, mul(g, d))
    if c.needs(1):                          # a^b log a; 0 where a == 0 and b >= 0
        y = c.output()
        if a_scalar:
            if a == 0:  # b < 0: 0^b log 0 = inf * -inf = -inf, as for a tensor base (PyTorch)
                gb = where(ge(b, 0), 0, mul(g, -math.inf))
            else:
                gb = mul(g, mul(y, math.log(a) if a > 0 else math.nan))
        else:
            d = mul(y, log(a))
            gb = where(logical_and(eq(a, 0), ge(b, 0)), 0, mul(g, d))
    return ga, gb


def _share(first_wins, tie, dtype):
    """1 where the operand wins, 1/2 on ties, 0 where it loses."""
    return add(cast(first_wins, dtype), mul(cast(tie, dtype), 0.5))


def _grad_maxmin(c, g):
    a, b = c.input(0), c.input(1)
    tie = eq(a, b)
    big = c.node.spec.name == "maximum"
    ga = gb = None
    if c.needs(0):
        ga = mul(g, _share(gt(a, b) if big else lt(a, b), tie, g.dtype))
    if c.needs(1):
        gb = mul(g, _share(gt(b, a) if big else lt(b, a), tie, g.dtype))
    return ga, gb


add = _binary("add", "arith", "Add", _grad_add, onnx_lower=onnx_binary("Or"), uint64="modular")
sub = _binary("sub", "arith", "Sub", _grad_sub, uint64="modular")
mul = _binary("mul", "arith", "Mul", _grad_mul, onnx_lower=onnx_binary("And"), uint64="modular")
_binary("div", "div", "Div", _grad_div, api=False)
pow = _binary("pow", "arith", "Pow", _grad_pow)
maximum = _binary("maximum", "arith", "Max", _grad_maxmin, onnx_lower=onnx_binary("Or"),
                  uint64="order")
minimum = _binary("minimum", "arith", "Min", _grad_maxmin, onnx_lower=onnx_binary("And"),
                  uint64="order")
eq = _binary("eq", "cmp", "Equal", onnx_lower=onnx_binary("bool"), uint64="modular")
ne = _binary("ne", "cmp", _onnx_ne, uint64="modular")
lt = _binary("lt", "cmp", "Less", uint64="order")
le = _binary("le", "cmp", "LessOrEqual", uint64="order")
gt = _binary("gt", "cmp", "Greater", uint64="order")
ge = _binary("ge", "cmp", "GreaterOrEqual", uint64="order")
logical_and = _binary("logical_and", "logical", "And", onnx_lower=_onnx_logical)
logical_or = _binary("logical_or", "logical", "Or", onnx_lower=_onnx_logical)


@front_end(method=True)
def div(a, b, *, rounding_mode=None) -> Tensor:
    """True division ``a / b`` with NumPy broadcasting and scalar operands; PyTorch's
    ``rounding_mode``: "trunc" rounds the quotient toward zero, "floor" down (``floor_divide``);
    with either, two int operands give an int result (``a // 0`` and ``trunc(a / 0)`` are 0)."""
    if rounding_mode is None:
        if type(a) is Tensor and type(b) is Tensor:  # the common case, straight to dispatch
            return run("div", (a, b))
        return run("div", _operands("div", (a, b)))
    if not isinstance(rounding_mode, str) or rounding_mode not in ("floor", "trunc"):
        raise ArgumentValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                                 f"{rounding_mode!r}")
    if rounding_mode == "floor":
        return floor_divide(a, b)
    a, b = _operands("div", (a, b))
    q = floor_divide(a, b)
    if not q.dtype.is_int:
        return trunc(div(a, b))
    # an int floor quotient is one below the truncated one where the exact quotient is a
    # negative non-integer: a non-zero remainder, and operands of opposite signs
    neg_a = lt(a, 0) if isinstance(a, Tensor) else a < 0
    neg_b = lt(b, 0) if isinstance(b, Tensor) else b < 0
    off = logical_and(ne(remainder(a, b), 0), ne(neg_a, neg_b))
    return add(q, cast(off, q.dtype))


true_divide = divide = div
subtract, multiply = sub, mul
for _alias, _fn in (("true_divide", div), ("divide", div), ("subtract", sub),
                    ("multiply", mul)):
    front_end(_fn, name=_alias)




# bitwise ops: ints (and bools, as logical ops, except for the shifts); the Tensor operators
# & | ^ ~ << >> are these (PyTorch's), so a float operand is a DTypeError
bitwise_and = _binary("bitwise_and", "bitwise", "BitwiseAnd", onnx_lower=_onnx_bitwise("And"),
                     uint64="modular")
bitwise_or = _binary("bitwise_or", "bitwise", "BitwiseOr", onnx_lower=_onnx_bitwise("Or"),
                    uint64="modular")
bitwise_xor = _binary("bitwise_xor", "bitwise", "BitwiseXor",
                     onnx_lower=_onnx_bitwise("Xor"), uint64="modular")
_NO_SIGNED_SHIFT = "ONNX's BitShift takes unsigned integers only: a signed shift has no operator"
left_shift = _binary("left_shift", "shift", None, onnx_skip=_NO_SIGNED_SHIFT, uint64="modular")
right_shift = _binary("right_shift", "shift", None, onnx_skip=_NO_SIGNED_SHIFT)
bitwise_not = _unary("bitwise_not", "integer", "BitwiseNot", onnx_lower=_onnx_bitwise("Not"),
                     uint64="modular")


# --------------------------------------------------------------------------- more math
# Transcendentals: ints and bools give float32 (as exp/log); accuracy in ulp is stated in
# jit_kernels/cpu/scalar_math.py and tested by tests/kernels/test_ulp.py.  Gradients as
# PyTorch's derivatives.yaml.
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _sq(v):
    return v * v if not isinstance(v, Tensor) else mul(v, v)


def _one_minus_sq(x):                       # 1 - x^2 as (1 - x)(1 + x): no cancellation near 1
    return mul(sub(1, x), add(x, 1))


_NO_ONNX = "no ONNX operator (opset 17) computes it; a decomposition in the exporter is not " \
           "written yet"
tan = _unary("tan", "float", "Tan", lambda c, g: mul(g, add(_sq(c.output()), 1)),
             doc="Elementwise tangent (ints -> float32).")
asin = _unary("asin", "float", "Asin", lambda c, g: div(g, sqrt(_one_minus_sq(c.input(0)))),
              doc="Elementwise arcsine (``nan`` outside [-1, 1]; ints -> float32).")
acos = _unary("acos", "float", "Acos",
              lambda c, g: neg(div(g, sqrt(_one_minus_sq(c.input(0))))),
              doc="Elementwise arccosine (``nan`` outside [-1, 1]; ints -> float32).")
atan = _unary("atan", "float", "Atan", lambda c, g: div(g, add(_sq(c.input(0)), 1)),
              doc="Elementwise arctangent (ints -> float32).")
sinh = _unary("sinh", "float", "Sinh", lambda c, g: mul(g, cosh(c.input(0))),
              doc="Elementwise hyperbolic sine (ints -> float32).")
cosh = _unary("cosh", "float", "Cosh", lambda c, g: mul(g, sinh(c.input(0))),
              doc="Elementwise hyperbolic cosine (ints -> float32).")
asinh = _unary("asinh", "float", "Asinh",
               lambda c, g: div(g, sqrt(add(_sq(c.input(0)), 1))),
               doc="Elementwise inverse hyperbolic sine (ints -> float32).")
acosh = _unary("acosh", "float", "Acosh",
               lambda c, g: div(g, sqrt(mul(sub(c.input(0), 1), add(c.input(0), 1)))),
               doc="Elementwise inverse hyperbolic cosine (``nan`` below 1; ints -> float32).")
atanh = _unary("atanh", "float", "Atanh", lambda c, g: div(g, _one_minus_sq(c.input(0))),
               doc="Elementwise inverse hyperbolic tangent (±inf at ±1, ``nan`` outside; "
                   "ints -> float32).")
exp2 = _unary("exp2", "float", None, lambda c, g: mul(g, mul(c.output(), _LN2)),
              onnx_skip=_NO_ONNX, doc="Elementwise ``2 ** x`` (ints -> float32).")
expm1 = _unary("expm1", "float", None, lambda c, g: mul(g, add(c.output(), 1)),
               onnx_skip=_NO_ONNX,
               doc="Elementwise ``exp(x) - 1``, accurate for small ``x`` (ints -> float32).")
log2 = _unary("log2", "float", None, lambda c, g: div(g, mul(c.input(0), _LN2)),
              onnx_skip=_NO_ONNX, doc="Elementwise base-2 logarithm (ints -> float32).")
log10 = _unary("log10", "float", None, lambda c, g: div(g, mul(c.input(0), _LN10)),
               onnx_skip=_NO_ONNX, doc="Elementwise base-10 logarithm (ints -> float32).")


def _grad_atan2(c, g):                      # d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
    a, b = c.input(0), c.input(1)
    r2 = add(_sq(a), _sq(b))
    return (div(mul(g, b), r2) if c.needs(0) else None,
            neg(div(mul(g, a), r2)) if c.needs(1) else None)


def _grad_hypot(c, g):                      # a / h, b / h
    y = c.output()
    return (mul(g, div(c.input(0), y)) if c.needs(0) else None,
            mul(g, div(c.input(1), y)) if c.needs(1) else None)


def _grad_copysign(c, g):                   # PyTorch: g * (result / a), 0 where a == 0; none to b
    a = c.input(0)
    return (where(eq(a, 0), 0, mul(g, div(c.output(), a))) if c.needs(0) else None, None)


def _grad_fmod(c, g):                       # g, and -g * trunc(a / b)
    return (g if c.needs(0) else None,
            neg(mul(g, _trunc(div(c.input(0), c.input(1))))) if c.needs(1) else None)


def _grad_remainder(c, g):                  # g, and -g * floor(a / b)
    return (g if c.needs(0) else None,
            neg(mul(g, floor(div(c.input(0), c.input(1))))) if c.needs(1) else None)


atan2 = _binary("atan2", "div", None, _grad_atan2, onnx_skip=_NO_ONNX,
                doc="Elementwise ``atan2(a, b)``: the angle of the point (b, a), in [-pi, pi] "
                    "(a float result; broadcasting and scalars).")
hypot = _binary("hypot", "div", None, _grad_hypot, onnx_skip=_NO_ONNX,
                doc="Elementwise ``sqrt(a**2 + b**2)`` without overflow (a float result).")
copysign = _binary("copysign", "div", None, _grad_copysign, onnx_skip=_NO_ONNX,
                   doc="``|a|`` with the sign of ``b`` (its sign bit: -0.0 counts as negative; a "
                       "float result, as PyTorch's).")
fmod = _binary("fmod", "arith", "Mod", _grad_fmod, onnx_lower=_onnx_fmod,
               doc="C's ``fmod``: ``a - trunc(a / b) * b``, with the sign of the dividend ``a`` "
                   "(PyTorch's; ints: ``fmod(a, 0) = 0``).")
remainder = _binary("remainder", "arith", "Mod", _grad_remainder, onnx_lower=_onnx_remainder,
                    doc="Python's ``%``: ``a - floor(a / b) * b``, with the sign of the divisor "
                        "``b`` (PyTorch's ``remainder``, the ``%`` operator; ints: "
                        "``a % 0 = 0``).")
floor_divide = _binary("floor_divide", "arith", "Div", onnx_lower=_onnx_floor_divide,
                       doc="``floor(a / b)`` (PyTorch's ``floor_divide``, the ``//`` operator) "
                           "for floats and ints; ints: ``a // 0 = 0`` (PyTorch raises), "
                           "``INT_MIN // -1`` wraps to ``INT_MIN``.  Not differentiable.")


# --------------------------------------------------------------------------- where, cast
def _infer_where(args, attrs):
    cond, a, b = args
    shape = broadcast_shapes("where", shape_of(cond), shape_of(a), shape_of(b))
    if not hasattr(cond, "dtype"):
        raise DTypeError("where: the condition must be a tensor")
    dt = D.result_type(a, b, "where")
    return Plan(shape, dt, dt, layout_of(shape, args))


def _grad_where(c, g):
    cond = c.input(0)
    return (None,
            where(cond, g, 0) if c.needs(1) else None,
            where(cond, 0, g) if c.needs(2) else None)


register(OpSpec("where", "select", _infer_where,
                lambda ks, p, args, attrs, plan, device: ks.where(p[0], p[1], p[2], plan.dtype.np),
                backward=_grad_where, onnx="Where", onnx_lower=_onnx_where, uint64="modular",
                uint64_float=True))


@front_end
def where(cond, a, b) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; a/b may be scalars)."""
    cond = tensor_arg("where", cond)
    return run("where", (cond, operand("where", a, cond), operand("where", b, cond)))


def _infer_cast(args, attrs):
    dt = D.as_dtype(attrs["dtype"])
    return Plan(args[0].shape, dt, dt, "same")


def _kernel_cast(ks, p, args, attrs, plan, device):
    # float16/bfloat16 are stored as their uint16 bits: they convert through float32 with the
    # kernel set's half conversions (float64 -> float16 rounds once)
    src, dst, x = args[0].dtype, plan.dtype, p[0]
    if src.is_half:
        x = ks.half_to_float(x, src.name)
        if dst is D.float32:
            return x
        src = D.float32
    if dst.is_half:
        if not src.is_float:
            x = ks.cast(x, D.float32.np)
        return ks.float_to_half(x, dst.name)
    return ks.cast(x, dst.np)


register(OpSpec("cast", "unary", _infer_cast, _kernel_cast,
                backward=lambda c, g: (g,),     # the tape casts back to the input's dtype
                onnx="Cast", onnx_lower=_onnx_cast))


@front_end(aliases=("astype",))
def cast(x, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (float→int truncates toward zero and saturates; NaN→0)."""
    x = tensor_arg("cast", x)
    dt = D.as_dtype(dtype, "cast")
    if dt is x.dtype:
        return x
    return run("cast", (x,), {"dtype": dt.name})


astype = cast


# --------------------------------------------------------------------------- composites
def _decompose_log1p(args, attrs):
    # Kahan's log1p: u = 1 + x rounded; log(u) * x / (u - 1) cancels the rounding of u
    # (within a few ulps of log1p), x itself where u == 1, and u where it overflowed to inf
    x = _as_float(args[0])
    u = add(x, 1)
    d = sub(u, 1)
    return where(eq(d, 0), x, where(eq(u, math.inf), u, mul(log(u), div(x, d))))


log1p = _composite("log1p", 1, _decompose_log1p,
                   grad=lambda c, g: (div(g, add(c.input(0), 1)),),
                   doc="``log(1 + x)``, accurate for small ``x``.")


def _decompose_softplus(args, attrs):
    x = _as_float(args[0])
    beta, threshold = attrs.get("beta", 1.0), attrs.get("threshold", 20.0)
    bx = x if beta == 1.0 else mul(x, beta)
    # max(bx, 0) + log1p(exp(-|bx|)): no overflow, exact in both tails
    y = add(maximum(bx, 0), log1p(exp(neg(abs(bx)))))
    if beta != 1.0:
        y = div(y, beta)
    return where(gt(bx, threshold), x, y)


def _grad_softplus(c, g):
    x = c.input(0)
    beta, threshold = c.attrs.get("beta", 1.0), c.attrs.get("threshold", 20.0)
    bx = x if beta == 1.0 else mul(x, beta)
    return (where(gt(bx, threshold), g, mul(g, sigmoid(bx))),)


register(OpSpec("softplus", "unary", _infer_same("softplus", "float"),
                decompose=_decompose_softplus, backward=_grad_softplus))


@front_end(method=True)
def softplus(x, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold`` (PyTorch's)."""
    x = tensor_arg("softplus", x)
    beta = float(number_arg("softplus", "beta", beta))
    threshold = float(number_arg("softplus", "threshold", threshold))
    if beta == 1.0 and threshold == 20.0:
        return run("softplus", (x,))
    return run("softplus", (x,), {"beta": beta, "threshold": threshold})


silu = _composite("silu", 1, lambda args, attrs: mul(_as_float(args[0]), sigmoid(args[0])),
                  doc="``x * sigmoid(x)`` (swish), differentiated through its decomposition.")


mish = _composite("mish", 1, lambda args, attrs: mul(_as_float(args[0]), tanh(softplus(args[0]))),
                  doc="``x * tanh(softplus(x))``, differentiated through its decomposition.")


def _decompose_logaddexp(args, attrs):
    a, b = (_as_float(v) for v in args)
    m = maximum(a, b)
    # m + log1p(exp(-|a - b|)), and m + log 2 where a == b (infinities of one sign included)
    return where(eq(a, b), add(m, math.log(2.0)), add(m, log1p(exp(neg(abs(sub(a, b)))))))


def _grad_logaddexp(c, g):
    a, b = c.input(0), c.input(1)
    return (mul(g, sigmoid(sub(a, b))) if c.needs(0) else None,
            mul(g, sigmoid(sub(b, a))) if c.needs(1) else None)


logaddexp = _composite("logaddexp", 2, _decompose_logaddexp, grad=_grad_logaddexp,
                       doc="``log(exp(a) + exp(b))`` computed stably (NumPy's ``logaddexp``).")


# --------------------------------------------------------------------------- exact composites


def _trunc(x):
    return where(lt(x, 0), ceil(x), floor(x)) if x.dtype.is_float else floor(x)


isnan = _composite("isnan", 1, lambda args, attrs: ne(args[0], args[0]), result="bool",
                   differentiable=False, doc="Whether each element is NaN (never for ints).",
                   uint64="modular")
isinf = _composite("isinf", 1, lambda args, attrs: (
    eq(abs(args[0]), math.inf) if args[0].dtype.is_float else ne(args[0], args[0])),
    result="bool", differentiable=False, doc="Whether each element is +inf or -inf.",
    uint64="modular")
isposinf = _composite("isposinf", 1, lambda args, attrs: (
    eq(args[0], math.inf) if args[0].dtype.is_float else ne(args[0], args[0])),
    result="bool", differentiable=False, doc="Whether each element is +inf.", uint64="modular")
isneginf = _composite("isneginf", 1, lambda args, attrs: (
    eq(args[0], -math.inf) if args[0].dtype.is_float else ne(args[0], args[0])),
    result="bool", differentiable=False, doc="Whether each element is -inf.", uint64="modular")
isfinite = _composite("isfinite", 1, lambda args, attrs: (
    lt(abs(args[0]), math.inf) if args[0].dtype.is_float else eq(args[0], args[0])),
    result="bool", differentiable=False, doc="Whether each element is neither inf nor NaN.",
    uint64="modular")
trunc = _composite("trunc", 1, lambda args, attrs: _trunc(args[0]), result="same",
                   differentiable=False, doc="Rounding toward zero (``fix``).", uint64="modular")
frac = _composite("frac", 1, lambda args, attrs: sub(args[0], _trunc(args[0])), result="same",
                  grad=lambda c, g: (g,), doc="``x - trunc(x)``: the fractional part, with x's sign.")
square = _composite("square", 1, lambda args, attrs: mul(args[0], args[0]), result="same",
                    doc="``x * x``.", uint64="modular")


def _decompose_lerp(args, attrs):
    a, b, w = (_as_float(v) for v in args)
    d = sub(b, a)
    # PyTorch's two forms: exact at both ends (w = 0 gives a, w = 1 gives b)
    small = lt(abs(w), 0.5) if isinstance(w, Tensor) else _b.abs(w) < 0.5
    if isinstance(small, bool):
        return add(a, mul(w, d)) if small else sub(b, mul(d, sub(1, w)))
    return where(small, add(a, mul(w, d)), sub(b, mul(d, sub(1, w))))


lerp = _composite("lerp", 3, _decompose_lerp,
                  doc="``start + weight * (end - start)`` (PyTorch's ``lerp(start, end, weight)``).")


def _addc(name, combine, result, doc):
    def decompose(args, attrs):
        x, t1, t2 = args
        if result == "float":
            x = _as_float(x)
        v = attrs.get("value", 1)
        p = combine(t1, t2)
        return add(x, p if v == 1 else mul(p, v))

    _composite(name, 3, decompose, result=result, api=False)

    def fn(input, tensor1, tensor2, value=1) -> Tensor:
        args = _operands(name, (input, tensor1, tensor2))
        value = number_arg(name, "value", value)
        return run(name, args, None if value == 1 else {"value": value})
    fn.__name__ = name
    fn.__doc__ = doc
    return front_end(fn, method=True)


addcmul = _addc("addcmul", lambda a, b: mul(a, b), "same",
                "``input + value * tensor1 * tensor2`` (PyTorch's).")
addcdiv = _addc("addcdiv", lambda a, b: div(a, b), "float",
                "``input + value * tensor1 / tensor2`` (PyTorch's; a float result).")


def _decompose_nan_to_num(args, attrs):
    (x,) = args
    if not x.dtype.is_float:
        return floor(x)                     # ints have no NaN or inf: the values themselves
    info = D.finfo(x.dtype)
    nan, pos, neg_ = attrs.get("nan", 0.0), attrs.get("posinf"), attrs.get("neginf")
    pos = float(info.max) if pos is None else pos
    neg_ = float(info.min) if neg_ is None else neg_
    y = where(ne(x, x), nan, x)
    return where(eq(y, math.inf), pos, where(eq(y, -math.inf), neg_, y))


register(OpSpec("nan_to_num", "unary", _infer_same("nan_to_num"), decompose=_decompose_nan_to_num,
                backward=lambda c, g: (where(isfinite(c.input(0)), g, 0),)))


@front_end(method=True)
def nan_to_num(x, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """NaN as ``nan``, +inf as ``posinf`` and -inf as ``neginf`` (default: the dtype's largest
    and lowest finite values), as NumPy and PyTorch."""
    x = tensor_arg("nan_to_num", x)
    if x.dtype.is_half:     # it runs in float32 (runtime.lowprec): the half type's own limits
        info = D.finfo(x.dtype)
        posinf = float(info.max) if posinf is None else posinf
        neginf = float(info.min) if neginf is None else neginf
    attrs = {k: float(number_arg("nan_to_num", k, v))
             for k, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)) if v is not None}
    return run("nan_to_num", (x,), attrs if attrs != {"nan": 0.0} else None)


def _decompose_isclose(args, attrs):
    a, b = args
    dt = float_of(D.result_type(a, b, "isclose"))
    if not dt.is_float or not (getattr(a, "dtype", dt).is_float or getattr(b, "dtype", dt).is_float):
        dt = D.float64                      # two int operands: compare in float64
    a = cast(a, dt) if isinstance(a, Tensor) else a
    b = cast(b, dt) if isinstance(b, Tensor) else b
    rtol, atol = attrs.get("rtol", 1e-05), attrs.get("atol", 1e-08)
    bound = add(mul(abs(b), rtol), atol) if isinstance(b, Tensor) else atol + rtol * _b.abs(b)
    # an infinite |a - b| is never within the bound, even where the bound is infinite (b = inf):
    # infinities are close only to themselves (eq), as in NumPy and PyTorch
    d = abs(sub(a, b))
    close = logical_or(logical_and(le(d, bound), isfinite(d)), eq(a, b))
    if attrs.get("equal_nan", False):
        close = logical_or(close, logical_and(ne(a, a), ne(b, b)))
    return close


def _infer_isclose(args, attrs):
    shape = broadcast_shapes("isclose", shape_of(args[0]), shape_of(args[1]))
    return Plan(shape, D.bool_, D.bool_, layout_of(shape, args))


register(OpSpec("isclose", "binary", _infer_isclose,
                decompose=_decompose_isclose, differentiable=False))


@front_end(method=True)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """``|a - b| <= atol + rtol * |b|`` elementwise (NumPy's and PyTorch's ``isclose``)."""
    return _isclose("isclose", a, b, rtol, atol, equal_nan)


def _isclose(op, a, b, rtol, atol, equal_nan) -> Tensor:
    attrs = {"rtol": float(number_arg(op, "rtol", rtol)),
             "atol": float(number_arg(op, "atol", atol)),
             "equal_nan": bool_arg(op, "equal_nan", equal_nan)}
    return run("isclose", _operands(op, (a, b)), attrs)


@front_end(method=True)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``a`` and ``b`` is close (a Python bool, as NumPy's)."""
    c = _isclose("allclose", a, b, rtol, atol, equal_nan)
    return bool(c.numpy().all())


def _decompose_round(args, attrs):
    (x,) = args
    if not x.dtype.is_float:
        return floor(x)                     # (decimals >= 0: ints are already round)
    d = attrs.get("decimals", 0)
    y = x if d == 0 else mul(x, 10.0 ** d)
    r = floor(y)
    f = sub(y, r)                           # exact: r and y are within one of each other
    odd = ne(sub(r, mul(floor(mul(r, 0.5)), 2)), 0)
    r = where(logical_or(gt(f, 0.5), logical_and(eq(f, 0.5), odd)), add(r, 1), r)
    return r if d == 0 else div(r, 10.0 ** d)


register(OpSpec("round", "unary", _infer_same("round"), decompose=_decompose_round,
                differentiable=False))


@front_end(method=True)
def round(x, decimals: int = 0) -> Tensor:
    """Rounding half to even (NumPy's and PyTorch's), to ``decimals`` digits (scaled by
    ``10**decimals``, as theirs)."""
    from .args import int_arg
    x = tensor_arg("round", x)
    decimals = int_arg("round", "decimals", decimals)
    if decimals < 0 and not x.dtype.is_float:
        raise ArgumentValueError(f"round: negative decimals need a float tensor, got "
                                 f"{x.dtype.name}")
    return run("round", (x,), {"decimals": decimals} if decimals else None)


# ------------------------------------------------------------------------- relu's gradient
# ``where(x > 0, g, 0)`` as one record (PyTorch's ``threshold_backward``): on a plain device one
# fused pass over x and g, where the comparison and the select were two kernels, a bool tensor
# between them and two dispatches per relu of every training step.  Capture records its
# decomposition, so graphs, compile and ONNX see the where and the comparison (and autodiff
# differentiates through it).
def _infer_relu_backward(args, attrs):
    x, g = args
    if x.shape != g.shape:
        raise ShapeError(f"relu_backward: the input's shape {x.shape} and the gradient's "
                         f"{g.shape} differ")
    if x.dtype is not g.dtype:
        raise DTypeError(f"relu_backward: the input's dtype {x.dtype.name} and the gradient's "
                         f"{g.dtype.name} differ")
    return Plan(g.shape, g.dtype, g.dtype, "same")


register(OpSpec("relu_backward", "binary", _infer_relu_backward,
                decompose=lambda args, attrs: where(gt(args[0], 0), args[1], 0)))
