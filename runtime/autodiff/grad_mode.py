"""``rt.no_grad()``: a thread-local switch that stops the tape from recording."""
from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "is_recording"]


class _Mode(threading.local):
    def __init__(self):
        self.disabled = 0


_mode = _Mode()


def is_recording() -> bool:
    """True unless the calling thread is inside ``rt.no_grad()``."""
    return _mode.disabled == 0


class no_grad:
    """Context manager (and decorator): operations inside record nothing on the tape."""

    def __enter__(self):
        _mode.disabled += 1
        return self

    def __exit__(self, *exc):
        _mode.disabled -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with no_grad():
                return fn(*a, **k)
        return wrapper
