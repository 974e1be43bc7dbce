"""``AutodiffDevice``: a decorator device that forwards every op to its inner device and
records tracked ones on the tape."""
from __future__ import annotations

from ..device import Device, device as _parse_device, parse_device, register_device_parser
from ..core.errors import (ArgumentTypeError, ArgumentValueError, AutodiffNotMarkedError,
                           CaptureAutodiffError, DTypeError, NestedAutodiffError)
from ..tensor import Tensor
from ..capture.active import current_step
from . import tape
from .checkpoint import STRATEGIES
from .gradients import Gradients
from .grad_mode import _mode

from .tape import Node

__all__ = ["AutodiffDevice", "AutodiffValue", "autodiff", "from_inner"]


class AutodiffValue:
    """The payload of an autodiff tensor: its inner (plain) tensor and its tape node."""

    __slots__ = ("inner", "node")

    def __init__(self, inner: Tensor, node=None):
        self.inner = inner
        self.node = node


_AV = AutodiffValue
_new = Tensor._wrap


def _wrap(inner: Tensor, node, device) -> Tensor:
    return Tensor._wrap(AutodiffValue(inner, node), inner.shape, inner.dtype, device, id=inner.id)


class AutodiffDevice(Device):
    """``autodiff(inner)``: runs ``inner``'s kernels and records a tape for tracked tensors."""

    __slots__ = ("inner", "checkpointing", "fast_kind")
    family = "autodiff"
    kind = "autodiff"

    def __init__(self, inner, checkpointing: str = "none"):
        inner = _parse_device(inner)
        if inner.family == "autodiff":
            raise NestedAutodiffError()
        if checkpointing not in STRATEGIES:
            raise ArgumentValueError(f"autodiff: checkpointing must be one of {STRATEGIES}, "
                             f"got {checkpointing!r}")
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "checkpointing", checkpointing)
        # its own fast-path decisions (the inner kernel, then the tape) when the inner device is
        # plain; none over a recording device
        object.__setattr__(self, "fast_kind", None if inner.fast_kind is None else
                           f"autodiff({inner.fast_kind})")

    def _key(self):
        return ("autodiff", self.inner)     # checkpointing is not part of identity

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
    def _unwrap(self, args):
        """(inner operands, tape inputs, any tracked) of ``args`` (dispatch has checked their
        devices): an autodiff tensor gives its inner tensor (and its node when tracked); a
        plain tensor on the inner device or a Python scalar is a constant."""
        inner_args = []
        inputs = []
        tracked = False
        for a in args:
            if type(a) is Tensor or isinstance(a, Tensor):
                p = a._payload
                if type(p) is AutodiffValue:
                    inner_args.append(p.inner)
                    node = p.node
                    if node is not None:
                        tracked = True
                        inputs.append(node)
                    else:
                        inputs.append(p.inner)
                    continue
            inner_args.append(a)
            inputs.append(a)
        return tuple(inner_args), inputs, tracked

    def _result(self, spec, tracked: bool, attrs, inputs, out) -> Tensor:
        """The autodiff tensor of ``spec``'s inner result ``out``, with a tape node when it is
        recorded: tracked operands, grad mode on, a differentiable op, a float result."""
        node = None
        dtype = out.dtype
        if tracked and dtype.is_float and not _mode.disabled and spec.differentiable:
            node = Node(spec.backward, spec, attrs, tuple(inputs), out.shape, dtype, out.device,
                        out, self.checkpointing == "none" or spec.cost != "memory")
        return _new(_AV(out, node), out.shape, dtype, self, out.id)   # keep: checkpoint.keeps_output

    def execute(self, spec, args, attrs, plan) -> Tensor:
        inner_args, inputs, tracked = self._unwrap(args)
        if tracked and spec.backward is None and spec.differentiable and not _mode.disabled:
            if spec.decompose is not None:  # a composite: differentiated through its parts
                return spec.decompose(args, attrs)
            raise AutodiffNotMarkedError()
        # the plan is the outer rule's (same operand shapes and dtypes inside)
        out = self.inner.execute(spec, inner_args, attrs, plan)
        return self._result(spec, tracked, attrs, inputs, out)

    def execute_fast(self, ent, args):
        """A cached fast-path decision ``ent`` (dispatch's ``FastEntry``: these operand shapes and dtypes on
        this device, every tensor operand on it): the prepared kernel on the inner payloads,
        then the tape node; None (nothing run; dispatch goes the general way) for a tracked
        op that differentiates through its decomposition."""
        spec = ent.spec
        inner_args, inputs, tracked = self._unwrap(args)
        if tracked and spec.backward is None and spec.differentiable and not _mode.disabled:
            return None                         # (a composite's decomposition, or the error)
        if len(inner_args) == 2:
            a, b = inner_args
            p = ent.fn(a._payload if type(a) is Tensor else a, b._payload if type(b) is Tensor else b)
        elif len(inner_args) == 1:
            p = ent.fn(inner_args[0]._payload)
        else:
            p = ent.fn(*[a._payload if type(a) is Tensor else a for a in inner_args])
        out = _new(p, ent.shape, ent.dtype, self.inner)
        return self._result(spec, tracked, {}, inputs, out)

    def to_host(self, t):
        inner = t._payload.inner
        return inner.device.to_host(inner)

    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    # ---- autodiff hooks ----------------------------------------------------------------
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
            # a capture scope records no backward; rt.compile's trace derives one (the tape's
            # rules applied to the captured forward emit the backward ops into its graph)
            step = current_step()
            if step is None or step.device is not self.innermost:
                raise CaptureAutodiffError()
        node = t._payload.node
        if node is None:
            raise tape.not_tracked_error()
        return tape.run_backward(node, retain_graph)

    def grad(self, t, grads, remove: bool = False):
        if not isinstance(grads, Gradients):
            raise ArgumentTypeError(f"grad: expected the Gradients that backward() returned, got "
                            f"{type(grads).__name__}")
        node = t._payload.node
        if node is None or not node.is_leaf:
            return None
        return grads._get(node, remove)

    def inner_tensor(self, t) -> Tensor:
        return t._payload.inner

    def detach(self, t) -> Tensor:
        return _wrap(t._payload.inner, None, self)


