"""Scalar transcendentals used by every generated cpu kernel.

Every transcendental an elementwise/reduction kernel evaluates goes through this module.  The
public names (``exp``, ``log``, ``tanh``, ``sigmoid``, ``erf``, ``sin``, ``cos``, ``pow``,
``sqrt``, ``floor``, ``ceil``, and ``tan asin acos atan sinh cosh asinh acosh
atanh exp2 expm1 log2 log10 atan2 hypot copysign fmod``, see the section at the end) are
generic over float32/float64 (integer arguments are evaluated in float64): Numba-level
overloads that pick the per-width function (``exp_f32``, ``exp_f64``, ...).  For a float32
argument they return float32, for float64 float64.

The per-width functions are compiled once per process and signature as functions LLVM always
inlines (``forceinline``), not inlined into the Numba IR of every caller (``inline="always"``):
a kernel calling them is then typed and lowered with one call per use instead of the whole
function body, and compiles several times faster (an exp/log/tanh/erf chain: about 0.2 s
instead of 1.2 s).  LLVM inlines them before it vectorises the caller's loop, so the machine
code is that of the inlined source: the same bits, vectorised the same way.  Their small
building blocks (``_exp_poly32``, ...) stay Numba-inlined into them.

Why not ``math.exp``: PyPI's llvmlite has no Intel SVML, so ``math.exp``/``np.exp`` inside
``njit`` are scalar libm calls and block loop vectorisation.  The implementations here are
straight-line code (range reduction, polynomial, exponent built through an LLVM ``bitcast``,
special values through selects) that LLVM's loop vectoriser turns into AVX2/AVX-512 code.

Exactness rules:
- no ``fastmath`` anywhere (no reassociation: the Cody–Waite and round-to-integer "shifter"
  tricks depend on evaluation order).  Fused multiply-adds are explicit ``llvm.fma`` calls, so
  the result is the same whatever the caller's fastmath flags and bit-identical for a given
  input on any FMA machine (serial or parallel, any chunking).
- special values follow C99/libm: exp(+inf)=inf, exp(-inf)=+0, exp overflows to inf exactly
  where the true result rounds above the largest finite value and returns denormals/0 on the
  underflow side; log(±0)=-inf, log(x<0)=nan, log(inf)=inf; tanh(±inf)=±1, tanh(-0)=-0;
  sigmoid saturates to 1 / underflows to 0 (denormals kept); erf(±inf)=±1, erf(-0)=-0;
  sin/cos(±inf)=nan; pow as C99 ``pow``.  NaN in gives NaN out (except pow(nan, 0) = pow(1, nan)
  = 1, as C).

The error bound in each docstring is the maximum error, in units in the last place of the
result type, measured by ``tests/kernels/test_ulp.py`` against the float64 NumPy result rounded
to float32 (float32 functions) or against the long-double NumPy result rounded to float64
(float64 functions; ``math.erf`` for erf) over every float32 exponent, both signs, plus special
values.  The ulp of a result is taken at the reference value (denormal results: the denormal
spacing).

Also holds the saturating float→int conversions used by ``cast``: truncation toward zero,
NaN→0, values ≥ 2**(bits-1) (and +inf) → INT_MAX, values < -2**(bits-1) (and -inf) → INT_MIN
(the semantics of Rust's ``as``), and NaN-propagating max/min (``llvm.maximum``/``minimum``).
"""
import math

import numpy as np
from llvmlite import ir as _ir
from numba.core import cgutils as _cgutils, types as _types
from numba.extending import intrinsic as _intrinsic, overload as _overload

from jit_kernels import _saturate
from jit_kernels.cpu._jit import helper, njit

# Numba's SSA pass emits a pedantic NumbaIRAssumptionWarning ("variable ... is not in scope") for
# the dtype-generic overloads below once they are inlined; the compiled code is correct (the ulp
# tests check it), so keep that one message out of users' output.
import warnings as _warnings
from numba.core.errors import NumbaIRAssumptionWarning as _IRWarning

_warnings.filterwarnings("ignore", message=r"variable '_generic__locals__", category=_IRWarning)

# =============================================================================================
# LLVM helpers: select, bit reinterpretation, fma, floor.  All vectorise (select, bitcast,
# llvm.fma, llvm.floor).


@_intrinsic
def _sel(typingctx, c, a, b):
    """``a if c else b`` as one LLVM ``select`` of the two values (both computed; the helpers
    below use it where neither branch divides).  The same value as the conditional
    expression, with the branch types unified as Numba unifies them, but straight-line code:
    a conditional expression is a branch and a phi in Numba's IR, which LLVM must if-convert
    in every loop that inlines the function, which makes such kernels (erf's) much slower to
    compile."""
    if not isinstance(c, (_types.Boolean, _types.Integer)):
        return None
    t = typingctx.unify_types(a, b)
    if t is None or not isinstance(t, (_types.Float, _types.Integer, _types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        cond = context.cast(builder, args[0], sig.args[0], _types.boolean)
        x = context.cast(builder, args[1], sig.args[1], t)
        y = context.cast(builder, args[2], sig.args[2], t)
        return builder.select(cond, x, y)
    return t(c, a, b), codegen


@_intrinsic
def _f32_bits(typingctx, x):
    """float32 -> its int32 bit pattern."""
    if x != _types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(32))
    return _types.int32(x), codegen


@_intrinsic
def _f64_bits(typingctx, x):
    """float64 -> its int64 bit pattern."""
    if x != _types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(64))
    return _types.int64(x), codegen


