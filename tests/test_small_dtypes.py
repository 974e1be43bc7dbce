"""The small dtypes: float16, bfloat16, int8, uint8, int16.

Storage and casts (exact against NumPy, and a bfloat16 reference written here with integer bit
operations), promotion against ``torch.result_type`` over every pair, a handful of elementwise
ops, reductions and matmul per dtype (computed in float32/int32 and rounded once, as PyTorch
does), checkpoints through safetensors, capture/replay/compile/save/ONNX of a float16 graph,
and gradient dtypes.  Shapes are tiny and the ops few: the kernels these tests compile are the
float32/int32/int64 ones the runtime upcasts to.
"""
import math
import struct

import numpy as np
import pytest

import runtime as rt
from oracle import onnx_run, torch_or_skip
from runtime import dtypes as D

SMALL = [rt.float16, rt.bfloat16, rt.int8, rt.uint8, rt.int16]
ALL = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_] + SMALL
NP_INT = {rt.int8: np.int8, rt.uint8: np.uint8, rt.int16: np.int16, rt.int32: np.int32,
          rt.int64: np.int64}


def _tdt(torch, dt):
    return getattr(torch, "bool" if dt is rt.bool_ else dt.name)


# ------------------------------------------------------------------ a bfloat16 reference
def _bf16_ref(x: float) -> int:
    """bfloat16 bits of float32 ``x`` by integer arithmetic on its IEEE bits (round half to
    even on the 16 dropped bits; NaN: any NaN pattern)."""
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return -1
    hi, lo = u >> 16, u & 0xFFFF
    if lo > 0x8000 or (lo == 0x8000 and hi & 1):
        hi += 1
    return hi & 0xFFFF


def _bits(t) -> np.ndarray:
    """The uint16 storage of a half tensor (the runtime's representation)."""
    return t.device.to_host(t)


def _f32_samples(rng, n=3000):
    """float32 values with every kind of rounding case: random bits, exact ties, subnormals,
    the float16 overflow boundary, zeros, infinities, NaN."""
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 2**16, 200, dtype=np.uint32) << 16) | np.uint32(0x8000)
    h = np.arange(0, 0x7C00, 97, dtype=np.uint16).view(np.float16).astype(np.float32)
    h16_ties = (h.view(np.uint32) + np.uint32(0x1000))      # halfway between float16 values
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 6e-8,
                        3e-8, 2.9802322e-08, 1e-45, 3.4028235e38, -3.4028235e38], np.float32)
    return np.concatenate([bits.view(np.float32), ties.view(np.float32), h,
                           h16_ties.view(np.float32), special])


# ------------------------------------------------------------------ storage and casts
def test_dtype_objects_and_names():
    for dt in SMALL:
        assert D.as_dtype(dt.name) is dt and str(dt) == dt.name and dt.emulated
    assert rt.float16.np == np.uint16 and rt.float16 == np.float16 and rt.float16 == "float16"
    assert rt.float16.compute is rt.float32 and rt.int8.compute is rt.int32
    assert rt.half is rt.float16 and not rt.float32.emulated
    with pytest.raises(rt.DTypeError, match="unsupported NumPy dtype uint16"):
        rt.tensor(np.zeros(2, np.uint16))


def test_float16_casts_round_exactly_as_numpy(rng):
    x32 = _f32_samples(rng)
    t = rt.tensor(x32).astype(rt.float16)
    with np.errstate(all="ignore"):
        want = x32.astype(np.float16)
    got = t.numpy()
    assert got.dtype == np.float16 and t.dtype is rt.float16
    nan = np.isnan(want)
    assert np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    assert np.isnan(got[nan]).all()
    # float64 rounds once (NumPy's), not through float32
    x64 = np.array([1 + 2**-11 + 2**-40, 1 + 2**-11, 65519.99999, 1e-300, -2.0**-25 * 1.5])
    assert np.array_equal(rt.tensor(x64, dtype=rt.float64).half().numpy().view(np.uint16),
                          x64.astype(np.float16).view(np.uint16))
    assert np.array_equal(rt.tensor(x64, dtype=rt.float16).numpy(), x64.astype(np.float16))
    # back to every dtype: exact widening, saturating narrowing (cast semantics)
    h = np.array([1.5, -2.75, 65504, -65504, np.inf, -np.inf, np.nan, 300.0, -0.0], np.float16)
    th = rt.from_numpy(h)
    assert th.dtype is rt.float16
    assert np.array_equal(th.float().numpy(), h.astype(np.float32), equal_nan=True)
    assert th.astype(rt.int8).tolist() == [1, -2, 127, -128, 127, -128, 0, 127, 0]
    assert th.astype(rt.uint8).tolist() == [1, 0, 255, 0, 255, 0, 0, 255, 0]
    assert th.bool().tolist() == [True] * 8 + [False]


