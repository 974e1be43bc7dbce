"""Counter-based random numbers on the GPU: the cpu set's generator, element for element.

Element i is a pure function of (seed, offset + i) (two rounds of the splitmix64 finaliser,
``jit_kernels._rng``, compiled here as device functions), so ``rand`` is bit-for-bit identical to the cpu set for the
same seed and offset.  ``randn`` uses the same Box–Muller formula in float64; its ``log``/``cos``/
``sqrt`` are the CUDA math library's (correctly rounded sqrt, ≤ 1–2 ulp log/cos) instead of the
host libm, so float64 results can differ from the cpu set in the last bit or two; float32 results
(rounded once from float64) almost always agree exactly.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from jit_kernels import _rng
from jit_kernels.cuda._array import launch, TPB, alloc, blocks_for

_mix, _bits, _uniform, _normal = _rng.generators(cuda.jit(device=True))


@cuda.jit(cache=True)
def _rand(out, n, k, off, f32):
    i = cuda.grid(1)
    while i < n:
        out[i] = _uniform(k, off + np.uint64(i), f32)
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _randn(out, n, k, off):
    i = cuda.grid(1)
    while i < n:
        out[i] = _normal(k, off + np.uint64(i))
        i += cuda.gridsize(1)


def _gen(shape, dtype, seed, offset, normal, index):
    dt = np.dtype(dtype)
    out = alloc(shape, dt, index)
    n = out.size
    if n == 0:
        return out
    grid = (blocks_for(n, index), TPB)
    k = _rng.key(seed)
    off = _rng.counter(offset)
    if normal:
        launch(_randn, *grid, out.buf, n, k, off)
    else:
        launch(_rand, *grid, out.buf, n, k, off, dt == np.float32)
    return out


def rand(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, False, index)


def randn(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, True, index)
