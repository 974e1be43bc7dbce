"""Fused kernels: one generated ``@njit(parallel=True, cache=True)`` kernel per fused program.

A program (``runtime.capture.fuse.FusedProgram``, read here only as plain data: ``kind``,
``shape``, ``inputs``, ``scalars``, ``ops``, ``outputs``, ``key()``) is turned into Python source,
written with ``jit_kernels.codegen.load_generated_module`` (so ``cache=True`` works and a second
process pays no compile time) and called.  Every op is evaluated with the same scalar function
and the same operand/result conversions as the single-op kernels of ``elementwise`` (the op
table's bodies, ``_source.conv_expr``; the builder is ``jit_kernels._fusegen``), so fused
elementwise results equal eager results bit for bit.

Kinds:

- ``elementwise``: a contiguous fast path (every input C-contiguous with the full shape: flat
  chunks under ``prange``; while that kernel builds in the background, its serial twin runs the
  same chunks in order) and a strided path (inputs broadcast by strides; dims coalesced; the
  inner stride of each input — 1, 0 or other — is baked into the generated source, one module
  per pattern; ``prange`` over (row, chunk) tasks).  Small inputs are first made whole-shape
  where that costs no kernel, as the elementwise kernels' are (``elementwise.whole_operands``).
- ``rows``: elementwise ops around last-axis reductions (sum/mean/max/min, softmax,
  log_softmax), row-parallel: per row, one pass per reduction over its (recomputed) prologue
  values into a scratch buffer, then one pass computing and storing the elementwise outputs.
  Float sums accumulate in float64 (reassociated, as ``reduce`` does), max/min propagate NaN, and
  softmax follows ``reduce.softmax`` (max-shifted, ``scalar_math.exp`` (vectorisable), float64
  sum) — equal to eager within rounding.
- ``matmul``: the cpu matmul kernel, then the elementwise epilogue on its output.

``prepared(prog)`` (the kernel set's ``fused_fn``) is ``fused`` for a program run many times:
a compiled graph binds one per program, and it makes the layout decisions above once per
operand layout.
"""
from __future__ import annotations

import numpy as np

from jit_kernels._fusegen import Epilogue, FusedGen, closure, lower_op
from jit_kernels._source import NP_NAME as _NP_NAME
from jit_kernels.codegen import load_generated_module
from jit_kernels.cpu import matmul as _matmul
from jit_kernels.cpu._pool import empty as _pool_empty
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._layout import (PAR_THRESHOLD, broadcast_strides, coalesce, flat_base, i64,
                                     nthreads, scalar_array, size_of)
from jit_kernels.cpu.elementwise import _body, whole_operands
from jit_kernels.optable import ROW_OPS

BOOL = np.dtype(np.bool_)
_MODS: dict = {}

# ------------------------------------------------------------------------------ output buffers
# Outputs come from the caching allocator (``_pool``): a large one reuses a block a dropped
# output left (a fresh large array costs more in page faults than the kernel), and a held
# one is never handed out again (every view keeps its block alive through ``.base``).
_empty = _pool_empty


# ------------------------------------------------------------------------------ op lowering
_lower_op = lower_op
_closure = closure


class _Gen(FusedGen):
    """The shared source builder with njit scalar functions and the cpu set's bodies."""

    DECORATOR = '@njit(inline="always", error_model="numpy")'
    IMPORTS = ("import math\nimport numpy as np\nfrom numba import prange\n"
               "from jit_kernels.cpu._jit import helper, njit\n"
               "from jit_kernels.cpu import scalar_math as sm\n")

    def body(self, name: str, cdt: np.dtype) -> str:
        """Source of op ``name``'s scalar function body computing in ``cdt``."""
        return _body(name, cdt)


