"""Scans along one axis (``cumsum cumprod cummax cummin logcumsumexp``) and ``diff``.

Records: ``cumsum`` and ``cumprod`` (ints/bools give int64, floats keep their dtype; ``dtype=``
casts the input first, PyTorch's rule), ``logcumsumexp`` (ints give float32), and the
index-producing ``cumargmax``/``cumargmin`` (int64, ``differentiable=False``), all lowered onto
the kernel sets' ``scan``.  ``cummax``/``cummin`` return ``(values, indices)`` whose values are
``gather(x, dim, indices)``, so their gradient goes to the index each running extreme came from
(as in PyTorch); ties move the index to the later element and a NaN sticks (PyTorch's cpu
kernel).  ``cumsum`` and ``logcumsumexp`` carry a ``reverse`` attribute (ONNX ``CumSum``'s) used
by the gradients: ``cumsum``'s is the reversed cumsum of ``g``, ``logcumsumexp``'s is
``exp(x + reversed logcumsumexp(log g± - y))`` with ``g`` split by sign, stable without
dividing by ``exp(y)``; ``cumprod``'s handles zeros (PyTorch's formula: before the first zero
``revcumsum(g*y)/x``, at the first zero the reversed cumsum of ``g`` times the product with
that zero left out, after it 0).  ``diff`` is made of slices and ``sub`` (``ne`` for bools).
"""
from __future__ import annotations

from typing import NamedTuple

from ..dispatch import dispatch as run
from ..core import dtypes as D
from ..core.errors import ArgumentValueError, DTypeError, ShapeError
from ..tensor import Tensor
from .args import int_arg, tensor_arg, torch_alias
from ..core.registry import OpSpec, Plan, dtype_names, front_end, register
from ..core.shapes import normalize_axis

__all__ = ["ScanResult", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]


class ScanResult(NamedTuple):
    """``(values, indices)`` of ``cummax``/``cummin``, as PyTorch's ``torch.return_types``."""

    values: Tensor
    indices: Tensor


# --------------------------------------------------------------------------- records
def _check_axis(name, x, axis):
    if type(axis) is not int or not 0 <= axis < x.ndim:
        raise ShapeError(f"{name}: axis {axis!r} is not a normalised axis of a tensor of "
                         f"shape {tuple(x.shape)}")


def _result_dtype(name, rule, x, attrs) -> D.DType:
    if "dtype" in attrs:
        dt = D.as_dtype(attrs["dtype"])
        if dt.is_bool:
            raise DTypeError(f"{name}: dtype=bool is not supported (input {x.dtype.name})")
        return dt
    if rule == "acc":
        return x.dtype if x.dtype.is_float else D.int64
    if rule == "float":
        return x.dtype if x.dtype.is_float else D.float32
    return D.int64                                     # index scans


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_cumsum(ex, op) -> str:
    (xt,) = op.inputs
    x = ex.cast(ex.names[xt.id], xt.dtype, op.outputs[0].dtype)
    return ex.node(ex.record(op), [x, ex.i64(int(op.attrs["axis"]))],
                   reverse=int(bool(op.attrs["reverse"])))


def _record(name, kernel_op, rule, grad, onnx=None, onnx_skip=None, onnx_lower=None,
            uint64=None, uint64_float=False):
    def infer(args, attrs):
        (x,) = args
        _check_axis(name, x, attrs["axis"])
        dt = _result_dtype(name, rule, x, attrs)
        return Plan(tuple(x.shape), dt, x.dtype if rule == "index" else dt)

    def kernel(ks, p, args, attrs, plan, device):
        x = p[0]
        if rule != "index" and args[0].dtype is not plan.dtype:
            x = ks.cast(x, plan.dtype.np)
        return ks.scan(kernel_op, x, attrs["axis"], bool(attrs.get("reverse", False)))

    register(OpSpec(name, "scan", infer, kernel, cost="compute", backward=grad,
                    differentiable=grad is not None, onnx=onnx, onnx_lower=onnx_lower,
                    onnx_skip=onnx_skip, uint64=uint64, uint64_float=uint64_float))


