"""graph.compile's Winograd rewrite (``runtime.capture.winograd``): which convs it takes, that
their results match a float64 reference within rounding, the fused 2x2 pool, and the rules of
the two ops it makes (graph files are untrusted input)."""
import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from runtime.errors import ArgumentValueError, DTypeError, ShapeError
from runtime.ops.catalogue import CATALOGUE
from runtime.core.registry import Meta

RNG = np.random.default_rng(23)
N = 64      # whole lane blocks on every host (the cpu kernel set's lanes are 16 or 32 samples)


def _ops(exe):
    return [ln.split(" = ")[1].split("(")[0] for ln in exe.explain().splitlines()
            if ln.startswith(("dispatch:", "folded:")) or ln.startswith("    %")]


def _conv64(x, w, b, pad):
    """float64 conv2d, stride 1, symmetric pad, as sums of shifted planes."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad))
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = h + 2 * pad - 2, wd + 2 * pad - 2
    y = np.zeros((n, o, oh, ow))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow],
                           w[:, :, i, j].astype(np.float64))
    return y if b is None else y + b.reshape(1, o, 1, 1)


def _pool_relu(y):
    n, o, h, w = y.shape
    return np.maximum(y.reshape(n, o, h // 2, 2, w // 2, 2).max(axis=(3, 5)), 0)


def _case(c, h, w, o, bias, n=N):
    x = RNG.standard_normal((n, c, h, w)).astype(np.float32)
    wt = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(o).astype(np.float32) if bias else None
    return x, wt, b


def _model(wt, b, pad, pool=False):
    def fn(t):
        y = F.conv2d(t, rt.tensor(wt, device=t.device),
                     None if b is None else rt.tensor(b, device=t.device), padding=pad)
        return F.max_pool2d(rt.relu(y), 2) if pool else y
    return fn


@pytest.mark.parametrize("c, h, w, o, pad, bias", [
    (8, 5, 7, 5, 1, True),        # odd grid: the last tiles' outside outputs are dropped
    (16, 4, 4, 32, 1, False),     # the demo's second conv
    (9, 6, 6, 3, 0, True),        # no padding
    (8, 3, 5, 11, 2, True),       # pads of 2: rows and columns of tiles wholly in the padding
])
def test_winograd_conv_matches_the_float64_conv(c, h, w, o, pad, bias):
    x, wt, b = _case(c, h, w, o, bias)
    g = rt.capture(_model(wt, b, pad), x)
    exe = g.compile()
    ops = _ops(exe)
    assert "conv2d_winograd" in ops and "conv2d" not in ops and "winograd_weight" in ops
    assert "folded: " in exe.explain() and "= winograd_weight(" in exe.explain()
    got = exe(x)[0].numpy()
    want = _conv64(x, wt, b, pad)
    assert got.shape == want.shape and got.dtype == np.float32
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale * np.sqrt(c))
    np.testing.assert_allclose(got, g.run(x)[0].numpy(), rtol=0, atol=2e-6 * scale * np.sqrt(c))


def test_the_batch_need_not_fill_the_last_lane_block():
    # 60 samples: whole blocks of 16 lanes would leave 4 idle, of 32 lanes 4 (a quarter at most)
    x, wt, b = _case(8, 4, 6, 4, True, n=60)
    g = rt.capture(_model(wt, b, 1), x)
    exe = g.compile()
    assert "conv2d_winograd" in _ops(exe)
    want = _conv64(x, wt, b, 1)
    np.testing.assert_allclose(exe(x)[0].numpy(), want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("c", [1, 16])
def test_a_2x2_max_pool_of_the_relu_is_fused_into_the_conv(c):
    # relu(max_pool2d(conv)) per 2x2 tile: the conv's result is never stored; the pool and
    # relu are applied exactly (NaN kept, -inf pooled) to what the unfused op gives
    x, wt, b = _case(c, 8, 6, 16, True)
    x[3, 0, 2, 2] = np.nan
    x[5, :, :4, :4] = -1e30 * np.abs(x[5, :, :4, :4]) if c == 1 else x[5, :, :4, :4]
    g = rt.capture(_model(wt, b, 1, pool=True), x)
    exe = g.compile()
    ops = _ops(exe)
    assert ops.count("conv2d_winograd") == 1
    assert "max_pool2d_relu" not in ops and "relu" not in ops and "max_pool2d" not in ops
    assert "pool=True" in exe.explain()
    got = exe(x)[0].numpy()
    assert got.shape == (N, 16, 4, 3)
    unfused = rt.capture(_model(wt, b, 1), x).compile()
    if c >= 8:       # (1 channel: the unfused form does not pay; conv2d stays)
        assert "pool=False" in unfused.explain()
        np.testing.assert_array_equal(got, _pool_relu(unfused(x)[0].numpy()))
    assert np.isnan(got[3]).any() and not np.isnan(np.delete(got, 3, axis=0)).any()
    want = _pool_relu(_conv64(x, wt, b, 1))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), ~ok)
    np.testing.assert_allclose(got[ok], want[ok], rtol=0, atol=1e-5 * np.abs(want[ok]).max())


def test_the_pool_stays_where_the_conv_result_is_read_elsewhere():
    x, wt, b = _case(8, 4, 4, 8, True)

    def fn(t):
        y = F.conv2d(t, rt.tensor(wt, device=t.device), rt.tensor(b, device=t.device), padding=1)
        return F.max_pool2d(rt.relu(y), 2), y          # the conv's result is an output
    g = rt.capture(fn, x)
    exe = g.compile()
    assert "pool=False" in exe.explain() and "max_pool2d_relu" in _ops(exe)
    for got, want in zip(exe(x), g.run(x)):     # (Winograd's float32 rounding: scaled, as above)
        want = want.numpy()
        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("why, make", [
    ("stride 2", lambda t, w: F.conv2d(t, rt.tensor(w, device=t.device), stride=2, padding=1)),
    ("dilation 2", lambda t, w: F.conv2d(t, rt.tensor(w, device=t.device), dilation=2, padding=2)),
    ("groups 2", lambda t, w: F.conv2d(t, rt.tensor(w[:, :4], device=t.device), groups=2, padding=1)),
    ("5x5 kernel", lambda t, w: F.conv2d(t, rt.tensor(np.ones((4, 8, 5, 5), np.float32), device=t.device))),
    ("float64", lambda t, w: F.conv2d(t.astype(rt.float64), rt.tensor(w.astype(np.float64), device=t.device),
                                      padding=1)),
    ("small batch", lambda t, w: F.conv2d(t[:4], rt.tensor(w, device=t.device), padding=1)),
    ("pads of 3", lambda t, w: F.conv2d(t, rt.tensor(w, device=t.device), padding=3)),
])
def test_other_convs_keep_conv2d(why, make):
    x = RNG.standard_normal((N, 8, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((4, 8, 3, 3)).astype(np.float32)
    g = rt.capture(lambda t: make(t, w), x)
    exe = g.compile()
    ops = _ops(exe)
    assert "conv2d" in ops and "conv2d_winograd" not in ops, why
    np.testing.assert_array_equal(exe(x)[0].numpy(), g.run(x)[0].numpy())


def test_a_weight_that_is_an_input_keeps_conv2d():
    x = RNG.standard_normal((N, 8, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((4, 8, 3, 3)).astype(np.float32)
    g = rt.capture(lambda t, k: F.conv2d(t, k, padding=1), x, w)
    exe = g.compile()
    assert "conv2d_winograd" not in _ops(exe)
    np.testing.assert_array_equal(exe(x, w)[0].numpy(), g.run(x, w)[0].numpy())


def test_the_captured_graph_and_its_onnx_keep_conv2d():
    x, wt, b = _case(8, 4, 4, 8, True)
    g = rt.capture(_model(wt, b, 1, pool=True), x)
    g.compile()
    names = [op.op for op in g.operations]
    assert "conv2d" in names and "conv2d_winograd" not in names


# ---- the rules of the compile-made ops (a graph file may name them with any operands) ----
F32, F64 = rt.float32, rt.float64


def _rule(op, *args, **attrs):
    return CATALOGUE[op].infer(tuple(Meta(s, d) for s, d in args), attrs)


GOOD = dict(padding=(1, 1), grid=(4, 4), pool=False)


def test_rules_give_the_shapes():
    assert _rule("winograd_weight", ((5, 3, 3, 3), F32)).shape == (16, 5, 3)
    p = _rule("conv2d_winograd", ((2, 3, 4, 4), F32), ((16, 5, 3), F32), **GOOD)
    assert p.shape == (2, 5, 4, 4) and p.dtype is F32
    p = _rule("conv2d_winograd", ((2, 3, 4, 4), F32), ((16, 5, 3), F32), ((5,), F32),
              **dict(GOOD, pool=True))
    assert p.shape == (2, 5, 2, 2)


@pytest.mark.parametrize("op, args, attrs, exc, msg", [
    ("winograd_weight", [((5, 3, 3, 3), rt.int32)], {}, DTypeError,
     "winograd_weight: weight must be float32 or float64, got int32"),
    ("winograd_weight", [((5, 3, 5, 5), F32)], {}, ShapeError,
     "winograd_weight: weight must be (O, C, 3, 3), got (5, 3, 5, 5)"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 4), F32)], GOOD, ShapeError,
     "conv2d_winograd: input (N, C, H, W) and transformed weight (16, O, C) expected, got "
     "(2, 3, 4, 4) and (16, 5, 4)"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F64)], GOOD, DTypeError,
     "conv2d_winograd: input and transformed weight must share a float dtype, got float32 "
     "and float64"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F32)], dict(GOOD, grid=(9, 4)),
     ShapeError, "conv2d_winograd: grid (9, 4) is not a 3x3 conv's of a (4, 4) input with "
                 "leading pads (1, 1)"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F32)], dict(GOOD, padding=(-1, 1)),
     ArgumentValueError, "conv2d_winograd: padding must be a pair of ints >= 0, got (-1, 1)"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F32)], dict(GOOD, grid=[4, 4]),
     ArgumentValueError, "conv2d_winograd: grid must be a pair of ints >= 1, got [4, 4]"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F32)], dict(GOOD, pool=1),
     ArgumentValueError, "conv2d_winograd: pool must be a bool, got 1"),
    ("conv2d_winograd", [((2, 3, 4, 5), F32), ((16, 5, 3), F32)],
     dict(GOOD, grid=(4, 5), pool=True), ShapeError,
     "conv2d_winograd: pool=True needs an even grid, got (4, 5)"),
    ("conv2d_winograd", [((2, 3, 4, 4), F32), ((16, 5, 3), F32), ((4,), F32)], GOOD,
     ShapeError, "conv2d_winograd: bias must be (5,) float32, got (4,) float32"),
])
def test_rules_reject_bad_operands(op, args, attrs, exc, msg):
    with pytest.raises(exc) as e:
        _rule(op, *args, **attrs)
    assert str(e.value) == msg


def test_a_kernel_set_without_winograd_kernels_raises_a_device_error(monkeypatch):
    # a graph file may name the compile-made ops; a kernel set without them says so
    from runtime import dispatch
    from runtime.errors import DeviceError
    from runtime.ops.conv import _kernel_conv2d_winograd, _kernel_winograd_weight

    class Bare:
        capabilities = frozenset()
    for kernel, name in ((_kernel_conv2d_winograd, "conv2d_winograd"),
                         (_kernel_winograd_weight, "winograd_weight")):
        with pytest.raises(DeviceError) as e:
            kernel(Bare(), (None, None), (None, None), GOOD, None, rt.cpu())
        assert str(e.value) == (f"{name}: cpu has no Winograd kernels (graph.compile makes this "
                                f"op on cpu only); run the graph the op was compiled from")
    assert dispatch.kernels_for(rt.cpu()).conv2d_winograd is not None
