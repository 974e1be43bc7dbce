"""Accuracy of the cpu kernel set's own transcendentals (jit_kernels/cpu/scalar_math.py).

For every function and both float dtypes: the maximum error in ulp against a reference over
dense samples of the whole range, asserted against the bound documented in scalar_math.
- float32: reference = the float64 NumPy result (error measured against the unrounded float64
  value, in units of the float32 ulp at the reference rounded to float32).
- float64: reference = NumPy on long double (80-bit x87 on x86-64) for exp/log/tanh/sin/cos and
  sigmoid, ``math.erf`` (libm, itself < 1 ulp) for erf.
Samples: uniformly random bit patterns over all finite values of the dtype (every exponent,
both signs) plus dense linear grids over the interesting range of each function plus special
values; results that overflow/underflow in the reference must be inf/0/denormal exactly.
Also exercised through the public API (``rt.exp(rt.tensor(x))``...).  The rest of the math
(``MORE``, atan2, hypot, copysign, fmod) is measured through the public API itself (their
generated flat kernel, in pieces below the parallel threshold), which shares its compiles
with the opinfo sweeps.
"""
import math
import os
import zlib

import numpy as np
import pytest
from numba import njit

from jit_kernels.cpu import scalar_math as sm

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
N_BITS = 2_000_000          # random bit patterns per dtype
N_GRID = 1_000_000          # dense grid points per function

# documented bounds (ulp); keep in sync with the docstrings in scalar_math
BOUND = {
    ("exp", F32): 1.0, ("exp", F64): 1.0,
    ("log", F32): 1.0, ("log", F64): 1.0,
    ("tanh", F32): 1.5, ("tanh", F64): 1.5,
    ("sigmoid", F32): 2.5, ("sigmoid", F64): 2.5,
    ("erf", F32): 1.0, ("erf", F64): 1.0,
    ("sin", F32): 1.0, ("sin", F64): 1.5,
    ("cos", F32): 1.0, ("cos", F64): 1.5,
    ("pow", F32): 1.0,
    # the rest of the math (float32 via float64 helpers or libm's float64 function; float64 libm)
    ("tan", F32): 1.0, ("tan", F64): 1.0,
    ("asin", F32): 1.0, ("asin", F64): 1.0,
    ("acos", F32): 1.0, ("acos", F64): 1.0,
    ("atan", F32): 1.0, ("atan", F64): 1.0,
    ("sinh", F32): 1.0, ("sinh", F64): 2.5,
    ("cosh", F32): 1.0, ("cosh", F64): 2.5,
    ("asinh", F32): 1.0, ("asinh", F64): 2.5,
    ("acosh", F32): 1.0, ("acosh", F64): 2.5,
    ("atanh", F32): 1.0, ("atanh", F64): 2.5,
    ("exp2", F32): 1.0, ("exp2", F64): 1.0,
    ("expm1", F32): 1.0, ("expm1", F64): 1.0,
    ("log2", F32): 1.0, ("log2", F64): 1.0,
    ("log10", F32): 1.0, ("log10", F64): 2.0,
    ("atan2", F32): 1.0, ("atan2", F64): 1.0,
    ("hypot", F32): 1.0, ("hypot", F64): 1.0,
}


# ---- kernels: one njit loop per function (generic entry points, dtype from the argument) -----
def _mk(name):
    fn = getattr(sm, name)

    @njit(error_model="numpy")
    def k(a, out):
        for i in range(a.shape[0]):
            out[i] = fn(a[i])
    return k


# Samples are seeded per function (stable across processes); RT_ULP_SEED_OFFSET explores others.
SEED_OFFSET = int(os.environ.get("RT_ULP_SEED_OFFSET", "0"))

MORE = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "expm1",
        "log2", "log10"]
KERN = {n: _mk(n) for n in ("exp", "log", "tanh", "sigmoid", "erf", "sin", "cos")}
#: NumPy's names of the references
NP_NAME = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
           "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2"}