def test_bfloat16_round_trip_and_rounding_against_a_bit_reference(rng):
    x = _f32_samples(rng)
    t = rt.tensor(x).astype(rt.bfloat16)
    got = _bits(t)
    want = np.array([_bf16_ref(float(v)) for v in x], np.int64)
    nan = want < 0
    assert np.array_equal(got[~nan].astype(np.int64), want[~nan])
    back = t.float().numpy()
    assert np.isnan(back[nan]).all()
    # bfloat16 -> float32 is exact: every bit pattern survives a round trip
    allbits = np.arange(0, 2**16, 7, dtype=np.uint32).astype(np.uint16)
    f = (allbits.astype(np.uint32) << 16).view(np.float32)
    ok = ~np.isnan(f)
    t2 = rt.tensor(f[ok]).bfloat16()
    assert np.array_equal(_bits(t2), allbits[ok])
    assert np.array_equal(t2.float().numpy(), f[ok])
    assert rt.tensor([1.0, 3.14159], dtype=rt.bfloat16).tolist() == [1.0, 3.140625]
    torch = torch_or_skip()
    tb = torch.from_numpy(x[~nan]).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got[~nan], tb)


def test_small_int_casts_wrap_from_ints_and_saturate_from_floats():
    big = rt.tensor([300, -129, 65535, 40000, -1])
    for dt, np_dt in ((rt.int8, np.int8), (rt.uint8, np.uint8), (rt.int16, np.int16)):
        assert big.astype(dt).tolist() == np.array([300, -129, 65535, 40000, -1]).astype(np_dt).tolist()
        info = np.iinfo(np_dt)
        f = rt.tensor([1e9, -1e9, float("nan"), 2.9, -2.9]).astype(dt)
        assert f.dtype is dt
        assert f.tolist() == [info.max, info.min, 0, 2, 0 if info.min == 0 else -2]
    u = rt.tensor([0, 128, 255], dtype=rt.uint8)
    assert u.astype(rt.int8).tolist() == [0, -128, -1] and u.float().tolist() == [0.0, 128.0, 255.0]
    assert rt.tensor([1, 0, 2]).bool().byte().tolist() == [1, 0, 1]
    assert rt.tensor([2.5, -3.5]).char().dtype is rt.int8 and rt.ones(2).short().dtype is rt.int16
    assert rt.ones(2).to(rt.bfloat16).dtype is rt.bfloat16
    assert rt.ones(2).to("cpu", dtype=rt.float16).tolist() == [1.0, 1.0]


def test_python_ints_that_do_not_fit_raise():
    for dt, bad in ((rt.int8, 128), (rt.int8, -129), (rt.uint8, -1), (rt.uint8, 256),
                    (rt.int16, 40000)):
        t = rt.zeros(2, dtype=dt)
        with pytest.raises(rt.DTypeError, match=f"add: Python integer {bad} is out of bounds for {dt.name}"):
            t + bad
        with pytest.raises(rt.DTypeError, match=f"out of bounds for {dt.name}"):
            rt.tensor([bad], dtype=dt)
        with pytest.raises(rt.DTypeError, match=f"out of bounds for {dt.name}"):
            rt.full((2,), bad, dtype=dt)


def test_numpy_interop():
    h = np.array([[0.5, -1.25]], np.float16)
    t = rt.from_numpy(h)
    assert t.dtype is rt.float16
    assert np.array_equal(t.numpy(), h) and t.numpy().dtype == np.float16
    assert np.asarray(t).dtype == np.float16 and t[0, 1].item() == -1.25
    for np_dt, dt in ((np.int8, rt.int8), (np.uint8, rt.uint8), (np.int16, rt.int16)):
        a = np.array([1, 2, 3], np_dt)
        assert rt.tensor(a).dtype is dt and rt.tensor(a).numpy().dtype == np_dt
    b = rt.tensor([1.0, -2.0], dtype=rt.bfloat16)
    assert b.tolist() == [1.0, -2.0] and "bfloat16" in repr(b)


