"""``MultiheadAttention`` and ``TransformerEncoderLayer`` (PyTorch's arguments, parameter
names and init, so their state dicts load into one another)."""
from __future__ import annotations

import math

from ..core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..ops import api
from ..tensor import Tensor
from . import functional as F, init
from ._make import bool_arg, factory, float_arg, probability_arg, size_arg
from .linear import Dropout, Linear
from .module import Module, Parameter
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer"]


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads``; inputs (L, N, E), or
    (N, L, E) with ``batch_first``, or unbatched (L, E).  Masks as PyTorch's module takes them:
    a bool ``attn_mask``/``key_padding_mask`` is True where attention is *not* allowed, a float
    one is added to the scores.  Returns ``(output, weights)`` (weights averaged over heads
    unless ``average_attn_weights=False``; None unless ``need_weights``)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, dtype=None, device=None):
        super().__init__()
        embed_dim = size_arg("MultiheadAttention", "embed_dim", embed_dim)
        num_heads = size_arg("MultiheadAttention", "num_heads", num_heads)
        if num_heads <= 0 or embed_dim % num_heads:
            raise ArgumentValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be "
                                     f"divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.head_dim = self.embed_dim // self.num_heads
        bias = bool_arg("MultiheadAttention", "bias", bias)
        self.dropout = probability_arg("MultiheadAttention", "dropout", dropout)
        self.batch_first = bool_arg("MultiheadAttention", "batch_first", batch_first)
        make = factory(dtype, device, type(self).__name__)
        self.in_proj_weight = Parameter(make(3 * self.embed_dim, self.embed_dim))
        self.in_proj_bias = Parameter(make(3 * self.embed_dim)) if bias else None
        self.out_proj = Linear(self.embed_dim, self.embed_dim, bias=bias, dtype=dtype, device=device)
        init.xavier_uniform_(self._parameters["in_proj_weight"])
        if bias:        # PyTorch zeroes both projection biases
            init.zeros_(self._parameters["in_proj_bias"])
            init.zeros_(self.out_proj._parameters["bias"])

    def _project(self, x, i):
        e = self.embed_dim
        w = self.in_proj_weight[i * e:(i + 1) * e]
        b = None if self.in_proj_bias is None else self.in_proj_bias[i * e:(i + 1) * e]
        y = F.linear(x, w, b)                              # (N, L, E)
        n, length = y.shape[0], y.shape[1]
        return api.transpose(api.reshape(y, (n, length, self.num_heads, self.head_dim)), 1, 2)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise ArgumentTypeError(f"MultiheadAttention: {name} must be a Tensor, got "
                                        f"{type(t).__name__}")
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"MultiheadAttention: query, key and value must all be 2-D "
                             f"(L, E) or 3-D, got shapes {query.shape}, {key.shape}, {value.shape}")
        if query.shape[-1] != self.embed_dim:
            raise ShapeError(f"MultiheadAttention: expected embed_dim {self.embed_dim} as the "
                             f"last dimension of query, got shape {query.shape}")
        # key, value and the masks: checked here, so no inner op's error reaches the caller
        check_attention_inputs("MultiheadAttention", query, "query", key, "key", self.embed_dim,
                               self.num_heads, self.batch_first, attn_mask, "attn_mask",
                               key_padding_mask, "key_padding_mask")
        if value.shape[-1] != self.embed_dim or _shape(value)[:-1] != _shape(key)[:-1]:
            raise ShapeError(f"MultiheadAttention: value of shape {_shape(value)} does not match "
                             f"key of shape {_shape(key)} (embed_dim {self.embed_dim})")
        if not batched:
            query, key, value = (api.unsqueeze(t, 0) for t in (query, key, value))
        elif not self.batch_first:
            query, key, value = (api.transpose(t, 0, 1) for t in (query, key, value))
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        scores = api.matmul(q, api.transpose(k, -2, -1))
        n, h, lq, ls = scores.shape
        # a causal mask alone is the fused softmax's own; with a padding mask it is built
        causal = is_causal and attn_mask is None and key_padding_mask is None
        if attn_mask is None and is_causal and not causal:
            attn_mask = api.gt(api.sub(api.unsqueeze(api.arange(ls, device=q.device), 0),
                                       api.unsqueeze(api.arange(lq, device=q.device), 1)), 0)
        masks = []
        if attn_mask is not None:
            if attn_mask.ndim == 3:                         # (N * H, L, S)
                attn_mask = api.reshape(attn_mask, (n, h, lq, ls))
            masks.append(_checked(attn_mask))
        if key_padding_mask is not None:
            kpm = key_padding_mask if batched else api.unsqueeze(key_padding_mask, 0)
            masks.append(_checked(api.reshape(kpm, (n, 1, 1, ls))))
        mask = _fused_mask(masks)
        if F._fits_scores(scores, mask):
            # one row pass: scale, mask, max, exp, sum, normalise (its gradient another)
            weights = F._attention_softmax(scores, mask, 1.0 / math.sqrt(self.head_dim), causal)
        else:                                               # (a mask widening the scores)
            scores = api.mul(scores, 1.0 / math.sqrt(self.head_dim))
            for m in masks:
                scores = _masked(scores, m)
            weights = api.softmax(scores, -1)
        if self.training and self.dropout > 0:
            weights = F.dropout(weights, self.dropout, True)
        out = api.matmul(weights, v)                        # (N, H, L, D)
        out = api.reshape(api.transpose(out, 1, 2), (n, lq, self.embed_dim))
        out = self.out_proj(out)
        if not batched:
            out = api.reshape(out, (lq, self.embed_dim))
        elif not self.batch_first:
            out = api.transpose(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = api.mean(weights, axis=1)
        if not batched:
            weights = api.reshape(weights, weights.shape[1:])
        return out, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, " \
               f"batch_first={self.batch_first}"


def _checked(mask):
    if not (mask.dtype.is_bool or mask.dtype.is_float):
        raise DTypeError(f"MultiheadAttention: a mask must be bool or float, got {mask.dtype.name}")
    return mask


def _masked(scores, mask):
    """``scores`` with a bool mask's True entries at -inf, or a float mask added."""
    if mask.dtype.is_bool:
        return api.where(mask, float("-inf"), scores)
    return api.add(scores, mask)


def _fused_mask(masks):
    """PyTorch's attention masks (bool: True is left out; float: added) as one mask of the
    fused softmax (bool: True takes part; float: added), or None."""
    if not masks:
        return None
    if all(m.dtype.is_bool for m in masks):
        out = masks[0] if len(masks) == 1 else api.logical_or(masks[0], masks[1])
        return api.logical_not(out)
    out = None
    for m in masks:
        m = api.where(m, float("-inf"), 0.0) if m.dtype.is_bool else m
        out = m if out is None else api.add(out, m)
    return out


def activation_fn(op: str, activation):
    """PyTorch's ``activation`` argument: 'relu', 'gelu' or a callable."""
    if isinstance(activation, str):
        if activation not in ("relu", "gelu"):
            raise ArgumentValueError(f"{op}: activation should be relu or gelu, not {activation!r}")
        return getattr(api, activation)
    if not callable(activation):
        raise ArgumentTypeError(f"{op}: activation should be 'relu', 'gelu' or a callable, got "
                                f"{type(activation).__name__}")
    return activation


def _shape(t) -> tuple:
    return tuple(t.shape)


def check_attention_inputs(op: str, x, x_name: str, kv, kv_name: str, d_model: int, nhead: int,
                           batch_first: bool, attn_mask=None, mask_name: str = "",
                           key_padding_mask=None, kpm_name: str = ""):
    """Shapes and dtypes of one attention block's inputs as PyTorch's attention takes them:
    ``x`` (L, N, E) / (N, L, E) with ``batch_first`` / unbatched (L, E), ``kv`` likewise with S
    rows; ``attn_mask`` (L, S) or (N * nhead, L, S); ``key_padding_mask`` (N, S) or unbatched
    (S,); masks bool or float."""
    for name, t in ((x_name, x), (kv_name, kv), (mask_name, attn_mask), (kpm_name, key_padding_mask)):
        if not isinstance(t, Tensor) and (t is not None or name in (x_name, kv_name)):
            raise ArgumentTypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if x.ndim not in (2, 3):
        raise ShapeError(f"{op}: {x_name} must be 2-D (L, E) or 3-D, got shape {_shape(x)}")
    if kv.ndim != x.ndim:
        raise ShapeError(f"{op}: {x_name} and {kv_name} must both be batched (3-D) or both "
                         f"unbatched (2-D), got shapes {_shape(x)} and {_shape(kv)}")
    for name, t in ((x_name, x), (kv_name, kv)):
        if t.shape[-1] != d_model:
            raise ShapeError(f"{op}: expected d_model {d_model} as the last dimension of {name}, "
                             f"got shape {_shape(t)}")
    batched = x.ndim == 3
    n_axis, l_axis = (0, 1) if batch_first else (1, 0)
    if batched and x.shape[n_axis] != kv.shape[n_axis]:
        raise ShapeError(f"{op}: {x_name} and {kv_name} must have the same batch size, got "
                         f"shapes {_shape(x)} and {_shape(kv)}")
    n = x.shape[n_axis] if batched else 1
    length = x.shape[l_axis] if batched else x.shape[0]
    s = kv.shape[l_axis] if batched else kv.shape[0]
    for name, m in ((mask_name, attn_mask), (kpm_name, key_padding_mask)):
        if m is not None and not (m.dtype.is_bool or m.dtype.is_float):
            raise DTypeError(f"{op}: {name} must be bool or float, got {m.dtype.name}")
    if attn_mask is not None and _shape(attn_mask) not in ((length, s), (n * nhead, length, s)):
        raise ShapeError(f"{op}: {mask_name} must have shape {(length, s)} or "
                         f"{(n * nhead, length, s)}, got {_shape(attn_mask)}")
    want = (n, s) if batched else (s,)
    if key_padding_mask is not None and _shape(key_padding_mask) != want:
        raise ShapeError(f"{op}: {kpm_name} must have shape {want}, got "
                         f"{_shape(key_padding_mask)}")


def block_args(layer: str, d_model, nhead, dim_feedforward, dropout, layer_norm_eps, bias,
               batch_first, norm_first, dtype, device) -> None:
    """A transformer layer's arguments checked before its sublayers are built, so a bad one is
    refused naming ``layer`` (not the ``MultiheadAttention`` or ``Linear`` inside)."""
    for name, v in (("bias", bias), ("batch_first", batch_first), ("norm_first", norm_first)):
        bool_arg(layer, name, v)
    factory(dtype, device, layer)           # (a bad dtype or device: refused, nothing made)
    d_model, nhead = size_arg(layer, "d_model", d_model), size_arg(layer, "nhead", nhead)
    size_arg(layer, "dim_feedforward", dim_feedforward)
    probability_arg(layer, "dropout", dropout)
    float_arg(layer, "layer_norm_eps", layer_norm_eps)
    if nhead <= 0 or d_model % nhead:
        raise ArgumentValueError(f"{layer}: d_model ({d_model}) must be divisible by nhead "
                                 f"({nhead})")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual connection and
    layer norm (after, or before with ``norm_first``), as PyTorch's layer."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 dtype=None, device=None):
        super().__init__()
        block_args("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout,
                   layer_norm_eps, bias, batch_first, norm_first, dtype, device)
        kw = {"dtype": dtype, "device": device}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = activation_fn("TransformerEncoderLayer", activation)

    def _sa(self, x, mask, kpm, is_causal):
        y = self.self_attn(x, x, x, key_padding_mask=kpm, need_weights=False, attn_mask=mask,
                           is_causal=is_causal)[0]
        return self.dropout1(y)

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        sa = self.self_attn
        check_attention_inputs("TransformerEncoderLayer", src, "src", src, "src", sa.embed_dim,
                               sa.num_heads, sa.batch_first, src_mask, "src_mask",
                               src_key_padding_mask, "src_key_padding_mask")
        x = src
        if self.norm_first:
            x = api.add(x, self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal))
            return api.add(x, self._ff(self.norm2(x)))
        x = self.norm1(api.add(x, self._sa(x, src_mask, src_key_padding_mask, is_causal)))
        return self.norm2(api.add(x, self._ff(x)))
