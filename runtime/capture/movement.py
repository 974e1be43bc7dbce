"""The capture rows of the device-movement table (registered on import)."""
from __future__ import annotations

from ..core.errors import CaptureMoveError, CaptureValueError
from ..ops.movement import MoveRule, register_move
from .device import active_session

__all__: list = []


def _init_into(target, value, dt):
    from .. import dispatch
    from ..ops.create import init_attrs
    return dispatch.create("init", target, init_attrs(value, dt))


# plain -> capture: the value becomes an initialized value of the target's active scope.
def _plain_to_capture_ok(t, target) -> bool:
    return active_session(target) is not None


def _plain_to_capture(t, target):
    return _init_into(target, t.device.to_host(t), t.dtype)


# capture -> plain: never.
def _capture_to_plain(t, target):
    raise CaptureMoveError()


# capture -> capture: initialized values move into the target's active scope.
def _capture_to_capture_ok(t, target) -> bool:
    if t.device == target:
        return True
    return t._payload.value is not None and active_session(target) is not None


def _capture_to_capture(t, target):
    if t.device == target:
        return t
    value = t._payload.value
    if value is None:
        raise CaptureValueError(f"capture tensor {t.id} has no initialized value")
    return _init_into(target, value, t.dtype)


# capture -> autodiff(the same capture device): an untracked lift; anything else: never.
def _lift():
    try:
        from ..autodiff import from_inner
    except ImportError:
        return None
    return from_inner


def _capture_to_autodiff_ok(t, target) -> bool:
    return getattr(target, "inner", None) == t.device and _lift() is not None


def _capture_to_autodiff(t, target):
    lift = _lift()
    if getattr(target, "inner", None) != t.device or lift is None:
        raise CaptureMoveError()
    return lift(t, checkpointing=getattr(target, "checkpointing", "none"))


register_move("plain", "capture", MoveRule(_plain_to_capture_ok, _plain_to_capture))
register_move("capture", "plain", MoveRule(lambda t, d: False, _capture_to_plain))
register_move("capture", "capture", MoveRule(_capture_to_capture_ok, _capture_to_capture))
register_move("capture", "autodiff", MoveRule(_capture_to_autodiff_ok, _capture_to_autodiff))
