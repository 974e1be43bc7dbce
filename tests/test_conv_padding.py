"""Padding of convolutions and pooling as PyTorch users write it: ``padding="same"`` with even
kernels and dilation (the odd pad at the end), ``nn.Conv*d(padding_mode=...)``, asymmetric and
negative (cropping) ``F.pad`` feeding a conv or a pool; against PyTorch (forward and
gradients on the autodiff device), capture/replay, ONNX, and the typed errors for what PyTorch
refuses.  float64 throughout (one kernel specialisation), tiny shapes."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from autodiff.gradcheck import AD
from oracle import needs_torch, onnx_run, torch

pytestmark = [needs_torch,
              pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")]


def _grads(fn, arrays, weights, lib):
    """(output, gradients of sum(fn * weights)) in the runtime (autodiff) or torch."""
    if lib == "rt":
        xs = [rt.tensor(a, device=AD).require_grad() for a in arrays]
        y = fn(*xs)
        grads = rt.sum(y * rt.tensor(weights, device=AD)).backward()
        return y.numpy(), [x.grad(grads).numpy() for x in xs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*ts)
    (y * torch.tensor(weights)).sum().backward()
    return y.detach().numpy(), [t.grad.numpy() for t in ts]


def _match(fn, tfn, arrays, rng):
    """fn (runtime) and tfn (torch) agree on the output and every input's gradient."""
    shape = tuple(tfn(*[torch.tensor(a) for a in arrays]).shape)
    weights = rng.uniform(0.5, 1.5, size=shape)
    y, gs = _grads(fn, arrays, weights, "rt")
    ty, tgs = _grads(tfn, arrays, weights, "torch")
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-10)
    for g, tg in zip(gs, tgs):
        np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-10)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --------------------------------------------------------------------------- padding="same"
@pytest.mark.parametrize("kernel,dilation", [((4, 2), (1, 1)), ((2, 3), (3, 2)), ((4, 1), (2, 1))])
def test_same_padding_even_kernels_and_dilation_match_torch(kernel, dilation, rng):
    x = rng.standard_normal((1, 2, 6, 5))
    w = rng.standard_normal((3, 2) + kernel)
    _match(lambda a, b: F.conv2d(a, b, padding="same", dilation=dilation),
           lambda a, b: torch.nn.functional.conv2d(a, b, padding="same", dilation=dilation),
           [x, w], rng)
    y = F.conv2d(rt.tensor(x), rt.tensor(w), padding="same", dilation=dilation)
    assert y.shape == (1, 3, 6, 5)


def test_conv1d_same_with_even_kernel_and_dilation_matches_torch(rng):
    x, w = rng.standard_normal((2, 2, 7)), rng.standard_normal((3, 2, 4))
    _match(lambda a, b: F.conv1d(a, b, padding="same", dilation=2),
           lambda a, b: torch.nn.functional.conv1d(a, b, padding="same", dilation=2), [x, w], rng)


