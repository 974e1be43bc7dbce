"""Reductions, arg-reductions and softmax for the cuda set.

Every reduction reads ``x`` in place by strides (kept dims and reduced dims are each coalesced;
no transposing copy).  Two generated kernel families per (op, dtypes, ranks):

- ``rows``: one block per (output, chunk) task (grid-stride over tasks).  The block's threads
  stride through the chunk of the reduced index range (coalesced when the innermost reduced dim
  is contiguous), accumulate in registers, then combine in a block reduction: warp shuffles
  (``shfl_down_sync``) within each warp, one value per warp through shared memory, shuffles again
  in warp 0.  (Under the simulator, which has no warp shuffles, the block reduction is a
  shared-memory tree.)  When there are too few outputs to fill the GPU (e.g. a full ``sum``) each
  output is split into chunks whose partial results go to a buffer, and a second pass (``finish``)
  combines them: two passes, no atomics, so results are deterministic.
- ``cols``: when the kept dims coalesce into one contiguous dim (``sum(axis=0)`` of a C array),
  one thread per output column walks the reduced range, so each warp reads consecutive
  addresses; the reduced range is split over ``blockIdx.y`` when needed, again with a second pass.

Semantics are the op table's (``jit_kernels.optable``), as in the cpu set: float inputs accumulate in float64 for
sum/mean/var/logsumexp (max/min in the input dtype), int/bool sums in int64; ``var`` is two-pass
(mean, then squared deviations); empty reductions give the cpu set's fill values; max/min and
logsumexp propagate NaN; argmax/argmin return the first index of the extreme (first NaN wins);
softmax is max-shifted with float64 sums.
"""
from __future__ import annotations

import numpy as np

from jit_kernels import _plan, optable
from jit_kernels._layout import coalesce, size_of
from jit_kernels._source import NB_NAME as _NB_NAME, NP_NAME as _NP_NAME
from jit_kernels.codegen import load_generated_module
from jit_kernels.cuda._array import launch, RTPB, SIM, CudaArray, alloc, alloc_c, target_blocks
from jit_kernels.cuda.elementwise import cuda_conv, render

I64 = np.dtype(np.int64)
I32 = np.dtype(np.int32)

_TREE_REDUCE = '''\
@cuda.jit(device=True)
def {name}(a, sh):
    t = cuda.threadIdx.x
    sh[t] = a
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            sh[t] = {comb}(sh[t], sh[t + s])
        cuda.syncthreads()
        s //= 2
    r = sh[0]
    cuda.syncthreads()
    return r
'''


def tree_reduce(name: str, comb: str) -> str:
    """Source of device function ``name(a, sh)``: ``a`` combined over the block with device
    function ``comb`` through a shared-memory tree (``sh`` is shared[TPB], TPB a power of two);
    every thread gets the result, and ``sh`` is free again when it returns."""
    return _TREE_REDUCE.format(name=name, comb=comb)


# block reduction of one value ``a`` (result valid in thread 0); ``sh`` is shared[TPB]
if SIM:  # the simulator has no warp shuffles
    _BLOCK_REDUCE = tree_reduce("block_reduce", "comb")
else:
    _BLOCK_REDUCE = '''\
@cuda.jit(device=True)
def block_reduce(a, sh):
    t = cuda.threadIdx.x
    lane = t & 31
    w = t >> 5
    for o in (16, 8, 4, 2, 1):
        a = comb(a, cuda.shfl_down_sync(0xffffffff, a, o))
    if lane == 0:
        sh[w] = a
    cuda.syncthreads()
    if w == 0:
        a = sh[lane] if lane < TPB // 32 else init()
        for o in (16, 8, 4, 2, 1):
            a = comb(a, cuda.shfl_down_sync(0xffffffff, a, o))
    return a
'''

