"""Advanced-index assignment (``slice_assign`` with NumPy's advanced keys, ``index_put``,
``put``) and the native ``pad`` (reflect / replicate / circular in one pass, and its one-pass
gradient).  NumPy's ``x[key] = v`` / ``np.add.at`` / ``np.put`` / ``np.pad`` in float64 are the
oracles, PyTorch the second one; gradients by finite differences in float64; capture, replay and
ONNX; typed errors with their messages.

Compile cost: ``put`` for float32 and float64 (and int64 for the winner map of the gradient),
``scatter_add`` on 1-d, the serial pad kernels for float32/float64 and the parallel pad
kernels for float32 (called directly).  Pad's gradients in all three modes are checked by
finite differences and against PyTorch in tests/test_shape_ops.py, through the same kernels."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch

A = np.random.default_rng(0).standard_normal((3, 4, 5))      # float64 master
A32 = A.astype(np.float32)
T = rt.tensor(A32)


def _np_set(a, key, v, accumulate=False):
    w = a.copy()
    if accumulate:
        np.add.at(w, key, v)
    else:
        w[key] = v
    return w


# --------------------------------------------------------------------------- forward
KEYS = [
    ("two_arrays", ([0, 2], [3, 1])),
    ("arrays_broadcast", ([[0], [2]], slice(None), [1, 4])),         # separated: B first
    ("array_slice_array", ([1, 0], slice(1, 3), [4, 0])),
    ("int_and_array", (1, slice(None), [0, 2])),
    ("ellipsis", (Ellipsis, [4, 0, 4])),
    ("none_and_array", (None, [2, 0], slice(None, None, -1))),
    ("negative", ([-1, 0], [-4, 3])),
    ("mask", A > 0.3),
    ("mask_2d_trailing", (slice(None), A[0] > 0)),
    ("mask_then_array", (A[:, :, 0] > 0, [1])),
    ("duplicates", ([0, 0, 2, 0], [1, 1, 1, 1], [2, 2, 0, 2])),
]


@pytest.mark.parametrize("key", [pytest.param(k, id=n) for n, k in KEYS])
def test_slice_assign_matches_numpy(key):
    region = A[key].shape
    v = np.arange(np.prod(region), dtype=np.float64).reshape(region) + 0.5
    want = _np_set(A, key, v).astype(np.float32)
    np.testing.assert_array_equal(T.slice_assign(key, v.astype(np.float32)).numpy(), want)
    np.testing.assert_array_equal(T.slice_assign(key, 7.0).numpy(), _np_set(A32, key, 7.0))
    np.testing.assert_array_equal(                              # index tensors as keys too
        T.slice_assign(tuple(rt.tensor(k) if isinstance(k, (list, np.ndarray)) else k
                             for k in (key if isinstance(key, tuple) else (key,))),
                       v.astype(np.float32)).numpy(), want)


def test_value_broadcasting_and_dtype():
    key = ([0, 2, 1], slice(None), [1, 1, 3])          # region (3, 4)
    row = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(T.slice_assign(key, row).numpy(), _np_set(A32, key, row))
    col = np.arange(3, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(T.slice_assign(key, rt.tensor(col)).numpy(),
                                  _np_set(A32, key, col))
    ints = rt.tensor(np.arange(12, dtype=np.int64).reshape(3, 4))
    got = ints.slice_assign(([0, 2], [1, 3]), 2.9)          # a float into ints: toward zero
    assert got.dtype == rt.int64
    np.testing.assert_array_equal(got.numpy(), _np_set(ints.numpy(), ([0, 2], [1, 3]), 2))
    with pytest.raises(rt.DTypeError, match="slice_assign: Python integer 1099511627776 is out "
                                            "of bounds for int32"):
        rt.tensor(np.zeros(3, np.int32)).slice_assign([0], 2**40)


def test_boolean_mask_forms():
    m = A32 > 0
    np.testing.assert_array_equal(T.slice_assign(T > 0, 0.0).numpy(), np.where(m, 0, A32))
    vals = np.arange(m.sum(), dtype=np.float32)
    np.testing.assert_array_equal(T.slice_assign(T > 0, vals).numpy(), _np_set(A32, m, vals))
    np.testing.assert_array_equal(T.slice_assign(T > 0, rt.tensor(np.float32(3))).numpy(),
                                  np.where(m, 3, A32))
    b = rt.tensor(m)
    np.testing.assert_array_equal(b.slice_assign(b, False).numpy(), np.zeros_like(m))


def test_index_put_accumulate_and_last_write_wins():
    idx = (rt.tensor([0, 0, 2, 0]), rt.tensor([1, 1, 1, 1]), rt.tensor([2, 2, 0, 2]))
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    key = tuple(i.numpy() for i in idx)
    np.testing.assert_array_equal(T.index_put(idx, rt.tensor(vals)).numpy(),
                                  _np_set(A32, key, vals))                  # the last, 4.0
    np.testing.assert_allclose(T.index_put(idx, rt.tensor(vals), accumulate=True).numpy(),
                               _np_set(A, key, vals, accumulate=True).astype(np.float32),
                               rtol=1e-6)
    np.testing.assert_array_equal(T.index_put([idx[0]], 1.5).numpy(), _np_set(A32, key[:1], 1.5))
    got = T.put(rt.tensor([0, -1, 7, 0]), rt.tensor(vals))
    want = A32.copy()
    np.put(want, [0, -1, 7, 0], vals)
    np.testing.assert_array_equal(got.numpy(), want)
    got = T.put(rt.tensor([[0, 0], [59, 3]]), 1.0, accumulate=True).numpy().reshape(-1)
    np.testing.assert_allclose(got[[0, 3, 59]], A32.reshape(-1)[[0, 3, 59]] + [2, 1, 1],
                               rtol=1e-6)


@needs_torch
def test_index_put_against_torch():
    i, j = torch.tensor([2, 0, 2, 1]), torch.tensor([3, 3, 3, 0])
    v = torch.tensor([[1.0], [-2.0], [3.0], [0.5]])            # broadcast over the last axis
    tt = torch.tensor(A32)
    for acc in (True, False):
        want = tt.index_put((i, j), v, accumulate=acc)
        got = T.index_put((rt.tensor(i.numpy()), rt.tensor(j.numpy())), rt.tensor(v.numpy()),
                          accumulate=acc)
        if not acc:                        # torch: duplicates undefined; compare elsewhere
            want[2, 3] = v[2]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    mask = tt > 0
    np.testing.assert_array_equal(T.slice_assign(T > 0, 0.25).numpy(),
                                  tt.masked_fill(mask, 0.25).numpy())


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(-12, 11), min_size=1, max_size=6),
       st.lists(st.integers(-4, 3), min_size=1, max_size=3), st.booleans())
def test_random_integer_keys_against_numpy(rows, cols, acc):
    x = np.arange(48, dtype=np.float32).reshape(12, 4)
    r = np.array(rows)[:, None]
    c = np.array(cols)[None, :]
    v = np.arange(r.shape[0] * c.shape[1], dtype=np.float32).reshape(r.shape[0], c.shape[1])
    got = rt.tensor(x).index_put((rt.tensor(r), rt.tensor(c)), rt.tensor(v), accumulate=acc)
    np.testing.assert_array_equal(got.numpy(), _np_set(x, (r, c), v, accumulate=acc))


# --------------------------------------------------------------------------- errors
def test_errors_name_the_op_and_shapes():
    with pytest.raises(rt.IndexOutOfRangeError, match=r"slice_assign: index 3 is out of bounds "
                       r"for axis 0 with size 3 \(shape \(3, 4, 5\)\)"):
        T.slice_assign(([0, 3],), 1.0)
    with pytest.raises(rt.ShapeError, match=r"slice_assign: value of shape \(3,\) cannot be "
                       r"broadcast to the indexed shape \(2, 5\) \(tensor shape \(3, 4, 5\)\)"):
        T.slice_assign(([0, 1], [1, 2]), np.ones(3, np.float32))
    with pytest.raises(rt.IndexOutOfRangeError, match=r"slice_assign: boolean index of shape "
                       r"\(4, 5\) does not match the indexed dimensions \(3, 4\)"):
        T.slice_assign(A[0] > 0, 1.0)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"index_put: index -4 is out of bounds "
                       r"for axis 0 with size 3"):
        T.index_put((rt.tensor([-4]),), 1.0)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"put: index 60 is out of bounds for axis "
                       r"0 with size 60"):
        T.put(rt.tensor([60]), 1.0)
    with pytest.raises(rt.DTypeError, match="put: indices must be int32 or int64, got float32"):
        T.put(rt.tensor([1.0]), 1.0)
    with pytest.raises(rt.ArgumentTypeError, match=r"tensors are immutable; use t = "
                       r"t.slice_assign\(key, value\).*index_put\(key, v, accumulate=True\)"):
        T[[0, 1]] += 1.0
    with pytest.raises(rt.ArgumentTypeError, match=r"index_put_: tensors are immutable.*"
                       r"t.index_put\(\.\.\.\)"):
        T.index_put_((rt.tensor([0]),), 1.0)


# --------------------------------------------------------------------------- gradients
def test_gradients_by_finite_differences():
    x2 = A[0]                                    # (4, 5)
    rows, cols = rt.tensor([0, 3, 0]), rt.tensor([1, 4, 1])            # (0, 1) twice
    check_grad(lambda x, v: x.index_put((rows, cols), v), x2, np.array([0.5, -1.0, 2.0]))
    check_grad(lambda x, v: x.index_put((rows, cols), v, accumulate=True), x2,
               np.array([0.5, -1.0, 2.0]))
    check_grad(lambda x, v: x.slice_assign((slice(None), [4, 0]), v), x2, np.array([1.0, 2.0]))
    m = rt.tensor(x2 > 0)
    check_grad(lambda x, v: x.slice_assign(m.to(x.device), v), x2, np.array(3.0))   # where
    # (pad's three modes: tests/test_shape_ops.py, by finite differences and against torch)
    check_grad(lambda x: rt.pad(x, (1, 5, 4, 2), mode="circular"), x2)


def test_duplicate_write_gradient_goes_to_the_winner():
    ad = rt.autodiff(rt.cpu())             # float64: the kernels of the check above
    x = rt.tensor(np.zeros((2, 3)), device=ad).require_grad()
    v = rt.tensor(np.array([1.0, 2.0, 3.0]), device=ad).require_grad()
    y = x.index_put((rt.tensor([1, 1, 0], device=ad), rt.tensor([2, 2, 0], device=ad)), v)
    grads = (y * rt.tensor(np.arange(6.0).reshape(2, 3), device=ad)).sum().backward()
    np.testing.assert_array_equal(v.grad(grads).numpy(), [0.0, 5.0, 0.0])
    np.testing.assert_array_equal(x.grad(grads).numpy(), [[0, 1, 2], [3, 4, 0]])


# --------------------------------------------------------------------------- capture, ONNX
def _assigns(x):
    i = rt.tensor([[0], [2]], device=x.device)
    a = x.slice_assign((i, slice(None), [1, 3]), x[0, :1, :4] * 2.0)
    b = x.index_put((rt.tensor([0, 0, 1], device=x.device),), x[:3], accumulate=True)
    return a, b, x.slice_assign(x > 0, -1.0), rt.pad(x, (1, 2, 2, 1), mode="reflect")


def test_capture_replay_and_onnx(tmp_path):
    graph = rt.capture(_assigns, A32)
    want = _assigns(T)
    for g, w in zip(graph.run(A32), want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    outs = onnx_run(graph, tmp_path / "m.onnx", A32)
    for g, w in zip(outs, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_mask_with_values_in_capture_raises_data_dependent_shape():
    cap = rt.CaptureDevice()
    with pytest.raises(rt.CaptureError) as exc:
        with cap.capture_scope() as scope:
            t = scope.placeholder((3, 4))
            t.slice_assign(t > 0, rt.arange(2, dtype=rt.float32, device=cap))
    assert exc.value.kind == "DataDependentShape"
    assert "slice_assign: the output shape depends on the values" in str(exc.value)


# --------------------------------------------------------------------------- pad
PAD_CASES = [((2, 1, 1, 3), "reflect"), ((3, 1), "replicate"), ((2, 2, 1, 0, 1, 1), "circular"),
             ((-1, 2, 1, -2), "reflect"), ((0, 0, 2, 2), "replicate")]


def _np_pad(a, amounts, mode):
    """NumPy's pad with PyTorch's negative amounts: a crop, after padding (before it for
    circular, which wraps what the crop leaves)."""
    nm = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
          "circular": "wrap"}[mode]
    pw = [(0, 0)] * a.ndim
    for i in range(len(amounts) // 2):
        pw[a.ndim - 1 - i] = (max(amounts[2 * i], 0), max(amounts[2 * i + 1], 0))

    def crop(x, sizes):
        key = [slice(None)] * a.ndim
        for i in range(len(amounts) // 2):
            lo, hi = amounts[2 * i], amounts[2 * i + 1]
            d = a.ndim - 1 - i
            key[d] = slice(max(-lo, 0), sizes[d] - max(-hi, 0))
        return x[tuple(key)]

    if mode == "circular":
        return np.pad(crop(a, a.shape), pw, mode=nm)
    out = np.pad(a, pw, mode=nm)
    return crop(out, out.shape)


@pytest.mark.parametrize("amounts,mode", PAD_CASES)
def test_pad_matches_numpy(amounts, mode):
    np.testing.assert_array_equal(rt.pad(T, amounts, mode=mode).numpy(),
                                  _np_pad(A32, amounts, mode))


def test_pad_ints_bools_and_views():
    ints = np.arange(20, dtype=np.int64).reshape(4, 5)
    np.testing.assert_array_equal(rt.pad(rt.tensor(ints), (1, 2), mode="circular").numpy(),
                                  _np_pad(ints, (1, 2), "circular"))
    view = T[:, ::-1, 1:]                        # a strided input
    np.testing.assert_array_equal(rt.pad(view, (1, 1, 2, 0), mode="reflect").numpy(),
                                  _np_pad(A32[:, ::-1, 1:], (1, 1, 2, 0), "reflect"))


def test_pad_kernels_parallel_path():
    # the cpu kernels themselves (no elementwise kernels around them), above the prange
    # threshold: 2*4*60*64 outputs, the adjoint against np.add.at of the same index maps
    from jit_kernels.cpu import pad as kernels
    x = np.random.default_rng(5).standard_normal((2, 4, 58, 62)).astype(np.float32)
    r = np.abs(np.arange(-1, 59))
    r = np.where(r >= 58, 2 * 57 - r, r)
    c = np.abs(np.arange(-1, 63))
    c = np.where(c >= 62, 2 * 61 - c, c)
    y = kernels.pad(x, (r, c), 2)
    np.testing.assert_array_equal(y, _np_pad(x, (1, 1, 1, 1), "reflect"))
    w = np.random.default_rng(6).standard_normal(y.shape).astype(np.float32)
    want = np.zeros(x.shape, np.float64)
    np.add.at(want, (slice(None), slice(None), r[:, None], c[None, :]), w.astype(np.float64))
    np.testing.assert_allclose(kernels.pad_backward(w, (r, c), 2, x.shape), want, rtol=1e-5,
                               atol=1e-5)


# the forward's row plan: 1-D to 5-D, odd sizes, every mode, crops, several padded trailing
# dimensions (more than one output plane per leading slice) and an unpadded tail (merged rows)
PAD_ND_CASES = [((7,), (2, 3)), ((5, 7), (1, 2, 3, 1)), ((3, 5, 7), (2, 1, 0, 0, 1, 2)),
                ((2, 3, 5, 7), (1, 1, 1, 1)), ((2, 3, 5, 7), (0, 0, 0, 0, 2, 1)),
                ((2, 3, 5, 4, 7), (3, 1, 2, 0, 1, 2)), ((2, 3, 5, 4, 7), (-1, 2, 1, -2, 1, 0)),
                ((1, 3, 5, 4, 7), (0, 0, 1, 2, 2, 1))]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,amounts", PAD_ND_CASES)
def test_pad_any_rank_matches_numpy(shape, amounts, mode):
    a = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    want = _np_pad(a, amounts, mode)
    got = rt.pad(rt.tensor(a), amounts, mode=mode).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if a.ndim >= 2:                              # a non-contiguous input: the same values
        at = np.ascontiguousarray(np.swapaxes(a, 0, -1))
        view = rt.tensor(at).transpose(0, a.ndim - 1)
        np.testing.assert_array_equal(rt.pad(view, amounts, mode=mode).numpy(), want)


@pytest.mark.parametrize("shape,pads", [((3, 6, 40, 50), ((0, 0), (0, 0), (2, 1), (1, 3))),
                                        ((2, 5, 9, 40, 41), ((0, 0), (0, 0), (1, 2), (3, 1),
                                                             (2, 2))),
                                        ((4, 9, 50, 60), ((0, 0), (2, 3), (0, 0), (0, 0))),
                                        ((300, 200), ((4, 5), (6, 7)))])
def test_pad_kernels_parallel_row_plan(shape, pads):
    # the cpu kernels above the prange threshold: several output planes per leading slice, an
    # unpadded tail merged into rows, a 2-D input with both dimensions padded (one slice)
    from jit_kernels.cpu import pad as kernels
    from runtime.ops.rearrange import _pad_maps
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    for mode, nm in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        lead, maps = _pad_maps(pads, mode, shape)
        y = kernels.pad(x, maps, lead)
        np.testing.assert_array_equal(y, np.pad(x, pads, mode=nm))
        w = np.random.default_rng(8).standard_normal(y.shape).astype(np.float32)
        want = np.zeros(x.shape, np.float64)
        full = [np.arange(n) for n in shape[:lead]] + list(maps)
        np.add.at(want, np.ix_(*full), w.astype(np.float64))
        np.testing.assert_allclose(kernels.pad_backward(w, maps, lead, shape), want, rtol=1e-5,
                                   atol=1e-5)


def test_pad_plan_cache_keeps_the_checks():
    # a repeated call reuses its checked plan; what the plan's key leaves out is still checked
    from runtime.ops import rearrange
    x = rt.tensor(A32)
    first = rt.pad(x, (1, 2, 2, 1), mode="reflect").numpy()
    assert ("reflect", x.shape, (1, 2, 2, 1)) in rearrange._PAD_PLANS
    np.testing.assert_array_equal(rt.pad(x, (1, 2, 2, 1), mode="reflect").numpy(), first)
    np.testing.assert_array_equal(first, _np_pad(A32, (1, 2, 2, 1), "reflect"))
    with pytest.raises(rt.ArgumentValueError, match="value= applies only to mode 'constant'"):
        rt.pad(x, (1, 2, 2, 1), mode="reflect", value=1.0)
    with pytest.raises(rt.ArgumentTypeError, match="pad amounts must be an int, got 1.0"):
        rt.pad(x, (1.0, 2, 2, 1), mode="reflect")
    np.testing.assert_array_equal(rt.pad(x, [1, 2, 2, 1], mode="reflect").numpy(), first)
    np.testing.assert_array_equal(rt.pad(x, (-1, 2, 1, -2), mode="reflect").numpy(),
                                  _np_pad(A32, (-1, 2, 1, -2), "reflect"))
    np.testing.assert_array_equal(rt.pad(x, (-1, 2, 1, -2), mode="reflect").numpy(),
                                  _np_pad(A32, (-1, 2, 1, -2), "reflect"))
    for n in range(rearrange._PAD_PLANS_MAX + 5):      # bounded
        rt.pad(rt.zeros(n + 2), (1, 1), mode="replicate")
    assert len(rearrange._PAD_PLANS) <= rearrange._PAD_PLANS_MAX


def test_pad_circular_onnx_needs_opset_19(tmp_path):
    pytest.importorskip("onnx")
    from runtime.capture.onnx import OnnxExportError
    graph = rt.capture(lambda x: rt.pad(x, (1, 1), mode="circular"), A32)
    with pytest.raises(OnnxExportError, match="circular pad needs opset >= 19"):
        graph.to_onnx(tmp_path / "m.onnx", opset=17)
    (out,) = onnx_run(graph, tmp_path / "m.onnx", A32, opset=19)
    np.testing.assert_array_equal(out, _np_pad(A32, (1, 1), "circular"))
