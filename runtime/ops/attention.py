"""The fused softmax of ``scaled_dot_product_attention``: ``attention_softmax`` and
its gradient op ``attention_softmax_backward``.

``attention_softmax(scores[, mask])`` with attrs ``scale`` (a float), ``causal`` and
``additive`` is ``softmax(where(mask, scores * scale, -inf))`` (a boolean mask: True takes
part), ``softmax(scores * scale + mask)`` (``additive``) or, with ``causal``, the keys after
each query (``j > i + offset``; offset 0 is top-left aligned as PyTorch's ``tril``) masked — one pass per row on
the kernel sets (``KernelSet.attention_softmax``), so attention is matmul -> this -> matmul.
Its rule is one more row pass (``attention_softmax_backward``: ``p * (g - sum(g * p)) * scale``,
0 where the composite's ``where`` stops the gradient), and for an additive mask the same op
with scale 1 (the tape sums it over the mask's broadcast dims).  Recording devices (capture,
ONNX export, ``graph.compile``) get the decomposition, the primitive composite that
``scaled_dot_product_attention`` was before.
"""
from __future__ import annotations

import math

from ..dispatch import dispatch as run
from ..core.errors import ArgumentValueError, DTypeError, ShapeError
from .create import arange
from .elementwise import add, binary_dtypes, ge, mul, sub, where
from .reduce import softmax, sum
from ..core.registry import OpSpec, Plan, register, shape_of
from .shape import reshape
from ..core.shapes import broadcast_shapes


def _check_mask(name, x, mask):
    shape = tuple(x.shape)
    if not hasattr(mask, "dtype") or broadcast_shapes(name, shape, shape_of(mask)) != shape:
        raise ShapeError(f"{name}: mask of shape {tuple(shape_of(mask))} does not broadcast to "
                         f"the scores' shape {shape}")


def _check_scores(name, x):
    if not hasattr(x, "dtype") or not x.dtype.is_float or len(x.shape) < 2:
        raise DTypeError(f"{name}: scores must be a float tensor of 2 or more dims, got "
                         f"{getattr(getattr(x, 'dtype', None), 'name', type(x).__name__)}"
                         f"{list(shape_of(x))}")


def _check_attrs(name, attrs):
    # (a crafted graph's attrs: the front end always records these types)
    if (type(attrs.get("scale")) not in (int, float) or type(attrs.get("offset")) is not int
            or type(attrs.get("causal")) is not bool):
        raise ArgumentValueError(f"{name}: attrs scale (a number), causal (a bool) and offset "
                                 f"(an int) expected, got {attrs!r}")


def _infer(args, attrs):
    name = "attention_softmax"
    x = args[0]
    _check_scores(name, x)
    _check_attrs(name, attrs)
    dt = x.dtype
    if len(args) == 2:
        mask = args[1]
        _check_mask(name, x, mask)
        if attrs["additive"]:
            dt = binary_dtypes("add", x, mask)[1]
        elif not mask.dtype.is_bool:
            raise DTypeError(f"{name}: a non-additive mask must be bool, got {mask.dtype.name}")
    return Plan(tuple(x.shape), dt, dt)


def _kernel(ks, p, args, attrs, plan, device):
    dt = plan.dtype
    x = p[0] if args[0].dtype is dt else ks.cast(p[0], dt.np)
    mask = None
    if len(args) == 2:
        mask = p[1]
        if attrs["additive"] and args[1].dtype is not dt:
            mask = ks.cast(mask, dt.np)
    return ks.attention_softmax(x, mask, bool(attrs["additive"]), float(attrs["scale"]),
                                _diag(attrs))


def _diag(attrs):
    """The kernel sets' ``causal`` argument: the int diagonal, or None."""
    return int(attrs["offset"]) if attrs["causal"] else None


def _causal_keep(x, offset):
    L, S = x.shape[-2], x.shape[-1]
    rows = reshape(arange(offset, offset + L, device=x.device), (L, 1))
    return ge(rows, arange(S, device=x.device))


def _decompose(args, attrs):
    # exactly what scaled_dot_product_attention computed before the fused op
    x = args[0]
    s = mul(x, attrs["scale"])
    if attrs["causal"]:
        s = where(_causal_keep(x, attrs["offset"]), s, -math.inf)
    if len(args) == 2:
        s = add(s, args[1]) if attrs["additive"] else where(args[1], s, -math.inf)
    return softmax(s, axis=-1)


def _grad(c, g):
    a = c.attrs
    has_mask = c.arity == 2
    p = c.output()
    gs = gm = None
    if c.needs(0):
        bool_mask = (c.input(1),) if has_mask and not a["additive"] else ()
        gs = run("attention_softmax_backward", (p, g) + bool_mask,
                 {"scale": a["scale"], "causal": a["causal"], "offset": a["offset"]})
    if has_mask and a["additive"] and c.needs(1):
        gm = run("attention_softmax_backward", (p, g),
                 {"scale": 1.0, "causal": a["causal"], "offset": a["offset"]})
    return gs, gm


def _infer_backward(args, attrs):
    name = "attention_softmax_backward"
    p, g = args[0], args[1]
    _check_scores(name, p)
    _check_attrs(name, attrs)
    if tuple(shape_of(g)) != tuple(p.shape) or not hasattr(g, "dtype"):
        raise ShapeError(f"{name}: gradient of shape {tuple(shape_of(g))} does not match the "
                         f"probabilities of shape {tuple(p.shape)}")
    if len(args) == 3:
        _check_mask(name, p, args[2])
        if not args[2].dtype.is_bool:
            raise DTypeError(f"{name}: the mask must be bool, got {args[2].dtype.name}")
    return Plan(tuple(p.shape), p.dtype, p.dtype)


def _kernel_backward(ks, p, args, attrs, plan, device):
    g = p[1] if args[1].dtype is plan.dtype else ks.cast(p[1], plan.dtype.np)
    mask = p[2] if len(args) == 3 else None
    return ks.attention_softmax_backward(p[0], g, mask, float(attrs["scale"]), _diag(attrs))


def _decompose_backward(args, attrs):
    p, g = args[0], args[1]
    ds = mul(p, sub(g, sum(mul(g, p), axis=-1, keepdims=True)))
    if attrs["causal"]:
        ds = where(_causal_keep(p, attrs["offset"]), ds, 0.0)
    if len(args) == 3:
        ds = where(args[2], ds, 0.0)
    return mul(ds, attrs["scale"])


register(OpSpec("attention_softmax", "attention", _infer, _kernel, cost="compute",
                backward=_grad, decompose=_decompose))
register(OpSpec("attention_softmax_backward", "attention", _infer_backward, _kernel_backward,
                cost="compute", differentiable=False, decompose=_decompose_backward,
                record_whole=True))


def attention_softmax(scores, mask=None, scale: float = 1.0, is_causal: bool = False,
                      additive=None, offset: int = 0):
    """The fused ``softmax(mask(scores * scale))`` along the last axis (see the module
    docstring); ``additive`` defaults to ``mask`` not being bool; ``is_causal`` keeps key ``j``
    of query row ``i`` when ``j <= i + offset``."""
    attrs = {"scale": float(scale), "causal": bool(is_causal), "offset": int(offset),
             "additive": False}
    if mask is None:
        return run("attention_softmax", (scores,), attrs)
    attrs["additive"] = (not mask.dtype.is_bool) if additive is None else bool(additive)
    return run("attention_softmax", (scores, mask), attrs)


__all__ = ["attention_softmax"]
