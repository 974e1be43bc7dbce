"""The op catalogue: one entry per operation.

Each ``OpSpec`` holds what every device needs to know about an op: its arity, the
shape/dtype rule (``infer``, which also validates and raises ShapeError/DTypeError),
the lowering onto a kernel set (``kernel``, used by plain devices only), the cost class
("memory" or "compute", read by autodiff checkpointing and the fusion pass), whether it
is differentiable, its backward rule (filled in by ``runtime.autodiff.rules``) and its
ONNX name.  Devices never branch on op names: they read this table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from .. import dtypes as D
from ..errors import DTypeError, ShapeError
from .shapes import broadcast_shapes, normalize_axis, prod

__all__ = ["OpSpec", "CATALOGUE", "UNARY", "BINARY", "REDUCTIONS", "spec", "register",
           "register_custom", "set_backward"]


@dataclass
class OpSpec:
    name: str
    family: str                       # unary, binary, select, reduce, arg_reduce, softmax,
                                      # linalg, shape, index, create, custom
    arity: Optional[int]              # None: variadic
    infer: Callable[[tuple, dict], tuple]          # (args, attrs) -> (shape, dtype)
    kernel: Callable[..., Any]        # (ks, payloads, args, attrs, shape, dtype, device) -> payload
    cost: str = "memory"              # "memory" | "compute"
    differentiable: bool = True
    backward: Optional[Callable] = None
    onnx: Optional[str] = None
    # "unary", "binary" or "reduce" when ``kernel`` is exactly the kernel set's generic
    # ``unary``/``binary``/``reduce`` call for this op (dispatch may then call prepared kernels)
    lowering: Optional[str] = None
    # Composite ops (``linear``, ``cross_entropy``): ``decompose(args, attrs) -> Tensor`` writes
    # the op with primitive catalogue ops through the public API.  Recording devices (capture)
    # call it, so captured graphs, ONNX export and graph.compile only ever see primitives;
    # plain devices run ``kernel`` (a composition of existing kernel-set methods giving the
    # same values) and autodiff records one node with the op's own backward rule.
    decompose: Optional[Callable] = None


CATALOGUE: dict[str, OpSpec] = {}


def register(s: OpSpec, replace: bool = False) -> OpSpec:
    if s.name in CATALOGUE and not replace:
        raise ValueError(f"op {s.name!r} is already registered")
    CATALOGUE[s.name] = s
    return s


def spec(name: str) -> OpSpec:
    return CATALOGUE[name]


def set_backward(name: str, rule: Callable) -> None:
    """Attach a backward rule to catalogue entry ``name`` (autodiff's rule table)."""
    CATALOGUE[name].backward = rule


def _shape(x) -> tuple:
    return getattr(x, "shape", ())


def _dts(args) -> str:
    return ", ".join(a.dtype.name if hasattr(a, "dtype") else type(a).__name__ for a in args)


def _shapes(args) -> str:
    return " and ".join(str(_shape(a)) for a in args)


# --------------------------------------------------------------------------- elementwise
# dtype rule per unary op: "same" keeps a numeric dtype (bool rejected), "float" maps
# ints/bools to float32, "bool" always gives bool, "any" keeps every dtype.
UNARY = {
    "neg": ("same", "Neg"), "abs": ("same", "Abs"), "sign": ("same", "Sign"),
    "relu": ("same", "Relu"), "floor": ("same", "Floor"), "ceil": ("same", "Ceil"),
    "exp": ("float", "Exp"), "log": ("float", "Log"), "sqrt": ("float", "Sqrt"),
    "rsqrt": ("float", None), "sin": ("float", "Sin"), "cos": ("float", "Cos"),
    "tanh": ("float", "Tanh"), "sigmoid": ("float", "Sigmoid"), "gelu": ("float", None),
    "gelu_tanh": ("float", None), "erf": ("float", "Erf"), "reciprocal": ("float", "Reciprocal"),
    "logical_not": ("bool", "Not"), "clamp": ("clamp", "Clip"),
}
_NONDIFF_UNARY = {"sign", "floor", "ceil", "logical_not"}

# kind per binary op: "arith" (promoted), "div" (true division), "cmp" (bool out),
# "logical" (operands as truth values, bool out)
BINARY = {
    "add": ("arith", "Add"), "sub": ("arith", "Sub"), "mul": ("arith", "Mul"),
    "div": ("div", "Div"), "pow": ("arith", "Pow"), "maximum": ("arith", "Max"),
    "minimum": ("arith", "Min"), "eq": ("cmp", "Equal"), "ne": ("cmp", None),
    "lt": ("cmp", "Less"), "le": ("cmp", "LessOrEqual"), "gt": ("cmp", "Greater"),
    "ge": ("cmp", "GreaterOrEqual"), "logical_and": ("logical", "And"),
    "logical_or": ("logical", "Or"),
}
# Two bool tensors: these stay bool (logical meaning, as in PyTorch); sub/pow/div are rejected
# or promoted by their own rules below.
_BOOL_OK = {"add", "mul", "maximum", "minimum"}


def _unary_dtype(name: str, rule: str, x, attrs) -> D.DType:
    dt = x.dtype
    if rule == "same":
        if dt.is_bool:
            raise DTypeError(f"{name}: not defined for dtype bool (cast to an int or float dtype first)")
        return dt
    if rule == "float":
        return dt if dt.is_float else D.float32
    if rule == "bool":
        return D.bool_
    # clamp: the tensor's dtype, promoted by float bounds (int tensor, float bound -> float32)
    if dt.is_bool:
        raise DTypeError("clamp: not defined for dtype bool")
    out = dt
    for bound in (attrs.get("min"), attrs.get("max")):
        if bound is not None:
            out = D.result_type(_Meta((), out), bound)
    return out


class _Meta:
    """A (shape, dtype) stand-in for a tensor in dtype rules."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _make_unary(name: str, rule: str, onnx):
    def infer(args, attrs):
        (x,) = args
        return x.shape, _unary_dtype(name, rule, x, attrs)

    def kernel(ks, p, args, attrs, shape, dtype, device):
        return ks.unary(name, p[0], dtype.np, attrs)

    return OpSpec(name, "unary", 1, infer, kernel, differentiable=name not in _NONDIFF_UNARY,
                  onnx=onnx, lowering="unary")


def binary_dtypes(name: str, a, b) -> tuple:
    """(compute dtype, output dtype) of binary op ``name`` on operands ``a``, ``b``."""
    kind = BINARY[name][0]
    if kind == "logical":
        return D.bool_, D.bool_
    dt = D.result_type(a, b)
    if kind == "cmp":
        return dt, D.bool_
    if kind == "div":
        dt = dt if dt.is_float else D.float32
        return dt, dt
    if dt.is_bool and name not in _BOOL_OK:
        raise DTypeError(f"{name}: not defined for two bool operands ({_dts((a, b))}); "
                         f"cast one to an int or float dtype first")
    return dt, dt


def _make_binary(name: str, kind: str, onnx):
    def infer(args, attrs):
        a, b = args
        shape = broadcast_shapes(name, _shape(a), _shape(b))
        return shape, binary_dtypes(name, a, b)[1]

    def kernel(ks, p, args, attrs, shape, dtype, device):
        compute, out = binary_dtypes(name, args[0], args[1])
        return ks.binary(name, p[0], p[1], compute.np, out.np)

    return OpSpec(name, "binary", 2, infer, kernel, differentiable=kind in ("arith", "div"),
                  onnx=onnx, lowering="binary")


def _infer_where(args, attrs):
    cond, a, b = args
    shape = broadcast_shapes("where", _shape(cond), _shape(a), _shape(b))
    if not hasattr(cond, "dtype"):
        raise DTypeError("where: the condition must be a tensor")
    return shape, D.result_type(a, b)


def _kernel_where(ks, p, args, attrs, shape, dtype, device):
    return ks.where(p[0], p[1], p[2], dtype.np)


def _infer_cast(args, attrs):
    return args[0].shape, D.as_dtype(attrs["dtype"])


def _kernel_cast(ks, p, args, attrs, shape, dtype, device):
    return ks.cast(p[0], dtype.np)


# --------------------------------------------------------------------------- reductions
REDUCTIONS = {
    # name: (dtype rule, empty allowed, onnx)
    "sum": ("acc", True, "ReduceSum"), "prod": ("acc", True, "ReduceProd"),
    "mean": ("float", True, "ReduceMean"), "var": ("float", True, None),
    "max": ("same", False, "ReduceMax"), "min": ("same", False, "ReduceMin"),
    "logsumexp": ("float", True, "ReduceLogSumExp"),
}


def _reduced_shape(shape, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _check_nonempty(name, x, axes):
    if any(x.shape[a] == 0 for a in axes) or (not axes and prod(x.shape) == 0):
        raise ShapeError(f"{name}: cannot reduce a zero-size axis of a tensor of shape {x.shape} "
                         f"(axes {axes}); the operation has no identity")


def _make_reduce(name: str, rule: str, empty_ok: bool, onnx):
    def infer(args, attrs):
        (x,) = args
        axes = attrs["axes"]
        if not empty_ok:
            _check_nonempty(name, x, axes)
        dt = x.dtype
        if rule == "acc":
            dt = dt if dt.is_float else D.int64
        elif rule == "float":
            dt = dt if dt.is_float else D.float32
        return _reduced_shape(x.shape, axes, attrs["keepdims"]), dt

    def kernel(ks, p, args, attrs, shape, dtype, device):
        return ks.reduce(name, p[0], attrs["axes"], attrs["keepdims"], dtype.np, attrs)

    cost = "compute"
    return OpSpec(name, "reduce", 1, infer, kernel, cost=cost, onnx=onnx, lowering="reduce")


def _make_arg_reduce(name: str, onnx):
    def infer(args, attrs):
        (x,) = args
        axis = attrs["axis"]
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        _check_nonempty(name, x, axes)
        if axis is None:
            shape = (1,) * x.ndim if attrs["keepdims"] else ()
        else:
            shape = _reduced_shape(x.shape, axes, attrs["keepdims"])
        return shape, D.int64

    def kernel(ks, p, args, attrs, shape, dtype, device):
        return ks.arg_reduce(name, p[0], attrs["axis"], attrs["keepdims"])

    return OpSpec(name, "arg_reduce", 1, infer, kernel, cost="compute", differentiable=False,
                  onnx=onnx)


def _make_softmax(name: str, log: bool, onnx):
    def infer(args, attrs):
        (x,) = args
        axis = attrs["axis"]
        # the front end records a normalised axis; anything else (a crafted graph) is refused
        if type(axis) is not int or not 0 <= axis < x.ndim:
            normalize_axis(name, axis, x.ndim, x.shape)  # not an int, or out of range: says so
            raise ShapeError(f"{name}: axis {axis!r} is not a normalised axis of a tensor of "
                             f"shape {tuple(x.shape)}")
        return x.shape, (x.dtype if x.dtype.is_float else D.float32)

    def kernel(ks, p, args, attrs, shape, dtype, device):
        x = p[0]
        if args[0].dtype is not dtype:
            x = ks.cast(x, dtype.np)
        return ks.softmax(x, attrs["axis"], log)

    return OpSpec(name, "softmax", 1, infer, kernel, cost="compute", onnx=onnx)


# --------------------------------------------------------------------------- linalg
def matmul_shapes(a_shape, b_shape, a_dt=None, b_dt=None):
    """(output shape, batch shape, m, k, n) of ``a @ b``; ShapeError on mismatch."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ShapeError(f"matmul: both operands need at least one dimension, got shapes "
                         f"{tuple(a_shape)} and {tuple(b_shape)}")
    a2 = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b2 = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    m, k = a2[-2:]
    k2, n = b2[-2:]
    if k != k2:
        raise ShapeError(f"matmul: shapes {tuple(a_shape)} and {tuple(b_shape)} are not aligned "
                         f"({k} != {k2})")
    try:
        batch = broadcast_shapes("matmul", a2[:-2], b2[:-2])
    except ShapeError:
        raise ShapeError(f"matmul: batch dimensions of shapes {tuple(a_shape)} and {tuple(b_shape)} "
                         f"cannot be broadcast together") from None
    out = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    return out, batch, m, k, n


