"""Tests for the cpu Numba kernel set (jit_kernels.cpu.CpuKernels).

References are NumPy computed in float64 and cast to the result dtype.  Sizes are small except a
few cases above the parallel threshold (30k elements); dtype combinations are limited to keep
JIT compile time (which dominates a cold run) down.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from hypothesis.extra import numpy as hnp

from jit_kernels import optable
from jit_kernels import (ARG_REDUCE_OPS, BINARY_OPS, PROTOCOL_METHODS, REDUCE_OPS, UNARY_OPS,
                         kernel_set_for)
from jit_kernels.cpu import CpuKernels

K = CpuKernels()
F32, F64, I32, I64, B = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))
ALL = (F32, F64, I32, I64, B)
BIG = 40_000  # above the parallel threshold
HSET = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tol(dt):
    return dict(rtol=1e-6, atol=1e-6) if dt == F32 else dict(rtol=1e-12, atol=1e-12)


def check(got, ref, dt, rtol=None, atol=None):
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == dt, (got.dtype, dt)
    if dt.kind == "f":
        t = tol(dt)
        if rtol is not None:
            t = dict(rtol=rtol, atol=atol if atol is not None else rtol)
        np.testing.assert_allclose(got, ref.astype(dt), equal_nan=True, **t)
    else:
        np.testing.assert_array_equal(got, ref.astype(dt))


def sample(dt, shape=(3, 5), seed=0, special=False):
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        a = rng.standard_normal(shape) * 3
        if special and a.size >= 4:
            f = a.reshape(-1)
            f[:4] = [np.nan, np.inf, -np.inf, 0.0]
        return a.astype(dt)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    return rng.integers(-20, 20, size=shape).astype(dt)


# -- protocol --------------------------------------------------------------------------------

def test_protocol_complete():
    ks = kernel_set_for("cpu")
    assert isinstance(ks, CpuKernels) and ks.kind == "cpu"
    for m in PROTOCOL_METHODS:
        assert callable(getattr(ks, m)), m


@pytest.mark.parametrize("cls", ["jit_kernels.cpu:CpuKernels", "jit_kernels.cuda:CudaKernels"])
def test_capabilities_declared_are_the_methods_present(cls):
    """A kernel set declares exactly the optional features whose methods it has (the runtime
    asks ``capabilities``, never probes for methods)."""
    import importlib
    from jit_kernels import CAPABILITIES
    mod, _, name = cls.partition(":")
    try:
        k = getattr(importlib.import_module(mod), name)
    except ImportError:
        pytest.skip("needs a GPU: numba-cuda is not installed")
    assert k.capabilities <= set(CAPABILITIES), k.capabilities - set(CAPABILITIES)
    for cap, methods in CAPABILITIES.items():
        have = [callable(getattr(k, m, None)) for m in methods]
        assert all(have) if cap in k.capabilities else not any(have), (cap, methods, have)


def test_import_compiles_nothing():
    code = r"""
import sys, numba, importlib, pkgutil
import jit_kernels.cpu as cpu
from numba.core.dispatcher import Dispatcher
n = 0
for mi in pkgutil.iter_modules(cpu.__path__):
    m = importlib.import_module("jit_kernels.cpu." + mi.name)
    for v in vars(m).values():
        if isinstance(v, Dispatcher):
            n += 1
            assert not v.signatures, (mi.name, v)
assert n > 10, n
assert not [k for k in sys.modules if k.startswith("_jkgen_")]
print("ok", n)
"""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr


@pytest.mark.parametrize("setting, frozen", [(None, True), ("0", False)])
def test_import_freezes_the_objects_alive_then_out_of_the_collectors_way(setting, frozen):
    """Importing the cpu set moves the objects alive then (Numba's, the kernel modules') into
    the collector's permanent generation (``gc.freeze``); ``JIT_KERNELS_GC_FREEZE=0`` leaves
    them where they were.  A cycle made afterwards is still collected."""
    code = r"""
import gc, weakref
import jit_kernels.cpu
class Node:
    pass
