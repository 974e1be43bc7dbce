"""Reductions over axes (``sum mean prod max min var logsumexp norm``), the index-returning
``argmax``/``argmin`` and ``softmax``/``log_softmax`` along one axis.

A native reduction is one ``_reduction`` line here (dtype rule, empty rule, ONNX name,
gradient) plus its reducer (init/step/combine/finalise) in ``jit_kernels``' op table.
Gradient conventions: ``max``/``min`` split the gradient evenly among tied elements.
"""
from __future__ import annotations

import builtins as _b

from ..dispatch import dispatch as run
from ..core import dtypes as D
from ..core.errors import ArgumentValueError, DTypeError, ShapeError
from ..tensor import Tensor
from .args import axis_keepdims, bool_arg, int_arg, tensor_arg, torch_alias
from .elementwise import cast, div, eq, exp, mul, sub, where
from ..core.registry import OpSpec, Plan, front_end, register
from .shape import broadcast_to, reshape
from ..core.shapes import normalize_axes, normalize_axis, prod




def _reduced_shape(shape, axes, keepdims) -> tuple:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _check_nonempty(name, x, axes):
    if _b.any(x.shape[a] == 0 for a in axes) or (not axes and prod(x.shape) == 0):
        raise ShapeError(f"{name}: cannot reduce a zero-size axis of a tensor of shape {x.shape} "
                         f"(axes {axes}); the operation has no identity")


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def onnx_reduce(ex, op) -> str:
    """The record's Reduce* over the operand in the result dtype."""
    (xt,) = op.inputs
    out = op.outputs[0].dtype
    x = ex.names[xt.id]
    return ex.reduce(ex.record(op), ex.cast(x, xt.dtype, out), op.attrs["axes"], op.attrs["keepdims"])


def _onnx_reduce_extreme(ex, op) -> str:   # max/min: the operand's dtype (bools as int32)
    (xt,) = op.inputs
    axes, keep = op.attrs["axes"], op.attrs["keepdims"]
    x = ex.names[xt.id]
    onnx_name = ex.record(op)
    if xt.dtype.is_bool:   # ReduceMax/Min take no bools before opset 20
        r = ex.reduce(onnx_name, ex.cast(x, D.bool_, D.int32), axes, keep)
        return ex.cast(r, D.int32, D.bool_)
    return ex.reduce(onnx_name, x, axes, keep)


def _onnx_var(ex, op) -> str:
    (xt,) = op.inputs
    out = op.outputs[0].dtype
    axes, keep = op.attrs["axes"], op.attrs["keepdims"]
    x = ex.cast(ex.names[xt.id], xt.dtype, out)
    k = prod([xt.shape[a] for a in axes])
    d = ex.node("Sub", [x, ex.reduce("ReduceMean", x, axes, True)])
    s = ex.reduce("ReduceSum", ex.node("Mul", [d, d]), axes, keep)
    return ex.node("Div", [s, ex.scalar(float(_b.max(k - op.attrs.get("ddof", 0), 0)), out)])


def _onnx_arg_reduce(ex, op) -> str:
    (xt,) = op.inputs
    x = ex.names[xt.id]
    if xt.dtype.is_bool:
        x = ex.cast(x, D.bool_, D.int32)
    onnx_name = ex.record(op)
    axis, keep = op.attrs["axis"], op.attrs["keepdims"]
    if axis is None:
        flat = ex.reshape(x, [-1]) if len(xt.shape) != 1 else x
        r = ex.node(onnx_name, [flat], axis=0, keepdims=0, select_last_index=0)
        return ex.reshape(r, op.outputs[0].shape)
    return ex.node(onnx_name, [x], axis=int(axis), keepdims=int(keep), select_last_index=0)


def _onnx_softmax(ex, op) -> str:
    (xt,) = op.inputs
    x = ex.cast(ex.names[xt.id], xt.dtype, op.outputs[0].dtype)
    return ex.node(ex.record(op), [x], axis=int(op.attrs["axis"]))


