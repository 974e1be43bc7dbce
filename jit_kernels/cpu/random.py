"""Counter-based random numbers: element i is a pure function of (seed, offset + i).

The generator is two rounds of the splitmix64 finaliser (Stafford's mix13): a key
``k = mix(seed ^ C1)``, then ``z = mix(mix(k + (offset + i) * GOLDEN) ^ k)`` (the formula and
constants are ``jit_kernels._rng``'s, shared with the cuda set).  Kernels run with
``prange`` over contiguous chunks, so results never depend on the thread count.

- ``rand``: uniform in [0, 1): the top 24 bits of ``z`` times 2**-24 for float32, the top 53 bits
  times 2**-53 for float64 (exact in the target dtype, so never rounds up to 1).
- ``randn``: Box–Muller on two 53-bit uniforms drawn from two mixes of the same counter:
  ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)``, computed in float64, rounded once.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels import _rng
from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import PAR_THRESHOLD, nthreads

_mix, _bits, _uniform, _normal = _rng.generators(njit(inline="always"))


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


def _gen(shape, dtype, seed, offset, normal):
    dt = np.dtype(dtype)
    out = np.empty(tuple(shape), dtype=dt)
    if out.size == 0:
        return out
    o = out.reshape(-1)
    args = (o, _rng.key(seed), _rng.counter(offset), dt == np.float32, normal)
    if o.size >= PAR_THRESHOLD:
        _rand_par(*args, nthreads())
    else:
        _rand_serial(*args)
    return out


def rand(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, False)


def randn(shape, dtype, seed, offset, index=0):
    return _gen(shape, dtype, seed, offset, True)
