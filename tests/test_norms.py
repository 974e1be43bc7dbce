"""Normalisation, embedding, dropout2d and scaled_dot_product_attention of rt.nn.functional
vs NumPy float64 references and PyTorch, gradients vs finite differences (float64) and
PyTorch, one capture + ONNX round trip, and the exact errors."""
import math

import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import AD, check_grad
from oracle import onnx_run, torch_or_skip

F = rt.nn.functional
RNG = np.random.default_rng(3)
X = RNG.normal(size=(2, 6, 3, 2))                    # (N, C, H, W)
WC, BC = RNG.normal(size=6), RNG.normal(size=6)      # per-channel affine
Q = RNG.normal(size=(2, 3, 4, 8))                    # (B, H, L, E)
K = RNG.normal(size=(2, 3, 5, 8))                    # (B, H, S, E)
V = RNG.normal(size=(2, 3, 5, 6))                    # (B, H, S, Ev)


def _t(a, dtype=rt.float32, device=None):
    return rt.tensor(np.asarray(a), dtype=dtype, device=device)


def _close(got, want, tol=2e-6):
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def _std(x, axes, eps):
    return (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)


def _ch(v):
    return v.reshape(-1, 1, 1)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return _softmax(s) @ v


# --------------------------------------------------------------------------- forward
def test_layer_and_rms_norm_vs_numpy():
    w, b = X[0, 0], X[1, 1]                           # (3, 2): the trailing shape
    _close(F.layer_norm(_t(X), (3, 2), _t(w), _t(b)), _std(X, (2, 3), 1e-5) * w + b)
    _close(F.layer_norm(_t(X), 2, eps=1e-3), _std(X, (3,), 1e-3))
    eps = float(np.finfo(np.float32).eps)
    ms = (X * X).mean(axis=(2, 3), keepdims=True)
    _close(F.rms_norm(_t(X), [3, 2], _t(w)), X / np.sqrt(ms + eps) * w)
    _close(F.rms_norm(_t(X), (2,), eps=0.1), X / np.sqrt((X * X).mean(-1, keepdims=True) + 0.1))


def test_group_norm_vs_numpy():
    g = X.reshape(2, 3, -1)
    want = _std(g, (2,), 1e-5).reshape(X.shape) * _ch(WC) + _ch(BC)
    _close(F.group_norm(_t(X), 3, _t(WC), _t(BC)), want, 5e-6)
    _close(F.group_norm(_t(X[:, :, 0, 0]), 6), _std(X[:, :, 0, 0].reshape(2, 6, 1), (2,), 1e-5)
           .reshape(2, 6), 5e-6)


def test_batch_norm_vs_numpy():
    rm, rv = RNG.normal(size=6), RNG.uniform(0.5, 2.0, size=6)
    want = (X - _ch(rm)) / np.sqrt(_ch(rv) + 1e-5) * _ch(WC) + _ch(BC)
    _close(F.batch_norm(_t(X), _t(rm), _t(rv), _t(WC), _t(BC)), want, 5e-6)
    want = _std(X, (0, 2, 3), 1e-5) * _ch(WC) + _ch(BC)
    _close(F.batch_norm(_t(X), _t(rm), _t(rv), _t(WC), _t(BC), training=True), want, 5e-6)
    _close(F.batch_norm(_t(X[:, :, 0, 0]), None, None, training=True), _std(X[:, :, 0, 0], (0,), 1e-5))
    m, v = F.batch_norm_stats(_t(X), _t(rm), _t(rv), momentum=0.3)
    _close(m, 0.7 * rm + 0.3 * X.mean(axis=(0, 2, 3)))
    _close(v, 0.7 * rv + 0.3 * X.var(axis=(0, 2, 3), ddof=1), 5e-6)


def test_batch_norm_and_its_stats_vs_torch():
    torch = torch_or_skip()
    x = X.astype(np.float32)
    rm, rv = np.zeros(6, np.float32), np.ones(6, np.float32)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    want = torch.nn.functional.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.2)
    _close(F.batch_norm(_t(x), _t(rm), _t(rv), training=True, momentum=0.2), want.numpy(), 5e-6)
    m, v = F.batch_norm_stats(_t(x), _t(rm), _t(rv), momentum=0.2)
    _close(m, trm.numpy())
    _close(v, trv.numpy())


def test_normalize_vs_numpy():
    a = X[0, :, :, 0]                                 # (6, 3)
    _close(F.normalize(_t(a)), a / np.linalg.norm(a, axis=1, keepdims=True))
    _close(F.normalize(_t(a), p=1.0, dim=0), a / np.abs(a).sum(0, keepdims=True))
    _close(F.normalize(_t(a), p=3.0, dim=0), a / (np.abs(a) ** 3).sum(0, keepdims=True) ** (1 / 3))
    _close(F.normalize(_t(a), p=math.inf), a / np.abs(a).max(1, keepdims=True))
    assert F.normalize(_t(np.zeros((1, 3)))).tolist() == [[0.0, 0.0, 0.0]]


