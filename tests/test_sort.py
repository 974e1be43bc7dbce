"""sort, argsort, topk, kthvalue, median, unique: NumPy float64 references (stable
sorts), torch as a second oracle where importable, gradients by finite differences, capture
(records, replay, ONNX, unique's DataDependentShape error) and exact error messages.

Compile budget: the radix kernels compile once per key width (32/64 bits), top-k once per
dtype; the dtypes below are kept to float32, float64 and int64."""
import re

import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch



def _sample(shape, dtype, rng, nan=False, ties=False):
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(shape)
        if ties:
            a = np.round(a, 1)
        a = a.astype(dtype)
        if nan and a.size:
            a.reshape(-1)[rng.integers(0, a.size, max(1, a.size // 7))] = np.nan
        return a
    return rng.integers(-5, 5, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 50), 1), ((40, 3), 0), ((2, 3, 70), -1)])
def test_sort_matches_numpy_stable(dtype, shape, axis, rng):
    a = _sample(shape, dtype, rng, nan=True, ties=True)
    v, i = rt.sort(rt.tensor(a), dim=axis)
    ref = np.argsort(a, axis=axis, kind="stable")
    np.testing.assert_array_equal(i.numpy(), ref)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, ref, axis))
    assert v.dtype == rt.tensor(a).dtype and i.dtype is rt.int64
    np.testing.assert_array_equal(rt.argsort(rt.tensor(a), dim=axis).numpy(), ref)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_sort_descending_stable(dtype, rng):
    a = _sample((4, 60), dtype, rng, nan=True, ties=True)
    v, i = rt.tensor(a).sort(dim=1, descending=True, stable=True)
    i = i.numpy()
    for r in range(a.shape[0]):
        row = a[r].astype(np.float64)
        # NaN first, then values non-increasing, ties in input order
        key = [(0 if np.isnan(row[j]) else 1, 0.0 if np.isnan(row[j]) else -row[j], j)
               for j in range(row.size)]
        want = [t[2] for t in sorted(key)]
        np.testing.assert_array_equal(i[r], want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, i, 1))


def test_sort_long_row_parallel_path(rng, monkeypatch):
    # a single row of >= 2**16 elements takes the chunk-parallel radix sort (with enough threads)
    from jit_kernels.cpu import sort as ksort
    monkeypatch.setattr(ksort, "_LONG_ROW_THREADS", 2)
    a = rng.standard_normal(70_000).astype(np.float32)
    a[::1000] = np.nan
    a[5::997] = a[6]                                   # ties
    i = rt.argsort(rt.tensor(a)).numpy()
    np.testing.assert_array_equal(i, np.argsort(a, kind="stable"))
    i = rt.argsort(rt.tensor(a), descending=True).numpy()
    s = a[i]
    assert np.isnan(s[:70]).all() and np.all(np.diff(s[70:]) <= 0)


def test_negative_zero_equals_zero_and_stability():
    a = np.array([0.0, -0.0, 1.0, -0.0, 0.0], np.float32)
    np.testing.assert_array_equal(rt.argsort(rt.tensor(a)).numpy(), [0, 1, 3, 4, 2])


def test_0d_and_empty():
    v, i = rt.sort(rt.tensor(3.5))
    assert v.shape == () and v.item() == 3.5 and i.item() == 0
    v, i = rt.sort(rt.zeros(2, 0))
    assert v.shape == (2, 0) and i.shape == (2, 0)
    v, i = rt.topk(rt.ones(3, 4), 0)
    assert v.shape == (3, 0)


