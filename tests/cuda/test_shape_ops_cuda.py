"""The shape/indexing ops on the cuda kernel set (tiny shapes under the simulator): they are
compositions of existing records (no kernel of their own), so this checks the composition runs
on cuda (negative-step views, take, scatter_add, where) and agrees with NumPy."""
import numpy as np
import pytest

import runtime as rt

A = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
IDX = np.array([[0, 0], [1, 3], [2, 2]])


CASES = [
    ("pad_reflect", lambda t: rt.pad(t, (1, 2, 1, 0), mode="reflect"),
     lambda a: np.pad(a, ((1, 0), (1, 2)), mode="reflect")),
    ("pad_constant", lambda t: rt.pad(t, (1, 0), value=2.0),
     lambda a: np.pad(a, ((0, 0), (1, 0)), constant_values=2.0)),
    ("flip", lambda t: t.flip((0, 1)), lambda a: a[::-1, ::-1]),
    ("roll", lambda t: t.roll(1, 1), lambda a: np.roll(a, 1, 1)),
    ("tril", lambda t: t.tril(), np.tril),
    ("diagonal", lambda t: t.diagonal(1), lambda a: np.diagonal(a, 1)),
    ("repeat", lambda t: t.repeat(2, 1), lambda a: np.tile(a, (2, 1))),
    ("fancy", lambda t: t[[[0], [2]], [1, 3]], lambda a: a[[[0], [2]], [1, 3]]),
    ("mask", lambda t: t[t > 0], lambda a: a[a > 0]),
    ("scatter_reduce_amax", lambda t: t.scatter_reduce(1, rt.tensor(IDX, device=t.device), t[:, :2], "amax"),
     lambda a: np.stack([[max([a[i, j]] + [a[i, k] for k in range(2) if IDX[i, k] == j]) for j in range(4)]
                         for i in range(3)])),
]


@pytest.mark.parametrize("fn,ref", [pytest.param(f, r, id=n) for n, f, r in CASES])
def test_matches_numpy_on_cuda(cuda_dev, fn, ref):
    got = fn(rt.tensor(A, device=cuda_dev))
    assert got.device == cuda_dev
    np.testing.assert_allclose(got.numpy(), ref(A.astype(np.float64)).astype(np.float32), rtol=1e-6)
