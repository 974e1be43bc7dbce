"""The recurrence of one LSTM layer in one direction as one op, ``lstm_layer`` (the front end is
``rt.nn.LSTM`` on autodiff devices), and the op of its gradient, ``lstm_layer_backward``.

``lstm_layer(xg, h0, c0, w_hh[, b_hh])``: ``xg`` (T, N, 4H) is every step's input projection
(``x @ W_ih.T + b_ih``), ``h0``/``c0`` (N, H) the initial state, ``w_hh`` (4H, H) the hidden
weight and ``b_hh`` (4H,) its bias; gates i, f, g, o in PyTorch's order.  The op's result
(6T + 1, N, H) holds the outputs ``h_t`` in time order, the final cell state, then what the
gradient reads: every step's cell state (T rows) and pre-activations (4T rows, each step's
(N, 4H) block as it lies in memory); the ``lstm_layer`` function returns the first T + 1 rows.
``reverse`` runs the steps from the last to the first (a bidirectional layer's second
direction).

On a plain device the kernel loops over time calling the kernel set's product and its
elementwise kernels; the tape records one node for the whole layer instead of a dozen per
step.  The backward op runs backpropagation through time in reverse: the gate activations of
every step at once from the saved pre-activations, then per step one product for the hidden
state's gradient.  The rule adds the hidden weight's gradient as one product over all steps;
the input projection's gradient is the pre-activation gradient itself, so ``linear``'s rule
gives the input and ``W_ih`` theirs as one product each.  Recording devices (capture, ONNX,
``rt.compile``'s forward) get the per-step primitives from the decomposition.
"""
from __future__ import annotations

from ..core.errors import DTypeError, ShapeError
from ..core.registry import Meta, OpSpec, Plan, register
from ..dispatch import dispatch as run
from ..kernel_sets import supports
from .elementwise import add, mul, sigmoid, tanh
from .index import getitem
from .linalg import matmul
from .shape import cat, reshape, transpose, unsqueeze

__all__ = ["lstm_layer"]

_ALL = slice(None)


def _check(name, xg, h0, c0, w, *bias):
    if len(xg.shape) != 3 or xg.shape[0] < 1 or xg.shape[2] % 4:
        raise ShapeError(f"{name}: expected the input projection as (T >= 1, N, 4 * H), got "
                         f"shape {tuple(xg.shape)}")
    t, n, g = xg.shape
    h = g // 4
    for what, a, want in (("h0", h0, (n, h)), ("c0", c0, (n, h)), ("w_hh", w, (g, h)),
                          *(("b_hh", b, (g,)) for b in bias)):
        if tuple(a.shape) != want:
            raise ShapeError(f"{name}: expected {what} of shape {want} for an input projection "
                             f"of shape {tuple(xg.shape)}, got {tuple(a.shape)}")
    ops = (xg, h0, c0, w) + bias
    if len({a.dtype for a in ops}) != 1 or not xg.dtype.is_float:
        raise DTypeError(f"{name}: expected one float dtype for xg, h0, c0, w_hh and b_hh, got "
                         f"{', '.join(a.dtype.name for a in ops)}")
    return t, n, h


def _order(t, attrs):
    return range(t - 1, -1, -1) if attrs["reverse"] else range(t)


def _product(ks, m, k, n, dtype):
    """``mm(a, b)``: the (m, n) product of an (m, k) and a (k, n) matrix (any strides)."""
    if supports(ks, "prepared_matmul"):
        return ks.matmul_fn(m, k, n, dtype.np)

    def mm(a, b):
        return ks.reshape(ks.matmul(ks.reshape(a, (1, m, k)), ks.reshape(b, (1, k, n))), (m, n))
    return mm


# --------------------------------------------------------------------------- forward
def _steps(rows: int) -> int:
    return (rows - 1) // 6


def _infer_lstm(args, attrs):
    if len(args) not in (4, 5):
        raise ShapeError(f"lstm_layer: expected (xg, h0, c0, w_hh[, b_hh]), got {len(args)} "
                         f"operands")
    t, n, h = _check("lstm_layer", *args)
    return Plan((6 * t + 1, n, h), args[0].dtype, args[0].dtype)


