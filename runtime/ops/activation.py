"""Activations as composites (one record each, no kernel): ``elu celu selu leaky_relu relu6
hardtanh hardsigmoid hardswish logsigmoid softsign quick_gelu`` (elementwise), ``softmin`` (along one
axis) and ``glu`` (halves one axis).  PyTorch's names, arguments and semantics; none is a
Tensor method (none is in PyTorch).  On a plain device each runs as one fused kernel
generated from its decomposition (``runtime.ops.composite``).

Gradients follow PyTorch at the kinks: ``hardtanh``/``relu6``/``hardsigmoid`` pass the
gradient strictly inside their linear range (``clamp`` passes it at the bounds too, so they
have rules of their own); ``elu``/``celu``/``selu`` use their negative branch at 0;
``hardswish`` uses PyTorch's piecewise derivative (0 at -3, 1 at 3).  The ``elu``-like
rules also avoid the NaN a ``where`` over an overflowing ``exp`` would give (0 * inf).
"""
from __future__ import annotations

from ..dispatch import dispatch as run
from ..core.errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..tensor import Tensor
from .args import int_arg, tensor_arg, torch_alias
from .elementwise import (_as_float, abs, add, clamp, div, eq, exp, gt, le, log, log1p,
                          logical_and, lt, minimum, mul, neg, sigmoid, sub, unary_dtype, where)
from .reduce import softmax
from ..core.registry import OpSpec, Plan, float_of, front_end, register
from .shape import split
from ..core.shapes import normalize_axis

__all__ = ["elu", "celu", "selu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid",
           "hardswish", "logsigmoid", "softsign", "quick_gelu", "softmin", "glu"]

# PyTorch's SELU constants (Klambauer et al.)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193251149657


def _register(name, decompose, grad=None, rule="float", family="unary", infer=None):
    """An activation's composite record; ``rule``: unary_dtype's "float" or "same"."""
    def infer_elementwise(args, attrs):
        (x,) = args
        dt = unary_dtype(name, rule, x, attrs)
        return Plan(x.shape, dt, dt, "same")

    register(OpSpec(name, family, infer or infer_elementwise, decompose=decompose,
                    backward=None if grad is None else (lambda c, g: (grad(c, g),))))


