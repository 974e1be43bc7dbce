"""Shape ops: ``reshape``, ``permute``, ``expand`` (views) and ``cat``, with the front-end sugar
built on them (``transpose``, ``squeeze``, ``flatten``, ``stack``, ``split``, ...)."""
from __future__ import annotations

import builtins as _b
import operator

from ..dispatch import dispatch as run, dispatch_view
from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ShapeError
from ..tensor import Tensor
from .args import check_size, int_arg, shape_arg, tensor_arg, torch_alias
from ..core.registry import OpSpec, Plan, front_end, register
from ..core.shapes import normalize_axes, normalize_axis, prod, resolve_reshape



# --------------------------------------------------------------------------- records
def _infer_reshape(args, attrs):
    dt = args[0].dtype
    return Plan(tuple(attrs["shape"]), dt, dt)


def _infer_permute(args, attrs):
    x = args[0]
    return Plan(tuple(x.shape[a] for a in attrs["axes"]), x.dtype, x.dtype)


def _infer_expand(args, attrs):
    x = args[0]
    shape = tuple(attrs["shape"])
    check_size("expand", shape)
    _check_expand("expand", x.shape, shape)
    return Plan(shape, x.dtype, x.dtype)


def _check_expand(op, xshape, shape) -> None:
    """ShapeError naming ``op`` unless ``xshape`` broadcasts to ``shape``."""
    if len(shape) < len(xshape):
        raise ShapeError(f"{op}: cannot expand shape {xshape} to {shape} with fewer dimensions")
    for have, want in zip(reversed(xshape), reversed(shape)):
        if have != want and have != 1:
            raise ShapeError(f"{op}: cannot expand shape {xshape} to {shape}")


def _infer_cat(args, attrs):
    if not args:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    axis = attrs["axis"]
    first = args[0]
    dt = first.dtype
    size = 0
    for t in args:
        if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape))
                                       if i != axis):
            raise ShapeError(f"cat: shapes {', '.join(str(a.shape) for a in args)} differ outside "
                             f"axis {axis}")
        size += t.shape[axis]
        dt = D.promote(dt, t.dtype, "cat")
    return Plan(first.shape[:axis] + (size,) + first.shape[axis + 1:], dt, dt)


def _kernel_cat(ks, p, args, attrs, plan, device):
    ps = [ks.cast(q, plan.dtype.np) if a.dtype is not plan.dtype else q for q, a in zip(p, args)]
    return ks.cat(ps, attrs["axis"])


def _grad_reshape(c, g):
    return (reshape(g, c.input_shape(0)),)


def _grad_permute(c, g):
    axes = c.attrs["axes"]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (permute(g, tuple(inverse)),)


def _grad_expand(c, g):
    return (g,)                             # the tape sums over the expanded dimensions


def _grad_cat(c, g):
    axis = c.attrs["axis"]
    sizes = [c.input_shape(i)[axis] for i in range(c.arity)]
    parts = split(g, sizes, axis)
    return tuple(p if c.needs(i) else None for i, p in enumerate(parts))


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_reshape(ex, op) -> str:
    return ex.node(ex.record(op), [ex.names[op.inputs[0].id], ex.i64(list(op.attrs["shape"]))],
                   allowzero=1)


def _onnx_permute(ex, op) -> str:
    return ex.node(ex.record(op), [ex.names[op.inputs[0].id]],
                   perm=[int(a) for a in op.attrs["axes"]])


def _onnx_expand(ex, op) -> str:
    return ex.node(ex.record(op), [ex.names[op.inputs[0].id], ex.i64(list(op.attrs["shape"]))])


def _onnx_cat(ex, op) -> str:
    out = op.outputs[0].dtype
    return ex.node(ex.record(op), [ex.operand(t, out) for t in op.inputs],
                   axis=int(op.attrs["axis"]))


register(OpSpec("reshape", "shape", _infer_reshape,
                lambda ks, p, a, at, plan, dev: ks.reshape(p[0], tuple(at["shape"])),
                backward=_grad_reshape, onnx="Reshape", onnx_lower=_onnx_reshape, moves_only=True))
register(OpSpec("permute", "shape", _infer_permute,
                lambda ks, p, a, at, plan, dev: ks.permute(p[0], tuple(at["axes"])),
                backward=_grad_permute, onnx="Transpose", onnx_lower=_onnx_permute,
                lowering="view", moves_only=True))
register(OpSpec("expand", "shape", _infer_expand,
                lambda ks, p, a, at, plan, dev: ks.expand(p[0], tuple(at["shape"])),
                backward=_grad_expand, onnx="Expand", onnx_lower=_onnx_expand, moves_only=True))
