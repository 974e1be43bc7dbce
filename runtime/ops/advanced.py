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

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, DTypeError, IndexOutOfRangeError, ShapeError
from ..tensor import Tensor
from .create import arange
from .elementwise import add, mul
from .index import getitem, take
from .rearrange import _const, data_dependent
from .shape import permute, reshape
from ..core.shapes import broadcast_shapes, prod

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


# =========================================================================== assignment
# ``put`` is the one native record (a copy of x with values written, or added, at flat
# positions; the last of repeated positions wins); advanced-index assignment finds the flat
# positions ``arange(x.size).reshape(x.shape)[key]`` with the reading rules above (on the host
# when the key is host data), then puts.  A mask key with a one-element value is a ``where``
# instead (static shape: it records in a capture scope).
from ..dispatch import dispatch as _run                      # noqa: E402
from .args import operand as _operand, tensor_arg as _tensor_arg   # noqa: E402
from .create import full as _full, from_numpy as _from_numpy   # noqa: E402
from .elementwise import eq as _eq, where as _where          # noqa: E402
from ..core.registry import OpSpec as _OpSpec, Plan as _Plan, front_end as _front_end, \
    register as _register, shape_of as _shape_of             # noqa: E402
from .rearrange import data_dependent as _data_dependent     # noqa: E402


def _infer_put(args, attrs):
    x, idx, value = args
    if not idx.dtype.is_int:
        raise DTypeError(f"put: indices must be int32 or int64, got {idx.dtype.name}")
    if hasattr(value, "dtype") and value.dtype is not x.dtype:
        raise DTypeError(f"put: values must have the input's dtype, got {x.dtype.name} (input) "
                         f"and {value.dtype.name} (values)")
    vshape = _shape_of(value)
    try:
        ok = broadcast_shapes("put", vshape, idx.shape) == tuple(idx.shape)
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"put: values of shape {vshape} cannot be broadcast to the indices' "
                         f"shape {tuple(idx.shape)} (input shape {tuple(x.shape)})")
    if prod(x.shape) == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"put: cannot put into an empty tensor of shape {tuple(x.shape)}")
    return _Plan(tuple(x.shape), x.dtype, x.dtype)


def _kernel_put(ks, p, args, attrs, plan, device):
    _, idx, value = args
    pv = p[2]
    if not hasattr(value, "dtype"):
        pv = ks.full(tuple(idx.shape), value, plan.dtype.np, device.index)
    elif tuple(value.shape) != tuple(idx.shape):
        pv = ks.expand(pv, tuple(idx.shape))
    return ks.put(p[0], p[1], pv, bool(attrs["accumulate"]))


def _grad_put(c, g):
    """x: ``g`` with 0 where written (accumulate: ``g``); values: ``g`` at their positions, and
    without accumulate only the winning (last) write of a repeated position gets it (the tape
    sums over the values' broadcast)."""
    idx = c.input(1)
    acc = c.attrs["accumulate"]
    gx = gv = None
    if c.needs(0):
        gx = g if acc else _run("put", (g, idx, 0), {"accumulate": False})
    if c.needs(2):
        gv = take(g, idx)
        if not acc and idx.ndim:
            k = prod(idx.shape)
            order = reshape(arange(k, dtype=D.int64, device=idx.device), idx.shape)
            none = _full((prod(c.input_shape(0)),), -1, D.int64, idx.device)
            winner = _run("put", (none, idx, order), {"accumulate": False})
            gv = _where(_eq(take(winner, idx), order), gv, 0)
            if gv.dtype is not g.dtype:
                gv = gv.astype(g.dtype)
    return gx, None, gv


# ONNX lowering (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_put(ex, op) -> str:
    xt, it = op.inputs[0], op.inputs[1]
    value = op.operands()[2]
    dt = xt.dtype
    acc = bool(op.attrs["accumulate"])
    if acc and ex.opset < 16:
        raise ex.error("put", f"graph.to_onnx: put with accumulate needs opset >= 16 "
                              f"(ScatterND with reduction='add'), got opset {ex.opset}")
    n = int(np.prod(xt.shape, dtype=np.int64))
    ishape = [int(d) for d in it.shape]
    k = int(np.prod(ishape, dtype=np.int64))
    x = ex.reshape(ex.names[xt.id], [n])
    idx = ex.reshape(ex.cast(ex.names[it.id], it.dtype, D.int64), [k])
    idx = ex.node("Mod", [ex.node("Add", [idx, ex.i64(n)]), ex.i64(n)])  # negatives
    idx = ex.node("Unsqueeze", [idx, ex.i64([1])])
    if ex.is_tensor(value):
        v = ex.cast(ex.names[value.id], value.dtype, dt)
        if tuple(value.shape) != tuple(ishape):
            v = ex.node("Expand", [v, ex.i64(ishape)])
        v = ex.reshape(v, [k])
    else:
        v = ex.const(np.full((k,), np.array(value).astype(dt.np), dt.np))
    if acc and dt.is_bool:                # logical or: add as int32, then != 0
        x, v = ex.cast(x, dt, D.int32), ex.cast(v, dt, D.int32)
    r = (ex.node(ex.record(op), [x, idx, v], reduction="add") if acc
         else ex.node(ex.record(op), [x, idx, v]))
    if acc and dt.is_bool:
        r = ex.cast(r, D.int32, dt)
    return ex.reshape(r, [int(d) for d in xt.shape])