def _kernel_lstm(ks, p, args, attrs, plan, device):
    xg, h, c, w = p[:4]
    t, n, h4 = args[0].shape
    hs = h4 // 4
    dt = plan.dtype.np
    if len(p) == 5:
        xg = ks.binary("add", xg, p[4], dt, dt)
    mm = _product(ks, n, hs, h4, plan.dtype)
    wt = ks.copy(ks.permute(w, (1, 0)))  # contiguous: the product packs it at every step
    binary, unary, index, reshape_ = ks.binary, ks.unary, ks.index, ks.reshape
    ki, kf, kg, ko = ((slice(0, n, 1), slice(k * hs, (k + 1) * hs, 1)) for k in range(4))
    ys, cs, ss = [None] * t, [None] * t, [None] * t
    for step in _order(t, attrs):
        s = binary("add", index(xg, (step,)), mm(h, wt), dt, dt)
        sig = unary("sigmoid", s, dt)
        g = unary("tanh", index(s, kg), dt)
        c = binary("add", binary("mul", index(sig, kf), c, dt, dt),
                   binary("mul", index(sig, ki), g, dt, dt), dt, dt)
        h = binary("mul", index(sig, ko), unary("tanh", c, dt), dt, dt)
        ys[step], cs[step], ss[step] = (reshape_(h, (1, n, hs)), reshape_(c, (1, n, hs)),
                                        reshape_(s, (4, n, hs)))
    return ks.cat(ys + [cs[_order(t, attrs)[-1]]] + cs + ss, 0)


def _decompose_lstm(args, attrs):
    xg, h, c, w = args[:4]
    if len(args) == 5:
        xg = add(xg, args[4])
    t, n, h4 = xg.shape
    hs = h4 // 4
    wt = transpose(w, 0, 1)
    ys, cs, ss = [None] * t, [None] * t, [None] * t
    for step in _order(t, attrs):
        s = add(getitem(xg, (step,)), matmul(h, wt))
        i, f, g, o = (getitem(s, (_ALL, slice(k * hs, (k + 1) * hs))) for k in range(4))
        c = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)))
        h = mul(sigmoid(o), tanh(c))
        ys[step], cs[step], ss[step] = unsqueeze(h, 0), unsqueeze(c, 0), reshape(s, (4, n, hs))
    return cat(ys + [cs[_order(t, attrs)[-1]]] + cs + ss, 0)


def _previous(ys, h0, t, reverse):
    """(T, N, H): the hidden state each step read, by time index (``ys`` the outputs)."""
    first = unsqueeze(h0, 0)
    if t == 1:
        return first
    if reverse:
        return cat([getitem(ys, (slice(1, t),)), first], 0)
    return cat([first, getitem(ys, (slice(0, t - 1),))], 0)


def _grad_lstm(c, g):
    h0, c0, w = c.input(1), c.input(2), c.input(3)
    ws = c.output()
    t, n, hs = _steps(ws.shape[0]), ws.shape[1], ws.shape[2]
    # the rows past the outputs and the final cell state are what the backward op reads; the
    # lstm_layer function never hands them out, so their gradient is zero
    out = run("lstm_layer_backward", (h0, c0, w, ws, getitem(g, (slice(0, t + 1),))), c.attrs)
    ds = getitem(out, (slice(0, t),))                           # d(pre-activations), (T, N, 4H)
    last = getitem(out, (t,))
    gh0 = getitem(last, (_ALL, slice(0, hs))) if c.needs(1) else None
    gc0 = getitem(last, (_ALL, slice(hs, 2 * hs))) if c.needs(2) else None
    gw = None
    if c.needs(3):                      # one product over every step: dS^T @ h_prev
        prev = _previous(getitem(ws, (slice(0, t),)), h0, t, c.attrs["reverse"])
        gw = matmul(transpose(reshape(ds, (t * n, 4 * hs)), 0, 1), reshape(prev, (t * n, hs)))
    # the bias's gradient is ds summed over steps and batch (the tape sums it)
    return ds, gh0, gc0, gw, *((ds,) if c.arity == 5 else ())


# --------------------------------------------------------------------------- backward op
def _infer_lstm_backward(args, attrs):
    if len(args) != 5:
        raise ShapeError(f"lstm_layer_backward: expected (h0, c0, w_hh, saved, gradient), got "
                         f"{len(args)} operands")
    h0, c0, w, ws, gy = args
    rows = ws.shape[0] if len(ws.shape) == 3 else 0
    t = _steps(rows)
    if t < 1 or rows != 6 * t + 1:
        raise ShapeError(f"lstm_layer_backward: expected lstm_layer's result (6 T + 1, N, H), "
                         f"got shape {tuple(ws.shape)}")
    n, h = ws.shape[1:]
    _check("lstm_layer_backward", Meta((t, n, 4 * h), ws.dtype), h0, c0, w)
    if tuple(gy.shape) != (t + 1, n, h) or gy.dtype is not ws.dtype:
        raise ShapeError(f"lstm_layer_backward: expected the gradient as "
                         f"{ws.dtype.name}{[t + 1, n, h]}, got {gy.dtype.name}{list(gy.shape)}")
    return Plan((t + 1, n, 4 * h), ws.dtype, ws.dtype)


