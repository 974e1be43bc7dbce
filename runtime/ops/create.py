"""Creation ops (no tensor operands): ``init`` (a host value), ``full``, ``arange``, ``eye``,
``rand``, ``randn``, and the front-end functions built on them (``tensor``, ``zeros``, ...)."""
from __future__ import annotations

import builtins as _b
import math
import numbers

import numpy as np

from ..dispatch import create as make
from .. import dtypes as D
from ..errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..tensor import Tensor
from .args import device_arg, int_arg, shape_arg
from .registry import OpSpec, Plan, front_end, register
from .shapes import prod



# --------------------------------------------------------------------------- records
def _infer_init(args, attrs):
    v = attrs["value"]
    dt = D.from_numpy_dtype(v.dtype)
    return Plan(tuple(v.shape), dt, dt)


def _infer_create(args, attrs):
    dt = D.as_dtype(attrs["dtype"])
    return Plan(tuple(attrs["shape"]), dt, dt)


def _kernel_init(ks, p, args, attrs, plan, device):
    return ks.from_host(attrs["value"], device.index)


def _kernel_full(ks, p, args, attrs, plan, device):
    return ks.full(plan.shape, attrs["value"], plan.dtype.np, device.index)


def _kernel_arange(ks, p, args, attrs, plan, device):
    return ks.arange(attrs["start"], attrs["step"], plan.shape[0], plan.dtype.np, device.index)


def _kernel_eye(ks, p, args, attrs, plan, device):
    return ks.eye(plan.shape[0], plan.shape[1], plan.dtype.np, device.index)


def _random(name, onnx):
    def kernel(ks, p, args, attrs, plan, device):
        from .. import random as _random
        seed, offset = _random.take_offset(device, prod(plan.shape))
        return getattr(ks, name)(plan.shape, plan.dtype.np, seed, offset, device.index)

    def infer(args, attrs):
        shape, dt = _infer_create(args, attrs)[:2]
        if not dt.is_float:
            raise DTypeError(f"{name}: dtype must be float32 or float64, got {dt.name}")
        return Plan(shape, dt, dt)

    return register(OpSpec(name, "create", infer, kernel, differentiable=False, onnx=onnx))


# a graph's constants and inputs are ``init`` ops; the exporter writes them as initializers
register(OpSpec("init", "create", _infer_init, _kernel_init, differentiable=False,
                onnx_skip="exported as a graph initializer or input, not as a node"))
register(OpSpec("full", "create", _infer_create, _kernel_full, differentiable=False,
                onnx="Constant"))
register(OpSpec("arange", "create", _infer_create, _kernel_arange, differentiable=False,
                onnx="Constant"))
register(OpSpec("eye", "create", _infer_create, _kernel_eye, differentiable=False,
                onnx="Constant"))
_random("rand", "RandomUniform")
_random("randn", "RandomNormal")


# --------------------------------------------------------------------------- front end
@front_end
def tensor(data, dtype=None, device=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors)."""
    dev = device_arg(device)
    if isinstance(data, Tensor):
        t = data.to(dev)
        if dtype is None:
            return t
        from .elementwise import cast
        return cast(t, dtype)
    if isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
    else:
        try:
            arr = np.array(data)
        except (ValueError, TypeError, OverflowError):
            arr = np.empty(0, dtype=object)
        if arr.dtype == object or arr.dtype.kind in "USV":
            _reject_data(data)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float32)
        elif arr.dtype.kind in "iu":
            _check_int_range(arr, D.int64)
            arr = arr.astype(np.int64)
    if dtype is not None:
        dt = D.as_dtype(dtype)
        if arr.dtype.kind in "iu" and dt.is_int:
            _check_int_range(arr, dt)
        arr = arr.astype(dt.np)
    else:
        D.from_numpy_dtype(arr.dtype, "tensor")
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        arr = arr.copy(order="C")
    return make("init", dev, {"value": arr})


def _check_int_range(arr, dt) -> None:
    """DTypeError when integer data does not fit ``dt`` (nothing silently wraps)."""
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        for v in (lo, hi):
            D.check_scalar("tensor", v, dt)


def _reject_data(data):
    """The typed error for data NumPy cannot make a numeric array of."""
    def ints(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                yield from ints(y)
        elif type(x) is int:
            yield x
    big = next((v for v in ints(data) if not D.fits(v, D.int64)), None)
    if big is not None:
        D.check_scalar("tensor", big, D.int64)
    raise DTypeError(f"tensor: cannot make a tensor from ragged or non-numeric data {data!r}")


@front_end
def from_numpy(a, device=None) -> Tensor:
    """A tensor with ``a``'s values and dtype (shares memory on cpu; do not mutate ``a``)."""
    if not isinstance(a, np.ndarray):
        raise ArgumentTypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    D.from_numpy_dtype(a.dtype, "from_numpy")
    return make("init", device_arg(device), {"value": a})


