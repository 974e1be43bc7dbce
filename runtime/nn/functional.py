"""``rt.nn.functional``: stateless network pieces with PyTorch's argument conventions.

Everything is written with the public tensor ops, so it runs on every device and is
differentiated by the autodiff tape like any other op; ``linear`` and ``cross_entropy`` are
catalogue ops of their own (``runtime/ops/nn.py``, where they are defined).
"""
from __future__ import annotations

from .. import dtypes as D
from ..errors import ArgumentValueError, ShapeError
from ..ops import api
from ..ops.nn import cross_entropy, linear
from ..tensor import Tensor

__all__ = ["linear", "mse_loss", "cross_entropy", "dropout"]


def _reduce_loss(name: str, per_item: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return api.mean(per_item)
    if reduction == "sum":
        return api.sum(per_item)
    if reduction == "none":
        return per_item
    raise ArgumentValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or per-element) squared error."""
    if isinstance(target, Tensor) and target.shape != input.shape:
        raise ShapeError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape} differ")
    d = api.sub(input, target)
    return _reduce_loss("mse_loss", api.mul(d, d), reduction)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    The mask comes from ``rt.rand`` on ``x``'s device, so ``rt.manual_seed`` makes it
    reproducible.
    """
    if not 0.0 <= p <= 1.0:
        raise ArgumentValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return api.mul(x, 0)
    dt = x.dtype if x.dtype.is_float else D.float32
    keep = api.ge(api.rand(*x.shape, dtype=dt, device=x.device), p)
    return api.mul(x, api.mul(api.cast(keep, dt), 1.0 / (1.0 - p)))
from ..ops.pool import adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, interpolate, max_pool1d, max_pool2d  # noqa: E402,E501
__all__ += ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "interpolate", "max_pool1d", "avg_pool1d"]  # noqa: E501
