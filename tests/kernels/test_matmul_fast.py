"""Tests for the cpu matmul kernel (``jit_kernels.cpu.matmul.matmul``): packed float gemm and the
blocked path (ints, small products).

Protocol: ``matmul(a, b)`` with a ``(B, M, K)``, b ``(B, K, N)`` (either batch dim may be 1 or a
stride-0 broadcast), any strides; result ``(B, M, N)`` C-contiguous.  Float results are checked
against a float64 reference, with an error bound tied to NumPy's own float32/float64 error on the
same product; integer results must equal NumPy's exactly (wrapping).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from jit_kernels.cpu import matmul as mm

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HSET = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
DTYPES = [np.float32, np.float64, np.int32, np.int64]
LAYOUTS = ["c", "t", "step", "neg"]


@pytest.fixture(scope="module", autouse=True)
def _gemm_compiled():
    """These tests are of the packed gemm: wait for it rather than let the blocked kernel stand
    in while a background build runs (``matmul._gemm_now``)."""
    mm.warmup()


def _operand(rng, batch, rows, cols, dtype, layout, bcast):
    """A (batch, rows, cols) operand in the given memory layout (always a view, never a copy)."""
    nb = 1 if bcast else batch
    if np.issubdtype(dtype, np.integer):
        full = rng.integers(-5, 6, size=(nb, rows, cols))
    else:
        full = rng.uniform(-1, 1, size=(nb, rows, cols))
    full = full.astype(dtype)
    if layout == "c":
        x = full
    elif layout == "t":
        x = np.ascontiguousarray(full.transpose(0, 2, 1)).transpose(0, 2, 1)
    elif layout == "step":
        big = np.zeros((nb, 2 * rows, 3 * cols), dtype)
        big[:, ::2, ::3] = full
        x = big[:, ::2, ::3]
    else:  # negative strides on both matrix dims
        big = np.ascontiguousarray(full[:, ::-1, ::-1])
        x = big[:, ::-1, ::-1]
    assert np.array_equal(x, full)
    if bcast and batch > 1:
        x = np.broadcast_to(x, (batch, rows, cols))
        assert x.strides[0] == 0
    return x


def _stand_in(a, b):
    """``matmul(a, b)`` by the blocked kernel that serves while the packed gemm builds."""
    orig = mm._gemm_now
    mm._gemm_now = lambda dt, driver: None
    try:
        return mm.matmul(a, b)
    finally:
        mm._gemm_now = orig


def _check(a, b, dtype):
    got = mm.matmul(a, b)
    Bo = max(a.shape[0], b.shape[0])
    M, N = a.shape[1], b.shape[2]
    assert got.shape == (Bo, M, N) and got.dtype == np.dtype(dtype)
    assert got.flags.c_contiguous
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, np.matmul(a, b))
        return
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if dtype == np.float64:
        ref = np.matmul(a.astype(np.longdouble), b.astype(np.longdouble))
    np_res = np.matmul(a, b)
    err = np.abs(got - ref).max() if got.size else 0.0
    np_err = np.abs(np_res - ref).max() if got.size else 0.0
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)).max() if got.size else 0
    eps = np.finfo(dtype).eps
    # No worse than NumPy's own error (x2 for the luck of the draw), plus a few ulp of the scale:
    # NumPy's error depends on the OpenBLAS kernel this CPU gets (its small-N kernels split K
    # over SIMD lanes), ours is one in-order FMA chain; 4 eps covers that on any host, and a
    # dropped or doubled term is still far outside it.
    assert err <= 2.0 * np_err + 4 * eps * scale, (err, np_err, scale)


@HSET
@given(M=st.integers(1, 300), N=st.integers(1, 300), K=st.integers(1, 300),
       dtype=st.sampled_from(DTYPES), la=st.sampled_from(LAYOUTS), lb=st.sampled_from(LAYOUTS),
       batch=st.sampled_from([1, 1, 2, 3]), bc=st.sampled_from(["none", "a", "b", "a1", "b1"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_matmul_hypothesis(M, N, K, dtype, la, lb, batch, bc, seed):
    rng = np.random.default_rng(seed)
    # "a"/"b": that operand's batch dim is a stride-0 broadcast; "a1"/"b1": it has batch 1.
    a = _operand(rng, batch, M, K, dtype, la, bc == "a")
    b = _operand(rng, batch, K, N, dtype, lb, bc == "b")
    if bc == "a1":
        a = a[:1]
    if bc == "b1":
        b = b[:1]
    _check(a, b, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (8, 8, 8), (7, 33, 5), (8, 32, 256), (64, 1024, 257),
                                   (65, 97, 513), (300, 1, 300), (1, 300, 300), (129, 70, 1100)])
def test_matmul_shapes(dtype, M, N, K):
    rng = np.random.default_rng(M * 1000 + N + K)
    _check(_operand(rng, 1, M, K, dtype, "c", False), _operand(rng, 1, K, N, dtype, "c", False),
           dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch,M,N,K", [(4, 40, 50, 60), (3, 200, 130, 90), (2, 300, 64, 64)])
@pytest.mark.parametrize("bc", ["a", "b"])
def test_matmul_batched_paths(dtype, batch, M, N, K, bc):
    """Batch-parallel and row-panel-parallel drivers, with a stride-0 operand on either side."""
    rng = np.random.default_rng(batch + M)
    _check(_operand(rng, batch, M, K, dtype, "t", bc == "a"),
           _operand(rng, batch, K, N, dtype, "step", bc == "b"), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 3, 0, 4), (2, 5, 0, 1), (1, 200, 0, 300)])
def test_matmul_k0(dtype, shape):
    B, M, K, N = shape
    got = mm.matmul(np.ones((B, M, K), dtype), np.ones((B, K, N), dtype))
    assert got.shape == (B, M, N) and got.dtype == np.dtype(dtype)
    assert np.all(got == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_empty(dtype):
    assert mm.matmul(np.ones((2, 0, 3), dtype), np.ones((2, 3, 4), dtype)).shape == (2, 0, 4)
    assert mm.matmul(np.ones((1, 5, 3), dtype), np.ones((1, 3, 0), dtype)).shape == (1, 5, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_accuracy_long_k(dtype):
    """Long K: the error (K-ordered FMA sums per KC block) stays within NumPy's own."""
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, (1, 48, 20000)).astype(dtype)
    b = rng.uniform(0, 1, (1, 20000, 40)).astype(dtype)
    ref = np.matmul(a.astype(np.longdouble if dtype == np.float64 else np.float64),
                    b.astype(np.longdouble if dtype == np.float64 else np.float64))
    err = float(np.abs(mm.matmul(a, b) - ref).max())
    np_err = float(np.abs(np.matmul(a, b) - ref).max())
    # + 4 eps of the scale: NumPy's error depends on OpenBLAS's K blocking for this CPU
    assert err <= 1.5 * np_err + 4 * np.finfo(dtype).eps * float(np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_nonfinite(dtype):
    a = np.ones((1, 70, 40), dtype)
    b = np.ones((1, 40, 90), dtype)
    a[0, 3, 5] = np.nan
    b[0, 7, 11] = np.inf
    got = mm.matmul(a, b)
    want = np.matmul(a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def test_int_wraps():
    a = np.full((1, 40, 40), 2 ** 20, np.int32)
    np.testing.assert_array_equal(mm.matmul(a, a), np.matmul(a, a))


def test_unaligned_input():
    buf = np.zeros(4 * 100 * 100 + 1, np.uint8)
    a = np.frombuffer(buf.data, dtype=np.float32, count=100 * 100, offset=1).reshape(1, 100, 100)
    assert not a.flags.aligned
    b = np.random.default_rng(0).uniform(-1, 1, (1, 100, 100)).astype(np.float32)
    np.testing.assert_allclose(mm.matmul(a, b), np.zeros((1, 100, 100), np.float32))


def test_gemm_kernels_vectorised_in_fresh_process():
    """A fresh process loads (or compiles) drivers that call the explicit vector micro-kernel
    (``_simd``): one ``noinline`` function of ``<lanes x T>`` multiply-adds per module, with
    the lane count of the host's gemm tile (``gemm_config``), never a scalar loop.
    Cached code cannot be disassembled, so this reads the optimised IR Numba keeps next to it
    (the module the machine code was emitted from)."""
    code = textwrap.dedent("""
        import re, numpy as np
        from jit_kernels.cpu import matmul as mm
        mm.warmup()
        for dt, ty in ((np.float32, "float"), (np.float64, "double")):
            mr, nr = mm.gemm_config(np.dtype(dt))[:2]
            m = mm._GEMM[np.dtype(dt)]
            tile = f"jk_tile_{np.dtype(dt).name}_{mr}x2x{nr // 2}_packed_packed_chained"
            for f in (m.gemm_serial, m.gemm_batch, m.gemm_rows):
                ir = str(f.overloads[f.signatures[0]].library._get_module_for_linking())
                body = ir[re.search(r"define [^\\n]*@" + tile + r"\\(", ir).start():]
                body = body[:body.index("\\n}")]
                assert re.search(r"call [^\\n]*@" + tile + r"\\(", ir), f.__name__
                n = len(re.findall(r"fmul contract <" + str(nr // 2) + " x " + ty + ">", body))
                assert n >= mr * 2, (f.__name__, ty, n)
                assert not re.search(r"fmul[^\\n]* " + ty + " ", body), "a scalar multiply"
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_import_compiles_nothing():
    code = textwrap.dedent("""
        import jit_kernels.cpu.matmul as mm
        assert not mm._GEMM
        for f in (mm._mm_serial, mm._mm_par):
            assert not f.signatures
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


@HSET
@given(M=st.integers(4, 150), N=st.integers(1, 150), K=st.sampled_from([1, 7, 64, 511, 512, 513, 1100]),
       dtype=st.sampled_from([np.float32, np.float64]), la=st.sampled_from(LAYOUTS),
       lb=st.sampled_from(LAYOUTS), batch=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_stand_in_kernel_gives_the_gemms_bits(M, N, K, dtype, la, lb, batch, seed):
    """While the packed gemm builds in the background the blocked kernel serves float products
    (``matmul._gemm_now`` returns None): it sums in the gemm's order, so the switch between them
    changes no bit (K around KC = 512, edge tiles, strided and negative layouts, batches)."""
    rng = np.random.default_rng(seed)
    a = _operand(rng, batch, M, K, dtype, la, False)
    b = _operand(rng, batch, K, N, dtype, lb, False)
    assume(M * N * K >= mm.GEMM_MIN)  # below it both go to _mm_small
    np.testing.assert_array_equal(_stand_in(a, b), mm.matmul(a, b))


@pytest.mark.parametrize("M, N, K, batch", [(256, 10, 128, 1), (37, 16, 300, 1), (64, 1, 512, 3),
                                            (1000, 7, 200, 2), (16, 8, 512, 1), (3000, 5, 100, 1)])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrow_products_give_the_full_tiles_bits(M, N, K, batch, la, dtype):
    """Products at most one vector wide (N <= NR/2, K <= KC) take the narrow drivers (A read in
    place, a partial last panel packed; parallel past GEMM_PAR_MIN): the same sums in the same
    order as the full-tile gemm, so the same bits (strided and negative A layouts, batches)."""
    MR, NR = mm.gemm_config(np.dtype(dtype))[:2]
    N = min(N, NR // 2)
    # N follows the host's vector width (NR): each case stays at or past GEMM_MIN, below which
    # matmul takes _mm_small, on ymm (float64 N = 4) and zmm hosts alike
    assert batch * M * N * K >= mm.GEMM_MIN, (M, N, K, batch)
    rng = np.random.default_rng(M * N + K)
    a = _operand(rng, batch, M, K, dtype, la, False)
    b = _operand(rng, batch, K, N, dtype, "c", batch > 1 and M % 2 == 0)
    seen = []
    orig = mm._gemm_now
    mm._gemm_now = lambda dt, driver: seen.append(driver) or orig(dt, driver)
    try:
        got = mm.matmul(a, b)
    finally:
        mm._gemm_now = orig
    big = batch * M * N * K >= mm.GEMM_PAR_MIN
    assert seen == ["gemm_narrow_par" if big else "gemm_narrow"]
    mod = mm._driver(np.dtype(dtype), "gemm_serial")
    out = np.empty_like(got)
    want = mm._gemm(mod.gemm_serial, 0, a, b, out, batch, M, N, K)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b), rtol=0,
                               atol=1e-5 * np.sqrt(K) if dtype == np.float32 else 1e-12 * K)


@pytest.mark.parametrize("M, K, N", [(32, 256, 1024), (8, 1100, 300), (70, 600, 2100), (5, 513, 4500)])
@pytest.mark.parametrize("lb", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fixed_right_operand_is_packed_once_with_the_same_bits(M, K, N, lb, dtype):
    """``prepared_rhs(m, b)`` packs b whole on its first parallel product and reads the packed
    form afterwards (several KC blocks of K, NC blocks of N and edge slivers here): every
    call gives ``matmul``'s bits, for new left operands, and b is no longer read."""
    rng = np.random.default_rng(M + K + N)
    b = _operand(rng, 1, K, N, dtype, lb, False)[0]
    seen = []
    orig = mm._gemm_now
    mm._gemm_now = lambda dt, driver: seen.append(driver) or orig(dt, driver)
    try:
        fix = mm.prepared_rhs(M, b)
        for i in range(3):
            a = _operand(rng, 1, M, K, dtype, LAYOUTS[i], False)[0]
            got = fix(a)
            np.testing.assert_array_equal(got, mm.matmul(a[None], b[None])[0])
    finally:
        mm._gemm_now = orig
    plan = mm._plan_gemm(np.dtype(dtype), 1, M, N, K)[0]   # gemm_rows unless single-threaded
    assert fix.__name__ == ("mm_packed" if plan == "gemm_rows" else "mm_b")
    assert seen[0] == plan, seen
    if plan == "gemm_rows" and lb == "c":   # read from the packed form only: b's values no longer matter
        want = fix(a)
        b[...] = np.nan
        np.testing.assert_array_equal(fix(a), want)


def test_a_fixed_right_operand_too_small_to_pack_is_the_plain_product():
    """Below the parallel gemm (or on integers) ``prepared_rhs`` is the plain product."""
    rng = np.random.default_rng(1)
    for dt, (M, K, N) in [(np.float32, (4, 16, 16)), (np.float32, (2, 300, 300)),
                          (np.int64, (64, 64, 64))]:
        a = rng.integers(-3, 4, (M, K)).astype(dt)
        b = rng.integers(-3, 4, (K, N)).astype(dt)
        fix = mm.prepared_rhs(M, b)
        assert fix.__name__ == "mm_b"
        np.testing.assert_array_equal(fix(a), mm.matmul(a[None], b[None])[0])


@pytest.mark.parametrize("M, K, N", [(150, 100, 40), (16, 33, 70), (130, 600, 24)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_transposed_left_operand_packs_to_the_same_bits(M, K, N, dtype):
    """A left operand whose columns are contiguous (a transposed view) is packed in runs of k
    steps for every full sliver, then its tail sliver: the blocked stand-in's bits (full and
    partial runs, a tail sliver, K past KC)."""
    rng = np.random.default_rng(M + K)
    a = _operand(rng, 1, M, K, dtype, "t", False)
    b = _operand(rng, 1, K, N, dtype, "c", False)
    fast = mm.matmul(a, b)
    np.testing.assert_array_equal(_stand_in(a, b), fast)
    np.testing.assert_array_equal(fast, mm.matmul(np.ascontiguousarray(a), b))