@_intrinsic
def _as_f32(typingctx, i):
    """Low 32 bits of an integer reinterpreted as float32."""
    if not isinstance(i, _types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        w = v.type.width
        if w > 32:
            v = builder.trunc(v, _ir.IntType(32))
        elif w < 32:
            v = builder.sext(v, _ir.IntType(32))
        return builder.bitcast(v, _ir.FloatType())
    return _types.float32(i), codegen


@_intrinsic
def _as_f64(typingctx, i):
    """An integer (sign-extended to 64 bits) reinterpreted as float64."""
    if not isinstance(i, _types.Integer):
        return None

    def codegen(context, builder, sig, args):
        v = args[0]
        if v.type.width < 64:
            v = builder.sext(v, _ir.IntType(64))
        return builder.bitcast(v, _ir.DoubleType())
    return _types.float64(i), codegen


def _float_unary_intrinsic(name, nargs):
    def impl(typingctx, *args):
        a = args[0]
        if not (isinstance(a, _types.Float) and all(t == a for t in args)):
            return None

        def codegen(context, builder, signature, cargs):
            ty = cargs[0].type
            fn = _cgutils.get_or_insert_function(
                builder.module, _ir.FunctionType(ty, [ty] * nargs), f"llvm.{name}.f{a.bitwidth}")
            return builder.call(fn, cargs)
        return a(*args), codegen

    if nargs == 1:
        def f1(typingctx, a):
            return impl(typingctx, a)
        f1.__name__ = f"_llvm_{name}"
        return _intrinsic(f1)

    def f3(typingctx, a, b, c):
        return impl(typingctx, a, b, c)
    f3.__name__ = f"_llvm_{name}"
    return _intrinsic(f3)


_fma = _float_unary_intrinsic("fma", 3)      # a*b + c, one rounding
_floor = _float_unary_intrinsic("floor", 1)
_fabs = _float_unary_intrinsic("fabs", 1)

_f32 = np.float32
_NAN32 = _f32(np.nan)
_INF32 = _f32(np.inf)
_NINF32 = _f32(-np.inf)
_NAN64 = np.float64(np.nan)
_INF64 = np.float64(np.inf)
_NINF64 = np.float64(-np.inf)

# =============================================================================================
# exp
#
# k = round(x / ln2) with the "shifter" trick (x*log2(e) + 1.5*2^p lands k in the low mantissa
# bits, so k is read from the bit pattern; no float->int conversion), r = x - k*ln2 with a
# two-part ln2 (Cody–Waite, fma), e^r by a Taylor polynomial (Horner, fma), times 2^k built from
# exponent bits.  2^k is applied as 2^(k>>1) * 2^(k-(k>>1)) so that results in the denormal range
# are rounded once and overflow happens exactly where the true result overflows.  The input is
# clamped (NaN-preserving) to a range whose ends already give inf / 0.

_SHIFT32 = _f32(12582912.0)          # 1.5 * 2^23
_SHIFT32_BITS = 0x4B400000
_LOG2E32 = _f32(1.4426950408889634)
_LN2HI32 = _f32(0.693359375)          # 9 significant bits: k*_LN2HI32 is exact
_LN2LO32 = _f32(-2.12194440e-4)
_EXP_HI32 = _f32(89.0)                # exp(89) > FLT_MAX -> inf after scaling
_EXP_LO32 = _f32(-104.0)              # exp(-104) < FLT_TRUE_MIN / 2 -> 0 after scaling
_E32 = tuple(_f32(1.0 / math.factorial(i)) for i in range(8))


@njit(inline="always", error_model="numpy")
def _exp_poly32(r):
    p = _fma(_E32[7], r, _E32[6])
    p = _fma(p, r, _E32[5])
    p = _fma(p, r, _E32[4])
    p = _fma(p, r, _E32[3])
    p = _fma(p, r, _E32[2])
    p = _fma(p, r, _E32[1])
    return _fma(p, r, _E32[0])


@helper(forceinline=True, error_model="numpy")
def exp_f32(x):
    """float32 e**x.  Max error 1 ulp (measured 0.90 ulp).

    Vectorisable; exact specials: exp(nan)=nan, exp(inf)=inf, exp(-inf)=0, overflow to inf for
    x > 88.72284, gradual underflow to denormals, 0 below -103.97208.
    """
    xc = _sel(x > _EXP_HI32, _EXP_HI32, x)
    xc = _sel(xc < _EXP_LO32, _EXP_LO32, xc)
    z = _fma(xc, _LOG2E32, _SHIFT32)
    kf = z - _SHIFT32
    r = _fma(kf, -_LN2HI32, xc)
    r = _fma(kf, -_LN2LO32, r)
    p = _exp_poly32(r)
    k = np.int32(_f32_bits(z) - _SHIFT32_BITS)
    k1 = k >> 1
    k2 = k - k1
    s1 = _as_f32((k1 + 127) << 23)
    s2 = _as_f32((k2 + 127) << 23)
    return (p * s1) * s2


@njit(inline="always", error_model="numpy")
def _exp_core32(x):
    """e**x for -87 <= x <= 88 (no clamping, one scale multiply)."""
    z = _fma(x, _LOG2E32, _SHIFT32)
    kf = z - _SHIFT32
    r = _fma(kf, -_LN2HI32, x)
    r = _fma(kf, -_LN2LO32, r)
    p = _exp_poly32(r)
    k = np.int32(_f32_bits(z) - _SHIFT32_BITS)
    return p * _as_f32((k + 127) << 23)


_SHIFT64 = 6755399441055744.0         # 1.5 * 2^52
_SHIFT64_BITS = 0x4338000000000000
_LOG2E64 = 1.4426950408889634
_LN2HI64 = 6.93147180369123816490e-01  # 32 significant bits
_LN2LO64 = 1.90821492927058770002e-10
_EXP_HI64 = 710.0                      # exp(710) > DBL_MAX
_EXP_LO64 = -746.0                     # exp(-746) < DBL_TRUE_MIN / 2
_E64 = tuple(1.0 / math.factorial(i) for i in range(14))


@njit(inline="always", error_model="numpy")
def _exp_poly64(r):
    p = _fma(_E64[13], r, _E64[12])
    p = _fma(p, r, _E64[11])
    p = _fma(p, r, _E64[10])
    p = _fma(p, r, _E64[9])
    p = _fma(p, r, _E64[8])
    p = _fma(p, r, _E64[7])
    p = _fma(p, r, _E64[6])
    p = _fma(p, r, _E64[5])
    p = _fma(p, r, _E64[4])
    p = _fma(p, r, _E64[3])
    p = _fma(p, r, _E64[2])
    p = _fma(p, r, _E64[1])
    return _fma(p, r, _E64[0])


@helper(forceinline=True, error_model="numpy")
def exp_f64(x):
    """float64 e**x.  Max error 1 ulp (measured 0.85 ulp); same method and specials as
    ``exp_f32`` (overflow above 709.78271, underflow to denormals, 0 below -745.13322)."""
    xc = _sel(x > _EXP_HI64, _EXP_HI64, x)
    xc = _sel(xc < _EXP_LO64, _EXP_LO64, xc)
    z = _fma(xc, _LOG2E64, _SHIFT64)
    kf = z - _SHIFT64
    r = _fma(kf, -_LN2HI64, xc)
    r = _fma(kf, -_LN2LO64, r)
    p = _exp_poly64(r)
    k = _f64_bits(z) - _SHIFT64_BITS
    k1 = k >> 1
    k2 = k - k1
    s1 = _as_f64((k1 + 1023) << 52)
    s2 = _as_f64((k2 + 1023) << 52)
    return (p * s1) * s2


@njit(inline="always", error_model="numpy")
def _exp_core64(x):
    """e**x for -700 <= x <= 700 (no clamping, one scale multiply)."""
    z = _fma(x, _LOG2E64, _SHIFT64)
    kf = z - _SHIFT64
    r = _fma(kf, -_LN2HI64, x)
    r = _fma(kf, -_LN2LO64, r)
    p = _exp_poly64(r)
    k = _f64_bits(z) - _SHIFT64_BITS
    return p * _as_f64((k + 1023) << 52)

# =============================================================================================
# log
#
# x = 2^e * m with m in [sqrt(1/2), sqrt(2)) taken from the bits (denormals pre-scaled by
# 2^23 / 2^54 through a select), f = m - 1, then log(1+f): float32 a degree-9 polynomial
# (Cephes logf coefficients), float64 fdlibm's s = f/(2+f) rational form; e*ln2 added last with
# a two-part ln2.  Specials by selects: log(±0) = -inf, log(x<0) = nan, log(inf) = inf.

_SQRTH32_BITS = 0x3F3504F3           # bits of float32(sqrt(0.5))
_TWO23 = _f32(8388608.0)
_FLT_MIN = _f32(1.1754943508222875e-38)
_L32 = tuple(_f32(c) for c in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1,
                                -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
                                2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1))
