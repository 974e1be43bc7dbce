"""Devices are immutable, hashable values.

A device knows how to *execute* a catalogue op on its operands.  Plain devices
(cpu, cuda:N) run their kernel set; decorator and recording devices (autodiff,
capture) subclass ``Device`` in their own packages and register a parser here.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable

import numpy as np

from . import kernel_sets as _kernel_sets
from . import lowprec as _lowprec
from . import random as _random
from .core import dtypes as D
from .core.errors import (DeviceError, DTypeError, IndexOutOfRangeError, OutOfMemoryError,
                          RequiresAutodiffError)
from .kernel_sets import KERNELS as _KERNELS, for_kind as _kernels_for_kind, supports
from .tensor import Tensor

__all__ = ["Device", "PlainDevice", "cpu", "cuda", "device", "devices", "default_device",
           "register_device_parser", "synchronize", "empty_cache"]

_wrap = Tensor._wrap


class Device:
    """Base class of every device value.  Subclasses define ``_key`` and ``__str__``."""

    __slots__ = ()
    family = "plain"      # "plain", "autodiff" or "capture": the rows of the movement table
    kind = "?"            # the kernel-set kind for plain devices
    # The small-op fast path (``dispatch``): ``fast_kind`` names the cached per-op decisions
    # this device's attr-less unary/binary ops may take (None: never; a plain device's kind;
    # an autodiff device's own name over a plain inner device), and a decorator device's
    # ``execute_fast(entry, args) -> Tensor | None`` runs such a decision (None: go the
    # general way).  A plain device's decisions are run by dispatch itself.
    fast_kind = None
    execute_fast = None

    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} values are immutable")

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    @property
    def innermost(self) -> "Device":
        """The device that finally stores values (self, except for decorator devices)."""
        return self

    # Autodiff hooks: only autodiff devices implement them.
    def require_grad(self, t):
        raise RequiresAutodiffError()

    def requires_grad(self, t) -> bool:
        return False

    def backward(self, t, retain_graph: bool = False):
        raise RequiresAutodiffError()

    def grad(self, t, grads, remove: bool = False):
        raise RequiresAutodiffError()

    def inner_tensor(self, t):
        raise RequiresAutodiffError()

    def detach(self, t):
        return t

    def dlpack(self, t, kwargs):
        """``t.__dlpack__(**kwargs)`` (``kwargs`` None: ``__dlpack_device__()``): only plain
        devices export (the decorator and recording devices' values are not plain arrays)."""
        raise DeviceError(f"{self}: DLPack export needs a tensor on a plain device; use "
                          f"t.detach().inner() on autodiff, and a captured graph's values are not "
                          f"exportable")

    def cuda_array_interface(self, t):
        """``t.__cuda_array_interface__``: AttributeError here (only plain cuda tensors have
        it; ``hasattr`` stays False)."""
        raise AttributeError(f"tensors on {self} have no __cuda_array_interface__ (only tensors "
                             f"on a plain cuda device do)")

    def seed(self, seed: int) -> None:
        """Reset this device's random stream (``rt.manual_seed``)."""
        _random.seed_device(self, seed)


#: how NumPy's ``ValueError`` begins when it refuses an allocation's size before trying it
_NUMPY_TOO_BIG = ("Maximum allowed dimension exceeded", "array is too big",
                  "Maximum allowed size exceeded")


class PlainDevice(Device):
    """A device whose ops run on a kernel set (``cpu``, ``cuda:N``)."""

    __slots__ = ("kind", "index", "fast_kind")

    def execute(self, spec, args, attrs, plan):
        """Run catalogue op ``spec`` on this device's kernel set (from the dispatch layer, the
        one module that maps a device to its kernels): the record's lowering, given the
        payloads and the rule's ``plan``; the kernels' IndexError and MemoryError become
        typed errors naming the op."""
        small = plan.dtype.emulated
        payloads = []
        for a in args:
            if isinstance(a, Tensor):
                payloads.append(a._payload)
                small = small or a.dtype.emulated
            else:
                payloads.append(a)
        if small and _lowprec.needs_upcast(spec, args, attrs, plan):   # the small dtypes
            return _lowprec.run_upcast(self, spec, args, attrs, plan)
        return self.run_kernel(spec, payloads, args, attrs, plan)

    def run_kernel(self, spec, payloads, args, attrs, plan):
        """``execute`` past its small-dtype check: the record's lowering on the payloads."""
        ks = _KERNELS.get(self.kind) or _kernels_for_kind(self.kind)
        try:
            out = spec.kernel(ks, payloads, args, attrs, plan, self)
        except IndexError as exc:  # kernels check index values, the only thing they see first
            raise IndexOutOfRangeError(f"{spec.name}: {exc} (input shapes "
                                       f"{', '.join(str(getattr(a, 'shape', ())) for a in args)})") from None
        except MemoryError:
            raise OutOfMemoryError(f"{spec.name}: cannot allocate the {plan.dtype.name} result of "
                                   f"shape {tuple(plan.shape)} on {self}") from None
        except ValueError as exc:   # NumPy refusing a size outright (a scratch array of an op)
            if not str(exc).startswith(_NUMPY_TOO_BIG):
                raise
            raise OutOfMemoryError(f"{spec.name}: cannot allocate the scratch space of the "
                                   f"{plan.dtype.name} result of shape {tuple(plan.shape)} on "
                                   f"{self} ({exc})"[:400]) from None
        return _wrap(out, plan.shape, plan.dtype, self)

    def to_host(self, t):
        """A NumPy array the caller owns with ``t``'s values."""
        try:
            a = self.kernels.to_host(t._payload)
            if a is t._payload or not a.flags.owndata:
                a = np.array(a, copy=True)
        except MemoryError:   # a broadcast view of a huge shape (expand, repeat_interleave)
            raise OutOfMemoryError(f"numpy: cannot allocate the {t.dtype.name} array of shape "
                                   f"{t.shape} on the host") from None
        return a

    def dlpack(self, t, kwargs):
        """``t``'s DLPack capsule from the kernel set (zero-copy), or with ``kwargs`` None its
        ``__dlpack_device__`` pair; DeviceError when the kernel set exports none."""
        ks = self.kernels
        if not supports(ks, "dlpack"):
            raise DeviceError(f"{self}: DLPack export is not supported on this device yet (the "
                              f"{self.kind} kernel set has no dlpack); move the tensor to cpu first")
        payload = t._payload
        if t.dtype.is_half:     # stored as uint16 bits: float16 exports as float16 on cpu
            if t.dtype is not D.float16 or self.kind != "cpu":
                raise DTypeError(f"__dlpack__: a {t.dtype.name} tensor on {self} cannot be "
                                 f"exported yet; call .float() first")
            payload = payload.view(np.float16)
        if kwargs is None:
            return ks.dlpack_device(payload)
        return ks.dlpack(payload, **kwargs)

    def cuda_array_interface(self, t):
        """``t``'s ``__cuda_array_interface__`` from the kernel set; AttributeError (so
        ``hasattr`` is False, as CuPy and Numba probe it) when the set exports none (cpu)."""
        ks = self.kernels
        if not supports(ks, "cuda_array_interface"):
            raise AttributeError(f"tensors on {self} have no __cuda_array_interface__ (only cuda "
                                 f"tensors do)")
        return ks.cuda_array_interface(t._payload)

    def from_cuda_array(self, obj, copy: bool) -> Tensor:
        """A tensor on this device viewing (``copy``: copying) the memory of an object exposing
        ``__cuda_array_interface__``."""
        ks = self.kernels
        if not supports(ks, "cuda_array_interface"):
            raise DeviceError(f"{self}: cannot import __cuda_array_interface__ memory (the "
                              f"{self.kind} kernel set has no from_cuda_array)")
        payload = ks.from_cuda_array(obj, self.index, copy)
        dt = D.from_numpy_dtype(np.dtype(payload.dtype), "from_dlpack")
        return _wrap(payload, tuple(payload.shape), dt, self)

    def __init__(self, kind: str, index: int = 0):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "index", int(index))
        object.__setattr__(self, "fast_kind", kind)

    def _key(self):
        return ("plain", self.kind, self.index)

    def __str__(self):
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    def __reduce__(self):
        return (PlainDevice, (self.kind, self.index))

    @property
    def kernels(self):
        """This device's kernel set."""
        return _KERNELS.get(self.kind) or _kernels_for_kind(self.kind)


