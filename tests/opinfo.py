"""The op table the per-area tests read: one ``OpInfo`` row per catalogue op.

``OPS[name]`` (``name`` a key of ``runtime.ops.catalogue.CATALOGUE``) says how to call the op
from the front end, how to build sample inputs per dtype, which dtypes it supports and which
it must reject, the NumPy float64 reference (the tests cast it to the result dtype), the
tolerance per result dtype (cpu and cuda), whether a gradient check applies (and on which
inputs) and the devices the table-driven checks run it on.  ``VARIANTS`` holds extra rows for
an op called with other attributes (``clamp`` with only a lower bound, ``var`` with ddof=1);
their ``op`` is the catalogue name.  Catalogue ops with no generic check are listed in
``NOT_IN_TABLE`` with the reason (and where they are tested); tests/test_opinfo_coverage.py
fails when a catalogue op is in neither.

Readers: tests/test_elementwise.py, tests/test_reduce.py (forward vs NumPy),
tests/autodiff/test_grad_*.py (finite differences), tests/compile/test_random_elementwise.py
(op names), tests/cuda/test_ops_cuda.py (same references on cuda), tests/test_opinfo_coverage.py
(table coverage, rejected dtypes, and the rows no per-area file sweeps: matmul, linear,
cross_entropy).  They select rows with ``rows(family, ...)``.

Adding an op: add one row below with the builder of its family; the defaults cover the common
case, so a row is usually one line, e.g.::

    unary("expm1", np.expm1, out="float"),                  # any input, ints -> float32
    unary("log1p", np.log1p, out="float", domain=POSITIVE, grad=positive),
    binary("atan2", np.arctan2, out="div", grad=each(anywhere)),
    reduce("amax", np.max, out="same", grad=distinct),

then run ``pytest tests/test_opinfo_coverage.py`` and the files above.  Keyword reference:

- ``fn``: the front-end callable (default ``getattr(rt, name)``); a lambda for attributes.
- ``ref``: NumPy reference; ``row.reference(*arrays, **kw)`` calls it on float64 copies of
  the inputs (reductions: ``ref(x, axis=..., keepdims=...)``; softmax: ``ref(x, axis)``;
  cast: ``ref(x, dst)`` on the input itself).
- ``out``: result dtype rule: "same", "float" (ints/bools -> float32), "bool", "acc"
  (ints/bools -> int64), "div" (true division: ints/bools -> float32), "int64".
- ``dtypes`` / ``rejects``: dtypes the forward checks run / that must raise DTypeError
  (with the op name in the message).  Each (op, dtype) is a JIT compile: keep lists short.
- ``domain``: (low, high) of the forward samples (``oracle.sample``; ints use ceil(low));
  ``nonzero=True`` replaces zeros of the last integer/bool input by 1 (divisors).
  ``sample`` overrides both: ``sample(shape, dtype, rng) -> list of arrays``.
- ``tol`` / ``tol_cuda``: {dtype: rtol (= atol)} for float results; integer and bool results
  compare exactly.
- ``grad``: ``None`` (no finite-difference check) or ``grad(shapes, rng) -> float64 arrays``,
  one per input (helpers: ``each(anywhere)``, ``each(positive)``, ``per_input(a, b)``,
  ``distinct``...); ``grad_fn`` is the callable differentiated (default ``fn``).
- ``devices``: where the table-driven checks run it ("cpu"; "cuda" under the simulator).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import runtime as rt
from oracle import ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, sample as _oracle_sample
from runtime.ops.attention import attention_softmax as _attention_softmax

F32, F64, I32, I64, B = rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_
CPU_CUDA = ("cpu", "cuda")
ANYWHERE = (-3.0, 3.0)
POSITIVE = (0.1, 3.0)
UNIT = (-1.0, 1.0)

#: forward tolerances (rtol = atol) per float result dtype
UNARY_TOL = {F32: 2e-6, F64: 1e-13}
DEFAULT_TOL = {F32: 1e-5, F64: 1e-12}
CUDA_UNARY_TOL = {F32: 1e-5, F64: 1e-12}
CUDA_TOL = {F32: 2e-5, F64: 1e-11}


# --------------------------------------------------------------------------- gradient inputs
# A per-input sampler is ``s(shape, rng) -> float64 array``; ``grad`` combines them.
def anywhere(shape, rng):
    return rng.uniform(-2.0, 2.0, size=shape)


def positive(shape, rng):
    return rng.uniform(0.3, 2.0, size=shape)


def away_from_zero(shape, rng, low=0.3, high=2.0):
    return rng.uniform(low, high, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def normal2(shape, rng):
    return rng.normal(size=shape) * 2


def gaussian(shape, rng):
    return rng.normal(size=shape)


def uniform(low, high):
    def s(shape, rng):
        return rng.uniform(low, high, size=shape)
    return s


def avoiding(low, high, *kinks, gap=0.05, shift=0.2):
    """Uniform in [low, high], nudged off the points where the derivative jumps."""
    def s(shape, rng):
        x = rng.uniform(low, high, size=shape)
        for k in kinks:
            x = np.where(np.abs(x - k) < gap, k + shift, x)
        return x
    return s


def distinct_values(shape, rng):
    """Values with no ties and gaps larger than the finite-difference step."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.15 + rng.uniform(-0.05, 0.05, n)).reshape(shape)


