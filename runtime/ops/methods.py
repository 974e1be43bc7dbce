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
from .shape import reverse_axes

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
    # A forward operator is its front-end function itself (``t + o`` calls ``add(t, o)``,
    # with no method frame in between); a reflected one swaps the operands.
    __add__ = _api.add
    def __radd__(self, o): return _api.add(o, self)
    __sub__ = _api.sub
    def __rsub__(self, o): return _api.sub(o, self)
    __mul__ = _api.mul
    def __rmul__(self, o): return _api.mul(o, self)
    __truediv__ = _api.div
    def __rtruediv__(self, o): return _api.div(o, self)
    __floordiv__ = _api.floor_divide
    def __rfloordiv__(self, o): return _api.floor_divide(o, self)
    __mod__ = _api.remainder
    def __rmod__(self, o): return _api.remainder(o, self)
    __pow__ = _api.pow
    def __rpow__(self, o): return _api.pow(o, self)
    __matmul__ = _api.matmul
    def __rmatmul__(self, o): return _api.matmul(o, self)
    __neg__ = _api.neg
    def __pos__(self): return self
    __abs__ = _api.abs
    # & | ^ ~ << >> are PyTorch's bitwise ops (logical ones on bool tensors; floats refused)
    __invert__ = _api.bitwise_not
    __and__ = _api.bitwise_and
    def __rand__(self, o): return _api.bitwise_and(o, self)
    __xor__ = _api.bitwise_xor
    def __rxor__(self, o): return _api.bitwise_xor(o, self)
    __lshift__ = _api.left_shift
    def __rlshift__(self, o): return _api.left_shift(o, self)
    __rshift__ = _api.right_shift
    def __rrshift__(self, o): return _api.right_shift(o, self)
    __or__ = _api.bitwise_or
    def __ror__(self, o): return _api.bitwise_or(o, self)
    __eq__ = _api.eq
    __ne__ = _api.ne
    __lt__ = _api.lt
    __le__ = _api.le
    __gt__ = _api.gt
    __ge__ = _api.ge

    def __getitem__(self, key):
        return _api.getitem(self, key)

    def unfold(self, dimension, size, step) -> "Tensor":
        """Sliding windows along ``dimension`` (PyTorch's ``Tensor.unfold``)."""
        return sliding_windows(self, dimension, size, step)

    @property
    def T(self) -> "Tensor":
        return reverse_axes(self)


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