def _scan(name, x, axis, reverse=False, dtype=None):
    attrs = {"axis": axis}
    if name in ("cumsum", "logcumsumexp"):
        attrs["reverse"] = bool(reverse)
    if dtype is not None:
        attrs["dtype"] = dtype.name
    return run(name, (x,), attrs)


def _like_input(c, t):
    dt = c.input_dtype(0)
    from .elementwise import cast
    return cast(t, dt) if dt.is_float and t.dtype is not dt else t


def _grad_cumsum(c, g):
    a, rev = c.attrs["axis"], c.attrs["reverse"]
    return (_like_input(c, _scan("cumsum", g, a, not rev)),)


def _grad_cumprod(c, g):
    from .elementwise import cast, div, eq, logical_and, mul, where
    x, y, a = c.input(0), c.output(), c.attrs["axis"]
    if x.dtype is not y.dtype:
        x = cast(x, y.dtype)
    zero = eq(x, 0)
    zeros = _scan("cumsum", cast(zero, y.dtype), a)          # zeros at or before each index
    before = eq(zeros, 0)
    first = logical_and(zero, eq(zeros, 1))
    part1 = div(_scan("cumsum", mul(g, y), a, True), where(before, x, 1))
    y1 = _scan("cumprod", where(first, 1, x), a)             # the product without that zero
    part2 = _scan("cumsum", mul(g, y1), a, True)
    return (_like_input(c, where(before, part1, where(first, part2, 0))),)


def _grad_logcumsumexp(c, g):
    from .elementwise import add, exp, log, maximum, neg, sub
    x, y, a, rev = c.input(0), c.output(), c.attrs["axis"], c.attrs["reverse"]
    if x.dtype is not y.dtype:
        from .elementwise import cast
        x = cast(x, y.dtype)

    def part(gs):
        return exp(add(x, _scan("logcumsumexp", sub(log(gs), y), a, not rev)))
    return (sub(part(maximum(g, 0)), part(maximum(neg(g), 0))),)


_record("cumsum", "sum", "acc", _grad_cumsum, onnx="CumSum", onnx_lower=_onnx_cumsum,
        uint64="modular")
_record("cumprod", "prod", "acc", _grad_cumprod,
        onnx_skip="ONNX has no cumulative product operator", uint64="modular")
_record("logcumsumexp", "logsumexp", "float", _grad_logcumsumexp,
        onnx_skip="ONNX has no cumulative log-sum-exp operator", uint64_float=True)
_record("cumargmax", "argmax", "index", None,
        onnx_skip="ONNX has no running arg-max operator (cummax's indices)")
_record("cumargmin", "argmin", "index", None,
        onnx_skip="ONNX has no running arg-min operator (cummin's indices)")


# --------------------------------------------------------------------------- front end
def _prep(name, x, dim, axis):
    """``(x as at least 1-d, the normalised axis, whether x was 0-d)``; ``dim=None`` (NumPy's
    ``axis=None``) scans the flattened tensor."""
    from .shape import reshape
    x = tensor_arg(name, x)
    dim = torch_alias(name, dim, None, axis, "dim= and axis=")
    if dim is None:
        return reshape(x, (x.size,)), 0, False
    if isinstance(dim, (tuple, list)):
        raise ShapeError(f"{name}: dim must be an int, got {dim!r}")
    dim = int_arg(name, "dim", dim)
    if x.ndim == 0:
        normalize_axis(name, dim, 1)
        return reshape(x, (1,)), 0, True
    return x, normalize_axis(name, dim, x.ndim, x.shape), False


def _back(t, was_0d):
    from .shape import reshape
    return reshape(t, ()) if was_0d else t


def _dtype_arg(name, x, dtype):
    if dtype is None:
        return None
    dt = D.as_dtype(dtype, name)
    if dt.is_bool:
        raise DTypeError(f"{name}: dtype=bool is not supported (input {x.dtype.name})")
    return dt


