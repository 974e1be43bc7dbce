"""Views and data movement for the cuda set: copy, reshape, permute, expand, index,
slice_assign, take, gather, scatter_add, cat.

Views only change ``CudaArray`` metadata (see ``_array``); ``reshape`` copies when NumPy would.
Copies go through the strided elementwise kernel (``elementwise.copy_into``).  ``take``/``gather``
check every index on the device first: a kernel records the smallest flat position of an index
outside ``[-n, n)`` with an atomic min in a one-element error array, which is read back; the host
then raises ``IndexError("index {i} is out of bounds for axis {axis} with size {n}")`` naming the
first bad index in C order, the same message and choice as the cpu set.

``scatter_add`` checks its indices the same way before writing anything, then runs one thread
per index position that adds with ``cuda.atomic.add`` (bool: stores ``True`` where ``src`` is
true, which is a logical or and needs no atomic).  Repeated indices therefore accumulate in
an unspecified order: float results can differ in the last bits from run to run (int and bool
results are exact); the cpu set adds in index order and is deterministic.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels import _plan
from jit_kernels._layout import size_of
from jit_kernels.cuda._array import (launch, CudaArray, TPB, alloc, blocks_for, use, view_expand,
                                     view_index, view_permute, view_reshape)
from jit_kernels.cuda.elementwise import copy_into


def copy(x: CudaArray) -> CudaArray:
    out = alloc(x.shape, x.dtype, x.index)
    copy_into(out, x)
    return out


def contiguous(x: CudaArray) -> CudaArray:
    return x if x.c_contiguous else copy(x)


def reshape(x, shape):
    v = view_reshape(x, tuple(shape))
    if v is None:
        v = view_reshape(copy(x), tuple(shape))
    return v


def permute(x, axes):
    return view_permute(x, axes)


def expand(x, shape):
    return view_expand(x, shape)


def index(x, key):
    return view_index(x, key)


def slice_assign(x, key, value):
    out = copy(x)
    dst = view_index(out, key)
    copy_into(dst, value)
    return out


def cat(xs, axis):
    x0 = xs[0]
    axis, shape, pieces = _plan.cat_plan(list(xs), axis)
    out = alloc(shape, x0.dtype, x0.index)
    for x, o, n in pieces:
        key = tuple(slice(0, s, 1) for s in shape[:axis]) + (slice(o, o + n, 1),) + \
            tuple(slice(0, s, 1) for s in shape[axis + 1:])
        copy_into(view_index(out, key), x)
    return out


# -- take / gather ------------------------------------------------------------------------------

@cuda.jit(cache=True)
def _check(idx, J, n, err):
    j = cuda.grid(1)
    while j < J:
        k = idx[j]
        if k < -n or k >= n:
            cuda.atomic.min(err, 0, np.int64(j))
        j += cuda.gridsize(1)


@cuda.jit(cache=True)
def _take(x, xo, I, n, idx, J, out, total):
    t = cuda.grid(1)
    while t < total:
        i = t % I
        r = t // I
        j = r % J
        o = r // J
        k = idx[j]
        if k < 0:
            k += n
        out[t] = x[xo + (o * n + k) * I + i]
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _gather(x, xo, xstr, ishape, axis, n, idx, out, total):
    t = cuda.grid(1)
    nd = len(ishape)
    while t < total:
        k = idx[t]
        if k < 0:
            k += n
        rem = t
        p = xo
        for d in range(nd - 1, -1, -1):
            c = rem % ishape[d]
            rem = rem // ishape[d]
            if d == axis:
                p += k * xstr[d]
            else:
                p += c * xstr[d]
        out[t] = x[p]
        t += cuda.gridsize(1)


def _first_bad(idx: CudaArray, n: int):
    """The first index value outside [-n, n) (C order), or None."""
    J = idx.size
    use(idx.index)
    err = cuda.to_device(np.array([J], dtype=np.int64))
    launch(_check, blocks_for(J, idx.index), TPB, idx.buf, J, n, err)
    pos = int(err.copy_to_host()[0])
    if pos >= J:
        return None
    return int(idx.buf[pos:pos + 1].copy_to_host()[0])


def _flat_indices(indices, index) -> CudaArray:
    if not isinstance(indices, CudaArray):
        from jit_kernels.cuda.memory import from_host
        indices = from_host(np.asarray(indices, dtype=np.int64), index)
    c = contiguous(indices)
    if c.offset != 0:
        c = copy(c)
    return c


def take(x, indices, axis):
    axis %= max(x.ndim, 1)
    if x.ndim == 0:
        x = reshape(x, (1,))
    idx = _flat_indices(indices, x.index)
    n = x.shape[axis]
    out_shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    out = alloc(out_shape, x.dtype, x.index)
    J = idx.size
    if J == 0:
        return out
    bad = _first_bad(idx, n)
    if bad is not None:
        raise _plan.index_error(bad, axis, n)
    if out.size == 0:
        return out
    xc = contiguous(x)
    I = size_of(x.shape[axis + 1:])
    total = out.size
    launch(_take, blocks_for(total, x.index), TPB, xc.buf, xc.offset, I, n, idx.buf, J, out.buf, total)
    return out


def gather(x, indices, axis):
    if x.ndim == 0:
        x = reshape(x, (1,))
        ishape = indices.shape
        return reshape(gather(x, reshape(indices, (size_of(ishape),)), 0), ishape)
    axis %= x.ndim
    idx = _flat_indices(indices, x.index)
    n = x.shape[axis]
    out = alloc(idx.shape, x.dtype, x.index)
    if out.size == 0:
        return out
    bad = _first_bad(idx, n)
    if bad is not None:
        raise _plan.index_error(bad, axis, n)
    total = out.size
    launch(_gather, blocks_for(total, x.index), TPB, x.buf, x.offset, tuple(x.strides), tuple(idx.shape),
                                             axis, n, idx.buf, out.buf, total)
    return out


# -- scatter_add ----------------------------------------------------------------------------------

@cuda.jit(device=True)
def _scatter_pos(t, ostr, io, istr, so, sstr, ishape, axis):
    """Positions of index/src element ``t`` (C order over ``ishape``) in ``idx``, ``src`` and
    of its row in ``out`` (every dim but ``axis``)."""
    rem = t
    pi = io
    ps = so
    po = 0
    for d in range(len(ishape) - 1, -1, -1):
        c = rem % ishape[d]
        rem = rem // ishape[d]
        pi += c * istr[d]
        ps += c * sstr[d]
        if d != axis:
            po += c * ostr[d]
    return pi, ps, po


@cuda.jit(cache=True)
def _scatter_add(out, ostr, idx, io, istr, src, so, sstr, ishape, axis, n, total):
    t = cuda.grid(1)
    while t < total:
        pi, ps, po = _scatter_pos(t, ostr, io, istr, so, sstr, ishape, axis)
        k = idx[pi]
        if k < 0:
            k += n
        cuda.atomic.add(out, po + k * ostr[axis], src[ps])
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _scatter_or(out, ostr, idx, io, istr, src, so, sstr, ishape, axis, n, total):
    t = cuda.grid(1)
    while t < total:
        pi, ps, po = _scatter_pos(t, ostr, io, istr, so, sstr, ishape, axis)
        if src[ps]:
            k = idx[pi]
            if k < 0:
                k += n
            out[po + k * ostr[axis]] = True
        t += cuda.gridsize(1)


def _distinct_part(a: CudaArray) -> CudaArray:
    """``a`` without the repeats of its stride-0 (broadcast) dims (index 0 on each): its first
    bad index in C order is the whole array's, so ``_first_bad`` need not copy the repeats."""
    if any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides)):
        a = view_index(a, tuple(slice(0, 1, 1) if (s == 0 and n > 1) else slice(0, n, 1)
                                for n, s in zip(a.shape, a.strides)))
    return a


