"""Elementwise kernels (unary, binary, where, cast, clamp) generated per op and dtypes.

For every (op, input dtypes, conversion dtypes, output dtype) this module generates Python
source (one scalar function ``f`` plus four kernels: flat serial/parallel for contiguous
same-shape operands, strided serial/parallel for everything else), writes it to a file with
``jit_kernels.codegen.load_generated_module`` and compiles lazily with ``cache=True``.

Layout: operands are read by strides, never materialised when broadcast (stride 0); Python
scalars are 0-d arrays (stride 0).  The strided kernels coalesce adjacent dims and walk "rows"
(all dims but the last) with fast branches for inner strides 1/0.  Negative strides are read in
place.  Zero-size outputs are returned without calling a kernel.  Above ``PAR_THRESHOLD``
elements the work is split into contiguous chunks run with ``prange``.

Semantics (compute in ``compute_dtype``, store as ``out_dtype``):
- operands are converted to the compute dtype; conversions follow ``cast`` below.
- ``div`` is true division (floats; the runtime never asks for integer ``div``; if it did the
  result is truncated division with x/0 = 0).  Float division by zero gives ±inf/nan.
- integer ``pow``: ``0 ** 0 = 1``; a negative exponent gives 1 for base 1, ±1 for base -1 and 0
  otherwise (never raises); overflow wraps.  Float ``pow`` follows C ``pow``.
- ``maximum``/``minimum`` propagate NaN (as NumPy).  ``sign(nan) = nan``, ``relu(nan) = nan``.
- ``gelu`` is the exact form ``0.5·x·(1 + erf(x/√2))``; ``gelu_tanh`` is PyTorch's tanh
  approximation ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``; ``rsqrt = 1/sqrt``;
  ``sigmoid`` is evaluated in the overflow-free form.
- integer ``abs(INT_MIN)`` wraps to INT_MIN (as NumPy); integer ``reciprocal`` is 1/x truncated
  (1 for 1, -1 for -1, 0 otherwise, 0 for x = 0).
- ``clamp`` with ``min``/``max`` either None; NaN stays NaN.
- ``cast``: float→int truncates toward zero and saturates (NaN→0, +inf/too large→INT_MAX,
  -inf/too small→INT_MIN); anything→bool is ``x != 0``; bool→number is 0/1; int→int wraps.
- ``logical_*`` take any dtype (nonzero is true) and return bool.
- Transcendentals go through ``jit_kernels.cpu.scalar_math``.
"""
from __future__ import annotations

import numpy as np

from jit_kernels.codegen import load_generated_module
from jit_kernels.cpu._layout import (PAR_THRESHOLD, broadcast_strides, coalesce, flat_base, i64,
                                     nthreads, scalar_array, size_of)

BOOL = np.dtype(np.bool_)
_NP_NAME = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32",
            "int64": "np.int64", "bool": "np.bool_"}

# ---------------------------------------------------------------------------------------------
# scalar op bodies: op -> (kind -> body source).  Arguments are x0, x1, x2 already converted;
# ``C`` is the compute type.  ``kind`` is "f" (float), "i" (int) or "b" (bool).

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
BOOL_RESULT = set(_CMP) | {"logical_and", "logical_or", "logical_not"}