def _infer_matmul(args, attrs):
    a, b = args
    dt = D.promote(a.dtype, b.dtype)
    if dt.is_bool:
        raise DTypeError(f"matmul: not defined for dtypes {a.dtype.name} and {b.dtype.name}")
    return matmul_shapes(a.shape, b.shape)[0], dt


def _kernel_matmul(ks, p, args, attrs, shape, dtype, device):
    a, b = args
    pa, pb = p
    if len(a.shape) == 2 and len(b.shape) == 2 and a.dtype is dtype and b.dtype is dtype:
        # two matrices of the output dtype: the same kernel call on the same views as below,
        # minus the batch/broadcast bookkeeping
        (m, k), n = a.shape, b.shape[1]
        return ks.reshape(ks.matmul(ks.reshape(pa, (1, m, k)), ks.reshape(pb, (1, k, n))),
                          shape)
    if a.dtype is not dtype:
        pa = ks.cast(pa, dtype.np)
    if b.dtype is not dtype:
        pb = ks.cast(pb, dtype.np)
    _, batch, m, k, n = matmul_shapes(a.shape, b.shape)
    pa = ks.reshape(pa, batch_pad(a.shape, 1))
    pb = ks.reshape(pb, batch_pad(b.shape, 2))
    nb = prod(batch)
    pa = ks.reshape(ks.expand(pa, batch + (m, k)), (nb, m, k))
    pb = ks.reshape(ks.expand(pb, batch + (k, n)), (nb, k, n))
    return ks.reshape(ks.matmul(pa, pb), shape)