_HALF32 = _f32(0.5)
_ONE32 = _f32(1.0)
_ZERO32 = _f32(0.0)


@helper(forceinline=True, error_model="numpy")
def log_f32(x):
    """float32 natural log.  Max error 1 ulp (measured 0.78 ulp).  Vectorisable."""
    tiny = x < _FLT_MIN
    xs = _sel(tiny, x * _TWO23, x)
    ix = np.int32(_f32_bits(xs) - _SQRTH32_BITS)   # np.int32: keep the vector lanes 32-bit
    e = np.int32((ix >> 23) - _sel(tiny, 23, 0))
    m = _as_f32((ix & 0x007FFFFF) + _SQRTH32_BITS)
    f = m - _ONE32
    ef = _f32(e)
    z = f * f
    p = _fma(_L32[0], f, _L32[1])
    p = _fma(p, f, _L32[2])
    p = _fma(p, f, _L32[3])
    p = _fma(p, f, _L32[4])
    p = _fma(p, f, _L32[5])
    p = _fma(p, f, _L32[6])
    p = _fma(p, f, _L32[7])
    p = _fma(p, f, _L32[8])
    y = p * f * z
    y = _fma(ef, _LN2LO32, y)
    y = _fma(-_HALF32, z, y)
    r = f + y
    r = _fma(ef, _LN2HI32, r)
    r = _sel(not (x < _INF32), x, r)          # +inf, nan
    r = _sel(x < _ZERO32, _NAN32, r)
    return _sel(x == _ZERO32, _NINF32, r)


_SQRTH64_BITS = 0x3FE6A09E667F3BCD   # bits of sqrt(0.5)
_TWO54 = 18014398509481984.0
_DBL_MIN = 2.2250738585072014e-308
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01


@helper(forceinline=True, error_model="numpy")
def log_f64(x):
    """float64 natural log.  Max error 1 ulp (measured 0.79 ulp).  Vectorisable."""
    tiny = x < _DBL_MIN
    xs = _sel(tiny, x * _TWO54, x)
    ix = _f64_bits(xs) - _SQRTH64_BITS
    e = (ix >> 52) - _sel(tiny, 54, 0)
    m = _as_f64((ix & 0x000FFFFFFFFFFFFF) + _SQRTH64_BITS)
    f = m - 1.0
    k = np.float64(e)
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * _fma(w, _fma(w, _LG6, _LG4), _LG2)
    t2 = z * _fma(w, _fma(w, _fma(w, _LG7, _LG5), _LG3), _LG1)
    rr = t2 + t1
    hfsq = 0.5 * f * f
    r = k * _LN2HI64 - ((hfsq - (s * (hfsq + rr) + k * _LN2LO64)) - f)
    r = _sel(not (x < _INF64), x, r)
    r = _sel(x < 0.0, _NAN64, r)
    return _sel(x == 0.0, _NINF64, r)

# =============================================================================================
# tanh, sigmoid
#
# tanh: |x| < 0.625 an odd polynomial/rational (Cephes tanhf / tanh), otherwise
# 1 - 2/(e^(2|x|) + 1) with the sign copied back; |x| is clamped (10 / 22) where tanh already
# rounds to ±1, so e^(2|x|) never overflows.  Both halves are computed and selected (no branch).
# sigmoid: z = e^-|x|, 1/(1+z) for x >= 0 and z/(1+z) for x < 0 (no overflow, one division).

_T32 = tuple(_f32(c) for c in (-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2,
                                1.33314422036E-1, -3.33332819422E-1))
_TANH_SMALL32 = _f32(0.625)
_TANH_CLAMP32 = _f32(10.0)       # tanh(x) rounds to 1 from 9.0109
_TWO32 = _f32(2.0)


@helper(forceinline=True, error_model="numpy")
def tanh_f32(x):
    """float32 tanh.  Max error 1.5 ulp (measured 1.30 ulp, near |x| = 0.63).  tanh(±inf)=±1, tanh(-0)=-0,
    tanh(nan)=nan.  Vectorisable."""
    a = _fabs(x)
    # small: x + x*z*P(z)
    z = x * x
    p = _fma(_T32[0], z, _T32[1])
    p = _fma(p, z, _T32[2])
    p = _fma(p, z, _T32[3])
    p = _fma(p, z, _T32[4])
    small = _fma(p * z, x, x)
    small = _sel(x == _ZERO32, x, small)             # keeps -0
    # large: 1 - 2/(e^(2a)+1)
    ac = _sel(a > _TANH_CLAMP32, _TANH_CLAMP32, a)
    ac = _sel(ac < _TANH_SMALL32, _TANH_SMALL32, ac)     # keeps the unused lane in range
    e = _exp_core32(_TWO32 * ac)
    big = _ONE32 - _TWO32 / (e + _ONE32)
    big = _sel(x < _ZERO32, -big, big)
    return _sel(a < _TANH_SMALL32, small, _sel(a == a, big, x))


_TP = (-9.64399179425052238628E-1, -9.92877231001918586564E1, -1.61468768441708447952E3)
_TQ = (1.12811678491632931402E2, 2.23548839060100448583E3, 4.84406305325125486048E3)


@helper(forceinline=True, error_model="numpy")
def tanh_f64(x):
    """float64 tanh.  Max error 1.5 ulp (measured 1.22 ulp); same method and specials as
    ``tanh_f32``."""
    a = _fabs(x)
    z = x * x
    p = _fma(_fma(_TP[0], z, _TP[1]), z, _TP[2])
    q = _fma(_fma(z + _TQ[0], z, _TQ[1]), z, _TQ[2])
    small = _fma(x * z, p / q, x)
    small = _sel(x == 0.0, x, small)                 # keeps -0
    ac = _sel(a > 22.0, 22.0, a)
    ac = _sel(ac < 0.625, 0.625, ac)
    e = _exp_core64(2.0 * ac)
    big = 1.0 - 2.0 / (e + 1.0)
    big = _sel(x < 0.0, -big, big)
    return _sel(a < 0.625, small, _sel(a == a, big, x))


@helper(forceinline=True, error_model="numpy")
def sigmoid_f32(x):
    """float32 logistic 1/(1+e^-x).  Max error 2.5 ulp (measured 2.19 ulp, x < 0).  sigmoid(inf)=1,
    sigmoid(-inf)=0, denormal results kept, nan -> nan.  Vectorisable."""
    z = exp_f32(-_fabs(x))
    num = _sel(x >= _ZERO32, _ONE32, z)
    return num / (_ONE32 + z)


