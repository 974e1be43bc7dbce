"""Scans and reductions: cumsum, cumprod, cummax, cummin, logcumsumexp, diff
(the "scan" rows of tests/opinfo.py against NumPy float64), amax/amin, count_nonzero,
std_mean/var_mean, norm's p, sum/mean ``dtype=``; torch as the second oracle where installed,
gradients by finite differences in float64, capture/replay/compile, ONNX and error messages.

Compile budget: the scan kernels compile once per dtype (float32 for the blocked path and
the ONNX check, float64 for everything else, int64 for the integer rows); shapes are tiny."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import runtime as rt
from autodiff.gradcheck import check_grad
from opinfo import OPS, cases, rows
from oracle import assert_close, needs_torch, onnx_run, torch

SCANS = rows("scan")


def _t(a):
    return rt.tensor(np.asarray(a))


# --------------------------------------------------------------------------- the table's rows
@pytest.mark.parametrize("info,dtype", cases(SCANS))
@pytest.mark.parametrize("dim", [0, -1])
def test_scan_rows_forward(info, dtype, dim, rng):
    (x,) = info.inputs((3, 5), dtype, rng)
    got = info.fn(rt.tensor(x), dim)
    out = info.out(dtype)
    assert got.dtype is out
    assert_close(got, info.reference(x, axis=dim % 2), out, tol=info.tol)


@pytest.mark.parametrize("info", rows("scan", grad=True), ids=lambda r: r.name)
def test_scan_rows_gradients(info, rng):
    (x,) = info.grad([(2, 4)], rng)
    check_grad(lambda t: info.fn(t, 1), x)
    check_grad(lambda t: info.fn(t, 0), x)


@settings(max_examples=15, deadline=None)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6), st.data())
def test_cumsum_any_shape_and_axis(shape, data):
    x = np.random.default_rng(1).standard_normal(shape)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_allclose(rt.cumsum(_t(x), dim).numpy(), np.cumsum(x, dim), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(rt.logcumsumexp(_t(x), dim).numpy(),
                               np.logaddexp.accumulate(x, dim) if x.size else x, rtol=1e-12,
                               atol=1e-12)


def test_cumsum_flattens_without_dim_and_0d():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(rt.cumsum(_t(x)).numpy(), np.cumsum(x))
    z = rt.cumsum(rt.tensor(2.5, dtype=rt.float64), 0)
    assert z.shape == () and z.item() == 2.5
    assert rt.cummax(rt.tensor(3.0, dtype=rt.float64), -1).indices.shape == ()


def test_long_row_blocked_scan_is_accurate():
    # one row of 1e5 float32 runs the two-pass blocked kernel: float64 chunk sums and offsets
    x = np.random.default_rng(2).uniform(0, 1, 100_000).astype(np.float32)
    exact = np.cumsum(x.astype(np.float64))
    got = rt.cumsum(rt.tensor(x), 0).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, exact.astype(np.float32), rtol=2e-7, atol=0)
    # no worse than NumPy's float32 running sum
    assert np.abs(got - exact).max() <= np.abs(np.cumsum(x) - exact).max()


def test_dtypes_and_dtype_argument():
    i32 = rt.tensor([1, 2, 3], dtype=rt.int32)
    assert rt.cumsum(i32, 0).dtype is rt.int64
    assert rt.cumsum(rt.tensor([True, True, False]), 0).tolist() == [1, 2, 2]
    c = rt.cumsum(i32, 0, dtype=rt.float64)
    assert c.dtype is rt.float64 and c.tolist() == [1.0, 3.0, 6.0]
    assert rt.cumprod(rt.tensor([2, 3], dtype=rt.int64), 0, dtype=rt.int64).tolist() == [2, 6]
    assert rt.logcumsumexp(rt.tensor([0, 0], dtype=rt.int64), 0).dtype is rt.float32


def test_cummax_ties_nan_and_values():
    x = _t([1.0, 3.0, 3.0, np.nan, 5.0, 2.0])
    v, i = rt.cummax(x, 0)
    assert i.tolist() == [0, 1, 2, 3, 3, 3]
    np.testing.assert_array_equal(v.numpy(), [1.0, 3.0, 3.0, np.nan, np.nan, np.nan])
    v, i = rt.cummin(_t([4, 2, 2, 5, 1]), 0)
    assert v.tolist() == [4, 2, 2, 2, 1] and i.tolist() == [0, 1, 2, 2, 4]


def test_logcumsumexp_infinities_and_large_values():
    x = _t([-np.inf, -np.inf, 0.0, 1000.0, np.inf])
    np.testing.assert_array_equal(rt.logcumsumexp(x, 0).numpy(),
                                  [-np.inf, -np.inf, 0.0, 1000.0, np.inf])


def test_cummax_values_gradient_goes_to_the_indices(rng):
    x = rng.permutation(12).reshape(3, 4).astype(np.float64)
    check_grad(lambda t: rt.cummax(t, 1).values, x)
    check_grad(lambda t: rt.cummin(t, 0).values, x)


def test_cumprod_gradient_with_zeros():
    for row in ([2.0, 0.0, 3.0, 0.5], [0.0, 2.0, 0.0, 1.5], [1.5, 2.0, 3.0, 0.0]):
        x = np.array([row, row[::-1]])
        # finite differences across a zero are exact here: cumprod is linear in each x_i
        check_grad(lambda t: rt.cumprod(t, 1), x)


# --------------------------------------------------------------------------- torch
@needs_torch
def test_scans_agree_with_torch(rng):
    x = rng.standard_normal((3, 6))
    x[1, 2] = 0.0
    x[2, 0] = 0.0
    tx = torch.tensor(x, requires_grad=True)
    ad = rt.autodiff(rt.cpu())
    for fn, tfn in [(lambda t: rt.cumsum(t, 1), lambda t: torch.cumsum(t, 1)),
                    (lambda t: rt.cumprod(t, 1), lambda t: torch.cumprod(t, 1)),
                    (lambda t: rt.logcumsumexp(t, 0), lambda t: torch.logcumsumexp(t, 0)),
                    (lambda t: rt.cummax(t, 1).values, lambda t: torch.cummax(t, 1).values),
                    (lambda t: rt.cummin(t, 0).values, lambda t: torch.cummin(t, 0).values),
                    (lambda t: rt.diff(t, 2, 1), lambda t: torch.diff(t, 2, 1))]:
        w = rng.standard_normal(tfn(tx).shape)
        ours = rt.tensor(x, device=ad).require_grad()
        y = fn(ours)
        np.testing.assert_allclose(y.numpy(), tfn(tx).detach().numpy(), rtol=1e-12, atol=1e-12)
        g = (y * rt.tensor(w, device=ad)).sum().backward()
        (tg,) = torch.autograd.grad((tfn(tx) * torch.tensor(w)).sum(), tx)
        np.testing.assert_allclose(ours.grad(g).numpy(), tg.numpy(), rtol=1e-10, atol=1e-12)
    xi = rng.integers(-2, 3, (4, 5))
    for dim in (0, 1):
        for f in ("cummax", "cummin"):
            ov, oi = getattr(rt, f)(_t(xi), dim)
            tv, ti = getattr(torch, f)(torch.tensor(xi), dim)
            assert ov.tolist() == tv.tolist() and oi.tolist() == ti.tolist()


@needs_torch
def test_reductions_agree_with_torch(rng):
    x = rng.standard_normal((3, 4, 2))
    x[0, 1, 0] = 0.0
    tx = torch.tensor(x)
    for p in (1, 2, float("inf"), float("-inf"), 0, 3, "fro"):
        for dim in (None, 1, (0, 2)):
            want = torch.linalg.vector_norm(tx, ord=2 if p == "fro" else p, dim=dim)
            np.testing.assert_allclose(rt.norm(_t(x), p, dim).numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rt.norm(_t(x), "fro", (0, 1), keepdim=True).numpy(),
                               torch.norm(tx, "fro", (0, 1), keepdim=True).numpy(), rtol=1e-12)
    for dim in (None, 1, (0, 2)):
        tdim = () if dim is None else dim
        np.testing.assert_array_equal(rt.amax(_t(x), dim).numpy(), torch.amax(tx, tdim).numpy())
        np.testing.assert_array_equal(rt.amin(_t(x), dim, True).numpy(),
                                      torch.amin(tx, tdim, True).numpy())
        assert rt.count_nonzero(_t(x), dim).tolist() == torch.count_nonzero(tx, dim).tolist()
        for f in ("std_mean", "var_mean"):
            ours = getattr(rt, f)(_t(x), dim, correction=1)
            theirs = getattr(torch, f)(tx, dim, correction=1)
            for a, b in zip(ours, theirs):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rt.std(_t(x), dim=1, correction=1).numpy(),
                               torch.std(tx, dim=1, correction=1).numpy(), rtol=1e-12)
    # amax shares the gradient evenly among ties, as torch.amax; so do norm(inf)'s
    t = torch.tensor([[1.0, 3.0, 3.0], [2.0, -2.0, 0.5]], dtype=torch.float64,
                     requires_grad=True)
    for fn, tfn in [(lambda a: rt.amax(a, 1), lambda a: torch.amax(a, 1)),
                    (lambda a: rt.amin(a, (0, 1)), lambda a: torch.amin(a, (0, 1))),
                    (lambda a: rt.norm(a, float("inf"), 1),
                     lambda a: torch.linalg.vector_norm(a, float("inf"), 1)),
                    (lambda a: rt.norm(a, 1), lambda a: torch.norm(a, 1))]:
        ad = rt.autodiff(rt.cpu())
        ours = rt.tensor(t.detach().numpy(), device=ad).require_grad()
        g = fn(ours).sum().backward()
        (tg,) = torch.autograd.grad(tfn(t).sum(), t)
        np.testing.assert_allclose(ours.grad(g).numpy(), tg.numpy(), rtol=1e-12)


def test_norm_and_moment_gradients(rng):
    x = rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4))
    check_grad(lambda t: rt.norm(t, 1, 1), x)
    check_grad(lambda t: rt.norm(t, 3, (0, 1)), x)
    check_grad(lambda t: rt.norm(t, float("inf"), 0), x)
    check_grad(lambda t: rt.std_mean(t, 1, correction=1)[0] + rt.var_mean(t, 0)[1].sum(), x)


def test_sum_and_mean_dtype():
    i = rt.tensor([[1, 2], [3, 4]], dtype=rt.int32)
    s = rt.sum(i, dtype=rt.int32)
    assert s.dtype is rt.int32 and s.item() == 10
    m = i.mean(dim=0, dtype=rt.float64)
    assert m.dtype is rt.float64 and m.tolist() == [2.0, 3.0]
    f = rt.tensor([0.1, 0.2], dtype=rt.float32).sum(dtype=rt.float64)
    assert f.dtype is rt.float64 and f.item() == np.float64(np.float32(0.1)) + np.float64(
        np.float32(0.2))
    assert rt.prod(i, dim=1, dtype=rt.float64).tolist() == [2.0, 12.0]
    with pytest.raises(rt.DTypeError, match=re.escape(
            "mean: dtype= must be a float dtype, got int64 (input int32)")):
        rt.mean(i, dtype=rt.int64)


# --------------------------------------------------------------------------- diff
def test_diff_matches_numpy(rng):
    x = rng.standard_normal((3, 5))
    for n in (0, 1, 2, 7):
        for dim in (0, 1, -1):
            np.testing.assert_allclose(rt.diff(_t(x), n, dim).numpy(), np.diff(x, n, dim),
                                       rtol=1e-12, atol=1e-12)
    p, a = rng.standard_normal((3, 1)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(rt.diff(_t(x), 1, 1, _t(p), _t(a)).numpy(),
                               np.diff(x, 1, 1, prepend=p, append=a), rtol=1e-12, atol=1e-12)
    b = np.array([True, True, False, True])
    assert rt.diff(_t(b)).tolist() == np.diff(b).tolist()
    assert rt.diff(_t(np.array([1, 4, 9]))).tolist() == [3, 5]
    check_grad(lambda t: rt.diff(t, 2, 0), rng.standard_normal((4, 2)))


# --------------------------------------------------------------------------- capture
def test_capture_replay_compile(rng):
    a = rng.standard_normal((3, 6))
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(a, device=scope.device)
        outs = [rt.cumsum(x, 1), rt.cumprod(x, 0), rt.logcumsumexp(x, 1), rt.cummax(x, 1).values,
                rt.cummin(x, 0).indices, rt.diff(x, 1, 1) * 2.0, rt.norm(x, 1, 1),
                rt.amax(x, 0)]
        scope.complete(inputs=[x], outputs=outs)
    ops = {o.op for o in scope.graph.operations}
    assert {"cumsum", "cumprod", "logcumsumexp", "cumargmax", "cumargmin", "gather"} <= ops
    t = rt.tensor(a)
    eager = [rt.cumsum(t, 1), rt.cumprod(t, 0), rt.logcumsumexp(t, 1), rt.cummax(t, 1).values,
             rt.cummin(t, 0).indices, rt.diff(t, 1, 1) * 2.0, rt.norm(t, 1, 1), rt.amax(t, 0)]
    for run in (scope.graph.run, scope.graph.compile(rt.cpu())):
        for g, w in zip(run(a), eager):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


def test_onnx_export(tmp_path, rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor(a, device=scope.device)
        outs = [rt.cumsum(x, 1), rt.cumsum(x, 0).sum(), rt.diff(x, 1, 0), rt.norm(x, 1, 1)]
        scope.complete(inputs=[x], outputs=outs)
    for g, w in zip(onnx_run(scope.graph, tmp_path / "scan.onnx", a), scope.graph.run(a)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
    # the reversed cumsum (cumsum's gradient) is ONNX's CumSum(reverse=1)
    y = scope.graph.run(a)[0]
    with cap.capture_scope() as s2:
        x = rt.tensor(a, device=s2.device)
        s2.complete(inputs=[x], outputs=[rt.dispatch.dispatch("cumsum", (x,),
                                                              {"axis": 1, "reverse": True})])
    (got,) = onnx_run(s2.graph, tmp_path / "rev.onnx", a)
    np.testing.assert_allclose(got, np.flip(np.cumsum(np.flip(a, 1), 1), 1), rtol=1e-5,
                               atol=1e-5)
    assert y.shape == (3, 5)
    with cap.capture_scope() as s3:
        x = rt.tensor(a, device=s3.device)
        s3.complete(inputs=[x], outputs=[rt.cumprod(x, 1)])
    from runtime.capture.onnx import OnnxExportError
    with pytest.raises(OnnxExportError, match=re.escape(
            "op 'cumprod' has no ONNX mapping (ONNX has no cumulative product operator)")):
        s3.graph.to_onnx(tmp_path / "p.onnx")


# --------------------------------------------------------------------------- errors
def test_error_messages():
    x = rt.ones(2, 3)
    with pytest.raises(rt.ShapeError, match="cumsum"):
        rt.cumsum(x, 2)
    with pytest.raises(rt.ShapeError, match=re.escape("cummax: dim must be an int, got (0, 1)")):
        rt.cummax(x, (0, 1))
    with pytest.raises(rt.DTypeError, match=re.escape(
            "cumsum: dtype=bool is not supported (input float32)")):
        rt.cumsum(x, 0, dtype=rt.bool_)
    with pytest.raises(rt.ArgumentTypeError, match=re.escape("cumsum: got both dim= and axis=")):
        rt.cumsum(x, 0, axis=1)
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "diff: order n must be non-negative, got -1")):
        rt.diff(x, -1)
    with pytest.raises(rt.ShapeError, match=re.escape(
            "diff: prepend of shape (3, 1) does not match the input of shape (2, 3) except "
            "along dim 1")):
        rt.diff(x, prepend=rt.ones(3, 1))
    with pytest.raises(rt.ShapeError, match=re.escape(
            "diff: expects input to be at least one-dimensional, got a 0-d tensor")):
        rt.diff(rt.tensor(1.0))
    with pytest.raises(rt.DTypeError, match=re.escape(
            "diff: prepend/append must have the input's dtype, got int64, float32")):
        rt.diff(x, prepend=rt.tensor([[1], [2]]))
    with pytest.raises(rt.ArgumentValueError, match=re.escape(
            "norm: p='nuc' is not supported")):
        rt.norm(x, "nuc")
    with pytest.raises(rt.ShapeError, match="max: cannot reduce a zero-size axis"):
        rt.amax(rt.zeros(0, 2), 0)
    with pytest.raises(rt.ArgumentTypeError, match=re.escape(
            "amax: got both dim= and axis=")):
        rt.amax(x, 0, axis=1)
    assert OPS["cumsum"].family == "scan"
