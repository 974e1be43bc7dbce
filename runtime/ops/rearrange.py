"""Shape and indexing ops written as front-end compositions of catalogue records
(``take``, ``index``, ``slice_assign``, ``reshape``, ``permute``, ``expand``, ``cat``,
``where``, ``scatter_add``, the reductions): none has a kernel of its own, so every one runs on
every kernel set, records into captured graphs as the records it is made of (replay, ONNX
export and ``graph.compile`` see those), and autodiff differentiates it through them.

Index arrays that depend only on shapes and attributes (``pad``'s reflection, ``diagonal``'s
positions, ``tril``'s mask, ...) are built on the host with NumPy and enter as constants
(``init`` values in a captured graph).  Ops whose output *shape* depends on tensor values
(``nonzero``, ``masked_select``, boolean-mask indexing, ``repeat_interleave`` with a tensor of
repeats, ``one_hot`` without ``num_classes``) read those values on the host; inside a capture
scope they raise ``CaptureError`` with ``.kind == "DataDependentShape"`` naming the op.
"""
from __future__ import annotations

import builtins as _b
import contextlib
import functools

import numpy as np

from ..core import dtypes as D
from ..core.errors import (ArgumentTypeError, ArgumentValueError, CaptureError, DTypeError,
                      IndexOutOfRangeError, OutOfMemoryError, ShapeError,
                      UnsupportedOptionError)
from ..tensor import Tensor
from .args import bool_arg, check_size, int_arg, operand, tensor_arg, torch_alias
from .create import arange, from_numpy, full
from .elementwise import (add, div, eq, floor_divide, ge, gt, maximum, minimum, mul, ne,
                          remainder, where)
from .index import _infer_scatter_add as _check_scatter_add
from .index import getitem, scatter_add, slice_assign, take
from .reduce import max as _max, min as _min, prod_ as _prod
from ..core.registry import OpSpec, Plan, front_end, register
from ..dispatch import dispatch as run
from .scan import cumsum
from .shape import cat, expand, permute, reshape, stack
from ..core.shapes import broadcast_shapes, normalize_axis, normalize_axes, prod

__all__ = ["pad", "repeat", "tile", "repeat_interleave", "roll", "flip", "tril", "triu",
           "diagonal", "diag", "diag_embed", "meshgrid", "movedim", "narrow", "unflatten",
           "index_select", "masked_fill", "one_hot", "scatter", "scatter_reduce", "index_add",
           "nonzero", "masked_select", "data_dependent"]


# --------------------------------------------------------------------------- helpers
def data_dependent(op: str, *tensors) -> None:
    """Raise ``CaptureError`` kind ``DataDependentShape`` when any of ``tensors`` is on a
    capture device: ``op``'s output shape depends on values a captured graph does not have."""
    for t in tensors:
        if isinstance(t, Tensor) and t.is_capture:
            raise CaptureError("DataDependentShape",
                               f"{op}: the output shape depends on the values of the input, "
                               f"which a captured graph cannot record; compute it outside the "
                               f"capture scope, or use a fixed-shape form (where, masked_fill)")


def _const(arr, like: Tensor) -> Tensor:
    """A host-built constant on ``like``'s device (``arr`` is ours: shared, not copied)."""
    arr = np.asarray(arr)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return from_numpy(arr, device=like.device)


def _host_index(idx: np.ndarray) -> np.ndarray:
    return np.asarray(idx, dtype=np.int64)


@contextlib.contextmanager
def _named(op: str):
    """Index errors of the records an op is made of, renamed to that op."""
    try:
        yield
    except IndexOutOfRangeError as exc:
        raise IndexOutOfRangeError(f"{op}: {exc}") from None


def _ints(op: str, name: str, v) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(int_arg(op, name, a) for a in v)
    return (int_arg(op, name, v),)


def _index_arg(op: str, x: Tensor, index) -> Tensor:
    if isinstance(index, Tensor):
        if not index.dtype.is_int:
            raise DTypeError(f"{op}: index must be int32 or int64, got {index.dtype.name}")
        return index
    arr = np.asarray(index)
    if arr.dtype.kind not in "iu" and arr.size:
        raise DTypeError(f"{op}: index must be integers, got {arr.dtype}")
    return _const(arr.astype(np.int64), x)


def _zero_of(dt):
    return False if dt.is_bool else 0


# --------------------------------------------------------------------------- pad
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_index(mode: str, n: int, lo: int, hi: int, dim: int, shape) -> np.ndarray:
    """The input index each output index of axis ``dim`` reads (read-only, cached), or the
    ShapeError for amounts the mode does not allow."""
    return _pad_index_cached(mode, int(n), int(lo), int(hi), int(dim), tuple(shape))


@functools.lru_cache(maxsize=256)
def _pad_index_cached(mode, n, lo, hi, dim, shape):
    out = _pad_index_of(mode, n, lo, hi, dim, shape).astype(np.int64, copy=False)
    out.flags.writeable = False
    return out


def _pad_index_of(mode: str, n: int, lo: int, hi: int, dim: int, shape) -> np.ndarray:
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise ShapeError(f"pad: reflect padding ({lo}, {hi}) must be smaller than the size "
                             f"{n} of axis {dim} (shape {tuple(shape)})")
        j = np.abs(i)
        return np.where(j >= n, 2 * (n - 1) - j, j)
    if n == 0:
        raise ShapeError(f"pad: {mode} padding of the empty axis {dim} (shape {tuple(shape)})")
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if lo > n or hi > n:
        raise ShapeError(f"pad: circular padding ({lo}, {hi}) must be no larger than the size "
                         f"{n} of axis {dim} (shape {tuple(shape)})")
    return np.mod(i, n)


# (mode, input shape, amounts) -> (crop before, pads, crop after) of a non-constant pad: its
# record's pads and the crop of negative amounts (None: nothing to do), the checks behind it passed.
# A repeated call (every step of a conv net) skips the checks and the loops over the axes,
# most of the call's Python time.  Only int amounts key it (1.0 == 1 hashes alike but is refused).
_PAD_PLANS: dict = {}
_PAD_PLANS_MAX = 256


