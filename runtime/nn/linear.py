"""Layers without spatial structure: ``Identity``, ``Linear``, ``Flatten``, ``Embedding``,
``Dropout``/``Dropout2d``."""
from __future__ import annotations

import math

from ..core.errors import ArgumentValueError
from ..ops import api
from . import functional as F, init
from ..ops.args import int_arg
from ._make import bool_arg, factory, probability_arg, size_arg
from .module import Module, Parameter

__all__ = ["Identity", "Linear", "Flatten", "Embedding", "Dropout", "Dropout2d"]


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` (weight ``(out_features, in_features)``); PyTorch's default
    init: weight and bias uniform in ±1/sqrt(in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None,
                 device=None):
        super().__init__()
        self.in_features = size_arg("Linear", "in_features", in_features)
        self.out_features = size_arg("Linear", "out_features", out_features)
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(self.out_features, self.in_features))
        self.bias = Parameter(make(self.out_features)) if bool_arg("Linear", "bias", bias) else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self._parameters["weight"], a=math.sqrt(5))
        if self._parameters.get("bias") is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self._parameters["bias"], -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"


class Flatten(Module):
    """Flattens dimensions ``start_dim..end_dim`` (default: all but the batch dimension)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return api.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Embedding(Module):
    """A lookup table of ``num_embeddings`` rows of ``embedding_dim``; weight from N(0, 1), the
    ``padding_idx`` row zero (and its gradient zero)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 dtype=None, device=None):
        super().__init__()
        self.num_embeddings = size_arg("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = size_arg("Embedding", "embedding_dim", embedding_dim)
        if padding_idx is not None:
            padding_idx = int_arg("Embedding", "padding_idx", padding_idx)
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ArgumentValueError(f"Embedding: padding_idx {padding_idx} is out of range "
                                         f"for {self.num_embeddings} embeddings")
        if padding_idx is not None and padding_idx < 0:
            padding_idx += self.num_embeddings
        self.padding_idx = padding_idx
        make = factory(dtype, device, "Embedding")
        self.weight = Parameter(make(self.num_embeddings, self.embedding_dim))
        init.normal_(self._parameters["weight"])
        if padding_idx is not None:
            w = self._parameters["weight"]
            w.value = api.slice_assign(w.value, padding_idx, 0.0)

    def forward(self, x):
        return F.embedding(x, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else f"{s}, padding_idx={self.padding_idx}"


class Dropout(Module):
    """Zeroes elements with probability ``p`` while training (scaled by 1/(1-p))."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = probability_arg(type(self).__name__, "p", p)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


class Dropout2d(Dropout):
    """Zeroes whole channels with probability ``p`` while training."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training)
