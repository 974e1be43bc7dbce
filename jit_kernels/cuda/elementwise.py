"""Elementwise kernels (unary, binary, where, cast, clamp, strided copy) for the cuda set.

The scalar op bodies and result dtypes are the op table's (``jit_kernels.optable``) and the
conversion rules ``jit_kernels._source.conv_expr``, as in the cpu set, so both sets have the
same semantics; only the dialect's math calls render to this package's ``scalar_math`` (``EXP(``
-> ``sm.exp_f32``/``sm.exp_f64`` by compute width).  For every (op, input dtypes, conversion
dtypes, output dtype, which operands are scalars, rank) a module with one grid-stride kernel is
generated, written to a real file with ``jit_kernels.codegen.load_generated_module`` and
compiled lazily with ``cache=True``.

Layout: operands and the output are read/written by strides (``(buf, offset, strides)``), after
coalescing dims that are contiguous in every operand, so the common contiguous case is a rank-1
kernel whose index arithmetic is one multiply-add and whose accesses are coalesced.  Broadcast
dims have stride 0; Python scalars are kernel arguments (converted on the host like ``cast``).
The same kernel writes into a strided output view, which is how copies, ``cat`` and
``slice_assign`` move data (``copy_into``).
"""
from __future__ import annotations

import numpy as np

from jit_kernels import _plan, optable
from jit_kernels._layout import broadcast_strides, coalesce, scalar_array
from jit_kernels._source import NP_NAME as _NP_NAME, conv_expr, render as _render
from jit_kernels.codegen import load_generated_module
from jit_kernels.cuda._array import launch, CudaArray, TPB, alloc, alloc_c, blocks_for

BOOL = _plan.BOOL
_kind = optable.kind_of
_result_dtype = optable.result_dtype


def _pick(gt: str, p: str, q: str) -> str:
    """NaN-propagating max (``gt`` ">") or min ("<") of names ``p``, ``q``, inline."""
    return f"({p} if {p} != {p} else ({q} if {q} != {q} else ({q} if {q} {gt} {p} else {p})))"


def render(src: str, w: str) -> str:
    """The op table's dialect in cuda terms for compute width ``w`` ("f32"/"f64"): ``EXP(`` ->
    ``sm.exp_f32(`` (``jit_kernels.cuda.scalar_math``), ``FMAX_NAN(p, q)`` inline, ``INF`` ->
    ``math.inf``."""
    return _render(src, lambda name: f"sm.{name.lower()}_{w}", "math.inf", _pick)


def cuda_body(op: str, kind: str, c_dt: np.dtype) -> str:
    """The op table's scalar body with math functions mapped to cuda scalar_math by width."""
    w = "f32" if (kind == "f" and c_dt == np.float32) else "f64"
    return render(optable.body(op, kind), w)


def cuda_conv(expr: str, src: np.dtype, dst: np.dtype) -> str:
    return conv_expr(expr, src, dst)


_TEMPLATE = '''\
import math
import numpy as np
from numba import cuda
from jit_kernels.cuda import scalar_math as sm

C = {C}


@cuda.jit(device=True)
def f({xs}):
    {body}


@cuda.jit(cache=True)
def kern(n, {shape_args}{op_args}, out, oo{out_strides}):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
{unrolled}    while i < n:
{index}
        out[{out_pos}] = {expr}
        i += step
'''

#: rank-1 kernels handle UNROLL elements per thread and iteration, all loads issued before the
#: first store (a store may alias an input, so the compiler cannot hoist later loads above it):
#: one load in flight per warp and operand is too few to cover HBM latency.
UNROLL = 4


