"""Indexing ops: basic indexing (``index``, a view), ``slice_assign``, ``take``, ``gather`` and
``scatter_add``, and ``getitem`` (Python's ``x[key]``) on top of them.  Index *values* are
checked by the kernels (``IndexOutOfRangeError``); everything else here."""
from __future__ import annotations

import builtins as _b
import operator

import numpy as np

from ..core import dtypes as D
from ..dispatch import dispatch as run
from ..core.errors import ArgumentTypeError, DTypeError, IndexOutOfRangeError, ShapeError
from ..kernel_sets import supports
from ..tensor import Tensor
from .args import operand, tensor_arg, torch_alias
from .create import full, tensor
from ..core.registry import OpSpec, Plan, front_end, register, shape_of
from .shape import expand, reshape
from ..core.shapes import broadcast_shapes, normalize_axis, prod



def index_shape(shape, key) -> tuple:
    """Shape of basic indexing with a normalised key (ints, concrete slices, None)."""
    out = []
    for k in key:
        if k is None:
            out.append(1)
        elif isinstance(k, slice):
            out.append(len(range(k.start, k.stop, k.step)))
    return tuple(out)


def _zeros(shape, like):
    return full(shape, 0, like.dtype, like.device)


# --------------------------------------------------------------------------- index
def _infer_index(args, attrs):
    dt = args[0].dtype
    return Plan(index_shape(args[0].shape, attrs["key"]), dt, dt)


def _grad_index(c, g):
    return (run("index_backward", (g,), {"key": c.attrs["key"],
                                          "shape": tuple(c.input_shape(0))}),)


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
_I64_MIN = -(2 ** 63)


def _onnx_index(ex, op) -> str:
    (xt,) = op.inputs
    x = ex.names[xt.id]
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = out_pos = 0
    for k in op.attrs["key"]:
        if k is None:
            unsqueeze.append(out_pos)
            out_pos += 1
            continue
        n = xt.shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.start, k.stop, k.step
            if len(range(start, stop, step)) == 0:
                start, stop, step = 0, 0, 1
            elif step < 0 and stop < 0:       # runs down to index 0 inclusive
                stop = _I64_MIN
            if (start, stop, step) != (0, n, 1):
                for lst, v in ((starts, start), (ends, stop), (axes, axis), (steps, step)):
                    lst.append(v)
            out_pos += 1
        else:
            for lst, v in ((starts, int(k)), (ends, int(k) + 1), (axes, axis), (steps, 1)):
                lst.append(v)
            squeeze.append(axis)
        axis += 1
    if axes:
        x = ex.node(ex.record(op), [x, ex.i64(starts), ex.i64(ends), ex.i64(axes), ex.i64(steps)])
    if squeeze:
        x = ex.node("Squeeze", [x, ex.i64(squeeze)])
    if unsqueeze:
        x = ex.node("Unsqueeze", [x, ex.i64(unsqueeze)])
    if not (axes or squeeze or unsqueeze):
        x = ex.node("Identity", [x])
    return x


register(OpSpec("index", "index", _infer_index,
                lambda ks, p, a, at, plan, dev: ks.index(p[0], at["key"]),
                backward=_grad_index, onnx="Slice", onnx_lower=_onnx_index, moves_only=True))


# --------------------------------------------------------------------------- index's gradient
# ``slice_assign(zeros(shape), g)`` as one record (PyTorch's ``slice_backward``): a kernel set
# with ``index_backward`` writes only the region into zeros it does not write (on cpu, pages the
# system zero-fills when first touched), where the composition filled the whole result, copied
# it and wrote the region (a recurrent layer's op is read through its first T + 1 of 6 T + 1
# rows: 12.6 MB filled and copied a layer call).  Capture records the decomposition.
def _infer_index_backward(args, attrs):
    (g,) = args
    shape = tuple(attrs["shape"])
    region = index_shape(shape, attrs["key"])
    if tuple(shape_of(g)) != region:
        raise ShapeError(f"index_backward: gradient of shape {tuple(shape_of(g))} for an indexed "
                         f"region of shape {region} (tensor shape {shape})")
    return Plan(shape, g.dtype, g.dtype)