_DEVICES: dict = {}      # (inner device, checkpointing) -> AutodiffDevice


def _device(inner, checkpointing: str) -> AutodiffDevice:
    """``AutodiffDevice(inner, checkpointing)``, one shared value per argument pair (devices are
    immutable), so operands lifted by ``from_inner`` step after step are on the very device
    object of ``rt.autodiff(...)`` and device checks succeed on identity."""
    key = (inner, checkpointing)
    try:
        d = _DEVICES.get(key)
    except TypeError:                       # an unhashable argument: let the constructor say so
        return AutodiffDevice(inner, checkpointing)
    if d is None:
        d = AutodiffDevice(inner, checkpointing)
        if len(_DEVICES) >= 256:
            _DEVICES.clear()
        _DEVICES[key] = d
    return d


_DEFAULT = object()


def autodiff(inner=_DEFAULT, checkpointing: str = "none") -> AutodiffDevice:
    """The autodiff device over ``inner`` (a device or a device string; when omitted, the
    default device)."""
    if inner is None:
        raise ArgumentTypeError("autodiff: expected a device or a device string such as 'cpu', "
                                "got None (call rt.autodiff() for the default device)")
    if inner is _DEFAULT:
        from ..device import current_default
        inner = current_default()
    return _device(parse_device(inner, "autodiff"), checkpointing)


def from_inner(t: Tensor, checkpointing: str = "none") -> Tensor:
    """Lift a plain tensor onto ``rt.autodiff(t.device)``, untracked, sharing its id."""
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"from_inner: expected a Tensor, got {type(t).__name__}")
    return _wrap(t, None, _device(t.device, checkpointing))


def _parse(s: str) -> AutodiffDevice:
    if not s.endswith(")"):
        from ..core.errors import DeviceError
        raise DeviceError(f"cannot parse device {s!r}: expected 'autodiff(<inner device>)'")
    return AutodiffDevice(_parse_device(s[len("autodiff("):-1]))


register_device_parser("autodiff(", _parse)
