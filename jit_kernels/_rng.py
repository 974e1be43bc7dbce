"""The counter-based generator both kernel sets use (device-neutral source, compiled by each set).

Element i is a pure function of (seed, offset + i): two rounds of the splitmix64 finaliser
(Stafford's mix13), a key ``k = mix(seed ^ C1)`` (computed on the host, ``key``), then
``z = mix(mix(k + (offset + i) * GOLDEN) ^ k)``.  ``generators(jit)`` compiles the device
functions with a set's decorator (``njit(inline="always")`` on cpu, ``cuda.jit(device=True)``
on cuda), so both sets evaluate the same formula:

- ``uniform(k, ctr, f32)``: the top 24 bits of ``z`` times 2**-24 (float32) or the top 53 bits
  times 2**-53 (float64): exact in the target dtype, never 1.
- ``normal(k, ctr)``: Box–Muller on two 53-bit uniforms drawn from two mixes of the same counter,
  ``sqrt(-2 log(1 - u1)) * cos(2 pi u2)`` in float64.
"""
from __future__ import annotations

import math

import numpy as np

MASK64 = (1 << 64) - 1
_C1 = 0x5851F42D4C957F2D
_C2 = np.uint64(0xD1B54A32D192ED03)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_M1U = np.uint64(_M1)
_M2U = np.uint64(_M2)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S40 = np.uint64(40)
_S11 = np.uint64(11)
_TWO_PI = 2.0 * math.pi


def key(seed) -> np.uint64:
    """The generator key for ``seed`` (host side, exact Python ints)."""
    z = (int(seed) ^ _C1) & MASK64
    z = ((z ^ (z >> 30)) * _M1) & MASK64
    z = ((z ^ (z >> 27)) * _M2) & MASK64
    return np.uint64(z ^ (z >> 31))


def counter(offset) -> np.uint64:
    """The counter of element 0 for a stream ``offset`` (wraps modulo 2**64)."""
    return np.uint64(int(offset) & MASK64)


def generators(jit):
    """``(mix, bits, uniform, normal)`` compiled with the device-function decorator ``jit``."""

    @jit
    def mix(z):
        z = (z ^ (z >> _S30)) * _M1U
        z = (z ^ (z >> _S27)) * _M2U
        return z ^ (z >> _S31)

    @jit
    def bits(k, ctr):
        return mix(mix(k + ctr * _GOLDEN) ^ k)

    @jit
    def uniform(k, ctr, f32):
        z = bits(k, ctr)
        if f32:
            return np.float64(z >> _S40) * (1.0 / 16777216.0)
        return np.float64(z >> _S11) * (1.0 / 9007199254740992.0)

    @jit
    def normal(k, ctr):
        z1 = bits(k, ctr)
        z2 = mix(z1 ^ _C2)
        u1 = np.float64(z1 >> _S11) * (1.0 / 9007199254740992.0)
        u2 = np.float64(z2 >> _S11) * (1.0 / 9007199254740992.0)
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2)

    return mix, bits, uniform, normal