_CPU = PlainDevice("cpu", 0)


def cpu() -> PlainDevice:
    """The CPU device (Numba, parallel)."""
    return _CPU


def cuda(index: int = 0) -> PlainDevice:
    """The CUDA device ``cuda:index``; raises DeviceError when no usable GPU/driver exists."""
    if not isinstance(index, int) or index < 0:
        raise DeviceError(f"cuda:{index}: the device index must be a non-negative int")
    try:
        count = _kernels_for_kind("cuda").device_count()
    except Exception as exc:  # import failure, driver failure: name the cause
        raise DeviceError(f"cuda:{index} is not usable: {type(exc).__name__}: {exc}") from None
    if index >= count:
        raise DeviceError(f"cuda:{index} is not usable: {count} CUDA device(s) found")
    return PlainDevice("cuda", index)


_PARSERS: dict[str, Callable[[str], Device]] = {}


def register_device_parser(prefix: str, parser: Callable[[str], Device]) -> None:
    """Let a device family parse strings that start with ``prefix`` (``capture``, ``autodiff``)."""
    _PARSERS[prefix] = parser


def device(spec) -> Device:
    """Parse ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"capture:3"``, ``"autodiff(cpu)"``."""
    return parse_device(spec)


def parse_device(spec, op: str | None = None) -> Device:
    """``device(spec)`` for a front end: a DeviceError's message starts with ``op`` (the
    name of the function the user called) when given."""
    if isinstance(spec, Device):
        return spec
    at = f"{op}: " if op else ""
    if not isinstance(spec, str):
        raise DeviceError(f"{at}cannot make a device from {spec!r}: expected a string like 'cpu' or 'cuda:0'")
    s = spec.strip()
    if s == "cpu":
        return _CPU
    if s == "cuda" or s.startswith("cuda:"):
        idx = s[5:] if s.startswith("cuda:") else "0"
        if not idx.isdigit():
            raise DeviceError(f"{at}cannot parse device {spec!r}: the cuda index must be an integer")
        return cuda(int(idx))
    for prefix, parser in _PARSERS.items():
        if s.startswith(prefix):
            try:
                return parser(s)
            except DeviceError as exc:      # (a family's own parse error, named for op too)
                if not at or str(exc).startswith(at):
                    raise
                raise DeviceError(at + str(exc)) from None
    raise DeviceError(f"{at}unknown device {spec!r}: expected 'cpu', 'cuda:N', 'capture:N' or 'autodiff(...)'")


