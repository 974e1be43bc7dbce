"""Pooling and resampling ops on (N, C, H, W) tensors, with PyTorch's semantics: ``max_pool2d``,
``avg_pool2d``, ``adaptive_avg_pool2d``, ``adaptive_max_pool2d``, ``max_unpool2d``,
``interpolate`` (nearest, nearest-exact, bilinear; 1-D and 3-D inputs as reshapes onto the 2-D
op), the 1-D forms ``max_pool1d``/``avg_pool1d`` (reshapes onto the 2-D ops) and the 3-D forms
``max_pool3d``/``avg_pool3d`` (two 2-D passes).

The records take 4-D inputs only (the front ends lift 3-D (C, H, W) inputs and drop the batch
axis again), so a captured graph exports to ONNX's 4-D pooling operators as is.  Each op's
windows are computed here once per (input size, attrs), as *window tables* (per axis: first
tap, stop, step) or *tap tables* (per axis: two input indices and a weight), and handed to the
kernel set, which knows nothing else about pooling.  Gradients are internal native ops:
``max_pool2d_backward(x, g)`` (scatter to the argmax, found again from the input, so the
tape keeps no index tensor), ``avg_pool2d_backward`` and ``interpolate_backward``.
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..core import dtypes as D
from ..dispatch import dispatch as run
from ..core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..kernel_sets import supports
from .args import tensor_arg
from ..core.registry import Meta, OpSpec, Plan, dtype_names, front_end, register
from .shape import reshape

_MAX_DTYPES = (D.float32, D.float64, D.int32, D.int64, D.float16, D.bfloat16, D.int8, D.uint8,
               D.int16)   # (the small dtypes run upcast: runtime.lowprec)
_FLOAT_DTYPES = (D.float32, D.float64, D.float16, D.bfloat16)
INTERPOLATE_MODES = ("nearest", "nearest-exact", "bilinear")


# --------------------------------------------------------------------------- argument checks
def _pair(op: str, name: str, v) -> tuple:
    """An int or a sequence of two ints as a pair (ArgumentTypeError otherwise)."""
    try:
        if isinstance(v, (tuple, list)):
            if len(v) == 1:
                v = (v[0], v[0])
            if len(v) != 2:
                raise TypeError
            return (operator.index(v[0]), operator.index(v[1]))
        return (operator.index(v),) * 2
    except TypeError:
        raise ArgumentTypeError(f"{op}: {name} must be an int or a pair of ints, got {v!r}") \
            from None


def _check_input(op: str, x, allowed) -> None:
    if len(x.shape) != 4:
        raise ShapeError(f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape "
                         f"{tuple(x.shape)}")
    if x.dtype not in allowed:
        names = ", ".join(d.name for d in allowed[:-1]) + f" or {allowed[-1].name}"
        raise DTypeError(f"{op}: input must be {names}, got {x.dtype.name}")


def _positive(op: str, **pairs) -> None:
    for name, v in pairs.items():
        if min(v) <= 0:
            raise ArgumentValueError(f"{op}: {name} must be positive, got {v}")


def _check_padding(op: str, padding, kernel) -> None:
    if min(padding) < 0:
        raise ArgumentValueError(f"{op}: padding must be non-negative, got {padding}")
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise ArgumentValueError(f"{op}: padding {padding} must be at most half of kernel_size "
                                 f"{kernel}")


def _out_len(n, k, s, p, d, ceil) -> int:
    """PyTorch's ``pooling_output_shape``: with ceil_mode the last window must start inside
    the input or its left padding."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_out(op, x, kernel, stride, padding, dilation, ceil) -> tuple:
    """(OH, OW); ShapeError when the (dilated) kernel does not fit the padded input."""
    H, W = x.shape[2:]
    oh, ow = (_out_len(n, k, s, p, d, ceil) for n, k, s, p, d in
              zip((H, W), kernel, stride, padding, dilation))
    if oh < 1 or ow < 1:
        eff = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        raise ShapeError(f"{op}: kernel of size {eff} (kernel_size {kernel}, dilation "
                         f"{dilation}) is larger than the input of shape {tuple(x.shape)} with "
                         f"padding {padding}: the output would be {oh}x{ow}")
    return oh, ow


# --------------------------------------------------------------------------- window tables
def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def _max_axis(n, k, s, p, d, o):
    start = np.arange(o, dtype=np.int64) * s - p
    stop = np.minimum(start + (k - 1) * d + 1, n)
    # the first tap inside the input on the dilation grid (PyTorch: start += d while < 0)
    first = np.where(start < 0, start + (-start + d - 1) // d * d, start)
    return _i64(first), _i64(stop), int(d)


def _avg_axis(n, k, s, p, o, include_pad):
    start = np.arange(o, dtype=np.int64) * s - p
    stop = np.minimum(start + k, n + p)
    size = stop - start                     # counts the padding, not past it
    start, stop = np.maximum(start, 0), np.minimum(stop, n)
    return (_i64(start), _i64(stop), 1), (size if include_pad else stop - start)


def _adaptive_axis(n, o):
    i = np.arange(o, dtype=np.int64)
    return _i64(i * n // o), _i64(-((-(i + 1) * n) // o)), 1


@functools.lru_cache(maxsize=256)
def _windows(kind: str, H: int, W: int, key: tuple):
    """(row table, column table, float64 divisors or None) of one pooling op."""
    a = dict(key)
    if "output_size" in a:
        rows, cols = (_adaptive_axis(n, o) for n, o in zip((H, W), a["output_size"]))
        if kind == "max":
            return rows, cols, None
        return rows, cols, np.outer(rows[1] - rows[0], cols[1] - cols[0]).astype(np.float64)
    k, s, p = a["kernel_size"], a["stride"], a["padding"]
    dil = a.get("dilation", (1, 1))
    o = [_out_len(n, k[i], s[i], p[i], dil[i], a["ceil_mode"]) for i, n in enumerate((H, W))]
    if kind == "max":
        d = a["dilation"]
        return (_max_axis(H, k[0], s[0], p[0], d[0], o[0]),
                _max_axis(W, k[1], s[1], p[1], d[1], o[1]), None)
    (rows, ch), (cols, cw) = (_avg_axis(n, k[i], s[i], p[i], o[i], a["count_include_pad"])
                              for i, n in enumerate((H, W)))
    if a["divisor_override"] is not None:
        div = np.full((o[0], o[1]), float(a["divisor_override"]))
    else:
        div = np.outer(ch, cw).astype(np.float64)
    return rows, cols, div


def _key(attrs, drop=("input_size",)) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                        for k, v in attrs.items() if k not in drop))


