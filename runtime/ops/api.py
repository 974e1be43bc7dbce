"""Front-end functions: argument handling and sugar over ``dispatch`` (SPEC §2.1).

Every function here normalises its arguments (axes, shapes, keys, scalars) and calls
``dispatch``/``create``; none looks at payloads or knows about kernels.
"""
from __future__ import annotations

import builtins as _b
import math
import numbers
import operator

import numpy as np

from .. import dtypes as D
from ..device import Device, current_default, device as _parse_device
from ..errors import DTypeError, IndexOutOfRangeError, ShapeError
from ..tensor import Tensor
from .catalogue import UNARY
from .shapes import normalize_axes, normalize_axis, prod as _prod, resolve_reshape

# dispatch imports tensor, so bind lazily on first call
_dispatch = None
_create = None


def _d():
    global _dispatch, _create
    if _dispatch is None:
        from ..dispatch import create, dispatch
        _dispatch, _create = dispatch, create
    return _dispatch


def _run(name, args, attrs=None):
    return (_dispatch or _d())(name, args, attrs)


def _make(name, device, attrs):
    _d()
    return _create(name, device, attrs)


_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def _operand(op: str, x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _SCALARS):
        if isinstance(x, np.generic):
            return x.item()
        return x
    raise TypeError(f"{op}: unsupported operand of type {type(x).__name__} "
                    f"(expected a Tensor or a Python scalar)")


