"""``CaptureDevice``: a device whose kernels record ``OperationIr``s instead of computing.

A capture device is an immutable id.  Its sessions live in ``_SESSIONS`` (keyed by that id,
guarded by a lock), so a device parsed back from ``"capture:N"`` sees the same session and
cannot get around ``AlreadyActive``.  A capture tensor's payload is a ``_Ref``: the session
that recorded it, its ``TensorIr`` and, for initialized values, the NumPy value.
"""
from __future__ import annotations

import itertools
import threading
from threading import get_ident as _get_ident
import weakref

import numpy as np

from ..core import dtypes as D
from ..device import Device, register_device_parser
from ..core.errors import (CAPTURE_SCOPE_COMPLETE, CAPTURE_SCOPE_REQUIRED, ArgumentTypeError,
                      CaptureAutodiffError,
                      CaptureError, CaptureScopeError, CaptureValueError, DeviceError,
                      ShapeError)
from ..ops.args import shape_arg
from ..tensor import Tensor, new_id
from .active import current_step
from .ir import CapturedGraph, OperationIr, TensorIr

__all__ = ["CaptureDevice", "CaptureSession", "CaptureScope", "CompletionToken"]

ALREADY_ACTIVE = "a capture scope is already active on this device"
INCOMPLETE = ("capture scope ended without complete(); call scope.complete(inputs=[...], "
              "outputs=[...]) before leaving the block")
BAD_TOKEN = ("capture_scope(fn): fn must return the token that scope.complete(inputs, outputs) "
             "gives, got {got}")
SEEDING = "seeding is not supported during graph capture"

_ids = itertools.count(1)
_wrap = Tensor._wrap
_lock = threading.Lock()
# id -> CaptureDevice, weakly: a device lives while something (a tensor, a scope, the user's
# variable) refers to it; "capture:N" parses back while it does.  Ids are never reused.
_DEVICES: "weakref.WeakValueDictionary[int, CaptureDevice]" = weakref.WeakValueDictionary()
_SESSIONS: dict = {}   # id -> CaptureSession of the scope now open on that device


class _Ref:
    """A capture tensor's payload."""

    __slots__ = ("session", "ir", "value")

    def __init__(self, session, ir, value):
        self.session = session
        self.ir = ir
        self.value = value


class CaptureSession:
    """What one scope records: operations, initialized values, placeholders."""

    __slots__ = ("device", "open", "operations", "values", "placeholders", "tensors",
                 "produced", "consumed", "thread", "__weakref__")

    def __init__(self, device):
        self.device = device
        self.open = True
        # a scope records only the thread that opened it: another thread using the device or
        # its tensors meanwhile gets the scope error, as outside any scope
        self.thread = _get_ident()
        self.operations: list = []
        self.values: dict = {}          # id -> ndarray (init ops)
        self.placeholders: dict = {}    # id -> TensorIr (value-less inputs)
        self.tensors: dict = {}         # id -> TensorIr of everything known to the session
        self.produced: set = set()      # ids computed by a non-init op
        self.consumed: set = set()      # ids consumed by an in-place op (none in the public API)

    def tensor(self, shape, dtype, value=None, tid=None) -> Tensor:
        tid = new_id() if tid is None else tid
        ir = TensorIr(tid, shape, dtype)
        self.tensors[tid] = ir
        return Tensor._wrap(_Ref(self, ir, value), shape, dtype, self.device, tid)


class CompletionToken:
    """What ``scope.complete()`` returns; ``capture_scope(fn)``'s ``fn`` must return it."""

    __slots__ = ("scope", "graph")

    def __init__(self, scope, graph):
        self.scope = scope
        self.graph = graph

    def __repr__(self) -> str:
        return f"<CompletionToken of {self.scope.device}>"


