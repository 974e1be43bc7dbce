"""Sorting and random ops on the cuda set (simulator: tiny shapes; a GPU: bigger ones): argsort/topk agree
with the cpu set index for index (same stable order, NaN handling and tie rule), and the
random ops built on rand give the cpu set's values for the same seed."""
import numpy as np

import runtime as rt


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    a = np.round(rng.standard_normal(shape), 1).astype(np.float32)       # ties
    a.reshape(-1)[::5] = np.nan
    a.reshape(-1)[1::6] = -0.0
    return a


def test_sort_topk_match_cpu(cuda_dev, big):
    shape = (64, 500) if big else (3, 9)
    a = _data(shape)
    for axis in (1, 0):
        for desc in (False, True):
            c = rt.sort(rt.tensor(a), dim=axis, descending=desc)
            g = rt.sort(rt.tensor(a, device=cuda_dev), dim=axis, descending=desc)
            np.testing.assert_array_equal(g.indices.numpy(), c.indices.numpy())
            np.testing.assert_array_equal(g.values.numpy(), c.values.numpy())
        for largest in (True, False):
            c = rt.topk(rt.tensor(a), 2, dim=axis, largest=largest)
            g = rt.topk(rt.tensor(a, device=cuda_dev), 2, dim=axis, largest=largest)
            np.testing.assert_array_equal(g.indices.numpy(), c.indices.numpy())
    i = rt.tensor(np.array([[3, 1, 2, 1]]), device=cuda_dev)
    assert rt.argsort(i).numpy().tolist() == [[1, 3, 2, 0]]
    assert rt.median(rt.tensor(a, device=cuda_dev), dim=1).values.shape == (shape[0],)


def test_random_creation_matches_cpu(cuda_dev):
    draws = [lambda d: rt.uniform(-1.0, 2.0, (7,), device=d),
             lambda d: rt.randint(0, 9, (7,), device=d),
             lambda d: rt.randperm(6, device=d),
             lambda d: rt.bernoulli(rt.full((7,), 0.5, device=d))]
    for draw in draws:
        rt.manual_seed(42, device=rt.cpu())
        rt.manual_seed(42, device=cuda_dev)
        np.testing.assert_array_equal(draw(cuda_dev).numpy(), draw(rt.cpu()).numpy())
