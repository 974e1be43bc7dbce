"""The recurrent layers on the cuda kernel set (tiny shapes under the simulator, realistic ones
on a GPU): each time step compiled for the device gives the cpu layer's outputs and states,
and on autodiff the cpu layer's gradients."""
import numpy as np
import pytest

import runtime as rt

RNG = np.random.default_rng(9)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_matches_cpu(cuda_dev, big, name):
    t, n, i, h = (20, 16, 32, 64) if big else (3, 2, 3, 4)
    cpu = getattr(rt.nn, name)(i, h, bidirectional=True)
    gpu = getattr(rt.nn, name)(i, h, bidirectional=True, device=cuda_dev)
    gpu.load_state_dict(cpu.state_dict())
    x = RNG.normal(size=(t, n, i)).astype(np.float32)
    want, got = cpu(rt.tensor(x)), gpu(rt.tensor(x).to(cuda_dev))
    for w, g in zip(_flat(want), _flat(got)):
        assert g.device == cuda_dev
        np.testing.assert_allclose(g.to("cpu").numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def _flat(out):
    first, state = out
    return [first] + (list(state) if isinstance(state, tuple) else [state])


def test_lstm_gradients_match_cpu(cuda_dev):
    cpu = rt.nn.LSTMCell(3, 4)
    x = RNG.normal(size=(2, 3)).astype(np.float32)
    grads = []
    for dev in (rt.cpu(), cuda_dev):
        ad = rt.autodiff(dev)
        cell = rt.nn.LSTMCell(3, 4, device=dev)
        cell.load_state_dict(cpu.state_dict())
        cell.to(ad)
        xt = rt.tensor(x, device=ad).require_grad()
        hn, cn = cell(xt)
        g = rt.sum(hn * 2.0 + cn).backward()
        grads.append([xt.grad(g).numpy()] + [p.grad(g).numpy() for _, p in cell.named_parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_op_gradients_match_cpu(cuda_dev, name):
    """On autodiff each layer is one recurrence op (lstm_layer, gru_layer, rnn_layer) lowered
    onto the kernel set: the cuda set's outputs and gradients are the cpu set's."""
    x = RNG.normal(size=(2, 2, 3)).astype(np.float32)
    cpu = getattr(rt.nn, name)(3, 2)
    res = []
    for dev in (rt.cpu(), cuda_dev):
        ad = rt.autodiff(dev)
        layer = getattr(rt.nn, name)(3, 2, device=dev)
        layer.load_state_dict(cpu.state_dict())
        layer.to(ad)
        xt = rt.tensor(x, device=ad).require_grad()
        out = layer(xt)[0]
        g = rt.sum(out * 2.0).backward()
        res.append([out.inner().to("cpu").numpy(), xt.grad(g).to("cpu").numpy()]
                   + [p.grad(g).to("cpu").numpy() for _, p in layer.named_parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
