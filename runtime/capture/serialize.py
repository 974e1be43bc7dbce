"""``graph.save(path)`` / ``rt.load_graph(path)``: one deterministic file per graph.

Layout: the magic line ``b"RTGRAPH1\\n"``, the header length (8 bytes, little endian), a JSON
header (sorted keys, no whitespace), then the raw little-endian bytes of every value in
canonical id order, then (format version >= 2) the SHA-256 of everything before it.

Format versions: 3 (written now) stores each op's ``operands`` in call order, a tensor as
``[id, shape, dtype]`` and a scalar literal as ``{"literal": value}`` (tagged JSON for
non-finite floats); 2 (SHA-256 trailer) and 1 (no trailer) stored the tensor operands as
``inputs`` and the scalars as the attr ``scalars`` (``((position, value), ...)``), converted
into operands on load.

A file is untrusted input: ``load_graph`` checks the magic, the lengths, the checksum, the
header's structure, every value's byte length against its declared shape and dtype, and then the
whole graph against the catalogue's shape/dtype rules (``check.check_graph``), and raises
``GraphFileError`` (``.kind == "BadGraphFile"``) or ``CaptureError`` (``"InvalidGraph"``)
instead of returning a graph that could make a kernel read or write out of bounds.  Ids are
renumbered 1, 2, ... in order of first appearance (declared inputs first, then each op's
outputs), so the same computation captured twice saves the same bytes.  Attr values keep their
exact Python types (tuple vs list, int vs float vs bool, slices) through tagged JSON.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct

import numpy as np

from ..core import dtypes as D
from ..core.errors import ArgumentTypeError, GraphFileError
from .check import check_graph
from .ir import LITERAL_TYPES, CapturedGraph, OperationIr, TensorIr

__all__ = ["save_graph", "load_graph", "canonicalize", "MAGIC"]

MAGIC = b"RTGRAPH1\n"
FORMAT_VERSION = 3  # 3: literal operands in place; 2: a SHA-256 trailer; 1: none (both load)
_VERSIONS = (1, 2, 3)
_LEGACY_SCALARS = "scalars"   # the attr of versions 1 and 2 that held the scalar operands
_DIGEST = 32


# ---- canonical ids ---------------------------------------------------------------------
def canonicalize(graph: CapturedGraph) -> CapturedGraph:
    """``graph`` with ids renumbered 1, 2, ... by first appearance."""
    mapping: dict = {}

    def m(tid):
        n = mapping.get(tid)
        if n is None:
            n = mapping[tid] = len(mapping) + 1
        return n

    for tid in graph.inputs:
        m(tid)
    for op in graph.operations:
        for t in op.inputs:
            m(t.id)
        for t in op.outputs:
            m(t.id)
    for tid in graph.outputs:
        m(tid)

    def tir(t):
        return TensorIr(mapping[t.id], t.shape, t.dtype)

    ops = [op.with_tensors(tir) for op in graph.operations]
    tensors = {mapping[k]: tir(v) for k, v in graph._tensors.items() if k in mapping}
    values = {mapping[k]: v for k, v in sorted(graph.values.items(), key=lambda kv: mapping[kv[0]])
              if k in mapping}
    return CapturedGraph(ops, [mapping[t] for t in graph.inputs],
                         [mapping[t] for t in graph.outputs], values, tensors)


# ---- attrs as tagged JSON ------------------------------------------------------------------
def _enc(v):
    if v is None or type(v) in (bool, int, str):
        return v
    if type(v) is float:
        if v != v or v in (float("inf"), float("-inf")):
            return {"float": repr(v)}
        return v
    if isinstance(v, tuple):
        return {"tuple": [_enc(x) for x in v]}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, slice):
        return {"slice": [_enc(v.start), _enc(v.stop), _enc(v.step)]}
    if isinstance(v, dict):
        return {"dict": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if isinstance(v, D.DType):
        return {"dtype": v.name}
    if isinstance(v, np.ndarray):
        a = np.require(v, requirements="C")
        return {"array": [a.dtype.name, list(a.shape), a.astype(a.dtype.newbyteorder("<")).tobytes().hex()]}
    for base in (bool, int, float, str):  # subclasses (IntEnum, ...) as their base type
        if isinstance(v, base):
            return _enc(base(v))
    raise ArgumentTypeError(f"graph.save: cannot serialise attribute value {v!r} of type {type(v).__name__}")


def _dec(v):
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, body), = v.items()
    if tag == "tuple":
        return tuple(_dec(x) for x in body)
    if tag == "slice":
        return slice(*(_dec(x) for x in body))
    if tag == "dict":
        return {_dec(k): _dec(x) for k, x in body}
    if tag == "float":
        return float(body)
    if tag == "dtype":
        return D.as_dtype(body)
    if tag == "array":
        name, shape, hexbytes = body
        dt = np.dtype(name)
        if dt.kind not in "biuf" or not isinstance(shape, list) \
                or not all(type(d) is int and d >= 0 for d in shape):
            raise ValueError(f"bad array attribute ({name}, {shape!r})")
        return np.frombuffer(bytes.fromhex(hexbytes), dtype=dt.newbyteorder("<")
                             ).astype(dt).reshape(shape)
    raise ValueError(f"load_graph: unknown attribute tag {tag!r}")


def _tir(t: TensorIr) -> list:
    return [t.id, list(t.shape), t.dtype.name]


def _operand(a) -> list | dict:
    if type(a) is TensorIr:
        return _tir(a)
    if type(a) not in LITERAL_TYPES:
        raise ArgumentTypeError(f"graph.save: operand {a!r} is neither a tensor nor a bool, int or "
                        f"float literal")
    return {"literal": _enc(a)}


def _unoperand(x):
    if isinstance(x, dict):
        if len(x) != 1 or "literal" not in x:
            raise ValueError(f"bad operand entry {x!r:.80}")
        v = _dec(x["literal"])
        if type(v) not in LITERAL_TYPES:
            raise ValueError(f"literal operand {v!r:.60} is not a bool, int or float")
        return v
    return _untir(x)


def _legacy_operands(inputs, scalars) -> tuple:
    """Versions 1 and 2: tensor ``inputs`` plus ``scalars`` ((position, value), ...) as one
    call-order operand tuple."""
    if not isinstance(scalars, tuple):
        raise ValueError(f"bad scalars attribute {scalars!r:.80}")
    n = len(inputs) + len(scalars)
    placed: dict = {}
    for pair in scalars:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(f"bad scalars entry {pair!r:.80}")
        pos, value = pair
        if type(pos) is not int or not 0 <= pos < n or pos in placed:
            raise ValueError(f"bad scalar operand position {pos!r:.40} (of {n} operands)")
        if type(value) not in LITERAL_TYPES:
            raise ValueError(f"literal operand {value!r:.60} is not a bool, int or float")
        placed[pos] = value
    rest = iter(inputs)
    return tuple(placed[k] if k in placed else next(rest) for k in range(n))


def _int(x) -> int:
    if type(x) is not int:
        raise ValueError(f"{x!r} is not an integer")
    return x


def _untir(x) -> TensorIr:
    if not isinstance(x, list) or len(x) != 3 or not isinstance(x[1], list):
        raise ValueError(f"bad tensor entry {x!r:.80}")
    return TensorIr(_int(x[0]), tuple(_int(d) for d in x[1]), D.as_dtype(x[2]))


# ---- save / load ---------------------------------------------------------------------------
def _path(op: str, path) -> str:
    """``path`` as a file name, or ArgumentTypeError naming the op."""
    try:
        return os.fspath(path)
    except TypeError:
        raise ArgumentTypeError(f"{op}: path must be a str, bytes or os.PathLike, got "
                                f"{type(path).__name__}") from None


def save_graph(graph: CapturedGraph, path) -> None:
    """Write ``graph`` to ``path`` (canonical ids; byte-identical for identical computations)."""
    path = _path("graph.save", path)
    g = canonicalize(graph)
    blobs = []
    values = []
    offset = 0
    for tid in sorted(g.values):
        a = np.require(g.values[tid], requirements="C")
        dt = g.tensor(tid).dtype        # (the half types' values are their uint16 bits)
        if a.dtype != dt.np:
            dt = D.from_numpy_dtype(a.dtype, "graph.save")
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        values.append({"id": tid, "shape": list(a.shape), "dtype": dt.name,
                       "offset": offset, "nbytes": len(raw)})
        blobs.append(raw)
        offset += len(raw)
    header = {
        "format": "runtime.capture.graph", "version": FORMAT_VERSION,
        "inputs": g.inputs, "outputs": g.outputs,
        "tensors": [_tir(g._tensors[k]) for k in sorted(g._tensors)],
        "operations": [{"op": op.op, "operands": [_operand(a) for a in op.args],
                        "outputs": [_tir(t) for t in op.outputs],
                        "attrs": {k: _enc(v) for k, v in op.attrs.items()}}
                       for op in g.operations],
        "values": values,
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    digest = hashlib.sha256()
    with open(os.fspath(path), "wb") as f:
        for part in (MAGIC, struct.pack("<Q", len(text)), text, *blobs):
            digest.update(part)
            f.write(part)
        f.write(digest.digest())


def load_graph(path) -> CapturedGraph:
    """Read a graph written by ``graph.save`` (exact round trip of ops, attrs, boundaries,
    values and dtypes, with canonical ids).  The file is validated whole first: a file that is
    not a saved graph, or is damaged, raises ``GraphFileError``; one whose ops disagree with
    its declared shapes, ``CaptureError`` with ``.kind == "InvalidGraph"``."""
    name = _path("load_graph", path)
    with open(name, "rb") as f:
        data = f.read()

    def bad(msg):
        return GraphFileError(f"load_graph: {name!r} {msg}")

    if not data.startswith(MAGIC):
        raise bad("is not a saved capture graph (bad magic bytes)")
    pos = len(MAGIC)
    if len(data) < pos + 8:
        raise bad("is truncated (no header length)")
    (n,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    if n > len(data) - pos:
        raise bad(f"is truncated (a {n}-byte header, {len(data) - pos} bytes left)")
    try:
        header = json.loads(data[pos:pos + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(f"has a damaged header ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise bad("has a damaged header (not an object)")
    version = header.get("version")
    if type(version) is not int or version not in _VERSIONS:
        raise bad(f"has an unsupported graph format version {version!r}")
    end = len(data)
    if version >= 2:
        end -= _DIGEST
        if end < pos + n or hashlib.sha256(data[:end]).digest() != data[end:]:
            raise bad("is damaged (its SHA-256 checksum does not match)")
    body = memoryview(data)[pos + n:end]
    try:
        graph = _decode(header, body, version)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError,
            RecursionError) as exc:
        raise bad(f"has a malformed header ({type(exc).__name__}: {exc})"[:300]) from None
    check_graph(graph)
    graph._checked = True
    return graph


def _decode(header: dict, body, version: int = FORMAT_VERSION) -> CapturedGraph:
    values = {}
    stored = {}                 # id -> the dtype its value is stored as
    for v in header["values"]:
        tid, offset, nbytes = _int(v["id"]), _int(v["offset"]), _int(v["nbytes"])
        dt = stored[tid] = D.as_dtype(v["dtype"])
        shape = tuple(_int(d) for d in v["shape"])
        if tid in values:
            raise ValueError(f"value {tid} is stored twice")
        count = 1
        for d in shape:
            if d < 0:
                raise ValueError(f"value {tid} has shape {shape}")
            count *= d
        if nbytes != count * dt.np.itemsize or offset < 0 or offset + nbytes > len(body):
            raise ValueError(f"value {tid} ({dt.name}{list(shape)}) is stored as {nbytes} bytes "
                             f"at offset {offset} of a {len(body)}-byte payload")
        raw = body[offset:offset + nbytes]
        values[tid] = np.frombuffer(raw, dtype=dt.np.newbyteorder("<")).astype(dt.np).reshape(shape)
    ops = []
    for o in header["operations"]:
        if not isinstance(o, dict) or not isinstance(o["op"], str) \
                or not isinstance(o["attrs"], dict):
            raise ValueError(f"bad operation entry {o!r:.80}")
        attrs = {k: _dec(x) for k, x in o["attrs"].items()}
        if version >= 3:
            entries = o["operands"]
            if not isinstance(entries, list):
                raise ValueError(f"bad operands list {entries!r:.80}")
            operands = tuple(_unoperand(a) for a in entries)
        else:
            entries = o["inputs"]
            if not isinstance(entries, list):
                raise ValueError(f"bad inputs list {entries!r:.80}")
            inputs = tuple(_untir(t) for t in entries)
            operands = _legacy_operands(inputs, attrs.pop(_LEGACY_SCALARS, ()))
        outputs = o["outputs"]
        if not isinstance(outputs, list):
            raise ValueError(f"bad outputs list {outputs!r:.80}")
        ops.append(OperationIr(o["op"], operands, tuple(_untir(t) for t in outputs), attrs))
    tensors = {t.id: t for t in (_untir(x) for x in header["tensors"])}
    for tid, dt in stored.items():
        # float16 and bfloat16 values share their storage (uint16 bits): the names must agree
        t = tensors.get(tid)
        if t is not None and t.dtype is not dt and (dt.is_half or t.dtype.is_half):
            raise ValueError(f"value {tid} is stored as {dt.name} for a {t.dtype.name} tensor")
    inputs = [_int(i) for i in header["inputs"]]
    outputs = [_int(i) for i in header["outputs"]]
    return CapturedGraph(ops, inputs, outputs, values, tensors)
