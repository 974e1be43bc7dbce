"""rt.linalg on the cuda kernel set: it has no LAPACK, so each decomposition raises DeviceError
naming the op (no silent copy to the host), on cuda and on autodiff over cuda."""
import numpy as np
import pytest

import runtime as rt


def test_linalg_raises_device_error_on_cuda(cuda_dev):
    for dev in (cuda_dev, rt.autodiff(cuda_dev)):
        a = rt.tensor(np.eye(2, dtype=np.float32), device=dev)
        for name, fn in (("linalg.inv", rt.linalg.inv), ("linalg.det", rt.linalg.det),
                         ("linalg.cholesky", rt.linalg.cholesky),
                         ("linalg.svd", rt.linalg.svdvals)):
            with pytest.raises(rt.DeviceError, match=rf"^{name}: not available on device cuda"
                                                     rf".*: the cuda kernel set has no LAPACK"):
                fn(a)
