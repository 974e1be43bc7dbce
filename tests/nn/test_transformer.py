"""rt.nn transformer stacks against PyTorch's: a torch state dict loads one to one, outputs
match in eval mode (post- and pre-norm, batch-first or not, causal and key padding masks),
gradients match in training mode with dropout 0; typed errors for bad inputs."""
import warnings

import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
from oracle import needs_torch, torch
from runtime.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError

AD = rt.autodiff(rt.cpu())
RNG = np.random.default_rng(5)
E, H, FF = 8, 2, 12          # d_model, nhead, dim_feedforward
# (torch's notice when a bool padding mask meets a float attention mask)
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched")


def f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _torch_model(make):
    with warnings.catch_warnings():     # (torch's nested-tensor fast-path notice)
        warnings.simplefilter("ignore")
        return make(torch.nn)


def _load_from_torch(ours, theirs):
    """``theirs``' state dict into ``ours``: the same keys, one to one."""
    sd = theirs.state_dict()
    assert list(ours.state_dict()) == list(sd)
    ours.load_state_dict({k: rt.tensor(v.detach().numpy().copy()) for k, v in sd.items()})


def _rt(x, dev=None):
    t = rt.tensor(x)
    return t if dev is None else t.to(dev)


def _t(x):
    return torch.from_numpy(x)


def _close(got, want, rtol=1e-4, atol=1e-5):
    g = got.inner().numpy() if got.device.family == "autodiff" else got.numpy()
    np.testing.assert_allclose(g, want.detach().numpy(), rtol=rtol, atol=atol)


def _kpm(n, s):
    """A key padding mask leaving the last position (or the last two) of each row out."""
    m = np.zeros((n, s), bool)
    m[0, -1] = True
    m[1, -2:] = True
    return m


@needs_torch
def test_square_subsequent_mask_is_pytorchs():
    ours = nn.Transformer.generate_square_subsequent_mask(4)
    assert ours.dtype is rt.float32
    np.testing.assert_array_equal(ours.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=rt.float64).dtype is rt.float64


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_matches_torch(norm_first, batch_first):
    def make(m):
        return m.TransformerDecoderLayer(E, H, FF, dropout=0.1, batch_first=batch_first,
                                         norm_first=norm_first)
    theirs = _torch_model(make).eval()
    ours = make(nn).eval()
    _load_from_torch(ours, theirs)
    n, t, s = 2, 4, 5
    tgt, mem = (f32(n, t, E), f32(n, s, E)) if batch_first else (f32(t, n, E), f32(s, n, E))
    causal = np.triu(np.ones((t, t), bool), 1)
    tkpm, mkpm = _kpm(n, t), _kpm(n, s)
    out = ours(_rt(tgt), _rt(mem), tgt_mask=_rt(causal), tgt_key_padding_mask=_rt(tkpm),
               memory_key_padding_mask=_rt(mkpm), tgt_is_causal=True)
    want = theirs(_t(tgt), _t(mem), tgt_mask=_t(causal), tgt_key_padding_mask=_t(tkpm),
                  memory_key_padding_mask=_t(mkpm), tgt_is_causal=True)
    _close(out, want)
    # a float memory mask, no hint
    mm = f32(t, s)
    _close(ours(_rt(tgt), _rt(mem), memory_mask=_rt(mm)),
           theirs(_t(tgt), _t(mem), memory_mask=_t(mm)))


@needs_torch
def test_decoder_layer_causal_hint_without_a_mask_applies_the_causal_mask():
    # PyTorch refuses the hint without a mask; here it stands for the causal mask
    layer = nn.TransformerDecoderLayer(E, H, FF, dropout=0.0).eval()
    tgt, mem = _rt(f32(4, 2, E)), _rt(f32(3, 2, E))
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_allclose(layer(tgt, mem, tgt_is_causal=True).numpy(),
                               layer(tgt, mem, tgt_mask=mask).numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_matches_torch(norm_first):
    def make(m):
        layer = m.TransformerEncoderLayer(E, H, FF, batch_first=True, norm_first=norm_first,
                                          activation="gelu")
        return m.TransformerEncoder(layer, 2, norm=m.LayerNorm(E))
    theirs = _torch_model(make).eval()
    ours = make(nn).eval()
    _load_from_torch(ours, theirs)
    src, fmask, kpm = f32(2, 5, E), f32(5, 5), _kpm(2, 5)
    _close(ours(_rt(src), mask=_rt(fmask), src_key_padding_mask=_rt(kpm)),
           theirs(_t(src), mask=_t(fmask), src_key_padding_mask=_t(kpm)))
    # unbatched, a causal float mask detected by torch and hinted here
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5).numpy()
    _close(ours(_rt(src[0]), mask=_rt(causal), is_causal=True),
           theirs(_t(src[0]), mask=_t(causal)))