# --------------------------------------------------------------------------- padding_mode
def _twin(layer, tlayer):
    tlayer.weight.data = torch.tensor(layer.weight.numpy())
    tlayer.bias.data = torch.tensor(layer.bias.numpy())
    return tlayer


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("padding", [(2, 1), "same"])
def test_conv2d_padding_mode_matches_torch(mode, padding, rng):
    kw = dict(padding=padding, padding_mode=mode, dilation=(1, 2), dtype=rt.float64)
    layer = rt.nn.Conv2d(2, 3, (4, 3), **kw)
    tl = _twin(layer, torch.nn.Conv2d(2, 3, (4, 3), padding=padding, padding_mode=mode,
                                      dilation=(1, 2), dtype=torch.float64))
    x = rng.standard_normal((1, 2, 6, 7))
    _match(lambda a, w, b: _layer_conv(F.conv2d, layer, a, w, b, dilation=(1, 2)),
           lambda a, w, b: _layer_conv(torch.nn.functional.conv2d, tl, a, w, b, dilation=(1, 2)),
           [x, layer.weight.numpy(), layer.bias.numpy()], rng)
    np.testing.assert_allclose(layer(rt.tensor(x)).numpy(),
                               tl(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-12)


def _layer_conv(conv, layer, x, w, b, **kw):
    """The layer's forward with its weight and bias given (so that they get gradients): the
    input padded as the layer pads it, then the functional ``conv``."""
    if isinstance(layer, rt.nn.Module):
        x, padding = layer._conv_input(x)
        return conv(x, w, b, padding=padding, **kw)
    mode = "constant" if layer.padding_mode == "zeros" else layer.padding_mode
    x = torch.nn.functional.pad(x, layer._reversed_padding_repeated_twice, mode=mode)
    return conv(x, w, b, **kw)


def test_conv1d_padding_mode_layer_matches_torch_with_gradients(rng):
    layer = rt.nn.Conv1d(2, 2, 3, padding=2, padding_mode="reflect", dtype=rt.float64)
    tl = _twin(layer, torch.nn.Conv1d(2, 2, 3, padding=2, padding_mode="reflect",
                                      dtype=torch.float64))
    x = rng.standard_normal((2, 2, 5))
    _match(lambda a, w, b: _layer_conv(F.conv1d, layer, a, w, b),
           lambda a, w, b: _layer_conv(torch.nn.functional.conv1d, tl, a, w, b),
           [x, layer.weight.numpy(), layer.bias.numpy()], rng)
    np.testing.assert_allclose(layer(rt.tensor(x)).numpy(),
                               tl(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-12)
    assert repr(layer) == ("Conv1d(2, 2, kernel_size=(3,), stride=(1,), padding=(2,), "
                           "padding_mode='reflect')")


# --------------------------------------------------------------------------- F.pad first
def test_negative_pad_crops_before_a_conv(rng):
    x, w = rng.standard_normal((1, 2, 6, 7)), rng.standard_normal((2, 2, 2, 3))
    pads = (-1, 2, 1, -2)
    _match(lambda a, b: F.conv2d(F.pad(a, pads), b, stride=(1, 2)),
           lambda a, b: torch.nn.functional.conv2d(torch.nn.functional.pad(a, pads), b,
                                                   stride=(1, 2)), [x, w], rng)


@pytest.mark.parametrize("pads", [(0, 1, 1, 0), (1, -1, 0, 2)])
def test_asymmetric_pad_then_pool_matches_torch(pads, rng):
    x = rng.standard_normal((1, 2, 5, 6))
    _match(lambda a: F.max_pool2d(F.pad(a, pads, value=float("-inf")), 2),
           lambda a: torch.nn.functional.max_pool2d(
               torch.nn.functional.pad(a, pads, value=float("-inf")), 2), [x], rng)
    _match(lambda a: F.avg_pool2d(F.pad(a, pads), 2, 1),
           lambda a: torch.nn.functional.avg_pool2d(torch.nn.functional.pad(a, pads), 2, 1),
           [x], rng)


# --------------------------------------------------------------------------- capture, ONNX
def _padded_net(x):
    w = rt.tensor(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(2, 2, 3, 2),
                  device=x.device)
    y = F.conv2d(F.pad(x, (1, 0, 2, -1), mode="reflect"), w, padding="same", dilation=2)
    return F.max_pool2d(F.pad(F.pad(y, (0, -1, 1, 0)), (0, 1, 0, 1), value=float("-inf")), 2)


def test_capture_replays_and_exports_padded_convs(rng, tmp_path):
    x = rng.standard_normal((1, 2, 7, 6)).astype(np.float32)
    want = _padded_net(rt.tensor(x)).numpy()
    graph = rt.capture(_padded_net, x)
    assert [op.op for op in graph.operations if op.op not in ("init",)].count("conv2d") == 1
    np.testing.assert_array_equal(graph.run(x)[0].numpy(), want)
    (got,) = onnx_run(graph, tmp_path / "m.onnx", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    tw = torch.tensor(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(2, 2, 3, 2))
    tf = torch.nn.functional
    ty = tf.conv2d(tf.pad(torch.tensor(x), (1, 0, 2, -1), mode="reflect"), tw, padding="same",
                   dilation=2)
    ty = tf.max_pool2d(tf.pad(tf.pad(ty, (0, -1, 1, 0)), (0, 1, 0, 1), value=float("-inf")), 2)
    np.testing.assert_allclose(want, ty.numpy(), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- errors
def _t(*shape):
    return rt.zeros(*shape, dtype=rt.float32)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: F.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), padding=-1), rt.ArgumentValueError,
     "conv2d: padding must be a non-negative int or a tuple of 2, got -1"),
    (lambda: F.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), padding=(1, -2)), rt.ArgumentValueError,
     "conv2d: padding must be a non-negative int or a tuple of 2, got (1, -2)"),
    (lambda: F.conv1d(_t(1, 2, 5), _t(3, 2, 3), padding=-1), rt.ArgumentValueError,
     "conv1d: padding must be a non-negative int or a tuple of 1, got -1"),
    (lambda: F.conv_transpose2d(_t(1, 2, 5, 5), _t(2, 3, 3, 3), padding=-1),
     rt.ArgumentValueError,
     "conv_transpose2d: padding must be a non-negative int or a tuple of 2, got -1"),
    (lambda: F.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), padding="full"), rt.ArgumentValueError,
     "conv2d: padding must be 'valid', 'same', a non-negative int or a tuple of 2, got 'full'"),
    (lambda: F.max_pool2d(_t(1, 2, 5, 5), 3, padding=-1), rt.ArgumentValueError,
     "max_pool2d: padding must be non-negative, got (-1, -1)"),
    (lambda: F.avg_pool2d(_t(1, 2, 5, 5), 3, padding=(0, -1)), rt.ArgumentValueError,
     "avg_pool2d: padding must be non-negative, got (0, -1)"),
    (lambda: rt.nn.Conv2d(2, 3, 3, padding_mode="mirror"), rt.ArgumentValueError,
     "Conv2d: padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], got "
     "'mirror'"),
    (lambda: rt.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"), rt.ArgumentValueError,
     "ConvTranspose2d: only padding_mode='zeros' is supported, got 'reflect'"),
    (lambda: rt.nn.Conv1d(2, 3, 3, padding="full"), rt.ArgumentValueError,
     "Conv1d: padding must be 'valid', 'same' or ints, got 'full'"),
    (lambda: rt.nn.Conv2d(2, 3, 3, stride=2, padding="same"), rt.ArgumentValueError,
     "Conv2d: padding='same' is not supported for strided convolutions (stride=(2, 2))"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value) == msg
