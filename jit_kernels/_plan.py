"""Host-side planning shared by the kernel sets (device-neutral: NumPy and plain Python only).

Nothing here compiles or launches anything; the cpu and cuda sets pass in their own kernel
runners.  What lives here is what the two sets must agree on: which axes a reduction keeps, its
K (reduced) and R (kept) sizes, the fill value of an empty reduction, the accumulation dtypes,
how reductions and unary ops decompose into kernel calls, arg-reduction and ``cat`` shapes, and
the ``IndexError`` of ``take``/``gather``.
"""
from __future__ import annotations

import numpy as np

from jit_kernels import optable
from jit_kernels._layout import size_of

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)


# -- reductions --------------------------------------------------------------------------------

def size_class(nbytes: int) -> int:
    """Caching-allocator size class of ``nbytes``: rounded up to a quarter step of its leading
    power of two (4 classes per power of two, so a block is at most 25% larger than asked)."""
    nbytes = max(int(nbytes), 8)
    q = 1 << (nbytes.bit_length() - 3)
    return -(-nbytes // q) * q


def split_axes(shape, axes):
    """(kept dims, reduced dims, kept shape, R, K) of reducing ``shape`` over ``axes``."""
    nd = len(shape)
    kept = [d for d in range(nd) if d not in axes]
    red = [d for d in range(nd) if d in axes]
    kshape = [shape[d] for d in kept]
    return kept, red, kshape, size_of(kshape), size_of([shape[d] for d in red])


def reduce_shape(shape, axes, keepdims):
    """(sorted non-negative axes, result shape, K, R) of a reduction; no axes = all axes."""
    nd = len(shape)
    axes = tuple(sorted(a % nd for a in axes)) if nd else ()
    if nd and not axes:
        axes = tuple(range(nd))
    kshape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keepdims else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    return axes, kshape, size_of([shape[d] for d in axes]), size_of(kshape)


def empty_fill(op, out_dt):
    """The value of a reduction over nothing (the table's ``fill``: sum 0, prod 1, mean/var
    nan, logsumexp -inf; a NaN fill is 0 for a non-float result)."""
    fill = optable.empty_fill(op)
    if out_dt.kind != "f" and fill != fill:
        fill = 0
    return fill


def acc_dtype(op, in_dt, out_dt, bool_minmax=None):
    """Accumulation dtype by the table's ``acc`` rule: "input" (max/min) in the input dtype
    (bool as ``bool_minmax`` where a set cannot hold bools in its accumulator), "f64" in
    float64, "wide" float results in float64 and int/bool ones in int64."""
    r = optable.REDUCTIONS.get(op)
    rule = "wide" if r is None else r.acc
    if rule == "input":
        return bool_minmax if (bool_minmax is not None and in_dt.kind == "b") else in_dt
    if rule == "f64" or out_dt.kind == "f":
        return F64
    return I64 if out_dt.kind in "iub" else out_dt


def _fa(r, K, attrs):
    """The finaliser scale of reduction entry ``r`` over ``K`` elements."""
    if r.fa == "K":
        return float(K)
    if r.fa == "K-ddof":
        ddof = (attrs or {}).get("ddof", 0) or 0
        return float(max(K - ddof, 0))
    return 0.0


def reduce(op, x, axes, keepdims, out_dtype, attrs, *, run, full, reshape, bool_minmax=None):
    """``op`` over ``axes`` as calls of ``run(op, x, axes, acc_dt, out_dt, fa=0.0, center=None)``
    (a flat array of the kept-dims outputs), as the op table says: a one-pass reduction is one
    call; a two-pass one (``var``: mean, then squared deviations over ``max(K - ddof, 0)``;
    ``logsumexp``: the max, then the shifted sum of exponentials) first reduces its ``center``
    in float64, then runs its ``kernel`` around it.  Empty reductions are
    ``full(shape, fill, out_dt)``; the result is ``reshape(flat, shape)``."""
    out_dt = np.dtype(out_dtype)
    axes, kshape, K, R = reduce_shape(x.shape, axes, keepdims)
    if K == 0 or R == 0:
        return full(kshape, empty_fill(op, out_dt), out_dt)
    r = optable.REDUCTIONS.get(op)
    if r is None or not r.public:
        raise ValueError(f"unknown reduction {op!r}")
    in_dt = x.dtype
    if r.center is None:
        res = run(op, x, axes, acc_dtype(op, in_dt, out_dt, bool_minmax), out_dt,
                  fa=_fa(r, K, attrs))
    else:
        c = optable.REDUCTIONS[r.center]
        center = run(r.center, x, axes, acc_dtype(r.center, in_dt, F64, bool_minmax), F64,
                     fa=_fa(c, K, attrs))
        res = run(r.kernel, x, axes, acc_dtype(r.kernel, in_dt, out_dt, bool_minmax), out_dt,
                  fa=_fa(r, K, attrs), center=center)
    return reshape(res, kshape)


def arg_reduce_shape(op, shape, axis, keepdims):
    """(is_max, kept dims, reduced dims, result shape, R) of argmax/argmin over ``axis``
    (None: all axes)."""
    if op not in optable.ARG_REDUCE_OPS:
        raise ValueError(f"unknown arg reduction {op!r}")
    nd = len(shape)
    if axis is None:
        red = list(range(nd))
        kshape = (1,) * nd if keepdims else ()
    else:
        axis %= max(nd, 1)
        red = [axis]
        kshape = tuple(1 if d == axis else n for d, n in enumerate(shape)) if keepdims else \
            tuple(n for d, n in enumerate(shape) if d != axis)
    kept = [d for d in range(nd) if d not in red]
    return op == "argmax", kept, red, kshape, size_of([shape[d] for d in kept])


# -- elementwise -------------------------------------------------------------------------------

def unary(op, x, out_dtype, attrs, *, run):
    """``op`` as one call of ``run(op, operands, conversion dtypes, out dtype)``: ``logical_not``
    in bool, ``clamp`` as ident/clamp_lo/clamp_hi/clamp by which bounds are given."""
    out_dtype = np.dtype(out_dtype)
    if op == "logical_not":
        return run("logical_not", [x], (BOOL,), BOOL)
    if op == "clamp":
        lo = attrs.get("min") if attrs else None
        hi = attrs.get("max") if attrs else None
        if lo is None and hi is None:
            return run("ident", [x], (out_dtype,), out_dtype)
        if hi is None:
            return run("clamp_lo", [x, lo], (out_dtype, out_dtype), out_dtype)
        if lo is None:
            return run("clamp_hi", [x, hi], (out_dtype, out_dtype), out_dtype)
        return run("clamp", [x, lo, hi], (out_dtype,) * 3, out_dtype)
    return run(op, [x], (out_dtype,), out_dtype)


# -- data movement -----------------------------------------------------------------------------

def cat_plan(xs, axis):
    """(axis, result shape, [(x, start along axis, length)] of the non-empty pieces) of ``cat``."""
    x0 = xs[0]
    axis %= max(len(x0.shape), 1)
    total = sum(x.shape[axis] for x in xs)
    shape = tuple(x0.shape[:axis]) + (total,) + tuple(x0.shape[axis + 1:])
    pieces = []
    o = 0
    for x in xs:
        n = x.shape[axis]
        if n:
            pieces.append((x, o, n))
        o += n
    return axis, shape, pieces


def index_error(v, axis, n):
    return IndexError(f"index {int(v)} is out of bounds for axis {axis} with size {n}")


def numpy_key(key) -> tuple:
    """A protocol indexing key (slices concrete as ``slice.indices`` gives them) that NumPy reads
    the same way: an empty range becomes ``0:0`` (``indices`` may give a start or stop of -1,
    meaning "before index 0", which NumPy would read as "the last element")."""
    out = []
    for k in key:
        if isinstance(k, slice):
            if len(range(k.start, k.stop, k.step)) == 0:
                k = slice(0, 0, 1)
            elif k.stop < 0:
                k = slice(k.start, None, k.step)
        out.append(k)
    return tuple(out)
