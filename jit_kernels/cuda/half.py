"""float16/bfloat16 <-> float32 conversions of the cuda set (``KernelSet.half_to_float`` and
``float_to_half``): one grid-stride kernel each way and format, on the bit patterns
(``jit_kernels._half``'s scalar functions as device functions; the float32 side is read and
written through a uint32 view of its buffer).  float64 input converts through float32 (for
float16 the cpu set rounds once from float64; the two differ only on double-rounding ties)."""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels import _half
from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch

_f32_to_f16 = cuda.jit(device=True)(_half.f32bits_to_f16bits)
_f16_to_f32 = cuda.jit(device=True)(_half.f16bits_to_f32bits)
_f32_to_bf16 = cuda.jit(device=True)(_half.f32bits_to_bf16bits)


@cuda.jit(cache=True)
def _to_f16(src, so, dst, n):
    i = cuda.grid(1)
    while i < n:
        dst[i] = _f32_to_f16(src[so + i])
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _to_bf16(src, so, dst, n):
    i = cuda.grid(1)
    while i < n:
        dst[i] = _f32_to_bf16(src[so + i])
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _from_f16(src, so, dst, n):
    i = cuda.grid(1)
    while i < n:
        dst[i] = _f16_to_f32(src[so + i])
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _from_bf16(src, so, dst, n):
    i = cuda.grid(1)
    while i < n:
        dst[i] = np.uint32(src[so + i]) << np.uint32(16)
        i += cuda.gridsize(1)


def _flat(x):
    from jit_kernels.cuda.shape import copy
    return x if x.c_contiguous else copy(x)


def float_to_half(x, fmt):
    """uint16 bits of ``fmt`` for float32 (float64, int: through float32) array ``x``."""
    from jit_kernels.cuda import elementwise
    if x.dtype != np.float32:
        x = elementwise.cast(x, np.float32)
    x = _flat(x)
    out = alloc(x.shape, np.uint16, x.index)
    n = x.size
    if n:
        kern = _to_f16 if fmt == "float16" else _to_bf16
        launch(kern, blocks_for(n, x.index), TPB, x.buf.view(np.uint32), x.offset, out.buf, n)
    return out


def half_to_float(x, fmt):
    """float32 values of ``x``, the uint16 bits of ``fmt``."""
    x = _flat(x)
    out = alloc(x.shape, np.float32, x.index)
    n = x.size
    if n:
        kern = _from_f16 if fmt == "float16" else _from_bf16
        launch(kern, blocks_for(n, x.index), TPB, x.buf, x.offset, out.buf.view(np.uint32), n)
    return out
