"""The small dtypes on the cuda kernel set (tiny shapes under the simulator): the half
conversion kernels against NumPy/the cpu set bit for bit, saturating small-int casts, and the
upcast lowering of an elementwise op, a reduction and a matmul."""
import numpy as np

import runtime as rt


def _bits(t):
    return t.device.to_host(t)


def test_half_conversions_match_the_cpu_set(cuda_dev):
    x = np.array([1.0, 1 / 3, 65504.0, 65520.0, 1e5, -0.0, 6e-8, 3e-8, np.inf, np.nan, -2.5e-5,
                  3.4e38, 1.0009765625, 1.00048828125], np.float32)
    for dt in (rt.float16, rt.bfloat16):
        g = rt.tensor(x, device=cuda_dev).astype(dt)
        c = rt.tensor(x).astype(dt)
        assert g.dtype is dt and np.array_equal(_bits(g), _bits(c))
        assert np.array_equal(g.float().numpy(), c.float().numpy(), equal_nan=True)
    with np.errstate(over="ignore"):
        assert np.array_equal(rt.tensor(x, device=cuda_dev).half().numpy().view(np.uint16)[:9],
                              x[:9].astype(np.float16).view(np.uint16))


def test_small_ints_and_upcast_ops(cuda_dev):
    f = rt.tensor([300.5, -1e9, float("nan"), 2.9], device=cuda_dev)
    assert f.astype(rt.int8).tolist() == [127, -128, 0, 2]
    assert f.astype(rt.uint8).tolist() == [255, 0, 0, 2]
    i = rt.tensor([100, -128, 127], dtype=rt.int8, device=cuda_dev)
    assert (i + i).tolist() == [-56, 0, -2] and (i + i).dtype is rt.int8
    assert i.sum().item() == 99 and i.sum().dtype is rt.int64
    h = rt.tensor(np.full((3, 4), 0.5, np.float16), device=cuda_dev)
    w = rt.tensor(np.ones((4, 2), np.float16), device=cuda_dev)
    y = h @ w
    assert y.dtype is rt.float16 and y.numpy().tolist() == [[2.0, 2.0]] * 3
    assert h.sum(axis=1).numpy().tolist() == [2.0] * 3
