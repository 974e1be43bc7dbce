"""Dense linear algebra, ``rt.linalg``: the LAPACK-backed records (``linalg_inv``,
``linalg_solve``, ``linalg_det``, ``linalg_slogdet``, ``linalg_cholesky``, ``linalg_qr``,
``linalg_eigh``, ``linalg_svd``) and the functions of ``runtime.linalg`` (docs/linalg.md).

Every function takes float32/float64 stacks of matrices (``(*, m, n)``, batched over the
leading dimensions) and computes in the input dtype.  The records lower onto the kernel set's
``linalg`` capability (the cpu set calls NumPy's LAPACK); a kernel set without it (cuda) raises
DeviceError.  Records have one output, so an op with several results (``slogdet``, ``qr``,
``eigh``, ``svd``) returns them packed along one last axis, and the front end slices them apart
(capture records the slices; the backward rule reads the packed gradient, zero where a result
was not used).  The norms, ``pinv``, ``lstsq`` and ``matrix_rank`` are composed of the records
and other ops.

Gradients are PyTorch's formulas: ``inv`` ``-A^-T g A^-T``; ``solve``; ``det`` through the
adjugate from an SVD (so singular matrices get theirs too); ``slogdet`` ``g A^-T``;
``cholesky`` Murray's; ``qr`` (``mode='complete'`` only when m <= n), ``eigh`` and ``svd``
the standard formulas, valid for distinct eigenvalues / singular values (and, for ``svd``
vectors, nonzero singular values).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..core import dtypes as D
from ..core.errors import (ArgumentTypeError, ArgumentValueError, DeviceError, DTypeError,
                           GradientError, LinAlgError, ShapeError)
from ..core.registry import OpSpec, Plan, register
from ..core.shapes import broadcast_shapes, normalize_axis, prod
from ..dispatch import dispatch as run
from ..kernel_sets import supports
from ..tensor import Tensor
from .args import tensor_arg
from .create import eye, zeros
from .elementwise import abs as abs_, cast, where
from .index import getitem
from .linalg import matmul
from .rearrange import diag_embed, diagonal, movedim, tril
from .reduce import amax, amin, norm, prod_, sum as sum_
from .shape import cat, reshape, squeeze, transpose, unsqueeze

__all__ = ["inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd",
           "svdvals", "vector_norm", "matrix_norm", "pinv", "lstsq", "matrix_rank",
           "SlogdetResult", "QRResult", "EighResult", "SVDResult", "LstsqResult"]

_FLOATS = (D.float32, D.float64)


class SlogdetResult(NamedTuple):
    """``(sign, logabsdet)`` of ``rt.linalg.slogdet``."""

    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    """``(Q, R)`` of ``rt.linalg.qr``."""

    Q: Tensor
    R: Tensor


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)`` of ``rt.linalg.eigh``."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    """``(U, S, Vh)`` of ``rt.linalg.svd``."""

    U: Tensor
    S: Tensor
    Vh: Tensor


class LstsqResult(NamedTuple):
    """``(solution, residuals, rank, singular_values)`` of ``rt.linalg.lstsq``."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


# --------------------------------------------------------------------------- checks
def _check(name, shape, dtype, square=True) -> None:
    """ShapeError/DTypeError unless ``shape``/``dtype`` are a float32/float64 stack of
    (square) matrices (PyTorch's wording, with the shape and dtype named)."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ShapeError(f"{name}: The input tensor A must have at least 2 dimensions, got shape "
                         f"{shape}")
    if dtype not in _FLOATS:
        raise DTypeError(f"{name}: Expected a float32 or float64 tensor as input. Got "
                         f"{dtype.name}")
    if square and shape[-1] != shape[-2]:
        raise ShapeError(f"{name}: A must be batches of square matrices, but they are "
                         f"{shape[-2]} by {shape[-1]} matrices (shape {shape})")


def _matrix(name, a, square=True) -> Tensor:
    a = tensor_arg(name, a)
    _check(name, a.shape, a.dtype, square)
    return a


def _flag(name, what, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name}: {what} must be a bool, got {v!r}")
    return bool(v)


def _batch(shape, bad) -> str:
    """PyTorch's "(Batch element k): " prefix for a batched input, nothing for one matrix."""
    return f"(Batch element {bad}): " if len(shape) > 2 else ""


