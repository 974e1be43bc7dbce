"""The cuda caching allocator: device buffers are reused instead of allocated per op.

``cuMemAlloc`` costs tens of microseconds (much more for large blocks), and ``cuMemFree``
synchronises the whole device, so a fresh buffer per op would dominate small-op latency and
stall the queue at every free.  As in PyTorch's CUDA caching allocator, buffers are kept:

- A buffer is a 1-D device array whose length is a size class (``_plan.size_class`` of the
  byte count, at least ``MIN_BYTES``: 4 classes per power of two, so at most 25% more than
  asked) for one (GPU, dtype).  Kernels address operands as ``(buf, offset, strides)`` and
  take the element count separately, so a buffer longer than its array is never read past the
  array's end.
- ``acquire(n, dtype, index)`` returns ``(buf, owner)``.  A ``CudaArray`` and every view of it
  hold the owner (a ``Block``); when the last one dies, the owner's finaliser puts the buffer
  back on its free list.  Every kernel and copy runs on the default stream, which executes in
  order, so a buffer handed out again while kernels that used it are still queued is only
  written by kernels queued after them: no synchronisation is needed (PyTorch's argument for
  single-stream reuse).
- The free lists hold at most ``POOL_MAX_BYTES`` (``$JIT_KERNELS_CUDA_POOL_MAX_BYTES``, default
  4 GiB); a buffer released while the pool is full goes back to numba.cuda (which frees it).
  When an allocation fails, the pool is emptied and the allocation retried once.
  ``empty_cache()`` releases every pooled buffer; ``stats()`` reports the counters.

The free lists and their counters are ``jit_kernels._freelists.FreeLists``, shared with the cpu
pool.
"""
from __future__ import annotations

import os

import numpy as np
from numba import cuda

from jit_kernels._freelists import FreeLists
from jit_kernels._plan import size_class

MIN_BYTES = 256
POOL_MAX_BYTES = int(os.environ.get("JIT_KERNELS_CUDA_POOL_MAX_BYTES", str(4 << 30)))

_LISTS = FreeLists(POOL_MAX_BYTES)   # (gpu index, dtype str, class length) -> device buffer


class Block:
    """Owner of one pooled buffer; its finaliser returns the buffer to the free list."""

    __slots__ = ("key", "buf", "nbytes")

    def __del__(self):
        try:
            _LISTS.give(self.key, self.buf, self.nbytes)
        except Exception:  # interpreter shutdown
            pass


def acquire(n: int, dtype: np.dtype, index: int):
    """A device buffer of at least ``n`` elements of ``dtype`` on the current GPU (which must
    be ``index``), and the owner that returns it to the pool; contents are uninitialised."""
    isz = dtype.itemsize
    cls = size_class(max(n * isz, MIN_BYTES))
    length = -(-cls // isz)
    key = (index, dtype.str, length)
    buf = _LISTS.take(key)
    if buf is None:
        try:
            buf = cuda.device_array(length, dtype=dtype)
        except Exception:  # out of memory: give the pool back, then try once more
            if not empty_cache():
                raise
            _flush_frees()
            buf = cuda.device_array(length, dtype=dtype)
    owner = Block()
    owner.key = key
    owner.buf = buf
    owner.nbytes = length * isz
    return buf, owner


def _flush_frees() -> None:
    """Make numba.cuda free the buffers it was handed back (its frees are deferred)."""
    ctx = getattr(cuda, "current_context", None)
    deallocs = getattr(ctx(), "deallocations", None) if ctx else None
    if deallocs is not None:
        deallocs.clear()


def empty_cache() -> int:
    """Give every pooled buffer back to numba.cuda; returns the number of bytes released."""
    return _LISTS.clear()


def stats() -> dict:
    """Pool counters: pooled bytes, hits, misses, released and dropped buffers."""
    return _LISTS.stats()