@helper(forceinline=True, error_model="numpy")
def sigmoid_f64(x):
    """float64 logistic.  Max error 2.5 ulp (measured up to 2.02 ulp); as ``sigmoid_f32``."""
    z = exp_f64(-_fabs(x))
    num = _sel(x >= 0.0, 1.0, z)
    return num / (1.0 + z)

# =============================================================================================
# erf
#
# float64: the four fdlibm ranges (|x| < 0.84375: x + x*P/Q; < 1.25: erx + P/Q around 1;
# < 6: 1 - exp(-x^2 - 0.5625 + R/S)/x with the (1.25, 1/0.35) / (1/0.35, 6) coefficient sets
# chosen by selects; >= 6: ±1), every range evaluated and the right one selected, so the loop
# still vectorises.  -x^2 is kept exact by splitting x into a 21-bit head (fdlibm's trick).
# float32: the float64 function, rounded.

_ERX = 8.45062911510467529297e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02, 0.0)
_SB = (3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01, 0.0)
_ERF_MID = 2.857142857142857  # 1/0.35


@njit(inline="always", error_model="numpy")
def _horner8_sel(lo, A, B, u):
    """Horner's rule over the 8 coefficients of ``A`` (``lo``) or ``B``, highest first, with
    each coefficient selected (both tables share the loop)."""
    r = _sel(lo, A[7], B[7])
    for k in range(6, -1, -1):
        r = _fma(r, u, _sel(lo, A[k], B[k]))
    return r

@helper(forceinline=True, error_model="numpy")
def erf_f64(x):
    """float64 error function.  Max error 1 ulp vs libm erf (measured 1.00 ulp).
    erf(±inf)=±1, erf(-0)=-0, erf(nan)=nan.  Vectorisable."""
    a = _fabs(x)
    # |x| < 0.84375
    z = x * x
    r = _fma(_fma(_fma(_fma(_PP[4], z, _PP[3]), z, _PP[2]), z, _PP[1]), z, _PP[0])
    s = _fma(_fma(_fma(_fma(_fma(_QQ[4], z, _QQ[3]), z, _QQ[2]), z, _QQ[1]), z, _QQ[0]), z, 1.0)
    v1 = _fma(x, r / s, x)
    # 0.84375 <= |x| < 1.25
    t = a - 1.0
    pa = _fma(_fma(_fma(_fma(_fma(_fma(_PA[6], t, _PA[5]), t, _PA[4]), t, _PA[3]), t, _PA[2]),
                   t, _PA[1]), t, _PA[0])
    qa = _fma(_fma(_fma(_fma(_fma(_fma(_QA[5], t, _QA[4]), t, _QA[3]), t, _QA[2]), t, _QA[1]),
                   t, _QA[0]), t, 1.0)
    v2 = _ERX + pa / qa
    # 1.25 <= |x| < 6
    ac = _sel(a < 1.25, 1.25, _sel(not (a < 6.0), 6.0, a))
    lo = ac < _ERF_MID
    u = 1.0 / (ac * ac)
    rr = _horner8_sel(lo, _RA, _RB, u)
    ss = _fma(_horner8_sel(lo, _SA, _SB, u), u, 1.0)
    hd = _as_f64(_f64_bits(ac) & np.int64(-4294967296))    # low 32 bits cleared
    e = _exp_core64(-hd * hd - 0.5625) * _exp_core64((hd - ac) * (hd + ac) + rr / ss)
    v3 = 1.0 - e / ac
    v = _sel(a < 1.25, v2, _sel(a < 6.0, v3, 1.0))
    v = _sel(x < 0.0, -v, v)
    v = _sel(a < 0.84375, v1, v)
    return _sel(a == a, v, x)


@helper(forceinline=True, error_model="numpy")
def erf_f32(x):
    """float32 error function: ``erf_f64`` rounded.  Max error 1 ulp (measured 0.50 ulp)."""
    return _f32(erf_f64(np.float64(x)))

# =============================================================================================
# sin, cos
#
# Reduction in float64: k = round(x*2/pi) (shifter trick; the quadrant is the low bits of the
# shifted value), r = x - k*pi/2 with a three-part pi/2 (Cody–Waite, fma; the first step is
# exact), then sin/cos of r in [-pi/4, pi/4] by polynomials.
# float32, whole range without a branch: |x| = M * 2^E (M the 24-bit integer significand) is
# first replaced by M * c(E) with c(E) = 2^E mod 2*pi from a 256-entry double-double table
# (c = 2^E itself for E <= 2, so ordinary inputs are unchanged); M * c < 2^27 is formed exactly
# (fma two-product) and reduced as above.  Polynomials: Taylor in float64, rounded once.
# float64: the same reduction directly on x for |x| <= 2^20; larger finite inputs call libm
# through a call LLVM may not speculate, so that branch makes the float64 loop scalar.

_TWO_OVER_PI = 0.6366197723675814
_PIO2_1 = 1.5707963267948966
_PIO2_2 = 6.123233995736766e-17
_PIO2_3 = -1.4973849048591698e-33
_S64 = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
        2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C64 = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
        -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)
_TRIG_BIG64 = 1048576.0          # 2^20
# Taylor coefficients for the float32 path (|r| <= pi/4: truncation < 1e-11 relative)
_ST = tuple((-1.0) ** i / math.factorial(2 * i + 1) for i in range(1, 6))    # x^3 .. x^11
_CT = tuple((-1.0) ** i / math.factorial(2 * i) for i in range(1, 7))        # x^2 .. x^12


def _two_pi_table():
    """c(E) = 2^E mod 2pi as (hi, lo) doubles for every float32 biased exponent (E = b - 150;
    b = 0 denormals use E = -149; b = 255 inf/nan -> nan)."""
    from fractions import Fraction
    pi = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628"
                  "62089986280348253421170679821480865132823066470938446095505822317253594081")
    hi = np.empty(256)
    lo = np.empty(256)
    for b in range(256):
        e = -149 if b == 0 else b - 150
        c = Fraction(2) ** e
        if e >= 3:
            c = c - 2 * pi * int(c / (2 * pi))
        h = float(c)
        hi[b], lo[b] = h, float(c - Fraction(h))
    hi[255] = lo[255] = np.nan
    return hi, lo


_C2PI_HI, _C2PI_LO = _two_pi_table()


@njit(inline="always", error_model="numpy")
def _reduce_pio2(x):
    z = _fma(x, _TWO_OVER_PI, _SHIFT64)
    k = z - _SHIFT64
    r = _fma(k, -_PIO2_1, x)
    r = _fma(k, -_PIO2_2, r)
    r = _fma(k, -_PIO2_3, r)
    return r, _f64_bits(z)


