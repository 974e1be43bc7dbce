"""``rt.nn.Module`` and ``rt.nn.Parameter``: models as trees of modules that own parameters.

Tensors are immutable, so a parameter is a ``Parameter``: a mutable cell that holds the current
value (``p.value``, a Tensor).  Modules read their parameters as tensors (``self.weight`` is
``self._parameters["weight"].value``); optimisers and ``load_state_dict`` replace the value in the
cell.  That is the one way a parameter changes.  Buffers (running statistics) are plain tensors
registered with ``register_buffer``; assigning a tensor to a buffer's name replaces it.

On an autodiff device a parameter that requires grad holds a tracked leaf (``require_grad()``),
so ``loss.backward()`` gives its gradient and ``p.grad(grads)`` reads it.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

from ..capture import active as _active
from ..core.errors import ArgumentTypeError, StateDictError
from ..tensor import Tensor

__all__ = ["Parameter", "Module", "Sequential", "ModuleList", "ModuleDict"]


def _track(value: Tensor, requires_grad: bool) -> Tensor:
    """``value`` as a parameter holds it: a tracked leaf on an autodiff device when it requires
    grad, untracked otherwise."""
    if value.device.family != "autodiff":
        return value
    if requires_grad:
        return value if value.requires_grad else value.detach().require_grad()
    return value.detach() if value.requires_grad else value


class Parameter:
    """A trainable value of a module: a mutable cell around an immutable Tensor.

    ``rt.nn.Parameter(t)`` wraps ``t``; ``p.value`` (alias ``p.data``) is the current tensor,
    ``p.requires_grad`` says whether optimisers update it and autodiff tracks it;
    ``p.grad(grads)`` is its gradient in a ``Gradients`` (or None)."""

    __slots__ = ("_value", "requires_grad")

    def __init__(self, value: Tensor, requires_grad: bool = True):
        if isinstance(value, Parameter):
            value = value.value
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(f"Parameter: expected a Tensor, got {type(value).__name__}")
        if requires_grad and not value.dtype.is_float:
            from ..core.errors import DTypeError
            raise DTypeError(f"Parameter: only float tensors can require gradients, got dtype "
                             f"{value.dtype.name} (pass requires_grad=False)")
        self.requires_grad = bool(requires_grad)
        self._value = _track(value, self.requires_grad)

    @property
    def value(self) -> Tensor:
        if _active.active_steps:           # rt.compile is tracing: the value is a graph input
            step = _active.current_step()
            if step is not None:
                return step.lift_parameter(self)
        return self._value

    @value.setter
    def value(self, t: Tensor) -> None:
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"Parameter: expected a Tensor, got {type(t).__name__}")
        if _active.active_steps:           # rt.compile is tracing: the new value is an output
            step = _active.current_step()
            if step is not None:
                step.lift_parameter(self)
        self._value = _track(t, self.requires_grad)

    data = value

    def _replace(self, value: Tensor) -> None:
        """Hold ``value``, a tensor nothing else holds yet (an optimiser's result lifted onto
        the parameter's device): tracked in place when it requires grad, not through a
        detached copy as the setter must for a tensor the caller keeps."""
        if self.requires_grad and value.device.family == "autodiff" and not value.requires_grad:
            self._value = value.require_grad()
        else:
            self._value = _track(value, self.requires_grad)

    def requires_grad_(self, requires_grad: bool = True) -> "Parameter":
        """Freeze (False) or unfreeze this parameter; returns it."""
        self.requires_grad = bool(requires_grad)
        self._value = _track(self._value, self.requires_grad)
        return self

    def grad(self, grads):
        """This parameter's gradient in ``grads`` (a tensor on the inner device), or None."""
        if not self._value.requires_grad:
            return None
        return self._value.grad(grads)

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    def numel(self) -> int:
        return self._value.numel()

    def numpy(self):
        return self._value.numpy()

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype.name}, device={self.device}, " \
               f"requires_grad={self.requires_grad})"


