"""Losses of rt.nn.functional vs NumPy float64 references and PyTorch (forward and gradients),
finite-difference gradients (float64), the native cross_entropy op for the plain case, one
capture + ONNX round trip, and the exact errors."""
import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import AD, check_grad
from oracle import onnx_run, torch_or_skip
from runtime.ops.catalogue import CATALOGUE

F = rt.nn.functional
REDUCTIONS = ["mean", "sum", "none"]
RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 5))                           # logits / inputs
T = np.array([0, 3, -100, 4])                         # class indices, one ignored
W = RNG.uniform(0.5, 2.0, size=5)                     # class weights
P = RNG.dirichlet(np.ones(5), size=4)                 # class probabilities
A, B = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
PROB = RNG.uniform(0.05, 0.95, size=(3, 4))           # BCE inputs
TGT = RNG.uniform(0.0, 1.0, size=(3, 4))


def _t(a, dtype=rt.float32):
    return rt.tensor(np.asarray(a), dtype=dtype)


def _reduce(per, reduction, denom=None):
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    return per.sum() / (per.size if denom is None else denom)


def _log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _nll_ref(logp, t, w, reduction, ignore=-100):
    keep = t != ignore
    safe = np.where(keep, t, 0)
    wi = (w[safe] if w is not None else np.ones(len(t))) * keep
    per = -logp[np.arange(len(t)), safe] * wi
    return _reduce(per, reduction, wi.sum())


def _ce_smooth_ref(x, t, w, reduction, ls):
    logp = _log_softmax(x)
    c = x.shape[1]
    keep = t != -100
    wv = np.ones(c) if w is None else w
    smooth = np.where(keep, -(logp * wv).sum(axis=1), 0.0)
    wi = wv[np.where(keep, t, 0)] * keep
    s = _reduce(smooth, reduction, wi.sum())
    return (1 - ls) * _nll_ref(logp, t, w, reduction) + ls / c * s


def _close(got, want, tol=2e-6):
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


# --------------------------------------------------------------------------- forward
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_cross_entropy_vs_numpy(reduction):
    logp = _log_softmax(X)
    _close(F.nll_loss(_t(logp), _t(T, rt.int64), _t(W), reduction=reduction),
           _nll_ref(logp, T, W, reduction))
    _close(F.cross_entropy(_t(X), _t(T, rt.int64), _t(W), reduction=reduction,
                           label_smoothing=0.1), _ce_smooth_ref(X, T, W, reduction, 0.1))
    _close(F.cross_entropy(_t(X), _t(T, rt.int64), reduction=reduction, label_smoothing=0.2),
           _ce_smooth_ref(X, T, None, reduction, 0.2))
    q = P * 0.9 + 0.1 / 5                             # smoothed probability targets
    per = -(_log_softmax(X) * q * W).sum(axis=1)
    _close(F.cross_entropy(_t(X), _t(P), _t(W), reduction=reduction, label_smoothing=0.1),
           _reduce(per, reduction, 4))


def test_nll_loss_shapes_vs_torch():
    torch = torch_or_skip()
    tf = torch.nn.functional
    x3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    t3 = RNG.integers(0, 3, size=(2, 4))
    for red in REDUCTIONS:
        _close(F.nll_loss(rt.tensor(x3), rt.tensor(t3), reduction=red),
               tf.nll_loss(torch.tensor(x3), torch.tensor(t3), reduction=red).numpy())
    _close(F.nll_loss(rt.tensor(x3[0, :, 0]), rt.tensor(np.array(2))),
           tf.nll_loss(torch.tensor(x3[0, :, 0]), torch.tensor(2)).numpy())


