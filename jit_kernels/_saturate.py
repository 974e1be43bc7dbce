"""Saturating float -> int conversions, device-neutral Python compiled by each kernel set
(``njit(inline="always")`` in ``jit_kernels.cpu.scalar_math``, ``cuda.jit(device=True)`` in
``jit_kernels.cuda.scalar_math``): truncation toward zero, NaN -> 0, values >= 2**(bits-1) (and
+inf) -> INT_MAX, values < -2**(bits-1) (and -inf) -> INT_MIN (the semantics of ``cast``).
"""
import numpy as np

_I32_MAX = np.int32(2147483647)
_I32_MIN = np.int32(-2147483648)
_I64_MAX = np.int64(9223372036854775807)
_I64_MIN = np.int64(-9223372036854775808)


def f2i32(x):
    if x != x:
        return np.int32(0)
    if x >= 2147483648.0:
        return _I32_MAX
    if x < -2147483648.0:
        return _I32_MIN
    return np.int32(x)


def f2i64(x):
    if x != x:
        return np.int64(0)
    if x >= 9223372036854775808.0:
        return _I64_MAX
    if x < -9223372036854775808.0:
        return _I64_MIN
    return np.int64(x)


# the small ints (the cuda set's casts; the cpu set casts them with NumPy)
def f2i8(x):
    if x != x:
        return np.int8(0)
    if x >= 127.0:
        return np.int8(127)
    if x <= -128.0:
        return np.int8(-128)
    return np.int8(np.int32(x))


def f2u8(x):
    if x != x:
        return np.uint8(0)
    if x >= 255.0:
        return np.uint8(255)
    if x <= 0.0:
        return np.uint8(0)
    return np.uint8(np.int32(x))


def f2i16(x):
    if x != x:
        return np.int16(0)
    if x >= 32767.0:
        return np.int16(32767)
    if x <= -32768.0:
        return np.int16(-32768)
    return np.int16(np.int32(x))


# the wide unsigned ints (the cuda set's casts; the cpu set casts them with NumPy)
def f2u32(x):
    if x != x:
        return np.uint32(0)
    if x >= 4294967295.0:
        return np.uint32(4294967295)
    if x <= 0.0:
        return np.uint32(0)
    return np.uint32(np.int64(x))


def f2u64(x):
    if x != x:
        return np.uint64(0)
    if x >= 18446744073709551616.0:
        return np.uint64(18446744073709551615)
    if x <= 0.0:
        return np.uint64(0)
    return np.uint64(x)
