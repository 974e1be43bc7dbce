"""The dispatch layer: the one place that maps operands to a device and a device to kernels.

``dispatch(name, args, attrs)`` finds the operands' common device (the device mixing
rules), runs the catalogue's shape/dtype rule (its ``Plan``), and hands the op to that
device's ``execute``.  Plain devices (``PlainDevice.execute``) run the record's lowering on
their kernel set (``runtime.kernel_sets``); decorator (autodiff) and recording (capture)
devices implement ``execute`` themselves and call their inner device's, or ``dispatch`` again
for a composite's parts.

Three caches keep decisions between calls, each keyed by the operand signature: ``_FAST``
(``FastEntry``: the prepared kernel of an attr-less unary/binary op or matmul, or of a view),
``_INFER`` and ``_RULES`` (``Decided``: a rule's plan, for attr-less ops and for ops with
attrs).  ``fast_unary``/``fast_binary`` make front ends that run a cached decision before
their own argument handling; ``dispatch_view`` is the entry of view ops with one attr.  Any
change to the catalogue empties the caches.
"""
from __future__ import annotations

import functools

import numpy as _np

from . import lowprec as _lowprec
from .core import dtypes as D
from .core.errors import DeviceError, DeviceMismatchError, ShapeError
from .core.registry import CATALOGUE, Meta as _Meta, OpSpec, composite_runner, on_catalogue_change
from .core.shapes import MAX_ELEMENTS as _MAX_ELEMENTS, prod as _prod
from .device import Device, PlainDevice
from .kernel_sets import (KERNELS as _KERNELS, for_device as kernels_for, for_kind as kernels_for_kind,
                          on_empty_cache, supports)
from .tensor import Tensor, new_id

__all__ = ["dispatch", "dispatch_view", "fast_binary", "fast_unary", "create", "kernels_for",
           "kernels_for_kind", "common_device", "run_fused", "plain_step", "pieces", "FastEntry",
           "Decided"]


def common_device(name: str, args) -> Device:
    """The device an op runs on; DeviceMismatchError when operands disagree."""
    dev = None
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            d = a.device
            if dev is None:
                dev = d
            elif d is not dev and d != dev:
                dev = _mix(name, dev, d)
    if dev is None:
        raise DeviceError(f"{name}: no tensor operand to take a device from")
    return dev


def _mix(name: str, d1: Device, d2: Device) -> Device:
    # A plain tensor on d may meet autodiff tensors on autodiff(d): it is an untracked constant.
    if d1.family == "autodiff" and d2.family != "autodiff" and d1.inner == d2:
        return d1
    if d2.family == "autodiff" and d1.family != "autodiff" and d2.inner == d1:
        return d2
    raise DeviceMismatchError(f"The provided tensors are not on the same backend: {d1} and {d2} "
                              f"(in {name})")


class FastEntry:
    """A small-op fast-path decision: ``fn(payloads...)`` is the kernel set's prepared kernel
    for these operand dtypes (a composite's fused decomposition), giving a result of ``shape``
    and ``dtype``; ``plain`` says dispatch runs it itself (else the decorator device's
    ``execute_fast``).  Used only while the catalogue still holds the same ``spec``."""

    __slots__ = ("spec", "shape", "dtype", "fn", "plain")

    def __init__(self, spec, shape, dtype, fn, plain):
        self.spec, self.shape, self.dtype, self.fn, self.plain = spec, shape, dtype, fn, plain


class Decided:
    """A rule's plan for one operand signature (``_INFER``, ``_RULES``); used only while the
    catalogue still holds the same ``spec``."""

    __slots__ = ("spec", "plan")

    def __init__(self, spec, plan):
        self.spec, self.plan = spec, plan


# The small-op fast path: (op, the device's ``fast_kind``, shape/dtype or scalar type per
# operand) -> FastEntry.  Filled by ``dispatch`` on the second call of an attr-less
# unary/binary op's signature (see ``_INFER``).
_FAST: dict = {}
_FAST_MAX = 8192


def _evict_oldest(cache: dict) -> None:
    """Drop the oldest entry of a full cache (callers check ``len(cache) >= _FAST_MAX`` before
    they add one): insertion order, so a hit costs nothing, and a process whose shapes keep
    changing keeps the fast path for the recent ones."""
    try:
        cache.pop(next(iter(cache)), None)
    except (StopIteration, RuntimeError):   # emptied or resized by another thread
        pass