@needs_torch
def test_sort_topk_agree_with_torch(rng):
    a = rng.standard_normal((5, 33)).astype(np.float32)
    a[1, 3] = np.nan
    t = torch.from_numpy(a)
    v, i = rt.sort(rt.tensor(a), dim=1, descending=True, stable=True)
    tv, ti = torch.sort(t, dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    for largest in (True, False):
        v, i = rt.topk(rt.tensor(a), 4, dim=1, largest=largest)
        tv, ti = torch.topk(t, 4, dim=1, largest=largest)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
    v, i = rt.kthvalue(rt.tensor(a), 5, dim=0)
    tv, ti = torch.kthvalue(t, 5, dim=0)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    v, i = rt.median(rt.tensor(a), dim=1)
    tv, ti = torch.median(t, dim=1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    assert np.isnan(rt.median(rt.tensor(a)).item()) == np.isnan(torch.median(t).item())


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("k,largest", [(1, True), (5, False), (10, True)])
def test_topk_matches_numpy(dtype, k, largest, rng):
    a = _sample((6, 97), dtype, rng, ties=True)
    v, i = rt.topk(rt.tensor(a), k, largest=largest)
    key = -a.astype(np.float64) if largest else a.astype(np.float64)
    ref = np.argsort(key, axis=1, kind="stable")[:, :k]      # ties: lower index first
    np.testing.assert_array_equal(i.numpy(), ref)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, ref, 1))


def test_topk_nan_is_largest_and_other_dim(rng):
    a = rng.standard_normal((20, 3)).astype(np.float32)
    a[4, 1] = np.nan
    v, i = rt.topk(rt.tensor(a), 2, dim=0)
    assert i.shape == (2, 3) and i.numpy()[0, 1] == 4 and np.isnan(v.numpy()[0, 1])
    v, i = rt.topk(rt.tensor(a), 15, dim=0, largest=False)   # k * 8 > n: the full-sort path
    np.testing.assert_array_equal(i.numpy()[:, 0], np.argsort(a[:, 0], kind="stable")[:15])


def test_kthvalue_and_median_match_numpy(rng):
    a = rng.standard_normal((4, 9)).astype(np.float32)
    for k in (1, 4, 9):
        v, i = rt.kthvalue(rt.tensor(a), k, dim=1)
        np.testing.assert_array_equal(v.numpy(), np.partition(a, k - 1, axis=1)[:, k - 1])
        np.testing.assert_array_equal(np.take_along_axis(a, i.numpy()[:, None], 1)[:, 0],
                                      v.numpy())
    v, i = rt.kthvalue(rt.tensor(a), 2, dim=0, keepdim=True)
    assert v.shape == (1, 9) and i.shape == (1, 9)
    b = rng.standard_normal((6, 8)).astype(np.float32)      # even length: the lower median
    v, i = rt.median(rt.tensor(b), dim=1)
    np.testing.assert_array_equal(v.numpy(), np.sort(b, axis=1)[:, 3])
    assert rt.median(rt.tensor(b)).item() == np.sort(b.reshape(-1))[(b.size - 1) // 2]
    v, i = rt.median(rt.tensor([[1.0, np.nan, 0.0]]), dim=1)
    assert np.isnan(v.item()) and i.item() == 1


def test_median_int():
    v, i = rt.median(rt.tensor([[3, 1, 2, 5]]), dim=1, keepdim=True)
    assert v.tolist() == [[2]] and i.tolist() == [[2]]


# --------------------------------------------------------------------------- unique
def test_unique_matches_numpy(rng):
    a = rng.integers(0, 6, (4, 7))
    got, inv, cnt = rt.unique(rt.tensor(a), return_inverse=True, return_counts=True)
    u, ninv, ncnt = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(got.numpy(), u)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(a.shape))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    assert rt.unique(rt.tensor(a)).shape == u.shape
    assert rt.unique(rt.zeros(0)).shape == (0,)


def test_unique_dim_and_nan(rng):
    a = np.array([[1, 2], [0, 1], [1, 2], [0, 0]])
    got, inv, cnt = rt.unique(rt.tensor(a), dim=0, return_inverse=True, return_counts=True)
    u, ninv, ncnt = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(got.numpy(), u)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    got = rt.unique(rt.tensor(a.T), dim=1)
    np.testing.assert_array_equal(got.numpy(), np.unique(a.T, axis=1))
    # NaNs are each distinct (PyTorch)
    got = rt.unique(rt.tensor([1.0, np.nan, 1.0, np.nan]))
    assert got.shape == (3,) and np.isnan(got.numpy()[1:]).all()


