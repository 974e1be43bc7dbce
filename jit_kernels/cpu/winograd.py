"""The stride-1 3x3 convolution as Winograd F(2x2, 3x3), for compiled graphs (``graph.compile``).

Each 2x2 block of outputs is ``A^T [(G g G^T) * (B^T d B)] A`` of its 4x4 input patch ``d``:
16 multiplies per (input, output) channel pair and tile where the direct sum takes 36.  The
weight transform ``G g G^T`` (``winograd_weight``) is computed once, in float64, when the
graph is compiled (the weight is a constant there, so the compiler folds it); the driver
(``wino_fwd`` of the generated gemm module, ``_matmul_gen``) runs the input transform, the
16 products on the gemm's micro-kernel and the output transform (with a 2x2 max pool and
relu, when fused) per block of NR samples, in one pass: the vector lanes are samples, so the
transforms are straight-line vector code with no gathers.  Its sums are not the direct
convolution's: results agree within rounding (the transforms' additions), as the compiled
graph's other reductions do.
"""
from __future__ import annotations

import numpy as np

from jit_kernels.cpu import _pool

#: G of F(2x2, 3x3): U = G g G^T (4x4) of a 3x3 kernel g
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])

#: the float dtypes the driver takes
DTYPES = (np.dtype(np.float32),)


#: the most bytes of one task's transposed input block (C*H*W*NR) and result block
#: (O*oh*ow*NR, pooled when fused) for which ``applies`` takes the Winograd form: beyond it
#: the blocks leave the L2 cache and the Winograd form turns slower than the direct one
BLOCK_BYTES = 1 << 18
#: input channels from which the unfused form pays (with fewer, the direct conv is faster; the
#: form fused with a pool still pays)
MIN_CHANNELS = 8


def applies(x_shape, out_channels, grid, dtype, pool):
    """Whether ``conv2d_winograd`` is the faster form of this stride-1 3x3 conv (with the 2x2
    max pool + relu fused when ``pool``): float32, at least one block of NR samples (the
    lanes) with at most a quarter of the lanes of the last block idle, blocks that stay in
    cache (``BLOCK_BYTES``), and ``MIN_CHANNELS`` input channels unless the pool is fused."""
    from jit_kernels.cpu import matmul as mm
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        return False
    N, C, H, W = (int(v) for v in x_shape)
    oh, ow = grid
    NR = mm.gemm_config(dt)[1]
    lanes = -(-N // NR) * NR
    out = (oh // 2) * (ow // 2) if pool else oh * ow
    return (N >= NR and 4 * (lanes - N) <= lanes and C >= 1
            and C * H * W * NR * dt.itemsize <= BLOCK_BYTES
            and out_channels * out * NR * dt.itemsize <= BLOCK_BYTES
            and (pool or C >= MIN_CHANNELS))


def winograd_weight(w):
    """(O, C, 3, 3) -> (16, O, C) contiguous in ``w``'s dtype: ``G g G^T`` of each kernel,
    element ``4a + b`` first (computed in float64, rounded once)."""
    O, C = w.shape[:2]
    u = np.einsum("ai,ocij,bj->aboc", _G, w.astype(np.float64), _G)
    return np.ascontiguousarray(u.reshape(16, O, C).astype(w.dtype))


def conv2d_winograd(x, u, bias, padding, grid, pool=False):
    """``x`` (N, C, H, W) convolved at stride 1 with the 3x3 kernels whose transform is ``u``
    (16, O, C) (``winograd_weight``), leading pads ``padding`` (top, left), output ``grid``
    (oh, ow), plus ``bias`` (O,) or None -> (N, O, oh, ow) contiguous.  ``pool`` (oh, ow
    even): the 2x2 max pool of that, relu'd, (N, O, oh/2, ow/2), as ``max_pool2d_relu``
    gives it."""
    from jit_kernels.cpu import matmul as mm
    N, C, H, W = x.shape
    O = u.shape[1]
    oh, ow = grid
    y = _pool.empty((N, O) + ((oh // 2, ow // 2) if pool else (oh, ow)), x.dtype)
    if y.size == 0:
        return y
    if C == 0:
        b = np.zeros(O, x.dtype) if bias is None else bias.astype(x.dtype)
        y[...] = (np.maximum(b, 0) if pool else b).reshape(1, O, 1, 1)
        return y
    # from an empty cache the parallel driver builds in the background while its serial twin
    # (the same tasks in order: the same bits) serves
    mod = mm._gemm_now(x.dtype, "wino_fwd")
    fn = mod.wino_fwd if mod is not None else mm._driver(x.dtype, "wino_fwd_serial").wino_fwd_serial
    NR = mm.gemm_config(x.dtype)[1]
    nsb = (N + NR - 1) // NR          # blocks of NR samples (the lanes), one task each at most
    tiles = nsb * NR * ((oh + 1) // 2) * ((ow + 1) // 2)
    ntask = min(nsb, mm.nthreads()) if 16 * O * C * tiles >= mm.GEMM_PAR_MIN else 1
    b = u.reshape(-1)[:1] if bias is None else np.ascontiguousarray(bias, dtype=x.dtype)
    fn(np.ascontiguousarray(u).reshape(-1), np.ascontiguousarray(x).reshape(-1),
       y.reshape(-1), b, bias is not None, pool, N, C, H, W, O, padding[0], padding[1],
       oh, ow, ntask, x.dtype.type(0))
    return y


__all__ = ["applies", "winograd_weight", "conv2d_winograd"]