def batch_pad(shape, which) -> tuple:
    """A 1-D matmul operand as a matrix: a row for the left (1), a column for the right (2)."""
    if len(shape) > 1:
        return tuple(shape)
    return (1,) + tuple(shape) if which == 1 else tuple(shape) + (1,)


# --------------------------------------------------------------------------- shape ops
def _infer_reshape(args, attrs):
    return tuple(attrs["shape"]), args[0].dtype


def _infer_permute(args, attrs):
    x = args[0]
    return tuple(x.shape[a] for a in attrs["axes"]), x.dtype


def _infer_expand(args, attrs):
    x = args[0]
    shape = tuple(attrs["shape"])
    if len(shape) < x.ndim:
        raise ShapeError(f"expand: cannot expand shape {x.shape} to {shape} with fewer dimensions")
    for have, want in zip(reversed(x.shape), reversed(shape)):
        if have != want and have != 1:
            raise ShapeError(f"expand: cannot expand shape {x.shape} to {shape}")
    return shape, x.dtype


def index_shape(shape, key) -> tuple:
    """Shape of basic indexing with a normalised key (ints, concrete slices, None)."""
    out = []
    axis = 0
    for k in key:
        if k is None:
            out.append(1)
        elif isinstance(k, slice):
            out.append(len(range(k.start, k.stop, k.step)))
            axis += 1
        else:
            axis += 1
    return tuple(out)


