"""Fused kernels for the cuda set: one generated ``@cuda.jit`` kernel per fused program.

A program (``runtime.capture.fuse.FusedProgram``, read here only as plain data: ``kind``,
``shape``, ``inputs``, ``scalars``, ``ops``, ``outputs``, ``key()``) becomes Python source that is
written with ``jit_kernels.codegen.load_generated_module`` (a real file, so ``cache=True`` works
and a second process pays no compile time) and launched through ``_array.launch`` (so the PTX
check can record it).  Every op is evaluated with the same scalar body and operand/result
conversions as the eager cuda kernels (``elementwise.cuda_body``/``cuda_conv``, i.e. the op
table's bodies and ``_source.conv_expr`` with math calls mapped to ``cuda.scalar_math``), and op
lowering is the shared generator's (``jit_kernels._fusegen.lower_op``), so fused results
equal eager cuda results (elementwise bit for bit; reductions within rounding).

Kinds:

- ``elementwise``: one grid-stride kernel.  Every input is read by strides (broadcast dims have
  stride 0; dims contiguous in every operand are coalesced first, so the all-contiguous case is a
  rank-1 kernel); scalars are kernel arguments converted on the host; every program output is a
  new C-contiguous array written by the same kernel.  One module per (program key, coalesced
  rank).
- ``rows``: one block per row (grid-stride over rows), ``RTPB`` threads striding over the last
  axis.  Per row, each reduction (sum/mean/max/min, softmax's max and exp-sum, log_softmax's
  max and log-sum-exp) is one pass over its recomputed elementwise prologue, combined with a
  shared-memory tree reduction (float64 accumulators: float sums accumulate in float64 as the
  cuda ``reduce`` does; max/min are exact in float64 and propagate NaN); row-level ops are
  evaluated per row by every thread; a final pass computes and stores the elementwise outputs,
  thread 0 stores the row-level ones.  One module per (program key, outer rank).
- ``matmul``: the cuda matmul kernel, then the epilogue as one generated elementwise kernel
  (``_fusegen.Epilogue`` rewrites it as an elementwise program reading the matmul result),
  written in place into the matmul result when its dtype allows.
"""
from __future__ import annotations

import hashlib

import numpy as np

from jit_kernels import optable
from jit_kernels._fusegen import Epilogue as _Epilogue, FusedGen, closure as _closure
from jit_kernels._layout import broadcast_strides, coalesce, scalar_array, size_of
from jit_kernels._source import NP_NAME as _NP_NAME
from jit_kernels.codegen import load_generated_module
from jit_kernels.cuda._array import (RTPB, SIM, TPB, CudaArray, alloc, blocks_for, launch)
from jit_kernels.cuda.elementwise import cuda_body
from jit_kernels.cuda.reduce import tree_reduce

ROW_OPS = optable.ROW_OPS
_MODS: dict = {}


# ------------------------------------------------------------------------------ source pieces
class _Gen(FusedGen):
    """The shared source builder with device functions, libdevice bodies and cuda imports."""

    DECORATOR = "@cuda.jit(device=True)"
    IMPORTS = ("import math\nimport numpy as np\nimport numba\nfrom numba import cuda\n"
               "from jit_kernels.cuda import scalar_math as sm\n")

    def body(self, name, cdt):
        return cuda_body(name, optable.kind_of(cdt), cdt)


def _module(prog, variant, source_fn):
    key = (prog.key(), variant)
    mod = _MODS.get(key)
    if mod is None:
        h = hashlib.sha256(key[0].encode()).hexdigest()[:10]
        mod = load_generated_module(source_fn(), f"cuda_fused_{prog.kind}_{h}_{variant}")
        _MODS[key] = mod
    return mod


def _scalar_values(prog):
    return [scalar_array(v, np.dtype(d))[()] for v, d in prog.scalars]


def _index_of(arrays):
    return next((a.index for a in arrays if isinstance(a, CudaArray)), 0)


def _as_cuda(arrays, index):
    from jit_kernels.cuda import memory
    return [a if isinstance(a, CudaArray) else memory.from_host(np.asarray(a), index)
            for a in arrays]


def _reshape(x: CudaArray, shape) -> CudaArray:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    from jit_kernels.cuda._array import c_strides
    return x.view(shape, c_strides(shape))


