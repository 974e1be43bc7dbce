"""Pooling and resampling layers: ``MaxPool2d``, ``AvgPool2d``, ``MaxPool3d``, ``AvgPool3d``,
``AdaptiveAvgPool2d``,
``AdaptiveMaxPool2d``, ``MaxUnpool2d``, ``Upsample``."""
from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "MaxUnpool2d",
           "Upsample", "MaxPool3d", "AvgPool3d"]


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, (kernel_size if stride is None else stride)
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, " \
               f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, (kernel_size if stride is None else stride)
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class MaxUnpool2d(Module):
    """``F.max_unpool2d`` as a layer: ``forward(input, indices, output_size=None)``."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, (kernel_size if stride is None else stride)
        self.padding = padding

    def forward(self, x, indices, output_size=None):
        return F.max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class Upsample(Module):
    """``F.interpolate`` as a layer (PyTorch's ``nn.Upsample``): 1-D, 2-D or 3-D inputs, modes
    "nearest", "nearest-exact", "linear", "bilinear", "trilinear"."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else \
            f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class MaxPool3d(MaxPool2d):
    """``F.max_pool3d`` as a layer, over (N, C, D, H, W) (or (C, D, H, W))."""

    def forward(self, x):
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """``F.avg_pool3d`` as a layer, over (N, C, D, H, W) (or (C, D, H, W))."""

    def forward(self, x):
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)