def _kernel_index_backward(ks, p, args, attrs, plan, device):
    if supports(ks, "index_backward"):
        return ks.index_backward(p[0], attrs["key"], plan.shape)
    zeros = ks.full(plan.shape, 0, plan.dtype.np, device.index)
    return ks.slice_assign(zeros, attrs["key"], p[0])


def _decompose_index_backward(args, attrs):
    (g,) = args
    return run("slice_assign", (_zeros(tuple(attrs["shape"]), g), g), {"key": attrs["key"]})


register(OpSpec("index_backward", "index", _infer_index_backward, _kernel_index_backward,
                backward=lambda c, g: (run("index", (g,), {"key": c.attrs["key"]}),),
                decompose=_decompose_index_backward, uint64="modular"))


# --------------------------------------------------------------------------- slice_assign
def _infer_slice_assign(args, attrs):
    x, value = args
    region = index_shape(x.shape, attrs["key"])
    vshape = shape_of(value)
    try:
        broadcast_to_ok = broadcast_shapes("slice_assign", vshape, region) == region
    except ShapeError:
        broadcast_to_ok = False
    if not broadcast_to_ok:
        raise ShapeError(f"slice_assign: value of shape {vshape} cannot be broadcast to the "
                         f"indexed region of shape {region} (tensor shape {x.shape})")
    return Plan(x.shape, x.dtype, x.dtype)


def _kernel_slice_assign(ks, p, args, attrs, plan, device):
    x, value = args
    region = index_shape(x.shape, attrs["key"])
    pv = p[1]
    if not hasattr(value, "dtype"):
        pv = ks.full(region, value, plan.dtype.np, device.index)
    else:
        if value.dtype is not plan.dtype:
            pv = ks.cast(pv, plan.dtype.np)
        if value.shape != region:
            pv = ks.expand(pv, region)
    return ks.slice_assign(p[0], attrs["key"], pv)


def _grad_slice_assign(c, g):
    key = c.attrs["key"]
    gx = run("slice_assign", (g, 0), {"key": key}) if c.needs(0) else None
    # the region, reduced to the value's shape by the tape
    gv = run("index", (g,), {"key": key}) if c.needs(1) else None
    return gx, gv


def _onnx_slice_assign(ex, op) -> str:
    xt = op.inputs[0]
    value = op.operands()[1]
    dt = op.outputs[0].dtype
    x = ex.names[xt.id]
    key = [k for k in op.attrs["key"] if k is not None]   # one entry per axis of x
    ranges = [range(k.start, k.stop, k.step) if isinstance(k, slice) else range(k, k + 1)
              for k in key]
    lens = [len(r) for r in ranges]
    if ex.is_tensor(value):
        v = ex.cast(ex.names[value.id], value.dtype, dt)
        region = [len(r) for r, k in zip(ranges, key) if isinstance(k, slice)]
        if tuple(value.shape) != tuple(region):
            v = ex.node("Expand", [v, ex.i64(region)])
    else:
        v = None
    if not xt.shape:                                    # 0-d: the value replaces x
        return ex.reshape(v, []) if v is not None else ex.scalar(value, dt)
    if 0 in lens:
        return ex.node("Identity", [x])
    updates = (ex.reshape(v, lens) if v is not None
               else ex.const(np.full(lens, np.array(value).astype(dt.np), dt.np)))
    grids = np.meshgrid(*[np.asarray(r, np.int64) for r in ranges], indexing="ij")
    idx = np.stack(grids, axis=-1).astype(np.int64)
    return ex.node("ScatterND", [x, ex.const(idx), updates])


register(OpSpec("slice_assign", "index", _infer_slice_assign, _kernel_slice_assign,
                backward=_grad_slice_assign, onnx="ScatterND", onnx_lower=_onnx_slice_assign,
                uint64="modular"))


