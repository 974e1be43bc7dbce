"""How layers create their parameters' storage (then filled by ``rt.nn.init``)."""
from __future__ import annotations

from .. import dtypes as D
from ..ops import api

__all__ = ["factory"]


def factory(dtype=None, device=None):
    """``make(*shape)``: an uninitialised (zero) tensor of ``dtype`` (default float32) on
    ``device`` (default: the default device), for a layer's parameters."""
    dt = D.as_dtype(dtype) if dtype is not None else D.float32

    def make(*shape):
        return api.zeros(shape, dtype=dt, device=device)
    return make