@njit(error_model="numpy")
def _pow_kernel(a, b, out):
    for i in range(a.shape[0]):
        out[i] = sm.pow(a[i], b[i])


#: the ``MORE`` functions run through the public API (their generated flat kernel, which
#: calls the same scalar_math function) in pieces below the parallel threshold: the opinfo
#: sweeps compile that kernel anyway, so these tests add no JIT compile of their own
CHUNK = 20_000


def via_api(fn, *xs):
    import runtime as rt
    n = xs[0].shape[0]
    return np.concatenate([fn(*[rt.tensor(np.ascontiguousarray(x[i:i + CHUNK])) for x in xs]
                              ).numpy() for i in range(0, n, CHUNK)] or [xs[0][:0]])


def run(name, x):
    if name in MORE:
        import runtime as rt
        return via_api(getattr(rt, name), x)
    out = np.empty_like(x)
    KERN[name](x, out)
    return out


# ---- references ------------------------------------------------------------------------------
def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def reference(name, x):
    """Reference values in a wider type than x (float64 for float32 x, long double for float64)."""
    if x.dtype == F32:
        xw = x.astype(np.float64)
        if name == "erf":
            return _erf_vec(xw)
        if name == "sigmoid":
            return _sigmoid_ref(xw)
        return getattr(np, NP_NAME.get(name, name))(xw)
    if name == "erf":
        return _erf_vec(x).astype(np.longdouble)
    xw = x.astype(np.longdouble)
    if name == "sigmoid":
        with np.errstate(over="ignore"):
            return _sigmoid_ref(xw)
    return getattr(np, NP_NAME.get(name, name))(xw)


def ulp_error(got, ref, dt):
    """|got - ref| in ulps of dt at ref (ref rounded to dt; denormal spacing below tiny).

    Non-finite rounded references are compared exactly instead (returns 0 where equal,
    inf where not)."""
    dt = np.dtype(dt)
    with np.errstate(over="ignore", invalid="ignore"):
        r = ref.astype(dt)
        fin = np.isfinite(r)
        sp = np.spacing(np.maximum(np.abs(r), np.finfo(dt).tiny)).astype(ref.dtype)
        err = np.abs(got.astype(ref.dtype) - ref) / sp
    same = (got == r) | (np.isnan(got) & np.isnan(r))
    err = np.where(fin, err, np.where(same, 0.0, np.inf))
    return err


# ---- samples ---------------------------------------------------------------------------------
def random_bits(dt, n, seed=0):
    rng = np.random.default_rng(seed)
    if dt == F32:
        b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
        x = b.view(np.float32)
    else:
        x = rng.integers(-2 ** 63, 2 ** 63 - 1, n, dtype=np.int64).view(np.float64)
    return x[np.isfinite(x)]


