"""The op table (``jit_kernels.optable``): the derived op lists agree with it, every entry has a
body for every kind it claims, and the cpu set implements every op in it; ``norm`` (the table's
growth check); the bounded caches of the cpu set."""
import ast
import re
import subprocess
import sys

import numpy as np
import pytest

import jit_kernels
from jit_kernels import optable
from jit_kernels.cpu import CpuKernels
from jit_kernels.cpu import elementwise as ew
from jit_kernels.cpu import scalar_math as sm

K = CpuKernels()
F32, F64, I32, I64, B = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))


def test_derived_lists_agree_with_the_table():
    E, R = optable.ELEMENTWISE, optable.REDUCTIONS
    assert jit_kernels.UNARY_OPS == tuple(n for n, e in E.items() if e.family == "unary")
    assert jit_kernels.BINARY_OPS == tuple(n for n, e in E.items() if e.family == "binary")
    assert jit_kernels.REDUCE_OPS == tuple(n for n, r in R.items() if r.public)
    assert jit_kernels.ARG_REDUCE_OPS == ("argmax", "argmin")
    assert set(jit_kernels.UNARY_OPS) >= {"exp", "clamp", "logical_not"}
    assert "norm" in jit_kernels.REDUCE_OPS and "sqdev" not in jit_kernels.REDUCE_OPS
    assert optable.ONE_PASS == {n for n, r in R.items() if r.public and r.center is None}
    assert optable.NOT_FAST == {"clamp", "logical_not"}
    assert optable.FLOAT_RESULT <= set(jit_kernels.UNARY_OPS)
    assert set(optable.ROW_REDUCTIONS) <= set(optable.ROW_OPS)
    for e in E.values():
        assert e.family in ("unary", "binary", "internal")
        assert e.family != "binary" or e.nargs == 2
    for r in R.values():
        if r.center is not None:   # a two-pass reduction names kernel reductions of the table
            assert R[r.center].spec is not None and R[r.kernel].spec is not None
        else:
            assert r.spec is not None
        assert r.acc in ("wide", "input", "f64")


_NAME = re.compile(r"\b([A-Z][A-Z0-9_]+)\(")


def _dialect_names(src):
    return set(_NAME.findall(src))


def test_every_body_parses_for_every_kind_it_claims():
    allowed = set(optable.MATH_FUNCS) | {"FMAX_NAN", "FMIN_NAN"}
    for name, e in optable.ELEMENTWISE.items():
        assert e.bodies and set(e.bodies) <= {"f", "i", "b"}, name
        assert "i" in e.bodies, name                 # (every op takes integers)
        xs = ", ".join(f"x{i}" for i in range(e.nargs))
        for kind, body in e.bodies.items():
            assert _dialect_names(body) <= allowed, (name, kind)
            ast.parse(f"def f({xs}):\n    {body}\n")
            src = ew._body(name, kind)          # rendered for cpu: every sm.* call exists
            for fn in re.findall(r"sm\.(\w+)\(", src):
                assert hasattr(sm, fn), (name, kind, fn)
            used = set(re.findall(r"\bx(\d)\b", body))
            assert used <= {str(i) for i in range(e.nargs)}, (name, kind)
    for name, r in optable.REDUCTIONS.items():
        if r.spec is None:
            continue
        assert set(r.spec) == {"f", "i", "b"}, name
        for acc in (F32, F64, I32, I64, B):
            init, step, comb, fin = optable.reduction_spec(name, acc)
            for piece in (init, step, comb, fin):
                assert _dialect_names(piece) <= allowed, (name, piece)
            for expr in (init, step, comb):
                ast.parse(f"def g(a, b, v, c):\n    return {expr}\n")
            ast.parse(f"def fin(a, fa, c):\n    {fin}\n")


def _call_cpu(name, e, x):
    if "f" not in e.bodies:                          # integer-only ops
        xi = np.array([-3, 1, 2], np.int64)
        if e.family == "unary":
            return K.unary(name, xi, I64, {})
        return K.binary(name, xi, np.array([1, 2, 70], np.int64), I64, I64)
    if e.family == "unary":
        attrs = {"min": -1.0, "max": 1.0} if name == "clamp" else {}
        return K.unary(name, x, B if e.result == "bool" else F32, attrs)
    if e.family == "binary":
        return K.binary(name, x, x[::-1].copy(), F32, B if e.result == "bool" else F32)
    if name == "where":
        return ew.run(name, [x > 0, x, 0.5], (B, F32, F32), F32)
    return ew.run(name, [x] + [0.25] * (e.nargs - 1), (F32,) * e.nargs, F32)


def test_the_cpu_set_implements_every_table_op():
    x = np.array([-1.5, 0.5, 2.0], np.float32)
    for name, e in optable.ELEMENTWISE.items():
        got = _call_cpu(name, e, x)
        assert got.shape == (3,), name
    for name, r in optable.REDUCTIONS.items():
        if r.public:
            got = K.reduce(name, x.reshape(1, 3), (1,), False, F32, {"ddof": 0})
            assert got.shape == (1,), name
    for name in optable.ARG_REDUCE_OPS:
        assert K.arg_reduce(name, x, 0, False) == (2 if name == "argmax" else 0)


def test_result_dtype_rules():
    rd = optable.result_dtype
    assert rd("lt", (F32, F32)) == B
    assert rd("where", (B, I32, I32)) == I32
    assert rd("exp", (I32,)) == F64 and rd("exp", (F32,)) == F32
    assert rd("pow", (I32, I32)) == I64 and rd("pow", (F32, F32)) == F32
    assert rd("add", (I32, I32)) == I32
    with pytest.raises(ValueError, match="unknown elementwise op 'nope'"):
        rd("nope", (F32,))


