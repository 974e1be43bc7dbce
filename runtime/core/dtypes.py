"""The dtypes and the promotion rules (PyTorch's ``torch.result_type``).

Twelve dtypes: float32, float64, int32, int64, bool, the small ones, float16, bfloat16, int8,
uint8, int16, and the wide unsigned ones, uint32 and uint64.  Every DType has a *storage* NumPy dtype ``.np`` (what
the kernel sets see: float16 and bfloat16 are stored as their ``uint16`` bits, because Numba's
CPU target has no float16 type and NumPy no bfloat16) and a *compute* DType ``.compute`` (the
dtype the kernels run in: float32 for the half types, int32 for the small ints; itself for the
five native ones; int64 for uint32 and uint64).  ``.emulated`` is ``compute is not self``: the
dispatch layer (``runtime.lowprec``) upcasts such operands, runs the op in the compute dtype and
casts the result back.  uint64 in int64 is exact only for the ops that are exact modulo 2**64
(``+ - *``, bitwise ops, equality, moves); ``runtime.lowprec`` orders uint64 values by flipping
their top bit and refuses the ops it cannot compute exactly.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DType", "float32", "float64", "int32", "int64", "bool_", "float16", "bfloat16",
           "int8", "uint8", "int16", "uint32", "uint64", "DTYPES",
           "as_dtype", "from_numpy_dtype", "promote", "result_type", "scalar_dtype", "fits",
           "check_scalar"]


class DType:
    """A tensor element type: a name, a NumPy dtype and a promotion category."""

    __slots__ = ("name", "np", "category", "itemsize", "is_float", "is_int", "is_bool",
                 "compute", "emulated", "host", "signed", "is_half")

    def __init__(self, name: str, np_dtype, category: int, host="storage"):
        self.name = name
        self.np = np.dtype(np_dtype)   # the storage dtype (the kernel sets' view)
        # NumPy's dtype of the values: the storage dtype unless given; None where NumPy has
        # none (bfloat16 without ml_dtypes: its uint16 storage must not claim NumPy's uint16)
        self.host = self.np if isinstance(host, str) else host
        self.category = category  # 0 bool < 1 int < 2 float
        self.itemsize = self.np.itemsize
        # plain attributes, not properties: read on every op's hot path
        self.is_float = category == 2
        self.is_int = category == 1
        self.is_bool = category == 0
        self.signed = self.np.kind != "u"
        self.is_half = name in ("float16", "bfloat16")
        self.compute = self
        self.emulated = False

    def __eq__(self, other) -> bool:
        """Equal to itself, its name and its NumPy dtype (``t.dtype == np.float32`` and
        ``t.dtype == "float32"`` hold, as both are accepted wherever a dtype is)."""
        if other is self:
            return True
        if isinstance(other, DType):
            return False
        try:
            return as_dtype(other) is self
        except Exception:
            return False

    # identity hash (the DTypes are singletons), kept at C speed: dtypes are in the keys
    # of the dispatch caches looked up on every op
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"rt.{self.name}"

    __str__ = lambda self: self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


_BF16_HOST: list = []      # [ml_dtypes' bfloat16 NumPy dtype, or None], once resolved


def bfloat16_host():
    """ml_dtypes' bfloat16 NumPy dtype when that package is importable (not a dependency),
    else None; imported on the first bfloat16 ``numpy()``, not at ``import runtime`` (the
    import is slow)."""
    if not _BF16_HOST:
        try:
            import ml_dtypes
            _BF16_HOST.append(np.dtype(ml_dtypes.bfloat16))
        except ImportError:
            _BF16_HOST.append(None)
    return _BF16_HOST[0]


float32 = DType("float32", np.float32, 2)
float64 = DType("float64", np.float64, 2)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 1)
bool_ = DType("bool", np.bool_, 0)
float16 = DType("float16", np.uint16, 2, host=np.dtype(np.float16))
bfloat16 = DType("bfloat16", np.uint16, 2, host=None)   # NumPy has none: see bfloat16_host
int8 = DType("int8", np.int8, 1)
uint8 = DType("uint8", np.uint8, 1)
int16 = DType("int16", np.int16, 1)
uint32 = DType("uint32", np.uint32, 1)
uint64 = DType("uint64", np.uint64, 1)
for _d, _c in ((float16, float32), (bfloat16, float32), (int8, int32), (uint8, int32),
               (int16, int32), (uint32, int64), (uint64, int64)):
    _d.compute = _c
    _d.emulated = True
del _d, _c

DTYPES = (float32, float64, int32, int64, bool_, float16, bfloat16, int8, uint8, int16, uint32,
          uint64)
#: the dtypes computed in a wider one, in the order above
SMALL_DTYPES = (float16, bfloat16, int8, uint8, int16, uint32)
#: the unsigned ints wider than 8 bits (PyTorch's "limited support" ones)
WIDE_UNSIGNED = (uint32, uint64)
_BY_NAME = {d.name: d for d in DTYPES}
# NumPy dtype -> DType, by the dtype of the *values* (np.uint16, the half types' storage, is
# not a runtime dtype)
_BY_NP = {d.host: d for d in DTYPES if d.host is not None}
_DEFAULT = {0: bool_, 1: int64, 2: float32}


def _by_np(npd):
    """The DType of NumPy dtype ``npd`` (KeyError if none); ml_dtypes' bfloat16 by its name, so
    that package is never imported here."""
    if npd.name == "bfloat16" and npd.kind == "V":
        return bfloat16
    return _BY_NP[npd]


def as_dtype(d, op: str | None = None) -> DType:
    """Normalise a DType, its name, a NumPy dtype or a Python type to a DType; DTypeError
    (its message starting with ``op``, the front end's name, when given) for anything else."""
    if isinstance(d, DType):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    if d is float:
        return float32
    if d is int:
        return int64
    if d is bool:
        return bool_
    try:
        return _by_np(np.dtype(d))
    except (TypeError, KeyError, ValueError, SyntaxError):  # (NumPy parses "f4," as Python)
        from .errors import DTypeError
        raise DTypeError(f"{op + ': ' if op else ''}unsupported dtype {d!r:.60}; expected one of "
                         f"{', '.join(x.name for x in DTYPES)}") from None


def from_numpy_dtype(npd, op: str = "tensor") -> DType:
    """The DType of a NumPy dtype; raises DTypeError for dtypes the runtime lacks."""
    try:
        return _by_np(np.dtype(npd))
    except KeyError:
        from .errors import DTypeError
        raise DTypeError(f"{op}: unsupported NumPy dtype {np.dtype(npd)}; expected one of "
                         f"{', '.join(x.name for x in DTYPES)}") from None


def promote(a: DType, b: DType, op: str | None = None) -> DType:
    """Promotion of two tensor dtypes (``torch.result_type``): higher category wins, then the
    wider type; float16 with bfloat16 gives float32; an unsigned with a signed int the smallest
    signed int holding both ranges (uint8 with int8 int16, uint32 with int32 int64).  PyTorch
    refuses uint32/uint64 with any other int or bool; the runtime follows NumPy there, except
    that uint64 with a signed int raises DTypeError (naming ``op``): no integer dtype holds both,
    and NumPy's float64 would round."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == 1 and a.signed != b.signed:
        u, s = (b, a) if a.signed else (a, b)
        if s.itemsize > u.itemsize:
            return s
        wider = _SIGNED_WIDER.get(u.itemsize)
        if wider is None:
            from .errors import DTypeError
            raise DTypeError(f"{op or 'promotion'}: no integer dtype holds both {a.name} and "
                             f"{b.name} (PyTorch refuses the pair, NumPy rounds to float64); "
                             f"cast one operand first")
        return wider
    if a.itemsize == b.itemsize:
        if a.is_half:       # float16 and bfloat16: neither holds the other
            return float32
        return a
    return a if a.itemsize > b.itemsize else b


#: an unsigned int's itemsize -> the smallest signed int holding its range
_SIGNED_WIDER = {1: int16, 4: int64}


def scalar_dtype(x) -> DType:
    """The category default for a Python/NumPy scalar (weak: used only across categories)."""
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (int, np.integer)):
        return int64
    if isinstance(x, (float, np.floating)):
        return float32
    from .errors import DTypeError
    raise DTypeError(f"unsupported scalar {x!r} of type {type(x).__name__}")


_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
              "int8": (-128, 127), "uint8": (0, 255), "int16": (-(1 << 15), (1 << 15) - 1),
              "uint32": (0, (1 << 32) - 1), "uint64": (0, (1 << 64) - 1)}


def fits(value, dt: DType) -> bool:
    """Whether Python scalar ``value`` converts to ``dt`` without wrapping or overflowing
    (an int within the integer dtype's range; for a float, an int Python can convert)."""
    if type(value) is bool or not isinstance(value, int):
        return True
    lim = _INT_RANGE.get(dt.name)
    if lim is not None:
        return lim[0] <= value <= lim[1]
    if dt.is_float:
        return abs(value) < (1 << 1024)
    return True


def check_scalar(op: str, value, dt: DType) -> None:
    """DTypeError when Python int ``value`` does not fit ``dt`` (nothing silently wraps;
    NumPy 2 raises OverflowError for the same operands)."""
    if not fits(value, dt):
        from .errors import DTypeError
        raise DTypeError(f"{op}: Python integer {value} is out of bounds for {dt.name}")


def result_type(a, b, op: str | None = None) -> DType:
    """Promotion of a tensor-or-scalar pair (anything with ``.dtype`` is a tensor); a Python
    int that does not fit the result raises DTypeError naming ``op``."""
    da = getattr(a, "dtype", None)
    db = getattr(b, "dtype", None)
    if da is not None and db is not None:
        return promote(da, db, op)
    if da is None and db is None:
        out = promote(scalar_dtype(a), scalar_dtype(b), op)
        check_scalar(op or "promotion", a, out)
        check_scalar(op or "promotion", b, out)
        return out
    t, s = (da, b) if da is not None else (db, a)
    sd = scalar_dtype(s)
    # Weak scalars never widen within a category; a higher category gives its default.
    out = t if sd.category <= t.category else _DEFAULT[sd.category]
    if type(s) is int and not fits(s, out):
        check_scalar(op or "promotion", s, out)
    return out


# ------------------------------------------------------------------ host values <-> storage
def bf16_bits(f32) -> np.ndarray:
    """bfloat16 bits (uint16) of float32 values: round to nearest even, NaN kept (quiet)."""
    u = np.ascontiguousarray(f32, dtype=np.float32).view(np.uint32)
    r = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16))
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    r = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), r)
    return r.astype(np.uint16)