def test_bfloat16_numpy_without_ml_dtypes(monkeypatch):
    b = rt.tensor([1.0, -2.0], dtype=rt.bfloat16)
    monkeypatch.setattr(D, "bfloat16_host", lambda: None)
    with pytest.raises(rt.DTypeError, match=r"numpy: NumPy has no bfloat16 dtype; call \.float\(\) first"):
        b.numpy()
    assert b.tolist() == [1.0, -2.0] and b.float().numpy().tolist() == [1.0, -2.0]
    assert "1., -2." in repr(b)


def test_bfloat16_numpy_with_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    a = rt.tensor([1.5, 3.0], dtype=rt.bfloat16).numpy()
    assert a.dtype == ml.bfloat16 and a.astype(np.float32).tolist() == [1.5, 3.0]
    assert rt.tensor(a).dtype is rt.bfloat16


# ------------------------------------------------------------------ promotion
def test_promotion_matches_torch_result_type_over_all_pairs():
    torch = torch_or_skip()
    for a in ALL:
        for b in ALL:
            want = torch.result_type(torch.zeros(1, dtype=_tdt(torch, a)),
                                     torch.zeros(1, dtype=_tdt(torch, b)))
            assert _tdt(torch, D.promote(a, b)) == want, (a, b)


def test_promotion_with_python_scalars_matchestorch_or_skip():
    torch = torch_or_skip()
    for a in ALL:
        ta = torch.zeros(1, dtype=_tdt(torch, a))
        for s in (1, 2.5, True):
            want = torch.result_type(ta, s)
            assert _tdt(torch, D.result_type(rt.zeros(1, dtype=a), s)) == want, (a, s)


def test_promotion_examples_from_the_issue():
    z = rt.zeros
    assert (z(2, dtype=rt.uint8) + z(2, dtype=rt.int8)).dtype is rt.int16
    assert (z(2, dtype=rt.float16) + z(2, dtype=rt.bfloat16)).dtype is rt.float32
    assert (z(2, dtype=rt.int64) + z(2, dtype=rt.float16)).dtype is rt.float16
    assert (z(2, dtype=rt.float16) + 1.5).dtype is rt.float16
    assert (z(2, dtype=rt.bool_) + z(2, dtype=rt.uint8)).dtype is rt.uint8
    assert (z(2, dtype=rt.int8) / 2).dtype is rt.float32


# ------------------------------------------------------------------ compute
def _h(x):
    return np.asarray(x, np.float32).astype(np.float16)


def test_half_elementwise_computes_in_float32_and_rounds_once(rng):
    a32 = rng.uniform(-3, 3, (3, 5)).astype(np.float32)
    b32 = rng.uniform(0.5, 3, (3, 5)).astype(np.float32)
    for dt in (rt.float16, rt.bfloat16):
        a, b = rt.tensor(a32).astype(dt), rt.tensor(b32).astype(dt)
        af, bf = a.float().numpy(), b.float().numpy()       # the rounded inputs, exactly
        def r(v, dt=dt):       # rounded to dt, as float32
            return rt.tensor(np.asarray(v, np.float32)).astype(dt).float().numpy()

        for got, ref in ((a + b, af + bf), (a * b, af * bf), (a / b, af / bf), (-a, -af),
                         (rt.exp(a), np.exp(af.astype(np.float64))),
                         (rt.maximum(a, b), np.maximum(af, bf)), (a * 2.5 + 1, r(af * 2.5) + 1)):
            assert got.dtype is dt
            want = _bits(rt.tensor(np.asarray(ref, np.float32)).astype(dt))
            # one rounding of a float32 result: equal bits, but exp's float32 may differ by 1 ulp
            d = np.abs(_bits(got).astype(np.int64) - want.astype(np.int64))
            assert d.max() <= 1
        c = a < b
        assert c.dtype is rt.bool_ and c.numpy().tolist() == (af < bf).tolist()
    h = rt.tensor([60000.0, 1.0], dtype=rt.float16)
    assert (h * 2).numpy().tolist() == [np.inf, 2.0]                # overflow to inf