@needs_torch
def test_unique_agrees_with_torch(rng):
    a = rng.integers(0, 5, (3, 6))
    got, inv, cnt = rt.unique(rt.tensor(a), return_inverse=True, return_counts=True)
    tu, ti, tc = torch.unique(torch.from_numpy(a), return_inverse=True, return_counts=True)
    for x, y in ((got, tu), (inv, ti), (cnt, tc)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


# --------------------------------------------------------------------------- gradients
def _distinct(shape, rng):
    return rng.permutation(np.prod(shape)).reshape(shape) * 0.37 + rng.uniform(0, 0.1, shape)


@pytest.mark.parametrize("fn", [
    lambda x: rt.sort(x, dim=1)[0],
    lambda x: rt.sort(x, dim=0, descending=True).values,
    lambda x: rt.topk(x, 2, dim=1).values,
    lambda x: rt.kthvalue(x, 2, dim=0)[0],
    lambda x: rt.median(x, dim=1)[0],
    lambda x: rt.median(x),
], ids=["sort", "sort_desc", "topk", "kthvalue", "median_dim", "median"])
def test_values_gradients_by_finite_differences(fn, rng):
    check_grad(fn, _distinct((3, 5), rng))


def test_indices_stop_gradients():
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor([3.0, 1.0, 2.0], dtype=rt.float64, device=ad).require_grad()
    v, i = rt.sort(x)
    assert i.dtype is rt.int64 and not i.requires_grad
    g = (v * rt.tensor([1.0, 2.0, 3.0], dtype=rt.float64, device=ad)).sum().backward()
    np.testing.assert_array_equal(x.grad(g).numpy(), [3.0, 1.0, 2.0])


# --------------------------------------------------------------------------- capture
def test_capture_records_and_replays(rng):
    a = rng.standard_normal((3, 8)).astype(np.float32)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(a, device=scope.device)
        v, i = rt.sort(x, dim=1, descending=True)
        tv, ti = rt.topk(x, 3, dim=1)
        scope.complete(inputs=[x], outputs=[v, i, tv, ti])
    ops = [o.op for o in scope.graph.operations]
    assert "argsort" in ops and "topk" in ops and "gather" in ops
    got = scope.graph.run(a)
    ev, ei = rt.sort(rt.tensor(a), dim=1, descending=True)
    np.testing.assert_array_equal(got[0].numpy(), ev.numpy())
    np.testing.assert_array_equal(got[1].numpy(), ei.numpy())
    np.testing.assert_array_equal(got[3].numpy(), rt.topk(rt.tensor(a), 3, dim=1)[1].numpy())


def test_unique_inside_capture_raises_data_dependent_shape():
    cap = rt.CaptureDevice()
    with pytest.raises(rt.CaptureError) as e:
        with cap.capture_scope() as scope:
            x = rt.tensor([1, 2, 2], device=scope.device)
            rt.unique(x)
    assert e.value.kind == "DataDependentShape"
    assert str(e.value).startswith("unique: the output shape depends on the input's values")


def test_onnx_export_of_sort_and_topk(tmp_path, rng):
    a = rng.standard_normal((3, 8)).astype(np.float32)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(a, device=scope.device)
        v, i = rt.sort(x, dim=1)
        tv, ti = rt.topk(x, 2, dim=0, largest=False)
        scope.complete(inputs=[x], outputs=[v, i, tv, ti])
    got = onnx_run(scope.graph, tmp_path / "sort.onnx", a)
    want = scope.graph.run(a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())


# --------------------------------------------------------------------------- errors
def test_error_messages():
    x = rt.ones(2, 3)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "topk: k=4 is out of range for dim 1 of size 3 (shape (2, 3))")):
        rt.topk(x, 4)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "kthvalue: k=0 is out of range for dim 1 of size 3 (shape (2, 3)); k must be in "
            "[1, 3]")):
        rt.kthvalue(x, 0)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "median: cannot take the median of an empty tensor (shape (0,))")):
        rt.median(rt.zeros(0))
    with pytest.raises(rt.ShapeError, match="sort: dim must be an int, got \\(0, 1\\)"):
        rt.sort(x, dim=(0, 1))
    with pytest.raises(rt.ArgumentTypeError, match="argsort: descending must be a bool"):
        rt.argsort(x, descending="yes")
    with pytest.raises(rt.ShapeError, match="argsort"):
        rt.argsort(x, dim=2)
