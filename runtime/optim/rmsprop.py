"""``RMSprop`` (centred, momentum, weight decay), PyTorch's arithmetic step by step."""
from __future__ import annotations

from ..core.errors import ArgumentValueError
from ..ops import api
from ._fused import run_update
from .optimizer import Optimizer, check_numbers

__all__ = ["RMSprop"]


def _rmsprop(variant, p, g, sq, *rest):
    centered, momentum, decay, maximize = variant
    rest = list(rest)
    ga = rest.pop(0) if centered else None
    buf = rest.pop(0) if momentum else None
    lr, alpha, w, eps, wd, mu = rest
    if maximize:
        g = api.neg(g)
    if decay:
        g = api.add(g, api.mul(p, wd))
    sq = api.add(api.mul(sq, alpha), api.mul(api.mul(g, g), w))
    outs = [sq]
    if centered:
        ga = api.add(ga, api.mul(api.sub(g, ga), w))       # ga.lerp_(g, 1 - alpha)
        avg = api.add(api.sqrt(api.sub(sq, api.mul(ga, ga))), eps)
        outs.append(ga)
    else:
        avg = api.add(api.sqrt(sq), eps)
    if momentum:
        buf = api.add(api.mul(buf, mu), api.div(g, avg))
        p = api.sub(p, api.mul(buf, lr))
        outs.append(buf)
    else:
        p = api.sub(p, api.mul(api.div(g, avg), lr))
    return (p, *outs)


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 maximize: bool = False):
        check_numbers("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                      momentum=momentum)
        if eps < 0:
            raise ArgumentValueError(f"RMSprop: invalid epsilon value: {eps}")
        if momentum < 0:
            raise ArgumentValueError(f"RMSprop: invalid momentum value: {momentum}")
        if not 0.0 <= alpha:
            raise ArgumentValueError(f"RMSprop: invalid alpha value: {alpha}")
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps,
                                  "weight_decay": weight_decay, "momentum": momentum,
                                  "centered": centered, "maximize": maximize})

    def _step_scalars(self, state, group):
        state["step"] = state.get("step", 0) + 1
        wd, mu = group["weight_decay"], group["momentum"]
        variant = (bool(group["centered"]), mu > 0, wd != 0, bool(group["maximize"]))
        return variant, (group["lr"], group["alpha"], 1 - group["alpha"], group["eps"], wd, mu)

    def _update(self, p, g, state, group):
        centered, mu = bool(group["centered"]), group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = api.zeros_like(p)
            if mu > 0:
                state["momentum_buffer"] = api.zeros_like(p)
            if centered:
                state["grad_avg"] = api.zeros_like(p)
        variant, scalars = self._step_scalars(state, group)
        tensors = [p, g, state["square_avg"]]
        if centered:
            tensors.append(state["grad_avg"])
        if mu > 0:
            tensors.append(state["momentum_buffer"])
        out = list(run_update(_rmsprop, variant, tuple(tensors), scalars))
        new = out.pop(0)
        state["square_avg"] = out.pop(0)
        if centered:
            state["grad_avg"] = out.pop(0)
        if mu > 0:
            state["momentum_buffer"] = out.pop(0)
        return new
