"""``Adam`` and ``AdamW`` (with amsgrad), PyTorch's arithmetic step by step."""
from __future__ import annotations

import math

from ..core import dtypes as D
from ..core.errors import ArgumentValueError
from ..ops import api
from ._fused import run_update, run_update_many
from .optimizer import Optimizer, check_numbers

__all__ = ["Adam", "AdamW"]

#: Parameters of at most this many elements update together (one kernel for all of them):
#: concatenating a few thousand elements costs less than a call per parameter.
BATCH_MAX = 16384
_BATCH_DTYPES = (D.float32, D.float64)


def _adam(variant, p, g, m, v, *rest):
    """One Adam step: ``variant`` = (decoupled weight decay, L2 weight decay, amsgrad,
    maximize); the scalars are computed in Python (double) as PyTorch's are."""
    decoupled, l2, amsgrad, maximize = variant
    if amsgrad:
        vmax, *rest = rest
    w1, b2, w2, eps, wd, step_size, sqrt_bc2 = rest
    if maximize:
        g = api.neg(g)
    if decoupled:                                   # AdamW: p *= 1 - lr * wd
        p = api.mul(p, wd)
    elif l2:                                        # Adam: g += wd * p
        g = api.add(g, api.mul(p, wd))
    m = api.add(m, api.mul(api.sub(g, m), w1))                   # m.lerp_(g, 1 - b1)
    v = api.add(api.mul(v, b2), api.mul(api.mul(g, g), w2))      # v*b2 + (1-b2) g g
    seen = api.maximum(vmax, v) if amsgrad else v
    denom = api.add(api.div(api.sqrt(seen), sqrt_bc2), eps)
    p = api.sub(p, api.mul(api.div(m, denom), step_size))
    return (p, m, v, seen) if amsgrad else (p, m, v)


class Adam(Optimizer):
    """``torch.optim.Adam`` (L2 weight decay added to the gradient)."""

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False):
        name = type(self).__name__
        check_numbers(name, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        if eps < 0:
            raise ArgumentValueError(f"{name}: invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ArgumentValueError(f"{name}: invalid beta parameter at index {i}: {b}")
        if weight_decay < 0:
            raise ArgumentValueError(f"{name}: invalid weight_decay value: {weight_decay}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "amsgrad": amsgrad,
                                  "maximize": maximize})

    def _prepare(self, p, g, state, group):
        """One step's (variant, tensors, scalars) for ``p`` (its step count advanced)."""
        if not state:
            state["step"] = 0
            state["exp_avg"] = api.zeros_like(p)
            state["exp_avg_sq"] = api.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = api.zeros_like(p)
        variant, scalars = self._step_scalars(state, group)
        tensors = (p, g, state["exp_avg"], state["exp_avg_sq"])
        if variant[2]:
            tensors += (state["max_exp_avg_sq"],)
        return variant, tensors, scalars

    def _step_scalars(self, state, group):
        state["step"] = state.get("step", 0) + 1
        t = state["step"]
        b1, b2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        variant = (self._decoupled and wd != 0, (not self._decoupled) and wd != 0,
                   bool(group["amsgrad"]), bool(group["maximize"]))
        decay = 1 - lr * wd if self._decoupled else wd
        return variant, (1 - b1, b2, 1 - b2, group["eps"], decay, lr / (1 - b1 ** t),
                         math.sqrt(1 - b2 ** t))

    @staticmethod
    def _store(out, state):
        state["exp_avg"], state["exp_avg_sq"] = out[1], out[2]
        if len(out) > 3:
            state["max_exp_avg_sq"] = out[3]
        return out[0]

    def _update(self, p, g, state, group):
        variant, tensors, scalars = self._prepare(p, g, state, group)
        return self._store(run_update(_adam, variant, tensors, scalars), state)

    def _update_group(self, items, group):
        # small float32/float64 parameters that share a step's scalars (the same step count)
        # and device update in one call (_fused.run_update_many); the others one by one
        out = [None] * len(items)
        batches: dict = {}
        for i, (_, p, g, state) in enumerate(items):
            if len(items) < 2 or p.dtype not in _BATCH_DTYPES or not 0 < p.numel() <= BATCH_MAX:
                out[i] = self._update(p, g, state, group)
                continue
            variant, tensors, scalars = self._prepare(p, g, state, group)
            batches.setdefault((variant, scalars, p.dtype, p.device), []).append(
                (i, tensors, state))
        for (variant, scalars, _, _), members in batches.items():
            if len(members) == 1:
                results = [run_update(_adam, variant, members[0][1], scalars)]
            else:
                results = self._update_many(variant, scalars, members)
            for (i, _, state), res in zip(members, results):
                out[i] = self._store(res, state)
        return out

    def _update_many(self, variant, scalars, members):
        # the last call's flat outputs stand in for the operands that are still their pieces
        # (the parameter and the moments, unless something replaced them): no concatenation
        key = tuple(id(state) for _, _, state in members)
        cache = self.__dict__.setdefault("_flat", {})
        prev = cache.get(key)
        lists = [tensors for _, tensors, _ in members]
        flat = None
        if prev is not None:
            pieces, flats = prev
            flat = [None] * len(lists[0])
            for k, j in ((0, 0), (2, 1), (3, 2), (4, 3)):
                if k < len(flat) and j < len(flats) and all(
                        ts[k] is ps[j] for ts, ps in zip(lists, pieces)):
                    flat[k] = flats[j]
        results, flats = run_update_many(_adam, variant, lists, scalars, flat)
        if len(cache) >= 64:
            cache.clear()
        cache[key] = (results, flats)
        return results

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.pop("_flat", None)        # (the loaded tensors are no pieces of it)
        super().load_state_dict(state_dict)


class AdamW(Adam):
    """``torch.optim.AdamW``: weight decay applied to the parameter, decoupled from the
    gradient (default 0.01)."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
