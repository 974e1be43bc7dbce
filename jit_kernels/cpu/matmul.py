"""Batched matmul ``(B, M, K) @ (B, K, N) -> (B, M, N)`` (C-contiguous), no BLAS.

A blocked kernel: tasks are (batch, block of MB rows) run with ``prange`` (serial kernel below
~2^18 multiply-adds); inside a task the K and N dims are blocked (KB x NB panel of ``b`` stays in
L2) and the innermost loop is a contiguous ``c_row[j] += a_ik * b_row[j]`` that vectorises.
``a`` is read by strides (any layout, stride-0 batch); ``b`` must have a contiguous last dim and
is copied when it does not (its batch stride may be 0).  Integer matmul wraps on overflow.
K = 0 gives zeros.
"""
from __future__ import annotations

import threading

import numpy as np
from numba import njit, prange

from jit_kernels.cpu._layout import flat_base, nthreads

MB = 32
KB = 256
NB = 512

GEMM_MIN = 1 << 15  # M*N*K below which ``_mm_small`` (no packing, no blocking) is used
GEMM_PAR_MIN = 1 << 20  # total multiply-adds below which the packed gemm runs serially


@njit(error_model="numpy", fastmath={"contract"})
def _mm_task(a, ao, sab, sam, sak, b, bo, sbb, sbk, c, M, N, K, bi, ib):
    i0 = ib * MB
    i1 = min(i0 + MB, M)
    cb = bi * M * N
    for i in range(i0, i1):
        crow = c[cb + i * N:cb + (i + 1) * N]
        for j in range(N):
            crow[j] = 0
    for k0 in range(0, K, KB):
        k1 = min(k0 + KB, K)
        for j0 in range(0, N, NB):
            j1 = min(j0 + NB, N)
            w = j1 - j0
            for i in range(i0, i1):
                crow = c[cb + i * N + j0:cb + i * N + j1]
                pa = ao + bi * sab + i * sam
                for k in range(k0, k1):
                    aik = a[pa + k * sak]
                    pb = bo + bi * sbb + k * sbk + j0
                    brow = b[pb:pb + w]
                    for j in range(w):
                        crow[j] += aik * brow[j]


@njit(cache=True, error_model="numpy")
def _mm_serial(a, ao, sab, sam, sak, b, bo, sbb, sbk, c, B, M, N, K):
    nmb = (M + MB - 1) // MB
    for t in range(B * nmb):
        bi = t // nmb
        _mm_task(a, ao, sab, sam, sak, b, bo, sbb, sbk, c, M, N, K, bi, t - bi * nmb)


@njit(cache=True, parallel=True, error_model="numpy")
def _mm_par(a, ao, sab, sam, sak, b, bo, sbb, sbk, c, B, M, N, K):
    nmb = (M + MB - 1) // MB
    for t in prange(B * nmb):
        bi = t // nmb
        _mm_task(a, ao, sab, sam, sak, b, bo, sbb, sbk, c, M, N, K, bi, t - bi * nmb)


# -- packed float gemm (generated, SLP-compiled) -------------------------------------------

# (MR, NR, MC, KC, NC) per float dtype: an 8 x 32 float32 tile is 16 zmm accumulators (AVX-512).
_CFG = {
    np.dtype(np.float32): (8, 32, 64, 512, 2048),
    np.dtype(np.float64): (8, 16, 64, 512, 2048),
}
_GEMM: dict = {}
_GEMM_LOCK = threading.Lock()


def _gemm_module(dtype):
    """The generated gemm module for ``dtype``, compiled (or loaded from the cache) on first use.

    Only the micro-kernel ``uk`` is compiled with ``numba.config.SLP_VECTORIZE`` on (see
    ``_matmul_gen``); the drivers are ordinary kernels that inline its vectorised code.
    """
    mod = _GEMM.get(dtype)
    if mod is not None:
        return mod
    with _GEMM_LOCK:
        mod = _GEMM.get(dtype)
        if mod is not None:
            return mod
        import numba
        from jit_kernels.codegen import load_generated_module
        from jit_kernels.cpu import _matmul_gen

        mod = load_generated_module(_matmul_gen.source(*_CFG[dtype]), f"cpu_gemm_{dtype.name}")
        T = numba.from_dtype(dtype)
        A = T[::1]
        i = numba.int64
        sig = (i, A, i, A, i, A, i, i, numba.boolean, T)
        old = numba.config.SLP_VECTORIZE
        numba.config.SLP_VECTORIZE = 1
        try:
            # A cache hit loads the SLP-compiled machine code (and its optimised IR, which the
            # drivers inline); a miss compiles it here, with SLP on.
            mod.uk.compile(sig)
        finally:
            numba.config.SLP_VECTORIZE = old
        mod.uk.disable_compile()  # never a second, scalar specialisation
        dsig = (A, i, i, i, i, A, i, i, i, i, A, i, i, i, i, T)
        for f in (mod.gemm_serial, mod.gemm_batch):
            f.compile(dsig)
        mod.gemm_rows.compile(dsig + (i,))
        _GEMM[dtype] = mod
        return mod