def _body(op: str, kind: str) -> str:
    fl = kind == "f"
    if op in _CMP:
        return f"return x0 {_CMP[op]} x1"
    simple = {
        "ident": "return x0",
        "where": "return x1 if x0 else x2",
        "logical_not": "return not x0",
        "logical_and": "return (x0 != 0) and (x1 != 0)",
        "logical_or": "return (x0 != 0) or (x1 != 0)",
        "neg": "return -x0",
        "add": "return x0 + x1",
        "sub": "return x0 - x1",
        "mul": "return x0 * x1",
        "clamp_lo": "return x1 if x0 < x1 else x0",
        "clamp_hi": "return x1 if x0 > x1 else x0",
        "clamp": "y = x1 if x0 < x1 else x0\n    return x2 if y > x2 else y",
    }
    if op in simple:
        return simple[op]
    if fl:
        fbodies = {
            "abs": "return abs(x0)",
            "exp": "return sm.exp(x0)",
            "log": "return sm.log(x0)",
            "sqrt": "return sm.sqrt(x0)",
            "rsqrt": "return C(1.0) / sm.sqrt(x0)",
            "sin": "return sm.sin(x0)",
            "cos": "return sm.cos(x0)",
            "tanh": "return sm.tanh(x0)",
            "erf": "return sm.erf(x0)",
            "sigmoid": ("if x0 >= C(0.0):\n        z = sm.exp(-x0)\n        return C(1.0) / (C(1.0) + z)\n"
                        "    z = sm.exp(x0)\n    return z / (C(1.0) + z)"),
            "relu": "return C(0.0) if x0 < C(0.0) else x0",
            "gelu": "return C(0.5) * x0 * (C(1.0) + sm.erf(x0 * C(0.7071067811865476)))",
            "gelu_tanh": ("return C(0.5) * x0 * (C(1.0) + sm.tanh(C(0.7978845608028654) * "
                          "(x0 + C(0.044715) * x0 * x0 * x0)))"),
            "reciprocal": "return C(1.0) / x0",
            "sign": ("if x0 > C(0.0):\n        return C(1.0)\n    if x0 < C(0.0):\n        return C(-1.0)\n"
                     "    return x0"),
            "floor": "return sm.floor(x0)",
            "ceil": "return sm.ceil(x0)",
            "div": "return x0 / x1",
            "pow": "return sm.pow(x0, x1)",
            "maximum": ("if x0 != x0:\n        return x0\n    if x1 != x1:\n        return x1\n"
                        "    return x0 if x0 >= x1 else x1"),
            "minimum": ("if x0 != x0:\n        return x0\n    if x1 != x1:\n        return x1\n"
                        "    return x0 if x0 <= x1 else x1"),
        }
        if op in fbodies:
            return fbodies[op]
    else:
        ibodies = {
            "abs": "return -x0 if x0 < 0 else x0",
            "relu": "return C(0) if x0 < 0 else x0",
            "sign": "if x0 > 0:\n        return C(1)\n    if x0 < 0:\n        return C(-1)\n    return C(0)",
            "floor": "return x0",
            "ceil": "return x0",
            "reciprocal": ("if x0 == 1:\n        return C(1)\n    if x0 == -1:\n        return C(-1)\n"
                           "    return C(0)"),
            "div": "if x1 == 0:\n        return C(0)\n    q = abs(x0) // abs(x1)\n    return q if (x0 < 0) == (x1 < 0) else -q",
            "pow": ("e = np.int64(x1)\n    if e < 0:\n        if x0 == 1:\n            return np.int64(1)\n"
                    "        if x0 == -1:\n            return np.int64(1) if e % 2 == 0 else np.int64(-1)\n"
                    "        return np.int64(0)\n    r = np.int64(1)\n    b = np.int64(x0)\n"
                    "    while e > 0:\n        if e & 1:\n            r = r * b\n        b = b * b\n"
                    "        e = e >> 1\n    return r"),
            "maximum": "return x0 if x0 >= x1 else x1",
            "minimum": "return x0 if x0 <= x1 else x1",
        }
        if op in ibodies:
            return ibodies[op]
        # transcendentals on int/bool compute: evaluate in float64
        if op in ("exp", "log", "sqrt", "sin", "cos", "tanh", "erf"):
            return f"return sm.{op}(np.float64(x0))"
        if op in ("rsqrt", "sigmoid", "gelu", "gelu_tanh"):
            return _body(op, "f").replace("C(", "np.float64(").replace("(x0", "(np.float64(x0)")
    raise ValueError(f"unknown elementwise op {op!r}")


def _kind(dt: np.dtype) -> str:
    return "f" if dt.kind == "f" else ("b" if dt.kind == "b" else "i")