@needs_torch
@pytest.mark.parametrize("norm_first, batch_first", [(False, False), (True, True)])
def test_transformer_matches_torch(norm_first, batch_first):
    def make(m):
        return m.Transformer(E, H, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=FF,
                             batch_first=batch_first, norm_first=norm_first)
    theirs = _torch_model(make).eval()
    ours = make(nn).eval()
    _load_from_torch(ours, theirs)
    n, s, t = 2, 5, 4
    src, tgt = (f32(n, s, E), f32(n, t, E)) if batch_first else (f32(s, n, E), f32(t, n, E))
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(t).numpy()
    skpm, tkpm = _kpm(n, s), _kpm(n, t)
    kw = dict(tgt_mask=tmask, src_key_padding_mask=skpm, tgt_key_padding_mask=tkpm,
              memory_key_padding_mask=skpm)
    out = ours(_rt(src), _rt(tgt), **{k: _rt(v) for k, v in kw.items()}, tgt_is_causal=True)
    want = theirs(_t(src), _t(tgt), **{k: _t(v) for k, v in kw.items()}, tgt_is_causal=True)
    assert out.shape == tgt.shape
    _close(out, want)


@needs_torch
def test_transformer_gradients_match_torch_in_training_mode():
    def make(m):
        return m.Transformer(E, H, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=FF,
                             dropout=0.0, batch_first=True)
    theirs = _torch_model(make).train()
    ours = make(nn).train()
    _load_from_torch(ours, theirs)
    ours.to(AD)
    src, tgt, w = f32(2, 5, E), f32(2, 3, E), f32(2, 3, E)
    tmask = np.triu(np.ones((3, 3), bool), 1)
    skpm = _kpm(2, 5)
    out = ours(_rt(src, AD), _rt(tgt, AD), tgt_mask=_rt(tmask, AD),
               memory_key_padding_mask=_rt(skpm, AD))
    tout = theirs(_t(src), _t(tgt), tgt_mask=_t(tmask), memory_key_padding_mask=_t(skpm))
    _close(out, tout)
    g = rt.sum(out * _rt(w, AD)).backward()
    (tout * _t(w)).sum().backward()
    tparams = dict(theirs.named_parameters())
    ps = dict(ours.named_parameters())
    for name in ("encoder.layers.0.self_attn.in_proj_weight", "encoder.norm.weight",
                 "decoder.layers.0.multihead_attn.in_proj_weight",
                 "decoder.layers.0.self_attn.out_proj.bias", "decoder.layers.0.linear1.weight",
                 "decoder.layers.0.norm3.bias"):
        np.testing.assert_allclose(ps[name].grad(g).numpy(), tparams[name].grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_stacks_copy_the_layer_and_transformer_inits_xavier():
    layer = nn.TransformerDecoderLayer(E, H, FF)
    dec = nn.TransformerDecoder(layer, 2)
    a, b = dec.layers[0].linear1, dec.layers[1].linear1
    assert a is not b and a is not layer.linear1
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    rt.manual_seed(0)
    model = nn.Transformer(E, H, 1, 1, FF, bias=False)
    assert "encoder.norm.bias" not in model.state_dict()
    w = model.decoder.layers[0].linear1.weight.numpy()          # (FF, E), xavier bound
    bound = np.sqrt(6 / (E + FF))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound


BAD = [
    (lambda d, x, m: d(x, m, tgt_mask=rt.zeros(4, 4, dtype=rt.int64)), DTypeError,
     "TransformerDecoderLayer: tgt_mask must be bool or float, got int64"),
    (lambda d, x, m: d(x, m, tgt_mask=rt.zeros(3, 3)), ShapeError,
     "TransformerDecoderLayer: tgt_mask must have shape (4, 4) or (4, 4, 4), got (3, 3)"),
    (lambda d, x, m: d(x, m, memory_mask=rt.zeros(4, 4)), ShapeError,
     "TransformerDecoderLayer: memory_mask must have shape (4, 5) or (4, 4, 5), got (4, 4)"),
    (lambda d, x, m: d(x, m, memory_key_padding_mask=rt.zeros(2, 4, dtype=rt.bool_)), ShapeError,
     "TransformerDecoderLayer: memory_key_padding_mask must have shape (2, 5), got (2, 4)"),
    (lambda d, x, m: d(x, m, tgt_key_padding_mask=rt.zeros(2, 4, dtype=rt.int32)), DTypeError,
     "TransformerDecoderLayer: tgt_key_padding_mask must be bool or float, got int32"),
    (lambda d, x, m: d(x, rt.zeros(5, 3, E)), ShapeError,
     "TransformerDecoderLayer: tgt and memory must have the same batch size, got shapes "
     "(4, 2, 8) and (5, 3, 8)"),
    (lambda d, x, m: d(x, rt.zeros(5, E)), ShapeError,
     "TransformerDecoderLayer: tgt and memory must both be batched (3-D) or both unbatched "
     "(2-D), got shapes (4, 2, 8) and (5, 8)"),
    (lambda d, x, m: d(rt.zeros(4, 2, 6), m), ShapeError,
     "TransformerDecoderLayer: expected d_model 8 as the last dimension of tgt, got shape "
     "(4, 2, 6)"),
    (lambda d, x, m: d(rt.zeros(2, 4, 2, E), m), ShapeError,
     "TransformerDecoderLayer: tgt must be 2-D (L, E) or 3-D, got shape (2, 4, 2, 8)"),
]


@pytest.mark.parametrize("call, err, msg", BAD)
def test_decoder_layer_bad_inputs(call, err, msg):
    layer = nn.TransformerDecoderLayer(E, H, FF)
    with pytest.raises(err) as info:
        call(layer, rt.zeros(4, 2, E), rt.zeros(5, 2, E))
    assert str(info.value) == msg


def test_stack_and_transformer_bad_inputs():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, batch_first=True), 1)
    with pytest.raises(ShapeError) as info:
        enc(rt.zeros(2, 5, E), src_key_padding_mask=rt.zeros(5, 2, dtype=rt.bool_))
    assert str(info.value) == ("TransformerEncoder: src_key_padding_mask must have shape (2, 5), "
                               "got (5, 2)")
    with pytest.raises(ShapeError) as info:
        enc.layers[0](rt.zeros(2, 5, E), src_mask=rt.zeros(2, 5, 5))
    assert str(info.value) == ("TransformerEncoderLayer: src_mask must have shape (5, 5) or "
                               "(4, 5, 5), got (2, 5, 5)")
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 1)
    with pytest.raises(DTypeError) as info:
        dec(rt.zeros(4, 2, E), rt.zeros(5, 2, E), memory_mask=rt.zeros(4, 5, dtype=rt.int64))
    assert str(info.value) == "TransformerDecoder: memory_mask must be bool or float, got int64"
    model = nn.Transformer(E, H, 1, 1, FF)
    with pytest.raises(ShapeError) as info:
        model(rt.zeros(5, 2, E), rt.zeros(4, 3, E))
    assert str(info.value) == ("Transformer: the batch number of src and tgt must be equal, got "
                               "shapes (5, 2, 8) and (4, 3, 8)")
    with pytest.raises(ShapeError) as info:
        model(rt.zeros(5, 2, E), rt.zeros(4, 2, 6))
    assert str(info.value) == ("Transformer: the feature number of src and tgt must be equal to "
                               "d_model (8), got shapes (5, 2, 8) and (4, 2, 6)")