def warmup():
    """Compile (or load from the disk cache) the float gemm kernels."""
    for dt in _CFG:
        _gemm_module(dt)


@njit(cache=True, error_model="numpy", fastmath={"contract"})
def _mm_small(a, b, out):
    """Tiny products (M*N*K < GEMM_MIN): the 3-D views as they are, no packing, no blocking
    (one specialisation per dtype and layout kind; the call is the cost here)."""
    Bo, M, N = out.shape
    K = a.shape[2]
    for bi in range(Bo):
        ai = bi if a.shape[0] > 1 else 0
        bj = bi if b.shape[0] > 1 else 0
        for i in range(M):
            for j in range(N):
                out[bi, i, j] = 0
            for k in range(K):
                aik = a[ai, i, k]
                for j in range(N):
                    out[bi, i, j] += aik * b[bj, k, j]


def matmul(a, b):
    B, M, K = a.shape
    N = b.shape[2]
    Bo = max(B, b.shape[0])
    out = np.empty((Bo, M, N), dtype=a.dtype)
    if M * N * K < GEMM_MIN:
        if out.size:
            _mm_small(a, b, out)
        return out
    from jit_kernels.cpu import memory, shape
    if K == 0:
        return memory.fill(out, 0)
    dt = out.dtype
    if dt in _CFG and M >= 4:
        return _gemm(a, b, out, Bo, M, N, K)
    if b.shape[2] > 1 and b.strides[2] != b.itemsize:
        if b.strides[0] == 0:
            b = np.broadcast_to(shape.copy(b[:1]), b.shape)
        else:
            b = shape.copy(b)
    ab, ao, (sab, sam, sak) = flat_base(a)
    bb, bo, (sbb, sbk, _) = flat_base(b)
    if a.shape[0] == 1:
        sab = 0
    if b.shape[0] == 1:
        sbb = 0
    args = (ab, ao, sab, sam, sak, bb, bo, sbb, sbk, out.reshape(-1), Bo, M, N, K)
    if Bo * M * N * K >= (1 << 18):
        _mm_par(*args)
    else:
        _mm_serial(*args)
    return out


def _gemm(a, b, out, Bo, M, N, K):
    dt = out.dtype
    mod = _gemm_module(dt)
    ab, ao, (sab, sam, sak) = flat_base(a)
    bb, bo, (sbb, sbk, sbn) = flat_base(b)
    if not (ab.flags.aligned and bb.flags.aligned):  # the compiled kernels take aligned arrays
        if not ab.flags.aligned:
            ab, ao, (sab, sam, sak) = flat_base(np.ascontiguousarray(a))
        if not bb.flags.aligned:
            bb, bo, (sbb, sbk, sbn) = flat_base(np.ascontiguousarray(b))
    if a.shape[0] == 1:
        sab = 0
    if b.shape[0] == 1:
        sbb = 0
    args = (ab, ao, sab, sam, sak, bb, bo, sbb, sbk, sbn, out.reshape(-1), Bo, M, N, K, dt.type(0))
    work = Bo * M * N * K
    if work < GEMM_PAR_MIN:
        mod.gemm_serial(*args)
        return out
    MR, NR, MC = _CFG[dt][:3]
    nic = (M + MC - 1) // MC
    nt = nthreads()
    if Bo >= nt and nic < 2 * nt:
        mod.gemm_batch(*args)
        return out
    ngroups = 1
    if nic < 2 * nt:  # too few row panels: split the column slivers of each too
        njr = (min(N, _CFG[dt][4]) + NR - 1) // NR
        ngroups = max(1, min(njr // 4, (2 * nt + nic - 1) // nic))
    mod.gemm_rows(*args, ngroups)
    return out