_SCALAR_TYPES = (int, float, bool)
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_wrap = Tensor._wrap
_new_object = object.__new__
_new_id = new_id
_OPERAND_TYPES = (Tensor, _Meta)


def dispatch(name: str, args: tuple, attrs: dict | None = None) -> Tensor:
    """Run catalogue op ``name`` on ``args`` (tensors and Python scalars)."""
    key = None
    if attrs is None:
        # An attr-less op of one or two operands on one device: its operand signature keys the
        # small-op fast path (a cached decision: run the prepared kernel, no rule) and the rule
        # cache.  Inline: it is the hot path (the result tensor too is built here, as
        # ``Tensor._wrap`` builds it; a decision leaves the cache when the catalogue changes,
        # so a hit needs no look-up of the record).  A Python int within int32's range keys by
        # its type and its bit length (negative for a negative int), which decide which int
        # dtypes hold it: a uint8 or uint32 tensor plus -1, or an int8 one plus 300, must reach
        # the rule, which refuses it, even after the same op with 1; a wider int always does.
        n = len(args)
        if n == 2:
            a, b = args
            if type(a) is Tensor:
                dev = a.device
                if type(b) is Tensor:
                    if b.device is dev:
                        key = (name, dev.fast_kind, a.shape, a.dtype, b.shape, b.dtype)
                        pa, pb = a._payload, b._payload
                elif type(b) is float or type(b) is bool:
                    key = (name, dev.fast_kind, a.shape, a.dtype, type(b), None)
                    pa, pb = a._payload, b
                elif type(b) is int and _I32_MIN <= b <= _I32_MAX:
                    key = (name, dev.fast_kind, a.shape, a.dtype, int,
                           b.bit_length() if b >= 0 else ~(~b).bit_length())
                    pa, pb = a._payload, b
            elif type(b) is Tensor:
                if type(a) is float or type(a) is bool:
                    dev = b.device
                    key = (name, dev.fast_kind, type(a), None, b.shape, b.dtype)
                    pa, pb = a, b._payload
                elif type(a) is int and _I32_MIN <= a <= _I32_MAX:
                    dev = b.device
                    key = (name, dev.fast_kind, int,
                           a.bit_length() if a >= 0 else ~(~a).bit_length(), b.shape, b.dtype)
                    pa, pb = a, b._payload
            if key is not None:
                ent = _FAST.get(key)
                if ent is not None and ent.plain:
                    t = _new_object(Tensor)
                    t._payload = ent.fn(pa, pb)
                    t.shape = ent.shape
                    t.dtype = ent.dtype
                    t.device = dev
                    t.id = _new_id()
                    return t
        elif n == 3:
            # three tensors on one device (``linear``'s input, weight and bias)
            a, b, c = args
            if type(a) is Tensor and type(b) is Tensor and type(c) is Tensor:
                dev = a.device
                if b.device is dev and c.device is dev:
                    key = (name, dev.fast_kind, a.shape, a.dtype, b.shape, b.dtype, c.shape,
                           c.dtype)
                    ent = _FAST.get(key)
                    if ent is not None and ent.plain:
                        t = _new_object(Tensor)
                        t._payload = ent.fn(a._payload, b._payload, c._payload)
                        t.shape = ent.shape
                        t.dtype = ent.dtype
                        t.device = dev
                        t.id = _new_id()
                        return t
        elif n == 1:
            a = args[0]
            if type(a) is Tensor:
                dev = a.device
                key = (name, dev.fast_kind, a.shape, a.dtype)
                ent = _FAST.get(key)
                if ent is not None and ent.plain:
                    t = _new_object(Tensor)
                    t._payload = ent.fn(a._payload)
                    t.shape = ent.shape
                    t.dtype = ent.dtype
                    t.device = dev
                    t.id = _new_id()
                    return t
        if key is not None:
            if ent is not None:
                # a decorator device's decision (autodiff: the inner kernel, then the tape)
                out = dev.execute_fast(ent, args)
                if out is not None:
                    return out
            hit = _INFER.get(key)
            if hit is not None and hit.spec is CATALOGUE[name]:
                # a signature seen before: the rule's plan again, and from now on the fast path
                out = dev.execute(hit.spec, args, {}, hit.plan)
                if dev.fast_kind is not None and ent is None:
                    _remember(key, hit.spec, dev, args, hit.plan)
                return out
        attrs = {}
    spec = CATALOGUE[name]
    device = common_device(name, args) if key is None else dev
    rkey = None
    if attrs and spec.cache_plan:
        # an op with attrs (conv, pool, loss, reduction...): its rule's plan by operand
        # signature and attrs, so a training loop's second step runs no rule
        rkey = _rule_key(name, device, args, attrs)
        if rkey is not None:
            hit = _RULES.get(rkey)
            if hit is not None and hit.spec is spec:
                return device.execute(spec, args, attrs, hit.plan)
    plan = spec.infer(args, attrs)
    _check_size(name, plan.shape)
    out = device.execute(spec, args, attrs, plan)
    if key is not None and (spec.family in _INFER_FAMILIES or spec.lowering in _INFER_LOWERINGS):
        if len(_INFER) >= _FAST_MAX:
            _evict_oldest(_INFER)
        _INFER[key] = Decided(spec, plan)
    elif rkey is not None:
        if len(_RULES) >= _FAST_MAX:
            _evict_oldest(_RULES)
        _RULES[rkey] = Decided(spec, plan)
    return out


