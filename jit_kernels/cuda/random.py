"""Counter-based random numbers on the GPU: the cpu set's generator, element for element.

Element i is a pure function of (seed, offset + i) (two rounds of the splitmix64 finaliser,
see ``jit_kernels.cpu.random``), so ``rand`` is bit-for-bit identical to the cpu set for the
same seed and offset.  ``randn`` uses the same Box–Muller formula in float64; its ``log``/``cos``/
``sqrt`` are the CUDA math library's (correctly rounded sqrt, ≤ 1–2 ulp log/cos) instead of the
host libm, so float64 results can differ from the cpu set in the last bit or two; float32 results
(rounded once from float64) almost always agree exactly.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from jit_kernels.cpu.random import _key
from jit_kernels.cuda._array import launch, TPB, alloc, blocks_for

_M = (1 << 64) - 1
_C2 = np.uint64(0xD1B54A32D192ED03)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S40 = np.uint64(40)
_S11 = np.uint64(11)
_TWO_PI = 2.0 * math.pi


@cuda.jit(device=True)
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@cuda.jit(device=True)
def _bits(k, ctr):
    return _mix(_mix(k + ctr * _GOLDEN) ^ k)


@cuda.jit(cache=True)
def _rand(out, n, k, off, f32):
    i = cuda.grid(1)
    while i < n:
        z = _bits(k, off + np.uint64(i))
        if f32:
            out[i] = np.float64(z >> _S40) * (1.0 / 16777216.0)
        else:
            out[i] = np.float64(z >> _S11) * (1.0 / 9007199254740992.0)
        i += cuda.gridsize(1)


@cuda.jit(cache=True)
def _randn(out, n, k, off):
    i = cuda.grid(1)
    while i < n:
        z1 = _bits(k, off + np.uint64(i))
        z2 = _mix(z1 ^ _C2)
        u1 = np.float64(z1 >> _S11) * (1.0 / 9007199254740992.0)
        u2 = np.float64(z2 >> _S11) * (1.0 / 9007199254740992.0)
        out[i] = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2)
        i += cuda.gridsize(1)


def _gen(shape, dtype, seed, offset, normal, index):
    dt = np.dtype(dtype)
    out = alloc(shape, dt, index)
    n = out.size
    if n == 0:
        return out
    grid = (blocks_for(n, index), TPB)
    k = _key(seed)
    off = np.uint64(int(offset) & _M)
    if normal:
        launch(_randn, *grid, out.buf, n, k, off)
    else:
        launch(_rand, *grid, out.buf, n, k, off, dt == np.float32)
    return out


def rand(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, False, index)


def randn(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, True, index)
