"""``rt.nn.functional``: stateless network pieces with PyTorch's argument conventions.

Everything is written with the public tensor ops, so it runs on every device and is
differentiated by the autodiff tape like any other op.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..errors import ShapeError
from ..ops import api
from ..ops.catalogue import CATALOGUE
from ..tensor import Tensor

__all__ = ["linear", "mse_loss", "cross_entropy", "dropout"]


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""
    if weight.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{weight.shape}")
    x = api._tensor_arg("matmul", x)
    if bias is None:
        return api._run("linear", (x, weight))
    if not isinstance(bias, Tensor):        # a scalar bias: the plain composition
        return api.add(api.matmul(x, api.transpose(weight, 0, 1)), bias)
    # one catalogue op (one tape node; captured as matmul(x, w.T) + b)
    return api._run("linear", (x, weight, bias))


def _reduce_loss(name: str, per_item: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return api.mean(per_item)
    if reduction == "sum":
        return api.sum(per_item)
    if reduction == "none":
        return per_item
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Mean (or sum, or per-element) squared error."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        raise ShapeError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape} differ")
    d = api.sub(input, target)
    return _reduce_loss("mse_loss", api.mul(d, d), reduction)


def cross_entropy(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Softmax cross-entropy of ``logits`` (N, C) against integer class indices (N,).

    Computed as ``-log_softmax(logits)[i, target[i]]`` (stable for large logits); indices
    outside ``[0, C)`` raise ``IndexOutOfRangeError``.
    """
    if logits.ndim != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {logits.shape}")
    if not isinstance(target, Tensor):
        target = api.tensor(np.asarray(target, dtype=np.int64), device=logits.device)
    spec = CATALOGUE["cross_entropy"]
    attrs = {"reduction": reduction}
    spec.infer((logits, target), attrs)     # the target's dtype and shape, the reduction
    n, c = logits.shape
    if n and c:
        t = target.numpy() if target.device.innermost.family != "capture" else None
        if t is not None and t.size and (t.min() < 0 or t.max() >= c):
            from ..errors import IndexOutOfRangeError
            bad = int(t[(t < 0) | (t >= c)][0])
            raise IndexOutOfRangeError(f"cross_entropy: target {bad} is out of range for "
                                       f"{c} classes")
    if not (n and c):                       # empty: the primitive composition
        return spec.decompose((logits, target), attrs)
    # one catalogue op: log_softmax, the target's entry per row, the reduction; differentiated
    # directly (softmax - onehot); captured as log_softmax and a one-hot pick
    return api._run("cross_entropy", (logits, target), attrs)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    The mask comes from ``rt.rand`` on ``x``'s device, so ``rt.manual_seed`` makes it
    reproducible.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return api.mul(x, 0)
    dt = x.dtype if x.dtype.is_float else D.float32
    keep = api.ge(api.rand(*x.shape, dtype=dt, device=x.device), p)
    return api.mul(x, api.mul(api.cast(keep, dt), 1.0 / (1.0 - p)))