def fast_binary(name: str, front=None):
    """The front-end function of attr-less two-operand op ``name`` whose own front end is
    ``front(a, b)``: two tensors on one device whose signature has a fast-path decision run it
    here, with none of ``front``'s argument handling and no ``dispatch`` call (the decision and
    the result are ``dispatch``'s); anything else is ``front(a, b)``.  Without ``front``: a
    decorator."""
    if front is None:
        return functools.partial(fast_binary, name)

    def fn(a, b):
        if type(a) is Tensor and type(b) is Tensor:
            dev = a.device
            if b.device is dev:
                ent = _FAST.get((name, dev.fast_kind, a.shape, a.dtype, b.shape, b.dtype))
                if ent is not None:
                    if ent.plain:
                        t = _new_object(Tensor)
                        t._payload = ent.fn(a._payload, b._payload)
                        t.shape = ent.shape
                        t.dtype = ent.dtype
                        t.device = dev
                        t.id = _new_id()
                        return t
                    out = dev.execute_fast(ent, (a, b))
                    if out is not None:
                        return out
        return front(a, b)
    return functools.update_wrapper(fn, front)


def fast_unary(name: str, front=None):
    """``fast_binary`` for attr-less one-operand op ``name`` (``front(x)``)."""
    if front is None:
        return functools.partial(fast_unary, name)

    def fn(x):
        if type(x) is Tensor:
            dev = x.device
            ent = _FAST.get((name, dev.fast_kind, x.shape, x.dtype))
            if ent is not None:
                if ent.plain:
                    t = _new_object(Tensor)
                    t._payload = ent.fn(x._payload)
                    t.shape = ent.shape
                    t.dtype = ent.dtype
                    t.device = dev
                    t.id = _new_id()
                    return t
                out = dev.execute_fast(ent, (x,))
                if out is not None:
                    return out
        return front(x)
    return functools.update_wrapper(fn, front)


def dispatch_view(name: str, x: Tensor, attr: str, value: tuple) -> Tensor:
    """``dispatch(name, (x,), {attr: value})`` for a view op (its kernel only reinterprets
    ``x``'s payload and never raises) whose one attr, ``value``, is a tuple of ints that its
    front end has checked: on a plain device the first call leaves a fast-path decision
    (``plain_step``'s prepared function), so later calls of the signature run no rule, build no
    rule key and make no device call."""
    dev = x.device
    if dev.execute_fast is not None or dev.fast_kind is None:   # not a plain device
        return dispatch(name, (x,), {attr: value})
    key = (name, dev.fast_kind, x.shape, x.dtype, value)
    ent = _FAST.get(key)
    if ent is not None:
        t = _new_object(Tensor)
        t._payload = ent.fn(x._payload)
        t.shape = ent.shape
        t.dtype = ent.dtype
        t.device = dev
        t.id = _new_id()
        return t
    attrs = {attr: value}
    out = dispatch(name, (x,), attrs)
    spec = CATALOGUE[name]
    plan = spec.infer((x,), attrs)
    if not _lowprec.needs_upcast(spec, (x,), attrs, plan):
        if len(_FAST) >= _FAST_MAX:
            _evict_oldest(_FAST)
        _FAST[key] = FastEntry(spec, plan.shape, plan.dtype,
                               plain_step(dev, spec, (_Meta(x.shape, x.dtype),), attrs, plan), True)
    return out


