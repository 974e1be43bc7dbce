"""How layers create their parameters' storage (then filled by ``rt.nn.init``)."""
from __future__ import annotations

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ArgumentValueError
from ..ops import api
from ..ops.args import bool_arg, device_arg, int_arg, number_arg

__all__ = ["factory", "size_arg", "shape_arg", "probability_arg", "float_arg", "bool_arg"]


def size_arg(layer: str, name: str, v) -> int:
    """A layer's size argument as an int: ArgumentTypeError for a float, a string or None
    (``int()`` would truncate or fail untyped), ArgumentValueError for a negative one."""
    n = int_arg(layer, name, v)
    if n < 0:
        raise ArgumentValueError(f"{layer}: {name} must be non-negative, got {n}")
    return n


def shape_arg(layer: str, name: str, v) -> tuple:
    """An int or a sequence of ints (``normalized_shape``) as a tuple of sizes."""
    if isinstance(v, (tuple, list)):
        return tuple(size_arg(layer, name, d) for d in v)
    return (size_arg(layer, name, v),)


def probability_arg(layer: str, name: str, v) -> float:
    """A probability in [0, 1] as a float (PyTorch's dropout layers refuse anything else)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ArgumentTypeError(f"{layer}: {name} must be a number, got {type(v).__name__}")
    if not 0.0 <= v <= 1.0:
        raise ArgumentValueError(f"{layer}: {name} must be between 0 and 1, got {v}")
    return float(v)


def float_arg(layer: str, name: str, v) -> float:
    """A layer's number argument (``eps``) as a float: ArgumentTypeError for anything but a
    number (``float()`` would fail untyped, or read a one-element tensor)."""
    return float(number_arg(layer, name, v))


def factory(dtype=None, device=None, op: str | None = None):
    """``make(*shape, fill=0.0)``: a tensor of ``dtype`` (default float32) on ``device``
    (default: the default device) filled with ``fill``, for a layer's parameters and buffers;
    a bad dtype or device is refused at once, its error naming ``op`` (the layer)."""
    dt = D.as_dtype(dtype, op) if dtype is not None else D.float32
    device = device_arg(device, op)

    def make(*shape, fill=0.0):
        return api.full(shape, fill, dt, device)
    return make
