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

Ops that only move values (``MOVES``: reshape, permute, expand, cat, basic indexing, take,
gather) run on the storage directly when every emulated operand already has the result's
dtype.  ``cast`` itself and ``init`` never upcast.  The dispatch layer calls ``needs_upcast``
(``PlainDevice.execute``, ``dispatch.plain_step``, the small-op fast path, which never caches a
decision for such a call) and the fusion pass leaves such ops unfused.
"""
from __future__ import annotations

from .core import dtypes as D
from .core.registry import CATALOGUE
from .tensor import Tensor

__all__ = ["needs_upcast", "run_upcast", "MOVES"]

#: elements from which ``unary``/``binary`` ops on the small ints run natively (see the doc)
NATIVE_MIN = 1 << 14

#: ops that only move values: they run on the storage of the small dtypes
MOVES = frozenset(("reshape", "permute", "expand", "cat", "index", "take", "gather"))
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
    moved_only = name in MOVES
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
