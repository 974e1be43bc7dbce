"""``rt.linalg``: dense linear algebra on float32/float64 stacks of matrices, with PyTorch's
names, results and gradients (docs/linalg.md).

The decompositions and solves are catalogue records (``runtime/ops/lapack.py``) computed by the
cpu kernel set's LAPACK (NumPy's); the norms, ``pinv``, ``lstsq`` and ``matrix_rank`` are
composed of them and other ops.
"""
from __future__ import annotations

from .core.errors import LinAlgError
from .ops.lapack import (EighResult, LstsqResult, QRResult, SlogdetResult, SVDResult, cholesky,
                         det, eigh, eigvalsh, inv, lstsq, matrix_norm, matrix_rank, pinv, qr,
                         slogdet, solve, svd, svdvals, vector_norm)
from .ops.linalg import matmul

__all__ = ["inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd",
           "svdvals", "vector_norm", "matrix_norm", "pinv", "lstsq", "matrix_rank", "matmul",
           "LinAlgError", "SlogdetResult", "QRResult", "EighResult", "SVDResult", "LstsqResult"]
