"""rt.distributed on cuda tensors (host staging unless the MPI is CUDA-aware): a world of one
under plain pytest, every rank under ``mpiexec`` (``.ci/run`` runs it both ways on the
simulator).  Tiny shapes."""
import numpy as np
import pytest

import runtime as rt

pytest.importorskip("mpi4py")


def test_collectives_on_cuda_tensors(cuda_dev):
    D = rt.distributed
    n, r = D.world_size(), D.rank()
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = rt.tensor(base * (r + 1), device=cuda_dev)
    y = D.all_reduce(x, "mean")
    assert y.device == cuda_dev and y.shape == (2, 3)
    np.testing.assert_allclose(y.numpy(), base * (n + 1) / 2, rtol=1e-6)
    g = D.all_gather(x)
    assert g.device == cuda_dev
    np.testing.assert_array_equal(g.numpy(), np.stack([base * (k + 1) for k in range(n)]))
    b = D.broadcast(x, src=0)
    np.testing.assert_array_equal(b.numpy(), base)
    assert D.info()["cuda_path"] in ("direct", "host staging")
