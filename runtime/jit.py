"""``rt.compile``: a whole function — a training step's forward, backward and optimiser update,
or a model's inference — traced once per signature into one captured graph, compiled into fused
kernels, and run without the function's Python afterwards.

How a call runs:

* **Signature.** The shapes, dtypes and devices of the tensor arguments and the values of the
  others pick a traced entry; an entry also checks its guards (the lifted values' shapes,
  dtypes and devices, the optimiser states' layout, each module's train/eval flag).  A miss
  traces again.
* **Trace.** ``fn`` runs once on a private capture device (wrapped in an autodiff device when the
  arguments are autodiff tensors).  Whatever it reads from outside becomes a graph input: a
  parameter at its first read (``Parameter.value``), a buffer (``Module`` attribute), an
  optimiser's state tensors (``Optimizer.step``); whatever it replaces becomes an output.
  ``backward()`` applies each op's gradient rule on the tape to the captured forward, so the
  backward ops land in the same graph.  Each optimiser update's scalars (rate, betas, bias
  corrections, weight decay) are 0-d inputs: a scheduler that changes the rate recompiles
  nothing.  Every value the trace swapped in is put back when it ends.
* **Call.** The optimisers advance their Python counters and compute this step's scalars
  (``Optimizer._step_scalars``); the inputs are gathered, the compiled graph runs, and its
  outputs are written back: parameters, buffers and optimiser state hold the new values, so
  eager code before and after sees the same objects.
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager

from . import dispatch
from .autodiff.device import from_inner
from .capture import active as _active
from .capture.device import CaptureDevice
from .capture.tracing import compile_for
from .core.errors import ArgumentTypeError, TracedValueError, TracingError
from .nn.module import Module, Parameter, _onto, _plain
from .ops import api
from .tensor import Tensor

__all__ = ["compile", "CompiledFunction"]

_RETRACE = object()


class _Slot:
    """A value the traced function read or replaced: where it lives between calls."""

    __slots__ = ("kind", "owner", "key", "original", "placeholder", "device")

    def __init__(self, kind, owner, key, original, placeholder, device):
        self.kind = kind                # "param" | "buffer" | "state"
        self.owner = owner              # the Parameter, Module or optimiser state dict
        self.key = key                  # buffer name or state key (None for a parameter)
        self.original = original        # the value before the trace (put back after it)
        self.placeholder = placeholder  # the graph input standing for it (None: none read)
        self.device = device            # the device its value lives on between calls

    def get(self):
        if self.kind == "param":
            return self.owner._value
        if self.kind == "buffer":
            return self.owner._buffers.get(self.key)
        return self.owner.get(self.key)

    def put_back(self) -> None:
        """Hold the value from before the trace again (parameters and buffers; the trace puts
        optimiser states back whole)."""
        if self.kind == "param":
            self.owner._value = self.original
        else:
            self.owner._buffers[self.key] = self.original

    def store(self, new) -> None:
        """Hold ``new`` (a plain tensor the compiled graph returned) as the value."""
        if self.kind == "param":
            self.owner._replace(_onto(new, self.device))
        elif self.kind == "buffer":
            self.owner._buffers[self.key] = _onto(new, self.device)
        else:
            self.owner[self.key] = new


def _meta(t: Tensor) -> tuple:
    return (tuple(t.shape), t.dtype, t.device)


class _Trace:
    """One recording of ``fn``: the hooks ``runtime.capture.active`` hands to the layers."""

    def __init__(self, exec_device, autodiff: bool):
        self.device = CaptureDevice()
        self.exec_device = exec_device
        self.autodiff = autodiff
        self.scope = None
        # per graph input: ("argument", index), ("scalar", index into the call's scalars), or
        # ("parameter" | "buffer" | "optimizer state", its _Slot)
        self.sources: list = []
        self.slots: dict = {}            # (kind, id(owner), key) -> _Slot
        self.states: list = []           # (optimizer, param, state dict, its content before)
        self.scalars: list = []          # (optimizer, group index, param, variant, count, dtype)
        self.modules: dict = {}          # id -> Module called while tracing
        self.inputs: list = []           # the graph's placeholders, in the order of sources
        self._update = None
        self._n_scalars = 0

    # ---- inputs -----------------------------------------------------------------------
    def _placeholder(self, t: Tensor, source, track: bool = False) -> Tensor:
        inner = _plain(t)
        if inner.device is not self.exec_device:
            raise TracingError(f"rt.compile: a {source[0]} on {inner.device} is read by a "
                               f"function whose arguments are on {self.exec_device}")
        ph = self.scope.placeholder(inner.shape, inner.dtype)
        self.inputs.append(ph)
        self.sources.append(source)
        if t.device.family == "autodiff":
            ph = from_inner(ph)
            if track:
                ph = ph.require_grad()
        return ph

    def lift_argument(self, i: int, t: Tensor) -> Tensor:
        return self._placeholder(t, ("argument", i))

    def lift_parameter(self, p: Parameter) -> Tensor:
        slot = self.slots.get(("param", id(p), None))
        if slot is None:
            v = p._value
            slot = _Slot("param", p, None, v, None, v.device)
            slot.placeholder = self._placeholder(v, ("parameter", slot),
                                                 track=v.requires_grad)
            self.slots[("param", id(p), None)] = slot
            p._value = slot.placeholder
        return p._value

    def _buffer_slot(self, m: Module, name: str, lift: bool):
        key = ("buffer", id(m), name)
        slot = self.slots.get(key)
        if slot is None:
            v = m._buffers[name]
            slot = _Slot("buffer", m, name, v, None, None if v is None else v.device)
            if lift and v is not None:
                slot.placeholder = self._placeholder(v, ("buffer", slot))
                m._buffers[name] = slot.placeholder
            self.slots[key] = slot
        return slot

    def lift_buffer(self, m: Module, name: str) -> Tensor:
        self._buffer_slot(m, name, lift=True)
        return m._buffers[name]

    def touch_buffer(self, m: Module, name: str) -> None:
        self._buffer_slot(m, name, lift=False)

    def lift_state(self, opt, p, state: dict) -> None:
        if any(s is state for _, _, s, _ in self.states):
            return
        self.states.append((opt, p, state, dict(state)))
        for k, v in list(state.items()):
            if isinstance(v, Tensor):
                slot = _Slot("state", state, k, v, None, v.device)
                slot.placeholder = self._placeholder(v, ("optimizer state", slot))
                self.slots[("state", id(state), k)] = slot
                state[k] = slot.placeholder

    @contextmanager
    def updating(self, opt, group_index: int, p):
        self._update = (opt, group_index, p)
        try:
            yield
        finally:
            self._update = None

    def scalar_inputs(self, variant, scalars, dtype) -> list:
        if self._update is None:
            raise TracingError("rt.compile: an optimiser update ran outside Optimizer.step")
        opt, gi, p = self._update
        self.scalars.append((opt, gi, p, variant, len(scalars), dtype))
        out = []
        for _ in scalars:
            ph = self.scope.placeholder((), dtype)
            out.append(ph)
            self.inputs.append(ph)
            self.sources.append(("scalar", self._n_scalars))
            self._n_scalars += 1
        return out

    def saw_module(self, m: Module) -> None:
        self.modules[id(m)] = m

    def value_read_error(self, t: Tensor) -> TracedValueError:
        op = next((o.op for o in reversed(t._payload.session.operations)
                   if any(x.id == t.id for x in o.outputs)), None)
        what = f"the output of {op!r}" if op else "an input"
        return TracedValueError(
            f"rt.compile: the traced function read the value of a tensor ({what}, shape "
            f"{tuple(t.shape)}, {t.dtype.name}) into Python with .item(), .numpy(), .tolist(), "
            f"bool(), int() or float(); a compiled function runs its ops without Python in "
            f"between, so it cannot branch on, print or convert a tensor's value: keep the "
            f"value a tensor (rt.where instead of if), return it, or read it outside the "
            f"compiled function")

    # ---- the end of the trace ---------------------------------------------------------
    def restore(self) -> None:
        """Put back every value the trace swapped in or replaced."""
        for slot in self.slots.values():
            if slot.kind != "state":
                slot.put_back()
        for _, _, state, before in self.states:
            state.clear()
            state.update(before)

    def mutated(self) -> list:
        """(slot, its final traced value) of each value the function replaced."""
        out = []
        for slot in self.slots.values():
            if slot.kind == "state":
                continue
            v = slot.get()
            if v is not slot.placeholder and v is not None:
                out.append((slot, v))
        for _, _, state, _ in self.states:
            for k, v in state.items():
                if not isinstance(v, Tensor) or v.device.innermost is not self.device:
                    continue
                slot = self.slots.get(("state", id(state), k))
                if slot is None:               # created by this step (a first step's moments)
                    slot = _Slot("state", state, k, None, None, self.exec_device)
                    self.slots[("state", id(state), k)] = slot
                if v is not slot.placeholder:
                    out.append((slot, v))
        return out


class _Entry:
    """One traced signature: the graph, its compiled runner and what a call must gather."""

    def __init__(self, graph, runner, tr: _Trace, out_spec, mutated):
        self.graph = graph
        self.runner = runner
        self.sources = tr.sources
        self.scalars = tr.scalars
        self.states = [(opt, p, state) for opt, p, state, _ in tr.states]
        self.modules = list(tr.modules.values())
        self.exec_device = tr.exec_device
        self.out_spec = out_spec
        self.out_autodiff = tr.autodiff
        self.mutated = mutated
        self.slots = [ref for kind, ref in self.sources if kind != "argument" and kind != "scalar"]
        self.guards = _guards(self.slots, self.states, self.modules)
        self._held: list = []            # the slots' values the last call left
        self.state_sizes = [len(before) for _, _, _, before in tr.states]
        self._scalars: dict = {}         # (value, dtype) -> 0-d tensor, reused between calls
        self._sets: dict = {}            # (values, dtype) -> their 0-d tensors
        self._warm = runner.parallel     # (the exec device is plain: ``CompiledFunction._trace``)

    def guards_hold(self) -> bool:
        held = self._held
        if (held and all(s.get() is v for s, v in zip(self.slots, held))
                and all(len(st) == n for (_, _, st), n in zip(self.states, self.state_sizes))):
            # nothing replaced a value since the last call left the state as this graph takes
            # it: only the train/eval flags can differ
            return all(m.training is t for m, t in zip(self.modules, self.guards[2]))
        return _guards(self.slots, self.states, self.modules) == self.guards

    def _scalar_set(self, vals, dtype) -> list:
        """The 0-d tensors of one update's scalars ``vals``: the parameters of one optimiser
        step mostly share theirs (the same step count and hyperparameters), so the set is
        kept whole as well as each value."""
        key = (vals, dtype)
        got = self._sets.get(key)
        if got is None:
            cache = self._scalars
            got = []
            for v in vals:
                v = float(v)
                t = cache.get((v, dtype))
                if t is None:
                    if len(cache) >= 1024:
                        cache.clear()
                    t = cache[(v, dtype)] = (
                        dispatch.scalar(self.exec_device, v, dtype)
                        if dtype.is_float and not dtype.is_half
                        else api.full((), v, dtype, self.exec_device))
                got.append(t)
            if len(self._sets) >= 64:
                self._sets.clear()
            self._sets[key] = got
        return got

    def run(self, args):
        if self._warm:
            # the previous call's workers are still spinning if the caller's loop was short:
            # spinning afresh, they are awake when the graph's first parallel kernel comes
            dispatch.keep_warm(self.exec_device)
        # this step's optimiser scalars, computed as eager Optimizer.step computes them
        saved = [(state, dict(state)) for _, _, state in self.states]
        values = []
        for opt, gi, p, variant, n, dtype in self.scalars:
            got, vals = opt._step_scalars(opt.state.setdefault(p, {}), opt.param_groups[gi])
            if got != variant or len(vals) != n:        # another update: trace it afresh
                for state, before in saved:
                    state.clear()
                    state.update(before)
                return _RETRACE
            values += self._scalar_set(vals, dtype)
        inputs = []
        for kind, ref in self.sources:
            if kind == "argument":
                inputs.append(_plain(args[ref]))
            elif kind == "scalar":
                inputs.append(values[ref])
            else:
                inputs.append(_plain(ref.get()))
        outs = self.runner.call_trusted(inputs)
        n_out = len(outs) - len(self.mutated)
        for slot, new in zip(self.mutated, outs[n_out:]):
            slot.store(new)
        # (a graph that adds state, a first optimiser step, leaves it as another graph takes it)
        stable = all(len(st) == n for (_, _, st), n in zip(self.states, self.state_sizes))
        self._held = [s.get() for s in self.slots] if stable else []
        results = [from_inner(o) if self.out_autodiff else o for o in outs[:n_out]]
        return _unflatten(self.out_spec, results)


def _guards(slots, states, modules) -> tuple:
    """What a graph was traced for beyond the call's signature: the shape, dtype and device of
    each value it reads from outside, the optimiser states' layout, the train/eval flags."""
    metas = tuple(None if v is None else _meta(_plain(v)) for v in (s.get() for s in slots))
    layout = tuple(tuple(sorted(k for k, v in state.items() if isinstance(v, Tensor)))
                   for _, _, state in states)
    return metas, layout, tuple(m.training for m in modules)


