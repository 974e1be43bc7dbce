"""Backward rules, one per differentiable catalogue op, attached with ``set_backward``.

A rule is ``rule(ctx, g) -> tuple`` with one gradient (or None) per input, where ``ctx``
is a ``tape.RuleContext`` and ``g`` the gradient of the op's output.  Rules only use the
public tensor ops on inner tensors, so they run on every device (cpu, cuda, inside a
capture).  The tape reduces each returned gradient over broadcast dimensions and casts
it to its input's dtype, so rules may return the broadcast shape.

Conventions at non-differentiable points (as in PyTorch): ``abs``/``relu`` use 0 at 0;
``clamp`` passes the gradient where ``min <= x <= max``; ``maximum``/``minimum`` and the
reductions ``max``/``min`` split the gradient evenly among tied elements.
"""
from __future__ import annotations

import math

from ..ops import api
from ..ops.catalogue import CATALOGUE, set_backward
from ..ops.shapes import prod

__all__ = ["RULES", "install"]

RULES: dict = {}


def rule(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _unary(fn):
    """A rule for a one-input op from ``fn(ctx, g) -> grad``."""
    def r(ctx, g):
        return (fn(ctx, g),)
    return r


def _zeros(ctx, shape, dtype=None):
    return api.full(shape, 0, dtype or ctx.dtype, ctx.device)


def _mask(cond, dtype):
    return api.cast(cond, dtype)


# ============================================================================ elementwise unary
RULES["neg"] = _unary(lambda c, g: api.neg(g))
RULES["abs"] = _unary(lambda c, g: api.mul(g, api.sign(c.input(0))))
RULES["relu"] = _unary(lambda c, g: api.where(api.gt(c.input(0), 0), g, 0))
RULES["exp"] = _unary(lambda c, g: api.mul(g, c.output()))
RULES["log"] = _unary(lambda c, g: api.div(g, c.input(0)))
RULES["sqrt"] = _unary(lambda c, g: api.div(api.mul(g, 0.5), c.output()))
RULES["sin"] = _unary(lambda c, g: api.mul(g, api.cos(c.input(0))))
RULES["cos"] = _unary(lambda c, g: api.neg(api.mul(g, api.sin(c.input(0)))))
RULES["reciprocal"] = _unary(lambda c, g: api.neg(api.mul(g, api.mul(c.output(), c.output()))))
RULES["cast"] = _unary(lambda c, g: g)      # the tape casts back to the input's dtype


@rule("rsqrt")
def _rsqrt(c, g):
    y = c.output()                          # d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
    return (api.mul(g, api.mul(api.mul(y, api.mul(y, y)), -0.5)),)


@rule("tanh")
def _tanh(c, g):
    y = c.output()
    return (api.mul(g, api.sub(1, api.mul(y, y))),)


@rule("sigmoid")
def _sigmoid(c, g):
    y = c.output()
    return (api.mul(g, api.mul(y, api.sub(1, y))),)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@rule("gelu")
def _gelu(c, g):
    x = c.input(0)                          # Phi(x) + x phi(x)
    cdf = api.mul(api.add(api.erf(api.mul(x, _SQRT1_2)), 1), 0.5)
    pdf = api.mul(api.exp(api.mul(api.mul(x, x), -0.5)), _INV_SQRT_2PI)
    return (api.mul(g, api.add(cdf, api.mul(x, pdf))),)


_K = math.sqrt(2.0 / math.pi)


@rule("gelu_tanh")
def _gelu_tanh(c, g):
    x = c.input(0)
    x2 = api.mul(x, x)
    t = api.tanh(api.mul(api.add(x, api.mul(api.mul(x2, x), 0.044715)), _K))
    du = api.mul(api.add(api.mul(x2, 3 * 0.044715), 1), _K)
    d = api.add(api.mul(api.add(t, 1), 0.5),
                api.mul(api.mul(x, api.sub(1, api.mul(t, t))), api.mul(du, 0.5)))
    return (api.mul(g, d),)


@rule("erf")
def _erf(c, g):
    x = c.input(0)
    return (api.mul(g, api.mul(api.exp(api.neg(api.mul(x, x))), 2.0 / math.sqrt(math.pi))),)


@rule("clamp")
def _clamp(c, g):
    x = c.input(0)
    lo, hi = c.attrs.get("min"), c.attrs.get("max")
    keep = None
    if lo is not None:
        keep = api.ge(x, lo)
    if hi is not None:
        k = api.le(x, hi)
        keep = k if keep is None else api.logical_and(keep, k)
    return (api.where(keep, g, 0),)


# ============================================================================ elementwise binary
@rule("add")
def _add(c, g):
    return (g if c.needs(0) else None, g if c.needs(1) else None)


@rule("sub")
def _sub(c, g):
    return (g if c.needs(0) else None, api.neg(g) if c.needs(1) else None)


@rule("mul")
def _mul(c, g):
    return (api.mul(g, c.input(1)) if c.needs(0) else None,
            api.mul(g, c.input(0)) if c.needs(1) else None)


@rule("div")
def _div(c, g):
    b = c.input(1)
    ga = api.div(g, b) if c.needs(0) else None
    gb = None
    if c.needs(1):                          # d(a/b)/db = -a / b^2
        gb = api.neg(api.div(api.mul(g, c.input(0)), api.mul(b, b)))
    return ga, gb


@rule("pow")
def _pow(c, g):
    a, b = c.input(0), c.input(1)
    a_scalar, b_scalar = not hasattr(a, "shape"), not hasattr(b, "shape")
    ga = gb = None
    if c.needs(0):                          # b a^(b-1); 0 where b == 0 (as in PyTorch)
        if b_scalar:
            ga = api.mul(g, api.mul(api.pow(a, b - 1), b)) if b != 0 else api.mul(g, 0)
        else:
            d = api.mul(api.pow(a, api.sub(b, 1)), b)
            ga = api.where(api.eq(b, 0), 0, api.mul(g, d))
    if c.needs(1):                          # a^b log a; 0 where a == 0 and b >= 0
        y = c.output()
        if a_scalar:
            if a == 0:  # b < 0: 0^b log 0 = inf * -inf = -inf, as for a tensor base (PyTorch)
                gb = api.where(api.ge(b, 0), 0, api.mul(g, -math.inf))
            else:
                gb = api.mul(g, api.mul(y, math.log(a) if a > 0 else math.nan))
        else:
            d = api.mul(y, api.log(a))
            gb = api.where(api.logical_and(api.eq(a, 0), api.ge(b, 0)), 0, api.mul(g, d))
    return ga, gb


def _share(first_wins, tie, dtype):
    """1 where the operand wins, 1/2 on ties, 0 where it loses."""
    return api.add(_mask(first_wins, dtype), api.mul(_mask(tie, dtype), 0.5))


@rule("maximum", "minimum")
def _maxmin(c, g):
    a, b = c.input(0), c.input(1)
    tie = api.eq(a, b)
    big = c.node.spec.name == "maximum"
    ga = gb = None
    if c.needs(0):
        ga = api.mul(g, _share(api.gt(a, b) if big else api.lt(a, b), tie, g.dtype))
    if c.needs(1):
        gb = api.mul(g, _share(api.gt(b, a) if big else api.lt(b, a), tie, g.dtype))
    return ga, gb


@rule("where")
def _where(c, g):
    cond = c.input(0)
    return (None,
            api.where(cond, g, 0) if c.needs(1) else None,
            api.where(cond, 0, g) if c.needs(2) else None)


# ============================================================================ reductions
def _kept(c, t):
    """A reduced tensor with its reduced axes back as size 1 (keepdims form)."""
    if c.attrs["keepdims"]:
        return t
    x_shape = c.input_shape(0)
    axes = c.attrs["axes"]
    return api.reshape(t, tuple(1 if i in axes else d for i, d in enumerate(x_shape)))


def _count(c) -> int:
    x_shape = c.input_shape(0)
    return prod(x_shape[a] for a in c.attrs["axes"])


@rule("sum")
def _sum(c, g):
    return (api.broadcast_to(_kept(c, g), c.input_shape(0)),)


@rule("mean")
def _mean(c, g):
    return (api.broadcast_to(api.div(_kept(c, g), max(_count(c), 1)), c.input_shape(0)),)


@rule("max", "min")
def _extreme(c, g):
    x = c.input(0)
    hit = _mask(api.eq(x, _kept(c, c.output())), g.dtype)   # ties share the gradient evenly
    n = api.sum(hit, axis=c.attrs["axes"], keepdims=True)
    return (api.mul(hit, api.div(_kept(c, g), n)),)


@rule("prod")
def _prod(c, g):
    x = c.input(0)
    axes = c.attrs["axes"]
    zero = api.eq(x, 0)
    nonzero = api.where(zero, 1, x)
    p_nz = api.prod(nonzero, axis=axes, keepdims=True)       # product of the non-zero entries
    zeros = api.sum(_mask(zero, x.dtype), axis=axes, keepdims=True)
    others = api.where(zero, api.where(api.eq(zeros, 1), p_nz, 0),
                       api.where(api.eq(zeros, 0), api.div(p_nz, nonzero), 0))
    return (api.mul(_kept(c, g), others),)


@rule("var")
def _var(c, g):
    x = c.input(0)
    axes = c.attrs["axes"]
    # the forward divides by max(N - ddof, 0): with no degrees of freedom left it is nan/inf,
    # and so is the gradient (0 * inf = nan where x equals the mean), as in PyTorch
    n = max(_count(c) - c.attrs.get("ddof", 0), 0)
    centred = api.sub(x, api.mean(x, axis=axes, keepdims=True))
    return (api.mul(centred, api.mul(_kept(c, g), 2.0 / n if n else float("inf"))),)


@rule("logsumexp")
def _logsumexp(c, g):
    x = c.input(0)
    return (api.mul(api.exp(api.sub(x, _kept(c, c.output()))), _kept(c, g)),)


@rule("softmax")
def _softmax(c, g):
    y = c.output()
    dot = api.sum(api.mul(g, y), axis=c.attrs["axis"], keepdims=True)
    return (api.mul(y, api.sub(g, dot)),)


@rule("log_softmax")
def _log_softmax(c, g):
    y = c.output()
    total = api.sum(g, axis=c.attrs["axis"], keepdims=True)
    return (api.sub(g, api.mul(api.exp(y), total)),)


# ============================================================================ linalg
@rule("matmul")
def _matmul(c, g):
    a, b = c.input(0), c.input(1)
    a_shape, b_shape = a.shape, b.shape
    a2 = api.reshape(a, (1,) + a_shape) if len(a_shape) == 1 else a
    b2 = api.reshape(b, b_shape + (1,)) if len(b_shape) == 1 else b
    # g as batch + (m, n), putting back the axes a 1-D operand dropped
    g2 = g
    if len(a_shape) == 1:
        g2 = api.unsqueeze(g2, g2.ndim - (0 if len(b_shape) == 1 else 1))
    if len(b_shape) == 1:
        g2 = api.unsqueeze(g2, g2.ndim)
    ga = gb = None
    # When an operand is itself a transposed tensor (``x @ w.T`` in ``linear``), compute its
    # gradient transposed, so the permute rule hands back a contiguous gradient.
    if c.needs(0):
        if _is_transposed(c, 0):
            ga = api.transpose(api.matmul(b2, api.transpose(g2, -1, -2)), -1, -2)
        else:
            ga = api.matmul(g2, api.transpose(b2, -1, -2))
        ga = api.reshape(_unbatch(ga, a2.shape), a_shape)
    if c.needs(1):
        if _is_transposed(c, 1):
            gb = api.transpose(api.matmul(api.transpose(g2, -1, -2), a2), -1, -2)
        else:
            gb = api.matmul(api.transpose(a2, -1, -2), g2)
        gb = api.reshape(_unbatch(gb, b2.shape), b_shape)
    return ga, gb


def _is_transposed(c, i) -> bool:
    """Input ``i`` is a recorded permute that swaps the last two axes (and nothing else)."""
    from .tape import Node
    p = c.node.inputs[i]
    if not isinstance(p, Node) or p.spec is None or p.spec.name != "permute":
        return False
    axes = p.attrs["axes"]
    n = len(axes)
    return n >= 2 and tuple(axes) == tuple(range(n - 2)) + (n - 1, n - 2)


def _unbatch(g, shape):
    """Sum a batched matmul gradient over the batch dims its operand was broadcast along."""
    from .tape import fit_gradient
    return fit_gradient(g, tuple(shape), g.dtype)


@rule("linear")
def _linear(c, g):
    # y = x @ w.T (+ b), w of shape (out, in), x of shape (..., in)
    x, w = c.input(0), c.input(1)
    gx = gw = gb = None
    if c.needs(0):
        gx = api.matmul(g, w)               # (..., out) @ (out, in)
    if c.needs(1):                          # g2.T @ x2 over all leading dims: (out, in)
        out_f, in_f = w.shape
        rows = prod(x.shape[:-1])  # not -1: ambiguous when a feature dim is 0
        g2 = g if g.ndim == 2 else api.reshape(g, (rows, out_f))
        x2 = x if x.ndim == 2 else api.reshape(x, (rows, in_f))
        gw = api.matmul(api.transpose(g2, 0, 1), x2)
    if c.arity == 3 and c.needs(2):
        gb = g                              # the tape sums it over the broadcast dims
    return gx, gw, gb


@rule("cross_entropy")
def _cross_entropy(c, g):
    # d/dlogits of -log_softmax(logits)[i, t_i] is softmax(logits)[i] - onehot(t_i), times the
    # row's output gradient (g / N for the mean, g for the sum, g[i] for "none"): one op,
    # ``cross_entropy_backward`` (its decomposition spells it out with primitive ops)
    return _run("cross_entropy_backward", (c.input(0), c.input(1), g), c.attrs), None


# ============================================================================ shape
@rule("reshape")
def _reshape(c, g):
    return (api.reshape(g, c.input_shape(0)),)


@rule("permute")
def _permute(c, g):
    axes = c.attrs["axes"]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (api.permute(g, tuple(inverse)),)


@rule("expand")
def _expand(c, g):
    return (g,)                             # the tape sums over the expanded dimensions


@rule("cat")
def _cat(c, g):
    axis = c.attrs["axis"]
    sizes = [c.input_shape(i)[axis] for i in range(c.arity)]
    parts = api.split(g, sizes, axis)
    return tuple(p if c.needs(i) else None for i, p in enumerate(parts))


# ============================================================================ indexing
def _run(name, args, attrs):
    from ..dispatch import dispatch
    return dispatch(name, args, attrs)


@rule("index")
def _index(c, g):
    x_shape = c.input_shape(0)
    zeros = _zeros(c, x_shape, g.dtype)
    return (_run("slice_assign", (zeros, g), {"key": c.attrs["key"]}),)


@rule("slice_assign")
def _slice_assign(c, g):
    key = c.attrs["key"]
    gx = _run("slice_assign", (g, 0), {"key": key}) if c.needs(0) else None
    gv = None
    if c.needs(1):
        region = _run("index", (g,), {"key": key})
        gv = region                         # reduced to the value's shape by the tape
    return gx, gv


def _scatter_back(c, g, axis, idx, x_shape):
    """``scatter_add(zeros(x_shape), axis, idx, g)``: the gradient of a gather-like read."""
    return api.scatter_add(_zeros(c, x_shape, g.dtype), axis, idx, g)


@rule("take")
def _take(c, g):
    # take(x, idx, axis) reads x[..., idx[j], ...]: scatter-add g back along the axis, with
    # idx flattened and broadcast (a stride-0 view) over the other axes of g
    x_shape = c.input_shape(0)
    idx = c.input(1)
    axis = c.attrs["axis"]
    shape = tuple(x_shape)
    if axis is None or not shape:           # axis None reads the flattened x
        shape, axis = (prod(x_shape),), 0
    k = prod(idx.shape)
    pre, post = shape[:axis], shape[axis + 1:]
    g2 = api.reshape(g, pre + (k,) + post)
    i2 = api.reshape(idx, (1,) * len(pre) + (k,) + (1,) * len(post))
    i2 = api.expand(i2, g2.shape)
    gx = _scatter_back(c, g2, axis, i2, shape)
    return api.reshape(gx, x_shape), None


@rule("gather")
def _gather(c, g):
    # out[p] = x[p with p[axis] = idx[p]]: the same positions, scatter-added (idx may be
    # smaller than x off the axis: the other entries get 0)
    return _scatter_back(c, g, c.attrs["axis"], c.input(1), c.input_shape(0)), None


@rule("scatter_add")
def _scatter_add(c, g):
    # out = x + (src scattered): d/dx = g; d/dsrc[p] = g[p with p[axis] = idx[p]] where p is a
    # position of idx, 0 on the rest of src (PyTorch requires idx.shape == src.shape here)
    gx = g if c.needs(0) else None
    gs = None
    if c.needs(2):
        idx = c.input(1)
        gs = api.gather(g, c.attrs["axis"], idx)
        s_shape = c.input_shape(2)
        if gs.shape != tuple(s_shape):
            key = tuple(slice(0, n) for n in gs.shape)
            gs = api.slice_assign(_zeros(c, s_shape, g.dtype), key, gs)
    return gx, None, gs


def custom_rule(backward):
    """A tape rule that calls a user's ``backward(grad, *inputs, output)``."""
    def r(c, g):
        inputs = [c.input(i) for i in range(c.arity)]
        out = backward(g, *inputs, c.output())
        if not isinstance(out, (tuple, list)):
            out = (out,)
        if len(out) != c.arity:
            raise ValueError(f"custom op {c.node.spec.name!r}: backward returned {len(out)} "
                             f"gradient(s) for {c.arity} input(s)")
        return tuple(out)
    return r


def install() -> None:
    """Attach every rule to the catalogue; check each differentiable op has one."""
    for name, fn in RULES.items():
        set_backward(name, fn)
    missing = [n for n, s in CATALOGUE.items()
               if s.differentiable and s.family != "custom" and s.backward is None]
    if missing:
        raise RuntimeError(f"autodiff: no backward rule for {missing}")
