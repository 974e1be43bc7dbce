"""Convolution: ``unfold`` (im2col), ``fold`` (col2im), ``conv2d``, ``conv_transpose2d`` (native
records), ``conv1d`` (a front end over ``conv2d``) and ``conv3d``/``conv_transpose3d`` (front
ends over the 2-D records, see below), with PyTorch's argument conventions.

Every record keeps its padding as four pads ``(top, left, bottom, right)`` (ONNX's order), so
``padding="same"`` with an even kernel (PyTorch puts the odd pad at the end) and the gradients
of asymmetric convolutions stay one op.  The convolutions are lowered onto the kernel sets'
``im2col``/``col2im`` (or their batched layouts) and the gemm (``matmul``): without groups a
conv is ONE gemm ``W @ im2col_batched(x)`` for the batch, its (O, N, L) rows turned into NCHW
plus the bias by ``swap01``, a transposed conv ``col2im_batched(W.T @ x as rows)``; with groups
``W[g] @ im2col(x)[n, g]`` per sample and group.  Their gradients are written with catalogue
ops: each is the other's input gradient (conv2d's, at stride 1, the cheaper
full correlation with the flipped weight), and the weight gradient is the internal op
``conv2d_weight_grad`` (one gemm over batch and grid; it decomposes into ``g @ cols.T`` summed
over the batch), so they run on every device.  Capture records each as one op (no
decomposition), which ONNX exports as ``Conv``/``ConvTranspose``.
"""
from __future__ import annotations

import operator

import numpy as np

from ..dispatch import dispatch as run
from ..core.errors import ArgumentValueError, DeviceError, DTypeError, ShapeError
from ..kernel_sets import supports
from ..tensor import Tensor
from .args import tensor_arg
from .elementwise import add
from .linalg import matmul
from .rearrange import pad
from .reduce import sum
from ..core.registry import OpSpec, Plan, front_end, register
from .shape import cat, permute, reshape, transpose

__all__ = ["unfold", "fold", "conv1d", "conv2d", "conv_transpose2d", "conv3d", "conv_transpose3d"]


# --------------------------------------------------------------------------- arguments
def _ints(op, name, v, n, low):
    """``v`` (an int or a sequence of ``n`` ints, each >= ``low``) as an ``n``-tuple."""
    try:
        t = (operator.index(v),) * n if not isinstance(v, (tuple, list)) else \
            tuple(operator.index(e) for e in v)
    except TypeError:
        t = None
    if t is None or len(t) != n or any(e < low for e in t) or isinstance(v, bool):
        what = "positive" if low > 0 else "non-negative"
        raise ArgumentValueError(f"{op}: {name} must be a {what} int or a tuple of {n}, got {v!r}")
    return t


def _pads(op, padding, n=2):
    """Symmetric ``padding`` (int or ``n`` ints) as the (begins..., ends...) pads."""
    p = _ints(op, "padding", padding, n, 0)
    return p + p


def _same_pads(kernel, dilation):
    """PyTorch's ``padding="same"``: total ``d*(k-1)`` per axis, the odd pad at the end."""
    tot = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in tot) + tuple(t - t // 2 for t in tot)


def _conv_pads(op, padding, kernel, stride, dilation, n=2):
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * n)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ArgumentValueError(f"{op}: padding='same' is not supported for strided "
                                         f"convolutions (stride={stride})")
            return _same_pads(kernel, dilation)
        raise ArgumentValueError(f"{op}: padding must be 'valid', 'same', a non-negative int or a "
                                 f"tuple of {n}, got {padding!r}")
    return _pads(op, padding, n)


def _groups(op, groups):
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ArgumentValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return groups


# --------------------------------------------------------------------------- shape rules
def _float_dtype(op, *ts):
    """The operands' one float dtype (DTypeError naming them otherwise)."""
    names = ", ".join(t.dtype.name for t in ts)
    if any(not t.dtype.is_float for t in ts):
        raise DTypeError(f"{op}: only float32 and float64 are supported, got {names}")
    if any(t.dtype is not ts[0].dtype for t in ts):
        raise DTypeError(f"{op}: operands must have one dtype, got {names}")
    return ts[0].dtype


def _rank(op, what, t, n, layout):
    if len(t.shape) != n:
        raise ShapeError(f"{op}: {what} must be {n}-D {layout}, got shape {tuple(t.shape)}")


