"""The op table: every elementwise op and reduction the kernel sets implement, as plain data.

Device-neutral (imports only NumPy; importing it compiles nothing).  Both kernel sets and both
fusion generators read it; the public op lists of ``jit_kernels`` are derived from it.

**The dialect.**  Scalar bodies and reduction pieces are Python source over the arguments
(``x0, x1, x2`` for elementwise bodies; ``a, b, v, c, fa`` for reductions) with ``np`` and
``math`` available, and these names that each kernel set renders for itself
(``render_cpu``/``render_cuda`` in the sets' generators):

- ``C(v)`` the compute type of an elementwise body, ``A(v)`` the accumulator type of a
  reduction (both set by the generated module);
- ``EXP LOG SQRT SIN COS TANH ERF FLOOR CEIL POW``, ``TAN ASIN ACOS ATAN SINH COSH ASINH ACOSH
  ATANH EXP2 EXPM1 LOG2 LOG10`` and the binary ``ATAN2 HYPOT COPYSIGN FMOD`` (math functions: cpu ``sm.exp``..., cuda
  ``sm.exp_f32``/``sm.exp_f64``... by compute width), ``FMAX_NAN(p, q)``/``FMIN_NAN(p, q)``
  (NaN-propagating max/min of two names), ``INF`` (+infinity), ``IMIN``/``IMAX`` (the integer
  accumulator's range, rendered per dtype).

**Elementwise entries** (``ELEMENTWISE``): ``family`` ("unary"/"binary" for the public ops of
``KernelSet.unary``/``binary``, "internal" for lowering targets such as ``ident``/``where``/
``clamp_lo``), ``nargs`` (the scalar body's arity), ``bodies`` (compute kind "f" float, "i" int,
"b" bool -> body; the integer-only ops have no "f" body, the shifts no "b" one), ``result`` (the
result-dtype rule, see ``result_dtype``), ``float_out`` (the runtime gives int/bool inputs a
float result) and ``fast`` (False: the op has no prepared fast kernel; ``_plan.unary`` lowers
it).

**Reductions** (``REDUCTIONS``): ``spec`` (accumulator kind -> (init, step, comb, fin)) for a
kernel reduction, or ``center``/``kernel`` for a two-pass one (a first reduction whose result
is the centre ``c`` of the second); ``acc`` ("wide": float results accumulate in float64,
int/bool ones in int64; "input": in the input dtype; "f64"); ``fill`` (the value of a
reduction over nothing); ``fa`` (the finaliser's scale: None, "K" the reduced size, "K-ddof");
``public`` (one of ``KernelSet.reduce``'s ops).  One-pass = public without a centre.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

#: math functions of the dialect (each set maps ``NAME(`` to its own scalar_math function)
MATH_FUNCS = ("EXP", "LOG", "SQRT", "SIN", "COS", "TANH", "ERF", "FLOOR", "CEIL", "POW",
              "TAN", "ASIN", "ACOS", "ATAN", "SINH", "COSH", "ASINH", "ACOSH", "ATANH", "EXP2",
              "EXPM1", "LOG2", "LOG10", "ATAN2", "HYPOT", "COPYSIGN", "FMOD")


class Elementwise(NamedTuple):
    name: str
    family: str          # "unary" | "binary" | "internal"
    nargs: int
    bodies: dict         # kind ("f", "i", "b") -> body source (dialect)
    result: str          # "compute" | "bool" | "value" | "float" | "int64"
    float_out: bool = False
    fast: bool = True


class Reduction(NamedTuple):
    name: str
    spec: dict | None    # accumulator kind -> (init, step, comb, fin) (dialect)
    acc: str = "wide"    # "wide" | "input" | "f64"
    fill: float = 0
    fa: str | None = None
    public: bool = True
    center: str | None = None
    kernel: str | None = None


# ------------------------------------------------------------------------------ elementwise
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

_MAXMIN_F = ("if x0 != x0:\n        return x0\n    if x1 != x1:\n        return x1\n"
             "    return x0 if x0 {op} x1 else x1")
_IPOW = ("e = np.int64(x1)\n    if e < 0:\n        if x0 == 1:\n            return np.int64(1)\n"
         "        if x0 == -1:\n            return np.int64(1) if e % 2 == 0 else np.int64(-1)\n"
         "        return np.int64(0)\n    r = np.int64(1)\n    b = np.int64(x0)\n"
         "    while e > 0:\n        if e & 1:\n            r = r * b\n        b = b * b\n"
         "        e = e >> 1\n    return r")

# fmod (C: the dividend's sign), remainder (Python/PyTorch: the divisor's), floor_divide
# (PyTorch's div_floor: fmod-based, so the quotient is exact where a / b would round).  Integer
# forms: x // 0 = x % 0 = fmod(x, 0) = 0 (NumPy's value; never a trap), x // -1 = -x (wraps at
# INT_MIN) and x % -1 = 0, so INT_MIN // -1 never reaches the hardware division.
_FREM = ("m = FMOD(x0, x1)\n    if m != C(0.0) and (x1 < C(0.0)) != (m < C(0.0)):\n"
         "        m = m + x1\n    return m")
_FFLOORDIV = ("if x1 == C(0.0):\n        return x0 / x1\n    m = FMOD(x0, x1)\n"
              "    d = (x0 - m) / x1\n"
              "    if m != C(0.0) and (x1 < C(0.0)) != (m < C(0.0)):\n        d = d - C(1.0)\n"
              "    if d == C(0.0):\n        return COPYSIGN(C(0.0), x0 / x1)\n"
              "    f = FLOOR(d)\n    if d - f > C(0.5):\n        f = f + C(1.0)\n    return f")
_IFMOD = ("if x1 == 0 or x1 == -1:\n        return C(0)\n    r = x0 % x1\n"
          "    if r != 0 and (r < 0) != (x0 < 0):\n        r = r - x1\n    return C(r)")
_IREM = "if x1 == 0 or x1 == -1:\n        return C(0)\n    return C(x0 % x1)"
_IFLOORDIV = ("if x1 == 0:\n        return C(0)\n    if x1 == -1:\n        return C(-x0)\n"
              "    return C(x0 // x1)")

# (name, family, nargs, float body, int body (None: the float body evaluated in float64),
#  result rule, float_out, fast).  A body given as a str alone is the same for every kind.
_EW = [
    # public unary ops, in UNARY_OPS order
    ("neg", "unary", 1, "return -x0", "return -x0", "compute", False, True),
    ("abs", "unary", 1, "return abs(x0)", "return -x0 if x0 < 0 else x0", "compute", False, True),
    ("exp", "unary", 1, "return EXP(x0)", None, "float", True, True),
    ("log", "unary", 1, "return LOG(x0)", None, "float", True, True),
    ("sqrt", "unary", 1, "return SQRT(x0)", None, "float", True, True),
    ("rsqrt", "unary", 1, "return C(1.0) / SQRT(x0)", None, "float", True, True),
    ("sin", "unary", 1, "return SIN(x0)", None, "float", True, True),
    ("cos", "unary", 1, "return COS(x0)", None, "float", True, True),
    ("tanh", "unary", 1, "return TANH(x0)", None, "float", True, True),
    ("sigmoid", "unary", 1,
     ("if x0 >= C(0.0):\n        z = EXP(-x0)\n        return C(1.0) / (C(1.0) + z)\n"
      "    z = EXP(x0)\n    return z / (C(1.0) + z)"), None, "float", True, True),
    ("relu", "unary", 1, "return C(0.0) if x0 < C(0.0) else x0", "return C(0) if x0 < 0 else x0",
     "compute", False, True),
    ("gelu", "unary", 1, "return C(0.5) * x0 * (C(1.0) + ERF(x0 * C(0.7071067811865476)))", None,
     "float", True, True),
    ("gelu_tanh", "unary", 1,
     ("return C(0.5) * x0 * (C(1.0) + TANH(C(0.7978845608028654) * "
      "(x0 + C(0.044715) * x0 * x0 * x0)))"), None, "float", True, True),
    ("erf", "unary", 1, "return ERF(x0)", None, "float", True, True),
    ("reciprocal", "unary", 1, "return C(1.0) / x0",
     ("if x0 == 1:\n        return C(1)\n    if x0 == -1:\n        return C(-1)\n"
      "    return C(0)"), "compute", True, True),
    ("sign", "unary", 1,
     ("if x0 > C(0.0):\n        return C(1.0)\n    if x0 < C(0.0):\n        return C(-1.0)\n"
      "    return x0"),
     "if x0 > 0:\n        return C(1)\n    if x0 < 0:\n        return C(-1)\n    return C(0)",
     "compute", False, True),
    ("floor", "unary", 1, "return FLOOR(x0)", "return x0", "compute", False, True),
    ("ceil", "unary", 1, "return CEIL(x0)", "return x0", "compute", False, True),
] + [(op, "unary", 1, f"return {op.upper()}(x0)", None, "float", True, True) for op in (
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "expm1",
    "log2", "log10")] + [
    ("logical_not", "unary", 1, "return not x0", "return not x0", "bool", False, False),
    ("clamp", "unary", 3, "y = x1 if x0 < x1 else x0\n    return x2 if y > x2 else y",
     "y = x1 if x0 < x1 else x0\n    return x2 if y > x2 else y", "compute", False, False),
    # public binary ops, in BINARY_OPS order
    ("add", "binary", 2, "return x0 + x1", "return x0 + x1", "compute", False, True),
    ("sub", "binary", 2, "return x0 - x1", "return x0 - x1", "compute", False, True),
    ("mul", "binary", 2, "return x0 * x1", "return x0 * x1", "compute", False, True),
    ("div", "binary", 2, "return x0 / x1",
     ("if x1 == 0:\n        return C(0)\n    q = abs(x0) // abs(x1)\n"
      "    return q if (x0 < 0) == (x1 < 0) else -q"), "compute", False, True),
    ("pow", "binary", 2, "return POW(x0, x1)", _IPOW, "int64", False, True),
    ("maximum", "binary", 2, _MAXMIN_F.format(op=">="), "return x0 if x0 >= x1 else x1",
     "compute", False, True),
    ("minimum", "binary", 2, _MAXMIN_F.format(op="<="), "return x0 if x0 <= x1 else x1",
     "compute", False, True),
] + [(op, "binary", 2, f"return x0 {s} x1", f"return x0 {s} x1", "bool", False, True)
     for op, s in _CMP.items()] + [
    ("logical_and", "binary", 2, "return (x0 != 0) and (x1 != 0)",
     "return (x0 != 0) and (x1 != 0)", "bool", False, True),
    ("logical_or", "binary", 2, "return (x0 != 0) or (x1 != 0)",
     "return (x0 != 0) or (x1 != 0)", "bool", False, True),
] + [(op, "binary", 2, f"return {op.upper()}(x0, x1)",
      f"return {op.upper()}(np.float64(x0), np.float64(x1))", "float", False, True)
     for op in ("atan2", "hypot", "copysign")] + [
    ("fmod", "binary", 2, "return FMOD(x0, x1)", _IFMOD, "compute", False, True),
    ("remainder", "binary", 2, _FREM, _IREM, "compute", False, True),
    ("floor_divide", "binary", 2, _FFLOORDIV, _IFLOORDIV, "compute", False, True),
    # lowering targets (cast, where, clamp with one bound)
    ("ident", "internal", 1, "return x0", "return x0", "compute", False, True),
    ("where", "internal", 3, "return x1 if x0 else x2", "return x1 if x0 else x2", "value",
     False, True),
    ("clamp_lo", "internal", 2, "return x1 if x0 < x1 else x0", "return x1 if x0 < x1 else x0",
     "compute", False, True),
    ("clamp_hi", "internal", 2, "return x1 if x0 > x1 else x0", "return x1 if x0 > x1 else x0",
     "compute", False, True),
]

# Integer-only ops: (name, family, nargs, int body, bool body or None, result rule).  They have
# no float body (the runtime refuses float operands), and the shifts no bool one.  A shift
# computes in int64 and is stored in the compute type: shifting by the type's width or more
# (or by a negative amount) gives 0 to the left and the sign to the right, never LLVM's
# undefined result.
_SHIFT_L = ("s = np.int64(x1)\n    if s < 0 or s > 63:\n        return C(0)\n"
            "    return C(np.int64(x0) << s)")
_SHIFT_R = ("s = np.int64(x1)\n    if s < 0 or s > 63:\n        s = np.int64(63)\n"
            "    return C(np.int64(x0) >> s)")
_EW_INT = [
    ("bitwise_not", "unary", 1, "return ~x0", "return not x0", "compute"),
    ("bitwise_and", "binary", 2, "return x0 & x1", "return x0 and x1", "compute"),
    ("bitwise_or", "binary", 2, "return x0 | x1", "return x0 or x1", "compute"),
    ("bitwise_xor", "binary", 2, "return x0 ^ x1", "return x0 != x1", "compute"),
    ("left_shift", "binary", 2, _SHIFT_L, None, "compute"),
    ("right_shift", "binary", 2, _SHIFT_R, None, "compute"),
]

#: arithmetic whose bool form must stay a bool: Numba's bool arithmetic gives an int
#: (True + True == 2); the result is a bool (nonzero), as the stored output is, so a fused
#: consumer sees the same value
_BOOL_WRAP = ("neg", "add", "sub", "mul")


def _in_float64(fbody: str) -> str:
    """A float body evaluated in float64 (an int/bool input of a transcendental)."""
    return fbody.replace("C(", "np.float64(").replace("(x0", "(np.float64(x0)")


def _build_elementwise():
    table = {}
    for name, fam, nargs, fb, ib, res, float_out, fast in _EW:
        if ib is None:
            ib = _in_float64(fb)
        bb = f"return ({ib[7:]}) != 0" if name in _BOOL_WRAP else ib
        table[name] = Elementwise(name, fam, nargs, {"f": fb, "i": ib, "b": bb}, res, float_out,
                                  fast)
    for name, fam, nargs, ib, bb, res in _EW_INT:
        bodies = {"i": ib} if bb is None else {"i": ib, "b": bb}
        table[name] = Elementwise(name, fam, nargs, bodies, res)
    return table


ELEMENTWISE: dict = _build_elementwise()


def kind_of(dt) -> str:
    """Compute kind of a dtype: "f" float, "b" bool, "i" anything else."""
    k = np.dtype(dt).kind
    return "f" if k == "f" else ("b" if k == "b" else "i")


def body(op: str, kind: str) -> str:
    """The dialect body of elementwise ``op`` computing in ``kind``."""
    e = ELEMENTWISE.get(op)
    if e is None:
        raise ValueError(f"unknown elementwise op {op!r}")
    if kind not in e.bodies:
        raise ValueError(f"elementwise op {op!r} has no {kind!r} body (it takes "
                         f"{', '.join(sorted(e.bodies))} operands only)")
    return e.bodies[kind]


def compute_dtype(op: str, cv: tuple) -> np.dtype:
    """The dtype an op's scalar body computes in (``where``: the value dtype)."""
    return cv[1] if op == "where" else cv[0]


