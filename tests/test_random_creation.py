"""Creation and random ops: linspace/logspace vs NumPy (and torch), the *_like
functions, reproducibility per seed, distribution checks with fixed seeds and generous bounds
(never flaky: every bound is many standard errors wide), capture behaviour and exact errors."""
import re

import numpy as np
import pytest

import runtime as rt
from oracle import torch


def test_linspace_logspace_match_numpy():
    np.testing.assert_allclose(rt.linspace(-1, 2, 7, dtype=rt.float64).numpy(),
                               np.linspace(-1, 2, 7), rtol=1e-15)
    a = rt.linspace(0, 1, 5)
    assert a.dtype is rt.float32 and a.numpy()[-1] == 1.0
    assert rt.linspace(3, 4, 1).tolist() == [3.0] and rt.linspace(0, 1, 0).shape == (0,)
    np.testing.assert_allclose(rt.logspace(0, 3, 4, dtype=rt.float64).numpy(),
                               np.logspace(0, 3, 4), rtol=1e-15)
    np.testing.assert_allclose(rt.logspace(0, 4, 5, base=2.0).numpy(), [1, 2, 4, 8, 16])
    assert rt.linspace(0, 10, 4, dtype=rt.int64).tolist() == [0, 3, 6, 10]
    if torch is not None:       # torch computes float32 linspace in float32; we round float64 once
        np.testing.assert_allclose(rt.linspace(-3.3, 7.1, 11).numpy(),
                                   torch.linspace(-3.3, 7.1, 11).numpy(), rtol=1e-6, atol=1e-6)


def test_like_functions():
    t = rt.ones(2, 3, dtype=rt.int32)
    f = rt.full_like(t, 7)
    assert f.shape == (2, 3) and f.dtype is rt.int32 and f.numpy().tolist() == [[7] * 3] * 2
    assert rt.full_like(t, 1.5, dtype=rt.float64).dtype is rt.float64
    e = rt.empty_like(t)
    assert e.shape == (2, 3) and e.dtype is rt.int32 and not e.numpy().any()
    r = rt.rand_like(rt.zeros(4, dtype=rt.float64))
    assert r.dtype is rt.float64 and r.shape == (4,)
    assert rt.randn_like(rt.zeros(3, 2)).shape == (3, 2)
    with pytest.raises(rt.DTypeError, match="rand_like: dtype must be float32 or float64, "
                                            "got int32"):
        rt.rand_like(t)


_DRAWS = {
    "rand_like": lambda: rt.rand_like(rt.zeros(50)),
    "randn_like": lambda: rt.randn_like(rt.zeros(50)),
    "uniform": lambda: rt.uniform(-2.0, 3.0, (50,)),
    "randint": lambda: rt.randint(3, 9, (50,)),
    "normal": lambda: rt.normal(1.0, 2.0, (50,)),
    "normal_t": lambda: rt.normal(rt.zeros(50), rt.ones(50)),
    "bernoulli": lambda: rt.bernoulli(rt.full((50,), 0.3)),
    "multinomial": lambda: rt.multinomial(rt.tensor([0.2, 0.3, 0.5, 0.0]), 3),
    "multinomial_r": lambda: rt.multinomial(rt.tensor([0.2, 0.3, 0.5]), 20, replacement=True),
    "randperm": lambda: rt.randperm(20),
}


@pytest.mark.parametrize("name", sorted(_DRAWS))
def test_reproducible_per_seed(name):
    draw = _DRAWS[name]
    rt.manual_seed(2024)
    a = draw().numpy()
    b = draw().numpy()
    rt.manual_seed(2024)
    np.testing.assert_array_equal(draw().numpy(), a)
    np.testing.assert_array_equal(draw().numpy(), b)
    if name not in ("multinomial",):          # 3 of 3 nonzero categories: always a permutation
        assert not np.array_equal(a, b) or name == "bernoulli"


def test_uniform_and_normal_moments():
    rt.manual_seed(7)
    # 20_000 draws (below the prange threshold: no extra kernel variants to compile); every
    # bound is >= 5 standard errors wide, and the seed is fixed
    u = rt.uniform(-2.0, 3.0, (20_000,)).numpy().astype(np.float64)
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.06 and abs(u.var() - 25 / 12) < 0.1
    z = rt.normal(1.0, 2.0, (20_000,), dtype=rt.float64).numpy()
    assert abs(z.mean() - 1.0) < 0.08 and abs(z.std() - 2.0) < 0.06
    m = rt.normal(rt.tensor([0.0, 100.0]), rt.tensor([1.0, 0.0]))
    assert m.numpy()[1] == 100.0


def test_randint_range_and_coverage():
    rt.manual_seed(11)
    r = rt.randint(-3, 4, (14_000,)).numpy()
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3)
    assert counts.min() > 14_000 / 7 * 0.85
    assert rt.randint(5, (3, 2)).shape == (3, 2)
    assert rt.randint(0, 2 ** 40, (4,), dtype=rt.int64).numpy().max() < 2 ** 40
    assert rt.randint(0, 10, (3,), dtype=rt.int32).dtype is rt.int32


