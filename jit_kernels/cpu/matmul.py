"""Batched matmul ``(B, M, K) @ (B, K, N) -> (B, M, N)`` (C-contiguous), no BLAS.

A blocked kernel: tasks are (batch, block of MB rows) run with ``prange`` (serial kernel below
~2^18 multiply-adds); inside a task the K and N dims are blocked (KB x NB panel of ``b`` stays in
L2) and the innermost loop is a contiguous ``c_row[j] += a_ik * b_row[j]`` that vectorises.
``a`` is read by strides (any layout, stride-0 batch); ``b`` must have a contiguous last dim and
is copied when it does not (its batch stride may be 0).  Integer matmul wraps on overflow.
K = 0 gives zeros.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from jit_kernels.cpu._layout import flat_base

MB = 32
KB = 256
NB = 512


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


def matmul(a, b):
    B, M, K = a.shape
    N = b.shape[2]
    Bo = max(B, b.shape[0])
    out = np.empty((Bo, M, N), dtype=a.dtype)
    if out.size == 0:
        return out
    from jit_kernels.cpu import memory, shape
    if K == 0:
        return memory.fill(out, 0)
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