_register(_OpSpec("put", "index", _infer_put, _kernel_put, backward=_grad_put,
                  onnx="ScatterND", onnx_lower=_onnx_put, uint64="modular",
                  uint64_index=True))


def _value_of(op, value, x):
    """A tensor of x's dtype on x's device, or a Python scalar that fits it."""
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    value = _operand(op, value, x)
    if isinstance(value, Tensor):
        return value if value.dtype is x.dtype else value.astype(x.dtype)
    if isinstance(value, bool) or x.dtype.is_bool:
        return bool(value)
    if isinstance(value, float) and not x.dtype.is_float:
        return int(value)                   # NumPy's cast: toward zero
    D.check_scalar(op, value, x.dtype)
    return value


def _renamed(op, exc):
    msg = str(exc)
    return type(exc)(f"{op}:{msg[len('getitem:'):]}" if msg.startswith("getitem:") else
                     f"{op}: {msg}")


def _is_host(v) -> bool:
    return not isinstance(v, Tensor)


def _positions(op, x, keys):
    """int64 flat positions of ``x[keys]`` (the indexed shape), on x's device."""
    items = [_classify(k) for k in keys]
    masks = [v for kind, v in items if kind == "mask"]
    if masks:
        _data_dependent(op, x, *masks)
    n = prod(x.shape)
    try:
        if all(_is_host(v) for kind, v in items if kind in ("arr", "mask")):
            base = _from_numpy(np.arange(n, dtype=np.int64).reshape(x.shape), device="cpu")
            return _const(getitem(base, keys).numpy(), x)
        base = reshape(arange(n, dtype=D.int64, device=x.device), x.shape)
        return getitem(base, keys)
    except (ShapeError, IndexOutOfRangeError, DTypeError, ArgumentTypeError) as exc:
        raise _renamed(op, exc) from None


def _mask_where(op, x, keys, value, accumulate):
    """``x[keys] = value`` for a key of one mask and basic entries, with a one-element value:
    ``where(M, value, x)``, M the mask placed in x's shape (None if the key is not of that
    kind)."""
    items = [_classify(k) for k in keys]
    kinds = [kind for kind, _ in items]
    if kinds.count("mask") != 1 or "arr" in kinds:
        return None
    if isinstance(value, Tensor):
        if prod(value.shape) != 1:
            return None
        value = reshape(value, ())
    mask = items[kinds.index("mask")][1]
    consumed = sum(v.ndim if kind == "mask" else 1 for kind, v in items
                   if kind in ("slice", "int", "mask"))
    if consumed > x.ndim:
        raise ShapeError(f"{op}: too many indices for a tensor of shape {x.shape}: "
                         f"{consumed} given")
    if sum(1 for k in kinds if k == "ell") > 1:
        raise ShapeError(f"{op}: an index can only have a single ellipsis ('...')")
    basic, axis, pos, region_pos = [], 0, 0, None
    for kind, v in items:                    # the mask as slices; where it lands in the region
        if kind == "ell":
            for _ in range(x.ndim - consumed):
                basic.append(slice(None))
                axis += 1
                pos += 1
        elif kind == "none":
            basic.append(None)
            pos += 1
        elif kind == "mask":
            want = x.shape[axis:axis + v.ndim]
            if tuple(v.shape) != tuple(want):
                raise IndexOutOfRangeError(f"{op}: boolean index of shape {tuple(v.shape)} does "
                                           f"not match the indexed dimensions {want} of shape "
                                           f"{x.shape} (from axis {axis})")
            region_pos = pos
            basic.extend([slice(None)] * v.ndim)
            axis += v.ndim
            pos += v.ndim
        elif kind == "slice":
            basic.append(v)
            axis += 1
            pos += 1
        else:                                # int: drops its axis
            basic.append(v)
            axis += 1
    if isinstance(mask, Tensor) and mask.device != x.device and not mask.is_capture:
        mask = mask.numpy()                  # a host mask for another device's tensor
    m = mask if isinstance(mask, Tensor) else _const(np.asarray(mask, dtype=np.bool_), x)
    region_rank = pos + sum(1 for _ in range(axis, x.ndim))
    m = reshape(m, (1,) * region_pos + tuple(m.shape) +
                (1,) * (region_rank - region_pos - m.ndim))
    from .index import slice_assign as _basic_assign
    try:
        zero = _full(x.shape, False, D.bool_, x.device)
        placed = _basic_assign(zero, tuple(basic), m)
    except (ShapeError, IndexOutOfRangeError, ArgumentTypeError) as exc:
        raise _renamed(op, exc) from None
    if accumulate:
        value = add(x, value)
    out = _where(placed, value, x)
    return out if out.dtype is x.dtype else out.astype(x.dtype)


