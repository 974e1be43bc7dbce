"""``F.interpolate`` on 1-D (N, C, L) and 3-D (N, C, D, H, W) inputs and the "nearest-exact"
mode (runtime/ops/pool.py: reshapes onto the 2-D op, one pass per axis pair), integer images
for the nearest modes, ``nn.Upsample``: against NumPy float64 references and PyTorch (forward
and gradients on the autodiff device), capture/replay, ONNX, and the exact errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from autodiff.gradcheck import AD
from oracle import assert_close, needs_torch, onnx_run, torch


@pytest.fixture
def rng():
    return np.random.default_rng(11)


# --------------------------------------------------------------------------- NumPy references
def _src_nearest(n, o, scale, exact):
    """PyTorch's nearest source indices (float32 scale, as its cpu kernels)."""
    s = np.float32(1.0 / scale if scale else n / o)
    i = np.arange(o)
    if exact:
        src = np.floor(((i + 0.5) * np.float64(s)).astype(np.float32))
    elif o == n:
        src = i
    else:
        src = np.floor(i.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), n - 1)


def _linear_matrix(n, o, scale, align_corners):
    """(o, n) interpolation matrix of one axis (float64)."""
    m = np.zeros((o, n))
    for i in range(o):
        if align_corners:
            src = i * (n - 1) / (o - 1) if o > 1 else 0.0
        else:
            s = 1.0 / scale if scale else n / o
            src = max((i + 0.5) * s - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n - 1)
        lam = min(max(src - i0, 0.0), 1.0)
        i1 = i0 + (i0 < n - 1)
        m[i, i0] += 1 - lam
        m[i, i1] += lam
    return m


def ref_interpolate(x, out, scales, mode, align_corners=False):
    """Separable float64 reference: one axis at a time (any rank)."""
    y = x.astype(np.float64)
    for ax, o in enumerate(out):
        n = y.shape[2 + ax]
        s = None if scales is None else scales[ax]
        if mode in ("nearest", "nearest-exact"):
            y = np.take(y, _src_nearest(n, o, s, mode == "nearest-exact"), axis=2 + ax)
        else:
            y = np.moveaxis(np.tensordot(_linear_matrix(n, o, s, align_corners), y,
                                         axes=([1], [2 + ax])), 0, 2 + ax)
    return y


CASES = [
    ((2, 3, 7), dict(size=11, mode="linear")),
    ((2, 3, 7), dict(scale_factor=0.6, mode="linear", align_corners=True)),
    ((2, 3, 7), dict(scale_factor=1.7, mode="nearest")),
    ((2, 3, 7), dict(size=12, mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(scale_factor=(1.5, 0.7, 2.2), mode="trilinear")),
    ((1, 2, 3, 4, 5), dict(size=(2, 4, 9), mode="trilinear", align_corners=True)),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 7), mode="nearest")),
    ((1, 2, 3, 4, 5), dict(scale_factor=1.6, mode="nearest-exact")),
    ((1, 2, 5, 6), dict(size=(3, 9), mode="nearest-exact")),
]
IDS = [f"{len(s) - 2}d-{kw['mode']}-{i}" for i, (s, kw) in enumerate(CASES)]


def _out_and_scales(shape, kw):
    n = len(shape) - 2
    if "size" in kw:
        size = kw["size"]
        return (size,) * n if isinstance(size, int) else size, None
    sf = kw["scale_factor"]
    sf = (sf,) * n if isinstance(sf, (int, float)) else sf
    return tuple(int(math.floor(d * s)) for d, s in zip(shape[2:], sf)), sf


