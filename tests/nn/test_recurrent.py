"""rt.nn.RNN/LSTM/GRU and their cells: PyTorch's state dicts load one to one and give
PyTorch's outputs, final states and gradients (parameters, input, initial state); a NumPy
reference for the cells; dropout between layers; the compiled step of a plain device; capture
replay, compile and ONNX export of an LSTM; the init bounds; the typed errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
import runtime.nn as nn
from oracle import assert_close, needs_torch, onnx_session, torch

AD = rt.autodiff(rt.cpu())
RNG = np.random.default_rng(5)
T, N, I, H = 5, 3, 4, 6             # sequence, batch, input features, hidden features
NP = {rt.float32: np.float32, rt.float64: np.float64}
TOL = {rt.float32: dict(rtol=2e-5, atol=2e-6), rt.float64: dict(rtol=1e-10, atol=1e-12)}


def _data(*shape, dtype=rt.float64):
    return RNG.normal(size=shape).astype(NP[dtype])


def _load_from_torch(ours, theirs):
    """``theirs``' state dict, as NumPy arrays, into ``ours`` (strict: every name matches)."""
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _flat(out):
    """(output, h_n) or (output, (h_n, c_n)) as a flat list."""
    first, state = out
    return [first] + (list(state) if isinstance(state, tuple) else [state])


def _compare_with_torch(name, kwargs, x, state, dtype, batched=True):
    """Forward on autodiff and in torch; outputs, final states and the gradients of a weighted
    sum of all of them w.r.t. every parameter, the input and the initial state agree."""
    theirs = getattr(torch.nn, name)(I, H, **kwargs).to(getattr(torch, dtype.name))
    ours = getattr(nn, name)(I, H, dtype=dtype, **kwargs)
    _load_from_torch(ours, theirs)
    ours.to(AD)
    xs = [x] + list(state)
    ts = [torch.from_numpy(a).requires_grad_(True) for a in xs]
    rs = [rt.tensor(a).to(AD).require_grad() for a in xs]
    pack = (lambda s: tuple(s) if len(s) == 2 else s[0]) if name in ("LSTM", "LSTMCell") \
        else (lambda s: s[0])
    cell = name.endswith("Cell")
    if cell:
        got = ours(rs[0], pack(rs[1:]) if state else None)
        want = theirs(ts[0], pack(ts[1:]) if state else None)
        got, want = (list(got), list(want)) if isinstance(got, tuple) else ([got], [want])
    else:
        got = _flat(ours(rs[0], pack(rs[1:]) if state else None))
        want = _flat(theirs(ts[0], pack(ts[1:]) if state else None))
    assert len(got) == len(want)
    loss, tloss = None, 0
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape) and g.dtype is dtype
        np.testing.assert_allclose(g.inner().numpy(), w.detach().numpy(), **TOL[dtype])
        wt = _data(*g.shape, dtype=dtype)
        term = rt.sum(g * rt.tensor(wt).to(AD))
        loss = term if loss is None else loss + term
        tloss = tloss + (w * torch.from_numpy(wt)).sum()
    grads = loss.backward()
    tloss.backward()
    for k, (r, t) in enumerate(zip(rs, ts)):
        np.testing.assert_allclose(r.grad(grads).numpy(), t.grad.numpy(), **TOL[dtype],
                                   err_msg=f"input {k}")
    tparams = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad(grads).numpy(), tparams[pname].grad.numpy(),
                                   **TOL[dtype], err_msg=pname)


LAYER_CASES = [
    # name, kwargs, input shape, initial state given, dtype
    ("LSTM", dict(num_layers=2, bidirectional=True), (T, N, I), True, rt.float64),
    ("LSTM", dict(batch_first=True, bias=False), (N, T, I), False, rt.float32),
    ("LSTM", dict(proj_size=3, num_layers=2, bidirectional=True), (T, N, I), True, rt.float64),
    ("LSTM", dict(bidirectional=True), (T, I), True, rt.float32),          # unbatched
    ("LSTM", dict(bidirectional=True), (11, 2, I), True, rt.float32),      # sliced in blocks
    ("GRU", dict(num_layers=2, bidirectional=True), (T, N, I), True, rt.float64),
    ("GRU", dict(batch_first=True), (N, T, I), True, rt.float32),
    ("GRU", dict(), (T, I), False, rt.float64),                             # unbatched
    ("RNN", dict(num_layers=2, nonlinearity="relu"), (T, N, I), True, rt.float64),
    ("RNN", dict(bidirectional=True, batch_first=True), (N, T, I), False, rt.float32),
    ("RNN", dict(), (T, I), True, rt.float64),                              # unbatched
]


