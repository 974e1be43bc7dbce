"""Elementwise kernels (unary, binary, where, cast, clamp) generated per op and dtypes.

For every (op, input dtypes, conversion dtypes, output dtype) this module generates Python
source (a scalar function ``f`` plus kernels), writes it to a file with
``jit_kernels.codegen.load_generated_module`` and compiles lazily with ``cache=True``: one
module of flat serial/parallel kernels for contiguous same-shape operands (and scalars), and
one module of strided serial/parallel kernels per *pattern* of the operands' innermost strides
for everything else.

Layout: operands are read by strides, never materialised when broadcast (stride 0); Python
scalars are 0-d arrays (stride 0).  The strided kernels coalesce adjacent dims and walk "rows"
(all dims but the last) in segments along the innermost dim.  The pattern (per operand "1"
contiguous, "0" broadcast, "s" any other inner stride) is fixed by the call's layout, so each
strided kernel holds the one segment loop its pattern needs (one inlined copy of the op to
compile).  For ops calling a transcendental (``_HEAVY``) the "s" operands of a segment are
gathered in blocks into scratch, so the op runs in one contiguous, vectorised loop.  Negative
strides are read in place.  Below ``PAR_THRESHOLD`` elements an operand view of the output's
whole shape is copied first, and an operand broadcast by size-1 dims only is reshaped
(``whole_operands``): operands of one shape run the flat kernels, and the strided kernels see
such an operand as contiguous.  Zero-size outputs are returned without calling a kernel.  Above
``PAR_THRESHOLD`` elements the work is split into contiguous chunks run with ``prange`` (from an
empty cache the serial kernel serves meanwhile, the same bits, while the parallel one builds in
the background: ``_background.parallel_ready``).

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
- Scalar bodies and result dtypes are the op table's (``jit_kernels.optable``), rendered
  here; transcendentals go through ``jit_kernels.cpu.scalar_math``.
"""
from __future__ import annotations

import numpy as np

from jit_kernels import _plan, optable
from jit_kernels._source import NP_NAME, conv_expr, render as _render
from jit_kernels.codegen import load_generated_module
from jit_kernels.cpu import _pool, scalar_math as sm
from jit_kernels.cpu._background import parallel_ready as _parallel_ready
from jit_kernels.cpu._layout import (PAR_THRESHOLD, broadcast_strides, coalesce, flat_base, i64,
                                     nthreads, scalar_array, size_of)

BOOL = _plan.BOOL
_NP_NAME = NP_NAME
_kind = optable.kind_of
_result_dtype = optable.result_dtype


def render(src: str, cdt=None) -> str:
    """The op table's dialect in cpu terms: ``EXP(`` -> ``sm.exp_f32(`` for a float32 compute
    dtype ``cdt`` (``sm.exp_f64(`` otherwise; ``jit_kernels.cpu.scalar_math``), a function
    without width variants (``SQRT``, ``FMAX_NAN``...) -> ``sm.sqrt(``, ``INF`` -> ``np.inf``.

    The table's bodies call math functions on values of the compute dtype only, so naming the
    width picks what ``sm.exp``'s dtype-generic overload would; but Numba types and inlines an
    ``inline="always"`` overload at every call site, which makes a loop (erf's most of all)
    several times slower to compile, for the same bits and speed."""
    w = "f32" if cdt is not None and np.dtype(cdt) == np.float32 else "f64"

    def call(name):
        name = name.lower()
        return f"sm.{name}_{w}" if hasattr(sm, f"{name}_{w}") else f"sm.{name}"
    return _render(src, call, "np.inf")


def _body(op: str, cdt) -> str:
    """Source of op's scalar function body (arguments ``x0, x1, x2`` already converted; ``C``
    the compute type) for compute dtype ``cdt`` (its kind "f"/"i"/"b" picks the table's body,
    ``jit_kernels.optable``)."""
    return render(optable.body(op, _kind(cdt)), cdt)


_TEMPLATE = '''\
import numpy as np
from numba import prange
from jit_kernels.cpu._jit import njit
from jit_kernels.cpu import scalar_math as sm

C = {C}


@njit(inline="always", error_model="numpy")
def f({xs}):
    {body}


{kernels}
'''


