"""Indexing kernels on the cuda set (tiny shapes under the simulator): the ``put`` kernel behind
advanced-index assignment (the last of repeated writes wins, deterministically; accumulate
adds), the one-pass ``pad`` kernel and its gradient, and the CUDA Array Interface both ways."""
import os

import numpy as np
import pytest

import runtime as rt

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1"
A = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5


def test_advanced_assignment_on_cuda(cuda_dev):
    t = rt.tensor(A, device=cuda_dev)
    rows, cols = [0, 2, 0, 1], [1, 3, 1, 0]                         # (0, 1) twice
    v = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    got = t.index_put((rt.tensor(rows, device=cuda_dev), rt.tensor(cols, device=cuda_dev)),
                      rt.tensor(v, device=cuda_dev))
    assert got.device == cuda_dev
    want = A.copy()
    want[rows, cols] = v                                            # NumPy: the last wins
    np.testing.assert_array_equal(got.numpy(), want)
    acc = t.index_put((rt.tensor(rows, device=cuda_dev), rt.tensor(cols, device=cuda_dev)),
                      rt.tensor(v, device=cuda_dev), accumulate=True)
    want = A.copy()
    np.add.at(want, (rows, cols), v)
    np.testing.assert_array_equal(acc.numpy(), want)
    np.testing.assert_array_equal(t.slice_assign(t > 0, 0.0).numpy(), np.where(A > 0, 0, A))
    with pytest.raises(rt.IndexOutOfRangeError, match="put: index 12 is out of bounds"):
        t.put(rt.tensor([12], device=cuda_dev), 1.0)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_and_its_gradient_on_cuda(cuda_dev, mode, np_mode):
    ad = rt.autodiff(cuda_dev)
    x = rt.tensor(A, device=ad).require_grad()
    y = rt.pad(x, (2, 1, 1, 2), mode=mode)
    np.testing.assert_array_equal(y.numpy(), np.pad(A, ((1, 2), (2, 1)), mode=np_mode))
    w = np.arange(np.prod(y.shape), dtype=np.float32).reshape(y.shape) % 3
    g = x.grad((y * rt.tensor(w, device=ad)).sum().backward())
    assert g.device == cuda_dev
    xc = rt.tensor(A, device=rt.autodiff(rt.cpu())).require_grad()
    yc = rt.pad(xc, (2, 1, 1, 2), mode=mode)
    gc = xc.grad((yc * rt.tensor(w, device=xc.device)).sum().backward())
    np.testing.assert_array_equal(g.numpy(), gc.numpy())


def test_cuda_array_interface(cuda_dev):
    t = rt.tensor(A, device=cuda_dev)
    cai = t.__cuda_array_interface__
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["strides"] is None and cai["data"][1] is False and cai["stream"] == 1
    view = t[:, 1::2]                                           # a strided view
    vcai = view.__cuda_array_interface__
    assert vcai["shape"] == (3, 2) and vcai["strides"] == (16, 8)
    assert vcai["data"][0] == cai["data"][0] + 4
    assert not hasattr(rt.tensor(A), "__cuda_array_interface__")
    assert not hasattr(rt.tensor(A, device=rt.autodiff(cuda_dev)), "__cuda_array_interface__")

    class Exporter:                                            # any producer of the interface
        def __init__(self, desc):
            self.__cuda_array_interface__ = desc

    same = rt.from_dlpack(Exporter(vcai))                      # zero-copy view, on cuda:0
    assert same.device == cuda_dev and same.shape == (3, 2)
    assert same.__cuda_array_interface__["data"][0] == vcai["data"][0]
    np.testing.assert_array_equal(same.numpy(), A[:, 1::2])
    copied = rt.tensor(Exporter(vcai))
    assert copied.__cuda_array_interface__["data"][0] != vcai["data"][0]
    np.testing.assert_array_equal(copied.numpy(), A[:, 1::2])
    on_cpu = rt.tensor(Exporter(cai), device="cpu")
    assert on_cpu.device == rt.cpu()
    np.testing.assert_array_equal(on_cpu.numpy(), A)
    if not SIM:                                                # Numba's own importer (GPU only:
        from numba import cuda                                 # the simulator has none)
        d = cuda.as_cuda_array(t)
        np.testing.assert_array_equal(d.copy_to_host(), A)
        back = rt.from_dlpack(cuda.to_device(np.ascontiguousarray(A[::-1])))
        np.testing.assert_array_equal(back.numpy(), A[::-1])