class CaptureScope:
    """One capture scope on a device (a context manager; see ``CaptureDevice.capture_scope``)."""

    def __init__(self, device):
        self.device = device
        self._session = None
        self._graph = None
        self._token = None

    # ---- lifecycle ------------------------------------------------------------------
    def _open(self):
        if self._session is not None:
            raise CaptureError("AlreadyActive", ALREADY_ACTIVE)
        session = CaptureSession(self.device)
        with _lock:
            if self.device.id in _SESSIONS:
                raise CaptureError("AlreadyActive", ALREADY_ACTIVE)
            _SESSIONS[self.device.id] = session
        self._session = session

    def _close(self):
        session = self._session
        if session is None:
            return
        session.open = False
        with _lock:
            if _SESSIONS.get(self.device.id) is session:
                del _SESSIONS[self.device.id]

    def __enter__(self) -> "CaptureScope":
        self._open()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._close()
        if exc_type is None and self._token is None:
            raise CaptureError("Incomplete", INCOMPLETE)
        return False  # an exception from the block propagates unchanged

    # ---- inside the scope -------------------------------------------------------------
    def _live_session(self) -> CaptureSession:
        s = self._session
        if s is None or s.thread != _get_ident():
            raise CaptureScopeError(CAPTURE_SCOPE_REQUIRED)
        if not s.open:
            raise CaptureScopeError(CAPTURE_SCOPE_COMPLETE)
        return s

    def placeholder(self, shape, dtype=D.float32) -> Tensor:
        """A graph input with no example value; it must be declared in ``complete(inputs=...)``."""
        s = self._live_session()
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise ShapeError(f"placeholder: shape must be a tuple of ints, got {shape!r}")
        shape = shape_arg("placeholder", tuple(shape))
        t = s.tensor(shape, D.as_dtype(dtype))
        s.placeholders[t.id] = t._payload.ir
        return t

    def complete(self, inputs=(), outputs=()) -> CompletionToken:
        """Close the session, validate the boundaries and build the graph."""
        from .validate import boundary_ids, validate
        s = self._live_session()
        s.open = False  # closes at once, whether or not validation passes
        ins = boundary_ids("inputs", inputs)
        outs = boundary_ids("outputs", outputs)
        validate(s, ins, outs)
        tensors = dict(s.tensors)
        graph = CapturedGraph(s.operations, ins, outs, s.values, tensors)
        self._graph = graph
        self._token = CompletionToken(self, graph)
        return self._token

    @property
    def graph(self) -> CapturedGraph:
        """The ``CapturedGraph`` (after a successful ``complete()``)."""
        if self._graph is None:
            raise CaptureError("Incomplete", "the capture scope has no graph: complete() was not "
                                             "called or did not validate")
        return self._graph

    @property
    def active(self) -> bool:
        """True while the scope records (entered, not yet completed or ended)."""
        return self._session is not None and self._session.open

    def __repr__(self) -> str:
        state = "active" if self.active else ("complete" if self._graph is not None else "closed")
        return f"<CaptureScope on {self.device} ({state})>"