def each(s):
    """The same per-input sampler for every input."""
    def grad(shapes, rng):
        return [s(sh, rng) for sh in shapes]
    return grad


def per_input(*samplers):
    def grad(shapes, rng):
        return [s(sh, rng) for s, sh in zip(samplers, shapes)]
    return grad


def distinct_pair(shapes, rng):
    """maximum/minimum: b kept clear of a (ties are a kink, tested separately)."""
    a = rng.uniform(-2, 2, size=shapes[0])
    b = rng.uniform(-2, 2, size=shapes[1])
    if a.size:
        b = a.mean() + away_from_zero(shapes[1], rng, 0.05, 1.0)
    return [a, b]


distinct = each(distinct_values)


# --------------------------------------------------------------------------- the row
def _out_rule(rule):
    def out(dt):
        if rule == "same":
            return dt
        if rule in ("float", "div"):
            return dt if dt.is_float else F32
        if rule == "bool":
            return B
        if rule == "acc":
            return dt if dt.is_float else I64
        if rule == "int64":
            return I64
        raise ValueError(rule)
    out.rule = rule
    return out


@dataclass(frozen=True)
class OpInfo:
    name: str                                  # row id: the catalogue name, or a variant's
    op: str                                    # the catalogue op
    family: str                                # unary, binary, select, cast, reduce, ...
    fn: Callable                               # front-end callable
    ref: Optional[Callable]                    # NumPy reference on float64 inputs
    out: Callable                              # input dtype -> result dtype
    dtypes: tuple = ()                         # dtypes the forward checks run
    rejects: tuple = ()                        # dtypes that must raise DTypeError
    domain: tuple = ANYWHERE
    nonzero: bool = False
    sample: Optional[Callable] = None          # (shape, dtype, rng) -> [arrays]
    tol: dict = field(default_factory=lambda: dict(DEFAULT_TOL))
    tol_cuda: dict = field(default_factory=lambda: dict(CUDA_TOL))
    grad: Optional[Callable] = None            # (shapes, rng) -> [float64 arrays]
    grad_fn: Optional[Callable] = None
    devices: tuple = CPU_CUDA
    arity: int = 1

    def inputs(self, shape, dtype, rng):
        """Forward sample inputs (NumPy arrays) of ``dtype``, ``arity`` of them."""
        if self.sample is not None:
            return list(self.sample(shape, dtype, rng))
        low, high = self.domain
        if dtype.is_int:
            low = math.ceil(low)
        xs = [_oracle_sample(shape, dtype, rng, low=low, high=high) for _ in range(self.arity)]
        if self.nonzero and not dtype.is_float:
            xs[-1] = np.where(xs[-1] == 0, 1, xs[-1]).astype(xs[-1].dtype)
        return xs

    def reference(self, *arrays, **kw):
        """The NumPy float64 reference (inputs cast to float64 first)."""
        return self.ref(*[np.asarray(a).astype(np.float64) for a in arrays], **kw)

    def tolerance(self, dtype, device="cpu"):
        """rtol (= atol) for a float result of ``dtype`` on ``device``."""
        return (self.tol_cuda if device == "cuda" else self.tol)[dtype]

    @property
    def differentiate(self):
        return self.grad_fn or self.fn

    def __repr__(self):
        return f"OpInfo({self.name})"


def _fn(name, fn):
    return fn if fn is not None else getattr(rt, name)


def unary(name, ref, out="float", domain=ANYWHERE, dtypes=NUMERIC_DTYPES, rejects=None,
          grad=anywhere, tol=UNARY_TOL, op=None, fn=None, **kw):
    """A one-tensor elementwise op; ``grad`` is a per-input sampler (or None)."""
    if rejects is None:
        rejects = (B,) if out == "same" else ()
    kw["tol_cuda"] = dict(kw.get("tol_cuda", CUDA_UNARY_TOL))
    return OpInfo(name, op or name, "unary", _fn(name, fn), ref, _out_rule(out), tuple(dtypes),
                  tuple(rejects), domain=domain, tol=dict(tol),
                  grad=None if grad is None else each(grad), **kw)


def binary(name, ref, out="same", dtypes=ALL_DTYPES, rejects=(), grad=None, fn=None, **kw):
    """A two-operand elementwise op (tensors or Python scalars); ``grad(shapes, rng)``."""
    return OpInfo(name, name, "binary", _fn(name, fn), ref, _out_rule(out), tuple(dtypes),
                  tuple(rejects), grad=grad, arity=2, **kw)


def reduce(name, ref, out, dtypes=ALL_DTYPES, grad=distinct, op=None, fn=None, **kw):
    """A reduction called as ``fn(x, axis=..., keepdims=...)``; ``ref`` likewise."""
    kw.setdefault("tol_cuda", {F32: 1e-5, F64: 1e-12})
    return OpInfo(name, op or name, "reduce", _fn(name, fn), ref, _out_rule(out), tuple(dtypes),
                  domain=UNIT, grad=grad, **kw)


