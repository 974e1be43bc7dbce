"""The autodiff rows of the device-movement table."""
from __future__ import annotations

from ..core.errors import AutodiffMoveError
from ..ops.movement import MoveRule, can_move, register_move
from ..tensor import Tensor
from . import tape
from .device import _wrap
from .grad_mode import is_recording


def _plain_to_autodiff(t: Tensor, target) -> Tensor:
    return _wrap(t.to(target.inner), None, target)     # an untracked autodiff tensor


def _refuse(t, target):
    raise AutodiffMoveError()


def _move_backward(source_device):
    def rule(ctx, g):
        return (g.to(source_device),)
    return rule


def _autodiff_to_autodiff(t: Tensor, target) -> Tensor:
    p = t._payload
    if t.device.inner == target.inner:     # only the checkpointing differs: nothing moves
        return Tensor._wrap(p, t.shape, t.dtype, target, id=t.id)
    inner = p.inner.to(target.inner)
    node = None
    if p.node is not None and is_recording():
        node = tape.record(_move_backward(p.inner.device), None, None, (p.node,), inner, "none")
    return _wrap(inner, node, target)


register_move("plain", "autodiff", MoveRule(lambda t, d: can_move(t, d.inner), _plain_to_autodiff))
register_move("autodiff", "plain", MoveRule(lambda t, d: False, _refuse))
register_move("autodiff", "capture", MoveRule(lambda t, d: False, _refuse))
register_move("autodiff", "autodiff",
              MoveRule(lambda t, d: t.device.inner == d.inner or can_move(t._payload.inner, d.inner),
                       _autodiff_to_autodiff))
