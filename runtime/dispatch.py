"""The dispatch layer: the one place that maps operands to a device and a device to kernels.

``dispatch(name, args, attrs)`` finds the operands' common device (SPEC §3 mixing
rules), runs the catalogue's shape/dtype rule, and hands the op to that device's
``execute``.  Plain devices execute here, through the kernel set that the registry in
``jit_kernels`` gives for their kind; decorator (autodiff) and recording (capture)
devices implement ``execute`` themselves and end up calling back into ``dispatch``
or ``execute_plain`` for their inner device.
"""
from __future__ import annotations

from . import dtypes as D
from .device import Device, PlainDevice
from .errors import DeviceError, DeviceMismatchError, IndexOutOfRangeError, OutOfMemoryError
from .ops.registry import CATALOGUE, Meta as _Meta, OpSpec
from .tensor import Tensor

__all__ = ["dispatch", "create", "execute_plain", "kernels_for", "kernels_for_kind",
           "common_device", "run_fused", "plain_step", "fast_key", "FAST"]

_KERNELS: dict = {}


def kernels_for_kind(kind: str):
    """The kernel set registered for a device kind (imported on first use)."""
    ks = _KERNELS.get(kind)
    if ks is None:
        import jit_kernels
        try:
            ks = jit_kernels.kernel_set_for(kind)
        except ImportError as exc:
            raise DeviceError(f"the {kind} kernel set cannot be loaded: {exc}") from None
        _KERNELS[kind] = ks
    return ks


def kernels_for(device: PlainDevice):
    return kernels_for_kind(device.kind)


def common_device(name: str, args) -> Device:
    """The device an op runs on; DeviceMismatchError when operands disagree (SPEC §3)."""
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


# Per-op decisions for the small-op fast path: (op, plain device kind, shape/dtype or scalar type
# per operand) -> (spec, shape, dtype, fn), where fn(payloads...) is the kernel set's prepared kernel
# for those dtypes (a composite's fused decomposition).  Filled by ``execute_plain`` after an
# attr-less unary/binary op ran on plain tensors (directly or as an autodiff device's inner op);
# an entry is used only while the catalogue still holds the same spec.
_FAST: dict = {}
FAST = _FAST          # (read by decorator devices' execute_fast)
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
# Python ints in the fast-path and rule caches: keyed by type, so only those every int dtype
# holds (an int32 tensor plus 2**40 must reach the rule, which refuses it)
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_wrap = Tensor._wrap
_OPERAND_TYPES = (Tensor, _Meta)


def dispatch(name: str, args: tuple, attrs: dict | None = None) -> Tensor:
    """Run catalogue op ``name`` on ``args`` (tensors and Python scalars)."""
    if attrs is None:
        # The small-op fast path, inline (it is the hot path): a cached per-op decision for
        # plain tensors on one plain device and int/float/bool scalars (``fast_key``'s key).
        n = len(args)
        if n == 2:
            a, b = args
            if type(a) is Tensor:
                dev = a.device
                if type(b) is Tensor:
                    if b.device is dev:
                        ent = _FAST.get((name, dev.kind, a.shape, a.dtype, b.shape, b.dtype))
                        if ent is not None and CATALOGUE[name] is ent[0]:
                            return _wrap(ent[3](a._payload, b._payload), ent[1], ent[2], dev)
                elif type(b) is not int or _I32_MIN <= b <= _I32_MAX:
                    # (an int only int64 holds never takes it: the rules decide)
                    ent = _FAST.get((name, dev.kind, a.shape, a.dtype, type(b), None))
                    if ent is not None and CATALOGUE[name] is ent[0]:
                        return _wrap(ent[3](a._payload, b), ent[1], ent[2], dev)
            elif type(b) is Tensor and (type(a) is not int or _I32_MIN <= a <= _I32_MAX):
                dev = b.device
                ent = _FAST.get((name, dev.kind, type(a), None, b.shape, b.dtype))
                if ent is not None and CATALOGUE[name] is ent[0]:
                    return _wrap(ent[3](a, b._payload), ent[1], ent[2], dev)
        elif n == 1:
            a = args[0]
            if type(a) is Tensor:
                dev = a.device
                ent = _FAST.get((name, dev.kind, a.shape, a.dtype))
                if ent is not None and CATALOGUE[name] is ent[0]:
                    return _wrap(ent[3](a._payload), ent[1], ent[2], dev)
        # A device may take attr-less ops before infer (``execute_fast``: autodiff, when its
        # inner device has a cached fast-path decision); None means "go the general way".
        for a in args:
            if type(a) is Tensor:
                fast = a.device.execute_fast
                if fast is not None:
                    out = fast(name, args)
                    if out is not None:
                        return out
                break
    spec = CATALOGUE[name]
    device = common_device(name, args)
    if attrs is None:
        attrs = {}
        key = _infer_key(name, args) if spec.family in _INFER_FAMILIES else None
        hit = _INFER.get(key) if key is not None else None
        if hit is not None and hit[0] is spec:
            shape, dtype = hit[1], hit[2]
        else:
            shape, dtype = spec.infer(args, attrs)
            if key is not None:
                if len(_INFER) >= _FAST_MAX:
                    _evict_oldest(_INFER)
                _INFER[key] = (spec, shape, dtype)
    else:
        shape, dtype = spec.infer(args, attrs)
    return device.execute(spec, args, attrs, shape, dtype)