# --------------------------------------------------------------------------- lowering helpers
def _ks(ks, device, name):
    """``ks`` when it declares the ``linalg`` capability, else DeviceError naming the op."""
    if not supports(ks, "linalg"):
        raise DeviceError(f"{name}: not available on device {device}: the {ks.kind} kernel set "
                          f"has no LAPACK; move the tensor to the cpu (t.to('cpu')) first")
    return ks


def _stacked(ks, p, shape):
    """Payload ``p`` of ``shape`` (*, m, n) as one (B, m, n) stack."""
    return ks.reshape(p, (prod(shape[:-2]),) + tuple(shape[-2:]))


def _packed(ks, parts, plan):
    """(B, ...) arrays side by side along one flat last axis, reshaped to ``plan.shape``."""
    flat = [ks.reshape(x, (x.shape[0], prod(x.shape[1:]))) for x in parts]
    return ks.reshape(ks.cat(flat, 1) if len(flat) > 1 else flat[0], plan.shape)


def _unpack(t, batch, shapes) -> list:
    """The parts of a packed result ``t`` (batch + (total,)), one per shape in ``shapes``."""
    out, o = [], 0
    lead = (slice(None),) * len(batch)
    for s in shapes:
        n = prod(s)
        out.append(reshape(getitem(t, lead + (slice(o, o + n),)), tuple(batch) + tuple(s)))
        o += n
    return out


def _mT(x):
    return transpose(x, -1, -2)


def _col(v):
    """(*, n) -> (*, 1, n): a row of values scaling the columns of a matrix."""
    return unsqueeze(v, -2)


def _row(v):
    """(*, n) -> (*, n, 1): a column of values scaling the rows of a matrix."""
    return unsqueeze(v, -1)


def _eye_like(n, x):
    return eye(n, dtype=x.dtype, device=x.device)


# --------------------------------------------------------------------------- inv
def _infer_inv(args, attrs):
    (a,) = args
    _check("linalg.inv", a.shape, a.dtype)
    return Plan(tuple(a.shape), a.dtype, a.dtype)


def _kernel_inv(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    out, bad = _ks(ks, device, "linalg.inv").linalg_inv(_stacked(ks, p[0], shape))
    if bad >= 0:
        raise LinAlgError(f"linalg.inv: {_batch(shape, bad)}The inversion could not be "
                          f"completed because the input matrix is singular.")
    return ks.reshape(out, plan.shape)


def _grad_inv(c, g):
    xt = _mT(c.output())
    return (-matmul(matmul(xt, g), xt),)


# --------------------------------------------------------------------------- solve
def _infer_solve(args, attrs):
    a, b = args
    _check("linalg.solve", a.shape, a.dtype)
    if b.dtype is not a.dtype:
        raise DTypeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of "
                         f"type {a.dtype.name} and B of type {b.dtype.name} instead")
    if len(b.shape) < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                         f"({tuple(a.shape)} and {tuple(b.shape)})")
    batch = broadcast_shapes("linalg.solve", a.shape[:-2], b.shape[:-2])
    return Plan(batch + (a.shape[-1], b.shape[-1]), a.dtype, a.dtype)


def _kernel_solve(ks, p, args, attrs, plan, device):
    a, b = args
    batch, (n, k) = plan.shape[:-2], plan.shape[-2:]
    pa = ks.reshape(ks.expand(p[0], batch + (n, n)), (prod(batch), n, n))
    pb = ks.reshape(ks.expand(p[1], batch + (n, k)), (prod(batch), n, k))
    out, bad = _ks(ks, device, "linalg.solve").linalg_solve(pa, pb)
    if bad >= 0:
        raise LinAlgError(f"linalg.solve: {_batch(plan.shape, bad)}The solver failed because the "
                          f"input matrix is singular.")
    return ks.reshape(out, plan.shape)


def _solve(a, b):
    return run("linalg_solve", (a, b))


def _grad_solve(c, g):
    a = c.input(0)
    gb = _solve(_mT(a), g)
    ga = -matmul(gb, _mT(c.output())) if c.needs(0) else None
    return ga, gb


