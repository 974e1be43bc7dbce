"""``rt.nn.init``: PyTorch's initialisers, drawn from the device's seeded stream.

Each ``*_`` function takes a ``Parameter`` and replaces its value (on the parameter's device;
``rt.manual_seed`` makes it reproducible) and returns the parameter.  Given a plain Tensor it
returns a new tensor of the same shape, dtype and device instead (tensors are immutable).
The layers call these with PyTorch's default per layer, so a seeded model has PyTorch's
statistics (not its exact values: the random streams differ).
"""
from __future__ import annotations

import math

from ..core.errors import ArgumentValueError, ShapeError
from ..ops import api
from ..tensor import Tensor
from .module import Parameter, _onto, _plain

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """PyTorch's recommended gain for ``nonlinearity``."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(shape) -> tuple:
    if len(shape) < 2:
        raise ShapeError(f"init: fan in and fan out need at least 2 dimensions, got shape {shape}")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


def _set(target, make):
    """Replace ``target``'s value with ``make(shape, dtype, plain device)``."""
    value = target.value if isinstance(target, Parameter) else target
    if not isinstance(value, Tensor):
        raise ArgumentValueError(f"init: expected a Parameter or Tensor, got {type(target).__name__}")
    dev = _plain(value).device
    new = make(value.shape, value.dtype, dev)
    if isinstance(target, Parameter):
        target.value = _onto(new, value.device)
        return target
    return _onto(new, value.device)


def uniform_(t, a: float = 0.0, b: float = 1.0):
    """Values uniform in [a, b)."""
    return _set(t, lambda s, dt, d: api.add(api.mul(api.rand(*s, dtype=dt, device=d), b - a), a))


def normal_(t, mean: float = 0.0, std: float = 1.0):
    """Values from N(mean, std**2)."""
    return _set(t, lambda s, dt, d: api.add(api.mul(api.randn(*s, dtype=dt, device=d), std), mean))


def constant_(t, val: float):
    return _set(t, lambda s, dt, d: api.full(s, val, dt, d))


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


def _shape(t):
    return (t.value if isinstance(t, Parameter) else t).shape


def xavier_uniform_(t, gain: float = 1.0):
    fan_in, fan_out = _fans(_shape(t))
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -a, a)


def xavier_normal_(t, gain: float = 1.0):
    fan_in, fan_out = _fans(_shape(t))
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(t, a, mode, nonlinearity):
    fan_in, fan_out = _fans(_shape(t))
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    bound = math.sqrt(3.0) * _kaiming_std(t, a, mode, nonlinearity)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    return normal_(t, 0.0, _kaiming_std(t, a, mode, nonlinearity))
