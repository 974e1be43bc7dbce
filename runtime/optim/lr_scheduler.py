"""Learning-rate schedulers (``torch.optim.lr_scheduler``'s names, arguments and formulas):
``LambdaLR``, ``StepLR``, ``CosineAnnealingLR``, ``OneCycleLR``.  ``sched.step()`` after each
``opt.step(grads)`` (per epoch or per batch, as the schedule is meant)."""
from __future__ import annotations

import math

from ..capture import active as _active
from ..core.errors import ArgumentTypeError, ArgumentValueError, TracingError
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "CosineAnnealingLR", "OneCycleLR"]


class LRScheduler:
    """Base class: sets each group's ``lr`` from ``get_lr()`` at construction (epoch 0) and at
    every ``step()``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(f"{type(self).__name__}: expected an Optimizer, got "
                                    f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list:
        raise NotImplementedError

    def step(self) -> None:
        if _active.current_step() is not None:
            # it would move the rate once, while tracing, and never when the graph runs
            raise TracingError(f"{type(self).__name__}.step: called inside a function that "
                               f"rt.compile traces; call it outside, after each compiled step "
                               f"(the rate is an input of the compiled graph)")
        self._step_count += 1
        self.last_epoch += 1
        for g, lr in zip(self.optimizer.param_groups, self.get_lr()):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list:
        return list(self._last_lr)

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ArgumentValueError(f"LambdaLR: expected {n} lr_lambdas, got {len(self.lr_lambdas)}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [b * f(self.last_epoch) for b, f in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self):
        return {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if step_size <= 0:
            raise ArgumentValueError(f"StepLR: step_size must be positive, got {step_size}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base rate to ``eta_min`` over ``T_max`` epochs (PyTorch's
    recursive form)."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if T_max <= 0:
            raise ArgumentValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        e, t, lo = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if e == 0:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / t)) / 2 for b in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [g["lr"] + (b - lo) * (1 - math.cos(math.pi / t)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t))
                * (g["lr"] - lo) + lo for g in groups]


class OneCycleLR(LRScheduler):
    """The one-cycle policy (``torch.optim.lr_scheduler.OneCycleLR``): warm up from
    ``max_lr/div_factor`` to ``max_lr`` over ``pct_start`` of the steps, then anneal to
    ``max_lr/(div_factor*final_div_factor)``; the momentum (SGD's ``momentum`` or Adam's
    beta1) cycles the other way when ``cycle_momentum``.  Step it once per batch."""

    def __init__(self, optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float = 0.85, max_momentum: float = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ArgumentValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0:
            raise ArgumentValueError(f"OneCycleLR: total_steps must be positive, got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ArgumentValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ArgumentValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', "
                                     f"got {anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = int(total_steps), anneal_strategy
        n = len(optimizer.param_groups)
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * n
        s = float(pct_start * self.total_steps)
        if three_phase:
            self._phases = [(s - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * s - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                            (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(s - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        for g, m in zip(optimizer.param_groups, max_lrs):
            if last_epoch == -1:
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            for g in optimizer.param_groups:
                self._use_beta1 = "betas" in g
                if "momentum" not in g and "betas" not in g:
                    raise ArgumentValueError("OneCycleLR: optimizer has no momentum to cycle "
                                             "(pass cycle_momentum=False)")
                if last_epoch == -1:
                    g["max_momentum"], g["base_momentum"] = max_momentum, base_momentum
                    self._set_momentum(g, max_momentum)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, g, m):
        if "betas" in g:
            g["betas"] = (m, g["betas"][1])
        else:
            g["momentum"] = m

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentValueError(f"OneCycleLR: tried to step {step} times, the total number "
                                     f"of steps is {self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        self._set_momentum(g, self._anneal(g[m0], g[m1], pct))
                    break
                start = end
            lrs.append(lr)
        return lrs