@njit(inline="always", error_model="numpy")
def _reduce_pio2_f32(ax):
    """(r, quadrant bits) for a float32 |x| of any size (see above)."""
    b = _f32_bits(ax)
    e = b >> 23
    mant = b & 0x007FFFFF
    m = np.float64(mant | _sel(e > 0, 0x00800000, 0))
    ch = _C2PI_HI[e]
    cl = _C2PI_LO[e]
    p = m * ch
    perr = _fma(m, ch, -p)                      # m*ch = p + perr exactly
    z = _fma(p, _TWO_OVER_PI, _SHIFT64)
    k = z - _SHIFT64
    r = _fma(k, -_PIO2_1, p)
    r = _fma(k, -_PIO2_2, r)
    r = _fma(k, -_PIO2_3, r)
    r = r + _fma(m, cl, perr)
    return r, _f64_bits(z)


@njit(inline="always", error_model="numpy")
def _sin_k64(r, z):
    p = _fma(_fma(_fma(_fma(_S64[5], z, _S64[4]), z, _S64[3]), z, _S64[2]), z, _S64[1])
    return _fma(r * z, _fma(z, p, _S64[0]), r)


@njit(inline="always", error_model="numpy")
def _cos_k64(z):
    p = _fma(_fma(_fma(_fma(_fma(_C64[5], z, _C64[4]), z, _C64[3]), z, _C64[2]), z, _C64[1]),
             z, _C64[0])
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + z * (z * p))


@njit(inline="always", error_model="numpy")
def _sincos64(x, shift):
    r, q = _reduce_pio2(x)
    q = q + shift
    z = r * r
    v = _sel(q & 1, _cos_k64(z), _sin_k64(r, z))
    return _sel(q & 2, -v, v)


@njit(inline="always", error_model="numpy")
def _sin_t(r, z):
    p = _fma(_fma(_fma(_fma(_ST[4], z, _ST[3]), z, _ST[2]), z, _ST[1]), z, _ST[0])
    return _fma(r * z, p, r)


@njit(inline="always", error_model="numpy")
def _cos_t(z):
    p = _fma(_fma(_fma(_fma(_fma(_CT[5], z, _CT[4]), z, _CT[3]), z, _CT[2]), z, _CT[1]), z, _CT[0])
    return _fma(z, p, 1.0)


@njit(inline="always", error_model="numpy")
def _sincos32(ax, shift):
    r, q = _reduce_pio2_f32(ax)
    q = q + shift
    z = r * r
    v = _sel(q & 1, _cos_t(z), _sin_t(r, z))
    return _sel(q & 2, -v, v)


@_intrinsic
def _libm_call(typingctx, x, which):
    """Plain C call to libm ``sin``/``cos`` (double).  Not the ``llvm.sin`` intrinsic on
    purpose: that one is speculatable, so LLVM hoists it out of the rare branch and evaluates
    libm for every element."""
    if x != _types.float64 or not isinstance(which, _types.StringLiteral):
        return None
    name = which.literal_value

    def codegen(context, builder, sig, args):
        d = _ir.DoubleType()
        fn = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(d, [d]), name)
        return builder.call(fn, [args[0]])
    return _types.float64(x, which), codegen


@helper(forceinline=True, error_model="numpy")
def sin_f32(x):
    """float32 sine, whole range, no branch.  Max error 1 ulp (measured 0.50 ulp)."""
    v = _f32(_sincos32(_fabs(x), 0))
    v = _sel(x < _ZERO32, -v, v)
    return _sel(x == _ZERO32, x, v)                  # keeps -0


@helper(forceinline=True, error_model="numpy")
def cos_f32(x):
    """float32 cosine, whole range, no branch.  Max error 1 ulp (measured 0.50 ulp)."""
    return _f32(_sincos32(_fabs(x), 1))


@helper(forceinline=True, error_model="numpy")
def sin_f64(x):
    """float64 sine.  Max error 1.5 ulp (measured 1.46 ulp); |x| > 2^20 uses libm."""
    if _fabs(x) > _TRIG_BIG64 and _fabs(x) < _INF64:
        return _libm_call(x, "sin")
    v = _sincos64(x, 0)
    return _sel(x == 0.0, x, v)                      # keeps -0


@helper(forceinline=True, error_model="numpy")
def cos_f64(x):
    """float64 cosine.  Max error 1.5 ulp (measured 1.44 ulp); |x| > 2^20 uses libm."""
    if _fabs(x) > _TRIG_BIG64 and _fabs(x) < _INF64:
        return _libm_call(x, "cos")
    return _sincos64(x, 1)


# =============================================================================================
# pow
#
# float32: exp(y*log|x|) evaluated with the float64 log/exp above and rounded (the float64
# intermediate makes the error in y*log|x| irrelevant at float32 precision), C99 special cases by
# selects.  float64: libm ``pow`` (exp(y*log x) in float64 would need a double-double log to stay
# within a few ulp for large |y*log x|; not done).


@helper(forceinline=True, error_model="numpy")
def pow_f32(x, y):
    """float32 x**y (C99 ``powf`` semantics).  Max error 1 ulp (see module docstring).
    Vectorisable."""
    xd = np.float64(x)
    yd = np.float64(y)
    ax = _fabs(xd)
    r = exp_f64(yd * log_f64(ax))
    yint = _floor(yd) == yd                      # ±inf count as even integers
    hy = 0.5 * yd
    yodd = yint and _floor(hy) != hy
    r = _sel(yodd and _f64_bits(xd) < 0, -r, r)      # negative base (incl. -0, -inf), odd y
    r = _sel(xd < 0.0 and ax < _INF64 and not yint, _NAN64, r)
    r = _sel(yd == 0.0 or xd == 1.0 or (xd == -1.0 and _fabs(yd) == _INF64), 1.0, r)
    return _f32(r)


@helper(forceinline=True, error_model="numpy")
def pow_f64(x, y):
    """float64 x**y: libm ``pow`` (correctly handled specials, < 1 ulp; not vectorised)."""
    return x ** y

# =============================================================================================
# Generic entry points used by the generated kernels: ``sm.exp(x)`` picks the float32 or float64
# implementation from the argument type at compile time (integers/bools: float64) and is inlined.


def _generic(f32impl, f64impl):
    def stub(x):
        raise NotImplementedError("scalar_math functions are for njit code")

    def ov(x):
        if x == _types.float32:
            return lambda x: f32impl(x)
        if x == _types.float64:
            return lambda x: f64impl(x)
        if isinstance(x, (_types.Integer, _types.Boolean)):
            return lambda x: f64impl(np.float64(x))
        return None

    _overload(stub, inline="always")(ov)
    return stub