def _result_dtype(op: str, cv: tuple) -> np.dtype:
    if op in BOOL_RESULT:
        return BOOL
    if op == "where":
        return cv[1]
    if cv[0].kind != "f" and op in ("exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "rsqrt",
                                     "sigmoid", "gelu", "gelu_tanh"):
        return np.dtype(np.float64)
    if op == "pow" and cv[0].kind != "f":
        return np.dtype(np.int64)
    return cv[0]


def conv_expr(expr: str, src: np.dtype, dst: np.dtype) -> str:
    """Source converting ``expr`` (numba value of dtype ``src``) to ``dst`` (cast semantics)."""
    if dst.kind == "b":
        return expr if src.kind == "b" else f"({expr} != 0)"
    if src.kind == "f" and dst.kind in "iu":
        return f"sm.f2i{dst.itemsize * 8}({expr})"
    if src == dst and dst.kind == "f":
        return expr
    return f"{_NP_NAME[dst.name]}({expr})"


_TEMPLATE = '''\
import numpy as np
from numba import njit, prange
from jit_kernels.cpu import scalar_math as sm

C = {C}


@njit(inline="always", error_model="numpy")
def f({xs}):
    {body}


@njit(error_model="numpy")
def _seg({seg_args}, out, po, n):
    o = out[po:po + n]
{seg_body}


@njit(error_model="numpy")
def _range(lo, hi, shape, {op_args}, out):
    nd = shape.shape[0]
    inner = shape[nd - 1]
    r = lo // inner
    c = lo - r * inner
    while lo < hi:
        rem = r
{pos_init}
        for d in range(nd - 2, -1, -1):
            k = rem % shape[d]
            rem = rem // shape[d]
{pos_step}
        n = min(inner - c, hi - lo)
        _seg({seg_call}, out, lo, n)
        lo += n
        r += 1
        c = 0


@njit(cache=True, error_model="numpy")
def strided_serial(shape, {op_args}, out):
    _range(0, out.shape[0], shape, {op_args}, out)


@njit(cache=True, parallel=True, error_model="numpy")
def strided_par(shape, {op_args}, out, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
            _range(lo, hi, shape, {op_args}, out)


@njit(cache=True, error_model="numpy")
def flat_serial({as_}, out):
    for i in range(out.shape[0]):
        out[i] = {flat_expr}


@njit(cache=True, parallel=True, error_model="numpy")
def flat_par({as_}, out, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
{flat_slices}
            o = out[lo:hi]
            for i in range(hi - lo):
                o[i] = {flat_expr_v}
'''


def _gen_source(op, in_dts, cv_dts, out_dt) -> str:
    n = len(in_dts)
    res_dt = _result_dtype(op, cv_dts)
    kind = _kind(cv_dts[1] if op == "where" else cv_dts[0])

    def call(reads):
        args = ", ".join(conv_expr(r, in_dts[i], cv_dts[i]) for i, r in enumerate(reads))
        return conv_expr(f"f({args})", res_dt, out_dt) if res_dt != out_dt or out_dt.kind != "f" \
            else f"f({args})"

    # fast-branch patterns of inner strides (1 = contiguous, 0 = broadcast)
    pats = {1: [(1,), (0,)], 2: [(1, 1), (1, 0), (0, 1)],
            3: [(1, 1, 1), (1, 0, 0), (1, 1, 0), (1, 0, 1)]}[n]
    lines = []
    for j, pat in enumerate(pats):
        cond = " and ".join(f"s{i} == {p}" for i, p in enumerate(pat))
        lines.append(f"    {'if' if j == 0 else 'elif'} {cond}:")
        reads = []
        for i, p in enumerate(pat):
            if p == 1:
                lines.append(f"        v{i} = b{i}[p{i}:p{i} + n]")
                reads.append(f"v{i}[i]")
            else:
                lines.append(f"        c{i} = b{i}[p{i}]")
                reads.append(f"c{i}")
        lines.append("        for i in range(n):")
        lines.append(f"            o[i] = {call(reads)}")
    lines.append("    else:")
    lines.append("        for i in range(n):")
    lines.append(f"            o[i] = {call([f'b{i}[p{i} + i * s{i}]' for i in range(n)])}")

    return _TEMPLATE.format(
        C=_NP_NAME[(cv_dts[1] if op == "where" else cv_dts[0]).name],
        xs=", ".join(f"x{i}" for i in range(n)),
        body=_body(op, kind),
        seg_args=", ".join(f"b{i}, p{i}, s{i}" for i in range(n)),
        seg_body="\n".join(lines),
        op_args=", ".join(f"b{i}, o{i}, s{i}" for i in range(n)),
        pos_init="\n".join(f"        p{i} = o{i} + c * s{i}[nd - 1]" for i in range(n)),
        pos_step="\n".join(f"            p{i} += k * s{i}[d]" for i in range(n)),
        seg_call=", ".join(f"b{i}, p{i}, s{i}[nd - 1]" for i in range(n)),
        as_=", ".join(f"a{i}" for i in range(n)),
        flat_expr=call([f"a{i}[i]" for i in range(n)]),
        flat_slices="\n".join(f"            v{i} = a{i}[lo:hi]" for i in range(n)),
        flat_expr_v=call([f"v{i}[i]" for i in range(n)]),
    )


