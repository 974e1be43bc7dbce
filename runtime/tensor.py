"""The Tensor class: metadata and data access; no Numba, no kernels, no ops.

A tensor is (payload, shape, dtype, device, id).  The payload is whatever its device
stores (a kernel-set array for plain devices, an inner tensor for autodiff, IR for
capture) and the front end never looks inside it.  The methods that run ops (operators,
casts, indexing, ``to``, the front-end functions) are installed by ``runtime.ops.methods``;
every operation goes through ``runtime.dispatch``.
"""
from __future__ import annotations

import itertools

import numpy as np

from .core import dtypes as D
from .core.errors import ArgumentTypeError, ShapeError

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
            raise ShapeError(f"item: only one-element tensors can be converted to a Python "
                             f"scalar, got shape {self.shape}")
        return self._values().reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise ShapeError(f"the truth value of a tensor of shape {self.shape} is ambiguous; "
                             f"use .any()/.all() style reductions")
        return bool(self.item())

    def __index__(self):
        if not self.dtype.is_int and not self.dtype.is_bool:
            raise ArgumentTypeError("only integer tensors can be used as an index")
        if any(d != 1 for d in self.shape):
            # a TypeError (as PyTorch's), so a front end's int check refuses it by its own name
            raise ArgumentTypeError(f"only one-element integer tensors can be used as an index, "
                                    f"got shape {tuple(self.shape)}")
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

    def __setitem__(self, key, value):
        raise ArgumentTypeError("tensors are immutable; use t = t.slice_assign(key, value), which returns "
                        "a new tensor (for t[key] += v: t.index_put(key, v, accumulate=True), which "
                        "also sums repeated indices)")
