"""Linear algebra: ``matmul`` (1-D, 2-D and batched with broadcast batch dimensions)."""
from __future__ import annotations

from ..dispatch import dispatch as run, fast_binary
from ..core import dtypes as D
from ..core.errors import DTypeError, ShapeError
from ..tensor import Tensor
from .args import tensor_arg
from ..core.registry import OpSpec, Plan, front_end, register
from .shape import reshape, transpose, unsqueeze
from ..core.shapes import broadcast_shapes, prod


def matmul_shapes(a_shape, b_shape, a_dt=None, b_dt=None):
    """(output shape, batch shape, m, k, n) of ``a @ b``; ShapeError on mismatch."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ShapeError(f"matmul: both operands need at least one dimension, got shapes "
                         f"{tuple(a_shape)} and {tuple(b_shape)}")
    a2 = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b2 = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    m, k = a2[-2:]
    k2, n = b2[-2:]
    if k != k2:
        raise ShapeError(f"matmul: shapes {tuple(a_shape)} and {tuple(b_shape)} are not aligned "
                         f"({k} != {k2})")
    try:
        batch = broadcast_shapes("matmul", a2[:-2], b2[:-2])
    except ShapeError:
        raise ShapeError(f"matmul: batch dimensions of shapes {tuple(a_shape)} and {tuple(b_shape)} "
                         f"cannot be broadcast together") from None
    out = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    return out, batch, m, k, n


def batch_pad(shape, which) -> tuple:
    """A 1-D matmul operand as a matrix: a row for the left (1), a column for the right (2)."""
    if len(shape) > 1:
        return tuple(shape)
    return (1,) + tuple(shape) if which == 1 else tuple(shape) + (1,)


def infer_matmul(args, attrs):
    a, b = args
    dt = D.promote(a.dtype, b.dtype, "matmul")
    if dt.is_bool:
        raise DTypeError(f"matmul: not defined for dtypes {a.dtype.name} and {b.dtype.name}")
    return Plan(matmul_shapes(a.shape, b.shape)[0], dt, dt)


def kernel_matmul(ks, p, args, attrs, plan, device):
    a, b = args
    pa, pb = p
    if len(a.shape) == 2 and len(b.shape) == 2 and a.dtype is plan.dtype and b.dtype is plan.dtype:
        # two matrices of the output dtype: the same kernel call on the same views as below,
        # minus the batch/broadcast bookkeeping
        (m, k), n = a.shape, b.shape[1]
        return ks.reshape(ks.matmul(ks.reshape(pa, (1, m, k)), ks.reshape(pb, (1, k, n))),
                          plan.shape)
    if a.dtype is not plan.dtype:
        pa = ks.cast(pa, plan.dtype.np)
    if b.dtype is not plan.dtype:
        pb = ks.cast(pb, plan.dtype.np)
    _, batch, m, k, n = matmul_shapes(a.shape, b.shape)
    pa = ks.reshape(pa, batch_pad(a.shape, 1))
    pb = ks.reshape(pb, batch_pad(b.shape, 2))
    nb = prod(batch)
    pa = ks.reshape(ks.expand(pa, batch + (m, k)), (nb, m, k))
    pb = ks.reshape(ks.expand(pb, batch + (k, n)), (nb, k, n))
    return ks.reshape(ks.matmul(pa, pb), plan.shape)


def _is_transposed(c, i) -> bool:
    """Input ``i`` is a recorded permute that swaps the last two axes (and nothing else)."""
    from ..autodiff.tape import Node
    p = c.node.inputs[i]
    if not isinstance(p, Node) or p.spec is None or p.spec.name != "permute":
        return False
    axes = p.attrs["axes"]
    n = len(axes)
    return n >= 2 and tuple(axes) == tuple(range(n - 2)) + (n - 1, n - 2)


def _unbatch(g, shape):
    """Sum a batched matmul gradient over the batch dims its operand was broadcast along."""
    from ..autodiff.tape import fit_gradient
    return fit_gradient(g, tuple(shape), g.dtype)


def _grad_matmul(c, g):
    a, b = c.input(0), c.input(1)
    a_shape, b_shape = a.shape, b.shape
    a2 = reshape(a, (1,) + a_shape) if len(a_shape) == 1 else a
    b2 = reshape(b, b_shape + (1,)) if len(b_shape) == 1 else b
    # g as batch + (m, n), putting back the axes a 1-D operand dropped
    g2 = g
    if len(a_shape) == 1:
        g2 = unsqueeze(g2, g2.ndim - (0 if len(b_shape) == 1 else 1))
    if len(b_shape) == 1:
        g2 = unsqueeze(g2, g2.ndim)
    ga = gb = None
    # When an operand is itself a transposed tensor (``x @ w.T`` in ``linear``), compute its
    # gradient transposed, so the permute rule hands back a contiguous gradient.
    if c.needs(0):
        if _is_transposed(c, 0):
            ga = transpose(matmul(b2, transpose(g2, -1, -2)), -1, -2)
        else:
            ga = matmul(g2, transpose(b2, -1, -2))
        ga = reshape(_unbatch(ga, a2.shape), a_shape)
    if c.needs(1):
        if _is_transposed(c, 1):
            gb = transpose(matmul(transpose(g2, -1, -2), a2), -1, -2)
        else:
            gb = matmul(transpose(a2, -1, -2), g2)
        gb = reshape(_unbatch(gb, b2.shape), b_shape)
    return ga, gb


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_matmul(ex, op) -> str:
    a, b = op.inputs
    out = op.outputs[0]
    xa, xb = ex.operand(a, out.dtype), ex.operand(b, out.dtype)
    if len(a.shape) > 1 and len(b.shape) > 1:
        return ex.node(ex.record(op), [xa, xb])
    # A 1-D operand as an explicit row/column, then the result reshaped: onnxruntime 1.32's
    # Transpose+MatMul fusion computes wrong values for a 1-D right operand.
    if len(a.shape) == 1:
        xa = ex.reshape(xa, (1,) + tuple(a.shape))
    if len(b.shape) == 1:
        xb = ex.reshape(xb, tuple(b.shape) + (1,))
    return ex.reshape(ex.node(ex.record(op), [xa, xb]), out.shape)


register(OpSpec("matmul", "linalg", infer_matmul, kernel_matmul, cost="compute",
                backward=_grad_matmul, onnx="MatMul", onnx_lower=_onnx_matmul, fusion="matmul",
                lowering="matmul", uint64="modular"))


@front_end(method=True)
@fast_binary("matmul")      # (a signature seen before: its prepared product, before the below)
def matmul(a, b) -> Tensor:
    """Matrix product: 1-D, 2-D and batched with broadcast batch dimensions."""
    if type(a) is Tensor and type(b) is Tensor:  # the common case, straight to dispatch
        return run("matmul", (a, b))
    return run("matmul", (tensor_arg("matmul", a), tensor_arg("matmul", b)))