def test_bad_constructor_arguments():
    with pytest.raises(ArgumentValueError) as info:
        nn.TransformerDecoderLayer(E, H, activation="tanh")
    assert str(info.value) == "TransformerDecoderLayer: activation should be relu or gelu, not 'tanh'"
    with pytest.raises(ArgumentTypeError) as info:
        nn.TransformerDecoderLayer(E, H, activation=3)
    assert str(info.value) == ("TransformerDecoderLayer: activation should be 'relu', 'gelu' or a "
                               "callable, got int")
    with pytest.raises(ArgumentTypeError) as info:
        nn.TransformerDecoder(nn.Linear(E, E), 2)
    assert str(info.value) == "TransformerDecoder: expected a TransformerDecoderLayer, got Linear"
    with pytest.raises(ArgumentValueError) as info:
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 0)
    assert str(info.value) == "TransformerEncoder: num_layers must be a positive int, got 0"
    with pytest.raises(ArgumentValueError) as info:
        nn.Transformer.generate_square_subsequent_mask(-1)
    assert str(info.value) == ("Transformer.generate_square_subsequent_mask: sz must be a "
                               "non-negative int, got -1")


def test_callable_activation():
    layer = nn.TransformerDecoderLayer(E, H, FF, dropout=0.0, activation=rt.tanh).eval()
    ref = nn.TransformerDecoderLayer(E, H, FF, dropout=0.0).eval()
    ref.load_state_dict(layer.state_dict())
    x, m = _rt(f32(3, 2, E)), _rt(f32(4, 2, E))
    assert not np.allclose(layer(x, m).numpy(), ref(x, m).numpy())
    ref.activation = rt.tanh
    np.testing.assert_allclose(layer(x, m).numpy(), ref(x, m).numpy())
