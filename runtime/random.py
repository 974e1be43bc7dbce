"""Per-device random streams: a seed and a counter (kernels are counter-based).

Element i of a draw is a pure function of (seed, offset + i), so results depend only
on the seed and the order of draws on that device, never on the thread count.
The default seed is fixed (``DEFAULT_SEED``), so a fresh process is reproducible, as in PyTorch.
"""
from __future__ import annotations

import threading

DEFAULT_SEED = 0x5EED

_lock = threading.Lock()
_state: dict = {}  # device -> [seed, offset]


def seed_device(device, seed: int) -> None:
    """Restart ``device``'s stream at ``seed``."""
    with _lock:
        _state[device] = [int(seed) & 0xFFFFFFFFFFFFFFFF, 0]


def seed_all(seed: int) -> None:
    """Restart every device's stream (known ones now, new ones start at ``seed`` too)."""
    global DEFAULT_SEED
    with _lock:
        DEFAULT_SEED = int(seed) & 0xFFFFFFFFFFFFFFFF
        for d in list(_state):
            _state[d] = [DEFAULT_SEED, 0]


def take_offset(device, n: int) -> tuple:
    """Reserve ``n`` draws on ``device``'s stream; returns (seed, first offset)."""
    with _lock:
        st = _state.get(device)
        if st is None:
            st = _state[device] = [DEFAULT_SEED, 0]
        seed, off = st
        st[1] = off + n
        return seed, off
