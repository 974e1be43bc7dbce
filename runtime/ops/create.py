"""Creation ops (no tensor operands): ``init`` (a host value), ``full``, ``arange``, ``eye``,
``rand``, ``randn``, and the front-end functions built on them (``tensor``, ``zeros``, ...)."""
from __future__ import annotations

import builtins as _b
import math
import numbers

import numpy as np

from ..device import PlainDevice
from ..dispatch import create as make
from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ..tensor import Tensor
from .args import device_arg, dtype_arg, int_arg, number_arg, shape_arg
from ..core.registry import OpSpec, Plan, front_end, register
from ..core.shapes import prod



# --------------------------------------------------------------------------- records
def _infer_init(args, attrs):
    v = attrs["value"]
    d = attrs.get("dtype")      # given for the half types, whose storage is uint16 bits
    dt = D.from_numpy_dtype(v.dtype) if d is None else D.as_dtype(d)
    if d is not None and v.dtype != dt.np:
        raise DTypeError(f"init: a {dt.name} value must be stored as {dt.np}, got {v.dtype}")
    return Plan(tuple(v.shape), dt, dt)


def init_attrs(storage, dt) -> dict:
    """The attrs of an ``init`` op holding ``storage`` (a storage array of ``dt``)."""
    return {"value": storage, "dtype": dt.name} if dt.is_half else {"value": storage}


def from_storage(storage, dtype, device=None) -> Tensor:
    """A tensor of ``dtype`` whose storage array is ``storage`` (uint16 bits for float16 and
    bfloat16; the values otherwise), on ``device``."""
    return make("init", device_arg(device), init_attrs(storage, D.as_dtype(dtype)))


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


# ONNX lowerings (``OpSpec.onnx_lower``, called with the ONNX exporter, see ``elementwise``)
def _onnx_full(ex, op) -> str:
    t = op.outputs[0]
    return ex.const(np.full(t.shape, np.array(op.attrs["value"]).astype(t.dtype.np), t.dtype.np))


