"""The tape: one ``Node`` per tracked value, and the reverse walk that ``backward()`` runs.

A node is a leaf (a tensor marked with ``require_grad()``; ``rule is None``) or the
record of one op: its catalogue spec and attrs, its inputs (parent nodes for tracked
operands, the inner tensor or Python scalar for untracked ones) and, depending on the
checkpointing strategy, its output.  Backward rules receive a ``RuleContext`` and the
output gradient, and return one gradient (or None) per input; the walk reduces each
gradient to its input's shape and dtype and sums gradients of reused values.
"""
from __future__ import annotations

import threading
import time
import weakref
from math import prod

from .. import dispatch
from ..core.errors import GradientError
from ..ops import api
from .checkpoint import keeps_output, value_of
from .gradients import Gradients

__all__ = ["Node", "RuleContext", "leaf", "record", "run_backward", "freed_error",
           "not_tracked_error", "arm_backward_observer"]


class _Observer(threading.local):
    def __init__(self):
        self.pending = None


_observer = _Observer()


def arm_backward_observer(obs) -> None:
    """Hand ``obs`` to the next ``backward()`` in this thread (one-shot; None disarms): it calls
    ``obs.leaf_ready(leaf_node, g)`` as soon as each leaf's gradient is final (so work such as
    a data-parallel all-reduce can start while backward goes on) and ``obs.finish(grads)``
    before returning the ``Gradients``."""
    _observer.pending = obs


class Node:
    """A tracked value on the tape."""

    __slots__ = ("rule", "spec", "attrs", "inputs", "shape", "dtype", "device", "value",
                 "ref", "freed", "__weakref__")

    def __init__(self, rule, spec, attrs, inputs, shape, dtype, device, value, keep):
        self.rule = rule            # backward rule (None for a leaf)
        self.spec = spec            # catalogue OpSpec, for recomputation (None: not recomputable)
        self.attrs = attrs
        self.inputs = inputs        # tuple of Node | inner tensor | Python scalar
        self.shape = shape
        self.dtype = dtype
        self.device = device        # the inner device the value lives on
        self.value = value if keep else None
        self.ref = None if keep else weakref.ref(value)
        self.freed = False

    @property
    def is_leaf(self) -> bool:
        return self.rule is None

    def free(self) -> None:
        self.inputs = ()
        self.value = None
        self.ref = None
        self.freed = True


def leaf(value) -> Node:
    """A leaf node for the inner tensor ``value`` (always kept)."""
    return Node(None, None, None, (), value.shape, value.dtype, value.device, value, True)


def record(rule, spec, attrs, inputs, out, strategy: str) -> Node:
    """A node for op output ``out`` (an inner tensor) computed from ``inputs``."""
    return Node(rule, spec, attrs, inputs, out.shape, out.dtype, out.device, out,
                keeps_output(strategy, spec))


class RuleContext:
    """What a backward rule may read: inputs, output, attrs, and which inputs need a gradient."""

    __slots__ = ("node", "_cache")

    def __init__(self, node: Node, cache: dict):
        self.node = node
        self._cache = cache

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    @property
    def device(self):
        return self.node.device

    @property
    def shape(self) -> tuple:
        return self.node.shape

    @property
    def dtype(self):
        return self.node.dtype

    @property
    def arity(self) -> int:
        return len(self.node.inputs)

    def needs(self, i: int) -> bool:
        """True when input ``i`` is tracked (its gradient is wanted)."""
        return isinstance(self.node.inputs[i], Node)

    def input(self, i: int):
        """Input ``i``'s value: an inner tensor, or the Python scalar the op was given."""
        p = self.node.inputs[i]
        return value_of(p, self._cache) if isinstance(p, Node) else p

    def input_shape(self, i: int) -> tuple:
        return getattr(self.node.inputs[i], "shape", ())

    def input_dtype(self, i: int):
        return getattr(self.node.inputs[i], "dtype", None)

    def output(self):
        """The op's output value (kept, or recomputed under checkpointing)."""
        return value_of(self.node, self._cache)


def freed_error() -> GradientError:
    return GradientError(
        "backward() reached a graph that was already freed by an earlier backward(); "
        "pass retain_graph=True to the first backward() to run backward() over it again")