def scan(name, ref, out, dtypes, grad=None, op=None, fn=None, **kw):
    """A scan along one axis called as ``fn(x, dim)``; ``ref(x, axis)`` likewise (float64)."""
    return OpInfo(name, op or name, "scan",
                  fn or (lambda x, dim=-1: getattr(rt, name)(x, dim)),
                  ref, _out_rule(out), tuple(dtypes), grad=grad, **kw)


def _cumarg(better):
    """The index of the running extreme (PyTorch's rule: ties move to the later index, a NaN
    sticks), along ``axis``."""
    def ref(x, axis):
        xm = np.moveaxis(x, axis, -1)
        out = np.zeros(xm.shape, np.int64)
        for r in np.ndindex(xm.shape[:-1]):
            row, best, bi = xm[r], None, 0
            for i, v in enumerate(row):
                if best is None or (best == best and (v != v or better(v, best))):
                    best, bi = v, i
                out[r + (i,)] = bi
        return np.moveaxis(out, -1, axis)
    return ref


# --------------------------------------------------------------------------- references
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _cast_ref(x, dst):
    """``cast`` of the (non-float64) input ``x`` to ``dst``: trunc toward zero, bool is != 0."""
    if dst is B:
        return x != 0
    if x.dtype.kind == "f" and dst.is_int:
        return np.trunc(x).astype(dst.np)
    return x.astype(dst.np)


def _pow_sample(shape, dtype, rng):
    """Positive float bases; int bases with negative values and a zero, exponents >= 0."""
    if dtype.is_float:
        a = _oracle_sample((5,), dtype, rng, low=0.5, high=3)
    else:
        a = np.array([0, 1, 2, -2, 3], dtype.np)
    return [a, np.array([0, 1, 2, 3, 2], dtype.np)]


def _prod_sample(shape, dtype, rng):
    """Products kept in range: floats in [0.5, 1.5], ints in [-1, 2] (2**60 < 2**63)."""
    x = _oracle_sample(shape, dtype, rng, low=-1, high=1)
    if dtype.is_float:
        x = x * 0.5 + 1
    if dtype.is_int:
        x = rng.integers(-1, 3, size=x.shape).astype(dtype.np)
    return [x]


def _where_sample(shape, dtype, rng):
    """A (3, 1) condition, a (3, 4) ``dtype`` branch and a (4,) int64 branch (promoted)."""
    c = rng.random((3, 1)) < 0.5
    return [c, _oracle_sample((3, 4), dtype, rng), _oracle_sample((4,), I64, rng)]


def _specials(shape, dtype, rng):
    """Samples with NaN, +inf and -inf first (floats)."""
    x = _oracle_sample(shape, dtype, rng)
    if dtype.is_float and x.size >= 3:
        x.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    return [x]


def _halves(shape, dtype, rng):
    """Multiples of 0.5 (ties for round) and a few other values."""
    x = _oracle_sample(shape, dtype, rng, low=-4, high=4)
    if dtype.is_float:
        x = (np.round(x * 2) / 2).astype(dtype.np)
        x.reshape(-1)[:2] = [2.675, -0.25]
    return [x]


def _ints(f, *xs):
    """A NumPy integer op on the (float64-cast) integer or bool inputs, in int64 (bool results
    compare as nonzero: 0/1 inputs give 0/1 for and/or/xor)."""
    return f(*[x.astype(np.int64) for x in xs])


def _shift_sample(shape, dtype, rng):
    """Values with negatives, and shift amounts from -2 to 70 (past every width)."""
    a = rng.integers(-50, 50, size=(3, 4)).astype(dtype.np)
    b = rng.integers(-2, 71, size=(3, 4)).astype(dtype.np)
    return [a, b]


def _shl(a, b):
    a, b = a.astype(np.int64), b.astype(np.int64)
    return np.where((b < 0) | (b > 63), 0, np.left_shift(a, np.clip(b, 0, 63)))


def _shr(a, b):
    a, b = a.astype(np.int64), b.astype(np.int64)
    return np.right_shift(a, np.where((b < 0) | (b > 63), 63, b))


def _by_zero_is_zero(f):
    """``f`` (fmod, remainder, floor_divide), and 0 where the divisor is 0: the runtime's integer
    rule (the float samples are never exactly 0)."""
    def ref(a, b):
        a, b = np.broadcast_arrays(a, b)
        return np.where(b == 0, 0.0, f(a, np.where(b == 0, 1.0, b)))
    return ref


def _lerp_ref(a, b, w):
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def shaped(*shapes):
    """A ``sample`` of fixed input shapes, each drawn like ``oracle.sample`` on ANYWHERE."""
    def sample(shape, dtype, rng):
        return [_oracle_sample(sh, dtype, rng) for sh in shapes]
    return sample


def _cross_entropy_sample(shape, dtype, rng):
    """(4, 5) logits and int64 class indices."""
    return [_oracle_sample((4, 5), dtype, rng), rng.integers(0, 5, size=4)]


