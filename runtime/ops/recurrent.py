"""The recurrence of one recurrent layer in one direction as one op: ``lstm_layer``,
``gru_layer`` and ``rnn_layer`` (their front end is ``rt.nn.LSTM``/``GRU``/``RNN``), each with
the op of its gradient (``..._backward``).

``lstm_layer(xg, h0, c0, w_hh[, b_hh])``: ``xg`` (T, N, 4H) is every step's input projection
(``x @ W_ih.T + b_ih``), ``h0``/``c0`` (N, H) the initial state, ``w_hh`` (4H, H) the hidden
weight and ``b_hh`` (4H,) its bias; gates i, f, g, o in PyTorch's order.  The op's result
(6T + 1, N, H) holds the outputs ``h_t`` in time order, the final cell state, then what the
gradient reads: every step's cell state (T rows) and gate values (4T rows, each step's
sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) as a gate-major (4, N, H) block); the
``lstm_layer`` function returns the first T + 1 rows.  ``reverse`` runs the steps from the last
to the first (a bidirectional layer's second direction).  ``gru_layer`` and ``rnn_layer`` are
described at their records below.

A kernel set with the ``recurrent`` capability (cpu) runs the recurrences itself:
one product and one fused cell kernel per step, forward and backward.  Elsewhere the kernel
loops over time calling the kernel set's product and its elementwise kernels, gate-major (each
gate a contiguous block, so every elementwise call reads whole arrays).  The tape records one
node for the whole layer instead of a dozen per step.  The backward op runs backpropagation
through time in reverse: the gate derivatives from what the forward saved, per step one
product for the hidden state's gradient.  The rule adds the hidden weight's gradient as one
product over all steps; the input projection's gradient is the pre-activation gradient itself,
so ``linear``'s rule gives the input and ``W_ih`` theirs as one product each.  Recording devices
keep these ops whole, so a captured or compiled graph (``rt.compile``'s training steps) runs the
layer's kernel; ONNX export writes the decomposition (the per-step primitives) in their place.
The backward ops are recorded whole too (only gradient rules emit them) and have no ONNX form.
"""
from __future__ import annotations

from ..core.errors import ArgumentValueError, DTypeError, ShapeError
from ..core.registry import Meta, OpSpec, Plan, register
from ..dispatch import dispatch as run
from ..kernel_sets import supports
from .elementwise import add, mul, relu, sigmoid, sub, tanh
from .index import getitem
from .linalg import matmul
from .shape import cat, reshape, transpose, unsqueeze

__all__ = ["lstm_layer", "gru_layer", "rnn_layer"]

_ALL = slice(None)