@front_end(method=True)
def cumsum(x, dim=None, *, dtype=None, axis=None) -> Tensor:
    """Running sum along ``dim`` (``None``: of the flattened tensor, NumPy's default; PyTorch
    requires ``dim``).  Ints/bools give int64; ``dtype=`` casts the input first (PyTorch).
    Floats accumulate in float64 (ints in int64) and are rounded once per element."""
    y, a, was_0d = _prep("cumsum", x, dim, axis)
    return _back(_scan("cumsum", y, a, dtype=_dtype_arg("cumsum", y, dtype)), was_0d)


@front_end(method=True)
def cumprod(x, dim=None, *, dtype=None, axis=None) -> Tensor:
    """Running product along ``dim`` (see ``cumsum`` for ``dim=None`` and ``dtype=``); the
    gradient handles zeros as PyTorch does."""
    y, a, was_0d = _prep("cumprod", x, dim, axis)
    return _back(_scan("cumprod", y, a, dtype=_dtype_arg("cumprod", y, dtype)), was_0d)


@front_end(method=True)
def logcumsumexp(x, dim=None, *, axis=None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably in float64 (ints give float32;
    PyTorch refuses them)."""
    y, a, was_0d = _prep("logcumsumexp", x, dim, axis)
    return _back(_scan("logcumsumexp", y, a), was_0d)


def _cumext(name, record, x, dim, axis):
    from .index import gather
    y, a, was_0d = _prep(name, x, dim, axis)
    idx = _scan(record, y, a)
    vals = gather(y, a, idx)
    return ScanResult(_back(vals, was_0d), _back(idx, was_0d))


@front_end(method=True)
def cummax(x, dim=None, *, axis=None) -> ScanResult:
    """``(values, indices)`` of the running maximum along ``dim``: ties take the later index,
    a NaN sticks (PyTorch); the values' gradient goes to the indices."""
    return _cumext("cummax", "cumargmax", x, dim, axis)


@front_end(method=True)
def cummin(x, dim=None, *, axis=None) -> ScanResult:
    """``(values, indices)`` of the running minimum along ``dim`` (see ``cummax``)."""
    return _cumext("cummin", "cumargmin", x, dim, axis)


@front_end(method=True)
def diff(x, n=1, dim=-1, prepend=None, append=None, *, axis=None) -> Tensor:
    """``torch.diff``: the ``n``-th forward difference along ``dim``, after concatenating
    ``prepend``/``append`` (tensors of ``x``'s rank whose other dims match) along it; bools give
    ``x[i+1] != x[i]`` (PyTorch's logical xor)."""
    from .elementwise import ne, sub
    from .index import getitem
    from .shape import cat
    x = tensor_arg("diff", x)
    n = int_arg("diff", "n", n)
    dim = torch_alias("diff", dim, -1, axis, "dim= and axis=")
    if n < 0:
        raise ArgumentValueError(f"diff: order n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ShapeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
    a = normalize_axis("diff", int_arg("diff", "dim", dim), x.ndim, x.shape)
    parts = []
    for what, t in (("prepend", prepend), ("x", x), ("append", append)):
        if t is None:
            continue
        t = tensor_arg("diff", t)
        if t.ndim != x.ndim or any(d != e for i, (d, e) in enumerate(zip(t.shape, x.shape))
                                   if i != a):
            raise ShapeError(f"diff: {what} of shape {tuple(t.shape)} does not match the input "
                             f"of shape {tuple(x.shape)} except along dim {a}")
        parts.append(t)
    if len({p.dtype for p in parts}) > 1:
        raise DTypeError(f"diff: prepend/append must have the input's dtype, got "
                         f"{dtype_names(parts)}")
    y = cat(parts, axis=a) if len(parts) > 1 else x
    head = (slice(None),) * a
    for _ in range(n):
        if y.shape[a] == 0:
            break
        hi, lo = getitem(y, head + (slice(1, None),)), getitem(y, head + (slice(None, -1),))
        y = ne(hi, lo) if y.dtype.is_bool else sub(hi, lo)
    return y