a, b = Node(), Node()
a.other, b.other = b, a
dead = weakref.ref(a)
del a, b
gc.collect()
print(gc.get_freeze_count(), dead() is None)
"""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("JIT_KERNELS_GC_FREEZE", None)
    if setting is not None:
        env["JIT_KERNELS_GC_FREEZE"] = setting
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    count, collected = r.stdout.split()
    assert (int(count) > 10_000) is frozen and (int(count) == 0) is not frozen, count
    assert collected == "True"


def test_generated_module_cached_in_file(tmp_path):
    from jit_kernels.codegen import load_generated_module
    m1 = load_generated_module("X = 1\n", "unit test")
    m2 = load_generated_module("X = 1\n", "unit test")
    assert m1 is m2 and m1.X == 1 and os.path.exists(m1.__file__)


# -- unary ------------------------------------------------------------------------------------

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


REF_UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.where(x < 0, 0, x),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "erf": _erf, "reciprocal": lambda x: 1 / x, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
    "logical_not": np.logical_not,
}
TRANSC = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "gelu", "gelu_tanh", "erf"}


# the integer-only ops (bitwise) have no float form: the runtime refuses float operands
INT_ONLY = {n for n, e in optable.ELEMENTWISE.items() if "f" not in e.bodies}


# (the kernel-level sweep of the ops with a reference here; every table op also has a
# tests/opinfo.py row, swept through the front end against NumPy, and a ulp bound)
@pytest.mark.parametrize("op", [o for o in UNARY_OPS if o not in ("clamp", "logical_not")
                                and o not in INT_ONLY and o in REF_UNARY])
@pytest.mark.parametrize("dt", [F32, F64])
def test_unary_float(op, dt):
    x = sample(dt, (4, 6), special=True)
    if op in ("log", "sqrt", "rsqrt"):
        x = np.abs(x)
        x[1, 1] = -1.0
    with np.errstate(all="ignore"):
        ref = REF_UNARY[op](x.astype(np.float64))
    got = K.unary(op, x, dt, {})
    rt = (3e-6 if dt == F32 else 1e-13) if op in TRANSC else None
    check(got, ref, dt, rtol=rt)


def test_unary_special_values():
    x = np.array([np.nan, -0.0, 0.0, -2.0, 3.0], np.float32)
    assert np.isnan(K.unary("sign", x, F32, {})[0])
    assert np.isnan(K.unary("relu", x, F32, {})[0])
    s = K.unary("sigmoid", np.array([-1000.0, 1000.0], np.float32), F32, {})
    np.testing.assert_array_equal(s, [0.0, 1.0])


@pytest.mark.parametrize("dt", [I32, I64])
def test_unary_int(dt):
    x = sample(dt, (3, 7))
    x.reshape(-1)[:3] = [0, 1, -1]
    for op in ("neg", "abs", "sign", "relu", "floor", "ceil"):
        check(K.unary(op, x, dt, {}), REF_UNARY[op](x), dt)
    check(K.unary("reciprocal", x, dt, {}), np.where(np.abs(x) == 1, x, 0), dt)
    mn = np.iinfo(dt).min
    check(K.unary("abs", np.array([mn, -3], dt), dt, {}), np.abs(np.array([mn, -3], dt)), dt)


@pytest.mark.parametrize("dt", ALL)
def test_logical_not(dt):
    x = sample(dt, (2, 5), special=True)
    check(K.unary("logical_not", x, B, {}), np.logical_not(x), B)


@pytest.mark.parametrize("lo,hi", [(-1.0, 2.0), (None, 0.5), (0.0, None), (None, None)])
def test_clamp(lo, hi):
    x = sample(F32, (3, 4), special=True)
    ref = x.astype(np.float64)
    if lo is not None:
        ref = np.where(ref < lo, lo, ref)
    if hi is not None:
        ref = np.where(ref > hi, hi, ref)
    check(K.unary("clamp", x, F32, {"min": lo, "max": hi}), ref, F32)
    xi = sample(I64, (5,))
    check(K.unary("clamp", xi, I64, {"min": -3, "max": 4}), np.clip(xi, -3, 4), I64)


def test_unary_views_and_edge_shapes():
    x = sample(F64, (6, 8))
    for v in (x.T, x[::-2, 1::3], x[:, ::-1], np.broadcast_to(x[0], (5, 8))):
        check(K.unary("exp", v, F64, {}), np.exp(v), F64, rtol=1e-13)
    z = K.unary("neg", np.zeros((0, 3), np.float32), F32, {})
    assert z.shape == (0, 3) and z.dtype == F32
    s = K.unary("neg", np.array(2.5, np.float32), F32, {})
    assert s.shape == () and s == -2.5
    big = sample(F32, (BIG,))
    check(K.unary("tanh", big, F32, {}), np.tanh(big.astype(np.float64)), F32, rtol=3e-6)
    check(K.unary("tanh", big[::-2], F32, {}), np.tanh(big[::-2].astype(np.float64)), F32, rtol=3e-6)


def test_strided_heavy_ops_give_the_contiguous_bits():
    """A transcendental on views (transposed, reversed, broadcast, rows longer than one gathered
    block) gives bit for bit what it gives on the contiguous copy, by ``run`` (which copies
    small views) and by the strided kernel itself (which gathers blocks, then runs the same
    vectorised loop)."""
    x = sample(F32, (3, 700), 5) / 3
    y = np.abs(sample(F32, (700,), 6)) + 0.5
    xt = np.ascontiguousarray(x.T).T                  # (3, 700) with strides (4, 12)
    for v in (xt, x[:, ::-1], x[::-1, 5:650:2], np.broadcast_to(x[1], (2, 700))):
        c = np.ascontiguousarray(v)
        want = K.unary("erf", c, F32, {})
        np.testing.assert_array_equal(K.unary("erf", v, F32, {}), want)
        np.testing.assert_array_equal(_strided_serial("erf", v)[0], want)
        yb = np.broadcast_to(y[:v.shape[1]], v.shape)
        want = K.binary("pow", np.ascontiguousarray(yb), c, F32, F32)
        np.testing.assert_array_equal(K.binary("pow", yb, v, F32, F32), want)
        np.testing.assert_array_equal(_strided_serial("pow", yb, v)[0], want)
        np.testing.assert_array_equal(K.binary("pow", v, np.float32(0.5), F32, F32),
                                      K.binary("pow", c, np.full(c.shape, 0.5, F32), F32, F32))


def _strided_serial(op, *arrs):
    """``op(*arrs)`` (float32) by the serial strided kernel of the operands' pattern, called
    directly (``run`` copies small views of the whole shape first), and that pattern."""
    from jit_kernels.cpu import elementwise as ew
    from jit_kernels.cpu._layout import flat_base
    out_shape = np.broadcast_shapes(*(a.shape for a in arrs))
    shp, sts = ew._layout(out_shape, list(arrs))
    pattern = ew._pattern(sts)
    mod = ew._module(op, (F32,) * len(arrs), (F32,) * len(arrs), F32, pattern)
    args = [shp]
    for x, xs in zip(arrs, sts):
        base, off, _ = flat_base(x)
        args += [base, off, xs]
    out = np.empty(out_shape, F32)
    mod.strided_serial(*args, out.reshape(-1))
    return out, pattern


INNER = {"1": lambda a: a[:, :5],                         # rows not coalescable: "1"
         "0": lambda a: np.broadcast_to(a[:, :1], (4, 5)),
         "s": lambda a: np.ascontiguousarray(a[:, :5].T).T}


def test_each_inner_stride_pattern_gets_its_own_strided_module():
    """The strided kernels are generated per pattern of the operands' innermost strides ("1"
    contiguous, "0" broadcast, "s" other): every pair of the three gives NumPy's answer from
    the module of its own pattern, and an "s" operand of a transcendental (gathered into
    scratch) gives the contiguous bits."""
    x = sample(F32, (4, 6), 7)
    y = sample(F32, (4, 6), 8)
    for pa, fa in INNER.items():
        for pb, fb in INNER.items():
            a, b = fa(x), fb(y)
            got, pattern = _strided_serial("add", a, b)
            assert pattern == pa + pb
            np.testing.assert_array_equal(got, a + b)
    s, c = INNER["s"](x), np.ascontiguousarray(INNER["s"](x))
    got, pattern = _strided_serial("atan2", s, INNER["1"](y))
    assert pattern == "s1"
    np.testing.assert_array_equal(got, K.binary("atan2", c, INNER["1"](y), F32, F32))


def test_small_views_of_the_whole_shape_are_copied_not_read_in_place():
    """Below PAR_THRESHOLD an operand view of the output's whole shape (sliced, transposed, a
    broadcast_to view) is copied: views of one shape run the flat kernel (no strided module),
    and beside an operand broadcast by its shape the strided module's pattern has "1" for
    it.  NumPy's answers, and the contiguous bits."""
    from jit_kernels.cpu import elementwise as ew
    x = sample(F32, (4, 6), 7)
    y = sample(F32, (4, 6), 8)

    def made_by(a, b):
        before = set(ew._MODS)
        got = K.binary("mul", a, b, F32, F32)
        np.testing.assert_array_equal(got, a * b)
        np.testing.assert_array_equal(
            got, K.binary("mul", np.ascontiguousarray(np.broadcast_to(a, got.shape)),
                          np.ascontiguousarray(np.broadcast_to(b, got.shape)), F32, F32))
        return {k[4] for k in set(ew._MODS) - before if k[0] == "mul" and k[4]}
    for fa in INNER.values():
        for fb in INNER.values():
            assert made_by(fa(x), fb(y)) == set()
        assert made_by(fa(x), y[:, 1:2]) <= {"10"}
        assert ("mul", (F32, F32), (F32, F32), F32, "10") in ew._MODS
    # broadcast by size-1 dims only (as many elements as the output): reshaped, no strides
    for a, b in [(x[0], y[None, 1]), (x[:, :1], y[None, :, 2, None]), (x[0, 0], y[None, :1, 0]),
                 (np.float32(2.5) * np.ones((1, 1), F32), np.array(1.5, F32)),
                 (x.T[None, :, 1], y[0])]:
        assert made_by(a, b) == set(), (a.shape, b.shape)


