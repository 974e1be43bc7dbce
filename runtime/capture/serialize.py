"""``graph.save(path)`` / ``rt.load_graph(path)``: one deterministic file per graph.

Layout: the magic line ``b"RTGRAPH1\\n"``, the header length (8 bytes, little endian), a JSON
header (sorted keys, no whitespace), then the raw little-endian bytes of every value in
canonical id order.  Ids are renumbered 1, 2, ... in order of first appearance (declared
inputs first, then each op's outputs), so the same computation captured twice saves the
same bytes.  Attr values keep their exact Python types (tuple vs list, int vs float vs bool,
slices) through tagged JSON.
"""
from __future__ import annotations

import json
import os
import struct

import numpy as np

from .. import dtypes as D
from .ir import CapturedGraph, OperationIr, TensorIr

__all__ = ["save_graph", "load_graph", "canonicalize", "MAGIC"]

MAGIC = b"RTGRAPH1\n"
FORMAT_VERSION = 1


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

    ops = [OperationIr(op.op, tuple(tir(t) for t in op.inputs), tuple(tir(t) for t in op.outputs),
                       dict(op.attrs)) for op in graph.operations]
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
    raise TypeError(f"graph.save: cannot serialise attribute value {v!r} of type {type(v).__name__}")


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
        return np.frombuffer(bytes.fromhex(hexbytes), dtype=np.dtype(name).newbyteorder("<")
                             ).astype(np.dtype(name)).reshape(shape)
    raise ValueError(f"load_graph: unknown attribute tag {tag!r}")


def _tir(t: TensorIr) -> list:
    return [t.id, list(t.shape), t.dtype.name]


def _untir(x) -> TensorIr:
    return TensorIr(int(x[0]), tuple(int(d) for d in x[1]), D.as_dtype(x[2]))


# ---- save / load ---------------------------------------------------------------------------
def save_graph(graph: CapturedGraph, path) -> None:
    """Write ``graph`` to ``path`` (canonical ids; byte-identical for identical computations)."""
    g = canonicalize(graph)
    blobs = []
    values = []
    offset = 0
    for tid in sorted(g.values):
        a = np.require(g.values[tid], requirements="C")
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
        "operations": [{"op": op.op, "inputs": [_tir(t) for t in op.inputs],
                        "outputs": [_tir(t) for t in op.outputs],
                        "attrs": {k: _enc(v) for k, v in op.attrs.items()}}
                       for op in g.operations],
        "values": values,
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    with open(os.fspath(path), "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load_graph(path) -> CapturedGraph:
    """Read a graph written by ``graph.save`` (exact round trip of ops, attrs, boundaries,
    values and dtypes, with canonical ids)."""
    with open(os.fspath(path), "rb") as f:
        data = f.read()
    if not data.startswith(MAGIC):
        raise ValueError(f"load_graph: {os.fspath(path)!r} is not a saved capture graph "
                         f"(bad magic bytes)")
    pos = len(MAGIC)
    (n,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    header = json.loads(data[pos:pos + n].decode())
    if header.get("version") != FORMAT_VERSION:
        raise ValueError(f"load_graph: unsupported graph format version {header.get('version')!r}")
    body = memoryview(data)[pos + n:]
    values = {}
    for v in header["values"]:
        dt = D.as_dtype(v["dtype"])
        raw = body[v["offset"]:v["offset"] + v["nbytes"]]
        values[v["id"]] = np.frombuffer(raw, dtype=dt.np.newbyteorder("<")).astype(
            dt.np).reshape(tuple(v["shape"]))
    ops = [OperationIr(o["op"], tuple(_untir(t) for t in o["inputs"]),
                       tuple(_untir(t) for t in o["outputs"]),
                       {k: _dec(x) for k, x in o["attrs"].items()})
           for o in header["operations"]]
    tensors = {t.id: t for t in (_untir(x) for x in header["tensors"])}
    return CapturedGraph(ops, header["inputs"], header["outputs"], values, tensors)
