"""The five dtypes and the promotion rules of SPEC §2."""
from __future__ import annotations

import numpy as np

__all__ = ["DType", "float32", "float64", "int32", "int64", "bool_", "DTYPES",
           "as_dtype", "from_numpy_dtype", "promote", "result_type", "scalar_dtype", "fits",
           "check_scalar"]


class DType:
    """A tensor element type: a name, a NumPy dtype and a promotion category."""

    __slots__ = ("name", "np", "category", "itemsize", "is_float", "is_int", "is_bool")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool < 1 int < 2 float
        self.itemsize = self.np.itemsize
        # plain attributes, not properties: read on every op's hot path
        self.is_float = category == 2
        self.is_int = category == 1
        self.is_bool = category == 0

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

    # identity hash (the five DTypes are singletons), kept at C speed: dtypes are in the keys
    # of the dispatch caches looked up on every op
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"rt.{self.name}"

    __str__ = lambda self: self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float32 = DType("float32", np.float32, 2)
float64 = DType("float64", np.float64, 2)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 1)
bool_ = DType("bool", np.bool_, 0)

DTYPES = (float32, float64, int32, int64, bool_)
_BY_NAME = {d.name: d for d in DTYPES}
_BY_NP = {d.np: d for d in DTYPES}
_DEFAULT = {0: bool_, 1: int64, 2: float32}


def as_dtype(d) -> DType:
    """Normalise a DType, its name, a NumPy dtype or a Python type to a DType."""
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
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError, ValueError, SyntaxError):  # (NumPy parses "f4," as Python)
        from .errors import DTypeError
        raise DTypeError(f"unsupported dtype {d!r:.60}; expected one of "
                         f"{', '.join(x.name for x in DTYPES)}") from None


def from_numpy_dtype(npd, op: str = "tensor") -> DType:
    """The DType of a NumPy dtype; raises DTypeError for dtypes the runtime lacks."""
    try:
        return _BY_NP[np.dtype(npd)]
    except KeyError:
        from .errors import DTypeError
        raise DTypeError(f"{op}: unsupported NumPy dtype {np.dtype(npd)}; expected one of "
                         f"{', '.join(x.name for x in DTYPES)}") from None


def promote(a: DType, b: DType) -> DType:
    """Promotion of two tensor dtypes: higher category wins, then the wider type."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    return a if a.itemsize >= b.itemsize else b


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


_INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


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
    """DTypeError when Python int ``value`` does not fit ``dt`` (nothing silently wraps, SPEC
    §2; NumPy 2 raises OverflowError for the same operands)."""
    if not fits(value, dt):
        from .errors import DTypeError
        raise DTypeError(f"{op}: Python integer {value} is out of bounds for {dt.name}")


def result_type(a, b, op: str | None = None) -> DType:
    """Promotion of a tensor-or-scalar pair (anything with ``.dtype`` is a tensor); a Python
    int that does not fit the result raises DTypeError naming ``op``."""
    da = getattr(a, "dtype", None)
    db = getattr(b, "dtype", None)
    if da is not None and db is not None:
        return promote(da, db)
    if da is None and db is None:
        out = promote(scalar_dtype(a), scalar_dtype(b))
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