def _tensor_arg(op: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


# ============================================================================ creation
def _device_arg(device) -> Device:
    return current_default() if device is None else _parse_device(device)


def _shape_arg(op: str, shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ShapeError(f"{op}: negative dimension in shape {out}")
    return out


def tensor(data, dtype=None, device=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors)."""
    dev = _device_arg(device)
    if isinstance(data, Tensor):
        t = data.to(dev)
        return t if dtype is None else cast(t, dtype)
    if isinstance(data, np.ndarray):
        arr = np.array(data, copy=True)
    else:
        try:
            arr = np.array(data)
        except (ValueError, TypeError):
            arr = np.empty(0, dtype=object)
        if arr.dtype == object or arr.dtype.kind in "USV":
            raise DTypeError(f"tensor: cannot make a tensor from ragged or non-numeric data {data!r}")
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float32)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
    if dtype is not None:
        arr = arr.astype(D.as_dtype(dtype).np)
    else:
        D.from_numpy_dtype(arr.dtype, "tensor")
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        arr = arr.copy(order="C")
    return _make("init", dev, {"value": arr})


def from_numpy(a, device=None) -> Tensor:
    """A tensor with ``a``'s values and dtype (shares memory on cpu; do not mutate ``a``)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    D.from_numpy_dtype(a.dtype, "from_numpy")
    return _make("init", _device_arg(device), {"value": a})


def full(shape, value, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (dtype from the value when not given)."""
    shape = _shape_arg("full", (shape,) if isinstance(shape, int) else tuple(shape))
    dt = D.scalar_dtype(value) if dtype is None else D.as_dtype(dtype)
    return _make("full", _device_arg(device), {"shape": shape, "dtype": dt.name, "value": value})


def zeros(*shape, dtype=D.float32, device=None) -> Tensor:
    """A tensor of zeros."""
    return full(_shape_arg("zeros", shape), 0, dtype, device)


def ones(*shape, dtype=D.float32, device=None) -> Tensor:
    """A tensor of ones."""
    return full(_shape_arg("ones", shape), 1, dtype, device)


def empty(*shape, dtype=D.float32, device=None) -> Tensor:
    """A tensor of ``shape`` (filled with zeros: uninitialised memory is never exposed)."""
    return full(_shape_arg("empty", shape), 0, dtype, device)


def zeros_like(t, dtype=None) -> Tensor:
    return full(t.shape, 0, dtype or t.dtype, t.device)


def ones_like(t, dtype=None) -> Tensor:
    return full(t.shape, 1, dtype or t.dtype, t.device)


def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Values from ``start`` to ``stop`` (exclusive) by ``step``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step must be non-zero")
    for v in (start, stop, step):
        if not isinstance(v, (numbers.Real, np.generic)):
            raise TypeError(f"arange: expected real numbers, got {v!r}")
    all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                  for v in (start, stop, step))
    dt = D.as_dtype(dtype) if dtype is not None else (D.int64 if all_int else D.float32)
    n = _b.max(0, math.ceil((stop - start) / step))
    return _make("arange", _device_arg(device),
                 {"shape": (n,), "dtype": dt.name, "start": start, "step": step})


def eye(n, m=None, dtype=D.float32, device=None) -> Tensor:
    """The identity matrix (n×m)."""
    m = n if m is None else m
    shape = _shape_arg("eye", (n, m))
    return _make("eye", _device_arg(device), {"shape": shape, "dtype": D.as_dtype(dtype).name})


def rand(*shape, dtype=D.float32, device=None) -> Tensor:
    """Uniform [0, 1) values from the device's seeded stream."""
    return _make("rand", _device_arg(device),
                 {"shape": _shape_arg("rand", shape), "dtype": D.as_dtype(dtype).name})


def randn(*shape, dtype=D.float32, device=None) -> Tensor:
    """Standard-normal values from the device's seeded stream."""
    return _make("randn", _device_arg(device),
                 {"shape": _shape_arg("randn", shape), "dtype": D.as_dtype(dtype).name})


def manual_seed(seed: int, device=None) -> None:
    """Restart the random stream of ``device`` (all devices when None) at ``seed``."""
    from .. import random as _random
    if device is None:
        _random.seed_all(seed)
    else:
        _parse_device(device).seed(seed)


# ============================================================================ elementwise
def _binary(name):
    def fn(a, b):
        if type(a) is Tensor and type(b) is Tensor:  # the common case, straight to dispatch
            return (_dispatch or _d())(name, (a, b))
        a = _operand(name, a)
        b = _operand(name, b)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise TypeError(f"{name}: at least one operand must be a Tensor")
        return _run(name, (a, b))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with NumPy broadcasting and scalar operands."
    return fn


add = _binary("add")
sub = _binary("sub")
mul = _binary("mul")
div = _binary("div")
pow = _binary("pow")  # noqa: A001
maximum = _binary("maximum")
minimum = _binary("minimum")
eq = _binary("eq")
ne = _binary("ne")
lt = _binary("lt")
le = _binary("le")
gt = _binary("gt")
ge = _binary("ge")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
true_divide = divide = div
subtract, multiply = sub, mul


def _unary(name):
    def fn(x):
        if type(x) is Tensor:
            return (_dispatch or _d())(name, (x,))
        return _run(name, (_tensor_arg(name, x),))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}``."
    return fn


neg = _unary("neg")
abs = _unary("abs")  # noqa: A001
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
erf = _unary("erf")
reciprocal = _unary("reciprocal")
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
logical_not = _unary("logical_not")
negative = neg


def gelu(x, approximate: str = "none") -> Tensor:
    """GELU: exact erf form, or the tanh approximation with ``approximate="tanh"``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _run("gelu" if approximate == "none" else "gelu_tanh", (_tensor_arg("gelu", x),))


def clamp(x, min=None, max=None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (either bound may be None)."""
    x = _tensor_arg("clamp", x)
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    attrs = {"min": _operand("clamp", min) if min is not None else None,
             "max": _operand("clamp", max) if max is not None else None}
    return _run("clamp", (x,), attrs)


clip = clamp


def cast(x, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (float→int truncates toward zero and saturates; NaN→0)."""
    x = _tensor_arg("cast", x)
    dt = D.as_dtype(dtype)
    if dt is x.dtype:
        return x
    return _run("cast", (x,), {"dtype": dt.name})


astype = cast


def where(cond, a, b) -> Tensor:
    """``a`` where ``cond`` is true, else ``b`` (broadcasting; a/b may be scalars)."""
    cond = _tensor_arg("where", cond)
    return _run("where", (cond, _operand("where", a), _operand("where", b)))


# ============================================================================ reductions
def _reduce(name, x, axis, keepdims, extra=None):
    x = _tensor_arg(name, x)
    axes = normalize_axes(name, axis, x.ndim, x.shape)
    attrs = {"axes": axes, "keepdims": bool(keepdims)}
    if extra:
        attrs.update(extra)
    if not axes:
        # Reducing over no axis (0-d input or axis=()): reduce a new unit axis instead,
        # so kernels always get a non-empty axis list and dtype rules still apply.
        y = reshape(x, x.shape + (1,))
        attrs["axes"] = (x.ndim,)
        attrs["keepdims"] = False
        return _run(name, (y,), attrs)
    return _run(name, (x,), attrs)


def sum(x, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (None: all); ints/bools accumulate in int64."""
    return _reduce("sum", x, axis, keepdims)


def mean(x, axis=None, keepdims=False) -> Tensor:
    """Arithmetic mean (ints give float32)."""
    return _reduce("mean", x, axis, keepdims)


def prod(x, axis=None, keepdims=False) -> Tensor:  # noqa: F811
    """Product over ``axis``."""
    return _reduce("prod", x, axis, keepdims)


def max(x, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    """Maximum values (NaN propagates)."""
    return _reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims=False) -> Tensor:  # noqa: A001
    """Minimum values (NaN propagates)."""
    return _reduce("min", x, axis, keepdims)


def var(x, axis=None, keepdims=False, ddof=0) -> Tensor:
    """Variance with ``ddof`` (NumPy's convention: 0)."""
    return _reduce("var", x, axis, keepdims, {"ddof": int(ddof)})


def logsumexp(x, axis=None, keepdims=False) -> Tensor:
    """log(sum(exp(x))) computed stably."""
    return _reduce("logsumexp", x, axis, keepdims)


def _arg(name, x, axis, keepdims):
    x = _tensor_arg(name, x)
    if axis is not None:
        if isinstance(axis, (tuple, list)):
            raise ShapeError(f"{name}: axis must be an int or None, got {axis!r}")
        axis = normalize_axis(name, axis, x.ndim, x.shape)
        if x.ndim == 0:
            axis = None
    return _run(name, (x,), {"axis": axis, "keepdims": bool(keepdims)})


def argmax(x, axis=None, keepdims=False) -> Tensor:
    """Index of the first maximum (flattened when axis is None), int64."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False) -> Tensor:
    """Index of the first minimum (flattened when axis is None), int64."""
    return _arg("argmin", x, axis, keepdims)


def _softmax(name, x, axis):
    x = _tensor_arg(name, x)
    if x.ndim == 0:
        normalize_axis(name, axis, 0)  # 0 or -1, as NumPy and PyTorch accept for a 0-d tensor
        return reshape(_run(name, (reshape(x, (1,)),), {"axis": 0}), ())
    return _run(name, (x,), {"axis": normalize_axis(name, axis, x.ndim, x.shape)})


def softmax(x, axis=-1) -> Tensor:
    """exp(x) / sum(exp(x)) along ``axis``, computed stably."""
    return _softmax("softmax", x, axis)


def log_softmax(x, axis=-1) -> Tensor:
    """x - logsumexp(x) along ``axis``."""
    return _softmax("log_softmax", x, axis)


# ============================================================================ linalg
def matmul(a, b) -> Tensor:
    """Matrix product: 1-D, 2-D and batched with broadcast batch dimensions."""
    return _run("matmul", (_tensor_arg("matmul", a), _tensor_arg("matmul", b)))


# ============================================================================ shape
def reshape(x, *shape) -> Tensor:
    """Same values with a new shape (one dimension may be -1); a view when possible."""
    x = _tensor_arg("reshape", x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    new = resolve_reshape("reshape", x.shape, shape)
    if new == x.shape:
        return x
    return _run("reshape", (x,), {"shape": new})


view = reshape


def permute(x, *axes) -> Tensor:
    """Reorder the axes (a view)."""
    x = _tensor_arg("permute", x)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    nd = len(x.shape)
    if len(axes) != nd:
        raise ShapeError(f"permute: expected {nd} axes for shape {x.shape}, got {axes}")
    if all(type(a) is int and 0 <= a < nd for a in axes):  # already normalised (x.T, ...)
        norm = tuple(axes)
    else:
        norm = tuple(normalize_axis("permute", a, nd, x.shape) for a in axes)
    if len(set(norm)) != nd:
        raise ShapeError(f"permute: {axes} is not a permutation of the axes of shape {x.shape}")
    if norm == tuple(range(nd)):
        return x
    return _run("permute", (x,), {"axes": norm})


def transpose(x, axis0=0, axis1=1) -> Tensor:
    """Swap two axes (a view)."""
    x = _tensor_arg("transpose", x)
    a0 = normalize_axis("transpose", axis0, x.ndim, x.shape)
    a1 = normalize_axis("transpose", axis1, x.ndim, x.shape)
    axes = list(range(x.ndim))
    axes[a0], axes[a1] = axes[a1], axes[a0]
    return permute(x, tuple(axes))


def broadcast_to(x, *shape) -> Tensor:
    """A stride-0 view of ``x`` with ``shape`` (NumPy broadcasting rules)."""
    x = _tensor_arg("broadcast_to", x)
    shape = _shape_arg("broadcast_to", shape)
    if shape == x.shape:
        return x
    return _run("expand", (x,), {"shape": shape})


def expand(x, *shape) -> Tensor:
    """``broadcast_to`` where -1 keeps a dimension (PyTorch's ``expand``)."""
    x = _tensor_arg("expand", x)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: cannot expand shape {x.shape} to {tuple(shape)} with fewer dimensions")
    shape = tuple(x.shape[i - lead] if (d == -1 and i >= lead) else d for i, d in enumerate(shape))
    return broadcast_to(x, shape)


def squeeze(x, axis=None) -> Tensor:
    """Remove size-1 axes (all of them, or the given ones, which must have size 1)."""
    x = _tensor_arg("squeeze", x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim, x.shape)
        for a in axes:
            if x.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def unsqueeze(x, axis) -> Tensor:
    """Insert a size-1 axis at ``axis`` (counted in the result)."""
    x = _tensor_arg("unsqueeze", x)
    a = normalize_axis("unsqueeze", axis, x.ndim + 1, x.shape)
    return reshape(x, x.shape[:a] + (1,) + x.shape[a:])


def flatten(x, start_axis=0, end_axis=-1) -> Tensor:
    """Merge axes ``start_axis..end_axis`` into one."""
    x = _tensor_arg("flatten", x)
    if x.ndim == 0:
        return reshape(x, (1,))
    s = normalize_axis("flatten", start_axis, x.ndim, x.shape)
    e = normalize_axis("flatten", end_axis, x.ndim, x.shape)
    if s > e:
        raise ShapeError(f"flatten: start axis {start_axis} comes after end axis {end_axis}")
    return reshape(x, x.shape[:s] + (_prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


def cat(tensors, axis=0) -> Tensor:
    """Concatenate along an existing axis (dtypes promoted)."""
    ts = tuple(_tensor_arg("cat", t) for t in tensors)
    if not ts:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    if ts[0].ndim == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated")
    a = normalize_axis("cat", axis, ts[0].ndim, ts[0].shape)
    if len(ts) == 1:
        return ts[0]
    return _run("cat", ts, {"axis": a})


concatenate = cat


def stack(tensors, axis=0) -> Tensor:
    """Join along a new axis (all shapes equal)."""
    ts = tuple(_tensor_arg("stack", t) for t in tensors)
    if not ts:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    for t in ts:
        if t.shape != ts[0].shape:
            raise ShapeError(f"stack: all tensors must have the same shape, got "
                             f"{', '.join(str(t.shape) for t in ts)}")
    a = normalize_axis("stack", axis, ts[0].ndim + 1, ts[0].shape)
    parts = [unsqueeze(t, a) for t in ts]
    return parts[0] if len(parts) == 1 else _run("cat", tuple(parts), {"axis": a})


def split(x, split_size_or_sections, axis=0) -> tuple:
    """PyTorch's ``split``: pieces of an int size (last may be smaller) or of listed sizes."""
    x = _tensor_arg("split", x)
    a = normalize_axis("split", axis, x.ndim, x.shape)
    n = x.shape[a]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if builtins_sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} do not add up to {n} (axis {a} of shape {x.shape})")
    else:
        size = int(split_size_or_sections)
        if size <= 0:
            raise ShapeError(f"split: split size must be positive, got {size}")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
        if not sizes:
            sizes = [0]
    out, start = [], 0
    for s in sizes:
        key = (slice(None),) * a + (slice(start, start + s),)
        out.append(getitem(x, key))
        start += s
    return tuple(out)


def chunk(x, chunks: int, axis=0) -> tuple:
    """Split into ``chunks`` pieces of ceil(n / chunks) (PyTorch's ``chunk``)."""
    x = _tensor_arg("chunk", x)
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    a = normalize_axis("chunk", axis, x.ndim, x.shape)
    n = x.shape[a]
    return split(x, builtins_max(1, -(-n // chunks)), a)


builtins_sum, builtins_max = _b.sum, _b.max  # the module shadows sum/max/min/abs/pow


# ============================================================================ indexing
def _normalize_key(x: Tensor, key) -> tuple:
    """A basic-indexing key as one entry per axis: ints in range, concrete slices, None."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = builtins_sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise ShapeError("getitem: an index can only have a single ellipsis ('...')")
    n_axes = builtins_sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_axes > x.ndim:
        raise ShapeError(f"getitem: too many indices for a tensor of shape {x.shape}: {n_axes} given")
    out = []
    axis = 0
    for k in key:
        if k is Ellipsis:
            for _ in range(x.ndim - n_axes):
                out.append(slice(0, x.shape[axis], 1))
                axis += 1
        elif k is None:
            out.append(None)
        elif isinstance(k, slice):
            out.append(slice(*k.indices(x.shape[axis])))
            axis += 1
        else:
            try:
                i = operator.index(k)
            except TypeError:
                raise TypeError(f"getitem: unsupported index {k!r} of type {type(k).__name__}") from None
            n = x.shape[axis]
            if not -n <= i < n:
                raise IndexOutOfRangeError(f"getitem: index {i} is out of bounds for axis {axis} "
                                           f"with size {n} (shape {x.shape})")
            out.append(i % n)
            axis += 1
    while axis < x.ndim:
        out.append(slice(0, x.shape[axis], 1))
        axis += 1
    return tuple(out)


def _is_advanced(k) -> bool:
    return isinstance(k, (Tensor, list, np.ndarray))


def getitem(x, key) -> Tensor:
    """Basic indexing (ints, slices, None, ...) as a view; one integer-array index as ``take``."""
    x = _tensor_arg("getitem", x)
    keys = key if isinstance(key, tuple) else (key,)
    adv = [i for i, k in enumerate(keys) if _is_advanced(k)]
    if adv:
        if len(adv) > 1 or any(not (isinstance(k, slice) and k == slice(None))
                               for i, k in enumerate(keys) if i != adv[0]):
            raise TypeError("getitem: only a single integer-array index, with full slices ':' "
                            "on the other axes, is supported; use take()/gather()")
        return take(x, keys[adv[0]], axis=adv[0])
    norm = _normalize_key(x, key)
    if all(isinstance(k, slice) and k.start == 0 and k.step == 1 and k.stop == d
           for k, d in zip(norm, x.shape)) and len(norm) == x.ndim:
        return x
    return _run("index", (x,), {"key": norm})


def slice_assign(x, key, value) -> Tensor:
    """A copy of ``x`` with ``x[key] = value`` (basic indexing; value broadcasts)."""
    x = _tensor_arg("slice_assign", x)
    norm = _normalize_key(x, key)
    value = _operand("slice_assign", value)
    return _run("slice_assign", (x, value), {"key": norm})


def _index_tensor(op, x, indices):
    if isinstance(indices, Tensor):
        return indices
    arr = np.asarray(indices)
    if arr.dtype.kind not in "iu" and arr.size:
        raise DTypeError(f"{op}: indices must be integers, got {arr.dtype}")
    return tensor(arr.astype(np.int64), device=x.device)


def take(x, indices, axis=None) -> Tensor:
    """``numpy.take``: pick entries along ``axis`` (flattened when None) by integer indices."""
    x = _tensor_arg("take", x)
    idx = _index_tensor("take", x, indices)
    a = None if axis is None else normalize_axis("take", axis, x.ndim, x.shape)
    return _run("take", (x, idx), {"axis": a})


def gather(x, axis, index) -> Tensor:
    """PyTorch's ``gather(input, dim, index)``: ``out[i][j] = x[i][index[i][j]]`` for axis 1."""
    x = _tensor_arg("gather", x)
    idx = _index_tensor("gather", x, index)
    a = normalize_axis("gather", axis, x.ndim, x.shape)
    return _run("gather", (x, idx), {"axis": a})


def scatter_add(x, axis, index, src) -> Tensor:
    """PyTorch's ``scatter_add(input, dim, index, src)``: a copy of ``x`` where, for every
    position ``p`` of ``index``, ``src[p]`` is added at ``p`` with ``p[axis]`` replaced by
    ``index[p]`` (``out[index[i][j]][j] += src[i][j]`` for axis 0).  ``index`` and ``src`` have
    x's rank, ``index`` is no larger than ``src`` on every axis and than ``x`` off ``axis``
    (only the leading ``index.shape`` block of ``src`` is used); ``src`` has x's dtype.
    Indices follow ``gather``: negative ones count from the end, out-of-range ones raise
    ``IndexOutOfRangeError`` before anything is written.  Repeated indices accumulate; bool
    tensors accumulate with logical or (as in PyTorch).  On cpu additions happen in index order
    (deterministic); on cuda they are atomic, so float sums may differ in the last bits from
    run to run."""
    x = _tensor_arg("scatter_add", x)
    idx = _index_tensor("scatter_add", x, index)
    src = _tensor_arg("scatter_add", src)
    a = normalize_axis("scatter_add", axis, x.ndim, x.shape)
    return _run("scatter_add", (x, idx, src), {"axis": a})


# Functions that are also Tensor methods (taking the tensor first).
TENSOR_METHODS = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin",
    "cos", "tanh", "sigmoid", "relu", "gelu", "erf", "reciprocal", "sign", "floor", "ceil",
    "logical_not", "clamp", "clip", "sum", "mean", "prod", "max", "min", "var",
    "logsumexp", "argmax", "argmin", "softmax", "log_softmax", "matmul", "reshape", "view",
    "permute", "transpose", "broadcast_to", "expand", "squeeze", "unsqueeze", "flatten",
    "split", "chunk", "slice_assign", "take", "gather", "scatter_add",
)

assert set(UNARY) - {"gelu_tanh"} <= set(globals())