def test_embedding_forward_and_padding_gradient():
    w = RNG.normal(size=(5, 3))
    idx = np.array([[0, 2], [4, 2]])
    _close(F.embedding(rt.tensor(idx), _t(w)), w[idx])
    tw = rt.tensor(w, device=AD).require_grad()
    out = F.embedding(rt.tensor(idx, device=AD), tw, padding_idx=-3)   # row 2
    np.testing.assert_allclose(out.numpy(), w[idx])
    g = tw.grad(rt.sum(out * 2.0).backward()).numpy()
    np.testing.assert_allclose(g, [[2] * 3, [0] * 3, [0] * 3, [0] * 3, [2] * 3])


def test_dropout2d_zeroes_whole_channels():
    rt.manual_seed(0)
    y = F.dropout2d(rt.ones(4, 8, 3, 3), p=0.5).numpy()
    per_channel = y.reshape(4, 8, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(axis=2) == per_channel.max(axis=2))     # one draw a channel
    assert 0 < (per_channel[:, :, 0] == 0).sum() < 32
    assert F.dropout2d(rt.ones(8, 3, 3), 0.5, training=False).numpy().min() == 1.0
    y3 = F.dropout2d(rt.ones(8, 3, 3), 0.5).numpy().reshape(8, 9)
    assert np.all(y3.min(axis=1) == y3.max(axis=1))


@pytest.mark.parametrize("kind", ["none", "causal", "bool", "additive", "scale"])
def test_sdpa_vs_numpy(kind):
    mask = None
    kw = {}
    if kind == "bool":
        mask = RNG.random((4, 5)) < 0.6
        mask[:, 0] = True                             # no fully masked row
        kw["attn_mask"] = rt.tensor(mask)
    elif kind == "additive":
        mask = RNG.normal(size=(3, 4, 5))
        kw["attn_mask"] = _t(mask)
    elif kind == "causal":
        kw["is_causal"] = True
    elif kind == "scale":
        kw["scale"] = 0.3
    want = _sdpa_ref(Q, K, V, mask, kind == "causal", kw.get("scale"))
    _close(F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), **kw), want, 5e-6)


def test_sdpa_vs_torch_forward_and_backward():
    torch = torch_or_skip()
    mask = RNG.random((4, 5)) < 0.6
    mask[:, 0] = True
    for kw, tkw in (({"is_causal": True}, {"is_causal": True}),
                    ({"attn_mask": rt.tensor(mask, device=AD)}, {"attn_mask": torch.tensor(mask)})):
        ts = [rt.tensor(a, device=AD).require_grad() for a in (Q, K, V)]
        out = F.scaled_dot_product_attention(*ts, **kw)
        w = RNG.normal(size=out.shape)
        grads = rt.sum(out * rt.tensor(w, device=AD)).backward()
        tt = [torch.tensor(a, requires_grad=True) for a in (Q, K, V)]
        tout = torch.nn.functional.scaled_dot_product_attention(*tt, **tkw)
        (tout * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        for t, r in zip(ts, tt):
            np.testing.assert_allclose(t.grad(grads).numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_sdpa_dropout_is_seeded_and_scaled():
    rt.manual_seed(1)
    a = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), dropout_p=0.5).numpy()
    rt.manual_seed(1)
    b = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, _sdpa_ref(Q, K, V), atol=1e-3)