class Module:
    """Base class of every layer and model (PyTorch's ``nn.Module`` habits).

    Assigning a ``Parameter`` or a ``Module`` to an attribute registers it; ``forward`` holds
    the computation and ``module(x)`` calls it."""

    training: bool

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- registration ------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call Module.__init__() before "
                                 f"assigning attributes")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            buffers.pop(name, None)
            modules.pop(name, None)
            self.__dict__.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            buffers.pop(name, None)
            self.__dict__.pop(name, None)
            modules[name] = value
        elif name in params:
            if value is None:
                del params[name]
                object.__setattr__(self, name, None)
            else:
                params[name].value = value  # a tensor for an existing parameter: its new value
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise ArgumentTypeError(f"{type(self).__name__}.{name}: a buffer holds a Tensor, "
                                        f"got {type(value).__name__}")
            if _active.active_steps:       # rt.compile is tracing: the new value is an output
                step = _active.current_step()
                if step is not None:
                    step.touch_buffer(self, name)
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise ArgumentTypeError(f"{type(self).__name__}.{name}: a sub-module slot holds "
                                        f"a Module, got {type(value).__name__}")
            del modules[name]
            object.__setattr__(self, name, None)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        # only called when normal lookup fails: parameters, buffers and sub-modules
        d = self.__dict__
        if "_parameters" in d:
            if name in d["_parameters"]:
                return d["_parameters"][name].value
            if name in d["_buffers"]:
                if _active.active_steps:   # rt.compile is tracing: the value is a graph input
                    step = _active.current_step()
                    if step is not None and d["_buffers"][name] is not None:
                        return step.lift_buffer(self, name)
                return d["_buffers"][name]
            if name in d["_modules"]:
                return d["_modules"][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None) -> None:
        """Register ``tensor`` as a buffer: state saved in ``state_dict`` and moved by ``to``,
        not trained (running statistics)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise ArgumentTypeError(f"register_buffer: expected a Tensor or None, got "
                                    f"{type(tensor).__name__}")
        self._parameters.pop(name, None)
        self._buffers[name] = tensor

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is None:
            self._parameters.pop(name, None)
            object.__setattr__(self, name, None)
            return
        setattr(self, name, param if isinstance(param, Parameter) else Parameter(param))

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is None:
            self._modules.pop(name, None)
            return
        setattr(self, name, module)

    # ---- calling -----------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        if _active.active_steps:           # rt.compile guards the traced graph on train/eval
            step = _active.current_step()
            if step is not None:
                step.saw_module(self)
        return self.forward(*args, **kwargs)

    # ---- traversal ---------------------------------------------------------------------
    def named_modules(self, prefix: str = "", memo=None) -> Iterator[tuple]:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator["Module"]:
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple]:
        """(dotted name, Parameter) for every parameter, each shared one once."""
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mp}.{name}" if mp else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple]:
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mp}.{name}" if mp else name), b

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and devices ---------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Freeze (False) or unfreeze every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def _apply(self, fn) -> "Module":
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    p.value = fn(p.value)
            for name, b in list(m._buffers.items()):
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, device) -> "Module":
        """Move every parameter and buffer to ``device`` in place (by the movement table: onto
        ``rt.autodiff(d)`` from ``d`` parameters become tracked leaves; off an autodiff device
        raises ``AutodiffMoveError``: use ``inner()``); returns the module."""
        from ..device import device as _device
        dev = _device(device)
        return self._apply(lambda t: t.to(dev))

    def inner(self) -> "Module":
        """Move every parameter and buffer off its autodiff device onto the inner device (their
        values, untracked), in place; returns the module."""
        return self._apply(lambda t: t.inner() if t.device.family == "autodiff" else t)

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.dtype.is_float else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.dtype.is_float else t)

    # ---- state -----------------------------------------------------------------------------
    def state_dict(self) -> "OrderedDict[str, Tensor]":
        """Every parameter and buffer by dotted name, as plain tensors (an autodiff value's
        inner tensor)."""
        out = OrderedDict()
        for name, p in self.named_parameters():
            out[name] = _plain(p.value)
        for name, b in self.named_buffers():
            out[name] = _plain(b)
        return out

    def load_state_dict(self, state_dict, strict: bool = True):
        """Set parameters and buffers from ``state_dict`` (moved to each one's device).

        A shape or dtype mismatch always raises ``StateDictError``; with ``strict``, so do
        missing and unexpected keys.  Returns ``(missing_keys, unexpected_keys)``."""
        if not hasattr(state_dict, "keys"):
            raise ArgumentTypeError(f"load_state_dict: expected a mapping of names to tensors, "
                                    f"got {type(state_dict).__name__}")
        targets = OrderedDict()
        for mp, m in self.named_modules():
            for name, p in m._parameters.items():
                if p is not None:
                    targets[f"{mp}.{name}" if mp else name] = (m, name, "param")
            for name, b in m._buffers.items():
                if b is not None:
                    targets[f"{mp}.{name}" if mp else name] = (m, name, "buffer")
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in targets]
        errors = []
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
        updates = []
        for key, (m, name, kind) in targets.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            current = m._parameters[name].value if kind == "param" else m._buffers[name]
            if not isinstance(value, Tensor):
                from ..ops.create import tensor
                try:
                    value = tensor(value)
                except Exception as exc:  # anything that is not array-like
                    errors.append(f'value for "{key}" is not a tensor ({type(value).__name__}: {exc})')
                    continue
            if tuple(value.shape) != tuple(current.shape):
                errors.append(f'size mismatch for "{key}": copying a param with shape {value.shape} '
                              f"from checkpoint, the shape in current model is {current.shape}")
                continue
            if value.dtype != current.dtype:
                errors.append(f'dtype mismatch for "{key}": {value.dtype.name} in the checkpoint, '
                              f"{current.dtype.name} in the current model")
                continue
            updates.append((m, name, kind, value, current.device))
        if errors:
            raise StateDictError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                                 + "\n\t".join(errors))
        for m, name, kind, value, dev in updates:
            value = _onto(value, dev)
            if kind == "param":
                m._parameters[name].value = value
            else:
                m._buffers[name] = value
        return missing, unexpected

    # ---- repr --------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}(" + (f"\n  {extra}" if extra else "")
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _plain(t: Tensor) -> Tensor:
    return t.inner() if t.device.family == "autodiff" else t


def _onto(value: Tensor, dev) -> Tensor:
    """``value`` (any device) on ``dev``: through the plain inner device for autodiff targets."""
    value = _plain(value)
    if dev.family == "autodiff" and value.device is not dev.inner:
        value = value.to(dev.inner)
    return value.to(dev)


class Sequential(Module):
    """Modules called in order; ``Sequential(a, b)`` or ``Sequential(OrderedDict(...))``."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self._modules)), module)
        return self


class ModuleList(Module):
    """A list of sub-modules, registered (their parameters are the list's)."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        if not isinstance(module, Module):
            raise ArgumentTypeError(f"ModuleList: expected a Module, got {type(module).__name__}")
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        mods = list(self._modules.values())
        return ModuleList(mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of sub-modules by name, registered."""

    def __init__(self, modules=None):
        super().__init__()
        for k, m in (modules or {}).items():
            self[k] = m

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise ArgumentTypeError(f"ModuleDict: expected a Module, got {type(module).__name__}")
        self.add_module(key, module)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __contains__(self, key) -> bool:
        return key in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