def grid_of(op, image, kernel, stride, pads, dilation) -> tuple:
    """(oh, ow): the output positions of a ``kernel`` window over the padded ``image`` (H, W);
    ShapeError when the dilated kernel is bigger than the padded image."""
    padded = tuple(n + pads[i] + pads[i + 2] for i, n in enumerate(image))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(s > p for s, p in zip(span, padded)):
        raise ShapeError(f"{op}: kernel of size {tuple(kernel)} with dilation {tuple(dilation)} "
                         f"is bigger than the padded input of size {padded}")
    return tuple((p - s) // st + 1 for p, s, st in zip(padded, span, stride))


def _infer_unfold(args, attrs):
    (x,) = args
    _rank("unfold", "input", x, 4, "(N, C, H, W)")
    dt = _float_dtype("unfold", x)
    k = attrs["kernel_size"]
    oh, ow = grid_of("unfold", x.shape[2:], k, attrs["stride"], attrs["padding"], attrs["dilation"])
    return Plan((x.shape[0], x.shape[1] * k[0] * k[1], oh * ow), dt, dt)


def _infer_fold(args, attrs):
    (x,) = args
    _rank("fold", "input", x, 3, "(N, C*kH*kW, L)")
    dt = _float_dtype("fold", x)
    k = attrs["kernel_size"]
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise ShapeError(f"fold: input of shape {tuple(x.shape)}: dimension 1 ({x.shape[1]}) is not "
                         f"divisible by the kernel's {K} positions (kernel_size {tuple(k)})")
    size = attrs["output_size"]
    oh, ow = grid_of("fold", size, k, attrs["stride"], attrs["padding"], attrs["dilation"])
    if x.shape[2] != oh * ow:
        raise ShapeError(f"fold: input of shape {tuple(x.shape)} has {x.shape[2]} blocks, but "
                         f"output_size {tuple(size)} with kernel_size {tuple(k)} gives "
                         f"{oh} x {ow} = {oh * ow}")
    return Plan((x.shape[0], x.shape[1] // K) + tuple(size), dt, dt)


def _check_weight(op, x, w, args, groups, in_axis, out_axis):
    """Channel and group checks shared by both convolutions; returns the output channels."""
    _rank(op, "input", x, 4, "(N, C, H, W)")
    layout = ("(out_channels, in_channels/groups, kH, kW)" if in_axis == 1
              else "(in_channels, out_channels/groups, kH, kW)")
    _rank(op, "weight", w, 4, layout)
    _float_dtype(op, *args)
    c, ws = x.shape[1], tuple(w.shape)
    if in_axis == 1 and ws[1] * groups != c:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has {c} channels, but weight of "
                         f"shape {ws} with groups={groups} expects {ws[1] * groups}")
    if in_axis == 0 and (ws[0] != c or c % groups):
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has {c} channels, but weight of "
                         f"shape {ws} expects {ws[0]} (its first dimension), divisible by "
                         f"groups={groups}")
    out = ws[0] if out_axis == 0 else ws[1] * groups
    if out_axis == 0 and ws[0] % groups:
        raise ShapeError(f"{op}: weight of shape {ws} has {ws[0]} output channels, which "
                         f"groups={groups} does not divide")
    if len(args) == 3 and tuple(args[2].shape) != (out,):
        raise ShapeError(f"{op}: bias must have shape ({out},) (the output channels), got "
                         f"{tuple(args[2].shape)}")
    return out


def _infer_conv2d(args, attrs):
    x, w = args[0], args[1]
    out = _check_weight("conv2d", x, w, args, attrs["groups"], 1, 0)
    grid = grid_of("conv2d", x.shape[2:], w.shape[2:], attrs["stride"], attrs["padding"],
                   attrs["dilation"])
    return Plan((x.shape[0], out) + grid, x.dtype, x.dtype)


def transpose_size(image, kernel, stride, pads, dilation, output_padding) -> tuple:
    """The output (H, W) of a transposed convolution of an ``image`` (H, W) input."""
    return tuple((n - 1) * s - pads[i] - pads[i + 2] + d * (k - 1) + op + 1
                 for i, (n, k, s, d, op) in enumerate(zip(image, kernel, stride, dilation,
                                                          output_padding)))


def _infer_conv_transpose2d(args, attrs):
    op = "conv_transpose2d"
    x, w = args[0], args[1]
    out = _check_weight(op, x, w, args, attrs["groups"], 0, 1)
    stride, dil, opad = attrs["stride"], attrs["dilation"], attrs["output_padding"]
    if any(p >= max(s, d) for p, s, d in zip(opad, stride, dil)):
        raise ArgumentValueError(f"{op}: output_padding {opad} must be smaller than either stride "
                                 f"{stride} or dilation {dil}")
    size = transpose_size(x.shape[2:], w.shape[2:], stride, attrs["padding"], dil, opad)
    if any(n < 1 for n in size):
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} with weight of shape "
                         f"{tuple(w.shape)} gives an empty output of size {size}")
    return Plan((x.shape[0], out) + size, x.dtype, x.dtype)


# --------------------------------------------------------------------------- lowerings
def _window(attrs):
    """(stride, leading pads, dilation) as the kernel sets take them."""
    return attrs["stride"], attrs["padding"][:2], attrs["dilation"]


def _kernel_unfold(ks, p, args, attrs, plan, device):
    k = attrs["kernel_size"]
    grid = grid_of("unfold", args[0].shape[2:], k, attrs["stride"], attrs["padding"],
                   attrs["dilation"])
    return ks.im2col(p[0], k, *_window(attrs), grid)


def _kernel_fold(ks, p, args, attrs, plan, device):
    k, size = attrs["kernel_size"], attrs["output_size"]
    grid = grid_of("fold", size, k, attrs["stride"], attrs["padding"], attrs["dilation"])
    return ks.col2im(p[0], plan.shape[1:], k, *_window(attrs), grid)


def _grouped_weight(ks, w, n, groups, rows, cols):
    """Weight payload ``w`` as the left operand of a (n*groups)-batched matmul: (1, rows, cols)
    for one group (a broadcast batch), else each group's (rows, cols) block repeated per
    sample (a copy of the weight, n times: weights are small)."""
    if groups == 1:
        return ks.reshape(w, (1, rows, cols))
    g4 = ks.reshape(w, (1, groups, rows, cols))
    return ks.reshape(ks.expand(g4, (n, groups, rows, cols)), (n * groups, rows, cols))


