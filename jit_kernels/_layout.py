"""Layout metadata helpers shared by the kernel sets (NumPy and plain Python only: no element
is read or written, nothing is compiled).

Operands are described by shapes and element strides; broadcast dims get stride 0.
"""
from __future__ import annotations

import numpy as np


def size_of(shape) -> int:
    """Number of elements of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    return n


def broadcast_strides(shape, out_shape, strides):
    """Element strides of an operand of ``shape``/``strides`` broadcast to ``out_shape``."""
    pad = len(out_shape) - len(shape)
    res = [0] * pad
    for n, s in zip(shape, strides):
        res.append(0 if n == 1 else s)
    return res


def coalesce(shape, strides_list):
    """Drop size-1 dims and merge adjacent dims that are contiguous in every operand.

    Returns ``(shape, [strides per operand])`` with at least one dim; C order is preserved.
    """
    dims = [i for i, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides_list]
    d0 = dims[0]
    shp = [shape[d0]]
    sts = [[s[d0]] for s in strides_list]
    for d in dims[1:]:
        n = shape[d]
        if all(st[-1] == s[d] * n for st, s in zip(sts, strides_list)):
            shp[-1] *= n
            for st, s in zip(sts, strides_list):
                st[-1] = s[d]
        else:
            shp.append(n)
            for st, s in zip(sts, strides_list):
                st.append(s[d])
    return shp, sts


def wrap_int(v: int, dtype: np.dtype) -> int:
    """``v`` wrapped to the range of integer ``dtype`` (as C)."""
    bits = dtype.itemsize * 8
    m = 1 << bits
    v %= m
    return v - m if v >= m >> 1 else v


def scalar_array(v, dtype) -> np.ndarray:
    """A 0-d array of ``dtype`` holding Python/NumPy scalar ``v`` (ints wrap like C)."""
    dtype = np.dtype(dtype)
    if isinstance(v, np.ndarray):
        v = v.item()
    elif isinstance(v, np.generic):
        v = v.item()
    if dtype.kind == "b":
        return np.array(bool(v), dtype=dtype)
    if dtype.kind in "iu":
        if isinstance(v, float):
            if v != v:
                v = 0
            elif v in (float("inf"), float("-inf")):
                info = np.iinfo(dtype)
                v = info.max if v > 0 else info.min
            else:
                v = int(v)
        return np.array(wrap_int(int(v), dtype), dtype=dtype)
    return np.array(v, dtype=dtype)
