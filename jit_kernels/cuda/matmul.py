"""Batched matmul ``(B, M, K) @ (B, K, N) -> (B, M, N)`` (C-contiguous) for the cuda set.

A shared-memory tiled, register-blocked kernel, generated per dtype: each block computes a
BM x BN tile of one batch's output (``blockIdx.z`` is the batch); per step of BK along K the
block stages an A tile (stored transposed, BK x BM) and a B tile (BK x BN) in shared memory,
and each of its threads accumulates a TM x TN sub-tile in registers (scalar accumulators in the
generated source, so they never spill to local memory).  Operands are read by strides (any
layout; batch stride 0 for broadcast batches); tiles are zero-padded at the edges, so any
M, N, K works.  Float32 accumulates in float32 (as the cpu set), ints wrap.

Configurations: float32 128x128x8 tiles, 8x8 per thread (256 threads); 8-byte dtypes 64x64x8,
4x4 per thread; under the simulator 8x8x4 tiles, 2x2 per thread (16 threads).
"""
from __future__ import annotations

import numpy as np

from jit_kernels.codegen import load_generated_module
from jit_kernels._source import NP_NAME as _NP_NAME
from jit_kernels.cuda._array import launch, SIM, CudaArray, alloc

_NB = {"float32": "numba.float32", "float64": "numba.float64", "int32": "numba.int32",
       "int64": "numba.int64"}

_TEMPLATE = '''\
import numpy as np
import numba
from numba import cuda

T = {T}
TT = {TT}
BM = {BM}
BN = {BN}
BK = {BK}
TM = {TM}
TN = {TN}
NT = {NT}


@cuda.jit(cache=True)
def mm(a, ao, sab, sam, sak, b, bo, sbb, sbk, sbn, c, M, N, K):
    bz = cuda.blockIdx.z
    bm = cuda.blockIdx.y * BM
    bn = cuda.blockIdx.x * BN
    tid = cuda.threadIdx.x
    tr = (tid // (BN // TN)) * TM
    tc = (tid % (BN // TN)) * TN
    As = cuda.shared.array((BK, BM), TT)
    Bs = cuda.shared.array((BK, BN), TT)
{acc_init}
    pa = ao + bz * sab
    pb = bo + bz * sbb
    for k0 in range(0, K, BK):
{load_a}
{load_b}
        cuda.syncthreads()
        for kk in range(BK):
{inner}
        cuda.syncthreads()
    pc = bz * M * N
{store}
'''


def _tile_load(span, q, i, j, gi, i0, gj, j0, li, lj, dst, src):
    """Source staging one zero-padded shared-memory tile: each thread copies elements
    ``e = tid + l * NT`` of the ``span`` x BK tile, split as ``i = e // q``, ``j = e - i * q``
    (global ``gi = i0 + i`` < ``li``, ``gj = j0 + j`` < ``lj``), reading ``src`` into ``dst``."""
    return "\n".join([
        f"        for l in range({span} * BK // NT):",
        "            e = tid + l * NT",
        f"            {i} = e // {q}",
        f"            {j} = e - {i} * {q}",
        f"            {gi} = {i0} + {i}",
        f"            {gj} = {j0} + {j}",
        f"            if {gi} < {li} and {gj} < {lj}:",
        f"                {dst} = {src}",
        "            else:",
        f"                {dst} = T(0)",
    ])


_LOAD_A = _tile_load("BM", "BK", "am", "ak", "gm", "bm", "gk", "k0", "M", "K", "As[ak, am]",
                     "a[pa + gm * sam + gk * sak]")
_LOAD_B = _tile_load("BN", "BN", "bk", "bj", "gk", "k0", "gn", "bn", "K", "N", "Bs[bk, bj]",
                     "b[pb + gk * sbk + gn * sbn]")


def _gen(dt, BM, BN, BK, TM, TN):
    NT = (BM // TM) * (BN // TN)
    acc_init = "\n".join(f"    c{i}_{j} = T(0)" for i in range(TM) for j in range(TN))
    inner = [f"            a{i} = As[kk, tr + {i}]" for i in range(TM)]
    inner += [f"            b{j} = Bs[kk, tc + {j}]" for j in range(TN)]
    inner += [f"            c{i}_{j} += a{i} * b{j}" for i in range(TM) for j in range(TN)]
    store = []
    for i in range(TM):
        store.append(f"    gm = bm + tr + {i}")
        store.append("    if gm < M:")
        for j in range(TN):
            store.append(f"        if bn + tc + {j} < N:")
            store.append(f"            c[pc + gm * N + bn + tc + {j}] = c{i}_{j}")
    return _TEMPLATE.format(T=_NP_NAME[dt.name], TT=_NB[dt.name], BM=BM, BN=BN, BK=BK, TM=TM,
                            TN=TN, NT=NT, load_a=_LOAD_A, load_b=_LOAD_B, acc_init=acc_init, inner="\n".join(inner),
                            store="\n".join(store)), NT


def config(dt: np.dtype):
    if SIM:
        return 8, 8, 4, 2, 2
    if dt.itemsize == 8:
        return 64, 64, 8, 4, 4
    return 128, 128, 8, 8, 8


_MODS: dict = {}


def _module(dt):
    mod = _MODS.get(dt)
    if mod is None:
        cfg = config(dt)
        src, nt = _gen(dt, *cfg)
        mod = load_generated_module(src, f"cuda_mm_{dt.name}_{'x'.join(map(str, cfg))}")
        _MODS[dt] = (mod, cfg, nt)
        mod = _MODS[dt]
    return mod


def matmul(a: CudaArray, b: CudaArray) -> CudaArray:
    B, M, K = a.shape
    N = b.shape[2]
    Bo = max(B, b.shape[0])
    out = alloc((Bo, M, N), a.dtype, a.index)
    if out.size == 0:
        return out
    from jit_kernels.cuda import memory
    if K == 0:
        return memory.fill(out, 0)
    sab, sam, sak = a.strides
    sbb, sbk, sbn = b.strides
    if a.shape[0] == 1:
        sab = 0
    if b.shape[0] == 1:
        sbb = 0
    mod, (BM, BN, _, _, _), nt = _module(a.dtype)
    grid = (-(-N // BN), -(-M // BM), Bo)
    launch(mod.mm, grid, nt, a.buf, a.offset, sab, sam, sak, b.buf, b.offset, sbb, sbk, sbn, out.buf,
                     M, N, K)
    return out
