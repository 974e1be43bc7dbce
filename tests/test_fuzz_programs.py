"""The differential fuzz suite: hypothesis draws random programs over the catalogue's
table (every elementwise, reduction and softmax row of tests/opinfo.py, so new ops join by
their row; plus matmul, transposes, reshapes and ``where``), and each program runs

- eagerly on cpu, against the rows' NumPy references composed in float64;
- captured and replayed, saved and loaded, and compiled — each against the eager result;
- on ``rt.autodiff(rt.cpu())`` (float64): the same values, and gradients of a weighted sum of the
  outputs against central finite differences of the NumPy reference.

Every unary input is first squashed into the op's domain (``lo + (hi - lo) * sigmoid(x)``, in
the program itself), so values stay bounded and well conditioned and a divergence is a bug, not
rounding.  A step NumPy refuses (shapes that do not broadcast) is dropped before the runtime
sees the program: the runtime must then run every step without an error.

Profiles: CI runs hypothesis' ``ci`` profile (15 programs per test); ``--hypothesis-profile=nightly``
(tests/conftest.py) runs 10,000 per test (see CONTRIBUTING.md, Development).
"""
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import runtime as rt

from opinfo import rows
from oracle import KINKED_ACTIVATIONS

F32, F64 = rt.float32, rt.float64
NP = {F32: np.float32, F64: np.float64}
# steps whose derivative jumps (kinks, steps, ties): values only, never differentiated
KINKED = {"abs", "relu", "sign", "floor", "ceil", "round", "trunc", "frac", "clamp", "clamp_min",
          "clamp_max", "maximum", "minimum", "max", "min", "amax", "amin", *KINKED_ACTIVATIONS,
          "fmod", "remainder", "floor_divide", "copysign", "norm", "nan_to_num",
          # no derivative at the origin (0/0, NaN as PyTorch's), which a program reaches exactly
          # by subtracting a value from itself: hypot(v1 - v1.T, ...) (nightly run, seed 1000)
          "hypot", "atan2"}
# binary ops whose second operand must stay away from zero, and pow (a positive base)
DIVISORS = {"div", "fmod", "remainder", "floor_divide"}
LIMIT = 1.5                                   # unary inputs are squashed into [-1.5, 1.5] ∩ domain


def _float_rows(family):
    out = []
    for r in rows(family):
        if r.ref is None or F64 not in r.dtypes or r.sample is not None or r.out(F64) is not F64:
            continue
        out.append(r)
    return out


UNARY = _float_rows("unary")
BINARY = [r for r in _float_rows("binary") if r.name != "pow"]
REDUCE = _float_rows("reduce")
SOFTMAX = _float_rows("softmax")


def _domain(row):
    lo, hi = row.domain
    if row.name == "reciprocal":
        return 0.5, 2.0
    a, b = max(lo, -LIMIT), min(hi, LIMIT)
    if b - a < 0.2:                               # a domain away from the origin: its own bounds
        a, b = lo, min(hi, lo + 2 * LIMIT)
    pad = 0.02 * (b - a)
    return a + pad, b - pad


class _Rt:
    """The runtime backend of a program step."""
    def squash(self, x, lo, hi):
        return rt.add(rt.mul(rt.sigmoid(x), hi - lo), lo)

    def unary(self, row, x):
        return row.fn(x)

    def binary(self, row, a, b):
        return row.fn(a, b)

    def reduce(self, row, x, axis, keepdims):
        return row.fn(x, axis=axis, keepdims=keepdims)

    def softmax(self, row, x, axis):
        return row.fn(x, axis)

    def matmul_t(self, x):
        return rt.matmul(x, rt.transpose(x, -1, -2))

    def transpose(self, x):
        return rt.transpose(x, -1, -2)

    def flat(self, x):
        return rt.reshape(x, (-1,))

    def where_gt(self, a, b, c):
        return rt.where(rt.gt(a, b), b, c)


class _Np:
    """The NumPy float64 backend (the tests/opinfo.py references)."""
    def squash(self, x, lo, hi):
        return 1 / (1 + np.exp(-x)) * (hi - lo) + lo

    def unary(self, row, x):
        return row.reference(x)

    def binary(self, row, a, b):
        return row.reference(a, b)

    def reduce(self, row, x, axis, keepdims):
        return np.asarray(row.reference(x, axis=axis, keepdims=keepdims))

    def softmax(self, row, x, axis):
        return row.ref(x, axis)

    def matmul_t(self, x):
        return np.matmul(x, np.swapaxes(x, -1, -2))

    def transpose(self, x):
        return np.swapaxes(x, -1, -2)

    def flat(self, x):
        return np.reshape(x, (-1,))

    def where_gt(self, a, b, c):
        return np.where(a > b, b, c)


