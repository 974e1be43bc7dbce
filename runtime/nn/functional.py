"""``rt.nn.functional``: stateless network pieces with PyTorch's argument conventions.

Everything is written with the public tensor ops, so it runs on every device (capture
included: graphs and ONNX export see the primitives) and is differentiated by the autodiff
tape like any other op; ``linear`` and ``cross_entropy`` (its plain integer-target form) are
catalogue ops of their own (``runtime/ops/nn.py``), the activations composites
(``runtime/ops/activation.py``).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..core import dtypes as D
from ..core.errors import (ArgumentTypeError, ArgumentValueError, AxisError, DTypeError,
                           IndexOutOfRangeError, ShapeError)
from ..ops import api
from ..ops.activation import (celu, elu, glu, hardsigmoid, hardswish, hardtanh, leaky_relu,
                              logsigmoid, quick_gelu, relu6, selu, softmin, softsign)
from ..ops.elementwise import gelu, mish, relu, sigmoid, silu, softplus, tanh
from ..ops.args import bool_arg, int_arg, number_arg, tensor_arg
from ..ops.attention import attention_softmax as _attention_softmax
from ..ops.conv import conv1d, conv2d, conv3d, conv_transpose2d, conv_transpose3d, fold, unfold
from ..ops.pool import (adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, avg_pool2d, interpolate,
                        avg_pool3d, max_pool1d, max_pool2d, max_pool3d, max_unpool2d)
from ..ops.nn import cross_entropy as _ce_op, linear
from ..ops.rearrange import pad
from ..core.registry import CATALOGUE
from ..ops.reduce import log_softmax, softmax
from ..core.shapes import broadcast_shapes
from ..tensor import Tensor

__all__ = ["linear", "mse_loss", "cross_entropy", "dropout", "dropout2d",
           # activations
           "relu", "gelu", "silu", "mish", "softplus", "sigmoid", "tanh", "elu", "celu", "selu",
           "leaky_relu", "relu6", "hardtanh", "hardsigmoid", "hardswish", "logsigmoid",
           "softsign", "quick_gelu", "softmin", "softmax", "log_softmax", "glu",
           # convolution
           "conv1d", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose3d", "fold", "unfold",
           "pad",
           # pooling and resampling
           "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d",
           "adaptive_max_pool2d", "interpolate", "max_unpool2d", "max_pool3d", "avg_pool3d",
           # losses
           "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss",
           "smooth_l1_loss", "huber_loss", "kl_div", "cosine_similarity",
           # normalisation, embedding, attention
           "layer_norm", "group_norm", "rms_norm", "batch_norm", "batch_norm_stats", "normalize",
           "embedding", "scaled_dot_product_attention"]

REDUCTIONS = ("mean", "sum", "none")


# --------------------------------------------------------------------------- helpers
def _check_reduction(name: str, reduction, allowed=REDUCTIONS) -> None:
    # (a str test first: a tensor passed by mistake is never compared elementwise)
    if not isinstance(reduction, str) or reduction not in allowed:
        names = ", ".join(repr(r) for r in allowed[:-1]) + f" or {allowed[-1]!r}"
        raise ArgumentValueError(f"{name}: reduction must be {names}, got {reduction!r}")


def _reduce_loss(name: str, per_item: Tensor, reduction: str) -> Tensor:
    _check_reduction(name, reduction)
    if reduction == "mean":
        return api.mean(per_item)
    if reduction == "sum":
        return api.sum(per_item)
    return per_item


def _tensor(name: str, what: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentTypeError(f"{name}: {what} must be a Tensor, got {type(x).__name__}")
    return x


def _tensor_or_number(name: str, what: str, v):
    """``v`` when a tensor, a Python number (NumPy scalars unwrapped) when a number;
    ArgumentTypeError naming the argument for anything else."""
    if isinstance(v, Tensor):
        return v
    try:
        return number_arg(name, what, v)
    except ArgumentTypeError:
        raise ArgumentTypeError(f"{name}: {what} must be a Tensor or a number, got "
                                f"{type(v).__name__}") from None


def _int_array(name: str, what: str, v) -> np.ndarray:
    """Integer indices given as (nested) Python ints as an int64 array; ArgumentTypeError for
    anything else (None, strings, floats: NumPy would raise untyped or truncate)."""
    try:
        arr = np.asarray(v)
    except (ValueError, TypeError):         # ragged nesting
        arr = np.asarray([None])
    if arr.dtype.kind not in "iub" and arr.size:
        raise ArgumentTypeError(f"{name}: {what} must be a Tensor or integers, got "
                                f"{type(v).__name__}")
    return arr.astype(np.int64)


def _float_input(name: str, x) -> Tensor:
    x = _tensor(name, "input", x)
    if not x.dtype.is_float:
        raise DTypeError(f"{name}: input must be a float tensor, got {x.dtype.name}")
    return x


def _same_shape(name: str, input: Tensor, target, what="target") -> Tensor:
    """``target`` as a tensor on ``input``'s device with ``input``'s shape (ShapeError else)."""
    if not isinstance(target, Tensor):
        arr = np.asarray(target)
        if arr.dtype.kind not in "biuf":
            raise ArgumentTypeError(f"{name}: {what} must be a Tensor or numbers, got "
                                    f"{type(target).__name__}")
        target = api.tensor(arr, dtype=input.dtype, device=input.device)
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"{name}: {what} of shape {tuple(target.shape)} does not match input "
                         f"of shape {tuple(input.shape)}")
    return target


def _readable(t: Tensor) -> bool:
    """Whether ``t``'s values can be read now (not a capture tensor)."""
    return t.device.innermost.family != "capture"