def _reduction(name, rule, empty_ok, onnx, grad, doc, api=True, dtype_arg=False,
               onnx_lower=onnx_reduce, fusion=None, uint64=None):
    """A native reduction over a tuple of axes: its record and front-end function.  ``rule``:
    "acc" (floats kept, ints/bools accumulate in int64), "float" (ints/bools give float32),
    "same"."""
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
        return Plan(_reduced_shape(x.shape, axes, attrs["keepdims"]), dt, dt)

    def kernel(ks, p, args, attrs, plan, device):
        return ks.reduce(name, p[0], attrs["axes"], attrs["keepdims"], plan.dtype.np, attrs)

    register(OpSpec(name, "reduce", infer, kernel, cost="compute", backward=grad, onnx=onnx,
                    onnx_lower=onnx_lower, lowering="reduce", fusion=fusion, uint64=uint64))
    if not api:
        return None

    def fn(x, axis=None, keepdims=False, *, dim=None, keepdim=None) -> Tensor:
        return _reduce(name, x, axis, keepdims, None, dim, keepdim)

    def fn_dtype(x, axis=None, keepdims=False, *, dim=None, keepdim=None, dtype=None) -> Tensor:
        if dtype is None:
            return _reduce(name, x, axis, keepdims, None, dim, keepdim)
        x, want = _with_dtype(name, tensor_arg(name, x), dtype, rule)
        y = _reduce(name, x, axis, keepdims, None, dim, keepdim)
        return y if y.dtype is want else cast(y, want)
    if dtype_arg:
        fn = fn_dtype
    fn.__name__ = name
    fn.__doc__ = doc + _TORCH_NAMES + (_DTYPE_DOC if dtype_arg else "")
    return front_end(fn, method=True)


_DTYPE_DOC = (" ``dtype=`` casts the input to that dtype first and gives that dtype (PyTorch);"
              " an int ``dtype`` accumulates in int64 and the result is cast back (saturating).")


def _with_dtype(name, x, dtype, rule):
    """``(x cast to dtype, the result dtype)`` for a reduction's ``dtype=`` (PyTorch's rule:
    the input is cast before the op)."""
    dt = D.as_dtype(dtype, name)
    if rule == "float" and not dt.is_float:
        raise DTypeError(f"{name}: dtype= must be a float dtype, got {dt.name} "
                         f"(input {x.dtype.name})")
    return cast(x, dt), dt


_TORCH_NAMES = " PyTorch's ``dim=``/``keepdim=`` are accepted for ``axis=``/``keepdims=``."


def _reduce(name, x, axis, keepdims, extra=None, dim=None, keepdim=None):
    x = tensor_arg(name, x)
    axis, keepdims = axis_keepdims(name, axis, keepdims, dim, keepdim)
    nd = len(x.shape)
    axes = normalize_axes(name, axis, nd, x.shape)
    if nd == 0:
        axes = ()                           # axis 0/-1 of a 0-d tensor: the tensor (PyTorch)
    attrs = {"axes": axes, "keepdims": bool(keepdims)}
    if extra:
        attrs.update(extra)
    if not axes:
        # Reducing over no axis (0-d input or axis=()): reduce a new unit axis instead,
        # so kernels always get a non-empty axis list and dtype rules still apply.
        y = reshape(x, x.shape + (1,))
        attrs["axes"] = (x.ndim,)
        attrs["keepdims"] = False
        return run(name, (y,), attrs)
    return run(name, (x,), attrs)


# --------------------------------------------------------------------------- gradients
def _kept(c, t):
    """A reduced tensor with its reduced axes back as size 1 (keepdims form)."""
    if c.attrs["keepdims"]:
        return t
    axes = c.attrs["axes"]
    return reshape(t, tuple(1 if i in axes else d for i, d in enumerate(c.input_shape(0))))


def _count(c) -> int:
    x_shape = c.input_shape(0)
    return prod(x_shape[a] for a in c.attrs["axes"])


def _grad_sum(c, g):
    return (broadcast_to(_kept(c, g), c.input_shape(0)),)


def _grad_mean(c, g):
    return (broadcast_to(div(_kept(c, g), _b.max(_count(c), 1)), c.input_shape(0)),)


def _grad_extreme(c, g):
    x = c.input(0)
    hit = cast(eq(x, _kept(c, c.output())), g.dtype)        # ties share the gradient evenly
    n = sum(hit, axis=c.attrs["axes"], keepdims=True)
    return (mul(hit, div(_kept(c, g), n)),)


def _grad_prod(c, g):
    x = c.input(0)
    axes = c.attrs["axes"]
    zero = eq(x, 0)
    nonzero = where(zero, 1, x)
    p_nz = prod_(nonzero, axis=axes, keepdims=True)         # product of the non-zero entries
    zeros = sum(cast(zero, x.dtype), axis=axes, keepdims=True)
    others = where(zero, where(eq(zeros, 1), p_nz, 0),
                   where(eq(zeros, 0), div(p_nz, nonzero), 0))
    return (mul(_kept(c, g), others),)


