"""Layout helpers shared by the cpu kernels (pure metadata: no element is read or written).

Kernels see every strided operand as ``(base, offset, strides)``: ``base`` a 1-D C-contiguous
view of the memory span the operand covers (starting at its lowest address, so negative strides
work), ``offset`` the element position of the operand's first element in ``base``, ``strides`` in
elements.  Broadcast dims get stride 0.  This keeps every kernel to one Numba specialisation per
dtype whatever the input layout.
"""
from __future__ import annotations

import numpy as np
import numba

from jit_kernels._plan import size_of  # noqa: F401 (re-exported)

PAR_THRESHOLD = 30_000  # elements; below it a serial kernel beats a prange launch

_NTHREADS = None


def nthreads() -> int:
    global _NTHREADS
    if _NTHREADS is None:
        _NTHREADS = max(1, numba.get_num_threads())
    return _NTHREADS


class _Holder:
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr, n, typestr, owner):
        self.__array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": typestr,
                                    "version": 3}
        self.owner = owner


def flat_base(x: np.ndarray):
    """(base, offset, element strides) for a non-empty array ``x``."""
    isz = x.itemsize
    if x.flags.c_contiguous and x.flags.writeable:
        return x.reshape(-1), 0, [s // isz for s in x.strides]
    st = x.strides
    if any(s % isz for s in st):
        raise ValueError("array strides are not a multiple of its itemsize")
    es = [s // isz for s in st]
    neg = 0
    pos = 0
    for n, s in zip(x.shape, es):
        if s < 0:
            neg += (n - 1) * s
        else:
            pos += (n - 1) * s
    span = pos - neg + 1
    ptr = x.__array_interface__["data"][0] + neg * isz
    base = np.asarray(_Holder(ptr, span, x.dtype.str, x))
    return base, -neg, es


def broadcast_strides(shape, out_shape, strides):
    """Element strides of an operand of ``shape``/``strides`` broadcast to ``out_shape``."""
    pad = len(out_shape) - len(shape)
    res = [0] * pad
    for n, s, no in zip(shape, strides, out_shape[pad:]):
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


def i64(seq):
    return np.array(seq, dtype=np.int64)


def wrap_int(v: int, dtype: np.dtype) -> int:
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