# ------------------------------------------------------------------------------ elementwise
def _ew_source(prog, nd) -> str:
    g = _Gen(prog)
    n_in = len(prog.inputs)
    in_args = []
    for k in range(n_in):
        in_args.append(f"b{k}, o{k}" + "".join(f", s{k}_{d}" for d in range(nd)))
    args = ["n"] + [f"sh{d}" for d in range(1, nd)] + in_args + \
        [f"sc{k}" for k in range(len(prog.scalars))] + [f"w{q}" for q in range(len(prog.outputs))]

    def read(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            return f"t{r[1]}"
        k = r[1]
        return f"b{k}[o{k}" + "".join(f" + k{d} * s{k}_{d}" for d in range(nd)) + "]"

    lines = ["rem = i"] if nd > 1 else ["k0 = i"]
    if nd > 1:
        for d in range(nd - 1, 0, -1):
            lines += [f"k{d} = rem % sh{d}", f"rem = rem // sh{d}"]
        lines.append("k0 = rem")
    for j in _closure(prog, prog.outputs):
        lines.append(f"t{j} = {g.expr(j, read)}")
    lines += [f"w{q}[i] = t{j}" for q, j in enumerate(prog.outputs)]
    pad = " " * 8
    return (g.header() + "\n\n"
            f"@cuda.jit(cache=True)\n"
            f"def fused_ew({', '.join(args)}):\n"
            f"    i = cuda.grid(1)\n"
            f"    step = cuda.gridsize(1)\n"
            f"    while i < n:\n"
            + "".join(f"{pad}{x}\n" for x in lines)
            + f"{pad}i += step\n")


def run_elementwise(prog, arrays):
    """Evaluate an elementwise program on ``CudaArray`` inputs into new arrays."""
    S = tuple(prog.shape)
    index = _index_of(arrays)
    arrays = _as_cuda(arrays, index)
    res = [alloc(S, prog.ops[j].dtype, index) for j in prog.outputs]
    total = size_of(S)
    if total == 0:
        return [_reshape(r, s) for r, s in zip(res, prog.output_shapes)]
    strides = [broadcast_strides(a.shape, S, a.strides) for a in arrays]
    cs = list(res[0].strides) if res else []
    shp, sts = coalesce(S, strides + [cs])
    nd = len(shp)
    mod = _module(prog, f"e{nd}", lambda: _ew_source(prog, nd))
    args = [total] + list(shp[1:])
    for a, st in zip(arrays, sts):
        args += [a.buf, a.offset] + list(st)
    args += _scalar_values(prog) + [r.buf for r in res]
    launch(mod.fused_ew, blocks_for(total, index), TPB, *args)
    return [_reshape(r, s) for r, s in zip(res, prog.output_shapes)]


# ------------------------------------------------------------------------------ rows
_ROW_HELPERS = '''

TPB = {TPB}


@cuda.jit(device=True)
def add2(a, b):
    return a + b


@cuda.jit(device=True)
def pick_max(a, b):
    return a if a != a else (b if b != b else (b if b > a else a))


@cuda.jit(device=True)
def pick_min(a, b):
    return a if a != a else (b if b != b else (b if b < a else a))

''' + "\n\n".join(tree_reduce(n, c) for n, c in (("red_sum", "add2"), ("red_max", "pick_max"),
                                                      ("red_min", "pick_min")))


def _rows_source(prog, nko) -> str:
    g = _Gen(prog)
    ops = prog.ops
    n_in = len(prog.inputs)
    in_args = []
    for k in range(n_in):
        in_args.append(f"b{k}, o{k}, i{k}" + "".join(f", s{k}_{d}" for d in range(nko)))
    args = ["R", "K"] + [f"sh{d}" for d in range(1, nko)] + in_args + \
        [f"sc{k}" for k in range(len(prog.scalars))] + [f"w{q}" for q in range(len(prog.outputs))]

    def read_row(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            return f"t{r[1]}"
        return f"b{r[1]}[p{r[1]}]"

    def read_elem(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            return f"t{r[1]}" if ops[r[1]].level == "row" else f"e{r[1]}"
        return f"b{r[1]}[p{r[1]} + q * i{r[1]}]"

    def elem_lines(targets):
        """Lines computing e{j} at position q for every elem op needed by ``targets``."""
        out = []
        for j in _closure(prog, targets, through_softmax=True):
            o = ops[j]
            if o.level == "row":
                continue
            od = _NP_NAME[np.dtype(o.dtype).name]
            if o.op in ("softmax", "log_softmax"):
                (x,) = o.args
                w = "f32" if g.dtype_of(x) == np.float32 else "f64"
                xv = read_elem(x)
                if o.op == "softmax":
                    val = f"{od}({od}(sm.exp_{w}({xv} - m{j})) * inv{j})"
                else:
                    val = f"{od}({xv} - ls{j})"
            else:
                val = g.expr(j, read_elem)
            out.append(f"e{j} = {val}")
        return out

    def loop(targets, body, ind):
        pad = " " * ind
        L = [f"{pad}q = tid", f"{pad}while q < K:"]
        L += [f"{pad}    {x}" for x in elem_lines(targets) + body]
        L.append(f"{pad}    q += TPB")
        return L

    ind = 8
    pad = " " * ind
    L = [f"{pad}rem = r"]
    for d in range(nko - 1, 0, -1):
        L += [f"{pad}k{d} = rem % sh{d}", f"{pad}rem = rem // sh{d}"]
    L.append(f"{pad}k0 = rem")
    for k in range(n_in):
        L.append(f"{pad}p{k} = o{k}" + "".join(f" + k{d} * s{k}_{d}" for d in range(nko)))
    for j, o in enumerate(ops):
        if o.op in ROW_OPS:
            (x,) = o.args
            targets = [x[1]] if x[0] == "op" else []
            v = f"np.float64({read_elem(x)})"
            od = _NP_NAME[np.dtype(o.dtype).name]
            xd = _NP_NAME[g.dtype_of(x).name]
            w = "f32" if g.dtype_of(x) == np.float32 else "f64"
            if o.op in ("sum", "mean"):
                L.append(f"{pad}a = 0.0")
                L += loop(targets, [f"a += {v}"], ind)
                L.append(f"{pad}a = red_sum(a, sh)")
                L.append(f"{pad}t{j} = {od}(a" + (" / K)" if o.op == "mean" else ")"))
            elif o.op in ("max", "min"):
                init = "-math.inf" if o.op == "max" else "math.inf"
                L.append(f"{pad}a = {init}")
                L += loop(targets, [f"a = pick_{o.op}(a, {v})"], ind)
                L.append(f"{pad}t{j} = {od}(red_{o.op}(a, sh))")
            else:
                L.append(f"{pad}a = -math.inf")
                L += loop(targets, [f"a = pick_max(a, {v})"], ind)
                L.append(f"{pad}m{j} = {xd}(red_max(a, sh))")
                L.append(f"{pad}a = 0.0")
                L += loop(targets, [f"a += np.float64(sm.exp_{w}({read_elem(x)} - m{j}))"], ind)
                L.append(f"{pad}a = red_sum(a, sh)")
                if o.op == "softmax":
                    L.append(f"{pad}inv{j} = 1.0 / a")
                else:
                    L.append(f"{pad}ls{j} = np.float64(m{j}) + math.log(a)")
        elif o.level == "row":
            L.append(f"{pad}t{j} = {g.expr(j, read_row)}")
    elem_outs = [(q, j) for q, j in enumerate(prog.outputs) if ops[j].level == "elem"]
    row_outs = [(q, j) for q, j in enumerate(prog.outputs) if ops[j].level == "row"]
    if elem_outs:
        L += loop([j for _, j in elem_outs], [f"w{q}[r * K + q] = e{j}" for q, j in elem_outs],
                  ind)
    if row_outs:
        L.append(f"{pad}if tid == 0:")
        L += [f"{pad}    w{q}[r] = t{j}" for q, j in row_outs]
    return (g.header() + _ROW_HELPERS.format(TPB=RTPB) + "\n\n"
            f"@cuda.jit(cache=True)\n"
            f"def fused_rows({', '.join(args)}):\n"
            f"    tid = cuda.threadIdx.x\n"
            f"    sh = cuda.shared.array(TPB, numba.float64)\n"
            f"    r = cuda.blockIdx.x\n"
            "    while r < R:\n"
            + "\n".join(L) + "\n"
            "        r += cuda.gridDim.x\n")


def run_rows(prog, arrays):
    S = tuple(prog.shape)
    K = S[-1]
    R = size_of(S[:-1])
    index = _index_of(arrays)
    arrays = _as_cuda(arrays, index)
    res = []
    for j in prog.outputs:
        res.append(alloc((R * K,) if prog.ops[j].level == "elem" else (R,), prog.ops[j].dtype,
                         index))
    if R == 0 or K == 0:
        return [_reshape(r, s) for r, s in zip(res, prog.output_shapes)]
    outer, inner = [], []
    for a in arrays:
        st = broadcast_strides(a.shape, S, a.strides)
        outer.append(st[:-1])
        inner.append(st[-1])
    if len(S) > 1:
        oshape, osts = coalesce(S[:-1], outer)
    else:
        oshape, osts = [1], [[0] for _ in arrays]
    nko = len(oshape)
    mod = _module(prog, f"r{nko}", lambda: _rows_source(prog, nko))
    args = [R, K] + list(oshape[1:])
    for a, st, s in zip(arrays, osts, inner):
        args += [a.buf, a.offset, s] + list(st)
    args += _scalar_values(prog) + [r.buf for r in res]
    grid = R if SIM else min(R, 65535 * 16)
    launch(mod.fused_rows, grid, RTPB, *args)
    return [_reshape(r, s) for r, s in zip(res, prog.output_shapes)]


# ------------------------------------------------------------------------------ matmul
def run_matmul(prog, arrays):
    from jit_kernels.cuda import matmul as _matmul
    arrays = _as_cuda(arrays, _index_of(arrays))
    epi = _Epilogue.of(prog)
    a, b = (arrays[k] for k in epi.operands)
    a3 = a.view((1,) + a.shape, (0,) + a.strides)
    b3 = b.view((1,) + b.shape, (0,) + b.strides)
    c = _reshape(_matmul.matmul(a3, b3), prog.shape)
    return epi.outputs(prog, c, arrays, run_elementwise)


# ------------------------------------------------------------------------------ entry point
def fused(prog, arrays):
    """Run fused program ``prog`` on ``CudaArray`` inputs (one per ``prog.inputs``); returns one
    new ``CudaArray`` per ``prog.outputs`` with its ``output_shapes`` shape."""
    if prog.kind == "elementwise":
        return run_elementwise(prog, arrays)
    if prog.kind == "rows":
        return run_rows(prog, arrays)
    if prog.kind == "matmul":
        return run_matmul(prog, arrays)
    raise ValueError(f"unknown fused program kind {prog.kind!r}")