# -- binary ------------------------------------------------------------------------------------

REF_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal,
    "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    # shifts by >= 64 or < 0: 0 to the left, the sign to the right
    "left_shift": lambda a, b: np.where((b < 0) | (b > 63), 0, a << np.clip(b, 0, 63)),
    "right_shift": lambda a, b: a >> np.where((b < 0) | (b > 63), 63, b),
}
BOOL_OUT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}


@pytest.mark.parametrize("op", [o for o in BINARY_OPS if o not in INT_ONLY and o in REF_BINARY])
def test_binary_float32(op):
    a = sample(F32, (3, 5), 1, special=True)
    b = sample(F32, (3, 5), 2)
    if op == "pow":
        a = np.abs(a)
    od = B if op in BOOL_OUT else F32
    with np.errstate(all="ignore"):
        ref = REF_BINARY[op](a.astype(np.float64), b.astype(np.float64))
    check(K.binary(op, a, b, F32, od), ref, od, rtol=3e-6 if op == "pow" else None)


@pytest.mark.parametrize("op", [o for o in BINARY_OPS if o != "div" and o in REF_BINARY])
def test_binary_int64(op):
    a = sample(I64, (4, 5), 3)
    b = sample(I64, (4, 5), 4)
    if op == "pow":
        b = np.abs(b) % 5
    if op.endswith("_shift"):
        b = b % 80 - 8                           # negative, in range, and past the width
    od = B if op in BOOL_OUT else I64
    check(K.binary(op, a, b, I64, od), REF_BINARY[op](a, b), od)


def test_bitwise_not():
    a = sample(I64, (4, 5), 3)
    check(K.unary("bitwise_not", a, I64, {}), ~a, I64)
    m = sample(B, (6,), 4)
    check(K.unary("bitwise_not", m, B, {}), ~m, B)


def test_binary_float64_and_mixed():
    a = sample(F64, (4, 3), 5)
    b = sample(I32, (3,), 6)
    with np.errstate(all="ignore"):
        ref = a / b.astype(np.float64)
    check(K.binary("div", a, b, F64, F64), ref, F64)
    ai = sample(I32, (4, 3), 7)
    check(K.binary("add", ai, b, I32, I32), ai + b, I32)
    check(K.binary("mul", ai, 2.5, F32, F32), ai.astype(np.float64) * 2.5, F32)
    check(K.binary("pow", ai, 2, I32, I32), ai.astype(np.int64) ** 2, I32)
    x = sample(B, (5,), 8)
    y = sample(B, (5,), 9)
    check(K.binary("logical_and", x, y, B, B), x & y, B)
    check(K.binary("add", x, y, B, B), x | y, B)
    check(K.binary("logical_or", a, 0, F64, B), a != 0, B)
    mx = np.iinfo(np.int32).max
    check(K.binary("add", np.array([mx], I32), 1, I32, I32), np.array([np.iinfo(np.int32).min]), I32)


def test_pow_int_special():
    base = np.array([0, 1, -1, 2, -2, 3, 0, -1, 1], np.int64)
    exp = np.array([0, -5, -3, -1, -2, 0, 3, -4, 7], np.int64)
    check(K.binary("pow", base, exp, I64, I64), [1, 1, -1, 0, 0, 1, 0, 1, 1], I64)
    r = K.binary("pow", np.array([3], I32), 40, I32, I32)
    assert r.dtype == I32  # wraps, no crash


