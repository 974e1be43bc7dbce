"""How the small dtypes run: upcast, compute, round back — in one place.

float16 and bfloat16 compute in float32, int8/uint8/int16 in int32 (``DType.compute``): a
plain device that meets an op with an *emulated* operand or result (``DType.emulated``) casts
those operands to their compute dtype, re-runs the op's rule on them, runs the op there, and
casts the result back to the dtype the original rule chose.  So every op of every family
accepts the small dtypes with no kernel specialisation of its own, and the result is the
PyTorch one: half types upcast at load and round once at store (sums and matmuls accumulate in
float32 or wider), small ints wrap modulo 2**bits (computing in int32 and truncating is the
same as native wrapping for ``+ - * << & | ^ ~``, and ``//``, ``%``, ``>>``, comparisons,
min/max never leave the range).  The cost is the casts: one extra pass per emulated operand
and one for the result.

Except for large elementwise ops on the small ints (``native``): a ``unary``/``binary``
lowering whose emulated dtypes are all ints, on at least ``NATIVE_MIN`` elements, runs its
kernel on the int8/uint8/int16 arrays directly with the int32 compute dtype (the generated
elementwise kernels load each operand into the compute dtype and store the result truncated:
the same bits as the casts, without their passes).
Below ``NATIVE_MIN`` the casts stay: the per-dtype kernels would cost a compile each, which
the shared int32 kernels do not.

Ops that only move values (``OpSpec.moves_only``: reshape, permute, expand, cat, basic indexing,
take, gather) run on the storage directly when every emulated operand already has the result's
dtype.  ``cast`` itself and ``init`` never upcast.  The dispatch layer calls ``needs_upcast``
(``PlainDevice.execute``, ``dispatch.plain_step``, the small-op fast path, which never caches a
decision for such a call) and the fusion pass leaves such ops unfused.

uint32 computes in int64 like the small ints (every uint32 value, sum and difference fits, and a
product's low 32 bits are exact).  uint64 computes in int64 too, but int64 holds its values only
modulo 2**64, so ``run_upcast`` sorts a uint64 op into one of four ways (``uint64_way``, from
the op record's ``uint64``, ``uint64_float`` and ``uint64_index`` and its lowering):

- ``float``: an elementwise op, reduction, composite or matmul computed in a float dtype
  (``/``, ``exp``, ``mean``, a uint64 with a float operand) converts the uint64 operands
  straight to that float dtype (the values, not their int64 bits);
- ``modular``: the ops exact modulo 2**64 (``+ - *``, negation, bitwise ops and left shifts,
  ``==``/``!=``, ``where``, sums, products and their scans, matmul, moves, and ``floor``,
  ``isnan`` and their kin, which on ints are the identity or equality) run on the int64
  bits, a Python int of 2**63 or more as its int64 bits, and the result is cast back;
- ``order``: comparisons, ``maximum``/``minimum``, ``max``/``min``, ``argmax``/``argmin``,
  ``argsort``/``topk`` (so ``sort``) run on the int64 bits with the top bit flipped, which maps
  uint64's order onto int64's; a uint64 result is flipped back;
- anything else (``//``, ``%``, ``>>``, ``abs``, ``sign``, ``clamp``, ``pow``, scans of
  maxima, pooling, a uint64 index tensor...) raises DTypeError naming the op and dtypes, rather
  than give a wrong answer.
"""
from __future__ import annotations

from .core import dtypes as D
from .core.errors import DTypeError
from .core.registry import CATALOGUE
from .tensor import Tensor

__all__ = ["needs_upcast", "run_upcast", "has_uint64", "uint64_way"]

#: elements from which ``unary``/``binary`` ops on the small ints run natively (see the doc)
NATIVE_MIN = 1 << 14

_NEVER = frozenset(("cast", "init"))


def _emulated_attr(attrs) -> bool:
    d = attrs.get("dtype") if attrs else None
    return d is not None and D.as_dtype(d).emulated


def needs_upcast(spec, args, attrs, plan) -> bool:
    """Whether op ``spec`` on ``args`` (tensors, (shape, dtype) stand-ins, scalars) with result
    ``plan`` runs through ``run_upcast``."""
    name = spec.name
    if name in _NEVER:
        return False
    out = plan.dtype
    moved_only = spec.moves_only
    found = out.emulated and not moved_only
    for a in args:
        dt = getattr(a, "dtype", None)
        if dt is not None and dt.emulated:
            if not moved_only or dt is not out:
                return True
    return found or _emulated_attr(attrs)


def run_upcast(device, spec, args, attrs, plan):
    """Run ``spec`` on plain ``device`` in the compute dtypes and cast the result back to
    ``plan.dtype`` (``args``: plain tensors and scalars)."""
    if has_uint64(args, attrs, plan):
        return _run_uint64(device, spec, args, attrs, plan)
    if _native(spec, args, attrs, plan):
        compute = plan.compute.compute
        return device.run_kernel(spec, [a._payload if isinstance(a, Tensor) else a for a in args],
                                 args, attrs, plan._replace(compute=compute))
    new_args = tuple(_cast(device, a, a.dtype.compute) if isinstance(a, Tensor) and a.dtype.emulated
                     else a for a in args)
    new_attrs = attrs
    if _emulated_attr(attrs):
        new_attrs = dict(attrs)
        new_attrs["dtype"] = D.as_dtype(attrs["dtype"]).compute.name
    new_plan = spec.infer(new_args, new_attrs)
    if new_plan.dtype.emulated:      # a rule that keeps a small dtype: round it first
        new_plan = new_plan._replace(dtype=new_plan.dtype.compute)
    out = device.execute(spec, new_args, new_attrs, new_plan)
    return _cast(device, out, plan.dtype)


