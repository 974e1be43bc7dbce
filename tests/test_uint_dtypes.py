"""The wide unsigned dtypes: uint32 and uint64.

Promotion against ``torch.result_type`` (and the documented rule for the pairs PyTorch
refuses), Python-int range checks, creation and interop round trips (NumPy, DLPack with torch,
pickle, safetensors, graph files, ONNX), arithmetic that wraps as NumPy's does, comparisons,
max/min, argmax and sorting across 2**63 for uint64, sums as PyTorch gives them, and the typed
errors for what uint64 cannot compute exactly.  Shapes are tiny and the kernels the int64 ones
both dtypes compute in.
"""
import pickle
import re

import numpy as np
import pytest

import runtime as rt
from oracle import onnx_run, torch_or_skip
from runtime import dtypes as D

U = [rt.uint32, rt.uint64]
NP = {rt.uint32: np.uint32, rt.uint64: np.uint64}
OTHERS = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_, rt.float16, rt.bfloat16,
          rt.int8, rt.uint8, rt.int16]
TOP = 1 << 63
MAX64 = (1 << 64) - 1
#: values near the edges: around 2**31/2**32 for uint32, 2**63/2**64 for uint64
EDGE = {rt.uint32: [0, 1, 7, (1 << 31) - 1, 1 << 31, (1 << 32) - 2, (1 << 32) - 1],
        rt.uint64: [0, 1, 7, TOP - 1, TOP, TOP + 5, MAX64 - 1, MAX64]}


def _tdt(torch, dt):
    return getattr(torch, "bool" if dt is rt.bool_ else dt.name)


def _pair(dt):
    """Two arrays of ``dt`` whose elementwise pairs cross every edge both ways."""
    v = np.array(EDGE[dt], NP[dt])
    return v, v[::-1].copy()


# ------------------------------------------------------------------ objects and promotion
def test_dtype_objects():
    for dt in U:
        assert D.as_dtype(dt.name) is dt and rt.dtypes.as_dtype(NP[dt]) is dt
        assert dt == NP[dt] and dt == dt.name and repr(dt) == f"rt.{dt.name}"
        assert dt.compute is rt.int64 and dt.emulated and not dt.signed and dt.is_int
        assert dt.np == NP[dt] and pickle.loads(pickle.dumps(dt)) is dt
    assert rt.uint32.itemsize == 4 and rt.uint64.itemsize == 8


def test_promotion_matches_torch_where_torch_promotes():
    torch = torch_or_skip()
    compared = 0
    for a in U:
        for b in U + OTHERS:
            for x, y in ((a, b), (b, a)):
                try:
                    want = torch.result_type(torch.zeros(1, dtype=_tdt(torch, x)),
                                             torch.zeros(1, dtype=_tdt(torch, y)))
                except RuntimeError:
                    continue                # a pair PyTorch refuses: the table below
                assert _tdt(torch, D.promote(x, y)) == want, (x, y)
                compared += 1
    assert compared == 2 * (2 + 4 * 2)      # itself and the four floats, both orders
    for a in U:
        for s in (1, 2.5, True):
            want = torch.result_type(torch.zeros(1, dtype=_tdt(torch, a)), s)
            assert _tdt(torch, D.result_type(rt.zeros(1, dtype=a), s)) == want, (a, s)


def test_promotion_of_the_pairs_torch_refuses():
    torch = torch_or_skip()
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not"):
        torch.result_type(torch.zeros(1, dtype=torch.uint32), torch.zeros(1, dtype=torch.int32))
    want = {(rt.uint32, rt.bool_): rt.uint32, (rt.uint32, rt.uint8): rt.uint32,
            (rt.uint32, rt.int8): rt.int64, (rt.uint32, rt.int16): rt.int64,
            (rt.uint32, rt.int32): rt.int64, (rt.uint32, rt.int64): rt.int64,
            (rt.uint32, rt.uint64): rt.uint64, (rt.uint64, rt.bool_): rt.uint64,
            (rt.uint64, rt.uint8): rt.uint64}
    for (a, b), dt in want.items():
        assert D.promote(a, b) is dt and D.promote(b, a) is dt, (a, b)
        # NumPy agrees wherever it gives an integer
        assert np.result_type(a.np, b.np) == dt.np, (a, b)
        x = rt.tensor([1, 2], dtype=a) + rt.tensor([3, 4], dtype=b)
        assert x.dtype is dt and x.tolist() == [4, 6] if b is not rt.bool_ else x.dtype is dt
    for s in (rt.int8, rt.int16, rt.int32, rt.int64):
        msg = (f"add: no integer dtype holds both uint64 and {s.name} (PyTorch refuses the "
               f"pair, NumPy rounds to float64); cast one operand first")
        with pytest.raises(rt.DTypeError, match=re.escape(msg)):
            rt.zeros(2, dtype=rt.uint64) + rt.zeros(2, dtype=s)
    with pytest.raises(rt.DTypeError, match=re.escape(
            "cat: no integer dtype holds both int64 and uint64 (PyTorch refuses the pair, NumPy "
            "rounds to float64); cast one operand first")):
        rt.cat([rt.zeros(2, dtype=rt.int64), rt.zeros(2, dtype=rt.uint64)])
    with pytest.raises(rt.DTypeError, match=re.escape("matmul: no integer dtype holds both")):
        rt.zeros((2, 2), dtype=rt.uint64) @ rt.zeros((2, 2), dtype=rt.int32)