def _check(name, gates, xg, states, w, bias):
    """(T, N, H) of a layer with ``gates`` gates after checking its operands: ``xg`` the input
    projection (T, N, gates * H), ``states`` the (name, tensor) initial states (N, H), ``w`` the
    hidden weight (gates * H, H) and ``bias`` none or one hidden bias (gates * H,)."""
    proj = "H" if gates == 1 else f"{gates} * H"
    if len(xg.shape) != 3 or xg.shape[0] < 1 or xg.shape[2] % gates:
        raise ShapeError(f"{name}: expected the input projection as (T >= 1, N, {proj}), got "
                         f"shape {tuple(xg.shape)}")
    t, n, g = xg.shape
    h = g // gates
    for what, a, want in (*((s, a, (n, h)) for s, a in states), ("w_hh", w, (g, h)),
                          *(("b_hh", b, (g,)) for b in bias)):
        if tuple(a.shape) != want:
            raise ShapeError(f"{name}: expected {what} of shape {want} for an input projection "
                             f"of shape {tuple(xg.shape)}, got {tuple(a.shape)}")
    ops = (xg, *(a for _, a in states), w, *bias)
    if len({a.dtype for a in ops}) != 1 or not xg.dtype.is_float:
        names = ", ".join(("xg", *(s for s, _ in states), "w_hh"))
        raise DTypeError(f"{name}: expected one float dtype for {names} and b_hh, got "
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
    xg, h0, c0, w, *bias = args
    t, n, h = _check("lstm_layer", 4, xg, (("h0", h0), ("c0", c0)), w, bias)
    return Plan((6 * t + 1, n, h), args[0].dtype, args[0].dtype)


def _unstack(ks, a, shape):
    """The views ``a[0]``, ``a[1]``, ... of payload ``a`` (leading dim first, each of ``shape``),
    in one call where the kernel set splits (views of a copy when ``a`` is not contiguous)."""
    count = a.shape[0]
    if not supports(ks, "split"):
        return [ks.index(a, (k,)) for k in range(count)]
    size = 1
    for d in shape:
        size *= d
    return ks.split(ks.reshape(a, (count * size,)), [size] * count, [tuple(shape)] * count)


class _Prepared:
    """The kernel set's elementwise calls for one dtype: its prepared kernels for operands of
    a fixed shape where it has them (the same kernels, decided once), else the generic ones."""

    def __init__(self, ks, dtype):
        self.ks, self.dt, self.fns = ks, dtype.np, {}
        self.prepared = supports(ks, "prepared")

    def __call__(self, op, *xs):
        key = (op, len(xs), xs[0].shape)
        fn = self.fns.get(key)
        if fn is None:
            ks, dt = self.ks, self.dt
            if len(xs) == 1:
                fn = ks.unary_fn(op, dt, dt, xs[0].shape) if self.prepared else None
                fn = fn or (lambda x: ks.unary(op, x, dt))
            else:
                same = xs[0].shape == xs[1].shape and self.prepared
                fn = ks.binary_fn(op, dt, dt, dt, dt, xs[0].shape) if same else None
                fn = fn or (lambda a, b: ks.binary(op, a, b, dt, dt))
            self.fns[key] = fn
        return fn(*xs)


def _gate_major(ks, xg, b, t, n, hs, dt):
    """(T, 4, N, H): ``xg`` (T, N, 4H) plus the bias (None: none), each gate's rows contiguous."""
    v = ks.permute(ks.reshape(xg, (t, n, 4, hs)), (0, 2, 1, 3))
    if b is None:
        return ks.copy(v)
    return ks.binary("add", v, ks.reshape(b, (1, 4, 1, hs)), dt, dt)


def _hidden_weight(ks, w, hs):
    """(4, H, H): each gate's block of ``w_hh`` (4H, H) transposed, contiguous."""
    return ks.copy(ks.permute(ks.reshape(w, (4, hs, hs)), (0, 2, 1)))


def _kernel_lstm(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.lstm_forward(p[0], p[4] if len(p) == 5 else None, *p[1:4], attrs["reverse"])
    # gate-major throughout: a step's pre-activations and gates are (4, N, H), each gate a
    # contiguous block and each elementwise call reads whole arrays
    h, c, w = p[1:4]
    t, n, h4 = args[0].shape
    hs = h4 // 4
    dt = plan.dtype.np
    x4 = _gate_major(ks, p[0], p[4] if len(p) == 5 else None, t, n, hs, dt)
    w4 = _hidden_weight(ks, w, hs)
    ew = _Prepared(ks, plan.dtype)
    reshape_, matmul_, expand = ks.reshape, ks.matmul, ks.expand
    ys, cs, ss = [None] * t, [None] * t, [None] * t
    xs = _unstack(ks, x4, (4, n, hs))
    gates = (n, hs)
    for step in _order(t, attrs):
        s = ew("add", xs[step], matmul_(expand(reshape_(h, (1, n, hs)), (4, n, hs)), w4))
        sg = _unstack(ks, s, gates)[2]
        gi, gf, _, go = _unstack(ks, ew("sigmoid", s), gates)
        gg = ew("tanh", sg)
        c = ew("add", ew("mul", gf, c), ew("mul", gi, gg))
        h = ew("mul", go, ew("tanh", c))
        ys[step], cs[step] = reshape_(h, (1, n, hs)), reshape_(c, (1, n, hs))
        ss[step] = ks.cat([reshape_(a, (1, n, hs)) for a in (gi, gf, gg, go)], 0)
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
        gi, gf, gg, go = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        c = add(mul(gf, c), mul(gi, gg))
        h = mul(go, tanh(c))
        ys[step], cs[step] = unsqueeze(h, 0), unsqueeze(c, 0)
        ss[step] = cat([unsqueeze(a, 0) for a in (gi, gf, gg, go)], 0)    # gate-major
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
    _check("lstm_layer_backward", 4, Meta((t, n, 4 * h), ws.dtype), (("h0", h0), ("c0", c0)), w,
           ())
    if tuple(gy.shape) != (t + 1, n, h) or gy.dtype is not ws.dtype:
        raise ShapeError(f"lstm_layer_backward: expected the gradient as "
                         f"{ws.dtype.name}{[t + 1, n, h]}, got {gy.dtype.name}{list(gy.shape)}")
    return Plan((t + 1, n, 4 * h), ws.dtype, ws.dtype)


def _kernel_lstm_backward(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.lstm_backward(*p, attrs["reverse"])
    h0, c0, w, ws, gy = p
    rows, n, hs = args[3].shape
    t = _steps(rows)
    dt = plan.dtype.np
    order = _order(t, attrs)
    ew = _Prepared(ks, plan.dtype)
    index, reshape_ = ks.index, ks.reshape

    def gate(a, k):                     # gate k of a (T, 4, N, H) array, a view
        return index(a, (slice(0, t, 1), k))

    # what the forward saved: the cell states (T, N, H), the gate values (T, 4, N, H)
    cs = index(ws, (slice(t + 1, 2 * t + 1, 1),))
    sig = reshape_(index(ws, (slice(2 * t + 1, rows, 1),)), (t, 4, n, hs))
    tg = gate(sig, 2)                   # tanh(g); gates 0, 1, 3 are sigmoids
    tc = ks.unary("tanh", cs, dt)
    i, o = gate(sig, 0), gate(sig, 3)
    dsig = ew("sub", sig, ew("mul", sig, sig))           # sigmoid' = s - s^2
    first = reshape_(c0, (1, n, hs))
    if t == 1:
        cprev = first
    elif attrs["reverse"]:
        cprev = ks.cat([index(cs, (slice(1, t, 1),)), first], 0)
    else:
        cprev = ks.cat([first, index(cs, (slice(0, t - 1, 1),))], 0)

    def mul(a, b):
        return ks.binary("mul", a, b, dt, dt)

    # dS_i, dS_f, dS_g = dc (g i', c_prev f', i (1 - g^2)): (T, 3, N, H); dS_o = dh tanh(c) o'
    coef = ks.cat([reshape_(a, (t, 1, n, hs)) for a in (
        mul(tg, gate(dsig, 0)), mul(cprev, gate(dsig, 1)),
        ks.binary("sub", i, mul(mul(i, tg), tg), dt, dt))], 1)
    q = mul(tc, gate(dsig, 3))
    carry = ks.binary("sub", o, mul(mul(o, tc), tc), dt, dt)    # dc += dh o (1 - tanh(c)^2)
    w4 = ks.reshape(w, (4, hs, hs))
    ds = [None] * t
    gys, carries, qs = (_unstack(ks, a, (n, hs)) for a in (gy, carry, q))
    coefs = _unstack(ks, coef, (3, n, hs))
    fs = _unstack(ks, ks.copy(gate(sig, 1)), (n, hs))
    dc = gys[t]
    dh_next = None
    for step in reversed(order):
        dh = gys[step]
        if dh_next is not None:
            dh = ew("add", dh, dh_next)
        dc = ew("add", dc, ew("mul", dh, carries[step]))
        d = ks.cat([ks.binary("mul", reshape_(dc, (1, n, hs)), coefs[step], dt, dt),
                    reshape_(ew("mul", dh, qs[step]), (1, n, hs))], 0)
        # back to (N, 4H) order for the gradients of xg and the weights: a view, copied once
        # by the cat below
        ds[step] = reshape_(ks.permute(d, (1, 0, 2)), (1, n, 4, hs))
        dc = ew("mul", dc, fs[step])
        # d h_prev = sum over gates of dS_k @ W_k
        dh_next = ks.reduce("sum", ks.matmul(d, w4), (0,), False, dt)
    last = ks.cat([dh_next, dc, ks.full((n, 2 * hs), 0, dt)], 1)
    return reshape_(ks.cat(ds + [reshape_(last, (1, n, 4, hs))], 0), (t + 1, n, 4 * hs))


def _internal(layer):
    return f"internal op of {layer}'s gradient (training graphs only)"


register(OpSpec("lstm_layer", "nn", _infer_lstm, _kernel_lstm, cost="compute",
                backward=_grad_lstm, decompose=_decompose_lstm, record_whole=True))
register(OpSpec("lstm_layer_backward", "nn", _infer_lstm_backward, _kernel_lstm_backward,
                cost="compute", differentiable=False, onnx_skip=_internal("lstm_layer"), record_whole=True))


def lstm_layer(xg, h0, c0, w_hh, b_hh=None, reverse: bool = False):
    """One LSTM layer in one direction: (T + 1, N, H), the outputs ``h_t`` (time order) and
    the final cell state in the last row (see the module docstring)."""
    args = (xg, h0, c0, w_hh) + (() if b_hh is None else (b_hh,))
    out = run("lstm_layer", args, {"reverse": bool(reverse)})
    return getitem(out, (slice(0, xg.shape[0] + 1),))


# --------------------------------------------------------------------------- GRU
# ``gru_layer(xg, h0, w_hh[, b_hh])``: ``xg`` (T, N, 3H) the input projection (``x @ W_ih.T +
# b_ih``), gates r, z, n; the result (5T, N, H) holds the outputs ``h_t`` in time order, then
# per step the saved (r, z, n, W_hn h + b_hn), gate-major; the ``gru_layer`` function returns
# the first T rows.  n reads the hidden projection through r, so the backward op gives the
# gradients of the input projection and of the hidden one apart.

def _infer_gru(args, attrs):
    if len(args) not in (3, 4):
        raise ShapeError(f"gru_layer: expected (xg, h0, w_hh[, b_hh]), got {len(args)} operands")
    xg, h0, w, *bias = args
    t, n, h = _check("gru_layer", 3, xg, (("h0", h0),), w, bias)
    return Plan((5 * t, n, h), args[0].dtype, args[0].dtype)


def _kernel_gru(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.gru_forward(p[0], p[3] if len(p) == 4 else None, p[1], p[2], attrs["reverse"])
    h, w = p[1], p[2]
    t, n, h3 = args[0].shape
    hs = h3 // 3
    index, reshape_, expand = ks.index, ks.reshape, ks.expand
    x3 = ks.copy(ks.permute(reshape_(p[0], (t, n, 3, hs)), (0, 2, 1, 3)))     # (T, 3, N, H)
    w3 = ks.copy(ks.permute(reshape_(w, (3, hs, hs)), (0, 2, 1)))
    bias = None
    if len(p) == 4:                     # (3, N, H): b_hh spread over the batch, once
        bias = ks.copy(expand(reshape_(p[3], (3, 1, hs)), (3, n, hs)))
    ew = _Prepared(ks, plan.dtype)
    two = (slice(0, 2, 1),)
    ys, saved = [None] * t, [None] * t
    xs = _unstack(ks, x3, (3, n, hs))
    for step in _order(t, attrs):
        hg = ks.matmul(expand(reshape_(h, (1, n, hs)), (3, n, hs)), w3)
        if bias is not None:
            hg = ew("add", hg, bias)
        x = xs[step]
        rz = ew("sigmoid", ew("add", index(x, two), index(hg, two)))
        r, z = _unstack(ks, rz, (n, hs))
        hn = index(hg, (2,))
        nn_ = ew("tanh", ew("add", index(x, (2,)), ew("mul", r, hn)))
        h = ew("add", nn_, ew("mul", z, ew("sub", h, nn_)))
        ys[step] = reshape_(h, (1, n, hs))
        saved[step] = ks.cat([rz, reshape_(nn_, (1, n, hs)), reshape_(hn, (1, n, hs))], 0)
    return ks.cat(ys + saved, 0)


def _decompose_gru(args, attrs):
    xg, h, w = args[:3]
    t, n, h3 = xg.shape
    hs = h3 // 3
    wt = transpose(w, 0, 1)
    ys, saved = [None] * t, [None] * t

    def part(a, k):
        return getitem(a, (_ALL, slice(k * hs, (k + 1) * hs)))
    for step in _order(t, attrs):
        x = getitem(xg, (step,))
        hg = matmul(h, wt)
        if len(args) == 4:
            hg = add(hg, args[3])
        r, z = sigmoid(add(part(x, 0), part(hg, 0))), sigmoid(add(part(x, 1), part(hg, 1)))
        hn = part(hg, 2)
        nn_ = tanh(add(part(x, 2), mul(r, hn)))
        h = add(nn_, mul(z, sub(h, nn_)))
        ys[step] = unsqueeze(h, 0)
        saved[step] = cat([unsqueeze(a, 0) for a in (r, z, nn_, hn)], 0)
    return cat(ys + saved, 0)


def _grad_gru(c, g):
    h0, w = c.input(1), c.input(2)
    ws = c.output()
    t, n, hs = ws.shape[0] // 5, ws.shape[1], ws.shape[2]
    # only the outputs reach the user (the gru_layer function's slice): the saved rows' gradient
    # is zero
    out = run("gru_layer_backward", (h0, w, ws, getitem(g, (slice(0, t),))), c.attrs)
    gx = getitem(out, (slice(0, t),))                   # d(input projection), (T, N, 3H)
    gh = getitem(out, (slice(t, 2 * t),))               # d(hidden projection), (T, N, 3H)
    gh0 = getitem(getitem(out, (2 * t,)), (_ALL, slice(0, hs))) if c.needs(1) else None
    gw = None
    if c.needs(2):
        prev = _previous(getitem(ws, (slice(0, t),)), h0, t, c.attrs["reverse"])
        gw = matmul(transpose(reshape(gh, (t * n, 3 * hs)), 0, 1), reshape(prev, (t * n, hs)))
    return gx, gh0, gw, *((gh,) if c.arity == 4 else ())


def _infer_gru_backward(args, attrs):
    if len(args) != 4:
        raise ShapeError(f"gru_layer_backward: expected (h0, w_hh, saved, gradient), got "
                         f"{len(args)} operands")
    h0, w, ws, gy = args
    rows = ws.shape[0] if len(ws.shape) == 3 else 0
    t = rows // 5
    if t < 1 or rows != 5 * t:
        raise ShapeError(f"gru_layer_backward: expected gru_layer's result (5 T, N, H), got "
                         f"shape {tuple(ws.shape)}")
    n, h = ws.shape[1:]
    _check("gru_layer_backward", 3, Meta((t, n, 3 * h), ws.dtype), (("h0", h0),), w, ())
    if tuple(gy.shape) != (t, n, h) or gy.dtype is not ws.dtype:
        raise ShapeError(f"gru_layer_backward: expected the gradient as "
                         f"{ws.dtype.name}{[t, n, h]}, got {gy.dtype.name}{list(gy.shape)}")
    return Plan((2 * t + 1, n, 3 * h), ws.dtype, ws.dtype)


def _kernel_gru_backward(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.gru_backward(*p, attrs["reverse"])
    h0, w, ws, gy = p
    rows, n, hs = args[2].shape
    t = rows // 5
    dt = plan.dtype.np
    ew = _Prepared(ks, plan.dtype)
    index, reshape_ = ks.index, ks.reshape

    def op(name, a, b):
        return ks.binary(name, a, b, dt, dt)

    saved = reshape_(index(ws, (slice(t, rows, 1),)), (t, 4, n, hs))
    r, z, nn_, hn = (index(saved, (slice(0, t, 1), k)) for k in range(4))
    first = reshape_(h0, (1, n, hs))
    ys = index(ws, (slice(0, t, 1),))
    if t == 1:
        prev = first
    elif attrs["reverse"]:
        prev = ks.cat([index(ys, (slice(1, t, 1),)), first], 0)
    else:
        prev = ks.cat([first, index(ys, (slice(0, t - 1, 1),))], 0)
    omz = op("sub", ks.full((t, n, hs), 1, dt), z)
    cn = op("sub", omz, op("mul", op("mul", omz, nn_), nn_))      # (1 - z)(1 - n^2)
    cz = op("mul", op("sub", prev, nn_), op("sub", z, op("mul", z, z)))   # (h_prev - n) z'
    cr = op("mul", hn, op("sub", r, op("mul", r, r)))              # hn r'
    rc, zc = ks.copy(r), ks.copy(z)
    w3 = reshape_(w, (3, hs, hs))
    dx, dhid = [None] * t, [None] * t
    gys, cns, czs, crs, rcs, zcs = (_unstack(ks, a, (n, hs)) for a in (gy, cn, cz, cr, rc, zc))
    dh_next = None
    for step in reversed(_order(t, attrs)):
        dh = gys[step]
        if dh_next is not None:
            dh = ew("add", dh, dh_next)
        dnp = ew("mul", dh, cns[step])
        dzp = ew("mul", dh, czs[step])
        drp = ew("mul", dnp, crs[step])
        rows_ = [reshape_(a, (1, n, hs)) for a in (drp, dzp)]
        dx_t = ks.cat(rows_ + [reshape_(dnp, (1, n, hs))], 0)
        dh_t = ks.cat(rows_ + [reshape_(ew("mul", dnp, rcs[step]), (1, n, hs))], 0)
        dx[step] = reshape_(ks.permute(dx_t, (1, 0, 2)), (1, n, 3, hs))
        dhid[step] = reshape_(ks.permute(dh_t, (1, 0, 2)), (1, n, 3, hs))
        # d h_prev = dh z + sum over gates of dhg_k @ W_k
        dh_next = ew("add", ew("mul", dh, zcs[step]),
                     ks.reduce("sum", ks.matmul(dh_t, w3), (0,), False, dt))
    last = ks.cat([dh_next, ks.full((n, 2 * hs), 0, dt)], 1)
    return reshape_(ks.cat(dx + dhid + [reshape_(last, (1, n, 3, hs))], 0), (2 * t + 1, n, 3 * hs))


register(OpSpec("gru_layer", "nn", _infer_gru, _kernel_gru, cost="compute",
                backward=_grad_gru, decompose=_decompose_gru, record_whole=True))
register(OpSpec("gru_layer_backward", "nn", _infer_gru_backward, _kernel_gru_backward,
                cost="compute", differentiable=False, onnx_skip=_internal("gru_layer"),
                record_whole=True))


def gru_layer(xg, h0, w_hh, b_hh=None, reverse: bool = False):
    """One GRU layer in one direction: (T, N, H), the outputs ``h_t`` in time order (see
    above)."""
    args = (xg, h0, w_hh) + (() if b_hh is None else (b_hh,))
    out = run("gru_layer", args, {"reverse": bool(reverse)})
    return getitem(out, (slice(0, xg.shape[0]),))


# --------------------------------------------------------------------------- Elman RNN
# ``rnn_layer(xg, h0, w_hh[, b_hh], nonlinearity=)``: ``h_t = act(xg_t + h_{t-1} @ W_hh.T +
# b_hh)``, ``act`` tanh or relu; the result (T, N, H) is the outputs in time order, all the
# gradient needs (tanh' = 1 - h^2, relu' = [h > 0]).

_ACTS = ("tanh", "relu")


def _infer_rnn(args, attrs):
    if len(args) not in (3, 4):
        raise ShapeError(f"rnn_layer: expected (xg, h0, w_hh[, b_hh]), got {len(args)} operands")
    if attrs.get("nonlinearity") not in _ACTS:
        raise ArgumentValueError(f"rnn_layer: nonlinearity must be 'tanh' or 'relu', got "
                         f"{attrs.get('nonlinearity')!r}")
    xg, h0, w, *bias = args
    t, n, h = _check("rnn_layer", 1, xg, (("h0", h0),), w, bias)
    return Plan((t, n, h), xg.dtype, xg.dtype)


def _kernel_rnn(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.rnn_forward(p[0], p[3] if len(p) == 4 else None, p[1], p[2],
                              attrs["nonlinearity"] == "relu", attrs["reverse"])
    h, w = p[1], p[2]
    t, n, hs = args[0].shape
    dt = plan.dtype.np
    x = ks.binary("add", p[0], p[3], dt, dt) if len(p) == 4 else p[0]
    mm = _product(ks, n, hs, hs, plan.dtype)
    wt = ks.copy(ks.permute(w, (1, 0)))
    ew = _Prepared(ks, plan.dtype)
    act = attrs["nonlinearity"]
    ys = [None] * t
    xs = _unstack(ks, x, (n, hs))
    for step in _order(t, attrs):
        h = ew(act, ew("add", xs[step], mm(h, wt)))
        ys[step] = ks.reshape(h, (1, n, hs))
    return ks.cat(ys, 0)


def _decompose_rnn(args, attrs):
    xg, h, w = args[:3]
    if len(args) == 4:
        xg = add(xg, args[3])
    wt = transpose(w, 0, 1)
    act = tanh if attrs["nonlinearity"] == "tanh" else relu
    ys = [None] * xg.shape[0]
    for step in _order(xg.shape[0], attrs):
        h = act(add(getitem(xg, (step,)), matmul(h, wt)))
        ys[step] = unsqueeze(h, 0)
    return cat(ys, 0)


def _grad_rnn(c, g):
    h0, w = c.input(1), c.input(2)
    ys = c.output()
    t, n, hs = ys.shape
    out = run("rnn_layer_backward", (h0, w, ys, g), c.attrs)
    ds = getitem(out, (slice(0, t),))                   # d(pre-activations), (T, N, H)
    gh0 = getitem(out, (t,)) if c.needs(1) else None
    gw = None
    if c.needs(2):
        prev = _previous(ys, h0, t, c.attrs["reverse"])
        gw = matmul(transpose(reshape(ds, (t * n, hs)), 0, 1), reshape(prev, (t * n, hs)))
    return ds, gh0, gw, *((ds,) if c.arity == 4 else ())


def _infer_rnn_backward(args, attrs):
    if len(args) != 4:
        raise ShapeError(f"rnn_layer_backward: expected (h0, w_hh, output, gradient), got "
                         f"{len(args)} operands")
    h0, w, ys, gy = args
    plan = _infer_rnn((ys, h0, w), attrs)
    if tuple(gy.shape) != tuple(ys.shape) or gy.dtype is not ys.dtype:
        raise ShapeError(f"rnn_layer_backward: expected the gradient as "
                         f"{ys.dtype.name}{list(ys.shape)}, got {gy.dtype.name}{list(gy.shape)}")
    t, n, h = plan.shape
    return Plan((t + 1, n, h), plan.dtype, plan.dtype)


def _kernel_rnn_backward(ks, p, args, attrs, plan, device):
    if supports(ks, "recurrent"):
        return ks.rnn_backward(*p, attrs["nonlinearity"] == "relu", attrs["reverse"])
    h0, w, ys, gy = p
    t, n, hs = args[2].shape
    dt = plan.dtype.np
    ew = _Prepared(ks, plan.dtype)
    if attrs["nonlinearity"] == "tanh":                 # the activation's derivative, from h
        deriv = ks.binary("sub", ks.full((t, n, hs), 1, dt), ks.binary("mul", ys, ys, dt, dt),
                          dt, dt)
    else:
        deriv = ks.unary("sign", ys, dt)
    mm = _product(ks, n, hs, hs, plan.dtype)
    ds = [None] * t
    gys, derivs = _unstack(ks, gy, (n, hs)), _unstack(ks, deriv, (n, hs))
    dh_next = None
    for step in reversed(_order(t, attrs)):
        dh = gys[step]
        if dh_next is not None:
            dh = ew("add", dh, dh_next)
        d = ew("mul", dh, derivs[step])
        ds[step] = ks.reshape(d, (1, n, hs))
        dh_next = mm(d, w)
    return ks.cat(ds + [ks.reshape(dh_next, (1, n, hs))], 0)


register(OpSpec("rnn_layer", "nn", _infer_rnn, _kernel_rnn, cost="compute",
                backward=_grad_rnn, decompose=_decompose_rnn, record_whole=True))
register(OpSpec("rnn_layer_backward", "nn", _infer_rnn_backward, _kernel_rnn_backward,
                cost="compute", differentiable=False, onnx_skip=_internal("rnn_layer"),
                record_whole=True))


def rnn_layer(xg, h0, w_hh, b_hh=None, nonlinearity: str = "tanh", reverse: bool = False):
    """One Elman RNN layer in one direction: (T, N, H), the outputs ``h_t`` in time order."""
    args = (xg, h0, w_hh) + (() if b_hh is None else (b_hh,))
    return run("rnn_layer", args, {"nonlinearity": nonlinearity, "reverse": bool(reverse)})
