"""Dense linear algebra on the cpu kernel set: NumPy's LAPACK (``numpy.linalg``).

Arrays in, arrays out: every function takes C-ordered float32/float64 stacks of matrices
(B, m, n) and returns NumPy arrays of the same dtype.  ``numpy.linalg`` is already batched and
costs no compilation; Numba's ``np.linalg`` inside ``@njit`` needs SciPy (not a dependency of
this package), handles one 2-D matrix per call and compiles for seconds per function and dtype
(docs/linalg.md, "Kernels").

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


def solve(a, b):
    """(``a^-1 b`` (B, n, k) for ``a`` (B, n, n), ``b`` (B, n, k), first singular batch element
    or -1).  A large stack is split in two halves solved at once, when Numba has two threads."""
    batch, n = a.shape[0], a.shape[1]
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
