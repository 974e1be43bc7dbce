"""The op record (``OpSpec``), the catalogue that holds one per op, and the front-end registry.

An op is one record, written in its family module (``elementwise``, ``reduce``, ``shape``,
``index``, ``linalg``, ``nn``, ``create``): its front-end function (and whether it is a Tensor
method), its shape/dtype rule (``infer``, which also validates and raises ShapeError/DTypeError,
and returns the op's ``Plan``),
its lowering onto a kernel set (``kernel``, used by plain devices), its backward rule (or
``differentiable=False``), its ONNX mapping (the ONNX operator ``onnx`` and its lowering
``onnx_lower``, or ``onnx_skip`` saying why it has none), its class for the fusion pass
(``fusion``) and, for composite ops, its decomposition into other ops.  ``rt.*``, the Tensor
methods and the package exports are generated from the front-end registry (``FRONTEND``);
devices, the fusion pass and the ONNX exporter never branch on op names: they read the
catalogue.

A *composite* op gives ``decompose`` and no ``kernel``: on a plain device it runs as one fused
kernel generated from its decomposition (``runtime.ops.composite``), a recording device
records the decomposition, ONNX export goes through it, and autodiff differentiates through
it unless the record gives its own ``backward``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

from . import dtypes as D
from .errors import ArgumentValueError

__all__ = ["OpSpec", "Plan", "CATALOGUE", "FRONTEND", "METHODS", "register", "front_end", "Meta",
           "on_catalogue_change"]


class Plan(NamedTuple):
    """What an op's rule decides, once, for every consumer (the fast path, ``execute``, the
    kernel lowering, replay, fusion and ONNX export read it instead of deciding again).

    ``shape``/``dtype``: the result's.  ``compute``: the dtype the kernel computes in (a
    comparison computes in its operands' promoted dtype and stores bools; most ops compute in
    the result dtype).  ``layout``: how the operands line up with the result: ``"same"``
    (every tensor operand has the result's shape; scalars are broadcast), ``"broadcast"``
    (operand shapes broadcast to the result's), or ``"op"`` (the op's own indexing: a
    reduction, a matmul, a gather, ...)."""

    shape: tuple
    dtype: D.DType
    compute: D.DType
    layout: str = "op"


@dataclass
class OpSpec:
    """One catalogue record (see the module docstring)."""

    name: str
    family: str                       # unary, binary, select, reduce, arg_reduce, softmax,
                                      # linalg, shape, index, create, loss, custom
    infer: Callable[[tuple, dict], Plan]           # (args, attrs) -> Plan
    # (ks, payloads, args, attrs, plan, device) -> payload; None for a composite
    # (``register`` installs the generated fused lowering of its decomposition)
    kernel: Optional[Callable[..., Any]] = None
    cost: str = "memory"              # "memory" | "compute" (checkpointing, fusion)
    differentiable: bool = True
    backward: Optional[Callable] = None
    # the ONNX op type it exports as (``onnx_lower`` builds the node from it); or, for an op
    # that exports as a composition with no one ONNX operator to name, its lowering itself
    onnx: Optional[str | Callable] = None
    # ``lower(exporter, op) -> ONNX value name``: writes captured op ``op`` (an ``OperationIr``)
    # through the helpers of ``exporter`` (``runtime.capture.onnx``: node, cast, operand,
    # scalar, i64, record, ...); written beside the record in its family module
    onnx_lower: Optional[Callable] = None
    onnx_skip: Optional[str] = None   # why it has no ONNX mapping (and no decomposition)
    # "unary", "binary" or "reduce" when ``kernel`` is exactly the kernel set's generic
    # ``unary``/``binary``/``reduce`` call for this op (dispatch may then call prepared
    # kernels); "matmul" when it is the kernel set's ``matmul`` on the operands as batches of
    # matrices (two matrices of the result dtype may then take the prepared ``matmul_fn``);
    # "linear" when it is that ``matmul`` of the input and the weight's transposed view, then
    # the kernel set's ``binary`` adding the bias (three operands of the result dtype may then
    # take the prepared ``matmul_fn`` and the same ``binary``);
    # "view" when it is the kernel set's method of the op's name on the payload and the
    # record's one attr (``permute``: ``ks.permute(x, axes)``); "composite" for a generated
    # lowering of ``decompose``
    lowering: Optional[str] = None
    # ``decompose(args, attrs) -> Tensor`` writes the op with other catalogue ops through the
    # front end.  Recording devices (capture) call it, so captured graphs, ONNX export and
    # graph.compile see only what it is made of.
    decompose: Optional[Callable] = None
    # Recording devices keep the op whole (its kernel runs when the graph runs) instead of
    # recording ``decompose``: for ops whose decomposition runs slower than their kernel (the
    # backward ops gradient rules emit, a recurrent layer's recurrence).  ONNX export writes
    # ``decompose`` in its place when the record has no ONNX lowering.
    record_whole: bool = False
    # the fusion pass's class of the op (``runtime.capture.fuse``): "unary", "binary",
    # "select", "clamp" (elementwise members of a fused group), "row_reduce", "row_softmax"
    # (last-axis reductions and softmaxes of a "rows" group; they must be in the kernel sets'
    # fused row-op table), "matmul" (a matmul with an elementwise epilogue), or None (never
    # fused).  ``register`` sets it from the family (unary, binary, select) when left None.
    fusion: Optional[str] = None
    # Whether dispatch may keep the rule's plan by operand signature and attrs: True when the
    # rule reads only operand shapes, dtypes and the attrs (no values, no random state).
    # ``register`` sets it from the family when the record leaves it None.
    cache_plan: Optional[bool] = None
    # The op only moves values (reshape, permute, expand, cat, basic indexing, take, gather):
    # on the small dtypes it runs on the storage directly when every emulated operand already
    # has the result's dtype (``runtime.lowprec``).
    moves_only: bool = False
    # How the op runs with a uint64 operand or result (``runtime.lowprec``, which computes
    # uint64 in int64): "modular" (exact modulo 2**64, such as ``+ - *``, bitwise ops, sums and
    # moves: it runs on the int64 bits), "order" (it only compares values: it runs on the int64
    # bits with the top bit flipped), or None (DTypeError naming the op, unless it computes in
    # a float dtype and its operands are values: see ``uint64_float``).  ``register`` sets
    # "modular" for a ``moves_only`` op that leaves it None.
    uint64: Optional[str] = None
    # True when the op takes value operands only although its lowering does not say so
    # (``runtime.lowprec`` knows that of the unary, binary, reduce, composite and matmul
    # lowerings): computed in a float dtype, its uint64 operands convert to that dtype directly
    # (their values, not their int64 bits).  When the compute dtype is a float dtype this wins
    # over ``uint64``.
    uint64_float: bool = False
    # True when the op's second operand is an index tensor that ``runtime.lowprec`` refuses as
    # uint64 (DTypeError saying to cast the indices to int64): take, gather, put, scatter_add.
    uint64_index: bool = False
    # True for an op without operands whose value depends on its attrs alone (``full``,
    # ``arange``, ``eye``; not the random draws): a compiled graph computes it once, as a
    # constant, instead of on every call.
    constant: bool = False

    @property
    def onnx_lowering(self) -> Optional[Callable]:
        """The op's ONNX lowering: ``onnx`` when it is one, else ``onnx_lower``."""
        return self.onnx if callable(self.onnx) else self.onnx_lower

    @property
    def composite(self) -> bool:
        """True when the op has no kernel of its own (it runs as its decomposition)."""
        return self.lowering == "composite"


class _Catalogue(dict):
    """name -> OpSpec: a dict that tells ``on_catalogue_change`` listeners when a record is
    added, replaced or removed (by ``register`` or by anything else that writes to it), so a
    layer above may keep decisions keyed by op name without looking the record up per call."""

    __slots__ = ()

    def __setitem__(self, name, spec):
        dict.__setitem__(self, name, spec)
        _changed()

    def __delitem__(self, name):
        dict.__delitem__(self, name)
        _changed()

    def pop(self, *a):
        try:
            return dict.pop(self, *a)
        finally:
            _changed()

    def popitem(self):
        try:
            return dict.popitem(self)
        finally:
            _changed()

    def setdefault(self, name, spec=None):
        try:
            return dict.setdefault(self, name, spec)
        finally:
            _changed()

    def update(self, *a, **k):
        try:
            dict.update(self, *a, **k)
        finally:
            _changed()

    def clear(self):
        dict.clear(self)
        _changed()


_LISTENERS: list = []


def on_catalogue_change(fn: Callable[[], None]) -> Callable[[], None]:
    """Register ``fn()`` to run after every change to ``CATALOGUE``."""
    _LISTENERS.append(fn)
    return fn


def _changed() -> None:
    for fn in _LISTENERS:
        fn()


CATALOGUE: dict[str, OpSpec] = _Catalogue()

#: ``OpSpec.fusion``'s default per family
_FAMILY_FUSION = {"unary": "unary", "binary": "binary", "select": "select"}

#: the families whose rules read only shapes, dtypes and attrs (``OpSpec.cache_plan``'s default)
PLAN_CACHE_FAMILIES = frozenset(("conv", "pool", "loss", "reduce", "arg_reduce", "softmax",
                                 "linalg", "shape", "scan", "attention"))


# A composite op runs on a plain device as its decomposition traced and fused: the tracing
# service (``runtime.capture.tracing``) sits above this layer and installs the function that
# builds such a runner when it is imported (``import runtime`` imports it).
_composite_runner = None


def install_composite_runner(fn) -> None:
    """Install ``fn(spec, device, args, attrs) -> runner(payloads) -> payload``, the plain-device
    lowering of every composite record."""
    global _composite_runner
    _composite_runner = fn


def composite_runner(spec, device, args, attrs):
    """The runner of composite ``spec`` on plain ``device`` for operands like ``args`` (tensors
    or (shape, dtype) stand-ins, and Python scalars)."""
    if _composite_runner is None:
        raise RuntimeError("composite ops need runtime.capture.tracing (import runtime)")
    return _composite_runner(spec, device, args, attrs)


def _composite_kernel(spec):
    def composite_kernel(ks, p, args, attrs, plan, device):
        fn = composite_runner(spec, device, args, attrs)
        return fn([q for q, a in zip(p, args) if hasattr(a, "dtype")])
    return composite_kernel


def register(s: OpSpec, replace: bool = False) -> OpSpec:
    """Add record ``s`` to the catalogue (ValueError when the name is taken)."""
    if s.name in CATALOGUE and not replace:
        raise ArgumentValueError(f"op {s.name!r} is already registered")
    if s.kernel is None:
        if s.decompose is None:
            raise ArgumentValueError(f"op {s.name!r}: a record needs a kernel or a decomposition")
        s.kernel = _composite_kernel(s)
        s.lowering = "composite"
    if s.cache_plan is None:
        s.cache_plan = s.family in PLAN_CACHE_FAMILIES
    if s.fusion is None:
        s.fusion = _FAMILY_FUSION.get(s.family)
    if s.uint64 is None and s.moves_only:
        s.uint64 = "modular"
    CATALOGUE[s.name] = s
    return s


# --------------------------------------------------------------------------- front end
#: name -> front-end function: everything ``rt.*`` exports from the op families
FRONTEND: dict[str, Callable] = {}
#: names of the front-end functions that are also Tensor methods (tensor first)
METHODS: set = set()


def front_end(fn=None, *, name: str | None = None, method: bool = False, aliases=()):
    """Register a front-end function (``rt.<name>``; a Tensor method too when ``method``),
    under ``name`` (default: the function's name) and each of ``aliases``."""
    def deco(f):
        for n in (name or f.__name__,) + tuple(aliases):
            if n in FRONTEND and FRONTEND[n] is not f:
                raise ArgumentValueError(f"front-end function {n!r} is already registered")
            FRONTEND[n] = f
            if method:
                METHODS.add(n)
        return f
    return deco(fn) if fn is not None else deco


class Meta:
    """A (shape, dtype) stand-in for a tensor in shape/dtype rules."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


def shape_of(x) -> tuple:
    return getattr(x, "shape", ())


def dtype_names(args) -> str:
    return ", ".join(a.dtype.name if hasattr(a, "dtype") else type(a).__name__ for a in args)


def float_of(dt: D.DType) -> D.DType:
    """``dt`` when it is a float dtype, else float32 (ints and bools computed as floats)."""
    return dt if dt.is_float else D.float32