def _kernel_lstm_backward(ks, p, args, attrs, plan, device):
    h0, c0, w, ws, gy = p
    rows, n, hs = args[3].shape
    t, h4 = _steps(rows), 4 * args[3].shape[2]
    dt = plan.dtype.np
    order = _order(t, attrs)

    def bin_(op, a, b):
        return ks.binary(op, a, b, dt, dt)

    def gate(a, k):                     # gate k of a (T, N, 4H) array, a view
        return ks.index(a, (slice(0, t, 1), slice(0, n, 1), slice(k * hs, (k + 1) * hs, 1)))

    # what the forward saved: the cell states (T, N, H) and pre-activations (T, N, 4H)
    cs = ks.index(ws, (slice(t + 1, 2 * t + 1, 1),))
    s = ks.reshape(ks.index(ws, (slice(2 * t + 1, rows, 1),)), (t, n, h4))
    sig = ks.unary("sigmoid", s, dt)
    tg = ks.unary("tanh", gate(s, 2), dt)
    tc = ks.unary("tanh", cs, dt)
    i, f, o = gate(sig, 0), gate(sig, 1), gate(sig, 3)
    dsig = bin_("sub", sig, bin_("mul", sig, sig))       # sigmoid' = s - s^2
    carry = bin_("sub", o, bin_("mul", bin_("mul", o, tc), tc))  # dc += dh o (1 - tanh(c)^2)
    q = bin_("mul", tc, gate(dsig, 3))                   # dS_o = dh tanh(c) o'
    r = bin_("mul", tg, gate(dsig, 0))                   # dS_i = dc g i'
    v = bin_("sub", i, bin_("mul", bin_("mul", i, tg), tg))      # dS_g = dc i (1 - g^2)
    df = gate(dsig, 1)                                   # dS_f = dc c_prev f'
    mm = _product(ks, n, h4, hs, plan.dtype)
    ds = [None] * t
    dc = ks.index(gy, (t,))
    dh_next = None
    back = list(reversed(order))
    for k, step in enumerate(back):
        dh = ks.index(gy, (step,))
        if dh_next is not None:
            dh = bin_("add", dh, dh_next)
        dc = bin_("add", dc, bin_("mul", dh, ks.index(carry, (step,))))
        cprev = c0 if k == t - 1 else ks.index(cs, (back[k + 1],))
        d = ks.cat([bin_("mul", dc, ks.index(r, (step,))),
                    bin_("mul", bin_("mul", dc, cprev), ks.index(df, (step,))),
                    bin_("mul", dc, ks.index(v, (step,))),
                    bin_("mul", dh, ks.index(q, (step,)))], 1)
        ds[step] = ks.reshape(d, (1, n, h4))
        dc = bin_("mul", dc, ks.index(f, (step,)))
        dh_next = mm(d, w)
    zeros = ks.full((n, 2 * hs), 0, dt)
    return ks.cat(ds + [ks.reshape(ks.cat([dh_next, dc, zeros], 1), (1, n, h4))], 0)


_INTERNAL = "internal op of lstm_layer's gradient (training graphs only)"

register(OpSpec("lstm_layer", "nn", _infer_lstm, _kernel_lstm, cost="compute",
                backward=_grad_lstm, decompose=_decompose_lstm))
register(OpSpec("lstm_layer_backward", "nn", _infer_lstm_backward, _kernel_lstm_backward,
                cost="compute", differentiable=False, onnx_skip=_INTERNAL, record_whole=True))


def lstm_layer(xg, h0, c0, w_hh, b_hh=None, reverse: bool = False):
    """One LSTM layer in one direction: (T + 1, N, H), the outputs ``h_t`` (time order) and
    the final cell state in the last row (see the module docstring)."""
    args = (xg, h0, c0, w_hh) + (() if b_hh is None else (b_hh,))
    out = run("lstm_layer", args, {"reverse": bool(reverse)})
    return getitem(out, (slice(0, xg.shape[0] + 1),))
