"""The Tensor methods that run ops: the operators, ``to`` and the casts, indexing, ``T``,
pickling, and every front-end function that takes a tensor first (``TENSOR_METHODS``).

``runtime.tensor`` defines the class with its metadata and data access only; this module
installs the rest on it when it is imported (``import runtime`` does), so the class never
imports the ops built on it.
"""
from __future__ import annotations

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError
from .args import device_arg
from .movement import move
from ..tensor import Tensor
from . import api as _api
from .create import from_storage
from .rearrange import sliding_windows

__all__ = ["install"]


class _Methods:
    """The methods ``install`` copies onto ``Tensor``."""

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

    # ---- movement -------------------------------------------------------------------
    def to(self, device=None, dtype=None) -> "Tensor":
        """This value on ``device`` (the movement rules); given a dtype (``t.to(rt.half)``,
        PyTorch's habit, or ``dtype=``) it is also cast to it."""
        if isinstance(device, D.DType):
            device, dtype = None, device
        t = self if device is None else move(self, device_arg(device, "to"))
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

    def unfold(self, dimension, size, step) -> "Tensor":
        """Sliding windows along ``dimension`` (PyTorch's ``Tensor.unfold``)."""
        return sliding_windows(self, dimension, size, step)

    @property
    def T(self) -> "Tensor":
        return _api.permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _rebuild(values, device, dtype=None):
    """Unpickle a plain tensor: its values on the device it was pickled from (a small dtype's
    storage array with its dtype name)."""
    if dtype is not None:
        return from_storage(values, dtype, device)
    return _api.tensor(values, device=device)


def install() -> None:
    """Put the methods above, and every front-end function that takes a tensor first, on
    ``Tensor`` (a name the class defines itself is kept)."""
    for name, value in vars(_Methods).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(Tensor, name, value)
    for name in _api.TENSOR_METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(_api, name))


install()