def not_tracked_error() -> GradientError:
    return GradientError(
        "backward() was called on a tensor that does not require grad: call require_grad() "
        "on the leaf tensors it is computed from (outside rt.no_grad()) before computing it")


def _topological(root: Node) -> list:
    """Nodes reachable from ``root``, every node after all of its inputs."""
    order, seen = [], {root}
    stack = [(root, iter(root.inputs))]
    if root.freed:
        raise freed_error()
    push, pop, add, emit = stack.append, stack.pop, seen.add, order.append
    while stack:
        node, it = stack[-1]
        for p in it:
            if type(p) is Node and p not in seen:
                if p.freed:
                    raise freed_error()
                add(p)
                push((p, iter(p.inputs)))
                break
        else:
            pop()
            emit(node)
    return order


def fit_gradient(g, shape: tuple, dtype):
    """``g`` summed over the dimensions broadcasting added, cast to ``dtype``."""
    if g.shape != shape:
        lead = len(g.shape) - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                          if d == 1 and g.shape[lead + i] != 1)
        if axes:
            g = api.sum(g, axis=axes, keepdims=False)
        if g.shape != shape:
            g = api.reshape(g, shape)
    if g.dtype is not dtype:
        g = api.cast(g, dtype)
    return g


def _warm_plan(order: list, device):
    """``(keep_warm, seconds, flags, last)`` for a backward walk over ``order`` on a device whose
    kernel set keeps worker threads (``dispatch.warm_policy``), else None: ``flags[k]`` says
    whether the rule of the k-th node walked may run a parallel kernel (its output or an input
    is that large), ``last`` the last such k.  The walk starts a serial rule that has such a
    rule after it with ``keep_warm()`` once the workers may have gone to sleep, and ends with
    one, so that waking them is not paid inside a small kernel."""
    policy = dispatch.warm_policy(device)
    if policy is None:
        return None
    keep_warm, warm_s, pmin = policy
    par = []
    for node in reversed(order):
        big = node.rule is not None and (prod(node.shape) >= pmin or any(
            prod(getattr(p, "shape", ())) >= pmin for p in node.inputs))
        par.append(big)
    if not any(par):
        return None
    return keep_warm, warm_s, par, max(k for k, p in enumerate(par) if p)


def run_backward(root: Node, retain_graph: bool) -> Gradients:
    """Reverse-mode walk from ``root`` with a seed gradient of ones."""
    order = _topological(root)
    obs, _observer.pending = _observer.pending, None
    grads = {root: api.full(root.shape, 1, root.dtype, root.device)}
    cache: dict = {}
    out = Gradients()
    add = api.add
    pop, get = grads.pop, grads.get
    warm = _warm_plan(order, root.device)
    if warm is not None:
        keep_warm, warm_s, par, last_par = warm
        clock = time.perf_counter
        t_par = -warm_s       # unknown: the workers may be asleep already
    for k, node in enumerate(reversed(order)):
        g = pop(node, None)
        rule = node.rule
        if rule is None:
            if g is not None:
                out._accumulate(node, g)
                if obs is not None:
                    obs.leaf_ready(node, g)
            continue
        if g is not None:
            if warm is not None:
                if par[k]:
                    t_par = None
                elif k < last_par and (t_par is None or clock() - t_par > warm_s):
                    keep_warm()
                    t_par = clock()
            in_grads = rule(RuleContext(node, cache), g)
            if warm is not None and par[k]:
                t_par = clock()
            for p, gi in zip(node.inputs, in_grads):
                if gi is None or type(p) is not Node:
                    continue
                if gi.shape != p.shape or gi.dtype is not p.dtype:   # else nothing to fit
                    gi = fit_gradient(gi, p.shape, p.dtype)
                prev = get(p)
                grads[p] = gi if prev is None else add(prev, gi)
        if cache:
            cache.pop(node, None)      # its consumers are all done: drop a recomputed value
    if warm is not None and t_par is not None and clock() - t_par > warm_s:
        keep_warm()           # (an optimiser step's parallel updates usually come next)
    if not retain_graph:
        for node in order:
            if node.rule is not None:
                node.free()
    if obs is not None:
        obs.finish(out)
    return out
