"""Scalar transcendentals used by every generated cpu kernel.

Every transcendental an elementwise/reduction kernel evaluates goes through this module, so a
later issue can swap these libm calls for vectorised polynomial versions in one place.  All
functions are ``@njit(inline="always")``; for a float32 argument they return float32 (libm's
``expf``/``tanhf``/...), for float64 float64.

Also holds the saturating float→int conversions used by ``cast``: truncation toward zero,
NaN→0, values ≥ 2**(bits-1) (and +inf) → INT_MAX, values < -2**(bits-1) (and -inf) → INT_MIN
(the semantics of Rust's ``as``).
"""
import math

import numpy as np
from numba import njit


@njit(inline="always", error_model="numpy")
def exp(x):
    return math.exp(x)


@njit(inline="always", error_model="numpy")
def log(x):
    return math.log(x)


@njit(inline="always", error_model="numpy")
def sqrt(x):
    return math.sqrt(x)


@njit(inline="always", error_model="numpy")
def sin(x):
    return math.sin(x)


@njit(inline="always", error_model="numpy")
def cos(x):
    return math.cos(x)


@njit(inline="always", error_model="numpy")
def tanh(x):
    return math.tanh(x)


@njit(inline="always", error_model="numpy")
def erf(x):
    return math.erf(x)


@njit(inline="always", error_model="numpy")
def floor(x):
    return np.floor(x)


@njit(inline="always", error_model="numpy")
def ceil(x):
    return np.ceil(x)


@njit(inline="always", error_model="numpy")
def pow(x, y):
    return x ** y


_I32_MAX = np.int32(2147483647)
_I32_MIN = np.int32(-2147483648)
_I64_MAX = np.int64(9223372036854775807)
_I64_MIN = np.int64(-9223372036854775808)


@njit(inline="always", error_model="numpy")
def f2i32(x):
    if x != x:
        return np.int32(0)
    if x >= 2147483648.0:
        return _I32_MAX
    if x < -2147483648.0:
        return _I32_MIN
    return np.int32(x)


@njit(inline="always", error_model="numpy")
def f2i64(x):
    if x != x:
        return np.int64(0)
    if x >= 9223372036854775808.0:
        return _I64_MAX
    if x < -9223372036854775808.0:
        return _I64_MIN
    return np.int64(x)


# -- NaN-propagating max/min that vectorise: LLVM's llvm.maximum/llvm.minimum intrinsics ----------
from llvmlite import ir as _ir  # noqa: E402
from numba.core import cgutils as _cgutils, types as _types  # noqa: E402
from numba.extending import intrinsic as _intrinsic  # noqa: E402


def _minmax_intrinsic(which):
    def impl(typingctx, a, b):
        if not (isinstance(a, _types.Float) and a == b):
            return None

        def codegen(context, builder, signature, args):
            ty = args[0].type
            fn = _cgutils.get_or_insert_function(
                builder.module, _ir.FunctionType(ty, [ty, ty]), f"llvm.{which}.f{a.bitwidth}")
            return builder.call(fn, args)

        return a(a, b), codegen

    impl.__name__ = f"_llvm_{which}"
    return _intrinsic(impl)


fmax_nan = _minmax_intrinsic("maximum")
fmin_nan = _minmax_intrinsic("minimum")
