"""``Gradients``: what ``backward()`` returns, keyed by tracked leaf."""
from __future__ import annotations

__all__ = ["Gradients"]


class Gradients:
    """Gradients of one ``backward()`` call: read them with ``x.grad(grads)``.

    Entries are plain tensors on the inner device, one per tracked leaf that contributed.
    """

    __slots__ = ("_by_leaf",)

    def __init__(self):
        self._by_leaf: dict = {}   # leaf Node -> inner tensor

    def _get(self, leaf, remove: bool = False):
        if remove:
            return self._by_leaf.pop(leaf, None)
        return self._by_leaf.get(leaf)

    def _accumulate(self, leaf, g) -> None:
        from ..ops import api
        prev = self._by_leaf.get(leaf)
        self._by_leaf[leaf] = g if prev is None else api.add(prev, g)

    def _set(self, leaf, g) -> None:
        """Replace (or add) ``leaf``'s gradient (for data-parallel averaging)."""
        self._by_leaf[leaf] = g

    def _tensors(self) -> list:
        """Every gradient tensor (for clipping)."""
        return list(self._by_leaf.values())

    def _map(self, fn) -> None:
        """Replace every gradient ``g`` by ``fn(g)`` (for clipping)."""
        for leaf, g in list(self._by_leaf.items()):
            self._by_leaf[leaf] = fn(g)

    def __len__(self) -> int:
        return len(self._by_leaf)

    def __bool__(self) -> bool:
        return bool(self._by_leaf)

    def __contains__(self, t) -> bool:
        node = getattr(getattr(t, "_payload", None), "node", None)
        return node is not None and node in self._by_leaf

    def __repr__(self) -> str:
        return f"Gradients({len(self._by_leaf)} leaf gradient(s))"