def _cast(device, t, dtype):
    """``t`` (a plain tensor on ``device``) as ``dtype``, by the cast record itself."""
    if t.dtype is dtype:
        return t
    spec, args, attrs = CATALOGUE["cast"], (t,), {"dtype": dtype.name}
    return device.execute(spec, args, attrs, spec.infer(args, attrs))


def _native(spec, args, attrs, plan) -> bool:
    """Whether ``spec`` runs its kernel on the small-int storage itself (see the doc)."""
    if spec.lowering not in ("unary", "binary") or _emulated_attr(attrs):
        return False
    if plan.dtype.is_half or plan.compute.is_half:
        return False
    big = False
    for a in args:
        dt = getattr(a, "dtype", None)
        if dt is not None:
            if dt.is_half:
                return False
            big = big or a.size >= NATIVE_MIN
    return big


# ------------------------------------------------------------------------------- uint64
#: lowerings that take value operands only: computed in a float dtype, their uint64 operands
#: convert to it directly (an op with another lowering says so by ``OpSpec.uint64_float``)
_U64_FLOAT_LOWERINGS = frozenset(("unary", "binary", "reduce", "composite", "matmul"))
_TOP = 1 << 63
_FLIP = -(1 << 63)      # xor with the top bit, as an int64 scalar


def has_uint64(args, attrs, plan) -> bool:
    """Whether an op with operands ``args`` and result ``plan`` involves uint64."""
    if plan.dtype is D.uint64:
        return True
    for a in args:
        if getattr(a, "dtype", None) is D.uint64:
            return True
    d = attrs.get("dtype") if attrs else None
    return d is not None and D.as_dtype(d) is D.uint64


def _names(args) -> str:
    return ", ".join(a.dtype.name for a in args if getattr(a, "dtype", None) is not None)


def uint64_way(spec, args, plan) -> str:
    """How op ``spec`` with uint64 operands or result runs: "float", "modular", "order",
    "index" (refused: a uint64 index tensor) or "refuse" (see the module's doc)."""
    if spec.uint64_index and getattr(args[1], "dtype", None) is D.uint64:
        return "index"
    if plan.compute.is_float and (spec.uint64_float or spec.lowering in _U64_FLOAT_LOWERINGS):
        return "float"
    return spec.uint64 or "refuse"


def _check_u64_scalars(name, args) -> None:
    """DTypeError for a Python int outside uint64's range (``x == -1`` must not compare bits)."""
    for a in args:
        if type(a) is int:
            D.check_scalar(name, a, D.uint64)


def _run_uint64(device, spec, args, attrs, plan):
    """``run_upcast`` for an op with a uint64 operand or result (see the module's doc)."""
    name = spec.name
    way = uint64_way(spec, args, plan)
    if way == "index":
        raise DTypeError(f"{name}: uint64 index tensors are not supported (the runtime indexes "
                         f"in int64); cast the indices to int64 first")
    if way == "refuse":
        raise DTypeError(f"{name}: not supported for uint64 (operands {_names(args)}): the "
                         f"runtime computes uint64 in int64, exact only for + - *, bitwise ops, "
                         f"comparisons, max/min, sorting, sums and moves; cast to int64 or "
                         f"float64 first")
    if way == "float":
        fc = plan.compute.compute       # float32 for a half compute dtype
        new_args = tuple(_cast(device, a, fc if a.dtype is D.uint64 else a.dtype.compute)
                         if isinstance(a, Tensor) and a.dtype.emulated else a for a in args)
        return _finish(device, spec, new_args, attrs, plan)
    _check_u64_scalars(name, args)
    if way == "modular":
        new_args = tuple(_cast(device, a, a.dtype.compute)
                         if isinstance(a, Tensor) and a.dtype.emulated
                         else (a - (1 << 64) if type(a) is int and a >= _TOP else a)
                         for a in args)
        return _finish(device, spec, new_args, attrs, plan)
    # order: every int operand as uint64 (promotion leaves only unsigned and bool ones beside
    # a uint64), its int64 bits with the top bit flipped
    new_args = []
    for a in args:
        if isinstance(a, Tensor):
            a = _flip(device, _cast(device, _cast(device, a, D.uint64), D.int64))
        elif type(a) is int:
            a -= _TOP
        new_args.append(a)
    new_args = tuple(new_args)
    new_plan = spec.infer(new_args, attrs)
    out = device.execute(spec, new_args, attrs, new_plan)
    if plan.dtype is D.uint64:          # the values themselves: flip back
        out = _flip(device, out)
    return _cast(device, out, plan.dtype)


def _finish(device, spec, new_args, attrs, plan):
    """Run ``spec`` on the converted operands and cast the result back to ``plan.dtype``."""
    new_attrs = attrs
    if _emulated_attr(attrs):
        new_attrs = dict(attrs)
        new_attrs["dtype"] = D.as_dtype(attrs["dtype"]).compute.name
    new_plan = spec.infer(new_args, new_attrs)
    if new_plan.dtype.emulated:
        new_plan = new_plan._replace(dtype=new_plan.dtype.compute)
    out = device.execute(spec, new_args, new_attrs, new_plan)
    return _cast(device, out, plan.dtype)


def _flip(device, t):
    """int64 tensor ``t`` with its top bit flipped."""
    spec, args = CATALOGUE["bitwise_xor"], (t, _FLIP)
    return device.execute(spec, args, {}, spec.infer(args, {}))
