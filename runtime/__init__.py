"""A small Numba-JIT tensor runtime: devices, dispatch, autodiff and graph capture.

``import runtime as rt``; see docs/tour.md for a tour.  Importing compiles nothing.
"""
from __future__ import annotations

from .core import dtypes, errors
from .tensor import Tensor
from .device import Device, cpu, cuda, cuda_unavailable_reason, default_device, device, devices
from .core.dtypes import DType, bool_, float32, float64, int32, int64
from .core.dtypes import bfloat16, float16, int8, int16, uint8, uint32, uint64
from .core.errors import (ArgumentTypeError, ArgumentValueError, AutodiffMoveError, AxisError,
                     AutodiffNotMarkedError, CaptureAutodiffError, CaptureError, CaptureMoveError,
                     CaptureScopeError, CaptureValueError, TracedValueError, TracingError,
                     DeviceError, DeviceMismatchError, DTypeError, GradientError, GraphFileError,
                     IndexOutOfRangeError, NestedAutodiffError, RequiresAutodiffError,
                     OutOfMemoryError, ShapeError, TensorRuntimeError, UnsupportedOptionError)
from .core.errors import DistributedDeviceError, DistributedError, DistributedTimeoutError
from .core.errors import LinAlgError
from .device import empty_cache, synchronize
from .ops.movement import can_move
from .ops.api import *  # noqa: F403  (every front-end function: rt.add, rt.sum, ...)
from .ops import methods as _methods  # (installs the Tensor methods)
from . import nn
from .autodiff import *  # noqa: F403  (autodiff(), no_grad(), from_inner(), custom_op(), ...)
from .capture import *  # noqa: F403  (CaptureDevice, capture(), load_graph(), ...)
from . import data, optim
from . import linalg
from . import distributed
from .checkpoint import load, save
from .jit import CompiledFunction, compile  # (rt.compile shadows the builtin, as torch.compile)

bool = bool_
half = float16

__version__ = "0.1.0"


def is_autodiff(t) -> bool:
    """True when ``t`` is an autodiff tensor (never raises)."""
    return isinstance(t, Tensor) and t.device.family == "autodiff"


def is_capture(t) -> bool:
    """True when ``t``'s innermost device is a capture device (never raises)."""
    try:
        return isinstance(t, Tensor) and t.device.innermost.family == "capture"
    except Exception:
        return False