def test_python_ints_must_fit():
    for dt, bad in ((rt.uint32, -1), (rt.uint32, 1 << 32), (rt.uint64, -1), (rt.uint64, 1 << 64)):
        t = rt.zeros(2, dtype=dt)
        # the same op with an int that fits first: a cached decision must not let the next
        # one through
        assert (t + 1).tolist() == [1, 1] and (t * 1).tolist() == [0, 0]
        msg = f"Python integer {bad} is out of bounds for {dt.name}"
        with pytest.raises(rt.DTypeError, match=re.escape(f"add: {msg}")):
            t + bad
        with pytest.raises(rt.DTypeError, match=re.escape(f"mul: {msg}")):
            t * bad
        with pytest.raises(rt.DTypeError, match=re.escape(f"tensor: {msg}")):
            rt.tensor([bad], dtype=dt)
        with pytest.raises(rt.DTypeError, match=re.escape(f"full: {msg}")):
            rt.full((2,), bad, dtype=dt)
    u8 = rt.zeros(2, dtype=rt.uint8)
    assert (u8 + 1).tolist() == [1, 1]
    with pytest.raises(rt.DTypeError, match=re.escape("add: Python integer -1 is out of bounds "
                                                      "for uint8")):
        u8 + (-1)
    # comparisons with an int outside the range: exact for uint32 (in int64), refused for uint64
    assert (rt.tensor([0, 5], dtype=rt.uint32) > -1).tolist() == [True, True]
    with pytest.raises(rt.DTypeError, match=re.escape("gt: Python integer -1 is out of bounds "
                                                      "for uint64")):
        rt.gt(rt.tensor([0, 5], dtype=rt.uint64), -1)
    with pytest.raises(rt.DTypeError, match=re.escape("eq: Python integer -1 is out of bounds "
                                                      "for uint64")):
        rt.eq(rt.tensor([MAX64], dtype=rt.uint64), -1)


# ------------------------------------------------------------------ creation and interop
def test_creation():
    for dt in U:
        hi = EDGE[dt][-1]
        t = rt.tensor([0, 7, hi], dtype=dt)
        assert t.dtype is dt and t.tolist() == [0, 7, hi] and t[2].item() == hi
        assert t.numpy().dtype == NP[dt] and t.numpy().tolist() == [0, 7, hi]
        assert rt.tensor(np.array([1, hi], NP[dt])).dtype is dt
        assert rt.zeros(2, dtype=dt).tolist() == [0, 0] and rt.ones(2, dtype=dt).dtype is dt
        assert rt.full((2,), hi, dtype=dt).tolist() == [hi, hi]
        assert rt.arange(3, dtype=dt).tolist() == [0, 1, 2]
        r = rt.randint(0, 10, (16,), dtype=dt)
        assert r.dtype is dt and all(0 <= v < 10 for v in r.tolist())
        assert f"dtype={dt.name}" in repr(t) and str(hi) in repr(t)
    assert rt.tensor([[TOP, 1]], dtype=rt.uint64).tolist() == [[TOP, 1]]
    with pytest.raises(rt.DTypeError, match=re.escape("tensor: Python integer 4294967296 is out of "
                                                      "bounds for uint32")):
        rt.tensor([1 << 32], dtype=rt.uint32)


