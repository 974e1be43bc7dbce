"""Reductions, arg-reductions and softmax.

``reduce`` moves the reduced axes to the end (a view) and reduces the trailing block, for any
strides.  Two generated kernel families (per op and dtypes, via ``load_generated_module``):

- ``rows``: one output per "row" of kept indices; the reduced block is walked in C order by
  segments of its innermost dim.  Used when the innermost reduced dim is contiguous (or as the
  general fallback).  With few rows each row is split into chunks that are combined at the end
  (``prange`` over (row, chunk) tasks, then over rows combining their chunks in order); its
  serial twin ``rows_par_serial`` runs the same tasks in order (the same bits) while
  ``rows_par`` builds in the background (``_background.parallel_ready``).
- ``cols``: when the kept dims coalesce into one contiguous dim (e.g. ``sum(axis=0)`` of a C
  array), the reduced index range is split across threads, each accumulating whole contiguous
  rows into its own partial vector; partials are combined at the end.

Accuracy: float sums accumulate contiguous segments in blocks of 256 (vectorised), blocks into
a level-2 accumulator every 64 blocks, then sequentially — error no worse than NumPy's pairwise
sum in practice; float32 inputs accumulate in float64.  ``sum``/``prod`` of bool/int accumulate in
the given ``out_dtype`` (int64).  ``mean``/``var`` of float32 accumulate in float64 and are stored
as ``out_dtype``; ``var`` is two-pass (mean, then squared deviations) and divides by
``max(n - ddof, 0)`` (as NumPy: 0/0 → nan, x/0 → inf).  Empty reductions: ``sum`` 0, ``prod`` 1,
``mean``/``var`` nan, ``logsumexp`` -inf.  ``max``/``min`` propagate NaN (callers guarantee a
non-empty axis).  ``logsumexp`` is max-shifted: all -inf → -inf, any +inf → +inf, NaN → NaN.
``argmax``/``argmin`` return the first index of the extreme; the first NaN wins (NumPy).
``softmax``/``log_softmax`` are max-shifted along one axis, exponentials summed in float64.
An int/bool input of a float-accumulating reduction is converted to float64
first and runs the float64 input's modules (``_shared``: one compile fewer per dtype, the same
bits).
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange, types
from numba.extending import overload

from jit_kernels import _plan, optable
from jit_kernels.codegen import load_generated_module
from jit_kernels.cpu import scalar_math as sm
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu._layout import PAR_THRESHOLD, coalesce, flat_base, i64, nthreads, size_of
from jit_kernels._source import NP_NAME as _NP_NAME, conv_expr
from jit_kernels.cpu.elementwise import render

_TEMPLATE = '''\
import math
import numpy as np
from numba import prange
from jit_kernels.cpu import scalar_math as sm
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu.reduce import _row_pos

A = {A}
FM = {{"reassoc", "contract"}}
_LANES_MAX = 256     # the widest row _range sums column by column (its accumulators stay in L1)


@njit(inline="always", error_model="numpy")
def init():
    return {init}


@njit(inline="always", error_model="numpy", fastmath=FM)
def step(a, v, c):
    return {step}


@njit(inline="always", error_model="numpy", fastmath=FM)
def comb(a, b):
    return {comb}


@njit(inline="always", error_model="numpy")
def fin(a, fa, c):
    {fin}


@helper(error_model="numpy", fastmath=FM)
def _seg(base, p, s, n, c):
    if s == 1:
        v = base[p:p + n]
        acc = init()
        mid = init()
        nb = 0
        for b0 in range(0, n, 256):
            w = v[b0:min(b0 + 256, n)]
            a = init()
            for i in range(w.shape[0]):
                a = step(a, {conv_w}, c)
            mid = comb(mid, a)
            nb += 1
            if nb == 64:
                acc = comb(acc, mid)
                mid = init()
                nb = 0
        return comb(acc, mid)
    a = init()
    for i in range(n):
        a = step(a, {conv_s}, c)
    return a


# inlined by Numba into its callers (rows_serial, _rows_part: no fastmath, as it has none), not
# compiled as a function of its own: a fifth less compile time for a reduction's first call
@njit(inline="always", error_model="numpy")
def _range(base, prow, rshape, rstr, lo, hi, c):
    nr = rshape.shape[0]
    inner = rshape[nr - 1]
    q = lo // inner
    col = lo - q * inner
    acc = init()
    if nr == 2:
        # one outer dim (the common coalesced case: a per-channel reduction over (N, H*W)):
        # row q starts at q*rstr[0], no division per row (the general walk's two per dim
        # cost more than a short row's sum)
        s0 = rstr[0]
        s1 = rstr[1]
        if s1 == 1 and inner <= _LANES_MAX and hi - lo >= 4 * inner:
            # short contiguous rows (a conv bias's gradient: (N, H*W) per channel): each row
            # steps one accumulator per column (vectorised over the row), then the columns
            # combine in order; a per-row _seg spent more on its set-up than on a 16-wide sum
            if col != 0:
                n = inner - col
                acc = comb(acc, _seg(base, prow + q * s0 + col, s1, n, c))
                lo += n
                q += 1
                col = 0
            a = np.empty(inner, A)
            for j in range(inner):
                a[j] = init()
            while lo + inner <= hi:
                p0 = prow + q * s0
                v = base[p0:p0 + inner]
                for j in range(inner):
                    a[j] = step(a[j], {conv_vj}, c)
                lo += inner
                q += 1
            for j in range(inner):
                acc = comb(acc, a[j])
        while lo < hi:
            n = min(inner - col, hi - lo)
            acc = comb(acc, _seg(base, prow + q * s0 + col * s1, s1, n, c))
            lo += n
            q += 1
            col = 0
        return acc
    while lo < hi:
        p = prow + col * rstr[nr - 1]
        rem = q
        for d in range(nr - 2, -1, -1):
            k = rem % rshape[d]
            rem = rem // rshape[d]
            p += k * rstr[d]
        n = min(inner - col, hi - lo)
        acc = comb(acc, _seg(base, p, rstr[nr - 1], n, c))
        lo += n
        q += 1
        col = 0
    return acc


@njit(cache=True, error_model="numpy")
def rows_serial(base, off, oshape, ostr, rshape, rstr, center, out, K, fa):
    for r in range(out.shape[0]):
        c = center[r]
        out[r] = {store}


@helper(error_model="numpy")
def _rows_part(base, off, oshape, ostr, rshape, rstr, center, K, nsplit, chunk, part, t):
    # task t of rows_par: chunk s of row r
    r = t // nsplit
    s = t - r * nsplit
    lo = s * chunk
    hi = min(lo + chunk, K)
    if lo < hi:
        part[t] = _range(base, _row_pos(off, oshape, ostr, r), rshape, rstr, lo, hi, center[r])
    else:
        part[t] = init()


@helper(error_model="numpy")
def _rows_comb(part, center, out, fa, nsplit, r):
    # row r's chunks combined in order
    a = init()
    for s in range(nsplit):
        a = comb(a, part[r * nsplit + s])
    c = center[r]
    out[r] = {store_a}


@njit(cache=True, parallel=True, error_model="numpy")
def rows_par(base, off, oshape, ostr, rshape, rstr, center, out, K, fa, nsplit):
    R = out.shape[0]
    part = np.empty(R * nsplit, A)
    chunk = (K + nsplit - 1) // nsplit
    for t in prange(R * nsplit):    # (int64 indices, as the twin's: one compiled body)
        _rows_part(base, off, oshape, ostr, rshape, rstr, center, K, nsplit, chunk, part,
                   np.int64(t))
    for r in prange(R):
        _rows_comb(part, center, out, fa, nsplit, np.int64(r))


@njit(cache=True, error_model="numpy")
def rows_par_serial(base, off, oshape, ostr, rshape, rstr, center, out, K, fa, nsplit):
    # rows_par's tasks in order: the same chunks, combined in the same order (the same bits)
    R = out.shape[0]
    part = np.empty(R * nsplit, A)
    chunk = (K + nsplit - 1) // nsplit
    for t in range(R * nsplit):
        _rows_part(base, off, oshape, ostr, rshape, rstr, center, K, nsplit, chunk, part, t)
    for r in range(R):
        _rows_comb(part, center, out, fa, nsplit, r)


@helper(error_model="numpy", fastmath=FM)
def _cols_rows(base, p, rs, n, w, cc, a):
    q = 0
    while q + 4 <= n:  # four rows per sweep of the accumulator
        p0 = p + q * rs
        v = base[p0:p0 + w]
        v1 = base[p0 + rs:p0 + rs + w]
        v2 = base[p0 + 2 * rs:p0 + 2 * rs + w]
        v3 = base[p0 + 3 * rs:p0 + 3 * rs + w]
        for j in range(w):
            c = cc[j]
            a[j] = step(step(step(step(a[j], {conv_vj}, c), {conv_v1}, c), {conv_v2}, c), {conv_v3}, c)
        q += 4
    while q < n:
        v = base[p + q * rs:p + q * rs + w]
        for j in range(w):
            a[j] = step(a[j], {conv_vj}, cc[j])
        q += 1


@helper(error_model="numpy", fastmath=FM)
def _cols_block(base, off, N, rshape, rstr, center, acc, lo, hi, j0, j1):
    # a local contiguous accumulator (vectorises; the output rows may be strided views);
    # the rows of one task are walked as runs along the innermost reduced dim
    nr = rshape.shape[0]
    w = j1 - j0
    cc = center[j0:j1]
    a = np.empty(w, A)
    for j in range(w):
        a[j] = init()
    inner = rshape[nr - 1]
    q = lo
    while q < hi:
        p = off + j0
        rem = q // inner
        c = q - rem * inner
        p += c * rstr[nr - 1]
        for d in range(nr - 2, -1, -1):
            k = rem % rshape[d]
            rem = rem // rshape[d]
            p += k * rstr[d]
        n = min(inner - c, hi - q)
        _cols_rows(base, p, rstr[nr - 1], n, w, cc, a)
        q += n
    for j in range(w):
        acc[j] = a[j]


@njit(cache=True, parallel=True, error_model="numpy")
def cols_par(base, off, N, rshape, rstr, center, out, K, fa, nsplit, jb):
    nj = (N + jb - 1) // jb
    part = np.empty((nsplit, N), A)
    chunk = (K + nsplit - 1) // nsplit
    for t in prange(nsplit * nj):
        s = t // nj
        jj = t - s * nj
        j0 = jj * jb
        j1 = min(j0 + jb, N)
        lo = s * chunk
        hi = min(lo + chunk, K)
        _cols_block(base, off, N, rshape, rstr, center, part[s, j0:j1], lo, hi, j0, j1)
    for j in prange(N):
        a = init()
        for s in range(nsplit):
            a = comb(a, part[s, j])
        c = center[j]
        out[j] = {store_a}


@njit(cache=True, error_model="numpy")
def cols_serial(base, off, N, rshape, rstr, center, out, K, fa):
    acc = np.empty(N, A)
    z = np.int64(0)
    _cols_block(base, off, N, rshape, rstr, center, acc, z, K, z, N)
    for j in range(N):
        c = center[j]
        out[j] = {store_acc}
'''


def _spec(op, in_dt, acc_dt):
    """(init, step, comb, fin) source for op with accumulation dtype ``acc_dt``: the op table's
    (``jit_kernels.optable.REDUCTIONS``) rendered in cpu terms."""
    return tuple(render(p, acc_dt) for p in optable.reduction_spec(op, acc_dt))


_MODS: dict = {}


def _module(op, in_dt, acc_dt, out_dt):
    key = (op, in_dt, acc_dt, out_dt)
    mod = _MODS.get(key)
    if mod is None:
        init, step, comb, fin = _spec(op, in_dt, acc_dt)
        fin_dt = acc_dt
        store_expr = lambda e: conv_expr(e, fin_dt, out_dt) if (fin_dt != out_dt or out_dt.kind != "f") else e
        src = _TEMPLATE.format(
            A=_NP_NAME[acc_dt.name], init=init, step=step, comb=comb, fin=fin,
            conv_w=conv_expr("w[i]", in_dt, acc_dt), conv_s=conv_expr("base[p + i * s]", in_dt, acc_dt),
            conv_vj=conv_expr("v[j]", in_dt, acc_dt), conv_v1=conv_expr("v1[j]", in_dt, acc_dt),
            conv_v2=conv_expr("v2[j]", in_dt, acc_dt), conv_v3=conv_expr("v3[j]", in_dt, acc_dt),
            store=store_expr("fin(_range(base, _row_pos(off, oshape, ostr, r), rshape, rstr, "
                             "np.int64(0), K, c), fa, c)"),
            store_a=store_expr("fin(a, fa, c)"), store_acc=store_expr("fin(acc[j], fa, c)"),
        )
        mod = load_generated_module(src, f"red_{op}_{in_dt.name}_{acc_dt.name}_{out_dt.name}")
        _MODS[key] = mod
    return mod


def _kernel_plan(op, shape, es, axes, in_dt, acc_dt, out_dt):
    """How to reduce an array of ``shape`` and element strides ``es`` over ``axes``:
    ``(kernel, args, tail, R, K, twin)`` for the call ``kernel(base, off, *args, center, out, K,
    fa, *tail)`` (kernel None when there is no output, R == 0); ``twin``, when not None, is the
    serial variant that gives ``kernel``'s bits while ``kernel`` builds in the background
    (``_launch``)."""
    kept, red, kshape, R, K = _plan.split_axes(shape, axes)
    if R == 0:
        return None, (), (), R, K, None
    mod = _module(op, in_dt, acc_dt, out_dt)
    oshape, (ostr,) = coalesce(kshape, [[es[d] for d in kept]])
    rshape, (rstr,) = coalesce([shape[d] for d in red], [[es[d] for d in red]])
    par = R * K >= PAR_THRESHOLD
    nt = nthreads()
    rs, rst = i64(rshape), i64(rstr)
    if len(oshape) == 1 and ostr[0] == 1 and R >= 16 and rstr[-1] != 1:
        if par:
            jb = max(256, -(-R // nt))
            nj = -(-R // jb)
            nsplit = max(1, min(-(-2 * nt // nj), K))
            return mod.cols_par, (R, rs, rst), (nsplit, jb), R, K, None
        return mod.cols_serial, (R, rs, rst), (), R, K, None
    os_, ost = i64(oshape), i64(ostr)
    if par:
        nsplit = 1 if R >= 2 * nt else max(1, min(-(-2 * nt // R), -(-K // 4096)))
        return mod.rows_par, (os_, ost, rs, rst), (nsplit,), R, K, mod.rows_par_serial
    return mod.rows_serial, (os_, ost, rs, rst), (), R, K, None


def _launch(fn, twin, args):
    """``fn(*args)``, or ``twin(*args)`` (the same bits) while ``fn`` builds in the background."""
    if twin is not None and not parallel_ready(fn, args):
        fn = twin
    fn(*args)


def _shared(in_dt, acc_dt, out_dt):
    """(input dtype, kernel result dtype) of the generated module that serves a reduction of
    ``in_dt`` accumulated in ``acc_dt`` and stored as ``out_dt``, so one module serves several
    dtype triples (fewer first-call compiles): an int/bool input of a float accumulation is
    converted to the accumulator first (the kernel converts each element the same way), and a
    result dtype other than the accumulator's is cast afterwards where the input is already in
    the accumulator's dtype (the kernel rounds each result the same way).  Bit for bit what the
    triple's own module gives."""
    if in_dt.kind in "biu" and acc_dt.kind == "f":
        in_dt = acc_dt
    return in_dt, (acc_dt if in_dt == acc_dt else out_dt)