# Plans of ops with attrs whose record says their rule reads only operand shapes, dtypes and
# the attrs (``OpSpec.cache_plan``), by (name, device, operand signature, attrs): a plan such a
# rule gave once holds for the same key (a rule that raised caches nothing), so a training
# loop's second step runs no rule.
_RULES: dict = {}
_PLAIN_ATTR = (int, float, bool, str, type(None))


def _frozen(v):
    """``v`` as a hashable key that tells 1 from 1.0 and True (the types ride along), or None
    when it is not a plain value or a tuple of them."""
    t = type(v)
    if t in _PLAIN_ATTR:
        return (t, v)
    if t is tuple:
        out = []
        for x in v:
            f = _frozen(x)
            if f is None:
                return None
            out.append(f)
        return tuple(out)
    return None


def _rule_key(name, device, args, attrs):
    # a device that names its fast-path decisions keys by that name (a str: hashed at C
    # speed; devices hash in Python); any other by itself
    key = [name, device.fast_kind or device]
    for a in args:
        t = type(a)
        if t is Tensor:
            key.append(a.shape)
            key.append(a.dtype)
        elif t in _PLAIN_ATTR:
            key.append((t, a))
        else:
            return None
    for k, v in attrs.items():
        t = type(v)
        f = None
        if t is tuple:
            # the common attr (stride, padding, axes, a shape): a tuple of ints keys as itself,
            # which nothing else can equal (a tagged scalar starts with a type, a tagged tuple
            # holds tuples)
            for x in v:
                if type(x) is not int:
                    break
            else:
                f = v
        elif t in _PLAIN_ATTR:
            f = (t, v)
        if f is None:
            f = _frozen(v)
            if f is None:
                return None
        key.append(k)
        key.append(f)
    return tuple(key)


def _check_size(name, shape) -> None:
    """A ``ShapeError`` naming op ``name`` when a rule's result shape has more elements than a
    tensor can have (a huge padding, scale factor, offset...: never a raw NumPy error, and on a
    capture device never a recorded tensor no device could allocate)."""
    n = 1
    for d in shape:
        n *= d
    if n > _MAX_ELEMENTS:
        raise ShapeError(f"{name}: the result of shape {tuple(shape)} has {n} elements, more than "
                         f"the {_MAX_ELEMENTS} a tensor can have")


# Plans of attr-less unary/binary ops and matmuls by operand signature (the fast-path key): key ->
# Decided.  The first call of a signature runs the rule and leaves its plan here; the second
# finds it and leaves the fast-path decision (``_remember``), so one-off signatures build no
# prepared kernel; calls that never take the fast path (a capture device's, an op whose kernel
# set has no prepared kernel) skip the rule.
_INFER: dict = {}
_INFER_FAMILIES = frozenset(("unary", "binary"))
_INFER_LOWERINGS = frozenset(("matmul", "linear"))   # (rules that read shapes and dtypes only)


