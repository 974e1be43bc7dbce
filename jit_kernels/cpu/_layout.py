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

from jit_kernels._layout import (broadcast_strides, coalesce, scalar_array, size_of,  # noqa: F401
                                 wrap_int)  # (re-exported: device-neutral, shared with cuda)

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


def i64(seq):
    return np.array(seq, dtype=np.int64)
