"""The fused row kernels of ``scaled_dot_product_attention`` (cpu set).

``attention_softmax(x, mask, additive, scale, causal)``: for every row of the scores ``x``
(..., L, S), in ONE pass per row (the row stays in cache): ``t = x * scale``, masked (a boolean
mask: ``-inf`` where it is False; an additive one: ``+ mask``; ``causal``: the keys after the
row's query, ``j > i + causal`` for the int diagonal ``causal``, are never read and get exactly
0; None: no causal mask), the max, ``exp(t - max)`` (the cpu
set's vectorised exp), the float64 sum and the normalisation — the values of
``softmax(where(mask, x * scale, -inf))`` / ``softmax(x * scale + mask)``: a row with every
entry masked is NaN (as the composite and PyTorch's math backend), a row holding a NaN is NaN
(the causal tail too).

``attention_softmax_backward(p, g, mask, scale, causal)``: per row, ``dot = sum(g * p)``
(float64), ``ds = p * (g - dot) * scale``, 0 where a boolean ``mask`` is False and after the
causal diagonal (the gradient the ``where`` of the composite passes).

``mask`` is None or an array broadcastable (by strides: ``np.broadcast_to``) to ``x``'s shape,
bool or, with ``additive``, of ``x``'s dtype.  One ``prange`` over the rows; one compiled
specialisation per float dtype (the unused mask argument is a 1-element stand-in).
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from jit_kernels.cpu import _pool, scalar_math as sm
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu._layout import flat_base
from jit_kernels.cpu.reduce import _sum64

_NO_BOOL = np.ones(1, dtype=np.bool_)


@helper(error_model="numpy")
def _max_row(v):
    m = v[0]
    for i in range(v.shape[0]):
        m = sm.fmax_nan(m, v[i])
    return m


@helper(error_model="numpy")
def _exp_sub(v, m):
    for i in range(v.shape[0]):
        v[i] = sm.exp(v[i] - m)


@helper(error_model="numpy")
def _scale_into(xv, sc, ov):
    for i in range(xv.shape[0]):
        ov[i] = xv[i] * sc


@helper(error_model="numpy")
def _mul_inplace(v, c):
    for i in range(v.shape[0]):
        v[i] = v[i] * c


@helper(error_model="numpy")
def _fill(v, c):
    for i in range(v.shape[0]):      # (from 0 on a slice: a loop from n would not vectorise)
        v[i] = c


@helper(error_model="numpy", fastmath={"reassoc"})   # (reassoc: the float64 sum vectorises)
def _dot_row(pv, gv):
    s = 0.0
    for i in range(pv.shape[0]):
        s += np.float64(pv[i] * gv[i])
    return s


@helper(error_model="numpy")
def _ds_row(pv, gv, dot, sc, dv):
    for i in range(pv.shape[0]):
        dv[i] = pv[i] * (gv[i] - dot) * sc


@njit(cache=True, parallel=True, error_model="numpy")
def _forward(x, out, L, scale, causal, diag, kind, mb, ma, moff, mcs):
    R, S = x.shape
    sc = scale
    for r in prange(R):
        n = S
        if causal:
            n = max(0, min(r % L + 1 + diag, S))
        xv = x[r, :n]
        ov = out[r, :n]
        if kind == 0:
            _scale_into(xv, sc, ov)
        elif kind == 1:
            mo = moff[r]
            for j in range(n):
                ov[j] = xv[j] * sc if mb[mo + j * mcs] else -np.inf
        else:
            mo = moff[r]
            for j in range(n):
                ov[j] = xv[j] * sc + ma[mo + j * mcs]
        if n == 0:                      # every key masked: softmax of -inf is NaN
            _fill(out[r], math.nan)
            continue
        m = _max_row(ov)
        _exp_sub(ov, m)
        s = _sum64(ov)
        _mul_inplace(ov, 1.0 / s)
        if n < S:
            _fill(out[r, n:], 0.0 if s == s else math.nan)


@njit(cache=True, parallel=True, error_model="numpy")
def _backward(p, g, out, L, scale, causal, diag, masked, mb, moff, mcs):
    R, S = p.shape
    for r in prange(R):
        n = S
        if causal:
            n = max(0, min(r % L + 1 + diag, S))
        pv = p[r, :n]
        gv = g[r, :n]
        dv = out[r, :n]
        if n == 0:
            _fill(out[r], 0.0)
            continue
        dv[0] = _dot_row(pv, gv)        # (rounded to the row's dtype, as the composite's sum)
        _ds_row(pv, gv, dv[0], scale, dv)
        if masked:
            mo = moff[r]
            for j in range(n):
                if not mb[mo + j * mcs]:
                    dv[j] = 0
        if n < S:
            _fill(out[r, n:], 0.0)


def _mask_rows(mask, shape):
    """(flat base, int64 offset of each row, column stride) of ``mask`` broadcast to ``shape``."""
    m = np.broadcast_to(mask, shape)
    base, off, es = flat_base(m)
    offs = np.full(shape[:-1], off, dtype=np.int64)
    for d, n in enumerate(shape[:-1]):
        if es[d] and n > 1:
            idx = np.arange(n, dtype=np.int64) * es[d]
            offs += idx.reshape((n,) + (1,) * (len(shape) - 2 - d))
    return base, offs.reshape(-1), int(es[-1]) if len(es) else 0


def _rows(a):
    a = np.ascontiguousarray(a)
    return a, a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)


def attention_softmax(x, mask, additive, scale, causal):
    """See the module docstring."""
    shape = x.shape
    out = _pool.empty(shape, x.dtype)   # (reused blocks: no page faults)
    if out.size == 0:
        return out
    x, x2 = _rows(x)
    L = shape[-2]
    dummy_f = np.zeros(1, dtype=x.dtype)
    if mask is None:
        kind, mb, ma, moff, mcs = 0, _NO_BOOL, dummy_f, np.zeros(1, np.int64), 0
    else:
        base, moff, mcs = _mask_rows(mask, shape)
        if additive:
            kind, mb, ma = 2, _NO_BOOL, base
        else:
            kind, mb, ma = 1, base, dummy_f
    _forward(x2, out.reshape(x2.shape), L, x.dtype.type(scale), causal is not None,
             int(causal or 0), kind, mb, ma, moff, mcs)
    return out


def attention_softmax_backward(p, g, mask, scale, causal):
    """See the module docstring."""
    shape = p.shape
    out = _pool.empty(shape, p.dtype)
    if out.size == 0:
        return out
    p, p2 = _rows(p)
    g, g2 = _rows(g.astype(p.dtype, copy=False))
    if mask is None:
        masked, mb, moff, mcs = False, _NO_BOOL, np.zeros(1, np.int64), 0
    else:
        mb, moff, mcs = _mask_rows(mask, shape)
        masked = True
    _backward(p2, g2, out.reshape(p2.shape), shape[-2], p.dtype.type(scale), causal is not None,
              int(causal or 0), masked, mb, moff, mcs)
    return out
