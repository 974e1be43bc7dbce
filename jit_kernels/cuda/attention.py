"""The fused row kernels of ``scaled_dot_product_attention`` for the cuda set (see
``jit_kernels.cpu.attention`` for the semantics): one thread per row of the scores — a simple,
correct kernel (grid-stride over the rows; the mask broadcast to the scores' shape and made
contiguous first), not a tuned one.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from jit_kernels.cuda import scalar_math as sm
from jit_kernels.cuda import shape as _shape
from jit_kernels.cuda._array import TPB, alloc, blocks_for, launch
from jit_kernels.cuda.memory import from_host


@cuda.jit(device=True)
def _mx(a, b):
    return a if a != a else (b if b != b else (b if b > a else a))


def _make(exp):
    @cuda.jit
    def forward(x, xo, out, R, L, S, scale, causal, diag, kind, mb, ma, mo):
        r = cuda.grid(1)
        while r < R:
            n = S
            if causal:
                n = max(0, min(r % L + 1 + diag, S))
            base = r * S
            m = -math.inf
            for j in range(n):
                t = x[xo + base + j] * scale
                if kind == 1:
                    if not mb[mo + base + j]:
                        t = -math.inf
                elif kind == 2:
                    t += ma[mo + base + j]
                out[base + j] = t
                m = _mx(m, t)
            s = 0.0
            for j in range(n):
                e = exp(out[base + j] - m)
                out[base + j] = e
                s += np.float64(e)
            inv = 1.0 / s
            for j in range(n):
                out[base + j] = out[base + j] * inv
            tail = 0.0 if (n > 0 and s == s) else math.nan
            for j in range(n, S):
                out[base + j] = tail
            r += cuda.gridsize(1)

    @cuda.jit
    def backward(p, po, g, go, out, R, L, S, scale, causal, diag, masked, mb, mo):
        r = cuda.grid(1)
        while r < R:
            n = S
            if causal:
                n = max(0, min(r % L + 1 + diag, S))
            base = r * S
            dot = 0.0
            for j in range(n):
                dot += np.float64(p[po + base + j] * g[go + base + j])
            out[base] = dot                # (rounded to the row's dtype, as the cpu set)
            d = out[base]
            for j in range(n):
                v = p[po + base + j] * (g[go + base + j] - d) * scale
                if masked and not mb[mo + base + j]:
                    v = 0
                out[base + j] = v
            for j in range(n, S):
                out[base + j] = 0
            r += cuda.gridsize(1)

    return forward, backward


_KERNELS = {}


def _kernels(dtype):
    k = _KERNELS.get(dtype)
    if k is None:
        k = _KERNELS[dtype] = _make(sm.exp_f32 if dtype == np.float32 else sm.exp_f64)
    return k


def _mask(mask, shape, index, dtype):
    if mask is None:
        return from_host(np.ones(1, dtype=dtype), index), 0
    m = _shape.contiguous(_shape.expand(mask, tuple(shape)))
    return m.buf, m.offset


def attention_softmax(x, mask, additive, scale, causal):
    """See ``jit_kernels.cpu.attention``."""
    shape = tuple(x.shape)
    out = alloc(shape, x.dtype, x.index)
    if out.size == 0:
        return out
    xc = _shape.contiguous(x)
    S, L = shape[-1], shape[-2]
    R = out.size // S
    kind = 0 if mask is None else (2 if additive else 1)
    mb, mo = _mask(mask if kind == 1 else None, shape, x.index, np.bool_)
    ma, mo2 = _mask(mask if kind == 2 else None, shape, x.index, x.dtype)
    fwd = _kernels(x.dtype)[0]
    launch(fwd, blocks_for(R, x.index), TPB, xc.buf, xc.offset, out.buf, R, L, S,
           x.dtype.type(scale), causal is not None, int(causal or 0), kind, mb, ma, mo if kind == 1 else mo2)
    return out


def attention_softmax_backward(p, g, mask, scale, causal):
    """See ``jit_kernels.cpu.attention``."""
    shape = tuple(p.shape)
    out = alloc(shape, p.dtype, p.index)
    if out.size == 0:
        return out
    pc, gc = _shape.contiguous(p), _shape.contiguous(g)
    S, L = shape[-1], shape[-2]
    R = out.size // S
    mb, mo = _mask(mask, shape, p.index, np.bool_)
    bwd = _kernels(p.dtype)[1]
    launch(bwd, blocks_for(R, p.index), TPB, pc.buf, pc.offset, gc.buf, gc.offset, out.buf, R, L,
           S, p.dtype.type(scale), causal is not None, int(causal or 0), mask is not None,
           mb, mo)
    return out