@front_end
def pad(input, pad, mode="constant", value=None) -> Tensor:
    """PyTorch's ``F.pad``: ``pad`` lists (before, after) pairs starting from the *last*
    dimension, ``(left, right, top, bottom, ...)``; negative amounts crop.  ``mode``:
    ``"constant"`` (fill with ``value``, default 0), ``"reflect"`` (mirror without repeating
    the edge; each amount smaller than its axis), ``"replicate"`` (repeat the edge) or
    ``"circular"`` (wrap around; amounts no larger than the axis).  Unlike PyTorch, the
    non-constant modes pad any number of trailing dimensions of any rank."""
    x = tensor_arg("pad", input)
    key = None
    if value is None and type(mode) is str and type(pad) is tuple and \
            type(x.shape) is tuple and all(type(a) is int for a in pad):
        key = (mode, x.shape, pad)
        plan = _PAD_PLANS.get(key)
        if plan is not None:
            return _pad_native(x, mode, *plan)
    amounts = _ints("pad", "pad amounts", pad)
    if len(amounts) % 2 or len(amounts) // 2 > x.ndim:
        raise ShapeError(f"pad: the padding {amounts} must have an even length of at most "
                         f"2 * {x.ndim} for an input of shape {x.shape}")
    if mode not in _PAD_MODES:
        raise UnsupportedOptionError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got "
                                     f"{mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ArgumentValueError(f"pad: value= applies only to mode 'constant', got mode "
                                 f"{mode!r}")
    pairs = {x.ndim - 1 - i: (amounts[2 * i], amounts[2 * i + 1])
             for i in range(len(amounts) // 2)}
    pairs = {d: p for d, p in pairs.items() if p != (0, 0)}
    if not pairs:
        return x
    if mode == "constant":
        value = 0 if value is None else operand("pad", value)
        if isinstance(value, Tensor):
            raise ArgumentTypeError("pad: value must be a Python scalar")
        D.check_scalar("pad", value, x.dtype)
        if value is False or value is True:
            value = bool(value)
        elif not x.dtype.is_float and isinstance(value, float):
            raise DTypeError(f"pad: a float fill value {value} for an {x.dtype.name} input")
    for d in sorted(pairs):
        lo, hi = pairs[d]
        n = x.shape[d]
        if n + lo + hi < 0:
            raise ShapeError(f"pad: padding ({lo}, {hi}) leaves a negative size on axis {d} "
                             f"of shape {x.shape}")
        if mode == "circular" and (lo < 0 or hi < 0):
            kept = n + _b.min(lo, 0) + _b.min(hi, 0)
            if _b.max(lo, 0) > kept or _b.max(hi, 0) > kept:
                raise ShapeError(f"pad: circular padding ({lo}, {hi}) must be no larger than "
                                 f"the {kept} elements its negative amount leaves of axis {d} "
                                 f"(shape {x.shape})")
        elif mode != "constant":
            _pad_index(mode, n, lo, hi, d, x.shape)          # validates the amounts
    if mode != "constant":             # one native pass (the ``pad`` record) and the crops
        # Negative amounts crop.  Circular padding crops first and wraps what is left (as
        # PyTorch); reflect and replicate read the whole axis, then crop (also as PyTorch).
        pads = tuple(tuple(_b.max(a, 0) for a in pairs.get(d, (0, 0))) for d in range(x.ndim))
        first = mode == "circular"
        sizes = x.shape if first else tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, pads))
        crop = tuple(slice(_b.max(-pairs.get(d, (0, 0))[0], 0),
                           sizes[d] - _b.max(-pairs.get(d, (0, 0))[1], 0))
                     for d in range(x.ndim))
        crop = crop if any(c.start or c.stop != m for c, m in zip(crop, sizes)) else None
        plan = (crop if first else None, pads if any(p != (0, 0) for p in pads) else None,
                None if first else crop)
        if key is not None:
            if len(_PAD_PLANS) >= _PAD_PLANS_MAX:
                _PAD_PLANS.clear()
            _PAD_PLANS[key] = plan
        return _pad_native(x, mode, *plan)
    out = x
    for d in sorted(pairs):            # constant: per axis cat(fill, x, fill), then crop negatives
        lo, hi = pairs[d]
        out = _pad_axis(out, d, _b.max(lo, 0), _b.max(hi, 0), value)
        if lo < 0 or hi < 0:
            m = out.shape[d]
            out = getitem(out, (slice(None),) * d + (slice(_b.max(-lo, 0), m - _b.max(-hi, 0)),))
    return out


def _pad_native(x, mode, crop_before, pads, crop_after):
    """A checked non-constant pad: the crop of negative amounts before (circular) or after the
    ``pad`` record of ``pads``; each step is skipped where it is None."""
    out = x if crop_before is None else getitem(x, crop_before)
    out = out if pads is None else run("pad", (out,), {"pads": pads, "mode": mode})
    return out if crop_after is None else getitem(out, crop_after)


def _pad_axis(x, d, lo, hi, value):
    """``x`` padded with ``value`` by ``lo``/``hi`` >= 0 on axis ``d``: one ``cat`` of fills."""
    if lo == 0 and hi == 0:
        return x

    def part(k):
        return full(x.shape[:d] + (k,) + x.shape[d + 1:], value, x.dtype, x.device)

    return cat(([part(lo)] if lo else []) + [x] + ([part(hi)] if hi else []), d)


# --------------------------------------------------------------------------- the pad records
@functools.lru_cache(maxsize=256)
def _pad_maps(pads, mode, shape):
    """(lead, maps): the first padded axis and the input index each output index reads, per
    axis from there (``_pad_index``; identity on unpadded inner axes).  Cached: the same maps
    object comes back for the same arguments (the cpu set caches its tables by it)."""
    lead = next(d for d, p in enumerate(pads) if p != (0, 0))
    maps = tuple(_pad_index(mode, shape[d], lo, hi, d, shape)
                 for d, (lo, hi) in enumerate(pads) if d >= lead)
    return lead, maps


def _check_pad_attrs(op, shape, attrs):
    pads, mode = attrs["pads"], attrs["mode"]
    if mode not in _PAD_MODES[1:]:
        raise ArgumentValueError(f"{op}: mode must be reflect, replicate or circular, got {mode!r}")
    if len(pads) != len(shape) or any(lo < 0 or hi < 0 for lo, hi in pads) or \
            all(p == (0, 0) for p in pads):
        raise ShapeError(f"{op}: pads {pads} must be one non-negative (before, after) pair per "
                         f"axis of shape {tuple(shape)}, not all zero")
    for d, (lo, hi) in enumerate(pads):
        if lo or hi:
            _pad_index(mode, shape[d], lo, hi, d, shape)


