"""Data-dependent ops: ``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``unique``.

Records have one output, so the catalogue holds the two index-producing records, ``argsort``
and ``topk`` (int64, ``differentiable=False``), and every value result is ``gather(x, axis,
indices)``: gradients of the values flow back through the indices (gather's backward is a
scatter), captured graphs hold ``argsort``/``topk`` + ``gather``, and ONNX exports both
records as ``TopK`` (``argsort`` is ``TopK`` with k = the axis length).

Order (PyTorch's): NaN is larger than every number (last ascending, first descending, and
the largest for ``topk``); ``-0.0`` equals ``0.0``.  Sorting is always stable (the kernels are
radix sorts; ``stable=False`` gives the same result), so ties keep their input order; ``topk``
breaks ties by the lower index.  ``kthvalue``/``median`` are ``topk(k, largest=False)``'s
last index; ``median`` is the lower median and gives NaN (and the first NaN's index) when a
row holds one, as PyTorch does.

``unique`` has a data-dependent output shape: eagerly it sorts on the device and reads the
run boundaries back to the host; inside a capture scope it raises ``CaptureError`` with
``.kind == "DataDependentShape"``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dispatch import dispatch as run
from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, CaptureError, ShapeError
from ..tensor import Tensor
from .args import int_arg, tensor_arg, torch_alias
from ..core.registry import OpSpec, Plan, front_end, register
from ..core.shapes import normalize_axis, prod

__all__ = ["SortResult", "sort", "argsort", "topk", "kthvalue", "median", "unique"]


class SortResult(NamedTuple):
    """``(values, indices)``, as PyTorch's ``torch.return_types`` (also unpackable)."""

    values: Tensor
    indices: Tensor


# --------------------------------------------------------------------------- records
def _check_axis(name, x, axis):
    if type(axis) is not int or not 0 <= axis < max(x.ndim, 1):
        raise ShapeError(f"{name}: axis {axis!r} is not a normalised axis of a tensor of "
                         f"shape {tuple(x.shape)}")


def _infer_argsort(args, attrs):
    (x,) = args
    _check_axis("argsort", x, attrs["axis"])
    return Plan(tuple(x.shape), D.int64, x.dtype)


def _kernel_argsort(ks, p, args, attrs, plan, device):
    return ks.argsort(p[0], attrs["axis"], bool(attrs["descending"]), bool(attrs["stable"]))


def _infer_topk(args, attrs):
    (x,) = args
    axis, k = attrs["axis"], attrs["k"]
    _check_axis("topk", x, axis)
    n = x.shape[axis] if x.ndim else 1
    if type(k) is not int or not 0 <= k <= n:
        raise ShapeError(f"topk: k={k!r} is out of range for axis {axis} of size {n} "
                         f"(shape {tuple(x.shape)})")
    shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
    return Plan(shape, D.int64, x.dtype)


def _kernel_topk(ks, p, args, attrs, plan, device):
    return ks.topk(p[0], attrs["k"], attrs["axis"], bool(attrs["largest"]), bool(attrs["sorted"]))


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_topk_indices(ex, op, k, largest) -> str:
    (xt,) = op.inputs
    x = ex.names[xt.id]
    if xt.dtype.is_bool:                 # TopK takes numbers only
        x = ex.cast(x, xt.dtype, D.int32)
    _, idx = ex.node(ex.record(op), [x, ex.i64([int(k)])], n_out=2,
                     axis=int(op.attrs["axis"]), largest=int(bool(largest)), sorted=1)
    return idx


def _onnx_argsort(ex, op) -> str:       # TopK with k = the axis length
    xt = op.inputs[0]
    return _onnx_topk_indices(ex, op, xt.shape[op.attrs["axis"]], op.attrs["descending"])


def _onnx_topk(ex, op) -> str:
    return _onnx_topk_indices(ex, op, op.attrs["k"], op.attrs["largest"])


register(OpSpec("argsort", "index", _infer_argsort, _kernel_argsort, cost="compute",
                differentiable=False, onnx="TopK", onnx_lower=_onnx_argsort, uint64="order"))
register(OpSpec("topk", "index", _infer_topk, _kernel_topk, cost="compute",
                differentiable=False, onnx="TopK", onnx_lower=_onnx_topk, uint64="order"))


# --------------------------------------------------------------------------- helpers
def _axis(name, x, dim):
    if isinstance(dim, (tuple, list)):
        raise ShapeError(f"{name}: dim must be an int, got {dim!r}")
    dim = int_arg(name, "dim", dim)
    return normalize_axis(name, dim, x.ndim, x.shape) if x.ndim else (
        normalize_axis(name, dim, 1) * 0)


def _values(x, axis, idx):
    from .index import gather
    return gather(x, axis, idx)


def _flag(name, what, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name}: {what} must be a bool, got {v!r}")
    return bool(v)