def test_bernoulli_rate_and_dtype():
    rt.manual_seed(3)
    p = rt.tensor(np.array([0.0, 0.25, 1.0] * 8000, np.float32))
    b = rt.bernoulli(p).numpy().reshape(-1, 3)
    assert b.dtype == np.float32 and set(np.unique(b)) <= {0.0, 1.0}
    assert b[:, 0].sum() == 0 and b[:, 2].all() and abs(b[:, 1].mean() - 0.25) < 0.03
    assert abs(rt.bernoulli(rt.zeros(20_000), 0.5).numpy().mean() - 0.5) < 0.025


def test_multinomial_frequencies():
    rt.manual_seed(5)
    probs = np.array([1.0, 2.0, 0.0, 7.0])
    s = rt.multinomial(rt.tensor(probs), 5000, replacement=True).numpy()
    freq = np.bincount(s, minlength=4) / s.size
    np.testing.assert_allclose(freq, probs / probs.sum(), atol=0.035)
    # without replacement: each row a set of distinct non-zero categories; the first draw
    # follows the probabilities
    rows = rt.multinomial(rt.tensor(np.tile(probs, (4000, 1))), 2).numpy()
    assert rows.shape == (4000, 2) and (rows[:, 0] != rows[:, 1]).all() and (rows != 2).all()
    first = np.bincount(rows[:, 0], minlength=4) / 4000
    np.testing.assert_allclose(first, probs / probs.sum(), atol=0.04)
    # P(second == 0 | first == 3) = 1/3 for these weights
    sec = rows[rows[:, 0] == 3, 1]
    assert abs((sec == 0).mean() - 1 / 3) < 0.06
    if torch is not None:      # same support and shape as torch
        t = torch.multinomial(torch.tensor(probs), 2)
        assert tuple(t.shape) == rt.multinomial(rt.tensor(probs), 2).shape


def test_randperm_is_a_uniform_permutation():
    rt.manual_seed(9)
    assert sorted(rt.randperm(50).tolist()) == list(range(50))
    firsts = np.array([rt.randperm(4).tolist()[0] for _ in range(200)])
    assert np.bincount(firsts, minlength=4).min() > 25          # expected 50 each, sd 6
    assert rt.randperm(0).shape == (0,) and rt.randperm(3, dtype=rt.int32).dtype is rt.int32


def test_random_ops_record_into_a_capture_scope():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.placeholder((3,))
        y = x + rt.uniform(0.0, 1.0, (3,), device=scope.device)
        z = rt.randint(0, 5, (3,), device=scope.device)
        p = rt.randperm(4, device=scope.device)
        scope.complete(inputs=[x], outputs=[y, z, p])
    ops = [o.op for o in scope.graph.operations]
    assert "rand" in ops and "argsort" in ops
    y, z, p = scope.graph.run(np.zeros(3, np.float32))
    assert (0 <= y.numpy()).all() and (y.numpy() < 1).all() and z.numpy().max() < 5
    assert sorted(p.tolist()) == [0, 1, 2, 3]


def test_errors():
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "randint: expected low < high, got low=5, high=5")):
        rt.randint(5, 5, (2,))
    with pytest.raises(rt.ArgumentTypeError, match="randint: high is required"):
        rt.randint(5)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "uniform: expected low <= high, got low=2.0, high=1.0")):
        rt.uniform(2.0, 1.0, (2,))
    with pytest.raises(rt.ArgumentValueError, match=re.escape("normal: std must be >= 0, got -1.0")):
        rt.normal(0.0, -1.0, (2,))
    with pytest.raises(rt.ArgumentTypeError, match="normal: size is required"):
        rt.normal(0.0, 1.0)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "bernoulli: probabilities must be in [0, 1], got values in [-0.5, 0.5]")):
        rt.bernoulli(rt.tensor([-0.5, 0.5]))
    with pytest.raises(rt.ArgumentValueError, match=re.escape("bernoulli: p must be in [0, 1], got 2.0")):
        rt.bernoulli(rt.zeros(2), 2.0)
    with pytest.raises(rt.DTypeError, match="bernoulli: probabilities must be float32 or "
                                            "float64, got int64"):
        rt.bernoulli(rt.tensor([0, 1]))
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "multinomial: cannot sample num_samples=4 > 3 categories without replacement")):
        rt.multinomial(rt.tensor([0.2, 0.3, 0.5]), 4)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "multinomial: cannot sample num_samples=3 without replacement from a row with "
            "fewer non-zero categories")):
        rt.multinomial(rt.tensor([0.2, 0.0, 0.5]), 3)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "multinomial: probabilities must be finite and non-negative")):
        rt.multinomial(rt.tensor([0.2, -0.1]), 1)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "multinomial: num_samples must be positive, got 0")):
        rt.multinomial(rt.tensor([0.2, 0.1]), 0)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "randperm: n must be non-negative, got -1")):
        rt.randperm(-1)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "linspace: steps must be non-negative, got -2")):
        rt.linspace(0, 1, -2)
    with pytest.raises(rt.ArgumentValueError, match=re.escape("linspace: end must be finite, got inf")):
        rt.linspace(0, float("inf"), 3)
