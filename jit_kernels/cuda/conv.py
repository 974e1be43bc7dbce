"""im2col / col2im for the cuda set (same layout and meaning as ``jit_kernels.cpu.conv``).

``im2col``: one thread per column entry (grid-stride), reading its image element or writing
zero.  ``col2im``: one thread per image element, gathering the column entries that read it (the
kernel offsets ``i`` with ``(y + pt - i*dh) % sh == 0`` in range, likewise for ``j``): no
atomics, so the sums are deterministic, in the order the cpu set adds them.  Operands are made
contiguous first; every buffer is passed as (flat buffer, offset).
"""
from __future__ import annotations

from numba import cuda

from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch
from jit_kernels.cuda.shape import contiguous, copy, permute, reshape


@cuda.jit(cache=True)
def _im2col(x, xo, C, H, W, out, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, total):
    t = cuda.grid(1)
    L = oh * ow
    while t < total:
        col = t % L
        r = t // L
        j = r % kw
        r = r // kw
        i = r % kh
        nc = r // kh                       # n * C + c
        iy = (col // ow) * sh - pt + i * dh
        ix = (col % ow) * sw - pl + j * dw
        if iy >= 0 and iy < H and ix >= 0 and ix < W:
            out[t] = x[xo + (nc * H + iy) * W + ix]
        else:
            out[t] = 0
        t += cuda.gridsize(1)


@cuda.jit(cache=True)
def _col2im(cols, co, C, H, W, out, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, total):
    t = cuda.grid(1)
    L = oh * ow
    K = kh * kw
    while t < total:
        x = t % W
        r = t // W
        y = r % H
        nc = r // H
        acc = cols[co] * 0                 # zero of the buffer's dtype
        for i in range(kh):
            ty = y + pt - i * dh
            if ty < 0 or ty % sh != 0 or ty // sh >= oh:
                continue
            for j in range(kw):
                tx = x + pl - j * dw
                if tx < 0 or tx % sw != 0 or tx // sw >= ow:
                    continue
                acc += cols[co + (nc * K + i * kw + j) * L + (ty // sh) * ow + tx // sw]
        out[t] = acc
        t += cuda.gridsize(1)


def im2col(x, kernel, stride, padding, dilation, grid):
    """Columns (N, C*kh*kw, oh*ow) of image ``x`` (N, C, H, W)."""
    N, C, H, W = x.shape
    (kh, kw), (oh, ow) = kernel, grid
    out = alloc((N, C * kh * kw, oh * ow), x.dtype, x.index)
    total = out.size
    if total:
        xc = contiguous(x)
        launch(_im2col, blocks_for(total, x.index), TPB, xc.buf, xc.offset, C, H, W, out.buf,
               kh, kw, *stride, *padding, *dilation, oh, ow, total)
    return out


def col2im(cols, image, kernel, stride, padding, dilation, grid):
    """The (N, C, H, W) image (``image`` = (C, H, W)) summing columns ``cols`` back."""
    C, H, W = image
    (kh, kw), (oh, ow) = kernel, grid
    out = alloc((cols.shape[0], C, H, W), cols.dtype, cols.index)
    total = out.size
    if total and not cols.size:            # no columns (an empty grid): nothing to sum
        from jit_kernels.cuda.memory import fill
        return fill(out, 0)
    if total:
        cc = contiguous(cols)
        launch(_col2im, blocks_for(total, cols.index), TPB, cc.buf, cc.offset, C, H, W, out.buf,
               kh, kw, *stride, *padding, *dilation, oh, ow, total)
    return out


def im2col_batched(x, kernel, stride, padding, dilation, grid):
    """Batched columns (C*kh*kw, N*oh*ow): ``im2col``'s, samples side by side (a transposed
    copy of its columns: simple and correct; the cpu set has its own kernel)."""
    N = x.shape[0]
    cols = im2col(x, kernel, stride, padding, dilation, grid)
    K, L = cols.shape[1:]
    return reshape(copy(permute(cols, (1, 0, 2))), (K, N * L))


def col2im_batched(cols, n, image, kernel, stride, padding, dilation, grid):
    """The adjoint of ``im2col_batched``: ``col2im`` of its columns transposed back."""
    K = cols.shape[0]
    L = grid[0] * grid[1]
    per = copy(permute(reshape(cols, (K, n, L)), (1, 0, 2)))
    return col2im(per, image, kernel, stride, padding, dilation, grid)


def conv2d_gemm(x, w, bias, stride, padding, dilation, grid):
    """conv2d without groups (the cpu set's method): ``w`` (O, C*kh*kw) @ the batched columns,
    then ``swap01`` to NCHW plus the bias -- composed of this set's kernels."""
    from jit_kernels.cuda import matmul
    N = x.shape[0]
    O = w.shape[0]
    L = grid[0] * grid[1]
    cols = im2col_batched(x, w.shape[2:], stride, padding, dilation, grid)
    K = cols.shape[0]
    y = matmul.matmul(reshape(contiguous(w), (1, O, K)), reshape(cols, (1, K, N * L)))
    return reshape(swap01(reshape(y, (O, N, L)), bias), (N, O) + tuple(grid))


def conv2d_weight_gemm(x, g, kernel, stride, padding, dilation):
    """conv2d's weight gradient without groups (the cpu set's method): g as rows (O, N*L) @
    the batched columns transposed -- composed of this set's kernels."""
    from jit_kernels.cuda import matmul
    N, O = g.shape[:2]
    grid = tuple(g.shape[2:])
    L = grid[0] * grid[1]
    cols = im2col_batched(x, kernel, stride, padding, dilation, grid)
    K = cols.shape[0]
    rows = reshape(swap01(reshape(contiguous(g), (N, O, L))), (1, O, N * L))
    ct = permute(reshape(cols, (1, K, N * L)), (0, 2, 1))
    return reshape(matmul.matmul(rows, ct), (O, K))


def swap01(x, bias=None):
    """``x`` (A, B, L) as contiguous (B, A, L), plus ``bias`` (A,) along A when given (a
    transposed copy, then the elementwise add)."""
    out = copy(permute(x, (1, 0, 2)))
    if bias is None:
        return out
    from jit_kernels.cuda.elementwise import binary
    dt = out.dtype
    return binary("add", out, reshape(bias, (1, bias.shape[0], 1)), dt, dt)