def _state_shapes(name, kwargs, shape):
    dirs = 2 if kwargs.get("bidirectional") else 1
    lead = kwargs.get("num_layers", 1) * dirs
    batch = () if len(shape) == 2 else (shape[0] if kwargs.get("batch_first") else shape[1],)
    h = (lead,) + batch + (kwargs.get("proj_size") or H,)
    return [h, (lead,) + batch + (H,)] if name == "LSTM" else [h]


@needs_torch
@pytest.mark.parametrize("name,kwargs,shape,given,dtype", LAYER_CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(LAYER_CASES)])
def test_layer_matches_torch(name, kwargs, shape, given, dtype):
    state = [_data(*s, dtype=dtype) for s in _state_shapes(name, kwargs, shape)] if given else []
    _compare_with_torch(name, kwargs, _data(*shape, dtype=dtype), state, dtype)


CELL_CASES = [
    ("RNNCell", dict(), (N, I), True, rt.float64),
    ("RNNCell", dict(nonlinearity="relu", bias=False), (I,), True, rt.float32),
    ("LSTMCell", dict(), (N, I), True, rt.float64),
    ("LSTMCell", dict(), (I,), False, rt.float32),
    ("GRUCell", dict(), (N, I), True, rt.float32),
    ("GRUCell", dict(bias=False), (I,), True, rt.float64),
]


@needs_torch
@pytest.mark.parametrize("name,kwargs,shape,given,dtype", CELL_CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CELL_CASES)])
def test_cell_matches_torch(name, kwargs, shape, given, dtype):
    hs = shape[:-1] + (H,)
    state = [_data(*hs, dtype=dtype) for _ in range(2 if name == "LSTMCell" else 1)] if given else []
    _compare_with_torch(name, kwargs, _data(*shape, dtype=dtype), state, dtype)


@needs_torch
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_plain_device_layer_ops_match_torch(name):
    """On cpu each layer and direction is one layer op (the kernel set's fused recurrence);
    the outputs are PyTorch's."""
    theirs = getattr(torch.nn, name)(I, H, bidirectional=True)
    ours = getattr(nn, name)(I, H, bidirectional=True)
    _load_from_torch(ours, theirs)
    x = _data(T, N, I, dtype=rt.float32)
    got, want = _flat(ours(rt.tensor(x))), _flat(theirs(torch.from_numpy(x)))
    for g, w in zip(got, want):
        assert g.device == rt.cpu()
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), **TOL[rt.float32])


@needs_torch
@settings(max_examples=8)
@given(name=st.sampled_from(["LSTM", "GRU", "RNN"]), t=st.integers(1, 4), n=st.integers(2, 3),
       i=st.integers(2, 5), h=st.integers(2, 5), layers=st.integers(1, 2), bi=st.booleans(),
       batch_first=st.booleans(), batched=st.booleans(), seed=st.integers(0, 2**16))