def result_dtype(op: str, cv: tuple) -> np.dtype:
    """The dtype of op's scalar result for conversion dtypes ``cv``: bool for comparisons and
    logical ops; the value dtype for ``where``; float64 for a transcendental of an int/bool;
    int64 for an int/bool ``pow``; else the compute dtype."""
    e = ELEMENTWISE.get(op)
    if e is None:
        raise ValueError(f"unknown elementwise op {op!r}")
    rule = e.result
    if rule == "bool":
        return _BOOL
    if rule == "value":
        return cv[1]
    if cv[0].kind != "f":
        if rule == "float":
            return _F64
        if rule == "int64":
            return _I64
    return cv[0]


UNARY_OPS = tuple(n for n, e in ELEMENTWISE.items() if e.family == "unary")
BINARY_OPS = tuple(n for n, e in ELEMENTWISE.items() if e.family == "binary")
#: ops without a prepared fast kernel (``_plan.unary`` lowers them)
NOT_FAST = frozenset(n for n, e in ELEMENTWISE.items() if not e.fast)
#: unary ops whose int/bool inputs the runtime gives a float result
FLOAT_RESULT = frozenset(n for n in UNARY_OPS if ELEMENTWISE[n].float_out)


# ------------------------------------------------------------------------------ reductions
def _same(init, step, comb, fin):
    return {k: (init, step, comb, fin) for k in "fib"}