_TEMPLATE = '''\
import math
import numpy as np
import numba
from numba import cuda
from jit_kernels.cuda import scalar_math as sm

A = {A}
AT = {AT}
TPB = {TPB}


@cuda.jit(device=True)
def init():
    return {init}


@cuda.jit(device=True)
def step(a, v, c):
    return {step}


@cuda.jit(device=True)
def comb(a, b):
    return {comb}


@cuda.jit(device=True)
def fin(a, fa, c):
    {fin}


{block_reduce}

@cuda.jit(cache=True)
def rows(R, S, K, chunk, {ko_args}{kr_args}x, xo, center, part, out, fa):
    t = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    sh = cuda.shared.array(TPB, AT)
    while t < R * S:
        r = t // S
        s = t - r * S
{kept_pos}
        c = {center}
        lo = s * chunk
        hi = min(lo + chunk, K)
        a = init()
        q = lo + tid
{red_unrolled}
        while q < hi:
{red_pos}
            a = step(a, {read}, c)
            q += TPB
        a = block_reduce(a, sh)
        if tid == 0:
            if S == 1:
                out[r] = {store}
            else:
                part[t] = a
        cuda.syncthreads()
        t += cuda.gridDim.x


@cuda.jit(cache=True)
def cols(R, S, K, chunk, {kr_args}x, xo, center, part, out, fa):
    j = cuda.blockIdx.x * TPB + cuda.threadIdx.x
    s = cuda.blockIdx.y
    if j < R:
        c = {center_j}
        lo = s * chunk
        hi = min(lo + chunk, K)
        a = init()
        q = lo
{red_unrolled_c}
        while q < hi:
{red_pos_c}
            a = step(a, {read}, c)
            q += 1
        if S == 1:
            out[j] = {store}
        else:
            part[j * S + s] = a


@cuda.jit(cache=True)
def finish(R, S, part, center, out, fa):
    # one block per output: its threads stride over the S partials (a serial loop in one
    # thread would wait out one load latency per partial)
    r = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    sh = cuda.shared.array(TPB, AT)
    while r < R:
        a = init()
        s = tid
        while s < S:
            a = comb(a, part[r * S + s])
            s += TPB
        a = block_reduce(a, sh)
        if tid == 0:
            c = {center}
            out[r] = {store}
        cuda.syncthreads()
        r += cuda.gridDim.x
'''

#: the reduced-range loops read UNROLL elements per iteration, all loads issued before the
#: first accumulation (each thread then has UNROLL loads in flight instead of one); the
#: accumulation order is unchanged, so results are the same as one element per iteration
UNROLL = 4


def _unrolled(nkr, base, stride, indent, read):
    """Source of the unrolled reduced-range loop (``q`` advancing by ``stride``)."""
    pad = " " * indent
    lines = [f"{pad}while q + {UNROLL - 1} * {stride} < hi:"]
    for u in range(UNROLL):
        idx = "q" if u == 0 else f"(q + {u} * {stride})"
        lines.append(_pos_lines(f"p{u}", base, nkr, "rk", "rs", indent + 4, idx))
    for u in range(UNROLL):
        lines.append(f"{pad}    v{u} = {read.replace('x[p]', f'x[p{u}]')}")
    for u in range(UNROLL):
        lines.append(f"{pad}    a = step(a, v{u}, c)")
    lines.append(f"{pad}    q += {UNROLL} * {stride}")
    return "\n".join(lines)


def _spec(op, acc_dt):
    """(init, step, comb, fin) source for op with accumulation dtype ``acc_dt``: the op table's
    (``jit_kernels.optable.REDUCTIONS``, as the cpu set) rendered in cuda terms."""
    w = "f32" if acc_dt == np.float32 else "f64"
    return tuple(render(p, w) for p in optable.reduction_spec(op, acc_dt))


_MODS: dict = {}


def _pos_lines(var, base, nd, shp, strd, indent, idx):
    """Source computing ``var = base + sum_d k_d * strd_d`` for flat index ``idx`` over dims."""
    pad = " " * indent
    if nd == 1:
        return f"{pad}{var} = {base} + {idx} * {strd}0"
    lines = [f"{pad}rem_ = {idx}", f"{pad}{var} = {base}"]
    for d in range(nd - 1, 0, -1):
        lines.append(f"{pad}{var} += (rem_ % {shp}{d}) * {strd}{d}")
        lines.append(f"{pad}rem_ = rem_ // {shp}{d}")
    lines.append(f"{pad}{var} += rem_ * {strd}0")
    return "\n".join(lines)