_MODS: dict = {}


def _module(op, in_dts, cv_dts, out_dt):
    key = (op, in_dts, cv_dts, out_dt)
    mod = _MODS.get(key)
    if mod is None:
        src = _gen_source(op, in_dts, cv_dts, out_dt)
        hint = f"ew_{op}_{'_'.join(d.name for d in in_dts)}__{'_'.join(d.name for d in cv_dts)}__{out_dt.name}"
        mod = load_generated_module(src, hint)
        _MODS[key] = mod
    return mod


def run(op: str, operands, cv_dts, out_dt) -> np.ndarray:
    """Apply ``op`` elementwise with broadcasting; ``operands`` are arrays or scalars.

    Scalars are converted to 0-d arrays of their conversion dtype.  Returns a new C-contiguous
    array of ``out_dt`` with the broadcast shape.
    """
    out_dt = np.dtype(out_dt)
    cv_dts = tuple(np.dtype(d) for d in cv_dts)
    arrs = [x if isinstance(x, np.ndarray) else scalar_array(x, cv) for x, cv in zip(operands, cv_dts)]
    shapes = [a.shape for a in arrs]
    out_shape = shapes[0]
    for s in shapes[1:]:
        if s != out_shape:
            out_shape = np.broadcast_shapes(*shapes)
            break
    out = np.empty(out_shape, dtype=out_dt)
    total = out.size
    if total == 0:
        return out
    in_dts = tuple(a.dtype for a in arrs)
    mod = _module(op, in_dts, cv_dts, out_dt)
    out1 = out.reshape(-1)
    par = total >= PAR_THRESHOLD
    if all(a.shape == out_shape and a.flags.c_contiguous for a in arrs):
        flats = [a.reshape(-1) for a in arrs]
        if par:
            mod.flat_par(*flats, out1, nthreads())
        else:
            mod.flat_serial(*flats, out1)
        return out
    bases = []
    strides = []
    for a in arrs:
        b, off, es = flat_base(a)
        bases.append((b, off))
        strides.append(broadcast_strides(a.shape, out_shape, es))
    shp, sts = coalesce(out_shape, strides)
    args = [i64(shp)]
    for (b, off), st in zip(bases, sts):
        args += [b, off, i64(st)]
    if par:
        mod.strided_par(*args, out1, nthreads())
    else:
        mod.strided_serial(*args, out1)
    return out


# ---------------------------------------------------------------------------------------------
# public entry points used by CpuKernels

def unary(op, x, out_dtype, attrs):
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


def binary(op, a, b, compute_dtype, out_dtype):
    cd = np.dtype(compute_dtype)
    return run(op, [a, b], (cd, cd), np.dtype(out_dtype))


def where(cond, a, b, out_dtype):
    od = np.dtype(out_dtype)
    return run("where", [cond, a, b], (BOOL, od, od), od)


def cast(x, dtype):
    dt = np.dtype(dtype)
    xa = x if isinstance(x, np.ndarray) else np.asarray(x)
    return run("ident", [xa], (dt,), dt)
