"""Pooling and resampling (runtime/ops/pool.py): forward against NumPy float64 references written
tap by tap from PyTorch's formulas and against torch, gradients against finite differences
(float64) and torch, capture/replay/compile/save, ONNX export in onnxruntime, every error.

Compile budget: float32 forwards, float64 gradients, one int64 max forward."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch

F = rt.nn.functional
TF = None if torch is None else torch.nn.functional
RNG = np.random.default_rng(0)
AD = rt.autodiff(rt.cpu())


# --------------------------------------------------------------------------- references
def _out_len(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pairs(*vs):
    return [v if isinstance(v, tuple) else (v, v) for v in vs]


def ref_max_pool(x, k, s, p, d=1, ceil=False):
    """(values, flat indices): the taps of each window in row-major order, the first maximum
    kept, a NaN replacing the running maximum."""
    k, s, p, d = _pairs(k, s, p, d)
    N, C, H, W = x.shape
    oh, ow = (_out_len(n, *a, ceil) for n, *a in zip((H, W), k, s, p, d))
    val = np.empty((N, C, oh, ow))
    idx = np.empty((N, C, oh, ow), np.int64)
    for n, c, i, j in np.ndindex(N, C, oh, ow):
        taps = [(h, w) for h in (i * s[0] - p[0] + a * d[0] for a in range(k[0]))
                for w in (j * s[1] - p[1] + b * d[1] for b in range(k[1]))
                if 0 <= h < H and 0 <= w < W]
        best, at = -np.inf, taps[0]
        for h, w in taps:
            v = x[n, c, h, w]
            if v > best or np.isnan(v):
                best, at = v, (h, w)
        val[n, c, i, j], idx[n, c, i, j] = best, at[0] * W + at[1]
    return val, idx


def ref_avg_pool(x, k, s, p, ceil=False, include_pad=True, divisor=None):
    k, s, p = _pairs(k, s, p)
    N, C, H, W = x.shape
    oh, ow = (_out_len(n, kk, ss, pp, 1, ceil) for n, kk, ss, pp in zip((H, W), k, s, p))
    out = np.empty((N, C, oh, ow))
    for i, j in np.ndindex(oh, ow):
        hs = [i * s[0] - p[0] + a for a in range(k[0])]
        ws = [j * s[1] - p[1] + b for b in range(k[1])]
        inside = [(h, w) for h in hs for w in ws if 0 <= h < H and 0 <= w < W]
        padded = [(h, w) for h in hs for w in ws if -p[0] <= h < H + p[0] and -p[1] <= w < W + p[1]]
        total = sum(x[:, :, h, w] for h, w in inside)
        out[:, :, i, j] = total / (divisor or len(padded if include_pad else inside))
    return out


def _adaptive_windows(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def ref_adaptive(x, out, reduce):
    N, C, H, W = x.shape
    res = np.empty((N, C) + out)
    for i, (h0, h1) in enumerate(_adaptive_windows(H, out[0])):
        for j, (w0, w1) in enumerate(_adaptive_windows(W, out[1])):
            res[:, :, i, j] = reduce(x[:, :, h0:h1, w0:w1].reshape(N, C, -1), axis=2)
    return res


def _src_nearest(n, o):
    s = np.float32(n / o)
    return [min(int(math.floor(np.float32(i) * s)), n - 1) for i in range(o)]


def _src_linear(n, o, align):
    out = []
    for i in range(o):
        if align:
            src = (n - 1) / (o - 1) * i if o > 1 else 0.0
        else:
            src = max(n / o * (i + 0.5) - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n - 1)
        out.append((i0, min(i0 + 1, n - 1), min(src - i0, 1.0)))
    return out


def ref_interpolate(x, size, mode, align=False):
    N, C, H, W = x.shape
    if mode == "nearest":
        return x[:, :, _src_nearest(H, size[0])][:, :, :, _src_nearest(W, size[1])]
    out = np.empty((N, C) + tuple(size))
    for i, (h0, h1, a) in enumerate(_src_linear(H, size[0], align)):
        for j, (w0, w1, b) in enumerate(_src_linear(W, size[1], align)):
            out[:, :, i, j] = ((1 - a) * ((1 - b) * x[:, :, h0, w0] + b * x[:, :, h0, w1])
                               + a * ((1 - b) * x[:, :, h1, w0] + b * x[:, :, h1, w1]))
    return out


# --------------------------------------------------------------------------- configurations
MAX_CONFIGS = [  # (kernel, stride, padding, dilation, ceil_mode)
    (3, 2, 1, 1, False),                     # ResNet's stem
    (2, None, 0, 1, True),                   # odd sizes: the last window overhangs
    ((2, 3), (1, 2), (1, 1), (2, 1), True),  # rectangular, dilated rows
    (3, 1, 0, 2, False),
]
AVG_CONFIGS = [  # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (3, 2, 1, False, True, None),
    (3, 2, 1, True, False, None),
    ((2, 3), (2, 1), (1, 0), True, True, None),   # a window hangs past the padding
    (2, None, 0, False, True, 3),
]
INTERP_CONFIGS = [  # (size, mode, align_corners)
    ((5, 13), "nearest", None),
    ((18, 22), "nearest", None),             # doubled: PyTorch's exact i >> 1
    ((5, 13), "bilinear", False),
    ((4, 20), "bilinear", True),
]


def _x(shape=(2, 3, 9, 11), dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _distinct(shape):
    """float64 values at least 0.05 apart (finite differences never swap a maximum)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.05 - n * 0.025).reshape(shape)


