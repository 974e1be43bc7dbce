"""The front end: every ``rt.*`` function of the op families, generated from the front-end
registry (``runtime.core.registry.FRONTEND``), and the names of those that are Tensor methods.

Each function is defined next to its op's record in its family module (``runtime/ops/``);
none looks at payloads or knows about kernels.
"""
from __future__ import annotations

from .catalogue import FRONTEND, METHODS

globals().update(FRONTEND)

#: Front-end functions that are also Tensor methods (taking the tensor first).
TENSOR_METHODS = tuple(sorted(METHODS))

__all__ = sorted(FRONTEND)