def test_any_shape_matches_torch(name, t, n, i, h, layers, bi, batch_first, batched, seed):
    """Sizes, depth, direction and layout drawn at random: the cpu layer gives PyTorch's
    output and final states for the same state dict."""
    torch.manual_seed(seed)
    kw = dict(num_layers=layers, bidirectional=bi, batch_first=batch_first)
    theirs, ours = getattr(torch.nn, name)(i, h, **kw), getattr(nn, name)(i, h, **kw)
    _load_from_torch(ours, theirs)
    shape = ((n, t) if batch_first else (t, n)) if batched else (t,)
    x = np.random.default_rng(seed).normal(size=shape + (i,)).astype(np.float32)
    got, want = _flat(ours(rt.tensor(x))), _flat(theirs(torch.from_numpy(x)))
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), **TOL[rt.float32])


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_cells_match_numpy():
    """LSTMCell and GRUCell (on cpu: the compiled step) against the gate equations written in
    NumPy (float64)."""
    x, h, c = _data(N, I), _data(N, H), _data(N, H)
    f32 = [rt.tensor(a.astype(np.float32)) for a in (x, h, c)]
    lstm = nn.LSTMCell(I, H)
    w_ih, w_hh, b_ih, b_hh = (lstm.state_dict()[k].numpy().astype(np.float64)
                              for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    c1 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h1 = _sigmoid(o) * np.tanh(c1)
    got_h, got_c = lstm(f32[0], (f32[1], f32[2]))
    assert_close(got_h, h1, rt.float32, tol=1e-5)
    assert_close(got_c, c1, rt.float32, tol=1e-5)

    gru = nn.GRUCell(I, H)
    w_ih, w_hh, b_ih, b_hh = (gru.state_dict()[k].numpy().astype(np.float64)
                              for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    xr, xz, xn = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    hr, hz, hn = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    assert_close(gru(f32[0], f32[1]), (1 - z) * n + z * h, rt.float32, tol=1e-5)
    # the zero default state, and an unbatched input
    n0 = np.tanh(xn[0] + _sigmoid(xr[0] + b_hh[:H]) * b_hh[2 * H:])
    z0 = _sigmoid(xz[0] + b_hh[H:2 * H])
    assert_close(gru(f32[0][0]), (1 - z0) * n0, rt.float32, tol=1e-5)


def test_dropout_between_layers_only_in_training():
    rt.manual_seed(3)
    gru = nn.GRU(I, H, num_layers=2, dropout=1.0)
    x = rt.tensor(_data(T, N, I, dtype=rt.float32))
    # p = 1 zeroes the first layer's output, so the second layer runs on zeros; nothing is
    # dropped after the last layer
    top = nn.GRU(H, H)
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in gru.state_dict().items()
                         if "_l1" in k})
    out, h_n = gru(x)
    want, want_h = top(rt.zeros(T, N, H))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h_n.numpy()[1], want_h.numpy()[0], rtol=1e-6, atol=1e-7)
    assert np.abs(out.numpy()).max() > 0
    gru.eval()
    eval_out = gru(x)[0].numpy()
    assert not np.allclose(eval_out, out.numpy())
    half = nn.GRU(I, H, num_layers=2, dropout=0.5)
    half.load_state_dict(gru.state_dict())
    half.eval()
    np.testing.assert_array_equal(half(x)[0].numpy(), eval_out)
    half.train()                # masks from the runtime's stream: a seed repeats them
    rt.manual_seed(4)
    first = half(x)[0].numpy()
    rt.manual_seed(4)
    np.testing.assert_array_equal(half(x)[0].numpy(), first)
    assert not np.allclose(first, eval_out)


