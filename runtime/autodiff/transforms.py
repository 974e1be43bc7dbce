"""Functional gradients: ``rt.grad(fn)`` and ``rt.value_and_grad(fn)``, as JAX's.

The returned function lifts the chosen arguments onto the autodiff device over their plain
device as fresh leaves, calls ``fn``, runs ``backward()`` from its 0-d result and returns the
gradients with respect to those arguments, as plain tensors of the arguments' shapes.  It works
eagerly and inside ``rt.compile`` (where the backward's ops join the compiled graph).
"""
from __future__ import annotations

import functools

from ..core.errors import ArgumentTypeError, GradientError
from ..tensor import Tensor
from .device import from_inner

__all__ = ["grad", "value_and_grad"]


def _argnums(name: str, argnums) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if (not isinstance(nums, tuple) or not nums
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in nums)):
        raise ArgumentTypeError(f"{name}: argnums must be an int or a non-empty tuple of ints, "
                                f"got {argnums!r}")
    return nums


def _plain(t: Tensor) -> Tensor:
    return t.inner() if t.device.family == "autodiff" else t


def _value_and_grad(name: str, fn, argnums, args):
    nums = _argnums(name, argnums)
    args = list(args)
    leaves = []
    for i in nums:
        if not -len(args) <= i < len(args):
            raise ArgumentTypeError(f"{name}: argnums {i} is out of range for {len(args)} "
                                    f"argument(s)")
        a = args[i]
        if not isinstance(a, Tensor):
            raise ArgumentTypeError(f"{name}: argument {i} must be a Tensor, got "
                                    f"{type(a).__name__}")
        plain = _plain(a)
        leaf = from_inner(plain).require_grad()
        args[i] = leaf
        leaves.append(leaf)
    ad = leaves[0].device
    # the other tensor arguments join the same autodiff device, untracked
    args = [from_inner(_plain(a)) if isinstance(a, Tensor) and a.device is not ad
            and _plain(a).device is ad.inner else a for a in args]
    out = fn(*args)
    if not isinstance(out, Tensor) or out.shape != ():
        what = (f"a tensor of shape {tuple(out.shape)}" if isinstance(out, Tensor)
                else type(out).__name__)
        raise GradientError(f"{name}: fn must return a 0-d tensor (a scalar loss), got {what}")
    if out.device is not ad:
        raise GradientError(f"{name}: fn's result does not depend on the differentiated "
                            f"argument(s)")
    grads = out.backward() if out.requires_grad else None
    gs = []
    for leaf in leaves:
        g = leaf.grad(grads) if grads is not None else None
        gs.append(g if g is not None else _zeros_like(leaf.inner()))
    value = out.inner()
    return value, (gs[0] if isinstance(argnums, int) else tuple(gs))


def _zeros_like(t: Tensor) -> Tensor:
    from ..ops.api import zeros_like
    return zeros_like(t)


def value_and_grad(fn, argnums=0):
    """``fn`` returning ``(fn(*args), d fn / d args[argnums])``: ``fn`` returns a 0-d tensor;
    with a tuple ``argnums`` the gradients come as a tuple.  Values and gradients are plain
    tensors (on the arguments' plain device)."""
    if not callable(fn):
        raise ArgumentTypeError(f"value_and_grad: fn must be callable, got {type(fn).__name__}")
    _argnums("value_and_grad", argnums)

    @functools.wraps(fn)
    def run(*args):
        return _value_and_grad("value_and_grad", fn, argnums, args)
    return run


def grad(fn, argnums=0):
    """``fn``'s gradient with respect to ``args[argnums]`` (see ``value_and_grad``)."""
    if not callable(fn):
        raise ArgumentTypeError(f"grad: fn must be callable, got {type(fn).__name__}")
    _argnums("grad", argnums)

    @functools.wraps(fn)
    def run(*args):
        return _value_and_grad("grad", fn, argnums, args)[1]
    return run