def _infer_index(args, attrs):
    return index_shape(args[0].shape, attrs["key"]), args[0].dtype


def _infer_slice_assign(args, attrs):
    x, value = args
    region = index_shape(x.shape, attrs["key"])
    vshape = _shape(value)
    try:
        broadcast_to_ok = broadcast_shapes("slice_assign", vshape, region) == region
    except ShapeError:
        broadcast_to_ok = False
    if not broadcast_to_ok:
        raise ShapeError(f"slice_assign: value of shape {vshape} cannot be broadcast to the "
                         f"indexed region of shape {region} (tensor shape {x.shape})")
    return x.shape, x.dtype


def _kernel_slice_assign(ks, p, args, attrs, shape, dtype, device):
    x, value = args
    region = index_shape(x.shape, attrs["key"])
    pv = p[1]
    if not hasattr(value, "dtype"):
        pv = ks.full(region, value, dtype.np, device.index)
    else:
        if value.dtype is not dtype:
            pv = ks.cast(pv, dtype.np)
        if value.shape != region:
            pv = ks.expand(pv, region)
    return ks.slice_assign(p[0], attrs["key"], pv)


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
        return idx.shape, x.dtype
    if x.shape[axis] == 0 and prod(idx.shape) > 0:
        raise ShapeError(f"take: cannot take from empty axis {axis} of shape {x.shape}")
    return x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype


def _kernel_take(ks, p, args, attrs, shape, dtype, device):
    x = p[0]
    axis = attrs["axis"]
    if axis is None:
        x = ks.reshape(x, (prod(args[0].shape),))
        axis = 0
    return ks.take(x, p[1], axis)


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
    return idx.shape, x.dtype


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
    return x.shape, x.dtype


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
        dt = D.promote(dt, t.dtype)
    return first.shape[:axis] + (size,) + first.shape[axis + 1:], dt


