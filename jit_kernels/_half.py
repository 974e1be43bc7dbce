"""float16/bfloat16 <-> float32 conversions on NumPy arrays (the cpu set's, and the host
reference of the others).  The runtime stores both half types as their uint16 bits: Numba's
CPU target has no float16 type and NumPy no bfloat16.

- float16: NumPy's own conversions (IEEE binary16, round to nearest even, subnormals, overflow
  to inf, NaN kept); from float64 it rounds once.
- bfloat16: the top 16 bits of a float32.  To bfloat16: round to nearest even on the low 16
  bits (overflow to inf), a NaN stays a (quiet) NaN with its sign; from float64 through
  float32 (PyTorch's double rounding).  From bfloat16: ``bits << 16``, exact.
"""
from __future__ import annotations

import numpy as np

FORMATS = ("float16", "bfloat16")


def to_bits(x, fmt: str) -> np.ndarray:
    """uint16 bits of ``fmt`` for float (or int) array ``x``, C-contiguous, ``x``'s shape."""
    x = np.asarray(x)
    if fmt == "float16":
        with np.errstate(over="ignore", invalid="ignore"):   # out of range: inf (IEEE)
            h = x.astype(np.float16)
        return np.ascontiguousarray(h).view(np.uint16).reshape(x.shape)
    if fmt != "bfloat16":
        raise ValueError(fmt)
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        r = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), r)
    return r.astype(np.uint16).reshape(x.shape)


def from_bits(b, fmt: str) -> np.ndarray:
    """float32 values of uint16 bits ``b`` of ``fmt``, C-contiguous."""
    b = np.asarray(b)
    if fmt == "float16":
        return np.ascontiguousarray(b).view(np.float16).astype(np.float32)
    if fmt != "bfloat16":
        raise ValueError(fmt)
    return (b.astype(np.uint32, order="C") << np.uint32(16)).view(np.float32)


# ---- scalar bit conversions (device-neutral: the cuda set compiles them as device functions;
# NumPy's npy_floatbits_to_halfbits / npy_halfbits_to_floatbits, round to nearest even)
def f32bits_to_f16bits(f):
    """float16 bits of the float32 with bits ``f`` (a uint32)."""
    f = np.uint32(f)
    sgn = np.uint32((f & np.uint32(0x80000000)) >> np.uint32(16))
    fexp = f & np.uint32(0x7F800000)
    if fexp >= np.uint32(0x47800000):          # overflow, inf or NaN
        if fexp == np.uint32(0x7F800000):
            fsig = f & np.uint32(0x007FFFFF)
            if fsig != 0:
                r = np.uint32(0x7C00) + (fsig >> np.uint32(13))
                if r == np.uint32(0x7C00):
                    r = r + np.uint32(1)       # stays a NaN
                return np.uint16(sgn + r)
        return np.uint16(sgn + np.uint32(0x7C00))
    if fexp <= np.uint32(0x38000000):          # a subnormal half or a signed zero
        if fexp < np.uint32(0x33000000):
            return np.uint16(sgn)
        e = fexp >> np.uint32(23)
        fsig = np.uint32(0x00800000) + (f & np.uint32(0x007FFFFF))
        fsig = fsig >> (np.uint32(113) - e)
        if ((fsig & np.uint32(0x3FFF)) != np.uint32(0x1000)) or (f & np.uint32(0x7FF)) != 0:
            fsig = fsig + np.uint32(0x1000)
        return np.uint16(sgn + (fsig >> np.uint32(13)))
    hexp = (fexp - np.uint32(0x38000000)) >> np.uint32(13)
    fsig = f & np.uint32(0x007FFFFF)
    if (fsig & np.uint32(0x3FFF)) != np.uint32(0x1000):
        fsig = fsig + np.uint32(0x1000)
    return np.uint16(sgn + hexp + (fsig >> np.uint32(13)))


def f16bits_to_f32bits(h):
    """float32 bits of the float16 with bits ``h`` (exact)."""
    h = np.uint32(h)
    sgn = (h & np.uint32(0x8000)) << np.uint32(16)
    hexp = h & np.uint32(0x7C00)
    sig = h & np.uint32(0x03FF)
    if hexp == 0:
        if sig == 0:
            return np.uint32(sgn)
        e = np.uint32(113)                     # normalise the subnormal
        while (sig & np.uint32(0x0400)) == 0:
            sig = sig << np.uint32(1)
            e = e - np.uint32(1)
        return np.uint32(sgn + (e << np.uint32(23)) + ((sig & np.uint32(0x03FF)) << np.uint32(13)))
    if hexp == np.uint32(0x7C00):
        return np.uint32(sgn + np.uint32(0x7F800000) + (sig << np.uint32(13)))
    return np.uint32(sgn + ((hexp + np.uint32(0x1C000)) << np.uint32(13)) + (sig << np.uint32(13)))


def f32bits_to_bf16bits(u):
    """bfloat16 bits of the float32 with bits ``u``."""
    u = np.uint32(u)
    if (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):
        return np.uint16((u >> np.uint32(16)) | np.uint32(0x40))
    return np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
