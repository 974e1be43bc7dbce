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
without page faults.  No lock is taken (list ``append``/``pop`` are atomic under the GIL, and a
finaliser may run inside an allocation); the byte count is approximate under races.
"""
from __future__ import annotations

import os

import numpy as np

from jit_kernels._plan import size_class

POOL_MIN_BYTES = 1 << 18  # 256 KiB
POOL_MAX_BYTES = int(os.environ.get("JIT_KERNELS_POOL_MAX_BYTES", str(1 << 30)))

_FREE: dict = {}          # size class (bytes) -> list of (raw uint8 block, address)
_STATE = {"pooled": 0, "hits": 0, "misses": 0, "released": 0, "dropped": 0}
_empty = np.empty
_asarray = np.asarray


def _release(raw) -> None:
    st = _STATE
    cls = raw[0].shape[0]
    if st["pooled"] + cls > POOL_MAX_BYTES:
        st["dropped"] += 1
        return
    lst = _FREE.get(cls)
    if lst is None:
        lst = _FREE[cls] = []
    lst.append(raw)
    st["pooled"] += cls
    st["released"] += 1


class _Block:
    """Owner of one pooled block (exposes it via ``__array_interface__``); its finaliser
    returns the raw block to the free list once no array viewing it is left."""

    __slots__ = ("__array_interface__", "raw")

    def __del__(self):
        try:
            _release(self.raw)
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
    lst = _FREE.get(cls)
    raw = None
    if lst:
        try:
            raw = lst.pop()
            _STATE["pooled"] -= cls
            _STATE["hits"] += 1
        except IndexError:
            raw = None
    if raw is None:
        _STATE["misses"] += 1
        raw = _empty(cls, np.uint8)
        raw = (raw, raw.__array_interface__["data"][0])
    owner = _Block()
    owner.raw = raw
    owner.__array_interface__ = {"data": (raw[1], False), "shape": tuple(shape),
                                 "typestr": dtype.str, "version": 3}
    return _asarray(owner)


def empty_cache() -> int:
    """Free every pooled block; returns the number of bytes released to the system."""
    freed = 0
    for cls, lst in list(_FREE.items()):
        while lst:
            try:
                lst.pop()
            except IndexError:
                break
            freed += cls
    _STATE["pooled"] = 0
    return freed


def stats() -> dict:
    """Pool counters: pooled bytes, hits, misses, released and dropped blocks."""
    d = dict(_STATE)
    d["blocks"] = sum(len(v) for v in _FREE.values())
    return d