def _gen_source(op, in_dts, cv_dts, out_dt, scalars, nd) -> str:
    n = len(in_dts)
    res_dt = _result_dtype(op, cv_dts)
    c_dt = optable.compute_dtype(op, cv_dts)
    kind = _kind(c_dt)
    op_args = []
    for i in range(n):
        if scalars[i]:
            op_args.append(f"a{i}")
        else:
            op_args.append(f"b{i}, o{i}" + "".join(f", s{i}_{d}" for d in range(nd)))

    def read(i, k0):
        if scalars[i]:
            return f"a{i}"  # already converted on the host
        pos = f"o{i} + {k0} * s{i}_0" + "".join(f" + k{d} * s{i}_{d}" for d in range(1, nd))
        return cuda_conv(f"b{i}[{pos}]", in_dts[i], cv_dts[i])

    def result(args):
        call = f"f({', '.join(args)})"
        return cuda_conv(call, res_dt, out_dt) if (res_dt != out_dt or out_dt.kind != "f") else call

    expr = result([read(i, "k0") for i in range(n)])
    unrolled = ""
    if nd == 1:
        ks = ["i"] + [f"(i + {u} * step)" for u in range(1, UNROLL)]
        lines = [f"    while i + {UNROLL - 1} * step < n:"]
        for u, k in enumerate(ks):
            lines += [f"        v{i}_{u} = {read(i, k)}" for i in range(n) if not scalars[i]]
        for u, k in enumerate(ks):
            vals = [f"a{i}" if scalars[i] else f"v{i}_{u}" for i in range(n)]
            lines.append(f"        out[oo + {k} * os0] = {result(vals)}")
        lines.append(f"        i += {UNROLL} * step")
        unrolled = "\n".join(lines) + "\n"
    if nd == 1:
        index = "        k0 = i"
    else:
        lines = ["        rem = i"]
        for d in range(nd - 1, 0, -1):
            lines.append(f"        k{d} = rem % sh{d}")
            lines.append(f"        rem = rem // sh{d}")
        lines.append("        k0 = rem")
        index = "\n".join(lines)
    return _TEMPLATE.format(
        C=_NP_NAME[c_dt.name],
        xs=", ".join(f"x{i}" for i in range(n)),
        body=cuda_body(op, kind, c_dt),
        shape_args="".join(f"sh{d}, " for d in range(1, nd)),
        op_args=", ".join(op_args),
        out_strides="".join(f", os{d}" for d in range(nd)),
        unrolled=unrolled,
        index=index,
        out_pos="oo" + "".join(f" + k{d} * os{d}" for d in range(nd)),
        expr=expr,
    )


_MODS: dict = {}


def module(op, in_dts, cv_dts, out_dt, scalars, nd):
    key = (op, in_dts, cv_dts, out_dt, scalars, nd)
    mod = _MODS.get(key)
    if mod is None:
        src = _gen_source(op, in_dts, cv_dts, out_dt, scalars, nd)
        tag = "".join("s" if s else "a" for s in scalars)
        hint = (f"cuda_ew_{op}_{'_'.join(d.name for d in in_dts)}__"
                f"{'_'.join(d.name for d in cv_dts)}__{out_dt.name}_{tag}_{nd}")
        mod = load_generated_module(src, hint)
        _MODS[key] = mod
    return mod


#: launch plans of ``run_into`` by layout: (op, conversion dtypes, output shape/strides/dtype,
#: (shape, strides, dtype) of each array operand or None for a scalar) -> (kernel, the
#: coalesced inner sizes, the coalesced strides of each array operand and of the output)
_PLANS: dict = {}


def _plan_for(op, operands, cv_dts, out):
    key = (op, cv_dts, out.shape, out.strides, out.dtype,
           tuple((x.shape, x.strides, x.dtype) if type(x) is CudaArray else None for x in operands))
    plan = _PLANS.get(key)
    if plan is None:
        out_shape = out.shape
        scalars = tuple(not isinstance(x, CudaArray) for x in operands)
        in_dts = []
        strides = []
        for x, cv in zip(operands, cv_dts):
            if isinstance(x, CudaArray):
                in_dts.append(x.dtype)
                strides.append(broadcast_strides(x.shape, out_shape, x.strides))
            else:
                in_dts.append(cv)
        strides.append(list(out.strides))
        shp, sts = coalesce(out_shape, strides)
        kern = module(op, tuple(in_dts), cv_dts, out.dtype, scalars, len(shp)).kern
        plan = (kern, tuple(shp[1:]), [tuple(st) for st in sts])
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def run_into(op: str, operands, cv_dts, out: CudaArray) -> CudaArray:
    """``out[...] = op(*operands)`` with broadcasting; ``out`` may be any strided view."""
    cv_dts = tuple(np.dtype(d) for d in cv_dts)
    total = out.size
    if total == 0:
        return out
    kern, inner, sts = _plan_for(op, operands, cv_dts, out)
    args = [total, *inner]
    k = 0
    for x, cv in zip(operands, cv_dts):
        if type(x) is CudaArray:
            args += [x.buf, x.offset, *sts[k]]
            k += 1
        else:
            args.append(scalar_array(x, cv)[()])
    args += [out.buf, out.offset, *sts[-1]]
    launch(kern, blocks_for(total, out.index), TPB, *args)
    return out