def _grad_var(c, g):
    x = c.input(0)
    axes = c.attrs["axes"]
    # the forward divides by max(N - ddof, 0): with no degrees of freedom left it is nan/inf,
    # and so is the gradient (0 * inf = nan where x equals the mean), as in PyTorch
    n = _b.max(_count(c) - c.attrs.get("ddof", 0), 0)
    centred = sub(x, mean(x, axis=axes, keepdims=True))
    return (mul(centred, mul(_kept(c, g), 2.0 / n if n else float("inf"))),)


def _grad_logsumexp(c, g):
    x = c.input(0)
    return (mul(exp(sub(x, _kept(c, c.output()))), _kept(c, g)),)


sum = _reduction("sum", "acc", True, "ReduceSum", _grad_sum,
                 "Sum over ``axis`` (None: all); ints/bools accumulate in int64.", dtype_arg=True,
                 fusion="row_reduce", uint64="modular")
mean = _reduction("mean", "float", True, "ReduceMean", _grad_mean,
                  "Arithmetic mean (ints give float32).", dtype_arg=True, fusion="row_reduce")
prod_ = _reduction("prod", "acc", True, "ReduceProd", _grad_prod, "Product over ``axis``.",
                   dtype_arg=True, uint64="modular")
max = _reduction("max", "same", False, "ReduceMax", _grad_extreme,
                 "Maximum values (NaN propagates).", onnx_lower=_onnx_reduce_extreme, fusion="row_reduce",
                 uint64="order")
min = _reduction("min", "same", False, "ReduceMin", _grad_extreme,
                 "Minimum values (NaN propagates).", onnx_lower=_onnx_reduce_extreme, fusion="row_reduce",
                 uint64="order")
_reduction("var", "float", True, _onnx_var, _grad_var, None, api=False)


@front_end(method=True)
def var(x, axis=None, keepdims=False, ddof=0, *, dim=None, keepdim=None,
        correction=None) -> Tensor:
    """Variance with ``ddof`` (NumPy's convention: 0; PyTorch's ``correction=`` is the same
    number)."""
    ddof = torch_alias("var", ddof, 0, correction, "ddof= and correction=")
    return _reduce("var", x, axis, keepdims, {"ddof": int_arg("var", "ddof", ddof)}, dim, keepdim)


@front_end(method=True)
def std(x, axis=None, keepdims=False, ddof=0, *, dim=None, keepdim=None,
        correction=None) -> Tensor:
    """Standard deviation: ``sqrt(var(...))`` with the same arguments."""
    from .elementwise import sqrt
    return sqrt(var(x, axis, keepdims, ddof, dim=dim, keepdim=keepdim, correction=correction))


def _truth(name, x, axis, keepdims, dim, keepdim, reducer, empty):
    x = tensor_arg(name, x)
    axis, keepdims = axis_keepdims(name, axis, keepdims, dim, keepdim)
    axes = normalize_axes(name, axis, x.ndim, x.shape)
    b = x if x.dtype.is_bool else cast(x, D.bool_)
    if x.ndim and prod(x.shape[a] for a in axes) == 0:     # nothing to look at: the identity
        from .create import full
        return full(_reduced_shape(x.shape, axes, keepdims), empty, D.bool_, x.device)
    return reducer(b, axis=axes if x.ndim else None, keepdims=keepdims)


@front_end(method=True)
def any(x, axis=None, keepdims=False, *, dim=None, keepdim=None) -> Tensor:
    """Whether any element (along ``axis``) is nonzero, as bool (False over nothing)."""
    return _truth("any", x, axis, keepdims, dim, keepdim, max, False)


@front_end(method=True)
def all(x, axis=None, keepdims=False, *, dim=None, keepdim=None) -> Tensor:
    """Whether every element (along ``axis``) is nonzero, as bool (True over nothing)."""
    return _truth("all", x, axis, keepdims, dim, keepdim, min, True)


logsumexp = _reduction("logsumexp", "float", True, "ReduceLogSumExp", _grad_logsumexp,
                       "log(sum(exp(x))) computed stably.")


def _grad_norm(c, g):
    # d||x|| / dx = x / ||x||; 0 where the norm is 0 (PyTorch's subgradient)
    x = c.input(0)
    y = _kept(c, c.output())
    return (where(eq(y, 0), 0, mul(x, div(_kept(c, g), y))),)


_reduction("norm", "float", True, "ReduceL2", _grad_norm, None, api=False)


