"""Checkpointing: which node outputs the tape keeps, and recomputing the ones it dropped.

``"none"`` keeps every recorded output.  ``"balanced"`` keeps the outputs of compute-bound
ops (``spec.cost == "compute"``: matmul, reductions, softmax, custom ops) and of leaves;
a memory-bound op (elementwise, shape, index) keeps only a weak reference to its output.
When backward needs a dropped value (a rule reads an op's input or output) it is
recomputed from its nearest available ancestors on the inner device, cached for the rest
of the walk, and dropped once the node that produced it has been processed.
"""
from __future__ import annotations

STRATEGIES = ("none", "balanced")

__all__ = ["STRATEGIES", "keeps_output", "value_of"]


def keeps_output(strategy: str, spec) -> bool:
    """Whether a node recorded under ``strategy`` holds its output for backward."""
    return strategy == "none" or spec is None or spec.cost != "memory"


def _available(node, cache):
    v = node.value
    if v is not None:
        return v
    ref = node.ref
    if ref is not None:
        v = ref()            # the user still holds the tensor: no recompute needed
        if v is not None:
            return v
    return cache.get(node)


def value_of(node, cache: dict):
    """The inner tensor ``node`` produced: kept, still alive, cached, or recomputed."""
    v = _available(node, cache)
    if v is not None:
        return v
    from .tape import Node, freed_error
    stack = [node]
    while stack:           # iterative: chains of dropped values can be long
        n = stack[-1]
        if n.freed:
            raise freed_error()
        missing = [p for p in n.inputs if isinstance(p, Node) and _available(p, cache) is None]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        if _available(n, cache) is not None:
            continue
        args = tuple(_available(p, cache) if isinstance(p, Node) else p for p in n.inputs)
        cache[n] = n.device.execute(n.spec, args, n.attrs, n.spec.infer(args, n.attrs))
    return cache[node]
