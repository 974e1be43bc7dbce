"""The fused attention softmax on the cuda kernel set (one thread per row; tiny
shapes under the simulator): the cpu set's values for the causal, bool and additive cases, its
gradient, and scaled_dot_product_attention end to end."""
import numpy as np
import pytest

import runtime as rt
from runtime.ops.attention import attention_softmax

RNG = np.random.default_rng(5)
S = RNG.normal(size=(2, 3, 4)).astype(np.float32)          # 6 rows
BOOL = RNG.random((3, 4)) < 0.6
BOOL[1] = False                                             # a fully masked row: NaN
ADD = RNG.normal(size=(2, 1, 4)).astype(np.float32)


@pytest.mark.parametrize("case", ["causal", "bool", "additive"])
def test_attention_softmax_matches_cpu(cuda_dev, case):
    mask, kw = {"causal": (None, {"is_causal": True}), "bool": (BOOL, {}),
                "additive": (ADD, {})}[case]
    outs, grads = [], []
    for dev in (rt.cpu(), cuda_dev):
        ad = rt.autodiff(dev)
        x = rt.tensor(S, device=ad).require_grad()
        m = None if mask is None else rt.tensor(mask, device=ad)
        y = attention_softmax(x, m, 0.7, **kw)
        w = rt.tensor(np.where(np.isnan(y.numpy()), 0, 1).astype(np.float32), device=ad)
        grads.append(x.grad(rt.sum(rt.where(rt.isnan(y), 0.0, y) * w).backward()).numpy())
        outs.append(y.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6, equal_nan=True)
    if case == "bool":
        assert np.isnan(outs[1][:, 1]).all()


@pytest.mark.parametrize("split", [0, 2])          # 2: the two causal halves (offset 1)
def test_sdpa_on_cuda(cuda_dev, monkeypatch, split):
    import runtime.nn.functional as F
    monkeypatch.setattr(F, "_CAUSAL_SPLIT", split)
    q = RNG.normal(size=(1, 2, 3, 4)).astype(np.float32)
    got = F.scaled_dot_product_attention(*(rt.tensor(q, device=cuda_dev),) * 3, is_causal=True)
    monkeypatch.setattr(F, "_CAUSAL_SPLIT", 0)
    want = F.scaled_dot_product_attention(*(rt.tensor(q),) * 3, is_causal=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
