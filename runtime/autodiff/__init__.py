"""Autodiff: a decorator device with a tape, checkpointing and custom ops.

``ad = rt.autodiff(rt.cpu())``; tensors on ``ad`` are autodiff tensors, ``require_grad()``
tracks a leaf, ``loss.backward()`` returns ``Gradients``, ``x.grad(grads)`` reads them.
"""
from .custom import custom_op
from .device import AutodiffDevice, autodiff, from_inner
from .gradients import Gradients
from .grad_mode import no_grad
from .transforms import grad, value_and_grad
from . import movement as _movement

__all__ = ["autodiff", "no_grad", "from_inner", "custom_op", "Gradients", "AutodiffDevice",
           "grad", "value_and_grad"]