def storage_of(values: np.ndarray, dt: DType) -> np.ndarray:
    """The storage array of ``dt`` for host ``values`` (any NumPy array): cast semantics of
    NumPy's ``astype``, except that float16 rounds once from the values (NumPy's) and bfloat16
    rounds through float32 (PyTorch's)."""
    if dt is float16:
        with np.errstate(over="ignore"):      # out of range: inf, as a cast does
            return np.asarray(values).astype(np.float16).view(np.uint16)
    if dt is bfloat16:
        if values.dtype.name == "bfloat16" and values.dtype.kind == "V":   # ml_dtypes' bfloat16
            return values.view(np.uint16)
        return bf16_bits(np.asarray(values).astype(np.float32)).reshape(np.shape(values))
    return np.asarray(values).astype(dt.np)


def host_of(storage: np.ndarray, dt: DType, op: str = "numpy") -> np.ndarray:
    """The NumPy array of the values of a storage array of ``dt`` (a view for the half types):
    DTypeError for bfloat16 without ``ml_dtypes`` (NumPy has no bfloat16)."""
    if not dt.is_half:
        return storage
    host = dt.host if dt is not bfloat16 else bfloat16_host()
    if host is None:
        from .errors import DTypeError
        raise DTypeError(f"{op}: NumPy has no bfloat16 dtype; call .float() first (or install "
                         f"ml_dtypes, whose bfloat16 arrays the runtime then returns)")
    return storage.view(host)


def float_values(storage: np.ndarray, dt: DType) -> np.ndarray:
    """The values of a storage array as a NumPy array of a dtype NumPy computes with (float32
    for the half types; the storage itself otherwise): for ``tolist``/``item``/``repr``."""
    if dt is float16:
        return storage.view(np.float16).astype(np.float32)
    if dt is bfloat16:
        return (storage.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return storage


class _BF16Info:
    """``np.finfo``'s fields for bfloat16 (NumPy has no bfloat16 dtype)."""
    bits = 16
    eps = 2.0 ** -7
    max = 3.3895313892515355e38
    min = -max
    tiny = smallest_normal = 2.0 ** -126
    resolution = 0.01


def finfo(dt: DType):
    """``np.finfo`` of a float dtype's values (float16 and bfloat16 included)."""
    if dt is bfloat16:
        return _BF16Info
    return np.finfo(dt.host)