def _channel_view(v: Tensor, ndim: int) -> Tensor:
    """A per-channel (C,) tensor shaped (C, 1, ..., 1) to broadcast over axis 1 of an
    ``ndim``-d input."""
    return api.reshape(v, (v.shape[0],) + (1,) * (ndim - 2))


# --------------------------------------------------------------------------- regression losses
def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or per-element) squared error."""
    input = _tensor("mse_loss", "input", input)
    _check_reduction("mse_loss", reduction)
    if isinstance(target, Tensor) and target.shape != input.shape:
        raise ShapeError(f"mse_loss: input of shape {input.shape} and target of shape "
                         f"{target.shape} differ")
    d = api.sub(input, _tensor_or_number("mse_loss", "target", target))
    return _reduce_loss("mse_loss", api.mul(d, d), reduction)


def l1_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or per-element) absolute error; the gradient at a tie is 0 (PyTorch)."""
    input = _float_input("l1_loss", input)
    _check_reduction("l1_loss", reduction)
    target = _same_shape("l1_loss", input, target)
    return _reduce_loss("l1_loss", api.abs(api.sub(input, target)), reduction)


def smooth_l1_loss(input: Tensor, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``beta=0``: L1)."""
    input = _float_input("smooth_l1_loss", input)
    _check_reduction("smooth_l1_loss", reduction)
    if beta < 0:
        raise ArgumentValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = api.abs(api.sub(input, _same_shape("smooth_l1_loss", input, target)))
    if beta == 0:
        return _reduce_loss("smooth_l1_loss", d, reduction)
    per = api.where(api.lt(d, beta), api.mul(api.mul(d, d), 0.5 / beta), api.sub(d, 0.5 * beta))
    return _reduce_loss("smooth_l1_loss", per, reduction)


def huber_loss(input: Tensor, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    input = _float_input("huber_loss", input)
    _check_reduction("huber_loss", reduction)
    if not delta > 0:
        raise ArgumentValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = api.abs(api.sub(input, _same_shape("huber_loss", input, target)))
    per = api.where(api.lt(d, delta), api.mul(api.mul(d, d), 0.5),
                    api.mul(api.sub(d, 0.5 * delta), delta))
    return _reduce_loss("huber_loss", per, reduction)


# --------------------------------------------------------------------------- classification
def _class_target(name: str, input: Tensor, target) -> Tensor:
    """An integer class-index target matching ``input`` (C,), (N, C) or (N, C, d1, ...)."""
    if not isinstance(target, Tensor):
        target = api.tensor(_int_array(name, "target", target), device=input.device)
    if not target.dtype.is_int:
        raise DTypeError(f"{name}: target must hold integer class indices, got "
                         f"{target.dtype.name}")
    want = () if input.ndim == 1 else tuple(input.shape[:1] + input.shape[2:])
    if tuple(target.shape) != want:
        raise ShapeError(f"{name}: target of shape {tuple(target.shape)} does not match input "
                         f"of shape {tuple(input.shape)} (expected {want})")
    return target


def _class_weight(name: str, weight, c: int):
    if weight is None:
        return None
    weight = _tensor(name, "weight", weight)
    if tuple(weight.shape) != (c,):
        raise ShapeError(f"{name}: weight of shape {tuple(weight.shape)} does not match the "
                         f"{c} classes (expected ({c},))")
    return weight


def _check_range(name: str, target: Tensor, c: int, ignore_index: int) -> None:
    """IndexOutOfRangeError for a class index outside [0, C) that is not ``ignore_index``."""
    if not _readable(target):
        return
    t = target.numpy()
    bad = t[((t < 0) | (t >= c)) & (t != ignore_index)]
    if bad.size:
        raise IndexOutOfRangeError(f"{name}: target {int(bad.flat[0])} is out of range for {c} "
                                   f"classes")


def _class_input(name: str, input) -> Tensor:
    input = _float_input(name, input)
    if input.ndim == 0:
        raise ShapeError(f"{name}: input must have a class axis, got a 0-d tensor")
    return input


def nll_loss(input: Tensor, target, weight=None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (C,), (N, C) or (N, C, d1, ...)
    at class indices ``target``; ``weight`` (C,) weighs each class, targets equal to
    ``ignore_index`` contribute nothing; the mean divides by the targets' total weight."""
    input = _class_input("nll_loss", input)
    _check_reduction("nll_loss", reduction)
    target = _class_target("nll_loss", input, target)
    c = input.shape[0 if input.ndim == 1 else 1]
    weight = _class_weight("nll_loss", weight, c)
    _check_range("nll_loss", target, c, ignore_index)
    if input.ndim == 1:                     # unbatched: one sample of C classes
        input, target = api.reshape(input, (1, c)), api.reshape(target, (1,))
    keep = api.ne(target, ignore_index)
    safe = api.where(keep, target, 0)       # an ignored target picks class 0, weighted by 0
    picked = api.squeeze(api.gather(input, 1, api.unsqueeze(safe, 1)), 1)
    w = api.cast(keep, input.dtype)
    if weight is not None:
        w = api.mul(w, api.take(weight, safe, axis=0))
    loss = api.neg(api.mul(picked, w))
    if reduction == "none":
        return api.reshape(loss, tuple(target.shape)) if target.ndim else loss
    if reduction == "sum":
        return api.sum(loss)
    return api.div(api.sum(loss), api.sum(w))


