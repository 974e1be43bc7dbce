"""Normalisation layers: ``BatchNorm1d``/``BatchNorm2d`` (running statistics as buffers),
``LayerNorm``, ``GroupNorm``, ``RMSNorm`` (PyTorch's arguments and defaults: weight ones,
bias zeros)."""
from __future__ import annotations

from ..core import dtypes as D
from ..autodiff.grad_mode import no_grad
from ..core.errors import DTypeError, ShapeError
from ..ops import api
from ..ops.args import tensor_arg
from . import functional as F
from ._make import bool_arg, factory, float_arg, shape_arg, size_arg
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm", "RMSNorm"]


class _BatchNorm(Module):
    _ndims: tuple = ()
    _what = ""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, dtype=None, device=None):
        super().__init__()
        self.num_features = size_arg(type(self).__name__, "num_features", num_features)
        name = type(self).__name__
        self.eps = float_arg(name, "eps", eps)
        self.momentum = None if momentum is None else float_arg(name, "momentum", momentum)
        affine = bool_arg(name, "affine", affine)
        track_running_stats = bool_arg(name, "track_running_stats", track_running_stats)
        self.affine, self.track_running_stats = affine, track_running_stats
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(self.num_features, fill=1.0)) if affine else None
        self.bias = Parameter(make(self.num_features)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", make(self.num_features))
            self.register_buffer("running_var", make(self.num_features, fill=1.0))
            self.register_buffer("num_batches_tracked",
                                 api.zeros((), dtype=D.int64, device=device))

    def forward(self, x):
        name = type(self).__name__
        x = tensor_arg(name, x)
        if not x.dtype.is_float:
            raise DTypeError(f"{name}: input must be a float tensor, got {x.dtype.name}")
        if x.ndim not in self._ndims:
            raise ShapeError(f"{name}: expected {self._what}, got a tensor of shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ShapeError(f"{name}: expected {self.num_features} channels (dimension 1), got "
                             f"input of shape {x.shape}")
        batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked = api.add(self.num_batches_tracked, 1)
            momentum = self.momentum
            if momentum is None:            # a cumulative moving average, as PyTorch
                momentum = 1.0 / float(self.num_batches_tracked.item())
            with no_grad():
                mean, var = F.batch_norm_stats(x.detach(), self.running_mean, self.running_var,
                                               momentum)
            self.running_mean, self.running_var = mean, var
        running = not batch_stats
        return F.batch_norm(x, self.running_mean if running else None,
                            self.running_var if running else None, self.weight, self.bias,
                            training=batch_stats, momentum=self.momentum or 0.0, eps=self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, " \
               f"affine={self.affine}, track_running_stats={self.track_running_stats}"


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L)."""

    _ndims = (2, 3)
    _what = "2-D (N, C) or 3-D (N, C, L) input"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W)."""

    _ndims = (4,)
    _what = "4-D (N, C, H, W) input"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype=None, device=None):
        super().__init__()
        self.normalized_shape = shape_arg("LayerNorm", "normalized_shape", normalized_shape)
        self.eps = float_arg("LayerNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine = bool_arg("LayerNorm", "elementwise_affine",
                                                                elementwise_affine)
        bias = bool_arg("LayerNorm", "bias", bias)
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(*self.normalized_shape, fill=1.0)) if elementwise_affine else None
        self.bias = Parameter(make(*self.normalized_shape)) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 dtype=None, device=None):
        super().__init__()
        num_groups = size_arg("GroupNorm", "num_groups", num_groups)
        num_channels = size_arg("GroupNorm", "num_channels", num_channels)
        if num_groups <= 0 or num_channels % num_groups:
            from ..core.errors import ArgumentValueError
            raise ArgumentValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible "
                                     f"by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (
            int(num_groups), int(num_channels), float_arg("GroupNorm", "eps", eps),
            bool_arg("GroupNorm", "affine", affine))
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(self.num_channels, fill=1.0)) if affine else None
        self.bias = Parameter(make(self.num_channels)) if affine else None

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 dtype=None, device=None):
        super().__init__()
        self.normalized_shape = shape_arg("RMSNorm", "normalized_shape", normalized_shape)
        self.eps = None if eps is None else float_arg("RMSNorm", "eps", eps)
        self.elementwise_affine = elementwise_affine = bool_arg("RMSNorm", "elementwise_affine",
                                                                elementwise_affine)
        make = factory(dtype, device, type(self).__name__)
        self.weight = Parameter(make(*self.normalized_shape, fill=1.0)) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