def _add_bias(ks, y, b, channels, dt):
    return ks.binary("add", y, ks.reshape(b, (1, channels, 1, 1)), dt.np, dt.np)


def _rows(ks, x, n, c, length):
    """(n, c, length...) payload ``x`` as contiguous (1, c, n*length) gemm rows."""
    return ks.reshape(ks.swap01(ks.reshape(x, (n, c, length))), (1, c, n * length))


def _kernel_conv2d(ks, p, args, attrs, plan, device):
    w = args[1]
    n, o, oh, ow = plan.shape
    groups = attrs["groups"]
    kh, kw = w.shape[2:]
    if groups == 1:
        # Y (O, N*L) = W (O, C*kh*kw) @ cols (C*kh*kw, N*L): ONE gemm for the batch (the
        # batched columns put the samples side by side), written as NCHW + bias
        return ks.conv2d_gemm(p[0], p[1], p[2] if len(args) == 3 else None, *_window(attrs),
                              (oh, ow))
    # y[n, g] = W[g] (O/G, C/G*kh*kw) @ cols[n, g] (C/G*kh*kw, L): one batched gemm
    cols = ks.im2col(p[0], (kh, kw), *_window(attrs), (oh, ow))
    kg = w.shape[1] * kh * kw
    a = _grouped_weight(ks, p[1], n, groups, o // groups, kg)
    b = ks.reshape(cols, (n * groups, kg, oh * ow))
    y = ks.reshape(ks.matmul(a, b), plan.shape)
    return _add_bias(ks, y, p[2], o, plan.dtype) if len(args) == 3 else y


def _kernel_conv_transpose2d(ks, p, args, attrs, plan, device):
    # cols[n, g] = W[g].T (O/G*kh*kw, C/G) @ x[n, g] (C/G, H*W), then col2im onto the output
    x, w = args[0], args[1]
    n, c, h, wd = x.shape
    groups = attrs["groups"]
    o = plan.shape[1]
    kh, kw = w.shape[2:]
    rows = (o // groups) * kh * kw
    cg = c // groups
    if groups == 1:
        # cols (O*kh*kw, N*H*W) = W.T (a strided view: the gemm reads it so) @ x as rows
        # (C, N*H*W): ONE gemm for the batch, then the batched col2im
        a = ks.permute(ks.reshape(p[1], (1, cg, rows)), (0, 2, 1))
        cols = ks.matmul(a, _rows(ks, p[0], n, c, h * wd))
        y = ks.col2im_batched(ks.reshape(cols, (rows, n * h * wd)), n, plan.shape[1:], (kh, kw),
                              *_window(attrs), (h, wd))
        return _add_bias(ks, y, p[2], o, plan.dtype) if len(args) == 3 else y
    wt = ks.permute(ks.reshape(p[1], (1, groups, cg, rows)), (0, 1, 3, 2))
    a = ks.reshape(ks.expand(wt, (n, groups, rows, cg)), (n * groups, rows, cg))
    cols = ks.matmul(a, ks.reshape(p[0], (n * groups, cg, h * wd)))
    cols = ks.reshape(cols, (n, o * kh * kw, h * wd))
    y = ks.col2im(cols, plan.shape[1:], (kh, kw), *_window(attrs), (h, wd))
    return _add_bias(ks, y, p[2], o, plan.dtype) if len(args) == 3 else y


def _infer_conv2d_weight_grad(args, attrs):
    op = "conv2d_weight_grad"
    x, g = args
    _rank(op, "input", x, 4, "(N, C, H, W)")
    _rank(op, "gradient", g, 4, "(N, O, oH, oW)")
    dt = _float_dtype(op, x, g)
    groups = attrs["groups"]
    k = attrs["kernel_size"]
    grid = grid_of(op, x.shape[2:], k, attrs["stride"], attrs["padding"], attrs["dilation"])
    if g.shape[0] != x.shape[0] or tuple(g.shape[2:]) != grid or x.shape[1] % groups \
            or g.shape[1] % groups:
        raise ShapeError(f"{op}: gradient of shape {tuple(g.shape)} does not match the output of "
                         f"a convolution of the input of shape {tuple(x.shape)} (grid {grid}, "
                         f"groups={groups})")
    return Plan((g.shape[1], x.shape[1] // groups) + tuple(k), dt, dt)


def _kernel_conv2d_weight_grad(ks, p, args, attrs, plan, device):
    # gW (O, C*kh*kw) = g as rows (O, N*L) @ cols.T (N*L, C*kh*kw): ONE gemm reducing over
    # the batch and the grid (per group: a batch of G)
    x, g = args
    n, o = g.shape[:2]
    length = g.shape[2] * g.shape[3]
    groups = attrs["groups"]
    if groups == 1:
        return ks.reshape(ks.conv2d_weight_gemm(p[0], p[1], attrs["kernel_size"],
                                                *_window(attrs)), plan.shape)
    cols = ks.im2col_batched(p[0], attrs["kernel_size"], *_window(attrs), tuple(g.shape[2:]))
    k = cols.shape[0]
    gt = ks.reshape(_rows(ks, p[1], n, o, length), (groups, o // groups, n * length))
    ct = ks.permute(ks.reshape(cols, (groups, k // groups, n * length)), (0, 2, 1))
    return ks.reshape(ks.matmul(gt, ct), plan.shape)


def _decompose_conv2d_weight_grad(args, attrs):
    x, g = args
    n, o = g.shape[:2]
    cols = run("unfold", (x,), {k: attrs[k] for k in ("kernel_size", "dilation", "padding",
                                                        "stride")})
    shape = (o, x.shape[1] // attrs["groups"]) + tuple(attrs["kernel_size"])
    return _weight_grad(reshape(g, (n, o, g.shape[2] * g.shape[3])), cols, attrs["groups"], shape)


# --------------------------------------------------------------------------- gradients
def _window_attrs(attrs, kernel):
    return {"kernel_size": tuple(kernel), "dilation": attrs["dilation"],
            "padding": attrs["padding"], "stride": attrs["stride"]}


def _grad_unfold(c, g):
    x = c.input(0)
    return (run("fold", (g,), dict(c.attrs, output_size=tuple(x.shape[2:]))),)


def _grad_fold(c, g):
    return (run("unfold", (g,), {k: v for k, v in c.attrs.items() if k != "output_size"}),)


def _weight_grad(g, cols, groups, shape):
    """The weight gradient ``sum_n g[n, gr] @ cols[n, gr].T`` with ``g`` (N, A, L) and
    ``cols`` (N, B, L) split into ``groups`` along A and B: (groups * A/G, B/G) as ``shape``."""
    n, a, length = g.shape
    if groups > 1:
        g = reshape(g, (n, groups, a // groups, length))
        cols = reshape(cols, (n, groups, cols.shape[1] // groups, length))
    return reshape(sum(matmul(g, transpose(cols, -1, -2)), axis=0), shape)


def _output_padding(image, grid, kernel, attrs):
    """The output_padding that makes the transposed conv of a ``grid`` output give ``image``."""
    base = transpose_size(grid, kernel, attrs["stride"], attrs["padding"], attrs["dilation"],
                          (0, 0))
    return tuple(i - b for i, b in zip(image, base))


def _bias_grad(c, g):
    return sum(g, axis=(0, 2, 3)) if c.arity == 3 and c.needs(2) else None


def _input_grad(g, w, x_shape, attrs):
    """conv2d's input gradient: the transposed conv of ``g``; at stride 1 (where no pad
    exceeds the kernel's reach) the same values as a full correlation of ``g`` with the
    flipped weight, channels swapped per group: one conv2d -- on cpu an implicit gemm reducing
    over O*kh*kw -- instead of a gemm over O writing kh*kw times the image, then col2im
    (the faster form, by most on large images)."""
    stride, pads, dil, groups = attrs["stride"], attrs["padding"], attrs["dilation"], attrs["groups"]
    o, cg, kh, kw = w.shape
    full = (dil[0] * (kh - 1), dil[1] * (kw - 1))
    fpads = tuple(full[i % 2] - pads[i] for i in range(4))
    if stride != (1, 1) or min(fpads) < 0:
        opad = _output_padding(x_shape[2:], g.shape[2:], (kh, kw), attrs)
        return run("conv_transpose2d", (g, w), dict(attrs, output_padding=opad))
    if groups == 1:
        # one view op, not three (reshape, permute, reshape): the weight is prepared in
        # fewer dispatches on every input-gradient call
        swapped = permute(w, (1, 0, 2, 3))
    else:
        swapped = reshape(permute(reshape(w, (groups, o // groups, cg, kh, kw)), (0, 2, 1, 3, 4)),
                          (groups * cg, o // groups, kh, kw))
    flipped = swapped[:, :, ::-1, ::-1]
    return run("conv2d", (g, flipped), dict(attrs, padding=fpads))


def _grad_conv2d(c, g):
    x, w = c.input(0), c.input(1)
    attrs = c.attrs
    kernel = w.shape[2:]
    gx = gw = None
    # the weight gradient first: on cpu it takes the row-shifted copy of x that the forward
    # left (``jit_kernels.cpu.conv._take_shifted``) before the input gradient's own conv
    # leaves one of g, which could push it out
    if c.needs(1):
        gw = run("conv2d_weight_grad", (x, g), dict(_window_attrs(attrs, kernel),
                                                    groups=attrs["groups"]))
    if c.needs(0):
        gx = _input_grad(g, w, x.shape, attrs)
    return gx, gw, _bias_grad(c, g)


def _grad_conv_transpose2d(c, g):
    # conv2d of g reads g exactly where the transposed conv wrote x; an output_padding of a
    # stride or more adds rows/columns past x's grid, which are sliced off
    x, w = c.input(0), c.input(1)
    attrs = {k: v for k, v in c.attrs.items() if k != "output_padding"}
    n, cin, h, wd = x.shape
    gx = gw = None
    if c.needs(0):
        gx = run("conv2d", (g, w), attrs)
        if gx.shape[2:] != (h, wd):
            gx = gx[:, :, :h, :wd]
    if c.needs(1):
        grid = grid_of("conv_transpose2d", g.shape[2:], w.shape[2:], attrs["stride"],
                       attrs["padding"], attrs["dilation"])
        if grid == (h, wd):     # conv2d's weight gradient with g as its input, x as its g
            gw = run("conv2d_weight_grad", (g, x), dict(_window_attrs(attrs, w.shape[2:]),
                                                        groups=attrs["groups"]))
            return gx, gw, _bias_grad(c, g)
        cols = run("unfold", (g,), _window_attrs(attrs, w.shape[2:]))
        if grid != (h, wd):
            cols = reshape(reshape(cols, (n, cols.shape[1]) + grid)[:, :, :h, :wd],
                           (n, cols.shape[1], h * wd))
        gw = _weight_grad(reshape(x, (n, cin, h * wd)), cols, attrs["groups"], w.shape)
    return gx, gw, _bias_grad(c, g)


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_window(op, kernel) -> dict:
    a = op.attrs
    return {"kernel_shape": list(kernel), "strides": list(a["stride"]),
            "pads": list(a["padding"]), "dilations": list(a["dilation"])}


def _onnx_conv2d(ex, op) -> str:
    w = op.inputs[1]
    return ex.node(ex.record(op), [ex.names[t.id] for t in op.inputs],
                   group=int(op.attrs["groups"]), **_onnx_window(op, w.shape[2:]))


def _onnx_conv_transpose2d(ex, op) -> str:
    w = op.inputs[1]
    return ex.node(ex.record(op), [ex.names[t.id] for t in op.inputs],
                   group=int(op.attrs["groups"]), output_padding=list(op.attrs["output_padding"]),
                   **_onnx_window(op, w.shape[2:]))


def _onnx_one_hot_kernel(ex, channels, kernel, dt) -> str:
    """Weights (channels*kh*kw, 1, kh, kw) whose output channel c*kh*kw + i*kw + j picks
    kernel position (i, j) of input channel c: im2col as a grouped ``Conv``."""
    kh, kw = kernel
    eye = np.eye(kh * kw, dtype=dt.np).reshape(kh * kw, 1, kh, kw)
    return ex.const(np.tile(eye, (channels, 1, 1, 1)))


def _onnx_unfold(ex, op) -> str:
    # a grouped Conv with one-hot weights, its (N, C*kh*kw, oh, ow) output flattened
    (xt,) = op.inputs
    k = op.attrs["kernel_size"]
    c = xt.shape[1]
    y = ex.node("Conv", [ex.names[xt.id], _onnx_one_hot_kernel(ex, c, k, xt.dtype)],
                group=int(c), **_onnx_window(op, k))
    return ex.reshape(y, op.outputs[0].shape)


def _onnx_fold(ex, op) -> str:
    # the adjoint: a grouped ConvTranspose with the same one-hot weights; output_padding
    # gives back the rows/columns the window's stride never reached
    (xt,) = op.inputs
    a = op.attrs
    k, size = a["kernel_size"], a["output_size"]
    n, ck, _ = xt.shape
    c = ck // (k[0] * k[1])
    pads, st, dil = a["padding"], a["stride"], a["dilation"]
    grid = [(size[i] + pads[i] + pads[i + 2] - dil[i] * (k[i] - 1) - 1) // st[i] + 1
            for i in range(2)]
    opad = [size[i] - ((grid[i] - 1) * st[i] - pads[i] - pads[i + 2] + dil[i] * (k[i] - 1) + 1)
            for i in range(2)]
    x = ex.reshape(ex.names[xt.id], [n, ck] + grid)
    return ex.node("ConvTranspose", [x, _onnx_one_hot_kernel(ex, c, k, xt.dtype)], group=int(c),
                   output_padding=opad, **_onnx_window(op, k))


# unfold and fold export as compositions (no one ONNX operator): their ``onnx`` is the lowering
register(OpSpec("unfold", "conv", _infer_unfold, _kernel_unfold, backward=_grad_unfold,
                onnx=_onnx_unfold))
register(OpSpec("fold", "conv", _infer_fold, _kernel_fold, backward=_grad_fold, onnx=_onnx_fold))
register(OpSpec("conv2d", "conv", _infer_conv2d, _kernel_conv2d, cost="compute",
                backward=_grad_conv2d, onnx="Conv", onnx_lower=_onnx_conv2d))
register(OpSpec("conv2d_weight_grad", "conv", _infer_conv2d_weight_grad,
                _kernel_conv2d_weight_grad, cost="compute",
                decompose=_decompose_conv2d_weight_grad, record_whole=True))
register(OpSpec("conv_transpose2d", "conv", _infer_conv_transpose2d, _kernel_conv_transpose2d,
                cost="compute", backward=_grad_conv_transpose2d, onnx="ConvTranspose",
                onnx_lower=_onnx_conv_transpose2d))


# --------------------------------------------------------------------------- Winograd (compile)
# ``conv2d`` with a constant 3x3 weight at stride 1 as ``conv2d_winograd(x,
# winograd_weight(w)[, b])``: made by graph.compile only (``runtime.capture.winograd``), which
# folds ``winograd_weight`` of the constant; where the conv's only reader is a 2x2
# ``max_pool2d_relu``, ``pool=True`` takes that too.  Captured graphs, replay and ONNX keep conv2d.
_WINOGRAD_ONLY = ("made by graph.compile only (inference); the captured graph it comes from "
                  "keeps conv2d")


def _infer_winograd_weight(args, attrs):
    w = args[0]
    if not w.dtype.is_float:
        raise DTypeError(f"winograd_weight: weight must be float32 or float64, got {w.dtype.name}")
    if len(w.shape) != 4 or tuple(w.shape[2:]) != (3, 3):
        raise ShapeError(f"winograd_weight: weight must be (O, C, 3, 3), got {tuple(w.shape)}")
    return Plan((16, w.shape[0], w.shape[1]), w.dtype, w.dtype)


def _winograd_kernel(ks, name, device):
    """The kernel set's ``name``, or a ``DeviceError`` (a graph file may name the op on any
    device; only kernel sets whose compile makes it have it)."""
    if not supports(ks, "winograd"):
        raise DeviceError(f"{name}: {device} has no Winograd kernels (graph.compile makes this op "
                          f"on cpu only); run the graph the op was compiled from")
    return getattr(ks, name)


def _kernel_winograd_weight(ks, p, args, attrs, plan, device):
    return _winograd_kernel(ks, "winograd_weight", device)(p[0])


def _pair(op, name, v, low):
    if (not isinstance(v, tuple) or len(v) != 2
            or not all(type(k) is int and k >= low for k in v)):
        raise ArgumentValueError(f"{op}: {name} must be a pair of ints >= {low}, got {v!r}")
    return v


def _infer_conv2d_winograd(args, attrs):
    op = "conv2d_winograd"
    x, u = args[0], args[1]
    pt, pl = _pair(op, "padding", attrs.get("padding"), 0)
    oh, ow = _pair(op, "grid", attrs.get("grid"), 1)
    pool = attrs.get("pool")
    if type(pool) is not bool:
        raise ArgumentValueError(f"{op}: pool must be a bool, got {pool!r}")
    if not x.dtype.is_float or u.dtype is not x.dtype:
        raise DTypeError(f"{op}: input and transformed weight must share a float dtype, got "
                         f"{x.dtype.name} and {u.dtype.name}")
    if len(x.shape) != 4 or len(u.shape) != 3 or u.shape[0] != 16 or u.shape[2] != x.shape[1]:
        raise ShapeError(f"{op}: input (N, C, H, W) and transformed weight (16, O, C) expected, "
                         f"got {tuple(x.shape)} and {tuple(u.shape)}")
    # the grid of a 3x3 stride-1 conv with these leading pads and trailing pads of at most 2
    H, W = x.shape[2:]
    if not (H + pt - 2 <= oh <= H + pt) or not (W + pl - 2 <= ow <= W + pl):
        raise ShapeError(f"{op}: grid {(oh, ow)} is not a 3x3 conv's of a {(H, W)} input with "
                         f"leading pads {(pt, pl)}")
    if pool and (oh % 2 or ow % 2):
        raise ShapeError(f"{op}: pool=True needs an even grid, got {(oh, ow)}")
    if len(args) == 3 and (tuple(args[2].shape) != (u.shape[1],) or args[2].dtype is not x.dtype):
        raise ShapeError(f"{op}: bias must be ({u.shape[1]},) {x.dtype.name}, got "
                         f"{tuple(args[2].shape)} {args[2].dtype.name}")
    grid = (oh // 2, ow // 2) if pool else (oh, ow)
    return Plan((x.shape[0], u.shape[1]) + grid, x.dtype, x.dtype)


def _kernel_conv2d_winograd(ks, p, args, attrs, plan, device):
    return _winograd_kernel(ks, "conv2d_winograd", device)(
        p[0], p[1], p[2] if len(args) == 3 else None, attrs["padding"], attrs["grid"],
        attrs["pool"])


register(OpSpec("winograd_weight", "conv", _infer_winograd_weight, _kernel_winograd_weight,
                cost="compute", differentiable=False, onnx_skip=_WINOGRAD_ONLY))
register(OpSpec("conv2d_winograd", "conv", _infer_conv2d_winograd, _kernel_conv2d_winograd,
                cost="compute", differentiable=False, onnx_skip=_WINOGRAD_ONLY))


# --------------------------------------------------------------------------- front ends
def _window_args(op, kernel_size, dilation, padding, stride):
    return {"kernel_size": _ints(op, "kernel_size", kernel_size, 2, 1),
            "dilation": _ints(op, "dilation", dilation, 2, 1),
            "padding": _pads(op, padding), "stride": _ints(op, "stride", stride, 2, 1)}


_LAYOUTS = {"unfold": "(N, C, H, W)", "fold": "(N, C*kH*kW, L)", "conv1d": "(N, C, L)",
            "conv2d": "(N, C, H, W)", "conv_transpose2d": "(N, C, H, W)",
            "conv3d": "(N, C, D, H, W)", "conv_transpose3d": "(N, C, D, H, W)"}


def _batched(op, x, rank, fn):
    """``fn(x)`` for a batched input; an unbatched one (one dim less) as a batch of one."""
    x = tensor_arg(op, x)
    if x.ndim not in (rank - 1, rank):
        raise ShapeError(f"{op}: input must be {rank}-D {_LAYOUTS[op]} (or {rank - 1}-D unbatched), "
                         f"got shape {tuple(x.shape)}")
    if x.ndim == rank - 1:
        y = fn(reshape(x, (1,) + x.shape))
        return reshape(y, y.shape[1:])
    return fn(x)


@front_end
def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks (im2col, ``F.unfold``): (N, C, H, W) -> (N, C*kH*kW, L)."""
    attrs = _window_args("unfold", kernel_size, dilation, padding, stride)
    return _batched("unfold", input, 4, lambda x: run("unfold", (x,), attrs))


@front_end
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The blocks of ``unfold`` summed back into an image (col2im, ``F.fold``):
    (N, C*kH*kW, L) -> (N, C, *output_size)."""
    attrs = _window_args("fold", kernel_size, dilation, padding, stride)
    attrs["output_size"] = _ints("fold", "output_size", output_size, 2, 1)
    return _batched("fold", input, 3, lambda x: run("fold", (x,), attrs))


def _operands(op, weight, bias):
    w = tensor_arg(op, weight)
    if bias is None:
        return (w,)
    return (w, tensor_arg(op, bias))


@front_end
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) with weight (O, C/groups, kH, kW),
    as ``torch.nn.functional.conv2d``; ``padding`` int, pair, ``"valid"`` or ``"same"``."""
    op = "conv2d"
    ws = _operands(op, weight, bias)
    stride = _ints(op, "stride", stride, 2, 1)
    dilation = _ints(op, "dilation", dilation, 2, 1)
    kernel = tuple(ws[0].shape[2:]) if ws[0].ndim == 4 else (1, 1)
    attrs = {"stride": stride, "padding": _conv_pads(op, padding, kernel, stride, dilation),
             "dilation": dilation, "groups": _groups(op, groups)}
    return _batched(op, input, 4, lambda x: run(op, (x,) + ws, attrs))


@front_end
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D convolution of (N, C, L) with weight (O, C/groups, k), as
    ``torch.nn.functional.conv1d``: a ``conv2d`` over a height of 1."""
    op = "conv1d"
    w = tensor_arg(op, weight)
    if w.ndim != 3:
        raise ShapeError(f"{op}: weight must be 3-D (out_channels, in_channels/groups, kL), got "
                         f"shape {tuple(w.shape)}")
    (s,), (d,) = _ints(op, "stride", stride, 1, 1), _ints(op, "dilation", dilation, 1, 1)
    if isinstance(padding, str):
        padding = _conv_pads(op, padding, w.shape[2:], (s,), (d,), 1)
    else:
        padding = _pads(op, padding, 1)
    pads = (0, padding[0], 0, padding[1])
    w2 = reshape(w, (w.shape[0], w.shape[1], 1, w.shape[2]))

    def conv(x):
        attrs = {"stride": (1, s), "padding": pads, "dilation": (1, d), "groups": _groups(op, groups)}
        ws = (w2,) if bias is None else (w2, tensor_arg(op, bias))
        _float_dtype(op, x, *ws)            # (named conv1d, not the conv2d record's rule)
        y = run("conv2d", (reshape(x, x.shape[:2] + (1, x.shape[2])),) + ws, attrs)
        return reshape(y, y.shape[:2] + (y.shape[3],))
    return _batched(op, input, 3, conv)


@front_end
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """2-D transposed convolution (the gradient of ``conv2d`` w.r.t. its input) of
    (N, C, H, W) with weight (C, O/groups, kH, kW), as ``torch.nn.functional.conv_transpose2d``."""
    op = "conv_transpose2d"
    ws = _operands(op, weight, bias)
    attrs = {"stride": _ints(op, "stride", stride, 2, 1), "padding": _pads(op, padding),
             "output_padding": _ints(op, "output_padding", output_padding, 2, 0),
             "dilation": _ints(op, "dilation", dilation, 2, 1), "groups": _groups(op, groups)}
    return _batched(op, input, 4, lambda x: run(op, (x,) + ws, attrs))


# --------------------------------------------------------------------------- 3-D
# conv3d and conv_transpose3d are written with the 2-D records on 4-D views (no kernels of
# their own and no new array ranks, so nothing new to compile): conv3d gathers the kd depth
# taps of every output depth as channels, (N*oD, G*kd*C/G, H, W), and runs ONE grouped conv2d
# with the weight's taps laid out alike; conv_transpose3d runs ONE conv_transpose2d over the
# N*D depth slices with the kd taps as extra output channels, then ``fold`` adds the taps into
# the output depths (col2im along D).  Their gradients, capture and ONNX export are those of
# the parts.
def _check_weight3d(op, x, w, groups, transposed):
    if x.ndim != 5:
        raise ShapeError(f"{op}: input must be 5-D (N, C, D, H, W) (or 4-D unbatched), got "
                         f"shape {tuple(x.shape)}")
    c, ws = x.shape[1], tuple(w.shape)
    if transposed:
        if ws[0] != c or c % groups:
            raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has {c} channels, but "
                             f"weight of shape {ws} expects {ws[0]} (its first dimension), "
                             f"divisible by groups={groups}")
    elif ws[1] * groups != c or ws[0] % groups:
        raise ShapeError(f"{op}: input of shape {tuple(x.shape)} has {c} channels, but weight "
                         f"of shape {ws} with groups={groups} expects {ws[1] * groups} (and "
                         f"{ws[0]} output channels divisible by groups)")


def _weight5d(op, weight, layout):
    w = tensor_arg(op, weight)
    if w.ndim != 5:
        raise ShapeError(f"{op}: weight must be 5-D {layout}, got shape {tuple(w.shape)}")
    return w


def _bias3d(op, bias, out):
    if bias is None:
        return None
    b = tensor_arg(op, bias)
    if tuple(b.shape) != (out,):
        raise ShapeError(f"{op}: bias must have shape ({out},) (the output channels), got "
                         f"{tuple(b.shape)}")
    return b


@front_end
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """3-D convolution of (N, C, D, H, W) with weight (O, C/groups, kD, kH, kW), as
    ``torch.nn.functional.conv3d`` (``padding`` int, triple, ``"valid"`` or ``"same"``): the
    depth taps gathered as channels, then one grouped ``conv2d``."""
    op = "conv3d"
    w = _weight5d(op, weight, "(out_channels, in_channels/groups, kD, kH, kW)")
    stride, dilation = _ints(op, "stride", stride, 3, 1), _ints(op, "dilation", dilation, 3, 1)
    groups = _groups(op, groups)
    pads = _conv_pads(op, padding, w.shape[2:], stride, dilation, 3)
    b = _bias3d(op, bias, w.shape[0])

    def conv(x):
        _check_weight3d(op, x, w, groups, False)
        o, cg, kd, kh, kw = w.shape
        n, c, depth, h, wd = x.shape
        sd, dd = stride[0], dilation[0]
        padded = (depth + pads[0] + pads[3], h + pads[1] + pads[4], wd + pads[2] + pads[5])
        if any(d * (k - 1) + 1 > p for k, d, p in zip(w.shape[2:], dilation, padded)):
            raise ShapeError(f"{op}: kernel of size {tuple(w.shape[2:])} with dilation "
                             f"{dilation} is bigger than the padded input of size {padded}")
        od = (padded[0] - dd * (kd - 1) - 1) // sd + 1
        # 4-D throughout (the kernels already built for the 2-D ops): (N, C, D, H*W)
        x4 = reshape(x, (n, c, depth, h * wd))
        if pads[0] or pads[3]:
            x4 = pad(x4, (0, 0, pads[0], pads[3]))
        # one (N, oD, C/G, H*W) block per (group, tap), side by side as channels
        blocks = [permute(x4[:, g * cg:(g + 1) * cg, t * dd:t * dd + sd * (od - 1) + 1:sd],
                          (0, 2, 1, 3)) for g in range(groups) for t in range(kd)]
        x2 = reshape(cat(blocks, 2) if len(blocks) > 1 else blocks[0],
                     (n * od, groups * kd * cg, h, wd))
        w2 = reshape(permute(reshape(w, (o, cg, kd, kh * kw)), (0, 2, 1, 3)), (o, kd * cg, kh, kw))
        attrs = {"stride": stride[1:], "padding": pads[1:3] + pads[4:], "dilation": dilation[1:],
                 "groups": groups}
        y = run("conv2d", (x2, w2) + (() if b is None else (b,)), attrs)
        oh, ow = y.shape[2:]
        y = permute(reshape(y, (n, od, o, oh * ow)), (0, 2, 1, 3))
        return reshape(y, (n, o, od, oh, ow))
    return _batched(op, input, 5, conv)


@front_end
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """3-D transposed convolution (the gradient of ``conv3d`` w.r.t. its input) of
    (N, C, D, H, W) with weight (C, O/groups, kD, kH, kW), as
    ``torch.nn.functional.conv_transpose3d``: one ``conv_transpose2d`` over the depth slices,
    the depth taps as channels, summed into the output depths by ``fold``."""
    op = "conv_transpose3d"
    w = _weight5d(op, weight, "(in_channels, out_channels/groups, kD, kH, kW)")
    stride, dilation = _ints(op, "stride", stride, 3, 1), _ints(op, "dilation", dilation, 3, 1)
    padding = _ints(op, "padding", padding, 3, 0)
    opad = _ints(op, "output_padding", output_padding, 3, 0)
    groups = _groups(op, groups)
    if any(p >= max(s, d) for p, s, d in zip(opad, stride, dilation)):
        raise ArgumentValueError(f"{op}: output_padding {opad} must be smaller than either "
                                 f"stride {stride} or dilation {dilation}")
    b = _bias3d(op, bias, w.shape[1] * groups)

    def conv(x):
        _check_weight3d(op, x, w, groups, True)
        c, og, kd, kh, kw = w.shape
        n, _, depth, h, wd = x.shape
        sd, pd, dd = stride[0], padding[0], dilation[0]
        out_d = (depth - 1) * sd - 2 * pd + dd * (kd - 1) + opad[0] + 1
        if out_d < 1:
            raise ShapeError(f"{op}: input of shape {tuple(x.shape)} with weight of shape "
                             f"{tuple(w.shape)} gives an empty output depth {out_d}")
        # 4-D throughout: the depth slices as a batch, the weight's taps as output channels
        # (group, channel, tap) -- a plain reshape of the weight
        x2 = reshape(permute(reshape(x, (n, c, depth, h * wd)), (0, 2, 1, 3)),
                     (n * depth, c, h, wd))
        z = conv_transpose2d(x2, reshape(w, (c, og * kd, kh, kw)), None, stride[1:], padding[1:],
                             opad[1:], groups, dilation[1:])
        oh, ow = z.shape[2:]
        # fold's blocks: a (kD, 1) window over the (out depth, oH*oW) image, one block per
        # (input depth, output position); an output_padding past a stride adds empty blocks
        z = permute(reshape(z, (n, depth, groups * og * kd, oh * ow)), (0, 2, 1, 3))
        blocks = ((depth - 1) * sd + opad[0]) // sd + 1
        if blocks > depth:
            z = pad(z, (0, 0, 0, blocks - depth))
        y = fold(reshape(z, (n, groups * og * kd, blocks * oh * ow)), (out_d, oh * ow),
                 (kd, 1), (dd, 1), (pd, 0), (sd, 1))
        if b is not None:
            y = add(y, reshape(b, (1, groups * og, 1, 1)))
        return reshape(y, (n, groups * og, out_d, oh, ow))
    return _batched(op, input, 5, conv)
