"""How layers create their parameters' storage (then filled by ``rt.nn.init``)."""
from __future__ import annotations

from ..core import dtypes as D
from ..ops import api

__all__ = ["factory"]


def factory(dtype=None, device=None):
    """``make(*shape, fill=0.0)``: a tensor of ``dtype`` (default float32) on ``device``
    (default: the default device) filled with ``fill``, for a layer's parameters and buffers."""
    dt = D.as_dtype(dtype) if dtype is not None else D.float32

    def make(*shape, fill=0.0):
        return api.full(shape, fill, dt, device)
    return make