class CaptureDevice(Device):
    """A device that executes nothing: inside a scope it records every op into a graph."""

    __slots__ = ("id", "__weakref__")
    family = "capture"
    kind = "capture"

    def __new__(cls, _id=None):
        if _id is not None:  # internal: the registered device with this id
            return _DEVICES[_id]  # (KeyError once it is gone)
        self = object.__new__(cls)
        with _lock:
            n = next(_ids)
            object.__setattr__(self, "id", n)
            _DEVICES[n] = self
        return self

    def __init__(self, _id=None):
        pass

    def _key(self):
        return ("capture", self.id)

    def __str__(self) -> str:
        return f"capture:{self.id}"

    def __reduce__(self):
        return (_parse, (str(self),))

    # ---- scopes -----------------------------------------------------------------------
    def capture_scope(self, fn=None):
        """A capture scope: ``with dev.capture_scope() as scope:`` or ``graph = dev.capture_scope(fn)``
        where ``fn(scope)`` returns ``scope.complete(...)``."""
        scope = CaptureScope(self)
        if fn is None:
            return scope
        with scope:
            token = fn(scope)
            if token is not scope._token or token is None:
                raise CaptureError("Incomplete", BAD_TOKEN.format(got=type(token).__name__))
        return scope.graph

    @property
    def active(self) -> bool:
        """True while a scope records on this device."""
        s = _SESSIONS.get(self.id)
        return s is not None and s.open

    def _session(self) -> CaptureSession:
        s = _SESSIONS.get(self.id)
        if s is None or s.thread != _get_ident():
            raise CaptureScopeError(CAPTURE_SCOPE_REQUIRED)
        if not s.open:
            raise CaptureScopeError(CAPTURE_SCOPE_COMPLETE)
        return s

    # ---- the recorder (what plain devices' kernels do) -----------------------------------
    def execute(self, spec, args, attrs, plan) -> Tensor:
        """Record ``spec`` applied to ``args`` into the active session; nothing runs."""
        if spec.decompose is not None and not spec.record_whole:
            return spec.decompose(args, attrs)      # composite op: record its primitive ops
        shape, dtype = plan.shape, plan.dtype
        if not args:
            session = self._session()
            if spec.name == "init":
                value = np.array(attrs["value"], copy=True)
                out = session.tensor(shape, dtype, value)
                session.values[out.id] = value
                session.operations.append(OperationIr("init", (), (out._payload.ir,), {}))
                return out
            out = session.tensor(shape, dtype)
            session.produced.add(out.id)
            session.operations.append(OperationIr(spec.name, (), (out._payload.ir,),
                                                  _plain_attrs(attrs) if attrs else {}))
            return out
        session = None
        ins = []
        literal = False
        for a in args:
            if isinstance(a, Tensor):
                ref = a._payload
                s = ref.session
                if not s.open:
                    raise CaptureScopeError(CAPTURE_SCOPE_COMPLETE)
                session = s
                ins.append(ref.ir)
            else:
                literal = True
        if session is None:  # only scalar operands: the front end never does this
            session = self._session()
        elif session.thread != _get_ident():
            raise CaptureScopeError(CAPTURE_SCOPE_REQUIRED)
        rec = _plain_attrs(attrs) if attrs else {}
        ins = tuple(ins)
        # the operands in call order: the tensors' IR, Python scalars as literals
        operands = tuple([a._payload.ir if isinstance(a, Tensor) else _plain(a)
                          for a in args]) if literal else ins
        # session.tensor inlined: this is the per-op cost of recording
        tid = new_id()
        ir = TensorIr(tid, shape, dtype)
        session.tensors[tid] = ir
        session.produced.add(tid)
        session.operations.append(OperationIr(spec.name, operands, (ir,), rec, ins))
        return _wrap(_Ref(session, ir, None), shape, dtype, session.device, tid)

    def to_host(self, t):
        """The value of an initialized capture tensor (computed ones have none)."""
        v = t._payload.value
        if v is None:
            step = current_step()
            if step is not None and step.device is self:
                raise step.value_read_error(t)
            raise CaptureValueError(f"captured tensor {t.id} has no concrete value")
        return np.array(v, copy=True)

    def backward(self, t, retain_graph: bool = False):
        raise CaptureAutodiffError()

    def require_grad(self, t):
        raise CaptureAutodiffError()

    def seed(self, seed: int) -> None:
        raise CaptureError("Seeding", SEEDING)


# ---- attrs as plain values ----------------------------------------------------------------
_PLAIN = (bool, int, float, str, type(None))


def _plain(v):
    """A recorded attr/scalar value as plain Python data (tuples, slices, scalars, str)."""
    t = type(v)
    if t in _PLAIN:
        return v
    if t is tuple or t is list:
        return tuple(_plain(x) for x in v)
    if t is slice:
        return slice(_plain(v.start), _plain(v.stop), _plain(v.step))
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, D.DType):
        return v.name
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return np.array(v, copy=True)
    if isinstance(v, (bool, int, float, str)):  # subclasses (IntEnum, ...)
        return v
    raise ArgumentTypeError(f"capture: cannot record attribute value {v!r} of type {t.__name__}")


def _plain_attrs(attrs: dict) -> dict:
    return {k: (v if type(v) in _PLAIN else _plain(v)) for k, v in attrs.items()}


# ---- rt.device("capture:N") -------------------------------------------------------------------
def _parse(s: str) -> CaptureDevice:
    rest = s[len("capture:"):]
    if not rest.isdigit():
        raise DeviceError(f"cannot parse device {s!r}: the capture id must be an integer")
    n = int(rest)
    dev = _DEVICES.get(n)
    if dev is None:
        raise DeviceError(f"capture:{n} does not exist: create capture devices with "
                          f"rt.CaptureDevice()")
    return dev


register_device_parser("capture:", _parse)


def active_session(device) -> CaptureSession | None:
    """The open session of ``device`` in this thread (None when no scope records on it here)."""
    s = _SESSIONS.get(device.id)
    return s if s is not None and s.open and s.thread == _get_ident() else None