def _prepared_fn(spec, ks, device, args, plan):
    """The kernel set's prepared kernel for attr-less op ``spec`` (unary, binary, composite,
    matmul or linear lowering) on operands ``args`` (tensors or (shape, dtype) stand-ins, and
    int/float/bool scalars), or None."""
    if spec.lowering == "composite":
        # its fused decomposition, for tensor operands only (a scalar is baked into it)
        if not all(isinstance(a, _OPERAND_TYPES) for a in args):
            return None
        run = composite_runner(spec, device, args, {})

        def composite(*payloads):
            return run(payloads)
        return composite
    if spec.family == "binary" and len(args) == 2:
        if spec.lowering != "binary" or not supports(ks, "prepared"):
            return None
        a, b = args
        ta, tb = isinstance(a, _OPERAND_TYPES), isinstance(b, _OPERAND_TYPES)
        if (not ta and type(a) not in _SCALAR_TYPES) or (not tb and type(b) not in _SCALAR_TYPES):
            return None
        same = ta and tb and a.shape == b.shape       # two arrays of one shape
        return ks.binary_fn(spec.name, a.dtype.np if ta else None, b.dtype.np if tb else None,
                            plan.compute.np, plan.dtype.np, a.shape if same else None)
    if spec.family == "unary" and len(args) == 1 and isinstance(args[0], _OPERAND_TYPES):
        if spec.lowering != "unary" or not supports(ks, "prepared"):
            return None
        return ks.unary_fn(spec.name, args[0].dtype.np, plan.dtype.np, args[0].shape)
    if spec.lowering == "matmul" and len(args) == 2 and supports(ks, "prepared_matmul"):
        # two matrices of the result dtype (the lowering's own shortcut: no cast, no batch)
        a, b = args
        if (isinstance(a, _OPERAND_TYPES) and isinstance(b, _OPERAND_TYPES)
                and len(a.shape) == 2 and len(b.shape) == 2
                and a.dtype is plan.dtype and b.dtype is plan.dtype):
            return ks.matmul_fn(a.shape[0], a.shape[1], b.shape[1], plan.dtype.np)
    if spec.lowering == "linear" and len(args) == 3 and supports(ks, "prepared_matmul"):
        # a matrix, the weight and a bias of the result dtype: the product of the matrix and
        # the weight's transposed view (the prepared ``matmul_fn``), then the bias added by
        # the kernel set's ``binary`` (the lowering's own calls)
        x, w, bias = args
        dt = plan.dtype
        if (all(isinstance(t, _OPERAND_TYPES) and t.dtype is dt for t in args)
                and len(x.shape) == 2 and len(w.shape) == 2):
            mm = ks.matmul_fn(x.shape[0], x.shape[1], w.shape[0], dt.np)
            permute, binary, dnp = ks.permute, ks.binary, dt.np

            def linear(x, w, bias):
                return binary("add", mm(x, permute(w, (1, 0))), bias, dnp, dnp)
            return linear
    return None


def _remember(key, spec, device, args, plan) -> None:
    """Cache the fast-path decision ``key`` -> ``FastEntry`` for this attr-less
    unary/binary call when the kernel set offers a prepared kernel (``unary_fn``/``binary_fn``,
    or the composite's fused decomposition): ``fn(payloads...)`` on the plain device that runs
    it (``device`` itself, ``plain`` true, or a decorator device's inner device)."""
    if _lowprec.needs_upcast(spec, args, None, plan):   # runs in its compute dtypes, not cached
        return
    plain = device if device.execute_fast is None else device.inner
    fn = _prepared_fn(spec, _KERNELS.get(plain.kind) or kernels_for_kind(plain.kind), plain, args, plan)
    if fn is not None:
        if len(_FAST) >= _FAST_MAX:
            _evict_oldest(_FAST)
        _FAST[key] = FastEntry(spec, plan.shape, plan.dtype, fn, plain is device)


def plain_step(device: PlainDevice, spec: OpSpec, operands, attrs, plan):
    """For replay on a plain device: ``fn(*payloads)`` computing ``spec`` on payloads whose
    shapes/dtypes are fixed in advance (``operands``: (shape, dtype) stand-ins and Python
    scalars, in call order; every operand, scalars included, is passed to ``fn``; ``plan``: the
    rule's plan for them).

    Attr-less unary/binary ops get the kernel set's prepared kernel, a view op (lowering
    "view") its kernel-set method with the attr bound; every other op a closure over
    ``spec.kernel`` with the stand-ins, attrs and plan bound.  ``fn`` returns the output
    payload and raises IndexError as the kernels do."""
    ks = kernels_for_kind(device.kind)
    kernel = spec.kernel
    metas = tuple(operands)
    name = spec.name
    kq = spec.lowering
    if _lowprec.needs_upcast(spec, metas, attrs, plan):
        # a small dtype: the tensors' way, upcast, compute, round back
        wrap = Tensor._wrap

        def ustep(*p):
            ts = [wrap(q, m.shape, m.dtype, device) if isinstance(m, _OPERAND_TYPES) else q
                  for q, m in zip(p, metas)]
            return _lowprec.run_upcast(device, spec, ts, attrs, plan)._payload
        return ustep
    if not attrs:
        if kq == "binary" and plan.layout == "broadcast":
            # broadcasting operands: the prepared kernel would only fall back to this
            binary, cnp, onp = ks.binary, plan.compute.np, plan.dtype.np

            def bstep(a, b):
                return binary(name, a, b, cnp, onp)
            return bstep
        fn = _prepared_fn(spec, ks, device, metas, plan)
        if fn is not None:
            return fn
    if kq == "view" and len(metas) == 1 and len(attrs) == 1:
        # the kernel set's method of the op's name on the payload and the one attr's value
        method, (value,) = getattr(ks, name), attrs.values()

        def vstep(x):
            return method(x, value)
        return vstep
    if kq == "reduce" and len(metas) == 1:
        reduce, axes, keepdims, onp = ks.reduce, attrs["axes"], attrs["keepdims"], plan.dtype.np

        def rstep(x):
            return reduce(name, x, axes, keepdims, onp, attrs)
        return rstep

    def step(*p):
        return kernel(ks, p, metas, attrs, plan, device)
    return step


