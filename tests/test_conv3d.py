"""3-D convolution and pooling (runtime/ops/conv.py, runtime/ops/pool.py): ``conv3d``,
``conv_transpose3d``, ``max_pool3d``, ``avg_pool3d`` and their ``rt.nn`` layers, written with the
2-D records; against NumPy float64 references and PyTorch (forward, gradients on the autodiff
device), capture/replay, ONNX, and the exact errors.  Tiny shapes: forward in float32,
gradients in float64."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from autodiff.gradcheck import AD
from oracle import assert_close, needs_torch, onnx_run, torch

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def _t3(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


# --------------------------------------------------------------------------- NumPy references
def _taps(kernel, dilation, stride, grid):
    """(tap, slices of the padded input it reads for every output position)."""
    for tap in np.ndindex(*kernel):
        yield tap, tuple(slice(t * d, t * d + s * (g - 1) + 1, s)
                         for t, d, s, g in zip(tap, dilation, stride, grid))


def ref_conv3d(x, w, b, stride, padding, dilation, groups):
    stride, dilation = _t3(stride), _t3(dilation)
    if padding == "same":
        tot = [d * (k - 1) for k, d in zip(w.shape[2:], dilation)]
        pads = [(t // 2, t - t // 2) for t in tot]
    else:
        pads = [(p, p) for p in _t3(padding)]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple(pads))
    o, cg = w.shape[:2]
    og = o // groups
    grid = tuple((xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1
                 for i in range(3))
    out = np.zeros((x.shape[0], o) + grid)
    for tap, sl in _taps(w.shape[2:], dilation, stride, grid):
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            out[:, g * og:(g + 1) * og] += np.einsum(
                "ncdhw,oc->nodhw", patch[:, g * cg:(g + 1) * cg],
                w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
    return out if b is None else out + b.reshape(1, -1, 1, 1, 1)


def ref_conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation):
    stride, padding, dilation = _t3(stride), _t3(padding), _t3(dilation)
    opad = _t3(output_padding)
    n, c = x.shape[:2]
    cg, og = c // groups, w.shape[1]
    full = tuple((x.shape[2 + i] - 1) * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1
                 + opad[i] for i in range(3))
    buf = np.zeros((n, og * groups) + full)
    for tap, sl in _taps(w.shape[2:], dilation, stride, x.shape[2:]):
        for g in range(groups):
            buf[(slice(None), slice(g * og, (g + 1) * og)) + sl] += np.einsum(
                "ncdhw,co->nodhw", x[:, g * cg:(g + 1) * cg].astype(np.float64),
                w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    out = buf[(slice(None), slice(None)) + crop]
    return out if b is None else out + b.reshape(1, -1, 1, 1, 1)


def ref_pool3d(x, kernel, stride, padding, kind):
    """Max (padding -inf) or average (padding counted) pooling, floor mode, no dilation."""
    kernel, stride, padding = _t3(kernel), _t3(stride), _t3(padding)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple((p, p) for p in padding),
                constant_values=fill)
    grid = tuple((xp.shape[2 + i] - kernel[i]) // stride[i] + 1 for i in range(3))
    wins = np.stack([xp[(slice(None), slice(None)) + sl]
                     for _, sl in _taps(kernel, (1, 1, 1), stride, grid)])
    return wins.max(0) if kind == "max" else wins.mean(0)


# --------------------------------------------------------------------------- forward
CONV3D = [
    ((2, 4, 4, 5, 6), (6, 4, 3, 2, 3), True, dict()),
    ((1, 4, 5, 4, 6), (6, 2, 2, 3, 2), False, dict(stride=(2, 1, 2), padding=(1, 1, 0),
                                                   dilation=(1, 2, 1), groups=2)),
    ((1, 2, 5, 5, 4), (3, 2, 2, 2, 3), True, dict(padding="same", dilation=(2, 1, 1))),
]
CONVT3D = [
    ((2, 4, 3, 4, 3), (4, 3, 3, 2, 3), True, dict()),
    ((1, 4, 3, 3, 4), (4, 2, 2, 3, 2), False, dict(stride=(2, 1, 2), padding=(1, 0, 1),
                                                   output_padding=(1, 0, 1), dilation=(1, 2, 1),
                                                   groups=2)),
    ((1, 2, 3, 2, 3), (2, 3, 2, 2, 2), True, dict(stride=1, dilation=2, padding=1,
                                                  output_padding=1)),
]


def _arrays(xs, ws, bias, dtype, rng):
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    return [x, w] + ([rng.standard_normal(ws[0]).astype(dtype)] if bias else [])


@pytest.mark.parametrize("xs,ws,bias,kw", CONV3D)
def test_conv3d_forward(xs, ws, bias, kw, rng):
    arrays = _arrays(xs, ws, bias, np.float32, rng)
    y = F.conv3d(*[rt.tensor(a) for a in arrays], **kw)
    b = arrays[2] if bias else None
    full = dict(dict(stride=1, padding=0, dilation=1, groups=1), **kw)
    assert_close(y, ref_conv3d(arrays[0], arrays[1], b, **full), rt.float32, tol=1e-4)
    if torch is not None:
        t = torch.nn.functional.conv3d(*[torch.from_numpy(a) for a in arrays], **kw)
        np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,bias,kw", CONVT3D)
def test_conv_transpose3d_forward(xs, ws, bias, kw, rng):
    groups = kw.get("groups", 1)
    arrays = _arrays(xs, ws, False, np.float32, rng)
    if bias:
        arrays.append(rng.standard_normal(ws[1] * groups).astype(np.float32))
    y = F.conv_transpose3d(*[rt.tensor(a) for a in arrays], **kw)
    full = dict(dict(stride=1, padding=0, output_padding=0, groups=1, dilation=1), **kw)
    assert_close(y, ref_conv_transpose3d(arrays[0], arrays[1], arrays[2] if bias else None,
                                         **full), rt.float32, tol=1e-4)
    if torch is not None:
        t = torch.nn.functional.conv_transpose3d(*[torch.from_numpy(a) for a in arrays], **kw)
        np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


POOLS = [(2, None, 0), ((3, 2, 3), (2, 1, 2), (1, 0, 1))]


@pytest.mark.parametrize("k,s,p", POOLS)
def test_pools_forward_match_numpy(k, s, p, rng):
    x = rng.standard_normal((2, 3, 5, 6, 7)).astype(np.float32)
    st = k if s is None else s
    assert_close(F.max_pool3d(rt.tensor(x), k, s, p), ref_pool3d(x, k, st, p, "max"), rt.float32)
    assert_close(F.avg_pool3d(rt.tensor(x), k, s, p), ref_pool3d(x, k, st, p, "avg"), rt.float32)


@needs_torch
@pytest.mark.parametrize("kw", [
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3, 2), stride=1, dilation=(2, 1, 2)),
])
def test_max_pool3d_matches_torch_with_indices(kw, rng):
    x = rng.standard_normal((2, 3, 5, 6, 7))
    y, idx = F.max_pool3d(rt.tensor(x), return_indices=True, **kw)
    ty, ti = torch.nn.functional.max_pool3d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(idx.numpy(), ti.numpy())
    assert idx.dtype is rt.int64


@needs_torch
def test_max_pool3d_ties_pick_the_first_in_depth_row_column_order():
    x = np.random.default_rng(0).integers(0, 3, size=(1, 2, 4, 4, 4)).astype(np.float64)
    y, idx = F.max_pool3d(rt.tensor(x), 2, return_indices=True)
    ty, ti = torch.nn.functional.max_pool3d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), ti.numpy())
    xi = rt.tensor(x.astype(np.int64))
    np.testing.assert_array_equal(F.max_pool3d(xi, 2).numpy(), ty.numpy().astype(np.int64))


@needs_torch
@pytest.mark.parametrize("kw", [
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(3, 2, 2), stride=2, padding=1, divisor_override=5),
])
def test_avg_pool3d_matches_torch(kw, rng):
    x = rng.standard_normal((2, 3, 5, 6, 7))
    np.testing.assert_allclose(F.avg_pool3d(rt.tensor(x), **kw).numpy(),
                               torch.nn.functional.avg_pool3d(torch.tensor(x), **kw).numpy(),
                               rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- gradients
def _match_grads(fn, tfn, arrays, rng):
    xs = [rt.tensor(a, device=AD).require_grad() for a in arrays]
    y = fn(*xs)
    w = rng.uniform(0.5, 1.5, size=y.shape)
    grads = rt.sum(y * rt.tensor(w, device=AD)).backward()
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    (tfn(*ts) * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad(grads).numpy(), t.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)


@needs_torch
@pytest.mark.parametrize("case", [0, 1, 2])
def test_conv3d_gradients_match_torch(case, rng):
    xs, ws, bias, kw = CONV3D[case]
    _match_grads(lambda *t: F.conv3d(*t, **kw),
                 lambda *t: torch.nn.functional.conv3d(*t, **kw),
                 _arrays(xs, ws, bias, np.float64, rng), rng)


@needs_torch
@pytest.mark.parametrize("case", [0, 1])
def test_conv_transpose3d_gradients_match_torch(case, rng):
    xs, ws, bias, kw = CONVT3D[case]
    arrays = _arrays(xs, ws, False, np.float64, rng)
    if bias:
        arrays.append(rng.standard_normal(ws[1] * kw.get("groups", 1)))
    _match_grads(lambda *t: F.conv_transpose3d(*t, **kw),
                 lambda *t: torch.nn.functional.conv_transpose3d(*t, **kw), arrays, rng)


@needs_torch
def test_pool3d_gradients_match_torch(rng):
    x = [rng.standard_normal((1, 2, 5, 6, 5))]
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)
    _match_grads(lambda t: F.max_pool3d(t, **kw),
                 lambda t: torch.nn.functional.max_pool3d(t, **kw), x, rng)
    _match_grads(lambda t: F.avg_pool3d(t, count_include_pad=False, **kw),
                 lambda t: torch.nn.functional.avg_pool3d(t, count_include_pad=False, **kw), x,
                 rng)


# --------------------------------------------------------------------------- layers
@needs_torch
def test_layers_match_torch(rng):
    x = rng.standard_normal((1, 2, 4, 5, 4)).astype(np.float32)
    conv = rt.nn.Conv3d(2, 4, (2, 3, 2), padding="same", padding_mode="replicate")
    tconv = torch.nn.Conv3d(2, 4, (2, 3, 2), padding="same", padding_mode="replicate")
    up = rt.nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)
    tup = torch.nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)
    for mine, theirs in ((conv, tconv), (up, tup)):
        theirs.weight.data = torch.tensor(mine.weight.numpy())
        theirs.bias.data = torch.tensor(mine.bias.numpy())
    net = rt.nn.Sequential(conv, rt.nn.MaxPool3d(2, ceil_mode=True), up,
                           rt.nn.AvgPool3d(3, 1, 1, count_include_pad=False))
    tnet = torch.nn.Sequential(tconv, torch.nn.MaxPool3d(2, ceil_mode=True), tup,
                               torch.nn.AvgPool3d(3, 1, 1, count_include_pad=False))
    np.testing.assert_allclose(net(rt.tensor(x)).numpy(), tnet(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    # unbatched (C, D, H, W)
    assert net(rt.tensor(x[0])).shape == (2, 4, 6, 4)


# --------------------------------------------------------------------------- capture, ONNX
def _net(x):
    w = rt.tensor(np.linspace(-1, 1, 4 * 2 * 2 * 3 * 2, dtype=np.float32).reshape(4, 2, 2, 3, 2),
                  device=x.device)
    wt = rt.tensor(np.linspace(-1, 1, 4 * 1 * 2 * 2 * 2, dtype=np.float32).reshape(4, 1, 2, 2, 2),
                   device=x.device)
    y = F.conv3d(x, w, stride=(1, 2, 1), padding=1, groups=1)
    y = F.max_pool3d(rt.relu(y), 2, ceil_mode=True)
    y = F.conv_transpose3d(y, wt, stride=2, groups=2, output_padding=1)
    return F.avg_pool3d(y, 3, 2, 1)


def test_capture_replays_and_exports(rng, tmp_path):
    x = rng.standard_normal((1, 2, 4, 6, 5)).astype(np.float32)
    want = _net(rt.tensor(x)).numpy()
    graph = rt.capture(_net, x)
    ops = [op.op for op in graph.operations]
    assert ops.count("conv2d") == 1 and ops.count("conv_transpose2d") == 1 and "fold" in ops
    np.testing.assert_array_equal(graph.run(x)[0].numpy(), want)
    graph.save(tmp_path / "g.json")
    np.testing.assert_array_equal(rt.load_graph(tmp_path / "g.json").run(x)[0].numpy(), want)
    (got,) = onnx_run(graph, tmp_path / "m.onnx", x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- errors
X5, W5 = rt.zeros(1, 2, 3, 4, 4), rt.zeros(3, 2, 2, 2, 2)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: F.conv3d(X5, rt.zeros(3, 2, 2, 2)), rt.ShapeError,
     "conv3d: weight must be 5-D (out_channels, in_channels/groups, kD, kH, kW), got shape "
     "(3, 2, 2, 2)"),
    (lambda: F.conv3d(rt.zeros(1, 4, 3, 4, 4), W5), rt.ShapeError,
     "conv3d: input of shape (1, 4, 3, 4, 4) has 4 channels, but weight of shape "
     "(3, 2, 2, 2, 2) with groups=1 expects 2 (and 3 output channels divisible by groups)"),
    (lambda: F.conv3d(rt.zeros(2, 3, 4), W5), rt.ShapeError,
     "conv3d: input must be 5-D (N, C, D, H, W) (or 4-D unbatched), got shape (2, 3, 4)"),
    (lambda: F.conv3d(X5, W5, padding=-1), rt.ArgumentValueError,
     "conv3d: padding must be a non-negative int or a tuple of 3, got -1"),
    (lambda: F.conv3d(X5, W5, stride=2, padding="same"), rt.ArgumentValueError,
     "conv3d: padding='same' is not supported for strided convolutions (stride=(2, 2, 2))"),
    (lambda: F.conv3d(X5, W5, rt.zeros(2)), rt.ShapeError,
     "conv3d: bias must have shape (3,) (the output channels), got (2,)"),
    (lambda: F.conv3d(X5, rt.zeros(3, 2, 4, 2, 2)), rt.ShapeError,
     "conv3d: kernel of size (4, 2, 2) with dilation (1, 1, 1) is bigger than the padded input "
     "of size (3, 4, 4)"),
    (lambda: F.conv3d(X5, W5, padding=(0, 1, 0), dilation=(1, 6, 1)), rt.ShapeError,
     "conv3d: kernel of size (2, 2, 2) with dilation (1, 6, 1) is bigger than the padded input "
     "of size (3, 6, 4)"),
    (lambda: F.conv_transpose3d(X5, W5, stride=2, output_padding=(2, 0, 0)),
     rt.ArgumentValueError,
     "conv_transpose3d: output_padding (2, 0, 0) must be smaller than either stride (2, 2, 2) "
     "or dilation (1, 1, 1)"),
    (lambda: F.conv_transpose3d(rt.zeros(1, 4, 3, 4, 4), W5), rt.ShapeError,
     "conv_transpose3d: input of shape (1, 4, 3, 4, 4) has 4 channels, but weight of shape "
     "(3, 2, 2, 2, 2) expects 3 (its first dimension), divisible by groups=1"),
    (lambda: F.max_pool3d(rt.zeros(2, 3, 4), 2), rt.ShapeError,
     "max_pool3d: expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got shape (2, 3, 4)"),
    (lambda: F.avg_pool3d(X5, 2, padding=(2, 0, 0)), rt.ArgumentValueError,
     "avg_pool3d: padding (2, 0, 0) must be at most half of kernel_size (2, 2, 2)"),
    (lambda: F.max_pool3d(X5, 2, padding=-1), rt.ArgumentValueError,
     "max_pool3d: padding must be non-negative, got (-1, -1, -1)"),
    (lambda: F.max_pool3d(X5, (2, 3)), rt.ArgumentTypeError,
     "max_pool3d: kernel_size must be an int or a tuple of 3 ints, got (2, 3)"),
    (lambda: F.avg_pool3d(X5, 2, divisor_override=0), rt.ArgumentValueError,
     "avg_pool3d: divisor_override must be a positive int, got 0"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as e:
        fn()
    assert str(e.value) == msg
