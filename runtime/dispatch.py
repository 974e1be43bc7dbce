"""The dispatch layer: the one place that maps operands to a device and a device to kernels.

``dispatch(name, args, attrs)`` finds the operands' common device (SPEC §3 mixing
rules), runs the catalogue's shape/dtype rule, and hands the op to that device's
``execute``.  Plain devices execute here, through the kernel set that the registry in
``jit_kernels`` gives for their kind; decorator (autodiff) and recording (capture)
devices implement ``execute`` themselves and end up calling back into ``dispatch``
or ``execute_plain`` for their inner device.
"""
from __future__ import annotations

from .device import Device, PlainDevice
from .errors import DeviceError, DeviceMismatchError, IndexOutOfRangeError
from .ops.catalogue import CATALOGUE, OpSpec
from .tensor import Tensor

__all__ = ["dispatch", "create", "execute_plain", "kernels_for", "kernels_for_kind",
           "common_device", "run_fused"]

_KERNELS: dict = {}


def kernels_for_kind(kind: str):
    """The kernel set registered for a device kind (imported on first use)."""
    ks = _KERNELS.get(kind)
    if ks is None:
        import jit_kernels
        try:
            ks = jit_kernels.kernel_set_for(kind)
        except ImportError as exc:
            raise DeviceError(f"the {kind} kernel set cannot be loaded: {exc}") from None
        _KERNELS[kind] = ks
    return ks


def kernels_for(device: PlainDevice):
    return kernels_for_kind(device.kind)


def common_device(name: str, args) -> Device:
    """The device an op runs on; DeviceMismatchError when operands disagree (SPEC §3)."""
    dev = None
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            d = a.device
            if dev is None:
                dev = d
            elif d is not dev and d != dev:
                dev = _mix(name, dev, d)
    if dev is None:
        raise DeviceError(f"{name}: no tensor operand to take a device from")
    return dev


def _mix(name: str, d1: Device, d2: Device) -> Device:
    # A plain tensor on d may meet autodiff tensors on autodiff(d): it is an untracked constant.
    if d1.family == "autodiff" and d2.family != "autodiff" and d1.inner == d2:
        return d1
    if d2.family == "autodiff" and d1.family != "autodiff" and d2.inner == d1:
        return d2
    raise DeviceMismatchError(f"The provided tensors are not on the same backend: {d1} and {d2} "
                              f"(in {name})")


def dispatch(name: str, args: tuple, attrs: dict | None = None) -> Tensor:
    """Run catalogue op ``name`` on ``args`` (tensors and Python scalars)."""
    spec = CATALOGUE[name]
    attrs = {} if attrs is None else attrs
    device = common_device(name, args)
    shape, dtype = spec.infer(args, attrs)
    return device.execute(spec, args, attrs, shape, dtype)


def create(name: str, device: Device, attrs: dict) -> Tensor:
    """Run a creation op (no tensor operands) on ``device``."""
    spec = CATALOGUE[name]
    shape, dtype = spec.infer((), attrs)
    return device.execute(spec, (), attrs, shape, dtype)


def execute_plain(device: PlainDevice, spec: OpSpec, args, attrs, shape, dtype) -> Tensor:
    """Lower ``spec`` onto the kernel set of a plain device and wrap the result."""
    ks = kernels_for_kind(device.kind)
    payloads = [a._payload if isinstance(a, Tensor) else a for a in args]
    try:
        out = spec.kernel(ks, payloads, args, attrs, shape, dtype, device)
    except IndexError as exc:  # kernels check index values, the only thing they see first
        raise IndexOutOfRangeError(f"{spec.name}: {exc} (input shapes "
                                   f"{', '.join(str(getattr(a, 'shape', ())) for a in args)})") from None
    return Tensor._wrap(out, shape, dtype, device)


def run_fused(device: PlainDevice, program, tensors) -> tuple:
    """Run a fused program (``runtime.capture.fuse``) on ``device``'s kernel set; one tensor
    per program output.  DeviceError when the kernel set has no fused kernels."""
    from . import dtypes as D
    ks = kernels_for_kind(device.kind)
    fused = getattr(ks, "fused", None)
    if fused is None:
        raise DeviceError(f"{device}: the {device.kind} kernel set has no fused kernels")
    outs = fused(program, [t._payload for t in tensors])
    return tuple(Tensor._wrap(o, shape, D.as_dtype(dt), device)
                 for o, shape, dt in zip(outs, program.output_shapes, program.output_dtypes))


def to_host_plain(device: PlainDevice, t: Tensor):
    """A NumPy array the caller owns with ``t``'s values."""
    import numpy as np
    a = kernels_for_kind(device.kind).to_host(t._payload)
    if a is t._payload or not a.flags.owndata:
        a = np.array(a, copy=True)
    return a


# Plain devices execute and read back through their kernel set; this module is the only one
# that reaches kernel sets, so it installs both methods.
PlainDevice.execute = execute_plain
PlainDevice.to_host = to_host_plain