exp = _generic(exp_f32, exp_f64)
log = _generic(log_f32, log_f64)
tanh = _generic(tanh_f32, tanh_f64)
sigmoid = _generic(sigmoid_f32, sigmoid_f64)
erf = _generic(erf_f32, erf_f64)
sin = _generic(sin_f32, sin_f64)
cos = _generic(cos_f32, cos_f64)
for _f, _n in ((exp, "exp"), (log, "log"), (tanh, "tanh"), (sigmoid, "sigmoid"), (erf, "erf"),
               (sin, "sin"), (cos, "cos")):
    _f.__name__ = _f.__qualname__ = _n


def pow(x, y):
    raise NotImplementedError("scalar_math functions are for njit code")


@_overload(pow, inline="always")
def _ov_pow(x, y):
    if x == _types.float32 and y == _types.float32:
        return lambda x, y: pow_f32(x, y)
    if isinstance(x, _types.Float) and isinstance(y, _types.Float):
        return lambda x, y: pow_f64(np.float64(x), np.float64(y))
    return None


@njit(inline="always", error_model="numpy")
def sqrt(x):
    return math.sqrt(x)


@njit(inline="always", error_model="numpy")
def floor(x):
    return np.floor(x)


@njit(inline="always", error_model="numpy")
def ceil(x):
    return np.ceil(x)


# =============================================================================================
# saturating float -> int, NaN-propagating max/min

f2i32 = njit(inline="always", error_model="numpy")(_saturate.f2i32)
f2i64 = njit(inline="always", error_model="numpy")(_saturate.f2i64)


# NaN-propagating max/min that vectorise: LLVM's llvm.maximum/llvm.minimum intrinsics


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


# =============================================================================================
# The rest of the elementwise math: tan, the inverse trig and hyperbolic functions,
# exp2/expm1/log2/log10, and the binary atan2/copysign/hypot/fmod.
#
# float32: wherever the float64 helpers above give the function in a few straight-line steps,
# the float32 result is that float64 value rounded (the float64 intermediate makes its own error
# negligible at float32 precision), so the loop still vectorises: tan (the float32 pi/2
# reduction and Taylor kernels of sin/cos), sinh, cosh, asinh, acosh, atanh, exp2, expm1, log2,
# log10, hypot, asin, acos, atan (a float64 atan of its own).  Small arguments, where a formula
# would cancel, use a float64 Taylor polynomial selected without a branch.  atan2 in float32 is
# libm's float64 function rounded (a scalar call: that loop does not vectorise).  float64: libm (glibc, < 1 ulp; scalar
# calls, not vectorised), except copysign (``llvm.copysign``, exact, vectorises).
# Bounds (max error in ulp, measured by tests/kernels/test_ulp.py as the module docstring says)
# are in each docstring.

_INV_LN2 = 1.4426950408889634            # 1 / ln 2
_INV_LN10 = 0.4342944819032518           # 1 / ln 10
_LN2 = 0.6931471805599453


def _copysign_intrinsic(typingctx, a, b):
    if not (isinstance(a, _types.Float) and a == b):
        return None

    def codegen(context, builder, signature, args):
        ty = args[0].type
        fn = _cgutils.get_or_insert_function(
            builder.module, _ir.FunctionType(ty, [ty, ty]), f"llvm.copysign.f{a.bitwidth}")
        return builder.call(fn, args)
    return a(a, b), codegen


_copysign = _intrinsic(_copysign_intrinsic)


@helper(forceinline=True, error_model="numpy")
def tan_f32(x):
    """float32 tangent, whole range, no branch.  Max error 1 ulp (measured 0.50 ulp): the
    float32 reduction of ``sin_f32``, sin/cos Taylor kernels in float64, their quotient rounded.
    tan(±0) = ±0, tan(±inf) = tan(nan) = nan.  Vectorisable."""
    r, q = _reduce_pio2_f32(_fabs(x))
    z = r * r
    s = _sin_t(r, z)
    c = _cos_t(z)
    v = _f32(-c / s if q & 1 else s / c)
    v = _sel(x < _ZERO32, -v, v)
    return _sel(x == _ZERO32, x, v)                  # keeps -0


@helper(forceinline=True, error_model="numpy")
def tan_f64(x):
    """float64 tangent: libm ``tan``.  Max error 1 ulp (measured 0.54 ulp).  Not vectorised."""
    return math.tan(x)


_ATAN_C = tuple((-1.0) ** k / (2 * k + 1) for k in range(12))     # atan(u) = u * P(u^2)
_TAN_PI8 = 0.41421356237309503
_PIO4 = math.pi / 4
_PIO2 = math.pi / 2


@njit(inline="always", error_model="numpy")
def _atan_pos64(t):
    """atan(t) in float64 for t >= 0 (inf included) to ~1e-12 relative (enough for a float32
    result): t > 1 by pi/2 - atan(1/t), then r > tan(pi/8) by pi/4 + atan((r-1)/(r+1)), then
    the Taylor series to u^23 (|u| <= tan(pi/8): truncation < 2e-11 relative).  No branch."""
    big = t > 1.0
    r = 1.0 / t if big else t
    mid = r > _TAN_PI8
    u = (r - 1.0) / (r + 1.0) if mid else r
    z = u * u
    p = _fma(_ATAN_C[11], z, _ATAN_C[10])
    p = _fma(p, z, _ATAN_C[9])
    p = _fma(p, z, _ATAN_C[8])
    p = _fma(p, z, _ATAN_C[7])
    p = _fma(p, z, _ATAN_C[6])
    p = _fma(p, z, _ATAN_C[5])
    p = _fma(p, z, _ATAN_C[4])
    p = _fma(p, z, _ATAN_C[3])
    p = _fma(p, z, _ATAN_C[2])
    p = _fma(p, z, _ATAN_C[1])
    a = _fma(u * z, p, u)
    a = _sel(mid, a + _PIO4, a)
    return _sel(big, _PIO2 - a, a)


@helper(forceinline=True, error_model="numpy")
def asin_f32(x):
    """float32 arcsine.  Max error 1 ulp (measured 0.50 ulp): atan(|x| / sqrt((1-|x|)(1+|x|)))
    in float64 (``_atan_pos64``) with x's sign, rounded; |x| > 1 -> nan, asin(-0) = -0.
    Vectorisable."""
    xd = np.float64(x)
    a = _fabs(xd)
    r = _atan_pos64(a / math.sqrt((1.0 - a) * (1.0 + a)))
    return _f32(_copysign(r, xd))


@helper(forceinline=True, error_model="numpy")
def asin_f64(x):
    """float64 arcsine: libm ``asin``.  Max error 1 ulp (measured 0.51 ulp).  Not vectorised."""
    return math.asin(x)


@helper(forceinline=True, error_model="numpy")
def acos_f32(x):
    """float32 arccosine.  Max error 1 ulp (measured 0.50 ulp): 2 atan(sqrt((1-x)/(1+x))) in
    float64 (``_atan_pos64``), rounded; |x| > 1 -> nan, acos(-1) = pi.  Vectorisable."""
    xd = np.float64(x)
    return _f32(2.0 * _atan_pos64(math.sqrt((1.0 - xd) / (1.0 + xd))))