def _extreme(gt, finit, fn, iinit, binit):
    ispec = (iinit, f"v if v {gt} a else a", f"b if b {gt} a else a", "return a")
    return {"f": (finit, f"{fn}(a, v)", f"{fn}(a, b)", "return a"), "i": ispec,
            "b": (binit,) + ispec[1:]}


_SUMEXP_FIN = ("if c != c or c == math.inf or c == -math.inf:\n        return A(c)\n"
               "    return LOG(a) + c")

REDUCTIONS: dict = {r.name: r for r in (
    Reduction("sum", _same("A(0)", "a + v", "a + b", "return a")),
    Reduction("mean", _same("A(0)", "a + v", "a + b", "return a / fa"), fill=math.nan, fa="K"),
    Reduction("prod", _same("A(1)", "a * v", "a * b", "return a"), fill=1),
    Reduction("max", _extreme(">", "A(-INF)", "FMAX_NAN", "A(IMIN)", "False"), acc="input"),
    Reduction("min", _extreme("<", "A(INF)", "FMIN_NAN", "A(IMAX)", "True"), acc="input"),
    Reduction("var", None, fill=math.nan, fa="K-ddof", center="mean", kernel="sqdev"),
    Reduction("logsumexp", None, fill=-math.inf, center="max", kernel="sumexp"),
    Reduction("norm", _same("A(0)", "a + v * v", "a + b", "return SQRT(a)")),
    # second passes of the two-pass reductions
    Reduction("sqdev", _same("A(0)", "a + (v - c) * (v - c)", "a + b", "return a / fa"),
              acc="f64", public=False),
    Reduction("sumexp", _same("A(0)", "a + EXP(v - c)", "a + b", _SUMEXP_FIN), acc="f64",
              public=False),
)}