def _module(op, in_dt, acc_dt, out_dt, nko, nkr, has_center):
    key = (op, in_dt, acc_dt, out_dt, nko, nkr, has_center)
    mod = _MODS.get(key)
    if mod is None:
        init, step, comb, fin = _spec(op, acc_dt)
        store = cuda_conv("fin(a, fa, c)", acc_dt, out_dt) if (acc_dt != out_dt or out_dt.kind != "f") \
            else "fin(a, fa, c)"
        ko_args = "".join(f"ok{d}, " for d in range(1, nko)) + "".join(f"os{d}, " for d in range(nko))
        kr_args = "".join(f"rk{d}, " for d in range(1, nkr)) + "".join(f"rs{d}, " for d in range(nkr))
        src = _TEMPLATE.format(
            A=_NP_NAME[acc_dt.name], AT=_NB_NAME[acc_dt.name], TPB=RTPB,
            init=init, step=step, comb=comb, fin=fin, block_reduce=_BLOCK_REDUCE,
            ko_args=ko_args, kr_args=kr_args,
            kept_pos=_pos_lines("prow", "xo", nko, "ok", "os", 8, "r"),
            red_pos=_pos_lines("p", "prow", nkr, "rk", "rs", 12, "q"),
            red_pos_c=_pos_lines("p", "xo + j", nkr, "rk", "rs", 12, "q"),
            center="center[r]" if has_center else "0.0",
            center_j="center[j]" if has_center else "0.0",
            read=cuda_conv("x[p]", in_dt, acc_dt), store=store,
            red_unrolled=_unrolled(nkr, "prow", "TPB", 8, cuda_conv("x[p]", in_dt, acc_dt)),
            red_unrolled_c=_unrolled(nkr, "xo + j", "1", 8, cuda_conv("x[p]", in_dt, acc_dt)),
        )
        mod = load_generated_module(src, f"cuda_red_{op}_{in_dt.name}_{acc_dt.name}_{out_dt.name}"
                                         f"_{nko}_{nkr}_{int(has_center)}")
        _MODS[key] = mod
    return mod


#: launch plans by layout: (op, x's shape/strides/dtype, axes, acc/out dtypes, centred, GPU) ->
#: (R, kernel, grid, S, K, chunk, layout arguments, second-pass kernel); see ``_make_plan``
_PLANS: dict = {}