def windows_of(kind: str, shape, attrs):
    """The tables of a pooling op over an input of ``shape`` (N, C, H, W)."""
    return _windows(kind, int(shape[2]), int(shape[3]), _key(attrs))


# --------------------------------------------------------------------------- shape rules
def _norm(attrs, *names):
    """The named pair attrs as tuples (a loaded graph gives lists)."""
    return {n: (tuple(attrs[n]) if isinstance(attrs[n], list) else attrs[n]) for n in names}


def _infer_max_out(op, x, attrs) -> tuple:
    """Validates a max pooling's input and attrs (fixed or adaptive); (OH, OW)."""
    _check_input(op, x, _MAX_DTYPES)
    if "output_size" in attrs:
        return _adaptive_out(op, x, attrs)
    a = _norm(attrs, "kernel_size", "stride", "padding", "dilation")
    _positive(op, kernel_size=a["kernel_size"], stride=a["stride"], dilation=a["dilation"])
    _check_padding(op, a["padding"], a["kernel_size"])
    return _pool_out(op, x, a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                     attrs["ceil_mode"])


def _adaptive_out(op, x, attrs) -> tuple:
    out = tuple(attrs["output_size"])
    _positive(op, output_size=out)
    if 0 in x.shape[2:]:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has an empty spatial "
                         f"dimension")
    return out


def _infer_avg_out(op, x, attrs) -> tuple:
    _check_input(op, x, _FLOAT_DTYPES)
    if "output_size" in attrs:
        return _adaptive_out(op, x, attrs)
    a = _norm(attrs, "kernel_size", "stride", "padding")
    _positive(op, kernel_size=a["kernel_size"], stride=a["stride"])
    _check_padding(op, a["padding"], a["kernel_size"])
    d = attrs["divisor_override"]
    if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d <= 0):
        raise ArgumentValueError(f"{op}: divisor_override must be a positive int, got {d!r}")
    return _pool_out(op, x, a["kernel_size"], a["stride"], a["padding"], (1, 1),
                     attrs["ceil_mode"])


def _plan(x, out_hw, dt=None) -> Plan:
    dt = dt or x.dtype
    return Plan(tuple(x.shape[:2]) + tuple(out_hw), dt, x.dtype)


def _check_grad(op, g, want, dt) -> None:
    if tuple(getattr(g, "shape", ())) != tuple(want) or getattr(g, "dtype", None) is not dt:
        raise ShapeError(f"{op}: gradient of shape {tuple(getattr(g, 'shape', ()))} "
                         f"({dtype_names([g])}) does not match the output of shape "
                         f"{tuple(want)} ({dt.name})")


def _input_shape(g, attrs) -> tuple:
    """The input shape a backward op rebuilds from its gradient and ``input_size``."""
    return tuple(g.shape[:2]) + tuple(attrs["input_size"])


# --------------------------------------------------------------------------- max pooling
def _infer_max(args, attrs):
    return _plan(args[0], _infer_max_out("max_pool2d", args[0], attrs))


def _infer_adaptive_max(args, attrs):
    return _plan(args[0], _infer_max_out("adaptive_max_pool2d", args[0], attrs))


def _infer_max_indices(args, attrs):
    return _plan(args[0], _infer_max_out("max_pool2d_indices", args[0], attrs), D.int64)


def _kernel_max(ks, p, args, attrs, plan, device):
    rows, cols, _ = windows_of("max", args[0].shape, attrs)
    return ks.max_pool2d(p[0], rows, cols, False)[0]


def _kernel_max_indices(ks, p, args, attrs, plan, device):
    rows, cols, _ = windows_of("max", args[0].shape, attrs)
    return ks.max_pool2d(p[0], rows, cols, True)[1]


def _grad_max(c, g):
    return (run("max_pool2d_backward", (c.input(0), g), dict(c.attrs)),)


def _infer_max_backward(args, attrs):
    x, g = args
    if not x.dtype.is_float:
        raise DTypeError(f"max_pool2d_backward: input must be float32 or float64, got "
                         f"{x.dtype.name}")
    out = tuple(x.shape[:2]) + _infer_max_out("max_pool2d_backward", x, attrs)
    _check_grad("max_pool2d_backward", g, out, x.dtype)
    return Plan(tuple(x.shape), x.dtype, x.dtype)


def _kernel_max_backward(ks, p, args, attrs, plan, device):
    rows, cols, _ = windows_of("max", args[0].shape, attrs)
    return ks.max_pool2d_backward(p[0], p[1], rows, cols)


# ONNX lowerings (``OpSpec.onnx``, called with the ONNX exporter, see ``elementwise``): the
# operator comes from the attrs (``onnx_pool``: MaxPool, GlobalMaxPool, AveragePool, ...), so the
# records' ``onnx`` is the lowering itself
def _onnx_form(ex, op):
    (xt,) = op.inputs
    form = onnx_pool(op.op, op.attrs, xt.shape, xt.dtype)
    if isinstance(form, str):
        raise ex.error(op.op, f"graph.to_onnx: {op.op} {form}")
    return form