def devices() -> list:
    """The usable plain devices: cpu, then each CUDA GPU that works."""
    out = [_CPU]
    try:
        n = _kernels_for_kind("cuda").device_count()
    except Exception:
        n = 0
    out.extend(PlainDevice("cuda", i) for i in range(n))
    return out


def cuda_unavailable_reason() -> str | None:
    """Why ``devices()`` lists no GPU (numba-cuda missing, no driver, no device), or None when
    at least one is usable."""
    try:
        ks = _kernels_for_kind("cuda")
    except ImportError as exc:
        return f"numba-cuda is not installed (pip install '.[cuda]'): {exc}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        ks.device_count()
    except Exception as exc:  # the kernel set names the cause (driver library, no GPU)
        return str(exc)
    return None


class _DefaultDevice(threading.local):
    def __init__(self):
        self.stack = [_CPU]


_default = _DefaultDevice()


@contextlib.contextmanager
def _using(d: Device):
    _default.stack.append(d)
    try:
        yield d
    finally:
        _default.stack.pop()


def default_device(d=None):
    """With no argument: the current default device (``cpu`` unless changed).
    With a device: a context manager that makes it the default in this thread."""
    if d is None:
        return _default.stack[-1]
    return _using(parse_device(d, "default_device"))


def current_default() -> Device:
    return _default.stack[-1]


def synchronize(device=None) -> None:
    """Wait for ``device``'s outstanding work (every usable device's, ``rt.devices()``, when
    None): on cuda the queued kernels; on cpu the kernel builds this process left to a
    background worker (after it, every kernel runs its final variant; benchmarks call it before
    timing)."""
    if device is None:
        targets = devices()
    else:
        d = getattr(parse_device(device, "synchronize"), "innermost", None)
        if not isinstance(d, PlainDevice):
            raise DeviceError(f"synchronize: {device} runs on no kernel set")
        targets = [d]
    for d in targets:
        ks = d.kernels
        if supports(ks, "synchronize"):
            ks.synchronize(d.index)


def empty_cache() -> None:
    """Release every cached device buffer (each loaded kernel set's ``empty_cache``), the
    cached per-op decisions and the compiled runners of composite ops and traced functions."""
    _kernel_sets.empty_caches()