def log_spaced(dt, n):
    """|x| log-spaced over every exponent of dt (smallest denormal to max), both signs."""
    fi = np.finfo(dt)
    lo = math.log10(float(fi.smallest_subnormal))
    hi = math.log10(float(fi.max))
    m = np.logspace(lo, hi, n // 2, dtype=np.float64)
    m = np.minimum(m, float(fi.max)).astype(dt)
    return np.concatenate([m, -m])


GRID = {"exp": (-110.0, 95.0, -750.0, 712.0), "log": (0.0, 4.0, 0.0, 4.0),
        "tanh": (-12.0, 12.0, -25.0, 25.0), "sigmoid": (-110.0, 110.0, -750.0, 750.0),
        "erf": (-7.0, 7.0, -7.0, 7.0), "sin": (-400.0, 400.0, -400.0, 400.0),
        "cos": (-400.0, 400.0, -400.0, 400.0), "tan": (-20.0, 20.0, -20.0, 20.0),
        "asin": (-1.0, 1.0, -1.0, 1.0), "acos": (-1.0, 1.0, -1.0, 1.0),
        "atan": (-50.0, 50.0, -50.0, 50.0), "sinh": (-95.0, 95.0, -715.0, 715.0),
        "cosh": (-95.0, 95.0, -715.0, 715.0), "asinh": (-10.0, 10.0, -10.0, 10.0),
        "acosh": (1.0, 10.0, 1.0, 10.0), "atanh": (-1.0, 1.0, -1.0, 1.0),
        "exp2": (-152.0, 130.0, -1080.0, 1030.0), "expm1": (-20.0, 90.0, -40.0, 712.0),
        "log2": (0.0, 4.0, 0.0, 4.0), "log10": (0.0, 4.0, 0.0, 4.0)}

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1e-45, -1e-45, 1e-40,
            1.1754944e-38, 3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 88.7228394,
            -87.33654, -103.972, -103.97208, -104.0, 709.78, 709.79, -745.13, -745.14, 9.0,
            9.01, 0.625, -0.625, 0.84375, 1.25, 2.857142857, 6.0, 28.0, 1e5, -1e5, 1e6,
            2.68435456e8, 2.7e8, 1048576.0, 1.1e6, 1e10, 1e30]


def samples(name, dt):
    lo32, hi32, lo64, hi64 = GRID[name]
    lo, hi = (lo32, hi32) if dt == F32 else (lo64, hi64)
    few = name == "erf" and dt == F64 or name in MORE     # (a fifth, for test time)
    n_bits = N_BITS if not few else N_BITS // (10 if name == "erf" else 5)
    n_grid = N_GRID if not few else N_GRID // (10 if name == "erf" else 5)
    parts = [random_bits(np.dtype(dt), n_bits, seed=(zlib.crc32(name.encode()) + SEED_OFFSET) % 2**32),
             np.linspace(lo, hi, n_grid).astype(dt),
             log_spaced(np.dtype(dt), n_grid),
             np.array(SPECIALS, dtype=np.float64).astype(dt)]
    with np.errstate(over="ignore"):
        return np.concatenate(parts).astype(dt)


FUNCS = ["exp", "log", "tanh", "sigmoid", "erf", "sin", "cos"] + MORE


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", FUNCS)
def test_max_ulp(name, dt):
    x = samples(name, dt)
    got = run(name, x)
    assert got.dtype == dt
    with np.errstate(all="ignore"):
        ref = reference(name, x)
    err = ulp_error(got, ref, dt)
    i = int(np.argmax(err))
    assert err[i] <= BOUND[(name, dt)], (
        f"{name} {dt}: {float(err[i]):.3f} ulp at x={x[i]!r}: got {got[i]!r}, ref {ref[i]!r}")


