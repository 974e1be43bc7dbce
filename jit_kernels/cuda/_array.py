"""The ``cuda`` payload (``CudaArray``), view metadata, device selection and launch sizes.

A ``CudaArray`` is a strided view of a 1-D contiguous numba.cuda device buffer: ``buf`` (the
allocation, possibly longer than the array: buffers come from the caching allocator ``_pool``),
``own`` (the pool owner every view shares, which returns ``buf`` to the pool once no view is
left; None for buffers not from the pool), ``offset`` (element position of the first element),
``strides`` (in elements, may be 0 or negative), ``shape``, ``dtype`` and the GPU ``index``.
Views (reshape, permute, expand, index) only change metadata, so every kernel reads operands as
``(buf, offset, strides)``, the same scheme as the cpu kernels, and the same code runs on a GPU
and on the simulator (whose device arrays do not support every view a ``DeviceNDArray`` does,
and vice versa).

View metadata is computed by NumPy itself on a stand-in array (``as_strided`` over a 1-element
buffer: only strides and pointers are looked at, no element is read), so reshape/index follow
NumPy's rules exactly.
"""
from __future__ import annotations

import os
import threading

import numpy as np
from numba import config, cuda

from jit_kernels.cuda import _pool

SIM = bool(config.ENABLE_CUDASIM)
#: threads per block of the 1-D kernels (small under the simulator: it pays per thread)
TPB = 16 if SIM else 256
#: threads per block of the reduction kernels (one block per output row)
RTPB = 4 if SIM else 256


_new = object.__new__


class CudaArray:
    """A strided view of a device buffer (the cuda kernel set's payload)."""

    __slots__ = ("buf", "shape", "strides", "offset", "dtype", "index", "own")

    def __init__(self, buf, shape, strides, offset, dtype, index, own=None):
        self.buf = buf
        self.own = own
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.dtype = np.dtype(dtype)
        self.index = int(index)

    def view(self, shape, strides, offset=None) -> "CudaArray":
        """Another view of the same buffer (shares ``buf`` and its pool owner); ``shape`` and
        ``strides`` are sequences of Python ints."""
        v = _new(CudaArray)
        v.buf = self.buf
        v.own = self.own
        v.shape = tuple(shape)
        v.strides = tuple(strides)
        v.offset = self.offset if offset is None else int(offset)
        v.dtype = self.dtype
        v.index = self.index
        return v

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def c_contiguous(self) -> bool:
        st = self.strides
        return st == c_strides(self.shape) or st == c_strides_skip1(self.shape, st)

    def __repr__(self):
        return (f"CudaArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
                f"offset={self.offset}, device=cuda:{self.index})")

    def __array__(self, dtype=None, copy=None):
        from jit_kernels.cuda import memory
        a = memory.to_host(self)
        return a if dtype is None else a.astype(dtype)


_C_STRIDES: dict = {}


def c_strides(shape) -> tuple:
    """C-order strides (in elements) of ``shape`` (cached per shape)."""
    st = _C_STRIDES.get(shape)
    if st is None:
        st = _c_strides(shape)
        if len(_C_STRIDES) < 4096:
            _C_STRIDES[tuple(shape)] = st
    return st


def _c_strides(shape) -> tuple:
    st = []
    acc = 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def c_strides_skip1(shape, strides) -> tuple:
    """C strides for ``shape``, but keep ``strides``' value on size-1 dims (they never matter)."""
    cs = c_strides(shape)
    return tuple(s if n == 1 else c for n, s, c in zip(shape, strides, cs))


# -- device selection --------------------------------------------------------------------------

class _Current(threading.local):
    """The GPU this thread made current last (CUDA's current device is per thread, so the
    cache is too: a thread working on GPU 1 must not make another skip selecting GPU 0)."""

    index = None


_current = _Current()


def current_index():
    """The GPU index this thread selected last through ``use`` (None: none yet)."""
    return _current.index


def use(index: int) -> None:
    """Make GPU ``index`` current in this thread for the next allocation/launch (no-op under
    the simulator)."""
    if SIM or _current.index == index:
        return
    cuda.select_device(int(index))
    _current.index = index


_SM_COUNT: dict = {}