# --------------------------------------------------------------------------- take, gather, scatter_add
def _check_index_dtype(name, idx):
    if not idx.dtype.is_int:
        raise DTypeError(f"{name}: indices must be int32 or int64, got {idx.dtype.name}")


def _infer_take(args, attrs):
    x, idx = args
    _check_index_dtype("take", idx)
    axis = attrs["axis"]
    if axis is None:
        if prod(x.shape) == 0 and prod(idx.shape) > 0:
            raise ShapeError(f"take: cannot take from an empty tensor of shape {x.shape}")
        return Plan(idx.shape, x.dtype, x.dtype)
    if x.shape[axis] == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"take: cannot take from empty axis {axis} of shape {x.shape}")
    return Plan(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype, x.dtype)


def _kernel_take(ks, p, args, attrs, plan, device):
    x = p[0]
    axis = attrs["axis"]
    if axis is None:
        x = ks.reshape(x, (prod(args[0].shape),))
        axis = 0
    return ks.take(x, p[1], axis)


def _scatter_back(g, axis, idx, x_shape):
    """``scatter_add(zeros(x_shape), axis, idx, g)``: the gradient of a gather-like read."""
    return scatter_add(_zeros(x_shape, g), axis, idx, g)


def _grad_take(c, g):
    # take(x, idx, axis) reads x[..., idx[j], ...]: scatter-add g back along the axis, with
    # idx flattened and broadcast (a stride-0 view) over the other axes of g
    x_shape = c.input_shape(0)
    idx = c.input(1)
    axis = c.attrs["axis"]
    shape = tuple(x_shape)
    if axis is None or not shape:           # axis None reads the flattened x
        shape, axis = (prod(x_shape),), 0
    k = prod(idx.shape)
    pre, post = shape[:axis], shape[axis + 1:]
    g2 = reshape(g, pre + (k,) + post)
    i2 = expand(reshape(idx, (1,) * len(pre) + (k,) + (1,) * len(post)), g2.shape)
    return reshape(_scatter_back(g2, axis, i2, shape), x_shape), None


def _infer_gather(args, attrs):
    x, idx = args
    _check_index_dtype("gather", idx)
    axis = attrs["axis"]
    if idx.ndim != x.ndim:
        raise ShapeError(f"gather: indices of shape {idx.shape} must have the same number of "
                         f"dimensions as the input of shape {x.shape}")
    for d in range(x.ndim):
        if d != axis and idx.shape[d] > x.shape[d]:
            raise ShapeError(f"gather: indices of shape {idx.shape} exceed the input of shape "
                             f"{x.shape} on axis {d}")
    if x.shape[axis] == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"gather: cannot gather from empty axis {axis} of shape {x.shape}")
    return Plan(idx.shape, x.dtype, x.dtype)


def _grad_gather(c, g):
    # out[p] = x[p with p[axis] = idx[p]]: the same positions, scatter-added (idx may be
    # smaller than x off the axis: the other entries get 0)
    return _scatter_back(g, c.attrs["axis"], c.input(1), c.input_shape(0)), None


def _infer_scatter_add(args, attrs):
    x, idx, src = args
    _check_index_dtype("scatter_add", idx)
    if not hasattr(src, "dtype"):
        raise DTypeError(f"scatter_add: src must be a tensor, got {type(src).__name__}")
    if src.dtype is not x.dtype:
        raise DTypeError(f"scatter_add: src must have the input's dtype, got {x.dtype.name} "
                         f"(input) and {src.dtype.name} (src)")
    axis = attrs["axis"]
    for what, t in (("indices", idx), ("src", src)):
        if t.ndim != x.ndim:
            raise ShapeError(f"scatter_add: {what} of shape {t.shape} must have the same number "
                             f"of dimensions as the input of shape {x.shape}")
    for d in range(x.ndim):
        if idx.shape[d] > src.shape[d] or (d != axis and idx.shape[d] > x.shape[d]):
            raise ShapeError(f"scatter_add: indices of shape {idx.shape} must be no larger than "
                             f"src of shape {src.shape}, and no larger than the input of shape "
                             f"{x.shape} except on axis {axis}")
    if x.ndim and x.shape[axis] == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"scatter_add: cannot scatter into empty axis {axis} of shape {x.shape}")
    return Plan(x.shape, x.dtype, x.dtype)


