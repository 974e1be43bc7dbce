"""``TransformerDecoderLayer``, ``TransformerEncoder``, ``TransformerDecoder`` and
``Transformer``: PyTorch's arguments, parameter names and init, so a torch state dict loads one
to one, and PyTorch's masks (bool: True is left out; float: added to the scores)."""
from __future__ import annotations

import copy

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ArgumentValueError, ShapeError
from ..ops import api
from ..tensor import Tensor
from . import init
from .attention import (MultiheadAttention, TransformerEncoderLayer, activation_fn, block_args,
                        check_attention_inputs)
from .linear import Dropout, Linear
from .module import Module, ModuleList
from .normalization import LayerNorm

__all__ = ["TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder", "Transformer"]


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory`` (the encoder's output) and a feed-forward
    block, each with dropout, a residual connection and layer norm (after, or before with
    ``norm_first``), as PyTorch's layer."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 dtype=None, device=None):
        super().__init__()
        block_args("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout,
                   layer_norm_eps, bias, batch_first, norm_first, dtype, device)
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1, self.dropout2, self.dropout3 = (Dropout(dropout), Dropout(dropout),
                                                       Dropout(dropout))
        self.activation = activation_fn("TransformerDecoderLayer", activation)

    def _sa(self, x, mask, kpm, is_causal):
        y = self.self_attn(x, x, x, key_padding_mask=kpm, need_weights=False, attn_mask=mask,
                           is_causal=is_causal)[0]
        return self.dropout1(y)

    def _mha(self, x, mem, mask, kpm, is_causal):
        y = self.multihead_attn(x, mem, mem, key_padding_mask=kpm, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)[0]
        return self.dropout2(y)

    def _ff(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def check(self, op, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
              memory_key_padding_mask):
        """Validate one decoder call's inputs (``op`` names the caller in the messages)."""
        sa = self.self_attn
        check_attention_inputs(op, tgt, "tgt", tgt, "tgt", sa.embed_dim, sa.num_heads,
                               sa.batch_first, tgt_mask, "tgt_mask", tgt_key_padding_mask,
                               "tgt_key_padding_mask")
        check_attention_inputs(op, tgt, "tgt", memory, "memory", sa.embed_dim, sa.num_heads,
                               sa.batch_first, memory_mask, "memory_mask",
                               memory_key_padding_mask, "memory_key_padding_mask")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        """``tgt`` attended by itself (``tgt_mask``; ``tgt_is_causal`` with no mask applies
        the causal one) and over ``memory`` (``memory_mask``)."""
        self.check("TransformerDecoderLayer", tgt, memory, tgt_mask, memory_mask,
                   tgt_key_padding_mask, memory_key_padding_mask)
        return self._forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                             memory_key_padding_mask, bool(tgt_is_causal), bool(memory_is_causal))

    def _forward(self, x, mem, tgt_mask, memory_mask, tgt_kpm, mem_kpm, tgt_causal, mem_causal):
        if self.norm_first:
            x = api.add(x, self._sa(self.norm1(x), tgt_mask, tgt_kpm, tgt_causal))
            x = api.add(x, self._mha(self.norm2(x), mem, memory_mask, mem_kpm, mem_causal))
            return api.add(x, self._ff(self.norm3(x)))
        x = self.norm1(api.add(x, self._sa(x, tgt_mask, tgt_kpm, tgt_causal)))
        x = self.norm2(api.add(x, self._mha(x, mem, memory_mask, mem_kpm, mem_causal)))
        return self.norm3(api.add(x, self._ff(x)))


def _clones(op: str, layer, kind, num_layers) -> ModuleList:
    if not isinstance(layer, kind):
        raise ArgumentTypeError(f"{op}: expected a {kind.__name__}, got {type(layer).__name__}")
    if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers < 1:
        raise ArgumentValueError(f"{op}: num_layers must be a positive int, got {num_layers!r}")
    # independent copies with the same initial values, as PyTorch's deep copies
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (same initial values) applied in turn, then
    ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = _clones("TransformerEncoder", encoder_layer, TransformerEncoderLayer,
                              num_layers)
        self.num_layers = num_layers
        self.norm = norm
        # (accepted for PyTorch's signature: padded batches are never packed here)
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def check(self, op, src, mask, src_key_padding_mask):
        """Validate one encoder call's inputs (``op`` names the caller in the messages)."""
        sa = self.layers[0].self_attn
        check_attention_inputs(op, src, "src", src, "src", sa.embed_dim, sa.num_heads,
                               sa.batch_first, mask, "mask", src_key_padding_mask,
                               "src_key_padding_mask")

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        """``src`` through every layer (``mask``, ``src_key_padding_mask`` and the
        ``is_causal`` hint passed to each), then ``norm``."""
        self.check("TransformerEncoder", src, mask, src_key_padding_mask)
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` (same initial values) applied in turn, each
    attending over ``memory``, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None):
        super().__init__()
        self.layers = _clones("TransformerDecoder", decoder_layer, TransformerDecoderLayer,
                              num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        """``tgt`` through every layer with ``memory`` and the masks, then ``norm``."""
        self.layers[0].check("TransformerDecoder", tgt, memory, tgt_mask, memory_mask,
                             tgt_key_padding_mask, memory_key_padding_mask)
        out = tgt
        for layer in self.layers:
            out = layer._forward(out, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                 memory_key_padding_mask, bool(tgt_is_causal),
                                 bool(memory_is_causal))
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """PyTorch's encoder-decoder transformer: ``encoder`` (a ``TransformerEncoder`` with a
    final ``LayerNorm``) over ``src``, ``decoder`` (likewise) over ``tgt`` and the encoder's
    output; every parameter of two or more dimensions Xavier-uniform initialised."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, dtype=None, device=None):
        super().__init__()
        block_args("Transformer", d_model, nhead, dim_feedforward, dropout, layer_norm_eps, bias,
                   batch_first, norm_first, dtype, device)
        kw = {"dtype": dtype, "device": device}
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if len(p.shape) > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        """The decoder's output over ``tgt`` (shape of ``tgt``) given ``src``."""
        for name, t in (("src", src), ("tgt", tgt)):
            if not isinstance(t, Tensor):
                raise ArgumentTypeError(f"Transformer: {name} must be a Tensor, got "
                                        f"{type(t).__name__}")
        if src.ndim == 3 and tgt.ndim == 3:
            b = 0 if self.batch_first else 1
            if src.shape[b] != tgt.shape[b]:
                raise ShapeError(f"Transformer: the batch number of src and tgt must be equal, "
                                 f"got shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src and tgt must be equal to "
                             f"d_model ({self.d_model}), got shapes {tuple(src.shape)} and "
                             f"{tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) causal float mask: -inf above the diagonal, 0 elsewhere."""
        if not isinstance(sz, int) or isinstance(sz, bool) or sz < 0:
            raise ArgumentValueError(f"Transformer.generate_square_subsequent_mask: sz must be a "
                                     f"non-negative int, got {sz!r}")
        dt = D.as_dtype(dtype) if dtype is not None else D.float32
        return api.triu(api.full((sz, sz), float("-inf"), dt, device), diagonal=1)
