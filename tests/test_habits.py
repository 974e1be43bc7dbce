"""PyTorch/NumPy habits a new user reaches for: ``dim=``/
``keepdim=``, ``any``/``all``/``std``/``numel``/``dim``/``cpu``, NumPy arrays as operands, and
dtype comparisons with NumPy dtypes and names."""
import numpy as np
import pytest

import runtime as rt


def test_dim_and_keepdim_are_accepted_where_axis_and_keepdims_are():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    m = rt.tensor(a)
    np.testing.assert_array_equal(m.sum(dim=0).numpy(), a.sum(axis=0))       # the quoted line
    assert m.mean(dim=1, keepdim=True).shape == (2, 1)
    np.testing.assert_array_equal(m.argmax(dim=1).numpy(), a.argmax(axis=1))
    np.testing.assert_allclose(m.softmax(dim=0).numpy().sum(axis=0), [1, 1, 1], rtol=1e-6)
    assert rt.cat([m, m], dim=1).shape == (2, 6) and rt.stack([m, m], dim=2).shape == (2, 3, 2)
    assert [p.shape for p in m.split(1, dim=1)] == [(2, 1)] * 3
    assert m.unsqueeze(dim=0).shape == (1, 2, 3) and m.flatten(start_dim=0).shape == (6,)
    assert m.gather(dim=1, index=rt.tensor([[2], [0]])).numpy().ravel().tolist() == [2.0, 3.0]
    with pytest.raises(rt.ArgumentTypeError, match="sum: got both axis= and dim="):
        m.sum(axis=0, dim=1)


def test_any_all_std():
    a = np.array([[1.0, 0.0], [3.0, 4.0]], np.float32)
    m = rt.tensor(a)
    assert m.any().numpy() == a.any() and m.all().numpy() == a.all()
    np.testing.assert_array_equal(m.all(dim=1).numpy(), a.all(axis=1))
    assert rt.zeros(0).any().numpy() == np.zeros(0).any()
    np.testing.assert_array_equal(rt.zeros(0, 3).all(axis=0).numpy(), np.zeros((0, 3)).all(axis=0))
    np.testing.assert_allclose(m.std(dim=0, correction=1).numpy(), a.std(axis=0, ddof=1), rtol=1e-6)
    with pytest.raises(rt.ShapeError, match=r"use \.any\(\)/\.all\(\)"):
        bool(m > 0)
    assert bool((m > 0).any())


def test_numel_dim_cpu():
    m = rt.zeros(2, 3)
    assert m.numel() == 6 and m.dim() == 2 and m.cpu().device == rt.cpu()


@pytest.mark.parametrize("left", [True, False])
def test_numpy_arrays_as_operands(left):
    t = rt.ones(3)
    a = np.arange(3.0)                       # float64: promotes, as torch.from_numpy(a) would
    out = (a + t) if left else (t + a)
    assert isinstance(out, rt.Tensor) and out.dtype is rt.float64 and out.device == t.device
    np.testing.assert_array_equal(out.numpy(), a + 1)
    np.testing.assert_array_equal(rt.where(t > 0, np.zeros(3, np.float32), t).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(t.clamp(np.zeros(3), np.full(3, 0.5)).numpy(), [0.5] * 3)


def test_dtype_compares_with_numpy_dtypes_and_names():
    t = rt.zeros(2)
    assert t.dtype == np.float32 and t.dtype == "float32" and t.dtype == np.dtype("float32")
    assert t.dtype != np.float64 and t.dtype != "int32" and t.dtype != object()
    assert {rt.float32: 1}[rt.float32] == 1
