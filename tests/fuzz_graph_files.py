"""Graph-file mutation fuzz: saved graphs, damaged on purpose, must never crash.

A few graphs are captured and saved (``graph.save``, format v3: magic, 8-byte header length,
JSON header, value bytes, SHA-256 trailer; runtime/capture/serialize.py).  Each mutation is one
of

- raw damage: bit flips, truncation at every kind of boundary (in the magic, the length, the
  header, the values, the trailer), byte insertions and deletions, header-length edits — the
  checksum is left as it is, so these are mostly ``GraphFileError``;
- header edits re-signed with a valid SHA-256 trailer (what someone crafting a file would
  write), so the validation beyond the checksum is exercised: shape edits (small, zero,
  negative, huge, non-integer dims), dtype edits, op-name edits, attribute edits (axes, junk
  values, deep nesting), id edits, value offset/length edits, boundary-list edits, removed keys,
  version edits, and bit flips or byte insertions inside the JSON text.

``check_mutant`` then asserts: ``rt.load_graph`` raises ``CaptureError`` (``GraphFileError``
included) with ``.kind`` set, or returns a graph whose ``run`` on valid inputs (made from its
declared input shapes and dtypes) raises a ``TensorRuntimeError`` or returns outputs whose
``.shape`` equals ``.numpy().shape`` and the declared output shape (and dtype); ``compile`` of
the same graph gives the same values.  Any other exception is a failure.

tests/test_fuzz_graph_files.py runs a quick seeded batch in-process; tests/fuzz_nightly.py
(``files``) runs thousands in child processes, so a segfault is a recorded crash.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import struct
import tempfile
import traceback

import numpy as np

import runtime as rt
from runtime.capture.serialize import MAGIC

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
MAX_INPUT_ELEMENTS = 1 << 16   # declared inputs larger than this are not built (load is checked)


def _mlp(x):
    w = rt.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, device=x.device)
    b = rt.tensor(np.array([0.1, -0.2, 0.3], np.float32), device=x.device)
    return rt.softmax(rt.relu(x @ w)[:, :3] + b, axis=-1)


def _scatter(x):
    idx = rt.tensor(np.array([[1, 0, 1]], np.int64), device=x.device)
    src = rt.tensor(np.ones((1, 3), np.float32), device=x.device)
    return x.scatter_add(0, idx, src)


def _gather(x):
    return x.gather(1, rt.tensor(np.array([[2, 0, 1], [0, 0, 2]], np.int64), device=x.device))


def _reduce(x):
    y = rt.reshape(rt.exp(x) * 0.5, (3, 2))
    return rt.sum(y, axis=0, keepdims=True), rt.transpose(y, 0, 1), rt.where(x > 2.0, x, -1.0)


GRAPHS = (_mlp, _scatter, _gather, _reduce)
DTYPES = ["float32", "float64", "int32", "int64", "bool", "float16", "bfloat16", "int8", "uint8",
          "int16", "uint16", "complex64",
          "bogus", "", 3, None]
OPS = ["add", "mul", "sub", "exp", "neg", "relu", "sum", "softmax", "matmul", "reshape",
       "transpose", "gather", "scatter_add", "where", "no_such_op", "", 7]
DIMS = [0, 1, 2, 3, 4, 6, 7, -1, -3, 2 ** 36, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 64, 1.5, "2",
        None, True, [2]]


def _deep(n):
    v = 1
    for _ in range(n):
        v = [v]
    return v


JUNK = [None, True, -1, 0, 5, 2 ** 63, -(2 ** 63) - 1, 1.5, float("nan"), "x", [], [0], [1, 2],
        {"tuple": []}, {"tuple": [0, 9]}, {"slice": [None, 2, None]}, {"slice": [0, 1, 0]},
        {"dtype": "float64"}, {"dtype": "nope"}, {"float": "inf"}, {"float": "x"},
        {"array": ["int64", [2], "0100000000000000" * 2]}, {"array": ["int64", [9], "00"]},
        {"array": ["object", [1], "00"]}, {"no_tag": 1}, {"tuple": 1, "x": 2}, _deep(60),
        {"tuple": [_deep(30)]}]


def saved_graphs(tmp_dir):
    """[(name, file bytes, inputs)] for each graph of ``GRAPHS``."""
    out = []
    for fn in GRAPHS:
        p = os.path.join(os.fspath(tmp_dir), f"{fn.__name__}.rtg")
        rt.capture(fn, X).save(p)
        with open(p, "rb") as f:
            out.append((fn.__name__, f.read()))
    return out


def split(data: bytes):
    pos = len(MAGIC)
    (n,) = struct.unpack_from("<Q", data, pos)
    return json.loads(data[pos + 8:pos + 8 + n]), data[pos + 8 + n:-32]


def sign(text: bytes, body: bytes) -> bytes:
    data = MAGIC + struct.pack("<Q", len(text)) + text + body
    return data + hashlib.sha256(data).digest()


def _dump(header) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


# ------------------------------------------------------------------------------ mutations
def _tensor_entries(h):
    ts = list(h.get("tensors", []))
    for o in h.get("operations", []):
        ts += [t for t in o.get("operands", []) if isinstance(t, list)] + o.get("outputs", [])
    return [t for t in ts if isinstance(t, list) and len(t) == 3 and isinstance(t[1], list)]


def _edit_header(r: random.Random, h: dict) -> str:
    """One structural edit of header ``h`` in place; returns its description."""
    ops = h["operations"]
    ts = _tensor_entries(h)
    what = r.choice(["dim", "dim", "rank", "dtype", "op", "attr", "attr", "id", "value",
                     "value_shape", "boundary", "drop_key", "version", "operand", "nest"])
    if what == "dim" and ts:
        t = r.choice(ts)
        if t[1]:
            k = r.randrange(len(t[1]))
            t[1][k] = r.choice(DIMS)
            return f"dim {k} of tensor {t[0]} := {t[1][k]!r}"
        t[1].append(r.choice(DIMS))
        return f"dim appended to tensor {t[0]}"
    if what == "rank" and ts:
        t = r.choice(ts)
        t[1] = t[1][:-1] if t[1] and r.random() < 0.5 else t[1] + [r.choice([1, 2, 3])]
        return f"rank of tensor {t[0]} := {len(t[1])}"
    if what == "dtype" and ts:
        t = r.choice(ts)
        t[2] = r.choice(DTYPES)
        return f"dtype of tensor {t[0]} := {t[2]!r}"
    if what == "op" and ops:
        o = r.choice(ops)
        old, o["op"] = o["op"], r.choice(OPS)
        return f"op {old!r} := {o['op']!r}"
    if what == "attr" and ops:
        o = r.choice(ops)
        attrs = o["attrs"]
        if attrs and r.random() < 0.7:
            k = r.choice(sorted(attrs))
            attrs[k] = r.choice(JUNK + [r.randint(-5, 5), {"tuple": [r.randint(-4, 4)]}])
            return f"attr {k!r} of {o['op']!r} := {attrs[k]!r:.60}"
        k = r.choice(["axis", "dim", "shape", "keepdims", "bogus"])
        attrs[k] = r.choice(JUNK)
        return f"attr {k!r} added to {o['op']!r}"
    if what == "id" and ts:
        t = r.choice(ts)
        t[0] = r.choice([0, -1, 1, 2, 3, 5, 9, 40, 2 ** 63, 1.0, "1", None])
        return f"a tensor id := {t[0]!r}"
    if what == "value" and h["values"]:
        v = r.choice(h["values"])
        k = r.choice(["offset", "nbytes", "id", "dtype"])
        v[k] = r.choice([0, 1, 4, 8, 12, 48, -4, 2 ** 40, 2 ** 64, 3.5, None, "float32"])
        return f"value {k} := {v[k]!r}"
    if what == "value_shape" and h["values"]:
        v = r.choice(h["values"])
        v["shape"] = [r.choice(DIMS[:9]) for _ in range(r.randint(0, 3))]
        return f"value shape := {v['shape']!r}"
    if what == "boundary":
        k = r.choice(["inputs", "outputs"])
        h[k] = r.choice([[], [1, 1], h[k] + [r.randint(0, 12)], [0], [99], ["1"], None, 1])
        return f"{k} := {h[k]!r}"
    if what == "drop_key":
        if ops and r.random() < 0.5:
            o = r.choice(ops)
            k = r.choice(sorted(o))
            del o[k]
            return f"operation key {k!r} removed"
        k = r.choice(sorted(h))
        del h[k]
        return f"header key {k!r} removed"
    if what == "version":
        h["version"] = r.choice([0, 1, 2, 4, -1, 3.0, "3", None])
        return f"version := {h['version']!r}"
    if what == "operand" and ops:
        o = r.choice(ops)
        if o.get("operands") and r.random() < 0.5:
            del o["operands"][r.randrange(len(o["operands"]))]
            return f"an operand of {o['op']!r} removed"
        o.setdefault("operands", []).append(r.choice(ts) if ts and r.random() < 0.5
                                            else {"literal": r.choice(JUNK)})
        return f"an operand appended to {o['op']!r}"
    if what == "nest":
        k = r.choice(["tensors", "operations", "values", "inputs"])
        h[k] = [_deep(r.choice([50, 500, 5000]))]
        return f"{k} := deeply nested list"
    return "no-op edit"


def _boundaries(data: bytes) -> list:
    pos = len(MAGIC)
    (n,) = struct.unpack_from("<Q", data, pos)
    hdr = pos + 8
    return [0, 1, pos - 1, pos, pos + 4, hdr, hdr + 1, hdr + n // 2, hdr + n - 1, hdr + n,
            hdr + n + 1, len(data) - 33, len(data) - 32, len(data) - 16, len(data) - 1]


def mutate(r: random.Random, data: bytes) -> tuple:
    """(mutated bytes, description)."""
    kind = r.choice(["flip", "truncate", "insert", "delete", "length", "header", "header",
                     "header", "header", "text_flip", "text_insert"])
    b = bytearray(data)
    if kind == "flip":
        k = r.choice([1, 1, 2, 8])
        where = [r.randrange(len(b)) for _ in range(k)]
        for i in where:
            b[i] ^= 1 << r.randrange(8)
        return bytes(b), f"flip bits at {where}"
    if kind == "truncate":
        cut = r.choice(_boundaries(data) + [r.randrange(len(data))])
        return data[:max(cut, 0)], f"truncate at {cut}"
    if kind == "insert":
        i = r.choice(_boundaries(data) + [r.randrange(len(data) + 1)])
        junk = bytes(r.randrange(256) for _ in range(r.choice([1, 4, 8, 33])))
        return data[:i] + junk + data[i:], f"insert {len(junk)} bytes at {i}"
    if kind == "delete":
        i = r.randrange(len(data))
        k = r.choice([1, 8, 32])
        return data[:i] + data[i + k:], f"delete {k} bytes at {i}"
    header, body = split(data)
    if kind == "length":
        n = len(_dump(header))
        m = r.choice([0, 1, n - 1, n + 1, n + 40, 2 ** 32, 2 ** 63, 2 ** 64 - 1])
        out = bytearray(data)
        struct.pack_into("<Q", out, len(MAGIC), m)
        return bytes(out), f"header length := {m}"
    if kind == "header":
        h = copy.deepcopy(header)
        descs = []
        for _ in range(r.choice([1, 1, 2, 3])):
            try:
                descs.append(_edit_header(r, h))
            except (TypeError, KeyError, IndexError, AttributeError, ValueError):
                descs.append("(an edit the earlier ones made impossible)")
        try:
            text = json.dumps(h, sort_keys=True, separators=(",", ":")).encode()
        except (ValueError, RecursionError):
            text = _dump(header)
            descs.append("(unencodable: unedited)")
        return sign(text, body), "re-signed: " + "; ".join(descs)
    text = bytearray(_dump(header))
    i = r.randrange(len(text))
    if kind == "text_flip":
        text[i] ^= 1 << r.randrange(7)
        return sign(bytes(text), body), f"re-signed: header byte {i} flipped"
    junk = r.choice([b",", b"]", b"{", b"0", b"-", b'"', b"9999999999999999999999", b"\xff"])
    return sign(bytes(text[:i] + junk + text[i:]), body), f"re-signed: {junk!r} at header {i}"


# ------------------------------------------------------------------------------ the check
_KINDS = ("BadGraphFile", "InvalidGraph")


class Failure(AssertionError):
    """A mutant that broke a promise (a raw exception, a wrong shape, replay != compile)."""


def _input(t, rng):
    if t.dtype.name == "bool":
        return rng.random(t.shape) < 0.5
    if t.dtype.name.startswith(("int", "uint")):
        return rng.integers(0, 3, size=t.shape).astype(t.dtype.np)
    return rng.uniform(-2, 2, size=t.shape).astype(t.dtype.np)


def check_mutant(path, compile=True) -> str:
    """Load, run and compile one file; returns the outcome ("load-error", "run-error", "ran",
    "too-big"); raises ``Failure`` on a broken promise."""
    try:
        g = rt.load_graph(path)
    except rt.CaptureError as exc:
        if exc.kind not in _KINDS:
            raise Failure(f"load_graph raised CaptureError with kind {exc.kind!r}") from exc
        return "load-error"
    except Exception as exc:
        raise Failure(f"load_graph raised {type(exc).__name__}: {exc}"[:400]) from exc
    tins = g.input_tensors
    if any(int(np.prod(t.shape, dtype=object)) > MAX_INPUT_ELEMENTS for t in tins):
        return "too-big"
    rng = np.random.default_rng(0)
    inputs = [_input(t, rng) for t in tins]
    outs = []
    for mode in ("run", "compile") if compile else ("run",):
        try:
            ys = g.run(*inputs) if mode == "run" else g.compile(rt.cpu())(*inputs)
            arrays = [y.numpy() for y in ys]
        except rt.TensorRuntimeError:
            if mode == "compile" and outs:
                raise Failure("run succeeded but compile raised") from None
            return "run-error"
        except Exception as exc:
            raise Failure(f"{mode} raised {type(exc).__name__}: {exc}"[:400]) from exc
        if len(ys) != len(g.outputs):
            raise Failure(f"{mode} gave {len(ys)} outputs for {len(g.outputs)} declared")
        for y, a, t in zip(ys, arrays, g.output_tensors):
            if tuple(y.shape) != a.shape or a.shape != tuple(t.shape) or y.dtype != t.dtype:
                raise Failure(f"{mode}: .shape {y.shape}, .numpy().shape {a.shape}, dtype "
                              f"{y.dtype}; declared {t}")
        outs.append(arrays)
    if len(outs) == 2:
        for a, b in zip(*outs):
            if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
                if a.dtype.kind in "fc" and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
                    continue
                raise Failure("compile disagrees with run")
    return "ran"


def run_mutations(n, seed, every=500, progress=None, failure=None, state=None,
                  compile_every=1) -> dict:
    """``n`` seeded mutations of the saved graphs; counts of outcomes and failures."""
    r = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="fuzz-files-")
    originals = saved_graphs(tmp)
    c = {"mutations": 0, "load-error": 0, "run-error": 0, "ran": 0, "too-big": 0,
         "failures": 0}
    path = os.path.join(tmp, "m.rtg")
    for k in range(n):
        name, data = r.choice(originals)
        mutant, desc = mutate(r, data)
        if r.random() < 0.25:                            # a second, different mutation
            try:
                mutant, d2 = mutate(r, mutant)
                desc += " + " + d2
            except (struct.error, ValueError, UnicodeDecodeError, IndexError, KeyError,
                    TypeError, RecursionError):
                pass                                     # the first one broke the framing
        with open(path, "wb") as f:
            f.write(mutant)
        if state:
            with open(state, "w") as f:
                f.write(f"{k} ({name}: {desc})")
        try:
            c[check_mutant(path, compile=compile_every > 0 and k % compile_every == 0)] += 1
        except Failure:
            c["failures"] += 1
            if failure is None:
                raise
            failure("FAILURE", f"mutation {k} of {name}: {desc}", traceback.format_exc())
        c["mutations"] += 1
        if progress and c["mutations"] % every == 0:
            progress(c)
    return c
