"""Composite ops on plain devices: the decomposition, traced once per operand signature and
compiled with ``graph.compile``'s fusion pass and code generator, runs as one fused kernel.

A composite record (``OpSpec`` with ``decompose`` and no ``kernel``) runs through
``runtime.core.registry.composite_runner``, which this module installs.  The first call for an
(op, device, operand shapes/dtypes, scalar operands, attrs) signature traces ``decompose`` on
placeholders (``runtime.capture.tracing``), compiles the graph for the device and keeps the
runner (``RUNNERS``, at most ``MAX_RUNNERS``); the generated kernels are cached on disk like
every fused kernel, so a second process compiles nothing.  A kernel set without fused kernels
runs the recorded graph op by op instead.
"""
from __future__ import annotations

from ..core.registry import Meta, install_composite_runner
from ..kernel_sets import for_device, supports
from ..tensor import Tensor
from .tracing import TraceCache, compile_for, signature, trace

__all__ = ["runner", "record", "RUNNERS", "MAX_RUNNERS"]

MAX_RUNNERS = 512
#: (op, device, signature) -> runner
RUNNERS = TraceCache(MAX_RUNNERS)

# Composites of these families are elementwise: their value at an index depends on their
# operands' values at that index only, so operands of one shape can run flattened.
_ELEMENTWISE = frozenset(("unary", "binary", "elementwise"))


def _one_shape(spec, args):
    """The operands' common shape when ``spec`` is elementwise and every tensor operand has it
    (rank 2 or more: flattening changes something), else None."""
    if spec.family not in _ELEMENTWISE:
        return None
    shape = None
    for a in args:
        s = getattr(a, "shape", None)
        if s is None:
            continue
        if shape is None:
            shape = tuple(s)
        elif tuple(s) != shape:
            return None
    return shape if shape is not None and len(shape) >= 2 else None


def _cached(spec, device, args, attrs):
    key = (spec.name, device, signature(args, attrs))
    stand_ins = tuple(Meta(a.shape, a.dtype) if hasattr(a, "dtype") else a for a in args)
    return RUNNERS.get(key, lambda: _build(spec, device, stand_ins, dict(attrs or {})))


def runner(spec, device, args, attrs):
    """``fn(tensor payloads) -> output payload`` computing composite ``spec`` on ``device``
    for operands like ``args`` (tensors or (shape, dtype) stand-ins, and Python scalars).

    An elementwise composite whose tensor operands share one shape runs on them flattened to
    1-D (views of contiguous payloads): one runner per size instead of per shape, and one
    generated kernel per dtype signature instead of one per rank."""
    shape = _one_shape(spec, args)
    if shape is None:
        return _cached(spec, device, args, attrs)
    n = 1
    for d in shape:
        n *= d
    flat = tuple(Meta((n,), a.dtype) if hasattr(a, "dtype") else a for a in args)
    run = _cached(spec, device, flat, attrs)
    reshape = for_device(device).reshape

    def run_flat(payloads):
        return reshape(run([reshape(p, (n,)) for p in payloads]), shape)
    run_flat.flat_of = run          # (what it runs: tests look at the kind of runner)
    return run_flat


def record(spec, args, attrs):
    """The decomposition of ``spec`` traced on placeholders shaped like ``args``: a
    CapturedGraph."""
    return trace(lambda *call: spec.decompose(tuple(call), attrs), args)


def _build(spec, device, args, attrs):
    graph = record(spec, args, attrs)
    out_ir = graph.output_tensors[0]
    want = spec.infer(tuple(args), attrs or {})
    if (tuple(out_ir.shape), out_ir.dtype) != (tuple(want.shape), want.dtype):
        raise RuntimeError(f"composite op {spec.name!r}: its decomposition gives "
                           f"{out_ir.dtype.name}{list(out_ir.shape)}, its rule "
                           f"{want.dtype.name}{list(want.shape)}")
    exe = compile_for(graph, device)
    steps = getattr(exe, "steps", ())
    if len(steps) == 1 and steps[0][0] == "fused" and not exe.params:
        # one generated kernel over the inputs: call the kernel set directly
        _, prog, in_ids, _ = steps[0]
        order = tuple(graph.inputs.index(t) for t in in_ids)
        ks = for_device(device)
        if supports(ks, "fused_fn"):        # its layout decisions made once (``fused_fn``)
            prepared = ks.fused_fn(prog)

            def run_fused(payloads):
                return prepared([payloads[i] for i in order])[0]
        else:
            fused = ks.fused

            def run_fused(payloads):
                return fused(prog, [payloads[i] for i in order])[0]
        return run_fused
    irs = graph.input_tensors
    wrap = Tensor._wrap

    def run_graph(payloads):
        ts = [wrap(p, ir.shape, ir.dtype, device) for p, ir in zip(payloads, irs)]
        return exe(*ts)[0]._payload
    return run_graph


install_composite_runner(runner)