def test_maximum_minimum_nan():
    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, 1.0, np.nan], np.float32)
    check(K.binary("maximum", a, b, F32, F32), np.maximum(a, b), F32)
    check(K.binary("minimum", a, b, F32, F32), np.minimum(a, b), F32)


def _views(draw, arr):
    kind = draw(st.sampled_from(["plain", "T", "neg", "step"]))
    if kind == "T" and arr.ndim >= 2:
        return np.ascontiguousarray(arr.T).T
    if kind == "neg" and arr.ndim >= 1:
        big = np.concatenate([arr, arr], axis=-1)[..., ::-1]
        return big[..., arr.shape[-1]:][..., ::-1][..., ::-1][..., ::-1]
    if kind == "step" and arr.ndim >= 1:
        big = np.repeat(arr, 2, axis=0)
        return big[::2]
    return arr


@HSET
@given(st.data())
def test_binary_broadcast_strided(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                         min_side=0, max_side=4))
    dt, op = data.draw(st.sampled_from([(F32, "add"), (I64, "mul"), (F32, "lt")]))
    a = _views(data.draw, sample(dt, shapes.input_shapes[0], 1))
    b = _views(data.draw, sample(dt, shapes.input_shapes[1], 2))
    od = B if op == "lt" else dt
    got = K.binary(op, a, b, dt, od)
    check(got, REF_BINARY[op](a.astype(np.float64), b.astype(np.float64)), od)
    assert got.flags.c_contiguous
    s = data.draw(st.sampled_from([2, -1.5, True]))
    sv = dt.type(s)
    check(K.binary(op, a, s, dt, od), REF_BINARY[op](a.astype(np.float64), float(sv)), od)
    check(K.binary(op, s, b, dt, od), REF_BINARY[op](float(sv), b.astype(np.float64)), od)


def test_binary_large_parallel():
    a = sample(F32, (300, 200), 1)
    b = sample(F32, (200,), 2)
    check(K.binary("add", a, a, F32, F32), a.astype(np.float64) * 2, F32)
    check(K.binary("add", a, b, F32, F32), a.astype(np.float64) + b, F32)
    check(K.binary("add", a.T, a[::-1].T, F32, F32), a.T.astype(np.float64) + a[::-1].T, F32)
    check(K.binary("add", 1.0, a[::-1, ::2], F32, F32), 1.0 + a[::-1, ::2].astype(np.float64), F32)
    check(K.binary("lt", a, b, F32, B), a < b, B)


def test_binary_zero_size_and_0d():
    r = K.binary("add", np.zeros((0, 4), np.float32), np.ones(4, np.float32), F32, F32)
    assert r.shape == (0, 4)
    r = K.binary("mul", np.array(3.0, np.float64), np.array(2.0, np.float64), F64, F64)
    assert r.shape == () and r == 6.0
    r = K.binary("add", np.array(3, np.int64), 4, I64, I64)
    assert r.shape == () and r == 7


# -- where / cast ------------------------------------------------------------------------------

def test_where():
    c = sample(B, (3, 4), 1)
    a = sample(F32, (3, 4), 2)
    b = sample(F32, (4,), 3)
    check(K.where(c, a, b, F32), np.where(c, a, b), F32)
    check(K.where(c, a, 0.0, F32), np.where(c, a, 0.0), F32)
    check(K.where(c[:, :1], 1, b, F32), np.where(c[:, :1], 1, b), F32)
    ci = sample(I64, (3, 4), 4)
    check(K.where(ci, ci, -1, I64), np.where(ci != 0, ci, -1), I64)
    big = sample(F32, (BIG,), 5)
    check(K.where(big > 0, big, 0.0, F32), np.maximum(big, 0), F32)
    assert K.where(np.zeros((0,), bool), 1.0, 2.0, F32).shape == (0,)


@pytest.mark.parametrize("src", ALL)
def test_cast_all_pairs(src):
    x = sample(src, (2, 6), special=True)
    if src.kind == "f":
        x.reshape(-1)[4:7] = [2.7, -2.7, 1e30]
    for dst in ALL:
        got = K.cast(x, dst)
        if src.kind == "f" and dst.kind in "iu":
            info = np.iinfo(dst)

            def sat(v, info=info):
                if v != v:
                    return 0
                if v >= 2.0 ** (info.bits - 1):
                    return int(info.max)
                if v < -(2.0 ** (info.bits - 1)):
                    return int(info.min)
                return int(v)
            ref = np.array([sat(float(v)) for v in x.reshape(-1)], dtype=object).reshape(x.shape)
            np.testing.assert_array_equal(got.astype(object), ref)
            assert got.dtype == dst
        elif dst.kind == "b":
            check(got, x != 0, dst)
        else:
            check(got, x.astype(dst), dst)


def test_cast_saturation():
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483647.0, -2147483648.0, -0.9], np.float64)
    np.testing.assert_array_equal(K.cast(x, I32), [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 0])
    np.testing.assert_array_equal(K.cast(np.array([1e19, -1e19, np.nan]), I64),
                                  [2**63 - 1, -2**63, 0])
    np.testing.assert_array_equal(K.cast(np.array([np.nan, 0.0, -0.0, 0.1]), B), [True, False, False, True])
    y = K.cast(sample(F64, (5, 4)).T, F32)
    assert y.flags.c_contiguous and y.shape == (4, 5)


# -- reductions ----------------------------------------------------------------------------------