class _Summer(nn.Module):
    """An LSTM and a linear read-out of its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 8, batch_first=True)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def test_lstm_trains_with_an_optimiser():
    """Adam on autodiff learns the running sum of a short sequence."""
    rt.manual_seed(0)
    model = _Summer().to(AD)
    opt = rt.optim.Adam(model.parameters(), lr=0.05)
    x = RNG.uniform(-1, 1, size=(16, 4, 1)).astype(np.float32)
    xs, ys = rt.tensor(x).to(AD), rt.tensor(x.sum(axis=1)).to(AD)
    losses = []
    for _ in range(40):
        loss = rt.nn.functional.mse_loss(model(xs), ys)
        losses.append(float(loss.inner().numpy()))
        opt.step(loss.backward())
    assert losses[-1] < 0.1 * losses[0], losses


def _capture_lstm(model, x):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        model.to(scope.device)
        xc = rt.tensor(x, device=scope.device)
        out, (h, c) = model(xc)
        scope.complete(inputs=[xc], outputs=[out, h, c])
    return scope.graph


def test_captured_lstm_replays_compiles_and_exports(tmp_path):
    rt.manual_seed(0)
    eager = nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True)
    recorded = nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True)
    recorded.load_state_dict(eager.state_dict())
    x = _data(N, T, I, dtype=rt.float32)
    out, (h, c) = eager(rt.tensor(x))
    want = [out.numpy(), h.numpy(), c.numpy()]
    graph = _capture_lstm(recorded, x)
    ops = [op.op for op in graph.operations]
    assert ops.count("lstm_layer") == 4 and "sigmoid" not in ops    # one op a layer and direction
    used = {t.id for op in graph.operations for t in op.inputs} | set(graph.outputs)
    assert all(o.id in used for op in graph.operations for o in op.outputs)   # nothing dead
    for got, w in zip(graph.run(x), want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-6, atol=1e-6)
    for got, w in zip(graph.compile(rt.cpu())(rt.tensor(x)), want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-6, atol=1e-6)
    sess = onnx_session(graph, tmp_path / "lstm.onnx")
    for got, w in zip(sess.run(None, {"input_0": x}), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_init_bounds_and_shapes():
    rt.manual_seed(1)
    lstm = nn.LSTM(10, 100, num_layers=2, bidirectional=True, proj_size=20)
    bound = 1 / math.sqrt(100)
    shapes = {k: tuple(p.shape) for k, p in lstm.named_parameters()}
    assert shapes["weight_ih_l0"] == (400, 10) and shapes["weight_hh_l0"] == (400, 20)
    assert shapes["weight_ih_l1_reverse"] == (400, 40) and shapes["bias_hh_l1"] == (400,)
    assert shapes["weight_hr_l0_reverse"] == (20, 100)
    for k, p in lstm.named_parameters():
        v = p.numpy()
        assert v.dtype == np.float32 and np.abs(v).max() <= bound, k
        assert np.abs(v).max() > 0.9 * bound and abs(v.mean()) < 0.1 * bound, k
    cell = nn.GRUCell(3, 25, bias=False)
    assert [k for k, _ in cell.named_parameters()] == ["weight_ih", "weight_hh"]
    assert cell.weight_ih.shape == (75, 3) and np.abs(cell.weight_hh.numpy()).max() <= 0.2
    rt.manual_seed(1)
    again = nn.LSTM(10, 100, num_layers=2, bidirectional=True, proj_size=20)
    np.testing.assert_array_equal(again.weight_hr_l1.numpy(), lstm.weight_hr_l1.numpy())
    assert repr(nn.RNN(4, 6, 2, nonlinearity="relu")) == "RNN(4, 6, num_layers=2, nonlinearity='relu')"


# --------------------------------------------------------------------------- typed errors
E = rt.errors


@pytest.mark.parametrize("make,err,msg", [
    (lambda: nn.RNN(4, 6, nonlinearity="gelu"), E.ArgumentValueError,
     "RNN: unknown nonlinearity 'gelu' (expected 'tanh' or 'relu')"),
    (lambda: nn.RNNCell(4, 6, nonlinearity="sigmoid"), E.ArgumentValueError,
     "RNNCell: unknown nonlinearity 'sigmoid' (expected 'tanh' or 'relu')"),
    (lambda: nn.LSTM(4, 6, dropout=1.5), E.ArgumentValueError,
     "LSTM: dropout must be between 0 and 1, got 1.5"),
    (lambda: nn.GRU(4, 6, dropout=-0.1), E.ArgumentValueError,
     "GRU: dropout must be between 0 and 1, got -0.1"),
    (lambda: nn.GRU(4, 6, dropout="0.5"), E.ArgumentTypeError,
     "GRU: dropout must be a number, got str"),
    (lambda: nn.GRU(4, 6, num_layers=0), E.ArgumentValueError,
     "GRU: num_layers must be at least 1, got 0"),
    (lambda: nn.RNN(4, 6, num_layers=2.0), E.ArgumentTypeError,
     "RNN: num_layers must be an int, got 2.0"),
    (lambda: nn.LSTM(4, 0), E.ArgumentValueError,
     "LSTM: hidden_size must be greater than zero, got 0"),
    (lambda: nn.GRUCell(4, 6.5), E.ArgumentTypeError, "GRUCell: hidden_size must be an int, got 6.5"),
    (lambda: nn.LSTMCell(-1, 3), E.ArgumentValueError,
     "LSTMCell: input_size must be non-negative, got -1"),
    (lambda: nn.LSTM(4, 6, proj_size=6), E.ArgumentValueError,
     "LSTM: proj_size (6) must be smaller than hidden_size (6)"),
    (lambda: nn.LSTM(4, 6, proj_size=-2), E.ArgumentValueError,
     "LSTM: proj_size must be non-negative, got -2"),
])
def test_constructor_errors(make, err, msg):
    with pytest.raises(err) as info:
        make()
    assert str(info.value) == msg


def _call(m, *args):
    return lambda: m(*args)


Z = rt.zeros
LSTM_, GRU_, RNN_ = nn.LSTM(4, 6, num_layers=2), nn.GRU(4, 6, bidirectional=True), nn.RNN(4, 6)
CELL = nn.LSTMCell(4, 6)


@pytest.mark.parametrize("call,err,msg", [
    (_call(LSTM_, Z(5, 3, 5)), E.ShapeError,
     "LSTM: expected input with 4 features in its last dimension, got shape (5, 3, 5)"),
    (_call(LSTM_, Z(0, 3, 4)), E.ShapeError,
     "LSTM: expected a sequence length larger than 0, got input of shape (0, 3, 4)"),
    (_call(nn.GRU(4, 6, batch_first=True), Z(3, 0, 4)), E.ShapeError,
     "GRU: expected a sequence length larger than 0, got input of shape (3, 0, 4)"),
    (_call(GRU_, Z(2, 5, 3, 4)), E.ShapeError,
     "GRU: expected a 3-D (batched) or 2-D (unbatched) input, got shape (2, 5, 3, 4)"),
    (_call(GRU_, Z(5, 3, 4), Z(1, 3, 6)), E.ShapeError,
     "GRU: expected hx of shape (2, 3, 6) for batched 3-D input, got shape (1, 3, 6)"),
    (_call(RNN_, Z(5, 4), Z(1, 3, 6)), E.ShapeError,
     "RNN: expected hx of shape (1, 6) for unbatched 2-D input, got shape (1, 3, 6)"),
    (_call(LSTM_, Z(5, 3, 4), (Z(2, 3, 6), Z(2, 2, 6))), E.ShapeError,
     "LSTM: expected c_0 of shape (2, 3, 6) for batched 3-D input, got shape (2, 2, 6)"),
    (_call(LSTM_, Z(5, 3, 4), Z(2, 3, 6)), E.ArgumentTypeError,
     "LSTM: expected hx to be a tuple (h_0, c_0), got Tensor"),
    (_call(RNN_, Z(5, 3, 4), (Z(1, 3, 6),)), E.ArgumentTypeError,
     "RNN: expected hx to be a Tensor, got tuple"),
    (_call(RNN_, Z(5, 3, 4, dtype=rt.float64)), E.DTypeError,
     "RNN: the input has dtype float64, the parameters float32"),
    (_call(RNN_, np.zeros((5, 3, 4))), E.ArgumentTypeError, "RNN: expected a Tensor input, got ndarray"),
    (_call(CELL, Z(3, 5)), E.ShapeError,
     "LSTMCell: expected input with 4 features in its last dimension, got shape (3, 5)"),
    (_call(CELL, Z(3, 4), (Z(3, 6), Z(6))), E.ShapeError,
     "LSTMCell: expected c_0 of shape (3, 6) for batched 2-D input, got shape (6,)"),
    (_call(CELL, Z(4), (Z(3, 6), Z(6))), E.ShapeError,
     "LSTMCell: expected h_0 of shape (6,) for unbatched 1-D input, got shape (3, 6)"),
    (_call(CELL, Z(2, 3, 4)), E.ShapeError,
     "LSTMCell: expected a 2-D (batched) or 1-D (unbatched) input, got shape (2, 3, 4)"),
    (_call(CELL, Z(3, 4), Z(3, 6)), E.ArgumentTypeError,
     "LSTMCell: expected hx to be a tuple (h_0, c_0), got Tensor"),
    (_call(CELL, Z(3, 4), (Z(3, 6), 0.0)), E.ArgumentTypeError,
     "LSTMCell: expected c_0 to be a Tensor, got float"),
    (_call(nn.GRUCell(4, 6), Z(3, 4), Z(3, 6, dtype=rt.float64)), E.DTypeError,
     "GRUCell: hx has dtype float64, the parameters float32"),
])
def test_forward_errors(call, err, msg):
    with pytest.raises(err) as info:
        call()
    assert str(info.value) == msg


# --------------------------------------------------------------------------- lstm_layer
def _lstm_operands(t, n, h, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in ((t, n, 4 * h), (n, h), (n, h), (4 * h, h), (4 * h,))]


@pytest.mark.parametrize("t,reverse", [(3, False), (3, True), (1, False)])
def test_lstm_layer_gradients_match_finite_differences(t, reverse):
    """The layer op's backward (recomputed gates, BPTT in reverse, the hidden weight's product
    over all steps) against central differences of its forward kernel, every operand."""
    from autodiff.gradcheck import check_grad
    from runtime.ops.recurrent import lstm_layer
    ops = _lstm_operands(t, 2, 2)
    check_grad(lambda *a: lstm_layer(*a, reverse=reverse), *ops)
    check_grad(lambda *a: lstm_layer(*a, reverse=reverse), *ops[:4])     # no bias


def _gru_operands(t, n, h, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in ((t, n, 3 * h), (n, h), (3 * h, h), (3 * h,))]


@pytest.mark.parametrize("t,reverse", [(3, False), (3, True), (1, False)])
def test_gru_layer_gradients_match_finite_differences(t, reverse):
    """The GRU layer op's backward (the input and hidden projections' gradients apart, since n
    reads the hidden one through r) against central differences, every operand."""
    from autodiff.gradcheck import check_grad
    from runtime.ops.recurrent import gru_layer
    ops = _gru_operands(t, 2, 2)
    check_grad(lambda *a: gru_layer(*a, reverse=reverse), *ops)
    check_grad(lambda *a: gru_layer(*a, reverse=reverse), *ops[:3])      # no bias


def _rnn_operands(t, n, h, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in ((t, n, h), (n, h), (h, h), (h,))]


@pytest.mark.parametrize("t,act,reverse", [(3, "tanh", False), (3, "relu", True),
                                           (1, "tanh", False)])
def test_rnn_layer_gradients_match_finite_differences(t, act, reverse):
    from autodiff.gradcheck import check_grad
    from runtime.ops.recurrent import rnn_layer
    ops = _rnn_operands(t, 2, 3)
    check_grad(lambda *a: rnn_layer(*a, nonlinearity=act, reverse=reverse), *ops)
    check_grad(lambda *a: rnn_layer(*a, nonlinearity=act, reverse=reverse), *ops[:3])


def _kernel_and_decomposition(name, ops, attrs):
    """Layer op ``name`` on ``ops`` as its plain-device kernel gives it (every row of its
    result, the saved ones too), as its decomposition's graph replays it, and as ONNX Runtime
    runs the graph a capture records (the op whole there, its decomposition in the file)."""
    from runtime.dispatch import dispatch
    from runtime.ops.catalogue import CATALOGUE
    want = dispatch(name, tuple(rt.tensor(a) for a in ops), attrs).numpy()
    graph = rt.capture(lambda *a: CATALOGUE[name].decompose(a, attrs), *ops)
    assert name not in {op.op for op in graph.operations}
    whole = rt.capture(lambda *a: dispatch(name, a, attrs), *ops)
    assert [op.op for op in whole.operations if op.op != "init"] == [name]
    return want, graph.run(*ops)[0].numpy(), whole


@pytest.mark.parametrize("name,attrs,operands", [
    ("rnn_layer", dict(nonlinearity="tanh", reverse=True), _rnn_operands),
    ("rnn_layer", dict(nonlinearity="relu", reverse=True), _rnn_operands),
    ("gru_layer", dict(reverse=False), _gru_operands),
    ("gru_layer", dict(reverse=True), _gru_operands),
    ("lstm_layer", dict(reverse=False), _lstm_operands),
    ("lstm_layer", dict(reverse=True), _lstm_operands)])
def test_layer_kernel_matches_its_decomposition(name, attrs, operands, tmp_path):
    """The plain device's kernel, the per-step primitives of the op's decomposition, and the
    ONNX model of a graph holding the op whole agree (every row of the result)."""
    ops = [a.astype(np.float32) for a in operands(4, 3, 5, seed=1)]
    want, got, whole = _kernel_and_decomposition(name, ops, attrs)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(whole.run(*ops)[0].numpy(), want)
    sess = onnx_session(whole, tmp_path / f"{name}.onnx")
    np.testing.assert_allclose(sess.run(None, {f"input_{k}": a for k, a in enumerate(ops)})[0],
                               want, rtol=1e-5, atol=1e-5)


def test_autodiff_lstm_is_one_op_per_layer_and_direction(monkeypatch):
    """On autodiff each layer and direction runs as one lstm_layer (one tape node) and its
    gradient as one lstm_layer_backward; with a projection the per-step path remains."""
    from runtime.ops.catalogue import CATALOGUE
    from runtime.dispatch import clear_dispatch_cache
    clear_dispatch_cache()
    calls = []
    for name in ("lstm_layer", "lstm_layer_backward"):
        spec = CATALOGUE[name]
        monkeypatch.setattr(spec, "infer", lambda a, k, _n=name, _f=spec.infer:
                            calls.append(_n) or _f(a, k))
    model = nn.LSTM(I, H, num_layers=2, bidirectional=True).to(AD)
    out, _ = model(rt.tensor(_data(T, N, I, dtype=rt.float32)).to(AD))
    rt.sum(out).backward()
    assert calls.count("lstm_layer") == 4 and calls.count("lstm_layer_backward") == 4
    calls.clear()
    out, _ = nn.LSTM(I, H, proj_size=2).to(AD)(rt.tensor(_data(T, N, I, dtype=rt.float32)).to(AD))
    rt.sum(out).backward()
    assert calls == []


@pytest.mark.parametrize("name,op", [("GRU", "gru_layer"), ("RNN", "rnn_layer")])
def test_autodiff_gru_and_rnn_are_one_op_per_layer_and_direction(monkeypatch, name, op):
    from runtime.ops.catalogue import CATALOGUE
    from runtime.dispatch import clear_dispatch_cache
    clear_dispatch_cache()
    calls = []
    for rec in (op, op + "_backward"):
        spec = CATALOGUE[rec]
        monkeypatch.setattr(spec, "infer", lambda a, k, _n=rec, _f=spec.infer:
                            calls.append(_n) or _f(a, k))
    model = getattr(nn, name)(I, H, bidirectional=True).to(AD)
    out, _ = model(rt.tensor(_data(T, N, I, dtype=rt.float32)).to(AD))
    rt.sum(out).backward()
    assert calls.count(op) == 2 and calls.count(op + "_backward") == 2


@needs_torch
def test_compiled_lstm_step_matches_eager_and_torch():
    """rt.compile of a forward + backward step (the layer's forward recorded as primitives, its
    gradient as the whole backward op) gives the eager step's loss and gradients."""
    theirs = torch.nn.LSTM(I, H, bidirectional=True)
    ours = nn.LSTM(I, H, bidirectional=True)
    _load_from_torch(ours, theirs)
    ours.to(AD)
    params = list(ours.parameters())

    def step(xb):
        out, (h, c) = ours(xb)
        grads = (rt.sum(out) + rt.sum(c)).backward()
        return tuple(p.grad(grads) for p in params)
    x = _data(T, N, I, dtype=rt.float32)
    eager, compiled = step(rt.tensor(x).to(AD)), rt.compile(step)(rt.tensor(x).to(AD))
    out, (_, c) = theirs(torch.from_numpy(x))
    (out.sum() + c.sum()).backward()
    for e, k, (pname, p) in zip(eager, compiled, theirs.named_parameters()):
        np.testing.assert_allclose(k.numpy(), e.numpy(), rtol=1e-5, atol=1e-6, err_msg=pname)
        np.testing.assert_allclose(e.numpy(), p.grad.numpy(), **TOL[rt.float32], err_msg=pname)


