"""Counter-based random numbers: element i is a pure function of (seed, offset + i).

The generator is two rounds of the splitmix64 finaliser (Stafford's mix13): a key
``k = mix(seed ^ C1)``, then ``z = mix(mix(k + (offset + i) * GOLDEN) ^ k)``.  Kernels run with
``prange`` over contiguous chunks, so results never depend on the thread count.

- ``rand``: uniform in [0, 1): the top 24 bits of ``z`` times 2**-24 for float32, the top 53 bits
  times 2**-53 for float64 (exact in the target dtype, so never rounds up to 1).
- ``randn``: Box–Muller on two 53-bit uniforms drawn from two mixes of the same counter:
  ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)``, computed in float64, rounded once.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from jit_kernels.cpu._layout import PAR_THRESHOLD, nthreads

_M = (1 << 64) - 1
_C1 = np.uint64(0x5851F42D4C957F2D)
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


@njit(inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always")
def _bits(k, ctr):
    return _mix(_mix(k + ctr * _GOLDEN) ^ k)


@njit(inline="always")
def _uniform(k, ctr, f32):
    z = _bits(k, ctr)
    if f32:
        return np.float64(z >> _S40) * (1.0 / 16777216.0)
    return np.float64(z >> _S11) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def _normal(k, ctr):
    z1 = _bits(k, ctr)
    z2 = _mix(z1 ^ _C2)
    u1 = np.float64(z1 >> _S11) * (1.0 / 9007199254740992.0)
    u2 = np.float64(z2 >> _S11) * (1.0 / 9007199254740992.0)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2)


@njit(cache=True)
def _rand_serial(out, k, off, f32, normal):
    for i in range(out.shape[0]):
        ctr = off + np.uint64(i)
        out[i] = _normal(k, ctr) if normal else _uniform(k, ctr, f32)


@njit(cache=True, parallel=True)
def _rand_par(out, k, off, f32, normal, nchunks):
    total = out.shape[0]
    chunk = (total + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * chunk
        hi = min(lo + chunk, total)
        for i in range(lo, hi):
            ctr = off + np.uint64(i)
            out[i] = _normal(k, ctr) if normal else _uniform(k, ctr, f32)


def _key(seed):
    z = (int(seed) ^ 0x5851F42D4C957F2D) & _M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
    return np.uint64(z ^ (z >> 31))


def _gen(shape, dtype, seed, offset, normal):
    dt = np.dtype(dtype)
    out = np.empty(tuple(shape), dtype=dt)
    if out.size == 0:
        return out
    o = out.reshape(-1)
    args = (o, _key(seed), np.uint64(int(offset) & _M), dt == np.float32, normal)
    if o.size >= PAR_THRESHOLD:
        _rand_par(*args, nthreads())
    else:
        _rand_serial(*args)
    return out


def rand(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, False)


def randn(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, True)
