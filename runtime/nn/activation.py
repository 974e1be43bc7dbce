"""Activation layers: one module per activation function, PyTorch's names and arguments.

Each is made by ``_activation(name, function)``: the module takes the function's keyword
arguments, with the function's defaults (read from its signature, so the two cannot drift), stores
them and calls ``rt.nn.functional.<function>`` (or ``rt.<function>``) with them.  The softmax
family names its axis ``dim`` as PyTorch's modules do, so it lists its one argument."""
from __future__ import annotations

import inspect

from ..ops import api
from . import functional as F
from .module import Module

__all__ = ["ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softplus", "ELU",
           "CELU", "SELU", "LeakyReLU", "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid",
           "Softsign", "QuickGELU", "Softmax", "LogSoftmax", "Softmin", "GLU"]


def _signature_params(function) -> tuple:
    """The (name, default) pairs of ``function``'s arguments after the input."""
    ps = list(inspect.signature(function).parameters.values())[1:]
    return tuple((p.name, p.default) for p in ps
                 if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)


def _activation(cls_name: str, fn: str, *params):
    """A module class calling activation ``fn`` with keyword arguments ``params`` ((name,
    default) pairs, also accepted positionally in that order; by default the function's own)."""
    function = getattr(F, fn, None) or getattr(api, fn)
    params = params or _signature_params(function)
    names = [p for p, _ in params]
    defaults = dict(params)

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{cls_name}() takes at most {len(names)} arguments ({len(args)} given)")
        values = dict(defaults)
        values.update(zip(names, args))
        for k, v in kwargs.items():
            if k == "inplace":      # PyTorch's in-place flag: tensors are immutable, so it is moot
                continue
            if k not in values:
                raise TypeError(f"{cls_name}() got an unexpected keyword argument {k!r}")
            values[k] = v
        for k, v in values.items():
            object.__setattr__(self, k, v)

    def forward(self, x):
        return function(x, **{k: getattr(self, k) for k in names})

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in names)

    return type(cls_name, (Module,), {"__init__": __init__, "forward": forward,
                                      "extra_repr": extra_repr,
                                      "__doc__": f"``{fn}`` as a layer.",
                                      "__module__": __name__})


ReLU = _activation("ReLU", "relu")
ReLU6 = _activation("ReLU6", "relu6")
GELU = _activation("GELU", "gelu")
SiLU = _activation("SiLU", "silu")
Mish = _activation("Mish", "mish")
Tanh = _activation("Tanh", "tanh")
Sigmoid = _activation("Sigmoid", "sigmoid")
Softplus = _activation("Softplus", "softplus")
ELU = _activation("ELU", "elu")
CELU = _activation("CELU", "celu")
SELU = _activation("SELU", "selu")
LeakyReLU = _activation("LeakyReLU", "leaky_relu")
Hardtanh = _activation("Hardtanh", "hardtanh")
Hardsigmoid = _activation("Hardsigmoid", "hardsigmoid")
Hardswish = _activation("Hardswish", "hardswish")
LogSigmoid = _activation("LogSigmoid", "logsigmoid")
Softsign = _activation("Softsign", "softsign")
QuickGELU = _activation("QuickGELU", "quick_gelu")
Softmax = _activation("Softmax", "softmax", ("dim", -1))
LogSoftmax = _activation("LogSoftmax", "log_softmax", ("dim", -1))
Softmin = _activation("Softmin", "softmin", ("dim", -1))
GLU = _activation("GLU", "glu")