def _ref_reduce(op, x, axes, ddof=0):
    x = x.astype(np.float64) if x.dtype.kind == "f" else x
    if op == "var":
        return np.var(x.astype(np.float64), axis=axes, ddof=ddof)
    if op == "logsumexp":
        xf = x.astype(np.float64)
        m = np.max(xf, axis=axes, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        return np.squeeze(np.log(np.sum(np.exp(xf - m), axis=axes, keepdims=True)) + m, axis=axes)
    if op == "norm":
        return np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axes))
    f = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}[op]
    if op in ("sum", "prod") and x.dtype.kind in "biu":
        return f(x.astype(np.int64), axis=axes)
    return f(x, axis=axes)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_float32(op):
    x = sample(F32, (4, 5, 6), 1) / 3
    for axes in [(0,), (1,), (2,), (0, 2), (0, 1, 2)]:
        got = K.reduce(op, x, axes, False, F32, {"ddof": 1} if op == "var" else {})
        check(got, _ref_reduce(op, x, axes, 1), F32, rtol=2e-6)
    got = K.reduce(op, x.transpose(2, 0, 1)[::-1], (1,), True, F32, {})
    xv = x.transpose(2, 0, 1)[::-1]
    check(got, np.expand_dims(_ref_reduce(op, xv, (1,)), 1), F32, rtol=2e-6)


@pytest.mark.parametrize("dt", [I32, I64, B])
def test_reduce_int_bool(dt):
    x = sample(dt, (5, 7), 2)
    if dt.kind != "b":
        x = np.clip(x, -3, 3)
    for op in ("sum", "prod"):
        for axes in [(0,), (1,), (0, 1)]:
            check(K.reduce(op, x, axes, False, I64, {}), _ref_reduce(op, x, axes), I64)
    for op in ("max", "min"):
        for axes in [(0,), (1,)]:
            check(K.reduce(op, x, axes, False, dt, {}), _ref_reduce(op, x, axes), dt)
    check(K.reduce("mean", x, (1,), False, F32, {}), np.mean(x.astype(np.float64), axis=1), F32)


def test_int_inputs_of_float_reductions_share_the_float64_modules():
    """An int/bool input of mean/var/logsumexp/norm runs the float64 input's kernels (no module of
    its own) and gives what the float64 conversion of the input gives, bit for bit (int64 values
    past 2**53 round on conversion; the center of logsumexp too)."""
    from jit_kernels.cpu import reduce as red
    big = np.array([[2 ** 62 + 1, -3, 2 ** 53 + 1], [7, 2 ** 60 - 1, -(2 ** 61)]], np.int64)
    cases = [big, sample(I32, (5, 7), 3), sample(B, (5, 7), 4)]
    for x in cases:
        for op in ("mean", "var", "logsumexp", "norm"):
            for axes in [(0,), (1,), (0, 1)]:
                got = K.reduce(op, x, axes, False, F32, {})
                want = K.reduce(op, x.astype(np.float64), axes, False, F64, {}).astype(F32)
                np.testing.assert_array_equal(got, want)
                assert got.dtype == F32
    mods = {k[:2] for k in red._MODS}
    assert not any(dt.kind in "biu" for op, dt in mods if op in ("mean", "sqdev", "sumexp", "norm"))


def test_reduce_special_values():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 1.0, 2.0]], np.float64)
    check(K.reduce("max", x, (1,), False, F64, {}), [np.nan, 3.0, -np.inf, np.inf], F64)
    check(K.reduce("min", x, (1,), False, F64, {}), [np.nan, 1.0, -np.inf, 1.0], F64)
    lse = K.reduce("logsumexp", x, (1,), False, F64, {})
    assert np.isnan(lse[0]) and lse[2] == -np.inf and lse[3] == np.inf
    np.testing.assert_allclose(lse[1], np.log(np.exp([1.0, 2, 3]).sum()))
    check(K.reduce("logsumexp", np.array([1000.0, 1000.0], np.float32), (0,), False, F32, {}),
          1000 + np.log(2), F32)


def test_reduce_empty_and_0d():
    e = np.zeros((0, 3), np.float32)
    check(K.reduce("sum", e, (0,), False, F32, {}), np.zeros(3), F32)
    check(K.reduce("prod", e, (0,), False, F32, {}), np.ones(3), F32)
    assert np.isnan(K.reduce("mean", e, (0,), False, F32, {})).all()
    assert np.isnan(K.reduce("var", e, (0,), False, F32, {})).all()
    assert K.reduce("sum", e, (1,), False, F32, {}).shape == (0,)
    check(K.reduce("sum", np.zeros((2, 0), np.int64), (1,), True, I64, {}), np.zeros((2, 1)), I64)
    s = np.array(2.5, np.float32)
    check(K.reduce("sum", s, (), False, F32, {}), 2.5, F32)
    check(K.reduce("max", s, (), True, F32, {}), 2.5, F32)
    check(K.reduce("var", np.array([1.0, 2.0]), (0,), False, F64, {"ddof": 2}), np.inf, F64)


def test_reduce_large_parallel_and_accuracy():
    x = np.random.default_rng(0).random((300, 200)).astype(np.float32)
    for axes in [(0,), (1,), (0, 1)]:
        for op in ("sum", "max", "mean"):
            check(K.reduce(op, x, axes, False, F32, {}), _ref_reduce(op, x, axes), F32, rtol=1e-6)
    check(K.reduce("sum", x.T, (0,), False, F32, {}), x.astype(np.float64).sum(1), F32, rtol=1e-6)
    check(K.reduce("var", x, (0,), False, F32, {}), np.var(x.astype(np.float64), 0), F32, rtol=1e-5)
    y = np.random.default_rng(1).random(1 << 20) - 0.3
    exact = math.fsum(y)
    got = K.reduce("sum", y, (0,), False, F64, {})
    assert abs(got - exact) <= max(abs(np.sum(y) - exact), 1e-16 * abs(exact)) * 4
    y32 = y.astype(np.float32)
    got32 = K.reduce("sum", y32, (0,), False, F32, {})
    assert abs(float(got32) - math.fsum(y32.astype(np.float64))) <= \
        abs(float(np.sum(y32)) - math.fsum(y32.astype(np.float64))) + 1e-3
    xi = np.arange(BIG, dtype=np.int32)
    check(K.reduce("sum", xi, (0,), False, I64, {}), xi.astype(np.int64).sum(), I64)


