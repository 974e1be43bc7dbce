"""Composite ops on plain devices: the decomposition, captured once per operand signature and
compiled with ``graph.compile``'s fusion pass and code generator, runs as one fused kernel.

A composite record (``OpSpec`` with ``decompose`` and no ``kernel``) gets ``kernel_for(spec)``
as its lowering.  The first call for an (op, device, operand shapes/dtypes, scalar operands,
attrs) signature records ``decompose`` on a private capture device with placeholder inputs,
compiles the graph for the device and keeps the runner (an LRU of ``MAX_RUNNERS``); the
generated kernels are cached on disk like every fused kernel, so a second process compiles
nothing.  A kernel set without fused kernels runs the recorded graph op by op instead.
"""
from __future__ import annotations

import functools

from ..core.registry import CATALOGUE, Meta

__all__ = ["kernel_for", "runner", "clear", "MAX_RUNNERS"]

MAX_RUNNERS = 512


def _signature(spec, device, args, attrs):
    """The runner's key: op, device, (shape, dtype) per tensor operand and (type, value) per
    scalar (a scalar is baked into the recorded graph), and the attrs (flat scalars)."""
    ops = tuple((a.shape, a.dtype) if hasattr(a, "dtype") else (type(a), a) for a in args)
    frozen = tuple(sorted((k, type(v), v) for k, v in attrs.items())) if attrs else ()
    return (spec.name, device, ops, frozen)


@functools.lru_cache(maxsize=MAX_RUNNERS)
def _runner(key):
    name, device, ops, frozen = key
    args = tuple(Meta(a, b) if isinstance(a, tuple) else b for a, b in ops)
    return _build(CATALOGUE[name], device, args, {k: v for k, _, v in frozen})


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


def runner(spec, device, args, attrs):
    """``fn(tensor payloads) -> output payload`` computing composite ``spec`` on ``device``
    for operands like ``args`` (tensors or (shape, dtype) stand-ins, and Python scalars).

    An elementwise composite whose tensor operands share one shape runs on them flattened to
    1-D (views of contiguous payloads): one runner per size instead of per shape, and one
    generated kernel per dtype signature instead of one per rank."""
    shape = _one_shape(spec, args)
    if shape is None:
        return _runner(_signature(spec, device, args, attrs))
    n = 1
    for d in shape:
        n *= d
    flat = tuple(Meta((n,), a.dtype) if hasattr(a, "dtype") else a for a in args)
    run = _runner(_signature(spec, device, flat, attrs))
    from .. import dispatch
    reshape = dispatch.kernels_for(device).reshape

    def run_flat(payloads):
        return reshape(run([reshape(p, (n,)) for p in payloads]), shape)
    run_flat.flat_of = run          # (what it runs: tests look at the kind of runner)
    return run_flat


def clear() -> None:
    """Forget every composite runner (``rt.empty_cache``)."""
    _runner.cache_clear()


def _record(spec, args, attrs):
    """The decomposition of ``spec`` on placeholders shaped like ``args``: a CapturedGraph."""
    from ..capture.device import CaptureDevice
    cap = CaptureDevice()
    with cap.capture_scope() as scope:
        inputs, call = [], []
        for a in args:
            if hasattr(a, "dtype"):
                ph = scope.placeholder(a.shape, a.dtype)
                inputs.append(ph)
                call.append(ph)
            else:
                call.append(a)
        out = spec.decompose(tuple(call), attrs)
        scope.complete(inputs=inputs, outputs=[out])
    return scope.graph


def _build(spec, device, args, attrs):
    from .. import dispatch
    from ..tensor import Tensor
    graph = _record(spec, args, attrs)
    out_ir = graph.output_tensors[0]
    want = spec.infer(tuple(args), attrs or {})
    if (tuple(out_ir.shape), out_ir.dtype) != (tuple(want.shape), want.dtype):
        raise RuntimeError(f"composite op {spec.name!r}: its decomposition gives "
                           f"{out_ir.dtype.name}{list(out_ir.shape)}, its rule "
                           f"{want.dtype.name}{list(want.shape)}")
    ks = dispatch.kernels_for(device)
    exe = graph.compile(device) if callable(getattr(ks, "fused", None)) else graph.bind(device)
    steps = getattr(exe, "steps", ())
    if len(steps) == 1 and steps[0][0] == "fused" and not exe.params:
        # one generated kernel over the inputs: call the kernel set directly
        _, prog, in_ids, _ = steps[0]
        order = tuple(graph.inputs.index(t) for t in in_ids)
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


def kernel_for(spec):
    """The lowering of composite ``spec``: its fused decomposition (see the module doc)."""
    def composite_kernel(ks, p, args, attrs, plan, device):
        fn = runner(spec, device, args, attrs)
        return fn([q for q, a in zip(p, args) if hasattr(a, "dtype")])
    return composite_kernel
