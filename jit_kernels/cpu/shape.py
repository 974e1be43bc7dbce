"""Views and data movement: copy, reshape, permute, expand, index, slice_assign, take, gather,
scatter_add, cat (``cast``/``where`` live in ``elementwise``).

Views are NumPy views sharing storage: ``permute`` (transpose), ``expand`` (stride-0
``broadcast_to``, read-only), ``index`` (basic indexing), ``reshape`` when the layout allows.
Every copy goes through the strided copy kernel (reads and writes by strides, including
negative and zero strides).  ``take``/``gather``/``scatter_add`` validate every index inside a
kernel before moving data and raise ``IndexError("index {i} is out of bounds for axis {axis} with
size {n}")``; negative indices count from the end.

``scatter_add`` is deterministic: positions of the index that differ off the scatter axis never
write the same element, so those "columns" run in parallel while each column walks the axis in
order; every element therefore receives its additions in C order of the index, as
``np.add.at`` adds them.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels import _plan
from jit_kernels._plan import numpy_key
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu._layout import PAR_THRESHOLD, coalesce, flat_base, i64, nthreads, size_of
from jit_kernels.cpu._background import parallel_ready


@helper(error_model="numpy")
def _copy_range(lo, hi, shape, sb, so, ss, db, do, ds):
    nd = shape.shape[0]
    inner = shape[nd - 1]
    r = lo // inner
    c = lo - r * inner
    while lo < hi:
        rem = r
        ps = so + c * ss[nd - 1]
        pd = do + c * ds[nd - 1]
        for d in range(nd - 2, -1, -1):
            k = rem % shape[d]
            rem = rem // shape[d]
            ps += k * ss[d]
            pd += k * ds[d]
        n = min(inner - c, hi - lo)
        s1 = ss[nd - 1]
        d1 = ds[nd - 1]
        if s1 == 1 and d1 == 1:
            src = sb[ps:ps + n]
            dst = db[pd:pd + n]
            for i in range(n):
                dst[i] = src[i]
        elif d1 == 1:
            dst = db[pd:pd + n]
            for i in range(n):
                dst[i] = sb[ps + i * s1]
        else:
            for i in range(n):
                db[pd + i * d1] = sb[ps + i * s1]
        lo += n
        r += 1
        c = 0


@njit(cache=True, error_model="numpy")
def _copy_serial(total, shape, sb, so, ss, db, do, ds):
    _copy_range(np.int64(0), total, shape, sb, so, ss, db, do, ds)


@njit(cache=True, parallel=True, error_model="numpy")
def _copy_par(total, shape, sb, so, ss, db, do, ds, nchunks):
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
            _copy_range(lo, hi, shape, sb, so, ss, db, do, ds)


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` (same shape and dtype; ``dst`` writeable, any strides)."""
    total = dst.size
    if total == 0:
        return
    if src.shape != dst.shape:
        src = np.broadcast_to(src, dst.shape)
    sb, so, ses = flat_base(src)
    db, do, des = flat_base(dst)
    ses = [0 if n == 1 else s for n, s in zip(src.shape, ses)]
    shp, (ss, ds) = coalesce(dst.shape, [ses, des])
    args = (total, i64(shp), sb, so, i64(ss), db, do, i64(ds))
    if total >= PAR_THRESHOLD and parallel_ready(_copy_par, (*args, nt := nthreads())):
        _copy_par(*args, nt)
    else:  # (also while _copy_par builds in the background: the same copy)
        _copy_serial(*args)


def copy(x):
    if x.size < PAR_THRESHOLD:              # small: NumPy's copy (a memcpy when contiguous)
        return x.copy(order="C")
    out = np.empty(x.shape, dtype=x.dtype)
    copy_into(out, x)
    return out


def contiguous(x):
    return x if x.flags.c_contiguous else copy(x)


def reshape(x, shape):
    shape = tuple(shape)
    try:
        return x.reshape(shape, copy=False)
    except (ValueError, TypeError):
        return copy(x).reshape(shape)


def permute(x, axes):
    return x.transpose(tuple(axes))


def expand(x, shape):
    return np.broadcast_to(x, tuple(shape))


def _numpy_key(key):
    return numpy_key(key) + (Ellipsis,)  # trailing axes are implicit in the protocol's key


def index(x, key):
    return x[_numpy_key(key)]