def test_gru_layer_errors():
    from runtime.ops.recurrent import gru_layer
    xg, h0, w, _ = (rt.tensor(a) for a in _gru_operands(2, 3, 2))
    with pytest.raises(rt.ShapeError, match=r"gru_layer: expected w_hh of shape \(6, 2\)"):
        gru_layer(xg, h0, w[:4])
    with pytest.raises(rt.ShapeError, match=r"gru_layer: expected the input projection"):
        gru_layer(xg[:, :, :5], h0, w)


def test_rnn_layer_errors():
    from runtime.ops.recurrent import rnn_layer
    xg, h0, w, _ = (rt.tensor(a) for a in _rnn_operands(2, 3, 2))
    with pytest.raises(rt.ArgumentValueError, match="rnn_layer: nonlinearity must be"):
        rnn_layer(xg, h0, w, nonlinearity="gelu")
    with pytest.raises(rt.ShapeError, match=r"rnn_layer: expected w_hh of shape \(2, 2\)"):
        rnn_layer(xg, h0, w[:1])


def test_lstm_layer_errors():
    from runtime.ops.recurrent import lstm_layer
    xg, h0, c0, w, _ = (rt.tensor(a) for a in _lstm_operands(2, 3, 2))
    with pytest.raises(rt.ShapeError, match=r"lstm_layer: expected c0 of shape \(3, 2\)"):
        lstm_layer(xg, h0, h0[:, :1], w)
    with pytest.raises(rt.ShapeError, match=r"lstm_layer: expected the input projection"):
        lstm_layer(xg[:, :, :7], h0, c0, w)
    with pytest.raises(rt.DTypeError, match="lstm_layer: expected one float dtype"):
        lstm_layer(xg, h0, c0, w.astype(rt.float32))


