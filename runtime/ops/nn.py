"""Network ops with their own kernels and gradients: ``linear`` and ``cross_entropy`` (the
front ends are ``rt.nn.functional.linear``/``cross_entropy``).

Each is one catalogue op lowered onto existing kernel-set methods (no kernel set needs a new
method) and differentiated by one rule; recording devices get the primitive decomposition.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import dispatch as run
from ..core import dtypes as D
from ..core.errors import (ArgumentTypeError, ArgumentValueError, DTypeError, IndexOutOfRangeError,
                           ShapeError)
from ..tensor import Tensor
from .args import tensor_arg
from .create import arange, full, tensor
from .elementwise import add, binary_dtypes, cast, div, eq, mul, neg
from .index import scatter_add
from .linalg import infer_matmul, kernel_matmul, matmul
from .reduce import log_softmax, mean, softmax, sum
from ..kernel_sets import supports
from ..core.registry import CATALOGUE, Meta, OpSpec, Plan, register, shape_of
from .shape import reshape, transpose, unsqueeze
from ..core.shapes import broadcast_shapes, prod


# --------------------------------------------------------------------------- linear
def _infer_linear(args, attrs):
    if len(args) not in (2, 3):
        raise ShapeError(f"linear: expected (input, weight[, bias]), got {len(args)} operands")
    x, w = args[0], args[1]
    if w.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{w.shape}")
    shape, dt = infer_matmul((x, Meta((w.shape[1], w.shape[0]), w.dtype)), {})[:2]
    if len(args) == 3:
        shape = broadcast_shapes("linear", shape, shape_of(args[2]))
        dt = binary_dtypes("add", Meta(shape, dt), args[2])[1]
    return Plan(shape, dt, dt)


def _kernel_linear(ks, p, args, attrs, plan, device):
    # exactly ``add(matmul(x, permute(w, (1, 0))), bias)``: the same kernel calls on the
    # same views (the transposed weight is a strided view, never copied)
    x, w = args[0], args[1]
    wt = Meta((w.shape[1], w.shape[0]), w.dtype)
    if len(args) == 3:                      # the product's shape and dtype, before the bias
        mshape, mdt = tuple(x.shape[:-1]) + (w.shape[0],), D.promote(x.dtype, w.dtype, "linear")
    else:
        mshape, mdt = plan.shape, plan.dtype
    y = kernel_matmul(ks, (p[0], ks.permute(p[1], (1, 0))), (x, wt), {}, Plan(mshape, mdt, mdt), device)
    if len(args) == 2:
        return y
    compute, out = binary_dtypes("add", Meta(mshape, mdt), args[2])
    return ks.binary("add", y, p[2], compute.np, out.np)


def _decompose_linear(args, attrs):
    y = matmul(args[0], transpose(args[1], 0, 1))
    return y if len(args) == 2 else add(y, args[2])


def _grad_linear(c, g):
    # y = x @ w.T (+ b), w of shape (out, in), x of shape (..., in)
    x, w = c.input(0), c.input(1)
    gx = gw = gb = None
    if c.needs(0):
        gx = matmul(g, w)                   # (..., out) @ (out, in)
    if c.needs(1):                          # g2.T @ x2 over all leading dims: (out, in)
        out_f, in_f = w.shape
        rows = prod(x.shape[:-1])           # not -1: ambiguous when a feature dim is 0
        g2 = g if g.ndim == 2 else reshape(g, (rows, out_f))
        x2 = x if x.ndim == 2 else reshape(x, (rows, in_f))
        gw = matmul(transpose(g2, 0, 1), x2)
    if c.arity == 3 and c.needs(2):
        gb = g                              # the tape sums it over the broadcast dims
    return gx, gw, gb


register(OpSpec("linear", "linalg", _infer_linear, _kernel_linear, cost="compute",
                backward=_grad_linear, decompose=_decompose_linear, uint64_float=True,
                lowering="linear"))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""
    weight = tensor_arg("linear", weight)
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{weight.shape}")
    x = tensor_arg("linear", x)
    if bias is None:
        return run("linear", (x, weight))
    if not isinstance(bias, Tensor):        # a scalar bias: the plain composition
        if not isinstance(bias, (bool, int, float, np.number)):
            raise ArgumentTypeError(f"linear: bias must be a Tensor or a number, got "
                                    f"{type(bias).__name__}")
        return add(matmul(x, transpose(weight, 0, 1)), bias)
    # one catalogue op (one tape node; captured as matmul(x, w.T) + b)
    return run("linear", (x, weight, bias))


# --------------------------------------------------------------------------- cross_entropy
CROSS_ENTROPY_REDUCTIONS = ("mean", "sum", "none")


def _infer_cross_entropy(args, attrs):
    logits, target = args
    if len(logits.shape) != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {logits.shape}")
    if not target.dtype.is_int:
        raise DTypeError(f"cross_entropy: targets must be integer class indices, got "
                         f"{target.dtype.name}")
    if tuple(target.shape) != tuple(logits.shape[:1]):
        raise ShapeError(f"cross_entropy: target of shape {target.shape} does not match "
                         f"logits of shape {logits.shape} (expected ({logits.shape[0]},))")
    reduction = attrs["reduction"]
    if not isinstance(reduction, str) or reduction not in CROSS_ENTROPY_REDUCTIONS:
        raise ArgumentValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    dt = logits.dtype if logits.dtype.is_float else D.float32
    return Plan((logits.shape[0],) if reduction == "none" else (), dt, dt)


def _kernel_cross_entropy(ks, p, args, attrs, plan, device):
    # -log_softmax(logits)[i, target[i]], then the mean or sum: the values of the
    # decomposition below (picking one entry per row is exact)
    x = p[0]
    if args[0].dtype is not plan.dtype:
        x = ks.cast(x, plan.dtype.np)
    n = args[0].shape[0]
    loss = None
    if plan.dtype in (D.float32, D.float64) and supports(ks, "cross_entropy"):
        loss = ks.cross_entropy_loss(x, p[1])      # (the kernels below in one pass)
    if loss is None:
        logp = ks.softmax(x, 1, True)
        picked = ks.reshape(ks.gather(logp, ks.reshape(p[1], (n, 1)), 1), (n,))
        loss = ks.unary("neg", picked, plan.dtype.np, {})
    reduction = attrs["reduction"]
    if reduction == "none":
        return loss
    return ks.reduce(reduction, loss, (0,), False, plan.dtype.np, {})


def _decompose_cross_entropy(args, attrs):
    logits, target = args
    c = logits.shape[1]
    logp = log_softmax(logits, axis=1)
    # pick logp[i, target[i]] with an (untracked) one-hot mask
    classes = arange(c, dtype=target.dtype, device=target.device)
    one_hot = cast(eq(unsqueeze(target, 1), classes), logp.dtype)
    loss = neg(sum(mul(logp, one_hot), axis=1))
    reduction = attrs["reduction"]
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    return loss


def _grad_cross_entropy(c, g):
    # d/dlogits of -log_softmax(logits)[i, t_i] is softmax(logits)[i] - onehot(t_i), times the
    # row's output gradient (g / N for the mean, g for the sum, g[i] for "none"): one op,
    # ``cross_entropy_backward`` (its decomposition spells it out with primitive ops)
    return run("cross_entropy_backward", (c.input(0), c.input(1), g), c.attrs), None


def _ce_scale_dtype(g, n, reduction):
    """dtype of the per-row factor the logits gradient is multiplied by: g, g / N or g[i]."""
    return binary_dtypes("div", g, n)[1] if reduction == "mean" else g.dtype


def _infer_cross_entropy_backward(args, attrs):
    logits, target, g = args
    want, dt = _infer_cross_entropy((logits, target), attrs)[:2]
    if tuple(shape_of(g)) != want or not hasattr(g, "dtype"):
        raise ShapeError(f"cross_entropy_backward: gradient of shape {shape_of(g)} does not match "
                         f"the loss of shape {want}")
    n = logits.shape[0]
    sd = _ce_scale_dtype(g, max(n, 1), attrs["reduction"])
    out = binary_dtypes("mul", Meta(logits.shape, dt), Meta((), sd))[1]
    return Plan(tuple(logits.shape), out, out)


def _kernel_cross_entropy_backward(ks, p, args, attrs, plan, device):
    # (softmax(logits) - onehot(target)) * scale, scale = g / N, g or g[:, None]: the kernels
    # of the decomposition below, in its order
    logits, _, g = args
    n = logits.shape[0]
    dt = logits.dtype if logits.dtype.is_float else D.float32
    if (logits.dtype is dt and g.dtype is dt and plan.dtype is dt and dt in (D.float32, D.float64)
            and supports(ks, "cross_entropy")):
        out = ks.cross_entropy_grad(p[0], p[1], p[2], attrs["reduction"])
        if out is not None:
            return out
    x = p[0] if logits.dtype is dt else ks.cast(p[0], dt.np)
    prob = ks.softmax(x, 1, False)
    d = ks.scatter_add(prob, ks.reshape(p[1], (n, 1)), ks.full((n, 1), -1, dt.np, device.index), 1)
    reduction = attrs["reduction"]
    scale = p[2]
    if reduction == "none":
        scale = ks.reshape(scale, (n, 1))
    elif reduction == "mean":
        sd = _ce_scale_dtype(g, max(n, 1), reduction)
        compute, out = binary_dtypes("div", g, max(n, 1))
        scale = ks.binary("div", scale, max(n, 1), compute.np, out.np)
        g = Meta((), sd)
    compute, out = binary_dtypes("mul", Meta(plan.shape, dt), g)
    return ks.binary("mul", d, scale, compute.np, out.np)


def _decompose_cross_entropy_backward(args, attrs):
    x, t, g = args
    n = x.shape[0]
    p = softmax(x, axis=1)
    d = scatter_add(p, 1, reshape(t, (n, 1)), full((n, 1), -1, p.dtype, p.device))
    reduction = attrs["reduction"]
    if reduction == "none":
        scale = reshape(g, (n, 1))
    elif reduction == "mean":
        scale = div(g, max(n, 1))
    else:
        scale = g
    return mul(d, scale)


register(OpSpec("cross_entropy", "loss", _infer_cross_entropy, _kernel_cross_entropy,
                cost="compute", backward=_grad_cross_entropy, decompose=_decompose_cross_entropy))
register(OpSpec("cross_entropy_backward", "loss", _infer_cross_entropy_backward,
                _kernel_cross_entropy_backward, cost="compute", differentiable=False,
                decompose=_decompose_cross_entropy_backward, record_whole=True))


def cross_entropy(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Softmax cross-entropy of ``logits`` (N, C) against integer class indices (N,).

    Computed as ``-log_softmax(logits)[i, target[i]]`` (stable for large logits); indices
    outside ``[0, C)`` raise ``IndexOutOfRangeError``.
    """
    logits = tensor_arg("cross_entropy", logits)
    if logits.ndim != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {logits.shape}")
    if not isinstance(target, Tensor):
        target = tensor(np.asarray(target, dtype=np.int64), device=logits.device)
    spec = CATALOGUE["cross_entropy"]
    attrs = {"reduction": reduction}
    spec.infer((logits, target), attrs)     # the target's dtype and shape, the reduction
    n, c = logits.shape
    if n and not c:
        raise IndexOutOfRangeError(f"cross_entropy: logits of shape {logits.shape} have no "
                                   f"classes for the {n} target(s)")
    if n and c:
        t = target.numpy() if target.device.innermost.family != "capture" else None
        if t is not None and t.size and (t.min() < 0 or t.max() >= c):
            bad = int(t[(t < 0) | (t >= c)][0])
            raise IndexOutOfRangeError(f"cross_entropy: target {bad} is out of range for "
                                       f"{c} classes")
    if not (n and c):                       # empty: the primitive composition
        return spec.decompose((logits, target), attrs)
    # one catalogue op: log_softmax, the target's entry per row, the reduction; differentiated
    # directly (softmax - onehot); captured as log_softmax and a one-hot pick
    return run("cross_entropy", (logits, target), attrs)
