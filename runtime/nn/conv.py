"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose2d`` (PyTorch's arguments and
default init: kaiming-uniform weight with a=sqrt(5), bias uniform in ±1/sqrt(fan_in))."""
from __future__ import annotations

import math

from ..core.errors import ArgumentValueError
from . import functional as F, init
from ._make import factory
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d"]


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, output_padding=0, dtype=None, device=None):
        super().__init__()
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ArgumentValueError(f"{type(self).__name__}: in_channels ({in_channels}) and "
                                     f"out_channels ({out_channels}) must be divisible by groups "
                                     f"({groups})")
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), groups
        self.kernel_size, self.stride, self.dilation = (_tuple(kernel_size, n), _tuple(stride, n),
                                                        _tuple(dilation, n))
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.output_padding = _tuple(output_padding, n)
        if self._transposed:
            shape = (self.in_channels, self.out_channels // groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // groups) + self.kernel_size
        make = factory(dtype, device)
        self.weight = Parameter(make(*shape))
        self.bias = Parameter(make(self.out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        w = self._parameters["weight"]
        init.kaiming_uniform_(w, a=math.sqrt(5))
        if self._parameters.get("bias") is not None:
            fan_in = w.shape[1] * math.prod(w.shape[2:])
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self._parameters["bias"], -bound, bound)

    def extra_repr(self) -> str:
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) (or (C, L))."""

    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, dtype=dtype, device=device)

    def forward(self, x):
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) (or (C, H, W))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, dtype=dtype, device=device)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose2d(_ConvNd):
    """The transposed 2-D convolution (the gradient of ``Conv2d`` w.r.t. its input)."""

    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, output_padding, dtype=dtype, device=device)

    def forward(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)
