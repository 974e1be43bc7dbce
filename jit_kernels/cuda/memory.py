"""Host transfer and array creation for the cuda set: from_host/to_host/empty/full/arange/eye.

``from_host`` copies a NumPy array (its C-contiguous form) into a pooled buffer on GPU
``index``; ``to_host`` returns a NumPy copy (a strided view is first made contiguous on the device,
then copied).  ``full`` is the elementwise kernel with a scalar operand (``cast`` semantics);
``arange`` computes ``start + i*step`` in float64 for float dtypes and in int64 for ints (then
wraps), ``(start + i*step) != 0`` for bool, exactly as the cpu set.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels.cuda._array import launch, CudaArray, TPB, alloc, blocks_for, use


def from_host(array, index=0) -> CudaArray:
    a = np.require(array, requirements="C")
    out = alloc(a.shape, a.dtype, index)
    if a.size:
        _prefix(out.buf, a.size).copy_to_device(a.reshape(-1))
    return out


def _prefix(buf, n: int):
    """The first ``n`` elements of a (pooled, possibly longer) buffer."""
    return buf if buf.shape[0] == n else buf[:n]


def to_host(x: CudaArray) -> np.ndarray:
    if x.size == 0:
        return np.empty(x.shape, dtype=x.dtype)
    use(x.index)
    if not (x.c_contiguous and x.offset == 0):
        from jit_kernels.cuda.shape import copy
        x = copy(x)
    return _prefix(x.buf, x.size).copy_to_host().reshape(x.shape)


def empty(shape, dtype, index=0) -> CudaArray:
    return alloc(shape, dtype, index)


def fill(out: CudaArray, value) -> CudaArray:
    from jit_kernels.cuda.elementwise import copy_into
    copy_into(out, value)
    return out


def full(shape, value, dtype, index=0) -> CudaArray:
    return fill(alloc(shape, dtype, index), value)


@cuda.jit(cache=True)
def _arange_f(out, n, start, step):
    i = cuda.grid(1)
    while i < n:
        out[i] = start + i * step
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _arange_i(out, n, start, step):
    i = cuda.grid(1)
    while i < n:
        out[i] = start + np.int64(i) * step
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _arange_b(out, n, start, step):
    i = cuda.grid(1)
    while i < n:
        out[i] = (start + np.int64(i) * step) != 0
        i += cuda.gridsize(1)


def arange(start, step, n, dtype, index=0) -> CudaArray:
    dt = np.dtype(dtype)
    n = max(int(n), 0)
    out = alloc((n,), dt, index)
    if n == 0:
        return out
    grid = (blocks_for(n, index), TPB)
    if dt.kind == "f":
        launch(_arange_f, *grid, out.buf, n, float(start), float(step))
    elif dt.kind == "b":
        launch(_arange_b, *grid, out.buf, n, np.int64(int(start)), np.int64(int(step)))
    else:
        launch(_arange_i, *grid, out.buf, n, np.int64(int(start)), np.int64(int(step)))
    return out


@cuda.jit(cache=True)
def _eye(out, n, m, one, zero):
    i = cuda.grid(1)
    while i < n * m:
        r = i // m
        c = i - r * m
        out[i] = one if r == c else zero
        i += cuda.gridsize(1)


def eye(n, m, dtype, index=0) -> CudaArray:
    dt = np.dtype(dtype)
    out = alloc((int(n), int(m)), dt, index)
    if out.size:
        launch(_eye, blocks_for(out.size, index), TPB, out.buf, int(n), int(m), dt.type(1), dt.type(0))
    return out