def _onnx_pool2d(ex, op) -> str:
    (xt,) = op.inputs
    op_type, attrs, factor = _onnx_form(ex, op)
    y = ex.node(op_type, [ex.names[xt.id]], **attrs)
    return y if factor is None else ex.node("Mul", [y, ex.scalar(factor, xt.dtype)])


def _onnx_max_pool2d_indices(ex, op) -> str:
    # MaxPool's Indices count over the whole (N, C, H, W) tensor: subtract each plane's start
    (xt,) = op.inputs
    form = _onnx_form(ex, op)
    n, c, h, w = xt.shape
    idx = ex.node(form[0], [ex.names[xt.id]], n_out=2, **form[1])[1]
    base = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    return ex.node("Sub", [idx, ex.const(base)])


def _onnx_interpolate(ex, op) -> str:
    (xt,) = op.inputs
    scales = op.attrs["scales"]
    if scales is not None and not op.attrs.get("align_corners"):
        # PyTorch maps coordinates by the given scale_factor, as Resize does with scales
        args = ["", ex.const(np.array([1.0, 1.0] + [float(s) for s in scales], np.float32))]
    else:
        args = ["", "", ex.i64(list(xt.shape[:2]) + list(op.attrs["size"]))]
    return ex.node("Resize", [ex.names[xt.id]] + args, **onnx_resize(op.attrs))


_NO_GRAD_ONNX = "an internal gradient op (ONNX export covers inference graphs)"
register(OpSpec("max_pool2d", "pool", _infer_max, _kernel_max, cost="compute",
                backward=_grad_max, onnx=_onnx_pool2d))
register(OpSpec("adaptive_max_pool2d", "pool", _infer_adaptive_max, _kernel_max,
                cost="compute", backward=_grad_max, onnx=_onnx_pool2d))
register(OpSpec("max_pool2d_indices", "pool", _infer_max_indices, _kernel_max_indices,
                cost="compute", differentiable=False, onnx=_onnx_max_pool2d_indices))
register(OpSpec("max_pool2d_backward", "pool", _infer_max_backward, _kernel_max_backward,
                cost="compute", differentiable=False, onnx_skip=_NO_GRAD_ONNX))


def _infer_max_relu(args, attrs):
    return _plan(args[0], _infer_max_out("max_pool2d_relu", args[0], attrs))


def _kernel_max_relu(ks, p, args, attrs, plan, device):
    rows, cols, _ = windows_of("max", args[0].shape, attrs)
    # a kernel set may lack the fused kernel, or decline the case (None)
    y = ks.max_pool2d_relu(p[0], rows, cols) if supports(ks, "max_pool2d_relu") else None
    if y is not None:
        return y
    return ks.unary("relu", ks.max_pool2d(p[0], rows, cols, False)[0], plan.dtype.np, {})


# ``relu(max_pool2d(x))`` or ``relu(adaptive_max_pool2d(x))`` (its attrs say which): made by
# graph.compile from ``max_pool2d(relu(x))`` (``runtime.capture.compiled._pool_before_relu``);
# the captured graph, replay and ONNX keep the two ops.  The cpu set's 2x2 pool applies the
# relu as it stores each maximum; other pools and kernel sets run the pool, then relu.
register(OpSpec("max_pool2d_relu", "pool", _infer_max_relu, _kernel_max_relu, cost="compute",
                differentiable=False,
                onnx_skip="made by graph.compile only (inference); the captured graph it comes "
                          "from keeps the pool and the relu"))


# --------------------------------------------------------------------------- average pooling
def _infer_avg(args, attrs):
    return _plan(args[0], _infer_avg_out("avg_pool2d", args[0], attrs))


def _infer_adaptive_avg(args, attrs):
    return _plan(args[0], _infer_avg_out("adaptive_avg_pool2d", args[0], attrs))


def _kernel_avg(ks, p, args, attrs, plan, device):
    rows, cols, div = windows_of("avg", args[0].shape, attrs)
    return ks.avg_pool2d(p[0], rows, cols, div)


def _grad_avg(c, g):
    attrs = dict(c.attrs, input_size=tuple(c.input_shape(0)[2:]))
    return (run("avg_pool2d_backward", (g,), attrs),)


def _infer_avg_backward(args, attrs):
    (g,) = args
    x = Meta(_input_shape(g, attrs), g.dtype)
    out = _infer_avg_out("avg_pool2d_backward", x, attrs)
    _check_grad("avg_pool2d_backward", g, tuple(x.shape[:2]) + out, x.dtype)
    return Plan(x.shape, x.dtype, x.dtype)


def _kernel_avg_backward(ks, p, args, attrs, plan, device):
    rows, cols, div = windows_of("avg", plan.shape, attrs)
    return ks.avg_pool2d_backward(p[0], rows, cols, div, tuple(plan.shape[2:]))


register(OpSpec("avg_pool2d", "pool", _infer_avg, _kernel_avg, cost="compute",
                backward=_grad_avg, onnx=_onnx_pool2d))
register(OpSpec("adaptive_avg_pool2d", "pool", _infer_adaptive_avg, _kernel_avg,
                cost="compute", backward=_grad_avg, onnx=_onnx_pool2d))
register(OpSpec("avg_pool2d_backward", "pool", _infer_avg_backward, _kernel_avg_backward,
                cost="compute", differentiable=False, onnx_skip=_NO_GRAD_ONNX))


