"""``rt.save(obj, path)`` / ``rt.load(path)``: checkpoints in the safetensors format.

``obj`` is a tensor, or a (nested) dict/list/tuple of tensors and plain values (numbers,
strings, bools, None) — a model's ``state_dict()``, an optimiser's, or both in one dict.  Every
tensor is stored as a safetensors entry (its values on the host, bit for bit); the structure and
the plain values go in the file's metadata as JSON.  Loading never unpickles anything: a file
that is not a checkpoint, is truncated, or names a dtype the runtime has no tensor for raises
``CheckpointError`` naming the file and the cause.  Needs the ``safetensors`` package (the
``checkpoint`` extra).

Entry dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL (the small dtypes included; BF16
is read and written as its raw bits, NumPy having no bfloat16)."""
from __future__ import annotations

import json
import os

import numpy as np

from .core import dtypes as D
from .core.errors import ArgumentTypeError, CheckpointError
from .tensor import Tensor

__all__ = ["save", "load"]

_META = "numba-tensor-runtime"
_FORMAT = 1


def _safetensors():
    try:
        from safetensors import numpy as stn
    except ImportError:
        raise CheckpointError("rt.save/rt.load need the safetensors package: "
                              "pip install 'numba-tensor-runtime[checkpoint]'") from None
    return stn


#: safetensors dtype code -> runtime dtype
_CODES = {"F64": D.float64, "F32": D.float32, "F16": D.float16, "BF16": D.bfloat16,
          "I64": D.int64, "I32": D.int32, "I16": D.int16, "I8": D.int8, "U8": D.uint8,
          "U32": D.uint32, "U64": D.uint64, "BOOL": D.bool_}
#: the codes the runtime has no dtype for, as NumPy names them
_OTHER = {"U16": "uint16", "C64": "complex64",
          "F8_E4M3": "float8_e4m3", "F8_E5M2": "float8_e5m2"}


def _plain_host(t: Tensor):
    """(the storage array, dtype) of ``t``'s values on the host."""
    from .nn.module import _plain          # an autodiff value's inner tensor
    p = _plain(t)
    return np.ascontiguousarray(p.device.to_host(p)), p.dtype


def _encode(obj, arrays: dict, path: str):
    """The JSON tree of ``obj``; tensors go into ``arrays`` under their path."""
    if isinstance(obj, Tensor):
        arrays[path] = _plain_host(obj)
        return {"tensor": path}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise ArgumentTypeError(f"rt.save: dict keys must be str or int, got {type(k).__name__}")
            items.append([k, _encode(v, arrays, f"{path}.{k}" if path else str(k))])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{path}.{i}" if path else str(i)) for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, float) and not np.isfinite(obj):
            return {"float": repr(obj)}
        return {"value": obj}
    raise ArgumentTypeError(f"rt.save: cannot store a {type(obj).__name__} (tensors, dicts, "
                            f"lists, tuples, numbers, strings and None only)")


def save(obj, path) -> None:
    """Write ``obj`` (a tensor or a nested dict/list of tensors and plain values) to ``path``."""
    path = _path("save", path)
    _safetensors()
    from safetensors import TensorSpec, serialize_file
    arrays: dict = {}
    tree = _encode(obj, arrays, "")
    if "" in arrays:                                # a lone tensor
        arrays = {"tensor": arrays.pop("")}
        tree = {"tensor": "tensor"}
    meta = {_META: json.dumps({"format": _FORMAT, "tree": tree})}
    specs = {}
    for k, (a, dt) in arrays.items():
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False))
        arrays[k] = (a, dt)                         # (kept alive until written)
        name = "bool" if dt.is_bool else dt.name    # safetensors' names (NumPy's, "bfloat16")
        specs[k] = TensorSpec(dtype=name, shape=a.shape, data_ptr=a.ctypes.data,
                              data_len=a.nbytes)
    serialize_file(specs, os.fspath(path), metadata=meta)


def _path(op: str, path) -> str:
    """``path`` as a file name, or ArgumentTypeError naming the function."""
    try:
        return os.fspath(path)
    except TypeError:
        raise ArgumentTypeError(f"{op}: path must be a str, bytes or os.PathLike, got "
                                f"{type(path).__name__}") from None


def _fail(path, why: str) -> CheckpointError:
    return CheckpointError(f"rt.load: {os.fspath(path)!r} is not a readable checkpoint: {why}")


def _decode(node, tensors: dict, path, device):
    if not isinstance(node, dict) or len(node) != 1:
        raise _fail(path, f"malformed structure entry {node!r:.80}")
    (kind, v), = node.items()
    if kind == "tensor":
        if not isinstance(v, str) or v not in tensors:
            raise _fail(path, f"the structure names a tensor {v!r:.80} the file does not hold")
        entry = tensors[v]
        code = entry["dtype"]
        dt = _CODES.get(code)
        if dt is None:
            raise _fail(path, f"tensor {v!r} has dtype {_OTHER.get(code, code)}, which the "
                              f"runtime does not support")
        shape = tuple(entry["shape"])
        data = entry["data"]
        if len(data) != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise _fail(path, f"tensor {v!r} holds {len(data)} bytes for {dt.name}{list(shape)}")
        arr = np.frombuffer(data, dtype=dt.np.newbyteorder("<")).astype(dt.np).reshape(shape)
        from .ops.create import from_storage
        return from_storage(arr, dt, device)
    if kind == "dict":
        if not isinstance(v, list):
            raise _fail(path, "a dict entry is not a list of pairs")
        out = {}
        for item in v:
            if (not isinstance(item, list) or len(item) != 2
                    or not isinstance(item[0], (str, int)) or isinstance(item[0], bool)):
                raise _fail(path, f"bad dict item {item!r:.80}")
            out[item[0]] = _decode(item[1], tensors, path, device)
        return out
    if kind in ("list", "tuple"):
        if not isinstance(v, list):
            raise _fail(path, f"a {kind} entry is not a list")
        items = [_decode(x, tensors, path, device) for x in v]
        return items if kind == "list" else tuple(items)
    if kind == "float" and v in ("inf", "-inf", "nan"):
        return float(v)
    if kind == "value" and (v is None or isinstance(v, (bool, int, float, str))):
        return v
    raise _fail(path, f"unknown structure entry {kind!r:.40}")


def load(path, device=None):
    """Read a checkpoint written by ``rt.save``; tensors are created on ``device`` (default:
    the default device)."""
    p = path = _path("load", path)
    _safetensors()
    from safetensors import deserialize, safe_open
    if not os.path.isfile(p):
        raise CheckpointError(f"rt.load: no such file {p!r}")
    try:
        with safe_open(p, framework="numpy") as f:
            meta = f.metadata() or {}
        with open(p, "rb") as fh:
            tensors = dict(deserialize(fh.read()))
    except Exception as exc:  # safetensors' own errors: a header or data it cannot parse
        raise _fail(path, f"{type(exc).__name__}: {exc}") from None
    raw = meta.get(_META)
    if raw is None:
        raise _fail(path, "a safetensors file without the runtime's structure metadata")
    try:
        info = json.loads(raw)
    except ValueError as exc:
        raise _fail(path, f"bad structure metadata ({exc})") from None
    if not isinstance(info, dict) or info.get("format") != _FORMAT or "tree" not in info:
        got = info.get("format") if isinstance(info, dict) else info
        raise _fail(path, f"unsupported checkpoint format {got!r:.40}")
    return _decode(info["tree"], tensors, path, device)