@HSET
@given(st.data())
def test_reduce_hypothesis(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    x = _views(data.draw, sample(F64, shape, 3))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, x.ndim - 1), min_size=1))))
    op = data.draw(st.sampled_from(["sum", "max", "var"]))
    keep = data.draw(st.booleans())
    got = K.reduce(op, x, axes, keep, F64, {})
    ref = _ref_reduce(op, x, axes)
    if keep:
        ref = np.expand_dims(ref, axes)
    check(got, ref, F64, rtol=1e-12)


# -- arg reductions / softmax --------------------------------------------------------------------

@pytest.mark.parametrize("op", ARG_REDUCE_OPS)
def test_arg_reduce(op):
    f = np.argmax if op == "argmax" else np.argmin
    x = sample(F32, (4, 6), 1)
    x[1, 2] = x[1, 4] = 100 if op == "argmax" else -100
    x[2, 3] = np.nan
    x[2, 5] = np.nan
    for axis in (0, 1, None):
        check(K.arg_reduce(op, x, axis, False), f(x, axis=axis), I64)
    check(K.arg_reduce(op, x, 1, True), f(x, axis=1, keepdims=True), I64)
    check(K.arg_reduce(op, x.T[::-1], 0, False), f(x.T[::-1], axis=0), I64)
    check(K.arg_reduce(op, x, None, True), f(x, axis=None, keepdims=True), I64)
    for dt in (I32, B):
        xi = sample(dt, (3, 5), 2)
        check(K.arg_reduce(op, xi, 1, False), f(xi, axis=1), I64)
    big = sample(F64, (400, 100), 3)
    check(K.arg_reduce(op, big, 1, False), f(big, axis=1), I64)
    check(K.arg_reduce(op, big, 0, False), f(big, axis=0), I64)


@pytest.mark.parametrize("log", [False, True])
def test_softmax(log):
    x = sample(F32, (5, 7), 1)
    for axis, v in [(1, x), (0, x), (1, x.T[::-1]), (0, np.broadcast_to(x[0], (3, 7)))]:
        xf = v.astype(np.float64)
        m = xf.max(axis=axis, keepdims=True)
        ls = xf - m - np.log(np.exp(xf - m).sum(axis=axis, keepdims=True))
        check(K.softmax(v, axis, log), ls if log else np.exp(ls), F32, rtol=2e-6)
    big = sample(F64, (300, 200), 2) * 30
    xf = big
    m = xf.max(axis=-1, keepdims=True)
    ls = xf - m - np.log(np.exp(xf - m).sum(axis=-1, keepdims=True))
    check(K.softmax(big, 1, log), ls if log else np.exp(ls), F64, rtol=1e-12, atol=1e-13 if log else 1e-300)


# -- matmul ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [F32, F64, I32, I64])
def test_matmul(dt):
    a = sample(dt, (2, 5, 7), 1)
    b = sample(dt, (2, 7, 3), 2)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64)) if dt.kind == "f" else np.matmul(a, b)
    check(K.matmul(a, b), ref, dt, rtol=1e-5 if dt == F32 else None)
    # stride-0 batch, transposed b, strided a
    a1 = np.broadcast_to(a[:1], (3, 5, 7))
    bt = np.ascontiguousarray(sample(dt, (3, 3, 7), 3).transpose(0, 2, 1)).transpose(0, 2, 1).copy().transpose(0, 2, 1)
    bt = sample(dt, (3, 3, 7), 3).transpose(0, 2, 1)
    ref = np.matmul(a1.astype(np.float64), bt.astype(np.float64))
    check(K.matmul(a1, bt), ref, dt, rtol=1e-5 if dt == F32 else None)
    z = K.matmul(np.zeros((1, 2, 0), dt), np.zeros((1, 0, 3), dt))
    check(z, np.zeros((1, 2, 3)), dt)