def sm_count(index: int) -> int:
    n = _SM_COUNT.get(index)
    if n is None:
        if SIM:
            n = 1
        else:
            use(index)
            n = int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
        _SM_COUNT[index] = n
    return n


def blocks_for(n: int, index: int, tpb: int = TPB) -> int:
    """Blocks of a grid-stride 1-D launch over ``n`` items."""
    need = max(1, -(-n // tpb))
    if SIM:  # few blocks, so small test arrays already take every path of grid-stride loops
        return min(need, 2)
    return min(need, sm_count(index) * 32)


def target_blocks(index: int) -> int:
    """How many blocks fill the device (reductions split rows to reach it)."""
    return 2 if SIM else sm_count(index) * 8


# -- allocation and views ----------------------------------------------------------------------

def alloc(shape, dtype, index) -> CudaArray:
    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        n *= s
    return alloc_c(shape, n, np.dtype(dtype), int(index))


def alloc_c(shape: tuple, n: int, dtype: np.dtype, index: int) -> CudaArray:
    """``alloc`` for a normalised shape of ``n`` elements (no argument conversion)."""
    if _current.index != index:
        use(index)
    buf, own = _pool.acquire(n, dtype, index)
    x = _new(CudaArray)
    x.buf = buf
    x.own = own
    x.shape = shape
    x.strides = c_strides(shape)
    x.offset = 0
    x.dtype = dtype
    x.index = index
    return x


def _stand_in(x: CudaArray) -> np.ndarray:
    isz = x.dtype.itemsize
    base = np.zeros(1, dtype=x.dtype)
    return np.lib.stride_tricks.as_strided(base, x.shape, [s * isz for s in x.strides],
                                           writeable=False)


def _from_stand_in(x: CudaArray, stand, v: np.ndarray) -> CudaArray:
    isz = x.dtype.itemsize
    delta = v.__array_interface__["data"][0] - stand.__array_interface__["data"][0]
    return x.view(v.shape, [s // isz for s in v.strides], x.offset + delta // isz)


def view_reshape(x: CudaArray, shape):
    """A view of ``x`` with ``shape``, or None when the layout does not allow one."""
    if x.c_contiguous:  # the common case, without NumPy's stand-in
        shape = tuple(int(s) for s in shape)
        return x.view(shape, c_strides(shape))
    stand = _stand_in(x)
    try:
        v = stand.reshape(tuple(shape), copy=False)
    except (ValueError, TypeError):
        return None
    return _from_stand_in(x, stand, v)


def view_index(x: CudaArray, key) -> CudaArray:
    """Basic indexing with a normalised key (one entry per axis: an int, or a slice in
    ``slice.indices`` form, whose stop of -1 with a negative step means "past index 0"; plus
    None entries inserting axes): NumPy's view rules, computed directly."""
    shape = []
    strides = []
    off = x.offset
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        st = x.strides[d]
        if type(k) is slice:
            n = len(range(k.start, k.stop, k.step))
            if n:
                off += k.start * st
            shape.append(n)
            strides.append(st * k.step)
        else:
            k = int(k)
            off += (k + x.shape[d] if k < 0 else k) * st
        d += 1
    shape.extend(x.shape[d:])
    strides.extend(x.strides[d:])
    return x.view(shape, strides, off)


def view_permute(x: CudaArray, axes) -> CudaArray:
    axes = tuple(axes)
    return x.view([x.shape[a] for a in axes], [x.strides[a] for a in axes])


def view_expand(x: CudaArray, shape) -> CudaArray:
    shape = tuple(shape)
    pad = len(shape) - x.ndim
    st = [0] * pad
    for n, s, no in zip(x.shape, x.strides, shape[pad:]):
        st.append(s if n == no and n != 1 else 0)
    return x.view(shape, st)


# -- launches ----------------------------------------------------------------------------------

#: when a list, every launch appends (python file, function name, argument descriptors); the
#: PTX check (``jit_kernels.cuda.ptx``) replays them through ``compile_ptx``.
RECORD = None


def _describe(a):
    if hasattr(a, "dtype") and hasattr(a, "shape") and not isinstance(a, np.generic):
        return ("array", np.dtype(a.dtype).str, len(a.shape))
    if isinstance(a, (bool, np.bool_)):
        return ("scalar", "|b1")
    if isinstance(a, np.generic):
        return ("scalar", a.dtype.str)
    if isinstance(a, int):
        return ("scalar", "<i8")
    if isinstance(a, float):
        return ("scalar", "<f8")
    if isinstance(a, tuple):
        return ("tuple", len(a))
    raise TypeError(f"cannot describe kernel argument {a!r}")


#: launch directly through the compiled kernel once its argument types are known (skips
#: numba.cuda's per-call typing and launch-configuration objects); $JIT_KERNELS_CUDA_DIRECT=0
#: turns it off.  Never under the simulator, whose kernels have no compiled overloads.
DIRECT = not SIM and os.environ.get("JIT_KERNELS_CUDA_DIRECT", "1") != "0"

_CONFIGURED: dict = {}    # (kernel, grid, block) -> configured launcher ``kern[grid, block]``
_COMPILED: dict = {}      # (kernel, argument kinds) -> compiled kernel (``kern.overloads``)
_DNA = None               # numba.cuda's DeviceNDArray class (resolved on the first launch)


_SCALARS = frozenset([int, float, bool, np.bool_, np.int8, np.int16, np.int32, np.int64,
                      np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64])


def _arg_kinds(args):
    """What selects a compiled overload: the dtype of each device buffer, the type of each
    scalar; None when an argument is anything else (then numba.cuda types it every time)."""
    dna = _DNA
    kinds = []
    for a in args:
        t = type(a)
        if t is dna:
            kinds.append(a.dtype)
        elif t in _SCALARS:
            kinds.append(t)
        else:
            return None
    return tuple(kinds)


def launch(kern, grid, block, *args):
    """``kern[grid, block](*args)`` on the default stream (recorded when ``RECORD`` is a list).

    The configured launcher is cached per (kernel, grid, block, GPU) (not under the simulator,
    whose ``kern[grid, block]`` returns ``kern`` itself, reconfigured).  With ``DIRECT``, the first
    launch per argument kinds goes through numba.cuda (which types and compiles), and later
    ones call the compiled kernel's ``launch`` with the cached configuration: a kernel's
    overload is fully determined by its argument kinds (every buffer is a 1-D C-contiguous
    device array, so its numba type is fixed by its dtype)."""
    global _DNA
    if RECORD is not None:
        fn = getattr(kern, "py_func", None) or kern.fn
        RECORD.append((fn.__code__.co_filename, fn.__name__, tuple(_describe(a) for a in args)))
    if SIM:  # the simulator's ``kern[grid, block]`` configures ``kern`` itself: never cache it
        kern[grid, block](*args)
        return
    ck = (kern, grid, block, _current.index)
    cfg = _CONFIGURED.get(ck)
    if cfg is None:
        if len(_CONFIGURED) > 4096:
            _CONFIGURED.clear()
        cfg = _CONFIGURED[ck] = kern[grid, block]
    if not DIRECT:
        cfg(*args)
        return
    if _DNA is None:
        from numba.cuda.cudadrv.devicearray import DeviceNDArray
        _DNA = DeviceNDArray
    kinds = _arg_kinds(args)
    kk = (kern, kinds)
    compiled = _COMPILED.get(kk) if kinds is not None else None
    if compiled is None:
        cfg(*args)
        if kinds is not None:
            compiled = kern.overloads.get(tuple(kern.typeof_pyval(a) for a in args))
            if compiled is not None:
                _COMPILED[kk] = compiled
        return
    try:
        compiled.launch(args, cfg.griddim, cfg.blockdim, cfg.stream, cfg.sharedmem)
    except Exception as exc:  # an interface change in numba.cuda: fall back for good, loudly
        _disable_direct(exc)
        cfg(*args)


def _disable_direct(exc) -> None:
    global DIRECT
    DIRECT = False
    _COMPILED.clear()
    import warnings
    warnings.warn(f"jit_kernels.cuda: direct kernel launch failed ({type(exc).__name__}: {exc}); "
                  "launching through numba.cuda's dispatcher from now on", RuntimeWarning,
                  stacklevel=3)