def test_casts_wrap_from_ints_and_saturate_from_floats():
    ints = rt.tensor([-1, 5, (1 << 32) + 3])
    assert ints.astype(rt.uint32).tolist() == np.array([-1, 5, (1 << 32) + 3]).astype(np.uint32).tolist()
    assert ints.astype(rt.uint64).tolist() == [MAX64, 5, (1 << 32) + 3]
    assert rt.tensor([MAX64, TOP], dtype=rt.uint64).astype(rt.int64).tolist() == [-1, -TOP]
    f = rt.tensor([-1.5, 3.7, 1e30, float("nan"), float("inf")], dtype=rt.float64)
    assert f.astype(rt.uint32).tolist() == [0, 3, (1 << 32) - 1, 0, (1 << 32) - 1]
    assert f.astype(rt.uint64).tolist() == [0, 3, MAX64, 0, MAX64]
    assert rt.tensor([4294967040.0]).astype(rt.uint32).tolist() == [4294967040]   # float32
    big = rt.tensor([TOP + 4096, MAX64], dtype=rt.uint64)
    assert big.double().tolist() == [float(TOP + 4096), 2.0 ** 64]       # the values, not bits
    assert rt.tensor([(1 << 32) - 1], dtype=rt.uint32).double().tolist() == [4294967295.0]


def test_dlpack_pickle_and_torch_round_trips():
    torch = torch_or_skip()
    for dt in U:
        t = rt.tensor(EDGE[dt], dtype=dt)
        assert np.from_dlpack(t).tolist() == EDGE[dt]
        tt = torch.from_dlpack(t)
        assert tt.dtype == _tdt(torch, dt) and tt.tolist() == EDGE[dt]
        back = rt.from_dlpack(torch.tensor([3, 1], dtype=_tdt(torch, dt)))
        assert back.dtype is dt and back.tolist() == [3, 1]
        p = pickle.loads(pickle.dumps(t))
        assert p.dtype is dt and p.tolist() == EDGE[dt]


def test_checkpoint_round_trip(tmp_path):
    pytest.importorskip("safetensors")
    sd = {"a": rt.tensor(EDGE[rt.uint32], dtype=rt.uint32),
          "b": rt.tensor(EDGE[rt.uint64], dtype=rt.uint64)}
    path = tmp_path / "u.safetensors"
    rt.save(sd, path)
    back = rt.load(path)
    for k in sd:
        assert back[k].dtype is sd[k].dtype and back[k].tolist() == sd[k].tolist()
    from safetensors import safe_open
    with safe_open(str(path), framework="numpy") as f:
        assert {k: f.get_slice(k).get_dtype() for k in f.keys()} == {"a": "U32", "b": "U64"}
    torch = torch_or_skip()
    from safetensors.torch import load_file
    tt = load_file(str(path))
    assert tt["b"].dtype == torch.uint64 and tt["b"].tolist() == EDGE[rt.uint64]


def test_graph_runs_compiles_saves_and_exports(tmp_path):
    for dt in U:
        x0 = np.array(EDGE[dt], NP[dt])
        cap = rt.CaptureDevice()
        with cap.capture_scope() as s:
            x = rt.tensor(x0, device=s.device)
            y = x * 3 + 7 - x
            z = x.double() / 2
            w = x == 7
            s.complete(inputs=[x], outputs=[y, z, w])
        g = s.graph
        assert g.tensor(g.outputs[0]).dtype is dt
        with np.errstate(over="ignore"):
            ey = x0 * NP[dt](3) + NP[dt](7) - x0
        ez, ew = x0.astype(np.float64) / 2, x0 == 7
        g.save(tmp_path / "g.rtg")
        g2 = rt.load_graph(tmp_path / "g.rtg")
        for run in (g.run, g.compile(rt.cpu()), g2.run):
            ry, rz, rw = run(x0)
            assert ry.dtype is dt and ry.numpy().tolist() == ey.tolist()
            assert rz.numpy().tolist() == ez.tolist() and rw.numpy().tolist() == ew.tolist()
        oy, oz, ow = onnx_run(g, tmp_path / f"{dt.name}.onnx", x0)
        assert oy.dtype == NP[dt] and oy.tolist() == ey.tolist()
        assert oz.tolist() == ez.tolist() and ow.tolist() == ew.tolist()


def test_onnx_refuses_uint64_comparisons(tmp_path):
    pytest.importorskip("onnx", reason="onnx is not installed (pip install '.[onnx]')")
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        x = rt.tensor(np.array([1, TOP], np.uint64), device=s.device)
        s.complete(inputs=[x], outputs=[x > 4])
    from runtime.capture.onnx import OnnxExportError
    with pytest.raises(OnnxExportError, match=re.escape(
            "graph.to_onnx: gt on uint64 (operands uint64) has no ONNX lowering (the runtime "
            "computes uint64 in int64); cast to int64 or float64 first")):
        s.graph.to_onnx(tmp_path / "g.onnx")