# --------------------------------------------------------------------------- interpolate
def _infer_interp_out(op, x, attrs) -> tuple:
    if len(x.shape) != 4:
        raise ShapeError(f"{op}: expected a 4-D (N, C, H, W) input, got shape "
                         f"{tuple(x.shape)}")
    if x.dtype not in _FLOAT_DTYPES:
        raise DTypeError(f"{op}: input must be float32 or float64, got {x.dtype.name}")
    mode, ac = attrs["mode"], attrs["align_corners"]
    if mode not in INTERPOLATE_MODES:
        raise ArgumentValueError(f"{op}: mode must be 'nearest', 'nearest-exact' or 'bilinear', "
                                 f"got {mode!r}")
    if mode != "bilinear" and ac is not None:
        raise ArgumentValueError(f"{op}: align_corners can only be set with mode='bilinear'")
    size = tuple(attrs["size"])
    _positive(op, size=size)
    if 0 in x.shape[2:]:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has an empty spatial "
                         f"dimension")
    return size


def _nearest_axis(n, o, scale):
    # PyTorch's nearest_idx: exact for equal and doubled sizes, else floor(o * scale) in float32
    i = np.arange(o)
    if o == n:
        src = i
    elif o == 2 * n:
        src = i >> 1
    else:
        s = np.float32(1.0 / scale if scale else n / o)
        src = np.minimum(np.floor(i.astype(np.float32) * s).astype(np.int64), n - 1)
    return _i64(src), _i64(src), np.zeros(o)


def _nearest_exact_axis(n, o, scale):
    # PyTorch's nearest_neighbor_exact_compute_source_index: floorf((dst + 0.5) * scale) with
    # a float32 scale, the product rounded to float32 before the floor
    s = np.float32(1.0 / scale if scale else n / o)
    prod = ((np.arange(o) + 0.5) * np.float64(s)).astype(np.float32)
    src = np.minimum(np.floor(prod).astype(np.int64), n - 1)
    return _i64(src), _i64(src), np.zeros(o)


def nearest_source(mode, n, o, scale):
    """The input index each of ``o`` outputs of a nearest ``mode`` reads along an axis of
    ``n`` (``scale``: the scale_factor given, or None)."""
    return (_nearest_axis if mode == "nearest" else _nearest_exact_axis)(n, o, scale)[0]