def _step(be, step, vals):
    pick = lambda i: vals[i % len(vals)]
    kind = step[0]
    if kind == "u":
        row, i = step[1], step[2]
        lo, hi = _domain(row)
        return be.unary(row, be.squash(pick(i), lo, hi))
    if kind == "b":
        row, i, j = step[1:]
        b = pick(j)
        if row.name in DIVISORS:
            b = be.squash(b, 0.5, 2.0)
        return be.binary(row, pick(i), b)
    if kind == "r":
        row, i, axis, keepdims = step[1:]
        return be.reduce(row, pick(i), axis, keepdims)
    if kind == "s":
        row, i, axis = step[1:]
        return be.softmax(row, pick(i), axis)
    if kind == "m":
        return be.matmul_t(pick(step[1]))
    if kind == "t":
        return be.transpose(pick(step[1]))
    if kind == "f":
        return be.flat(pick(step[1]))
    return be.where_gt(pick(step[1]), pick(step[2]), pick(step[3]))


def _valid(program, arrays):
    """The steps NumPy accepts on these inputs, with axes fitted to each operand's rank."""
    vals = [a.astype(np.float64) for a in arrays]
    kept = []
    np_be = _Np()
    with np.errstate(all="ignore"):
        for step in program:
            kind = step[0]
            if kind in "rs":                    # (kind, row, operand, axis[, keepdims])
                nd = vals[step[2] % len(vals)].ndim
                if nd == 0:
                    continue
                step = step[:3] + (step[3] % nd,) + step[4:]
            if kind in "mt" and vals[step[1] % len(vals)].ndim < 2:
                continue
            if kind == "f" and vals[step[1] % len(vals)].ndim == 1:
                continue                        # a no-op: the same tensor, not a new value
            try:
                y = _step(np_be, step, vals)
            except (ValueError, IndexError):
                continue
            vals.append(np.asarray(y, dtype=np.float64))
            kept.append(step)
    return kept


def _run(be, program, xs, n_out):
    vals = list(xs)
    for step in program:
        vals.append(_step(be, step, vals))
    outs = vals[len(xs):] or vals[:1]
    return tuple(outs[-n_out:])


@st.composite
def programs(draw, smooth=False):
    rank = draw(st.integers(0, 3))
    full = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    shapes = [full]
    for _ in range(draw(st.integers(0, 2))):
        r = draw(st.integers(0, rank))
        shapes.append(tuple(1 if draw(st.booleans()) else d for d in full[rank - r:]))
    pool = [r for r in UNARY if not (smooth and r.name in KINKED)]
    bpool = [r for r in BINARY if not (smooth and r.name in KINKED)]
    rpool = [r for r in REDUCE if not (smooth and r.op in KINKED)]
    kinds = ["u", "u", "b", "b", "r", "s", "m", "t", "f"] + ([] if smooth else ["w"])
    program = []
    for _ in range(draw(st.integers(1, 6))):
        k = draw(st.sampled_from(kinds))
        i, j, c = (draw(st.integers(0, 20)) for _ in range(3))
        if k == "u":
            program.append(("u", draw(st.sampled_from(pool)), i))
        elif k == "b":
            program.append(("b", draw(st.sampled_from(bpool)), i, j))
        elif k == "r":
            program.append(("r", draw(st.sampled_from(rpool)), i, draw(st.integers(0, 3)),
                            draw(st.booleans())))
        elif k == "s":
            program.append(("s", draw(st.sampled_from(SOFTMAX)), i, draw(st.integers(0, 3))))
        elif k in "mtf":
            program.append((k, i))
        else:
            program.append(("w", i, j, c))
    return shapes, program, draw(st.integers(1, 2)), draw(st.integers(0, 10_000))


def _inputs(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, size=s).astype(NP[dtype]) for s in shapes]


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def check_program(case, dtype, tmp_dir, compile=True):
    """One differential program: eager against NumPy float64, then replayed, saved+loaded and
    (``compile``) compiled against eager.  Returns False for a program NumPy refuses whole."""
    shapes, program, n_out, seed = case
    arrays = _inputs(shapes, dtype, seed)
    program = _valid(program, arrays)
    if not program:
        return False
    with np.errstate(all="ignore"):
        want = _run(_Np(), program, [a.astype(np.float64) for a in arrays], n_out)
    eager = _run(_Rt(), program, [rt.tensor(a) for a in arrays], n_out)
    tol = {F32: (2e-3, 2e-4), F64: (1e-9, 1e-10)}[dtype]
    for got, ref in zip(eager, want):
        assert got.shape == ref.shape
        np.testing.assert_allclose(got.numpy(), ref.astype(NP[dtype]), rtol=tol[0], atol=tol[1])
    graph = rt.capture(lambda *xs: _run(_Rt(), program, xs, n_out), *arrays)
    replayed = graph.run(*arrays)
    path = os.path.join(os.fspath(tmp_dir), "g.rtg")
    graph.save(path)
    loaded = rt.load_graph(path).bind(rt.cpu())(*arrays)
    compiled = graph.compile(rt.cpu())(*arrays) if compile else replayed
    close = {F32: 1e-5, F64: 1e-12}[dtype]
    for e, r, s, c in zip(eager, replayed, loaded, compiled):
        np.testing.assert_allclose(r.numpy(), e.numpy(), rtol=close, atol=close)
        np.testing.assert_array_equal(s.numpy(), r.numpy())
        np.testing.assert_allclose(c.numpy(), r.numpy(), rtol=close, atol=close)
    return True


