"""The fused attention softmax (``attention_softmax``) behind
scaled_dot_product_attention: values and gradients equal to the primitive composite it replaced
(its decomposition: the same float32 steps, so bit-equal here), NumPy float64 and PyTorch as
oracles, fully masked and NaN rows, finite-difference gradients (float64) incl. the additive
mask's, capture (recorded as the decomposition) and the exact errors.  Tiny shapes; one kernel
specialisation per float dtype (float32, float64)."""
import math

import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import AD, check_grad
from oracle import torch_or_skip
from runtime.ops.attention import _decompose, attention_softmax

F = rt.nn.functional
RNG = np.random.default_rng(11)
S3 = RNG.normal(size=(2, 4, 5)) * 2                  # scores (R, L, S), L < S
BOOL = RNG.random((4, 5)) < 0.6
BOOL[:, 0] = True
ADD = RNG.normal(size=(2, 1, 5))                     # additive, broadcast over L


def _ref(s, scale, causal=False, mask=None, additive=False):
    t = s * scale
    if causal:
        L, S = s.shape[-2:]
        t = np.where(np.arange(L)[:, None] >= np.arange(S), t, -np.inf)
    if mask is not None:
        t = t + mask if additive else np.where(mask, t, -np.inf)
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


CASES = {
    "plain": dict(scale=0.7),
    "causal": dict(scale=0.5, is_causal=True),
    "bool": dict(scale=1.3, mask=BOOL),
    "additive": dict(scale=0.9, mask=ADD),
}


def _args(case, dtype, device=None):
    kw = dict(CASES[case])
    m = kw.pop("mask", None)
    s = rt.tensor(S3, dtype=dtype, device=device)
    if m is not None:
        m = rt.tensor(m, dtype=None if m.dtype == bool else dtype, device=device)
    return s, m, kw


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [rt.float32, rt.float64], ids=lambda d: d.name)
def test_forward_is_the_composite_and_numpy(case, dtype):
    s, m, kw = _args(case, dtype)
    got = attention_softmax(s, m, **kw)
    attrs = {"scale": kw["scale"], "causal": kw.get("is_causal", False), "offset": 0,
             "additive": m is not None and not m.dtype.is_bool}
    assert got.dtype == dtype and got.shape == s.shape
    if dtype is rt.float32 and case in ("causal", "bool"):   # (fewer composite compiles)
        old = _decompose((s,) if m is None else (s, m), attrs)
        np.testing.assert_array_equal(got.numpy(), old.numpy())
    mask = CASES[case].get("mask")
    want = _ref(S3, kw["scale"], kw.get("is_causal", False), mask, attrs["additive"])
    tol = 2e-6 if dtype is rt.float32 else 1e-13
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
    if kw.get("is_causal"):
        assert np.all(got.numpy()[:, np.triu_indices(4, 1, 5)[0], np.triu_indices(4, 1, 5)[1]] == 0)


