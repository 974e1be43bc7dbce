"""``Optimizer``: PyTorch's parameter groups and state, Burn's explicit gradients.

``opt.step(grads)`` takes the ``Gradients`` that ``loss.backward()`` returned and replaces the
value of every ``Parameter`` that requires grad and has a gradient in it (a new tracked leaf on
its autodiff device).  The arithmetic runs on the parameters' inner (plain) device, one fused
kernel per parameter (``_fused.run_update``), and the state (moments, momentum buffers) stays
there."""
from __future__ import annotations

import numpy as np

from ..capture import active as _active
from ..core.errors import ArgumentTypeError, ArgumentValueError, ShapeError, StateDictError
from ..nn.module import Parameter, _onto, _plain
from ..ops.args import number_arg
from ..tensor import Tensor

__all__ = ["Optimizer", "check_numbers"]

_NUMBERS = (bool, int, float)


def check_numbers(name: str, **values) -> None:
    """ArgumentTypeError naming the optimizer and the argument when a hyperparameter is not a
    number (``betas``: a pair of numbers), before any comparison with it can fail untyped."""
    for key, v in values.items():
        if key == "betas":
            ok = (isinstance(v, (tuple, list)) and len(v) == 2
                  and all(isinstance(b, _NUMBERS + (np.number,)) for b in v))
            if not ok:
                raise ArgumentTypeError(f"{name}: betas must be a pair of numbers, got {v!r}")
        else:
            number_arg(name, key, v)


class Optimizer:
    """Base class: ``params`` is an iterable of ``Parameter`` or of dicts (parameter groups
    with their own hyperparameters); ``defaults`` the hyperparameters of each group."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list = []
        self.state: dict = {}
        if isinstance(params, (Parameter, Tensor)):
            raise ArgumentTypeError(f"{type(self).__name__}: params must be an iterable of "
                                    f"Parameters or dicts, got a single {type(params).__name__}")
        try:
            groups = list(params)
        except TypeError:
            raise ArgumentTypeError(f"{type(self).__name__}: params must be an iterable of "
                                    f"Parameters or dicts, got {type(params).__name__}") from None
        if not groups:
            raise ArgumentValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group.get("params")
        params = [params] if isinstance(params, Parameter) else list(params or ())
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Parameter):
                raise ArgumentTypeError(f"{type(self).__name__}: expected Parameters (from "
                                        f"module.parameters()), got {type(p).__name__}")
            if id(p) in seen:
                raise ArgumentValueError(f"{type(self).__name__}: a parameter appears in more "
                                         f"than one parameter group")
            seen.add(id(p))
        group["params"] = params
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict) -> None:
        lr = group.get("lr")
        if not isinstance(lr, (int, float)) or lr < 0:
            raise ArgumentValueError(f"{type(self).__name__}: invalid learning rate: {lr}")

    def step(self, grads) -> None:
        """Update every parameter that requires grad and has a gradient in ``grads``."""
        from ..autodiff.gradients import Gradients
        if not isinstance(grads, Gradients):
            raise ArgumentTypeError(f"{type(self).__name__}.step: expected the Gradients that "
                                    f"backward() returned, got {type(grads).__name__}")
        step = _active.current_step()
        for gi, group in enumerate(self.param_groups):
            items = []
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                g = p.grad(grads)
                if g is None:
                    continue
                value = _plain(p.value)
                if g.shape != value.shape:
                    raise ShapeError(f"{type(self).__name__}.step: gradient of shape {g.shape} "
                                         f"for a parameter of shape {value.shape}")
                if g.dtype is not value.dtype:
                    g = g.astype(value.dtype)
                state = self.state.setdefault(p, {})
                if step is not None:        # rt.compile: the state tensors are graph inputs
                    step.lift_state(self, p, state)
                items.append((p, value, g, state))
            if not items:
                continue
            if step is None:
                news = self._update_group(items, group)
            else:                           # one update per parameter, its scalars recorded
                news = []
                for p, value, g, state in items:
                    with step.updating(self, gi, p):
                        news.append(self._update(value, g, state, group))
            for (p, _, _, _), new in zip(items, news):
                p._replace(_onto(new, p.value.device))

    def _update(self, p: Tensor, g: Tensor, state: dict, group: dict) -> Tensor:
        raise NotImplementedError

    def _step_scalars(self, state: dict, group: dict) -> tuple:
        """``(variant, scalars)`` of one parameter's next update, computed in Python from the
        group's hyperparameters and the state's counters (which it advances): what a compiled
        step recomputes before each call, so its scalars are inputs of the graph."""
        raise NotImplementedError

    def _update_group(self, items: list, group: dict) -> list:
        """The new values of one group's parameters (``items``: (parameter, plain value,
        gradient, state) each): one ``_update`` each, unless an optimiser batches them."""
        return [self._update(v, g, s, group) for _, v, g, s in items]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Nothing to clear: gradients live in the ``Gradients`` each ``backward()`` returns
        (kept so PyTorch training loops run unchanged)."""

    # ---- state -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` as PyTorch's, with
        parameters numbered in group order and tensors as plain tensors."""
        index, groups = {}, []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index[id(p)] = len(index)
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict.get("param_groups") if isinstance(state_dict, dict) else None
        if groups is None or "state" not in state_dict:
            raise StateDictError(f"{type(self).__name__}.load_state_dict: expected a dict with "
                                 f"'state' and 'param_groups' (from state_dict())")
        if len(groups) != len(self.param_groups):
            raise StateDictError(f"{type(self).__name__}.load_state_dict: loaded state dict has "
                                 f"{len(groups)} parameter groups, the optimizer {len(self.param_groups)}")
        params = []
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise StateDictError(f"{type(self).__name__}.load_state_dict: a loaded parameter "
                                     f"group has {len(theirs['params'])} parameters, the "
                                     f"optimizer's {len(mine['params'])}")
            params += list(zip(theirs["params"], mine["params"]))
        self.state = {}
        for i, p in params:
            s = state_dict["state"].get(i)
            if s is None:
                continue
            dev = _plain(p.value).device
            self.state[p] = {k: (v.to(dev) if isinstance(v, Tensor) else v) for k, v in s.items()}
        for mine, theirs in zip(self.param_groups, groups):
            mine.update({k: v for k, v in theirs.items() if k != "params"})

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"