def test_matmul_large_and_views():
    rng = np.random.default_rng(0)
    a = rng.random((1, 130, 300)).astype(np.float32)
    b = rng.random((1, 300, 90)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    check(K.matmul(a, b), ref, F32, rtol=1e-5)
    at = np.ascontiguousarray(a[0].T)[None].transpose(0, 2, 1)
    check(K.matmul(at, np.broadcast_to(b, (2, 300, 90))), np.broadcast_to(ref, (2, 130, 90)), F32, rtol=1e-5)
    check(K.matmul(a[:, ::-1], b), a[:, ::-1].astype(np.float64) @ b, F32, rtol=1e-5)


# -- shape / movement -------------------------------------------------------------------------------

def test_views_share_memory():
    x = sample(F32, (4, 6), 1)
    r = K.reshape(x, (6, 4))
    assert np.shares_memory(r, x) and r.shape == (6, 4)
    p = K.permute(x, (1, 0))
    assert np.shares_memory(p, x) and (p == x.T).all()
    e = K.expand(x[:1], (5, 6))
    assert np.shares_memory(e, x) and e.strides[0] == 0 and (e == x[0]).all()
    i = K.index(x, (slice(3, 0, -1), 2, None))
    assert np.shares_memory(i, x) and i.shape == (3, 1) and (i[:, 0] == x[3:0:-1, 2]).all()
    s = K.index(x, (1, 2))
    assert isinstance(s, np.ndarray) and s.shape == () and s == x[1, 2]
    r2 = K.reshape(x.T, (24,))
    check(r2, x.T.reshape(24), F32)
    assert not np.shares_memory(r2, x)


@pytest.mark.parametrize("dt", ALL)
def test_copy_and_host(dt):
    x = sample(dt, (5, 6), 1)
    for v in (x, x.T, x[::-1, ::2], np.broadcast_to(x[2], (3, 6)), x[1, 2][()]):
        v = np.asarray(v)
        c = K.copy(v)
        assert c.flags.c_contiguous and not np.shares_memory(c, x)
        check(c, v, dt)
    h = K.to_host(x.T)
    assert not np.shares_memory(h, x)
    check(h, x.T, dt)
    assert K.from_host(x, 0) is x
    big = sample(dt, (300, 300), 2)
    check(K.copy(big.T), big.T, dt)


def test_slice_assign():
    x = sample(F64, (4, 5), 1)
    v = sample(F64, (2, 5), 2)
    key = (slice(3, 0, -2), slice(0, 5, 1))
    got = K.slice_assign(x, key, v)
    ref = x.copy()
    ref[3:0:-2, 0:5] = v
    check(got, ref, F64)
    assert not np.shares_memory(got, x)
    got = K.slice_assign(x, (2, slice(1, 4, 1)), np.array([7.0, 8.0, 9.0]))
    ref = x.copy()
    ref[2, 1:4] = [7, 8, 9]
    check(got, ref, F64)


@pytest.mark.parametrize("idt", [I32, I64])
def test_take(idt):
    x = sample(F32, (3, 4, 5), 1)
    for axis in (0, 1, 2):
        n = x.shape[axis]
        idx = np.array([[0, -1], [n - 1, 1]], idt)
        check(K.take(x, idx, axis), np.take(x, idx, axis), F32)
        with pytest.raises(IndexError, match=f"index {n} is out of bounds for axis {axis} with size {n}"):
            K.take(x, np.array([0, n], idt), axis)
        with pytest.raises(IndexError, match=f"index {-n - 1} is out of bounds"):
            K.take(x, np.array([-n - 1], idt), axis)
    check(K.take(x.T, np.array([1, 0], idt), 1), np.take(x.T, [1, 0], 1), F32)
    big = sample(I64, (1000, 50), 2)
    ib = np.arange(999, -1, -1, dtype=idt)
    check(K.take(big, ib, 0), big[::-1], I64)
    assert K.take(x, np.zeros((0,), idt), 1).shape == (3, 0, 5)


@pytest.mark.parametrize("idt", [I32, I64])
def test_gather(idt):
    rng = np.random.default_rng(0)
    x = sample(F64, (3, 4, 5), 1)
    for axis in (0, 1, 2):
        n = x.shape[axis]
        ishape = list(x.shape)
        ishape[axis] = 6
        ishape[(axis + 1) % 3] -= 1
        idx = rng.integers(-n, n, size=ishape).astype(idt)
        ref = np.take_along_axis(x[tuple(slice(0, s) if d != axis else slice(None)
                                         for d, s in enumerate(ishape))], np.where(idx < 0, idx + n, idx), axis)
        check(K.gather(x, idx, axis), ref, F64)
        bad = idx.copy()
        bad.reshape(-1)[3] = n
        with pytest.raises(IndexError, match=f"index {n} is out of bounds for axis {axis} with size {n}"):
            K.gather(x, bad, axis)
    xt = x.transpose(2, 1, 0)
    idx = rng.integers(0, 3, size=(5, 4, 2)).astype(idt)
    check(K.gather(xt, idx, 2), np.take_along_axis(xt, idx, 2), F64)
    big = sample(F32, (400, 100), 2)
    ib = rng.integers(0, 100, size=(400, 100)).astype(idt)
    check(K.gather(big, ib, 1), np.take_along_axis(big, ib, 1), F32)


def _add_at(x, idx, src, axis):
    out = x.copy()
    key = list(np.indices(idx.shape, sparse=True))
    key[axis] = np.where(idx < 0, idx + x.shape[axis], idx)
    np.add.at(out, tuple(key), src[tuple(slice(0, n) for n in idx.shape)])
    return out


@pytest.mark.parametrize("idt", [I32, I64])
def test_scatter_add(idt):
    rng = np.random.default_rng(0)
    for dt in ALL:
        x = sample(dt, (3, 4, 5), 1)
        for axis in (0, 1, 2):
            n = x.shape[axis]
            ishape = list(x.shape)
            ishape[axis] = 7
            ishape[(axis + 1) % 3] -= 1
            idx = rng.integers(-n, n, size=ishape).astype(idt)
            src = sample(dt, tuple(s + 1 for s in ishape), 2)
            got = K.scatter_add(x, idx, src, axis)
            if dt == B:
                ref = _add_at(x.astype(np.int64), idx, src.astype(np.int64), axis) > 0
            else:
                ref = _add_at(x, idx, src, axis)       # same dtype, same order: exact
            check(got, ref, dt, rtol=0, atol=0)
            assert not np.shares_memory(got, x)
            bad = idx.copy()
            bad.reshape(-1)[3] = n
            bad.reshape(-1)[5] = -n - 1
            with pytest.raises(IndexError, match=f"^index {n} is out of bounds for axis {axis} with size {n}$"):
                K.scatter_add(x, bad, src, axis)


def test_scatter_add_strided_parallel_and_deterministic():
    rng = np.random.default_rng(1)
    big = sample(F32, (300, 200), 3)
    ib = rng.integers(-300, 300, size=(500, 200))          # 100_000 positions: the prange path
    sb = sample(F32, (200, 600), 4).T                       # transposed src, larger than ib
    got = K.scatter_add(big, ib, sb, 0)
    check(got, _add_at(big, ib, sb, 0), F32, rtol=0, atol=0)
    np.testing.assert_array_equal(K.scatter_add(big, ib, sb, 0), got)
    row = rng.integers(0, 300, size=(500, 1))                # stride-0 index (an expand view)
    ie = np.broadcast_to(row, (500, 200))
    check(K.scatter_add(big, ie, sb, 0), _add_at(big, np.ascontiguousarray(ie), sb, 0), F32,
          rtol=0, atol=0)
    bad = row.copy()
    bad[400, 0] = 300
    with pytest.raises(IndexError, match="^index 300 is out of bounds for axis 0 with size 300$"):
        K.scatter_add(big, np.broadcast_to(bad, (500, 200)), sb, 0)
    x0 = np.array(1.5)
    check(K.scatter_add(x0, np.array(-1), np.array(2.0), 0), 3.5, F64)
    assert K.scatter_add(big, np.zeros((0, 200), I64), sb, 0).shape == big.shape


def test_cat():
    xs = [sample(I32, (2, n, 3), n) for n in (1, 0, 4)]
    for axis in (1,):
        check(K.cat(xs, axis), np.concatenate(xs, axis), I32)
    ys = [sample(F32, (3, 4), 1), sample(F32, (4, 3), 2).T, np.broadcast_to(sample(F32, (4,), 3), (2, 4))]
    check(K.cat(ys, 0), np.concatenate(ys, 0), F32)
    check(K.cat([y.T for y in ys], 1), np.concatenate([y.T for y in ys], 1), F32)
    zs = [sample(B, (5,), i) for i in range(3)]
    check(K.cat(zs, 0), np.concatenate(zs), B)


# -- memory / creation ------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL)
def test_creation(dt):
    e = K.empty((2, 3), dt, 0)
    assert e.shape == (2, 3) and e.dtype == dt
    check(K.full((2, 3), 1, dt, 0), np.ones((2, 3)), dt)
    check(K.full((BIG,), 0, dt, 0), np.zeros(BIG), dt)
    check(K.eye(3, 4, dt, 0), np.eye(3, 4), dt)
    check(K.eye(4, 2, dt, 0), np.eye(4, 2), dt)
    if dt.kind != "b":
        check(K.arange(2, 3, 5, dt, 0), np.arange(2, 17, 3), dt)
        check(K.arange(5, -1, 5, dt, 0), np.arange(5, 0, -1), dt)
    else:
        check(K.arange(0, 1, 2, dt, 0), [False, True], dt)
    assert K.full((0, 2), 1, dt, 0).shape == (0, 2)
    assert K.full((), 1, dt, 0).shape == ()


def test_full_and_arange_float_values():
    check(K.full((3,), np.nan, F32, 0), [np.nan] * 3, F32)
    check(K.arange(0.5, 0.1, 7, F64, 0), 0.5 + 0.1 * np.arange(7), F64)
    check(K.full((2,), -1, I32, 0), [-1, -1], I32)


# -- random -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [F32, F64])
def test_rand(dt):
    a = K.rand((BIG,), dt, 123, 0, 0)
    assert a.dtype == dt and (a >= 0).all() and (a < 1).all()
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.var() - 1 / 12) < 0.01
    b = K.rand((BIG,), dt, 123, 0, 0)
    np.testing.assert_array_equal(a, b)
    c = K.rand((10, 7), dt, 123, 5, 0)  # small (serial) kernel, offset 5
    np.testing.assert_array_equal(c.reshape(-1), a[5:75])
    assert not np.array_equal(K.rand((100,), dt, 124, 0, 0), a[:100])
    n = K.randn((BIG,), dt, 7, 0, 0)
    assert n.dtype == dt and abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    np.testing.assert_array_equal(K.randn((4, 5), dt, 7, 11, 0).reshape(-1), n[11:31])
    assert np.isfinite(n).all()
    assert K.rand((0, 3), dt, 1, 0, 0).shape == (0, 3)


