"""NumPy's advanced indexing for ``Tensor.__getitem__``, written with the ``index``, ``reshape``,
``permute`` and ``take`` records (so it records, replays, exports and differentiates as those).

A key holds basic entries (ints, slices, None, one ellipsis) and advanced ones: integer arrays
(tensors, lists, NumPy arrays) and boolean masks (a mask of k dimensions stands for the k
integer arrays of its ``nonzero``; its values set the result's shape, so a mask inside a
capture scope raises ``CaptureError`` kind ``DataDependentShape``).  As in NumPy, once a key
has an array, its ints count as advanced (0-d arrays); all advanced entries broadcast to one
shape B; the result has B where the first advanced entry was when the advanced entries are
adjacent, else B first, followed by the sliced dimensions in order.  (PyTorch differs for an
int separated from an array by a slice: ``t[1, :, [0, 2]]`` of a (2, 3, 4) tensor is (3, 2)
in PyTorch, (2, 3) in NumPy and here.)

How: None entries insert size-1 axes (a reshape), slices apply as a basic view, then the
advanced axes are moved to the front (a permute), merged (a reshape) and read with one
``take`` of the linear index ``sum(i_k * stride_k)`` (computed on the host when every index
is host data, else with int64 tensor ops after each index is checked and normalised by
``take(arange(n), i_k)``); a permute puts B in place.  Index values are checked before
anything is read: ``IndexOutOfRangeError`` names getitem, the axis and its size.
"""
from __future__ import annotations

import operator
import re

import numpy as np

from .. import dtypes as D
from ..errors import ArgumentTypeError, DTypeError, IndexOutOfRangeError, ShapeError
from ..tensor import Tensor
from .create import arange
from .elementwise import add, mul
from .index import getitem, take
from .rearrange import _const, data_dependent
from .shape import permute, reshape
from .shapes import broadcast_shapes, prod

__all__ = ["advanced_getitem"]


def _classify(k):
    """("none"|"ell"|"slice"|"int"|"arr"|"mask", value)."""
    if k is None:
        return "none", None
    if k is Ellipsis:
        return "ell", None
    if isinstance(k, slice):
        return "slice", k
    if type(k) is bool or isinstance(k, np.bool_):
        raise ArgumentTypeError("getitem: a Python bool together with an index array is not "
                                "supported; use a boolean tensor mask")
    if isinstance(k, Tensor):
        if k.dtype.is_bool:
            if k.ndim == 0:
                raise ArgumentTypeError("getitem: a 0-d boolean tensor index is not supported")
            return "mask", k
        if not k.dtype.is_int:
            raise DTypeError(f"getitem: index tensors must be int32, int64 or bool, got "
                             f"{k.dtype.name}")
        return "arr", k
    if isinstance(k, (list, np.ndarray)):
        try:
            a = np.asarray(k)
        except ValueError:
            raise ShapeError(f"getitem: index arrays must be rectangular, got {k!r}") from None
        if a.dtype == np.bool_:
            if a.ndim == 0:
                raise ArgumentTypeError("getitem: a 0-d boolean array index is not supported")
            return "mask", a
        if a.dtype.kind not in "iu" and a.size:
            raise DTypeError(f"getitem: index arrays must be integers or bools, got {a.dtype}")
        return "arr", a.astype(np.int64)
    try:
        return "int", operator.index(k)
    except TypeError:
        raise ArgumentTypeError(f"getitem: unsupported index {k!r} of type "
                                f"{type(k).__name__}") from None


def _oob(v, axis, n, shape):
    return IndexOutOfRangeError(f"getitem: index {int(v)} is out of bounds for axis {axis} "
                                f"with size {n} (shape {tuple(shape)})")


def _host_checked(a, axis, n, shape):
    """``a`` (host ints) with negatives counted from the end; IndexOutOfRangeError else."""
    a = np.asarray(a, dtype=np.int64)
    if a.size:
        bad = (a < -n) | (a >= n)
        if bad.any():
            raise _oob(a[bad].reshape(-1)[0], axis, n, shape)
        a = np.where(a < 0, a + n, a)
    return a


def _device_checked(t, axis, n, shape):
    """Tensor index ``t`` normalised to [0, n) as int64 (``take`` checks the values)."""
    try:
        return take(arange(n, dtype=D.int64, device=t.device), t)
    except IndexOutOfRangeError as exc:
        m = re.search(r"index (-?\d+)", str(exc))
        raise _oob(m.group(1) if m else -1, axis, n, shape) from None


def _take(z, idx, axis, orig_axis, shape):
    """``take`` along ``axis``, index errors named for getitem and ``orig_axis``."""
    n = z.shape[axis]
    if isinstance(idx, np.ndarray):
        idx = _const(_host_checked(idx, orig_axis, n, shape), z)
        return take(z, idx, axis=axis)
    try:
        return take(z, idx, axis=axis)
    except IndexOutOfRangeError as exc:
        m = re.search(r"index (-?\d+)", str(exc))
        raise _oob(m.group(1) if m else -1, orig_axis, n, shape) from None


