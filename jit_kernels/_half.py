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