def _flatten(out):
    """(spec, tensors) of what the function returned: a tensor, None, or tuples and lists of
    them, nested."""
    tensors: list = []
    return _walk(out, tensors), tensors


# (module-level recursions: a nested function that calls itself is a reference cycle, which
# would keep every result of a call alive until the cyclic collector ran)
def _walk(o, tensors):
    if o is None:
        return "none"
    if isinstance(o, Tensor):
        tensors.append(o)
        return "tensor"
    if isinstance(o, (tuple, list)):
        return (type(o), tuple(_walk(x, tensors) for x in o))
    raise TracingError(f"rt.compile: the function must return a tensor, None, or tuples "
                       f"and lists of them, got {type(o).__name__}")


def _unflatten(spec, tensors):
    return _build(spec, iter(tensors))


def _build(sp, it):
    if sp == "none":
        return None
    if sp == "tensor":
        return next(it)
    kind, parts = sp
    return kind(_build(x, it) for x in parts)


def _arg_key(a):
    if isinstance(a, Tensor):
        return ("tensor", tuple(a.shape), a.dtype, a.device)
    try:
        hash(a)
    except TypeError:
        raise ArgumentTypeError(f"rt.compile: a non-tensor argument must be hashable (it is "
                                f"part of the signature), got {type(a).__name__}") from None
    return (type(a), a)


