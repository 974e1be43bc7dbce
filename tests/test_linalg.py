"""rt.linalg: forward against NumPy (float64 oracle) in float32 and float64 on batched stacks,
gradients by finite differences and against PyTorch, the typed errors and their messages,
capture replay and ONNX export of ``det``, and the cuda-less kernel set's DeviceError."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import assert_close, needs_torch, onnx_run, torch

L = rt.linalg
AD = rt.autodiff(rt.cpu())
FLOATS = [pytest.param(rt.float32, id="float32"), pytest.param(rt.float64, id="float64")]
TOL = {rt.float32: 2e-4, rt.float64: 1e-10}

RNG = np.random.default_rng(11)
A = RNG.standard_normal((2, 3, 3))                          # a batch of square matrices
B = RNG.standard_normal((2, 3, 2))
TALL = RNG.standard_normal((2, 4, 3))
WIDE = RNG.standard_normal((3, 5))
SPD = A @ A.transpose(0, 2, 1) + 3 * np.eye(3)              # symmetric positive-definite


def _t(a, dtype=rt.float64, device=None):
    return rt.tensor(np.asarray(a).astype(dtype.np), device=device)


def _close(got, want, dtype):
    assert got.dtype is dtype
    assert_close(got, want, dtype, tol=TOL[dtype])


def _sym(x):
    return x + rt.transpose(x, -1, -2)


# --------------------------------------------------------------------------- forward vs NumPy
@pytest.mark.parametrize("dtype", FLOATS)
def test_square_ops_match_numpy(dtype):
    a = _t(A, dtype)
    _close(L.inv(a), np.linalg.inv(A), dtype)
    _close(L.det(a), np.linalg.det(A), dtype)
    sign, logabs = L.slogdet(a)
    want_sign, want_log = np.linalg.slogdet(A)
    _close(sign, want_sign, dtype)
    _close(logabs, want_log, dtype)
    assert L.det(a).shape == (2,) and L.det(_t(A[0], dtype)).shape == ()
    _close(L.cholesky(_t(SPD, dtype)), np.linalg.cholesky(SPD), dtype)
    _close(L.cholesky(_t(SPD, dtype), upper=True),
           np.linalg.cholesky(SPD).transpose(0, 2, 1), dtype)
    # only one triangle is read: the lower one, or the upper one for upper=True (PyTorch's)
    junk = np.triu(np.full((3, 3), 100.0), 1)
    _close(L.cholesky(_t(np.tril(SPD) + junk, dtype)), np.linalg.cholesky(SPD), dtype)
    _close(L.cholesky(_t(np.triu(SPD) + junk.T, dtype), upper=True),
           np.linalg.cholesky(SPD).transpose(0, 2, 1), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_shapes_match_numpy(dtype):
    a, b = _t(A, dtype), _t(B, dtype)
    _close(L.solve(a, b), np.linalg.solve(A, B), dtype)
    # B with A's batch shape minus the last axis is a batch of vectors, as in PyTorch
    x = L.solve(a, _t(B[..., 0], dtype))
    assert x.shape == (2, 3)
    _close(x, np.linalg.solve(A, B[..., :1])[..., 0], dtype)
    _close(L.solve(_t(A[0], dtype), _t(B[0, :, 0], dtype)), np.linalg.solve(A[0], B[0, :, 0]),
           dtype)
    # broadcast batch dimensions; left=False solves X A = B
    _close(L.solve(_t(A[0], dtype), b), np.linalg.solve(A[0], B), dtype)
    bt = B.transpose(0, 2, 1)
    _close(L.solve(a, _t(bt, dtype), left=False),
           np.linalg.solve(A.transpose(0, 2, 1), B).transpose(0, 2, 1), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 5)], ids=["tall", "wide"])
def test_qr_and_svd_reconstruct(dtype, shape):
    m = RNG.standard_normal(shape)
    a = _t(m, dtype)
    k = min(shape[-2:])
    q, r = L.qr(a)
    assert q.shape == shape[:-2] + (shape[-2], k) and r.shape == shape[:-2] + (k, shape[-1])
    _close(q @ r, m, dtype)
    _close(rt.transpose(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype)
    _close(r, np.triu(r.numpy()), dtype)
    # LAPACK's Householder QR in NumPy and here: R equal, not only up to signs
    _close(r, np.linalg.qr(m)[1], dtype)
    qc, rc = L.qr(a, mode="complete")
    assert qc.shape[-2:] == (shape[-2], shape[-2]) and rc.shape[-2:] == shape[-2:]
    _close(qc @ rc, m, dtype)
    q0, r0 = L.qr(a, mode="r")
    assert q0.shape == (0,)
    _close(r0, r.numpy(), dtype)
    u, s, vh = L.svd(a)
    assert u.shape[-2:] == (shape[-2],) * 2 and vh.shape[-2:] == (shape[-1],) * 2
    _close(s, np.linalg.svd(m, compute_uv=False), dtype)
    _close(L.svdvals(a), np.linalg.svd(m, compute_uv=False), dtype)
    u, s, vh = L.svd(a, full_matrices=False)
    assert u.shape[-1] == k and vh.shape[-2] == k
    _close((u * rt.unsqueeze(s, -2)) @ vh, m, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh_matches_numpy(dtype):
    w, v = L.eigh(_t(SPD, dtype))
    _close(w, np.linalg.eigvalsh(SPD), dtype)
    _close((v * rt.unsqueeze(w, -2)) @ rt.transpose(v, -1, -2), SPD, dtype)
    # UPLO picks the triangle that is read: the other one may hold anything
    lower = np.tril(SPD) + np.triu(RNG.standard_normal((3, 3)), 1)
    _close(L.eigvalsh(_t(lower, dtype)), np.linalg.eigvalsh(SPD), dtype)
    _close(L.eigvalsh(_t(lower.transpose(0, 2, 1), dtype), UPLO="U"), np.linalg.eigvalsh(SPD),
           dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_norms_match_numpy(dtype):
    a = _t(A, dtype)
    for ord in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2):
        _close(L.matrix_norm(a, ord), np.linalg.norm(A, ord, axis=(-2, -1)), dtype)
    got = L.matrix_norm(a, 1, dim=(0, 2), keepdim=True)
    assert got.shape == (1, 3, 1)
    _close(got, np.linalg.norm(A, 1, axis=(0, 2), keepdims=True), dtype)
    _close(L.matrix_norm(_t(TALL, dtype), "nuc", dim=(2, 1)),
           np.linalg.norm(TALL, "nuc", axis=(2, 1)), dtype)
    for ord in (2, 1, math.inf, -math.inf, 0, 3):
        _close(L.vector_norm(a, ord), np.linalg.norm(A.ravel(), ord), dtype)
    _close(L.vector_norm(a, 2, dim=(1, 2), keepdim=True),
           np.sqrt((A * A).sum(axis=(1, 2), keepdims=True)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pinv_rank_lstsq_match_numpy(dtype):
    low_rank = TALL[..., :1] @ RNG.standard_normal((2, 1, 3))          # rank 1, (2, 4, 3)
    for m in (TALL, WIDE, low_rank):
        _close(L.pinv(_t(m, dtype)), np.linalg.pinv(m), dtype)
        assert L.matrix_rank(_t(m, dtype)).dtype is rt.int64
        np.testing.assert_array_equal(L.matrix_rank(_t(m, dtype)).numpy(),
                                      np.linalg.matrix_rank(m))
    _close(L.pinv(_t(SPD, dtype), hermitian=True), np.linalg.pinv(SPD), dtype)
    np.testing.assert_array_equal(L.matrix_rank(_t(A, dtype), atol=10.0).numpy(), [0, 0])
    rhs = RNG.standard_normal((4, 2))
    sol, res, rank, sv = L.lstsq(_t(TALL[0], dtype), _t(rhs, dtype))
    want = np.linalg.lstsq(TALL[0], rhs, rcond=None)
    _close(sol, want[0], dtype)
    _close(res, want[1], dtype)
    assert rank.dtype is rt.int64 and int(rank.numpy()) == want[2]
    _close(sv, want[3], dtype)
    sol, res, _, _ = L.lstsq(_t(WIDE, dtype), _t(rhs[:3, 0], dtype))
    assert sol.shape == (5,) and res.shape == (0,)
    _close(sol, np.linalg.lstsq(WIDE, rhs[:3, 0], rcond=None)[0], dtype)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=2), st.integers(1, 4), st.integers(1, 3),
       st.integers(0, 2**31 - 1))
def test_batched_shapes_match_numpy(batch, n, k, seed):
    # any batch shape (empty batches included): diagonally dominant, so well conditioned
    rng = np.random.default_rng(seed)
    batch = tuple(batch)
    m = rng.uniform(-1, 1, batch + (n, n)) + 2 * n * np.eye(n)
    # B as many-dimensional as A (never a stack of vectors), broadcast along batch[0]
    b = rng.uniform(-1, 1, ((1,) + batch[1:] if batch else ()) + (n, k))
    assert_close(L.inv(_t(m)), np.linalg.inv(m), rt.float64, tol=1e-10)
    assert_close(L.det(_t(m)), np.linalg.det(m), rt.float64, tol=1e-10)
    assert_close(L.solve(_t(m), _t(b)), np.linalg.solve(m, b), rt.float64, tol=1e-10)
    spd = m @ np.swapaxes(m, -1, -2)
    assert_close(L.cholesky(_t(spd)), np.linalg.cholesky(spd), rt.float64, tol=1e-10)
    assert_close(L.svdvals(_t(m[..., :k])), np.linalg.svd(m[..., :k], compute_uv=False),
                 rt.float64, tol=1e-10)


def test_results_are_named_tuples():
    a = _t(A)
    assert L.slogdet(a).logabsdet.shape == (2,)
    assert L.qr(a).R.shape == (2, 3, 3)
    assert L.eigh(_t(SPD)).eigenvectors.shape == (2, 3, 3)
    assert L.svd(a).Vh.shape == (2, 3, 3)
    assert L.lstsq(a, _t(B)).singular_values.shape == (2, 3)


# --------------------------------------------------------------------------- gradients
GRADS = {
    "inv": (L.inv, [A[0]]),
    "solve": (L.solve, [A, B[0]]),                         # broadcast batch: B summed back
    "solve_vector": (L.solve, [A, B[..., 0]]),
    "det": (L.det, [A]),
    "slogdet": (lambda a: L.slogdet(a).logabsdet, [A[0]]),
    "cholesky": (lambda a: L.cholesky(_sym(a)), [SPD[0] / 2]),
    "cholesky_upper": (lambda a: L.cholesky(_sym(a), upper=True), [SPD[1] / 2]),
    "qr_tall": (lambda a: rt.cat([rt.reshape(t, (-1,)) for t in L.qr(a)]), [TALL[0]]),
    "qr_wide": (lambda a: rt.cat([rt.reshape(t, (-1,)) for t in L.qr(a)]), [WIDE]),
    "eigh": (lambda a: rt.cat([rt.reshape(abs(t), (-1,)) for t in L.eigh(_sym(a))]), [A[0]]),
    "eigvalsh": (lambda a: L.eigvalsh(_sym(a)), [A[1]]),
    "svd_tall": (lambda a: rt.cat([rt.reshape(abs(t), (-1,))
                                   for t in L.svd(a, full_matrices=False)]), [TALL[0]]),
    "svd_wide": (lambda a: rt.cat([rt.reshape(abs(t), (-1,))
                                   for t in L.svd(a, full_matrices=False)]), [WIDE]),
    "svdvals": (L.svdvals, [TALL[1]]),
    "matrix_norm_nuc": (lambda a: L.matrix_norm(a, "nuc"), [WIDE]),
    "matrix_norm_2": (lambda a: L.matrix_norm(a, 2), [A[0]]),
    "pinv": (L.pinv, [TALL[0]]),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, [TALL[0], B[0].repeat(2, 0)[:4]]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(name):
    fn, arrays = GRADS[name]
    check_grad(fn, *arrays, rtol=1e-5, atol=1e-6)


def test_det_gradient_of_a_singular_matrix_is_the_adjugate():
    m = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])      # rank 2: the adjugate is not 0
    check_grad(L.det, m)


# abs() of the factors: signs of singular/eigen vectors are a free choice of each LAPACK build
TORCH_CASES = {
    "inv": (lambda m, a: m.inv(a), [A]),
    "solve": (lambda m, a, b: m.solve(a, b), [A, B]),
    "det": (lambda m, a: m.det(a), [A]),
    "slogdet": (lambda m, a: m.slogdet(a)[1], [A]),
    "cholesky": (lambda m, a: m.cholesky(a + a.transpose(-1, -2)), [SPD / 2]),
    "qr": (lambda m, a: m.qr(a)[0].sum(-2) + m.qr(a)[1].sum(-2), [TALL]),
    "eigh": (lambda m, a: abs(m.eigh(a + a.transpose(-1, -2))[1]).sum(-1)
             + m.eigh(a + a.transpose(-1, -2))[0], [A]),
    "svd": (lambda m, a: abs(m.svd(a, full_matrices=False)[0]).sum(-2)
            + abs(m.svd(a, full_matrices=False)[2]).sum(-2), [TALL]),
    "matrix_norm_nuc": (lambda m, a: m.matrix_norm(a, "nuc"), [TALL]),
    "vector_norm_3": (lambda m, a: m.vector_norm(a, 3, dim=-1), [TALL]),
    "pinv": (lambda m, a: m.pinv(a), [TALL]),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_forward_and_gradients_match_torch(name):
    fn, arrays = TORCH_CASES[name]
    xs = [rt.tensor(a, device=AD).require_grad() for a in arrays]
    out = fn(L, *xs)
    w = np.random.default_rng(3).uniform(0.5, 1.5, out.shape)
    grads = rt.sum(out * rt.tensor(w, device=AD)).backward()
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = fn(torch.linalg, *ts)
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-9, atol=1e-10)
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad(grads).numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-9)


def test_qr_complete_tall_is_not_differentiable():
    a = _t(TALL, device=AD).require_grad()
    with pytest.raises(rt.GradientError, match=r"linalg.qr: The QR decomposition is not "
                                               r"differentiable when mode='complete'"):
        rt.sum(L.qr(a, mode="complete").Q).backward()


def test_float32_gradient_stays_float32():
    a = _t(A, rt.float32, device=AD).require_grad()
    g = a.grad(rt.sum(L.inv(a)).backward())
    assert g.dtype is rt.float32
    want = -np.swapaxes(np.linalg.inv(A), -1, -2) @ np.ones((2, 3, 3)) @ np.swapaxes(
        np.linalg.inv(A), -1, -2)
    assert_close(g, want, rt.float32, tol=1e-4)


# --------------------------------------------------------------------------- errors
SINGULAR = np.stack([np.eye(3), np.zeros((3, 3)), np.ones((3, 3))])


def test_singular_inverse_and_solve_raise_linalg_error():
    assert issubclass(rt.LinAlgError, rt.TensorRuntimeError)
    assert issubclass(rt.LinAlgError, RuntimeError) and L.LinAlgError is rt.LinAlgError
    with pytest.raises(rt.LinAlgError) as e:
        L.inv(_t(SINGULAR))
    assert str(e.value) == ("linalg.inv: (Batch element 1): The inversion could not be completed "
                            "because the input matrix is singular.")
    with pytest.raises(rt.LinAlgError) as e:
        L.inv(_t(np.ones((2, 2)), rt.float32))
    assert str(e.value) == ("linalg.inv: The inversion could not be completed because the input "
                            "matrix is singular.")
    with pytest.raises(rt.LinAlgError) as e:
        L.solve(_t(SINGULAR), _t(np.ones(3)))
    assert str(e.value) == ("linalg.solve: (Batch element 1): The solver failed because the input "
                            "matrix is singular.")
    # det and slogdet of a singular matrix are values, not errors
    np.testing.assert_array_equal(L.det(_t(SINGULAR)).numpy(), [1.0, 0.0, 0.0])
    assert L.slogdet(_t(SINGULAR)).logabsdet.numpy()[1] == -np.inf


def test_solve_split_between_two_threads(monkeypatch):
    """A large stack is solved in two halves at once: the same values as one NumPy call, and a
    singular matrix in either half named by its index in the whole stack."""
    import jit_kernels.cpu.linalg as cpu_linalg
    monkeypatch.setattr(cpu_linalg, "SPLIT_MIN", 0)
    monkeypatch.setattr(cpu_linalg, "nthreads", lambda: 2)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 4, 4)) + 4 * np.eye(4), rng.standard_normal((5, 4, 2))
    np.testing.assert_array_equal(L.solve(_t(a), _t(b)).numpy(), np.linalg.solve(a, b))
    for bad in (1, 3):
        sing = a.copy()
        sing[bad] = 0
        with pytest.raises(rt.LinAlgError, match=rf"\(Batch element {bad}\)"):
            L.solve(_t(sing), _t(b))


def test_cholesky_of_a_non_positive_definite_matrix_raises():
    bad = SPD.copy()
    bad[1, 2, 2] = -50.0                                     # the 3x3 leading minor fails
    with pytest.raises(rt.LinAlgError) as e:
        L.cholesky(_t(bad))
    assert str(e.value) == ("linalg.cholesky: (Batch element 1): The factorization could not be "
                            "completed because the input is not positive-definite (the leading "
                            "minor of order 3 is not positive-definite).")
    with pytest.raises(rt.LinAlgError, match=r"^linalg.cholesky: The factorization .* order 1 "):
        L.cholesky(_t(-np.eye(2), rt.float32))


def test_shape_and_dtype_errors_name_the_op():
    with pytest.raises(rt.ShapeError) as e:
        L.inv(_t(np.ones((2, 3))))
    assert str(e.value) == ("linalg.inv: A must be batches of square matrices, but they are 2 by "
                            "3 matrices (shape (2, 3))")
    with pytest.raises(rt.ShapeError) as e:
        L.det(_t(np.ones(3)))
    assert str(e.value) == ("linalg.det: The input tensor A must have at least 2 dimensions, got "
                            "shape (3,)")
    with pytest.raises(rt.DTypeError) as e:
        L.cholesky(rt.tensor(np.eye(2, dtype=np.int64)))
    assert str(e.value) == ("linalg.cholesky: Expected a float32 or float64 tensor as input. Got "
                            "int64")
    with pytest.raises(rt.DTypeError) as e:
        L.vector_norm(rt.tensor([1, 2]))
    assert str(e.value) == "linalg.vector_norm: Expected a floating point tensor as input. Got int64"
    with pytest.raises(rt.DTypeError) as e:
        L.solve(_t(A), _t(B, rt.float32))
    assert str(e.value) == ("linalg.solve: Expected A and B to have the same dtype, but found A of "
                            "type float64 and B of type float32 instead")
    with pytest.raises(rt.ShapeError) as e:
        L.solve(_t(A), _t(np.ones((2, 4, 1))))
    assert str(e.value) == ("linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                            "((2, 3, 3) and (2, 4, 1))")
    with pytest.raises(rt.ArgumentValueError) as e:
        L.qr(_t(A), mode="full")
    assert str(e.value) == ("linalg.qr: qr received unrecognized mode 'full' but expected one of "
                            "'reduced' (default), 'r', or 'complete'")
    with pytest.raises(rt.ArgumentValueError) as e:
        L.matrix_norm(_t(A), 3)
    assert str(e.value) == ("linalg.matrix_norm: Order 3 not supported (one of 'fro', 'nuc', inf, "
                            "-inf, 1, -1, 2, -2)")
    with pytest.raises(rt.ShapeError, match=r"linalg.svd: The input tensor A must have at least 2"):
        L.svd(_t(np.ones(3)))
    with pytest.raises(rt.ArgumentValueError, match=r"linalg.eigh: UPLO must be 'L' or 'U'"):
        L.eigh(_t(SPD), UPLO="X")


def test_a_kernel_set_without_lapack_raises_device_error(monkeypatch):
    # the cuda kernel set declares no "linalg" capability: the same lowering raises there
    from runtime.dispatch import clear_dispatch_cache
    from runtime.kernel_sets import for_kind
    ks = for_kind("cpu")
    monkeypatch.setattr(type(ks), "capabilities", ks.capabilities - {"linalg"})
    clear_dispatch_cache()
    with pytest.raises(rt.DeviceError) as e:
        L.inv(_t(A))
    assert str(e.value) == ("linalg.inv: not available on device cpu: the cpu kernel set has no "
                            "LAPACK; move the tensor to the cpu (t.to('cpu')) first")


# --------------------------------------------------------------------------- capture
def test_capture_replays_and_checks(tmp_path):
    def fn(a, b):
        sign, logabs = L.slogdet(a)
        return [L.inv(a), L.solve(a, b), L.det(a), sign, logabs, L.svdvals(a),
                L.cholesky(a @ rt.transpose(a, -1, -2) + 3.0 * rt.eye(3, dtype=rt.float64,
                                                                    device=a.device))]
    a, b = A, B
    g = rt.capture(fn, a, b)
    g.check()
    ops = {o.op for o in g.operations}
    assert {"linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_svd",
            "linalg_cholesky"} <= ops
    eager = fn(_t(a), _t(b))
    for got, want in zip(g.run(a, b), eager):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # a singular input raises on replay as it does eagerly
    with pytest.raises(rt.LinAlgError, match="Batch element 1"):
        g.run(SINGULAR[:2], b)
    # saved and loaded (the load checks every op's rule again)
    g.save(tmp_path / "linalg.graph")
    back = rt.load_graph(tmp_path / "linalg.graph")
    for got, want in zip(back.run(a, b), eager):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_det_exports_to_onnx(tmp_path):
    g = rt.capture(lambda a: L.det(a) * 2.0, A.astype(np.float32))
    (got,) = onnx_run(g, tmp_path / "det.onnx", A.astype(np.float32), opset=17)
    np.testing.assert_allclose(got, 2 * np.linalg.det(A), rtol=1e-5)
