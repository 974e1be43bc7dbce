"""Argument handling shared by the front-end functions of every op family (pure Python)."""
from __future__ import annotations

import operator

import numpy as np

from ..device import Device, current_default, device as _parse_device
from ..errors import ShapeError
from ..tensor import Tensor

__all__ = ["operand", "tensor_arg", "device_arg", "shape_arg"]

_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def operand(op: str, x):
    """A tensor, or a Python scalar (NumPy scalars unwrapped); TypeError otherwise."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS):
        if isinstance(x, np.generic):
            return x.item()
        return x
    raise TypeError(f"{op}: unsupported operand of type {type(x).__name__} "
                    f"(expected a Tensor or a Python scalar)")


def tensor_arg(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def device_arg(device) -> Device:
    return current_default() if device is None else _parse_device(device)


def shape_arg(op: str, shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ShapeError(f"{op}: negative dimension in shape {out}")
    return out
