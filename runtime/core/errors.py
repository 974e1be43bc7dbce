"""Every exception the runtime raises, rooted at TensorRuntimeError."""
from __future__ import annotations

__all__ = [
    "TensorRuntimeError", "CaptureScopeError", "CaptureMoveError", "CaptureAutodiffError",
    "CaptureValueError", "TracingError", "TracedValueError", "AutodiffMoveError",
    "AutodiffNotMarkedError", "RequiresAutodiffError",
    "NestedAutodiffError", "GradientError", "CaptureError", "GraphFileError", "DeviceMismatchError", "DeviceError",
    "ShapeError", "AxisError", "DTypeError", "IndexOutOfRangeError", "ArgumentTypeError",
    "ArgumentValueError", "UnsupportedOptionError", "OutOfMemoryError", "StateDictError", "CheckpointError",
    "DistributedDeviceError", "DistributedError", "DistributedTimeoutError", "LinAlgError",
]

CAPTURE_SCOPE_REQUIRED = "capture tensor operations must run inside CaptureDevice.capture_scope"
CAPTURE_SCOPE_COMPLETE = "capture scope is already complete"
CAPTURE_MOVE = "Cannot move a tensor from a capture device"
CAPTURE_AUTODIFF = "Capture tensors do not support autodiff"
AUTODIFF_MOVE = "Cannot move between autodiff and non-autodiff instances."
AUTODIFF_NOT_MARKED = "Operation not marked for autodiff."
REQUIRES_AUTODIFF = "Requires autodiff tensor."
NESTED_AUTODIFF = "Autodiff should not wrap an autodiff device."
DISTRIBUTED_DEVICE = "Distributed operations are not supported for device {device}"


class TensorRuntimeError(RuntimeError):
    """Base class of every error the runtime raises on purpose."""


class CaptureScopeError(TensorRuntimeError):
    """A capture-device operation outside an active scope, or after it completed."""


class CaptureMoveError(TensorRuntimeError):
    """A tensor was moved off a capture device (only initialized values may move)."""

    def __init__(self, message: str = CAPTURE_MOVE):
        super().__init__(message)


class CaptureAutodiffError(TensorRuntimeError):
    """backward() reached a tensor whose innermost device is a capture device."""

    def __init__(self, message: str = CAPTURE_AUTODIFF):
        super().__init__(message)


class CaptureValueError(TensorRuntimeError):
    """A capture tensor's data was read, or moved, but it has no concrete value."""


class TracingError(TensorRuntimeError):
    """``rt.compile`` cannot trace the function as written (a tensor it reads is neither an
    argument, a parameter, a buffer nor optimiser state; a trace inside a trace; ...)."""


class TracedValueError(TracingError, CaptureValueError):
    """A traced function read a tensor's value into Python (``.item()``, ``.numpy()``,
    ``bool()``, ``float()``): a compiled function runs without Python between its ops."""


class AutodiffMoveError(TensorRuntimeError):
    """A tensor was moved between an autodiff and a non-autodiff device."""

    def __init__(self, message: str = AUTODIFF_MOVE):
        super().__init__(message)


class AutodiffNotMarkedError(TensorRuntimeError):
    """A custom op without a backward rule was applied to tracked tensors."""

    def __init__(self, message: str = AUTODIFF_NOT_MARKED):
        super().__init__(message)


class RequiresAutodiffError(TensorRuntimeError):
    """An autodiff-only method was called on a tensor that is not an autodiff tensor."""

    def __init__(self, message: str = REQUIRES_AUTODIFF):
        super().__init__(message)


class NestedAutodiffError(TensorRuntimeError):
    """rt.autodiff() was given an autodiff device."""

    def __init__(self, message: str = NESTED_AUTODIFF):
        super().__init__(message)


class GradientError(TensorRuntimeError):
    """backward() cannot run: nothing requires grad, or the graph was already freed."""


class CaptureError(TensorRuntimeError):
    """A capture session/validation failure; ``.kind`` names which."""

    def __init__(self, kind: str, message: str, boundary: str | None = None,
                 tensor: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.boundary = boundary
        self.tensor = tensor


class GraphFileError(CaptureError, ValueError):
    """``load_graph``: the file is not a saved graph, or is damaged (``.kind`` is
    ``"BadGraphFile"``; a file that parses but whose ops disagree with its shapes gets
    ``CaptureError`` with ``.kind == "InvalidGraph"``)."""

    def __init__(self, message: str):
        super().__init__("BadGraphFile", message)


class DeviceMismatchError(TensorRuntimeError):
    """Operands of one operation live on different devices."""


class DeviceError(TensorRuntimeError):
    """A device cannot be created or used; the message names the device and the cause."""


class ShapeError(TensorRuntimeError, ValueError):
    """Shapes, axes or indices that do not fit the operation."""


class DTypeError(TensorRuntimeError, TypeError):
    """A dtype the operation does not accept."""


class IndexOutOfRangeError(ShapeError, IndexError):
    """An index value outside its axis (also an IndexError, as in NumPy and PyTorch)."""


class AxisError(ShapeError, IndexError):
    """An axis (``dim``) outside the tensor's dimensions; also an IndexError, as PyTorch raises
    (NumPy's ``AxisError`` is both as well)."""


class ArgumentTypeError(TensorRuntimeError, TypeError):
    """An argument of the wrong Python type (a list where a tensor is expected, ...); also a
    TypeError, as Python and NumPy raise."""


class ArgumentValueError(TensorRuntimeError, ValueError):
    """An argument value the operation does not accept (an unknown option, a non-finite
    ``arange`` bound, ...); also a ValueError."""


class UnsupportedOptionError(ArgumentValueError, NotImplementedError):
    """An option value the operation does not implement (an unknown padding mode); also a
    NotImplementedError, as PyTorch raises."""


class LinAlgError(TensorRuntimeError):
    """A matrix the linear-algebra op cannot factor: singular for ``rt.linalg.inv``/``solve``,
    not positive-definite for ``cholesky``; the message names the op and the batch element, as
    PyTorch's ``torch.linalg.LinAlgError`` (also a RuntimeError) does."""


class OutOfMemoryError(TensorRuntimeError, MemoryError):
    """A kernel set could not allocate an op's result; the message names the op, the shape
    and the dtype."""


class StateDictError(TensorRuntimeError):
    """``load_state_dict`` found missing or unexpected keys (strict) or values of another shape
    or dtype; the message lists every one, as PyTorch's does."""


class CheckpointError(TensorRuntimeError, ValueError):
    """A checkpoint file that cannot be read as one (``rt.load``): not safetensors, truncated,
    or holding a dtype the runtime has no tensor for; the message names the file and the cause."""


class DistributedDeviceError(TensorRuntimeError):
    """A collective (``rt.distributed``) was given a tensor whose device cannot take part: a
    capture device, or an autodiff device over one."""

    def __init__(self, device):
        super().__init__(DISTRIBUTED_DEVICE.format(device=device))
        self.device = device


class DistributedError(TensorRuntimeError):
    """``rt.distributed`` cannot go on: MPI missing or finalized, ranks that disagree (parameter
    shapes, a collective's shapes), a failed peer; the message names the op and the ranks."""


class DistributedTimeoutError(DistributedError):
    """A collective waited longer than ``rt.distributed``'s timeout for the other ranks (a rank
    failed or took another path); the world is unusable afterwards."""
