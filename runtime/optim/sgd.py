"""``SGD`` with momentum, dampening, Nesterov and weight decay (PyTorch's update, step by
step)."""
from __future__ import annotations

from ..core.errors import ArgumentValueError
from ..ops import api
from ._fused import run_update
from .optimizer import Optimizer, check_numbers

__all__ = ["SGD"]


def _sgd(variant, p, g, *rest):
    """One SGD step: ``variant`` = (momentum, nesterov, weight decay, maximize) flags."""
    momentum, nesterov, decay, maximize = variant
    if momentum:
        buf, lr, wd, mu, keep, take = rest
    else:
        lr, wd = rest
    if maximize:
        g = api.neg(g)
    if decay:
        g = api.add(g, api.mul(p, wd))
    if not momentum:
        return (api.sub(p, api.mul(g, lr)),)
    # buf = mu * buf + (1 - dampening) * g; on the first step keep=0, take=1 (buf = g)
    buf = api.add(api.mul(buf, keep), api.mul(g, take))
    step = api.add(g, api.mul(buf, mu)) if nesterov else buf
    return api.sub(p, api.mul(step, lr)), buf


class SGD(Optimizer):
    """Stochastic gradient descent (``torch.optim.SGD``'s arguments and arithmetic)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        check_numbers("SGD", lr=lr, momentum=momentum, dampening=dampening,
                      weight_decay=weight_decay)
        if momentum < 0:
            raise ArgumentValueError(f"SGD: invalid momentum value: {momentum}")
        if weight_decay < 0:
            raise ArgumentValueError(f"SGD: invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ArgumentValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov,
                                  "maximize": maximize})

    def _step_scalars(self, state, group):
        mu, wd = group["momentum"], group["weight_decay"]
        variant = (mu != 0, bool(group["nesterov"]), wd != 0, bool(group["maximize"]))
        if mu == 0:
            return variant, (group["lr"], wd)
        # buf = mu * buf + (1 - dampening) g; on the first step (no buffer yet) buf = g
        first = state.get("momentum_buffer") is None
        keep, take = (0.0, 1.0) if first else (mu, 1.0 - group["dampening"])
        return variant, (group["lr"], wd, mu, keep, take)

    def _update(self, p, g, state, group):
        variant, scalars = self._step_scalars(state, group)
        if not variant[0]:
            return run_update(_sgd, variant, (p, g), scalars)[0]
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = api.zeros_like(p)
        new, state["momentum_buffer"] = run_update(_sgd, variant, (p, g, buf), scalars)
        return new