def _as_1d(x):
    from .shape import reshape
    return reshape(x, (1,)) if x.ndim == 0 else x


def _back_0d(t, was_0d):
    from .shape import reshape
    return reshape(t, ()) if was_0d else t


# --------------------------------------------------------------------------- front end
@front_end(method=True)
def argsort(x, dim=-1, descending=False, stable=False, *, axis=None) -> Tensor:
    """Indices (int64) that sort ``x`` along ``dim`` (PyTorch's order: NaN last ascending,
    first descending).  Always stable: ties keep their input order (``stable`` is accepted
    for PyTorch's signature and changes nothing)."""
    x = tensor_arg("argsort", x)
    dim = torch_alias("argsort", dim, -1, axis, "dim= and axis=")
    a = _axis("argsort", x, dim)
    descending = _flag("argsort", "descending", descending)
    _flag("argsort", "stable", stable)
    y = _as_1d(x)
    idx = run("argsort", (y,), {"axis": a, "descending": descending, "stable": True})
    return _back_0d(idx, x.ndim == 0)


@front_end(method=True)
def sort(x, dim=-1, descending=False, stable=False, *, axis=None) -> SortResult:
    """``(values, indices)`` of ``x`` sorted along ``dim`` (see ``argsort``); the values are
    ``gather(x, dim, indices)``, so their gradient flows back through the indices."""
    x = tensor_arg("sort", x)
    dim = torch_alias("sort", dim, -1, axis, "dim= and axis=")
    a = _axis("sort", x, dim)
    descending = _flag("sort", "descending", descending)
    _flag("sort", "stable", stable)
    y = _as_1d(x)
    idx = run("argsort", (y,), {"axis": a, "descending": descending, "stable": True})
    vals = _values(y, a, idx)
    return SortResult(_back_0d(vals, x.ndim == 0), _back_0d(idx, x.ndim == 0))


def _topk_idx(name, x, k, a, largest):
    y = _as_1d(x)
    n = y.shape[a]
    if not 0 <= k <= n:
        raise ShapeError(f"{name}: k={k} is out of range for dim {a} of size {n} "
                         f"(shape {tuple(x.shape)})")
    return y, run("topk", (y,), {"k": k, "axis": a, "largest": largest, "sorted": True})