# --------------------------------------------------------------------------- gradients
SMALL = X[:, :4, :, 0]                                # (2, 4, 3)
GRADS = {
    "layer_norm": lambda x, w, b: F.layer_norm(x, (3,), w[0, 0], b[0, 0]),
    "rms_norm": lambda x, w, b: F.rms_norm(x, (4, 3), w[0]),
    "group_norm": lambda x, w, b: F.group_norm(x, 2, w[0, :, 0], b[0, :, 0]),
    "batch_norm_train": lambda x, w, b: F.batch_norm(x, None, None, w[0, :, 0], b[0, :, 0],
                                                     training=True),
    "batch_norm_eval": lambda x, w, b: F.batch_norm(x, w[1, :, 1] * 0.1, b[1, :, 1] ** 2 + 0.5,
                                                    w[0, :, 0], None),
    "normalize": lambda x, w, b: F.normalize(x * w, p=3.0, dim=2),
    # (no padding_idx: its rows get no gradient on purpose, which finite differences would see)
    "embedding": lambda x, w, b: F.embedding(rt.tensor([[0, 1], [1, 1]], device=x.device),
                                             x[0] * w[1]),
    "sdpa": lambda x, w, b: F.scaled_dot_product_attention(x, w, b, is_causal=True),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_vs_finite_differences(name):
    check_grad(GRADS[name], SMALL, RNG.normal(size=SMALL.shape), RNG.normal(size=SMALL.shape))


def test_capture_and_onnx_round_trip(tmp_path):
    x, q = X.astype(np.float32), Q.astype(np.float32)

    def fn(a, b):
        return [F.layer_norm(a, (3, 2)), F.group_norm(a, 3), F.normalize(a),
                F.scaled_dot_product_attention(b, b, b, is_causal=True)]
    graph = rt.capture(fn, x, q)
    got = onnx_run(graph, tmp_path / "norms.onnx", x, q, opset=17)
    for g, want in zip(got, fn(rt.tensor(x), rt.tensor(q))):
        np.testing.assert_allclose(g, want.numpy(), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- errors
X32 = _t(X)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: F.layer_norm(X32, (3, 3)), rt.ShapeError,
     "layer_norm: normalized_shape (3, 3) does not match the trailing dimensions of input of "
     "shape (2, 6, 3, 2)"),
    (lambda: F.layer_norm(X32, (2,), X32[0, 0]), rt.ShapeError,
     "layer_norm: weight of shape (3, 2) does not match (2,)"),
    (lambda: F.rms_norm(X32, ()), rt.ShapeError,
     "rms_norm: normalized_shape () does not match the trailing dimensions of input of shape "
     "(2, 6, 3, 2)"),
    (lambda: F.group_norm(X32, 4), rt.ArgumentValueError,
     "group_norm: num_groups 4 must divide the 6 channels of input of shape (2, 6, 3, 2)"),
    (lambda: F.group_norm(X32[0, 0, 0], 1), rt.ShapeError,
     "group_norm: input must be (N, C, *), got shape (2,)"),
    (lambda: F.group_norm(X32, 3, X32[0, 0, 0]), rt.ShapeError,
     "group_norm: weight of shape (2,) does not match (6,)"),
    (lambda: F.batch_norm(X32, X32[0, 0, 0], X32[0, 0, 0]), rt.ShapeError,
     "batch_norm: running_mean of shape (2,) does not match (6,)"),
    (lambda: F.batch_norm(X32, None, X32[0, :, 0, 0]), rt.ArgumentValueError,
     "batch_norm: running_mean and running_var must be given when not training"),
    (lambda: F.batch_norm_stats(X32[:1, :, :1, 0], X32[0, :, 0, 0], X32[0, :, 0, 0]),
     rt.ArgumentValueError, "batch_norm_stats: expected more than 1 value per channel, got input "
     "of shape (1, 6, 1)"),
    (lambda: F.batch_norm(X32[0, 0, 0], None, None), rt.ShapeError,
     "batch_norm: input must be (N, C) or (N, C, *), got shape (2,)"),
    (lambda: F.batch_norm(X32.astype(rt.int64), None, None, training=True), rt.DTypeError,
     "batch_norm: input must be a float tensor, got int64"),
    (lambda: F.normalize(X32, p="2"), rt.ArgumentValueError, "normalize: p must be a number, got '2'"),
    (lambda: F.embedding(rt.tensor([0]), X32), rt.ShapeError,
     "embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape (2, 6, 3, 2)"),
    (lambda: F.embedding(X32[0, 0, 0], X32[0, 0]), rt.DTypeError,
     "embedding: indices must be an integer tensor, got float32"),
    (lambda: F.embedding(rt.tensor([0]), X32[0, 0], padding_idx=3), rt.ArgumentValueError,
     "embedding: padding_idx 3 is out of range for 3 embeddings"),
    (lambda: F.dropout2d(X32[0, 0], 0.5), rt.ShapeError,
     "dropout2d: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape (3, 2)"),
    (lambda: F.dropout2d(X32, 1.5), rt.ArgumentValueError, "dropout2d: p must be in [0, 1], got 1.5"),
    (lambda: F.scaled_dot_product_attention(X32, X32[..., :1], X32), rt.ShapeError,
     "scaled_dot_product_attention: query (2, 6, 3, 2), key (2, 6, 3, 1) and value "
     "(2, 6, 3, 2) do not fit (..., L, E), (..., S, E), (..., S, Ev)"),
    (lambda: F.scaled_dot_product_attention(X32, X32, X32, attn_mask=X32, is_causal=True),
     rt.ArgumentValueError, "scaled_dot_product_attention: give attn_mask or is_causal, not both"),
    (lambda: F.scaled_dot_product_attention(X32, X32, X32, dropout_p=2.0), rt.ArgumentValueError,
     "scaled_dot_product_attention: dropout_p must be in [0, 1], got 2.0"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message