def test_layer_ops_refuse_bad_operands_with_exact_messages():
    from runtime.ops.recurrent import gru_layer, lstm_layer, rnn_layer
    f32 = np.float32

    def z(*shape, dt=f32):
        return rt.tensor(np.zeros(shape, dt))
    cases = [
        (lambda: lstm_layer(z(2, 3, 6), z(3, 2), z(3, 2), z(8, 2)), rt.ShapeError,
         "lstm_layer: expected the input projection as (T >= 1, N, 4 * H), got shape (2, 3, 6)"),
        (lambda: lstm_layer(z(2, 3, 8), z(3, 2), z(3, 3), z(8, 2)), rt.ShapeError,
         "lstm_layer: expected c0 of shape (3, 2) for an input projection of shape (2, 3, 8), "
         "got (3, 3)"),
        (lambda: lstm_layer(z(2, 3, 8), z(3, 2), z(3, 2), z(8, 2, dt=np.float64)), rt.DTypeError,
         "lstm_layer: expected one float dtype for xg, h0, c0, w_hh and b_hh, got float32, "
         "float32, float32, float64"),
        (lambda: gru_layer(z(2, 3, 6), z(3, 2), z(6, 2), z(5)), rt.ShapeError,
         "gru_layer: expected b_hh of shape (6,) for an input projection of shape (2, 3, 6), "
         "got (5,)"),
        (lambda: gru_layer(z(2, 3, 6, dt=np.int64), z(3, 2, dt=np.int64), z(6, 2, dt=np.int64)),
         rt.DTypeError, "gru_layer: expected one float dtype for xg, h0, w_hh and b_hh, got "
         "int64, int64, int64"),
        (lambda: rnn_layer(z(0, 3, 2), z(3, 2), z(2, 2)), rt.ShapeError,
         "rnn_layer: expected the input projection as (T >= 1, N, H), got shape (0, 3, 2)"),
        (lambda: rnn_layer(z(2, 3, 2), z(3, 2), z(2, 3)), rt.ShapeError,
         "rnn_layer: expected w_hh of shape (2, 2) for an input projection of shape (2, 3, 2), "
         "got (2, 3)"),
    ]
    for call, err, msg in cases:
        with pytest.raises(err) as info:
            call()
        assert str(info.value) == msg