def _number(op: str, name: str, v) -> float:
    """``float(v)``, or an ArgumentTypeError naming ``op`` (a string, a list, None...)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{op}: {name} must be a number, got {type(v).__name__} "
                                f"{v!r:.40}") from None


def _attrs(op: str, **kw) -> dict | None:
    """The attrs a front end passes: only non-default values, so a default call stays
    attr-less (dispatch's fast path, one composite signature)."""
    out = {k: _number(op, k, v) for k, (v, default) in kw.items()}
    out = {k: v for k, v in out.items() if v != kw[k][1]}
    return out or None


def _expm1(x):
    # Kahan's expm1: u = exp(x) rounded; (u - 1) * x / log(u) cancels the rounding of u,
    # x itself where u == 1 (tiny x), -1 where u - 1 == -1 (log(u) would be -inf or 0)
    u = exp(x)
    d = sub(u, 1)
    return where(eq(u, 1), x, where(eq(d, -1), -1.0, div(mul(d, x), log(u))))


# --------------------------------------------------------------------------- elu family
def _neg_exp(x, inv_alpha):
    """exp(min(x, 0) * inv_alpha) - 1: the negative branch, no overflow for large x."""
    m = minimum(x, 0)
    return _expm1(m if inv_alpha == 1.0 else mul(m, inv_alpha))


def _decompose_elu(args, attrs):
    x = _as_float(args[0])
    alpha = attrs.get("alpha", 1.0)
    return where(gt(x, 0), x, mul(_neg_exp(x, 1.0), alpha))


def _grad_elu(c, g):
    x, alpha = c.input(0), c.attrs.get("alpha", 1.0)
    return where(gt(x, 0), g, mul(g, mul(exp(minimum(x, 0)), alpha)))


def _decompose_celu(args, attrs):
    x = _as_float(args[0])
    alpha = attrs.get("alpha", 1.0)
    return where(gt(x, 0), x, mul(_neg_exp(x, 1.0 / alpha), alpha))


def _grad_celu(c, g):
    x, alpha = c.input(0), c.attrs.get("alpha", 1.0)
    return where(gt(x, 0), g, mul(g, exp(div(minimum(x, 0), alpha))))


def _decompose_selu(args, attrs):
    x = _as_float(args[0])
    return mul(where(gt(x, 0), x, mul(_neg_exp(x, 1.0), SELU_ALPHA)), SELU_SCALE)


def _grad_selu(c, g):
    x = c.input(0)
    return mul(where(gt(x, 0), g, mul(g, mul(exp(minimum(x, 0)), SELU_ALPHA))), SELU_SCALE)


_register("elu", _decompose_elu, _grad_elu)
_register("celu", _decompose_celu, _grad_celu)
_register("selu", _decompose_selu, _grad_selu)


@front_end
def elu(input, alpha: float = 1.0) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)`` (PyTorch's ``elu``)."""
    return run("elu", (tensor_arg("elu", input),), _attrs("elu", alpha=(alpha, 1.0)))


@front_end
def celu(input, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (PyTorch's ``celu``)."""
    if _number("celu", "alpha", alpha) == 0.0:
        raise ArgumentValueError("celu: alpha must not be 0 (it divides x)")
    return run("celu", (tensor_arg("celu", input),), _attrs("celu", alpha=(alpha, 1.0)))


@front_end
def selu(input) -> Tensor:
    """``scale * elu(x, alpha)`` with PyTorch's SELU constants."""
    return run("selu", (tensor_arg("selu", input),))


# --------------------------------------------------------------------------- piecewise linear
def _decompose_leaky_relu(args, attrs):
    x = _as_float(args[0])
    return where(gt(x, 0), x, mul(x, attrs.get("negative_slope", 0.01)))


_register("leaky_relu", _decompose_leaky_relu)     # where's gradient is PyTorch's (slope at 0)


def _inside(x, lo, hi):
    return logical_and(gt(x, lo), lt(x, hi))


def _decompose_hardtanh(args, attrs):
    return clamp(args[0], attrs.get("min_val", -1.0), attrs.get("max_val", 1.0))


def _grad_hardtanh(c, g):
    lo, hi = c.attrs.get("min_val", -1.0), c.attrs.get("max_val", 1.0)
    return where(_inside(c.input(0), lo, hi), g, 0)


def _infer_hardtanh(args, attrs):
    (x,) = args
    lo, hi = attrs.get("min_val", -1.0), attrs.get("max_val", 1.0)
    unary_dtype("hardtanh", "same", x, attrs)           # bool rejected under its own name
    dt = unary_dtype("hardtanh", "clamp", x, {"min": lo, "max": hi})
    return Plan(x.shape, dt, dt, "same")


_register("hardtanh", _decompose_hardtanh, _grad_hardtanh, infer=_infer_hardtanh)
_register("relu6", lambda args, attrs: clamp(args[0], 0, 6),
          lambda c, g: where(_inside(c.input(0), 0, 6), g, 0), rule="same")


@front_end
def leaky_relu(input, negative_slope: float = 0.01) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x``."""
    return run("leaky_relu", (tensor_arg("leaky_relu", input),),
               _attrs("leaky_relu", negative_slope=(negative_slope, 0.01)))


@front_end
def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``clamp(x, min_val, max_val)``; the gradient passes strictly inside (PyTorch's)."""
    x = tensor_arg("hardtanh", input)
    if _number("hardtanh", "min_val", min_val) > _number("hardtanh", "max_val", max_val):
        raise ArgumentValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val "
                                 f"({max_val})")
    # the bounds keep their Python type (ints keep an int tensor's dtype, as clamp's)
    attrs = {k: v for k, v, d in (("min_val", min_val, -1.0), ("max_val", max_val, 1.0))
             if v != d or type(v) is not float}
    return run("hardtanh", (x,), attrs or None)


@front_end
def relu6(input) -> Tensor:
    """``min(max(x, 0), 6)`` (``hardtanh(x, 0, 6)``)."""
    return run("relu6", (tensor_arg("relu6", input),))


def _decompose_hardsigmoid(args, attrs):
    x = _as_float(args[0])
    return clamp(add(div(x, 6.0), 0.5), 0.0, 1.0)


def _decompose_hardswish(args, attrs):
    x = _as_float(args[0])
    return mul(x, div(clamp(add(x, 3.0), 0.0, 6.0), 6.0))


def _grad_hardswish(c, g):
    # PyTorch's (2.x): 0 up to -3, x / 3 + 1/2 strictly inside (-3, 3), 1 from 3 on
    x = c.input(0)
    return where(le(x, -3), 0, where(lt(x, 3), mul(g, add(div(x, 3.0), 0.5)), g))


_register("hardsigmoid", _decompose_hardsigmoid,
          lambda c, g: where(_inside(c.input(0), -3, 3), div(g, 6.0), 0))
_register("hardswish", _decompose_hardswish, _grad_hardswish)


@front_end
def hardsigmoid(input) -> Tensor:
    """``relu6(x + 3) / 6``."""
    return run("hardsigmoid", (tensor_arg("hardsigmoid", input),))


@front_end
def hardswish(input) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return run("hardswish", (tensor_arg("hardswish", input),))


# --------------------------------------------------------------------------- smooth
def _decompose_logsigmoid(args, attrs):
    # -softplus(-x) = min(x, 0) - log1p(exp(-|x|)): no overflow in either tail
    x = _as_float(args[0])
    return sub(minimum(x, 0), log1p(exp(neg(abs(x)))))


def _decompose_softsign(args, attrs):
    x = _as_float(args[0])
    return div(x, add(abs(x), 1))


_register("logsigmoid", _decompose_logsigmoid, lambda c, g: mul(g, sigmoid(neg(c.input(0)))))
_register("softsign", _decompose_softsign)        # its decomposition's gradient is exact


@front_end
def logsigmoid(input) -> Tensor:
    """``log(sigmoid(x))``, computed as ``-softplus(-x)`` (stable in both tails)."""
    return run("logsigmoid", (tensor_arg("logsigmoid", input),))


@front_end
def softsign(input) -> Tensor:
    """``x / (1 + |x|)``."""
    return run("softsign", (tensor_arg("softsign", input),))


def _decompose_quick_gelu(args, attrs):
    x = _as_float(args[0])
    return mul(x, sigmoid(mul(x, 1.702)))


_register("quick_gelu", _decompose_quick_gelu)    # its decomposition's gradient is exact


@front_end
def quick_gelu(input) -> Tensor:
    """``x * sigmoid(1.702 * x)``: the sigmoid approximation of GELU used by CLIP and GPT-2
    style models (``QuickGELU`` in Hugging Face Transformers and open_clip)."""
    return run("quick_gelu", (tensor_arg("quick_gelu", input),))


# --------------------------------------------------------------------------- along an axis
def _float_same_shape(name):
    def infer(args, attrs):
        (x,) = args
        axis = attrs["axis"]
        if type(axis) is not int or not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis!r} is not a normalised axis of a tensor of "
                             f"shape {tuple(x.shape)}")
        dt = float_of(x.dtype)
        return Plan(x.shape, dt, dt)
    return infer


