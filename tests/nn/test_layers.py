"""rt.nn layers: outputs and gradients against PyTorch's layers with the same weights (where
torch is installed), BatchNorm's running statistics and PyTorch's default init statistics
against NumPy."""
import math

import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
from oracle import torch_or_skip

AD = rt.autodiff(rt.cpu())
RNG = np.random.default_rng(11)


def _copy_into_torch(ours, theirs, torch):
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()}
    missing, unexpected = theirs.load_state_dict(sd, strict=False)
    assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing), (missing, unexpected)


def _compare(ours, theirs, torch, *inputs, grad=True, rtol=1e-4, atol=1e-5, train=False):
    """Same weights, same inputs: outputs equal; with ``grad``, the gradients of sum(out * w)
    w.r.t. every parameter and the first input too."""
    _copy_into_torch(ours, theirs, torch)
    ours.train(train)
    theirs.train(train)
    ours.to(AD)
    xs = [rt.tensor(x).to(AD) for x in inputs]
    if grad:
        xs[0] = xs[0].require_grad()
    txs = [torch.from_numpy(x) for x in inputs]
    if grad:
        txs[0].requires_grad_(True)
    out = ours(*xs)
    tout = theirs(*txs)
    out, tout = (out[0], tout[0]) if isinstance(out, tuple) else (out, tout)
    np.testing.assert_allclose(out.inner().numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    if not grad:
        return
    w = RNG.normal(size=out.shape).astype(np.float32)
    g = rt.sum(out * rt.tensor(w).to(AD)).backward()
    (tout * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(xs[0].grad(g).numpy(), txs[0].grad.numpy(), rtol=rtol, atol=atol)
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad(g).numpy(), tparams[name].grad.numpy(), rtol=rtol,
                                   atol=atol, err_msg=name)


def f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


LAYERS = [
    ("Linear", lambda m: m.Linear(5, 3), [(4, 5)]),
    ("Conv1d", lambda m: m.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    ("Conv2d", lambda m: m.Conv2d(4, 6, 3, padding=1, groups=2), [(2, 4, 6, 6)]),
    ("ConvTranspose2d", lambda m: m.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
     [(2, 3, 4, 4)]),
    ("MaxPool2d", lambda m: m.MaxPool2d(2), [(2, 3, 6, 6)]),
    ("AvgPool2d", lambda m: m.AvgPool2d(3, stride=2, padding=1), [(2, 3, 7, 7)]),
    ("AdaptiveAvgPool2d", lambda m: m.AdaptiveAvgPool2d((2, 3)), [(2, 3, 7, 8)]),
    ("LayerNorm", lambda m: m.LayerNorm(6), [(3, 4, 6)]),
    ("GroupNorm", lambda m: m.GroupNorm(2, 4), [(3, 4, 5)]),
    ("RMSNorm", lambda m: m.RMSNorm([4, 5], eps=1e-6), [(3, 4, 5)]),
    ("BatchNorm1d", lambda m: m.BatchNorm1d(4), [(8, 4)]),
    ("BatchNorm2d", lambda m: m.BatchNorm2d(3), [(4, 3, 5, 5)]),
    ("Flatten", lambda m: m.Flatten(), [(2, 3, 4)]),
    ("ELU", lambda m: m.ELU(0.5), [(3, 4)]),
    ("LeakyReLU", lambda m: m.LeakyReLU(0.2), [(3, 4)]),
    ("Hardtanh", lambda m: m.Hardtanh(-0.5, 0.5), [(3, 4)]),
    ("GELU", lambda m: m.GELU("tanh"), [(3, 4)]),
    ("Softplus", lambda m: m.Softplus(2.0, 5.0), [(3, 4)]),
    ("Softmax", lambda m: m.Softmax(dim=0), [(3, 4)]),
    ("LogSoftmax", lambda m: m.LogSoftmax(dim=1), [(3, 4)]),
    ("GLU", lambda m: m.GLU(-1), [(3, 4)]),
    ("Sequential", lambda m: m.Sequential(m.Linear(4, 3), m.SiLU(), m.Linear(3, 2), m.Tanh()), [(5, 4)]),
]


# every layer in train mode; in eval mode too those whose eval differs or that are checked there
EVAL_TOO = ("BatchNorm1d", "BatchNorm2d", "Linear", "Conv2d")
LAYER_MODES = ([pytest.param(*x, False, id=f"eval-{x[0]}") for x in LAYERS if x[0] in EVAL_TOO]
               + [pytest.param(*x, True, id=f"train-{x[0]}") for x in LAYERS])


@pytest.mark.parametrize("name,make,shapes,train", LAYER_MODES)
def test_layer_matches_torch(name, make, shapes, train):
    torch = torch_or_skip()
    torch.manual_seed(0)
    _compare(make(nn), make(torch.nn), torch, *[f32(*s) for s in shapes], train=train)


def test_embedding_matches_torch():
    torch = torch_or_skip()
    ours, theirs = nn.Embedding(7, 3, padding_idx=2), torch.nn.Embedding(7, 3, padding_idx=2)
    assert np.all(ours.weight.numpy()[2] == 0)
    _copy_into_torch(ours, theirs, torch)
    ours.to(AD)
    idx = np.array([[0, 2, 6], [2, 2, 1]])
    out = ours(rt.tensor(idx).to(AD))
    tout = theirs(torch.from_numpy(idx))
    np.testing.assert_allclose(out.inner().numpy(), tout.detach().numpy())
    g = rt.sum(out * out).backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(ours._parameters["weight"].grad(g).numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-5)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(batch_first):
    torch = torch_or_skip()
    ours = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    _copy_into_torch(ours, theirs, torch)
    ours.to(AD)
    shape = (2, 5, 8) if batch_first else (5, 2, 8)
    q, k = f32(*shape), f32(*shape)
    mask = np.triu(np.ones((5, 5), bool), 1)
    out, w = ours(rt.tensor(q).to(AD), rt.tensor(k).to(AD), rt.tensor(k).to(AD),
                  attn_mask=rt.tensor(mask).to(AD))
    tout, tw = theirs(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(k),
                      attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out.inner().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.inner().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rt.sum(out).backward()
    tout.sum().backward()
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad(g).numpy(), tparams[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


# (attn_mask kind, key_padding_mask kind, is_causal): every combination runs the fused
# attention softmax (PyTorch's "True is left out" bool masks turned into its "True takes part")
MHA_MASKS = [(None, "bool", False), ("float", "bool", False), ("bool3", "float", False),
             ("bool", "bool", False), (None, None, True), (None, "bool", True)]


@pytest.mark.parametrize("am, kpm, causal", MHA_MASKS)
def test_multihead_attention_masks_match_torch(monkeypatch, am, kpm, causal):
    torch = torch_or_skip()
    from runtime.ops import api
    monkeypatch.setattr(api, "softmax", None)  # (the composite softmax is not reached)
    rng = np.random.default_rng(3)
    ours = nn.MultiheadAttention(8, 2, batch_first=True)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    _copy_into_torch(ours, theirs, torch)
    ours.to(AD)
    q, k = f32(2, 4, 8), f32(2, 5, 8)
    if causal:
        k = q
    S = k.shape[1]
    masks = {"bool": np.triu(np.ones((4, S), bool), 2), "float": rng.standard_normal((4, S)).astype(np.float32),
             "bool3": rng.random((4, 4, S)) < 0.3}
    kpms = {"bool": np.array([[False] * (S - 1) + [True], [False] * (S - 2) + [True, False]]),
            "float": rng.standard_normal((2, S)).astype(np.float32)}
    a = masks.get(am)
    p = kpms.get(kpm)
    kw = {}
    tkw = {}
    if a is not None:
        kw["attn_mask"], tkw["attn_mask"] = rt.tensor(a).to(AD), torch.from_numpy(a)
    if p is not None:
        kw["key_padding_mask"], tkw["key_padding_mask"] = rt.tensor(p).to(AD), torch.from_numpy(p)
    if causal:
        kw["is_causal"] = True
        tkw["attn_mask"] = torch.from_numpy(np.triu(np.ones((4, S), bool), 1))
    out, w = ours(rt.tensor(q).to(AD), rt.tensor(k).to(AD), rt.tensor(k).to(AD), **kw)
    tout, tw = theirs(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(k), **tkw)
    np.testing.assert_allclose(out.inner().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.inner().numpy(), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rt.sum(out).backward()
    tout.sum().backward()
    tparams = dict(theirs.named_parameters())
    for name, prm in ours.named_parameters():
        np.testing.assert_allclose(prm.grad(g).numpy(), tparams[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_transformer_encoder_layer_matches_torch():
    torch = torch_or_skip()
    for norm_first in (False, True):
        ours = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                          norm_first=norm_first)
        theirs = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                                  batch_first=True, norm_first=norm_first)
        _compare(ours, theirs, torch, f32(2, 5, 8), train=True)


def test_batchnorm_running_statistics_follow_pytorchs_update():
    bn = nn.BatchNorm2d(3, momentum=0.2)
    xs = [f32(4, 3, 2, 2) * 3 + 1 for _ in range(3)]
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        y = bn(rt.tensor(x)).numpy()
        m, v = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        n = x.size / 3
        np.testing.assert_allclose(y, (x - m[None, :, None, None]) / np.sqrt(v[None, :, None, None] + 1e-5),
                                   rtol=1e-4, atol=1e-5)
        mean, var = 0.8 * mean + 0.2 * m, 0.8 * var + 0.2 * v * n / (n - 1)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = f32(2, 3, 2, 2)
    expect = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(bn(rt.tensor(x)).numpy(), expect, rtol=1e-4, atol=1e-5)
    with pytest.raises(rt.errors.ShapeError, match=r"BatchNorm2d: expected 3 channels \(dimension 1\), "
                                                   r"got input of shape \(2, 4, 2, 2\)"):
        bn(rt.zeros(2, 4, 2, 2))


def test_default_init_has_pytorchs_bounds():
    rt.manual_seed(0)
    lin = nn.Linear(400, 300)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(b).max() <= bound
    conv = nn.Conv2d(8, 16, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.numpy()).max() <= cb
    w = nn.init.xavier_normal_(nn.Parameter(rt.zeros(200, 300)))
    assert abs(w.numpy().std() - math.sqrt(2 / 500)) < 0.005
    k = nn.init.kaiming_normal_(rt.zeros(300, 200), nonlinearity="relu")
    assert isinstance(k, rt.Tensor) and abs(k.numpy().std() - math.sqrt(2 / 200)) < 0.005


def test_dropout_layers_respect_the_mode():
    d = nn.Dropout(0.5)
    x = rt.ones(1000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    d.eval()
    assert np.array_equal(d(x).numpy(), x.numpy())