# Shape/dtype results of attr-less unary/binary ops by operand shapes and dtypes (Python
# scalars by type: promotion treats them by kind), for devices that skip the fast path
# (capture, autodiff): (op, shape/type, dtype per operand) -> (spec, shape, dtype).
_INFER: dict = {}
_INFER_FAMILIES = frozenset(("unary", "binary"))


def _cacheable(s) -> bool:
    """A scalar operand whose type stands for its value in the caches' keys."""
    t = type(s)
    return t is float or t is bool or (t is int and _I32_MIN <= s <= _I32_MAX)


def _infer_key(name, args):
    if len(args) == 1:
        a = args[0]
        return (name, a.shape, a.dtype) if isinstance(a, Tensor) else None
    if len(args) == 2:
        a, b = args
        ka = (a.shape, a.dtype) if isinstance(a, Tensor) else (
            type(a) if _cacheable(a) else None)
        kb = (b.shape, b.dtype) if isinstance(b, Tensor) else (
            type(b) if _cacheable(b) else None)
        if ka is None or kb is None:
            return None
        return (name, ka, kb)
    return None


def _prepared_fn(name, spec, ks, device, args, dtype):
    """The kernel set's prepared kernel for attr-less unary/binary op ``spec`` on operands
    ``args`` (tensors or (shape, dtype) stand-ins, and int/float/bool scalars), or None."""
    if spec.lowering == "composite":
        # its fused decomposition, for tensor operands only (a scalar is baked into it)
        if not all(isinstance(a, _OPERAND_TYPES) for a in args):
            return None
        from .ops.composite import runner
        run = runner(spec, device, args, {})

        def composite(*payloads):
            return run(payloads)
        return composite
    if spec.family == "binary" and len(args) == 2:
        prep = getattr(ks, "binary_fn", None)
        if prep is None or spec.lowering != "binary":
            return None
        from .ops.elementwise import compute_dtype
        a, b = args
        ta, tb = isinstance(a, _OPERAND_TYPES), isinstance(b, _OPERAND_TYPES)
        if (not ta and type(a) not in _SCALAR_TYPES) or (not tb and type(b) not in _SCALAR_TYPES):
            return None
        compute = compute_dtype(name, a, b, dtype)
        return prep(name, a.dtype.np if ta else None, b.dtype.np if tb else None, compute.np,
                    dtype.np)
    if spec.family == "unary" and len(args) == 1 and isinstance(args[0], _OPERAND_TYPES):
        prep = getattr(ks, "unary_fn", None)
        if prep is None or spec.lowering != "unary":
            return None
        return prep(name, args[0].dtype.np, dtype.np)
    return None


