"""uint32 and uint64 on the cuda kernel set (tiny shapes under the simulator): casts wrap from
ints and saturate from floats, arithmetic wraps, and uint64 orders across 2**63, as on cpu."""
import numpy as np

import runtime as rt

TOP = 1 << 63


def test_casts_and_arithmetic_match_the_cpu_set(cuda_dev):
    f = rt.tensor([-1.5, 3.7, 1e30, float("nan")], dtype=rt.float64, device=cuda_dev)
    assert f.astype(rt.uint32).tolist() == [0, 3, (1 << 32) - 1, 0]
    assert f.astype(rt.uint64).tolist() == [0, 3, (1 << 64) - 1, 0]
    assert rt.tensor([-1, 5], device=cuda_dev).astype(rt.uint32).tolist() == [(1 << 32) - 1, 5]
    a = np.array([3, 5, (1 << 32) - 1], np.uint32)
    ta, tb = rt.tensor(a, device=cuda_dev), rt.tensor(a[::-1].copy(), device=cuda_dev)
    assert (ta - tb).numpy().tolist() == (a - a[::-1]).tolist() and (ta - tb).dtype is rt.uint32
    assert (ta * tb).numpy().tolist() == (a * a[::-1]).tolist()
    u = np.array([5, TOP + 1, 7, (1 << 64) - 1], np.uint64)
    tu = rt.tensor(u, device=cuda_dev)
    assert (tu > 6).tolist() == (u > 6).tolist() and tu.max().item() == (1 << 64) - 1
    assert tu.argmin().item() == 0 and (tu + 1).numpy().tolist() == (u + np.uint64(1)).tolist()
    assert tu.double().numpy().tolist() == u.astype(np.float64).tolist()