@front_end(method=True)
def norm(x, p="fro", dim=None, keepdim=False, dtype=None, *, axis=None,
         keepdims=None) -> Tensor:
    """``torch.norm``/``torch.linalg.vector_norm`` over ``dim`` (None: all elements): ``p`` = 2
    or ``"fro"`` (the native L2 reduction), 1 (``sum(|x|)``), ``inf``/``-inf``
    (``amax``/``amin`` of ``|x|``: the gradient is shared among ties), 0 (the count of nonzero
    elements) or any other number (``sum(|x|**p)**(1/p)``).  ``"fro"`` over any number of axes
    is the 2-norm of those elements.  Ints give float32; ``dtype=`` casts the input first.
    NumPy's ``axis=``/``keepdims=`` are accepted for ``dim=``/``keepdim=``."""
    from .elementwise import abs as abs_, ne, pow
    x = tensor_arg("norm", x)
    dim = torch_alias("norm", dim, None, axis, "dim= and axis=")
    keepdim = bool_arg("norm", "keepdim",
                       torch_alias("norm", keepdim, False, keepdims, "keepdim= and keepdims="))
    normalize_axes("norm", dim, x.ndim, x.shape)        # (checked here: p != 2 reduces by others)
    if dtype is not None:
        x, _ = _with_dtype("norm", x, dtype, "float")
    if isinstance(p, str):
        if p != "fro":
            raise ArgumentValueError(f"norm: p={p!r} is not supported (numbers, inf, -inf or "
                                     f"'fro'; 'nuc' needs a matrix decomposition)")
        p = 2
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise ArgumentValueError(f"norm: p must be a number or 'fro', got {p!r}")
    if not x.dtype.is_float:
        x = cast(x, D.float32)
    if p == 2:
        return _reduce("norm", x, dim, keepdim)
    a = abs_(x)
    if p == 1:
        return sum(a, dim, keepdim)
    if p == float("inf"):
        return amax(a, dim, keepdim)
    if p == float("-inf"):
        return amin(a, dim, keepdim)
    if p == 0:
        return sum(cast(ne(x, 0), x.dtype), dim, keepdim)
    return pow(sum(pow(a, float(p)), dim, keepdim), 1.0 / float(p))


# --------------------------------------------------------------------------- composed reductions
def _all_if_empty(dim):
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