class CompiledFunction:
    """What ``rt.compile(fn)`` returns: call it as ``fn``; ``graphs`` lists what it traced."""

    def __init__(self, fn):
        self.fn = fn
        self._entries: dict = {}
        self._lock = threading.RLock()
        functools.update_wrapper(self, fn, updated=())

    @property
    def graphs(self) -> list:
        """The captured graphs traced so far, one per signature (and guard set)."""
        return [e.graph for es in self._entries.values() for e in es]

    def __call__(self, *args):
        if _active.current_step() is not None:
            return self.fn(*args)        # called while another function traces: inlined
        key = tuple(_arg_key(a) for a in args)
        with self._lock:
            for entry in self._entries.get(key, ()):
                if entry.guards_hold():
                    out = entry.run(args)
                    if out is not _RETRACE:
                        return out
            entry = self._trace(args)
            self._entries.setdefault(key, []).append(entry)
            out = entry.run(args)
            if out is _RETRACE:      # (the trace itself computed these scalars' variant)
                raise TracingError("rt.compile: the optimiser's update changed between the "
                                   "trace and the call")
            return out

    def _trace(self, args) -> _Entry:
        tensors = [a for a in args if isinstance(a, Tensor)]
        if not tensors:
            raise TracingError("rt.compile: the function needs at least one tensor argument "
                               "(its device is where the compiled graph runs)")
        dev = tensors[0].device
        autodiff = dev.family == "autodiff"
        exec_device = dev.inner if autodiff else dev
        if exec_device.family != "plain":
            raise TracingError(f"rt.compile: the arguments must be on a plain device such as "
                               f"cpu or cuda, or an autodiff device over one, got {dev}")
        for t in tensors:
            if t.device is not dev:
                raise TracingError(f"rt.compile: every tensor argument must be on one device, "
                                   f"got {dev} and {t.device}")
        tr = _Trace(exec_device, autodiff)
        cap = tr.device
        try:
            with cap.capture_scope() as scope, _active.step_scope(tr):
                tr.scope = scope
                call = [tr.lift_argument(i, a) if isinstance(a, Tensor) else a
                        for i, a in enumerate(args)]
                out = self.fn(*call)
                spec, outs = _flatten(out)
                for o in outs:
                    if o.device.innermost is not cap:
                        raise TracingError(f"rt.compile: the function returned a tensor on "
                                           f"{o.device} that it did not compute from its "
                                           f"inputs; return values computed in the function")
                mutated = tr.mutated()
                scope.complete(inputs=tr.inputs,
                               outputs=[_plain(o) for o in outs] + [_plain(v) for _, v in mutated])
        finally:
            tr.restore()
        graph = scope.graph
        runner = compile_for(graph, exec_device)
        return _Entry(graph, runner, tr, spec, [s for s, _ in mutated])


def compile(fn):
    """Compile ``fn`` — a training step, a model, any function of tensors — into one captured
    graph per signature, run as fused kernels (see ``docs/compile-step.md``).  Usable as a
    decorator."""
    if isinstance(fn, CompiledFunction):
        return fn
    if not callable(fn):
        raise ArgumentTypeError(f"compile: fn must be callable, got {type(fn).__name__}")
    return CompiledFunction(fn)