def run(op: str, operands, cv_dts, out_dt) -> CudaArray:
    """Apply ``op`` with broadcasting into a new C-contiguous array of ``out_dt``."""
    shapes = [x.shape for x in operands if isinstance(x, CudaArray)]
    index = next(x.index for x in operands if isinstance(x, CudaArray))
    out_shape = shapes[0]
    if any(s != out_shape for s in shapes[1:]):
        out_shape = np.broadcast_shapes(*shapes)
    out = alloc(out_shape, out_dt, index)
    return run_into(op, operands, cv_dts, out)


def copy_into(dst: CudaArray, src) -> None:
    """``dst[...] = src`` (same dtype; ``src`` broadcastable to ``dst``, or a scalar)."""
    run_into("ident", [src], (dst.dtype,), dst)


# ---------------------------------------------------------------------------------------------
# prepared kernels for the runtime's small-op fast path (same contract as the cpu set's)

def _flat_kern(op, in_dts, cv_dts, out_dt, scalars):
    """The rank-1 kernel for C-contiguous operands of these dtypes (compiled on first launch)."""
    return module(op, in_dts, cv_dts, out_dt, scalars, 1).kern


def binary_fn(op, a_dtype, b_dtype, compute_dtype, out_dtype):
    """A prepared ``binary`` for fixed operand dtypes (None: that operand is a Python scalar):
    same-shape C-contiguous operands go straight to the rank-1 kernel with the launch
    arguments laid out here, anything else to ``binary``."""
    cd = np.dtype(compute_dtype)
    od = np.dtype(out_dtype)
    if a_dtype is None and b_dtype is None:
        return None
    ad = cd if a_dtype is None else np.dtype(a_dtype)
    bd = cd if b_dtype is None else np.dtype(b_dtype)
    scalars = (a_dtype is None, b_dtype is None)
    kern = _flat_kern(op, (ad, bd), (cd, cd), od, scalars)

    if not any(scalars):
        def f(a, b):
            shape = a.shape
            if shape == b.shape and a.c_contiguous and b.c_contiguous:
                n = a.size
                out = alloc_c(shape, n, od, a.index)
                if n:
                    launch(kern, blocks_for(n, a.index), TPB, n, a.buf, a.offset, 1,
                           b.buf, b.offset, 1, out.buf, 0, 1)
                return out
            return binary(op, a, b, cd, od)
        return f

    def f(a, b):
        x, sc, first = (b, a, True) if scalars[0] else (a, b, False)
        if not x.c_contiguous:
            return binary(op, a, b, cd, od)
        n = x.size
        out = alloc_c(x.shape, n, od, x.index)
        if n:
            v = scalar_array(sc, cd)[()]
            if first:
                launch(kern, blocks_for(n, x.index), TPB, n, v, x.buf, x.offset, 1, out.buf, 0, 1)
            else:
                launch(kern, blocks_for(n, x.index), TPB, n, x.buf, x.offset, 1, v, out.buf, 0, 1)
        return out
    return f


def unary_fn(op, x_dtype, out_dtype):
    """A prepared attr-less ``unary`` for a fixed input dtype; see ``binary_fn``."""
    if op in ("clamp", "logical_not"):
        return None
    xd = np.dtype(x_dtype)
    od = np.dtype(out_dtype)
    kern = _flat_kern(op, (xd,), (od,), od, (False,))

    def f(x):
        if not x.c_contiguous:
            return unary(op, x, od, None)
        n = x.size
        out = alloc_c(x.shape, n, od, x.index)
        if n:
            launch(kern, blocks_for(n, x.index), TPB, n, x.buf, x.offset, 1, out.buf, 0, 1)
        return out
    return f


# ---------------------------------------------------------------------------------------------
# entry points used by CudaKernels (same conventions as the cpu set)

def unary(op, x, out_dtype, attrs):
    return _plan.unary(op, x, out_dtype, attrs, run=run)


def binary(op, a, b, compute_dtype, out_dtype):
    cd = np.dtype(compute_dtype)
    return run(op, [a, b], (cd, cd), np.dtype(out_dtype))


def where(cond, a, b, out_dtype):
    od = np.dtype(out_dtype)
    return run("where", [cond, a, b], (BOOL, od, od), od)


def cast(x, dtype):
    dt = np.dtype(dtype)
    return run("ident", [x], (dt,), dt)
