"""Convolution (runtime/ops/conv.py): unfold/fold, conv1d/conv2d, conv_transpose2d against
NumPy float64 references and PyTorch, gradients against finite differences (float64) and
PyTorch, capture/replay/compile/ONNX, and the exact error messages.

Compile cost: forward checks run in float32, gradient checks in float64, on one parametrized
set of tiny shapes (the gemm takes its small-product path; no packed gemm is built here)."""
from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from autodiff.gradcheck import AD, check_grad
from oracle import assert_close, onnx_op_types, onnx_run, torch_or_skip

# PyTorch's own note on padding="same" with an even kernel (it pads a copy); not ours
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")


# --------------------------------------------------------------------------- references
def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ref_pads(padding, kernel, dilation):
    """(top, left, bottom, right) of a PyTorch padding argument."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        tot = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (tot[0] // 2, tot[1] // 2, tot[0] - tot[0] // 2, tot[1] - tot[1] // 2)
    p = _pair(padding)
    return p + p


def _taps(kernel, dilation, stride, grid):
    """(i, j, row slice, column slice) of every kernel position over a padded image."""
    (kh, kw), (dh, dw), (sh, sw), (oh, ow) = kernel, dilation, stride, grid
    for i in range(kh):
        for j in range(kw):
            yield i, j, slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), \
                slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)


def _grid(image, kernel, stride, pads, dilation):
    return tuple((image[a] + pads[a] + pads[a + 2] - dilation[a] * (kernel[a] - 1) - 1)
                 // stride[a] + 1 for a in range(2))


def _padded(x, pads):
    return np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))


def ref_unfold(x, kernel, dilation, pads, stride):
    n, c = x.shape[:2]
    grid = _grid(x.shape[2:], kernel, stride, pads, dilation)
    xp = _padded(x, pads)
    k = kernel[0] * kernel[1]
    out = np.zeros((n, c * k, grid[0] * grid[1]))
    for i, j, rs, cs in _taps(kernel, dilation, stride, grid):
        for ch in range(c):
            out[:, ch * k + i * kernel[1] + j] = xp[:, ch, rs, cs].reshape(n, -1)
    return out


def ref_fold(cols, size, kernel, dilation, pads, stride):
    n, ck, _ = cols.shape
    k = kernel[0] * kernel[1]
    grid = _grid(size, kernel, stride, pads, dilation)
    out = np.zeros((n, ck // k, size[0] + pads[0] + pads[2], size[1] + pads[1] + pads[3]))
    for i, j, rs, cs in _taps(kernel, dilation, stride, grid):
        for ch in range(ck // k):
            out[:, ch, rs, cs] += cols[:, ch * k + i * kernel[1] + j].reshape((n,) + grid)
    return out[:, :, pads[0]:pads[0] + size[0], pads[1]:pads[1] + size[1]]


def ref_conv2d(x, w, b, stride, pads, dilation, groups):
    n = x.shape[0]
    o, cg = w.shape[:2]
    cols = ref_unfold(x, w.shape[2:], dilation, pads, stride)     # (n, c*k, L)
    k = cols.shape[1] // x.shape[1]
    og = o // groups
    out = np.stack([w[gi * og:(gi + 1) * og].reshape(og, cg * k).astype(np.float64)
                    @ cols[:, gi * cg * k:(gi + 1) * cg * k] for gi in range(groups)], axis=1)
    grid = _grid(x.shape[2:], w.shape[2:], stride, pads, dilation)
    out = out.reshape((n, o) + grid)
    return out if b is None else out + b.reshape(1, o, 1, 1)


def ref_conv_transpose2d(x, w, b, stride, pads, output_padding, groups, dilation):
    # the adjoint of conv2d: each group's W.T @ x, folded onto the output
    n, c, h, wd = x.shape
    og, kh, kw = w.shape[1:]
    cg = c // groups
    size = tuple((x.shape[2 + a] - 1) * stride[a] - pads[a] - pads[a + 2]
                 + dilation[a] * (w.shape[2 + a] - 1) + output_padding[a] + 1 for a in range(2))
    x3 = x.reshape(n, groups, cg, h * wd).astype(np.float64)
    w3 = w.reshape(groups, cg, og * kh * kw).astype(np.float64)
    cols = np.einsum("gck,ngcl->ngkl", w3, x3).reshape(n, groups * og * kh * kw, h * wd)
    out = _fold_grid(cols, size, (kh, kw), dilation, pads, stride, (h, wd))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _fold_grid(cols, size, kernel, dilation, pads, stride, grid):
    """``ref_fold`` with the block grid given (a transposed conv's input size)."""
    n, ck, _ = cols.shape
    k = kernel[0] * kernel[1]
    hp = max(size[0] + pads[0] + pads[2], (grid[0] - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1)
    wp = max(size[1] + pads[1] + pads[3], (grid[1] - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1)
    out = np.zeros((n, ck // k, hp, wp))
    for i, j, rs, cs in _taps(kernel, dilation, stride, grid):
        for ch in range(ck // k):
            out[:, ch, rs, cs] += cols[:, ch * k + i * kernel[1] + j].reshape((n,) + grid)
    return out[:, :, pads[0]:pads[0] + size[0], pads[1]:pads[1] + size[1]]


# --------------------------------------------------------------------------- cases
# (input shape, weight shape, bias, keyword arguments): stride, padding (int, pair, "same"
# with an even kernel, "valid"), dilation and groups (incl. depthwise) across the set
CONV2D = [
    pytest.param((2, 3, 5, 6), (4, 3, 3, 3), True, {}, id="plain"),
    pytest.param((1, 4, 6, 5), (6, 2, 3, 2), True,
                 {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2},
                 id="strided-padded-dilated-grouped"),
    pytest.param((1, 3, 5, 5), (3, 1, 3, 3), False, {"padding": "same", "dilation": 2, "groups": 3},
                 id="depthwise-same"),
    pytest.param((2, 2, 4, 5), (3, 2, 2, 3), True, {"padding": "same"}, id="same-even-kernel"),
    pytest.param((1, 2, 6, 5), (2, 2, 2, 2), False, {"stride": 3, "padding": "valid"},
                 id="stride-3-valid"),
    # wide images (the input gradient is a full correlation at stride 1 on any width)
    pytest.param((1, 2, 3, 33), (4, 1, 3, 3), True, {"padding": (1, 2), "dilation": (1, 2), "groups": 2},
                 id="wide-grouped-dilated"),
    pytest.param((1, 1, 2, 32), (1, 1, 2, 2), False, {"padding": 3}, id="wide-padding-past-kernel"),
]
TRANSPOSED = [
    pytest.param((2, 4, 3, 4), (4, 3, 3, 2), True, {"stride": 2, "padding": 1, "output_padding": 1},
                 id="strided"),
    pytest.param((1, 4, 3, 3), (4, 1, 2, 3), True,
                 {"stride": (2, 3), "padding": (1, 0), "dilation": (2, 1), "groups": 2,
                  "output_padding": (1, 2)}, id="grouped-dilated"),
    pytest.param((1, 2, 3, 3), (2, 2, 2, 2), False, {"dilation": 3, "output_padding": 2},
                 id="output-padding-past-stride"),
]
# (input shape, kernel_size, dilation, padding, stride)
WINDOWS = [
    pytest.param((1, 2, 4, 5), (3, 2), 1, 0, 1, id="plain"),
    pytest.param((1, 2, 7, 6), 3, (2, 1), (1, 2), (2, 3), id="dilated-padded-strided"),
]


def _conv_args(shapes, dtype, rng, bias):
    xs, ws = shapes
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    out_channels = ws[0]
    b = rng.standard_normal(out_channels).astype(dtype) if bias else None
    return x, w, b


def _transposed_bias(ws, kw, rng, dtype):
    return rng.standard_normal(ws[1] * kw.get("groups", 1)).astype(dtype)


def _pads_of(kw, w_shape):
    return ref_pads(kw.get("padding", 0), w_shape[2:], _pair(kw.get("dilation", 1)))


def _tensors(*arrays, device=None):
    return [None if a is None else rt.tensor(a, device=device) for a in arrays]


# --------------------------------------------------------------------------- forward
@pytest.mark.parametrize("xs,ws,bias,kw", CONV2D)
def test_conv2d_forward(xs, ws, bias, kw, rng):
    x, w, b = _conv_args((xs, ws), np.float32, rng, bias)
    got = F.conv2d(*_tensors(x, w, b), **kw)
    want = ref_conv2d(x, w, b, _pair(kw.get("stride", 1)), _pads_of(kw, ws),
                      _pair(kw.get("dilation", 1)), kw.get("groups", 1))
    assert_close(got, want, rt.float32)
    torch = torch_or_skip()
    tb = None if b is None else torch.from_numpy(b)
    t = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), tb, **kw)
    np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xs,ws,bias,kw", TRANSPOSED)
def test_conv_transpose2d_forward(xs, ws, bias, kw, rng):
    x, w, _ = _conv_args((xs, ws), np.float32, rng, False)
    b = _transposed_bias(ws, kw, rng, np.float32) if bias else None
    got = F.conv_transpose2d(*_tensors(x, w, b), **kw)
    want = ref_conv_transpose2d(x, w, b, _pair(kw.get("stride", 1)), ref_pads(kw.get("padding", 0),
                                (1, 1), (1, 1)), _pair(kw.get("output_padding", 0)),
                                kw.get("groups", 1), _pair(kw.get("dilation", 1)))
    assert_close(got, want, rt.float32)
    torch = torch_or_skip()
    tb = None if b is None else torch.from_numpy(b)
    t = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), tb, **kw)
    np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xs,k,d,p,s", WINDOWS)
def test_unfold_fold_forward(xs, k, d, p, s, rng):
    x = rng.standard_normal(xs).astype(np.float32)
    pads, kernel, dil, st = ref_pads(p, (1, 1), (1, 1)), _pair(k), _pair(d), _pair(s)
    cols = F.unfold(rt.tensor(x), k, dilation=d, padding=p, stride=s)
    assert_close(cols, ref_unfold(x, kernel, dil, pads, st), rt.float32)
    c = rng.standard_normal(cols.shape).astype(np.float32)
    img = F.fold(rt.tensor(c), xs[2:], k, dilation=d, padding=p, stride=s)
    assert_close(img, ref_fold(c, xs[2:], kernel, dil, pads, st), rt.float32)
    torch = torch_or_skip()
    tf = torch.nn.functional
    np.testing.assert_allclose(cols.numpy(), tf.unfold(torch.from_numpy(x), k, d, p, s).numpy())
    np.testing.assert_allclose(img.numpy(), tf.fold(torch.from_numpy(c), xs[2:], k, d, p, s).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_conv1d_matches_torch(rng):
    torch = torch_or_skip()
    x = rng.standard_normal((2, 4, 9)).astype(np.float32)
    for w_shape, kw in (((3, 4, 4), {"padding": "same", "dilation": 2}),
                        ((4, 2, 3), {"stride": 2, "padding": 1, "groups": 2})):
        w = rng.standard_normal(w_shape).astype(np.float32)
        b = rng.standard_normal(w_shape[0]).astype(np.float32)
        got = F.conv1d(rt.tensor(x), rt.tensor(w), rt.tensor(b), **kw)
        t = torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **kw)
        np.testing.assert_allclose(got.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_unbatched_inputs(rng):
    x = rng.standard_normal((3, 5, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = rt.conv2d(rt.tensor(x), rt.tensor(w), padding=1)
    assert y.shape == (2, 5, 5)
    assert_close(y, ref_conv2d(x[None], w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)[0], rt.float32)
    cols = rt.unfold(rt.tensor(x), 2)
    assert cols.shape == (12, 16)
    assert_close(rt.fold(cols, (5, 5), 2), ref_fold(cols.numpy()[None].astype(np.float64), (5, 5),
                                                      (2, 2), (1, 1), (0, 0, 0, 0), (1, 1))[0],
                 rt.float32)
    y1 = rt.conv1d(rt.tensor(x[:, 0]), rt.tensor(w[:, :, 0]))
    assert y1.shape == (2, 3)


# --------------------------------------------------------------------------- gradients
def _torch_grads(fn, arrays, weights):
    torch = torch_or_skip()
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    (fn(*ts) * torch.tensor(weights)).sum().backward()
    return [t.grad.numpy() for t in ts]


def _tape_grads(fn, arrays, weights):
    xs = [rt.tensor(a, device=AD).require_grad() for a in arrays]
    grads = rt.sum(fn(*xs) * rt.tensor(weights, device=AD)).backward()
    return [x.grad(grads).numpy() for x in xs]


def _check_vs_torch(fn, tfn, arrays, rng):
    out_shape = fn(*[rt.tensor(a) for a in arrays]).shape
    weights = rng.uniform(0.5, 1.5, size=out_shape)
    for got, want in zip(_tape_grads(fn, arrays, weights), _torch_grads(tfn, arrays, weights)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs,ws,bias,kw", CONV2D)
def test_conv2d_gradients(xs, ws, bias, kw, rng):
    x, w, b = _conv_args((xs, ws), np.float64, rng, bias)
    arrays = [x, w] + ([b] if bias else [])
    fn = lambda *t: F.conv2d(*t, **kw)
    check_grad(fn, *arrays, rtol=1e-6, atol=1e-7)
    torch = torch_or_skip()
    _check_vs_torch(fn, lambda *t: torch.nn.functional.conv2d(*t, **kw), arrays, rng)


@pytest.mark.parametrize("xs,ws,bias,kw", TRANSPOSED)
def test_conv_transpose2d_gradients(xs, ws, bias, kw, rng):
    x, w, _ = _conv_args((xs, ws), np.float64, rng, False)
    arrays = [x, w] + ([_transposed_bias(ws, kw, rng, np.float64)] if bias else [])
    fn = lambda *t: F.conv_transpose2d(*t, **kw)
    check_grad(fn, *arrays, rtol=1e-6, atol=1e-7)
    torch = torch_or_skip()
    _check_vs_torch(fn, lambda *t: torch.nn.functional.conv_transpose2d(*t, **kw), arrays, rng)


@pytest.mark.parametrize("xs,k,d,p,s", WINDOWS)
def test_unfold_fold_gradients(xs, k, d, p, s, rng):
    x = rng.standard_normal(xs)
    check_grad(lambda t: F.unfold(t, k, dilation=d, padding=p, stride=s), x)
    cols = F.unfold(rt.tensor(x), k, dilation=d, padding=p, stride=s).numpy()
    check_grad(lambda t: F.fold(t, xs[2:], k, dilation=d, padding=p, stride=s),
               rng.standard_normal(cols.shape))


def test_conv1d_gradients_match_torch(rng):
    torch = torch_or_skip()
    arrays = [rng.standard_normal((2, 4, 7)), rng.standard_normal((4, 2, 3)), rng.standard_normal(4)]
    kw = {"stride": 2, "padding": 1, "groups": 2}
    _check_vs_torch(lambda *t: F.conv1d(*t, **kw), lambda *t: torch.nn.functional.conv1d(*t, **kw),
                    arrays, rng)


def test_gradient_only_for_the_tracked_operand(rng):
    x = rt.tensor(rng.standard_normal((1, 2, 4, 4)), device=AD)
    w = rt.tensor(rng.standard_normal((3, 2, 3, 3)), device=AD).require_grad()
    grads = rt.sum(F.conv2d(x, w, padding=1)).backward()
    assert w.grad(grads).shape == (3, 2, 3, 3) and x.grad(grads) is None


# --------------------------------------------------------------------------- capture and ONNX
def _net(x, w1, b1, w2):
    h = rt.relu(F.conv2d(x, w1, b1, padding=1))
    return F.conv2d(h, w2, stride=2, padding="valid", groups=2)


def _net_arrays(rng):
    return (rng.standard_normal((2, 2, 6, 6)).astype(np.float32),
            rng.standard_normal((4, 2, 3, 3)).astype(np.float32),
            rng.standard_normal(4).astype(np.float32),
            rng.standard_normal((4, 2, 2, 2)).astype(np.float32))


def test_capture_records_one_op_per_conv_and_replays(rng, tmp_path):
    x, w1, b1, w2 = _net_arrays(rng)
    want = _net(*_tensors(x, w1, b1, w2)).numpy()
    graph = rt.capture(lambda x: _net(x, *_tensors(w1, b1, w2, device=x.device)), x)
    ops = [op.op for op in graph.operations if op.op != "init"]
    assert ops == ["conv2d", "relu", "conv2d"], ops
    np.testing.assert_array_equal(graph.run(x)[0].numpy(), want)
    np.testing.assert_allclose(graph.compile(rt.cpu())(x)[0].numpy(), want, rtol=1e-6, atol=1e-6)
    graph.save(tmp_path / "g.json")
    np.testing.assert_array_equal(rt.load_graph(tmp_path / "g.json").run(x)[0].numpy(), want)


def test_replay_on_autodiff_gives_weight_gradients(rng):
    x, w1, b1, w2 = _net_arrays(rng)
    graph = rt.capture(lambda x: _net(x, *_tensors(w1, b1, w2, device=x.device)), x)
    exe = graph.bind(AD)
    grads = rt.sum(exe(x)[0]).backward()
    got = {tuple(p.shape): p.grad(grads) for p in exe.params.values()}
    assert all(g is not None for g in got.values()) and (4, 2, 3, 3) in got


def _onnx_check(fn, tmp_path, *inputs):
    graph = rt.capture(fn, *inputs)
    path = tmp_path / "conv.onnx"
    got = onnx_run(graph, path, *inputs)
    for g, w in zip(got, graph.run(*inputs)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
    return onnx_op_types(path)


def test_onnx_exports_conv_and_conv_transpose(rng, tmp_path):
    x, w1, b1, w2 = _net_arrays(rng)
    wt = rng.standard_normal((4, 1, 3, 2)).astype(np.float32)

    def fn(x):
        w1_, b1_, w2_, wt_ = _tensors(w1, b1, w2, wt, device=x.device)
        y = F.conv2d(x, w1_, b1_, padding="same", dilation=(1, 2))
        z = F.conv2d(y, w2_, stride=2, groups=2)
        return y, F.conv_transpose2d(z, wt_, stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
                                     groups=2)
    types = _onnx_check(fn, tmp_path, x)
    assert types.count("Conv") == 2 and types.count("ConvTranspose") == 1, types


def test_onnx_exports_unfold_fold_and_conv1d(rng, tmp_path):
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3)).astype(np.float32)

    def fn(x):
        cols = F.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
        img = F.fold(cols, (7, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
        return cols, img, F.conv1d(x[:, :, 0], rt.tensor(w, device=x.device), padding="same")
    _onnx_check(fn, tmp_path, x)


# --------------------------------------------------------------------------- errors
def _t(*shape, dtype=rt.float32):
    return rt.zeros(*shape, dtype=dtype)


ERRORS = [
    (lambda: F.conv2d(_t(3, 5), _t(4, 3, 3, 3)), rt.ShapeError,
     "conv2d: input must be 4-D (N, C, H, W) (or 3-D unbatched), got shape (3, 5)"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3)), rt.ShapeError,
     "conv2d: weight must be 4-D (out_channels, in_channels/groups, kH, kW), got shape (4, 3, 3)"),
    (lambda: F.conv2d(_t(1, 4, 5, 5), _t(4, 1, 3, 3)), rt.ShapeError,
     "conv2d: input of shape (1, 4, 5, 5) has 4 channels, but weight of shape (4, 1, 3, 3) with "
     "groups=1 expects 1"),
    (lambda: F.conv2d(_t(1, 4, 5, 5), _t(3, 2, 3, 3), groups=2), rt.ShapeError,
     "conv2d: weight of shape (3, 2, 3, 3) has 3 output channels, which groups=2 does not divide"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), _t(3)), rt.ShapeError,
     "conv2d: bias must have shape (4,) (the output channels), got (3,)"),
    (lambda: F.conv2d(_t(1, 3, 2, 5), _t(4, 3, 3, 3)), rt.ShapeError,
     "conv2d: kernel of size (3, 3) with dilation (1, 1) is bigger than the padded input of size "
     "(2, 5)"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), dilation=3), rt.ShapeError,
     "conv2d: kernel of size (3, 3) with dilation (3, 3) is bigger than the padded input of size "
     "(5, 5)"),
    (lambda: F.conv2d(_t(1, 3, 5, 5, dtype=rt.int64), _t(4, 3, 3, 3)), rt.DTypeError,
     "conv2d: only float32 and float64 are supported, got int64, float32"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3, dtype=rt.float64)), rt.DTypeError,
     "conv2d: operands must have one dtype, got float32, float64"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), stride=0), rt.ArgumentValueError,
     "conv2d: stride must be a positive int or a tuple of 2, got 0"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), stride=(1, 2, 3)), rt.ArgumentValueError,
     "conv2d: stride must be a positive int or a tuple of 2, got (1, 2, 3)"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), padding=-1), rt.ArgumentValueError,
     "conv2d: padding must be a non-negative int or a tuple of 2, got -1"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), padding="full"), rt.ArgumentValueError,
     "conv2d: padding must be 'valid', 'same', a non-negative int or a tuple of 2, got 'full'"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), padding="same", stride=2),
     rt.ArgumentValueError,
     "conv2d: padding='same' is not supported for strided convolutions (stride=(2, 2))"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), dilation=1.5), rt.ArgumentValueError,
     "conv2d: dilation must be a positive int or a tuple of 2, got 1.5"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), _t(4, 3, 3, 3), groups=0), rt.ArgumentValueError,
     "conv2d: groups must be a positive int, got 0"),
    (lambda: F.conv1d(_t(2, 3, 5), _t(4, 3, 3, 3)), rt.ShapeError,
     "conv1d: weight must be 3-D (out_channels, in_channels/groups, kL), got shape (4, 3, 3, 3)"),
    (lambda: F.conv1d(_t(1, 2, 3, 5), _t(4, 3, 3)), rt.ShapeError,
     "conv1d: input must be 3-D (N, C, L) (or 2-D unbatched), got shape (1, 2, 3, 5)"),
    (lambda: F.conv_transpose2d(_t(1, 3, 4, 4), _t(2, 2, 3, 3)), rt.ShapeError,
     "conv_transpose2d: input of shape (1, 3, 4, 4) has 3 channels, but weight of shape "
     "(2, 2, 3, 3) expects 2 (its first dimension), divisible by groups=1"),
    (lambda: F.conv_transpose2d(_t(1, 3, 4, 4), _t(3, 2, 3, 3), groups=2), rt.ShapeError,
     "conv_transpose2d: input of shape (1, 3, 4, 4) has 3 channels, but weight of shape "
     "(3, 2, 3, 3) expects 3 (its first dimension), divisible by groups=2"),
    (lambda: F.conv_transpose2d(_t(1, 2, 4, 4), _t(2, 2, 3, 3), stride=2, output_padding=2),
     rt.ArgumentValueError,
     "conv_transpose2d: output_padding (2, 2) must be smaller than either stride (2, 2) or "
     "dilation (1, 1)"),
    (lambda: F.conv_transpose2d(_t(1, 2, 1, 1), _t(2, 2, 1, 1), padding=1), rt.ShapeError,
     "conv_transpose2d: input of shape (1, 2, 1, 1) with weight of shape (2, 2, 1, 1) gives an "
     "empty output of size (-1, -1)"),
    (lambda: F.unfold(_t(1, 2, 3, 3, dtype=rt.int32), 2), rt.DTypeError,
     "unfold: only float32 and float64 are supported, got int32"),
    (lambda: F.unfold(_t(3, 3), 2), rt.ShapeError, "unfold: input must be 4-D (N, C, H, W) (or 3-D "
     "unbatched), got shape (3, 3)"),
    (lambda: F.unfold(_t(1, 2, 3, 3), 0), rt.ArgumentValueError,
     "unfold: kernel_size must be a positive int or a tuple of 2, got 0"),
    (lambda: F.fold(_t(1, 5, 4), (3, 3), 2), rt.ShapeError,
     "fold: input of shape (1, 5, 4): dimension 1 (5) is not divisible by the kernel's 4 positions "
     "(kernel_size (2, 2))"),
    (lambda: F.fold(_t(1, 4, 5), (3, 3), 2), rt.ShapeError,
     "fold: input of shape (1, 4, 5) has 5 blocks, but output_size (3, 3) with kernel_size (2, 2) "
     "gives 2 x 2 = 4"),
    (lambda: F.conv2d(_t(1, 3, 5, 5), "w"), rt.ArgumentTypeError, "conv2d: expected a Tensor, got str"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_error_messages(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == msg