def _grad_scatter_add(c, g):
    # out = x + (src scattered): d/dx = g; d/dsrc[p] = g[p with p[axis] = idx[p]] where p is a
    # position of idx, 0 on the rest of src (PyTorch requires idx.shape == src.shape here)
    gx = g if c.needs(0) else None
    gs = None
    if c.needs(2):
        gs = gather(g, c.attrs["axis"], c.input(1))
        s_shape = c.input_shape(2)
        if gs.shape != tuple(s_shape):
            key = tuple(slice(0, n) for n in gs.shape)
            gs = slice_assign(_zeros(s_shape, g), key, gs)
    return gx, None, gs


def _onnx_take(ex, op) -> str:
    xt, it = op.inputs
    x = ex.names[xt.id]
    axis = op.attrs["axis"]
    if axis is None:
        x = ex.reshape(x, [-1]) if len(xt.shape) != 1 else x
        axis = 0
    return ex.node(ex.record(op), [x, ex.names[it.id]], axis=int(axis))


def _onnx_gather(ex, op) -> str:
    xt, it = op.inputs
    return ex.node(ex.record(op), [ex.names[xt.id], ex.names[it.id]], axis=int(op.attrs["axis"]))


def _onnx_scatter_add(ex, op) -> str:
    xt, it, st = op.inputs
    if ex.opset < 16:
        raise ex.error("scatter_add", f"graph.to_onnx: scatter_add needs opset >= 16 "
                                      f"(ScatterElements with reduction='add'), got opset {ex.opset}")
    x, idx, src = ex.names[xt.id], ex.names[it.id], ex.names[st.id]
    ishape = tuple(it.shape)
    if tuple(st.shape) != ishape:     # ONNX wants updates of the indices' shape
        src = ex.node("Slice", [src, ex.i64([0] * len(ishape)), ex.i64(list(ishape)),
                                ex.i64(list(range(len(ishape))))])
    if not ishape:                    # ScatterElements needs rank >= 1
        x, idx, src = (ex.reshape(v, [1]) for v in (x, idx, src))
    dt = xt.dtype
    if dt.is_bool:                    # logical or: add as int32, then != 0
        x, src = ex.cast(x, dt, D.int32), ex.cast(src, dt, D.int32)
    r = ex.node(ex.record(op), [x, idx, src], axis=int(op.attrs["axis"]), reduction="add")
    if dt.is_bool:
        r = ex.cast(r, D.int32, dt)
    return ex.reshape(r, []) if not ishape else r


register(OpSpec("take", "index", _infer_take, _kernel_take, backward=_grad_take, onnx="Gather",
                onnx_lower=_onnx_take, moves_only=True, uint64_index=True))
register(OpSpec("gather", "index", _infer_gather,
                lambda ks, p, a, at, plan, dev: ks.gather(p[0], p[1], at["axis"]),
                backward=_grad_gather, onnx="GatherElements", onnx_lower=_onnx_gather,
                moves_only=True, uint64_index=True))
register(OpSpec("scatter_add", "index", _infer_scatter_add,
                lambda ks, p, a, at, plan, dev: ks.scatter_add(p[0], p[1], p[2], at["axis"]),
                backward=_grad_scatter_add, onnx="ScatterElements", onnx_lower=_onnx_scatter_add,
                uint64="modular", uint64_index=True))


