"""``AutodiffDevice``: a decorator device that forwards every op to its inner device and
records tracked ones on the tape (SPEC §4)."""
from __future__ import annotations

from .. import dtypes as D
from ..device import Device, device as _parse_device, register_device_parser
from ..errors import (AutodiffNotMarkedError, CaptureAutodiffError, DTypeError,
                      NestedAutodiffError)
from ..tensor import Tensor
from . import tape
from .checkpoint import STRATEGIES
from .gradients import Gradients
from .grad_mode import _mode

from ..dispatch import dispatch as _dispatch  # noqa: E402

__all__ = ["AutodiffDevice", "AutodiffValue", "autodiff", "from_inner"]


class AutodiffValue:
    """The payload of an autodiff tensor: its inner (plain) tensor and its tape node."""

    __slots__ = ("inner", "node")

    def __init__(self, inner: Tensor, node=None):
        self.inner = inner
        self.node = node


def _wrap(inner: Tensor, node, device) -> Tensor:
    return Tensor._wrap(AutodiffValue(inner, node), inner.shape, inner.dtype, device, id=inner.id)


class AutodiffDevice(Device):
    """``autodiff(inner)``: runs ``inner``'s kernels and records a tape for tracked tensors."""

    __slots__ = ("inner", "checkpointing")
    family = "autodiff"
    kind = "autodiff"

    def __init__(self, inner, checkpointing: str = "none"):
        inner = _parse_device(inner)
        if inner.family == "autodiff":
            raise NestedAutodiffError()
        if checkpointing not in STRATEGIES:
            raise ValueError(f"autodiff: checkpointing must be one of {STRATEGIES}, "
                             f"got {checkpointing!r}")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "checkpointing", checkpointing)

    def _key(self):
        return ("autodiff", self.inner)     # checkpointing is not part of identity (SPEC §1)

    def __str__(self):
        return f"autodiff({self.inner})"

    def __repr__(self):
        extra = "" if self.checkpointing == "none" else f", checkpointing={self.checkpointing!r}"
        return f"Device('{self}'{extra})"

    def __reduce__(self):
        return (AutodiffDevice, (self.inner, self.checkpointing))

    @property
    def innermost(self) -> Device:
        return self.inner.innermost

    # ---- execution -------------------------------------------------------------------
    def execute(self, spec, args, attrs, shape, dtype) -> Tensor:
        inner_args = []
        inputs = []
        tracked = False
        for a in args:
            p = getattr(a, "_payload", None)
            if type(p) is AutodiffValue:
                inner_args.append(p.inner)
                if p.node is not None:
                    tracked = True
                    inputs.append(p.node)
                else:
                    inputs.append(p.inner)
            else:           # a plain tensor on the inner device, or a Python scalar: a constant
                inner_args.append(a)
                inputs.append(a)
        record = tracked and _mode.disabled == 0 and spec.differentiable
        if record and spec.backward is None:
            raise AutodiffNotMarkedError()
        if attrs:
            out = self.inner.execute(spec, tuple(inner_args), attrs, shape, dtype)
        else:   # attr-less ops go back through dispatch, which has a fast path for plain devices
            out = _dispatch(spec.name, tuple(inner_args), None)
        node = None
        if record and dtype.is_float:
            node = tape.record(spec.backward, spec, attrs, tuple(inputs), out, self.checkpointing)
        return Tensor._wrap(AutodiffValue(out, node), shape, dtype, self, id=out.id)

    def to_host(self, t):
        inner = t._payload.inner
        return inner.device.to_host(inner)

    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    # ---- autodiff hooks (SPEC §4) -------------------------------------------------------
    def require_grad(self, t) -> Tensor:
        if not t.dtype.is_float:
            raise DTypeError(f"require_grad: only float tensors can require gradients, got "
                             f"dtype {t.dtype.name} (cast to float32 or float64 first)")
        p = t._payload
        if p.node is None:
            p.node = tape.leaf(p.inner)
        return t

    def requires_grad(self, t) -> bool:
        return t._payload.node is not None

    def backward(self, t, retain_graph: bool = False) -> Gradients:
        if self.innermost.family == "capture":
            raise CaptureAutodiffError()
        node = t._payload.node
        if node is None:
            raise tape.not_tracked_error()
        return tape.run_backward(node, retain_graph)

    def grad(self, t, grads, remove: bool = False):
        if not isinstance(grads, Gradients):
            raise TypeError(f"grad: expected the Gradients that backward() returned, got "
                            f"{type(grads).__name__}")
        node = t._payload.node
        if node is None or not node.is_leaf:
            return None
        return grads._get(node, remove)

    def inner_tensor(self, t) -> Tensor:
        return t._payload.inner

    def detach(self, t) -> Tensor:
        return _wrap(t._payload.inner, None, self)


def autodiff(inner=None, checkpointing: str = "none") -> AutodiffDevice:
    """The autodiff device over ``inner`` (default: the default device)."""
    if inner is None:
        from ..device import current_default
        inner = current_default()
    return AutodiffDevice(inner, checkpointing)


def from_inner(t: Tensor, checkpointing: str = "none") -> Tensor:
    """Lift a plain tensor onto ``rt.autodiff(t.device)``, untracked, sharing its id."""
    if not isinstance(t, Tensor):
        raise TypeError(f"from_inner: expected a Tensor, got {type(t).__name__}")
    return _wrap(t, None, AutodiffDevice(t.device, checkpointing))


def _parse(s: str) -> AutodiffDevice:
    if not s.endswith(")"):
        from ..errors import DeviceError
        raise DeviceError(f"cannot parse device {s!r}: expected 'autodiff(<inner device>)'")
    return AutodiffDevice(_parse_device(s[len("autodiff("):-1]))


register_device_parser("autodiff(", _parse)