_STRIDED_TEMPLATE = '''\
# _seg and _range are inlined by Numba into the kernels that call them (one call site each),
# not compiled as functions of their own: a fifth to a third less compile time per strided
# kernel, and the same loops
@njit(inline="always", error_model="numpy")
def _seg({seg_args}, out, po, n{scratch_args}):
    o = out[po:po + n]
{seg_body}


@njit(inline="always", error_model="numpy")
def _range(lo, hi, shape, {op_args}, out):
    nd = shape.shape[0]
    inner = shape[nd - 1]
    r = lo // inner
    c = lo - r * inner
{scratch_init}
    while lo < hi:
        rem = r
{pos_init}
        for d in range(nd - 2, -1, -1):
            k = rem % shape[d]
            rem = rem // shape[d]
{pos_step}
        n = min(inner - c, hi - lo)
        _seg({seg_call}, out, lo, n{scratch_args})
        lo += n
        r += 1
        c = 0


@njit(cache=True, error_model="numpy")
def strided_serial(shape, {op_args}, out):
    _range(np.int64(0), out.shape[0], shape, {op_args}, out)


@njit(cache=True, parallel=True, error_model="numpy")
def strided_par(shape, {op_args}, out, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
            _range(lo, hi, shape, {op_args}, out)
'''


_FLAT_TEMPLATE = '''\
@njit(cache=True, error_model="numpy")
def flat_serial{sfx}({args}, out):
    for i in range(out.shape[0]):
        out[i] = {ser}


@njit(cache=True, parallel=True, error_model="numpy")
def flat_par{sfx}({args}, out, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for k in prange(nchunks):
        lo = k * chunk
        hi = min(lo + chunk, total)
        if lo < hi:
{slices}
            o = out[lo:hi]
            for i in range(hi - lo):
                o[i] = {vec}
'''


def _masks(n):
    """Operand kinds of the flat kernels: "a" a contiguous array, "s" a scalar (at least one "a")."""
    out = []
    for bits in range(1 << n):
        m = "".join("s" if bits >> i & 1 else "a" for i in range(n))
        if "a" in m:
            out.append(m)
    return out


#: the table's math functions whose inlined code is large: an op calling one reads strided
#: (not contiguous, not broadcast) operands through scratch blocks (``_strided_source``)
_HEAVY = tuple(f for f in optable.MATH_FUNCS if f not in ("FLOOR", "CEIL", "SQRT", "COPYSIGN"))
_SCRATCH = 256   # elements per gathered block of a heavy op's strided operands


def _caller(op, in_dts, cv_dts, out_dt):
    """``call(reads)``: the source of one output element from the operands' ``reads``."""
    res_dt = _result_dtype(op, cv_dts)

    def call(reads):
        args = ", ".join(conv_expr(r, in_dts[i], cv_dts[i]) for i, r in enumerate(reads))
        return conv_expr(f"f({args})", res_dt, out_dt) if res_dt != out_dt or out_dt.kind != "f" \
            else f"f({args})"
    return call


def _head(op, in_dts, cv_dts, kernels: str) -> str:
    cdt = optable.compute_dtype(op, cv_dts)
    return _TEMPLATE.format(kernels=kernels, C=_NP_NAME[cdt.name], body=_body(op, cdt),
                            xs=", ".join(f"x{i}" for i in range(len(in_dts))))


def _flat_source(op, in_dts, cv_dts, out_dt) -> str:
    """The flat kernels (same-shape C-contiguous operands and scalars), one per operand mask."""
    n = len(in_dts)
    call = _caller(op, in_dts, cv_dts, out_dt)
    flat_fns = []
    for mask in _masks(n):
        sfx = "" if "s" not in mask else "_" + mask
        args = ", ".join(f"a{i}" for i in range(n))
        ser = call([f"a{i}[i]" if m == "a" else f"a{i}" for i, m in enumerate(mask)])
        vec = call([f"v{i}[i]" if m == "a" else f"a{i}" for i, m in enumerate(mask)])
        slices = "\n".join(f"            v{i} = a{i}[lo:hi]" for i, m in enumerate(mask) if m == "a")
        flat_fns.append(_FLAT_TEMPLATE.format(sfx=sfx, args=args, ser=ser, vec=vec, slices=slices))
    return _head(op, in_dts, cv_dts, "\n\n".join(flat_fns))