# --------------------------------------------------------------------------- forward
@pytest.mark.parametrize("k,s,p,d,ceil", MAX_CONFIGS)
def test_max_pool2d_matches_the_reference(k, s, p, d, ceil):
    x = _x()
    x[0, 0, 2, 3] = np.nan                   # NaN propagates (PyTorch)
    x[1, 2, 4:6, 4:6] = 7.0                  # ties: the first maximum's index
    y, i = F.max_pool2d(rt.tensor(x), k, s, p, d, ceil, return_indices=True)
    want, widx = ref_max_pool(x.astype(np.float64), k, s if s is not None else k, p, d, ceil)
    assert y.dtype == rt.float32 and i.dtype == rt.int64
    np.testing.assert_array_equal(y.numpy(), want.astype(np.float32))
    np.testing.assert_array_equal(i.numpy(), widx)
    np.testing.assert_array_equal(F.max_pool2d(rt.tensor(x), k, s, p, d, ceil).numpy(), y.numpy())
    if torch is not None:
        ty, ti = TF.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil, return_indices=True)
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("k,s,p,ceil,include_pad,divisor", AVG_CONFIGS)
def test_avg_pool2d_matches_the_reference(k, s, p, ceil, include_pad, divisor):
    x = _x()
    y = F.avg_pool2d(rt.tensor(x), k, s, p, ceil, include_pad, divisor)
    want = ref_avg_pool(x.astype(np.float64), k, s if s is not None else k, p, ceil, include_pad,
                        divisor)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
    if torch is not None:
        ty = TF.avg_pool2d(torch.from_numpy(x), k, s, p, ceil, include_pad, divisor)
        np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("out", [(3, 4), (4, None), (1, 1), (9, 11), (5, 7)])
def test_adaptive_pools_match_the_reference(out):
    x = _x()
    full = tuple(n if o is None else o for o, n in zip(out, x.shape[2:]))
    ya = F.adaptive_avg_pool2d(rt.tensor(x), out)
    ym, im = F.adaptive_max_pool2d(rt.tensor(x), out, return_indices=True)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(ya.numpy(), ref_adaptive(x64, full, np.mean), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ym.numpy(), ref_adaptive(x64, full, np.max).astype(np.float32))
    if torch is not None:
        tx = torch.from_numpy(x)
        np.testing.assert_allclose(ya.numpy(), TF.adaptive_avg_pool2d(tx, out).numpy(), rtol=1e-6,
                                   atol=1e-6)
        tm, ti = TF.adaptive_max_pool2d(tx, out, return_indices=True)
        np.testing.assert_array_equal(ym.numpy(), tm.numpy())
        np.testing.assert_array_equal(im.numpy(), ti.numpy())