def _kernel_cat(ks, p, args, attrs, shape, dtype, device):
    ps = [ks.cast(q, dtype.np) if a.dtype is not dtype else q for q, a in zip(p, args)]
    return ks.cat(ps, attrs["axis"])


# --------------------------------------------------------------------------- creation
def _infer_init(args, attrs):
    v = attrs["value"]
    return tuple(v.shape), D.from_numpy_dtype(v.dtype)


def _infer_create(args, attrs):
    return tuple(attrs["shape"]), D.as_dtype(attrs["dtype"])


def _kernel_init(ks, p, args, attrs, shape, dtype, device):
    return ks.from_host(attrs["value"], device.index)


def _kernel_full(ks, p, args, attrs, shape, dtype, device):
    return ks.full(shape, attrs["value"], dtype.np, device.index)


def _kernel_arange(ks, p, args, attrs, shape, dtype, device):
    return ks.arange(attrs["start"], attrs["step"], shape[0], dtype.np, device.index)


def _kernel_eye(ks, p, args, attrs, shape, dtype, device):
    return ks.eye(shape[0], shape[1], dtype.np, device.index)


def _make_random(name):
    def kernel(ks, p, args, attrs, shape, dtype, device):
        from .. import random as _random
        seed, offset = _random.take_offset(device, prod(shape))
        return getattr(ks, name)(shape, dtype.np, seed, offset, device.index)

    def infer(args, attrs):
        shape, dt = _infer_create(args, attrs)
        if not dt.is_float:
            raise DTypeError(f"{name}: dtype must be float32 or float64, got {dt.name}")
        return shape, dt

    return OpSpec(name, "create", 0, infer, kernel, differentiable=False,
                  onnx="RandomUniform" if name == "rand" else "RandomNormal")


# --------------------------------------------------------------------------- composite ops
# ``linear`` and ``cross_entropy`` (``rt.nn.functional``): one catalogue op each, lowered onto
# existing kernel-set methods (no kernel set needs a new method) and differentiated by one
# rule each (runtime/autodiff/rules.py); recording devices get the primitive decomposition.
def _infer_linear(args, attrs):
    if len(args) not in (2, 3):
        raise ShapeError(f"linear: expected (input, weight[, bias]), got {len(args)} operands")
    x, w = args[0], args[1]
    if w.ndim != 2:
        raise ShapeError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{w.shape}")
    shape, dt = _infer_matmul((x, _Meta((w.shape[1], w.shape[0]), w.dtype)), {})
    if len(args) == 3:
        shape = broadcast_shapes("add", shape, _shape(args[2]))
        dt = binary_dtypes("add", _Meta(shape, dt), args[2])[1]
    return shape, dt


def _kernel_linear(ks, p, args, attrs, shape, dtype, device):
    # exactly ``add(matmul(x, permute(w, (1, 0))), bias)``: the same kernel calls on the
    # same views (the transposed weight is a strided view, never copied)
    x, w = args[0], args[1]
    wt = _Meta((w.shape[1], w.shape[0]), w.dtype)
    if len(args) == 3:                      # the product's shape and dtype, before the bias
        mshape, mdt = tuple(x.shape[:-1]) + (w.shape[0],), D.promote(x.dtype, w.dtype)
    else:
        mshape, mdt = shape, dtype
    y = _kernel_matmul(ks, (p[0], ks.permute(p[1], (1, 0))), (x, wt), {}, mshape, mdt,
                            device)
    if len(args) == 2:
        return y
    compute, out = binary_dtypes("add", _Meta(mshape, mdt), args[2])
    return ks.binary("add", y, p[2], compute.np, out.np)


def _decompose_linear(args, attrs):
    from . import api
    y = api.matmul(args[0], api.transpose(args[1], 0, 1))
    return y if len(args) == 2 else api.add(y, args[2])


CROSS_ENTROPY_REDUCTIONS = ("mean", "sum", "none")