def _run(op, x, axes, acc_dt, out_dt, fa=0.0, center=None):
    """Reduce ``x`` over ``axes`` with op; returns a flat C-ordered array of kept-dims outputs."""
    k_dt = _shared(x.dtype, acc_dt, out_dt)[1]     # (``reduce`` converted the input already)
    if k_dt != out_dt:
        return _run(op, x, axes, acc_dt, k_dt, fa, center).astype(out_dt)
    base, off, es = flat_base(x)
    fn, args, tail, R, K, twin = _kernel_plan(op, x.shape, es, axes, x.dtype, acc_dt, out_dt)
    out = np.empty(R, dtype=out_dt)
    if fn is not None:
        if center is None:
            center = np.zeros(R, dtype=np.float64)
        _launch(fn, twin, (base, off, *args, center, out, K, fa, *tail))
    return out


# Per-call plans for one-pass reductions of C-contiguous arrays, keyed by (op, shape, dtype,
# axes, keepdims, out dtype): everything ``_plan.reduce`` and ``_run`` work out from the metadata
# (kernel, its layout arguments, the result shape), so a repeated call only allocates and launches.
_RPLANS: dict = {}
_ONE_PASS = optable.ONE_PASS


def _one_pass_plan(op, x, axes, keepdims, out_dt):
    axes, kshape, K, R = _plan.reduce_shape(x.shape, axes, keepdims)
    if K == 0 or R == 0:
        return None
    acc_dt = _plan.acc_dtype(op, x.dtype, out_dt)
    if _shared(x.dtype, acc_dt, out_dt) != (x.dtype, out_dt):
        return None                 # a shared module's conversions: ``_run``'s general path
    fa = _plan._fa(optable.REDUCTIONS[op], K, None)
    es = [st // x.itemsize for st in x.strides]
    fn, args, tail, R, K, twin = _kernel_plan(op, x.shape, es, axes, x.dtype, acc_dt, out_dt)
    center = np.zeros(R, dtype=np.float64)      # read only (the one-pass ops ignore it)
    return fn, args + (center,), (K, fa) + tail, R, out_dt, kshape, twin


def reduce(op, x, axes, keepdims, out_dtype, attrs):
    in_dt = _shared(x.dtype, _plan.acc_dtype(op, x.dtype, np.dtype(out_dtype)), None)[0]
    if in_dt != x.dtype:
        x = x.astype(in_dt)          # once for both passes of var/logsumexp (``_shared``)
    if op in _ONE_PASS and type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable:
        key = (op, x.shape, x.dtype, axes, keepdims, out_dtype)
        p = _RPLANS.get(key)
        if p is None:
            p = _one_pass_plan(op, x, axes, keepdims, np.dtype(out_dtype))
            if p is not None:
                if len(_RPLANS) > 4096:
                    _RPLANS.clear()
                _RPLANS[key] = p
        if p is not None:
            fn, pre, post, R, out_dt, kshape, twin = p
            out = np.empty(R, dtype=out_dt)
            if twin is None:
                fn(x.reshape(-1), 0, *pre, out, *post)
            else:
                _launch(fn, twin, (x.reshape(-1), 0, *pre, out, *post))
            return out.reshape(kshape)
    from jit_kernels.cpu import memory
    return _plan.reduce(op, x, axes, keepdims, out_dtype, attrs, run=_run,
                        full=lambda shape, fill, dt: memory.full(shape, fill, dt, 0),
                        reshape=lambda res, shape: res.reshape(shape))


# ---------------------------------------------------------------------------------------------
# arg-reductions

@helper(error_model="numpy")
def _arg_row(base, prow, rshape, rstr, is_max):
    nr = rshape.shape[0]
    inner = rshape[nr - 1]
    K = 1
    for d in range(nr):
        K *= rshape[d]
    best = base[prow]
    bi = 0
    if best != best:
        return 0
    idx = 0
    q = 0
    while idx < K:
        p = prow
        rem = q
        for d in range(nr - 2, -1, -1):
            k = rem % rshape[d]
            rem = rem // rshape[d]
            p += k * rstr[d]
        s = rstr[nr - 1]
        for i in range(inner):
            v = base[p + i * s]
            if v != v:
                return idx + i
            if is_max:
                if v > best:
                    best = v
                    bi = idx + i
            else:
                if v < best:
                    best = v
                    bi = idx + i
        idx += inner
        q += 1
    return bi


@helper(error_model="numpy")
def _row_pos(off, oshape, ostr, r):
    p = off
    rem = r
    for d in range(oshape.shape[0] - 1, -1, -1):
        k = rem % oshape[d]
        rem = rem // oshape[d]
        p += k * ostr[d]
    return p


def _vmax(a, b):
    pass


def _vmin(a, b):
    pass


@overload(_vmax, inline="always")
def _ov_vmax(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: sm.fmax_nan(a, b)
    return lambda a, b: a if a >= b else b


@overload(_vmin, inline="always")
def _ov_vmin(a, b):
    if isinstance(a, types.Float):
        return lambda a, b: sm.fmin_nan(a, b)
    return lambda a, b: a if a <= b else b


_ARG_BLOCK = 2048


@helper(error_model="numpy")
def _first_eq(w, m):
    """Lowest index of ``w`` holding ``m`` (NaN matches NaN); vectorised."""
    n = np.int32(w.shape[0])  # blocks are small: int32 lanes vectorise twice as wide
    j = n
    if m != m:
        for i in range(n):
            j = min(j, np.int32(i) if w[i] != w[i] else n)
    else:
        for i in range(n):
            j = min(j, np.int32(i) if w[i] == m else n)
    return np.int64(j)


@helper(error_model="numpy")
def _arg_contig(v, is_max):
    """First index of the max (min) of contiguous ``v`` (non-empty); the first NaN wins.

    One vectorised pass over cache-sized blocks of ``_ARG_BLOCK`` elements keeps the best block
    max (min) and the first block reaching it (a block holding a NaN stops the pass); then
    that one block is searched for its first match."""
    K = v.shape[0]
    best = v[0]
    bb = 0
    for b0 in range(0, K, _ARG_BLOCK):
        w = v[b0:min(b0 + _ARG_BLOCK, K)]
        n = w.shape[0]
        m = w[0]
        if is_max:
            for i in range(n):
                m = _vmax(m, w[i])
            better = m > best
        else:
            for i in range(n):
                m = _vmin(m, w[i])
            better = m < best
        if m != m:
            return b0 + _first_eq(w, m)
        if better:
            best = m
            bb = b0
    return bb + _first_eq(v[bb:min(bb + _ARG_BLOCK, K)], best)


@helper(error_model="numpy")
def _arg_one(base, p, rshape, rstr, is_max):
    if rshape.shape[0] == 1 and rstr[0] == 1:
        return _arg_contig(base[p:p + rshape[0]], is_max)
    return _arg_row(base, p, rshape, rstr, is_max)


@njit(cache=True, error_model="numpy")
def _arg_serial(base, off, oshape, ostr, rshape, rstr, out, is_max):
    for r in range(out.shape[0]):
        out[r] = _arg_one(base, _row_pos(off, oshape, ostr, np.int64(r)), rshape, rstr, is_max)


@njit(cache=True, parallel=True, error_model="numpy")
def _arg_par(base, off, oshape, ostr, rshape, rstr, out, is_max):
    for r in prange(out.shape[0]):
        out[r] = _arg_one(base, _row_pos(off, oshape, ostr, np.int64(r)), rshape, rstr, is_max)


@njit(cache=True, parallel=True, error_model="numpy")
def _arg_split(v, is_max, nsplit, res):
    """One contiguous row split across threads: ``res[k]`` is the first index of the extreme of
    chunk k (absolute); the caller combines (first NaN, then the extreme, then the lowest index)."""
    K = v.shape[0]
    chunk = (K + nsplit - 1) // nsplit
    for k in prange(nsplit):
        lo = k * chunk
        hi = min(lo + chunk, K)
        if lo < hi:
            res[k] = lo + _arg_contig(v[lo:hi], is_max)
        else:
            res[k] = -1


def arg_reduce(op, x, axis, keepdims):
    is_max, kept, red, kshape, R = _plan.arg_reduce_shape(op, x.shape, axis, keepdims)
    out = np.empty(R, dtype=np.int64)
    if R == 0:
        return out.reshape(kshape)
    base, off, es = flat_base(x)
    oshape, (ostr,) = coalesce([x.shape[d] for d in kept], [[es[d] for d in kept]])
    rshape, (rstr,) = coalesce([x.shape[d] for d in red], [[es[d] for d in red]])
    if R == 1 and len(rshape) == 1 and rstr[0] == 1 and x.size >= 4 * PAR_THRESHOLD:
        nsplit = 4 * nthreads()
        res = np.empty(nsplit, np.int64)
        v = base[off:off + rshape[0]]
        _arg_split(v, is_max, nsplit, res)
        bi = -1
        for k in res:
            if k < 0:
                continue
            val = v[k]
            if val != val:
                bi = int(k)
                break
            if bi < 0 or (val > v[bi] if is_max else val < v[bi]):
                bi = int(k)
        out[0] = bi
        return out.reshape(kshape)
    args = (base, off, i64(oshape), i64(ostr), i64(rshape), i64(rstr), out, is_max)
    if R > 1 and x.size >= PAR_THRESHOLD:
        _arg_par(*args)
    else:
        _arg_serial(*args)
    return out.reshape(kshape)


# ---------------------------------------------------------------------------------------------
# softmax

@helper(error_model="numpy")
def _vmax_row(v):
    m = v[0]
    for i in range(v.shape[0]):
        m = sm.fmax_nan(m, v[i])
    return m


@helper(error_model="numpy")
def _exp_shift(xv, m, ov):
    for i in range(xv.shape[0]):
        ov[i] = sm.exp(xv[i] - m)


@helper(error_model="numpy", fastmath={"reassoc", "contract"})
def _sum64(v):
    s = 0.0
    for i in range(v.shape[0]):
        s += np.float64(v[i])
    return s


@helper(error_model="numpy")
def _softmax_row(xb, px, sx, ob, po, so, K, log):
    s = 0.0
    if sx == 1 and so == 1:
        # contiguous row (cache-resident): vectorised max; exp into the output; float64 sum
        # of the output (reassociated, vectorised); scale (or shift for log-softmax)
        xv = xb[px:px + K]
        ov = ob[po:po + K]
        m = _vmax_row(xv)
        _exp_shift(xv, m, ov)
        s = _sum64(ov)
        if log:
            ls = np.float64(m) + math.log(s)
            for i in range(K):
                ov[i] = xv[i] - ls
        else:
            inv = 1.0 / s
            for i in range(K):
                ov[i] = ov[i] * inv
        return
    m = xb[px]
    for i in range(1, K):
        v = xb[px + i * sx]
        if v != v or v > m:
            m = v
            if v != v:
                break
    if log:
        for i in range(K):
            s += np.float64(sm.exp(xb[px + i * sx] - m))
        ls = np.float64(m) + math.log(s)
        for i in range(K):
            ob[po + i * so] = xb[px + i * sx] - ls
    else:
        for i in range(K):
            e = sm.exp(xb[px + i * sx] - m)
            ob[po + i * so] = e
            s += np.float64(e)
        inv = 1.0 / s
        for i in range(K):
            ob[po + i * so] = ob[po + i * so] * inv


@njit(cache=True, error_model="numpy")
def _softmax_serial(xb, xoff, oshape, xostr, sx, ob, oostr, so, K, log):
    R = 1
    for d in range(oshape.shape[0]):
        R *= oshape[d]
    for r in range(R):
        ri = np.int64(r)
        _softmax_row(xb, _row_pos(xoff, oshape, xostr, ri), sx, ob,
                     _row_pos(np.int64(0), oshape, oostr, ri), so, K, log)


@njit(cache=True, parallel=True, error_model="numpy")
def _softmax_par(xb, xoff, oshape, xostr, sx, ob, oostr, so, K, log):
    R = 1
    for d in range(oshape.shape[0]):
        R *= oshape[d]
    for r in prange(R):
        ri = np.int64(r)
        _softmax_row(xb, _row_pos(xoff, oshape, xostr, ri), sx, ob,
                     _row_pos(np.int64(0), oshape, oostr, ri), so, K, log)


@helper(error_model="numpy")
def _ce_bad_target(t, K):
    """The first row whose target is outside [-K, K) (``gather``'s and ``scatter_add``'s
    range), or -1."""
    for i in range(t.shape[0]):
        if t[i] < -K or t[i] >= K:
            return i
    return -1


@helper(error_model="numpy")
def _ce_target(t, i, K):
    """Row i's target, a negative one counted from the end (as those kernels take it)."""
    k = t[i]
    return k + K if k < 0 else k


@njit(cache=True, error_model="numpy")
def _ce_grad_serial(xf, t, sc, per_row, n_div, neg1, K, out):
    bad = _ce_bad_target(t, K)
    if bad >= 0:
        return bad
    s = sc[0]
    if n_div > 0:
        s = s / n_div
    for i in range(t.shape[0]):
        # the softmax kernel's row (the same bits), then scatter_add's -1 at the target and
        # the multiplication by the scale, each one rounding as the separate kernels round
        _softmax_row(xf, i * K, 1, out, i * K, 1, K, False)
        k = i * K + _ce_target(t, i, K)
        out[k] = out[k] + neg1
        if per_row:
            s = sc[i]
        for j in range(i * K, i * K + K):
            out[j] = out[j] * s
    return -1


@njit(cache=True, error_model="numpy")
def _ce_loss_serial(xf, t, K, row, out):
    bad = _ce_bad_target(t, K)
    if bad >= 0:
        return bad
    for i in range(t.shape[0]):
        # the log-softmax kernel's row (the same bits), the target's entry, negated
        _softmax_row(xf, i * K, 1, row, 0, 1, K, True)
        out[i] = -row[_ce_target(t, i, K)]
    return -1


def _ce_operands(x, target):
    """(flat C-contiguous logits, C-contiguous targets) for the one-pass kernels, or None where
    the separate kernels serve (a parallel softmax's size, no classes)."""
    if x.size >= PAR_THRESHOLD or x.ndim != 2 or x.shape[1] == 0:
        return None
    xf = x.reshape(-1) if (x.flags.c_contiguous and x.flags.writeable) else x.copy().reshape(-1)
    return xf, (target if target.flags.c_contiguous else target.copy())


def _ce_run(kernel, args, target, K) -> bool:
    """Run one-pass kernel ``kernel`` on ``args``; False while it builds in the background (the
    caller then runs the kernels it replaces).  A target out of range raises IndexError."""
    if not parallel_ready(kernel, args):
        return False
    bad = kernel(*args)
    if bad >= 0:
        raise _plan.index_error(target[bad], 1, K)
    return True


def cross_entropy_grad(x, target, scale, reduction):
    """``(softmax(x, 1) - onehot(target)) * s`` for logits ``x`` (N, C), float32 or float64:
    ``s = scale / N`` ("mean"), ``scale`` ("sum"; both 0-d) or ``scale[i]`` per row ("none";
    shape (N,)), ``scale`` of ``x``'s dtype; bit for bit the softmax, ``scatter_add`` and
    ``binary`` kernels applied in turn.  Targets outside [-C, C) raise ``IndexError``.  Returns
    None where those kernels are the better path (a parallel softmax's size)."""
    ops = _ce_operands(x, target)
    if ops is None:
        return None
    N, K = x.shape
    out = np.empty((N, K), dtype=x.dtype)
    if N == 0:
        return out
    dt = x.dtype.type
    n_div = dt(max(N, 1)) if reduction == "mean" else dt(0)
    args = (*ops, scale.reshape(-1), reduction == "none", n_div, dt(-1), K, out.reshape(-1))
    return out if _ce_run(_ce_grad_serial, args, target, K) else None


def cross_entropy_loss(x, target):
    """``-log_softmax(x, 1)[i, target[i]]`` per row (N,) for logits ``x`` (N, C), float32 or
    float64: bit for bit the log-softmax, ``gather`` and ``neg`` kernels applied in turn.
    Targets outside [-C, C) raise ``IndexError``.  Returns None where those kernels are the
    better path (a parallel softmax's size)."""
    ops = _ce_operands(x, target)
    if ops is None:
        return None
    N, K = x.shape
    out = np.empty(N, dtype=x.dtype)
    if N == 0:
        return out
    args = (*ops, K, np.empty(K, dtype=x.dtype), out)
    return out if _ce_run(_ce_loss_serial, args, target, K) else None


_SPLANS: dict = {}   # (shape, dtype, axis, log) of a C-contiguous input -> layout arguments


def softmax(x, axis, log):
    if type(x) is np.ndarray and x.ndim and x.size and x.flags.c_contiguous and x.flags.writeable:
        key = (x.shape, x.dtype, axis, log)
        p = _SPLANS.get(key)
        if p is not None:
            fn, args = p
            out = np.empty(x.shape, dtype=x.dtype)
            fn(x.reshape(-1), 0, *args[:3], out.reshape(-1), *args[3:])
            return out
    key_axis = axis
    axis %= max(x.ndim, 1)
    if x.ndim == 0:
        x = x.reshape(1)
        return softmax(x, 0, log).reshape(())
    out = np.empty(x.shape, dtype=x.dtype)
    if x.size == 0:
        return out
    base, off, es = flat_base(x)
    osz = out.itemsize
    oes = [s // osz for s in out.strides]
    kept = [d for d in range(x.ndim) if d != axis]
    kshape = [x.shape[d] for d in kept]
    oshape, (xostr, oostr) = coalesce(kshape, [[es[d] for d in kept], [oes[d] for d in kept]])
    K = x.shape[axis]
    args = (base, off, i64(oshape), i64(xostr), es[axis], out.reshape(-1), i64(oostr), oes[axis], K, bool(log))
    fn = _softmax_par if (x.size >= PAR_THRESHOLD and size_of(kshape) > 1) else _softmax_serial
    fn(*args)
    if x.flags.c_contiguous and x.flags.writeable:     # base is x itself, off 0
        if len(_SPLANS) > 4096:
            _SPLANS.clear()
        _SPLANS[(x.shape, x.dtype, key_axis, log)] = (fn, args[2:5] + args[6:])
    return out