@front_end(method=True)
def amax(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    """``torch.amax``: the maximum over ``dim`` (an int, a tuple, or ``()``/None: all); NaN
    propagates and the gradient is shared evenly among tied maxima (as ``max`` here)."""
    x = tensor_arg("amax", x)
    dim = torch_alias("amax", dim, None, axis, "dim= and axis=")
    keepdim = bool_arg("amax", "keepdim",
                       torch_alias("amax", keepdim, False, keepdims, "keepdim= and keepdims="))
    normalize_axes("amax", dim, x.ndim, x.shape)        # (its errors name amax, not max)
    return max(x, _all_if_empty(dim), keepdim)


@front_end(method=True)
def amin(x, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    """``torch.amin``: the minimum over ``dim`` (see ``amax``)."""
    x = tensor_arg("amin", x)
    dim = torch_alias("amin", dim, None, axis, "dim= and axis=")
    keepdim = bool_arg("amin", "keepdim",
                       torch_alias("amin", keepdim, False, keepdims, "keepdim= and keepdims="))
    normalize_axes("amin", dim, x.ndim, x.shape)
    return min(x, _all_if_empty(dim), keepdim)


@front_end(method=True)
def count_nonzero(x, dim=None, *, axis=None) -> Tensor:
    """``torch.count_nonzero``: how many elements are nonzero over ``dim`` (int or tuple;
    None: all), as int64 (NaN counts as nonzero)."""
    from .elementwise import ne
    x = tensor_arg("count_nonzero", x)
    dim = torch_alias("count_nonzero", dim, None, axis, "dim= and axis=")
    normalize_axes("count_nonzero", dim, x.ndim, x.shape)
    return sum(x if x.dtype.is_bool else ne(x, 0), dim)


def _moments(name, x, dim, keepdim, correction, ddof, axis, keepdims, root):
    x = tensor_arg(name, x)
    dim = torch_alias(name, dim, None, axis, "dim= and axis=")
    keepdim = bool_arg(name, "keepdim",
                       torch_alias(name, keepdim, False, keepdims, "keepdim= and keepdims="))
    ddof = int_arg(name, "ddof", torch_alias(name, ddof, 0, correction, "ddof= and correction="))
    normalize_axes(name, dim, x.ndim, x.shape)
    v = (std if root else var)(x, dim, keepdim, ddof)
    return v, mean(x, dim, keepdim)


@front_end(method=False)
def std_mean(x, dim=None, keepdim=False, ddof=0, *, correction=None, axis=None,
             keepdims=None) -> tuple:
    """``(std, mean)`` over ``dim``, as ``torch.std_mean`` (a tuple); ``correction=`` (or
    NumPy's ``ddof=``) defaults to 0 like ``rt.std`` (PyTorch's default is 1)."""
    return _moments("std_mean", x, dim, keepdim, correction, ddof, axis, keepdims, True)


@front_end(method=False)
def var_mean(x, dim=None, keepdim=False, ddof=0, *, correction=None, axis=None,
             keepdims=None) -> tuple:
    """``(var, mean)`` over ``dim``, as ``torch.var_mean`` (see ``std_mean``)."""
    return _moments("var_mean", x, dim, keepdim, correction, ddof, axis, keepdims, False)


# --------------------------------------------------------------------------- arg reductions
def _arg_reduction(name, onnx, uint64=None):
    def infer(args, attrs):
        (x,) = args
        axis = attrs["axis"]
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        _check_nonempty(name, x, axes)
        if axis is None:
            shape = (1,) * x.ndim if attrs["keepdims"] else ()
        else:
            shape = _reduced_shape(x.shape, axes, attrs["keepdims"])
        return Plan(shape, D.int64, x.dtype)

    def kernel(ks, p, args, attrs, plan, device):
        return ks.arg_reduce(name, p[0], attrs["axis"], attrs["keepdims"])

    register(OpSpec(name, "arg_reduce", infer, kernel, cost="compute", differentiable=False,
                    onnx=onnx, onnx_lower=_onnx_arg_reduce, uint64=uint64))

    def fn(x, axis=None, keepdims=False, *, dim=None, keepdim=None) -> Tensor:
        x = tensor_arg(name, x)
        axis, keepdims = axis_keepdims(name, axis, keepdims, dim, keepdim)
        if axis is not None:
            if isinstance(axis, (tuple, list)):
                raise ShapeError(f"{name}: axis must be an int or None, got {axis!r}")
            axis = normalize_axis(name, axis, x.ndim, x.shape)
            if x.ndim == 0:
                axis = None
        return run(name, (x,), {"axis": axis, "keepdims": bool(keepdims)})
    fn.__name__ = name
    fn.__doc__ = (f"Index of the first {name[3:]}imum (flattened when axis is None), int64.")
    return front_end(fn, method=True)


argmax = _arg_reduction("argmax", "ArgMax", uint64="order")
argmin = _arg_reduction("argmin", "ArgMin", uint64="order")


# --------------------------------------------------------------------------- softmax
def _softmax_op(name, log, onnx, grad, doc):
    def infer(args, attrs):
        (x,) = args
        axis = attrs["axis"]
        # the front end records a normalised axis; anything else (a crafted graph) is refused
        if type(axis) is not int or not 0 <= axis < x.ndim:
            normalize_axis(name, axis, x.ndim, x.shape)  # not an int, or out of range: says so
            raise ShapeError(f"{name}: axis {axis!r} is not a normalised axis of a tensor of "
                             f"shape {tuple(x.shape)}")
        dt = x.dtype if x.dtype.is_float else D.float32
        return Plan(x.shape, dt, dt)

    def kernel(ks, p, args, attrs, plan, device):
        x = p[0]
        if args[0].dtype is not plan.dtype:
            x = ks.cast(x, plan.dtype.np)
        return ks.softmax(x, attrs["axis"], log)

    register(OpSpec(name, "softmax", infer, kernel, cost="compute", backward=grad, onnx=onnx,
                    onnx_lower=_onnx_softmax, fusion="row_softmax", uint64_float=True))

    def fn(x, axis=-1, *, dim=None) -> Tensor:
        x = tensor_arg(name, x)
        axis = torch_alias(name, axis, -1, dim, "axis= and dim=")
        if x.ndim == 0:
            normalize_axis(name, axis, 0)  # 0 or -1, as NumPy and PyTorch accept for a 0-d tensor
            return reshape(run(name, (reshape(x, (1,)),), {"axis": 0}), ())
        return run(name, (x,), {"axis": normalize_axis(name, axis, x.ndim, x.shape)})
    fn.__name__ = name
    fn.__doc__ = doc
    return front_end(fn, method=True)


def _grad_softmax(c, g):
    y = c.output()
    dot = sum(mul(g, y), axis=c.attrs["axis"], keepdims=True)
    return (mul(y, sub(g, dot)),)


def _grad_log_softmax(c, g):
    y = c.output()
    total = sum(g, axis=c.attrs["axis"], keepdims=True)
    return (sub(g, mul(exp(y), total)),)


softmax = _softmax_op("softmax", False, "Softmax", _grad_softmax,
                      "exp(x) / sum(exp(x)) along ``axis``, computed stably.")
log_softmax = _softmax_op("log_softmax", True, "LogSoftmax", _grad_log_softmax,
                          "x - logsumexp(x) along ``axis``.")
