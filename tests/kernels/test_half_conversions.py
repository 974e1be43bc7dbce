"""The cpu set's float16/bfloat16 conversions (``jit_kernels.cpu.half``) bit for bit against
NumPy's float16 casts and ``jit_kernels._half``'s reference: every float16 pattern, and float32
patterns covering every exponent around the float16 range densely, the specials and random bits."""
import numpy as np
import pytest

from jit_kernels import _half
from jit_kernels.cpu import half as H


def _f32_patterns():
    rng = np.random.default_rng(16)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000,
                        0xFFC00001, 0x7F802000, 0x7FA00000, 0x477FEFFF, 0x477FF000, 0x477FF001,
                        0x47800000, 0x33000000, 0x32FFFFFF, 0x33000001, 0x337FFFFF, 0x38000000,
                        0x387FFFFF, 0x38800000, 0x3F800000, 0x00000001, 0x007FFFFF],
                       dtype=np.uint32)
    dense = np.arange(0x32800000, 0x48000000, 251, dtype=np.uint64).astype(np.uint32)
    rand = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    u = np.concatenate([special, dense, rand])
    return np.concatenate([u, u | np.uint32(0x80000000)])


def test_float16_to_float32_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = H.half_to_float(bits, "float16")
    want = bits.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_float32_to_float16_bits_match_numpy():
    u = _f32_patterns()
    x = u.view(np.float32)
    got = H.float_to_half(x, "float16")
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(a), hex(b), hex(c)) for a, b, c in
                           zip(u[bad[:5]], got[bad[:5]], want[bad[:5]])]


def test_bfloat16_both_ways_match_the_reference():
    u = _f32_patterns()
    x = u.view(np.float32).reshape(2, -1)             # and a 2-D shape kept
    got = H.float_to_half(x, "bfloat16")
    assert got.shape == x.shape and got.dtype == np.uint16
    np.testing.assert_array_equal(got, _half.to_bits(x, "bfloat16"))
    back = H.half_to_float(got, "bfloat16")
    np.testing.assert_array_equal(back.view(np.uint32), _half.from_bits(got, "bfloat16").view(np.uint32))


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_float64_and_int_inputs_round_as_before(fmt):
    x = np.array([1 / 3, 65519.99, 65520.0, 1e-8, -2.5e-5, np.nan, -np.inf], dtype=np.float64)
    np.testing.assert_array_equal(H.float_to_half(x, fmt), _half.to_bits(x, fmt))
    i = np.array([0, 1, -7, 2049, 65504, 70000], dtype=np.int64)
    np.testing.assert_array_equal(H.float_to_half(i, fmt), _half.to_bits(i, fmt))
    assert H.float_to_half(np.zeros((0, 3)), fmt).shape == (0, 3)