@pytest.mark.parametrize("case", ["causal"])
def test_gradient_is_the_composites(case):
    s, m, kw = _args(case, rt.float32, AD)
    attrs = {"scale": kw["scale"], "causal": kw.get("is_causal", False), "offset": 0,
             "additive": m is not None and not m.dtype.is_bool}
    w = rt.tensor(RNG.normal(size=S3.shape), dtype=rt.float32, device=AD)
    grads = []
    for fn in (lambda x: attention_softmax(x, m, **kw),
               lambda x: _decompose((x,) if m is None else (x, m), attrs)):
        x = rt.tensor(S3, dtype=rt.float32, device=AD).require_grad()
        grads.append(x.grad(rt.sum(fn(x) * w).backward()).numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("case", ["bool", "additive"])   # (causal: its tests/opinfo.py row)
def test_gradients_vs_finite_differences(case):
    kw = dict(CASES[case])
    m = kw.pop("mask", None)
    if m is None:
        check_grad(lambda x: attention_softmax(x, **kw), S3)
    elif m.dtype == bool:
        check_grad(lambda x: attention_softmax(x, rt.tensor(m, device=x.device), **kw), S3)
    else:                                            # the additive mask's gradient too
        check_grad(lambda x, a: attention_softmax(x, a, **kw), S3, m)


def test_fully_masked_and_nan_rows_are_the_composites():
    # a fully masked row is NaN (softmax of all -inf, as the composite and PyTorch's math
    # backend); its gradient is 0 for a bool mask (the where stops it), NaN for an additive one;
    # a NaN score makes its row NaN, the causal tail included
    s = S3.astype(np.float32)
    bm = BOOL.copy()
    bm[2] = False
    for m in (rt.tensor(bm), rt.tensor(np.where(bm, 0.0, -np.inf).astype(np.float32))):
        out = attention_softmax(rt.tensor(s), m, 0.5).numpy()
        assert np.isnan(out[:, 2]).all() and not np.isnan(out[:, :2]).any()
        ad = rt.autodiff(rt.cpu())
        x = rt.tensor(s, device=ad).require_grad()
        y = attention_softmax(x, rt.tensor(m.numpy(), device=ad), 0.5)
        g = x.grad(rt.sum(rt.where(rt.isnan(y), 0.0, y) * 1.5).backward()).numpy()
        old = _decompose((rt.tensor(s), m), {"scale": 0.5, "causal": False, "offset": 0,
                                             "additive": not m.dtype.is_bool})
        np.testing.assert_array_equal(out, old.numpy())
        if m.dtype.is_bool:
            assert (g[:, 2] == 0).all()
    s[1, 3, 0] = np.nan
    out = attention_softmax(rt.tensor(s), None, 0.5, is_causal=True).numpy()
    assert np.isnan(out[1, 3]).all() and not np.isnan(out[0]).any() and not np.isnan(out[1, :3]).any()


def test_sdpa_runs_one_fused_op_and_hits_the_gemm_views(monkeypatch):
    # matmul -> attention_softmax -> matmul; k^T reaches the kernel set as a strided view
    from jit_kernels import kernel_set_for
    ks = kernel_set_for("cpu")
    seen = []
    q = rt.tensor(RNG.normal(size=(2, 3, 4, 8)), dtype=rt.float32)
    orig = type(ks).matmul

    def spy(self, a, b):
        seen.append(("matmul", b.strides))
        return orig(self, a, b)
    monkeypatch.setattr(type(ks), "matmul", spy)
    orig_sm = type(ks).attention_softmax
    monkeypatch.setattr(type(ks), "attention_softmax",
                        lambda self, *a: seen.append(("attention_softmax",)) or orig_sm(self, *a))
    F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert [e[0] for e in seen] == ["matmul", "attention_softmax", "matmul"]
    assert seen[0][1][1:] == (4, 32)                 # (E, S) read from k's (S, E) in place


def test_sdpa_paths_agree_with_torch():
    torch = torch_or_skip()
    q = RNG.normal(size=(2, 3, 4, 6))
    add = RNG.normal(size=(3, 4, 4))
    for kw, tkw in (({"attn_mask": rt.tensor(add)}, {"attn_mask": torch.tensor(add)}),
                    ({"scale": 2}, {"scale": 2})):
        ts = [rt.tensor(q, device=AD).require_grad() for _ in range(3)]
        out = F.scaled_dot_product_attention(*ts, **kw)
        grads = rt.sum(out * out).backward()
        tt = [torch.tensor(q, requires_grad=True) for _ in range(3)]
        tout = torch.nn.functional.scaled_dot_product_attention(*tt, **tkw)
        (tout * tout).sum().backward()
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
        for t, r in zip(ts, tt):
            np.testing.assert_allclose(t.grad(grads).numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_capture_records_the_decomposition_and_replays():
    s = S3.astype(np.float32)
    graph = rt.capture(lambda x: attention_softmax(x, None, 0.5, is_causal=True), s)
    names = [op.op for op in graph.operations]
    assert "attention_softmax" not in names and "softmax" in names and "where" in names
    (got,) = graph.run(rt.tensor(s))
    np.testing.assert_array_equal(got.numpy(),
                                  attention_softmax(rt.tensor(s), None, 0.5, is_causal=True).numpy())


def test_a_mask_that_widens_the_scores_takes_the_composite():
    q = rt.tensor(RNG.normal(size=(3, 4, 6)), dtype=rt.float32)
    m = rt.tensor(RNG.normal(size=(2, 3, 4, 4)), dtype=rt.float32)   # widens the (3, 4, 4) scores
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=m)
    assert out.shape == (2, 3, 4, 6)
    qn = q.numpy().astype(np.float64)
    t = qn @ np.swapaxes(qn, -1, -2) / math.sqrt(6)
    np.testing.assert_allclose(out.numpy(), _ref(t, 1.0, mask=m.numpy(), additive=True) @ qn,
                               rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: attention_softmax(rt.tensor([1, 2])), rt.DTypeError,
     "attention_softmax: scores must be a float tensor of 2 or more dims, got int64[2]"),
    (lambda: attention_softmax(rt.tensor(S3), rt.tensor(BOOL[:3])), rt.ShapeError,
     "attention_softmax: shapes (2, 4, 5) and (3, 5) cannot be broadcast together"),
    (lambda: attention_softmax(rt.tensor(S3[0]), rt.tensor(BOOL[None].repeat(2, 0))),
     rt.ShapeError, "attention_softmax: mask of shape (2, 4, 5) does not broadcast to the "
                    "scores' shape (4, 5)"),
    (lambda: attention_softmax(rt.tensor(S3), rt.tensor(BOOL.astype(np.int64)), additive=False),
     rt.DTypeError, "attention_softmax: a non-additive mask must be bool, got int64"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


@pytest.mark.parametrize("S", [3, 6, 9])                      # fewer, as many, more keys
def test_causal_halves_are_the_whole(monkeypatch, S):
    # long causal attention runs as two blocks of query rows (the first sees only the first
    # keys); forced here on 6 queries, against the unsplit fused path and PyTorch
    import runtime.nn.functional as FF
    q = RNG.normal(size=(2, 6, 4))
    kv = RNG.normal(size=(2, S, 4))
    res = []
    for split in (4, 0):
        monkeypatch.setattr(FF, "_CAUSAL_SPLIT", split)
        ts = [rt.tensor(a, device=AD).require_grad() for a in (q, kv, kv * 0.5)]
        out = F.scaled_dot_product_attention(*ts, is_causal=True, scale=0.8)
        grads = rt.sum(out * out).backward()
        res.append([out.numpy()] + [t.grad(grads).numpy() for t in ts])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    torch = torch_or_skip()
    tq, tk = torch.tensor(q), torch.tensor(kv)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tk * 0.5, is_causal=True,
                                                            scale=0.8)
    np.testing.assert_allclose(res[0][0], want.numpy(), rtol=1e-12, atol=1e-13)


def test_causal_offset_is_the_decomposition():
    # key j of row i is kept for j <= i + offset; a row that keeps none is NaN (gradient 0)
    s = S3.astype(np.float32)
    for off in (-2, 2):
        attrs = {"scale": 0.5, "causal": True, "offset": off, "additive": False}
        got = attention_softmax(rt.tensor(s), None, 0.5, is_causal=True, offset=off).numpy()
        np.testing.assert_array_equal(got, _decompose((rt.tensor(s),), attrs).numpy())
        ad = rt.autodiff(rt.cpu())
        x = rt.tensor(s, device=ad).require_grad()
        y = attention_softmax(x, None, 0.5, is_causal=True, offset=off)
        g = x.grad(rt.sum(rt.where(rt.isnan(y), 0.0, y) * y).backward()).numpy()
        assert np.isnan(got[:, :2]).all() == (off == -2) and np.isfinite(g).all()


def test_gqa_repeats_key_value_heads_as_torch():
    # 4 query heads over 2 key heads and 1 value head (each divides 4), causal; values and
    # gradients against PyTorch's enable_gqa, then captured and replayed
    torch = torch_or_skip()
    q, k, v = RNG.normal(size=(2, 4, 3, 6)), RNG.normal(size=(2, 2, 5, 6)), RNG.normal(size=(2, 1, 5, 6))
    ts = [rt.tensor(a, device=AD).require_grad() for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, is_causal=True, enable_gqa=True)
    assert out.shape == (2, 4, 3, 6)
    grads = rt.sum(out * out).backward()
    tt = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    tout = torch.nn.functional.scaled_dot_product_attention(*tt, is_causal=True, enable_gqa=True)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    for t, r in zip(ts, tt):
        np.testing.assert_allclose(t.grad(grads).numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-11)
    # a key head shared by query heads 0 and 1 differs from one repeated by tile (0 and 2)
    k2 = np.concatenate([k[:, :1], k[:, :1] + 1.0], axis=1)
    got = F.scaled_dot_product_attention(rt.tensor(q), rt.tensor(k2), rt.tensor(v), enable_gqa=True)
    want = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k2), torch.tensor(v), enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    arrs = [a.astype(np.float32) for a in (q, k, v)]
    graph = rt.capture(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=True), *arrs)
    (replayed,) = graph.run(*[rt.tensor(a) for a in arrs])
    eager = F.scaled_dot_product_attention(*[rt.tensor(a) for a in arrs], enable_gqa=True)
    np.testing.assert_allclose(replayed.numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shapes, gqa, exc, message", [
    (((2, 4, 3, 6), (2, 3, 5, 6), (2, 3, 5, 6)), True, rt.ShapeError,
     "scaled_dot_product_attention: the number of heads in key (3) and value (3) must divide "
     "the number of heads in query (4)"),
    (((2, 4, 3, 6), (2, 2, 5, 6), (2, 4, 5, 6)), False, rt.ShapeError,
     "scaled_dot_product_attention: query has 4 heads (dim -3) and key 2 (shapes (2, 4, 3, 6) "
     "and (2, 2, 5, 6)); pass enable_gqa=True to share key/value heads across groups of query "
     "heads"),
    (((3, 6), (5, 6), (5, 6)), True, rt.errors.AxisError,
     "scaled_dot_product_attention: enable_gqa needs a heads dimension (-3): query, key and "
     "value of 3 or more dims, got shapes (3, 6), (5, 6), (5, 6)"),
])
def test_gqa_errors(shapes, gqa, exc, message):
    args = [rt.zeros(*s) for s in shapes]
    with pytest.raises(exc) as info:
        F.scaled_dot_product_attention(*args, enable_gqa=gqa)
    assert str(info.value) == message
    torch = torch_or_skip()       # PyTorch refuses the same inputs
    with pytest.raises((RuntimeError, IndexError)):
        torch.nn.functional.scaled_dot_product_attention(*[torch.zeros(s) for s in shapes],
                                                         enable_gqa=gqa)