def split(x, sizes, shapes):
    """The consecutive stretches of 1-D ``x`` of ``sizes`` as views of ``shapes``."""
    out, start = [], 0
    for n, shp in zip(sizes, shapes):
        out.append(x[start:start + n].reshape(shp))
        start += n
    return out


def index_backward(g, key, shape):
    """``slice_assign(zeros(shape), key, g)`` (basic indexing's gradient): the zeros from
    ``np.zeros``, whose pages the system provides zeroed when first touched, so the part of a
    large result that nothing writes costs no pass; then ``g`` copied into the region."""
    out = np.zeros(shape, g.dtype)
    if g.size:
        copy_into(out[_numpy_key(key)], g)
    return out


def slice_assign(x, key, value):
    out = copy(x)
    dst = out[_numpy_key(key)]
    if not isinstance(value, np.ndarray):
        from jit_kernels.cpu._layout import scalar_array
        value = scalar_array(value, x.dtype)
    copy_into(dst, value)
    return out


# -- take / gather ------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _check(idx, n):
    for j in range(idx.shape[0]):
        k = idx[j]
        if k < -n or k >= n:
            return True, np.int64(k)
    return False, np.int64(0)


def _check_indices(idx, axis, n):
    """Raise the protocol's ``IndexError`` for the first index of ``idx`` outside [-n, n)."""
    bad, v = _check(idx, n)
    if bad:
        raise _plan.index_error(v, axis, n)


@njit(cache=True, error_model="numpy")
def _take_serial(x3, idx, out3):
    O, n, I = x3.shape
    J = idx.shape[0]
    for o in range(O):
        for j in range(J):
            k = idx[j]
            if k < 0:
                k += n
            src = x3[o, k]
            dst = out3[o, j]
            for i in range(I):
                dst[i] = src[i]


@njit(cache=True, parallel=True, error_model="numpy")
def _take_par(x3, idx, out3):
    O, n, I = x3.shape
    J = idx.shape[0]
    for t in prange(O * J):
        o = t // J
        j = t - o * J
        k = idx[j]
        if k < 0:
            k += n
        src = x3[o, k]
        dst = out3[o, j]
        for i in range(I):
            dst[i] = src[i]


def take(x, indices, axis):
    if not isinstance(indices, np.ndarray):
        indices = np.asarray(indices, dtype=np.int64)
    axis %= max(x.ndim, 1)
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[axis]
    out_shape = x.shape[:axis] + indices.shape + x.shape[axis + 1:]
    out = np.empty(out_shape, dtype=x.dtype)
    idx = contiguous(indices).reshape(-1)
    O = size_of(x.shape[:axis])
    I = size_of(x.shape[axis + 1:])
    J = idx.shape[0]
    if J == 0:
        return out
    _check_indices(idx, axis, n)
    if O * I:
        args = (contiguous(x).reshape(O, n, I), idx, out.reshape(O, J, I))
        if out.size >= PAR_THRESHOLD and parallel_ready(_take_par, args):
            _take_par(*args)
        else:  # (also while _take_par builds in the background: the same gather)
            _take_serial(*args)
    return out


@helper(error_model="numpy")
def _gather_row(xf, xstr, idx, ishape, axis, n, out, r, inner):
    nd = ishape.shape[0]
    # position of row r (all index dims but the last), then walk the last
    p = 0
    rem = r
    for d in range(nd - 2, -1, -1):
        k = rem % ishape[d]
        rem = rem // ishape[d]
        if d != axis:
            p += k * xstr[d]
    base_i = r * inner
    for c in range(inner):
        k = idx[base_i + c]
        if k < 0:
            k += n
        q = p + k * xstr[axis]
        if axis != nd - 1:
            q += c * xstr[nd - 1]
        else:
            q = p + k * xstr[axis]
        out[base_i + c] = xf[q]