@helper(forceinline=True, error_model="numpy")
def acos_f64(x):
    """float64 arccosine: libm ``acos``.  Max error 1 ulp (measured 0.52 ulp).  Not
    vectorised."""
    return math.acos(x)


@helper(forceinline=True, error_model="numpy")
def atan_f32(x):
    """float32 arctangent.  Max error 1 ulp (measured 0.50 ulp): ``_atan_pos64(|x|)`` with x's
    sign, rounded; atan(±inf) = ±pi/2, atan(-0) = -0.  Vectorisable."""
    xd = np.float64(x)
    return _f32(_copysign(_atan_pos64(_fabs(xd)), xd))


@helper(forceinline=True, error_model="numpy")
def atan_f64(x):
    """float64 arctangent: libm ``atan``.  Max error 1 ulp (measured 0.51 ulp).  Not
    vectorised."""
    return math.atan(x)


@njit(inline="always", error_model="numpy")
def _sinh_small64(x):
    """sinh(x) for |x| <= 0.5 by its Taylor series to x^13 (truncation < 1e-16 relative)."""
    z = x * x
    p = _fma(_fma(_fma(_fma(_fma(1.0 / 6227020800.0, z, 1.0 / 39916800.0), z, 1.0 / 362880.0),
                        z, 1.0 / 5040.0), z, 1.0 / 120.0), z, 1.0 / 6.0)
    return _fma(x * z, p, x)


@helper(forceinline=True, error_model="numpy")
def sinh_f32(x):
    """float32 hyperbolic sine.  Max error 1 ulp (measured 0.50 ulp): float64 Taylor series for
    |x| <= 0.5, else (e - 1/e)/2 with e = exp_f64(|x|), rounded; overflows to ±inf where the
    true result does; sinh(-0) = -0.  Vectorisable."""
    xd = np.float64(x)
    a = _fabs(xd)
    e = exp_f64(a)
    big = 0.5 * (e - 1.0 / e)
    big = _sel(xd < 0.0, -big, big)
    ac = _sel(a > 0.5, 0.5, a)
    small = _sinh_small64(_copysign(ac, xd))
    return _f32(_sel(a <= 0.5, small, big))


@helper(forceinline=True, error_model="numpy")
def sinh_f64(x):
    """float64 hyperbolic sine: libm ``sinh``.  Max error 2.5 ulp (measured 1.80 ulp, near
    overflow).  Not vectorised."""
    return math.sinh(x)


@helper(forceinline=True, error_model="numpy")
def cosh_f32(x):
    """float32 hyperbolic cosine.  Max error 1 ulp (measured 0.50 ulp): (e + 1/e)/2 with
    e = exp_f64(|x|) in float64, rounded; overflows to inf where the true result does.
    Vectorisable."""
    e = exp_f64(_fabs(np.float64(x)))
    return _f32(0.5 * (e + 1.0 / e))


@helper(forceinline=True, error_model="numpy")
def cosh_f64(x):
    """float64 hyperbolic cosine: libm ``cosh``.  Max error 2.5 ulp (measured 1.80 ulp, near
    overflow).  Not vectorised."""
    return math.cosh(x)


@helper(forceinline=True, error_model="numpy")
def asinh_f32(x):
    """float32 inverse hyperbolic sine.  Max error 1 ulp (measured 0.50 ulp): in float64,
    log(|x| + sqrt(x^2 + 1)) with x's sign, and its Taylor series below |x| = 2^-7 (no
    cancellation); asinh(±inf) = ±inf, asinh(-0) = -0.  Vectorisable."""
    xd = np.float64(x)
    a = _fabs(xd)
    big = log_f64(a + math.sqrt(_fma(a, a, 1.0)))
    z = xd * xd                  # x - x^3/6 + 3x^5/40 - 5x^7/112 (|x| < 2^-7: < 1e-18 rel.)
    small = _fma(xd * z, _fma(_fma(-5.0 / 112.0, z, 3.0 / 40.0), z, -1.0 / 6.0), xd)
    big = _copysign(big, xd)
    small = _sel(a == 0.0, xd, small)                # keeps -0
    return _f32(_sel(a < 0.0078125, small, big))


@helper(forceinline=True, error_model="numpy")
def asinh_f64(x):
    """float64 inverse hyperbolic sine: libm ``asinh``.  Max error 2.5 ulp (measured 1.55 ulp).
    Not vectorised."""
    return math.asinh(x)


@helper(forceinline=True, error_model="numpy")
def acosh_f32(x):
    """float32 inverse hyperbolic cosine.  Max error 1 ulp (measured 0.50 ulp): in float64,
    log(x + sqrt(x^2 - 1)) (x^2 is exact in float64 for a float32 x), rounded; x < 1 -> nan,
    acosh(1) = 0, acosh(inf) = inf.  Vectorisable."""
    xd = np.float64(x)
    r = log_f64(xd + math.sqrt(_fma(xd, xd, -1.0)))
    return _f32(_sel(xd < 1.0, _NAN64, r))


@helper(forceinline=True, error_model="numpy")
def acosh_f64(x):
    """float64 inverse hyperbolic cosine: libm ``acosh``.  Max error 2.5 ulp (measured 1.75 ulp).
    Not vectorised."""
    return math.acosh(x)


@helper(forceinline=True, error_model="numpy")
def atanh_f32(x):
    """float32 inverse hyperbolic tangent.  Max error 1 ulp (measured 0.50 ulp): in float64,
    log((1 + |x|) / (1 - |x|)) / 2 with x's sign, and its Taylor series below |x| = 2^-7;
    atanh(±1) = ±inf, |x| > 1 -> nan, atanh(-0) = -0.  Vectorisable."""
    xd = np.float64(x)
    a = _fabs(xd)
    big = _copysign(0.5 * log_f64((1.0 + a) / (1.0 - a)), xd)
    z = xd * xd                  # x + x^3/3 + x^5/5 + x^7/7 (|x| < 2^-7: < 1e-17 rel.)
    small = _fma(xd * z, _fma(_fma(1.0 / 7.0, z, 1.0 / 5.0), z, 1.0 / 3.0), xd)
    return _f32(_sel(a < 0.0078125, small, big))


@helper(forceinline=True, error_model="numpy")
def atanh_f64(x):
    """float64 inverse hyperbolic tangent: libm ``atanh``.  Max error 2.5 ulp (measured 1.50
    ulp).  Not vectorised."""
    return math.atanh(x)


@helper(forceinline=True, error_model="numpy")
def exp2_f32(x):
    """float32 2**x.  Max error 1 ulp (measured 0.50 ulp): exp_f64(x ln 2) rounded; exact at
    integers, overflow to inf from x = 128, gradual underflow.  Vectorisable."""
    return _f32(exp_f64(np.float64(x) * _LN2))


@helper(forceinline=True, error_model="numpy")
def exp2_f64(x):
    """float64 2**x: libm ``exp2``.  Max error 1 ulp (measured 0.51 ulp).  Not vectorised."""
    return np.exp2(x)