_register("softmin", lambda args, attrs: softmax(neg(_as_float(args[0])), axis=attrs["axis"]),
          family="softmax", infer=_float_same_shape("softmin"))


def _implicit_dim(ndim: int) -> int:
    """PyTorch's implicit softmax dim (``_get_softmax_dim``): 0 for 0-, 1- and 3-d inputs."""
    return 0 if ndim in (0, 1, 3) else 1


@front_end
def softmin(input, dim=None, *, axis=None) -> Tensor:
    """``softmax(-x, dim)`` (``dim=None``: PyTorch's implicit choice, 0 for 0-, 1- and 3-d)."""
    x = tensor_arg("softmin", input)
    dim = torch_alias("softmin", dim, None, axis, "dim= and axis=")
    if dim is None:
        dim = _implicit_dim(x.ndim)
    if x.ndim == 0:
        normalize_axis("softmin", dim, 0)
        return softmax(neg(_as_float(x)), axis=-1)   # 1.0: one element
    return run("softmin", (x,), {"axis": normalize_axis("softmin", dim, x.ndim, x.shape)})


def _infer_glu(args, attrs):
    (x,) = args
    axis = attrs["axis"]
    if type(axis) is not int or not 0 <= axis < x.ndim or x.shape[axis] % 2:
        raise ShapeError(f"glu: cannot halve axis {axis!r} of a tensor of shape "
                         f"{tuple(x.shape)}")
    dt = float_of(x.dtype)
    shape = tuple(d // 2 if i == axis else d for i, d in enumerate(x.shape))
    return Plan(shape, dt, dt)


def _decompose_glu(args, attrs):
    a, b = split(_as_float(args[0]), args[0].shape[attrs["axis"]] // 2, axis=attrs["axis"])
    return mul(a, sigmoid(b))


_register("glu", _decompose_glu, family="activation", infer=_infer_glu)


@front_end
def glu(input, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of ``input`` along ``dim``."""
    x = tensor_arg("glu", input)
    dim = int_arg("glu", "dim", dim)
    if x.ndim == 0:
        raise ShapeError("glu: a 0-d tensor has no axis to halve")
    axis = normalize_axis("glu", dim, x.ndim, x.shape)
    if x.shape[axis] % 2:
        raise ShapeError(f"glu: halving axis {dim} needs an even size, got {x.shape[axis]} "
                         f"(shape {tuple(x.shape)})")
    return run("glu", (x,), {"axis": axis})