def _strided_source(op, in_dts, cv_dts, out_dt, pattern: str) -> str:
    """The strided kernels for operands whose innermost (coalesced) strides are ``pattern``:
    per operand "1" (contiguous), "0" (broadcast) or "s" (any other).  One module per pattern,
    so each kernel holds one loop over a segment (one inlined copy of the op) where a kernel
    for every pattern would hold one per pattern and take twice as long to compile."""
    n = len(in_dts)
    call = _caller(op, in_dts, cv_dts, out_dt)
    cdt = optable.compute_dtype(op, cv_dts)
    heavy = any(f"{name}(" in optable.body(op, _kind(cdt)) for name in _HEAVY)
    # a heavy op's strided operands are gathered into scratch blocks (``t{i}``, made once per
    # ``_range``) so that it runs in one contiguous, vectorised loop
    scratch = [i for i, p in enumerate(pattern) if p == "s"] if heavy else []
    lines = []
    for i, p in enumerate(pattern):
        if p == "1":
            lines.append(f"    v{i} = b{i}[p{i}:p{i} + n]")
        elif p == "0":
            lines.append(f"    c{i} = b{i}[p{i}]")
    if scratch:
        lines.append(f"    for q in range(0, n, {_SCRATCH}):")
        lines.append(f"        m = min({_SCRATCH}, n - q)")
        for i in scratch:
            lines.append("        for i in range(m):")
            lines.append(f"            t{i}[i] = b{i}[p{i} + (q + i) * s{i}]")
        reads = [f"t{i}[i]" if p == "s" else (f"v{i}[q + i]" if p == "1" else f"c{i}")
                 for i, p in enumerate(pattern)]
        lines.append("        w = o[q:q + m]")
        lines.append("        for i in range(m):")
        lines.append(f"            w[i] = {call(reads)}")
    else:
        reads = [f"b{i}[p{i} + i * s{i}]" if p == "s" else (f"v{i}[i]" if p == "1" else f"c{i}")
                 for i, p in enumerate(pattern)]
        lines.append("    for i in range(n):")
        lines.append(f"        o[i] = {call(reads)}")
    kernels = _STRIDED_TEMPLATE.format(
        seg_args=", ".join(f"b{i}, p{i}, s{i}" for i in range(n)),
        seg_body="\n".join(lines),
        op_args=", ".join(f"b{i}, o{i}, s{i}" for i in range(n)),
        pos_init="\n".join(f"        p{i} = o{i} + c * s{i}[nd - 1]" for i in range(n)),
        pos_step="\n".join(f"            p{i} += k * s{i}[d]" for i in range(n)),
        seg_call=", ".join(f"b{i}, p{i}, s{i}[nd - 1]" for i in range(n)),
        scratch_args="".join(f", t{i}" for i in scratch),
        scratch_init="\n".join(f"    t{i} = np.empty(min(inner, {_SCRATCH}), b{i}.dtype)"
                                for i in scratch),
    )
    return _head(op, in_dts, cv_dts, kernels)


_MODS: dict = {}


def _module(op, in_dts, cv_dts, out_dt, pattern=None):
    """The generated module of op's flat kernels (``pattern`` None) or of its strided kernels
    for one ``pattern`` of innermost strides."""
    key = (op, in_dts, cv_dts, out_dt, pattern)
    mod = _MODS.get(key)
    if mod is None:
        if pattern is None:
            src = _flat_source(op, in_dts, cv_dts, out_dt)
        else:
            src = _strided_source(op, in_dts, cv_dts, out_dt, pattern)
        hint = f"ew_{op}_{'_'.join(d.name for d in in_dts)}__{'_'.join(d.name for d in cv_dts)}__{out_dt.name}"
        if pattern is not None:
            hint += "__s" + pattern
        mod = load_generated_module(src, hint)
        _MODS[key] = mod
    return mod


def _pattern(strides) -> str:
    """The strided kernels' pattern of coalesced operand strides (each ends in its inner one)."""
    return "".join("1" if st[-1] == 1 else ("0" if st[-1] == 0 else "s") for st in strides)


_ndarray = np.ndarray
_np_empty = np.empty
_POOL_MIN = _pool.POOL_MIN_BYTES
_pool_empty = _pool.empty
_FLAT: dict = {}     # (op, in dtypes, cv dtypes, out dtype, mask) -> (serial, parallel, out dtype)
_LAYOUT: dict = {}   # (out shape, ((shape, strides) per operand)) -> (shape i64, [strides i64])
_BPLANS: dict = {}   # (op, (shape, strides, dtype) per array operand, cv dtypes, out dtype) ->
#                      (out shape, size, module, layout shape, layout strides), or
#                      (out shape, size, flat kernels, None, None): operands only reshaped


