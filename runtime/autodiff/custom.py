"""``rt.custom_op``: user operations with a NumPy-level forward and a tensor-level backward."""
from __future__ import annotations

from ..ops.catalogue import CATALOGUE, register_custom
from ..core.errors import ArgumentTypeError, ArgumentValueError
from ..tensor import Tensor

__all__ = ["custom_op"]


def custom_rule(backward):
    """A tape rule that calls a user's ``backward(grad, *inputs, output)``."""
    def r(c, g):
        inputs = [c.input(i) for i in range(c.arity)]
        out = backward(g, *inputs, c.output())
        if not isinstance(out, (tuple, list)):
            out = (out,)
        if len(out) != c.arity:
            raise ArgumentValueError(f"custom op {c.node.spec.name!r}: backward returned {len(out)} "
                             f"gradient(s) for {c.arity} input(s)")
        return tuple(out)
    return r


def custom_op(name: str, forward, backward=None, shape=None, replace: bool = False):
    """Register op ``name`` and return a callable applying it to tensors.

    ``forward(*arrays)`` gets the kernel-set arrays of the inputs (NumPy on cpu) and returns
    one; ``shape(*(shape, dtype) pairs)`` gives the output's pair (default: the first
    input's); ``backward(grad, *inputs, output)`` gets plain tensors on the inner device and
    returns one gradient tensor (or None) per input.  Without ``backward``, applying the op
    to tracked tensors while recording raises ``AutodiffNotMarkedError``.
    """
    if not isinstance(name, str) or not name:
        raise ArgumentValueError("custom_op: name must be a non-empty string")
    if not callable(forward):
        raise ArgumentTypeError(f"custom_op {name!r}: forward must be callable")
    existing = CATALOGUE.get(name)
    if existing is not None and existing.family != "custom":
        raise ArgumentValueError(f"custom_op: {name!r} is a built-in operation and cannot be replaced")
    if existing is not None and not replace:
        raise ArgumentValueError(f"custom_op: an op named {name!r} is already registered "
                         f"(pass replace=True to redefine it)")
    spec = register_custom(name, forward, shape, replace=replace)
    spec.backward = None if backward is None else custom_rule(backward)

    def apply(*inputs):
        from ..dispatch import dispatch
        for t in inputs:
            if not isinstance(t, Tensor):
                raise ArgumentTypeError(f"{name}: custom op inputs must be Tensors, got "
                                f"{type(t).__name__}")
        if not inputs:
            raise ArgumentTypeError(f"{name}: a custom op needs at least one tensor input")
        return dispatch(name, inputs, {})

    apply.__name__ = name
    apply.__doc__ = f"The custom op {name!r} (registered with rt.custom_op)."
    apply.op_name = name
    return apply
