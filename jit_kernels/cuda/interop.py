"""The CUDA Array Interface (version 3) for cuda payloads, both ways, zero-copy.

``interface(x)``: the ``__cuda_array_interface__`` dict of a ``CudaArray`` view: ``shape``,
``typestr``, ``data`` (pointer to the first element, ``False``: the protocol's read-only flag is
not set, as PyTorch and CuPy export; tensors are immutable, so do not write through it),
``strides`` (bytes; ``None`` when C-contiguous), ``version`` 3 and ``stream`` 1 (every kernel of
this set runs on the legacy default stream).

``from_interface(obj, index, copy)``: a ``CudaArray`` viewing the memory an object exposing
``__cuda_array_interface__`` describes (its owner is kept alive by the view; the producer's
stream is synchronised first, as Numba does), or a copy of it.

Under Numba's simulator, device arrays are NumPy arrays in host memory and do not implement the
interface; the same dicts are produced and read with host pointers, so the protocol is tested
there too.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import SIM, CudaArray, alloc

#: the legacy default stream (CUDA Array Interface v3: 1)
STREAM = 1


def _base_pointer(buf) -> int:
    if SIM:
        return int(buf._ary.__array_interface__["data"][0])
    return int(buf.__cuda_array_interface__["data"][0])


def interface(x: CudaArray) -> dict:
    isz = x.dtype.itemsize
    ptr = _base_pointer(x.buf) + x.offset * isz if x.size else 0
    return {"shape": tuple(x.shape), "typestr": x.dtype.str, "data": (ptr, False),
            "strides": None if x.c_contiguous else tuple(s * isz for s in x.strides),
            "version": 3, "stream": STREAM}


class _HostSpan:
    """A host buffer at a raw address (simulator only), keeping its owner alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr, n, typestr, owner):
        self.__array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": typestr,
                                    "version": 3}
        self.owner = owner


def from_interface(obj, index: int, copy: bool) -> CudaArray:
    desc = obj.__cuda_array_interface__
    if desc.get("mask") is not None:
        raise ValueError("masked arrays are not supported")
    shape = tuple(int(s) for s in desc["shape"])
    dt = np.dtype(desc["typestr"])
    isz = dt.itemsize
    if desc.get("strides") is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides = tuple(reversed(strides))
    else:
        bs = tuple(int(s) for s in desc["strides"])
        if any(s % isz for s in bs):
            raise ValueError(f"strides {bs} are not a multiple of the item size {isz}")
        strides = tuple(s // isz for s in bs)
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return alloc(shape, dt, index)
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    span = hi - lo + 1
    ptr = int(desc["data"][0]) + lo * isz
    if SIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        buf = FakeCUDAArray(np.asarray(_HostSpan(ptr, span, dt.str, obj)))
    else:
        buf = cuda.from_cuda_array_interface(
            {"shape": (span,), "typestr": dt.str, "data": (ptr, False), "strides": None,
             "version": 3, "stream": desc.get("stream") or None}, owner=obj, sync=True)
    out = CudaArray(buf, shape, strides, -lo, dt, index)
    if copy:
        from jit_kernels.cuda.shape import copy as _copy
        out = _copy(out)
    return out