def fast_key(name: str, kind: str, args):
    """The fast-path key of attr-less op ``name`` on ``args`` for kernel-set kind ``kind``:
    (op, kind, then shape and dtype per tensor operand, type and None per int/float/bool
    scalar), or None when an operand is neither (``dispatch`` builds the same key inline)."""
    if len(args) == 2:
        a, b = args
        ta, tb = type(a) is Tensor, type(b) is Tensor
        if (not ta and not _cacheable(a)) or (not tb and not _cacheable(b)):
            return None
        return (name, kind, a.shape if ta else type(a), a.dtype if ta else None,
                b.shape if tb else type(b), b.dtype if tb else None)
    if len(args) == 1 and type(args[0]) is Tensor:
        return (name, kind, args[0].shape, args[0].dtype)
    return None


def _remember(name, spec, device, args, shape, dtype) -> None:
    """Record the fast-path entry for this attr-less unary/binary call when the kernel set
    offers prepared kernels (``unary_fn``/``binary_fn``)."""
    key = fast_key(name, device.kind, args)
    if key is None or key in _FAST:
        return
    fn = _prepared_fn(name, spec, _KERNELS.get(device.kind) or kernels_for_kind(device.kind),
                      device, args, dtype)
    if fn is not None:
        if len(_FAST) >= _FAST_MAX:
            _evict_oldest(_FAST)
        _FAST[key] = (spec, shape, dtype, fn)


def plain_step(device: PlainDevice, spec: OpSpec, operands, attrs, shape, dtype):
    """For replay on a plain device: ``fn(*payloads)`` computing ``spec`` on payloads whose
    shapes/dtypes are fixed in advance (``operands``: (shape, dtype) stand-ins and Python
    scalars, in call order; every operand, scalars included, is passed to ``fn``).

    Attr-less unary/binary ops get the kernel set's prepared kernel; every other op a closure
    over ``spec.kernel`` with the stand-ins, attrs, shape and dtype bound.  ``fn`` returns the
    output payload and raises IndexError as the kernels do."""
    ks = kernels_for_kind(device.kind)
    kernel = spec.kernel
    metas = tuple(operands)
    name = spec.name
    kq = spec.lowering
    if not attrs:
        if (kq == "binary" and len(metas) == 2
                and all(isinstance(m, _Meta) for m in metas) and metas[0].shape != metas[1].shape):
            # broadcasting tensor operands: the prepared kernel would only fall back to this
            from .ops.elementwise import binary_dtypes
            compute, out = binary_dtypes(name, metas[0], metas[1])
            binary, cnp, onp = ks.binary, compute.np, out.np

            def bstep(a, b):
                return binary(name, a, b, cnp, onp)
            return bstep
        fn = _prepared_fn(name, spec, ks, device, metas, dtype)
        if fn is not None:
            return fn
    if kq == "reduce" and len(metas) == 1:
        reduce, axes, keepdims, onp = ks.reduce, attrs["axes"], attrs["keepdims"], dtype.np

        def rstep(x):
            return reduce(name, x, axes, keepdims, onp, attrs)
        return rstep

    def step(*p):
        return kernel(ks, p, metas, attrs, shape, dtype, device)
    return step


def fused_row_ops() -> tuple:
    """(last-axis reductions, all row-level ops) the kernel sets' fused "rows" kernels compute:
    jit_kernels' op table, read by the fusion pass (``runtime.capture.fuse``)."""
    from jit_kernels import optable
    return optable.ROW_REDUCTIONS, optable.ROW_OPS


def clear_dispatch_cache() -> None:
    """Forget the cached per-op decisions of the small-op fast path and the cached inference."""
    _FAST.clear()
    _INFER.clear()


