"""The op catalogue: one record per op (``OpSpec``, see ``runtime.core.registry``), gathered from
the family modules, which register their ops on import:

- ``create``: init, full, arange, eye, rand, randn
- ``shape``: reshape, permute, expand, cat
- ``elementwise``: the unary and binary ops, where, cast, clamp, and composites
- ``index``: index, slice_assign, take, gather, scatter_add
- ``reduce``: the reductions, argmax/argmin, softmax/log_softmax
- ``linalg``: matmul
- ``lapack``: linalg_inv, linalg_solve, linalg_det, linalg_slogdet, linalg_cholesky, linalg_qr,
  linalg_eigh, linalg_svd (``rt.linalg``)
- ``nn``: linear, cross_entropy (and its backward op)
- ``recurrent``: lstm_layer, gru_layer, rnn_layer (a layer's recurrence; and their backward ops)
- ``conv``: unfold, fold, conv2d, conv_transpose2d (conv1d is a front end over conv2d)
- ``activation``: elu, celu, selu, leaky_relu, hardtanh, relu6, hardsigmoid, hardswish,
  logsigmoid, softsign, softmin, glu (composites)
- ``pool``: max/avg/adaptive pooling, interpolate (and their backward ops)
- ``sort``: argsort, topk (sort, kthvalue, median gather their values)
- ``rearrange``: scatter_reduce (pad, roll, flip, tril/triu, diagonal, one_hot, scatter,
  index_add, ... are front ends composed of records; advanced indexing is ``advanced``)

plus user ops (``register_custom``, behind ``rt.custom_op``).  Devices never branch on op
names: they read this table.  This module also re-exports the helpers other packages use.
"""
from __future__ import annotations

from ..core import dtypes as D
from ..core.errors import DTypeError, ShapeError
from ..core.registry import CATALOGUE, FRONTEND, METHODS, Meta, OpSpec, Plan, register
from . import (create, shape, elementwise, index, reduce, linalg, nn, activation, conv, pool, sort,  # noqa: F401
               rearrange)  # (registration)
from . import scan, einsum  # noqa: F401  (registration: scans, diff; einsum)
from . import advanced  # noqa: F401  (registration: put, index_put)
from . import attention  # noqa: F401  (registration: attention_softmax)
from . import lapack  # noqa: F401  (registration: rt.linalg's LAPACK-backed records)
from . import recurrent  # noqa: F401  (registration: lstm/gru/rnn_layer, backward ops)
from .elementwise import BINARY, binary_dtypes

__all__ = ["OpSpec", "CATALOGUE", "FRONTEND", "METHODS", "BINARY", "register", "register_custom",
           "binary_dtypes"]

_Meta = Meta      # the name the capture and dispatch modules use


def _check_records() -> None:
    """Every differentiable op has a backward rule or a decomposition to differentiate."""
    missing = [n for n, s in CATALOGUE.items()
               if s.differentiable and s.family != "custom" and s.backward is None
               and s.decompose is None]
    if missing:
        raise RuntimeError(f"autodiff: no backward rule for {missing}")


_check_records()


# --------------------------------------------------------------------------- custom ops
def register_custom(name: str, forward, shape_fn=None, replace: bool = False) -> OpSpec:
    """Catalogue entry for a user op (``rt.custom_op``): ``forward`` runs on kernel-set arrays."""
    def infer(args, attrs):
        pairs = [(a.shape, a.dtype) for a in args]
        if shape_fn is None:
            s, d = pairs[0]
        else:
            s, d = shape_fn(*pairs)
            s, d = tuple(s), D.as_dtype(d)
        return Plan(s, d, d)

    def kernel(ks, p, args, attrs, plan, device):
        out_shape, dtype = plan.shape, plan.dtype
        out = ks.custom(forward, p)
        got_dt, got_shape = getattr(out, "dtype", None), tuple(getattr(out, "shape", ()))
        if got_dt != dtype.np or got_shape != tuple(out_shape):
            what = f"{got_dt}{list(got_shape)}" if got_dt is not None else type(out).__name__
            err = DTypeError if got_dt != dtype.np else ShapeError
            raise err(f"custom op {name!r}: forward returned {what}, but its shape rule gives "
                      f"{dtype.name}{list(out_shape)}")
        return out

    return register(OpSpec(name, "custom", infer, kernel, cost="compute",
                           onnx_skip="a user op: its forward is Python code"), replace=replace)