@pytest.mark.parametrize("shape,kw", CASES, ids=IDS)
def test_forward_matches_numpy_and_torch(shape, kw, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    y = F.interpolate(rt.tensor(x), **kw)
    out, scales = _out_and_scales(shape, kw)
    assert_close(y, ref_interpolate(x, out, scales, kw["mode"], kw.get("align_corners", False)),
                 rt.float32)
    if torch is not None:
        np.testing.assert_allclose(y.numpy(), torch.nn.functional.interpolate(
            torch.tensor(x), **kw).numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("shape,kw", [CASES[i] for i in (0, 3, 5, 6, 8)],
                         ids=[IDS[i] for i in (0, 3, 5, 6, 8)])
def test_gradients_match_torch(shape, kw, rng):
    x = rng.standard_normal(shape)
    t = rt.tensor(x, device=AD).require_grad()
    y = F.interpolate(t, **kw)
    w = rng.uniform(0.5, 1.5, size=y.shape)
    got = t.grad(rt.sum(y * rt.tensor(w, device=AD)).backward()).numpy()
    tx = torch.tensor(x, requires_grad=True)
    (torch.nn.functional.interpolate(tx, **kw) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [rt.uint8, rt.int64])
@pytest.mark.parametrize("shape,kw", [CASES[i] for i in (2, 3, 7, 8, 9)],
                         ids=[IDS[i] for i in (2, 3, 7, 8, 9)])
def test_nearest_modes_take_integer_images(shape, kw, dtype, rng):
    x = rng.integers(0, 255, size=shape).astype(dtype.np)
    y = F.interpolate(rt.tensor(x), **kw)
    assert y.dtype is dtype
    out, scales = _out_and_scales(shape, kw)
    np.testing.assert_array_equal(y.numpy(), ref_interpolate(x, out, scales, kw["mode"]))
    if torch is not None and dtype is rt.uint8:     # PyTorch's only integer dtype here
        np.testing.assert_array_equal(y.numpy(), torch.nn.functional.interpolate(
            torch.tensor(x), **kw).numpy())


@needs_torch
def test_linear_modes_refuse_integers_as_torch_does(rng):
    x = rng.integers(0, 255, size=(1, 1, 4, 4)).astype(np.int64)
    with pytest.raises(NotImplementedError):
        torch.nn.functional.interpolate(torch.tensor(x), size=3, mode="bilinear")
    with pytest.raises(rt.DTypeError) as e:
        F.interpolate(rt.tensor(x), size=3, mode="bilinear")
    assert str(e.value) == ("interpolate: input must be float32 or float64, got int64 (mode "
                            "'bilinear'; the nearest modes also take integer dtypes)")


@needs_torch
def test_upsample_layer_takes_every_rank(rng):
    for shape, kw in (CASES[1], CASES[5], CASES[9]):
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(rt.nn.Upsample(**kw)(rt.tensor(x)).numpy(),
                                   torch.nn.Upsample(**kw)(torch.tensor(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert repr(rt.nn.Upsample(scale_factor=2, mode="trilinear")) == \
        "Upsample(scale_factor=2, mode='trilinear')"


# --------------------------------------------------------------------------- capture, ONNX
def _net(x5):
    a = F.interpolate(x5, scale_factor=(1.5, 0.7, 2.2), mode="trilinear")
    b = F.interpolate(x5, size=(2, 6, 3), mode="nearest-exact")
    c = F.interpolate(rt.reshape(x5, (1, 2, 60)), size=37, mode="linear", align_corners=True)
    return a, b, c


def test_capture_replays_and_exports_to_onnx(rng, tmp_path):
    x = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    want = [t.numpy() for t in _net(rt.tensor(x))]
    graph = rt.capture(_net, x)
    assert [op.op for op in graph.operations].count("interpolate") == 5
    for got, w in zip(graph.run(x), want):
        np.testing.assert_array_equal(got.numpy(), w)
    for got, w in zip(onnx_run(graph, tmp_path / "m.onnx", x), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


def test_replay_on_autodiff_differentiates_through_the_passes(rng):
    x = rng.standard_normal((1, 2, 3, 4, 5))
    graph = rt.capture(_net, x)
    t = rt.tensor(x, device=AD).require_grad()
    got = t.grad(rt.sum(graph.run(t, device=AD)[0]).backward()).numpy()
    t2 = rt.tensor(x, device=AD).require_grad()
    want = t2.grad(rt.sum(_net(t2)[0]).backward()).numpy()
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- errors
X3, X5 = rt.zeros(1, 2, 4), rt.zeros(1, 2, 3, 4, 4)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: F.interpolate(X3, size=3, mode="bilinear"), rt.ShapeError,
     "interpolate: mode 'bilinear' needs a 4-D (N, C, H, W) input, got shape (1, 2, 4)"),
    (lambda: F.interpolate(X5, size=3, mode="linear"), rt.ShapeError,
     "interpolate: mode 'linear' needs a 3-D (N, C, L) input, got shape (1, 2, 3, 4, 4)"),
    (lambda: F.interpolate(X3, size=3, mode="trilinear"), rt.ShapeError,
     "interpolate: mode 'trilinear' needs a 5-D (N, C, D, H, W) input, got shape (1, 2, 4)"),
    (lambda: F.interpolate(rt.zeros(2, 4), size=3), rt.ShapeError,
     "interpolate: expected a 4-D (N, C, H, W), 3-D (N, C, L) or 5-D (N, C, D, H, W) input, got "
     "shape (2, 4)"),
    (lambda: F.interpolate(X5, size=(2, 3)), rt.ArgumentTypeError,
     "interpolate: size must be an int or a tuple of 3 ints, got (2, 3)"),
    (lambda: F.interpolate(X3, scale_factor=(2.0, 2.0)), rt.ArgumentValueError,
     "interpolate: scale_factor must be a positive number or a tuple of 1, got (2.0, 2.0)"),
    (lambda: F.interpolate(X5, size=(2, 0, 3)), rt.ArgumentValueError,
     "interpolate: size must be positive, got (2, 0, 3)"),
    (lambda: F.interpolate(X3, size=3, mode="nearest-exact", align_corners=False),
     rt.ArgumentValueError,
     "interpolate: align_corners can only be set with the interpolating modes (linear, "
     "bilinear, trilinear)"),
    (lambda: F.interpolate(X3, size=3, mode="cubic"), rt.ArgumentValueError,
     "interpolate: mode must be 'nearest', 'nearest-exact', 'linear', 'bilinear' or "
     "'trilinear', got 'cubic'"),
    (lambda: F.interpolate(rt.zeros(1, 2, 4, dtype=rt.bool_), size=3), rt.DTypeError,
     "interpolate: input must be float32 or float64, got bool (mode 'nearest'; the nearest "
     "modes also take integer dtypes)"),
    (lambda: F.interpolate(rt.zeros(1, 2, 0, dtype=rt.int32), size=3), rt.ShapeError,
     "interpolate: input of shape (1, 2, 0) has an empty spatial dimension"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value) == msg