# ------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("dt", U, ids=lambda d: d.name)
def test_arithmetic_wraps_as_numpy(dt):
    a, b = _pair(dt)
    ta, tb = rt.tensor(a), rt.tensor(b)
    with np.errstate(over="ignore"):
        cases = [(ta + tb, a + b), (ta - tb, a - b), (tb - ta, b - a), (ta * tb, a * b),
                 (-ta, (NP[dt](0) - a)), (ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b),
                 (~ta, ~a), (ta << 3, a << NP[dt](3)), (ta + 5, a + NP[dt](5)),
                 (ta * (EDGE[dt][-1]), a * NP[dt](EDGE[dt][-1]))]
    for got, want in cases:
        assert got.dtype is dt and got.numpy().tolist() == want.tolist()
    # b > a wraps to 2**bits + a - b
    bits = 8 * a.itemsize
    assert (rt.tensor([3], dtype=dt) - rt.tensor([5], dtype=dt)).tolist() == [(1 << bits) - 2]


@pytest.mark.parametrize("dt", U, ids=lambda d: d.name)
def test_comparisons_max_min_and_sorting_across_the_top_bit(dt):
    a, b = _pair(dt)
    ta, tb = rt.tensor(a), rt.tensor(b)
    for got, want in ((ta < tb, a < b), (ta <= tb, a <= b), (ta > tb, a > b), (ta >= tb, a >= b),
                      (ta == tb, a == b), (ta != tb, a != b),
                      (rt.maximum(ta, tb), np.maximum(a, b)), (rt.minimum(ta, tb), np.minimum(a, b)),
                      (ta > EDGE[dt][4], a > EDGE[dt][4]),
                      (rt.where(ta > tb, ta, tb), np.where(a > b, a, b))):
        assert got.numpy().dtype == want.dtype and got.numpy().tolist() == want.tolist()
    perm = np.array([3, 6, 0, 5, 1, 4, 2] + ([7] if a.size > 7 else []))
    x, tx = a[perm], rt.tensor(a[perm])
    assert tx.max().item() == x.max() and tx.min().item() == x.min()
    assert tx.argmax().item() == x.argmax() and tx.argmin().item() == x.argmin()
    assert rt.sort(tx)[0].tolist() == np.sort(x).tolist()
    assert rt.argsort(tx).tolist() == np.argsort(x, kind="stable").tolist()
    assert rt.topk(tx, 2)[0].tolist() == np.sort(x)[::-1][:2].tolist()
    m = tx.reshape(2, -1) if x.size % 2 == 0 else tx[1:].reshape(2, -1)
    xm = x.reshape(2, -1) if x.size % 2 == 0 else x[1:].reshape(2, -1)
    assert m.max(axis=1).tolist() == xm.max(axis=1).tolist()


