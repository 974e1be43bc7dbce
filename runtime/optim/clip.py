"""Gradient clipping over a ``Gradients`` object (PyTorch's ``clip_grad_norm_`` and
``clip_grad_value_``, given the gradients instead of parameters): the entries are replaced in
``grads``, on their device, with no host round trip."""
from __future__ import annotations

import math

from ..autodiff.gradients import Gradients
from ..core.errors import ArgumentTypeError, ArgumentValueError
from ..ops import api

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _check(name, grads):
    if not isinstance(grads, Gradients):
        raise ArgumentTypeError(f"{name}: expected the Gradients that backward() returned, got "
                                f"{type(grads).__name__}")


def clip_grad_norm_(grads, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False):
    """Scale every gradient in ``grads`` by ``min(1, max_norm / (total_norm + 1e-6))``, the total
    norm taken over all of them together; returns the total norm (a 0-d tensor)."""
    _check("clip_grad_norm_", grads)
    gs = grads._tensors()
    if not gs:
        return None
    norm_type = float(norm_type)
    if norm_type == math.inf:
        parts = [api.max(api.abs(g)) for g in gs]
        total = parts[0]
        for q in parts[1:]:
            total = api.maximum(total, q)
    elif norm_type > 0:
        total = None
        for g in gs:
            s = api.sum(api.pow(api.abs(g), norm_type))
            total = s if total is None else api.add(total, s)
        total = api.pow(total, 1.0 / norm_type)
    else:
        raise ArgumentValueError(f"clip_grad_norm_: norm_type must be positive or inf, got {norm_type}")
    if error_if_nonfinite and not bool(api.isfinite(total).item()):
        raise ArgumentValueError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                                 f"gradients is non-finite, so it cannot be clipped")
    scale = api.clamp(api.div(float(max_norm), api.add(total, 1e-6)), max=1.0)
    grads._map(lambda g: api.mul(g, api.cast(scale, g.dtype)))
    return total


def clip_grad_value_(grads, clip_value: float) -> None:
    """Clamp every gradient in ``grads`` to ``[-clip_value, clip_value]``."""
    _check("clip_grad_value_", grads)
    c = float(clip_value)
    grads._map(lambda g: api.clamp(g, -c, c))