class _Without:
    """A kernel set without one of its capabilities: the op's generic path on its kernels."""

    def __init__(self, ks, capability):
        self._ks, self.capabilities = ks, ks.capabilities - {capability}

    def __getattr__(self, name):
        return getattr(self._ks, name)


# per layer op: its operands, the hidden weight's gate count, its attrs beyond ``reverse``,
# its result's rows, the gradient's rows, the backward op's result rows (for T steps) and
# how many state operands (h0[, c0]) lead the backward op's operands
_GENERIC = {
    "lstm_layer": (_lstm_operands, 4, {}, lambda t: 6 * t + 1, lambda t: t + 1, lambda t: t + 1, 2),
    "gru_layer": (_gru_operands, 3, {}, lambda t: 5 * t, lambda t: t, lambda t: 2 * t + 1, 1),
    "rnn_layer": (_rnn_operands, 1, {"nonlinearity": "tanh"}, lambda t: t, lambda t: t,
                  lambda t: t + 1, 1),
    "rnn_layer relu": (_rnn_operands, 1, {"nonlinearity": "relu"}, lambda t: t, lambda t: t,
                       lambda t: t + 1, 1),
}


@pytest.mark.parametrize("layer", sorted(_GENERIC))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype,bias", [(rt.float32, True), (rt.float32, False),
                                        (rt.float64, True)])