def test_custom():
    x = sample(F32, (3,), 1)
    r = K.custom(lambda a, b: a * 2 + b, [x, x])
    assert isinstance(r, np.ndarray)
    np.testing.assert_allclose(r, x * 3)


def test_cached_plans_repeat_and_layout_changes():
    """Reductions, softmax and broadcasting binaries keep per-layout plans: repeated calls with
    new values, the same shape as a view (not C-contiguous, read-only) and other keepdims/axes
    give NumPy's results every time."""
    rng = np.random.default_rng(7)
    for shape in ((6, 5), (200, 300)):                    # serial and parallel
        for _ in range(3):
            x = rng.standard_normal(shape).astype(np.float32)
            xt = np.ascontiguousarray(x.T).T               # same shape, not C-contiguous
            ro = np.broadcast_to(x, shape)                 # read-only view
            for a in (x, xt, ro, x):
                for op in ("sum", "mean", "max", "min", "prod"):
                    for axes, kd in (((0,), False), ((1,), True), ((0, 1), False)):
                        ref = getattr(a.astype(np.float64), op)(axis=axes, keepdims=kd)
                        got = K.reduce(op, a, axes, kd, F32)
                        if op == "prod":
                            np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-4, atol=1e-30)
                        else:
                            check(got, ref, F32)
                for axis, log in ((1, False), (0, True), (-1, True)):
                    e = np.exp(a.astype(np.float64) - a.max(axis=axis, keepdims=True))
                    s = e.sum(axis=axis, keepdims=True)
                    ref = np.log(e / s) if log else e / s
                    check(K.softmax(a, axis, log), ref, F32)
                b = rng.standard_normal(shape[1:]).astype(np.float32)
                check(K.binary("add", a, b, F32, F32), a.astype(np.float64) + b, F32)
                check(K.binary("mul", a, np.float32(2.5) * np.ones((), np.float32), F32, F32),
                      a.astype(np.float64) * 2.5, F32)
                c = K.where(a > 0, a, np.zeros(shape[1:], np.float32), F32)
                check(c, np.where(a > 0, a, 0), F32)
                m = np.ascontiguousarray(a > 0)
                check(K.where(m, a, 0, F32), np.where(m, a, 0), F32)
                check(K.where(m, -1, a, F64), np.where(m, -1.0, a), F64)
                check(K.where(m, 1.5, True, F32), np.where(m, 1.5, 1.0), F32)
                check(K.where(m, np.float32(2), a, F32), np.where(m, 2.0, a), F32)
    z = np.zeros((0, 4), np.float32)
    for _ in range(2):
        assert K.binary("add", z, np.ones(4, np.float32), F32, F32).shape == (0, 4)