# --------------------------------------------------------------------------- front end
def _normalize_key(x: Tensor, key) -> tuple:
    """A basic-indexing key as one entry per axis: ints in range, concrete slices, None."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = _b.sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise ShapeError("getitem: an index can only have a single ellipsis ('...')")
    n_axes = _b.sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_axes > x.ndim:
        raise ShapeError(f"getitem: too many indices for a tensor of shape {x.shape}: {n_axes} given")
    out = []
    axis = 0
    for k in key:
        if k is Ellipsis:
            for _ in range(x.ndim - n_axes):
                out.append(slice(0, x.shape[axis], 1))
                axis += 1
        elif k is None:
            out.append(None)
        elif isinstance(k, slice):
            if k.step == 0:
                raise ShapeError(f"getitem: slice step cannot be zero (axis {axis} of shape "
                                 f"{x.shape})")
            try:
                out.append(slice(*k.indices(x.shape[axis])))
            except TypeError:
                raise ArgumentTypeError(f"getitem: slice bounds must be ints or None, got "
                                        f"{k!r}") from None
            axis += 1
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise ArgumentTypeError(f"getitem: unsupported index {k!r} of type "
                                        f"{type(k).__name__}") from None
            n = x.shape[axis]
            if not -n <= i < n:
                raise IndexOutOfRangeError(f"getitem: index {i} is out of bounds for axis {axis} "
                                           f"with size {n} (shape {x.shape})")
            out.append(i % n)
            axis += 1
    while axis < x.ndim:
        out.append(slice(0, x.shape[axis], 1))
        axis += 1
    return tuple(out)


def _is_advanced(k) -> bool:
    return isinstance(k, (Tensor, list, np.ndarray))


@front_end
def getitem(x, key) -> Tensor:
    """``x[key]`` with NumPy's rules: basic indexing (ints, slices, None, ...) as a view;
    integer arrays (tensors, lists, NumPy arrays; several broadcast together, mixed with
    slices, None and an ellipsis) and boolean masks as advanced indexing (a copy).  A mask's
    result shape depends on its values: inside a capture scope it raises ``CaptureError``
    kind ``DataDependentShape``."""
    x = tensor_arg("getitem", x)
    keys = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(k) for k in keys):
        from .advanced import advanced_getitem
        return advanced_getitem(x, keys)
    if any(type(k) is bool for k in keys):
        return _bool_index(x, keys)
    norm = _normalize_key(x, key)
    if all(isinstance(k, slice) and k.start == 0 and k.step == 1 and k.stop == d
           for k, d in zip(norm, x.shape)) and len(norm) == x.ndim:
        return x
    return run("index", (x,), {"key": norm})


def _bool_index(x, keys):
    """NumPy's scalar booleans in a key: ``True`` a new axis of length 1, ``False`` one of
    length 0 (``x[True]`` is ``x[None]``, ``x[False]`` empty)."""
    out = getitem(x, tuple(None if type(k) is bool else k for k in keys))
    indexed = sum(1 for k in keys if k is not None and k is not Ellipsis and type(k) is not bool)
    pos, empty = 0, []
    for k in keys:                          # the result axis each key entry gives
        if k is None or type(k) is bool:
            if k is False:
                empty.append(pos)
            pos += 1
        elif k is Ellipsis:
            pos += x.ndim - indexed
        elif isinstance(k, slice):
            pos += 1
    for p in empty:
        out = getitem(out, (slice(None),) * p + (slice(0, 0),))
    return out


@front_end(method=True)
def slice_assign(x, key, value) -> Tensor:
    """A copy of ``x`` with ``x[key] = value`` (value broadcasts to the indexed shape): basic
    indexing, or advanced indexing with NumPy's rules (integer arrays broadcast together, mixed
    with slices, None and an ellipsis; boolean masks, ``t.slice_assign(t > 0, 0.0)``); with
    repeated positions the last write wins (NumPy's rule; ``index_put(..., accumulate=True)``
    sums them).  A mask with a one-element value is a ``where`` (it records in a capture
    scope); a mask with more values has a data-dependent shape (``CaptureError`` there)."""
    x = tensor_arg("slice_assign", x)
    keys = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(k) for k in keys):
        from .advanced import advanced_assign
        return advanced_assign("slice_assign", x, keys, value)
    try:
        norm = _normalize_key(x, key)
    except (ShapeError, ArgumentTypeError, IndexOutOfRangeError) as exc:
        from .advanced import _renamed      # the key's errors, named for slice_assign
        raise _renamed("slice_assign", exc) from None
    value = operand("slice_assign", value, x)
    if not isinstance(value, Tensor):
        D.check_scalar("slice_assign", value, x.dtype)
    return run("slice_assign", (x, value), {"key": norm})


def _index_tensor(op, x, indices):
    if isinstance(indices, Tensor):
        return indices
    try:
        arr = np.asarray(indices)
    except ValueError:
        raise ShapeError(f"{op}: indices must form a rectangular array, got {indices!r}") from None
    if arr.dtype.kind not in "iu" and arr.size:
        raise DTypeError(f"{op}: indices must be integers, got {arr.dtype}")
    return tensor(arr.astype(np.int64), device=x.device)


@front_end(method=True)
def take(x, indices, axis=None) -> Tensor:
    """``numpy.take``: pick entries along ``axis`` (flattened when None) by integer indices."""
    x = tensor_arg("take", x)
    idx = _index_tensor("take", x, indices)
    if axis is not None and x.ndim == 0:
        raise ShapeError("take: a 0-d tensor has no axis to take along (NumPy's rule); use "
                         "axis=None")
    a = None if axis is None else normalize_axis("take", axis, x.ndim, x.shape)
    return run("take", (x, idx), {"axis": a})


@front_end(method=True)
def gather(x, axis=None, index=None, *, dim=None) -> Tensor:
    """PyTorch's ``gather(input, dim, index)``: ``out[i][j] = x[i][index[i][j]]`` for axis 1."""
    x = tensor_arg("gather", x)
    axis = torch_alias("gather", axis, None, dim, "axis= and dim=")
    if axis is None or index is None:
        raise ArgumentTypeError("gather: needs an axis (axis= or dim=) and an index")
    idx = _index_tensor("gather", x, index)
    a = normalize_axis("gather", axis, x.ndim, x.shape)
    if x.ndim == 0 and idx.ndim == 0:       # a 0-d input along axis 0/-1 (PyTorch): as 1-d
        return reshape(run("gather", (reshape(x, (1,)), reshape(idx, (1,))), {"axis": 0}), ())
    return run("gather", (x, idx), {"axis": a})