@helper(forceinline=True, error_model="numpy")
def expm1_f32(x):
    """float32 e**x - 1.  Max error 1 ulp (measured 0.50 ulp): float64 Taylor series for
    |x| <= 0.5, else exp_f64(x) - 1, rounded; expm1(-inf) = -1, expm1(-0) = -0.
    Vectorisable."""
    xd = np.float64(x)
    a = _fabs(xd)
    big = exp_f64(xd) - 1.0
    xs = _copysign(_sel(a > 0.5, 0.5, a), xd)
    p = _fma(_E64[13], xs, _E64[12])
    p = _fma(p, xs, _E64[11])
    p = _fma(p, xs, _E64[10])
    p = _fma(p, xs, _E64[9])
    p = _fma(p, xs, _E64[8])
    p = _fma(p, xs, _E64[7])
    p = _fma(p, xs, _E64[6])
    p = _fma(p, xs, _E64[5])
    p = _fma(p, xs, _E64[4])
    p = _fma(p, xs, _E64[3])
    p = _fma(p, xs, _E64[2])
    small = _fma(xs * xs, p, xs)                 # x + x^2 (1/2 + x/6 + ... + x^11/13!)
    small = _sel(a == 0.0, xd, small)            # keeps -0
    return _f32(_sel(a <= 0.5, small, big))


@helper(forceinline=True, error_model="numpy")
def expm1_f64(x):
    """float64 e**x - 1: libm ``expm1``.  Max error 1 ulp (measured 0.76 ulp).  Not
    vectorised."""
    return math.expm1(x)


@helper(forceinline=True, error_model="numpy")
def log2_f32(x):
    """float32 base-2 log.  Max error 1 ulp (measured 0.50 ulp): log_f64(x) / ln 2 rounded;
    exact at powers of two; specials as ``log``.  Vectorisable."""
    return _f32(log_f64(np.float64(x)) * _INV_LN2)


@helper(forceinline=True, error_model="numpy")
def log2_f64(x):
    """float64 base-2 log: libm ``log2``.  Max error 1 ulp (measured 0.54 ulp).  Not
    vectorised."""
    return math.log2(x)


@helper(forceinline=True, error_model="numpy")
def log10_f32(x):
    """float32 base-10 log.  Max error 1 ulp (measured 0.50 ulp): log_f64(x) / ln 10 rounded;
    specials as ``log``.  Vectorisable."""
    return _f32(log_f64(np.float64(x)) * _INV_LN10)


@helper(forceinline=True, error_model="numpy")
def log10_f64(x):
    """float64 base-10 log: libm ``log10``.  Max error 2 ulp (measured 1.58 ulp).  Not
    vectorised."""
    return math.log10(x)


@helper(forceinline=True, error_model="numpy")
def atan2_f32(y, x):
    """float32 atan2(y, x): libm's float64 ``atan2`` rounded.  Max error 1 ulp (measured 0.50
    ulp); C99 specials (signed zeros, infinities).  Not vectorised (a scalar call)."""
    return _f32(math.atan2(np.float64(y), np.float64(x)))


@helper(forceinline=True, error_model="numpy")
def atan2_f64(y, x):
    """float64 atan2(y, x): libm ``atan2``.  Max error 1 ulp (measured 0.52 ulp).  Not
    vectorised."""
    return math.atan2(y, x)


@helper(forceinline=True, error_model="numpy")
def hypot_f32(x, y):
    """float32 sqrt(x^2 + y^2).  Max error 1 ulp (measured 0.50 ulp): the squares and the sum
    in float64 (no overflow or underflow for float32 operands), rounded; hypot(±inf, nan) =
    inf (C99).  Vectorisable."""
    xd = np.float64(x)
    yd = np.float64(y)
    h = math.sqrt(_fma(xd, xd, yd * yd))
    inf = _fabs(xd) == _INF64 or _fabs(yd) == _INF64
    return _f32(_sel(inf, _INF64, h))


@helper(forceinline=True, error_model="numpy")
def hypot_f64(x, y):
    """float64 sqrt(x^2 + y^2) without overflow: libm ``hypot``.  Max error 1 ulp (measured
    0.57 ulp).  Not vectorised."""
    return math.hypot(x, y)


@helper(forceinline=True, error_model="numpy")
def copysign_f32(x, y):
    """|x| with the sign bit of y (``llvm.copysign``): exact.  Vectorisable."""
    return _copysign(x, y)


copysign_f64 = copysign_f32


@helper(forceinline=True, error_model="numpy")
def fmod_f32(x, y):
    """C's fmod (the result has x's sign, |result| < |y|): exact; fmod(x, 0) = nan,
    fmod(±inf, y) = nan, fmod(x, ±inf) = x.  A libm call: not vectorised."""
    return np.fmod(x, y)


fmod_f64 = fmod_f32


def _generic2(f32impl, f64impl, name):
    def stub(x, y):
        raise NotImplementedError("scalar_math functions are for njit code")

    def ov(x, y):
        if x == _types.float32 and y == _types.float32:
            return lambda x, y: f32impl(x, y)
        if isinstance(x, (_types.Float, _types.Integer, _types.Boolean)) and \
                isinstance(y, (_types.Float, _types.Integer, _types.Boolean)):
            return lambda x, y: f64impl(np.float64(x), np.float64(y))
        return None

    _overload(stub, inline="always")(ov)
    stub.__name__ = stub.__qualname__ = name
    return stub


tan = _generic(tan_f32, tan_f64)
asin = _generic(asin_f32, asin_f64)
acos = _generic(acos_f32, acos_f64)
atan = _generic(atan_f32, atan_f64)
sinh = _generic(sinh_f32, sinh_f64)
cosh = _generic(cosh_f32, cosh_f64)
asinh = _generic(asinh_f32, asinh_f64)
acosh = _generic(acosh_f32, acosh_f64)
atanh = _generic(atanh_f32, atanh_f64)
exp2 = _generic(exp2_f32, exp2_f64)
expm1 = _generic(expm1_f32, expm1_f64)
log2 = _generic(log2_f32, log2_f64)
log10 = _generic(log10_f32, log10_f64)
for _f, _n in ((tan, "tan"), (asin, "asin"), (acos, "acos"), (atan, "atan"), (sinh, "sinh"),
               (cosh, "cosh"), (asinh, "asinh"), (acosh, "acosh"), (atanh, "atanh"),
               (exp2, "exp2"), (expm1, "expm1"), (log2, "log2"), (log10, "log10")):
    _f.__name__ = _f.__qualname__ = _n
atan2 = _generic2(atan2_f32, atan2_f64, "atan2")
hypot = _generic2(hypot_f32, hypot_f64, "hypot")
copysign = _generic2(copysign_f32, copysign_f64, "copysign")
fmod = _generic2(fmod_f32, fmod_f64, "fmod")
