"""NumPy/PyTorch advanced indexing in ``Tensor.__getitem__``: several integer index
arrays (tensors, lists, NumPy arrays) broadcast together and mixed with slices, None and an
ellipsis (NumPy's rule for where the advanced dimensions go), boolean masks, against NumPy
(float32 forward, float64 gradients by finite differences) and torch; out-of-range indices;
capture (integer arrays record and export, masks raise DataDependentShape)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 29.5
T = rt.tensor(A)


def test_the_issue_line_boolean_mask():
    # "t[t > 0] raises take: indices must be int32 or int64, got bool"
    t = rt.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
    np.testing.assert_array_equal(t[t > 0].numpy(), np.array([1.0, 3.0, 5.0], np.float32))


KEYS = [
    ([0, 2],),
    ([0, 2], [1, 3]),
    ([[0], [2]], [1, 3]),                       # broadcast (2, 1) with (2,)
    (slice(None), [1, 3]),
    (slice(None), [3, 1], [4, 0]),              # adjacent after a slice: B in place
    ([[0], [2]], slice(None), [1, 4]),          # separated by a slice: B first
    (0, slice(None), [1, 2]),                   # the int is advanced too: separated, B first
    ([0, 1], slice(None), 0),
    (slice(None), 0, [1, 2]),                   # int and array adjacent: B in place
    (Ellipsis, [1, -1]),
    (None, [0, 1], None, [1, 2]),
    ([1, 2], [[0], [1]], slice(1, 3)),
    (slice(None, None, -1), [2, 2, 0]),
    ([-1, -3],),
    (np.array([], np.int64),),
    (np.array([True, False, True]),),
    (A > 0,),
    (A[:, :, 0] > -10,),
    (slice(None), A[0, :, 0] > -25),
    (np.array([True, False, True]), slice(None), [1, 4]),
    ([1], np.array([[True, False, True, False, True]] * 4)),
]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
@pytest.mark.parametrize("form", ["host", "tensor"])
def test_matches_numpy(key, form):
    if form == "tensor":
        key = tuple(rt.tensor(np.asarray(k)) if isinstance(k, (list, np.ndarray)) else k
                    for k in key)
    got = T[key]
    want = A[tuple(np.asarray(k) if isinstance(k, list) else k for k in
                   (key if form == "host" else
                    tuple(k.numpy() if isinstance(k, rt.Tensor) else k for k in key)))]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=15)
@given(st.data())
def test_random_keys_match_numpy(data):
    shape = (3, 4, 5)
    key = []
    for d in shape:
        kind = data.draw(st.sampled_from(["slice", "int", "arr", "arr"]))
        if kind == "slice":
            key.append(slice(data.draw(st.integers(-d, d)), None, data.draw(st.sampled_from([1, 2, -1]))))
        elif kind == "int":
            key.append(data.draw(st.integers(-d, d - 1)))
        else:
            n = data.draw(st.integers(1, 3))
            key.append(data.draw(st.lists(st.integers(-d, d - 1), min_size=n, max_size=n)))
    lens = {len(k) for k in key if isinstance(k, list)}
    if len(lens) > 1:                      # make the arrays broadcast: all the same length
        m = min(lens)
        key = [k[:m] if isinstance(k, list) else k for k in key]
    key = tuple(key)
    want = A[tuple(np.asarray(k) if isinstance(k, list) else k for k in key)]
    got = T[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@needs_torch
def test_against_torch():
    tt = torch.tensor(A)
    i, j = torch.tensor([[0], [2]]), torch.tensor([1, 3])
    for ours, theirs in [(T[rt.tensor(i.numpy()), :, rt.tensor(j.numpy())], tt[i, :, j]),
                         (T[:, rt.tensor(i.numpy()), rt.tensor(j.numpy())], tt[:, i, j]),
                         (T[T > 3], tt[tt > 3]),
                         (T[1, [0, 3]], tt[1, [0, 3]])]:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_nonzero_and_masked_select():
    m = A > 5
    np.testing.assert_array_equal(rt.nonzero(rt.tensor(m)).numpy(),
                                  np.argwhere(m))
    np.testing.assert_array_equal(T.masked_select(rt.tensor(m)).numpy(), A[m])
    # broadcasting mask
    row = np.array([True, False, False, True, True])
    np.testing.assert_array_equal(T.masked_select(rt.tensor(row)).numpy(),
                                  A[np.broadcast_to(row, A.shape)])


def _static_nonzero_ref(a, size, fill):
    idx = np.argwhere(a)[:size]
    return np.concatenate([idx, np.full((size - len(idx), a.ndim), fill, np.int64)])


@pytest.mark.parametrize("size", [0, 3, 30, 40])              # truncated, exact (30), padded
def test_nonzero_and_masked_select_with_a_static_size(size):
    m = A > 0                                                 # 30 True entries
    got = rt.nonzero(rt.tensor(A * m), size=size)
    assert got.dtype is rt.int64 and got.shape == (size, 3)
    np.testing.assert_array_equal(got.numpy(), _static_nonzero_ref(m, size, -1))
    cols = rt.nonzero(rt.tensor(m), size=size, fill_value=7, as_tuple=True)
    np.testing.assert_array_equal(np.stack([c.numpy() for c in cols], axis=1).reshape(size, 3),
                                  _static_nonzero_ref(m, size, 7))
    sel = T.masked_select(rt.tensor(m), size=size, fill_value=-1.5)
    want = np.concatenate([A[m][:size], np.full(max(size - 30, 0), -1.5, np.float32)])
    assert sel.dtype is rt.float32
    np.testing.assert_array_equal(sel.numpy(), want)


@needs_torch
def test_static_nonzero_is_torch_nonzero_static():
    for a in (A[0] * (A[0] > 3), np.float32(2.0), np.zeros((0, 3), np.float32)):
        for size in (2, 6):
            ours = rt.nonzero(rt.tensor(a), size=size)
            theirs = torch.nonzero_static(torch.tensor(a), size=size)
            assert ours.shape == tuple(theirs.shape)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_static_size_forms_capture_and_differentiate():
    # no value is read: the graph replays on other data with the same shapes
    m = A[0] > 3
    g = rt.capture(lambda x, k: (rt.nonzero(x, size=6), rt.masked_select(x, k, size=6)), A[0], m)
    other = A[2] * (A[2] < -20)
    nz, sel = g.run(rt.tensor(other), rt.tensor(other < -25))
    np.testing.assert_array_equal(nz.numpy(), _static_nonzero_ref(other, 6, -1))
    want = np.concatenate([other[other < -25][:6], np.zeros(6 - (other < -25).sum(), np.float32)])
    np.testing.assert_array_equal(sel.numpy(), want)
    # a row-broadcast mask (x (3, 4), mask (4,)), padded; the gradient reaches the selected
    # entries only
    x = np.arange(12.0).reshape(3, 4)
    row = np.array([True, False, True, False])
    check_grad(lambda t: rt.masked_select(t, rt.tensor(row, device=t.device), size=8,
                                          fill_value=0.0) * rt.arange(8.0, device=t.device), x)
    ad = rt.autodiff(rt.cpu())
    t = rt.tensor(x, device=ad).require_grad()
    grads = rt.sum(rt.masked_select(t, rt.tensor(row, device=ad), size=4)).backward()
    np.testing.assert_array_equal(t.grad(grads).numpy(),
                                  [[1, 0, 1, 0], [1, 0, 1, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("call, exc, message", [
    (lambda: rt.nonzero(T, size=-1), rt.ArgumentValueError, "nonzero: size must be >= 0, got -1"),
    (lambda: rt.nonzero(T, size=2.0), rt.ArgumentTypeError, "nonzero: size must be an int, got 2.0"),
    (lambda: rt.nonzero(T, size=2, fill_value=0.5), rt.DTypeError,
     "nonzero: fill_value must be a Python scalar of the result's dtype int64, got 0.5"),
    (lambda: T.masked_select(T > 0, size=2, fill_value=None), rt.DTypeError,
     "masked_select: fill_value must be a Python scalar of the result's dtype float32, got None"),
    (lambda: rt.masked_select(rt.tensor([1, 2], dtype=rt.int32), rt.tensor([True, False]), size=3,
                              fill_value=2 ** 40), rt.DTypeError,
     "masked_select: Python integer 1099511627776 is out of bounds for int32"),
    (lambda: rt.masked_select(T, T, size=2), rt.DTypeError,
     "masked_select: mask must be bool, got float32"),
])
def test_static_size_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# --------------------------------------------------------------------------- gradients
X = np.random.default_rng(0).standard_normal((3, 4))


@pytest.mark.parametrize("fn", [
    lambda x: x[[0, 2, 0], [1, 1, 1]],                               # repeated: accumulate
    lambda x: x[:, [3, 0, 3]],
    lambda x: x[[[1], [0]], [2, 3]],
    lambda x: x[rt.tensor(X > 0, device=x.device)],
    lambda x: x[rt.tensor([2, -1], device=x.device), rt.tensor([0, 3], device=x.device)],
    lambda x: x[None, [1, 2]] * x[[0, 0, 1]].sum(),
], ids=["pairs", "column", "broadcast", "mask", "tensor", "mixed"])
def test_gradients_by_finite_differences(fn):
    check_grad(fn, X)


# --------------------------------------------------------------------------- errors
def _raises(cls, msg, fn):
    with pytest.raises(cls) as exc:
        fn()
    assert str(exc.value) == msg


def test_out_of_range_indices():
    msg = "getitem: index 4 is out of bounds for axis 1 with size 4 (shape (3, 4, 5))"
    _raises(rt.IndexOutOfRangeError, msg, lambda: T[[0, 1], [4, 0]])
    _raises(rt.IndexOutOfRangeError, msg, lambda: T[rt.tensor([0, 1]), rt.tensor([4, 0])])
    _raises(rt.IndexOutOfRangeError, msg, lambda: T[:, [4]])
    _raises(rt.IndexOutOfRangeError, msg, lambda: T[:, rt.tensor([4])])
    _raises(rt.IndexOutOfRangeError,
            "getitem: index -6 is out of bounds for axis 2 with size 5 (shape (3, 4, 5))",
            lambda: T[0, :, [-6]])
    assert isinstance(rt.IndexOutOfRangeError("x"), IndexError)


def test_bad_keys():
    _raises(rt.IndexOutOfRangeError, "getitem: boolean index of shape (2,) does not match the "
            "indexed dimensions (3,) of shape (3, 4, 5) (from axis 0)",
            lambda: T[np.array([True, False])])
    _raises(rt.DTypeError, "getitem: index tensors must be int32, int64 or bool, got float32",
            lambda: T[rt.tensor([0.0])])
    _raises(rt.DTypeError, "getitem: index arrays must be integers or bools, got float64",
            lambda: T[[0.5]])
    _raises(rt.ShapeError, "getitem: too many indices for a tensor of shape (3, 4, 5): 4 given",
            lambda: T[[0], 0, 0, 0])
    with pytest.raises(rt.ShapeError, match="getitem"):
        T[[0, 1], [0, 1, 2]]                 # shapes (2,) and (3,) do not broadcast


# --------------------------------------------------------------------------- capture
def test_integer_arrays_capture_replay_and_onnx(tmp_path):
    def fn(x):
        i = rt.tensor([[0], [2]], device=x.device)
        return x[i, :, [1, 3]], x[:, [2, 0], [4, 4]], x[..., [-1]]

    graph = rt.capture(fn, A)
    for g, w in zip(graph.run(A), fn(T)):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    outs = onnx_run(graph, tmp_path / "m.onnx", A)
    for g, w in zip(outs, fn(T)):
        np.testing.assert_array_equal(g, w.numpy())


def test_mask_in_capture_raises_data_dependent_shape():
    cap = rt.CaptureDevice()
    with pytest.raises(rt.CaptureError) as exc:
        with cap.capture_scope() as scope:
            t = scope.placeholder((3, 4))
            t[t > 0]
    assert exc.value.kind == "DataDependentShape"
    assert str(exc.value).startswith("getitem: the output shape depends on the values")