@front_end
def from_dlpack(x, device=None) -> Tensor:
    """A tensor sharing the memory of a cpu DLPack exporter (a NumPy array, a PyTorch or JAX cpu
    tensor, another runtime tensor), zero-copy; moved to ``device`` when one is given."""
    if not hasattr(x, "__dlpack__"):
        raise ArgumentTypeError(f"from_dlpack: expected an object with __dlpack__, got "
                                f"{type(x).__name__}")
    try:
        arr = np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise ArgumentValueError(f"from_dlpack: cannot import {type(x).__name__} on cpu: "
                                 f"{exc}") from None
    t = from_numpy(arr)
    return t if device is None else t.to(device)


@front_end
def full(shape, value, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (dtype from the value when not given)."""
    shape = shape_arg("full", (shape,) if isinstance(shape, int) else tuple(shape))
    dt = D.scalar_dtype(value) if dtype is None else D.as_dtype(dtype)
    if isinstance(value, np.generic):
        value = value.item()
    D.check_scalar("full", value, dt)
    return make("full", device_arg(device), {"shape": shape, "dtype": dt.name, "value": value})


@front_end
def zeros(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype`` is given)."""
    return full(shape_arg("zeros", shape), 0, dtype or D.float32, device)


@front_end
def ones(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype`` is given)."""
    return full(shape_arg("ones", shape), 1, dtype or D.float32, device)


@front_end
def empty(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` (filled with zeros: uninitialised memory is never exposed;
    float32 unless ``dtype`` is given)."""
    return full(shape_arg("empty", shape), 0, dtype or D.float32, device)


@front_end
def zeros_like(t, dtype=None) -> Tensor:
    """Zeros of ``t``'s shape, dtype (or ``dtype``) and device."""
    return full(t.shape, 0, dtype or t.dtype, t.device)


@front_end
def ones_like(t, dtype=None) -> Tensor:
    """Ones of ``t``'s shape, dtype (or ``dtype``) and device."""
    return full(t.shape, 1, dtype or t.dtype, t.device)


@front_end
def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Values from ``start`` to ``stop`` (exclusive) by ``step``."""
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if not isinstance(v, (numbers.Real, np.generic)):
            raise ArgumentTypeError(f"arange: expected real numbers, got {v!r}")
        if not math.isfinite(v):
            raise ArgumentValueError(f"arange: start, stop and step must be finite, got "
                                     f"({start!r}, {stop!r}, {step!r})")
    if step == 0:
        raise ShapeError("arange: step must be non-zero")
    all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                  for v in (start, stop, step))
    dt = D.as_dtype(dtype) if dtype is not None else (D.int64 if all_int else D.float32)
    if all_int:                         # exact, and no value may wrap
        start, stop, step = int(start), int(stop), int(step)
        n = _b.max(0, -(-(stop - start) // step))
        if n:
            for v in (start, start + (n - 1) * step):
                D.check_scalar("arange", v, dt if dt.is_int else D.int64)
    else:
        n = _b.max(0, math.ceil((stop - start) / step))
    shape_arg("arange", (n,))
    return make("arange", device_arg(device),
                {"shape": (n,), "dtype": dt.name, "start": start, "step": step})


@front_end
def eye(n, m=None, dtype=None, device=None) -> Tensor:
    """The identity matrix (n×m; float32 unless ``dtype`` is given)."""
    m = n if m is None else m
    shape = shape_arg("eye", (n, m))
    return make("eye", device_arg(device), {"shape": shape, "dtype": D.as_dtype(dtype or D.float32).name})


@front_end
def rand(*shape, dtype=None, device=None) -> Tensor:
    """Uniform [0, 1) values from the device's seeded stream (float32 unless ``dtype``)."""
    return make("rand", device_arg(device),
                {"shape": shape_arg("rand", shape), "dtype": D.as_dtype(dtype or D.float32).name})


@front_end
def randn(*shape, dtype=None, device=None) -> Tensor:
    """Standard-normal values from the device's seeded stream (float32 unless ``dtype``)."""
    return make("randn", device_arg(device),
                {"shape": shape_arg("randn", shape), "dtype": D.as_dtype(dtype or D.float32).name})


@front_end
def manual_seed(seed: int, device=None) -> None:
    """Restart the random stream of ``device`` (all devices when None) at ``seed``."""
    from .. import random as _random
    seed = int_arg("manual_seed", "seed", seed)
    if device is None:
        _random.seed_all(seed)
    else:
        from ..device import device as _parse_device
        _parse_device(device).seed(seed)