register(OpSpec("cat", "shape", _infer_cat, _kernel_cat, backward=_grad_cat, onnx="Concat",
                onnx_lower=_onnx_cat, moves_only=True))


# --------------------------------------------------------------------------- front end
@front_end(method=True, aliases=("view",))
def reshape(x, *shape) -> Tensor:
    """Same values with a new shape (one dimension may be -1); a view when possible."""
    x = tensor_arg("reshape", x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    new = resolve_reshape("reshape", x.shape, shape)
    if new == x.shape:
        return x
    return run("reshape", (x,), {"shape": new})


view = reshape


@front_end(method=True)
def permute(x, *axes) -> Tensor:
    """Reorder the axes (a view)."""
    x = tensor_arg("permute", x)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    nd = len(x.shape)
    if len(axes) != nd:
        raise ShapeError(f"permute: expected {nd} axes for shape {x.shape}, got {axes}")
    if all(type(a) is int and 0 <= a < nd for a in axes):  # already normalised (x.T, ...)
        norm = tuple(axes)
    else:
        norm = tuple(normalize_axis("permute", a, nd, x.shape) for a in axes)
    if len(set(norm)) != nd:
        raise ShapeError(f"permute: {axes} is not a permutation of the axes of shape {x.shape}")
    if norm == tuple(range(nd)):
        return x
    return dispatch_view("permute", x, "axes", norm)


# (n - 1, ..., 1, 0) for each n below 33: the axes of ``t.T``, made once
_REVERSED = tuple(tuple(range(n - 1, -1, -1)) for n in range(33))


def reverse_axes(x: Tensor) -> Tensor:
    """``x.T``: ``permute`` with the axes reversed (a view), which needs none of ``permute``'s
    checks; the tensor itself when it has fewer than two axes."""
    nd = len(x.shape)
    if nd < 2:
        return x
    return dispatch_view("permute", x, "axes",
                         _REVERSED[nd] if nd < 33 else tuple(range(nd - 1, -1, -1)))


@front_end(method=True)
def transpose(x, axis0=0, axis1=1) -> Tensor:
    """Swap two axes (a view)."""
    x = tensor_arg("transpose", x)
    a0 = normalize_axis("transpose", axis0, x.ndim, x.shape)
    a1 = normalize_axis("transpose", axis1, x.ndim, x.shape)
    if x.ndim == 0:                         # axes 0/-1 of a 0-d tensor: itself (PyTorch)
        return x
    axes = list(range(x.ndim))
    axes[a0], axes[a1] = axes[a1], axes[a0]
    return permute(x, tuple(axes))


@front_end(method=True)
def broadcast_to(x, *shape) -> Tensor:
    """A stride-0 view of ``x`` with ``shape`` (NumPy broadcasting rules)."""
    x = tensor_arg("broadcast_to", x)
    shape = shape_arg("broadcast_to", shape)
    if shape == x.shape:
        return x
    _check_expand("broadcast_to", tuple(x.shape), shape)
    return run("expand", (x,), {"shape": shape})


@front_end(method=True)
def expand(x, *shape) -> Tensor:
    """``broadcast_to`` where -1 keeps a dimension (PyTorch's ``expand``)."""
    x = tensor_arg("expand", x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:                    # ints first: a tensor is never compared with -1 elementwise
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ShapeError(f"expand: shape must be a tuple of ints, got {shape!r:.80}") from None
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: cannot expand shape {x.shape} to {tuple(shape)} with fewer dimensions")
    shape = tuple(x.shape[i - lead] if (d == -1 and i >= lead) else d for i, d in enumerate(shape))
    shape = shape_arg("expand", shape)
    _check_expand("expand", tuple(x.shape), shape)
    return broadcast_to(x, shape)


def _sequence(op, tensors) -> tuple:
    try:
        items = tuple(tensors)
    except TypeError:
        raise ArgumentTypeError(f"{op}: expected a sequence of tensors, got "
                                f"{type(tensors).__name__}") from None
    return tuple(tensor_arg(op, t) for t in items)


@front_end(method=True)
def squeeze(x, axis=None, *, dim=None) -> Tensor:
    """Remove size-1 axes (all of them, or the given ones, which must have size 1)."""
    x = tensor_arg("squeeze", x)
    axis = torch_alias("squeeze", axis, None, dim, "axis= and dim=")
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim, x.shape)
        if x.ndim == 0:                     # axis 0/-1 of a 0-d tensor: itself (PyTorch)
            return x
        for a in axes:
            if x.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


@front_end(method=True)
def unsqueeze(x, axis=None, *, dim=None) -> Tensor:
    """Insert a size-1 axis at ``axis`` (counted in the result)."""
    x = tensor_arg("unsqueeze", x)
    axis = torch_alias("unsqueeze", axis, None, dim, "axis= and dim=")
    if axis is None:
        raise ArgumentTypeError("unsqueeze: missing the axis (axis= or dim=)")
    a = normalize_axis("unsqueeze", axis, x.ndim + 1, x.shape)
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


@front_end(method=True)
def flatten(x, start_axis=0, end_axis=-1, *, start_dim=None, end_dim=None) -> Tensor:
    """Merge axes ``start_axis..end_axis`` into one (PyTorch's ``start_dim``/``end_dim`` too)."""
    x = tensor_arg("flatten", x)
    start_axis = torch_alias("flatten", start_axis, 0, start_dim,
                             "start_axis= and start_dim=")
    end_axis = torch_alias("flatten", end_axis, -1, end_dim, "end_axis= and end_dim=")
    if x.ndim == 0:
        return reshape(x, (1,))
    s = normalize_axis("flatten", start_axis, x.ndim, x.shape)
    e = normalize_axis("flatten", end_axis, x.ndim, x.shape)
    if s > e:
        raise ShapeError(f"flatten: start axis {start_axis} comes after end axis {end_axis}")
    return reshape(x, x.shape[:s] + (prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


@front_end(aliases=("concatenate",))
def cat(tensors, axis=0, *, dim=None) -> Tensor:
    """Concatenate along an existing axis (dtypes promoted)."""
    ts = _sequence("cat", tensors)
    axis = torch_alias("cat", axis, 0, dim, "axis= and dim=")
    if not ts:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    if ts[0].ndim == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated")
    a = normalize_axis("cat", axis, ts[0].ndim, ts[0].shape)
    if len(ts) == 1:
        return ts[0]
    return run("cat", ts, {"axis": a})


concatenate = cat


@front_end
def stack(tensors, axis=0, *, dim=None) -> Tensor:
    """Join along a new axis (all shapes equal)."""
    ts = _sequence("stack", tensors)
    axis = torch_alias("stack", axis, 0, dim, "axis= and dim=")
    if not ts:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    for t in ts:
        if t.shape != ts[0].shape:
            raise ShapeError(f"stack: all tensors must have the same shape, got "
                             f"{', '.join(str(t.shape) for t in ts)}")
    a = normalize_axis("stack", axis, ts[0].ndim + 1, ts[0].shape)
    parts = [unsqueeze(t, a) for t in ts]
    return parts[0] if len(parts) == 1 else run("cat", tuple(parts), {"axis": a})


@front_end(method=True)
def split(x, split_size_or_sections, axis=0, *, dim=None) -> tuple:
    """PyTorch's ``split``: pieces of an int size (last may be smaller) or of listed sizes."""
    from .index import getitem
    x = tensor_arg("split", x)
    axis = torch_alias("split", axis, 0, dim, "axis= and dim=")
    if x.ndim == 0:
        raise ShapeError("split: expected a tensor with at least one dimension, got a 0-d tensor")
    a = normalize_axis("split", axis, x.ndim, x.shape)
    n = x.shape[a]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int_arg("split", "a section size", s) for s in split_size_or_sections]
        if _b.sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} do not add up to {n} (axis {a} of shape {x.shape})")
    else:
        size = int_arg("split", "the split size", split_size_or_sections)
        if size <= 0:
            raise ShapeError(f"split: split size must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
        if not sizes:
            sizes = [0]
    out, start = [], 0
    for s in sizes:
        key = (slice(None),) * a + (slice(start, start + s),)
        out.append(getitem(x, key))
        start += s
    return tuple(out)


@front_end(method=True)
def chunk(x, chunks: int, axis=0, *, dim=None) -> tuple:
    """Split into ``chunks`` pieces of ceil(n / chunks) (PyTorch's ``chunk``)."""
    x = tensor_arg("chunk", x)
    axis = torch_alias("chunk", axis, 0, dim, "axis= and dim=")
    chunks = int_arg("chunk", "chunks", chunks)
    if x.ndim == 0:
        raise ShapeError("chunk: expected a tensor with at least one dimension, got a 0-d tensor")
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    a = normalize_axis("chunk", axis, x.ndim, x.shape)
    n = x.shape[a]
    return split(x, _b.max(1, -(-n // chunks)), a)