# ---- special values --------------------------------------------------------------------------
SPECIAL_CASES = {
    "exp": [(np.inf, np.inf), (-np.inf, 0.0), (np.nan, np.nan), (0.0, 1.0), (-0.0, 1.0)],
    "log": [(0.0, -np.inf), (-0.0, -np.inf), (-1.0, np.nan), (-np.inf, np.nan), (np.inf, np.inf),
            (np.nan, np.nan), (1.0, 0.0)],
    "tanh": [(np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0),
             (30.0, 1.0), (-30.0, -1.0), (25.0, 1.0), (-25.0, -1.0)],
    "sigmoid": [(np.inf, 1.0), (-np.inf, 0.0), (np.nan, np.nan), (0.0, 0.5), (-0.0, 0.5),
                (200.0, 1.0)],
    "erf": [(np.inf, 1.0), (-np.inf, -1.0), (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0),
            (10.0, 1.0), (-10.0, -1.0)],
    "sin": [(np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0)],
    "cos": [(np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (0.0, 1.0), (-0.0, 1.0)],
    "tan": [(np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0)],
    "asin": [(2.0, np.nan), (-2.0, np.nan), (np.nan, np.nan), (0.0, 0.0), (-0.0, -0.0),
             (1.0, math.pi / 2), (-1.0, -math.pi / 2), (np.inf, np.nan)],
    "acos": [(1.0, 0.0), (2.0, np.nan), (-1.0, math.pi), (np.nan, np.nan), (0.0, math.pi / 2)],
    "atan": [(np.inf, math.pi / 2), (-np.inf, -math.pi / 2), (0.0, 0.0), (-0.0, -0.0),
             (np.nan, np.nan)],
    "sinh": [(np.inf, np.inf), (-np.inf, -np.inf), (0.0, 0.0), (-0.0, -0.0), (np.nan, np.nan),
             (1000.0, np.inf), (-1000.0, -np.inf)],
    "cosh": [(np.inf, np.inf), (-np.inf, np.inf), (0.0, 1.0), (-0.0, 1.0), (np.nan, np.nan),
             (1000.0, np.inf), (-1000.0, np.inf)],
    "asinh": [(np.inf, np.inf), (-np.inf, -np.inf), (0.0, 0.0), (-0.0, -0.0), (np.nan, np.nan)],
    "acosh": [(1.0, 0.0), (0.5, np.nan), (-2.0, np.nan), (-1e20, np.nan), (np.inf, np.inf),
              (-np.inf, np.nan), (np.nan, np.nan)],
    "atanh": [(1.0, np.inf), (-1.0, -np.inf), (2.0, np.nan), (-2.0, np.nan), (0.0, 0.0),
              (-0.0, -0.0), (np.nan, np.nan)],
    "exp2": [(np.inf, np.inf), (-np.inf, 0.0), (0.0, 1.0), (-0.0, 1.0), (3.0, 8.0),
             (-3.0, 0.125), (1024.0, np.inf), (-1100.0, 0.0), (np.nan, np.nan)],
    "expm1": [(np.inf, np.inf), (-np.inf, -1.0), (0.0, 0.0), (-0.0, -0.0), (np.nan, np.nan),
              (-100.0, -1.0), (1000.0, np.inf)],
    "log2": [(0.0, -np.inf), (-0.0, -np.inf), (-1.0, np.nan), (np.inf, np.inf), (8.0, 3.0),
             (1.0, 0.0), (0.25, -2.0), (np.nan, np.nan)],
    "log10": [(0.0, -np.inf), (-1.0, np.nan), (np.inf, np.inf), (1.0, 0.0), (100.0, 2.0),
              (1000.0, 3.0), (np.nan, np.nan)],
}


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", FUNCS)
def test_special_values(name, dt):
    xs = np.array([c[0] for c in SPECIAL_CASES[name]], dtype=dt)
    want = np.array([c[1] for c in SPECIAL_CASES[name]], dtype=dt)
    got = run(name, xs)
    bad = ~_same(got, want)
    assert not bad.any(), f"{name} {dt}: x={xs[bad]} got {got[bad]} want {want[bad]}"


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
def test_exp_overflow_underflow_edges(dt):
    """Around the overflow threshold and through the denormal range, exp equals the reference
    rounding exactly except for at most the documented ulp (float32: inf exactly where the
    float64 result rounds to inf; denormals not flushed)."""
    fi = np.finfo(dt)
    top = math.log(float(fi.max))
    bot = math.log(float(fi.smallest_subnormal))
    x = np.concatenate([np.linspace(top - 0.01, top + 0.01, 20001),
                        np.linspace(bot - 1.0, math.log(float(fi.tiny)) + 1, 200001)]).astype(dt)
    got = run("exp", x)
    with np.errstate(all="ignore"):
        ref = reference("exp", x)
    err = ulp_error(got, ref, dt)
    assert err.max() <= BOUND[("exp", dt)]
    assert (np.isinf(got) == np.isinf(ref.astype(dt))).all()
    assert ((got > 0) & (got < fi.tiny)).any()          # denormals produced


def test_exp_edges_exact_f32():
    x = np.array([88.72283, 88.72284, 88.8, 89.0, 1000.0, -103.97207, -103.97208, -104.0,
                  -200.0, -87.33654], np.float32)
    got = run("exp", x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert got[2] == np.inf and got[3] == np.inf and got[7] == 0.0 and got[8] == 0.0
    assert (ulp_error(got, np.exp(x.astype(np.float64)), F32) <= 1.0).all(), (got, want)


def test_tanh_saturation_f32():
    """float32 tanh rounds to ±1 from |x| = 9.0109 on, as the float64 reference does."""
    x = np.linspace(8.9, 10.5, 20001).astype(np.float32)
    got = run("tanh", x)
    want = np.tanh(x.astype(np.float64)).astype(np.float32)
    assert ((got == 1.0) == (want == 1.0)).all()
    assert (run("tanh", -x) == -got).all()


# ---- pow -------------------------------------------------------------------------------------
def _pow_ref(x, y):
    with np.errstate(all="ignore"):
        return np.power(x.astype(np.float64), y.astype(np.float64))


def test_pow_f32_ulp():
    rng = np.random.default_rng(3)
    n = N_BITS
    x = np.exp(rng.uniform(-12, 12, n)).astype(np.float32)
    y = rng.uniform(-40, 40, n).astype(np.float32)
    # negative bases with integer exponents, huge/tiny results, exponents near 0 / 1
    xi = -np.exp(rng.uniform(-5, 5, n // 4)).astype(np.float32)
    yi = rng.integers(-30, 31, n // 4).astype(np.float32)
    xb = random_bits(F32, n // 4, seed=7)
    xb = np.abs(xb)
    yb = rng.uniform(-2, 2, xb.shape[0]).astype(np.float32)
    xs = np.concatenate([x, xi, xb])
    ys = np.concatenate([y, yi, yb])
    out = np.empty_like(xs)
    _pow_kernel(xs, ys, out)
    err = ulp_error(out, _pow_ref(xs, ys), F32)
    i = int(np.argmax(err))
    assert err[i] <= BOUND[("pow", F32)], (xs[i], ys[i], out[i], _pow_ref(xs[i:i + 1], ys[i:i + 1]))


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
def test_pow_special_values(dt):
    v = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf,
                  -np.inf, np.nan, 1e-30, 1e30], dtype=dt)
    xs, ys = np.meshgrid(v, v, indexing="ij")
    xs, ys = xs.ravel(), ys.ravel()
    out = np.empty_like(xs)
    _pow_kernel(xs, ys, out)
    ref = _pow_ref(xs, ys)
    want = ref.astype(dt)
    # exact for nan/inf/0 (with sign); finite nonzero results within the documented ulp
    # (float64 pow is libm's; NumPy's own float64 power differs from it by up to 1 ulp)
    exact = ~np.isfinite(want) | (want == 0)
    bad = exact & ~_same(out, want)
    bad |= ~exact & (ulp_error(out, ref, dt) > BOUND.get(("pow", np.dtype(dt)), 1.0))
    assert not bad.any(), list(zip(xs[bad], ys[bad], out[bad], want[bad]))


# ---- atan2, hypot (float32: libm float64 / a float64 sum of squares, rounded) -------------------
def run2(name, x, y):
    import runtime as rt
    return via_api(getattr(rt, name), x, y)


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["atan2", "hypot"])
def test_binary_max_ulp(name, dt):
    n = N_BITS // 5
    x = random_bits(dt, n, seed=zlib.crc32(name.encode()) % 2**32)
    y = random_bits(dt, n, seed=zlib.crc32(name.encode()) % 2**32 + 1)
    m = min(len(x), len(y))
    g = np.linspace(-5, 5, 1001).astype(dt)
    gx, gy = np.meshgrid(g, g)
    sp = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], dt)
    sx, sy = np.meshgrid(sp, sp)
    xs = np.concatenate([x[:m], gx.ravel(), sx.ravel()]).astype(dt)
    ys = np.concatenate([y[:m], gy.ravel(), sy.ravel()]).astype(dt)
    out = run2(name, xs, ys)
    wide = np.float64 if dt == F32 else np.longdouble
    with np.errstate(all="ignore"):
        ref = getattr(np, NP_NAME.get(name, name))(xs.astype(wide), ys.astype(wide))
    err = ulp_error(out, ref, dt)
    i = int(np.argmax(err))
    assert err[i] <= BOUND[(name, dt)], (name, dt, float(err[i]), xs[i], ys[i], out[i], ref[i])


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
def test_copysign_fmod_are_exact(dt):
    v = np.array([0.0, -0.0, 1.5, -1.5, 7.25, -7.25, 1e-40, np.inf, -np.inf, np.nan, 3e38], dt)
    xs, ys = (a.ravel() for a in np.meshgrid(v, v))
    for name, ref in (("copysign", np.copysign), ("fmod", np.fmod)):
        out = run2(name, xs, ys)
        with np.errstate(all="ignore"):
            want = ref(xs, ys)
        assert _same(out, want).all(), (name, xs[~_same(out, want)], ys[~_same(out, want)])


# ---- through the public API ------------------------------------------------------------------
def test_public_api_matches_scalar_math():
    rt = pytest.importorskip("runtime")
    rng = np.random.default_rng(11)
    for dt in (np.float32, np.float64):
        x = (rng.standard_normal(100_000) * 30).astype(dt)
        xp = np.abs(x) + dt(1e-3)
        t, tp = rt.tensor(x), rt.tensor(xp)
        for name, arg, ref in [("exp", x, np.exp), ("tanh", x, np.tanh), ("log", xp, np.log),
                               ("sin", x, np.sin), ("cos", x, np.cos),
                               ("sigmoid", x, _sigmoid_ref)]:
            got = getattr(rt, name)(tp if arg is xp else t).numpy()
            assert got.dtype == dt
            with np.errstate(over="ignore"):
                r = ref(arg.astype(np.longdouble if dt == np.float64 else np.float64))
            err = ulp_error(got, r, np.dtype(dt))
            assert err.max() <= BOUND[(name, np.dtype(dt))], (name, dt, err.max())


def test_public_api_large_contiguous_f32():
    """1e6 elements takes the parallel flat kernel path."""
    rt = pytest.importorskip("runtime")
    x = np.linspace(-100, 100, 1_000_001, dtype=np.float32)
    for name in ("exp", "tanh", "sigmoid"):
        got = getattr(rt, name)(rt.tensor(x)).numpy()
        with np.errstate(over="ignore"):
            r = reference(name, x)
        assert ulp_error(got, r, F32).max() <= BOUND[(name, F32)], name
    xp = np.abs(x) + np.float32(1e-3)
    got = rt.log(rt.tensor(xp)).numpy()
    assert ulp_error(got, np.log(xp.astype(np.float64)), F32).max() <= 1.0


@njit(cache=True)
def _sel_cases(c, x32, x64):
    """Each select beside the conditional expression it stands for (mixed widths, int
    literals, an int condition)."""
    return (sm._sel(c, x32, x64), x32 if c else x64,
            sm._sel(c, 23, 0), 23 if c else 0,
            sm._sel(c, x32, np.float32(-0.0)), x32 if c else np.float32(-0.0),
            sm._sel(c & 2, x64, -x64), x64 if c & 2 else -x64)


@pytest.mark.parametrize("c", [0, 1, 2, 3])
def test_select_gives_the_conditional_expressions_value_and_type(c):
    got = _sel_cases(c, np.float32(1.5), 2.25)
    for sel, ifexp in zip(got[::2], got[1::2]):
        assert type(sel) is type(ifexp)
        assert np.array(sel).tobytes() == np.array(ifexp).tobytes()