def _make_plan(op, x: CudaArray, axes, acc_dt, out_dt, centred):
    kept, red, kshape, R, K = _plan.split_axes(x.shape, axes)
    if R == 0:
        return (0,)
    oshape, (ostr,) = coalesce(kshape, [[x.strides[d] for d in kept]])
    rshape, (rstr,) = coalesce([x.shape[d] for d in red], [[x.strides[d] for d in red]])
    mod = _module(op, x.dtype, acc_dt, out_dt, len(oshape), len(rshape), centred)
    tb = target_blocks(x.index)
    kr = tuple(rshape[1:]) + tuple(rstr)
    if len(oshape) == 1 and ostr[0] == 1 and R >= 32 and rstr[-1] != 1:
        # kept dims contiguous: one thread per output column, the reduced range split over y
        nbx = -(-R // RTPB)
        S = max(1, min(-(-tb // nbx), -(-K // 64), 65535))
        chunk = -(-K // S)
        S = -(-K // chunk)
        return R, mod.cols, (nbx, S), S, K, chunk, kr, mod.finish
    S = 1 if R >= tb else max(1, min(-(-tb // R), -(-K // (RTPB * 8))))
    chunk = -(-K // S)
    S = -(-K // chunk)
    grid = min(R * S, 65535 * 16) if not SIM else R * S
    return R, mod.rows, grid, S, K, chunk, tuple(oshape[1:]) + tuple(ostr) + kr, mod.finish


def _run(op, x: CudaArray, axes, acc_dt, out_dt, fa=0.0, center=None) -> CudaArray:
    """Reduce ``x`` over ``axes``; returns a flat C-ordered array of the kept-dims outputs."""
    out_dt = np.dtype(out_dt)
    key = (op, x.shape, x.strides, x.dtype, tuple(axes), acc_dt, out_dt, center is None, x.index)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _make_plan(op, x, axes, acc_dt, out_dt, center is not None)
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    R = plan[0]
    out = alloc_c((R,), R, out_dt, x.index)
    if R == 0:
        return out
    _, kern, grid, S, K, chunk, layout, finish = plan
    cbuf = center.buf if center is not None else out.buf
    part = alloc_c((R * S,), R * S, acc_dt, x.index) if S > 1 else out
    launch(kern, grid, RTPB, R, S, K, chunk, *layout, x.buf, x.offset, cbuf, part.buf, out.buf, fa)
    if S > 1:
        launch(finish, R if SIM else min(R, 65535 * 16), RTPB, R, S, part.buf, cbuf, out.buf, fa)
    return out


def reduce(op, x, axes, keepdims, out_dtype, attrs):
    from jit_kernels.cuda import memory, shape
    # bool max/min accumulate in int32 (no bool shared arrays / shuffles)
    return _plan.reduce(op, x, axes, keepdims, out_dtype, attrs, run=_run, bool_minmax=I32,
                        full=lambda kshape, fill, dt: memory.full(kshape, fill, dt, x.index),
                        reshape=shape.reshape)


# ---------------------------------------------------------------------------------------------
# arg-reductions: (value, index) pairs through the same block reduction

_ARG_TEMPLATE = '''\
import math
import numpy as np
import numba
from numba import cuda

V = {V}
VT = {VT}
TPB = {TPB}
IS_MAX = {IS_MAX}


@cuda.jit(device=True)
def better(v, i, w, j):
    # True when (w, j) beats (v, i): valid, NaN first, then the extreme, ties to the lower index
    if j < 0:
        return False
    if i < 0:
        return True
    vn = v != v
    wn = w != w
    if vn or wn:
        if vn and wn:
            return j < i
        return wn
    if IS_MAX:
        if w > v:
            return True
    else:
        if w < v:
            return True
    return w == v and j < i


{reduce2}

@cuda.jit(cache=True)
def argk(R, K, {ko_args}{kr_args}x, xo, out):
    t = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    shv = cuda.shared.array(TPB, VT)
    shi = cuda.shared.array(TPB, numba.int64)
    while t < R:
        r = t
{kept_pos}
        v = V(0)
        i = np.int64(-1)
        q = tid
        while q < K:
{red_pos}
            w = {read}
            if better(v, i, w, np.int64(q)):
                v = w
                i = np.int64(q)
            q += TPB
        v, i = block_reduce2(v, i, shv, shi)
        if tid == 0:
            out[r] = i
        cuda.syncthreads()
        t += cuda.gridDim.x
'''

if SIM:
    _REDUCE2 = '''\
@cuda.jit(device=True)
def block_reduce2(v, i, shv, shi):
    t = cuda.threadIdx.x
    shv[t] = v
    shi[t] = i
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s and better(shv[t], shi[t], shv[t + s], shi[t + s]):
            shv[t] = shv[t + s]
            shi[t] = shi[t + s]
        cuda.syncthreads()
        s //= 2
    return shv[0], shi[0]
'''
else:
    _REDUCE2 = '''\
@cuda.jit(device=True)
def warp2(v, i):
    for o in (16, 8, 4, 2, 1):
        w = cuda.shfl_down_sync(0xffffffff, v, o)
        j = cuda.shfl_down_sync(0xffffffff, i, o)
        if better(v, i, w, j):
            v = w
            i = j
    return v, i


@cuda.jit(device=True)
def block_reduce2(v, i, shv, shi):
    t = cuda.threadIdx.x
    lane = t & 31
    wp = t >> 5
    v, i = warp2(v, i)
    if lane == 0:
        shv[wp] = v
        shi[wp] = i
    cuda.syncthreads()
    if wp == 0:
        if lane < TPB // 32:
            v = shv[lane]
            i = shi[lane]
        else:
            v = V(0)
            i = np.int64(-1)
        v, i = warp2(v, i)
    return v, i
'''

_ARG_MODS: dict = {}


def _arg_module(in_dt, is_max, nko, nkr):
    key = (in_dt, is_max, nko, nkr)
    mod = _ARG_MODS.get(key)
    if mod is None:
        v_dt = I32 if in_dt.kind == "b" else in_dt
        ko_args = "".join(f"ok{d}, " for d in range(1, nko)) + "".join(f"os{d}, " for d in range(nko))
        kr_args = "".join(f"rk{d}, " for d in range(1, nkr)) + "".join(f"rs{d}, " for d in range(nkr))
        src = _ARG_TEMPLATE.format(
            V=_NP_NAME[v_dt.name], VT=_NB_NAME[v_dt.name], TPB=RTPB, IS_MAX=bool(is_max),
            reduce2=_REDUCE2, ko_args=ko_args, kr_args=kr_args,
            kept_pos=_pos_lines("prow", "xo", nko, "ok", "os", 8, "r"),
            red_pos=_pos_lines("p", "prow", nkr, "rk", "rs", 12, "q"),
            read=cuda_conv("x[p]", in_dt, v_dt),
        )
        mod = load_generated_module(src, f"cuda_arg_{in_dt.name}_{int(is_max)}_{nko}_{nkr}")
        _ARG_MODS[key] = mod
    return mod


def arg_reduce(op, x, axis, keepdims):
    is_max, kept, red, kshape, R = _plan.arg_reduce_shape(op, x.shape, axis, keepdims)
    K = size_of([x.shape[d] for d in red])
    out = alloc((R,), I64, x.index)
    from jit_kernels.cuda import shape
    if R == 0:
        return shape.reshape(out, kshape)
    oshape, (ostr,) = coalesce([x.shape[d] for d in kept], [[x.strides[d] for d in kept]])
    rshape, (rstr,) = coalesce([x.shape[d] for d in red], [[x.strides[d] for d in red]])
    mod = _arg_module(x.dtype, is_max, len(oshape), len(rshape))
    ko = list(oshape[1:]) + list(ostr)
    kr = list(rshape[1:]) + list(rstr)
    grid = R if SIM else min(R, 65535 * 16)
    launch(mod.argk, grid, RTPB, R, K, *ko, *kr, x.buf, x.offset, out.buf)
    return shape.reshape(out, kshape)


# ---------------------------------------------------------------------------------------------
# softmax: one block per row; max, sum of exponentials (float64), write

_SOFTMAX_TEMPLATE = '''\
import math
import numpy as np
import numba
from numba import cuda
from jit_kernels.cuda import scalar_math as sm

X = {X}
TPB = {TPB}
LOG = {LOG}


@cuda.jit(device=True)
def mx(a, b):
    return a if a != a else (b if b != b else (b if b > a else a))


@cuda.jit(device=True)
def add(a, b):
    return a + b


{reduces}

@cuda.jit(cache=True)
def softmax(R, K, {ko_args}sx, x, xo, {oo_args}so, out):
    t = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    shm = cuda.shared.array(TPB, {XT})
    shs = cuda.shared.array(TPB, numba.float64)
    while t < R:
        r = t
{kept_pos}
{out_pos}
        m = X(-math.inf)
        q = tid
        while q < K:
            m = mx(m, x[prow + q * sx])
            q += TPB
        m = reduce_max(m, shm)
        if tid == 0:
            shm[0] = m
        cuda.syncthreads()
        m = shm[0]
        s = 0.0
        q = tid
        while q < K:
            s += np.float64(sm.exp_{w}(x[prow + q * sx] - m))
            q += TPB
        s = reduce_sum(s, shs)
        if tid == 0:
            shs[0] = s
        cuda.syncthreads()
        s = shs[0]
        if LOG:
            ls = np.float64(m) + math.log(s)
            q = tid
            while q < K:
                out[po + q * so] = x[prow + q * sx] - ls
                q += TPB
        else:
            inv = 1.0 / s
            q = tid
            while q < K:
                out[po + q * so] = X(sm.exp_{w}(x[prow + q * sx] - m)) * inv
                q += TPB
        cuda.syncthreads()
        t += cuda.gridDim.x
'''


def _named_reduce(name, combine, init):
    src = _BLOCK_REDUCE.replace("block_reduce", name).replace("comb(", combine + "(")
    return src.replace("init()", init)


_SM_MODS: dict = {}


def softmax(x, axis, log):
    from jit_kernels.cuda import shape
    if x.ndim == 0:
        return shape.reshape(softmax(shape.reshape(x, (1,)), 0, log), ())
    axis %= x.ndim
    out = alloc(x.shape, x.dtype, x.index)
    if x.size == 0:
        return out
    kept = [d for d in range(x.ndim) if d != axis]
    kshape = [x.shape[d] for d in kept]
    oshape, (xostr, oostr) = coalesce(kshape, [[x.strides[d] for d in kept],
                                               [out.strides[d] for d in kept]])
    nko = len(oshape)
    key = (x.dtype, bool(log), nko)
    mod = _SM_MODS.get(key)
    if mod is None:
        ko_args = "".join(f"ok{d}, " for d in range(1, nko)) + "".join(f"os{d}, " for d in range(nko))
        oo_args = "".join(f"oos{d}, " for d in range(nko))
        reduces = _named_reduce("reduce_max", "mx", "X(-math.inf)") + "\n\n" + \
            _named_reduce("reduce_sum", "add", "0.0")
        src = _SOFTMAX_TEMPLATE.format(
            X=_NP_NAME[x.dtype.name], XT=_NB_NAME[x.dtype.name], TPB=RTPB, LOG=bool(log),
            w="f32" if x.dtype == np.float32 else "f64", reduces=reduces,
            ko_args=ko_args, oo_args=oo_args,
            kept_pos=_pos_lines("prow", "xo", nko, "ok", "os", 8, "r"),
            out_pos=_pos_lines("po", "0", nko, "ok", "oos", 8, "r"),
        )
        mod = load_generated_module(src, f"cuda_softmax_{x.dtype.name}_{int(bool(log))}_{nko}")
        _SM_MODS[key] = mod
    R = size_of(kshape)
    K = x.shape[axis]
    grid = R if SIM else min(R, 65535 * 16)
    launch(mod.softmax, grid, RTPB, R, K, *oshape[1:], *xostr, x.strides[axis], x.buf, x.offset, *oostr,
                           out.strides[axis], out.buf)
    return out