def test_layer_kernels_match_the_generic_path(layer, reverse, dtype, bias):
    """The cpu set's recurrences (one product and one fused cell kernel a step) give the op's
    whole result (the outputs and every saved row) and its backward as the generic path built
    from the set's product and elementwise kernels does (the path of a set without the
    capability); from a strided initial state and a strided saved result."""
    from jit_kernels import kernel_set_for
    from runtime.core.registry import Meta, Plan
    from runtime.ops.catalogue import CATALOGUE
    operands, gates, extra, rows, grad_rows, back_rows, states = _GENERIC[layer]
    name = layer.split()[0]
    ks = kernel_set_for("cpu")
    generic = _Without(ks, "recurrent")
    t, n, h = 6, 3, 5
    ops = [a.astype(NP[dtype]) for a in operands(t, n, h, seed=2)]
    ops = ops if bias else ops[:-1]
    ops[1] = np.asfortranarray(ops[1])
    attrs = dict(extra, reverse=reverse)
    tol = TOL[dtype]

    def both(op, operands, shape):
        args = [Meta(a.shape, dtype) for a in operands]
        plan = Plan(shape, dtype, dtype)
        return [np.array(CATALOGUE[op].kernel(k, operands, args, attrs, plan, None))
                for k in (ks, generic)]
    fast, slow = both(name, ops, (rows(t), n, h))
    np.testing.assert_allclose(fast, slow, **tol)
    gy = RNG.normal(size=(grad_rows(t), n, h)).astype(NP[dtype])
    back = ops[1:1 + states] + [ops[1 + states], np.asfortranarray(fast), gy]   # strided too
    fast, slow = both(name + "_backward", back, (back_rows(t), n, gates * h))
    np.testing.assert_allclose(fast, slow, **tol)