def _onnx_arange(ex, op) -> str:
    t = op.outputs[0]
    n = t.shape[0]
    start, step = op.attrs["start"], op.attrs["step"]
    if t.dtype.is_float:
        a = (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(t.dtype.np)
    else:
        a = (np.int64(int(start)) + np.arange(n, dtype=np.int64) * np.int64(int(step)))
        a = a != 0 if t.dtype.is_bool else a.astype(t.dtype.np)
    return ex.const(a)


def _onnx_eye(ex, op) -> str:
    t = op.outputs[0]
    return ex.const(np.eye(t.shape[0], t.shape[1], dtype=t.dtype.np))


def _onnx_rand(ex, op) -> str:
    t = op.outputs[0]
    return ex.node(ex.record(op), [], dtype=ex.elem(t.dtype), shape=list(t.shape), low=0.0, high=1.0)


def _onnx_randn(ex, op) -> str:
    t = op.outputs[0]
    return ex.node(ex.record(op), [], dtype=ex.elem(t.dtype), shape=list(t.shape), mean=0.0,
                   scale=1.0)


def _random(name, onnx, onnx_lower):
    def kernel(ks, p, args, attrs, plan, device):
        from .. import random as _random
        seed, offset = _random.take_offset(device, prod(plan.shape))
        return getattr(ks, name)(plan.shape, plan.dtype.np, seed, offset, device.index)

    def infer(args, attrs):
        shape, dt = _infer_create(args, attrs)[:2]
        if not dt.is_float:
            raise DTypeError(f"{name}: dtype must be float32 or float64, got {dt.name}")
        return Plan(shape, dt, dt)

    return register(OpSpec(name, "create", infer, kernel, differentiable=False, onnx=onnx,
                           onnx_lower=onnx_lower))


# a graph's constants and inputs are ``init`` ops; the exporter writes them as initializers
register(OpSpec("init", "create", _infer_init, _kernel_init, differentiable=False,
                onnx_skip="exported as a graph initializer or input, not as a node"))
register(OpSpec("full", "create", _infer_create, _kernel_full, differentiable=False, constant=True,
                onnx="Constant", onnx_lower=_onnx_full, uint64="modular"))
register(OpSpec("arange", "create", _infer_create, _kernel_arange, differentiable=False, constant=True,
                onnx="Constant", onnx_lower=_onnx_arange, uint64="modular"))
register(OpSpec("eye", "create", _infer_create, _kernel_eye, differentiable=False, constant=True,
                onnx="Constant", onnx_lower=_onnx_eye, uint64="modular"))
_random("rand", "RandomUniform", _onnx_rand)
_random("randn", "RandomNormal", _onnx_randn)


# --------------------------------------------------------------------------- front end
@front_end
def tensor(data, dtype=None, device=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors)."""
    if hasattr(data, "__cuda_array_interface__") and not isinstance(data, (Tensor, np.ndarray)):
        t = _from_cuda_array("tensor", data, device, copy=True)    # cuda memory: copied there
        return t if dtype is None else t.astype(dtype_arg("tensor", dtype))
    dev = device_arg(device, "tensor")
    if isinstance(data, Tensor):
        t = data.to(dev)
        if dtype is None:
            return t
        from .elementwise import cast
        return cast(t, dtype_arg("tensor", dtype))
    if isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
    else:
        try:
            arr = np.array(data)
        except (ValueError, TypeError, OverflowError):
            arr = np.empty(0, dtype=object)
        want = None if dtype is None else D.as_dtype(dtype, "tensor")
        if arr.dtype == object or arr.dtype.kind in "USV":
            _reject_data(data, want)
        if arr.dtype.kind == "f" and want is not None and want.is_int:
            arr = _exact_ints(data, arr, want)
        if arr.dtype.kind == "f" and not (want is not None and want.is_half):
            arr = arr.astype(np.float32)     # (to a half type: round once from the values)
        elif arr.dtype.kind in "iu" and not (want is not None and want.is_int):  # (checked below)
            _check_int_range(arr, D.int64)
            arr = arr.astype(np.int64)
    if dtype is not None:
        dt = D.as_dtype(dtype, "tensor")
        if arr.dtype.kind in "iu" and dt.is_int:
            _check_int_range(arr, dt)
        arr = D.storage_of(arr, dt)
    else:
        dt = D.from_numpy_dtype(arr.dtype, "tensor")
        if dt.is_half:
            arr = D.storage_of(arr, dt)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        arr = arr.copy(order="C")
    return make("init", dev, init_attrs(arr, dt))


def _exact_ints(data, arr, dt):
    """``data``'s Python ints as an array of int dtype ``dt`` where NumPy made floats of them
    (a value beyond int64's range: ``rt.tensor([2**63], dtype=rt.uint64)`` must not round);
    DTypeError for a value ``dt`` does not hold; ``arr`` itself when ``data`` holds a float."""
    obj = np.array(data, dtype=object)
    flat = obj.reshape(-1)
    if not all(type(v) is int or type(v) is bool for v in flat):
        return arr
    for v in (min(flat, default=0), max(flat, default=0)):
        D.check_scalar("tensor", v, dt)
    return obj.astype(dt.np)


def _check_int_range(arr, dt) -> None:
    """DTypeError when integer data does not fit ``dt`` (nothing silently wraps)."""
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        for v in (lo, hi):
            D.check_scalar("tensor", v, dt)


def _reject_data(data, dt=None):
    """The typed error for data NumPy cannot make a numeric array of (an int that int dtype
    ``dt``, int64 by default, does not hold)."""
    def ints(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                yield from ints(y)
        elif type(x) is int:
            yield x
    dt = dt if dt is not None and dt.is_int else D.int64
    big = next((v for v in ints(data) if not D.fits(v, dt)), None)
    if big is not None:
        D.check_scalar("tensor", big, dt)
    raise DTypeError(f"tensor: cannot make a tensor from ragged or non-numeric data {data!r}")


@front_end
def from_numpy(a, device=None) -> Tensor:
    """A tensor with ``a``'s values and dtype (shares memory on cpu; do not mutate ``a``)."""
    if not isinstance(a, np.ndarray):
        raise ArgumentTypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    dt = D.from_numpy_dtype(a.dtype, "from_numpy")
    if dt.is_half:
        a = a.view(np.uint16)         # its bits: shares the memory
    return make("init", device_arg(device, "from_numpy"), init_attrs(a, dt))


def _from_cuda_array(op, obj, device, copy):
    """A tensor viewing (``copy``: copying) ``__cuda_array_interface__`` memory on cuda
    ``device`` (default ``cuda:0``; any other device: imported on cuda:0, then moved)."""
    desc = obj.__cuda_array_interface__
    D.from_numpy_dtype(np.dtype(desc["typestr"]), op)
    dev = device_arg("cuda:0" if device is None else device, op)
    target = dev
    if not (isinstance(dev, PlainDevice) and dev.kind == "cuda"):
        target = device_arg("cuda:0")
    try:
        t = target.from_cuda_array(obj, copy)
    except (ValueError, NotImplementedError) as exc:
        raise ArgumentValueError(f"{op}: cannot import {type(obj).__name__} through "
                                 f"__cuda_array_interface__: {exc}") from None
    return t if target is dev else t.to(dev)


@front_end
def from_dlpack(x, device=None) -> Tensor:
    """A tensor sharing the memory of a cpu DLPack exporter (a NumPy array, a PyTorch or JAX cpu
    tensor, another runtime tensor), zero-copy; moved to ``device`` when one is given.  An
    object exposing ``__cuda_array_interface__`` (a Numba device array, CuPy, a PyTorch cuda
    tensor) is viewed zero-copy on the cuda device (``device``, default ``cuda:0``)."""
    if hasattr(x, "__cuda_array_interface__") and not isinstance(x, (Tensor, np.ndarray)):
        return _from_cuda_array("from_dlpack", x, device, copy=False)
    if not hasattr(x, "__dlpack__"):
        raise ArgumentTypeError(f"from_dlpack: expected an object with __dlpack__ or "
                                f"__cuda_array_interface__, got {type(x).__name__}")
    try:
        arr = np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise ArgumentValueError(f"from_dlpack: cannot import {type(x).__name__} on cpu: "
                                 f"{exc}") from None
    t = from_numpy(arr)
    return t if device is None else t.to(device_arg(device, "from_dlpack"))


@front_end
def full(shape, value, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (dtype from the value when not given)."""
    if not isinstance(shape, (int, np.integer, tuple, list)):
        raise ShapeError(f"full: shape must be an int or a tuple of ints, got {shape!r}")
    shape = shape_arg("full", (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))
    value = number_arg("full", "fill value", value)
    dt = D.scalar_dtype(value) if dtype is None else D.as_dtype(dtype, "full")
    D.check_scalar("full", value, dt)
    return make("full", device_arg(device, "full"), {"shape": shape, "dtype": dt.name, "value": value})


@front_end
def zeros(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype`` is given)."""
    return full(shape_arg("zeros", shape), 0, dtype_arg("zeros", dtype, D.float32),
                device_arg(device, "zeros"))


@front_end
def ones(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype`` is given)."""
    return full(shape_arg("ones", shape), 1, dtype_arg("ones", dtype, D.float32),
                device_arg(device, "ones"))


@front_end
def empty(*shape, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` (filled with zeros: uninitialised memory is never exposed;
    float32 unless ``dtype`` is given)."""
    return full(shape_arg("empty", shape), 0, dtype_arg("empty", dtype, D.float32),
                device_arg(device, "empty"))


@front_end
def zeros_like(t, dtype=None) -> Tensor:
    """Zeros of ``t``'s shape, dtype (or ``dtype``) and device."""
    t = _like("zeros_like", t)
    return full(t.shape, 0, dtype_arg("zeros_like", dtype, t.dtype), t.device)


@front_end
def ones_like(t, dtype=None) -> Tensor:
    """Ones of ``t``'s shape, dtype (or ``dtype``) and device."""
    t = _like("ones_like", t)
    return full(t.shape, 1, dtype_arg("ones_like", dtype, t.dtype), t.device)


def _no_bool_range(op, dt):
    """A range of booleans is refused (PyTorch refuses it; a cast would make every value after
    the first zero True)."""
    if dt is D.bool_:
        raise DTypeError(f"{op}: dtype bool is not supported (a range of values has no boolean "
                         f"form; cast the result instead)")


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
    dt = dtype_arg("arange", dtype, D.int64 if all_int else D.float32)
    _no_bool_range("arange", dt)
    if all_int:                         # exact, and no value may wrap
        start, stop, step = int(start), int(stop), int(step)
        n = _b.max(0, -(-(stop - start) // step))
        if n:
            for v in (start, start + (n - 1) * step):
                D.check_scalar("arange", v, dt if dt.is_int else D.int64)
    else:
        n = _b.max(0, math.ceil((stop - start) / step))
    shape_arg("arange", (n,))
    return make("arange", device_arg(device, "arange"),
                {"shape": (n,), "dtype": dt.name, "start": start, "step": step})


@front_end
def eye(n, m=None, dtype=None, device=None) -> Tensor:
    """The identity matrix (n×m; float32 unless ``dtype`` is given)."""
    m = n if m is None else m
    shape = shape_arg("eye", (n, m))
    return make("eye", device_arg(device, "eye"),
                {"shape": shape, "dtype": dtype_arg("eye", dtype, D.float32).name})


@front_end
def rand(*shape, dtype=None, device=None) -> Tensor:
    """Uniform [0, 1) values from the device's seeded stream (float32 unless ``dtype``)."""
    return make("rand", device_arg(device, "rand"),
                {"shape": shape_arg("rand", shape), "dtype": dtype_arg("rand", dtype, D.float32).name})


@front_end
def randn(*shape, dtype=None, device=None) -> Tensor:
    """Standard-normal values from the device's seeded stream (float32 unless ``dtype``)."""
    return make("randn", device_arg(device, "randn"),
                {"shape": shape_arg("randn", shape), "dtype": dtype_arg("randn", dtype, D.float32).name})


@front_end
def manual_seed(seed: int, device=None) -> None:
    """Restart the random stream of ``device`` (all devices when None) at ``seed``."""
    from .. import random as _random
    seed = int_arg("manual_seed", "seed", seed)
    if device is None:
        _random.seed_all(seed)
    else:
        device_arg(device, "manual_seed").seed(seed)


# --------------------------------------------------------------------------- more creation and
# random ops.  linspace/logspace are computed on the host in float64 (deterministic: a
# captured graph holds them as constants); every random op below draws from the device's
# counter-based stream through ``rand``/``randn`` records and elementwise ops, so it is
# reproducible with ``rt.manual_seed``, runs on every device, and records into a capture scope.
# Value checks that need the data (probabilities in [0, 1], ...) are skipped on capture tensors.
def _real(op, name, v):
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.generic)):
        raise ArgumentTypeError(f"{op}: {name} must be a real number, got {v!r}")
    v = v.item() if isinstance(v, np.generic) else v
    if not math.isfinite(v):
        raise ArgumentValueError(f"{op}: {name} must be finite, got {v!r}")
    return v


def _steps(op, steps):
    steps = int_arg(op, "steps", steps)
    if steps < 0:
        raise ArgumentValueError(f"{op}: steps must be non-negative, got {steps}")
    return steps


def _linspace64(start, end, steps):
    """PyTorch's linspace in float64: from both ends, so the last value is exactly ``end``."""
    if steps == 1:
        return np.array([start], np.float64)
    i = np.arange(steps, dtype=np.float64)
    step = (end - start) / (steps - 1)
    half = steps // 2
    return np.where(i < half, start + i * step, end - (steps - 1 - i) * step)


@front_end
def linspace(start, end, steps, dtype=None, device=None) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end`` (both included), float32 unless
    ``dtype`` (ints truncate toward zero, as PyTorch)."""
    start, end = _real("linspace", "start", start), _real("linspace", "end", end)
    a = _linspace64(float(start), float(end), _steps("linspace", steps))
    dt = dtype_arg("linspace", dtype, D.float32)
    _no_bool_range("linspace", dt)
    return tensor(a, dtype=dt, device=device_arg(device, "linspace"))


@front_end
def logspace(start, end, steps, base=10.0, dtype=None, device=None) -> Tensor:
    """``base ** linspace(start, end, steps)`` (float32 unless ``dtype``)."""
    start, end = _real("logspace", "start", start), _real("logspace", "end", end)
    base = _real("logspace", "base", base)
    with np.errstate(over="ignore"):
        a = np.power(float(base), _linspace64(float(start), float(end), _steps("logspace", steps)))
    dt = dtype_arg("logspace", dtype, D.float32)
    _no_bool_range("logspace", dt)
    return tensor(a, dtype=dt, device=device_arg(device, "logspace"))


def _like(op, t):
    if not isinstance(t, Tensor):
        raise ArgumentTypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    return t


@front_end
def full_like(t, fill_value, dtype=None, device=None) -> Tensor:
    """``fill_value`` in ``t``'s shape, dtype (or ``dtype``) and device (or ``device``)."""
    t = _like("full_like", t)
    fill_value = number_arg("full_like", "fill_value", fill_value)
    return full(t.shape, fill_value, dtype_arg("full_like", dtype, t.dtype),
                t.device if device is None else device_arg(device, "full_like"))


@front_end
def empty_like(t, dtype=None, device=None) -> Tensor:
    """A tensor of ``t``'s shape, dtype and device (zeros: no uninitialised memory)."""
    t = _like("empty_like", t)
    return full(t.shape, 0, dtype_arg("empty_like", dtype, t.dtype),
                t.device if device is None else device_arg(device, "empty_like"))


def _float_dtype(op, dt):
    dt = D.as_dtype(dt, op)
    if not dt.is_float:
        raise DTypeError(f"{op}: dtype must be float32 or float64, got {dt.name}")
    return dt


@front_end
def rand_like(t, dtype=None, device=None) -> Tensor:
    """Uniform [0, 1) values in ``t``'s shape (its float dtype, or ``dtype``) and device."""
    t = _like("rand_like", t)
    return rand(t.shape, dtype=_float_dtype("rand_like", t.dtype if dtype is None else dtype),
                device=t.device if device is None else device_arg(device, "rand_like"))


@front_end
def randn_like(t, dtype=None, device=None) -> Tensor:
    """Standard-normal values in ``t``'s shape (its float dtype, or ``dtype``) and device."""
    t = _like("randn_like", t)
    return randn(t.shape, dtype=_float_dtype("randn_like", t.dtype if dtype is None else dtype),
                 device=t.device if device is None else device_arg(device, "randn_like"))


def _size(op, size):
    if size is None:
        raise ArgumentTypeError(f"{op}: size is required")
    return shape_arg(op, tuple(size) if isinstance(size, (tuple, list)) else (size,))


@front_end
def uniform(low=0.0, high=1.0, size=None, dtype=None, device=None) -> Tensor:
    """Uniform values in [low, high) of shape ``size`` (float32 unless ``dtype``): the
    functional form of PyTorch's in-place ``torch.empty(size).uniform_(low, high)``."""
    from .elementwise import add, mul
    low, high = _real("uniform", "low", low), _real("uniform", "high", high)
    if low > high:
        raise ArgumentValueError(f"uniform: expected low <= high, got low={low}, high={high}")
    dt = _float_dtype("uniform", D.float32 if dtype is None else dtype)
    u = rand(_size("uniform", size), dtype=dt, device=device_arg(device, "uniform"))
    return add(mul(u, float(high - low)), float(low))


@front_end
def randint(low=0, high=None, size=None, dtype=None, device=None) -> Tensor:
    """Integers uniform in [low, high) of shape ``size`` (int64 unless ``dtype``), PyTorch's
    argument order: ``randint(high, size)`` or ``randint(low, high, size)``."""
    from .elementwise import add, cast, floor, minimum, mul
    if size is None and high is not None and not isinstance(high, (int, np.integer)):
        low, high, size = 0, low, high          # randint(high, size)
    if high is None:
        raise ArgumentTypeError("randint: high is required (randint(high, size) or "
                                "randint(low, high, size))")
    low, high = int_arg("randint", "low", low), int_arg("randint", "high", high)
    if low >= high:
        raise ArgumentValueError(f"randint: expected low < high, got low={low}, high={high}")
    span = high - low
    if span > 2 ** 53:
        raise ArgumentValueError(f"randint: high - low must be at most 2**53, got {span}")
    dt = dtype_arg("randint", dtype, D.int64)
    if dt.is_bool:
        raise DTypeError("randint: dtype must be numeric, got bool")
    for v in (low, high - 1):
        D.check_scalar("randint", v, dt if dt.is_int else D.int64)
    u = rand(_size("randint", size), dtype=D.float64, device=device_arg(device, "randint"))
    k = minimum(floor(mul(u, float(span))), float(span - 1))
    return cast(add(cast(k, D.int64), low), dt)


@front_end
def normal(mean=0.0, std=1.0, size=None, dtype=None, device=None) -> Tensor:
    """Normal values: ``mean + std * randn``.  ``mean``/``std`` scalars (then ``size`` is
    required) or tensors (broadcast together; the result takes their float dtype)."""
    from .elementwise import add, mul
    from ..core.shapes import broadcast_shapes
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    if not tensors:
        mean, std = _real("normal", "mean", mean), _real("normal", "std", std)
        if std < 0:
            raise ArgumentValueError(f"normal: std must be >= 0, got {std}")
        dt = _float_dtype("normal", D.float32 if dtype is None else dtype)
        z = randn(_size("normal", size), dtype=dt, device=device_arg(device, "normal"))
        return add(mul(z, float(std)), float(mean))
    if not isinstance(mean, Tensor):
        mean = _real("normal", "mean", mean)
    if not isinstance(std, Tensor):
        std = _real("normal", "std", std)
    shape = broadcast_shapes("normal", *[t.shape for t in tensors])
    if size is not None and tuple(_size("normal", size)) != tuple(shape):
        raise ShapeError(f"normal: size {tuple(size)} does not match the broadcast shape "
                         f"{shape} of mean and std")
    fdt = [t.dtype for t in tensors if t.dtype.is_float]
    dt = _float_dtype("normal", (D.float64 if D.float64 in fdt else D.float32) if dtype is None
                      else dtype)
    if isinstance(std, Tensor) and not std.is_capture and std.size and \
            float(np.min(std.numpy())) < 0:
        raise ArgumentValueError(f"normal: std must be >= 0, got a minimum of "
                                 f"{float(np.min(std.numpy()))}")
    z = randn(shape, dtype=dt, device=tensors[0].device)
    return add(mul(z, std), mean)


def _probs(op, p):
    if not isinstance(p, Tensor):
        raise ArgumentTypeError(f"{op}: expected a Tensor of probabilities, got "
                                f"{type(p).__name__}")
    if not p.dtype.is_float:
        raise DTypeError(f"{op}: probabilities must be float32 or float64, got {p.dtype.name}")
    return p


def _host(t):
    return None if t.is_capture or t.size == 0 else np.asarray(t.numpy(), np.float64)


@front_end(method=True)
def bernoulli(input, p=None) -> Tensor:
    """1.0 with probability ``input`` (elementwise; or the scalar ``p`` in ``input``'s shape),
    else 0.0, in ``input``'s dtype.  Probabilities outside [0, 1] raise ArgumentValueError."""
    from .elementwise import cast, lt
    x = _probs("bernoulli", input)
    if p is not None:
        p = _real("bernoulli", "p", p)
        if not 0.0 <= p <= 1.0:
            raise ArgumentValueError(f"bernoulli: p must be in [0, 1], got {p}")
        probs = p
    else:
        probs = x
        a = _host(x)
        if a is not None and not (np.all(a >= 0.0) and np.all(a <= 1.0)):
            raise ArgumentValueError(f"bernoulli: probabilities must be in [0, 1], got values "
                                     f"in [{np.nanmin(a) if not np.isnan(a).all() else a.min()}, "
                                     f"{np.nanmax(a) if not np.isnan(a).all() else a.max()}]"
                                     + (" and NaN" if np.isnan(a).any() else ""))
    u = rand(x.shape, dtype=x.dtype, device=x.device)
    return cast(lt(u, probs), x.dtype)


@front_end(method=True)
def multinomial(input, num_samples, replacement=False) -> Tensor:
    """Category indices (int64) drawn from the rows of ``input`` (1-D or 2-D, non-negative
    weights, not necessarily normalised): ``num_samples`` per row, with or without
    ``replacement``.  Without replacement the draws are an exponential race (the
    ``num_samples`` smallest ``E / p``, ``E`` exponential), which has the distribution of
    sequential sampling without replacement; with replacement, the inverse CDF (memory
    rows * num_samples * categories)."""
    from .elementwise import cast, div, le, log, neg, sub, where, gt, minimum
    from .linalg import matmul
    from .reduce import sum as rsum
    from .shape import reshape
    from .sort import topk
    x = _probs("multinomial", input)
    if x.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-D or 2-D, got shape {tuple(x.shape)}")
    s = int_arg("multinomial", "num_samples", num_samples)
    if not isinstance(replacement, (bool, np.bool_)):
        raise ArgumentTypeError(f"multinomial: replacement must be a bool, got {replacement!r}")
    c = x.shape[-1]
    if s <= 0:
        raise ArgumentValueError(f"multinomial: num_samples must be positive, got {s}")
    if c == 0:
        raise ShapeError("multinomial: input has no categories (its last dim is 0)")
    if not replacement and s > c:
        raise ArgumentValueError(f"multinomial: cannot sample num_samples={s} > {c} categories "
                                 f"without replacement")
    a = _host(x)
    if a is not None:
        a2 = a.reshape(-1, c)
        if not np.all(np.isfinite(a2)) or np.any(a2 < 0):
            raise ArgumentValueError("multinomial: probabilities must be finite and "
                                     "non-negative")
        if np.any(a2.sum(axis=1) <= 0):
            raise ArgumentValueError("multinomial: every row of probabilities must have a "
                                     "positive sum")
        if not replacement and np.any((a2 > 0).sum(axis=1) < s):
            raise ArgumentValueError(f"multinomial: cannot sample num_samples={s} without "
                                     f"replacement from a row with fewer non-zero categories")
    p = cast(reshape(x, (-1, c)), D.float64)
    rows = p.shape[0]
    if not replacement:
        u = rand((rows, c), dtype=D.float64, device=x.device)
        e = neg(log(sub(1.0, u)))                              # Exp(1), in [0, inf)
        keys = where(gt(p, 0.0), div(e, where(gt(p, 0.0), p, 1.0)), float("inf"))
        idx = topk(keys, s, dim=1, largest=False).indices
    else:
        tri = tensor(np.triu(np.ones((c, c))), device=x.device)
        cdf = matmul(p, tri)                                   # running sums per row
        cdf = div(cdf, cdf[:, c - 1:c])
        u = rand((rows, s), dtype=D.float64, device=x.device)
        below = le(reshape(cdf, (rows, 1, c)), reshape(u, (rows, s, 1)))
        idx = minimum(rsum(below, axis=2), c - 1)
    return reshape(idx, (s,)) if x.ndim == 1 else idx


@front_end
def randperm(n, dtype=None, device=None) -> Tensor:
    """A random permutation of ``0..n-1`` (int64 unless ``dtype``): the stable argsort of
    ``n`` float64 uniforms."""
    from .elementwise import cast
    from .sort import argsort
    n = int_arg("randperm", "n", n)
    if n < 0:
        raise ArgumentValueError(f"randperm: n must be non-negative, got {n}")
    dt = dtype_arg("randperm", dtype, D.int64)
    if n:
        D.check_scalar("randperm", n - 1, dt if dt.is_int else D.int64)
    idx = argsort(rand((n,), dtype=D.float64, device=device_arg(device, "randperm")), stable=True)
    return idx if dt is D.int64 else cast(idx, dt)
