"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells ``RNNCell``, ``LSTMCell``,
``GRUCell``, with PyTorch's arguments, parameter names, shapes, gate order and init, so a
PyTorch state dict loads one to one and gives the same outputs.

They are written with existing ops, so they run on every device.  Per layer and direction the
input projection of all time steps is one matmul (``x @ W_ih.T + b_ih`` over the whole
sequence); the recurrence is then one op, ``lstm_layer``, ``gru_layer`` or ``rnn_layer``
(``runtime.ops.recurrent``): one kernel call on a plain device (on the cpu set one product and one
fused cell kernel a step), one tape node on autodiff (backpropagation through time in its
backward op), one op of a captured graph (its kernel runs when the graph runs; ONNX export
writes its per-step primitives).  A projected LSTM (``proj_size``) runs step by step: on a
plain device each step traced once per signature and compiled by the tracing service (its
gate update one generated kernel), elsewhere the op chain.  The cells run that compiled or
chained step too.  The gradients reach every parameter, the input and the initial state.
"""
from __future__ import annotations

import math

from ..capture.tracing import TraceCache, compile_for, signature, trace
from ..core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..core.registry import Meta
from ..ops import api
from ..ops.recurrent import gru_layer, lstm_layer, rnn_layer
from ..tensor import Tensor
from . import functional as F, init
from ._make import bool_arg, factory, probability_arg, size_arg
from .module import Module, Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

#: gate rows per hidden unit of each mode (LSTM: i, f, g, o; GRU: r, z, n)
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _nonlinearity(name: str, nonlinearity) -> str:
    if not isinstance(nonlinearity, str) or nonlinearity not in ("tanh", "relu"):
        raise ArgumentValueError(f"{name}: unknown nonlinearity {nonlinearity!r} (expected "
                                 f"'tanh' or 'relu')")
    return nonlinearity


def _check_sizes(name: str, input_size, hidden_size) -> tuple:
    input_size, hidden_size = size_arg(name, "input_size", input_size), \
        size_arg(name, "hidden_size", hidden_size)
    if hidden_size == 0:
        raise ArgumentValueError(f"{name}: hidden_size must be greater than zero, got 0")
    return input_size, hidden_size


def _check_dtype(name: str, what: str, t: Tensor, want) -> None:
    if t.dtype is not want:
        raise DTypeError(f"{name}: {what} has dtype {t.dtype.name}, the parameters "
                         f"{want.name}")


# --------------------------------------------------------------------------- one time step
# ``xg`` is the step's input projection ``x @ W_ih.T + b_ih`` and ``hg`` the hidden one
# ``h @ W_hh.T + b_hh``, both (N, gates * H); the updates are PyTorch's.

def _lstm_gates(xg, hg, c):
    i, f, g, o = api.chunk(api.add(xg, hg), 4, -1)
    c = api.add(api.mul(api.sigmoid(f), c), api.mul(api.sigmoid(i), api.tanh(g)))
    return api.mul(api.sigmoid(o), api.tanh(c)), c


def _gru_gates(xg, hg, h):
    # r and z read the sum of both projections (one add over all gates, the compiled step's
    # matmul epilogue), n reads them apart; four slices instead of six
    k = h.shape[-1]
    s = api.add(xg, hg)
    r = api.sigmoid(s[..., :k])
    z = api.sigmoid(s[..., k:2 * k])
    n = api.tanh(api.add(xg[..., 2 * k:], api.mul(r, hg[..., 2 * k:])))
    return api.add(n, api.mul(z, api.sub(h, n)))      # (1 - z) * n + z * h


def _step(mode, xg, h, c, w_hh, b_hh, w_hr):
    """One time step of ``mode`` from the input projection ``xg``: the new (h, c) (c None but
    for an LSTM)."""
    hg = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        h, c = _lstm_gates(xg, hg, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        return _gru_gates(xg, hg, h), None
    act = api.relu if mode == "RNN_RELU" else api.tanh
    return act(api.add(xg, hg)), None


#: (mode, operand shapes and dtypes, device) -> the compiled step
_STEPS = TraceCache(256)


def _stepper(mode, xg, h, c, w_hh, b_hh, w_hr):
    """``step(xg_t, h, c) -> (h, c)`` with these weights, for steps like ``xg`` (a tensor or
    a (shape, dtype) stand-in), ``h`` and ``c``.  On a plain device the step (the
    hidden matmul and every gate) is traced once per signature and compiled by the tracing
    service, so its elementwise gate update runs as one generated kernel with one output per
    state; elsewhere (autodiff, capture) it is the op chain itself, so gradients and captured
    graphs see the primitives."""
    consts = (w_hh, b_hh, w_hr)
    if h.device.family != "plain":
        return lambda x, h, c: _step(mode, x, h, c, *consts)
    lstm = mode == "LSTM"
    operands = [t for t in (xg, h, c if lstm else None) + consts if t is not None]
    present = tuple(t is not None for t in consts)

    def step(*ts):
        it = iter(ts)
        x, h = next(it), next(it)
        c = next(it) if lstm else None
        w = [next(it) if p else None for p in present]
        h, c = _step(mode, x, h, c, *w)
        return (h, c) if lstm else h

    def build():
        return compile_for(trace(step, [Meta(t.shape, t.dtype) for t in operands]), h.device)
    key = (mode, present, signature(operands), h.device)
    exe = _STEPS.get(key, build)
    weights = [t for t in consts if t is not None]
    if lstm:
        return lambda x, h, c: tuple(exe(x, h, c, *weights))
    return lambda x, h, c: (exe(x, h, *weights)[0], None)


def _time_slicer(xg):
    """``at(t) -> xg[t]``.  On autodiff the gradient of a slice is a tensor of the whole
    ``xg`` (zeros around the slice, then added into ``xg``'s gradient), so slicing every step
    straight from ``xg`` costs O(T**2) in the backward pass; slicing it into blocks of about
    sqrt(T) steps first and each step from its block costs O(T**1.5)."""
    length = xg.shape[0]
    if xg.device.family != "autodiff" or not xg.requires_grad or length < 9:
        return xg.__getitem__
    b = math.isqrt(length - 1) + 1
    blocks = [xg[s:s + b] for s in range(0, length, b)]
    return lambda t: blocks[t // b][t % b]


# --------------------------------------------------------------------------- layers
class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: the parameters of every layer and direction
    (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``, with
    ``_reverse`` for the backward direction and ``weight_hr_l{k}`` for an LSTM's projection),
    all uniform in ±1/sqrt(hidden_size), and the loop over layers, directions and time."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, dtype=None, device=None):
        super().__init__()
        name = type(self).__name__
        input_size, hidden_size = _check_sizes(name, input_size, hidden_size)
        num_layers = size_arg(name, "num_layers", num_layers)
        if num_layers < 1:
            raise ArgumentValueError(f"{name}: num_layers must be at least 1, got {num_layers}")
        dropout = probability_arg(name, "dropout", dropout)
        proj_size = size_arg(name, "proj_size", proj_size)
        if proj_size >= hidden_size:
            raise ArgumentValueError(f"{name}: proj_size ({proj_size}) must be smaller than "
                                     f"hidden_size ({hidden_size})")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias = bool_arg(name, "bias", bias)
        self.batch_first = bool_arg(name, "batch_first", batch_first)
        self.dropout, self.bidirectional = dropout, bool_arg(name, "bidirectional", bidirectional)
        self.proj_size = proj_size
        dirs = 2 if self.bidirectional else 1
        out_size = proj_size or hidden_size
        gate_size = _GATES[mode] * hidden_size
        make = factory(dtype, device, type(self).__name__)
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else out_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                setattr(self, "weight_ih" + sfx, Parameter(make(gate_size, layer_in)))
                setattr(self, "weight_hh" + sfx, Parameter(make(gate_size, out_size)))
                if self.bias:
                    setattr(self, "bias_ih" + sfx, Parameter(make(gate_size)))
                    setattr(self, "bias_hh" + sfx, Parameter(make(gate_size)))
                if proj_size:
                    setattr(self, "weight_hr" + sfx, Parameter(make(proj_size, hidden_size)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter uniform in ±1/sqrt(hidden_size) (PyTorch's init)."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self._parameters.values():
            init.uniform_(p, -bound, bound)

    @property
    def _dirs(self) -> int:
        return 2 if self.bidirectional else 1

    def _params(self, layer: int, d: int) -> tuple:
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = self._parameters
        b_ih = get["bias_ih" + sfx].value if self.bias else None
        b_hh = get["bias_hh" + sfx].value if self.bias else None
        w_hr = get["weight_hr" + sfx].value if self.proj_size else None
        return get["weight_ih" + sfx].value, get["weight_hh" + sfx].value, b_ih, b_hh, w_hr

    def _state_shape(self, batch, real: bool = False) -> tuple:
        size = self.hidden_size if real or not self.proj_size else self.proj_size
        lead = (self.num_layers * self._dirs,)
        return lead + ((batch, size) if batch is not None else (size,))

    def _check_input(self, x):
        name = type(self).__name__
        if not isinstance(x, Tensor):
            raise ArgumentTypeError(f"{name}: expected a Tensor input, got {type(x).__name__}")
        if x.ndim not in (2, 3):
            raise ShapeError(f"{name}: expected a 3-D (batched) or 2-D (unbatched) input, got "
                             f"shape {x.shape}")
        if x.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: expected input with {self.input_size} features in its "
                             f"last dimension, got shape {x.shape}")
        if x.shape[1 if self.batch_first and x.ndim == 3 else 0] == 0:
            raise ShapeError(f"{name}: expected a sequence length larger than 0, got input of "
                             f"shape {x.shape}")
        _check_dtype(name, "the input", x, self._parameters["weight_ih_l0"].value.dtype)

    def _check_state(self, what: str, h, batch, real: bool = False):
        """``h`` (a given initial state, or None for zeros) as (layers * dirs, N, size)."""
        name = type(self).__name__
        want = self._state_shape(batch, real)
        if h is None:
            return None
        if not isinstance(h, Tensor):
            raise ArgumentTypeError(f"{name}: expected {what} to be a Tensor, got {type(h).__name__}")
        if tuple(h.shape) != want:
            kind = "batched 3-D" if batch is not None else "unbatched 2-D"
            raise ShapeError(f"{name}: expected {what} of shape {want} for {kind} input, got "
                             f"shape {h.shape}")
        _check_dtype(name, what, h, self._parameters["weight_ih_l0"].value.dtype)
        return h if batch is not None else api.unsqueeze(h, 1)

    def forward(self, input, hx=None):
        """``(output, h_n)`` (``(output, (h_n, c_n))`` for an LSTM) as PyTorch's: ``input``
        (L, N, H_in), (N, L, H_in) with ``batch_first``, or unbatched (L, H_in); ``hx`` the
        initial state (zeros when None)."""
        self._check_input(input)
        batched = input.ndim == 3
        batch = (input.shape[0] if self.batch_first else input.shape[1]) if batched else None
        lstm = self.mode == "LSTM"
        if lstm and hx is not None:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise ArgumentTypeError(f"LSTM: expected hx to be a tuple (h_0, c_0), got "
                                        f"{type(hx).__name__}")
            h0 = self._check_state("h_0", hx[0], batch)
            c0 = self._check_state("c_0", hx[1], batch, real=True)
        else:
            if hx is not None and isinstance(hx, (tuple, list)):
                raise ArgumentTypeError(f"{type(self).__name__}: expected hx to be a Tensor, "
                                        f"got {type(hx).__name__}")
            h0, c0 = self._check_state("hx", hx, batch), None
        x = input
        if not batched:
            x = api.unsqueeze(x, 1)
        elif self.batch_first:
            x = api.transpose(x, 0, 1)
        n = x.shape[1]
        dev, dt = x.device, x.dtype

        def zeros(size):
            return api.full((n, size), 0.0, dt, dev)

        out_size = self.proj_size or self.hidden_size
        h_last, c_last = [], []
        for layer in range(self.num_layers):
            if layer and self.training and self.dropout > 0:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for d in range(self._dirs):
                k = layer * self._dirs + d
                h = zeros(out_size) if h0 is None else h0[k]
                c = None
                if lstm:
                    c = zeros(self.hidden_size) if c0 is None else c0[k]
                ys, h, c = self._run(x, h, c, self._params(layer, d), reverse=bool(d))
                outs.append(ys)
                h_last.append(h)
                c_last.append(c)
            x = outs[0] if len(outs) == 1 else api.cat(outs, -1)
        h_n = api.stack(h_last, 0)
        c_n = api.stack(c_last, 0) if lstm else None
        if not batched:
            x = api.squeeze(x, 1)
            h_n = api.squeeze(h_n, 1)
            c_n = api.squeeze(c_n, 1) if lstm else None
        elif self.batch_first:
            x = api.transpose(x, 0, 1)
        return (x, (h_n, c_n)) if lstm else (x, h_n)

    def _run(self, x, h, c, params, reverse: bool):
        """One layer in one direction over ``x`` (L, N, in): (outputs (L, N, out), h, c)."""
        w_ih, w_hh, b_ih, b_hh, w_hr = params
        xg = F.linear(x, w_ih, b_ih)                    # every step's input projection at once
        length = x.shape[0]
        last = 0 if reverse else length - 1
        if w_hr is None:
            # the whole recurrence as one op: one kernel call, one tape node, one op of a
            # captured graph
            if self.mode == "LSTM":
                out = lstm_layer(xg, h, c, w_hh, b_hh, reverse)
                ys = out[:length]
                return ys, ys[last], out[length]
            if self.mode == "GRU":
                ys = gru_layer(xg, h, w_hh, b_hh, reverse)
            else:
                act = "relu" if self.mode == "RNN_RELU" else "tanh"
                ys = rnn_layer(xg, h, w_hh, b_hh, act, reverse)
            return ys, ys[last], None
        ys = [None] * length                            # a projected LSTM: step by step
        step = _stepper(self.mode, Meta(xg.shape[1:], xg.dtype), h, c, w_hh, b_hh, w_hr)
        at = _time_slicer(xg)
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            h, c = step(at(t), h, c)
            ys[t] = h
        return api.stack(ys, 0), h, c

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs cuDNN's weights into one buffer here; the parameters are
        used as they are (kept so PyTorch code runs unchanged)."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh)`` with ``act``
    tanh or relu (``nonlinearity``); stacked ``num_layers`` deep, optionally bidirectional,
    with ``dropout`` on the outputs of every layer but the last while training."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, dtype=None, device=None):
        nonlinearity = _nonlinearity("RNN", nonlinearity)
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype, device=device)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + ", nonlinearity='relu'"


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates (i, f, g, o stacked in that order in the
    weights' rows): ``c_t = f * c_{t-1} + i * g``, ``h_t = o * tanh(c_t)``; with
    ``proj_size > 0`` ``h_t`` is then projected by ``weight_hr`` to ``proj_size`` features.
    Forward takes ``(input, (h_0, c_0))`` and returns ``(output, (h_n, c_n))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, dtype=None, device=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype=dtype, device=device)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates (r, z, n in the weights' rows):
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h_t = (1 - z) * n + z * h_{t-1}``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype=None, device=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, dtype=dtype, device=device)


# --------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` (gates * hidden, input), ``weight_hh`` (gates *
    hidden, hidden), ``bias_ih``/``bias_hh``, uniform in ±1/sqrt(hidden_size)."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None,
                 device=None):
        super().__init__()
        name = type(self).__name__
        self.input_size, self.hidden_size = _check_sizes(name, input_size, hidden_size)
        self.bias = bool_arg(name, "bias", bias)
        make = factory(dtype, device, type(self).__name__)
        g = self._gates * self.hidden_size
        self.weight_ih = Parameter(make(g, self.input_size))
        self.weight_hh = Parameter(make(g, self.hidden_size))
        if self.bias:
            self.bias_ih = Parameter(make(g))
            self.bias_hh = Parameter(make(g))
        else:
            self.bias_ih = self.bias_hh = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter uniform in ±1/sqrt(hidden_size) (PyTorch's init)."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self._parameters.values():
            if p is not None:
                init.uniform_(p, -bound, bound)

    def _prepare(self, input, state, what="hx"):
        """(input as (N, in), the states named in ``what`` as (N, hidden), zeros where None,
        whether the input was batched)."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise ArgumentTypeError(f"{name}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ShapeError(f"{name}: expected a 2-D (batched) or 1-D (unbatched) input, got "
                             f"shape {input.shape}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: expected input with {self.input_size} features in its "
                             f"last dimension, got shape {input.shape}")
        dt = self._parameters["weight_ih"].value.dtype
        _check_dtype(name, "the input", input, dt)
        batched = input.ndim == 2
        x = input if batched else api.unsqueeze(input, 0)
        out = []
        for w, h in zip(what.split(","), state):
            if h is None:
                out.append(api.full((x.shape[0], self.hidden_size), 0.0, dt, x.device))
                continue
            if not isinstance(h, Tensor):
                raise ArgumentTypeError(f"{name}: expected {w} to be a Tensor, got {type(h).__name__}")
            want = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
            if tuple(h.shape) != want:
                kind = "batched 2-D" if batched else "unbatched 1-D"
                raise ShapeError(f"{name}: expected {w} of shape {want} for {kind} input, got "
                                 f"shape {h.shape}")
            _check_dtype(name, w, h, dt)
            out.append(h if batched else api.unsqueeze(h, 0))
        return x, out, batched

    def _cell(self, mode, x, h, c=None):
        """One step of ``mode`` on (N, in) ``x``: the new (h, c)."""
        xg = F.linear(x, self.weight_ih, self.bias_ih)
        return _stepper(mode, xg, h, c, self.weight_hh, self.bias_hh, None)(xg, h, c)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s if self.bias else s + ", bias=False"


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``; ``forward(input,
    hx=None)`` returns ``h'`` (input (N, in) or unbatched (in,); ``hx`` zeros when None)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", dtype=None, device=None):
        nonlinearity = _nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, dtype=dtype, device=device)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, (hx,))
        h = self._cell("RNN_RELU" if self.nonlinearity == "relu" else "RNN_TANH", x, h)[0]
        return h if batched else api.squeeze(h, 0)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + ", nonlinearity='relu'"


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o); ``forward(input, (h, c)=None)`` returns ``(h', c')``."""

    _gates = 4

    def forward(self, input, hx=None):
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ArgumentTypeError(f"LSTMCell: expected hx to be a tuple (h_0, c_0), got "
                                    f"{type(hx).__name__}")
        x, (h, c), batched = self._prepare(input, hx or (None, None), "h_0,c_0")
        h, c = self._cell("LSTM", x, h, c)
        if not batched:
            h, c = api.squeeze(h, 0), api.squeeze(c, 0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n); ``forward(input, hx=None)`` returns ``h'``."""

    _gates = 3

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, (hx,))
        h = self._cell("GRU", x, h)[0]
        return h if batched else api.squeeze(h, 0)
