"""Argument handling shared by the front-end functions of every op family (pure Python)."""
from __future__ import annotations

import operator

import numpy as np

from ..device import Device, current_default, parse_device
from ..core.dtypes import DType, as_dtype
from ..core.errors import ArgumentTypeError, ShapeError
from ..core.shapes import MAX_ELEMENTS
from ..tensor import Tensor

__all__ = ["operand", "tensor_arg", "device_arg", "dtype_arg", "shape_arg", "check_size", "int_arg",
           "number_arg", "bool_arg", "torch_alias", "axis_keepdims", "MAX_ELEMENTS"]

_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def operand(op: str, x, like=None):
    """A tensor, or a Python scalar (NumPy scalars unwrapped); a NumPy array becomes a tensor
    on ``like``'s device (its dtype kept, as PyTorch's ``torch.from_numpy``); TypeError
    otherwise."""
    if isinstance(x, Tensor):
        return x
    if type(x) is np.ndarray and like is not None:
        from .create import tensor
        return tensor(x, device=like.device)
    if isinstance(x, _SCALARS):
        if isinstance(x, np.generic):
            return x.item()
        return x
    raise ArgumentTypeError(f"{op}: unsupported operand of type {type(x).__name__} "
                    f"(expected a Tensor or a Python scalar)")


def tensor_arg(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def device_arg(device, op: str | None = None) -> Device:
    """The default device for None, else ``device`` parsed (DeviceError naming ``op``)."""
    return current_default() if device is None else parse_device(device, op)


def dtype_arg(op: str, dtype, default=None) -> DType | None:
    """``default`` for None, else ``dtype`` as a DType; DTypeError naming ``op`` otherwise
    (compared with None, never by truth value, so a tensor passed by mistake is refused too)."""
    return default if dtype is None else as_dtype(dtype, op)


def shape_arg(op: str, shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ShapeError(f"{op}: negative dimension in shape {out}")
    check_size(op, out)
    return out


def check_size(op: str, shape) -> None:
    """ShapeError when ``shape`` has more elements than any allocation could hold."""
    n = 1
    for d in shape:
        n *= d
    if n > MAX_ELEMENTS:
        raise ShapeError(f"{op}: shape {tuple(shape)} has {n} elements, more than the "
                         f"{MAX_ELEMENTS} a tensor can have")


def torch_alias(op: str, value, default, alias_value, names: str):
    """``value``, or PyTorch's keyword ``alias_value`` for it (``dim`` for ``axis``,
    ``keepdim`` for ``keepdims``) when given; ArgumentTypeError naming both spellings
    (``names``) when both are."""
    if alias_value is None:
        return value
    if value is not default:
        raise ArgumentTypeError(f"{op}: got both {names}")
    return alias_value


def axis_keepdims(op: str, axis, keepdims, dim, keepdim) -> tuple:
    """``(axis, keepdims)`` of a reduction, PyTorch's ``dim=``/``keepdim=`` accepted too
    (``keepdims`` as a bool: ArgumentTypeError for a tensor)."""
    if dim is None and keepdim is None:
        return axis, bool_arg(op, "keepdims", keepdims)
    return (torch_alias(op, axis, None, dim, "axis= and dim="),
            bool_arg(op, "keepdims", torch_alias(op, keepdims, False, keepdim,
                                                 "keepdims= and keepdim=")))


def number_arg(op: str, name: str, v):
    """``v`` as a Python bool, int or float (NumPy scalars unwrapped); ArgumentTypeError for
    anything else (a string, None, a tensor), which would otherwise fail deep inside."""
    if isinstance(v, _SCALARS):
        return v.item() if isinstance(v, np.generic) else v
    raise ArgumentTypeError(f"{op}: {name} must be a number, got {type(v).__name__}")


def bool_arg(op: str, name: str, v) -> bool:
    """``v``'s truth value; ArgumentTypeError for a tensor, whose truth value is ambiguous (a
    tensor passed where a flag belongs)."""
    if isinstance(v, Tensor):
        raise ArgumentTypeError(f"{op}: {name} must be a bool, got Tensor")
    return bool(v)


def int_arg(op: str, name: str, v) -> int:
    """``v`` as an int (bools and integral NumPy scalars too); ArgumentTypeError for floats,
    which would otherwise be truncated silently."""
    try:
        return operator.index(v)
    except TypeError:
        raise ArgumentTypeError(f"{op}: {name} must be an int, got {v!r}") from None