def _module(prog, variant, source_fn):
    """The generated module of ``prog``'s ``variant`` kernels.  Named after its source only (not
    the program): programs that differ only where the source does not (the ranks of operands
    the kernels see flattened: one optimiser update per parameter shape) share one module, so
    its kernels compile once for all of them."""
    key = (prog.key(), variant)
    mod = _MODS.get(key)
    if mod is None:
        mod = load_generated_module(source_fn(), f"fused_{prog.kind}_{variant}")
        _MODS[key] = mod
    return mod


def _scalar_values(prog):
    return [scalar_array(v, np.dtype(d))[()] for v, d in prog.scalars]


# ------------------------------------------------------------------------------ elementwise
def _ew_flat_source(prog) -> str:
    g = _Gen(prog)
    n_in = len(prog.inputs)
    ins = [f"a{k}" for k in range(n_in)]
    scs = [f"sc{k}" for k in range(len(prog.scalars))]
    outs = [f"o{k}" for k in range(len(prog.outputs))]
    args = ", ".join(ins + scs + outs)

    def read(r):
        return {"in": f"v{r[1]}[i]", "sc": f"sc{r[1]}", "op": f"t{r[1]}"}[r[0]]

    body = []
    for j in _closure(prog, prog.outputs):
        body.append(f"t{j} = {g.expr(j, read)}")
    for q, j in enumerate(prog.outputs):
        body.append(f"w{q}[i] = t{j}")
    views = [f"v{k} = a{k}[lo:hi]" for k in range(n_in)] + \
            [f"w{q} = o{q}[lo:hi]" for q in range(len(prog.outputs))]

    def kernel(name, par):
        rng = "prange" if par else "range"
        pad = " " * 12
        return (f"@njit(cache=True, parallel={par}, error_model=\"numpy\")\n"
                f"def {name}({args}, nchunks):\n"
                f"    total = o0.shape[0]\n"
                f"    chunk = (total + nchunks - 1) // nchunks\n"
                f"    for k in {rng}(nchunks):\n"
                f"        lo = k * chunk\n"
                f"        hi = min(lo + chunk, total)\n"
                f"        if lo < hi:\n"
                + "".join(f"{pad}{v}\n" for v in views)
                + f"{pad}for i in range(hi - lo):\n"
                + "".join(f"{pad}    {b}\n" for b in body))

    return g.header() + "\n\n" + kernel("flat_par", True) + "\n\n" + kernel("flat_serial", False)


