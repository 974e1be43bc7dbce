"""The recurrences of LSTM, GRU and Elman RNN layers (cpu set): the time loop, one product and
one fused cell kernel per step.

``lstm_forward(xg, b, h0, c0, w, reverse)``: ``xg`` (T, N, 4H) every step's input projection,
``b`` (4H,) the hidden bias or None, ``h0``/``c0`` (N, H) the initial state and ``w`` (4H, H)
the hidden weight (gates i, f, g, o in PyTorch's order). Per step the product ``h @ w.T``
(N, 4H), then one kernel that adds the projections and the bias, applies the gates and writes
``h``, ``c`` and the gates' values. Returns (6T + 1, N, H): the outputs ``h_t`` by time index,
the final cell state, every step's cell state, and every step's gate values (sigmoid(i),
sigmoid(f), tanh(g), sigmoid(o)) as a gate-major (4, N, H) block. ``reverse`` runs from the
last step to the first.

``lstm_backward(h0, c0, w, saved, gy, reverse)``: backpropagation through time from
``lstm_forward``'s result ``saved`` and the gradient ``gy`` (T + 1, N, H) of its first T + 1
rows. Per step one kernel (the gate derivatives from the saved gate values and tanh of the cell
states, computed for every step at once; the cell state's gradient carried in place) and the
product ``ds @ w`` for the previous hidden state. Returns (T + 1, N, 4H): the pre-activations'
gradient by time index (also the input projection's and the biases'), then
``[dh0, dc0, 0, 0]``.

``gru_forward(xg, b, h0, w, reverse)``: the same for a GRU (``xg`` (T, N, 3H), gates r, z, n;
``w`` (3H, H)): per step ``h @ w.T``, then one kernel for the gates and the new state.  Returns
(5T, N, H): the outputs by time index, then per step the gate-major (4, N, H) block
(r, z, n, W_hn h + b_hn).  ``gru_backward(h0, w, saved, gy, reverse)`` returns (2T + 1, N, 3H):
the input projection's gradient by time index, the hidden projection's (its ``n`` part reads
through ``r``), then ``[dh0, 0, 0]``.

``rnn_forward(xg, b, h0, w, relu, reverse)`` (``xg`` (T, N, H), ``w`` (H, H); tanh, or relu
when ``relu``) returns the outputs (T, N, H); ``rnn_backward(h0, w, ys, gy, relu, reverse)``
returns (T + 1, N, H): the pre-activations' gradient by time index, then ``dh0``.

The LSTM and GRU cell kernels split a step's rows between the threads from ``CELL_PAR_MIN``
cells (the step's product has just woken them; each element is computed alone, so the split
changes no bit); below that, and for the Elman cells, they are serial: a parallel region's
start costs about as much as the work.
They take C-contiguous arrays (one specialisation per float dtype): operands that are not are
copied once per call.
"""
from __future__ import annotations

import numpy as np

from numba import prange

from jit_kernels.cpu import _pool, scalar_math as sm, shape
from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import helper, njit
from jit_kernels.cpu._layout import nthreads
from jit_kernels.cpu.matmul import prepared_rhs

#: a step's cells (N * H) from which the LSTM and GRU cell kernels split rows between threads
CELL_PAR_MIN = 4096


@helper(error_model="numpy")
def _cell_rows(x, b, g, c, h_out, c_out, s_out, r0, r1):
    # x, g (N, 4H); b (4H,); c, h_out, c_out (N, H); s_out (4, N, H): the gates' values
    hs = c.shape[1]
    for r in range(r0, r1):
        for j in range(hs):
            si = (x[r, j] + b[j]) + g[r, j]
            sf = (x[r, hs + j] + b[hs + j]) + g[r, hs + j]
            sg = (x[r, 2 * hs + j] + b[2 * hs + j]) + g[r, 2 * hs + j]
            so = (x[r, 3 * hs + j] + b[3 * hs + j]) + g[r, 3 * hs + j]
            gi, gf, gg, go = sm.sigmoid(si), sm.sigmoid(sf), sm.tanh(sg), sm.sigmoid(so)
            s_out[0, r, j] = gi
            s_out[1, r, j] = gf
            s_out[2, r, j] = gg
            s_out[3, r, j] = go
            cn = gf * c[r, j] + gi * gg
            c_out[r, j] = cn
            h_out[r, j] = go * sm.tanh(cn)