def synchronize(device=None) -> None:
    """Wait for ``device``'s outstanding work (every usable device's, ``rt.devices()``, when
    None): on cuda the queued kernels; on cpu the kernel builds this process left to a
    background worker (after it, every kernel runs its final variant; benchmarks call it before
    timing)."""
    from .device import device as _parse, devices
    if device is None:
        targets = devices()
    else:
        d = getattr(_parse(device), "innermost", None)
        if not isinstance(d, PlainDevice):
            raise DeviceError(f"synchronize: {device} runs on no kernel set")
        targets = [d]
    for d in targets:
        fn = getattr(kernels_for(d), "synchronize", None)
        if fn is not None:
            fn(d.index)


def empty_cache() -> None:
    """Release every cached device buffer (each loaded kernel set's ``empty_cache``) and the
    cached per-op decisions."""
    from .ops import composite
    _FAST.clear()
    _INFER.clear()
    composite.clear()
    for ks in list(_KERNELS.values()):
        fn = getattr(ks, "empty_cache", None)
        if fn is not None:
            fn()


def create(name: str, device: Device, attrs: dict) -> Tensor:
    """Run a creation op (no tensor operands) on ``device``."""
    spec = CATALOGUE[name]
    shape, dtype = spec.infer((), attrs)
    return device.execute(spec, (), attrs, shape, dtype)


def execute_plain(device: PlainDevice, spec: OpSpec, args, attrs, shape, dtype) -> Tensor:
    """``PlainDevice.execute``: lower ``spec`` onto the device's kernel set and wrap the result
    (an attr-less unary/binary call also leaves its fast-path decision in ``_FAST``)."""
    ks = _KERNELS.get(device.kind) or kernels_for_kind(device.kind)
    payloads = []
    for a in args:
        payloads.append(a._payload if isinstance(a, Tensor) else a)
    try:
        out = spec.kernel(ks, payloads, args, attrs, shape, dtype, device)
    except IndexError as exc:  # kernels check index values, the only thing they see first
        raise IndexOutOfRangeError(f"{spec.name}: {exc} (input shapes "
                                   f"{', '.join(str(getattr(a, 'shape', ())) for a in args)})") from None
    except MemoryError:
        raise OutOfMemoryError(f"{spec.name}: cannot allocate the {dtype.name} result of shape "
                               f"{tuple(shape)} on {device}") from None
    if not attrs and spec.family in _INFER_FAMILIES:
        _remember(spec.name, spec, device, args, shape, dtype)
    return Tensor._wrap(out, shape, dtype, device)


def run_fused(device: PlainDevice, program, tensors) -> tuple:
    """Run a fused program (``runtime.capture.fuse``) on ``device``'s kernel set; one tensor
    per program output.  DeviceError when the kernel set has no fused kernels."""
    ks = kernels_for_kind(device.kind)
    fused = getattr(ks, "fused", None)
    if fused is None:
        raise DeviceError(f"{device}: the {device.kind} kernel set has no fused kernels")
    outs = fused(program, [t._payload for t in tensors])
    return tuple(Tensor._wrap(o, shape, D.as_dtype(dt), device)
                 for o, shape, dt in zip(outs, program.output_shapes, program.output_dtypes))


def dlpack_plain(device: PlainDevice, t: Tensor, kwargs):
    """``t``'s DLPack capsule from its kernel set (zero-copy), or with ``kwargs`` None the
    ``__dlpack_device__`` pair; DeviceError when the set exports none."""
    ks = kernels_for_kind(device.kind)
    fn = getattr(ks, "dlpack", None)
    if fn is None:
        raise DeviceError(f"{device}: DLPack export is not supported on this device yet (the "
                          f"{device.kind} kernel set has no dlpack); move the tensor to cpu first")
    if kwargs is None:
        return ks.dlpack_device(t._payload)
    return fn(t._payload, **kwargs)


def to_host_plain(device: PlainDevice, t: Tensor):
    """A NumPy array the caller owns with ``t``'s values."""
    import numpy as np
    a = kernels_for_kind(device.kind).to_host(t._payload)
    if a is t._payload or not a.flags.owndata:
        a = np.array(a, copy=True)
    return a