def _flat_fns(op, in_dts, cv_dts, out_dt, mask):
    key = (op, in_dts, cv_dts, out_dt, mask)
    fns = _FLAT.get(key)
    if fns is None:
        in_n = tuple(np.dtype(d) for d in in_dts)
        cv_n = tuple(np.dtype(d) for d in cv_dts)
        out_n = np.dtype(out_dt)
        mod = _module(op, in_n, cv_n, out_n)
        sfx = "" if "s" not in mask else "_" + mask
        fns = (getattr(mod, "flat_serial" + sfx), getattr(mod, "flat_par" + sfx), out_n)
        _FLAT[key] = fns
    return fns


def _new(shape, n, dt):
    """Output array: malloc for small, the caching allocator for large."""
    if n * dt.itemsize < _POOL_MIN:
        return _np_empty(shape, dt)
    return _pool_empty(shape, dt)


def _scalar(v, dt):
    """Python/NumPy scalar ``v`` as a NumPy scalar of dtype ``dt`` (``cast`` semantics)."""
    t = type(v)
    k = dt.kind
    if k == "f":
        if t is float or t is int or t is bool:
            return dt.type(v)
    elif k == "b":
        if t is bool:
            return dt.type(v)
    elif t is int or t is bool:
        if -2147483648 <= v <= 2147483647 or (dt.itemsize == 8 and -(1 << 63) <= v < (1 << 63)):
            return dt.type(v)
    return scalar_array(v, dt)[()]


def _flat(fns, shape, n, *args):
    """Run flat kernels ``fns`` on same-shape C-contiguous arrays (and scalars) into a new array."""
    out = _new(shape, n, fns[2])
    if n == 0:
        return out
    if len(shape) == 1:
        o = out
    else:  # ravel: a view of a C-contiguous array, and half the cost of reshape(-1)
        o = out.ravel()
        args = [a.ravel() if isinstance(a, _ndarray) else a for a in args]
    if n >= PAR_THRESHOLD and _parallel_ready(fns[1], (*args, o, nt := nthreads())):
        fns[1](*args, o, nt)
    else:  # (the serial variant also stands in while the parallel one builds)
        fns[0](*args, o)
    return out


