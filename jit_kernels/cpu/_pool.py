"""The cpu caching allocator: large output buffers are reused instead of freshly mapped.

A fresh 40 MB NumPy array costs about as much as the kernel that fills it: the allocation is
an ``mmap`` and every 4 KiB page faults on first touch.  ``empty(shape, dtype)`` therefore
serves arrays of at least ``POOL_MIN_BYTES`` from per-size-class free lists:

- Size classes are 4 per power of two (``2**k * (1 + j/4)``), so a block is at most 25% larger
  than the request; only the first ``nbytes`` of a reused block are touched.
- Each returned array is a plain ``numpy.ndarray`` whose ``.base`` is a private owner object (a
  ``_Block`` exposing the raw block through ``__array_interface__``; not an ndarray, so NumPy's
  collapsing of view chains stops at it).  Every view, reshape or slice of the array keeps the
  owner alive; when the last one dies the owner's finaliser puts the raw block back on its free
  list (the owner holds the raw block, so its memory stays valid until then).
- Only blocks this module allocated are ever pooled: arrays that come from the user
  (``from_numpy``/``from_host``) or from NumPy/Numba directly are never touched.
- The free lists hold at most ``POOL_MAX_BYTES`` (``$JIT_KERNELS_POOL_MAX_BYTES``, default 1 GiB);
  a block released while the pool is full is freed.  ``empty_cache()`` frees every pooled block;
  ``stats()`` reports hits, misses and pooled bytes.

Small arrays (below ``POOL_MIN_BYTES``) use ``numpy.empty``: malloc's own free lists serve them
without page faults.  The free lists and counters are ``jit_kernels._freelists.FreeLists``,
shared with the cuda pool.
"""
from __future__ import annotations

import os

import numpy as np

from jit_kernels._freelists import FreeLists
from jit_kernels._plan import size_class

POOL_MIN_BYTES = 1 << 18  # 256 KiB
POOL_MAX_BYTES = int(os.environ.get("JIT_KERNELS_POOL_MAX_BYTES", str(1 << 30)))

_LISTS = FreeLists(POOL_MAX_BYTES)   # size class (bytes) -> (raw uint8 block, address)
_empty = np.empty
_asarray = np.asarray


class _Block:
    """Owner of one pooled block (exposes it via ``__array_interface__``); its finaliser
    returns the raw block to the free list once no array viewing it is left."""

    __slots__ = ("__array_interface__", "raw")

    def __del__(self):
        try:
            raw = self.raw
            _LISTS.give(raw[0].shape[0], raw, raw[0].shape[0])
        except Exception:  # interpreter shutdown
            pass


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array (pooled when at least ``POOL_MIN_BYTES``)."""
    n = 1
    for d in shape:
        n *= d
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
        return _empty(shape, dtype)
    cls = size_class(nbytes)
    raw = _LISTS.take(cls)
    if raw is None:
        raw = _empty(cls, np.uint8)
        raw = (raw, raw.__array_interface__["data"][0])
    owner = _Block()
    owner.raw = raw
    owner.__array_interface__ = {"data": (raw[1], False), "shape": tuple(shape),
                                 "typestr": dtype.str, "version": 3}
    return _asarray(owner)


def empty_cache() -> int:
    """Free every pooled block; returns the number of bytes released to the system."""
    return _LISTS.clear()


def stats() -> dict:
    """Pool counters: pooled bytes, hits, misses, released and dropped blocks."""
    return _LISTS.stats()