def test_small_int_arithmetic_wraps_liketorch_or_skip():
    torch = torch_or_skip()
    vals = {rt.int8: [127, -128, 100, -7, 3, 0], rt.uint8: [255, 0, 200, 7, 3, 128],
            rt.int16: [32767, -32768, 20000, -7, 3, 0]}
    for dt, v in vals.items():
        x, tx = rt.tensor(v, dtype=dt), torch.tensor(v, dtype=_tdt(torch, dt))
        y, ty = rt.tensor(v[::-1], dtype=dt), torch.tensor(v[::-1], dtype=_tdt(torch, dt))
        for got, want in ((x + y, tx + ty), (x * y, tx * ty), (-x, -tx), (~x, ~tx),
                          (x >> 2, tx >> 2), (x << 3, tx << 3), (x < y, tx < ty)):
            assert _tdt(torch, got.dtype) == want.dtype, (dt, got.dtype, want.dtype)
            assert got.tolist() == want.tolist(), (dt, got.tolist(), want.tolist())
        nz = [w if w != 0 else 1 for w in v[::-1]]
        d, td = rt.tensor(nz, dtype=dt), torch.tensor(nz, dtype=_tdt(torch, dt))
        assert (x // d).tolist() == torch.floor_divide(tx, td).tolist()
        assert (x % d).tolist() == torch.remainder(tx, td).tolist()


def test_reductions(rng):
    # float16 sums accumulate in float32 (or wider): 3000 ones stay exact where a float16
    # accumulator would stop at 2048
    h = rt.ones(3000, dtype=rt.float16)
    assert h.sum().dtype is rt.float16 and h.sum().item() == 3000.0
    x32 = rng.uniform(-2, 2, (4, 6)).astype(np.float32)
    for dt in (rt.float16, rt.bfloat16):
        x = rt.tensor(x32).astype(dt)
        xf = x.float().numpy().astype(np.float64)
        for got, ref in ((x.sum(axis=1), xf.sum(1)), (x.max(axis=0), xf.max(0))):
            assert got.dtype is dt
            want = _bits(rt.tensor(np.asarray(ref, np.float32)).astype(dt))
            assert np.abs(_bits(got).astype(np.int64) - want.astype(np.int64)).max() <= 1
    # sums of the small ints promote to int64 (PyTorch)
    for dt in (rt.int8, rt.uint8, rt.int16):
        t = rt.tensor([100, 100, 100, 1], dtype=dt)
        assert t.sum().dtype is rt.int64 and t.sum().item() == 301


def test_matmul_accumulates_in_float32_and_rounds(rng):
    a32 = rng.uniform(-1, 1, (2, 3, 40)).astype(np.float32)
    b32 = rng.uniform(-1, 1, (40, 5)).astype(np.float32)
    for dt in (rt.float16, rt.bfloat16):
        a, b = rt.tensor(a32).astype(dt), rt.tensor(b32).astype(dt)
        c = a @ b
        assert c.dtype is dt and c.shape == (2, 3, 5)
        ref = a.float().numpy().astype(np.float64) @ b.float().numpy().astype(np.float64)
        want = _bits(rt.tensor(ref.astype(np.float32)).astype(dt))
        assert np.abs(_bits(c).astype(np.int64) - want.astype(np.int64)).max() <= 1
    i = rt.tensor([[1, 2], [3, 4]], dtype=rt.int8)
    assert (i @ i).dtype is rt.int8 and (i @ i).tolist() == [[7, 10], [15, 22]]
    torch = torch_or_skip()
    ta = torch.from_numpy(a32).half()
    tb = torch.from_numpy(b32).half()
    ours = (rt.tensor(a32).half() @ rt.tensor(b32).half()).float().numpy()
    assert np.abs(ours - (ta @ tb).float().numpy()).max() <= 2e-3


def test_gradients_come_back_in_the_input_dtype():
    ad = rt.autodiff(rt.cpu())
    x0 = np.array([0.5, -1.0, 2.0], np.float32)
    w0 = np.array([1.0, 0.25, -0.5], np.float32)
    for dt in (rt.float16, rt.bfloat16):
        x = rt.tensor(x0).astype(dt).to(ad).require_grad()
        w = rt.tensor(w0).astype(dt).to(ad).require_grad()
        loss = (x * w * x).sum()
        assert loss.dtype is dt
        g = loss.backward()
        gx, gw = x.grad(g), w.grad(g)
        assert gx.dtype is dt and gw.dtype is dt and gx.shape == (3,)
        assert gx.float().tolist() == (2 * x0 * w0).tolist()      # exact in both dtypes
        assert gw.float().tolist() == (x0 * x0).tolist()
    with pytest.raises(rt.DTypeError, match="only float tensors can require gradients"):
        rt.tensor([1], dtype=rt.int8, device=ad).require_grad()


# ------------------------------------------------------------------ checkpoints, capture
def test_checkpoint_round_trip_of_half_and_8_bit_tensors(tmp_path):
    pytest.importorskip("safetensors")
    sd = {"h": rt.tensor([[1.5, -2.25], [6e-5, 65504.0]], dtype=rt.float16),
          "b": rt.tensor([3.14159, -1e30, 0.0], dtype=rt.bfloat16),
          "q": rt.tensor([-128, 0, 127], dtype=rt.int8), "u": rt.tensor([0, 255], dtype=rt.uint8),
          "s": rt.tensor([-32768, 7], dtype=rt.int16), "step": 3}
    p = tmp_path / "m.safetensors"
    rt.save(sd, p)
    back = rt.load(p)
    assert back["step"] == 3
    for k in ("h", "b", "q", "u", "s"):
        assert back[k].dtype is sd[k].dtype and back[k].shape == sd[k].shape
        assert np.array_equal(_bits(back[k]), _bits(sd[k]))
    from safetensors import safe_open
    with safe_open(str(p), framework="numpy") as f:
        codes = {k: f.get_slice(k).get_dtype() for k in f.keys()}
    assert codes == {"h": "F16", "b": "BF16", "q": "I8", "u": "U8", "s": "I16"}
    torch = torch_or_skip()
    from safetensors.torch import load_file
    tt = load_file(str(p))
    assert tt["b"].dtype == torch.bfloat16 and tt["b"].float().tolist() == back["b"].tolist()
    assert tt["h"].dtype == torch.float16 and tt["h"].float().numpy().tolist() == back["h"].tolist()


def test_float16_graph_captures_replays_compiles_saves_and_exports(tmp_path):
    x0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float16)
    w0 = np.array([[1.0, 0.5], [-0.5, 0.25], [0.125, 2.0]], np.float16)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        x = rt.tensor(x0, device=s.device)
        w = rt.from_numpy(w0).to(s.device)
        y = rt.relu(x @ w) * 2 + 1
        z = (x.astype(rt.int8) + 3).sum(axis=0)
        s.complete(inputs=[x], outputs=[y, z])
    g = s.graph
    assert g.tensor(g.outputs[0]).dtype is rt.float16
    eager = rt.relu(rt.tensor(x0) @ rt.tensor(w0)) * 2 + 1
    ez = (rt.tensor(x0).astype(rt.int8) + 3).sum(axis=0)
    for run in (lambda v: g.run(v), lambda v: g.run(rt.tensor(v)), g.compile(rt.cpu())):
        ry, rz = run(x0)
        assert ry.dtype is rt.float16 and np.array_equal(_bits(ry), _bits(eager))
        assert rz.dtype is rt.int64 and rz.tolist() == ez.tolist()
    path = tmp_path / "g.rtg"
    g.save(path)
    g2 = rt.load_graph(path)
    assert g2 == g.canonical()
    assert np.array_equal(_bits(g2.run(x0)[0]), _bits(eager))
    oy, oz = onnx_run(g, tmp_path / "g.onnx", x0)
    assert oy.dtype == np.float16 and oz.tolist() == ez.tolist()
    assert np.abs(oy.astype(np.float32) - eager.float().numpy()).max() <= 1e-3