def _cross_entropy(logits, target):
    logp = logits - _logsumexp(logits, axis=1, keepdims=True)
    return -np.mean(logp[np.arange(len(target)), target.astype(np.int64)])


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193251149657


def _glu(x):
    a, b = np.split(x, 2, axis=-1)
    return a / (1 + np.exp(-b))


# --------------------------------------------------------------------------- the table
_ROWS = [
    # unary: "same" keeps the dtype (bool rejected), "float" maps ints/bools to float32
    unary("neg", np.negative, out="same"),
    unary("abs", np.abs, out="same", grad=away_from_zero),
    unary("sign", np.sign, out="same", grad=None),
    unary("relu", lambda x: np.where(x > 0, x, 0 * x), out="same", grad=away_from_zero),
    unary("floor", np.floor, out="same", grad=None),
    unary("ceil", np.ceil, out="same", grad=None),
    unary("exp", np.exp),
    unary("log", np.log, domain=POSITIVE, grad=positive),
    unary("sqrt", np.sqrt, domain=POSITIVE, grad=positive),
    unary("rsqrt", lambda x: 1 / np.sqrt(x), domain=POSITIVE, grad=positive),
    unary("sin", np.sin),
    unary("cos", np.cos),
    unary("tanh", np.tanh),
    unary("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    unary("erf", _erf),
    unary("reciprocal", lambda x: 1 / x, nonzero=True, grad=away_from_zero),
    unary("gelu", _gelu, dtypes=FLOAT_DTYPES, tol={F32: 2e-6, F64: 1e-12}),
    unary("gelu_tanh", _gelu_tanh, dtypes=FLOAT_DTYPES, tol={F32: 2e-6, F64: 1e-12},
          fn=lambda x: rt.gelu(x, approximate="tanh")),
    unary("logical_not", np.logical_not, out="bool", dtypes=ALL_DTYPES, grad=None),
    unary("log1p", np.log1p, domain=(-0.9, 3.0), dtypes=(F32, F64, I64), grad=uniform(-0.5, 2.0)),
    # PyTorch's softplus: x itself above the threshold 20
    unary("softplus", lambda x: np.where(x > 20, x, np.logaddexp(0, x)), domain=(-30.0, 30.0),
          dtypes=(F32, F64, I64)),
    unary("silu", lambda x: x / (1 + np.exp(-x)), domain=(-30.0, 30.0), dtypes=(F32, F64, I64)),
    unary("mish", lambda x: x * np.tanh(np.logaddexp(0, x)), domain=(-30.0, 30.0),
          dtypes=(F32, F64, I64)),
    unary("isnan", np.isnan, out="bool", dtypes=(F32, I64), sample=_specials, grad=None),
    unary("isinf", np.isinf, out="bool", dtypes=(F32, I64), sample=_specials, grad=None),
    unary("isposinf", np.isposinf, out="bool", dtypes=(F32, I64), sample=_specials, grad=None),
    unary("isneginf", np.isneginf, out="bool", dtypes=(F32, I64), sample=_specials, grad=None),
    unary("isfinite", np.isfinite, out="bool", dtypes=(F32, I64), sample=_specials, grad=None),
    unary("nan_to_num", lambda x: np.nan_to_num(x, nan=0.5, posinf=1e30, neginf=-1e30),
          out="same", dtypes=(F32, F64), sample=_specials,
          fn=lambda x: rt.nan_to_num(x, nan=0.5, posinf=1e30, neginf=-1e30)),
    unary("trunc", np.trunc, out="same", dtypes=(F32, I64), grad=None),
    unary("frac", lambda x: x - np.trunc(x), out="same", dtypes=(F32, F64),
          grad=avoiding(-2.9, 2.9, -2, -1, 0, 1, 2)),
    unary("round", np.round, out="same", dtypes=(F32, F64, I64), sample=_halves, grad=None),
    unary("square", np.square, out="same", dtypes=(F32, I64)),
    unary("bitwise_not", lambda x: _ints(np.invert, x), out="same", dtypes=(I32, I64),
          rejects=(F32,), grad=None),
    unary("clamp", lambda x: np.clip(x, -1, 2), out="same", fn=lambda x: rt.clamp(x, -1, 2),
          grad=avoiding(-3, 3, -1, 2), tol=DEFAULT_TOL, tol_cuda=CUDA_TOL),
    OpInfo("cast", "cast", "cast", rt.cast, _cast_ref, _out_rule("same"), tuple(ALL_DTYPES),
           grad=each(anywhere), grad_fn=lambda x: rt.cast(x, F64)),
    # binary: "same" promotes, "div" is true division, "bool" compares
    binary("add", np.add, grad=each(anywhere)),
    binary("sub", np.subtract, dtypes=NUMERIC_DTYPES, rejects=(B,), grad=each(anywhere)),
    binary("mul", np.multiply, grad=each(anywhere)),
    binary("div", np.true_divide, out="div", nonzero=True,
           grad=per_input(anywhere, away_from_zero)),
    binary("pow", np.power, dtypes=NUMERIC_DTYPES, rejects=(B,), sample=_pow_sample,
           grad=per_input(uniform(0.5, 2.0), anywhere), devices=("cpu",)),
    binary("maximum", np.maximum, grad=distinct_pair),
    binary("minimum", np.minimum, grad=distinct_pair),
    binary("eq", np.equal, out="bool"),
    binary("ne", np.not_equal, out="bool"),
    binary("lt", np.less, out="bool"),
    binary("le", np.less_equal, out="bool"),
    binary("gt", np.greater, out="bool"),
    binary("ge", np.greater_equal, out="bool"),
    binary("logical_and", np.logical_and, out="bool"),
    binary("logical_or", np.logical_or, out="bool"),
    binary("logaddexp", np.logaddexp, out="div", dtypes=(F32, F64, I64), grad=each(anywhere)),
    # bitwise ops: integers (bools as logical ops; shifts by >= 64 or < 0: 0, or the sign)
    binary("bitwise_and", lambda a, b: _ints(np.bitwise_and, a, b), dtypes=(I32, I64, B),
           rejects=(F32,)),
    binary("bitwise_or", lambda a, b: _ints(np.bitwise_or, a, b), dtypes=(I32, I64, B),
           rejects=(F32,)),
    binary("bitwise_xor", lambda a, b: _ints(np.bitwise_xor, a, b), dtypes=(I32, I64, B),
           rejects=(F32,)),
    binary("left_shift", _shl, dtypes=(I32, I64), rejects=(F32, B), sample=_shift_sample),
    binary("right_shift", _shr, dtypes=(I32, I64), rejects=(F32, B), sample=_shift_sample),
    binary("isclose", lambda a, b: np.isclose(a, b, rtol=1e-2, atol=1e-2), out="bool",
           dtypes=(F32, I64), fn=lambda a, b: rt.isclose(a, b, rtol=1e-2, atol=1e-2)),
    # the rest of the elementwise math: float32 plus one of float64/int64 each (a JIT compile per
    # dtype; float64 is the gradient check's, so it adds none); ints -> float32: exp2, log2
    unary("tan", np.tan, domain=(-1.2, 1.2), dtypes=(F32, F64), grad=uniform(-1.2, 1.2)),
    unary("asin", np.arcsin, domain=(-0.95, 0.95), dtypes=(F32, F64), grad=uniform(-0.9, 0.9)),
    unary("acos", np.arccos, domain=(-0.95, 0.95), dtypes=(F32, F64), grad=uniform(-0.9, 0.9)),
    unary("atan", np.arctan, dtypes=(F32, F64)),
    unary("sinh", np.sinh, dtypes=(F32, F64)),
    unary("cosh", np.cosh, dtypes=(F32, F64)),
    unary("asinh", np.arcsinh, dtypes=(F32, F64)),
    unary("acosh", np.arccosh, domain=(1.05, 4.0), dtypes=(F32, F64), grad=uniform(1.2, 3.0)),
    unary("atanh", np.arctanh, domain=(-0.95, 0.95), dtypes=(F32, F64), grad=uniform(-0.8, 0.8)),
    unary("exp2", np.exp2, dtypes=(F32, I64)),
    unary("expm1", np.expm1, dtypes=(F32, F64)),
    unary("log2", np.log2, domain=POSITIVE, dtypes=(F32, I64), grad=positive),
    unary("log10", np.log10, domain=POSITIVE, dtypes=(F32, F64), grad=positive),
    binary("atan2", np.arctan2, out="div", dtypes=(F32, I64), grad=each(away_from_zero)),
    binary("hypot", np.hypot, out="div", dtypes=(F32, F64), grad=each(away_from_zero)),
    binary("copysign", np.copysign, out="div", dtypes=(F32, I64), grad=each(away_from_zero)),
    # fmod: the dividend's sign (C); remainder: the divisor's (Python); all three refuse two
    # bools; by an integer zero (a reversed call's divisor may be one) they give 0
    binary("fmod", _by_zero_is_zero(np.fmod), dtypes=(F32, I64), rejects=(B,), nonzero=True,
           grad=per_input(anywhere, away_from_zero)),
    binary("remainder", _by_zero_is_zero(np.remainder), dtypes=(F32, I64), rejects=(B,),
           nonzero=True, grad=per_input(anywhere, away_from_zero)),
    binary("floor_divide", _by_zero_is_zero(np.floor_divide), dtypes=(F32, I64), rejects=(B,),
           nonzero=True),
    # ternary composites: forward and gradient in tests/test_opinfo_coverage.py
    OpInfo("lerp", "lerp", "ternary", rt.lerp, _lerp_ref, _out_rule("float"), (F32,),
           sample=shaped((2, 3), (2, 3), (3,)), grad=each(anywhere), arity=3, devices=("cpu",)),
    OpInfo("addcmul", "addcmul", "ternary", lambda x, a, b: rt.addcmul(x, a, b, value=0.5),
           lambda x, a, b: x + 0.5 * a * b, _out_rule("same"), (F32,),
           sample=shaped((2, 3), (2, 3), (3,)), grad=each(anywhere), arity=3, devices=("cpu",)),
    OpInfo("addcdiv", "addcdiv", "ternary", lambda x, a, b: rt.addcdiv(x, a, b, value=0.5),
           lambda x, a, b: x + 0.5 * a / b, _out_rule("float"), (F32,),
           sample=lambda shape, dtype, rng: [_oracle_sample((2, 3), dtype, rng),
                                             _oracle_sample((2, 3), dtype, rng),
                                             _oracle_sample((3,), dtype, rng, low=0.5, high=2)],
           grad=per_input(anywhere, anywhere, positive), arity=3, devices=("cpu",)),
    OpInfo("where", "where", "select", rt.where, np.where, _out_rule("same"), (F32,),
           sample=_where_sample, arity=3, devices=("cpu",)),
    # reductions: fn(x, axis=..., keepdims=...)
    reduce("sum", np.sum, out="acc"),
    reduce("prod", np.prod, out="acc", sample=_prod_sample, grad=each(uniform(0.5, 1.5))),
    reduce("mean", np.mean, out="float"),
    reduce("var", np.var, out="float"),
    reduce("max", np.max, out="same"),
    reduce("min", np.min, out="same"),
    reduce("logsumexp", _logsumexp, out="float"),
    reduce("norm", lambda x, axis=None, keepdims=False: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
           out="float", dtypes=(F32, F64, I64)),
    OpInfo("argmax", "argmax", "arg_reduce", rt.argmax, np.argmax, _out_rule("int64"),
           tuple(ALL_DTYPES)),
    OpInfo("argmin", "argmin", "arg_reduce", rt.argmin, np.argmin, _out_rule("int64"),
           tuple(ALL_DTYPES)),
    # softmax family: fn(x, axis); ints are accepted (float32 result) but not swept
    OpInfo("softmax", "softmax", "softmax", rt.softmax, _softmax, _out_rule("float"),
           tuple(FLOAT_DTYPES), domain=(-20.0, 20.0), grad=each(normal2),
           tol_cuda={F32: 1e-5, F64: 1e-5}),
    OpInfo("log_softmax", "log_softmax", "softmax", rt.log_softmax, _log_softmax,
           _out_rule("float"), tuple(FLOAT_DTYPES), domain=(-20.0, 20.0), grad=each(normal2),
           tol_cuda={F32: 1e-5, F64: 1e-5}),
    OpInfo("matmul", "matmul", "linalg", rt.matmul, np.matmul, _out_rule("same"),
           tuple(NUMERIC_DTYPES), rejects=(B,), sample=shaped((3, 4), (4, 2)),
           grad=each(gaussian), arity=2, tol_cuda={F32: 1e-4, F64: 1e-4}),
    # composites (one catalogue op each): forward and gradient in tests/test_opinfo_coverage.py
    OpInfo("linear", "linear", "linear", rt.nn.functional.linear,
           lambda x, w, b: x @ w.T + b, _out_rule("same"), (F32,),
           sample=shaped((2, 3), (4, 3), (4,)), grad=each(gaussian), arity=3, devices=("cpu",)),
    # the target is an integer input: the gradient is tested in tests/autodiff/test_composite.py
    OpInfo("cross_entropy", "cross_entropy", "loss", rt.nn.functional.cross_entropy,
           _cross_entropy, _out_rule("float"), (F32,), sample=_cross_entropy_sample, arity=2,
           devices=("cpu",)),
    # activations (runtime/ops/activation.py): composites, float32 forward, float64 gradients;
    # kinks kept out of the gradient samples (tests/test_activation.py checks them exactly)
    unary("elu", lambda x: np.where(x > 0, x, np.expm1(x)), dtypes=(F32,), devices=("cpu",),
          grad=avoiding(-3, 3, 0.0)),
    unary("celu", lambda x: np.where(x > 0, x, 1.5 * np.expm1(x / 1.5)), dtypes=(F32,),
          fn=lambda x: rt.celu(x, alpha=1.5), devices=("cpu",), grad=avoiding(-3, 3, 0.0)),
    unary("selu", lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x)),
          dtypes=(F32,), devices=("cpu",), grad=avoiding(-3, 3, 0.0)),
    unary("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), dtypes=(F32,),
          fn=lambda x: rt.leaky_relu(x, 0.2), devices=("cpu",), grad=away_from_zero),
    unary("relu6", lambda x: np.clip(x, 0, 6), out="same", domain=(-2.0, 8.0), dtypes=(F32,),
          devices=("cpu",), grad=avoiding(-2, 8, 0.0, 6.0)),
    unary("hardtanh", lambda x: np.clip(x, -2, 2.5), out="same", dtypes=(F32,),
          fn=lambda x: rt.hardtanh(x, -2.0, 2.5), devices=("cpu",), grad=avoiding(-3, 3, -2.0, 2.5)),
    unary("hardsigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1), domain=(-5.0, 5.0), dtypes=(F32,),
          devices=("cpu",), grad=avoiding(-5, 5, -3.0, 3.0)),
    unary("hardswish", lambda x: x * np.clip(x + 3, 0, 6) / 6, domain=(-5.0, 5.0), dtypes=(F32,),
          devices=("cpu",), grad=avoiding(-5, 5, -3.0, 3.0)),
    unary("logsigmoid", lambda x: -np.logaddexp(0, -x), domain=(-30.0, 30.0), dtypes=(F32,),
          devices=("cpu",)),
    unary("softsign", lambda x: x / (1 + np.abs(x)), dtypes=(F32,), devices=("cpu",)),
    unary("quick_gelu", lambda x: x / (1 + np.exp(-1.702 * x)), domain=(-30.0, 30.0),
          dtypes=(F32,), devices=("cpu",)),
    OpInfo("softmin", "softmin", "softmax", rt.softmin, lambda x, axis: _softmax(-x, axis),
           _out_rule("float"), (F32,), domain=(-20.0, 20.0), grad=each(normal2), devices=("cpu",)),
    OpInfo("glu", "glu", "activation", rt.glu, _glu, _out_rule("float"), (F32,),
           sample=shaped((3, 4)), grad=each(gaussian), devices=("cpu",)),
    # scans (runtime/ops/scan.py): fn(x, dim); swept by tests/test_scans.py and
    # tests/cuda/test_scans_cuda.py (a kernel per dtype: float32/float64/int64 only)
    scan("cumsum", np.cumsum, "acc", (F32, F64, I64), grad=each(anywhere)),
    scan("cumprod", np.cumprod, "acc", (F64, I64), grad=each(uniform(0.5, 1.5))),
    scan("logcumsumexp", np.logaddexp.accumulate, "float", (F64,), grad=each(anywhere)),
    scan("cumargmax", _cumarg(lambda v, b: v >= b), "int64", (F64, I64),
         fn=lambda x, dim=-1: rt.cummax(x, dim).indices),
    scan("cumargmin", _cumarg(lambda v, b: v <= b), "int64", (F64, I64),
         fn=lambda x, dim=-1: rt.cummin(x, dim).indices),
    # the fused softmax of scaled_dot_product_attention: causal, scale 0.5; its
    # masks, the composite equality and the cuda kernel in tests/test_attention.py
    OpInfo("attention_softmax", "attention_softmax", "activation",
           lambda x: _attention_softmax(x, None, 0.5, is_causal=True),
           lambda x: _softmax(np.where(np.tri(4, 5, dtype=bool), x * 0.5, -np.inf), -1),
           _out_rule("same"), (F32,), sample=shaped((2, 4, 5)), grad=each(gaussian),
           devices=("cpu",)),
]
OPS: dict[str, OpInfo] = {r.name: r for r in _ROWS}

