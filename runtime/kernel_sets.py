"""The one map from a device kind to its kernel set, and what each kernel set can do.

Kernel sets live in ``jit_kernels`` (imported on first use, so importing the runtime compiles
nothing).  Besides the methods every kernel set has (``jit_kernels.PROTOCOL_METHODS``), a
kernel set declares the optional features it offers in ``capabilities``
(``jit_kernels.CAPABILITIES`` names them and the methods each brings); the runtime asks
``supports(ks, name)`` instead of probing for methods.
"""
from __future__ import annotations

from typing import Callable

from .core.errors import DeviceError

__all__ = ["for_kind", "for_device", "supports", "fused_row_ops", "loaded", "on_empty_cache", "empty_caches"]

#: kind -> its kernel set, filled on first use (read directly on the hot paths)
KERNELS: dict = {}


def for_kind(kind: str):
    """The kernel set registered for a device kind (imported on first use)."""
    ks = KERNELS.get(kind)
    if ks is None:
        import jit_kernels
        try:
            ks = jit_kernels.kernel_set_for(kind)
        except ImportError as exc:
            raise DeviceError(f"the {kind} kernel set cannot be loaded: {exc}") from None
        KERNELS[kind] = ks
    return ks


def for_device(device):
    """The kernel set of a plain device."""
    return KERNELS.get(device.kind) or for_kind(device.kind)


def fused_row_ops() -> tuple:
    """(last-axis reductions, all row-level ops) the kernel sets' fused "rows" kernels compute:
    jit_kernels' op table, read by the fusion pass (``runtime.capture.fuse``)."""
    from jit_kernels import optable
    return optable.ROW_REDUCTIONS, optable.ROW_OPS


def supports(ks, capability: str) -> bool:
    """Whether kernel set ``ks`` declares the optional feature ``capability``."""
    return capability in ks.capabilities


def loaded() -> list:
    """The kernel sets this process has loaded."""
    return list(KERNELS.values())


_CLEARERS: list = []


def on_empty_cache(fn: Callable[[], None]) -> Callable[[], None]:
    """Register ``fn`` to run on ``rt.empty_cache()`` (a layer above that keeps a cache of
    decisions or compiled runners registers its ``clear``)."""
    _CLEARERS.append(fn)
    return fn


def empty_caches() -> None:
    """Run every registered cache clearer, then release each loaded kernel set's pooled
    buffers."""
    for fn in _CLEARERS:
        fn()
    for ks in loaded():
        if supports(ks, "empty_cache"):
            ks.empty_cache()
