"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose2d``,
``ConvTranspose3d`` (PyTorch's arguments and
default init: kaiming-uniform weight with a=sqrt(5), bias uniform in ±1/sqrt(fan_in)).

``padding_mode`` other than ``"zeros"`` pads the input with ``pad`` first (reflect, replicate,
circular; ``padding="same"`` puts the odd pad at the end) and convolves without padding, as
PyTorch's layers do."""
from __future__ import annotations

import math

from ..core.errors import ArgumentValueError
from . import functional as F, init
from ..ops.args import int_arg
from ._make import bool_arg, factory, size_arg
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d", "ConvTranspose3d"]


PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _ints(layer: str, name: str, v, n: int, check=int_arg) -> tuple:
    """``_tuple`` of a layer's int-or-tuple argument, each entry an int (``check``: int_arg,
    or size_arg for sizes that may not be negative) refused with a typed error naming it."""
    return tuple(check(layer, name, d) for d in _tuple(v, n))


def _reversed_pads(padding, kernel, dilation) -> tuple:
    """``pad``'s amounts (last dimension first) for a conv's ``padding`` (ints, "valid" or
    "same", which puts the odd pad of an even kernel at the end)."""
    out = []
    for i in reversed(range(len(kernel))):
        if padding == "valid":
            lo = hi = 0
        elif padding == "same":
            tot = dilation[i] * (kernel[i] - 1)
            lo, hi = tot // 2, tot - tot // 2
        else:
            lo = hi = padding[i]
        out += [lo, hi]
    return tuple(out)


class _ConvNd(Module):
    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, output_padding=0, padding_mode="zeros", dtype=None,
                 device=None):
        super().__init__()
        n = self._n
        name = type(self).__name__
        if not isinstance(padding_mode, str) or padding_mode not in PADDING_MODES:
            raise ArgumentValueError(f"{name}: padding_mode must be one of {list(PADDING_MODES)}, "
                                     f"got {padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ArgumentValueError(f"{name}: only padding_mode='zeros' is supported, got "
                                     f"{padding_mode!r}")
        in_channels = size_arg(name, "in_channels", in_channels)
        out_channels = size_arg(name, "out_channels", out_channels)
        groups = int_arg(name, "groups", groups)
        kernel_size = _ints(name, "kernel_size", kernel_size, n, size_arg)
        stride, dilation = _ints(name, "stride", stride, n), _ints(name, "dilation", dilation, n)
        output_padding = _ints(name, "output_padding", output_padding, n)
        if not isinstance(padding, str):
            padding = _ints(name, "padding", padding, n)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ArgumentValueError(f"{name}: padding must be 'valid', 'same' or ints, got "
                                         f"{padding!r}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ArgumentValueError(f"{name}: padding='same' is not supported for strided "
                                         f"convolutions (stride={_tuple(stride, n)})")
        self.padding_mode = padding_mode
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
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(*shape))
        self.bias = Parameter(make(self.out_channels)) if bool_arg(name, "bias", bias) else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        w = self._parameters["weight"]
        init.kaiming_uniform_(w, a=math.sqrt(5))
        if self._parameters.get("bias") is not None:
            fan_in = w.shape[1] * math.prod(w.shape[2:])
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self._parameters["bias"], -bound, bound)

    def _conv_input(self, x):
        """(input, padding) for the functional conv: with a non-zeros ``padding_mode`` the
        input padded by ``pad`` in that mode and a padding of 0."""
        if self.padding_mode == "zeros":
            return x, self.padding
        pads = _reversed_pads(self.padding, self.kernel_size, self.dilation)
        return F.pad(x, pads, mode=self.padding_mode), 0

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
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) (or (C, L))."""

    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode=padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        x, padding = self._conv_input(x)
        return F.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) (or (C, H, W))."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode=padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        x, padding = self._conv_input(x)
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """The transposed 2-D convolution (the gradient of ``Conv2d`` w.r.t. its input)."""

    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, output_padding, padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) (or (C, D, H, W))."""

    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode=padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        x, padding = self._conv_input(x)
        return F.conv3d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class ConvTranspose3d(_ConvNd):
    """The transposed 3-D convolution (the gradient of ``Conv3d`` w.r.t. its input)."""

    _n = 3
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 dtype=None, device=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, output_padding, padding_mode, dtype=dtype, device=device)

    def forward(self, x):
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)