#: extra rows: an op under other attributes (id differs from the catalogue ``op``)
VARIANTS: dict[str, OpInfo] = {r.name: r for r in [
    unary("clamp_min", lambda x: np.maximum(x, 0), out="same", op="clamp",
          fn=lambda x: rt.clamp(x, min=0), grad=avoiding(-1.5, 1.5, 0.0),
          tol=DEFAULT_TOL, tol_cuda=CUDA_TOL),
    unary("clamp_max", lambda x: np.minimum(x, 0), out="same", op="clamp",
          fn=lambda x: rt.clamp(x, max=0), grad=None, tol=DEFAULT_TOL, tol_cuda=CUDA_TOL),
    unary("bitwise_not_bool", np.logical_not, out="same", op="bitwise_not", dtypes=(B,),
          rejects=(), fn=rt.bitwise_not, grad=None),
    reduce("var_ddof1", lambda x, axis=None, keepdims=False: np.var(x, axis=axis,
                                                                    keepdims=keepdims, ddof=1),
           out="float", dtypes=(), op="var",
           fn=lambda x, axis=None, keepdims=False: rt.var(x, axis=axis, keepdims=keepdims,
                                                          ddof=1)),
]}

#: catalogue ops without a row: why, and where they are tested
NOT_IN_TABLE = {
    "relu_backward": "internal op of relu's gradient; tests/autodiff/test_composite.py",
    "index_backward": "internal op of basic indexing's gradient; tests/autodiff/test_composite.py",
    "cross_entropy_backward": "internal op of cross_entropy's gradient; "
                              "tests/autodiff/test_composite.py",
    "reshape": "shape op, no numeric reference; tests/test_shape.py",
    "permute": "shape op; tests/test_shape.py",
    "expand": "shape op; tests/test_shape.py",
    "cat": "variadic shape op; tests/test_shape.py",
    "index": "indexing with a key; tests/test_shape.py, tests/test_tensor.py",
    "slice_assign": "indexing with a key; tests/test_shape.py",
    "take": "integer-index op; tests/test_shape.py, tests/autodiff/test_grad_shape_index.py",
    "gather": "integer-index op; tests/test_shape.py, tests/autodiff/test_grad_shape_index.py",
    "scatter_add": "integer-index op; tests/test_shape.py, tests/cuda/test_ops_cuda.py",
    "init": "creation from a host array (rt.tensor); tests/test_tensor.py",
    "full": "creation, no input tensor; tests/test_tensor.py",
    "arange": "creation, no input tensor; tests/test_tensor.py",
    "eye": "creation, no input tensor; tests/test_tensor.py",
    "rand": "random creation, no NumPy reference; tests/test_tensor.py, tests/cuda",
    "randn": "random creation, no NumPy reference; tests/test_tensor.py, tests/cuda",
    "unfold": "tested in tests/test_conv.py",
    "fold": "tested in tests/test_conv.py",
    "conv2d": "tested in tests/test_conv.py",
    "conv_transpose2d": "tested in tests/test_conv.py",
    "conv2d_weight_grad": "internal op of conv2d's gradient; tests/test_conv.py",
    "max_pool2d": "windowed op with attrs; tested in tests/test_pooling.py",
    "max_pool2d_indices": "return_indices of max_pool2d; tested in tests/test_pooling.py",
    "adaptive_max_pool2d": "windowed op with attrs; tested in tests/test_pooling.py",
    "max_pool2d_backward": "internal op of the max pooling gradients; tested in tests/test_pooling.py",
    "max_pool2d_relu": "made by graph.compile only (from max_pool2d of relu); tested in "
                       "tests/compile/test_patterns.py",
    "winograd_weight": "made by graph.compile only (a constant conv weight's transform); "
                       "tested in tests/compile/test_winograd.py",
    "conv2d_winograd": "made by graph.compile only (from a constant-weight 3x3 conv2d); tested "
                       "in tests/compile/test_winograd.py",
    "avg_pool2d": "windowed op with attrs; tested in tests/test_pooling.py",
    "adaptive_avg_pool2d": "windowed op with attrs; tested in tests/test_pooling.py",
    "avg_pool2d_backward": "internal op of the average pooling gradients; tested in "
                           "tests/test_pooling.py",
    "interpolate": "resampling op with attrs; tested in tests/test_pooling.py",
    "interpolate_backward": "internal op of interpolate's gradient; tested in tests/test_pooling.py",
    "max_unpool2d": "windowed op with an index operand; tested in tests/test_max_unpool.py",
    "argsort": "index-returning sort (sort/argsort/randperm); tests/test_sort.py",
    "topk": "index-returning selection (topk/kthvalue/median/multinomial); tests/test_sort.py",
    "scatter_reduce": "integer-index op (prod/amax/amin); tests/test_shape_ops.py, "
                      "tests/cuda/test_shape_ops_cuda.py",
    "pad": "non-constant pad modes (attrs: pads, mode); tests/test_shape_ops.py, "
           "tests/test_index_assign.py, tests/cuda/test_index_assign_cuda.py",
    "pad_backward": "internal op of pad's gradient; tests/test_index_assign.py",
    "put": "flat-position write of advanced-index assignment (slice_assign, index_put, put); "
           "tests/test_index_assign.py, tests/cuda/test_index_assign_cuda.py",
    "attention_softmax_backward": "internal op of attention_softmax's gradient; "
                                  "tests/test_attention.py",
    "lstm_layer": "an LSTM layer's recurrence (rt.nn.LSTM on autodiff); "
                  "tests/nn/test_recurrent.py",
    "lstm_layer_backward": "internal op of lstm_layer's gradient; tests/nn/test_recurrent.py",
    "gru_layer": "a GRU layer's recurrence (rt.nn.GRU on autodiff); tests/nn/test_recurrent.py",
    "gru_layer_backward": "internal op of gru_layer's gradient; tests/nn/test_recurrent.py",
    "rnn_layer": "an Elman RNN layer's recurrence (rt.nn.RNN on autodiff); "
                 "tests/nn/test_recurrent.py",
    "rnn_layer_backward": "internal op of rnn_layer's gradient; tests/nn/test_recurrent.py",
}
# rt.linalg's records (matrix inputs, several packed results, sign conventions of factors):
# forward, gradients, errors and capture in tests/test_linalg.py
NOT_IN_TABLE.update({name: "rt.linalg record; tests/test_linalg.py" for name in (
    "linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_cholesky", "linalg_qr",
    "linalg_eigh", "linalg_svd")})


def all_rows():
    return list(OPS.values()) + list(VARIANTS.values())


def rows(*families, device=None, grad=None, dtype=None, variants=True, exclude=()):
    """Rows of these families (all if none), optionally only those that run on ``device``,
    have (``grad=True``) or lack a gradient check, or support ``dtype``."""
    out = []
    for r in (all_rows() if variants else list(OPS.values())):
        if families and r.family not in families:
            continue
        if device is not None and device not in r.devices:
            continue
        if grad is not None and (r.grad is not None) != grad:
            continue
        if dtype is not None and dtype not in r.dtypes:
            continue
        if r.name in exclude:
            continue
        out.append(r)
    return out


def names(*families, **kw):
    return [r.name for r in rows(*families, **kw)]


def cases(rs, dtypes=None):
    """pytest params (row, dtype) over each row's dtypes (or those of them in ``dtypes``)."""
    import pytest
    return [pytest.param(r, dt, id=f"{r.name}-{dt.name}") for r in rs for dt in r.dtypes
            if dtypes is None or dt in dtypes]


def ids(r):
    return getattr(r, "name", None)