@pytest.mark.parametrize("size,mode,align", INTERP_CONFIGS)
def test_interpolate_matches_the_reference(size, mode, align):
    x = _x()
    y = F.interpolate(rt.tensor(x), size=size, mode=mode, align_corners=align)
    want = ref_interpolate(x.astype(np.float64), size, mode, bool(align))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
    if torch is not None:
        ty = TF.interpolate(torch.from_numpy(x), size=size, mode=mode, align_corners=align)
        np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("scale,mode", [(1.7, "nearest"), ((0.6, 2.3), "bilinear"),
                                        (2, "bilinear")])
def test_interpolate_scale_factor_maps_coordinates_as_torch(scale, mode):
    # with a scale_factor PyTorch maps by 1/scale, not in/out: they differ for 1.7 and 0.6
    x = _x()
    y = F.interpolate(rt.tensor(x), scale_factor=scale, mode=mode)
    ty = TF.interpolate(torch.from_numpy(x), scale_factor=scale, mode=mode)
    assert y.shape == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)
    r = F.interpolate(rt.tensor(x), scale_factor=scale, mode=mode, recompute_scale_factor=True)
    tr = TF.interpolate(torch.from_numpy(x), scale_factor=scale, mode=mode,
                        recompute_scale_factor=True)
    np.testing.assert_allclose(r.numpy(), tr.numpy(), rtol=1e-5, atol=1e-5)


def test_nearest_passes_inf_and_nan_unchanged():
    x = np.array([[[[np.inf, np.nan], [-np.inf, 1.0]]]], np.float32)
    y = F.interpolate(rt.tensor(x), size=(4, 3)).numpy()
    np.testing.assert_array_equal(y, x[:, :, [0, 0, 1, 1]][:, :, :, [0, 0, 1]])


def test_unbatched_input_and_the_1d_pools():
    x = _x((3, 9, 11))
    y, i = F.max_pool2d(rt.tensor(x), 3, 2, 1, return_indices=True)
    y4, i4 = F.max_pool2d(rt.tensor(x[None]), 3, 2, 1, return_indices=True)
    assert y.shape == (3, 5, 6) and i.shape == (3, 5, 6)
    np.testing.assert_array_equal(y.numpy(), y4.numpy()[0])
    np.testing.assert_array_equal(i.numpy(), i4.numpy()[0])
    np.testing.assert_array_equal(F.avg_pool2d(rt.tensor(x), 2).numpy(),
                                  F.avg_pool2d(rt.tensor(x[None]), 2).numpy()[0])
    v = _x((2, 3, 11))
    m, mi = F.max_pool1d(rt.tensor(v), 3, 2, 1, return_indices=True)
    want, widx = ref_max_pool(v[:, :, None].astype(np.float64), (1, 3), (1, 2), (0, 1))
    np.testing.assert_array_equal(m.numpy(), want[:, :, 0].astype(np.float32))
    np.testing.assert_array_equal(mi.numpy(), widx[:, :, 0])
    a = F.avg_pool1d(rt.tensor(v[0]), 2, 2, 1, True, False)
    wa = ref_avg_pool(v[0][None, :, None].astype(np.float64), (1, 2), (1, 2), (0, 1), True,
                      False)
    assert a.shape == (3, 6)
    np.testing.assert_allclose(a.numpy(), wa[0, :, 0], rtol=1e-6, atol=1e-6)
    assert rt.max_pool2d is F.max_pool2d and rt.interpolate is F.interpolate


def test_max_pool2d_takes_ints_and_empty_batches():
    x = RNG.integers(-9, 9, (1, 2, 5, 5)).astype(np.int64)
    y = F.max_pool2d(rt.tensor(x), 2, 1)
    assert y.dtype == rt.int64
    np.testing.assert_array_equal(y.numpy(), ref_max_pool(x.astype(np.float64), 2, 1, 0)[0])
    assert F.max_pool2d(rt.zeros(0, 3, 4, 4), 2).shape == (0, 3, 2, 2)
    assert F.avg_pool2d(rt.zeros(2, 0, 4, 4), 2).shape == (2, 0, 2, 2)