def advanced_getitem(x: Tensor, keys: tuple) -> Tensor:
    items = [_classify(k) for k in keys]
    if sum(1 for kind, _ in items if kind == "ell") > 1:
        raise ShapeError("getitem: an index can only have a single ellipsis ('...')")
    consumed = sum(v.ndim if kind == "mask" else 1 for kind, v in items
                   if kind in ("slice", "int", "arr", "mask"))
    if consumed > x.ndim:
        raise ShapeError(f"getitem: too many indices for a tensor of shape {x.shape}: "
                         f"{consumed} given")
    # expand the ellipsis (or add it at the end), masks into their nonzero arrays
    out, axis = [], 0               # entries: (kind, value, original axis)
    masks = [v for kind, v in items if kind == "mask"]
    if masks:
        data_dependent("getitem", x, *masks)
    for kind, v in items:
        if kind == "ell":
            for _ in range(x.ndim - consumed):
                out.append(("slice", slice(None), axis))
                axis += 1
        elif kind == "none":
            out.append(("none", None, None))
        elif kind == "mask":
            m = v.numpy() if isinstance(v, Tensor) else v
            want = x.shape[axis:axis + m.ndim]
            if m.shape != want:
                raise IndexOutOfRangeError(f"getitem: boolean index of shape {m.shape} does not "
                                           f"match the indexed dimensions {want} of shape "
                                           f"{x.shape} (from axis {axis})")
            if len(items) == 1:          # x[mask]: one take of the flat positions
                flat = np.flatnonzero(m).astype(np.int64)
                y = reshape(x, (prod(m.shape),) + x.shape[m.ndim:])
                return take(y, _const(flat, x), axis=0)
            for j, a in enumerate(np.nonzero(m)):
                out.append(("arr", a.astype(np.int64), axis + j))
            axis += m.ndim
        else:
            out.append((kind, v, axis))
            axis += 1
    while axis < x.ndim:
        out.append(("slice", slice(None), axis))
        axis += 1

    adv = [i for i, (kind, _, _) in enumerate(out) if kind in ("int", "arr")]
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    if adjacent:                     # ints apply as basic indices without moving B
        if any(out[i][0] == "arr" for i in adv):
            for i in adv:
                if out[i][0] == "int":
                    n = x.shape[out[i][2]]
                    if not -n <= out[i][1] < n:
                        raise _oob(out[i][1], out[i][2], n, x.shape)
        basic = [(kind, v, a) if kind != "arr" else ("slice", slice(None), a)
                 for kind, v, a in out]
        z = getitem(x, tuple(v if kind != "none" else None for kind, v, _ in basic))
        arrs = [(kind, v, a) for kind, v, a in out if kind == "arr"]
        # positions in z of the arrays: entries before them that keep an axis
        pos = []
        for i, (kind, _, _) in enumerate(out):
            if kind == "arr":
                pos.append(sum(1 for k2, _, _ in out[:i] if k2 in ("slice", "none", "arr")))
        if len(arrs) == 1:
            _, v, a = arrs[0]
            return _take(z, v, pos[0], a, x.shape)
        return _multi(z, arrs, pos, True, x.shape)
    # not adjacent: None and slices first, then every advanced entry (ints as 0-d arrays)
    basic = []
    for kind, v, _a in out:
        if kind in ("int", "arr"):
            basic.append(slice(None))
        else:
            basic.append(v)
    z = getitem(x, tuple(basic))
    arrs, pos = [], []
    for i, (kind, v, a) in enumerate(out):
        if kind in ("int", "arr"):
            pos.append(i)
            arrs.append(("arr", np.asarray(v, np.int64) if kind == "int" else v, a))
    return _multi(z, arrs, pos, False, x.shape)


def _multi(z, arrs, pos, adjacent, shape):
    """Several advanced index arrays at axes ``pos`` of ``z`` (see the module doc)."""
    sizes = [z.shape[p] for p in pos]
    bshape = broadcast_shapes("getitem", *(tuple(np.shape(v)) if not isinstance(v, Tensor)
                                            else v.shape for _, v, _ in arrs))
    strides = [prod(sizes[k + 1:]) for k in range(len(sizes))]
    rest = [a for a in range(z.ndim) if a not in pos]
    zr = reshape(permute(z, tuple(pos) + tuple(rest)),
                 (prod(sizes),) + tuple(z.shape[a] for a in rest))
    if all(not isinstance(v, Tensor) for _, v, _ in arrs):
        lin = np.zeros(bshape, np.int64)
        for (_, v, a), n, s in zip(arrs, sizes, strides):
            lin = lin + _host_checked(v, a, n, shape) * s
        lin = _const(lin, z)
    else:
        lin = None
        for (_, v, a), n, s in zip(arrs, sizes, strides):
            if isinstance(v, Tensor):
                t = _device_checked(v, a, n, shape)
            else:
                t = _const(_host_checked(v, a, n, shape), z)
            t = mul(t, s) if s != 1 else t
            lin = t if lin is None else add(lin, t)
        if lin.shape != bshape:
            from .shape import expand
            lin = expand(lin, bshape)
    out = take(zr, lin, axis=0)
    nb = len(bshape)
    if adjacent and pos[0] > 0:
        p0 = pos[0]
        order = tuple(range(nb, nb + p0)) + tuple(range(nb)) + tuple(range(nb + p0, out.ndim))
        out = permute(out, order)
    return out