# --------------------------------------------------------------------------- det, slogdet
def _infer_det(args, attrs):
    (a,) = args
    _check("linalg.det", a.shape, a.dtype)
    return Plan(tuple(a.shape[:-2]), a.dtype, a.dtype)


def _kernel_det(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    return ks.reshape(_ks(ks, device, "linalg.det").linalg_det(_stacked(ks, p[0], shape)),
                      plan.shape)


def _grad_det(c, g):
    # g * adj(A)^T (= g det(A) A^-T when A is invertible), from A = U diag(s) Vh:
    # adj(A)^T = det(U) det(Vh) U diag(prod_{j != i} s_j) Vh, which holds for singular A too
    a = c.input(0)
    n = a.shape[-1]
    u, s, vh = _svd_parts(a, False)
    others = where(_eye_like(n, a) > 0.5, 1.0, _col(s))        # row i: s_j for j != i, 1 at i
    sign = run("linalg_det", (u,)) * run("linalg_det", (vh,))
    adj_t = matmul(u * _col(prod_(others, -1)), vh)
    return (adj_t * _row(_row(sign * g)),)


def _onnx_det(ex, op) -> str:
    (xt,) = op.inputs
    return ex.node(ex.record(op), [ex.names[xt.id]])


def _infer_slogdet(args, attrs):
    (a,) = args
    _check("linalg.slogdet", a.shape, a.dtype)
    return Plan(tuple(a.shape[:-2]) + (2,), a.dtype, a.dtype)


def _kernel_slogdet(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    out = _ks(ks, device, "linalg.slogdet").linalg_slogdet(_stacked(ks, p[0], shape))
    return ks.reshape(out, plan.shape)


def _grad_slogdet(c, g):
    # the sign is piecewise constant: only logabsdet's gradient, g A^-T
    a = c.input(0)
    glog = getitem(g, (slice(None),) * (a.ndim - 2) + (1,))
    return (_mT(run("linalg_inv", (a,))) * _row(_row(glog)),)


# --------------------------------------------------------------------------- cholesky
def _infer_cholesky(args, attrs):
    (a,) = args
    _check("linalg.cholesky", a.shape, a.dtype)
    return Plan(tuple(a.shape), a.dtype, a.dtype)


def _kernel_cholesky(ks, p, args, attrs, plan, device):
    _ks(ks, device, "linalg.cholesky")
    shape = args[0].shape
    a = _stacked(ks, p[0], shape)
    if attrs["upper"]:                 # the upper triangle is read, as PyTorch does: U = chol(A^T)^T
        a = ks.permute(a, (0, 2, 1))
    low, bad, order = ks.linalg_cholesky(a)
    if bad >= 0:
        raise LinAlgError(f"linalg.cholesky: {_batch(shape, bad)}The factorization could not be "
                          f"completed because the input is not positive-definite (the leading "
                          f"minor of order {order} is not positive-definite).")
    if attrs["upper"]:
        low = ks.copy(ks.permute(low, (0, 2, 1)))
    return ks.reshape(low, plan.shape)


def _grad_cholesky(c, g):
    # Murray (2016): gA = sym(L^-T Phi(L^T gL) L^-1), Phi = the lower triangle, diagonal halved
    low = c.output()
    if c.attrs["upper"]:
        low, g = _mT(low), _mT(g)
    phi = tril(matmul(_mT(low), g))
    phi = phi - 0.5 * diag_embed(diagonal(phi, 0, -2, -1))
    x = _solve(_mT(low), phi)                      # L^-T Phi
    ga = _mT(_solve(_mT(low), _mT(x)))             # (L^-T Phi) L^-1
    return (0.5 * (ga + _mT(ga)),)


# --------------------------------------------------------------------------- qr
def _qr_shapes(shape, complete):
    m, n = shape[-2:]
    kq = m if complete else min(m, n)
    return (m, kq), (kq, n)


def _infer_qr(args, attrs):
    (a,) = args
    _check("linalg.qr", a.shape, a.dtype, square=False)
    sq, sr = _qr_shapes(a.shape, attrs["complete"])
    return Plan(tuple(a.shape[:-2]) + (prod(sq) + prod(sr),), a.dtype, a.dtype)


def _kernel_qr(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    q, r = _ks(ks, device, "linalg.qr").linalg_qr(_stacked(ks, p[0], shape),
                                                   bool(attrs["complete"]))
    return _packed(ks, [q, r], plan)


def _qr_grad_tall(q, r, gq, gr):
    # A = QR with R square: gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q
    mm = matmul(r, _mT(gr)) - matmul(_mT(gq), q)
    low = tril(mm, -1)
    sym = low + _mT(low) + diag_embed(diagonal(mm, 0, -2, -1))
    return _mT(_solve(r, _mT(gq + matmul(q, sym))))


def _grad_qr(c, g):
    a = c.input(0)
    m, n = a.shape[-2:]
    if c.attrs["complete"] and m > n:
        raise GradientError("linalg.qr: The QR decomposition is not differentiable when "
                            "mode='complete' and nrows > ncols.")
    batch = a.shape[:-2]
    shapes = _qr_shapes(a.shape, c.attrs["complete"])
    q, r = _unpack(c.output(), batch, shapes)
    gq, gr = _unpack(g, batch, shapes)
    if m >= n:
        return (_qr_grad_tall(q, r, gq, gr),)
    # A = [X | Y], R = [U | V] with X = QU square and Y = QV: V = Q^T Y adds Y gV^T to gQ
    lead = (slice(None),) * (len(batch) + 1)
    u, v = getitem(r, lead + (slice(0, m),)), getitem(r, lead + (slice(m, n),))
    gu, gv = getitem(gr, lead + (slice(0, m),)), getitem(gr, lead + (slice(m, n),))
    y = getitem(a, lead + (slice(m, n),))
    del v
    gx = _qr_grad_tall(q, u, gq + matmul(y, _mT(gv)), gu)
    return (cat([gx, matmul(q, gv)], -1),)


# --------------------------------------------------------------------------- eigh
def _infer_eigh(args, attrs):
    (a,) = args
    _check("linalg.eigh", a.shape, a.dtype)
    n = a.shape[-1]
    return Plan(tuple(a.shape[:-2]) + (n + n * n if attrs["vectors"] else n,), a.dtype, a.dtype)


def _kernel_eigh(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    w, v = _ks(ks, device, "linalg.eigh").linalg_eigh(_stacked(ks, p[0], shape),
                                                       bool(attrs["lower"]))
    return _packed(ks, [w, v] if attrs["vectors"] else [w], plan)


def _eigh_parts(a, lower):
    n = a.shape[-1]
    out = run("linalg_eigh", (a,), {"lower": lower, "vectors": True})
    return _unpack(out, a.shape[:-2], [(n,), (n, n)])


def _grad_eigh(c, g):
    # gA = V (skew(V^T gV) / E + diag(gL)) V^T, E_ij = L_j - L_i (PyTorch's formula)
    a = c.input(0)
    n = a.shape[-1]
    if not c.attrs["vectors"]:
        # eigenvalues only: gA = V diag(gL) V^T (eigenvectors recomputed)
        _, v = _eigh_parts(a, c.attrs["lower"])
        return (matmul(v * _col(g), _mT(v)),)
    w, v = _unpack(c.output(), a.shape[:-2], [(n,), (n, n)])
    gw, gv = _unpack(g, a.shape[:-2], [(n,), (n, n)])
    vtgv = matmul(_mT(v), gv)
    skew = 0.5 * (vtgv - _mT(vtgv))
    e = where(_eye_like(n, a) > 0.5, 1.0, _col(w) - _row(w))
    return (matmul(matmul(v, skew / e + diag_embed(gw)), _mT(v)),)


# --------------------------------------------------------------------------- svd
def _svd_shapes(shape, full):
    m, n = shape[-2:]
    k = min(m, n)
    return (m, m if full else k), (k,), (n if full else k, n)


def _infer_svd(args, attrs):
    (a,) = args
    _check("linalg.svd", a.shape, a.dtype, square=False)
    su, ss, sv = _svd_shapes(a.shape, attrs["full"])
    size = prod(su) + prod(ss) + prod(sv) if attrs["vectors"] else prod(ss)
    return Plan(tuple(a.shape[:-2]) + (size,), a.dtype, a.dtype)


def _kernel_svd(ks, p, args, attrs, plan, device):
    shape = args[0].shape
    u, s, vh = _ks(ks, device, "linalg.svd").linalg_svd(_stacked(ks, p[0], shape),
                                                         bool(attrs["full"]))
    return _packed(ks, [u, s, vh] if attrs["vectors"] else [s], plan)


def _svd_parts(a, full):
    out = run("linalg_svd", (a,), {"full": full, "vectors": True})
    return _unpack(out, a.shape[:-2], _svd_shapes(a.shape, full))


def _grad_svd(c, g):
    a = c.input(0)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if not c.attrs["vectors"]:
        # singular values only: gA = U diag(gS) Vh (vectors recomputed)
        u, _, vh = _svd_parts(a, False)
        return (matmul(u * _col(g), vh),)
    full = c.attrs["full"]
    shapes = _svd_shapes(a.shape, full)
    u, s, vh = _unpack(c.output(), batch, shapes)
    gu, gs, gvh = _unpack(g, batch, shapes)
    if full:
        # the columns past min(m, n) do not depend smoothly on A; PyTorch drops their gradient
        lead = (slice(None),) * len(batch)
        u, gu = (getitem(t, lead + (slice(None), slice(0, k))) for t in (u, gu))
        vh, gvh = (getitem(t, lead + (slice(0, k),)) for t in (vh, gvh))
    utgu = matmul(_mT(u), gu)
    vtgv = matmul(vh, _mT(gvh))
    utgu, vtgv = utgu - _mT(utgu), vtgv - _mT(vtgv)
    s2 = s * s
    e = where(_eye_like(k, a) > 0.5, 1.0, _col(s2) - _row(s2))
    ga = (utgu * _col(s) + _row(s) * vtgv) / e + diag_embed(gs)
    if m > n:
        gus = gu / _col(s)
        ga = matmul(matmul(u, ga) + gus - matmul(u, matmul(_mT(u), gus)), vh)
    elif m < n:
        sgv = gvh / _row(s)
        ga = matmul(u, matmul(ga, vh) + sgv - matmul(matmul(sgv, _mT(vh)), vh))
    else:
        ga = matmul(u, matmul(ga, vh))
    return (ga,)


_NO_ONNX = "ONNX (opset 17) has no {} operator"

register(OpSpec("linalg_inv", "linalg", _infer_inv, _kernel_inv, cost="compute",
                backward=_grad_inv, onnx_skip=_NO_ONNX.format("matrix inverse")))
register(OpSpec("linalg_solve", "linalg", _infer_solve, _kernel_solve, cost="compute",
                backward=_grad_solve, onnx_skip=_NO_ONNX.format("linear solve")))
register(OpSpec("linalg_det", "linalg", _infer_det, _kernel_det, cost="compute",
                backward=_grad_det, onnx="Det", onnx_lower=_onnx_det))
register(OpSpec("linalg_slogdet", "linalg", _infer_slogdet, _kernel_slogdet, cost="compute",
                backward=_grad_slogdet, onnx_skip=_NO_ONNX.format("sign/log-determinant")))
register(OpSpec("linalg_cholesky", "linalg", _infer_cholesky, _kernel_cholesky, cost="compute",
                backward=_grad_cholesky, onnx_skip=_NO_ONNX.format("Cholesky")))
register(OpSpec("linalg_qr", "linalg", _infer_qr, _kernel_qr, cost="compute",
                backward=_grad_qr, onnx_skip=_NO_ONNX.format("QR")))
register(OpSpec("linalg_eigh", "linalg", _infer_eigh, _kernel_eigh, cost="compute",
                backward=_grad_eigh, onnx_skip=_NO_ONNX.format("eigendecomposition")))
register(OpSpec("linalg_svd", "linalg", _infer_svd, _kernel_svd, cost="compute",
                backward=_grad_svd, onnx_skip=_NO_ONNX.format("SVD")))


# --------------------------------------------------------------------------- front end
def inv(A) -> Tensor:
    """The inverse of each square matrix of ``A`` (*, n, n); LinAlgError naming the batch
    element when one is singular."""
    return run("linalg_inv", (_matrix("linalg.inv", A),))


def solve(A, B, *, left=True) -> Tensor:
    """The solution X of ``A X = B`` (``left=False``: ``X A = B``) for square ``A`` (*, n, n);
    ``B`` is a batch of vectors (*, n) when it is 1-D or has exactly ``A``'s batch shape, else
    matrices (*, n, k); batch dimensions broadcast.  LinAlgError when a matrix is singular."""
    a = _matrix("linalg.solve", A)
    b = tensor_arg("linalg.solve", B)
    left = _flag("linalg.solve", "left", left)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    if vector:
        b = unsqueeze(b, -1 if left else -2)
    elif b.ndim < 2:
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                         f"({tuple(a.shape)} and {tuple(b.shape)})")
    if left:
        x = _solve(a, b)
    else:
        x = _mT(_solve(_mT(a), _mT(b)))
    return squeeze(x, -1 if left else -2) if vector else x


def det(A) -> Tensor:
    """The determinant of each square matrix of ``A`` (*, n, n), shape (*)."""
    return run("linalg_det", (_matrix("linalg.det", A),))


def slogdet(A) -> SlogdetResult:
    """``(sign, logabsdet)`` of each determinant of ``A`` (*, n, n): sign -1, 0 or 1 and
    ``log|det|`` (-inf for a singular matrix)."""
    a = _matrix("linalg.slogdet", A)
    out = run("linalg_slogdet", (a,))
    lead = (slice(None),) * (a.ndim - 2)
    return SlogdetResult(getitem(out, lead + (0,)), getitem(out, lead + (1,)))


def cholesky(A, *, upper=False) -> Tensor:
    """The lower Cholesky factor L (``A = L L^T``) of each symmetric positive-definite matrix
    of ``A`` (*, n, n), reading its lower triangle; ``upper=True`` returns the upper factor
    ``U = L^T`` (``A = U^T U``), reading the upper triangle.
    LinAlgError naming the batch element and the failing leading minor otherwise."""
    a = _matrix("linalg.cholesky", A)
    return run("linalg_cholesky", (a,), {"upper": _flag("linalg.cholesky", "upper", upper)})


def qr(A, mode="reduced") -> QRResult:
    """``(Q, R)`` with ``A = Q R`` for ``A`` (*, m, n): ``mode='reduced'`` Q (*, m, k),
    R (*, k, n), k = min(m, n); ``'complete'`` Q (*, m, m), R (*, m, n); ``'r'`` R as reduced
    and an empty Q.  Signs are LAPACK's (R's diagonal may be negative)."""
    a = _matrix("linalg.qr", A, square=False)
    if not isinstance(mode, str) or mode not in ("reduced", "complete", "r"):
        raise ArgumentValueError(f"linalg.qr: qr received unrecognized mode '{mode}' but "
                                 f"expected one of 'reduced' (default), 'r', or 'complete'")
    complete = mode == "complete"
    out = run("linalg_qr", (a,), {"complete": complete})
    q, r = _unpack(out, a.shape[:-2], _qr_shapes(a.shape, complete))
    if mode == "r":
        q = zeros(0, dtype=a.dtype, device=a.device)
    return QRResult(q, r)


def _uplo(name, UPLO) -> bool:
    if UPLO not in ("L", "U"):
        raise ArgumentValueError(f"{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


def eigh(A, UPLO="L") -> EighResult:
    """``(eigenvalues, eigenvectors)`` of the symmetric matrices of ``A`` (*, n, n) whose
    ``UPLO`` ('L' or 'U') triangle is read: eigenvalues (*, n) ascending, eigenvectors (*, n, n)
    as columns (signs as LAPACK returns them)."""
    a = _matrix("linalg.eigh", A)
    w, v = _eigh_parts(a, _uplo("linalg.eigh", UPLO))
    return EighResult(w, v)


def eigvalsh(A, UPLO="L") -> Tensor:
    """The eigenvalues (*, n), ascending, of the symmetric matrices of ``A`` (see ``eigh``)."""
    a = _matrix("linalg.eigvalsh", A)
    return run("linalg_eigh", (a,), {"lower": _uplo("linalg.eigvalsh", UPLO), "vectors": False})


def svd(A, full_matrices=True) -> SVDResult:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` for ``A`` (*, m, n), k = min(m, n): S (*, k)
    descending; U (*, m, m) and Vh (*, n, n) when ``full_matrices``, else (*, m, k) and
    (*, k, n).  Signs as LAPACK returns them."""
    a = _matrix("linalg.svd", A, square=False)
    full = _flag("linalg.svd", "full_matrices", full_matrices)
    return SVDResult(*_svd_parts(a, full))


def svdvals(A) -> Tensor:
    """The singular values (*, min(m, n)) of ``A`` (*, m, n), descending."""
    a = _matrix("linalg.svdvals", A, square=False)
    return run("linalg_svd", (a,), {"full": False, "vectors": False})


# --------------------------------------------------------------------------- norms
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (None: every element): ``ord`` 2 (default),
    1, inf, -inf, 0 (the count of nonzeros) or any other number (``sum(|x|**ord)**(1/ord)``).
    Float inputs only (``dtype=`` casts first), as PyTorch."""
    x = tensor_arg("linalg.vector_norm", x)
    if dtype is not None:
        x = cast(x, D.as_dtype(dtype, "linalg.vector_norm"))
    if not x.dtype.is_float:
        raise DTypeError(f"linalg.vector_norm: Expected a floating point tensor as input. Got "
                         f"{x.dtype.name}")
    if isinstance(ord, (bool, str)) or not isinstance(ord, (int, float)):
        raise ArgumentValueError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    return norm(x, ord, dim, _flag("linalg.vector_norm", "keepdim", keepdim))


_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False) -> Tensor:
    """The ``ord``-norm of the matrices of ``A`` over the two axes ``dim``: ``'fro'``
    (default), ``'nuc'`` (sum of singular values), ``inf``/``-inf`` (max/min row sum of
    ``|A|``), ``1``/``-1`` (max/min column sum), ``2``/``-2`` (largest/smallest singular
    value)."""
    name = "linalg.matrix_norm"
    a = _matrix(name, A, square=False)
    if isinstance(ord, (bool, Tensor)) or ord not in _MATRIX_ORDS:
        raise ArgumentValueError(f"{name}: Order {ord!r} not supported (one of 'fro', 'nuc', "
                                 f"inf, -inf, 1, -1, 2, -2)")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ShapeError(f"{name}: dim must be a 2-tuple of ints, got {dim!r}")
    d0, d1 = (normalize_axis(name, d, a.ndim, a.shape) for d in dim)
    if d0 == d1:
        raise ShapeError(f"{name}: dims must be different, got ({d0}, {d1}) for shape "
                         f"{tuple(a.shape)}")
    keepdim = _flag(name, "keepdim", keepdim)
    if ord == "fro":
        return norm(a, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(movedim(a, (d0, d1), (-2, -1)))
        r = sum_(s, -1) if ord == "nuc" else (amax(s, -1) if ord == 2 else amin(s, -1))
    else:
        # inf: reduce the rows' sums (over d1) with max over d0; 1: the columns' sums
        inner, outer = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
        sums = sum_(abs_(a), inner, True)
        r = amax(sums, outer, True) if ord > 0 else amin(sums, outer, True)
        r = squeeze(squeeze(r, max(d0, d1)), min(d0, d1))
    if keepdim:
        r = unsqueeze(unsqueeze(r, min(d0, d1)), max(d0, d1))
    return r


# --------------------------------------------------------------------------- composites
def _tolerance(name, s, shape, dtype, atol, rtol):
    """``max(atol, rtol * max(s))`` per matrix, shape (*, 1), with PyTorch's defaults: rtol =
    eps * max(m, n) when neither is given, 0 when only ``atol`` is."""
    for what, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ArgumentTypeError(f"{name}: {what} must be a number or None, got {v!r}")
    if rtol is None:
        rtol = float(np.finfo(dtype.np).eps) * max(shape[-2:]) if not atol else 0.0
    smax = amax(s, -1, True) if s.shape[-1] else s
    tol = smax * float(rtol)
    if atol:
        tol = where(tol > float(atol), tol, float(atol))
    return tol


def _spectrum(name, a, hermitian):
    """(values whose magnitudes decide the rank, and the factors): ``svd`` or, for
    ``hermitian``, ``eigh``."""
    if _flag(name, "hermitian", hermitian):
        _check(name, a.shape, a.dtype)
        w, v = _eigh_parts(a, True)
        return abs_(w), (v, w, _mT(v))
    u, s, vh = _svd_parts(a, False)
    return s, (u, s, vh)


def pinv(A, *, atol=None, rtol=None, hermitian=False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (*, n, m) of ``A`` (*, m, n), from its SVD (``eigh``
    when ``hermitian``): singular values at or below ``max(atol, rtol * max(S))`` count as
    zero (PyTorch's defaults)."""
    name = "linalg.pinv"
    a = _matrix(name, A, square=False)
    mag, (u, s, vh) = _spectrum(name, a, hermitian)
    keep = mag > _tolerance(name, mag, a.shape, a.dtype, atol, rtol)
    sinv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    return matmul(_mT(vh) * _col(sinv), _mT(u))


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False) -> Tensor:
    """The number (int64, shape (*)) of singular values of ``A`` (*, m, n) above
    ``max(atol, rtol * max(S))`` (eigenvalue magnitudes when ``hermitian``)."""
    name = "linalg.matrix_rank"
    a = _matrix(name, A, square=False)
    if _flag(name, "hermitian", hermitian):
        _check(name, a.shape, a.dtype)
        mag = abs_(run("linalg_eigh", (a,), {"lower": True, "vectors": False}))
    else:
        mag = run("linalg_svd", (a,), {"full": False, "vectors": False})
    tol = _tolerance(name, mag, a.shape, a.dtype, atol, rtol)
    return sum_(cast(mag > tol, D.int64), -1)


_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None) -> LstsqResult:
    """The least-squares solution of ``A X = B`` for ``A`` (*, m, n) and ``B`` (*, m, k) (or
    (*, m) when ``B`` has one dimension fewer than ``A``), from the SVD of ``A`` (as LAPACK's
    ``gelsd``, whatever ``driver`` names): singular values at or below ``rcond * max(S)``
    (default eps * max(m, n)) count as zero.  Every field is filled: ``solution`` (*, n, k),
    ``residuals`` (*, k) the squared residual norms when m > n (else an empty tensor),
    ``rank`` (*) int64 and ``singular_values`` (*, min(m, n))."""
    name = "linalg.lstsq"
    a = _matrix(name, A, square=False)
    b = tensor_arg(name, B)
    if isinstance(driver, Tensor) or driver not in _DRIVERS:
        raise ArgumentValueError(f"{name}: parameter `driver` should be one of (gels, gelsy, "
                                 f"gelsd, gelss), got {driver!r}")
    if b.dtype is not a.dtype:
        raise DTypeError(f"{name}: Expected A and B to have the same dtype, but found A of type "
                         f"{a.dtype.name} and B of type {b.dtype.name} instead")
    vector = b.ndim == a.ndim - 1
    if vector:
        b = unsqueeze(b, -1)
    if b.ndim != a.ndim or b.shape[-2] != a.shape[-2]:
        raise ShapeError(f"{name}: Incompatible shapes of A and B for the equation AX = B "
                         f"({tuple(a.shape)} and {tuple(B.shape)})")
    u, s, vh = _svd_parts(a, False)
    tol = _tolerance(name, s, a.shape, a.dtype, None, rcond)
    keep = s > tol
    sinv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    x = matmul(_mT(vh) * _col(sinv), matmul(_mT(u), b))
    m, n = a.shape[-2:]
    if m > n:
        res = sum_((matmul(a, x) - b) ** 2, -2)
        if vector:
            res = squeeze(res, -1)
    else:
        res = zeros(0, dtype=a.dtype, device=a.device)
    rank = sum_(cast(keep, D.int64), -1)
    return LstsqResult(squeeze(x, -1) if vector else x, res, rank, s)