def _infer_cross_entropy(args, attrs):
    logits, target = args
    if len(logits.shape) != 2:
        raise ShapeError(f"cross_entropy: logits must be 2-D (N, C), got shape {logits.shape}")
    if not target.dtype.is_int:
        raise DTypeError(f"cross_entropy: targets must be integer class indices, got "
                         f"{target.dtype.name}")
    if tuple(target.shape) != tuple(logits.shape[:1]):
        raise ShapeError(f"cross_entropy: target of shape {target.shape} does not match "
                         f"logits of shape {logits.shape} (expected ({logits.shape[0]},))")
    reduction = attrs["reduction"]
    if reduction not in CROSS_ENTROPY_REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    dt = logits.dtype if logits.dtype.is_float else D.float32
    return ((logits.shape[0],) if reduction == "none" else ()), dt


def _kernel_cross_entropy(ks, p, args, attrs, shape, dtype, device):
    # -log_softmax(logits)[i, target[i]], then the mean or sum: the values of the
    # decomposition below (picking one entry per row is exact)
    x = p[0]
    if args[0].dtype is not dtype:
        x = ks.cast(x, dtype.np)
    n = args[0].shape[0]
    logp = ks.softmax(x, 1, True)
    picked = ks.reshape(ks.gather(logp, ks.reshape(p[1], (n, 1)), 1), (n,))
    loss = ks.unary("neg", picked, dtype.np, {})
    reduction = attrs["reduction"]
    if reduction == "none":
        return loss
    return ks.reduce(reduction, loss, (0,), False, dtype.np, {})


def _decompose_cross_entropy(args, attrs):
    from . import api
    logits, target = args
    c = logits.shape[1]
    logp = api.log_softmax(logits, axis=1)
    # pick logp[i, target[i]] with an (untracked) one-hot mask
    classes = api.arange(c, dtype=target.dtype, device=target.device)
    one_hot = api.cast(api.eq(api.unsqueeze(target, 1), classes), logp.dtype)
    loss = api.neg(api.sum(api.mul(logp, one_hot), axis=1))
    reduction = attrs["reduction"]
    if reduction == "mean":
        return api.mean(loss)
    if reduction == "sum":
        return api.sum(loss)
    return loss


def _ce_scale_dtype(g, n, reduction):
    """dtype of the per-row factor the logits gradient is multiplied by: g, g / N or g[i]."""
    return binary_dtypes("div", g, n)[1] if reduction == "mean" else g.dtype


def _infer_cross_entropy_backward(args, attrs):
    logits, target, g = args
    want, dt = _infer_cross_entropy((logits, target), attrs)
    if tuple(_shape(g)) != want or not hasattr(g, "dtype"):
        raise ShapeError(f"cross_entropy_backward: gradient of shape {_shape(g)} does not match "
                         f"the loss of shape {want}")
    n = logits.shape[0]
    sd = _ce_scale_dtype(g, max(n, 1), attrs["reduction"])
    return tuple(logits.shape), binary_dtypes("mul", _Meta(logits.shape, dt), _Meta((), sd))[1]


def _kernel_cross_entropy_backward(ks, p, args, attrs, shape, dtype, device):
    # (softmax(logits) - onehot(target)) * scale, scale = g / N, g or g[:, None]: the kernels
    # of the decomposition below, in its order
    logits, _, g = args
    n = logits.shape[0]
    dt = logits.dtype if logits.dtype.is_float else D.float32
    x = p[0] if logits.dtype is dt else ks.cast(p[0], dt.np)
    prob = ks.softmax(x, 1, False)
    d = ks.scatter_add(prob, ks.reshape(p[1], (n, 1)), ks.full((n, 1), -1, dt.np, device.index), 1)
    reduction = attrs["reduction"]
    scale = p[2]
    if reduction == "none":
        scale = ks.reshape(scale, (n, 1))
    elif reduction == "mean":
        sd = _ce_scale_dtype(g, max(n, 1), reduction)
        compute, out = binary_dtypes("div", g, max(n, 1))
        scale = ks.binary("div", scale, max(n, 1), compute.np, out.np)
        g = _Meta((), sd)
    compute, out = binary_dtypes("mul", _Meta(shape, dt), g)
    return ks.binary("mul", d, scale, compute.np, out.np)


def _decompose_cross_entropy_backward(args, attrs):
    from . import api
    x, t, g = args
    n = x.shape[0]
    p = api.softmax(x, axis=1)
    d = api.scatter_add(p, 1, api.reshape(t, (n, 1)), api.full((n, 1), -1, p.dtype, p.device))
    reduction = attrs["reduction"]
    if reduction == "none":
        scale = api.reshape(g, (n, 1))
    elif reduction == "mean":
        scale = api.div(g, max(n, 1))
    else:
        scale = g
    return api.mul(d, scale)


