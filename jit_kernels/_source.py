"""Source-text helpers shared by the kernel sets' generators (plain Python: nothing compiles).

Dtype names as generated source spells them, the conversion expression of ``cast`` semantics
(it calls ``sm.f2i32``/``sm.f2i64``, which each set's ``scalar_math`` provides), and the
rendering of the op table's dialect (``jit_kernels.optable``) into a set's own calls.
"""
from __future__ import annotations

import re

import numpy as np

#: dtype name -> NumPy constructor in generated source
NP_NAME = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32",
           "int64": "np.int64", "bool": "np.bool_", "int8": "np.int8", "uint8": "np.uint8",
           "int16": "np.int16", "uint16": "np.uint16", "uint32": "np.uint32",
           "uint64": "np.uint64"}
#: dtype name -> Numba type in generated source
NB_NAME = {"float32": "numba.float32", "float64": "numba.float64", "int32": "numba.int32",
           "int64": "numba.int64"}


def conv_expr(expr: str, src: np.dtype, dst: np.dtype) -> str:
    """Source converting ``expr`` (numba value of dtype ``src``) to ``dst`` (cast semantics)."""
    if dst.kind == "b":
        return expr if src.kind == "b" else f"({expr} != 0)"
    if src.kind == "f" and dst.kind in "iu":
        return f"sm.f2{dst.kind}{dst.itemsize * 8}({expr})"
    if src == dst and dst.kind == "f":
        return expr
    return f"{NP_NAME[dst.name]}({expr})"


def store_expr(expr: str, res: np.dtype, out: np.dtype) -> str:
    """``expr`` (of dtype ``res``) as stored into ``out`` (no conversion float -> same float)."""
    return conv_expr(expr, res, out) if (res != out or out.kind != "f") else expr


#: a dialect call: an upper-case name of two or more characters followed by "("
_CALL = re.compile(r"\b([A-Z][A-Z0-9_]+)\(")
_INF = re.compile(r"\bINF\b")
_PICK = re.compile(r"\b(FMAX|FMIN)_NAN\((\w+), (\w+)\)")


def render(src: str, call, inf: str, pick=None) -> str:
    """Dialect ``src`` in a set's terms: ``NAME(`` becomes ``call(name) + "("``, ``INF`` becomes
    ``inf``; with ``pick``, ``FMAX_NAN(p, q)``/``FMIN_NAN(p, q)`` (of two names) become
    ``pick(">" or "<", p, q)`` first."""
    if pick is not None:
        src = _PICK.sub(lambda m: pick(">" if m.group(1) == "FMAX" else "<", m.group(2), m.group(3)),
                        src)
    src = _CALL.sub(lambda m: call(m.group(1)) + "(", src)
    return _INF.sub(inf, src)
