"""The whole-function trace (``rt.compile``) recording in this thread, if any.

The layers a trace must see into read it here (a module that imports nothing of the runtime,
so each of them may): parameter and buffer reads (``rt.nn``), optimiser steps and their
hyperparameters (``rt.optim``), ``backward()`` (``rt.autodiff``), a value read from a traced
tensor (the capture device).
"""
from __future__ import annotations

import threading

__all__ = ["current_step", "step_scope", "active_steps"]


class _StepTraces(threading.local):
    def __init__(self):
        self.trace = None


_steps = _StepTraces()
_lock = threading.Lock()
#: how many whole-function traces are recording now, in any thread: the eager paths test this
#: plain int before they look at the thread's trace
active_steps = 0


def current_step():
    """The trace recording in this thread, or None.

    It has ``device`` (its private capture device) and the hooks the layers call while it
    records: ``lift_parameter``, ``lift_buffer``, ``touch_buffer``, ``lift_state``,
    ``scalar_inputs``, ``updating`` and ``value_read_error``."""
    return _steps.trace if active_steps else None


class step_scope:
    """``with step_scope(trace):``: ``trace`` is this thread's ``current_step()`` inside."""

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        global active_steps
        _steps.trace = self.trace
        with _lock:
            active_steps += 1
        return self.trace

    def __exit__(self, *exc):
        global active_steps
        _steps.trace = None
        with _lock:
            active_steps -= 1
        return False