# --------------------------------------------------------------------------- custom ops
def register_custom(name: str, forward, shape_fn=None, replace: bool = False) -> OpSpec:
    """Catalogue entry for a user op (``rt.custom_op``): ``forward`` runs on kernel-set arrays."""
    def infer(args, attrs):
        pairs = [(a.shape, a.dtype) for a in args]
        if shape_fn is None:
            return pairs[0]
        s, d = shape_fn(*pairs)
        return tuple(s), D.as_dtype(d)

    def kernel(ks, p, args, attrs, shape, dtype, device):
        return ks.custom(forward, p)

    return register(OpSpec(name, "custom", None, infer, kernel, cost="compute"), replace=replace)


# --------------------------------------------------------------------------- the table
for _n, (_rule, _onnx) in UNARY.items():
    register(_make_unary(_n, _rule, _onnx))
for _n, (_kind, _onnx) in BINARY.items():
    register(_make_binary(_n, _kind, _onnx))
for _n, (_rule, _empty, _onnx) in REDUCTIONS.items():
    register(_make_reduce(_n, _rule, _empty, _onnx))
register(_make_arg_reduce("argmax", "ArgMax"))
register(_make_arg_reduce("argmin", "ArgMin"))
register(_make_softmax("softmax", False, "Softmax"))
register(_make_softmax("log_softmax", True, "LogSoftmax"))
register(OpSpec("where", "select", 3, _infer_where, _kernel_where, onnx="Where"))
register(OpSpec("cast", "unary", 1, _infer_cast, _kernel_cast, onnx="Cast"))
register(OpSpec("matmul", "linalg", 2, _infer_matmul, _kernel_matmul, cost="compute",
                onnx="MatMul"))
register(OpSpec("linear", "linalg", None, _infer_linear, _kernel_linear, cost="compute",
                decompose=_decompose_linear))
register(OpSpec("cross_entropy", "loss", 2, _infer_cross_entropy, _kernel_cross_entropy,
                cost="compute", decompose=_decompose_cross_entropy))
register(OpSpec("cross_entropy_backward", "loss", 3, _infer_cross_entropy_backward,
                _kernel_cross_entropy_backward, cost="compute", differentiable=False,
                decompose=_decompose_cross_entropy_backward))
register(OpSpec("reshape", "shape", 1, _infer_reshape,
                lambda ks, p, a, at, s, d, dev: ks.reshape(p[0], tuple(at["shape"])), onnx="Reshape"))
register(OpSpec("permute", "shape", 1, _infer_permute,
                lambda ks, p, a, at, s, d, dev: ks.permute(p[0], tuple(at["axes"])), onnx="Transpose"))
register(OpSpec("expand", "shape", 1, _infer_expand,
                lambda ks, p, a, at, s, d, dev: ks.expand(p[0], tuple(at["shape"])), onnx="Expand"))
register(OpSpec("index", "index", 1, _infer_index,
                lambda ks, p, a, at, s, d, dev: ks.index(p[0], at["key"]), onnx="Slice"))
register(OpSpec("slice_assign", "index", 2, _infer_slice_assign, _kernel_slice_assign))
register(OpSpec("take", "index", 2, _infer_take, _kernel_take, onnx="Gather"))
register(OpSpec("gather", "index", 2, _infer_gather,
                lambda ks, p, a, at, s, d, dev: ks.gather(p[0], p[1], at["axis"]),
                onnx="GatherElements"))
register(OpSpec("scatter_add", "index", 3, _infer_scatter_add,
                lambda ks, p, a, at, s, d, dev: ks.scatter_add(p[0], p[1], p[2], at["axis"]),
                onnx="ScatterElements"))
register(OpSpec("cat", "shape", None, _infer_cat, _kernel_cat, onnx="Concat"))
register(OpSpec("init", "create", 0, _infer_init, _kernel_init, differentiable=False))
register(OpSpec("full", "create", 0, _infer_create, _kernel_full, differentiable=False))
register(OpSpec("arange", "create", 0, _infer_create, _kernel_arange, differentiable=False))
register(OpSpec("eye", "create", 0, _infer_create, _kernel_eye, differentiable=False))
register(_make_random("rand"))
register(_make_random("randn"))
