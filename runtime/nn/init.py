"""``rt.nn.init``: PyTorch's initialisers, drawn from the device's seeded stream.

Each ``*_`` function takes a ``Parameter`` and replaces its value (on the parameter's device;
``rt.manual_seed`` makes it reproducible) and returns the parameter.  Given a plain Tensor it
returns a new tensor of the same shape, dtype and device instead (tensors are immutable).
The layers call these with PyTorch's default per layer, so a seeded model has PyTorch's
statistics (not its exact values: the random streams differ).
"""
from __future__ import annotations

import math

from ..core.errors import ArgumentValueError, DTypeError, ShapeError
from ..ops import api
from ..ops.args import number_arg
from ..tensor import Tensor
from .module import Parameter, _onto, _plain

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """PyTorch's recommended gain for ``nonlinearity``."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if not isinstance(nonlinearity, str):   # (never compared elementwise, were it a tensor)
        raise ArgumentValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r:.60}")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(number_arg("calculate_gain", "param", param))
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _value(op: str, target, random: bool = False) -> Tensor:
    """The tensor ``target`` (a Parameter's value) that ``op`` replaces; ``random``: it must be
    a float tensor (the random draws are)."""
    value = target.value if isinstance(target, Parameter) else target
    if not isinstance(value, Tensor):
        raise ArgumentValueError(f"{op}: expected a Parameter or Tensor, got {type(target).__name__}")
    if random and not value.dtype.is_float:
        raise DTypeError(f"{op}: expected a float tensor, got {value.dtype.name}")
    return value


def _fans(op: str, t) -> tuple:
    shape = _value(op, t, random=True).shape
    if len(shape) < 2:
        raise ShapeError(f"{op}: fan in and fan out need at least 2 dimensions, got shape {shape}")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


def _set(op: str, target, make, random: bool = False):
    """Replace ``target``'s value with ``make(shape, dtype, plain device)``."""
    value = _value(op, target, random)
    dev = _plain(value).device
    new = make(value.shape, value.dtype, dev)
    if isinstance(target, Parameter):
        target.value = _onto(new, value.device)
        return target
    return _onto(new, value.device)


def _uniform(op, t, a, b):
    a, b = number_arg(op, "a", a), number_arg(op, "b", b)
    return _set(op, t, lambda s, dt, d: api.add(api.mul(api.rand(*s, dtype=dt, device=d), b - a), a),
                random=True)


def _normal(op, t, mean, std):
    mean, std = number_arg(op, "mean", mean), number_arg(op, "std", std)
    return _set(op, t, lambda s, dt, d: api.add(api.mul(api.randn(*s, dtype=dt, device=d), std), mean),
                random=True)


def uniform_(t, a: float = 0.0, b: float = 1.0):
    """Values uniform in [a, b)."""
    return _uniform("uniform_", t, a, b)


def normal_(t, mean: float = 0.0, std: float = 1.0):
    """Values from N(mean, std**2)."""
    return _normal("normal_", t, mean, std)


def _constant(op, t, val):
    val = number_arg(op, "val", val)
    return _set(op, t, lambda s, dt, d: api.full(s, val, dt, d))


def constant_(t, val: float):
    return _constant("constant_", t, val)


def zeros_(t):
    return _constant("zeros_", t, 0.0)


def ones_(t):
    return _constant("ones_", t, 1.0)


def xavier_uniform_(t, gain: float = 1.0):
    fan_in, fan_out = _fans("xavier_uniform_", t)
    a = number_arg("xavier_uniform_", "gain", gain) * math.sqrt(6.0 / (fan_in + fan_out))
    return _uniform("xavier_uniform_", t, -a, a)


def xavier_normal_(t, gain: float = 1.0):
    fan_in, fan_out = _fans("xavier_normal_", t)
    std = number_arg("xavier_normal_", "gain", gain) * math.sqrt(2.0 / (fan_in + fan_out))
    return _normal("xavier_normal_", t, 0.0, std)


def _kaiming_std(op, t, a, mode, nonlinearity):
    fan_in, fan_out = _fans(op, t)
    if not isinstance(mode, str) or mode not in ("fan_in", "fan_out"):
        raise ArgumentValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r:.60}")
    fan = fan_in if mode == "fan_in" else fan_out
    a = number_arg(op, "a", a)
    try:
        gain = calculate_gain(nonlinearity, a)
    except ArgumentValueError as exc:       # (named for the initialiser called)
        raise ArgumentValueError(f"{op}: {str(exc).split(': ', 1)[1]}") from None
    return gain / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", t, a, mode, nonlinearity)
    return _uniform("kaiming_uniform_", t, -bound, bound)


def kaiming_normal_(t, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    return _normal("kaiming_normal_", t, 0.0, _kaiming_std("kaiming_normal_", t, a, mode, nonlinearity))