@front_end(method=True)
def scatter_add(x, axis, index, src) -> Tensor:
    """PyTorch's ``scatter_add(input, dim, index, src)``: a copy of ``x`` where, for every
    position ``p`` of ``index``, ``src[p]`` is added at ``p`` with ``p[axis]`` replaced by
    ``index[p]`` (``out[index[i][j]][j] += src[i][j]`` for axis 0).  ``index`` and ``src`` have
    x's rank, ``index`` is no larger than ``src`` on every axis and than ``x`` off ``axis``
    (only the leading ``index.shape`` block of ``src`` is used); ``src`` has x's dtype.
    Indices follow ``gather``: negative ones count from the end, out-of-range ones raise
    ``IndexOutOfRangeError`` before anything is written.  Repeated indices accumulate; bool
    tensors accumulate with logical or (as in PyTorch).  On cpu additions happen in index order
    (deterministic); on cuda they are atomic, so float sums may differ in the last bits from
    run to run."""
    x = tensor_arg("scatter_add", x)
    idx = _index_tensor("scatter_add", x, index)
    src = tensor_arg("scatter_add", src)
    a = normalize_axis("scatter_add", axis, x.ndim, x.shape)
    if x.ndim == 0 and idx.ndim == 0 and src.ndim == 0:    # as 1-d, like gather
        one = (1,)
        return reshape(run("scatter_add", (reshape(x, one), reshape(idx, one), reshape(src, one)),
                           {"axis": 0}), ())
    return run("scatter_add", (x, idx, src), {"axis": a})