X4 = RNG.normal(size=(2, 5, 3, 2))                    # (N, C, d1, d2) logits
T4 = RNG.integers(0, 5, size=(2, 3, 2))
T4[0, 1, 0] = T4[1, 2, 1] = -100                      # two ignored targets
P4 = RNG.dirichlet(np.ones(5), size=(2, 3, 2)).transpose(0, 3, 1, 2).copy()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_unbatched_and_nd_vs_torch(reduction):
    # (C,) with a 0-d target, (N, C, d1, d2) with (N, d1, d2) targets (class axis 1) and
    # probability targets of either shape; weight, ignore_index, label_smoothing; values and
    # the logits' gradients against PyTorch (float64)
    torch = torch_or_skip()
    tf = torch.nn.functional
    cases = [(X4, T4, dict(weight=W, label_smoothing=0.2)), (X4, T4, {}),
             (X4, P4, dict(weight=W, label_smoothing=0.1)),
             (X4[1, :, 2, 0], np.array(3), dict(weight=W)),
             (X4[1, :, 2, 0], P4[0, :, 1, 1], dict(label_smoothing=0.3))]
    for x, t, kw in cases:
        xs = rt.tensor(x, device=AD).require_grad()
        tt = rt.tensor(t, device=AD)
        ours = F.cross_entropy(xs, tt, reduction=reduction,
                               **{k: rt.tensor(v, device=AD) if k == "weight" else v
                                  for k, v in kw.items()})
        tx = torch.tensor(x, requires_grad=True)
        theirs = tf.cross_entropy(tx, torch.tensor(t), reduction=reduction,
                                  **{k: torch.tensor(v) if k == "weight" else v
                                     for k, v in kw.items()})
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-12)
        w = RNG.normal(size=ours.shape)
        g = rt.sum(ours * rt.tensor(w, device=AD)).backward()
        (theirs * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(xs.grad(g).numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropies_vs_numpy(reduction):
    w = W[:4]
    per = -(TGT * np.log(PROB) + (1 - TGT) * np.log(1 - PROB)) * w
    _close(F.binary_cross_entropy(_t(PROB), _t(TGT), _t(w), reduction=reduction),
           _reduce(per, reduction))
    z = A * 30                                        # tails: exp(-z) overflows a naive form
    pw = W[1:]
    lw = 1 + (pw - 1) * TGT
    per = ((1 - TGT) * z + lw * np.logaddexp(0, -z)) * w
    _close(F.binary_cross_entropy_with_logits(_t(z), _t(TGT), _t(w), reduction=reduction,
                                              pos_weight=_t(pw)), _reduce(per, reduction), 1e-5)


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    got = F.binary_cross_entropy(_t([0.0, 1.0, 0.5]), _t([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(got.numpy(), [100.0, 100.0, np.log(2)], rtol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_vs_numpy(reduction):
    d = np.abs(A - B)
    _close(F.l1_loss(_t(A), _t(B), reduction=reduction), _reduce(d, reduction))
    sl1 = np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25)
    _close(F.smooth_l1_loss(_t(A), _t(B), reduction=reduction, beta=0.5), _reduce(sl1, reduction))
    _close(F.smooth_l1_loss(_t(A), _t(B), reduction=reduction, beta=0.0), _reduce(d, reduction))
    hub = np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35))
    _close(F.huber_loss(_t(A), _t(B), reduction=reduction, delta=0.7), _reduce(hub, reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
def test_kl_div_vs_numpy(reduction):
    logq = np.log(RNG.dirichlet(np.ones(4), size=3))
    p = RNG.dirichlet(np.ones(4), size=3)
    p[0, 0] = 0.0                                     # 0 log 0 = 0
    per = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0) - p * logq
    want = per.sum() / 3 if reduction == "batchmean" else _reduce(per, reduction)
    _close(F.kl_div(_t(logq), _t(p), reduction=reduction), want)
    per = np.exp(logq) * (logq - _log_softmax(A))
    want = per.sum() / 3 if reduction == "batchmean" else _reduce(per, reduction)
    _close(F.kl_div(_t(_log_softmax(A)), _t(logq), reduction=reduction, log_target=True), want)


def test_cosine_similarity_vs_numpy():
    b = B[:1]                                         # broadcast against (3, 4)
    want = (A * b).sum(1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(b, axis=1))
    _close(F.cosine_similarity(_t(A), _t(b)), want)
    want0 = (A * B).sum(0) / (np.linalg.norm(A, axis=0) * np.linalg.norm(B, axis=0))
    _close(F.cosine_similarity(_t(A), _t(B), dim=0), want0)
    assert F.cosine_similarity(_t(np.zeros((1, 3))), _t(A[:1, :3])).tolist() == [0.0]


# --------------------------------------------------------------------------- gradients
GRADS = {
    "nll_loss": lambda x: F.nll_loss(x, rt.tensor(T, device=AD), rt.tensor(W, device=AD)),
    "cross_entropy": lambda x: F.cross_entropy(x, rt.tensor(T, device=AD),
                                               rt.tensor(W, device=AD), label_smoothing=0.1),
    "cross_entropy_sum": lambda x: F.cross_entropy(x, rt.tensor(T, device=AD),
                                                   reduction="sum", label_smoothing=0.3),
    "cross_entropy_probs": lambda x: F.cross_entropy(x, rt.tensor(P, device=AD),
                                                     label_smoothing=0.1),
    "bce": lambda x: F.binary_cross_entropy(rt.sigmoid(x), rt.tensor(X * 0 + 0.3, device=AD)),
    "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(
        x * 5, rt.tensor(P * 3 % 1, device=AD), pos_weight=rt.tensor(W, device=AD),
        reduction="sum"),
    "smooth_l1": lambda x: F.smooth_l1_loss(x, rt.tensor(X[::-1].copy(), device=AD), beta=0.5),
    "huber": lambda x: F.huber_loss(x, rt.tensor(X[::-1].copy(), device=AD), delta=0.5,
                                    reduction="none"),
    "l1": lambda x: F.l1_loss(x, rt.tensor(X[::-1].copy(), device=AD), reduction="sum"),
    "kl_div": lambda x: F.kl_div(rt.log_softmax(x, axis=1), rt.tensor(P, device=AD),
                                 reduction="batchmean"),
    "cosine_similarity": lambda x: F.cosine_similarity(x, rt.tensor(X[:1], device=AD)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_vs_finite_differences(name):
    check_grad(GRADS[name], X)


def test_gradients_with_respect_to_the_target():
    check_grad(lambda a, b: F.kl_div(a, b, reduction="sum"), _log_softmax(A), PROB)
    check_grad(lambda a, b: F.binary_cross_entropy_with_logits(a, b), A, TGT)
    check_grad(lambda a, b: F.smooth_l1_loss(a, b), A, B)


def test_gradients_vs_torch():
    torch = torch_or_skip()
    tf = torch.nn.functional
    cases = [
        (lambda x: F.cross_entropy(x, rt.tensor(T, device=AD), rt.tensor(W, device=AD),
                                   label_smoothing=0.2),
         lambda x: tf.cross_entropy(x, torch.tensor(T), torch.tensor(W), label_smoothing=0.2)),
        (lambda x: F.binary_cross_entropy_with_logits(x * 40, rt.tensor(P, device=AD)),
         lambda x: tf.binary_cross_entropy_with_logits(x * 40, torch.tensor(P))),
        (lambda x: F.l1_loss(x, rt.tensor(np.round(X), device=AD)),
         lambda x: tf.l1_loss(x, torch.tensor(np.round(X)))),
    ]
    xr = np.round(X * 2) / 2                          # l1: ties with the target (gradient 0)
    for ours, theirs in cases:
        t = rt.tensor(xr, device=AD).require_grad()
        g = t.grad(ours(t).backward()).numpy()
        tt = torch.tensor(xr, requires_grad=True)
        theirs(tt).backward()
        np.testing.assert_allclose(g, tt.grad.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- the native op
def test_plain_cross_entropy_keeps_the_native_op(monkeypatch):
    spec = CATALOGUE["cross_entropy"]
    calls = []
    real = spec.kernel

    def kernel(*a):
        calls.append(1)
        return real(*a)
    monkeypatch.setattr(spec, "kernel", kernel)
    t = rt.tensor(np.array([0, 3, 1, 4]))
    for red in REDUCTIONS:
        F.cross_entropy(_t(X), t, reduction=red)
    assert len(calls) == 3
    F.cross_entropy(_t(X), t, _t(W))                  # weighted: the composition
    F.cross_entropy(_t(X), t, label_smoothing=0.1)
    F.cross_entropy(_t(X), _t(T, rt.int64))           # an ignored target
    assert len(calls) == 3
    assert F.cross_entropy(_t(X), t, "sum").shape == ()   # the older positional reduction


def test_capture_and_onnx_round_trip(tmp_path):
    x, p = X.astype(np.float32), P.astype(np.float32)
    w = W.astype(np.float32)

    def fn(a, b):
        wt = rt.tensor(w, device=a.device)
        return [F.cross_entropy(a, b, wt, label_smoothing=0.1),
                F.binary_cross_entropy_with_logits(a, b, pos_weight=wt),
                F.kl_div(rt.log_softmax(a, axis=1), b, reduction="batchmean"),
                F.smooth_l1_loss(a, b, beta=0.5)]
    graph = rt.capture(fn, x, p)
    got = onnx_run(graph, tmp_path / "losses.onnx", x, p, opset=17)
    for g, want in zip(got, fn(rt.tensor(x), rt.tensor(p))):
        np.testing.assert_allclose(g, want.numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- errors
X32, T64 = _t(X), rt.tensor(np.array([0, 3, 1, 4]))


@pytest.mark.parametrize("call, exc, message", [
    (lambda: F.l1_loss(X32, X32, reduction="avg"), rt.ArgumentValueError,
     "l1_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda: F.kl_div(X32, X32, reduction="avg"), rt.ArgumentValueError,
     "kl_div: reduction must be 'mean', 'sum', 'none' or 'batchmean', got 'avg'"),
    (lambda: F.nll_loss(X32, T64, reduction="batchmean"), rt.ArgumentValueError,
     "nll_loss: reduction must be 'mean', 'sum' or 'none', got 'batchmean'"),
    (lambda: F.huber_loss(X32, X32[:2]), rt.ShapeError,
     "huber_loss: target of shape (2, 5) does not match input of shape (4, 5)"),
    (lambda: F.binary_cross_entropy(X32 * 0, X32[0]), rt.ShapeError,
     "binary_cross_entropy: target of shape (5,) does not match input of shape (4, 5)"),
    (lambda: F.binary_cross_entropy(X32, X32), rt.ArgumentValueError,
     "binary_cross_entropy: every element of input must be between 0 and 1"),
    (lambda: F.nll_loss(X32, T64[:3]), rt.ShapeError,
     "nll_loss: target of shape (3,) does not match input of shape (4, 5) (expected (4,))"),
    (lambda: F.nll_loss(X32, X32[:, 0]), rt.DTypeError,
     "nll_loss: target must hold integer class indices, got float32"),
    (lambda: F.nll_loss(X32, T64 + 2), rt.IndexOutOfRangeError,
     "nll_loss: target 5 is out of range for 5 classes"),
    (lambda: F.nll_loss(X32, T64, X32[0, :3]), rt.ShapeError,
     "nll_loss: weight of shape (3,) does not match the 5 classes (expected (5,))"),
    (lambda: F.nll_loss(X32.astype(rt.int32), T64), rt.DTypeError,
     "nll_loss: input must be a float tensor, got int32"),
    (lambda: F.nll_loss(X32[0, 0], T64), rt.ShapeError,
     "nll_loss: input must have a class axis, got a 0-d tensor"),
    (lambda: F.cross_entropy(X32, T64, X32[0, :2]), rt.ShapeError,
     "cross_entropy: weight of shape (2,) does not match the 5 classes (expected (5,))"),
    (lambda: F.cross_entropy(X32, T64, label_smoothing=1.5), rt.ArgumentValueError,
     "cross_entropy: label_smoothing must be in [0, 1], got 1.5"),
    (lambda: F.cross_entropy(X32, T64 * 2, X32[0]), rt.IndexOutOfRangeError,
     "cross_entropy: target 6 is out of range for 5 classes"),
    (lambda: F.cross_entropy(X32, X32, reduction="avg"), rt.ArgumentValueError,
     "cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda: F.cross_entropy(_t(X4), rt.tensor(T4[:, :2])), rt.ShapeError,
     "cross_entropy: target of shape (2, 2, 2) does not match logits of shape (2, 5, 3, 2) "
     "(expected (2, 3, 2))"),
    (lambda: F.cross_entropy(_t(X4), _t(T4)), rt.DTypeError,
     "cross_entropy: targets must be integer class indices, got float32"),
    (lambda: F.cross_entropy(X32[0], T64), rt.ShapeError,
     "cross_entropy: target of shape (4,) does not match logits of shape (5,) (expected ())"),
    (lambda: F.cross_entropy(X32[0, 0], T64[0]), rt.ShapeError,
     "cross_entropy: input must have a class axis, got a 0-d tensor"),
    (lambda: F.cross_entropy(_t(X4), rt.tensor(np.full((2, 3, 2), 7))), rt.IndexOutOfRangeError,
     "cross_entropy: target 7 is out of range for 5 classes"),
    (lambda: F.smooth_l1_loss(X32, X32, beta=-1.0), rt.ArgumentValueError,
     "smooth_l1_loss: beta must be >= 0, got -1.0"),
    (lambda: F.huber_loss(X32, X32, delta=0.0), rt.ArgumentValueError,
     "huber_loss: delta must be > 0, got 0.0"),
    (lambda: F.l1_loss([1.0], X32), rt.ArgumentTypeError, "l1_loss: input must be a Tensor, got list"),
    (lambda: F.cosine_similarity(X32, X32[:2]), rt.ShapeError,
     "cosine_similarity: shapes (4, 5) and (2, 5) cannot be broadcast together"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message
