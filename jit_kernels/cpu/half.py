"""float16/bfloat16 <-> float32 conversions of the cpu set, as one vectorised pass each.

The half types are stored as their uint16 bits (``jit_kernels._half``), so every op on them
converts its operands to float32 and its result back (``runtime/lowprec.py``).  NumPy's own
float16 conversions are scalar loops, which would make those casts most of each half op.
These kernels compute the same bits branch-free on uint32 lanes (every case computed, the
right one selected), so LLVM vectorises them.  They are serial: memory-bound already, where
a parallel variant would cost seconds more to compile from an empty cache per kernel:

- float16 -> float32 is exact; the subnormals come from one float subtraction (the magic
  number ``2**-14``), inf/NaN keep their payload (``sig << 13``), as NumPy.
- float32 -> float16 is NumPy's ``npy_floatbits_to_halfbits`` (round to nearest even,
  subnormals, overflow to inf, a NaN keeps its top payload bits and stays a NaN), lane-wise.
- bfloat16: ``bits << 16`` from it; to it round to nearest even on the low 16 bits, a NaN keeps
  its sign and top bits and is made quiet (``jit_kernels._half``).

The tests compare every float16 pattern and several million float32 patterns bit for bit with
NumPy and with ``_half``'s reference.
"""
from __future__ import annotations

import numpy as np
from numba import uint32

from jit_kernels.cpu import _pool
from jit_kernels.cpu._jit import njit


@njit(inline="always")
def _h2f(h):
    h = uint32(h)
    o = (h & uint32(0x7FFF)) << uint32(13)
    e = o & uint32(0x0F800000)
    o = o + uint32(0x38000000)
    o = o + (uint32(0x38000000) if e == uint32(0x0F800000) else uint32(0))    # inf / NaN
    sub = np.float32(np.uint32(o + uint32(0x00800000)).view(np.float32)
                     - np.float32(2.0 ** -14)).view(np.uint32)              # subnormal / zero
    o = sub if e == uint32(0) else o
    return o | ((h & uint32(0x8000)) << uint32(16))


@njit(inline="always")
def _f2h(f):
    f = uint32(f)
    sgn = (f & uint32(0x80000000)) >> uint32(16)
    fexp = f & uint32(0x7F800000)
    fsig = f & uint32(0x007FFFFF)
    # NaN keeps its top payload bits (never becoming inf); inf and overflow give inf
    nan = uint32(0x7C00) + (fsig >> uint32(13))
    nan = nan + (uint32(1) if nan == uint32(0x7C00) else uint32(0))
    big = nan if (fexp == uint32(0x7F800000)) & (fsig != uint32(0)) else uint32(0x7C00)
    # subnormal half: the significand shifted into place, rounded to nearest even
    e = fexp >> uint32(23)
    sh = uint32(113) - e if (e >= uint32(102)) & (e <= uint32(112)) else uint32(24)
    s = (uint32(0x00800000) + fsig) >> sh
    up = ((s & uint32(0x3FFF)) != uint32(0x1000)) | ((f & uint32(0x7FF)) != uint32(0))
    small = (s + (uint32(0x1000) if up else uint32(0))) >> uint32(13)
    small = small if fexp >= uint32(0x33000000) else uint32(0)
    # normal half: rebias the exponent, round the significand (a carry into the exponent is
    # the right result, up to inf)
    n = fsig + (uint32(0x1000) if (fsig & uint32(0x3FFF)) != uint32(0x1000) else uint32(0))
    normal = ((fexp - uint32(0x38000000)) >> uint32(13)) + (n >> uint32(13))
    r = big if fexp >= uint32(0x47800000) else (small if fexp <= uint32(0x38000000) else normal)
    return np.uint16(sgn + r)


@njit(inline="always")
def _f2bf(u):
    u = uint32(u)
    nan = (u & uint32(0x7FFFFFFF)) > uint32(0x7F800000)
    q = (u >> uint32(16)) | uint32(0x40)
    r = (u + uint32(0x7FFF) + ((u >> uint32(16)) & uint32(1))) >> uint32(16)
    return np.uint16(q if nan else r)


@njit(cache=True)
def _f16_to_f32(bits, out):
    for i in range(bits.shape[0]):
        out[i] = _h2f(bits[i])


@njit(cache=True)
def _f32_to_f16(x, out):
    for i in range(x.shape[0]):
        out[i] = _f2h(x[i])


@njit(cache=True)
def _f32_to_bf16(x, out):
    for i in range(x.shape[0]):
        out[i] = _f2bf(x[i])


def half_to_float(b, fmt: str) -> np.ndarray:
    """float32 values of the uint16 bits ``b`` of ``fmt`` ("float16"/"bfloat16"), C-contiguous."""
    b = np.ascontiguousarray(b)
    if fmt == "bfloat16":
        out = _pool.empty(b.shape, np.uint32)
        np.left_shift(b, np.uint32(16), out=out, dtype=np.uint32)
        return out.view(np.float32)
    if fmt != "float16":
        raise ValueError(fmt)
    out = _pool.empty(b.shape, np.uint32)
    if b.size:
        _f16_to_f32(b.reshape(-1).view(np.uint16), out.reshape(-1))
    return out.view(np.float32)


def float_to_half(x, fmt: str) -> np.ndarray:
    """uint16 bits of ``fmt`` for the float (or int) array ``x``, C-contiguous, ``x``'s shape:
    float32 in one pass; float64 to float16 rounds once (NumPy's conversion), to bfloat16
    through float32 (PyTorch's double rounding); other dtypes through float32."""
    x = np.asarray(x)
    if fmt not in ("float16", "bfloat16"):
        raise ValueError(fmt)
    if fmt == "float16" and x.dtype == np.float64:
        from jit_kernels import _half
        return _half.to_bits(x, fmt)
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    out = _pool.empty(x.shape, np.uint16)
    if x.size:
        kern = _f32_to_f16 if fmt == "float16" else _f32_to_bf16
        kern(u.reshape(-1), out.reshape(-1))
    return out
