"""The convolution ops on the cuda set (a GPU, or the simulator with NUMBA_ENABLE_CUDASIM=1):
im2col/col2im, conv2d/conv_transpose2d (and conv3d/conv_transpose3d, made of them) forward and
gradients equal the cpu set's, on tiny shapes
(the simulator pays per thread)."""
import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional


def _cuda():
    try:
        return rt.cuda(0)
    except rt.DeviceError as exc:
        pytest.skip(f"needs a GPU: no usable cuda device: {exc}")


# (fn, input shapes): stride, asymmetric "same" padding, dilation, groups, output_padding
CASES = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
               [(1, 2, 4, 5), (2, 2, 2, 2), (2,)]),
    "conv2d_same_grouped": (lambda x, w: F.conv2d(x, w, padding="same", groups=2),
                            [(1, 2, 3, 3), (2, 1, 2, 2)]),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                            output_padding=1),
                         [(1, 2, 2, 3), (2, 1, 2, 2), (1,)]),
    "unfold_fold": (lambda x: F.fold(F.unfold(x, 2, padding=1, stride=2) * 2.0, (3, 4), 2,
                                     padding=1, stride=2), [(1, 1, 3, 4)]),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=(1, 0, 1), groups=2),
               [(1, 2, 3, 2, 3), (2, 1, 2, 2, 2), (2,)]),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w, stride=(2, 1, 1), padding=(1, 0, 0),
                                                         output_padding=(1, 0, 0)),
                         [(1, 2, 2, 2, 2), (2, 1, 2, 2, 2)]),
}


def _run(device, fn, arrays):
    xs = [rt.tensor(a, device=rt.autodiff(device)).require_grad() for a in arrays]
    out = fn(*xs)
    grads = rt.sum(out * out).backward()
    return out.numpy(), [x.grad(grads).numpy() for x in xs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_gradients_match_cpu(name):
    cuda = _cuda()
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    out_cpu, g_cpu = _run(rt.cpu(), fn, arrays)
    out_gpu, g_gpu = _run(cuda, fn, arrays)
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-12, atol=1e-12)
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_float32_kernels_match_cpu():
    cuda = _cuda()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((2, 2, 3, 3)).astype(np.float32)
    got = F.conv2d(rt.tensor(x, device=cuda), rt.tensor(w, device=cuda), padding=1)
    want = F.conv2d(rt.tensor(x), rt.tensor(w), padding=1)
    assert got.device == cuda and got.dtype is rt.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