def advanced_assign(op, x, keys, value, accumulate=False):
    """A copy of ``x`` with ``x[keys] = value`` (``accumulate``: ``+=`` that sums repeated
    positions), NumPy's advanced-indexing rules for ``keys``."""
    value = _value_of(op, value, x)
    try:
        _ = [_classify(k) for k in keys]     # the key's own errors, named for the op
    except (ShapeError, DTypeError, ArgumentTypeError) as exc:
        raise _renamed(op, exc) from None
    if not isinstance(value, Tensor) or prod(value.shape) == 1:
        out = _mask_where(op, x, keys, value, accumulate)
        if out is not None:
            return out
    pos = _positions(op, x, keys)
    vshape = _shape_of(value)
    try:
        ok = broadcast_shapes(op, vshape, pos.shape) == tuple(pos.shape)
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"{op}: value of shape {vshape} cannot be broadcast to the indexed "
                         f"shape {tuple(pos.shape)} (tensor shape {x.shape})")
    return _run("put", (x, pos, value), {"accumulate": bool(accumulate)})


@_front_end(method=True)
def put(x, index, source, accumulate=False) -> Tensor:
    """``torch.Tensor.put`` (out of place): a copy of ``x`` with ``source`` written at the flat
    positions ``index`` (ints, negatives from the end; ``source`` broadcasts to its shape);
    repeated positions: the last write wins (NumPy's ``np.put``), or they add with
    ``accumulate=True``."""
    x = _tensor_arg("put", x)
    if isinstance(index, Tensor):
        if not index.dtype.is_int:
            raise DTypeError(f"put: indices must be int32 or int64, got {index.dtype.name}")
        idx = index
    else:
        a = np.asarray(index)
        if a.dtype.kind not in "iu" and a.size:
            raise DTypeError(f"put: indices must be integers, got {a.dtype}")
        idx = _const(a.astype(np.int64), x)
    value = _value_of("put", source, x)
    return _run("put", (x, idx, value), {"accumulate": bool(accumulate)})


@_front_end(method=True)
def index_put(x, indices, values, accumulate=False) -> Tensor:
    """``torch.index_put`` (out of place): a copy of ``x`` with ``x[indices] = values``, where
    ``indices`` is a tuple of index tensors (int or bool; lists and NumPy arrays too) read with
    NumPy's advanced-indexing rules and ``values`` broadcasts to the indexed shape.
    ``accumulate=True`` adds, summing repeated positions; without it the last of repeated
    positions wins (deterministic; PyTorch leaves it undefined)."""
    x = _tensor_arg("index_put", x)
    if isinstance(indices, tuple):
        keys = indices
    elif isinstance(indices, list) and indices and all(
            isinstance(i, (Tensor, np.ndarray, list)) for i in indices):
        keys = tuple(indices)               # a list of index tensors, as torch takes it
    else:
        keys = (indices,)
    return advanced_assign("index_put", x, keys, values, accumulate)


def _refuse_in_place(name, instead):
    def method(self, *args, **kwargs):
        raise ArgumentTypeError(f"{name}: tensors are immutable, there is no in-place "
                                f"{name}; use t = t.{instead}(...), which returns a new tensor")
    method.__name__ = name
    method.__doc__ = f"PyTorch's in-place ``{name}`` is refused: use ``{instead}``."
    return method


for _name, _instead in (("index_put_", "index_put"), ("put_", "put")):
    setattr(Tensor, _name, _refuse_in_place(_name, _instead))
