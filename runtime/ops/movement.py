"""``Tensor.to``: the device-movement table, keyed by (source family, target family).

Each entry is a ``MoveRule`` with ``allowed`` (used by ``rt.can_move``, never raises) and
``move``.  Plain devices fill their row here; the autodiff and capture packages register
theirs when imported.  The generic bridge between plain devices is a host round trip.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..device import Device, device as _parse
from ..dispatch import create
from .create import init_attrs
from ..core.errors import DeviceError

__all__ = ["MoveRule", "register_move", "move", "can_move"]


@dataclass(frozen=True)
class MoveRule:
    allowed: Callable  # (tensor, target) -> bool, never raises
    move: Callable     # (tensor, target) -> Tensor, raises the table's error when not allowed


_TABLE: dict = {}


def register_move(src_family: str, dst_family: str, rule: MoveRule) -> None:
    _TABLE[(src_family, dst_family)] = rule


def _rule(t, target: Device) -> MoveRule:
    try:
        return _TABLE[(t.device.family, target.family)]
    except KeyError:
        raise DeviceError(f"no rule to move a tensor from {t.device} to {target}") from None


def move(t, target) -> "Tensor":  # noqa: F821
    """``t`` on ``target`` (same device: ``t`` itself)."""
    target = _parse(target)
    if t.device is target:
        return t
    return _rule(t, target).move(t, target)


def can_move(t, target) -> bool:
    """True exactly when ``t.to(target)`` would not raise."""
    try:
        target = _parse(target)
        if t.device is target:
            return True
        return bool(_rule(t, target).allowed(t, target))
    except Exception:
        return False


def _plain_to_plain(t, target):
    if t.device == target:
        return t
    return create("init", target, init_attrs(t.device.to_host(t), t.dtype))


register_move("plain", "plain", MoveRule(lambda t, d: True, _plain_to_plain))