@njit(cache=True, error_model="numpy")
def _cell(x, b, g, c, h_out, c_out, s_out, parts):
    # (``parts``: the parallel twin's split, ignored: the same rows, in order)
    _cell_rows(x, b, g, c, h_out, c_out, s_out, 0, c.shape[0])


@njit(cache=True, error_model="numpy", parallel=True)
def _cell_par(x, b, g, c, h_out, c_out, s_out, parts):
    n = c.shape[0]
    for k in prange(parts):
        _cell_rows(x, b, g, c, h_out, c_out, s_out, k * n // parts, (k + 1) * n // parts)


@njit(cache=True, error_model="numpy")
def _tanh(c, out):
    # every step's tanh(c_t) at once (the per-step kernel is then arithmetic only)
    cv, ov = c.reshape(c.size), out.reshape(out.size)
    for k in range(cv.shape[0]):
        ov[k] = sm.tanh(cv[k])


@helper(error_model="numpy")
def _cell_backward_rows(gy, dhn, a, tcs, cp, dc, ds, r0, r1):
    # gy, dhn (N, H): h_t's gradient from the output and from step t + 1; a (4, N, H) the
    # step's gates; tcs (N, H) tanh(c_t); cp (N, H) the cell state before; dc (N, H) in: c_t's
    # gradient from later steps, out: c_{t-1}'s; ds (N, 4H) out
    hs = cp.shape[1]
    for r in range(r0, r1):
        for j in range(hs):
            i, f, g, o, tc = a[0, r, j], a[1, r, j], a[2, r, j], a[3, r, j], tcs[r, j]
            dh = gy[r, j] + dhn[r, j]
            d = dc[r, j] + dh * (o - o * tc * tc)
            ds[r, j] = d * (g * (i - i * i))
            ds[r, hs + j] = d * (cp[r, j] * (f - f * f))
            ds[r, 2 * hs + j] = d * (i - i * g * g)
            ds[r, 3 * hs + j] = dh * (tc * (o - o * o))
            dc[r, j] = d * f


@njit(cache=True, error_model="numpy")
def _cell_backward(gy, dhn, a, tcs, cp, dc, ds, parts):
    _cell_backward_rows(gy, dhn, a, tcs, cp, dc, ds, 0, cp.shape[0])


@njit(cache=True, error_model="numpy", parallel=True)
def _cell_backward_par(gy, dhn, a, tcs, cp, dc, ds, parts):
    n = cp.shape[0]
    for k in prange(parts):
        _cell_backward_rows(gy, dhn, a, tcs, cp, dc, ds, k * n // parts, (k + 1) * n // parts)


def _parts(n, hs):
    """Row parts of a step's cell kernel: one per thread where the step is large enough to pay
    for a parallel region (the product before it has just woken the threads), else 0: serial."""
    nt = nthreads()
    return min(nt, n) if nt > 1 and n > 1 and n * hs >= CELL_PAR_MIN else 0


def _cell_kernel(serial, par, args, parts):
    """The parallel twin when ``parts`` asks for it and it is built (the same bits: every
    element is computed alone), else the serial kernel."""
    if parts and parallel_ready(par, args + (parts,)):
        return par
    return serial


def _c(a):
    return a if a.flags.c_contiguous and a.flags.aligned else np.ascontiguousarray(a)


def _order(t, reverse):
    return range(t - 1, -1, -1) if reverse else range(t)


def lstm_forward(xg, b, h0, c0, w, reverse):
    t, n, h4 = xg.shape
    hs = h4 // 4
    dt = xg.dtype
    out = _pool.empty((6 * t + 1, n, hs), dt)
    x = _c(xg)
    b = np.zeros(h4, dt) if b is None else _c(b)
    wt = shape.copy(w.T)           # (H, 4H) contiguous: packed once, or read each step
    mm = prepared_rhs(n, wt)
    h, c = h0, _c(c0)
    order = _order(t, reverse)
    parts = _parts(n, hs)
    cell = None
    for step in order:
        g = mm(h)
        base = 2 * t + 1 + 4 * step
        args = (x[step], b, g, c, out[step], out[t + 1 + step], out[base:base + 4])
        if cell is not _cell_par:
            cell = _cell_kernel(_cell, _cell_par, args, parts)
        cell(*args, parts)
        h, c = out[step], out[t + 1 + step]
    out[t] = c
    return out


def lstm_backward(h0, c0, w, saved, gy, reverse):
    rows, n, hs = saved.shape
    t = (rows - 1) // 6
    dt = saved.dtype
    out = _pool.empty((t + 1, n, 4 * hs), dt)
    saved, gy, w = _c(saved), _c(gy), _c(w)
    mm = prepared_rhs(n, w)
    dc = gy[t].copy()
    dhn = np.zeros((n, hs), dt)
    c0 = _c(c0)
    tcs = _pool.empty((t, n, hs), dt)
    _tanh(saved[t + 1:2 * t + 1], tcs)
    gates = saved[2 * t + 1:].reshape(t, 4, n, hs)
    order = _order(t, reverse)
    first = order[0]
    parts = _parts(n, hs)
    cell = None
    for step in reversed(order):
        prev = step + (1 if reverse else -1)
        cp = c0 if step == first else saved[t + 1 + prev]
        args = (gy[step], dhn, gates[step], tcs[step], cp, dc, out[step])
        if cell is not _cell_backward_par:
            cell = _cell_kernel(_cell_backward, _cell_backward_par, args, parts)
        cell(*args, parts)
        dhn = mm(out[step])
    last = out[t]
    last[:, :hs] = dhn
    last[:, hs:2 * hs] = dc
    last[:, 2 * hs:] = 0
    return out


# --------------------------------------------------------------------------- GRU
@helper(error_model="numpy")
def _gru_cell_rows(x, b, g, h, h_out, s_out, r0, r1):
    # x, g (N, 3H); b (3H,); h, h_out (N, H); s_out (4, N, H): r, z, n, W_hn h + b_hn
    hs = h.shape[1]
    for r in range(r0, r1):
        for j in range(hs):
            hr = g[r, j] + b[j]
            hz = g[r, hs + j] + b[hs + j]
            hn = g[r, 2 * hs + j] + b[2 * hs + j]
            rr = sm.sigmoid(x[r, j] + hr)
            zz = sm.sigmoid(x[r, hs + j] + hz)
            nn = sm.tanh(x[r, 2 * hs + j] + rr * hn)
            s_out[0, r, j] = rr
            s_out[1, r, j] = zz
            s_out[2, r, j] = nn
            s_out[3, r, j] = hn
            h_out[r, j] = nn + zz * (h[r, j] - nn)


@njit(cache=True, error_model="numpy")
def _gru_cell(x, b, g, h, h_out, s_out, parts):
    _gru_cell_rows(x, b, g, h, h_out, s_out, 0, h.shape[0])


@njit(cache=True, error_model="numpy", parallel=True)
def _gru_cell_par(x, b, g, h, h_out, s_out, parts):
    n = h.shape[0]
    for k in prange(parts):
        _gru_cell_rows(x, b, g, h, h_out, s_out, k * n // parts, (k + 1) * n // parts)


@helper(error_model="numpy")
def _gru_cell_backward_rows(gy, carry, g, s, hp, dx, dh, one, r0, r1):
    # gy (N, H): h_t's gradient from the output; carry (N, H) in: the part of h_t's gradient
    # from step t + 1 that skips the product (dh_{t+1} z_{t+1}), out: this step's; g (N, H) the
    # product part; s (4, N, H) the saved r, z, n, hn; hp (N, H) the state before; dx, dh
    # (N, 3H) out: the input and hidden projections' gradients; one: 1 of their dtype
    hs = hp.shape[1]
    for r in range(r0, r1):
        for j in range(hs):
            rr, zz, nn, hn = s[0, r, j], s[1, r, j], s[2, r, j], s[3, r, j]
            d = gy[r, j] + (carry[r, j] + g[r, j])
            omz = one - zz
            dnp = d * (omz - omz * nn * nn)
            dzp = d * ((hp[r, j] - nn) * (zz - zz * zz))
            drp = dnp * (hn * (rr - rr * rr))
            dx[r, j] = drp
            dx[r, hs + j] = dzp
            dx[r, 2 * hs + j] = dnp
            dh[r, j] = drp
            dh[r, hs + j] = dzp
            dh[r, 2 * hs + j] = dnp * rr
            carry[r, j] = d * zz


@njit(cache=True, error_model="numpy")
def _gru_cell_backward(gy, carry, g, s, hp, dx, dh, one, parts):
    _gru_cell_backward_rows(gy, carry, g, s, hp, dx, dh, one, 0, hp.shape[0])


@njit(cache=True, error_model="numpy", parallel=True)
def _gru_cell_backward_par(gy, carry, g, s, hp, dx, dh, one, parts):
    n = hp.shape[0]
    for k in prange(parts):
        _gru_cell_backward_rows(gy, carry, g, s, hp, dx, dh, one, k * n // parts,
                                (k + 1) * n // parts)


def gru_forward(xg, b, h0, w, reverse):
    t, n, h3 = xg.shape
    hs = h3 // 3
    dt = xg.dtype
    out = _pool.empty((5 * t, n, hs), dt)
    x = _c(xg)
    b = np.zeros(h3, dt) if b is None else _c(b)
    wt = shape.copy(w.T)                            # (H, 3H)
    mm = prepared_rhs(n, wt)
    h = _c(h0)
    parts = _parts(n, hs)
    cell = None
    for step in _order(t, reverse):
        base = t + 4 * step
        args = (x[step], b, mm(h), h, out[step], out[base:base + 4])
        if cell is not _gru_cell_par:
            cell = _cell_kernel(_gru_cell, _gru_cell_par, args, parts)
        cell(*args, parts)
        h = out[step]
    return out


def gru_backward(h0, w, saved, gy, reverse):
    rows, n, hs = saved.shape
    t = rows // 5
    dt = saved.dtype
    out = _pool.empty((2 * t + 1, n, 3 * hs), dt)
    saved, gy, w = _c(saved), _c(gy), _c(w)
    mm = prepared_rhs(n, w)
    carry = np.zeros((n, hs), dt)
    g = np.zeros((n, hs), dt)
    one = dt.type(1)
    h0 = _c(h0)
    order = _order(t, reverse)
    first = order[0]
    parts = _parts(n, hs)
    cell = None
    for step in reversed(order):
        hp = h0 if step == first else saved[step + (1 if reverse else -1)]
        base = t + 4 * step
        args = (gy[step], carry, g, saved[base:base + 4], hp, out[step], out[t + step], one)
        if cell is not _gru_cell_backward_par:
            cell = _cell_kernel(_gru_cell_backward, _gru_cell_backward_par, args, parts)
        cell(*args, parts)
        g = mm(out[t + step])
    last = out[2 * t]
    last[:, :hs] = carry + g
    last[:, hs:] = 0
    return out


# --------------------------------------------------------------------------- Elman RNN
@njit(cache=True, error_model="numpy")
def _rnn_cell(x, b, g, h_out, relu, zero):
    # h_out = act((x + b) + g): x, g, h_out (N, H), b (H,); relu keeps NaN as the relu kernel
    n, hs = h_out.shape
    for r in range(n):
        for j in range(hs):
            v = (x[r, j] + b[j]) + g[r, j]
            if relu:
                h_out[r, j] = zero if v < zero else v
            else:
                h_out[r, j] = sm.tanh(v)


@njit(cache=True, error_model="numpy")
def _rnn_cell_backward(gy, dhn, y, ds, relu, one, zero):
    # ds = (gy + dhn) * act'(y), act' read from the output y: 1 - y^2, or sign(y) for relu
    n, hs = y.shape
    for r in range(n):
        for j in range(hs):
            v = y[r, j]
            if relu:
                d = one if v > zero else (zero if v == zero else v)
            else:
                d = one - v * v
            ds[r, j] = (gy[r, j] + dhn[r, j]) * d


def rnn_forward(xg, b, h0, w, relu, reverse):
    t, n, hs = xg.shape
    dt = xg.dtype
    out = _pool.empty((t, n, hs), dt)
    x = _c(xg)
    b = np.zeros(hs, dt) if b is None else _c(b)
    wt = shape.copy(w.T)
    mm = prepared_rhs(n, wt)
    h, zero = h0, dt.type(0)
    for step in _order(t, reverse):
        _rnn_cell(x[step], b, mm(h), out[step], relu, zero)
        h = out[step]
    return out


def rnn_backward(h0, w, ys, gy, relu, reverse):
    t, n, hs = ys.shape
    dt = ys.dtype
    out = _pool.empty((t + 1, n, hs), dt)
    ys, gy, w = _c(ys), _c(gy), _c(w)
    mm = prepared_rhs(n, w)
    dhn = np.zeros((n, hs), dt)
    one, zero = dt.type(1), dt.type(0)
    for step in reversed(_order(t, reverse)):
        _rnn_cell_backward(gy[step], dhn, ys[step], out[step], relu, one, zero)
        dhn = mm(out[step])
    out[t] = dhn
    return out