@on_catalogue_change
@on_empty_cache
def clear_dispatch_cache() -> None:
    """Forget the cached per-op decisions of the small-op fast path and the cached plans."""
    _FAST.clear()
    _INFER.clear()
    _RULES.clear()


def create(name: str, device: Device, attrs: dict) -> Tensor:
    """Run a creation op (no tensor operands) on ``device``."""
    spec = CATALOGUE[name]
    return device.execute(spec, (), attrs, spec.infer((), attrs))


def scalar(device: PlainDevice, value: float, dtype) -> Tensor:
    """A 0-d tensor of the float ``value`` on plain ``device`` (float32 or float64): the kernel
    set's ``from_host`` of one NumPy value, without an op's dispatch (a compiled step makes
    its changing optimiser scalars so, every call)."""
    ks = kernels_for_kind(device.kind)
    return Tensor._wrap(ks.from_host(_np.array(value, dtype.np), device.index), (), dtype, device)


def keep_warm(device: PlainDevice) -> None:
    """Keep ``device``'s kernel-set worker threads awake a while longer (a no-op parallel region:
    see ``jit_kernels.cpu._warm``); nothing on a set without them.  A caller about to run
    parallel kernels after some Python of its own (a compiled step's call) calls it first."""
    ks = kernels_for_kind(device.kind)
    if supports(ks, "keep_warm"):
        ks.keep_warm()


def warm_policy(device):
    """``(keep_warm, seconds, parallel_min)`` for a plain ``device`` whose kernel set keeps
    worker threads (``keep_warm``, how long they stay awake after a parallel kernel, and the
    fewest elements a kernel runs in parallel for); None for any other device.  A caller that
    knows its coming work (a compiled plan, the autodiff tape's backward walk) starts a serial
    stretch with ``keep_warm()`` once ``seconds`` have passed since the last parallel kernel,
    when a parallel one comes after it."""
    if type(device) is not PlainDevice:
        return None
    ks = kernels_for_kind(device.kind)
    if not supports(ks, "keep_warm"):
        return None
    return ks.keep_warm, ks.keep_warm_s, ks.parallel_min


def run_fused(device: PlainDevice, program, tensors) -> tuple:
    """Run a fused program (``runtime.capture.fuse``) on ``device``'s kernel set; one tensor
    per program output.  DeviceError when the kernel set has no fused kernels."""
    ks = kernels_for_kind(device.kind)
    if not supports(ks, "fused"):
        raise DeviceError(f"{device}: the {device.kind} kernel set has no fused kernels")
    outs = ks.fused(program, [t._payload for t in tensors])
    return tuple(Tensor._wrap(o, shape, D.as_dtype(dt), device)
                 for o, shape, dt in zip(outs, program.output_shapes, program.output_dtypes))


def pieces(t: Tensor, shapes) -> list:
    """The consecutive stretches of 1-D tensor ``t`` on a plain device as tensors of
    ``shapes`` (their sizes add up to ``t``'s length): views where the kernel set's ``index``
    and ``reshape`` give views.  An optimiser cuts its batched update's flat results so; one
    catalogue op per piece cost more than the update of a small model's parameters."""
    sizes = [_prod(shape) for shape in shapes]
    if len(t.shape) != 1 or sum(sizes) != t.shape[0]:
        raise ShapeError(f"pieces: shapes {list(shapes)} do not cut a tensor of shape {t.shape}")
    device, dt, p = t.device, t.dtype, t._payload
    ks = kernels_for_kind(device.kind)
    if supports(ks, "split"):       # (one kernel-set call for all the views)
        return [Tensor._wrap(v, tuple(shape), dt, device)
                for v, shape in zip(ks.split(p, sizes, shapes), shapes)]
    index, reshape = ks.index, ks.reshape
    out, start = [], 0
    for shape, n in zip(shapes, sizes):
        out.append(Tensor._wrap(reshape(index(p, (slice(start, start + n, 1),)), shape),
                                tuple(shape), dt, device))
        start += n
    return out