@functools.lru_cache(maxsize=256)
def _pad_record_shape(shape, pads, mode):
    """The checked ``pad`` record's result shape (cached: the checks walk every axis)."""
    _check_pad_attrs("pad", shape, {"pads": pads, "mode": mode})
    return tuple(n + lo + hi for n, (lo, hi) in zip(shape, pads))


def _infer_pad_record(args, attrs):
    (x,) = args
    try:
        shape = _pad_record_shape(tuple(x.shape), attrs["pads"], attrs["mode"])
    except TypeError:                  # unhashable attrs (a list of pads): the uncached checks
        _check_pad_attrs("pad", x.shape, attrs)
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, attrs["pads"]))
    return Plan(shape, x.dtype, x.dtype)


def _kernel_pad(ks, p, args, attrs, plan, device):
    lead, maps = _pad_maps(attrs["pads"], attrs["mode"], tuple(args[0].shape))
    return ks.pad(p[0], maps, lead)


def _grad_pad(c, g):
    return (run("pad_backward", (g,), dict(c.attrs, in_shape=tuple(c.input_shape(0)))),)


def _infer_pad_backward(args, attrs):
    (g,) = args
    in_shape = tuple(attrs["in_shape"])
    _check_pad_attrs("pad_backward", in_shape, attrs)
    want = tuple(n + lo + hi for n, (lo, hi) in zip(in_shape, attrs["pads"]))
    if tuple(g.shape) != want:
        raise ShapeError(f"pad_backward: gradient of shape {tuple(g.shape)} for a padded "
                         f"output of shape {want}")
    if not g.dtype.is_float:
        raise DTypeError(f"pad_backward: gradient must be float32 or float64, got {g.dtype.name}")
    return Plan(in_shape, g.dtype, g.dtype)


def _kernel_pad_backward(ks, p, args, attrs, plan, device):
    lead, maps = _pad_maps(attrs["pads"], attrs["mode"], tuple(attrs["in_shape"]))
    return ks.pad_backward(p[0], maps, lead, tuple(attrs["in_shape"]))


def _grad_pad_backward(c, g):
    attrs = {k: v for k, v in c.attrs.items() if k != "in_shape"}
    return (run("pad", (g,), attrs),)


# ONNX lowering (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_pad(ex, op) -> str:
    (xt,) = op.inputs
    pads, mode = op.attrs["pads"], op.attrs["mode"]
    onnx_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    if mode == "circular" and ex.opset < 19:
        raise ex.error("pad", f"graph.to_onnx: circular pad needs opset >= 19 (Pad "
                              f"mode='wrap'), got opset {ex.opset}")
    amounts = [lo for lo, _ in pads] + [hi for _, hi in pads]
    return ex.node(ex.record(op), [ex.names[xt.id], ex.i64(amounts)], mode=onnx_mode)


register(OpSpec("pad", "index", _infer_pad_record, _kernel_pad, backward=_grad_pad, onnx="Pad",
                onnx_lower=_onnx_pad, uint64="modular"))
register(OpSpec("pad_backward", "index", _infer_pad_backward, _kernel_pad_backward,
                backward=_grad_pad_backward,
                onnx_skip="an internal gradient op (ONNX export covers inference graphs)"))


# --------------------------------------------------------------------------- repeat, tile
@front_end(method=True)
def repeat(x, *sizes) -> Tensor:
    """PyTorch's ``Tensor.repeat``: tile ``x`` ``sizes[i]`` times along each dimension
    (``sizes`` may have more entries than ``x`` has dimensions: leading ones are added)."""
    x = tensor_arg("repeat", x)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    reps = tuple(int_arg("repeat", "a repeat count", r) for r in sizes)
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat: {len(reps)} repeat counts {reps} for a tensor of shape "
                         f"{x.shape}: give at least one per dimension")
    if any(r < 0 for r in reps):
        raise ShapeError(f"repeat: repeat counts must be non-negative, got {reps}")
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    inter = tuple(v for s in shape for v in (1, s))
    big = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    out = tuple(r * s for r, s in zip(reps, shape))
    y = reshape(x, shape)
    if all(r == 1 for r in reps):
        return y
    return reshape(expand(reshape(y, inter), big), out)


@front_end(method=True)
def tile(x, dims) -> Tensor:
    """``numpy.tile``/``torch.tile``: ``repeat`` with ``dims`` padded with leading ones to
    ``x``'s rank."""
    x = tensor_arg("tile", x)
    dims = _ints("tile", "a repeat count", dims)
    if any(r < 0 for r in dims):
        raise ShapeError(f"tile: repeat counts must be non-negative, got {dims}")
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