# -- norm: one table entry ----------------------------------------------------------------------

def _ref_norm(x, axes):
    return np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axes))


def test_norm_against_numpy():
    rng = np.random.default_rng(3)
    x = (rng.random((4, 5, 6)) * 4 - 2).astype(np.float32)
    for axes in [(0,), (2,), (0, 2), (0, 1, 2)]:
        got = K.reduce("norm", x, axes, False, F32, {})
        assert got.dtype == F32
        np.testing.assert_allclose(got, _ref_norm(x, axes), rtol=2e-6)
    got = K.reduce("norm", x.transpose(2, 0, 1)[::-1], (1,), True, F32, {})
    np.testing.assert_allclose(got, np.expand_dims(_ref_norm(x.transpose(2, 0, 1)[::-1], (1,)), 1),
                               rtol=2e-6)
    big = rng.random((300, 200)).astype(np.float32)      # parallel kernels
    np.testing.assert_allclose(K.reduce("norm", big, (0, 1), False, F32, {}), _ref_norm(big, None),
                               rtol=1e-6)
    np.testing.assert_allclose(K.reduce("norm", big, (0,), False, F32, {}), _ref_norm(big, 0),
                               rtol=1e-6)
    xi = rng.integers(-5, 6, size=(3, 4)).astype(np.int32)   # int: reduced as for mean
    np.testing.assert_allclose(K.reduce("norm", xi, (1,), False, F32, {}), _ref_norm(xi, 1),
                               rtol=1e-6)
    xb = rng.random((3, 4)) < 0.5
    np.testing.assert_allclose(K.reduce("norm", xb, (0,), False, F32, {}), _ref_norm(xb, 0),
                               rtol=1e-6)
    e = K.reduce("norm", np.zeros((0, 3), np.float32), (0,), False, F32, {})
    assert e.dtype == F32 and (e == 0).all() and e.shape == (3,)


def test_norm_needs_only_its_table_entry():
    """No kernel-set module names ``norm``: the table entry is its only op-specific code."""
    import pathlib
    root = pathlib.Path(jit_kernels.__file__).parent
    hits = [str(p.relative_to(root)) for p in root.rglob("*.py")
            if p.name != "optable.py" and re.search(r"\bnorm\b", p.read_text())]
    assert hits == []


def test_importing_the_table_compiles_nothing():
    code = ("import sys, jit_kernels.optable, jit_kernels._layout, jit_kernels._source, "
            "jit_kernels._fusegen; "
            "assert 'numba' not in sys.modules, sorted(m for m in sys.modules if 'numba' in m)")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- bounded caches ------------------------------------------------------------------------------

def test_fused_outputs_reuse_the_caching_allocators_blocks():
    """A fused output comes from the caching allocator: a dropped one's block serves the next
    output of its size class (a fresh large mapping page-faults on every write; an eager SGD
    update of a 256 x 784 weight did each step), a held one is never handed out again, and
    ``empty_cache`` frees what is pooled."""
    from jit_kernels.cpu import _pool, fused
    for n in (_pool.POOL_MIN_BYTES // 4 + 1000, 3 * _pool.POOL_MIN_BYTES):
        first = fused._empty((n,), F32)
        address = first.__array_interface__["data"][0]
        del first
        again = fused._empty((n,), F32)
        assert again.__array_interface__["data"][0] == address
        assert again.shape == (n,) and again.dtype == F32 and again.flags.c_contiguous
        held = fused._empty((n,), F32)                  # ``again`` is alive: another block
        assert held.__array_interface__["data"][0] != address
        again[:] = 1
        held[:] = 2
        assert again[0] == 1 and held[-1] == 2
        del again, held
        assert K.empty_cache() >= 2 * n * 4
        assert _pool.stats()["pooled"] == 0


def _mm_prog(k):
    from runtime.capture.fuse import FusedInput, FusedOp, FusedProgram
    ins = (FusedInput((2, 3), "float32"), FusedInput((3, 4), "float32"))
    ops = (FusedOp("matmul", (("in", 0), ("in", 1)), "float32", "float32"),
           FusedOp("add", (("op", 0), ("sc", 0)), "float32", "float32"))
    return FusedProgram("matmul", (2, 4), ins, ((float(k), "float32"),), ops, (1,), ((2, 4),))


def test_epilogue_cache_is_an_lru(monkeypatch):
    from jit_kernels._fusegen import Epilogue
    monkeypatch.setattr(Epilogue, "_CACHE", type(Epilogue._CACHE)())
    monkeypatch.setattr(Epilogue, "CACHE_MAX", 4)
    first = Epilogue.of(_mm_prog(0))
    assert Epilogue.of(_mm_prog(0)) is first
    for k in range(1, 4):
        Epilogue.of(_mm_prog(k))
    Epilogue.of(_mm_prog(0))                 # used again: now the most recent
    for k in range(4, 7):
        Epilogue.of(_mm_prog(k))
    assert len(Epilogue._CACHE) == 4
    assert _mm_prog(0) in Epilogue._CACHE and _mm_prog(1) not in Epilogue._CACHE
    epi = Epilogue.of(_mm_prog(9))
    assert epi.prog.kind == "elementwise" and epi.prog.ops[0].args == (("in", 0), ("sc", 0))