def scatter_add(x, indices, src, axis):
    if not isinstance(indices, CudaArray):
        from jit_kernels.cuda.memory import from_host
        indices = from_host(np.asarray(indices, dtype=np.int64), x.index)
    if x.ndim == 0:
        one = (1,)
        return reshape(scatter_add(reshape(x, one), reshape(indices, one), reshape(src, one), 0), ())
    axis %= x.ndim
    n = x.shape[axis]
    out = copy(x)
    total = indices.size
    if total == 0:
        return out
    bad = _first_bad(_flat_indices(_distinct_part(indices), x.index), n)
    if bad is not None:
        raise _plan.index_error(bad, axis, n)
    kern = _scatter_or if x.dtype == np.bool_ else _scatter_add
    launch(kern, blocks_for(total, x.index), TPB, out.buf, tuple(out.strides), indices.buf,
           indices.offset, tuple(indices.strides), src.buf, src.offset, tuple(src.strides),
           tuple(indices.shape), axis, n, total)
    return out


# -- scatter_reduce (prod / amax / amin) ----------------------------------------------------------
_SCATTER_OPS = {"prod": 0, "amax": 1, "amin": 2}


@cuda.jit(cache=True)
def _scatter_reduce(out, ostr, idx, io, istr, src, so, sstr, ishape, axis, n, ncol, op):
    """One thread per column (a position of the index off ``axis``): its steps along the axis
    in order, ``out[q] = op(out[q], v)`` (columns write disjoint outputs: no atomics, and the
    result is deterministic); NaN propagates for amax/amin."""
    c = cuda.grid(1)
    while c < ncol:
        rem = c
        a = 0
        b = io
        s = so
        for d in range(len(ishape) - 1, -1, -1):
            if d != axis:
                k = rem % ishape[d]
                rem = rem // ishape[d]
                a += k * ostr[d]
                b += k * istr[d]
                s += k * sstr[d]
        for j in range(ishape[axis]):
            k = idx[b + j * istr[axis]]
            if k < 0:
                k += n
            q = a + k * ostr[axis]
            v = src[s + j * sstr[axis]]
            if op == 0:
                out[q] = out[q] * v
            elif op == 1:
                if v > out[q] or v != v:
                    out[q] = v
            elif v < out[q] or v != v:
                out[q] = v
        c += cuda.gridsize(1)


def scatter_reduce(x, indices, src, axis, reduce):
    if not isinstance(indices, CudaArray):
        from jit_kernels.cuda.memory import from_host
        indices = from_host(np.asarray(indices, dtype=np.int64), x.index)
    if x.ndim == 0:
        one = (1,)
        return reshape(scatter_reduce(reshape(x, one), reshape(indices, one), reshape(src, one), 0,
                                      reduce), ())
    axis %= x.ndim
    n = x.shape[axis]
    out = copy(x)
    if indices.size == 0:
        return out
    bad = _first_bad(_flat_indices(_distinct_part(indices), x.index), n)
    if bad is not None:
        raise _plan.index_error(bad, axis, n)
    ncol = 1
    for i, d in enumerate(indices.shape):
        if i != axis:
            ncol *= d
    if ncol == 0:
        return out
    launch(_scatter_reduce, blocks_for(ncol, x.index), TPB, out.buf, tuple(out.strides),
           indices.buf, indices.offset, tuple(indices.strides), src.buf, src.offset,
           tuple(src.strides), tuple(indices.shape), axis, n, ncol, _SCATTER_OPS[reduce])
    return out