def test_pickle_of_small_dtype_tensors():
    import pickle
    for dt in (rt.float16, rt.bfloat16, rt.int8):
        t = rt.tensor([1.0, -2.0], dtype=dt)
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is dt and np.array_equal(_bits(u) if dt.is_half else u.numpy(),
                                                _bits(t) if dt.is_half else t.numpy())


def test_large_values_and_nan_in_half_math():
    h = rt.tensor([float("nan"), 1.0, -math.inf], dtype=rt.float16)
    assert np.isnan(rt.maximum(h, 0.0).float().numpy()[0])
    assert rt.relu(h).float().numpy().tolist()[1:] == [1.0, 0.0]


def test_dlpack_of_float16_and_the_bfloat16_refusal():
    h = rt.tensor([0.5, -1.5], dtype=rt.float16)
    a = np.from_dlpack(h)
    assert a.dtype == np.float16 and a.tolist() == [0.5, -1.5]
    assert rt.from_dlpack(a).dtype is rt.float16
    with pytest.raises(rt.DTypeError, match=r"__dlpack__: a bfloat16 tensor on cpu cannot be "
                                            r"exported yet; call \.float\(\) first"):
        rt.tensor([1.0], dtype=rt.bfloat16).__dlpack__()


def test_load_graph_checks_the_half_types_names(tmp_path):
    import hashlib
    import json

    from runtime.capture.serialize import MAGIC
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        x = rt.tensor(np.ones(2, np.float16), device=s.device)
        s.complete(inputs=[], outputs=[x * 2])
    p = tmp_path / "g.rtg"
    s.graph.save(p)
    raw = p.read_bytes()
    n = struct.unpack("<Q", raw[len(MAGIC):len(MAGIC) + 8])[0]
    header = json.loads(raw[len(MAGIC) + 8:len(MAGIC) + 8 + n])
    body = raw[len(MAGIC) + 8 + n:-32]
    for name, why in (("bfloat16", "value 1 is stored as bfloat16 for a float16 tensor"),
                      ("float8", "unsupported dtype 'float8'")):
        header["values"][0]["dtype"] = name
        text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        data = MAGIC + struct.pack("<Q", len(text)) + text + body
        p.write_bytes(data + hashlib.sha256(data).digest())
        with pytest.raises(rt.GraphFileError, match=why):
            rt.load_graph(p)


