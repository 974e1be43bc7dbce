"""The scans on the cuda set (simulator: tiny shapes; a GPU: bigger ones): the "scan"
rows of tests/opinfo.py agree with the cpu set (the same float64/int64 accumulators, the same
tie and NaN rule for the running max/min), the reversed scans of the gradients too, and einsum
runs through the cuda matmul."""
import numpy as np
import pytest

import runtime as rt
from opinfo import rows


@pytest.mark.parametrize("info", rows("scan", device="cuda"), ids=lambda r: r.name)
def test_scans_match_cpu(info, cuda_dev, big):
    shape = (64, 300) if big else (3, 5)
    rng = np.random.default_rng(0)
    for dt in info.dtypes:
        (x,) = info.inputs(shape, dt, rng)
        for dim in (1, 0):
            c = info.fn(rt.tensor(x), dim).numpy()
            g = info.fn(rt.tensor(x, device=cuda_dev), dim).numpy()
            assert g.dtype == c.dtype
            np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-12)


def test_reverse_nan_ties_and_einsum(cuda_dev, big):
    a = np.array([[1.0, 3.0, 3.0, np.nan, 5.0], [2.0, 2.0, -1.0, 4.0, 4.0]])
    x = rt.tensor(a, device=cuda_dev)
    assert rt.cummax(x, 1).indices.tolist() == [[0, 1, 2, 3, 3], [0, 1, 1, 3, 4]]
    rev = rt.dispatch.dispatch("cumsum", (x,), {"axis": 1, "reverse": True})
    np.testing.assert_allclose(rev.numpy(), np.flip(np.cumsum(np.flip(a, 1), 1), 1))
    rev = rt.dispatch.dispatch("logcumsumexp", (x,), {"axis": 0, "reverse": True})
    np.testing.assert_allclose(rev.numpy(), np.flip(np.logaddexp.accumulate(np.flip(a, 0), 0), 0))
    m = np.arange(12.0).reshape(3, 4)
    got = rt.einsum("ij,kj->ik", rt.tensor(m, device=cuda_dev), rt.tensor(m, device=cuda_dev))
    np.testing.assert_allclose(got.numpy(), m @ m.T)