REDUCE_OPS = tuple(n for n, r in REDUCTIONS.items() if r.public)
#: public reductions computed by one kernel pass (no centre)
ONE_PASS = frozenset(n for n, r in REDUCTIONS.items() if r.public and r.center is None)
ARG_REDUCE_OPS = ("argmax", "argmin")

#: last-axis reductions the fused "rows" kernels compute (the runtime's fusion may read it)
ROW_REDUCTIONS = ("sum", "mean", "max", "min")
#: every op a fused "rows" kernel computes at row level (reductions, softmax, log_softmax)
ROW_OPS = ROW_REDUCTIONS + ("softmax", "log_softmax")


def reduction_spec(op: str, acc_dt) -> tuple:
    """(init, step, comb, fin) dialect source of kernel reduction ``op`` accumulating in
    ``acc_dt`` (``IMIN``/``IMAX`` already replaced by the accumulator's range)."""
    r = REDUCTIONS.get(op)
    if r is None or r.spec is None:
        raise ValueError(op)
    acc_dt = np.dtype(acc_dt)
    init, step, comb, fin = r.spec[kind_of(acc_dt)]
    if "IMIN" in init or "IMAX" in init:
        info = np.iinfo(acc_dt)
        init = init.replace("IMIN", str(info.min)).replace("IMAX", str(info.max))
    return init, step, comb, fin


def empty_fill(op: str):
    """The value of reduction ``op`` over nothing (0 for ops not in the table)."""
    r = REDUCTIONS.get(op)
    return 0 if r is None else r.fill