@front_end(method=True)
def repeat_interleave(x, repeats, dim=None, *, axis=None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (flattened when None); ``repeats``
    an int, or a tensor (or list) with one count per element of that axis (its values set the
    output's shape: not in a capture scope)."""
    x = tensor_arg("repeat_interleave", x)
    dim = torch_alias("repeat_interleave", dim, None, axis, "dim= and axis=")
    if dim is None:
        x, d = reshape(x, (x.size,)), 0
    else:
        d = normalize_axis("repeat_interleave", dim, x.ndim, x.shape)
        if x.ndim == 0:
            x = reshape(x, (1,))
    n = x.shape[d]
    if isinstance(repeats, (Tensor, list, tuple, np.ndarray)):
        data_dependent("repeat_interleave", repeats)
        r = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
        if r.dtype.kind not in "iu" and r.size:
            raise DTypeError(f"repeat_interleave: repeats must be integers, got {r.dtype}")
        r = r.astype(np.int64).reshape(-1)
        if r.size == 1:
            repeats = int(r[0])
        else:
            if r.size != n:
                raise ShapeError(f"repeat_interleave: {r.size} repeat counts for axis {d} of "
                                 f"size {n} (shape {x.shape})")
            if (r < 0).any():
                raise ShapeError("repeat_interleave: repeat counts must be non-negative")
            return take(x, _const(np.repeat(np.arange(n), r), x), axis=d)
    r = int_arg("repeat_interleave", "repeats", repeats)
    if r < 0:
        raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {r}")
    s = x.shape
    y = expand(reshape(x, s[:d + 1] + (1,) + s[d + 1:]), s[:d + 1] + (r,) + s[d + 1:])
    return reshape(y, s[:d] + (n * r,) + s[d + 1:])


# --------------------------------------------------------------------------- roll, flip
@front_end(method=True)
def roll(x, shifts, dims=None) -> Tensor:
    """``torch.roll``: shift elements along ``dims`` (wrapping around); with ``dims`` None the
    flattened tensor is rolled and reshaped back."""
    x = tensor_arg("roll", x)
    shifts = _ints("roll", "a shift", shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ShapeError(f"roll: {len(shifts)} shifts need as many dims, got dims=None")
        return reshape(roll(reshape(x, (x.size,)), shifts, 0), x.shape)
    dims = _ints("roll", "a dim", dims)
    if len(dims) != len(shifts):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    out = x
    for s, dim in zip(shifts, dims):
        d = normalize_axis("roll", dim, x.ndim, x.shape)
        n = x.shape[d]
        if n == 0 or s % n == 0:
            continue
        s %= n
        lead = (slice(None),) * d
        out = cat([getitem(out, lead + (slice(n - s, n),)), getitem(out, lead + (slice(0, n - s),))],
                  d)
    return out


@front_end(method=True)
def flip(x, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (an int or a sequence)."""
    x = tensor_arg("flip", x)
    axes = normalize_axes("flip", tuple(_ints("flip", "a dim", dims)), x.ndim, x.shape)
    if x.ndim == 0 or not any(x.shape[a] > 1 for a in axes):
        return x
    return getitem(x, tuple(slice(None, None, -1) if a in axes else slice(None)
                            for a in range(x.ndim)))


# --------------------------------------------------------------------------- tril, triu
def _triangle(op, x, diagonal, lower):
    x = tensor_arg(op, x)
    k = int_arg(op, "diagonal", diagonal)
    if x.ndim < 2:
        raise ShapeError(f"{op}: input must have at least 2 dimensions, got shape {x.shape}")
    n, m = x.shape[-2:]
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    mask = (j - i <= k) if lower else (j - i >= k)
    if mask.all():
        return x
    return where(_const(mask, x), x, _zero_of(x.dtype))


@front_end(method=True)
def tril(x, diagonal=0) -> Tensor:
    """The lower triangle of the last two dimensions (entries with ``j - i <= diagonal``);
    the rest are 0."""
    return _triangle("tril", x, diagonal, True)


@front_end(method=True)
def triu(x, diagonal=0) -> Tensor:
    """The upper triangle of the last two dimensions (entries with ``j - i >= diagonal``);
    the rest are 0."""
    return _triangle("triu", x, diagonal, False)


# --------------------------------------------------------------------------- diagonals
@front_end(method=True)
def movedim(x, source, destination) -> Tensor:
    """Move the axes ``source`` to positions ``destination`` (ints or sequences), keeping the
    order of the others."""
    x = tensor_arg("movedim", x)
    src = tuple(normalize_axis("movedim", a, x.ndim, x.shape) for a in _ints("movedim", "a dim", source))
    dst = tuple(normalize_axis("movedim", a, x.ndim, x.shape)
                for a in _ints("movedim", "a dim", destination))
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {source} and destination {destination} must have "
                         f"the same number of dims")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"movedim: repeated dim in source {source} or destination "
                         f"{destination}")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(a for a in range(x.ndim) if a not in src)
    return permute(x, tuple(a if a is not None else next(rest) for a in order))


@front_end(method=True)
def diagonal(x, offset=0, dim1=0, dim2=1) -> Tensor:
    """``torch.diagonal``: the diagonal ``offset`` (above the main one when positive) of the
    ``dim1``/``dim2`` planes, as the last dimension of the result."""
    x = tensor_arg("diagonal", x)
    k = int_arg("diagonal", "offset", offset)
    if x.ndim < 2:
        raise ShapeError(f"diagonal: input must have at least 2 dimensions, got shape {x.shape}")
    d1 = normalize_axis("diagonal", dim1, x.ndim, x.shape)
    d2 = normalize_axis("diagonal", dim2, x.ndim, x.shape)
    if d1 == d2:
        raise ShapeError(f"diagonal: dim1 and dim2 must differ, both are {d1} (shape {x.shape})")
    n, m = x.shape[d1], x.shape[d2]
    r0, c0 = _b.max(-k, 0), _b.max(k, 0)
    length = _b.max(0, _b.min(n - r0, m - c0))
    i = np.arange(length)
    flat = (i + r0) * m + (i + c0)
    rest = tuple(a for a in range(x.ndim) if a not in (d1, d2))
    y = reshape(permute(x, rest + (d1, d2)), tuple(x.shape[a] for a in rest) + (n * m,))
    return take(y, _const(flat, x), axis=y.ndim - 1)


@front_end(method=True)
def diag_embed(x, offset=0, dim1=-2, dim2=-1) -> Tensor:
    """``torch.diag_embed``: a tensor whose ``dim1``/``dim2`` planes hold the last dimension
    of ``x`` on diagonal ``offset`` (zeros elsewhere)."""
    x = tensor_arg("diag_embed", x)
    k = int_arg("diag_embed", "offset", offset)
    if x.ndim == 0:
        raise ShapeError("diag_embed: input must have at least 1 dimension, got a 0-d tensor")
    nd = x.ndim + 1
    d1 = normalize_axis("diag_embed", dim1, nd, x.shape)
    d2 = normalize_axis("diag_embed", dim2, nd, x.shape)
    if d1 == d2:
        raise ShapeError(f"diag_embed: dim1 and dim2 must differ, both are {d1}")
    length = x.shape[-1]
    n = length + _b.abs(k)
    r0, c0 = _b.max(-k, 0), _b.max(k, 0)
    check_size("diag_embed", x.shape[:-1] + (n, n))
    try:
        mapping = np.full(n * n, length, np.int64)        # `length`: the appended zero
    except MemoryError:
        raise OutOfMemoryError(f"diag_embed: cannot allocate the ({n}, {n}) diagonal map of "
                               f"offset {k}") from None
    i = np.arange(length)
    mapping[(i + r0) * n + (i + c0)] = i
    padded = cat([x, full(x.shape[:-1] + (1,), _zero_of(x.dtype), x.dtype, x.device)], -1)
    y = reshape(take(padded, _const(mapping, x), axis=x.ndim - 1), x.shape[:-1] + (n, n))
    return movedim(y, (nd - 2, nd - 1), (d1, d2))


@front_end(method=True)
def diag(x, diagonal=0) -> Tensor:
    """``torch.diag``: a 1-d input becomes the square matrix with it on diagonal
    ``diagonal``; a 2-d input gives that diagonal as a 1-d tensor."""
    x = tensor_arg("diag", x)
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal)
    raise ShapeError(f"diag: input must be 1-d or 2-d, got shape {x.shape}")


# --------------------------------------------------------------------------- meshgrid etc.
@front_end
def meshgrid(*tensors, indexing="ij") -> tuple:
    """``torch.meshgrid``: 1-d (or 0-d) tensors ``t_i`` of sizes ``n_i`` give the tensors of
    shape ``(n_0, n_1, ...)`` whose entry holds ``t_i[index_i]``; ``indexing="xy"`` swaps the
    first two dimensions of the output (NumPy's default)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    ts = [tensor_arg("meshgrid", t) for t in tensors]
    if not isinstance(indexing, str) or indexing not in ("ij", "xy"):
        raise ArgumentValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not ts:
        raise ShapeError("meshgrid: expected at least one tensor")
    for t in ts:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-d or 1-d tensors, got shape {t.shape}")
    ts = [reshape(t, (t.size,)) for t in ts]
    pos = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * len(ts)
    for t, p in zip(ts, pos):
        shape[p] = t.shape[0]
    shape = tuple(shape)
    out = []
    for t, p in zip(ts, pos):
        one = [1] * len(ts)
        one[p] = t.shape[0]
        out.append(expand(reshape(t, tuple(one)), shape))
    return tuple(out)


def sliding_windows(x, dimension, size, step) -> Tensor:
    """PyTorch's ``Tensor.unfold(dimension, size, step)``: every window of ``size`` elements
    along ``dimension``, ``step`` apart; that axis becomes the windows' count and a new last
    axis of ``size`` holds each window.  A copy (PyTorch returns a view), by one ``take``, so
    gradients, capture and ONNX follow; ``rt.nn.functional.unfold`` is the im2col one."""
    x = tensor_arg("unfold", x)
    size, step = int_arg("unfold", "size", size), int_arg("unfold", "step", step)
    scalar = x.ndim == 0
    if scalar:                       # PyTorch: a 0-d tensor gives its one window, of shape (size,)
        normalize_axis("unfold", dimension, 0)
        x, d = reshape(x, (1,)), 0
    else:
        d = normalize_axis("unfold", dimension, x.ndim, x.shape)
    if step <= 0:
        raise ArgumentValueError(f"unfold: step must be positive, got {step}")
    if not 0 <= size <= x.shape[d]:
        raise ShapeError(f"unfold: size {size} does not fit axis {d} of size {x.shape[d]} "
                         f"(shape {x.shape})")
    n = (x.shape[d] - size) // step + 1
    idx = np.arange(n, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    out = movedim(take(x, _const(idx, x), axis=d), d + 1, x.ndim)
    return reshape(out, (size,)) if scalar else out


@front_end(method=True)
def narrow(x, dim, start, length) -> Tensor:
    """``x`` restricted to ``start .. start + length`` along ``dim`` (a view; a negative
    ``start`` counts from the end)."""
    x = tensor_arg("narrow", x)
    d = normalize_axis("narrow", dim, x.ndim, x.shape)
    start, length = int_arg("narrow", "start", start), int_arg("narrow", "length", length)
    n = x.shape[d]
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise ShapeError(f"narrow: start {start} and length {length} do not fit axis {d} of "
                         f"shape {x.shape}")
    return getitem(x, (slice(None),) * d + (slice(start, start + length),))


@front_end(method=True)
def unflatten(x, dim, sizes) -> Tensor:
    """Split axis ``dim`` into ``sizes`` (one entry may be -1)."""
    x = tensor_arg("unflatten", x)
    d = normalize_axis("unflatten", dim, x.ndim, x.shape)
    sizes = _ints("unflatten", "a size", sizes)
    if not sizes:
        raise ShapeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"unflatten: sizes {sizes} may have one -1 and no other negative size")
    n = x.shape[d]
    known = prod([s for s in sizes if s != -1])
    if -1 in sizes:
        if known == 0 or n % known:
            raise ShapeError(f"unflatten: sizes {sizes} do not fit axis {d} of shape {x.shape}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise ShapeError(f"unflatten: sizes {sizes} do not multiply to the size {n} of axis "
                         f"{d} (shape {x.shape})")
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


# --------------------------------------------------------------------------- index ops
@front_end(method=True)
def index_select(x, dim, index) -> Tensor:
    """The entries of ``x`` at the 1-d integer ``index`` along ``dim`` (that dimension gets
    ``len(index)``)."""
    x = tensor_arg("index_select", x)
    idx = _index_arg("index_select", x, index)
    if idx.ndim > 1:
        raise ShapeError(f"index_select: index must be 0-d or 1-d, got shape {idx.shape}")
    d = normalize_axis("index_select", dim, x.ndim, x.shape)
    if x.ndim == 0:
        x = reshape(x, (1,))
    with _named("index_select"):
        out = take(x, reshape(idx, (idx.size,)), axis=d)
    return out


@front_end(method=True)
def masked_fill(x, mask, value) -> Tensor:
    """A copy of ``x`` with ``value`` (a scalar or 0-d tensor) where the bool ``mask``
    (broadcast to ``x``'s shape) is true; ``x``'s dtype is kept."""
    x = tensor_arg("masked_fill", x)
    mask = tensor_arg("masked_fill", mask)
    if not mask.dtype.is_bool:
        raise DTypeError(f"masked_fill: mask must be bool, got {mask.dtype.name}")
    if broadcast_shapes("masked_fill", mask.shape, x.shape) != x.shape:
        raise ShapeError(f"masked_fill: mask of shape {mask.shape} does not broadcast to the "
                         f"input's shape {x.shape}")
    value = operand("masked_fill", value, x)
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"masked_fill: value must be a scalar or a 0-d tensor, got shape "
                             f"{value.shape}")
        value = value.astype(x.dtype)
    else:
        if isinstance(value, float) and not x.dtype.is_float:
            raise DTypeError(f"masked_fill: a float value {value} for an {x.dtype.name} input")
        D.check_scalar("masked_fill", value, x.dtype)
    out = where(mask, value, x)
    return out if out.dtype is x.dtype else out.astype(x.dtype)


@front_end(method=True)
def one_hot(x, num_classes=-1) -> Tensor:
    """``F.one_hot``: int64 tensor of shape ``x.shape + (num_classes,)`` with a 1 at each
    class value; ``num_classes=-1`` uses ``max(x) + 1`` (reads the values: not in a capture
    scope).  Class values outside ``[0, num_classes)`` raise IndexOutOfRangeError (checked
    when the values can be read; a captured graph gives a zero row for them)."""
    x = tensor_arg("one_hot", x)
    if not x.dtype.is_int:
        raise DTypeError(f"one_hot: input must be int32 or int64, got {x.dtype.name}")
    k = int_arg("one_hot", "num_classes", num_classes)
    if k < -1:
        raise ArgumentValueError(f"one_hot: num_classes must be -1 or non-negative, got {k}")
    if k == -1:
        data_dependent("one_hot", x)
    if not x.is_capture:
        vals = x.numpy()
        if k == -1:
            k = int(vals.max()) + 1 if vals.size else 0
        bad = vals[(vals < 0) | (vals >= k)]
        if bad.size:
            raise IndexOutOfRangeError(f"one_hot: class value {int(bad.reshape(-1)[0])} is out "
                                       f"of range for num_classes {k}")
    check_size("one_hot", x.shape + (k,))
    try:
        classes = arange(k, dtype=x.dtype, device=x.device)
        return eq(reshape(x, x.shape + (1,)), classes).astype(D.int64)
    except OutOfMemoryError:
        raise OutOfMemoryError(f"one_hot: cannot allocate the int64 result of shape "
                               f"{x.shape + (k,)} on {x.device}") from None


def _scatter_args(op, x, dim, index, src):
    x = tensor_arg(op, x)
    idx = _index_arg(op, x, index)
    d = normalize_axis(op, dim, x.ndim, x.shape)
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise DTypeError(f"{op}: src must have the input's dtype, got {x.dtype.name} (input) "
                         f"and {src.dtype.name} (src)")
    return x, d, idx


def _hits(op, x, d, idx):
    """How many indices land on each position of ``x`` (in x's dtype when it is a float one,
    exact below 2**24, so no other kernels are compiled; else int64).  Also checks the
    indices."""
    dt = x.dtype if x.dtype.is_float else D.int64
    with _named(op):
        return scatter_add(full(x.shape, 0, dt, x.device), d, idx, full(idx.shape, 1, dt, x.device))


@front_end(method=True)
def scatter(x, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
    """PyTorch's ``scatter(input, dim, index, src)``: a copy of ``x`` with ``src[p]`` written
    at ``p`` with ``p[dim]`` replaced by ``index[p]`` for every position ``p`` of ``index``;
    ``src`` may be a tensor (x's dtype) or a scalar (``value=`` too).  Where several indices
    hit one position the last write wins, in the row-major order of ``index`` (PyTorch's cpu
    result, and the rule of ``index_put`` and ``slice_assign``); only that write gets a
    gradient.  ``reduce="add"`` or ``"multiply"`` combines instead: every value landing on a
    position is added to (multiplied into) ``x``'s value there (``scatter_add``,
    ``scatter_reduce(..., "prod")``, differentiable here, unlike PyTorch's)."""
    if src is None:
        src = value
    elif value is not None:
        raise ArgumentTypeError("scatter: got both src and value=")
    if src is None:
        raise ArgumentTypeError("scatter: needs src (a tensor or a scalar) or value=")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise ArgumentValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
    x, d, idx = _scatter_args("scatter", x, dim, index, src)
    if reduce is not None:
        if not isinstance(src, Tensor):         # the scalar at every index position
            src = operand("scatter", src)
            D.check_scalar("scatter", src, x.dtype)
            if D.result_type(x, src, "scatter") is not x.dtype:
                raise DTypeError(f"scatter: value {src!r} does not fit the input's dtype "
                                 f"{x.dtype.name}")
            src = full(idx.shape, src, x.dtype, x.device)
        with _named("scatter"):
            if reduce == "add":
                return scatter_add(x, d, idx, src)
            return scatter_reduce(x, d, idx, src, "prod")
    if not isinstance(src, Tensor):
        hit = gt(_hits("scatter", x, d, idx), 0)
        src = operand("scatter", src)
        D.check_scalar("scatter", src, x.dtype)
        out = where(hit, src, x)
        return out if out.dtype is x.dtype else out.astype(x.dtype)
    _check_scatter_add((x, idx, src), {"axis": d})   # scatter_add's rules and messages
    if prod(idx.shape) == 0:
        return x
    with _named("scatter"):
        # the last write: the largest row-major position of index landing on each place of x
        order = reshape(arange(prod(idx.shape), dtype=D.int64, device=x.device), idx.shape)
        winner = run("scatter_reduce", (full(x.shape, -1, D.int64, x.device), idx, order),
                     {"axis": d, "reduce": "amax"})
        picked = take(getitem(src, tuple(slice(0, n) for n in idx.shape)), maximum(winner, 0))
    return where(gt(winner, -1), picked, x)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dt):
    """The value that ``reduce`` ("prod", "amax", "amin") leaves unchanged, in ``dt``."""
    if reduce == "prod":
        return True if dt.is_bool else 1
    if dt.is_float:
        return -np.inf if reduce == "amax" else np.inf
    if dt.is_bool:
        return reduce == "amin"
    info = np.iinfo(dt.np)
    return int(info.min if reduce == "amax" else info.max)


def _dense_reduce(x, d, idx, src, reduce):
    """``prod``/``amax``/``amin`` of the ``src`` values each position of ``x`` receives
    (the reduction's identity where none), by a (..., n, m) membership mask: O(n m) work per
    line of ``dim``."""
    n, m = x.shape[d], idx.shape[d]
    src = getitem(src, tuple(slice(0, s) for s in idx.shape))
    dt = x.dtype
    ident = _identity(reduce, dt)
    last = idx.ndim - 1
    im = movedim(idx, d, last)
    im = where(gt(0, im), add(im, n), im)
    sm = movedim(src, d, last)
    lead = im.shape[:-1]
    member = eq(reshape(im, lead + (1, m)), _const(np.arange(n, dtype=np.int64).reshape(n, 1), x))
    vals = where(member, reshape(sm, lead + (1, m)), ident)
    if vals.dtype is not dt:
        vals = vals.astype(dt)
    fn = {"prod": _prod, "amax": _max, "amin": _min}[reduce]
    r = fn(vals, axis=last + 1) if m else full(lead + (n,), ident, dt, x.device)
    if r.dtype is not dt:
        r = r.astype(dt)
    r = movedim(r, last, d)
    if r.shape != x.shape:
        key = tuple(slice(0, s) for s in r.shape)
        r = slice_assign(full(x.shape, ident, dt, x.device), key, r)
    return r


@front_end(method=True)
def scatter_reduce(x, dim, index, src, reduce, *, include_self=True) -> Tensor:
    """PyTorch's ``scatter_reduce``: like ``scatter``, but the values landing on a position
    (and ``x``'s own value there when ``include_self``) are combined by ``reduce``: "sum",
    "prod", "mean" (floats only), "amax" or "amin"; positions no index hits keep ``x``.
    "prod"/"amax"/"amin" run as a native kernel (deterministic, in index order; NaN
    propagates); their gradient, captured graphs and ONNX export use a dense membership mask
    (O(size of dim x index size on dim) work and memory per line), as does a bool input."""
    src = tensor_arg("scatter_reduce", src)
    x, d, idx = _scatter_args("scatter_reduce", x, dim, index, src)
    if reduce not in _REDUCES:
        raise ArgumentValueError(f"scatter_reduce: reduce must be one of {', '.join(_REDUCES)}, "
                                 f"got {reduce!r}")
    if reduce == "mean" and not x.dtype.is_float:
        raise DTypeError(f"scatter_reduce: reduce='mean' needs a float input, got "
                         f"{x.dtype.name}")
    if x.ndim == 0:
        raise ShapeError("scatter_reduce: input must have at least 1 dimension")
    if reduce in ("prod", "amax", "amin") and not x.dtype.is_bool:
        # the native kernel combines into its input: positions an index hits start from the
        # reduction's identity when x's own value is not included
        base = x
        if not include_self:
            base = where(gt(_hits("scatter_reduce", x, d, idx), 0), _identity(reduce, x.dtype), x)
            base = base if base.dtype is x.dtype else base.astype(x.dtype)
        with _named("scatter_reduce"):
            return run("scatter_reduce", (base, idx, src), {"axis": d, "reduce": reduce})
    hits = _hits("scatter_reduce", x, d, idx)
    hit = gt(hits, 0)
    if reduce in ("sum", "mean"):
        base = x if (include_self and reduce == "sum") else \
            full(x.shape, _zero_of(x.dtype), x.dtype, x.device)
        with _named("scatter_reduce"):
            s = scatter_add(base, d, idx, src)
        if reduce == "sum":
            return s if include_self else where(hit, s, x)
        if include_self:
            return div(add(x, s), add(hits, 1))
        return where(hit, div(s, maximum(hits, 1)), x)
    r = _dense_reduce(x, d, idx, src, reduce)          # bool: and / or by the dense mask
    if include_self:
        if reduce == "prod":
            return where(r, x, False)
        return (maximum if reduce == "amax" else minimum)(x, r)
    return where(hit, r, x)


# the record behind scatter_reduce's prod/amax/amin (numeric dtypes): a native kernel on plain
# devices; recording devices and autodiff use its decomposition (the dense mask), so captured
# graphs export to ONNX and gradients flow through where/eq/max/prod
def _infer_scatter_reduce(args, attrs):
    x, idx, src = args
    name = "scatter_reduce"
    if not idx.dtype.is_int:
        raise DTypeError(f"{name}: index must be int32 or int64, got {idx.dtype.name}")
    if src.dtype is not x.dtype:
        raise DTypeError(f"{name}: src must have the input's dtype, got {x.dtype.name} (input) "
                         f"and {src.dtype.name} (src)")
    if x.dtype.is_bool:
        raise DTypeError(f"{name}: the native {attrs['reduce']} is not defined for bool")
    axis = attrs["axis"]
    for what, t in (("index", idx), ("src", src)):
        if t.ndim != x.ndim:
            raise ShapeError(f"{name}: {what} of shape {t.shape} must have the same number of "
                             f"dimensions as the input of shape {x.shape}")
    for d in range(x.ndim):
        if idx.shape[d] > src.shape[d] or (d != axis and idx.shape[d] > x.shape[d]):
            raise ShapeError(f"{name}: index of shape {idx.shape} must be no larger than src "
                             f"of shape {src.shape}, and no larger than the input of shape "
                             f"{x.shape} except on axis {axis}")
    if x.shape[axis] == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"{name}: cannot scatter into empty axis {axis} of shape {x.shape}")
    return Plan(x.shape, x.dtype, x.dtype)


def _decompose_scatter_reduce(args, attrs):
    x, idx, src = args
    reduce = attrs["reduce"]
    r = _dense_reduce(x, attrs["axis"], idx, src, reduce)
    return {"prod": mul, "amax": maximum, "amin": minimum}[reduce](x, r)


register(OpSpec("scatter_reduce", "index", _infer_scatter_reduce,
                lambda ks, p, a, at, plan, dev: ks.scatter_reduce(p[0], p[1], p[2], at["axis"],
                                                                  at["reduce"]),
                decompose=_decompose_scatter_reduce))


@front_end(method=True)
def index_add(x, dim, index, source, *, alpha=1) -> Tensor:
    """``x`` with ``alpha * source`` added at the 1-d ``index`` along ``dim``
    (``out[..., index[j], ...] += alpha * source[..., j, ...]``; repeated indices
    accumulate)."""
    x = tensor_arg("index_add", x)
    src = tensor_arg("index_add", source)
    idx = _index_arg("index_add", x, index)
    if idx.ndim > 1:
        raise ShapeError(f"index_add: index must be 0-d or 1-d, got shape {idx.shape}")
    d = normalize_axis("index_add", dim, x.ndim, x.shape)
    if src.dtype is not x.dtype:
        raise DTypeError(f"index_add: source must have the input's dtype, got {x.dtype.name} "
                         f"(input) and {src.dtype.name} (source)")
    k = idx.size
    if x.ndim == 0:
        x1, s1 = reshape(x, (1,)), reshape(src, (src.size,))
        return reshape(index_add(x1, 0, idx, s1, alpha=alpha), ())
    want = x.shape[:d] + (k,) + x.shape[d + 1:]
    if src.shape != want:
        raise ShapeError(f"index_add: source of shape {src.shape} must have shape {want} "
                         f"(the input's {x.shape} with {k} on axis {d})")
    if alpha != 1:
        D.check_scalar("index_add", alpha, x.dtype)
        src = mul(src, alpha)
    ie = expand(reshape(idx, (1,) * d + (k,) + (1,) * (x.ndim - d - 1)), src.shape)
    with _named("index_add"):
        return scatter_add(x, d, ie, src)


# --------------------------------------------------------------------------- data-dependent
def _static_size(op: str, size) -> int:
    size = int_arg(op, "size", size)
    if size < 0:
        raise ArgumentValueError(f"{op}: size must be >= 0, got {size}")
    return size


def _fill_arg(op: str, value, dt) -> None:
    """A Python scalar ``fill_value`` the result dtype ``dt`` holds exactly (no float into an
    int result, only a bool into a bool one)."""
    ok = (type(value) is bool if dt.is_bool else
          type(value) in (bool, int) if dt.is_int else type(value) in (bool, int, float))
    if not ok:
        raise DTypeError(f"{op}: fill_value must be a Python scalar of the result's dtype "
                         f"{dt.name}, got {value!r}")
    D.check_scalar(op, value, dt)


def _first_positions(flat_mask: Tensor, size: int) -> Tensor:
    """The row-major positions of the first ``size`` True entries of the 1-d bool
    ``flat_mask`` as int64 (size,), -1 past the last one: each True entry's rank among the
    True entries (a cumulative sum) picks its slot; the others land in a spare slot ``size``,
    cut off.  Reads no values, so it records into a captured graph."""
    n = flat_mask.shape[0]
    rank = cumsum(flat_mask, 0, dtype=D.int64)                  # 1-based rank where True
    slot = add(where(flat_mask, minimum(rank, size + 1), size + 1), -1)
    init = full((size + 1,), -1, D.int64, flat_mask.device)
    pos = run("scatter_reduce", (init, slot, arange(n, dtype=D.int64, device=flat_mask.device)),
              {"axis": 0, "reduce": "amax"})
    return getitem(pos, slice(0, size))


@front_end(method=True)
def nonzero(x, *, as_tuple=False, size=None, fill_value=-1):
    """The indices of the non-zero entries in row-major order: an int64 tensor of shape
    ``(count, ndim)``, or with ``as_tuple`` one 1-d tensor per dimension (NumPy's
    ``nonzero``).  Reads the values (not in a capture scope) unless ``size`` is given: then
    the result has ``size`` rows whatever the data (``torch.nonzero_static``,
    ``jnp.nonzero(size=)``): the first ``size`` indices, rows past the count filled with
    ``fill_value`` (default -1, PyTorch's), and it captures."""
    x = tensor_arg("nonzero", x)
    as_tuple = bool_arg("nonzero", "as_tuple", as_tuple)
    if size is not None:
        return _nonzero_static(x, _static_size("nonzero", size), fill_value, as_tuple)
    data_dependent("nonzero", x)
    a = x.numpy()
    if as_tuple:
        return tuple(_const(i.astype(np.int64), x) for i in np.nonzero(np.atleast_1d(a)))
    if a.ndim == 0:
        return _const(np.zeros((int(a != 0), 0), np.int64), x)
    return _const(np.stack(np.nonzero(a), axis=1).astype(np.int64).reshape(-1, a.ndim), x)


def _nonzero_static(x: Tensor, size: int, fill_value, as_tuple: bool):
    _fill_arg("nonzero", fill_value, D.int64)
    xs = reshape(x, (1,)) if x.ndim == 0 and as_tuple else x   # (NumPy's atleast_1d)
    total = prod(xs.shape)
    if total == 0:
        cols = [full((size,), fill_value, D.int64, x.device) for _ in xs.shape]
    else:
        with _named("nonzero"):
            pos = _first_positions(reshape(ne(xs, 0), (total,)), size)
            found = ge(pos, 0)
            cols, stride = [], total
            for i, n in enumerate(xs.shape):            # unravel the row-major position
                stride //= n
                c = pos if stride == 1 else floor_divide(pos, stride)
                cols.append(where(found, remainder(c, n) if i else c, fill_value))
    if as_tuple:
        return tuple(cols)
    if not cols:
        return full((size, 0), 0, D.int64, x.device)
    return stack(cols, axis=1)


@front_end(method=True)
def masked_select(x, mask, *, size=None, fill_value=0) -> Tensor:
    """The entries of ``x`` where the bool ``mask`` is true, as a 1-d tensor (``x`` and
    ``mask`` broadcast together).  Reads the mask (not in a capture scope) unless ``size``
    is given: then the result has ``size`` entries whatever the data (the first ``size``
    selected, ``fill_value`` past the count; gradient to the selected entries), and it
    captures."""
    x = tensor_arg("masked_select", x)
    mask = operand("masked_select", mask, x)
    mask = tensor_arg("masked_select", mask)
    if not mask.dtype.is_bool:
        raise DTypeError(f"masked_select: mask must be bool, got {mask.dtype.name}")
    if size is not None:
        size = _static_size("masked_select", size)
        _fill_arg("masked_select", fill_value, x.dtype)
    else:
        data_dependent("masked_select", x, mask)
    shape = broadcast_shapes("masked_select", x.shape, mask.shape)
    xb = expand(x, shape) if x.shape != shape else x
    if size is None:
        m = np.broadcast_to(mask.numpy(), shape)
        return take(reshape(xb, (prod(shape),)), _const(np.flatnonzero(m), x), axis=0)
    if prod(shape) == 0:
        return full((size,), fill_value, x.dtype, x.device)
    with _named("masked_select"):
        mb = expand(mask, shape) if mask.shape != shape else mask
        pos = _first_positions(reshape(mb, (prod(shape),)), size)
        found = ge(pos, 0)
        picked = take(reshape(xb, (prod(shape),)), maximum(pos, 0), axis=0)
        return where(found, picked, fill_value)