def test_uint32_division_remainder_and_shifts_as_numpy():
    a, b = _pair(rt.uint32)
    b = np.where(b == 0, np.uint32(3), b)
    ta, tb = rt.tensor(a), rt.tensor(b)
    for got, want in ((ta // tb, a // b), (ta % tb, a % b), (ta >> 3, a >> np.uint32(3)),
                      (ta / tb, (a.astype(np.float64) / b).astype(np.float32))):
        assert got.numpy().dtype == want.dtype and got.numpy().tolist() == want.tolist()


def test_sums_follow_pytorch():
    torch = torch_or_skip()
    for dt in U:
        t = rt.tensor(EDGE[dt][:5], dtype=dt)
        tt = torch.tensor(EDGE[dt][:5], dtype=_tdt(torch, dt))
        for got, want in ((t.sum(), tt.sum()), (t.cumsum(0), tt.cumsum(0)),
                          (t[1:4].prod(), tt[1:4].prod())):
            assert got.dtype is rt.int64 and want.dtype == torch.int64
            assert got.tolist() == want.tolist()
        assert (t * t).tolist() == (tt * tt).tolist()
        assert (t & 6).tolist() == (tt & 6).tolist()
        assert rt.sort(t)[0].tolist() == torch.sort(tt)[0].tolist()
        assert (t / 3).tolist() == (tt / 3).tolist()
    big = rt.tensor([TOP, 5], dtype=rt.uint64)
    assert big.sum().tolist() == -TOP + 5                       # PyTorch's int64 bits
    assert big.sum(dtype=rt.uint64).tolist() == TOP + 5
    assert big.mean().tolist() == np.float32(np.array([TOP, 5], np.uint64).mean())


@pytest.mark.parametrize("op, fn", [
    ("floor_divide", lambda x: x // x), ("remainder", lambda x: x % 3),
    ("right_shift", lambda x: x >> 1), ("abs", lambda x: abs(x)),
    ("clamp", lambda x: x.clamp(1, 5))])
def test_uint64_refuses_what_int64_cannot_compute(op, fn):
    x = rt.tensor([1, TOP], dtype=rt.uint64)
    names = "uint64, uint64" if op == "floor_divide" else "uint64"
    msg = (f"{op}: not supported for uint64 (operands {names}): the runtime computes uint64 in "
           f"int64, exact only for + - *, bitwise ops, comparisons, max/min, sorting, sums and "
           f"moves; cast to int64 or float64 first")
    with pytest.raises(rt.DTypeError, match=re.escape(msg)):
        fn(x)


def test_uint64_index_tensors_are_refused_and_uint32_ones_index():
    x = rt.tensor([10.0, 20.0, 30.0])
    assert x[rt.tensor([2, 0], dtype=rt.uint32)].tolist() == [30.0, 10.0]
    with pytest.raises(rt.DTypeError, match=re.escape(
            "take: uint64 index tensors are not supported (the runtime indexes in int64); cast "
            "the indices to int64 first")):
        x[rt.tensor([2, 0], dtype=rt.uint64)]
    v = rt.tensor([5, TOP + 1, 7], dtype=rt.uint64)
    assert v[rt.tensor([1, 2])].tolist() == [TOP + 1, 7] and v[1:].tolist() == [TOP + 1, 7]


def test_uint64_rounding_and_float_checks_are_exact():
    torch = torch_or_skip()
    vals = EDGE[rt.uint64]
    u, tu = rt.tensor(vals, dtype=rt.uint64), torch.tensor(vals, dtype=torch.uint64)
    for f in ("floor", "ceil", "trunc"):
        got = getattr(rt, f)(u)
        assert got.dtype is rt.uint64 and got.tolist() == getattr(torch, f)(tu).tolist() == vals
    a = np.array(vals, np.uint64)
    assert rt.isfinite(u).tolist() == np.isfinite(a).tolist()
    assert rt.isnan(u).tolist() == rt.isinf(u).tolist() == np.isnan(a).tolist()
    assert rt.exp(rt.tensor([TOP, 1], dtype=rt.uint64)).tolist()[1] == np.float32(np.e)



#: op: (moves_only, uint64, uint64_float, uint64_index) of its record, then its way computed in
#: float32 and in int64: representative records of each way
U64_RECORDS = {
    "add": (False, "modular", False, False, "float", "modular"),
    "bitwise_not": (False, "modular", False, False, "float", "modular"),
    "cumsum": (False, "modular", False, False, "modular", "modular"),
    "isnan": (False, "modular", False, False, "float", "modular"),
    "reshape": (True, "modular", False, False, "modular", "modular"),
    "take": (True, "modular", False, True, "modular", "modular"),
    "scatter_add": (False, "modular", False, True, "modular", "modular"),
    "where": (False, "modular", True, False, "float", "modular"),
    "lt": (False, "order", False, False, "float", "order"),
    "argsort": (False, "order", False, False, "order", "order"),
    "linear": (False, None, True, False, "float", "refuse"),
    "logcumsumexp": (False, None, True, False, "float", "refuse"),
    "floor_divide": (False, None, False, False, "float", "refuse"),
    "cumargmax": (False, None, False, False, "refuse", "refuse"),
    "scatter_reduce": (False, None, False, False, "refuse", "refuse")}


@pytest.mark.parametrize("op", U64_RECORDS)
def test_uint64_handling_is_on_the_op_record(op):
    from runtime.core.registry import CATALOGUE, Meta, Plan
    from runtime.lowprec import uint64_way
    spec, want = CATALOGUE[op], U64_RECORDS[op]
    assert (spec.moves_only, spec.uint64, spec.uint64_float, spec.uint64_index) == want[:4]
    value, index = Meta((2,), D.uint64), Meta((2,), D.int64)
    for compute, way in ((D.float32, want[4]), (D.int64, want[5])):
        plan = Plan((2,), D.uint64, compute)
        assert uint64_way(spec, (value, index), plan) == way
        # a uint64 second operand: refused where it is an index tensor
        assert uint64_way(spec, (value, value), plan) == ("index" if want[3] else way)
