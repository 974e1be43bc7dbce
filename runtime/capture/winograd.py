"""graph.compile's Winograd rewrite: a constant-weight 3x3 stride-1 ``conv2d`` as
``conv2d_winograd(x, winograd_weight(w)[, b])``.

The weight is a constant of the captured graph, so its transform ``G g G^T`` is folded once at
compile time (``CompiledGraph._fold`` runs ``winograd_weight``); each call then does 16
multiplies per channel pair and 2x2 output tile where the direct conv does 36.  Where the
conv's only reader is a 2x2, stride-2 ``max_pool2d_relu`` (what ``_pool_before_relu`` makes of
``max_pool2d(relu(conv))``), the pool is taken into the same op (``pool=True``): each 2x2
output tile is one pooling window, so the conv's result is never stored.

The kernel set decides where the form pays (``winograd_applies``: shapes, dtype, whether the
pool is fused); a kernel set without it keeps ``conv2d``.  The sums are not the direct conv's:
results agree within rounding (the transforms' additions), as the compiled graph's other
reductions do; the fused pool and relu give exactly what they give on the op's own result.
"""
from __future__ import annotations

from ..kernel_sets import supports
from .ir import CapturedGraph, OperationIr, TensorIr

__all__ = ["winograd_rewrite"]


def _pool_window(op) -> bool:
    """Whether ``op`` is a ``max_pool2d_relu`` whose windows are the 2x2 output tiles."""
    a = op.attrs
    return (op.op == "max_pool2d_relu" and len(op.args) == 1
            and a.get("kernel_size") == (2, 2) and a.get("stride") == (2, 2)
            and a.get("padding") == (0, 0) and a.get("dilation") == (1, 1)
            and a.get("ceil_mode") is False)


def _eligible(op, graph) -> bool:
    """A conv2d with a constant (O, C, 3, 3) weight, stride 1, no dilation, no groups, and
    trailing pads of at most 2 (the grid ``conv2d_winograd`` covers)."""
    a = op.attrs
    if (op.op != "conv2d" or len(op.args) not in (2, 3) or a.get("stride") != (1, 1)
            or a.get("dilation") != (1, 1) or a.get("groups") != 1):
        return False
    x, w = op.args[0], op.args[1]
    if type(x) is not TensorIr or type(w) is not TensorIr:
        return False
    if w.id not in graph.values or w.id in graph.inputs or tuple(w.shape[2:]) != (3, 3):
        return False
    pads = a.get("padding")
    return isinstance(pads, tuple) and len(pads) == 4 and all(0 <= p <= 2 for p in pads)


def winograd_rewrite(graph: CapturedGraph, ks) -> CapturedGraph:
    """``graph`` with each eligible conv2d (and its fusable pool) as ``conv2d_winograd`` where
    the kernel set ``ks`` says it applies; the graph itself when none does."""
    if not supports(ks, "winograd"):
        return graph
    applies = ks.winograd_applies
    ops = graph.operations
    readers: dict = {}
    for op in ops:
        for t in op.inputs:
            readers.setdefault(t.id, []).append(op)
    keep_out = set(graph.outputs) | set(graph.inputs)
    tensors = dict(graph._tensors)
    next_id = max(tensors, default=0) + 1
    replace: dict = {}          # id(conv op) -> the ops that stand for it
    dropped: set = set()        # id(pool op) taken into a conv
    for op in ops:
        if not _eligible(op, graph):
            continue
        x, w, y = op.args[0], op.args[1], op.outputs[0]
        grid = tuple(y.shape[2:])
        rd = readers.get(y.id, [])
        pool = (len(rd) == 1 and _pool_window(rd[0]) and y.id not in keep_out
                and grid[0] % 2 == 0 and grid[1] % 2 == 0)
        shape, o, dt = tuple(x.shape), w.shape[0], x.dtype.np
        if pool and not applies(shape, o, grid, dt, True):
            pool = False
        if not pool and not applies(shape, o, grid, dt, False):
            continue
        u = TensorIr(next_id, (16, w.shape[0], w.shape[1]), w.dtype)
        tensors[u.id] = u
        next_id += 1
        out = rd[0].outputs if pool else op.outputs
        attrs = {"padding": tuple(op.attrs["padding"][:2]), "grid": grid, "pool": pool}
        replace[id(op)] = [OperationIr("winograd_weight", (w,), (u,), {}),
                           OperationIr("conv2d_winograd", (x, u) + tuple(op.args[2:]), out,
                                       attrs)]
        if pool:
            dropped.add(id(rd[0]))
    if not replace:
        return graph
    out_ops = []
    for op in ops:
        if id(op) in dropped:
            continue
        out_ops.extend(replace.get(id(op), (op,)))
    return CapturedGraph(out_ops, graph.inputs, graph.outputs, graph.values, tensors)