@njit(cache=True, error_model="numpy")
def _gather_serial(xf, xstr, idx, ishape, axis, n, out):
    inner = ishape[ishape.shape[0] - 1]
    for r in range(idx.shape[0] // inner):
        _gather_row(xf, xstr, idx, ishape, axis, n, out, np.int64(r), inner)


@njit(cache=True, parallel=True, error_model="numpy")
def _gather_par(xf, xstr, idx, ishape, axis, n, out):
    inner = ishape[ishape.shape[0] - 1]
    for r in prange(idx.shape[0] // inner):
        _gather_row(xf, xstr, idx, ishape, axis, n, out, np.int64(r), inner)


def gather(x, indices, axis):
    if not isinstance(indices, np.ndarray):
        indices = np.asarray(indices, dtype=np.int64)
    if x.ndim == 0:
        x = x.reshape(1)
        indices = indices.reshape(-1)
        return gather(x, indices, 0).reshape(indices.shape)
    axis %= x.ndim
    n = x.shape[axis]
    out = np.empty(indices.shape, dtype=x.dtype)
    if out.size == 0:
        return out
    xc = contiguous(x)
    xstr = i64([s // xc.itemsize for s in xc.strides])
    if xc.size == 0:
        xf = np.empty(1, dtype=x.dtype)
    else:
        xf = xc.reshape(-1)
    idx = contiguous(indices).reshape(-1)
    _check_indices(idx, axis, n)
    kern = _gather_par if out.size >= PAR_THRESHOLD else _gather_serial
    kern(xf, xstr, idx, i64(indices.shape), axis, n, out.reshape(-1))
    return out


# -- scatter_add ---------------------------------------------------------------------------------

_SCATTER_CHUNK = 1024   # columns per work item: per-column offsets are computed once per chunk


@helper(error_model="numpy")
def _scatter_chunk(ob, ostr, ib, io, istr, sb, so, sstr, cshape, axis, m, n, lo, hi, is_or,
                   po, pi, ps):
    """Columns ``lo..hi`` (positions of the index off ``axis``, C order): for each step ``j`` along
    the axis, ``ob[col + idx * ostr[axis]] += sb[...]`` (max for bool-as-uint8: logical or)."""
    nc = cshape.shape[0]
    for c in range(lo, hi):
        rem = c
        a = np.int64(0)
        b = io
        s = so
        for e in range(nc - 1, -1, -1):
            d = e if e < axis else e + 1          # column dim e is dim d of the index
            k = rem % cshape[e]
            rem = rem // cshape[e]
            a += k * ostr[d]
            b += k * istr[d]
            s += k * sstr[d]
        po[c - lo] = a
        pi[c - lo] = b
        ps[c - lo] = s
    oa = ostr[axis]
    ia = istr[axis]
    sa = sstr[axis]
    w = hi - lo
    for j in range(m):
        for t in range(w):
            k = np.int64(ib[pi[t] + j * ia])
            if k < 0:
                k += n
            q = po[t] + k * oa
            v = sb[ps[t] + j * sa]
            if is_or:
                ob[q] = max(ob[q], v)
            else:
                ob[q] += v


@njit(cache=True, error_model="numpy")
def _scatter_serial(ob, ostr, ib, io, istr, sb, so, sstr, cshape, axis, m, n, ncol, is_or):
    ch = min(ncol, _SCATTER_CHUNK)
    po = np.empty(ch, np.int64)
    pi = np.empty(ch, np.int64)
    ps = np.empty(ch, np.int64)
    for lo in range(0, ncol, ch):
        _scatter_chunk(ob, ostr, ib, io, istr, sb, so, sstr, cshape, axis, m, n, lo,
                       min(lo + ch, ncol), is_or, po, pi, ps)


@njit(cache=True, parallel=True, error_model="numpy")
def _scatter_par(ob, ostr, ib, io, istr, sb, so, sstr, cshape, axis, m, n, ncol, is_or):
    nchunks = (ncol + _SCATTER_CHUNK - 1) // _SCATTER_CHUNK
    for t in prange(nchunks):
        lo = t * _SCATTER_CHUNK
        hi = min(lo + _SCATTER_CHUNK, ncol)
        po = np.empty(hi - lo, np.int64)
        pi = np.empty(hi - lo, np.int64)
        ps = np.empty(hi - lo, np.int64)
        _scatter_chunk(ob, ostr, ib, io, istr, sb, so, sstr, cshape, axis, m, n, lo, hi, is_or,
                       po, pi, ps)


def _distinct_part(a):
    """``a`` without the repeats of its stride-0 (broadcast) dims: index 0 on each.  Its first
    element outside a range, in C order, is the whole array's first (that element has index 0
    on every broadcast dim), so checking it checks ``a``."""
    if any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides)):
        a = a[tuple(slice(0, 1) if (s == 0 and n > 1) else slice(None)
                    for n, s in zip(a.shape, a.strides))]
    return a


def scatter_add(x, indices, src, axis):
    if not isinstance(indices, np.ndarray):
        indices = np.asarray(indices, dtype=np.int64)
    if x.ndim == 0:
        return scatter_add(x.reshape(1), indices.reshape(1), src.reshape(1), 0).reshape(())
    axis %= x.ndim
    n = x.shape[axis]
    out = copy(x)
    if indices.size == 0:
        return out
    _check_indices(contiguous(_distinct_part(indices)).reshape(-1), axis, n)
    ishape = indices.shape
    ib, io, istr = flat_base(indices)
    sb, so, sstr = flat_base(src)
    ob = out.reshape(-1)
    ostr = [s // out.itemsize for s in out.strides]
    is_or = x.dtype == np.bool_
    if is_or:                       # bool: logical or, as max over 0/1 bytes
        ob, sb = ob.view(np.uint8), sb.view(np.uint8)
    m = ishape[axis]
    cshape = [d for i, d in enumerate(ishape) if i != axis]
    ncol = size_of(cshape)
    kern = _scatter_par if (indices.size >= PAR_THRESHOLD and ncol > 1) else _scatter_serial
    kern(ob, i64(ostr), ib, io, i64(istr), sb, so, i64(sstr), i64(cshape), axis, m, n, ncol,
         is_or)
    return out


def cat(xs, axis):
    xs = list(xs)
    axis, shape, pieces = _plan.cat_plan(xs, axis)
    total = size_of(shape)
    if total < PAR_THRESHOLD:       # small: NumPy's concatenate (one call, not a copy per piece)
        return np.concatenate(xs, axis=axis, dtype=xs[0].dtype, casting="unsafe")
    from jit_kernels.cpu import _pool
    out = _pool.empty(shape, xs[0].dtype)   # (a fresh large array page-faults on first touch)
    pre = (slice(None),) * axis
    for x, o, n in pieces:
        copy_into(out[pre + (slice(o, o + n),)], x)
    return out


# -- scatter_reduce (prod / amax / amin) ------------------------------------------------------
_SCATTER_OPS = {"prod": 0, "amax": 1, "amin": 2}


@njit(cache=True, error_model="numpy")
def _scatter_reduce_serial(ob, ostr, ib, io, istr, sb, so, sstr, ishape, axis, n, ncol, op):
    """For each column (a position of the index off ``axis``) and each step ``j`` along it:
    ``ob[q] = op(ob[q], v)`` with ``q`` the column's row at ``idx``; NaN propagates for
    amax/amin.  Columns write disjoint outputs, and steps apply in index order."""
    nd = ishape.shape[0]
    m = ishape[axis]
    oa = ostr[axis]
    ia = istr[axis]
    sa = sstr[axis]
    for c in range(ncol):
        rem = c
        a = np.int64(0)
        b = io
        s = so
        for d in range(nd - 1, -1, -1):
            if d == axis:
                continue
            k = rem % ishape[d]
            rem = rem // ishape[d]
            a += k * ostr[d]
            b += k * istr[d]
            s += k * sstr[d]
        for j in range(m):
            k = np.int64(ib[b + j * ia])
            if k < 0:
                k += n
            q = a + k * oa
            v = sb[s + j * sa]
            if op == 0:
                ob[q] = ob[q] * v
            elif op == 1:
                if v > ob[q] or v != v:
                    ob[q] = v
            elif v < ob[q] or v != v:
                ob[q] = v


def scatter_reduce(x, indices, src, axis, reduce):
    if not isinstance(indices, np.ndarray):
        indices = np.asarray(indices, dtype=np.int64)
    if x.ndim == 0:
        return scatter_reduce(x.reshape(1), indices.reshape(1), src.reshape(1), 0,
                              reduce).reshape(())
    axis %= x.ndim
    n = x.shape[axis]
    out = copy(x)
    if indices.size == 0:
        return out
    _check_indices(contiguous(_distinct_part(indices)).reshape(-1), axis, n)
    ishape = indices.shape
    ib, io, istr = flat_base(indices)
    sb, so, sstr = flat_base(src)
    ob = out.reshape(-1)
    ostr = [s // out.itemsize for s in out.strides]
    ncol = size_of([d for i, d in enumerate(ishape) if i != axis])
    _scatter_reduce_serial(ob, i64(ostr), ib, io, i64(istr), sb, so, i64(sstr), i64(ishape),
                           axis, n, ncol, _SCATTER_OPS[reduce])
    return out