# --------------------------------------------------------------------------- gradients
GRAD_CASES = [
    ("max", lambda t: F.max_pool2d(t, 3, 2, 1)),
    ("max_dilated_ceil", lambda t: F.max_pool2d(t, (2, 3), (1, 2), 1, (2, 1), True)),
    ("adaptive_max", lambda t: F.adaptive_max_pool2d(t, (2, 3))),
    ("avg", lambda t: F.avg_pool2d(t, 3, 2, 1, True, False)),
    ("avg_divisor", lambda t: F.avg_pool2d(t, 2, 1, 1, divisor_override=3)),
    ("adaptive_avg", lambda t: F.adaptive_avg_pool2d(t, (2, 4))),
    ("nearest", lambda t: F.interpolate(t, size=(7, 5))),
    ("bilinear", lambda t: F.interpolate(t, size=(7, 9), mode="bilinear")),
    ("bilinear_corners", lambda t: F.interpolate(t, scale_factor=1.5, mode="bilinear",
                                                 align_corners=True)),
    ("max1d", lambda t: F.max_pool1d(t.reshape(2, 5, 6), 3, 2, 1)),
    ("avg1d", lambda t: F.avg_pool1d(t.reshape(2, 30), 4, 3, 2)),
]


@pytest.mark.parametrize("fn", [c[1] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences(fn):
    check_grad(fn, _distinct((1, 2, 5, 6)))


@needs_torch
def test_gradients_match_torch():
    x = _x((2, 3, 9, 11), np.float64)
    x[0, 1, 3:5, 3:5] = 2.0                 # ties: the gradient goes to the first maximum
    torch_fns = {
        "max": lambda t: TF.max_pool2d(t, 3, 2, 1),
        "max_dilated_ceil": lambda t: TF.max_pool2d(t, (2, 3), (1, 2), 1, (2, 1), True),
        "adaptive_max": lambda t: TF.adaptive_max_pool2d(t, (2, 3)),
        "avg": lambda t: TF.avg_pool2d(t, 3, 2, 1, True, False),
        "avg_divisor": lambda t: TF.avg_pool2d(t, 2, 1, 1, divisor_override=3),
        "adaptive_avg": lambda t: TF.adaptive_avg_pool2d(t, (2, 4)),
        "nearest": lambda t: TF.interpolate(t, size=(7, 5)),
        "bilinear": lambda t: TF.interpolate(t, size=(7, 9), mode="bilinear"),
        "bilinear_corners": lambda t: TF.interpolate(t, scale_factor=1.5, mode="bilinear",
                                                     align_corners=True),
    }
    for name, fn in GRAD_CASES:
        if name not in torch_fns:
            continue
        t = rt.tensor(x, device=AD).require_grad()
        y = fn(t)
        w = RNG.standard_normal(y.shape)
        got = t.grad((y * rt.tensor(w, device=AD)).sum().backward()).numpy()
        tt = torch.tensor(x, requires_grad=True)
        torch_fns[name](tt).backward(torch.from_numpy(w))
        np.testing.assert_allclose(got, tt.grad.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_max_pool_gradient_of_nan_goes_to_the_last_nan():
    x = np.zeros((1, 1, 2, 2))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan
    t = rt.tensor(x, device=AD).require_grad()
    y = F.max_pool2d(t, 2)
    g = t.grad(y.sum().backward()).numpy()
    assert np.isnan(y.numpy()).all()
    np.testing.assert_array_equal(g, [[[[0, 0], [1, 0]]]])



@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (1, 2, 5, 7)])
def test_2x2_pool_gradient_picks_as_the_reference(shape):
    # the 2x2/stride-2 fast path (even planes) and the general kernels (odd ones): ties (zeros,
    # as after a relu), several NaNs per window; float64 (the file's gradient dtype: no new
    # compiles; the kernels are dtype-generic)
    x = np.maximum(np.round(RNG.standard_normal(shape) * 2), 0)
    x.reshape(-1)[RNG.choice(x.size, x.size // 6, replace=False)] = np.nan
    x[0, 0, :2, :2] = [[np.nan, 1], [np.nan, 1]]
    x[0, 1, :2, :2] = [[-0.0, 0.0], [0.0, -0.0]]
    t = rt.tensor(x, device=AD).require_grad()
    y = F.max_pool2d(t, 2)
    g = RNG.standard_normal(y.shape)
    got = t.grad((y * rt.tensor(g, device=AD)).sum().backward()).numpy()
    want, idx = ref_max_pool(x, 2, 2, 0)
    np.testing.assert_array_equal(y.numpy(), want)
    ref = np.zeros(x.shape)
    for n, c, i, j in np.ndindex(*y.shape):
        ref[n, c].reshape(-1)[idx[n, c, i, j]] += g[n, c, i, j]
    np.testing.assert_array_equal(got, ref)


# --------------------------------------------------------------------------- capture
def _net(x):
    y = F.max_pool2d(x, 3, 2, 1)
    y = F.interpolate(rt.relu(y), scale_factor=2, mode="bilinear")
    return F.avg_pool2d(y, 2, count_include_pad=False) + F.adaptive_avg_pool2d(x, (5, 6))


def test_capture_replay_compile_and_save(tmp_path):
    x = _x()
    graph = rt.capture(_net, x)
    assert {"max_pool2d", "interpolate", "avg_pool2d", "adaptive_avg_pool2d"} <= \
        {op.op for op in graph.operations}
    want = _net(rt.tensor(x)).numpy()
    np.testing.assert_array_equal(graph.run(x)[0].numpy(), want)
    np.testing.assert_allclose(graph.compile(rt.cpu())(x)[0].numpy(), want, rtol=1e-6, atol=1e-6)
    graph.save(tmp_path / "g.json")
    loaded = rt.load_graph(tmp_path / "g.json")
    np.testing.assert_array_equal(loaded.run(x)[0].numpy(), want)


def test_replay_on_autodiff_differentiates_through_the_pools():
    x = _x((1, 2, 9, 11), np.float64)
    graph = rt.capture(_net, x)
    t = rt.tensor(x, device=AD).require_grad()
    (y,) = graph.run(t, device=AD)
    got = t.grad(y.sum().backward()).numpy()
    t2 = rt.tensor(x, device=AD).require_grad()
    want = t2.grad(_net(t2).sum().backward()).numpy()
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- ONNX
ONNX_CASES = [
    ("max", lambda x: F.max_pool2d(x, 3, 2, 1)),
    ("max_dilated_ceil", lambda x: F.max_pool2d(x, (2, 3), (1, 2), 1, (2, 1), True)),
    ("max_indices", lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1]),
    ("avg", lambda x: F.avg_pool2d(x, 3, 2, 1)),
    ("avg_ceil_no_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False)),
    ("avg_divisor", lambda x: F.avg_pool2d(x, 2, 1, 1, divisor_override=3)),
    ("avg_ceil_overhang", lambda x: F.avg_pool2d(x, 2, 2, 0, True)),      # divisor 1 at the edge
    ("avg_ceil_overhang_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, True)),
    ("adaptive_avg_divides", lambda x: F.adaptive_avg_pool2d(x, (3, 1))),
    ("adaptive_max_divides", lambda x: F.adaptive_max_pool2d(x, (1, 11))),
    ("global_avg", lambda x: F.adaptive_avg_pool2d(x, 1)),
    ("global_max", lambda x: F.adaptive_max_pool2d(x, (1, 1))),
    ("nearest_size", lambda x: F.interpolate(x, size=(5, 13))),
    ("nearest_scale", lambda x: F.interpolate(x, scale_factor=1.7)),
    ("bilinear", lambda x: F.interpolate(x, size=(5, 13), mode="bilinear")),
    ("bilinear_scale", lambda x: F.interpolate(x, scale_factor=(0.6, 2.3), mode="bilinear")),
    ("bilinear_corners", lambda x: F.interpolate(x, size=(4, 20), mode="bilinear",
                                                 align_corners=True)),
]


@pytest.mark.parametrize("fn", [c[1] for c in ONNX_CASES], ids=[c[0] for c in ONNX_CASES])
def test_onnx_export_matches_onnxruntime(fn, tmp_path):
    x = _x()
    graph = rt.capture(fn, x)
    (got,) = onnx_run(graph, tmp_path / "m.onnx", x)
    want = graph.run(x)[0].numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn,why", [
    (lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
     "graph.to_onnx: adaptive_avg_pool2d has no ONNX form: output_size (2, 3) does not divide "
     "the input size (9, 11), so its windows differ in size (ONNX pools use one window)"),
    (lambda x: F.avg_pool2d(x, 2, 2, 0, ceil_mode=True, divisor_override=2),
     "graph.to_onnx: avg_pool2d has no ONNX form: divisor_override with a window that hangs past "
     "the padding (ceil_mode)"),
    (lambda x: F.max_pool2d(rt.cast(x, rt.int32), 2),
     "graph.to_onnx: max_pool2d has no ONNX form for int32 input (MaxPool takes floats and 8-bit "
     "ints)"),
])
def test_onnx_export_refuses_what_onnx_cannot_say(fn, why, tmp_path):
    pytest.importorskip("onnx")
    from runtime.capture.onnx import OnnxExportError
    graph = rt.capture(fn, _x())
    with pytest.raises(OnnxExportError) as e:
        graph.to_onnx(tmp_path / "m.onnx")
    assert str(e.value) == why


# --------------------------------------------------------------------------- errors
X4 = rt.zeros(1, 2, 4, 4)
ERRORS = [
    (lambda: F.max_pool2d(rt.zeros(4, 4), 2), rt.ShapeError,
     "max_pool2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape (4, 4)"),
    (lambda: F.avg_pool2d(rt.zeros(1, 1, 1, 4, 4), 2), rt.ShapeError,
     "avg_pool2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape (1, 1, 1, 4, 4)"),
    (lambda: F.max_pool2d(X4, 5), rt.ShapeError,
     "max_pool2d: kernel of size (5, 5) (kernel_size (5, 5), dilation (1, 1)) is larger than the "
     "input of shape (1, 2, 4, 4) with padding (0, 0): the output would be 0x0"),
    (lambda: F.max_pool2d(X4, 3, dilation=2), rt.ShapeError,
     "max_pool2d: kernel of size (5, 5) (kernel_size (3, 3), dilation (2, 2)) is larger than the "
     "input of shape (1, 2, 4, 4) with padding (0, 0): the output would be 0x0"),
    (lambda: F.avg_pool2d(X4, (2, 7), padding=(0, 1)), rt.ShapeError,
     "avg_pool2d: kernel of size (2, 7) (kernel_size (2, 7), dilation (1, 1)) is larger than the "
     "input of shape (1, 2, 4, 4) with padding (0, 1): the output would be 2x0"),
    (lambda: F.max_pool2d(X4, 2, padding=2), rt.ArgumentValueError,
     "max_pool2d: padding (2, 2) must be at most half of kernel_size (2, 2)"),
    (lambda: F.avg_pool2d(X4, 3, padding=(0, 2)), rt.ArgumentValueError,
     "avg_pool2d: padding (0, 2) must be at most half of kernel_size (3, 3)"),
    (lambda: F.max_pool2d(X4, 2, padding=-1), rt.ArgumentValueError,
     "max_pool2d: padding must be non-negative, got (-1, -1)"),
    (lambda: F.max_pool2d(X4, (0, 2)), rt.ArgumentValueError,
     "max_pool2d: kernel_size must be positive, got (0, 2)"),
    (lambda: F.max_pool2d(X4, 2, stride=0), rt.ArgumentValueError,
     "max_pool2d: stride must be positive, got (0, 0)"),
    (lambda: F.max_pool2d(X4, 2, dilation=(1, 0)), rt.ArgumentValueError,
     "max_pool2d: dilation must be positive, got (1, 0)"),
    (lambda: F.avg_pool2d(X4, 2, stride=-1), rt.ArgumentValueError,
     "avg_pool2d: stride must be positive, got (-1, -1)"),
    (lambda: F.max_pool2d(X4, 2.5), rt.ArgumentTypeError,
     "max_pool2d: kernel_size must be an int or a pair of ints, got 2.5"),
    (lambda: F.max_pool2d(X4, (1, 2, 3)), rt.ArgumentTypeError,
     "max_pool2d: kernel_size must be an int or a pair of ints, got (1, 2, 3)"),
    (lambda: F.avg_pool2d(rt.zeros(1, 2, 4, 4, dtype=rt.int64), 2), rt.DTypeError,
     "avg_pool2d: input must be float32, float64, float16 or bfloat16, got int64"),
    (lambda: F.adaptive_avg_pool2d(rt.zeros(1, 2, 4, 4, dtype=rt.int32), 2), rt.DTypeError,
     "adaptive_avg_pool2d: input must be float32, float64, float16 or bfloat16, got int32"),
    (lambda: F.max_pool2d(rt.zeros(1, 2, 4, 4, dtype=rt.bool_), 2), rt.DTypeError,
     "max_pool2d: input must be float32, float64, int32, int64, float16, bfloat16, int8, uint8 or int16, got bool"),
    (lambda: F.avg_pool2d(X4, 2, divisor_override=0), rt.ArgumentValueError,
     "avg_pool2d: divisor_override must be a positive int, got 0"),
    (lambda: F.adaptive_avg_pool2d(X4, (0, 2)), rt.ArgumentValueError,
     "adaptive_avg_pool2d: output_size must be positive, got (0, 2)"),
    (lambda: F.adaptive_max_pool2d(X4, (2, 2, 2)), rt.ArgumentTypeError,
     "adaptive_max_pool2d: output_size must be an int or a pair of ints (or None), got (2, 2, 2)"),
    (lambda: F.adaptive_max_pool2d(rt.zeros(1, 2, 0, 4), 2), rt.ShapeError,
     "adaptive_max_pool2d: input of shape (1, 2, 0, 4) has an empty spatial dimension"),
    (lambda: F.interpolate(rt.zeros(2, 4, 4), size=2, mode="bilinear"), rt.ShapeError,
     "interpolate: mode 'bilinear' needs a 4-D (N, C, H, W) input, got shape (2, 4, 4)"),
    (lambda: F.interpolate(X4), rt.ArgumentValueError,
     "interpolate: give exactly one of size and scale_factor"),
    (lambda: F.interpolate(X4, size=2, scale_factor=2), rt.ArgumentValueError,
     "interpolate: give exactly one of size and scale_factor"),
    (lambda: F.interpolate(X4, scale_factor=-1), rt.ArgumentValueError,
     "interpolate: scale_factor must be a positive number or a pair of them, got -1"),
    (lambda: F.interpolate(X4, size=2, mode="bicubic"), rt.ArgumentValueError,
     "interpolate: mode must be 'nearest', 'nearest-exact', 'linear', 'bilinear' or "
     "'trilinear', got 'bicubic'"),
    (lambda: F.interpolate(X4, size=2, align_corners=True), rt.ArgumentValueError,
     "interpolate: align_corners can only be set with the interpolating modes (linear, "
     "bilinear, trilinear)"),
    (lambda: F.interpolate(X4, size=(0, 2)), rt.ArgumentValueError,
     "interpolate: size must be positive, got (0, 2)"),
    (lambda: F.interpolate(rt.zeros(1, 2, 4, 4, dtype=rt.int64), size=2, mode="bilinear"),
     rt.DTypeError, "interpolate: input must be float32 or float64, got int64 (mode "
     "'bilinear'; the nearest modes also take integer dtypes)"),
    (lambda: F.max_pool1d(rt.zeros(4), 2), rt.ShapeError,
     "max_pool1d: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape (4,)"),
    (lambda: F.max_pool2d([[1.0]], 2), rt.ArgumentTypeError,
     "max_pool2d: expected a Tensor, got list"),
]


@pytest.mark.parametrize("call,err,msg", ERRORS, ids=[m.split(":")[0] + str(i)
                                                      for i, (_, _, m) in enumerate(ERRORS)])
def test_errors_name_the_op_and_the_cause(call, err, msg):
    with pytest.raises(err) as e:
        call()
    assert str(e.value) == msg


def test_errors_on_a_capture_device_raise_before_anything_records():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = scope.placeholder((1, 2, 4, 4))
        with pytest.raises(rt.ShapeError, match="max_pool2d: kernel of size"):
            F.max_pool2d(x, 5)
        scope.complete(inputs=[x], outputs=[x])
    assert [op.op for op in scope.graph.operations] == []