def _linear_axis(n, o, scale, align_corners, dt):
    # PyTorch's area_pixel_compute_scale/_source_index and guard_index_and_lambda, in the
    # input's dtype (its opmath type on cpu)
    t = dt.type
    if align_corners:
        s = t((n - 1) / (o - 1)) if o > 1 else t(0)
        src = s * np.arange(o, dtype=dt)
    else:
        s = t(1.0 / scale) if scale else t(n / o)
        src = np.maximum(s * (np.arange(o, dtype=dt) + t(0.5)) - t(0.5), t(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam = np.clip(src - i0.astype(dt), t(0), t(1))
    i1 = i0 + (i0 < n - 1)
    return _i64(i0), _i64(i1), lam


@functools.lru_cache(maxsize=256)
def _taps(H, W, dtype_name, key):
    a = dict(key)
    dt = np.dtype(dtype_name)
    scales = a["scales"] or (None, None)
    out = []
    for n, o, s in zip((H, W), a["size"], scales):
        if a["mode"] != "bilinear":
            i0, i1, lam = (_nearest_axis if a["mode"] == "nearest" else _nearest_exact_axis)(n, o, s)
            out.append((i0, i1, lam.astype(dt)))
        else:
            out.append(_linear_axis(n, o, s, bool(a["align_corners"]), dt))
    return tuple(out)


def taps_of(shape, dtype, attrs):
    """The two tap tables of ``interpolate`` over an input of ``shape`` and ``dtype``."""
    return _taps(int(shape[2]), int(shape[3]), dtype.name, _key(attrs))


def _infer_interp(args, attrs):
    return _plan(args[0], _infer_interp_out("interpolate", args[0], attrs))


def _kernel_interp(ks, p, args, attrs, plan, device):
    rows, cols = taps_of(args[0].shape, args[0].dtype, attrs)
    return ks.resample2d(p[0], rows, cols, attrs["mode"] != "bilinear")


def _grad_interp(c, g):
    attrs = dict(c.attrs, input_size=tuple(c.input_shape(0)[2:]))
    return (run("interpolate_backward", (g,), attrs),)


def _infer_interp_backward(args, attrs):
    (g,) = args
    x = Meta(_input_shape(g, attrs), g.dtype)
    out = _infer_interp_out("interpolate_backward", x, attrs)
    _check_grad("interpolate_backward", g, tuple(x.shape[:2]) + out, x.dtype)
    return Plan(x.shape, x.dtype, x.dtype)


def _kernel_interp_backward(ks, p, args, attrs, plan, device):
    rows, cols = taps_of(plan.shape, plan.dtype, attrs)
    return ks.resample2d_backward(p[0], rows, cols, attrs["mode"] != "bilinear",
                                  tuple(plan.shape[2:]))


register(OpSpec("interpolate", "pool", _infer_interp, _kernel_interp, cost="compute",
                backward=_grad_interp, onnx=_onnx_interpolate))
register(OpSpec("interpolate_backward", "pool", _infer_interp_backward,
                _kernel_interp_backward, cost="compute", differentiable=False,
                onnx_skip=_NO_GRAD_ONNX))


# --------------------------------------------------------------------------- max_unpool2d
# the inverse of max_pool2d(return_indices=True): each value written at its flat index in its
# (oH, oW) output plane, zeros elsewhere.  Lowered as one ``put`` of flat indices (plane start
# + index; the last write wins, PyTorch's cpu result) after a ``gather`` that checks each index
# against its plane; the gradient gathers g at the indices (every input, repeated or not, gets
# the gradient of the position it names, as PyTorch's).
def _infer_unpool(args, attrs):
    op = "max_unpool2d"
    x, idx = args
    _check_input(op, x, _MAX_DTYPES)
    if idx.dtype is not D.int64:
        raise DTypeError(f"{op}: indices must be int64, got {idx.dtype.name}")
    if tuple(idx.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: indices of shape {tuple(idx.shape)} must have the input's shape "
                         f"{tuple(x.shape)}")
    a = _norm(attrs, "kernel_size", "stride", "padding", "output_size")
    _positive(op, kernel_size=a["kernel_size"], stride=a["stride"], output_size=a["output_size"])
    if min(a["padding"]) < 0:
        raise ArgumentValueError(f"{op}: padding must be non-negative, got {a['padding']}")
    return _plan(x, a["output_size"])


def _kernel_unpool(ks, p, args, attrs, plan, device):
    n, c, h, w = args[0].shape
    length = plan.shape[2] * plan.shape[3]
    i64 = np.int64
    idx = ks.reshape(p[1], (n, c, h * w))
    out = ks.full((n, c, length), 0, plan.dtype.np, device.index)
    ks.gather(out, idx, 2)          # IndexError for an index outside its plane
    idx = ks.binary("remainder", idx, ks.full((1, 1, 1), length, i64, device.index), i64, i64)
    starts = ks.reshape(ks.arange(0, length, n * c, i64, device.index), (n, c, 1))
    flat = ks.binary("add", idx, starts, i64, i64)
    return ks.reshape(ks.put(out, flat, ks.reshape(p[0], (n, c, h * w)), False), plan.shape)


def _grad_unpool(c, g):
    from .index import gather
    x, idx = c.input(0), c.input(1)
    n, ch, h, w = x.shape
    gx = gather(reshape(g, (n, ch, g.shape[2] * g.shape[3])), 2, reshape(idx, (n, ch, h * w)))
    return reshape(gx, tuple(x.shape)), None


def _onnx_unpool(ex, op) -> str:
    # MaxUnpool's indices count over the whole (N, C, oH, oW) output: add each plane's start
    xt, it = op.inputs
    if not xt.dtype.is_float:
        raise ex.error(op.op, f"graph.to_onnx: max_unpool2d has no ONNX form for "
                              f"{xt.dtype.name} input (MaxUnpool takes floats)")
    a = op.attrs
    n, c = xt.shape[:2]
    oh, ow = a["output_size"]
    starts = (np.arange(n * c, dtype=np.int64) * (oh * ow)).reshape(n, c, 1, 1)
    idx = ex.node("Add", [ex.names[it.id], ex.const(starts)])
    return ex.node("MaxUnpool", [ex.names[xt.id], idx, ex.i64([n, c, oh, ow])],
                   kernel_shape=[int(k) for k in a["kernel_size"]],
                   strides=[int(k) for k in a["stride"]],
                   pads=[int(k) for k in a["padding"]] * 2)


register(OpSpec("max_unpool2d", "pool", _infer_unpool, _kernel_unpool, backward=_grad_unpool,
                onnx=_onnx_unpool))


# --------------------------------------------------------------------------- front ends
def _as_4d(op: str, x):
    """(4-D tensor, whether a batch axis was added) for a 3-D or 4-D input."""
    x = tensor_arg(op, x)
    if x.ndim == 3:
        return reshape(x, (1,) + x.shape), True
    if x.ndim != 4:
        raise ShapeError(f"{op}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape "
                         f"{x.shape}")
    return x, False


def _drop_batch(y, lifted):
    return reshape(y, y.shape[1:]) if lifted else y


def _stride(op, stride, kernel):
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return kernel
    return _pair(op, "stride", stride)


def _max_results(op, x, attrs, lifted, return_indices):
    y = _drop_batch(run(op, (x,), attrs), lifted)
    if not return_indices:
        return y
    return y, _drop_batch(run("max_pool2d_indices", (x,), attrs), lifted)


@front_end
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's ``max_pool2d`` on (N, C, H, W) or (C, H, W); with ``return_indices`` also
    the int64 flat index of each maximum in its H*W plane (the first maximum wins)."""
    x, lifted = _as_4d("max_pool2d", input)
    k = _pair("max_pool2d", "kernel_size", kernel_size)
    attrs = {"kernel_size": k, "stride": _stride("max_pool2d", stride, k),
             "padding": _pair("max_pool2d", "padding", padding),
             "dilation": _pair("max_pool2d", "dilation", dilation), "ceil_mode": bool(ceil_mode)}
    return _max_results("max_pool2d", x, attrs, lifted, return_indices)


@front_end
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """PyTorch's ``avg_pool2d`` on (N, C, H, W) or (C, H, W) float tensors."""
    x, lifted = _as_4d("avg_pool2d", input)
    k = _pair("avg_pool2d", "kernel_size", kernel_size)
    attrs = {"kernel_size": k, "stride": _stride("avg_pool2d", stride, k),
             "padding": _pair("avg_pool2d", "padding", padding), "ceil_mode": bool(ceil_mode),
             "count_include_pad": bool(count_include_pad), "divisor_override": divisor_override}
    return _drop_batch(run("avg_pool2d", (x,), attrs), lifted)


def _output_size(op, output_size, x) -> tuple:
    if not isinstance(output_size, (tuple, list)):
        output_size = (output_size, output_size)
    if len(output_size) != 2:
        raise ArgumentTypeError(f"{op}: output_size must be an int or a pair of ints (or None), "
                                f"got {output_size!r}")
    try:
        return tuple(n if o is None else operator.index(o) for o, n in zip(output_size,
                                                                           x.shape[2:]))
    except TypeError:
        raise ArgumentTypeError(f"{op}: output_size must be an int or a pair of ints (or None), "
                                f"got {output_size!r}") from None


@front_end
def adaptive_avg_pool2d(input, output_size):
    """PyTorch's ``adaptive_avg_pool2d``: windows ``[floor(i*H/out), ceil((i+1)*H/out))``;
    a ``None`` in ``output_size`` keeps that size."""
    x, lifted = _as_4d("adaptive_avg_pool2d", input)
    attrs = {"output_size": _output_size("adaptive_avg_pool2d", output_size, x)}
    return _drop_batch(run("adaptive_avg_pool2d", (x,), attrs), lifted)


@front_end
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's ``adaptive_max_pool2d`` (windows as ``adaptive_avg_pool2d``'s); with
    ``return_indices`` also the flat index of each maximum in its H*W plane."""
    x, lifted = _as_4d("adaptive_max_pool2d", input)
    attrs = {"output_size": _output_size("adaptive_max_pool2d", output_size, x)}
    return _max_results("adaptive_max_pool2d", x, attrs, lifted, return_indices)


def _spatial(op, name, v, n) -> tuple:
    """An int or a sequence of ``n`` ints as an ``n``-tuple (ArgumentTypeError otherwise)."""
    if n == 2:
        return _pair(op, name, v)
    try:
        if isinstance(v, (tuple, list)):
            if len(v) != n:
                raise TypeError
            return tuple(operator.index(e) for e in v)
        return (operator.index(v),) * n
    except TypeError:
        raise ArgumentTypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got "
                                f"{v!r}") from None


def _interp_size(op, x, size, scale_factor, recompute):
    n = x.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ArgumentValueError(f"{op}: give exactly one of size and scale_factor")
    if size is not None:
        out = _spatial(op, "size", size, n)
        _positive(op, size=out)
        return out, None
    sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * n
    if len(sf) != n or not all(isinstance(s, (int, float)) and s > 0 and math.isfinite(s)
                               for s in sf):
        what = "a pair of them" if n == 2 else f"a tuple of {n}"
        raise ArgumentValueError(f"{op}: scale_factor must be a positive number or {what}, got "
                                 f"{scale_factor!r}")
    out = tuple(int(math.floor(n * float(s))) for n, s in zip(x.shape[2:], sf))
    return out, (None if recompute else tuple(float(s) for s in sf))


#: the interpolating modes and the spatial rank each takes (PyTorch's)
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}
_INPUT_LAYOUT = {1: "3-D (N, C, L)", 2: "4-D (N, C, H, W)", 3: "5-D (N, C, D, H, W)"}


def _resample(x, size, scales, mode, align_corners):
    """The ``interpolate`` record on a 4-D ``x`` (mode "bilinear" for every linear mode)."""
    return run("interpolate", (x,), {"size": tuple(size), "mode": mode, "scales": scales,
                                     "align_corners": align_corners})


def _nearest_take(x, out, scales, mode):
    """Nearest resampling of any dtype as one ``take`` per resized axis (the index tables
    of the float kernels)."""
    from .index import take
    for i, o in enumerate(out):
        n = x.shape[2 + i]
        src = nearest_source(mode, n, o, None if scales is None else scales[i])
        if o != n or np.any(src != np.arange(n)):
            x = take(x, src, axis=2 + i)
    return x


@front_end
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """PyTorch's ``interpolate`` on (N, C, L), (N, C, H, W) or (N, C, D, H, W): ``mode``
    "nearest" (``floor(dst * in/out)``), "nearest-exact" (``floor((dst + 0.5) * in/out)``;
    both also on integer dtypes), or "linear"/"bilinear"/"trilinear" for the input's rank
    (``align_corners`` True or False).  ``in/out`` is ``1/scale_factor`` when given (unless
    ``recompute_scale_factor``).  1-D and 3-D inputs run on the 2-D op: a height of 1, or one
    pass over (H, W) and one over D."""
    op = "interpolate"
    x = tensor_arg(op, input)
    n = x.ndim - 2
    if n not in (1, 2, 3):
        raise ShapeError(f"{op}: expected a 4-D (N, C, H, W), 3-D (N, C, L) or 5-D "
                         f"(N, C, D, H, W) input, got shape {tuple(x.shape)}")
    if mode in _LINEAR_MODES:
        if _LINEAR_MODES[mode] != n:
            raise ShapeError(f"{op}: mode {mode!r} needs a {_INPUT_LAYOUT[_LINEAR_MODES[mode]]} "
                             f"input, got shape {tuple(x.shape)}")
        align_corners = bool(align_corners)
    elif mode in ("nearest", "nearest-exact"):
        if align_corners is not None:
            raise ArgumentValueError(f"{op}: align_corners can only be set with the "
                                     f"interpolating modes (linear, bilinear, trilinear)")
    else:
        raise ArgumentValueError(f"{op}: mode must be 'nearest', 'nearest-exact', 'linear', "
                                 f"'bilinear' or 'trilinear', got {mode!r}")
    out, scales = _interp_size(op, x, size, scale_factor, recompute_scale_factor)
    if 0 in x.shape[2:]:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has an empty spatial "
                         f"dimension")
    if not x.dtype.is_float:
        if mode in _LINEAR_MODES or not x.dtype.is_int:
            raise DTypeError(f"{op}: input must be float32 or float64, got {x.dtype.name} (mode "
                             f"{mode!r}; the nearest modes also take integer dtypes)")
        return _nearest_take(x, out, scales, mode)
    kind = "bilinear" if mode in _LINEAR_MODES else mode
    ac = align_corners if mode in _LINEAR_MODES else None
    if n == 2:
        return _resample(x, out, scales, kind, ac)
    if n == 1:
        N, C, L = x.shape
        y = _resample(reshape(x, (N, C, 1, L)), (1, out[0]),
                      None if scales is None else (1.0, scales[0]), kind, ac)
        return reshape(y, (N, C, out[0]))
    # 3-D: (H, W) resampled on (N, C*D, H, W), then D on (N, C, D, oH*oW), whose second
    # axis is kept (same size, scale 1: the identity map); the weights multiply
    # (trilinear is separable), so the two passes are the 3-D interpolation
    N, C, D, H, W = x.shape
    od, oh, ow = out
    if (oh, ow) != (H, W) or (scales is not None and scales[1:] != (1.0, 1.0)):
        x = reshape(_resample(reshape(x, (N, C * D, H, W)), (oh, ow),
                              None if scales is None else scales[1:], kind, ac),
                    (N, C, D, oh, ow))
    if od != D or (scales is not None and scales[0] != 1.0):
        x = reshape(_resample(reshape(x, (N, C, D, oh * ow)), (od, oh * ow),
                              None if scales is None else (scales[0], 1.0), kind, ac),
                    (N, C, od, oh, ow))
    return x


def _unpool_size(op, x, kernel, stride, padding, output_size) -> tuple:
    """PyTorch's ``_unpool_output_size``: ``(in - 1) * stride - 2 * padding + kernel``, or
    ``output_size`` (its last two entries) within a stride of that."""
    default = tuple((n - 1) * s - 2 * p + k
                    for n, k, s, p in zip(x.shape[2:], kernel, stride, padding))
    if output_size is None:
        return default
    try:
        out = tuple(operator.index(o) for o in output_size)
    except TypeError:
        out = ()
    if len(out) in (3, 4):
        out = out[-2:]
    if len(out) != 2:
        raise ArgumentTypeError(f"{op}: output_size must be a sequence of 2 ints (or of 4, "
                                f"N, C, H, W), got {output_size!r}")
    for d in range(2):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < out[d] < hi:
            raise ArgumentValueError(f"{op}: invalid output_size {out} (dim {d} must be "
                                     f"between {lo} and {hi}, exclusive)")
    return out


@front_end
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """PyTorch's ``max_unpool2d``: the values of ``max_pool2d(..., return_indices=True)``
    put back at their ``indices`` (flat in each output H*W plane), zeros elsewhere."""
    op = "max_unpool2d"
    x, lifted = _as_4d(op, input)
    idx = tensor_arg(op, indices)
    if lifted and idx.ndim == 3:
        idx = reshape(idx, (1,) + idx.shape)
    k = _pair(op, "kernel_size", kernel_size)
    s = _stride(op, stride, k)
    p = _pair(op, "padding", padding)
    out = _unpool_size(op, x, k, s, p, output_size)
    attrs = {"kernel_size": k, "stride": s, "padding": p, "output_size": out}
    return _drop_batch(run(op, (x, idx), attrs), lifted)


def _as_2d_pool(op, x):
    x = tensor_arg(op, x)
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape "
                         f"{x.shape}")
    return reshape(x, x.shape[:-1] + (1, x.shape[-1]))


def _one(op, name, v) -> int:
    return _pair(op, name, v)[1]


def _squeeze_h(y):
    return reshape(y, y.shape[:-2] + y.shape[-1:])


@front_end
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's ``max_pool1d`` on (N, C, L) or (C, L): ``max_pool2d`` over a height of 1."""
    op = "max_pool1d"
    k = _one(op, "kernel_size", kernel_size)
    s = k if stride is None else _one(op, "stride", stride)
    _positive(op, kernel_size=(k,), stride=(s,), dilation=(_one(op, "dilation", dilation),))
    out = max_pool2d(_as_2d_pool(op, input), (1, k), (1, s), (0, _one(op, "padding", padding)),
                     (1, _one(op, "dilation", dilation)), ceil_mode, return_indices)
    return tuple(_squeeze_h(t) for t in out) if return_indices else _squeeze_h(out)


@front_end
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """PyTorch's ``avg_pool1d`` on (N, C, L) or (C, L): ``avg_pool2d`` over a height of 1."""
    op = "avg_pool1d"
    k = _one(op, "kernel_size", kernel_size)
    s = k if stride is None else _one(op, "stride", stride)
    _positive(op, kernel_size=(k,), stride=(s,))       # (checked here, not as avg_pool2d)
    return _squeeze_h(avg_pool2d(_as_2d_pool(op, input), (1, k), (1, s),
                                 (0, _one(op, "padding", padding)), ceil_mode,
                                 count_include_pad))


# --------------------------------------------------------------------------- 3-D pooling
# Both are separable and written with the 2-D records (nothing new to compile): one pass over
# (H, W) on (N, C*D, H, W), one over D on (N, C, D, oH*oW) with a (kD, 1) window.  The max of
# maxima is the max, and the first maximum of the second pass's window, then of its (H, W)
# window, is the first in (d, h, w) order -- PyTorch's, so the gradients match; an average's
# divisor is the product of the per-axis window sizes (padding counted or not, ceil_mode's
# overhang included), so the average of averages is the average (divisor_override: the first
# pass sums, the second divides).
def _triple(op, name, v) -> tuple:
    return _spatial(op, name, v, 3)


def _as_5d(op: str, x):
    """(5-D tensor, whether a batch axis was added) for a 4-D or 5-D input."""
    x = tensor_arg(op, x)
    if x.ndim == 4:
        return reshape(x, (1,) + x.shape), True
    if x.ndim != 5:
        raise ShapeError(f"{op}: expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got "
                         f"shape {tuple(x.shape)}")
    return x, False


def _pool3d_args(op, kernel_size, stride, padding):
    k = _triple(op, "kernel_size", kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _triple(op, "stride", stride)
    p = _triple(op, "padding", padding)
    if min(p) < 0:
        raise ArgumentValueError(f"{op}: padding must be non-negative, got {p}")
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        raise ArgumentValueError(f"{op}: padding {p} must be at most half of kernel_size {k}")
    return k, s, p


@front_end
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's ``max_pool3d`` on (N, C, D, H, W) or (C, D, H, W): ``max_pool2d`` over
    (H, W), then over D; with ``return_indices`` also the int64 flat index of each maximum in
    its D*H*W volume (the first maximum wins)."""
    op = "max_pool3d"
    x, lifted = _as_5d(op, input)
    k, s, p = _pool3d_args(op, kernel_size, stride, padding)
    d = _triple(op, "dilation", dilation)
    n, c, depth, h, w = x.shape
    y = max_pool2d(reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], d[1:], ceil_mode,
                   return_indices)
    y, hw_idx = y if return_indices else (y, None)
    oh, ow = y.shape[2:]
    z = max_pool2d(reshape(y, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1), (p[0], 0),
                   (d[0], 1), ceil_mode, return_indices)
    if not return_indices:
        return _drop_batch(reshape(z, (n, c, z.shape[2], oh, ow)), lifted)
    from .elementwise import add, floor_divide, mul
    from .index import gather
    z, d_idx = z
    od = z.shape[2]
    # the second pass's index is depth * oH*oW + position; the first's the (h, w) index of
    # that depth's maximum
    depth_of = floor_divide(d_idx, oh * ow)
    hw = gather(reshape(hw_idx, (n, c, depth, oh * ow)), 2, depth_of)
    idx = add(mul(depth_of, h * w), hw)
    return (_drop_batch(reshape(z, (n, c, od, oh, ow)), lifted),
            _drop_batch(reshape(idx, (n, c, od, oh, ow)), lifted))


@front_end
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """PyTorch's ``avg_pool3d`` on (N, C, D, H, W) or (C, D, H, W) float tensors:
    ``avg_pool2d`` over (H, W), then over D."""
    op = "avg_pool3d"
    x, lifted = _as_5d(op, input)
    k, s, p = _pool3d_args(op, kernel_size, stride, padding)
    d = divisor_override
    if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d <= 0):
        raise ArgumentValueError(f"{op}: divisor_override must be a positive int, got {d!r}")
    n, c, depth, h, w = x.shape
    y = avg_pool2d(reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], ceil_mode,
                   count_include_pad, None if d is None else 1)
    oh, ow = y.shape[2:]
    z = avg_pool2d(reshape(y, (n, c, depth, oh * ow)), (k[0], 1), (s[0], 1), (p[0], 0),
                   ceil_mode, count_include_pad, d)
    return _drop_batch(reshape(z, (n, c, z.shape[2], oh, ow)), lifted)


# --------------------------------------------------------------------------- ONNX
def _onnx_fixed(name, a, shape):
    k, s, p = (list(map(int, a[n])) for n in ("kernel_size", "stride", "padding"))
    attrs = {"kernel_shape": k, "strides": s, "pads": p + p, "ceil_mode": int(a["ceil_mode"])}
    if name == "max_pool2d" or name == "max_pool2d_indices":
        return "MaxPool", dict(attrs, dilations=list(map(int, a["dilation"]))), None
    attrs["count_include_pad"] = int(a["count_include_pad"])
    if a["divisor_override"] is None:
        return "AveragePool", attrs, None
    # AveragePool counting the padding divides every window by kh*kw exactly when no window
    # hangs past the padding: then sum / d is that average times kh*kw / d
    plain = dict(a, count_include_pad=True, divisor_override=None)
    if not np.all(windows_of("avg", shape, plain)[2] == k[0] * k[1]):
        return ("has no ONNX form: divisor_override with a window that hangs past the "
                "padding (ceil_mode)")
    attrs["count_include_pad"] = 1
    return "AveragePool", attrs, k[0] * k[1] / float(a["divisor_override"])


def onnx_pool(name: str, attrs: dict, shape, dtype):
    """(ONNX op type, its attributes, a factor to multiply by or None) for a pooling op on an
    input of ``shape``, or a string saying why it has no ONNX form."""
    if name in ("max_pool2d", "adaptive_max_pool2d", "max_pool2d_indices") and \
            not dtype.is_float:
        return f"has no ONNX form for {dtype.name} input (MaxPool takes floats and 8-bit ints)"
    if "output_size" not in attrs:
        return _onnx_fixed(name, attrs, shape)
    (H, W), (oh, ow) = shape[2:], tuple(attrs["output_size"])
    kind = "Max" if "max" in name else "Average"
    if (oh, ow) == (1, 1) and name != "max_pool2d_indices":
        return f"Global{kind}Pool", {}, None
    if H % oh or W % ow:
        return (f"has no ONNX form: output_size {(oh, ow)} does not divide the input size "
                f"{(H, W)}, so its windows differ in size (ONNX pools use one window)")
    k = [H // oh, W // ow]
    return f"{kind}Pool", {"kernel_shape": k, "strides": k}, None


def onnx_resize(attrs: dict) -> dict:
    """The ONNX Resize attributes matching ``interpolate``'s PyTorch index formulas."""
    if attrs["mode"] == "nearest":
        return {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor"}
    if attrs["mode"] == "nearest-exact":
        # floor((dst + 0.5) / scale) is round-half-up of half_pixel's (dst + 0.5) / scale - 0.5
        return {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_ceil"}
    ctm = "align_corners" if attrs["align_corners"] else "half_pixel"
    return {"mode": "linear", "coordinate_transformation_mode": ctm}