def test_without_ml_dtypes_uint16_is_refused_and_floats_round_into_bfloat16():
    """Without ml_dtypes bfloat16 has no NumPy dtype: its uint16 storage must not claim NumPy's
    uint16 (a uint16 array became a bfloat16 tensor of raw bits), and float64 values must not
    pass for bfloat16 ones (``np.dtype(...) == None`` is a float64 test).  A fresh process with
    the import blocked, as in an install without the onnx extra."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import numpy as np, runtime as rt\n"
            "assert rt.bfloat16.host is None\n"
            "try:\n"
            "    rt.tensor(np.zeros(2, np.uint16)); print('accepted')\n"
            "except rt.DTypeError as e:\n"
            "    print('refused', 'uint16' in str(e))\n"
            "print(rt.tensor(np.array([1.0, 3.14159]), dtype=rt.bfloat16).tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["refused True", "[1.0, 3.140625]"]


# ------------------------------------------------------------------ native small-int kernels
@pytest.mark.parametrize("dt, op", [(rt.int8, "add"), (rt.int8, "neg"), (rt.int16, "lt"),
                                    (rt.uint8, "left_shift")])
def test_large_small_int_elementwise_runs_natively_with_the_cast_bits(dt, op, monkeypatch):
    """From ``lowprec.NATIVE_MIN`` elements, unary/binary ops on the small ints run their kernel
    on the storage (no cast passes: ``cast`` is made to fail) and give the upcast path's bits:
    int32 arithmetic truncated to the dtype, as NumPy's int32 result ``astype`` it."""
    from runtime import lowprec
    from runtime.ops import elementwise as E
    npd = NP_INT[dt]
    info = np.iinfo(npd)
    rng = np.random.default_rng(7)
    n = lowprec.NATIVE_MIN + 3
    a = rng.integers(info.min, info.max, n, endpoint=True).astype(npd)
    b = rng.integers(0 if op == "left_shift" else info.min, 9 if op == "left_shift" else info.max, n,
                     endpoint=True).astype(npd)
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    want = {"add": a32 + b32, "neg": -a32, "sub": a32 - b32, "mul": a32 * b32,
            "lt": a32 < b32, "left_shift": a32 << b32}[op]
    want = want if op == "lt" else want.astype(npd)
    x, y = rt.tensor(a), rt.tensor(b)

    def no_cast(*args, **kwargs):
        raise AssertionError("a cast pass ran")
    monkeypatch.setattr(E, "cast", no_cast)
    got = getattr(rt, op)(x) if op == "neg" else getattr(rt, op)(x, y)
    assert got.dtype is (rt.bool_ if op == "lt" else dt)
    np.testing.assert_array_equal(got.numpy(), want)
