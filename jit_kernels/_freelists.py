"""Free lists of a caching allocator, shared by ``cpu/_pool.py`` and ``cuda/_pool.py``.

Blocks are kept per key (a size class, or a (GPU, dtype, length) triple) up to ``max_bytes``
in all; a block given back while the lists are full is dropped (left to the garbage collector,
which frees it).  No lock is taken: list ``append``/``pop`` are atomic under the GIL, and a
finaliser may give a block back in the middle of a ``take``; the byte count is approximate
under such races.
"""
from __future__ import annotations


class FreeLists:
    """Pooled blocks by key, a byte cap and counters (pooled bytes, hits, misses, released,
    dropped)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.lists: dict = {}
        self.nbytes: dict = {}        # key -> bytes of one of its blocks
        self.counters = {"pooled": 0, "hits": 0, "misses": 0, "released": 0, "dropped": 0}

    def take(self, key):
        """A pooled block for ``key`` (a hit), or None (a miss: the caller allocates)."""
        lst = self.lists.get(key)
        if lst:
            try:
                block = lst.pop()
            except IndexError:
                pass
            else:
                c = self.counters
                c["pooled"] -= self.nbytes[key]
                c["hits"] += 1
                return block
        self.counters["misses"] += 1
        return None

    def give(self, key, block, nbytes: int) -> None:
        """Keep ``block`` (of ``nbytes``) for a later ``take(key)``, unless the cap is reached."""
        c = self.counters
        if c["pooled"] + nbytes > self.max_bytes:
            c["dropped"] += 1
            return
        lst = self.lists.get(key)
        if lst is None:
            lst = self.lists[key] = []
            self.nbytes[key] = nbytes
        lst.append(block)
        c["pooled"] += nbytes
        c["released"] += 1

    def clear(self) -> int:
        """Drop every pooled block; returns their bytes."""
        freed = 0
        for key, lst in list(self.lists.items()):
            while lst:
                try:
                    lst.pop()
                except IndexError:
                    break
                freed += self.nbytes[key]
        self.counters["pooled"] = 0
        return freed

    def stats(self) -> dict:
        d = dict(self.counters)
        d["blocks"] = sum(len(v) for v in self.lists.values())
        return d
