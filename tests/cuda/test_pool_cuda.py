"""Pooling and resampling on cuda (the simulator, tiny shapes; or a GPU): forward values and
indices and the gradients equal the cpu set's (which tests/test_pooling.py checks against NumPy
references and torch).  The cuda backward adds with atomics, so floats compare to 1e-12."""
import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional

FORWARD = [
    ("max", lambda t: F.max_pool2d(t, 3, 2, 1)),
    ("max_dilated_ceil", lambda t: F.max_pool2d(t, (2, 3), (1, 2), 1, (2, 1), True)),
    ("max_indices", lambda t: F.max_pool2d(t, 2, 1, return_indices=True)[1]),
    ("adaptive_max_indices", lambda t: F.adaptive_max_pool2d(t, (2, 4), return_indices=True)[1]),
    ("avg", lambda t: F.avg_pool2d(t, 3, 2, 1, True, False)),
    ("avg_divisor", lambda t: F.avg_pool2d(t, 2, 1, 1, divisor_override=3)),
    ("adaptive_avg", lambda t: F.adaptive_avg_pool2d(t, (2, 4))),
    ("nearest", lambda t: F.interpolate(t, size=(7, 5))),
    ("bilinear", lambda t: F.interpolate(t, size=(3, 9), mode="bilinear")),
    ("bilinear_corners", lambda t: F.interpolate(t, size=(4, 4), mode="bilinear",
                                                 align_corners=True)),
    ("nearest_exact", lambda t: F.interpolate(t, scale_factor=1.6, mode="nearest-exact")),
    ("linear_1d", lambda t: F.interpolate(t[0], size=9, mode="linear")),
    ("trilinear", lambda t: F.interpolate(t[None], size=(2, 3, 8), mode="trilinear")),
    ("max_unpool", lambda t: F.max_unpool2d(*F.max_pool2d(t, 3, 2, 1, return_indices=True), 3, 2,
                                            1, output_size=t.shape[2:])),
    ("max_pool3d", lambda t: F.max_pool3d(t[None], (1, 3, 2), (1, 2, 1), (0, 1, 1))),
    ("avg_pool3d", lambda t: F.avg_pool3d(t[None], (2, 2, 3), 1, (1, 0, 1), True, False)),
]


def _x(dtype, big):
    shape = (4, 8, 32, 32) if big else (1, 2, 5, 6)
    n = int(np.prod(shape))
    # distinct values: the gradients of the max pools have a single argmax per window
    return (np.random.default_rng(0).permutation(n) * 0.25 - n * 0.1).reshape(shape).astype(dtype)


@pytest.mark.parametrize("fn", [f for _, f in FORWARD], ids=[n for n, _ in FORWARD])
def test_forward_matches_cpu(cuda_dev, big, fn):
    x = _x(np.float32, big)
    got = fn(rt.tensor(x, device=cuda_dev))
    want = fn(rt.tensor(x)).numpy()
    assert got.device == cuda_dev and got.dtype.np == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [f for n, f in FORWARD if "indices" not in n],
                         ids=[n for n, _ in FORWARD if "indices" not in n])
def test_gradients_match_cpu(cuda_dev, big, fn):
    x = _x(np.float64, big)
    grads = []
    for dev in (rt.autodiff(cuda_dev), rt.autodiff(rt.cpu())):
        t = rt.tensor(x, device=dev).require_grad()
        y = fn(t)
        w = rt.tensor(np.linspace(0.5, 1.5, int(np.prod(y.shape))).reshape(y.shape), device=dev)
        grads.append(t.grad((y * w).sum().backward()).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def test_max_pool_takes_ints_and_propagates_nan(cuda_dev):
    x = np.arange(30, dtype=np.int64).reshape(1, 1, 5, 6) % 7
    got = F.max_pool2d(rt.tensor(x, device=cuda_dev), 2, 1)
    np.testing.assert_array_equal(got.numpy(), F.max_pool2d(rt.tensor(x), 2, 1).numpy())
    f = np.zeros((1, 1, 2, 2), np.float32)
    f[0, 0, 1, 0] = np.nan
    y, i = F.max_pool2d(rt.tensor(f, device=cuda_dev), 2, return_indices=True)
    assert np.isnan(y.numpy()).all() and i.numpy().item() == 2