@settings(**_SETTINGS)
@given(case=programs(), dtype=st.sampled_from([F32, F64]))
def test_random_programs_agree_everywhere(case, dtype, tmp_path_factory):
    check_program(case, dtype, tmp_path_factory.mktemp("fuzz"))


def _fd_grads(program, arrays, n_out, weights, eps=1e-6):
    """Central differences of sum(out_k * w_k) through the NumPy reference."""
    def loss(xs):
        with np.errstate(all="ignore"):
            outs = _run(_Np(), program, xs, n_out)
        return sum(float(np.sum(o * w)) for o, w in zip(outs, weights))
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            xs = [x.copy() for x in arrays]
            xs[k][idx] += eps
            up = loss(xs)
            xs[k][idx] -= 2 * eps
            g[idx] = (up - loss(xs)) / (2 * eps)
        grads.append(g)
    return grads


def check_gradients(case):
    """One smooth program on ``rt.autodiff(rt.cpu())`` (float64): eager values, and gradients
    against central finite differences.  Returns False for a program NumPy refuses whole."""
    shapes, program, n_out, seed = case
    arrays = _inputs(shapes, F64, seed)
    program = _valid(program, arrays)
    if not program:
        return False
    ad = rt.autodiff(rt.cpu())
    xs = [rt.tensor(a).to(ad).require_grad() for a in arrays]
    outs = _run(_Rt(), program, xs, n_out)
    eager = _run(_Rt(), program, [rt.tensor(a) for a in arrays], n_out)
    rng = np.random.default_rng(seed + 1)
    weights = [rng.uniform(-1, 1, size=o.shape) for o in outs]
    for o, e in zip(outs, eager):
        np.testing.assert_allclose(o.inner().numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    loss = None
    for o, w in zip(outs, weights):
        term = rt.sum(o * rt.tensor(w).to(ad))
        loss = term if loss is None else loss + term
    grads = loss.backward()
    want = _fd_grads(program, arrays, n_out, weights)
    for x, g in zip(xs, want):
        got = x.grad(grads)
        got = np.zeros_like(g) if got is None else got.numpy()
        scale = max(1.0, float(np.abs(g).max()))
        np.testing.assert_allclose(got, g, rtol=1e-5, atol=1e-6 * scale)
    return True


@settings(**_SETTINGS)
@given(case=programs(smooth=True))
def test_random_programs_differentiate_like_finite_differences(case):
    check_gradients(case)


def test_the_pools_cover_the_table():
    """New rows join the fuzz pools by themselves; the pools are never empty."""
    names = {r.name for r in UNARY} | {r.name for r in BINARY}
    assert {"exp", "tanh", "sqrt", "silu", "add", "mul", "div", "logaddexp"} <= names
    assert {r.name for r in REDUCE} >= {"sum", "mean", "logsumexp"} and SOFTMAX
    assert all(math.isfinite(a) and math.isfinite(b) and a < b for a, b in map(_domain, UNARY))
    # no derivative at the origin: the gradient programs leave them out (the nightly run's one
    # divergence, seed 1000: hypot(v - v.T, v - v.T) gave NaN gradients, as PyTorch's do)
    smooth = {r.name for r in BINARY if r.name not in KINKED}
    assert "hypot" not in smooth and "atan2" not in smooth and "logaddexp" in smooth


@pytest.mark.parametrize("program", [
    [("b", next(r for r in BINARY if r.name == "div"), 0, 1)],          # a squashed divisor
])
def test_a_fixed_program(program):
    arrays = _inputs([(3, 2), (2,)], F64, 0)
    want = _run(_Np(), program, arrays, 1)
    got = _run(_Rt(), program, [rt.tensor(a) for a in arrays], 1)
    np.testing.assert_allclose(got[0].numpy(), want[0], rtol=1e-12)
