"""Shape arithmetic shared by the op catalogue and the front end (pure Python)."""
from __future__ import annotations

import math
import operator

from .errors import AxisError, ShapeError

__all__ = ["broadcast_shapes", "normalize_axis", "normalize_axes", "resolve_reshape", "prod"]


def prod(shape) -> int:
    return math.prod(shape)


def broadcast_shapes(op: str, *shapes) -> tuple:
    """NumPy broadcasting of ``shapes``; ShapeError naming ``op`` and the shapes otherwise."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d != 1:
                    if size != 1 and d != size:
                        raise ShapeError(f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} "
                                         f"cannot be broadcast together")
                    size = d
        out.append(size)
    if math.prod(out) > MAX_ELEMENTS:
        raise ShapeError(f"{op}: broadcasting shapes {' and '.join(str(tuple(x)) for x in shapes)} "
                         f"gives {math.prod(out)} elements, more than a tensor can have")
    return tuple(out)


#: The most elements a tensor may have (NumPy's limit is 2**63 - 1 bytes).
MAX_ELEMENTS = 1 << 60


def normalize_axis(op: str, axis, ndim: int, shape=None) -> int:
    """A non-negative axis; ShapeError naming the op when ``axis`` is not an int, AxisError (also
    an IndexError) naming the op, axis and shape when it is out of range."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        try:
            axis = operator.index(axis)
        except TypeError:
            raise ShapeError(f"{op}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < ndim if ndim > 0 else axis not in (0, -1):
        where = f"shape {tuple(shape)}" if shape is not None else f"{ndim} dimension(s)"
        raise AxisError(f"{op}: axis {axis} is out of range for a tensor of {where}")
    return axis % ndim if ndim > 0 else 0


def normalize_axes(op: str, axis, ndim: int, shape=None) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = [normalize_axis(op, a, ndim, shape) for a in axis]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{op}: repeated axis in {tuple(axis)} for shape {tuple(shape or ())}")
        return tuple(sorted(axes))
    return (normalize_axis(op, axis, ndim, shape),)


def resolve_reshape(op: str, shape: tuple, new_shape) -> tuple:
    """``new_shape`` with its one ``-1`` resolved; ShapeError when the sizes disagree."""
    try:
        new_shape = tuple(operator.index(d) for d in new_shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be a tuple of ints, got {tuple(new_shape)!r}") from None
    size = prod(shape)
    unknown = [i for i, d in enumerate(new_shape) if d == -1]
    if len(unknown) > 1:
        raise ShapeError(f"{op}: only one dimension can be -1, got {new_shape}")
    if any(d < -1 for d in new_shape):
        raise ShapeError(f"{op}: invalid shape {new_shape}")
    if unknown:
        known = prod(d for d in new_shape if d != -1)
        if known == 0 or size % known:
            raise ShapeError(f"{op}: cannot reshape tensor of shape {tuple(shape)} into {new_shape}")
        new_shape = tuple(size // known if d == -1 else d for d in new_shape)
    if prod(new_shape) != size:
        raise ShapeError(f"{op}: cannot reshape tensor of shape {tuple(shape)} "
                         f"(size {size}) into {new_shape}")
    return new_shape
