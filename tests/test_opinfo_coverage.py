"""tests/opinfo.py covers the catalogue: every op has a row or a reason; rows are well-formed;
every dtype a row rejects raises DTypeError naming the op (no kernel is compiled for these);
the rows no per-area file sweeps (matmul, composites) match NumPy for their first dtype."""
import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import check_grad
from opinfo import NOT_IN_TABLE, OPS, VARIANTS, all_rows, rows
from oracle import assert_close
from runtime.ops.catalogue import CATALOGUE


def _catalogue_ops():
    # user ops (rt.custom_op, family "custom") are registered by other tests at run time
    return {name for name, s in CATALOGUE.items() if s.family != "custom"}


def test_every_catalogue_op_has_a_row_or_a_reason():
    missing = sorted(_catalogue_ops() - set(OPS) - set(NOT_IN_TABLE))
    assert not missing, (f"catalogue ops with neither a row in tests/opinfo.py OPS nor an entry "
                         f"in NOT_IN_TABLE: {missing}")
    both = sorted(set(OPS) & set(NOT_IN_TABLE))
    assert not both, f"in both OPS and NOT_IN_TABLE: {both}"
    stale = sorted((set(OPS) | set(NOT_IN_TABLE)) - set(CATALOGUE))
    assert not stale, f"rows or reasons for ops the catalogue does not have: {stale}"
    assert all(isinstance(why, str) and why for why in NOT_IN_TABLE.values())


def test_rows_are_well_formed():
    for key, r in OPS.items():
        assert r.name == key == r.op, r
    for key, r in VARIANTS.items():
        assert r.name == key and key not in CATALOGUE and r.op in OPS, r
    for r in all_rows():
        assert callable(r.fn) and r.ref is not None, r
        assert not set(r.dtypes) & set(r.rejects), r
        assert set(r.devices) <= {"cpu", "cuda"} and "cpu" in r.devices, r
        for dt in r.dtypes:
            out = r.out(dt)
            if out.is_float:
                assert out in r.tol and out in r.tol_cuda, (r, out)
        if r.grad is not None:
            assert CATALOGUE[r.op].differentiable, r
        spec = CATALOGUE[r.op]
        if r.family in ("unary", "binary", "reduce", "arg_reduce", "softmax"):
            assert spec.family == r.family or (r.op == "clamp" and spec.family == "unary"), r


@pytest.mark.parametrize("info,dtype", [pytest.param(r, dt, id=f"{r.name}-{dt.name}")
                                        for r in all_rows() for dt in r.rejects])
def test_rejected_dtypes_raise(info, dtype):
    args = [rt.tensor(np.array([1, 0]).astype(dtype.np)) for _ in range(info.arity)]
    with pytest.raises(rt.DTypeError, match=info.op):
        info.fn(*args)


@pytest.mark.parametrize("info", rows("linalg", "linear", "loss", "ternary", "activation"), ids=lambda r: r.name)
def test_rows_swept_nowhere_else(info, rng):
    dtype = info.dtypes[0]                   # one dtype: test_matmul.py sweeps matmul's dtypes
    xs = info.inputs(None, dtype, rng)
    got = info.fn(*[rt.tensor(a) for a in xs])
    assert_close(got, info.reference(*xs), info.out(dtype), tol=info.tol)
    if info.grad is not None:
        check_grad(info.differentiate, *info.grad([np.shape(a) for a in xs], rng))