def _ew_strided_source(prog, pattern) -> str:
    g = _Gen(prog)
    n_in = len(prog.inputs)
    ins = []
    for k in range(n_in):
        ins += [f"b{k}", f"f{k}_", f"st{k}"]
    scs = [f"sc{k}" for k in range(len(prog.scalars))]
    outs = [f"o{k}" for k in range(len(prog.outputs))]
    args = ", ".join(["shape"] + ins + scs + outs)

    def read(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            return f"t{r[1]}"
        k = r[1]
        p = pattern[k]
        return f"v{k}[i]" if p == "1" else (f"c{k}" if p == "0" else f"b{k}[p{k} + i * s{k}]")

    body = [f"t{j} = {g.expr(j, read)}" for j in _closure(prog, prog.outputs)]
    body += [f"w{q}[i] = t{j}" for q, j in enumerate(prog.outputs)]
    pad = " " * 12
    pre = [f"p{k} = f{k}_ + lo * st{k}[nd - 1]" for k in range(n_in)]
    step = [f"p{k} += kk * st{k}[d]" for k in range(n_in)]
    views = []
    for k in range(n_in):
        p = pattern[k]
        views.append(f"v{k} = b{k}[p{k}:p{k} + n]" if p == "1" else
                     (f"c{k} = b{k}[p{k}]" if p == "0" else f"s{k} = st{k}[nd - 1]"))
    views += [f"w{q} = o{q}[q0:q0 + n]" for q in range(len(prog.outputs))]

    def kernel(name, par):
        rng = "prange" if par else "range"
        return (f"@njit(cache=True, parallel={par}, error_model=\"numpy\")\n"
                f"def {name}({args}, nsplit):\n"
                f"    nd = shape.shape[0]\n"
                f"    inner = shape[nd - 1]\n"
                f"    R = o0.shape[0] // inner\n"
                f"    csz = (inner + nsplit - 1) // nsplit\n"
                f"    for t in {rng}(R * nsplit):\n"
                f"        r = t // nsplit\n"
                f"        lo = (t - r * nsplit) * csz\n"
                f"        hi = min(lo + csz, inner)\n"
                f"        if lo < hi:\n"
                + "".join(f"{pad}{x}\n" for x in pre)
                + f"{pad}rem = r\n"
                f"{pad}for d in range(nd - 2, -1, -1):\n"
                f"{pad}    kk = rem % shape[d]\n"
                f"{pad}    rem = rem // shape[d]\n"
                + "".join(f"{pad}    {x}\n" for x in step)
                + f"{pad}n = hi - lo\n"
                f"{pad}q0 = r * inner + lo\n"
                + "".join(f"{pad}{x}\n" for x in views)
                + f"{pad}for i in range(n):\n"
                + "".join(f"{pad}    {b}\n" for b in body))

    return g.header() + "\n\n" + kernel("strided_par", True) + "\n\n" + kernel("strided_serial", False)


def run_elementwise(prog, arrays):
    """Evaluate an elementwise program into new arrays."""
    S = tuple(prog.shape)
    total = size_of(S)
    res = [_empty(S, prog.ops[j].dtype) for j in prog.outputs]
    if total == 0:
        return [r.reshape(s) for r, s in zip(res, prog.output_shapes)]
    scs = _scalar_values(prog)
    flats = [r.reshape(-1) for r in res]
    par = total >= PAR_THRESHOLD
    flat = all(a.shape == S and a.flags.c_contiguous for a in arrays)
    if not (flat or par):
        # small operands as the elementwise kernels' (``elementwise.whole_operands``): views of
        # the whole shape copied, operands broadcast by size-1 dims only reshaped; the flat
        # kernel when they all have the whole shape, and fewer stride patterns otherwise (a
        # large call goes straight to its cached strided plan: a compiled step's hot path)
        arrays = whole_operands(arrays, S, total)
        flat = all(a.shape == S and a.flags.c_contiguous for a in arrays)
    if flat:
        mod = _module(prog, "flat", lambda: _ew_flat_source(prog))
        _launch_flat(mod, [a.reshape(-1) for a in arrays] + scs + flats, par)
        return [r.reshape(s) for r, s in zip(res, prog.output_shapes)]
    # the layout (kernel, coalesced shape and strides, split) per program and operand layouts:
    # worked out once, then each call only finds its operands' memory
    key = (prog, tuple((a.shape, a.strides) for a in arrays))
    plan = _STRIDED.get(key)
    if plan is None:
        plan = _strided_plan(prog, arrays, S, total, par)
        if len(_STRIDED) >= STRIDED_PLANS_MAX:
            _STRIDED.clear()
        _STRIDED[key] = plan
    kernel, shp, sts, split = plan
    kernel(*_strided_args(shp, arrays, sts), *scs, *flats, split)
    return [r.reshape(s) for r, s in zip(res, prog.output_shapes)]


def _launch_flat(mod, args, par):
    """The flat kernels of ``mod`` on ``args`` (operands, scalars, outputs, all 1-D)."""
    if not par:
        mod.flat_serial(*args, 1)
    elif parallel_ready(mod.flat_par, (*args, nt := nthreads())):
        mod.flat_par(*args, nt)
    else:   # while flat_par builds in the background: its chunks in order (the same bits)
        mod.flat_serial(*args, nt)


def _strided_args(shp, arrays, sts) -> list:
    """The strided kernels' layout arguments: the coalesced shape, then (base, offset, element
    strides) per operand (every operand non-empty)."""
    args = [shp]
    for a, st in zip(arrays, sts):
        if a.flags.c_contiguous and a.flags.writeable:
            args += [a.reshape(-1), 0, st]
        else:
            b, off, _ = flat_base(a)
            args += [b, off, st]
    return args


#: (program, operand shapes and strides) -> ``_strided_plan``; cleared when full
_STRIDED: dict = {}
STRIDED_PLANS_MAX = 1024


def _strided_plan(prog, arrays, S, total, par):
    """(kernel, shape array, per-operand stride arrays, split) of the strided kernels for
    ``arrays`` broadcast to ``S``."""
    strides = []
    for a in arrays:
        es = [st // a.itemsize for st in a.strides]
        strides.append(broadcast_strides(a.shape, S, es))
    shp, sts = coalesce(S, strides)
    pattern = "".join("1" if st[-1] == 1 else ("0" if st[-1] == 0 else "s") for st in sts)
    mod = _module(prog, "s" + pattern, lambda: _ew_strided_source(prog, pattern))
    if not par:
        return mod.strided_serial, i64(shp), [i64(st) for st in sts], 1
    inner = shp[-1]
    R = total // inner
    nt = nthreads()
    nsplit = 1 if R >= 2 * nt else max(1, min(-(-2 * nt // R), -(-inner // 2048)))
    return mod.strided_par, i64(shp), [i64(st) for st in sts], nsplit


# ------------------------------------------------------------------------------ rows
_REDUCERS = '''

@helper(error_model="numpy", fastmath={"reassoc", "contract"})
def _sum64(v, n):
    a = 0.0
    for i in range(n):
        a += np.float64(v[i])
    return a


@helper(error_model="numpy", fastmath={"reassoc"})
def _max(v, n):
    a = v[0]
    for i in range(1, n):
        a = sm.fmax_nan(a, v[i])
    return a


@helper(error_model="numpy", fastmath={"reassoc"})
def _min(v, n):
    a = v[0]
    for i in range(1, n):
        a = sm.fmin_nan(a, v[i])
    return a


@helper(error_model="numpy", fastmath={"reassoc", "contract"})
def _expsum(v, m, e, n):
    s = 0.0
    for i in range(n):
        x = EXP(v[i] - m)
        e[i] = x
        s += np.float64(x)
    return s


@helper(error_model="numpy", fastmath={"reassoc", "contract"})
def _logexpsum(v, m, n):
    s = 0.0
    for i in range(n):
        s += np.float64(EXP(v[i] - m))
    return s
'''


def _rows_source(prog, pattern) -> str:
    g = _Gen(prog)
    ops = prog.ops
    n_in = len(prog.inputs)
    ins = []
    for k in range(n_in):
        ins += [f"b{k}", f"f{k}_", f"st{k}", f"s{k}"]
    scs = [f"sc{k}" for k in range(len(prog.scalars))]
    outs = [f"o{k}" for k in range(len(prog.outputs))]
    args = ", ".join(["oshape"] + ins + scs + outs + ["K", "nchunks"])
    reds = [j for j, o in enumerate(ops) if o.op in ROW_OPS]
    red_set = set(reds)

    def read_row(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            return f"t{r[1]}"
        return f"c{r[1]}" if pattern[r[1]] == "0" else f"b{r[1]}[p{r[1]}]"

    def read_elem(r):
        if r[0] == "sc":
            return f"sc{r[1]}"
        if r[0] == "op":
            j = r[1]
            o = ops[j]
            if o.level == "row":
                return f"t{j}"
            return f"e{j}"
        k = r[1]
        p = pattern[k]
        return f"v{k}[i]" if p == "1" else (f"c{k}" if p == "0" else f"b{k}[p{k} + i * s{k}]")

    def elem_value(j):
        o = ops[j]
        od = _NP_NAME[np.dtype(o.dtype).name]
        if o.op == "softmax":
            return f"{od}(E{j}[i] * inv{j})"
        if o.op == "log_softmax":
            return f"{od}(X{j}[i] - ls{j})"
        return g.expr(j, read_elem)

    def elem_pass(targets, stores, ind):
        lines = [f"{ind}for i in range(K):"]
        for j in _closure(prog, targets):
            lines.append(f"{ind}    e{j} = {elem_value(j)}")
        lines += [f"{ind}    {s}" for s in stores]
        return lines

    L = []   # per-row body, indent 8
    ind = " " * 12
    for k in range(n_in):
        L.append(f"{ind}p{k} = f{k}_")
    L.append(f"{ind}rem = r")
    L.append(f"{ind}for d in range(nd - 1, -1, -1):")
    L.append(f"{ind}    kk = rem % oshape[d]")
    L.append(f"{ind}    rem = rem // oshape[d]")
    for k in range(n_in):
        L.append(f"{ind}    p{k} += kk * st{k}[d]")
    for k in range(n_in):
        p = pattern[k]
        if p == "1":
            L.append(f"{ind}v{k} = b{k}[p{k}:p{k} + K]")
        elif p == "0":
            L.append(f"{ind}c{k} = b{k}[p{k}]")
    done_row = set()
    for j, o in enumerate(ops):
        if j in red_set:
            (x,) = o.args
            if x[0] == "in" and pattern[x[1]] == "1":
                buf = f"v{x[1]}"
            else:
                buf = f"X{j}"
                L += elem_pass([x[1]] if x[0] == "op" else [],
                               [f"X{j}[i] = {read_elem(x)}"], ind)
            od = _NP_NAME[np.dtype(o.dtype).name]
            if o.op in ("sum", "mean"):
                val = f"_sum64({buf}, K)" + (" / K" if o.op == "mean" else "")
                L.append(f"{ind}t{j} = {od}({val})")
            elif o.op in ("max", "min"):
                L.append(f"{ind}t{j} = _{o.op}({buf}, K)")
            elif o.op == "softmax":
                L.append(f"{ind}m{j} = _max({buf}, K)")
                L.append(f"{ind}inv{j} = 1.0 / _expsum({buf}, m{j}, E{j}, K)")
            else:
                L.append(f"{ind}m{j} = _max({buf}, K)")
                L.append(f"{ind}ls{j} = np.float64(m{j}) + math.log(_logexpsum({buf}, m{j}, K))")
                if buf != f"X{j}":
                    L.append(f"{ind}X{j} = {buf}")
            done_row.add(j)
        elif o.level == "row":
            L.append(f"{ind}t{j} = {g.expr(j, read_row)}")
    # outputs
    elem_outs = [(q, j) for q, j in enumerate(prog.outputs) if ops[j].level == "elem"]
    row_outs = [(q, j) for q, j in enumerate(prog.outputs) if ops[j].level == "row"]
    if elem_outs:
        for q, _ in elem_outs:
            L.append(f"{ind}w{q} = o{q}[r * K:(r + 1) * K]")
        L += elem_pass([j for _, j in elem_outs], [f"w{q}[i] = e{j}" for q, j in elem_outs], ind)
    for q, j in row_outs:
        L.append(f"{ind}o{q}[r] = t{j}")

    allocs = []
    for j in reds:
        o = ops[j]
        (x,) = o.args
        xdt = _NP_NAME[g.dtype_of(x).name]
        if not (x[0] == "in" and pattern[x[1]] == "1"):
            allocs.append(f"X{j} = np.empty(K, dtype={xdt})")
        if o.op == "softmax":
            allocs.append(f"E{j} = np.empty(K, dtype={xdt})")

    def kernel(name, par):
        rng = "prange" if par else "range"
        return (f"@njit(cache=True, parallel={par}, error_model=\"numpy\")\n"
                f"def {name}({args}):\n"
                f"    nd = oshape.shape[0]\n"
                f"    R = 1\n"
                f"    for d in range(nd):\n"
                f"        R *= oshape[d]\n"
                f"    chunk = (R + nchunks - 1) // nchunks\n"
                f"    for c in {rng}(nchunks):\n"
                + "".join(f"        {a}\n" for a in allocs)
                + "        for r in range(c * chunk, min(R, (c + 1) * chunk)):\n"
                + "\n".join(L) + "\n")

    return (g.header() + "\nEXP = sm.exp\n" + _REDUCERS + "\n\n" + kernel("rows_par", True) + "\n\n"
            + kernel("rows_serial", False))


def _rows_layout(prog, arrays, S, R, K):
    """(kernel, coalesced outer shape, per-operand outer strides, inner strides, its last
    argument) of the rows kernels for ``arrays`` broadcast to ``S`` (R rows of K)."""
    outer, inner = [], []
    for a in arrays:
        st = broadcast_strides(a.shape, S, [x // a.itemsize for x in a.strides])
        outer.append(st[:-1])
        inner.append(st[-1])
    if len(S) > 1:
        oshape, osts = coalesce(S[:-1], outer)
    else:
        oshape, osts = [1], [[0] for _ in arrays]
    pattern = "".join("1" if x == 1 else ("0" if x == 0 else "s") for x in inner)
    mod = _module(prog, "r" + pattern, lambda: _rows_source(prog, pattern))
    if R * K >= PAR_THRESHOLD and R > 1:
        kern, last = mod.rows_par, min(R, 4 * nthreads())
    else:
        kern, last = mod.rows_serial, 1
    return kern, i64(oshape), [i64(st) for st in osts], inner, last


def run_rows(prog, arrays):
    S = tuple(prog.shape)
    K = S[-1]
    R = size_of(S[:-1])
    res = []
    for j in prog.outputs:
        res.append(_empty((R * K,) if prog.ops[j].level == "elem" else (R,), prog.ops[j].dtype))
    if R == 0 or K == 0:
        return [r.reshape(s) for r, s in zip(res, prog.output_shapes)]
    kern, oshape, osts, inner, last = _rows_layout(prog, arrays, S, R, K)
    args = [oshape]
    for a, st, x in zip(arrays, osts, inner):
        b, off, _ = flat_base(a)
        args += [b, off, st, x]
    kern(*args, *_scalar_values(prog), *res, K, last)
    return [r.reshape(s) for r, s in zip(res, prog.output_shapes)]


# ------------------------------------------------------------------------------ matmul
_Epilogue = Epilogue


def run_matmul(prog, arrays):
    epi = _Epilogue.of(prog)
    a, b = (arrays[k] for k in epi.operands)
    c = _matmul.matmul(a[None], b[None]).reshape(prog.shape)
    return epi.outputs(prog, c, arrays, run_elementwise)


# ------------------------------------------------------------------------------ prepared runners
# A compiled graph runs each program on operands of the same shapes and, nearly always, the
# same layouts every call.  ``prepared(prog)`` makes the per-layout decisions (kernel, coalesced
# shapes and strides, split, pattern) once per layout, keyed by the operands' strides; a call
# then only finds its operands' memory and launches.  The kernels and their arguments are
# those ``fused`` picks, so the results are the same bits.

#: operand layouts a prepared runner keeps decisions for (then it forgets them all)
RECIPES_MAX = 64


def _layout_of(recipes, arrays, make):
    """The decisions kept in ``recipes`` for ``arrays``' layout (their strides), ``make()``'s
    the first time."""
    key = tuple([a.strides for a in arrays])
    r = recipes.get(key)
    if r is None:
        if len(recipes) >= RECIPES_MAX:
            recipes.clear()
        r = recipes[key] = make()
    return r


def _prepared_elementwise(prog):
    S = tuple(prog.shape)
    total = size_of(S)
    if total == 0:
        return lambda arrays: run_elementwise(prog, arrays)
    out_dts = [np.dtype(prog.ops[j].dtype) for j in prog.outputs]
    oshapes = tuple(prog.output_shapes)
    scs = _scalar_values(prog)
    par = total >= PAR_THRESHOLD
    recipes: dict = {}

    def recipe(arrays):
        # the direct paths where ``run_elementwise`` would take them with no operand changed:
        # every operand C-contiguous; all of the whole shape (flat), or any (strided)
        if not all(a.flags.c_contiguous for a in arrays):
            return None
        if all(a.shape == S for a in arrays):
            return ("flat", _module(prog, "flat", lambda: _ew_flat_source(prog)))
        if not par and any(w is not a for w, a in zip(whole_operands(arrays, S, total), arrays)):
            return None      # (small operands ``whole_operands`` reshapes: the general path)
        return ("strided", _strided_plan(prog, arrays, S, total, par))

    def run(arrays):
        r = _layout_of(recipes, arrays, lambda: recipe(arrays) or ("any",))
        kind = r[0]
        if kind == "any":
            return run_elementwise(prog, arrays)
        res = [_empty(S, dt) for dt in out_dts]
        flats = [x.reshape(-1) for x in res]
        if kind == "flat":
            _launch_flat(r[1], [a.reshape(-1) for a in arrays] + scs + flats, par)
        else:
            kernel, shp, sts, split = r[1]
            kernel(*_strided_args(shp, arrays, sts), *scs, *flats, split)
        return [x.reshape(s) for x, s in zip(res, oshapes)]
    return run


def _prepared_rows(prog):
    S = tuple(prog.shape)
    K = S[-1]
    R = size_of(S[:-1])
    if R == 0 or K == 0:
        return lambda arrays: run_rows(prog, arrays)
    outs = [((R * K,) if prog.ops[j].level == "elem" else (R,), np.dtype(prog.ops[j].dtype))
            for j in prog.outputs]
    oshapes = tuple(prog.output_shapes)
    scs = _scalar_values(prog)
    recipes: dict = {}

    def run(arrays):
        kern, oshape, osts, inner, last = _layout_of(
            recipes, arrays, lambda: _rows_layout(prog, arrays, S, R, K))
        res = [_empty(shp, dt) for shp, dt in outs]
        args = [oshape]
        for a, st, x in zip(arrays, osts, inner):
            if a.flags.c_contiguous and a.flags.writeable:
                args += [a.reshape(-1), 0, st, x]
            else:
                b, off, _ = flat_base(a)
                args += [b, off, st, x]
        kern(*args, *scs, *res, K, last)
        return [x.reshape(s) for x, s in zip(res, oshapes)]
    return run


def _prepared_matmul(prog):
    epi = Epilogue(prog)
    shape = tuple(prog.shape)
    mm = _matmul.matmul
    ia, ib = epi.operands
    tail = _prepared_elementwise(epi.prog) if epi.prog.outputs else None

    def run_tail(_prog, ins):
        return tail(ins)

    def run(arrays):
        c = mm(arrays[ia][None], arrays[ib][None]).reshape(shape)
        return epi.outputs(prog, c, arrays, run_tail)
    return run


def prepared(prog):
    """``run(arrays)``: ``fused(prog, arrays)`` for a program run many times (a compiled
    graph's step), its layout decisions made once per operand layout."""
    if prog.kind == "elementwise":
        return _prepared_elementwise(prog)
    if prog.kind == "rows":
        return _prepared_rows(prog)
    if prog.kind == "matmul":
        return _prepared_matmul(prog)
    raise ValueError(f"unknown fused program kind {prog.kind!r}")


# ------------------------------------------------------------------------------ entry point
def fused(prog, arrays):
    """Run fused program ``prog`` on NumPy ``arrays`` (one per ``prog.inputs``); returns one
    new array per ``prog.outputs`` with its ``output_shapes`` shape."""
    arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in arrays]
    if prog.kind == "elementwise":
        return run_elementwise(prog, arrays)
    if prog.kind == "rows":
        return run_rows(prog, arrays)
    if prog.kind == "matmul":
        return run_matmul(prog, arrays)
    raise ValueError(f"unknown fused program kind {prog.kind!r}")
