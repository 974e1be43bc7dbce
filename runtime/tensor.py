"""The Tensor front end: metadata, sugar and data access; no Numba, no kernels.

A tensor is (payload, shape, dtype, device, id).  The payload is whatever its device
stores (a kernel-set array for plain devices, an inner tensor for autodiff, IR for
capture) and the front end never looks inside it.  Every operation goes through
``runtime.dispatch``.
"""
from __future__ import annotations

import itertools

import numpy as np

from .core import dtypes as D
from .core.errors import ArgumentTypeError

__all__ = ["Tensor", "new_id"]

_ids = itertools.count(1)
new_id = _ids.__next__


class Tensor:
    """An n-dimensional array on a device (create with ``rt.tensor`` and friends)."""

    __slots__ = ("_payload", "shape", "dtype", "device", "id", "__weakref__")
    __array_priority__ = 1000  # make NumPy defer to our reflected operators

    @classmethod
    def _wrap(cls, payload, shape, dtype, device, id=None) -> "Tensor":
        t = object.__new__(cls)
        t._payload = payload
        t.shape = shape
        t.dtype = dtype
        t.device = device
        t.id = new_id() if id is None else id
        return t

    def __init__(self, *a, **k):
        raise ArgumentTypeError("create tensors with rt.tensor(), rt.from_numpy(), rt.zeros(), ...")

    # ---- metadata -------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise ArgumentTypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def is_autodiff(self) -> bool:
        return self.device.family == "autodiff"

    @property
    def is_capture(self) -> bool:
        return self.device.innermost.family == "capture"

    @property
    def requires_grad(self) -> bool:
        return self.device.requires_grad(self)

    # ---- autodiff (the device decides; plain devices raise RequiresAutodiffError) ----
    def require_grad(self) -> "Tensor":
        """Mark this autodiff leaf as tracked and return it."""
        return self.device.require_grad(self)

    def backward(self, retain_graph: bool = False):
        """Reverse-mode gradients of this tensor (seed: ones) -> ``Gradients``."""
        return self.device.backward(self, retain_graph=retain_graph)

    def grad(self, grads):
        """This leaf's gradient in ``grads`` (a tensor on the inner device) or None."""
        return self.device.grad(self, grads)

    def grad_remove(self, grads):
        """Like ``grad`` but also removes the entry from ``grads``."""
        return self.device.grad(self, grads, remove=True)

    def inner(self) -> "Tensor":
        """The value as a plain tensor on the inner device (autodiff tensors only)."""
        return self.device.inner_tensor(self)

    def detach(self) -> "Tensor":
        """The same value, untracked, on the same device."""
        return self.device.detach(self)

    # ---- data out -------------------------------------------------------------------
    def numel(self) -> int:
        """The number of elements (PyTorch's name for ``size``)."""
        return self.size

    def dim(self) -> int:
        """The number of dimensions (PyTorch's name for ``ndim``)."""
        return len(self.shape)

    def cpu(self) -> "Tensor":
        """This value on the cpu device (``t.to("cpu")``)."""
        return self.to("cpu")

    def clone(self) -> "Tensor":
        """The tensor itself: tensors are immutable, so a copy could never differ from it (on
        an autodiff device it stays on the tape, as PyTorch's ``clone`` does)."""
        return self

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the values (copied to the host for device tensors); float16 as
        ``np.float16``, bfloat16 as ``ml_dtypes.bfloat16`` when that package is importable
        (else DTypeError: NumPy has no bfloat16; call ``.float()`` first)."""
        if self.dtype.is_half:
            return D.host_of(self.device.to_host(self), self.dtype)
        return self.device.to_host(self)

    def _values(self) -> np.ndarray:
        """The values as a NumPy array NumPy computes with (half types as float32)."""
        return D.float_values(self.device.to_host(self), self.dtype)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def tolist(self):
        return self._values().tolist()

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        if self.size != 1:
            from .core.errors import ShapeError
            raise ShapeError(f"item: only one-element tensors can be converted to a Python "
                             f"scalar, got shape {self.shape}")
        return self._values().reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            from .core.errors import ShapeError
            raise ShapeError(f"the truth value of a tensor of shape {self.shape} is ambiguous; "
                             f"use .any()/.all() style reductions")
        return bool(self.item())

    def __index__(self):
        if not self.dtype.is_int and not self.dtype.is_bool:
            raise ArgumentTypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        try:
            vals = self.numpy() if self.dtype.host is not None else self._values()
            body = np.array2string(vals, separator=", ", prefix="tensor(",
                                   threshold=200, edgeitems=3)
        except Exception:  # capture tensors without a value (never raise from repr)
            body = f"<no value, shape={self.shape}>"
        return f"tensor({body}, dtype={self.dtype.name}, device={self.device})"

    __str__ = __repr__

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __hash__(self):
        return id(self)

    def __reduce__(self):
        """Pickling (and ``copy.deepcopy``) of a plain tensor: its values and device string;
        autodiff and capture tensors refuse (their tape or graph cannot travel)."""
        if self.device.family != "plain":
            raise ArgumentTypeError(f"a tensor on {self.device} cannot be pickled or copied: only "
                                    f"plain (cpu, cuda) tensors can; detach it or use "
                                    f"CapturedGraph.save()")
        if self.dtype.emulated:
            return (_rebuild, (self.device.to_host(self), str(self.device), self.dtype.name))
        return (_rebuild, (self.numpy(), str(self.device)))

    def __copy__(self):
        """The tensor itself: tensors are immutable, so a copy could never differ from it."""
        return self

    # ---- interchange ----------------------------------------------------------------
    def __dlpack__(self, **kwargs):
        """The DLPack capsule of a cpu tensor, zero-copy (``np.from_dlpack(t)`` and
        ``torch.from_dlpack(t)`` share its memory: do not write through them, tensors are
        immutable)."""
        return self.device.dlpack(self, kwargs)

    def __dlpack_device__(self):
        """``(device type, index)`` of the DLPack protocol: (1, 0) for cpu."""
        return self.device.dlpack(self, None)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (v3) of a cuda tensor, zero-copy (``numba.cuda.as_cuda_array(t)``,
        ``cupy.asarray(t)``; do not write through it); other tensors have no such attribute."""
        return self.device.cuda_array_interface(self)

    # ---- movement -------------------------------------------------------------------
    def to(self, device=None, dtype=None) -> "Tensor":
        """This value on ``device`` (SPEC §3 movement table); given a dtype (``t.to(rt.half)``,
        PyTorch's habit, or ``dtype=``) it is also cast to it."""
        if isinstance(device, D.DType):
            device, dtype = None, device
        from .movement import move
        t = self if device is None else move(self, device)
        return t if dtype is None else _api.cast(t, dtype)

    to_device = to

    def astype(self, dtype) -> "Tensor":
        return _api.cast(self, dtype)

    cast = astype

    def float(self):
        return _api.cast(self, D.float32)

    def double(self):
        return _api.cast(self, D.float64)

    def long(self):
        return _api.cast(self, D.int64)

    def int(self):
        return _api.cast(self, D.int32)

    def bool(self):
        return _api.cast(self, D.bool_)

    def half(self):
        return _api.cast(self, D.float16)

    def bfloat16(self):
        return _api.cast(self, D.bfloat16)

    def byte(self):
        return _api.cast(self, D.uint8)

    def char(self):
        return _api.cast(self, D.int8)

    def short(self):
        return _api.cast(self, D.int16)

    # ---- operators ------------------------------------------------------------------
    def __add__(self, o): return _api.add(self, o)
    def __radd__(self, o): return _api.add(o, self)
    def __sub__(self, o): return _api.sub(self, o)
    def __rsub__(self, o): return _api.sub(o, self)
    def __mul__(self, o): return _api.mul(self, o)
    def __rmul__(self, o): return _api.mul(o, self)
    def __truediv__(self, o): return _api.div(self, o)
    def __rtruediv__(self, o): return _api.div(o, self)
    def __floordiv__(self, o): return _api.floor_divide(self, o)
    def __rfloordiv__(self, o): return _api.floor_divide(o, self)
    def __mod__(self, o): return _api.remainder(self, o)
    def __rmod__(self, o): return _api.remainder(o, self)
    def __pow__(self, o): return _api.pow(self, o)
    def __rpow__(self, o): return _api.pow(o, self)
    def __matmul__(self, o): return _api.matmul(self, o)
    def __rmatmul__(self, o): return _api.matmul(o, self)
    def __neg__(self): return _api.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _api.abs(self)
    # & | ^ ~ << >> are PyTorch's bitwise ops (logical ones on bool tensors; floats refused)
    def __invert__(self): return _api.bitwise_not(self)
    def __and__(self, o): return _api.bitwise_and(self, o)
    def __rand__(self, o): return _api.bitwise_and(o, self)
    def __xor__(self, o): return _api.bitwise_xor(self, o)
    def __rxor__(self, o): return _api.bitwise_xor(o, self)
    def __lshift__(self, o): return _api.left_shift(self, o)
    def __rlshift__(self, o): return _api.left_shift(o, self)
    def __rshift__(self, o): return _api.right_shift(self, o)
    def __rrshift__(self, o): return _api.right_shift(o, self)
    def __or__(self, o): return _api.bitwise_or(self, o)
    def __ror__(self, o): return _api.bitwise_or(o, self)
    def __eq__(self, o): return _api.eq(self, o)
    def __ne__(self, o): return _api.ne(self, o)
    def __lt__(self, o): return _api.lt(self, o)
    def __le__(self, o): return _api.le(self, o)
    def __gt__(self, o): return _api.gt(self, o)
    def __ge__(self, o): return _api.ge(self, o)

    def __getitem__(self, key):
        return _api.getitem(self, key)

    def __setitem__(self, key, value):
        raise ArgumentTypeError("tensors are immutable; use t = t.slice_assign(key, value), which returns "
                        "a new tensor (for t[key] += v: t.index_put(key, v, accumulate=True), which "
                        "also sums repeated indices)")

    @property
    def T(self) -> "Tensor":
        return _api.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _install_methods():
    """Expose every front-end function that takes a tensor first as a method."""
    for name in _api.TENSOR_METHODS:
        fn = getattr(_api, name)
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)


from .ops import api as _api  # noqa: E402  (the front-end functions need Tensor defined)

_install_methods()


def _rebuild(values, device, dtype=None):
    """Unpickle a plain tensor: its values on the device it was pickled from (a small dtype's
    storage array with its dtype name)."""
    if dtype is not None:
        from .ops.create import from_storage
        return from_storage(values, dtype, device)
    return _api.tensor(values, device=device)