def _layout(out_shape, arrs):
    key = (out_shape, tuple((a.shape, a.strides, a.itemsize) for a in arrs))
    lay = _LAYOUT.get(key)
    if lay is None:
        strides = []
        for a in arrs:
            isz = a.itemsize
            if any(s % isz for s in a.strides):
                raise ValueError("array strides are not a multiple of its itemsize")
            strides.append(broadcast_strides(a.shape, out_shape, [s // isz for s in a.strides]))
        shp, sts = coalesce(out_shape, strides)
        lay = (i64(shp), [i64(st) for st in sts])
        if len(_LAYOUT) > 4096:
            _LAYOUT.clear()
        _LAYOUT[key] = lay
    return lay


def whole_operands(arrs, shape, total):
    """``arrs`` (arrays and scalars) as operands of the output's whole ``shape`` where that
    costs no kernel: an array broadcast by size-1 dims only (as many elements as the output)
    reshaped to it, and below ``PAR_THRESHOLD`` elements a view of the whole shape that is not
    C-contiguous (transposed, sliced, reversed, a ``broadcast_to``) copied by NumPy.

    Operands of one shape run the flat kernels, and otherwise the strided kernels see more
    operands as contiguous (fewer stride patterns to compile); a copy costs less than the
    strided kernel's set-up for a view (``flat_base``).  Each element is computed by the same
    scalar function either way: the same bits."""
    small = total < PAR_THRESHOLD
    res = []
    for a in arrs:
        if isinstance(a, _ndarray):
            if a.shape != shape and a.size == total and (small or a.flags.c_contiguous):
                a = a.reshape(shape)
            if small and a.shape == shape and not a.flags.c_contiguous:
                a = a.copy()
        res.append(a)
    return res


def run(op: str, operands, cv_dts, out_dt) -> np.ndarray:
    """Apply ``op`` elementwise with broadcasting; ``operands`` are arrays or scalars.

    Scalars are converted to their conversion dtype.  Returns a new C-contiguous array of
    ``out_dt`` with the broadcast shape.  Same-shape C-contiguous arrays (with any scalars) go
    to the flat kernels; everything else to the strided kernels (scalars as 0-d arrays).
    """
    out_dt = np.dtype(out_dt)
    cv_dts = tuple(np.dtype(d) for d in cv_dts)
    arrs = []
    mask = ""
    out_shape = None
    one_shape = True
    contiguous = True
    for x in operands:
        if isinstance(x, _ndarray):
            if out_shape is None:
                out_shape = x.shape
            elif x.shape != out_shape:
                one_shape = False
            if not x.flags.c_contiguous:
                contiguous = False
            mask += "a"
            arrs.append(x)
        else:
            mask += "s"
            arrs.append(x)
    if out_shape is None:  # all scalars: one 0-d array
        arrs[0] = scalar_array(arrs[0], cv_dts[0])
        mask = "a" + mask[1:]
        out_shape = ()
    same = one_shape and contiguous
    if one_shape and not same and (n := size_of(out_shape)) < PAR_THRESHOLD:
        arrs = whole_operands(arrs, out_shape, n)
        same = True
    if same:
        vals = [a if m == "a" else _scalar(a, cv) for a, m, cv in zip(arrs, mask, cv_dts)]
        in_dts = tuple(v.dtype if m == "a" else cv for v, m, cv in zip(vals, mask, cv_dts))
        fns = _flat_fns(op, in_dts, cv_dts, out_dt, mask)
        return _flat(fns, out_shape, size_of(out_shape), *vals)
    if "s" not in mask:
        # arrays only: a plan per (op, layouts, dtypes) holds the module, output shape and
        # coalesced layout; C-contiguous operands then go straight to the strided kernel
        pkey = (op, tuple((a.shape, a.strides, a.dtype) for a in arrs), cv_dts, out_dt)
        plan = _BPLANS.get(pkey)
        if plan is not None and all(a.flags.c_contiguous and a.flags.writeable for a in arrs):
            out_shape, total, mod, shp, sts = plan
            if shp is None and mod is not None:     # broadcast by size-1 dims only: flat
                return _flat(mod, out_shape, total, *[a.reshape(out_shape) for a in arrs])
            out = _new(out_shape, total, out_dt)
            if mod is None:                 # empty output
                return out
            args = [shp]
            for a, st in zip(arrs, sts):
                args += [a.reshape(-1), 0, st]
            _strided(mod, total, args, out.reshape(-1))
            return out
    else:
        pkey = None
    arrs = [a if m == "a" else scalar_array(a, cv) for a, m, cv in zip(arrs, mask, cv_dts)]
    shapes = [a.shape for a in arrs]
    out_shape = shapes[0]
    for s in shapes[1:]:
        if s != out_shape:
            out_shape = np.broadcast_shapes(*shapes)
            break
    total = size_of(out_shape)
    arrs = whole_operands(arrs, out_shape, total)
    if total and all(a.shape == out_shape and a.flags.c_contiguous for a in arrs):
        fns = _flat_fns(op, tuple(a.dtype for a in arrs), cv_dts, out_dt, "a" * len(arrs))
        if pkey is not None:
            if len(_BPLANS) > 4096:
                _BPLANS.clear()
            _BPLANS[pkey] = (out_shape, total, fns, None, None)
        return _flat(fns, out_shape, total, *arrs)
    out = _new(out_shape, total, out_dt)
    if total == 0:
        if pkey is not None:
            _BPLANS[pkey] = (out_shape, 0, None, None, None)
        return out
    in_dts = tuple(a.dtype for a in arrs)
    shp, sts = _layout(out_shape, arrs)
    mod = _module(op, in_dts, cv_dts, out_dt, _pattern(sts))
    if pkey is not None:
        if len(_BPLANS) > 4096:
            _BPLANS.clear()
        _BPLANS[pkey] = (out_shape, total, mod, shp, sts)
    args = [shp]
    for a, st in zip(arrs, sts):
        if a.flags.c_contiguous and a.flags.writeable:
            args += [a.reshape(-1), 0, st]
        else:
            b, off, _ = flat_base(a)
            args += [b, off, st]
    _strided(mod, total, args, out.reshape(-1))
    return out


def _strided(mod, total, args, out1):
    if total >= PAR_THRESHOLD and _parallel_ready(mod.strided_par, (*args, out1, nt := nthreads())):
        mod.strided_par(*args, out1, nt)
    else:
        mod.strided_serial(*args, out1)


# ---------------------------------------------------------------------------------------------
# public entry points used by CpuKernels

_NOT_FAST = optable.NOT_FAST   # ops ``_plan.unary`` lowers (no prepared flat kernel)

def unary(op, x, out_dtype, attrs):
    if type(x) is _ndarray and op not in _NOT_FAST and x.flags.c_contiguous:
        key = (op, (x.dtype,), (out_dtype,), out_dtype, "a")
        fns = _FLAT.get(key) or _flat_fns(*key)
        shape = x.shape
        return _flat(fns, shape, x.size, x)
    return _plan.unary(op, x, out_dtype, attrs, run=run)


def binary(op, a, b, compute_dtype, out_dtype):
    ta = type(a) is _ndarray
    tb = type(b) is _ndarray
    if ta and tb:
        shape = a.shape
        if shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
            key = (op, (a.dtype, b.dtype), (compute_dtype, compute_dtype), out_dtype, "aa")
            fns = _FLAT.get(key) or _flat_fns(*key)
            return _flat(fns, shape, a.size, a, b)
    elif ta:
        if a.flags.c_contiguous:
            key = (op, (a.dtype, compute_dtype), (compute_dtype, compute_dtype), out_dtype, "as")
            fns = _FLAT.get(key) or _flat_fns(*key)
            return _flat(fns, a.shape, a.size, a, _scalar(b, np.dtype(compute_dtype)))
    elif tb:
        if b.flags.c_contiguous:
            key = (op, (compute_dtype, b.dtype), (compute_dtype, compute_dtype), out_dtype, "sa")
            fns = _FLAT.get(key) or _flat_fns(*key)
            return _flat(fns, b.shape, b.size, _scalar(a, np.dtype(compute_dtype)), b)
    cd = np.dtype(compute_dtype)
    return run(op, [a, b], (cd, cd), np.dtype(out_dtype))


def binary_fn(op, a_dtype, b_dtype, compute_dtype, out_dtype, shape=None):
    """A prepared ``binary`` for fixed operand dtypes (None: that operand is a Python scalar).

    The runtime's small-op fast path caches it per (op, shapes, dtypes): same-shape
    C-contiguous arrays go straight to the flat kernel, anything else to ``binary``.  With
    ``shape`` (a promise: both operands are arrays of that shape in every call, as the fast
    path's key guarantees) a small one is decided once: the returned function checks only
    that the operands are C-contiguous."""
    cd = np.dtype(compute_dtype)
    od = np.dtype(out_dtype)
    if a_dtype is None and b_dtype is None:
        return None
    if a_dtype is not None and b_dtype is not None:
        ser, par, _ = _flat_fns(op, (np.dtype(a_dtype), np.dtype(b_dtype)), (cd, cd), od, "aa")
        small = _POOL_MIN // od.itemsize
        if shape is not None and size_of(shape) < small:
            # what the general function below does for operands of this shape
            if len(shape) == 1:
                def f_vector(a, b):
                    if a.flags.c_contiguous and b.flags.c_contiguous:
                        out = _np_empty(shape, od)
                        ser(a, b, out)
                        return out
                    return binary(op, a, b, cd, od)
                return f_vector
            if size_of(shape):
                def f_small(a, b):
                    if a.flags.c_contiguous and b.flags.c_contiguous:
                        out = _np_empty(shape, od)
                        ser(a.ravel(), b.ravel(), out.ravel())
                        return out
                    return binary(op, a, b, cd, od)
                return f_small

        def f(a, b):
            shape = a.shape
            if shape == b.shape and a.flags.c_contiguous and b.flags.c_contiguous:
                n = a.size
                if n < small:
                    out = _np_empty(shape, od)
                    if len(shape) == 1:
                        ser(a, b, out)
                        return out
                    if n:
                        ser(a.ravel(), b.ravel(), out.ravel())
                    return out
                out = _pool_empty(shape, od)
                o = out.ravel()
                a, b = a.ravel(), b.ravel()
                if n >= PAR_THRESHOLD and _parallel_ready(par, (a, b, o, nt := nthreads())):
                    par(a, b, o, nt)
                else:
                    ser(a, b, o)
                return out
            return binary(op, a, b, cd, od)
        return f
    if b_dtype is None:
        fns = _flat_fns(op, (np.dtype(a_dtype), cd), (cd, cd), od, "as")

        def f(a, b):
            if a.flags.c_contiguous:
                return _flat(fns, a.shape, a.size, a, _scalar(b, cd))
            return binary(op, a, b, cd, od)
        return f
    fns = _flat_fns(op, (cd, np.dtype(b_dtype)), (cd, cd), od, "sa")

    def f(a, b):
        if b.flags.c_contiguous:
            return _flat(fns, b.shape, b.size, _scalar(a, cd), b)
        return binary(op, a, b, cd, od)
    return f


def unary_fn(op, x_dtype, out_dtype, shape=None):
    """A prepared ``unary`` (no attrs) for a fixed input dtype; see ``binary_fn`` (``shape``
    too)."""
    if op in _NOT_FAST:
        return None
    od = np.dtype(out_dtype)
    fns = _flat_fns(op, (np.dtype(x_dtype),), (od,), od, "a")
    ser = fns[0]
    small = _POOL_MIN // od.itemsize
    if shape is not None and size_of(shape) < small:
        # what the general function below does for an operand of this shape
        if len(shape) == 1:
            def f_vector(x):
                if x.flags.c_contiguous:
                    out = _np_empty(shape, od)
                    ser(x, out)
                    return out
                return unary(op, x, od, None)
            return f_vector
        if 0 < size_of(shape) < PAR_THRESHOLD:
            def f_small(x):
                if x.flags.c_contiguous:
                    out = _np_empty(shape, od)
                    ser(x.ravel(), out.ravel())
                    return out
                return unary(op, x, od, None)
            return f_small

    def f(x):
        if x.flags.c_contiguous:
            n = x.size
            shape = x.shape
            if n < small and (len(shape) == 1 or n < PAR_THRESHOLD):
                # (what ``_flat`` does for it, without its generic steps)
                out = _np_empty(shape, od)
                if len(shape) == 1:
                    ser(x, out)
                elif n:
                    ser(x.ravel(), out.ravel())
                return out
            return _flat(fns, shape, n, x)
        return unary(op, x, od, None)
    return f


_PY_SCALARS = (int, float, bool)


def where(cond, a, b, out_dtype):
    od = np.dtype(out_dtype)
    if type(cond) is _ndarray and cond.flags.c_contiguous:
        # same-shape C-contiguous arrays and Python scalars: straight to the flat kernel (what
        # ``run`` picks for them, without its generic operand loop)
        shape = cond.shape
        ta, tb = type(a) is _ndarray, type(b) is _ndarray
        if ((a.shape == shape and a.flags.c_contiguous) if ta else type(a) in _PY_SCALARS) and \
                ((b.shape == shape and b.flags.c_contiguous) if tb else type(b) in _PY_SCALARS):
            fns = _flat_fns("where", (cond.dtype, a.dtype if ta else od, b.dtype if tb else od),
                            (BOOL, od, od), od, "a" + ("a" if ta else "s") + ("a" if tb else "s"))
            return _flat(fns, shape, cond.size, cond, a if ta else _scalar(a, od),
                         b if tb else _scalar(b, od))
    return run("where", [cond, a, b], (BOOL, od, od), od)


_SMALL = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.uint32,
                                          np.uint64))


def cast(x, dtype):
    dt = np.dtype(dtype)
    xa = x if isinstance(x, np.ndarray) else np.asarray(x)
    if dt in _SMALL or xa.dtype in _SMALL:
        return _cast_small(xa, dt)
    return run("ident", [xa], (dt,), dt)


#: the largest float64 below 2**64 (2**64 itself does not convert to uint64)
_BELOW_2_64 = float(np.nextafter(2.0 ** 64, 0.0))


def _cast_small(xa, dt):
    """Casts from or to the 8/16-bit ints and the wide unsigned ones with NumPy (nothing to
    compile), ``cast`` semantics: float -> int truncates toward zero and saturates to the
    target's range (NaN -> 0); int -> int wraps; anything -> bool is ``x != 0``."""
    if xa.dtype.kind == "f" and dt.kind in "iu":
        info = np.iinfo(dt)
        if dt.itemsize >= 4:       # the bounds are not float32 values: clip in float64
            xa = xa.astype(np.float64)
        y = np.clip(xa, info.min, min(float(info.max), _BELOW_2_64))
        y = np.where(y != y, 0, y)
        out = y.astype(dt, order="C")
        if dt == np.uint64:             # 2**64 and above (inf included) saturate to the max
            out[xa >= 2.0 ** 64] = info.max
        return out
    return xa.astype(dt, order="C")