@front_end(method=True)
def topk(x, k, dim=-1, largest=True, sorted=True) -> SortResult:
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements
    along ``dim``, best first (also when ``sorted=False``); ties go to the lower index; NaN
    counts as the largest value."""
    x = tensor_arg("topk", x)
    k = int_arg("topk", "k", k)
    a = _axis("topk", x, dim)
    largest = _flag("topk", "largest", largest)
    _flag("topk", "sorted", sorted)
    y, idx = _topk_idx("topk", x, k, a, largest)
    vals = _values(y, a, idx)
    if x.ndim == 0:
        return SortResult(_back_0d(vals, k == 1), _back_0d(idx, k == 1))
    return SortResult(vals, idx)


def _kth(name, x, k, a, keepdim):
    """``(values, indices)`` of the k-th smallest along axis ``a`` (1-based ``k``)."""
    from .index import getitem
    from .shape import reshape
    y, idx = _topk_idx(name, x, k, a, False)
    key = (slice(None),) * a + (slice(k - 1, k),)
    idx = getitem(idx, key)
    vals = _values(y, a, idx)
    if not keepdim:
        shape = tuple(d for i, d in enumerate(y.shape) if i != a)
        vals, idx = reshape(vals, shape), reshape(idx, shape)
    if x.ndim == 0:
        vals, idx = reshape(vals, ()), reshape(idx, ())
    return vals, idx


@front_end(method=True)
def kthvalue(x, k, dim=-1, keepdim=False) -> SortResult:
    """``(values, indices)`` of the ``k``-th smallest element (1-based) along ``dim`` (NaN
    counts as the largest value); ``keepdim`` keeps ``dim`` with size 1."""
    x = tensor_arg("kthvalue", x)
    k = int_arg("kthvalue", "k", k)
    a = _axis("kthvalue", x, dim)
    n = x.shape[a] if x.ndim else 1
    if not 1 <= k <= n:
        raise ShapeError(f"kthvalue: k={k} is out of range for dim {a} of size {n} "
                         f"(shape {tuple(x.shape)}); k must be in [1, {n}]")
    return SortResult(*_kth("kthvalue", x, k, a, _flag("kthvalue", "keepdim", keepdim)))


@front_end(method=True)
def median(x, dim=None, keepdim=False):
    """PyTorch's lower median: the ``(n - 1) // 2``-th smallest of the ``n`` elements.
    ``dim=None``: the median of all elements as a 0-d tensor; with ``dim``: ``(values,
    indices)`` along it.  A NaN in a row gives NaN (and, with ``dim``, the first NaN's index)."""
    from .elementwise import where
    from .reduce import any as any_, argmax
    from .shape import reshape
    x = tensor_arg("median", x)
    keepdim = _flag("median", "keepdim", keepdim)
    if dim is None:
        if x.size == 0:
            raise ShapeError(f"median: cannot take the median of an empty tensor "
                             f"(shape {tuple(x.shape)})")
        flat = reshape(x, (x.size,))
        vals, idx = _kth("median", flat, (x.size - 1) // 2 + 1, 0, False)
        if x.dtype.is_float:
            from .elementwise import isnan
            nan = isnan(flat)
            vals = where(any_(nan), float("nan"), vals)
        return vals
    a = _axis("median", x, dim)
    n = x.shape[a] if x.ndim else 1
    if n == 0:
        raise ShapeError(f"median: cannot take the median of an empty dim {a} "
                         f"(shape {tuple(x.shape)})")
    vals, idx = _kth("median", x, (n - 1) // 2 + 1, a, keepdim)
    if x.dtype.is_float and x.ndim:
        from .elementwise import isnan
        nan = isnan(x)
        has = any_(nan, axis=a, keepdims=keepdim)
        first = argmax(nan, axis=a, keepdims=keepdim)
        idx = where(has, first, idx)
        vals = where(has, float("nan"), vals)
    return SortResult(vals, idx)


# --------------------------------------------------------------------------- unique
def _data_dependent(name, x):
    from .. import is_capture
    if is_capture(x):
        raise CaptureError("DataDependentShape",
                           f"{name}: the output shape depends on the input's values, which a "
                           f"capture scope does not have; call {name} outside the scope (eagerly) "
                           f"or capture the part of the computation after it")


@front_end(method=True)
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements of ``x`` (``dim=None``: flattened), always in ascending order
    (``sorted=False`` is accepted and sorts too, as PyTorch on cpu does); NaNs are each
    distinct, as in PyTorch.  ``return_inverse``: also the index of each input element (or
    slice along ``dim``) in the output; ``return_counts``: also how often each occurs.
    Returns a tensor, or a tuple (output, [inverse], [counts]).  The output shape depends on
    the values: inside a capture scope this raises ``CaptureError`` (kind
    ``"DataDependentShape"``)."""
    from .create import tensor
    from .elementwise import ne
    from .index import take
    from .reduce import any as any_
    from .shape import reshape, permute
    x = tensor_arg("unique", x)
    _flag("unique", "sorted", sorted)
    return_inverse = _flag("unique", "return_inverse", return_inverse)
    return_counts = _flag("unique", "return_counts", return_counts)
    _data_dependent("unique", x)
    dev = x.device
    if dim is None:
        rows = reshape(x, (x.size,))
        a, width = 0, 1
    else:
        if x.ndim == 0:
            raise ShapeError("unique: dim is given but the tensor is 0-d")
        a = _axis("unique", x, dim)
        order = (a,) + tuple(i for i in range(x.ndim) if i != a)
        moved = permute(x, order)
        width = prod(moved.shape[1:])
        rows = reshape(moved, (moved.shape[0], width))
    m = rows.shape[0]
    if dim is None:
        perm = argsort(rows, stable=True)
        srt = take(rows, perm, axis=0)
    else:
        # lexicographic order of the rows: stable sorts from the last column to the first
        perm = None
        if width == 0:
            perm = tensor(np.arange(m, dtype=np.int64), device=dev)
        for c in range(width - 1, -1, -1):
            col = rows[:, c] if perm is None else take(rows[:, c], perm, axis=0)
            o = argsort(col, stable=True)
            perm = o if perm is None else take(perm, o, axis=0)
        srt = take(rows, perm, axis=0) if m else rows
    if m:
        diff = ne(srt[1:], srt[:-1])
        if dim is not None:
            diff = any_(diff, axis=1)
        starts = np.flatnonzero(np.concatenate([[True], np.asarray(diff.numpy(), bool)]))
    else:
        starts = np.zeros(0, np.int64)
    out = take(srt, tensor(starts.astype(np.int64), device=dev), axis=0)
    if dim is not None:
        out = reshape(out, (len(starts),) + tuple(moved.shape[1:]))
        inv_order = np.argsort(np.asarray(order))
        out = permute(out, tuple(int(i) for i in inv_order))
    res = [out]
    if return_inverse:
        group = np.zeros(m, np.int64)
        if m:
            group[starts[1:]] = 1
            group = np.cumsum(group)
        inv = np.empty(m, np.int64)
        inv[np.asarray(perm.numpy(), np.int64)] = group
        inv_t = tensor(inv.reshape(x.shape if dim is None else (m,)), device=dev)
        res.append(inv_t)
    if return_counts:
        counts = np.diff(np.append(starts, m)).astype(np.int64)
        res.append(tensor(counts, device=dev))
    return res[0] if len(res) == 1 else tuple(res)
