"""The cpu kernel set's float32 LU solve (``jit_kernels.cpu.linalg._lu_solve``): values against
NumPy's float64 solve, pivoting, the first singular batch element, the prange kernel's bits
against the serial one's, untouched inputs, and which systems go to LAPACK instead."""
import numpy as np
import pytest

import jit_kernels.cpu.linalg as L

RNG = np.random.default_rng(5)


def _systems(batch, n, k, dtype=np.float32):
    a = RNG.standard_normal((batch, n, n)) + n * np.eye(n)     # well conditioned
    b = RNG.standard_normal((batch, n, k))
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("batch,n,k", [(1, 1, 1), (3, 2, 1), (4, 3, 2), (2, 17, 1), (2, 33, 5),
                                       (3, 64, 1), (1, 128, 64)])
def test_solves_match_numpy_in_float64(batch, n, k):
    a, b = _systems(batch, n, k)
    a0, b0 = a.copy(), b.copy()
    x, bad = L._lu_solve(a, b)
    assert bad == -1 and x.dtype == np.float32 and x.shape == (batch, n, k)
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    assert np.abs(x - want).max() <= 1e-5 * max(1.0, np.abs(want).max())
    assert a.tobytes() == a0.tobytes() and b.tobytes() == b0.tobytes()


def test_rows_are_pivoted():
    """Zeros on the diagonal (a permutation, then a matrix whose first pivot must be swapped
    in from the last row) solve exactly or to rounding."""
    perm = np.eye(5, dtype=np.float32)[[3, 0, 4, 1, 2]]
    b = np.arange(10, dtype=np.float32).reshape(1, 5, 2)
    x, bad = L._lu_solve(perm[None], b)
    assert bad == -1
    np.testing.assert_array_equal(x[0], perm.T @ b[0])
    a = np.array([[[0.0, 1.0, 2.0], [1e-3, 3.0, 1.0], [4.0, 1.0, 0.0]]], np.float32)
    rhs = np.array([[[1.0], [2.0], [3.0]]], np.float32)
    x, _ = L._lu_solve(a, rhs)
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), rhs), rtol=1e-5)


def test_the_first_singular_matrix_is_named():
    a, b = _systems(5, 4, 1)
    a[3] = 0
    a[4, :, 1] = a[4, :, 0]             # two equal columns: singular, found part-way through
    a[4, 2, 2] = 0
    assert L._lu_solve(a, b) == (None, 3)
    a[3] = np.eye(4)
    x, bad = L._lu_solve(a, b)
    assert x is None and bad == 4


def test_the_parallel_kernel_gives_the_serial_bits(monkeypatch):
    a, b = _systems(6, 24, 3)
    monkeypatch.setattr(L, "LU_PAR_MIN", 1 << 60)
    serial, _ = L._lu_solve(a, b)
    monkeypatch.setattr(L, "LU_PAR_MIN", 0)
    monkeypatch.setattr(L, "nthreads", lambda: 2)
    monkeypatch.setattr(L, "parallel_ready", lambda fn, args: True)
    par, _ = L._lu_solve(a, b)
    assert par.tobytes() == serial.tobytes()


def test_large_float64_and_many_rhs_systems_go_to_lapack(monkeypatch):
    calls = []
    monkeypatch.setattr(L, "_lu_solve", lambda a, b: calls.append(a.shape) or (b, -1))
    for a, b in (_systems(1, L.LU_MAX + 1, 1), _systems(2, 8, 1, np.float64),
                 _systems(1, 8, L.LU_MAX_RHS + 1)):
        x, bad = L.solve(a, b)
        want = np.linalg.solve(a, b)
        assert bad == -1
        np.testing.assert_array_equal(x, want)
    assert calls == []
    L.solve(*_systems(2, 8, 1))
    assert calls == [(2, 8, 8)]


def test_a_singular_float32_stack_raises_the_typed_error_naming_the_element():
    """Through ``rt.linalg.solve`` (the LU kernel serves float32): PyTorch's message, the
    failing element's index in the whole stack."""
    import runtime as rt
    a, b = _systems(3, 4, 1)
    a[2, :, 3] = 0
    with pytest.raises(rt.LinAlgError) as e:
        rt.linalg.solve(rt.tensor(a), rt.tensor(b))
    assert str(e.value) == ("linalg.solve: (Batch element 2): The solver failed because the "
                            "input matrix is singular.")
    with pytest.raises(rt.LinAlgError) as e:
        rt.linalg.solve(rt.tensor(a[2]), rt.tensor(b[2]))
    assert str(e.value) == ("linalg.solve: The solver failed because the input matrix is "
                            "singular.")