def _smoothing_term(logp, target, weight, ignore_index, reduction):
    """PyTorch's label-smoothing term: ``-sum_c w_c logp_c`` per item, 0 where ignored; its
    mean divides by the kept targets' total weight (their count without weights)."""
    if weight is not None:
        logp = api.mul(logp, _channel_view(weight, logp.ndim))
    keep = api.ne(target, ignore_index)
    per = api.where(keep, api.neg(api.sum(logp, axis=1)), 0.0)
    if reduction == "none":
        return per
    if reduction == "sum":
        return api.sum(per)
    w = api.cast(keep, logp.dtype)
    if weight is not None:
        w = api.mul(w, api.take(weight, api.where(keep, target, 0), axis=0))
    return api.div(api.sum(per), api.sum(w))


def _prob_target_ce(input, target, weight, label_smoothing, reduction):
    """Cross-entropy against class probabilities ``target`` (input's shape)."""
    c = input.shape[1]
    if label_smoothing:
        target = api.add(api.mul(target, 1.0 - label_smoothing), label_smoothing / c)
    logp = log_softmax(input, axis=1)
    prod = api.mul(logp, target)
    if weight is not None:
        prod = api.mul(prod, _channel_view(weight, input.ndim))
    per = api.neg(api.sum(prod, axis=1))
    if reduction == "mean":                 # over the items (not the weights), as PyTorch
        return api.div(api.sum(per), max(input.size // max(c, 1), 1))
    return _reduce_loss("cross_entropy", per, reduction)


def _class_rows(x: Tensor) -> Tensor:
    """(C,) or (N, C, d1, ..., dk) as (N * d1 * ... * dk, C): one row per item, classes last."""
    if x.ndim == 1:
        return api.reshape(x, (1, x.shape[0]))
    order = (0,) + tuple(range(2, x.ndim)) + (1,)
    items = math.prod(x.shape[:1] + x.shape[2:])
    return api.reshape(api.permute(x, order), (items, x.shape[1]))


def cross_entropy(input: Tensor, target, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits (N, C), unbatched (C,) or (N, C, d1, ..., dk) (class
    axis 1) against integer class indices (N,), () or (N, d1, ..., dk), or class
    probabilities (a float target of the logits' shape), with PyTorch's ``weight``,
    ``ignore_index`` (index targets) and ``label_smoothing``.

    The plain case (integer targets, no weight, no smoothing, no ignored target) is the
    native ``cross_entropy`` op.  A capture device cannot read the target, so there an
    ``ignore_index`` target counts as out of range unless ``weight`` or smoothing is given.
    A string third argument is the reduction (this module's older signature)."""
    if isinstance(weight, str):
        weight, reduction = None, weight
    logits = tensor_arg("cross_entropy", input)
    if not logits.dtype.is_float:
        logits = api.cast(logits, D.float32)
    label_smoothing = number_arg("cross_entropy", "label_smoothing", label_smoothing)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                                 f"{label_smoothing}")
    if logits.ndim == 0:
        raise ShapeError("cross_entropy: input must have a class axis, got a 0-d tensor")
    items = tuple(logits.shape[:1] + logits.shape[2:]) if logits.ndim > 1 else ()
    if isinstance(target, Tensor) and target.dtype.is_float \
            and tuple(target.shape) == tuple(logits.shape):
        _check_reduction("cross_entropy", reduction)
        weight = _class_weight("cross_entropy", weight, logits.shape[1 if logits.ndim > 1 else 0])
        if logits.ndim == 2:
            return _prob_target_ce(logits, target, weight, label_smoothing, reduction)
        loss = _prob_target_ce(_class_rows(logits), _class_rows(target), weight,
                               label_smoothing, reduction)
        return api.reshape(loss, items) if reduction == "none" else loss
    if not isinstance(target, Tensor):
        target = api.tensor(_int_array("cross_entropy", "target", target), device=logits.device)
    if logits.ndim != 2:
        # (C,) with a 0-d target and (N, C, d1, ..., dk) with (N, d1, ..., dk) targets are
        # the (N * d1 * ... * dk, C) case, class axis last (the same sums and means)
        if not target.dtype.is_int:
            raise DTypeError(f"cross_entropy: targets must be integer class indices, got "
                             f"{target.dtype.name}")
        if tuple(target.shape) != items:
            raise ShapeError(f"cross_entropy: target of shape {tuple(target.shape)} does not "
                             f"match logits of shape {tuple(logits.shape)} (expected {items})")
        loss = cross_entropy(_class_rows(logits), api.reshape(target, (math.prod(items),)),
                             weight, ignore_index, reduction, label_smoothing)
        return api.reshape(loss, items) if reduction == "none" else loss
    # the native rule's checks: the target's dtype and shape, the reduction
    CATALOGUE["cross_entropy"].infer((logits, target), {"reduction": reduction})
    c = logits.shape[1]
    weight = _class_weight("cross_entropy", weight, c)
    ignored = _readable(target) and bool((target.numpy() == ignore_index).any())
    if weight is None and not label_smoothing and not ignored:
        return _ce_op(logits, target, reduction)
    _check_range("cross_entropy", target, c, ignore_index)
    logp = log_softmax(logits, axis=1)
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return nll
    smooth = _smoothing_term(logp, target, weight, ignore_index, reduction)
    return api.add(api.mul(nll, 1.0 - label_smoothing), api.mul(smooth, label_smoothing / c))


def binary_cross_entropy(input: Tensor, target, weight=None, reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` on probabilities ``x``, each log clamped at -100
    (PyTorch's), times ``weight`` (broadcast to ``input``)."""
    input = _float_input("binary_cross_entropy", input)
    _check_reduction("binary_cross_entropy", reduction)
    target = _same_shape("binary_cross_entropy", input, target)
    if _readable(input) and input.size:
        x = input.numpy()
        if not ((x >= 0) & (x <= 1)).all():
            raise ArgumentValueError("binary_cross_entropy: every element of input must be "
                                     "between 0 and 1")
    log_x = api.clamp(api.log(input), min=-100.0)
    log_1mx = api.clamp(api.log(api.sub(1.0, input)), min=-100.0)
    per = api.neg(api.add(api.mul(target, log_x), api.mul(api.sub(1.0, target), log_1mx)))
    if weight is not None:
        per = api.mul(per, weight)
    return _reduce_loss("binary_cross_entropy", per, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target, weight=None,
                                     reduction: str = "mean", pos_weight=None) -> Tensor:
    """``binary_cross_entropy(sigmoid(x), t)`` computed stably from logits ``x``:
    ``(1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x)``, times ``weight``."""
    input = _float_input("binary_cross_entropy_with_logits", input)
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    target = _same_shape("binary_cross_entropy_with_logits", input, target)
    weight = None if weight is None else _tensor_or_number("binary_cross_entropy_with_logits",
                                                           "weight", weight)
    pos_weight = None if pos_weight is None else _tensor("binary_cross_entropy_with_logits",
                                                         "pos_weight", pos_weight)
    log_w = 1.0 if pos_weight is None else api.add(api.mul(api.sub(pos_weight, 1.0), target), 1.0)
    per = api.sub(api.mul(api.sub(1.0, target), input), api.mul(log_w, logsigmoid(input)))
    if weight is not None:
        per = api.mul(per, weight)
    return _reduce_loss("binary_cross_entropy_with_logits", per, reduction)


def kl_div(input: Tensor, target, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence with log-probabilities ``input``: ``t (log t - x)`` (0 where ``t == 0``),
    or ``exp(t) (t - x)`` with ``log_target``; ``reduction="batchmean"`` divides the sum by
    the batch size (PyTorch's ``"mean"`` divides by the element count)."""
    input = _float_input("kl_div", input)
    _check_reduction("kl_div", reduction, REDUCTIONS + ("batchmean",))
    target = _same_shape("kl_div", input, target)
    if log_target:
        per = api.mul(api.exp(target), api.sub(target, input))
    else:
        pos = api.gt(target, 0)
        xlogx = api.where(pos, api.mul(target, api.log(api.where(pos, target, 1.0))), 0.0)
        per = api.sub(xlogx, api.mul(target, input))
    if reduction == "batchmean":
        return api.div(api.sum(per), input.shape[0] if input.ndim else 1)
    return _reduce_loss("kl_div", per, reduction)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps))`` along ``dim`` (after broadcasting)."""
    x1 = _float_input("cosine_similarity", x1)
    x2 = _float_input("cosine_similarity", x2)
    dim = int_arg("cosine_similarity", "dim", dim)
    eps = number_arg("cosine_similarity", "eps", eps)
    if tuple(x1.shape) != tuple(x2.shape):
        shape = broadcast_shapes("cosine_similarity", x1.shape, x2.shape)
        x1, x2 = api.broadcast_to(x1, shape), api.broadcast_to(x2, shape)
    n1 = api.clamp(api.norm(x1, axis=dim, keepdims=True), min=eps)
    n2 = api.clamp(api.norm(x2, axis=dim, keepdims=True), min=eps)
    return api.sum(api.mul(api.div(x1, n1), api.div(x2, n2)), axis=dim)


# --------------------------------------------------------------------------- dropout
def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    The mask comes from ``rt.rand`` on ``x``'s device, so ``rt.manual_seed`` makes it
    reproducible.
    """
    x = tensor_arg("dropout", x)
    return _dropout("dropout", x, p, training, x.shape)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero whole channels of a (N, C, H, W) or unbatched (C, H, W) input with probability
    ``p`` (one draw per channel), scaling the rest by ``1/(1-p)``."""
    input = tensor_arg("dropout2d", input)
    if input.ndim not in (3, 4):
        raise ShapeError(f"dropout2d: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got "
                         f"shape {tuple(input.shape)}")
    lead = 1 if input.ndim == 3 else 2
    return _dropout("dropout2d", input, p, training,
                    tuple(input.shape[:lead]) + (1,) * (input.ndim - lead))


def _dropout(name, x, p, training, mask_shape):
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
        raise ArgumentTypeError(f"{name}: p must be a number, got {type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise ArgumentValueError(f"{name}: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return api.mul(x, 0)
    dt = x.dtype if x.dtype.is_float else D.float32
    keep = api.ge(api.rand(*mask_shape, dtype=dt, device=x.device), p)
    return api.mul(x, api.mul(api.cast(keep, dt), 1.0 / (1.0 - p)))

# --------------------------------------------------------------------------- normalisation
def _trailing_axes(name: str, input: Tensor, normalized_shape) -> tuple:
    try:
        ns = ((operator.index(normalized_shape),) if not isinstance(normalized_shape, (tuple, list))
              else tuple(operator.index(d) for d in normalized_shape))
    except TypeError:
        raise ShapeError(f"{name}: normalized_shape must be an int or a tuple of ints, got "
                         f"{normalized_shape!r}") from None
    k = len(ns)
    if k == 0 or k > input.ndim or tuple(input.shape[input.ndim - k:]) != ns:
        raise ShapeError(f"{name}: normalized_shape {ns} does not match the trailing dimensions "
                         f"of input of shape {tuple(input.shape)}")
    return ns, tuple(range(input.ndim - k, input.ndim))


def _affine_param(name: str, what: str, v, shape):
    if v is None:
        return None
    v = _tensor(name, what, v)
    if tuple(v.shape) != tuple(shape):
        raise ShapeError(f"{name}: {what} of shape {tuple(v.shape)} does not match "
                         f"{tuple(shape)}")
    return v


def _affine(y, weight, bias):
    if weight is not None:
        y = api.mul(y, weight)
    return y if bias is None else api.add(y, bias)


def _standardize(x, axes, eps):
    mu = api.mean(x, axis=axes, keepdims=True)
    var = api.var(x, axis=axes, keepdims=True)
    return api.mul(api.sub(x, mu), api.rsqrt(api.add(var, eps)))


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None,
               eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing ``normalized_shape``
    (biased variance, as PyTorch)."""
    input = _float_input("layer_norm", input)
    ns, axes = _trailing_axes("layer_norm", input, normalized_shape)
    weight = _affine_param("layer_norm", "weight", weight, ns)
    bias = _affine_param("layer_norm", "bias", bias, ns)
    return _affine(_standardize(input, axes, eps), weight, bias)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape``
    (``eps=None``: the dtype's machine epsilon, as PyTorch)."""
    input = _float_input("rms_norm", input)
    ns, axes = _trailing_axes("rms_norm", input, normalized_shape)
    weight = _affine_param("rms_norm", "weight", weight, ns)
    eps = float(D.finfo(input.dtype).eps) if eps is None else eps
    ms = api.mean(api.mul(input, input), axis=axes, keepdims=True)
    return _affine(api.mul(input, api.rsqrt(api.add(ms, eps))), weight, None)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None,
               eps: float = 1e-5) -> Tensor:
    """Standardise each of ``num_groups`` channel groups of a (N, C, *) input, then a
    per-channel ``weight``/``bias`` (C,)."""
    input = _float_input("group_norm", input)
    if input.ndim < 2:
        raise ShapeError(f"group_norm: input must be (N, C, *), got shape {tuple(input.shape)}")
    n, c = input.shape[:2]
    num_groups = int_arg("group_norm", "num_groups", num_groups)
    if num_groups <= 0 or c % num_groups:
        raise ArgumentValueError(f"group_norm: num_groups {num_groups} must divide the {c} "
                                 f"channels of input of shape {tuple(input.shape)}")
    weight = _affine_param("group_norm", "weight", weight, (c,))
    bias = _affine_param("group_norm", "bias", bias, (c,))
    g = api.reshape(input, (n, num_groups, -1) if input.size else (n, num_groups, 0))
    y = api.reshape(_standardize(g, (2,), eps), input.shape)
    w = None if weight is None else _channel_view(weight, input.ndim)
    b = None if bias is None else _channel_view(bias, input.ndim)
    return _affine(y, w, b)


def _bn_axes(name: str, input: Tensor) -> tuple:
    if input.ndim < 2:
        raise ShapeError(f"{name}: input must be (N, C) or (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    return (0,) + tuple(range(2, input.ndim))


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalisation over every axis but the channel axis 1: with the batch's mean and
    biased variance when ``training``, else the running stats (required then).  Only
    the output: tensors are immutable, so ``batch_norm_stats`` gives the updated stats."""
    input = _float_input("batch_norm", input)
    training = bool_arg("batch_norm", "training", training)
    eps = number_arg("batch_norm", "eps", eps)
    axes = _bn_axes("batch_norm", input)
    c = input.shape[1]
    weight = _affine_param("batch_norm", "weight", weight, (c,))
    bias = _affine_param("batch_norm", "bias", bias, (c,))
    w = None if weight is None else _channel_view(weight, input.ndim)
    b = None if bias is None else _channel_view(bias, input.ndim)
    if training:
        return _affine(_standardize(input, axes, eps), w, b)
    if running_mean is None or running_var is None:
        raise ArgumentValueError("batch_norm: running_mean and running_var must be given when "
                                 "not training")
    rm = _channel_view(_affine_param("batch_norm", "running_mean", running_mean, (c,)), input.ndim)
    rv = _channel_view(_affine_param("batch_norm", "running_var", running_var, (c,)), input.ndim)
    return _affine(api.mul(api.sub(input, rm), api.rsqrt(api.add(rv, eps))), w, b)


def batch_norm_stats(input: Tensor, running_mean, running_var, momentum: float = 0.1) -> tuple:
    """PyTorch's running-stat update for one training batch: ``(1 - momentum) * running +
    momentum * batch`` for the mean and for the unbiased variance (untracked values)."""
    input = _float_input("batch_norm_stats", input)
    axes = _bn_axes("batch_norm_stats", input)
    c = input.shape[1]
    rm = _affine_param("batch_norm_stats", "running_mean", running_mean, (c,))
    rv = _affine_param("batch_norm_stats", "running_var", running_var, (c,))
    x = input.detach() if input.requires_grad else input
    if input.size // max(c, 1) < 2:             # the unbiased variance needs two values
        raise ArgumentValueError(f"batch_norm_stats: expected more than 1 value per channel, "
                                 f"got input of shape {tuple(input.shape)}")
    mean = api.mean(x, axis=axes)
    var = api.var(x, axis=axes, ddof=1)
    return (api.add(api.mul(rm, 1.0 - momentum), api.mul(mean, momentum)),
            api.add(api.mul(rv, 1.0 - momentum), api.mul(var, momentum)))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``, with PyTorch's vector norms: ``p = 0`` counts
    the non-zero elements, ``p = inf`` / ``-inf`` take the largest / smallest magnitude, any other
    ``p`` (negative ones too) is ``(sum |x|**p)**(1/p)``."""
    input = _float_input("normalize", input)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p):
        raise ArgumentValueError(f"normalize: p must be a number, got {p!r}")
    if p == 2.0:
        n = api.norm(input, axis=dim, keepdims=True)
    elif p == 1.0:
        n = api.sum(api.abs(input), axis=dim, keepdims=True)
    elif p == math.inf:
        n = api.max(api.abs(input), axis=dim, keepdims=True)
    elif p == -math.inf:
        n = api.min(api.abs(input), axis=dim, keepdims=True)
    elif p == 0:
        n = api.sum(api.cast(api.ne(input, 0), input.dtype), axis=dim, keepdims=True)
    else:
        n = api.pow(api.sum(api.pow(api.abs(input), p), axis=dim, keepdims=True), 1.0 / p)
    return api.div(input, api.clamp(n, min=eps))


def embedding(input, weight: Tensor, padding_idx=None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) at the integer indices ``input`` (any shape);
    the rows at ``padding_idx`` get no gradient."""
    weight = _tensor("embedding", "weight", weight)
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    if not isinstance(input, Tensor):
        input = api.tensor(_int_array("embedding", "input", input), device=weight.device)
    if not input.dtype.is_int:
        raise DTypeError(f"embedding: indices must be an integer tensor, got {input.dtype.name}")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ArgumentValueError(f"embedding: padding_idx {padding_idx} is out of range for "
                                     f"{num} embeddings")
        padding_idx %= num
    try:
        rows = api.take(weight, input, axis=0)
    except IndexOutOfRangeError as exc:     # (take's bounds check, named for embedding)
        msg = str(exc)
        raise IndexOutOfRangeError("embedding:" + msg[len("take:"):] if msg.startswith("take:")
                                   else f"embedding: {msg}") from None
    if padding_idx is None or not weight.requires_grad:
        return rows
    # same values; the padding rows come from the untracked weight, so they get no gradient
    pad = api.unsqueeze(api.eq(input, padding_idx), -1)
    return api.where(pad, api.take(weight.detach(), input, axis=0), rows)


# --------------------------------------------------------------------------- attention
def _fits_scores(scores: Tensor, mask) -> bool:
    """The fused attention softmax applies: no mask, or one that broadcasts to the scores."""
    if mask is None:
        return True
    try:
        return broadcast_shapes("", tuple(scores.shape), tuple(mask.shape)) == tuple(scores.shape)
    except ShapeError:
        return False


#: causal attention over at least this many queries runs as two halves of the query rows:
#: the first half's products need only the first half of the keys (3/4 of the gemm work;
#: more, smaller blocks measured slower: each slice's gradient is a zero fill and an add)
_CAUSAL_SPLIT = 256


def _causal_halves(q, k, v, scale, dropout_p):
    """Causal attention as two blocks of query rows, each matmul -> fused softmax -> matmul
    over the keys it can see (an unsliced operand where a block sees all of it)."""
    L, S = q.shape[-2], k.shape[-2]
    outs = []
    for a, e in ((0, L // 2), (L // 2, L)):
        ke = min(e, S)
        qb = q[..., a:e, :]
        kb, vb = (k, v) if ke == S else (k[..., :ke, :], v[..., :ke, :])
        pb = _attention_softmax(api.matmul(qb, api.transpose(kb, -2, -1)), None, scale, True,
                                offset=a)
        if dropout_p:
            pb = dropout(pb, dropout_p)
        outs.append(api.matmul(pb, vb))
    return api.cat(outs, axis=-2)


def _gqa_heads(name: str, q: Tensor, k: Tensor, v: Tensor, enable_gqa: bool):
    """``k`` and ``v`` with their heads (axis -3) repeated over the query's head groups when
    ``enable_gqa`` (each group of Hq / Hkv query heads shares one key/value head, as PyTorch's
    ``repeat_interleave``); with it off, head counts must be equal or 1 (broadcast)."""
    if not enable_gqa:
        for what, t in (("key", k), ("value", v)):
            if (q.ndim >= 3 and t.ndim >= 3 and q.shape[-3] != t.shape[-3]
                    and 1 not in (q.shape[-3], t.shape[-3])):
                raise ShapeError(f"{name}: query has {q.shape[-3]} heads (dim -3) and {what} "
                                 f"{t.shape[-3]} (shapes {tuple(q.shape)} and "
                                 f"{tuple(t.shape)}); pass enable_gqa=True to share key/value "
                                 f"heads across groups of query heads")
        return k, v
    if min(q.ndim, k.ndim, v.ndim) < 3:
        raise AxisError(f"{name}: enable_gqa needs a heads dimension (-3): query, key and value "
                        f"of 3 or more dims, got shapes {tuple(q.shape)}, {tuple(k.shape)}, "
                        f"{tuple(v.shape)}")
    hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise ShapeError(f"{name}: the number of heads in key ({hk}) and value ({hv}) must "
                         f"divide the number of heads in query ({hq})")

    def repeat(t, h):
        if h == hq:
            return t
        s = tuple(t.shape)       # (..., H, S, E) -> (..., H, g, S, E) -> (..., H * g, S, E)
        wide = api.expand(api.unsqueeze(t, -3), *s[:-2], hq // h, *s[-2:])
        return api.reshape(wide, s[:-3] + (hq,) + s[-2:])
    return repeat(k, hk), repeat(v, hv)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale=None, enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` over (..., L, E) queries, (..., S, E) keys and
    (..., S, Ev) values: ``attn_mask`` boolean (True takes part) or additive, ``is_causal``
    masks keys after each query; ``scale`` defaults to ``1 / sqrt(E)``; ``enable_gqa`` lets
    key/value have fewer heads (dim -3) than the query, each shared by Hq / Hkv query heads."""
    name = "scaled_dot_product_attention"
    q, k, v = (_float_input(name, t) for t in (query, key, value))
    if min(q.ndim, k.ndim, v.ndim) < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"{name}: query {tuple(q.shape)}, key {tuple(k.shape)} and value "
                         f"{tuple(v.shape)} do not fit (..., L, E), (..., S, E), (..., S, Ev)")
    k, v = _gqa_heads(name, q, k, v, bool_arg(name, "enable_gqa", enable_gqa))
    is_causal = bool_arg(name, "is_causal", is_causal)
    if is_causal and attn_mask is not None:
        raise ArgumentValueError(f"{name}: give attn_mask or is_causal, not both")
    dropout_p = number_arg(name, "dropout_p", dropout_p)
    if scale is not None and not isinstance(scale, Tensor):
        scale = number_arg(name, "scale", scale)
    if not 0.0 <= dropout_p <= 1.0:
        raise ArgumentValueError(f"{name}: dropout_p must be in [0, 1], got {dropout_p}")
    L, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    if is_causal and _CAUSAL_SPLIT and L >= _CAUSAL_SPLIT and S and type(scale) in (int, float):
        return _causal_halves(q, k, v, scale, dropout_p)
    scores = api.matmul(q, api.transpose(k, -2, -1))   # (k^T read in place by the gemm)
    if attn_mask is not None:
        attn_mask = _tensor(name, "attn_mask", attn_mask)
        broadcast_shapes(name, tuple(scores.shape), tuple(attn_mask.shape))
    if type(scale) in (int, float) and _fits_scores(scores, attn_mask):
        # one fused row pass (scale, mask, max, exp, sum, normalise), its gradient another
        attn = _attention_softmax(scores, attn_mask, scale, is_causal)
        if dropout_p:
            attn = dropout(attn, dropout_p)
        return api.matmul(attn, v)
    if isinstance(scale, Tensor):
        broadcast_shapes(name, tuple(scores.shape), tuple(scale.shape))
    scores = api.mul(scores, scale)         # (a tensor scale, a mask widening the scores)
    if is_causal:
        rows = api.reshape(api.arange(L, device=q.device), (L, 1))
        attn_mask = api.ge(rows, api.arange(S, device=q.device))
    if attn_mask is not None:
        if attn_mask.dtype.is_bool:
            scores = api.where(attn_mask, scores, -math.inf)
        else:
            scores = api.add(scores, attn_mask)
    attn = softmax(scores, axis=-1)
    if dropout_p:
        attn = dropout(attn, dropout_p)
    return api.matmul(attn, v)
