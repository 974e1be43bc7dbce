"""Dense linear algebra on the cpu kernel set: NumPy's LAPACK (``numpy.linalg``), and an LU
solve of its own for stacks of small float32 systems.

Arrays in, arrays out: every function takes C-ordered float32/float64 stacks of matrices
(B, m, n) and returns NumPy arrays of the same dtype.  ``numpy.linalg`` is already batched and
costs no compilation; Numba's ``np.linalg`` inside ``@njit`` needs SciPy (not a dependency of
this package), handles one 2-D matrix per call and compiles for seconds per function and dtype
(docs/linalg.md, "Kernels").

``solve`` on float32 systems of order at most ``LU_MAX`` runs ``_lu_solve``: Gaussian
elimination with partial pivoting in float32, one matrix per task, the row updates unit-stride
vector loops.  ``numpy.linalg`` computes float32 input in float64 (and rounds the result),
which costs as much as a float64 solve; PyTorch and JAX solve float32 systems in float32, and
so does ``_lu_solve`` (docs/linalg.md gives the accuracy).  On larger systems, and in
float64, LAPACK's blocked factorisation is the faster.

A factorisation that fails on one matrix of the stack (a singular matrix for ``inv``/``solve``,
one that is not positive-definite for ``cholesky``) does not raise here: the functions return
the index of the first failing batch element (-1 when none fails), and the runtime raises its
typed error naming it.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import prange

from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu._layout import nthreads

__all__ = ["inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "svd"]


def _first_failing(fn, a, *rest) -> int:
    """The first batch index on which ``fn`` raises ``LinAlgError`` (-1: none); only called
    after the batched call failed, so the matrices are tried one at a time."""
    for i in range(a.shape[0]):
        try:
            fn(a[i], *(r[i] for r in rest))
        except np.linalg.LinAlgError:
            return i
    return -1


def inv(a):
    """(inverse (B, n, n), first singular batch element or -1)."""
    try:
        return np.linalg.inv(a), -1
    except np.linalg.LinAlgError:
        return None, _first_failing(np.linalg.inv, a)


def _solve_part(a, b):
    try:
        return np.linalg.solve(a, b), -1
    except np.linalg.LinAlgError:
        return None, _first_failing(np.linalg.solve, a, b)


#: B * n**3 from which ``solve`` splits the batch between two threads: NumPy's LAPACK loop
#: releases the GIL, so a second thread solves half of the stack (below this, handing work to
#: the thread costs more than it saves)
SPLIT_MIN = 1 << 21
_WORKER = None
_WORKER_LOCK = threading.Lock()


def _worker():
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = ThreadPoolExecutor(1, thread_name_prefix="jit_kernels-linalg")
        return _WORKER


def _forget_worker():
    # a forked child has the executor but not its thread: it would wait on it forever
    global _WORKER, _WORKER_LOCK
    _WORKER, _WORKER_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_worker)


#: the largest order, and the most right-hand sides, of a float32 system ``solve`` hands to
#: ``_lu_solve`` (above them LAPACK's blocked factorisation and triangular solves are faster)
LU_MAX = 128
LU_MAX_RHS = 64
#: B * n**3 from which ``_lu_solve`` runs its matrices on the kernel set's threads
LU_PAR_MIN = 1 << 17
#: a row update starts at a multiple of this many columns (the row's columns before the pivot
#: column hold zeros by then): a row of a multiple of it has no scalar tail after its vector
#: loop
_ROW_BLOCK = 16


@helper(error_model="numpy")
def _lu_solve_one(a, b):
    """Solve ``a x = b`` in place (``a`` (n, n) and ``b`` (n, k), C-contiguous; ``x`` is left in
    ``b``, ``a`` overwritten): the pivot of column k is its entry of largest magnitude on or
    below the diagonal (the first of equals, as LAPACK's ``getrf`` takes it), each row below
    loses its multiple of the pivot row (two rows per pass over the pivot row) and ``b`` the
    same multiple of the pivot's row of ``b``; then back substitution.  Returns 0, or k + 1
    for the first exactly-zero pivot."""
    n = a.shape[0]
    kb = b.shape[1]
    for k in range(n):
        p = k
        mx = abs(a[k, k])
        for i in range(k + 1, n):
            v = abs(a[i, k])
            if v > mx:
                mx = v
                p = i
        if mx == 0:
            return k + 1
        if p != k:
            for j in range(n):
                t = a[k, j]
                a[k, j] = a[p, j]
                a[p, j] = t
            for j in range(kb):
                t = b[k, j]
                b[k, j] = b[p, j]
                b[p, j] = t
        piv = a[k, k]
        j0 = k - k % _ROW_BLOCK
        rk = a[k, j0:]          # (its columns before k are zeros, as the rows' below)
        bk = b[k]
        i = k + 1
        while i + 1 < n:
            m1 = a[i, k] / piv
            m2 = a[i + 1, k] / piv
            r1 = a[i, j0:]
            r2 = a[i + 1, j0:]
            for j in range(rk.shape[0]):
                w = rk[j]
                r1[j] = r1[j] - m1 * w
                r2[j] = r2[j] - m2 * w
            for j in range(kb):
                w = bk[j]
                b[i, j] = b[i, j] - m1 * w
                b[i + 1, j] = b[i + 1, j] - m2 * w
            a[i, k] = 0
            a[i + 1, k] = 0
            i += 2
        if i < n:
            m1 = a[i, k] / piv
            r1 = a[i, j0:]
            for j in range(rk.shape[0]):
                r1[j] = r1[j] - m1 * rk[j]
            for j in range(kb):
                b[i, j] = b[i, j] - m1 * bk[j]
            a[i, k] = 0
    for i in range(n - 1, -1, -1):
        d = a[i, i]
        for j in range(kb):
            s = b[i, j]
            for q in range(i + 1, n):
                s -= a[i, q] * b[q, j]
            b[i, j] = s / d
    return 0


@njit(cache=True, error_model="numpy")
def _lu_serial(a, b, info):
    for t in range(a.shape[0]):
        info[t] = _lu_solve_one(a[t], b[t])


@njit(cache=True, parallel=True, error_model="numpy")
def _lu_par(a, b, info):
    for t in prange(a.shape[0]):
        info[t] = _lu_solve_one(a[t], b[t])


def _lu_solve(a, b):
    """``solve`` by ``_lu_solve_one`` on each matrix (on copies of ``a`` and ``b``); the
    ``prange`` kernel for a large stack (its matrices the same tasks: the same bits)."""
    a = a.copy()
    x = b.copy()
    batch, n = a.shape[0], a.shape[1]
    info = np.empty(batch, np.int64)
    args = (a, x, info)
    if (batch >= 2 and batch * n ** 3 >= LU_PAR_MIN and nthreads() >= 2
            and parallel_ready(_lu_par, args)):
        _lu_par(*args)
    else:
        _lu_serial(*args)
    bad = np.flatnonzero(info)
    return (None, int(bad[0])) if bad.size else (x, -1)


def solve(a, b):
    """(``a^-1 b`` (B, n, k) for ``a`` (B, n, n), ``b`` (B, n, k), first singular batch element
    or -1).  Small float32 systems: ``_lu_solve``.  Otherwise LAPACK, a large stack split in
    two halves solved at once when Numba has two threads."""
    batch, n = a.shape[0], a.shape[1]
    if a.dtype == np.float32 and batch > 0 and 0 < n <= LU_MAX and 0 < b.shape[2] <= LU_MAX_RHS:
        return _lu_solve(a, b)
    if batch < 2 or batch * n ** 3 < SPLIT_MIN or nthreads() < 2:
        return _solve_part(a, b)
    half = batch // 2
    second = _worker().submit(_solve_part, a[half:], b[half:])
    x0, bad0 = _solve_part(a[:half], b[:half])
    x1, bad1 = second.result()
    if bad0 >= 0 or bad1 >= 0:
        return None, bad0 if bad0 >= 0 else half + bad1
    out = np.empty((batch,) + x0.shape[1:], x0.dtype)
    out[:half] = x0
    out[half:] = x1
    return out, -1


def det(a):
    """Determinants (B,) (0 for a singular matrix, as LAPACK's LU finds it)."""
    return np.ascontiguousarray(np.linalg.det(a), dtype=a.dtype)


def slogdet(a):
    """(B, 2): the sign (-1, 0 or 1) and the log of the absolute value of each determinant."""
    sign, logabs = np.linalg.slogdet(a)
    return np.ascontiguousarray(np.stack([sign, logabs], axis=-1), dtype=a.dtype)


def _cholesky_fails(m) -> bool:
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return True
    return False


def cholesky(a):
    """(lower factor (B, n, n), first failing batch element or -1, the order of its first
    leading minor that is not positive-definite (0 when none fails))."""
    try:
        return np.linalg.cholesky(a), -1, 0
    except np.linalg.LinAlgError:
        pass
    bad = _first_failing(np.linalg.cholesky, a)
    m = a[bad]
    # the smallest order k whose leading k x k minor fails (failure is monotone in k): bisection
    lo, hi = 1, m.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if _cholesky_fails(m[:mid, :mid]):
            hi = mid
        else:
            lo = mid + 1
    return None, bad, lo


def qr(a, complete: bool):
    """(Q (B, m, m|k), R (B, m|k, n)) with k = min(m, n), as LAPACK's Householder QR gives
    them (R's diagonal may be negative)."""
    q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
    return np.ascontiguousarray(q), np.ascontiguousarray(r)


def eigh(a, lower: bool):
    """(eigenvalues (B, n) ascending, eigenvectors (B, n, n) as columns) of the symmetric
    matrices whose ``lower`` (else upper) triangle ``a`` holds."""
    w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
    return np.ascontiguousarray(w), np.ascontiguousarray(v)


def svd(a, full: bool):
    """(U (B, m, m|k), S (B, k) descending, Vh (B, n|k, n)) with k = min(m, n)."""
    u, s, vh = np.linalg.svd(a, full_matrices=full)
    return np.ascontiguousarray(u), np.ascontiguousarray(s), np.ascontiguousarray(vh)
