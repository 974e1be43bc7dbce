"""``rt.save(obj, path)`` / ``rt.load(path)``: checkpoints in the safetensors format.

``obj`` is a tensor, or a (nested) dict/list/tuple of tensors and plain values (numbers,
strings, bools, None) — a model's ``state_dict()``, an optimiser's, or both in one dict.  Every
tensor is stored as a safetensors entry (its values on the host, bit for bit); the structure and
the plain values go in the file's metadata as JSON.  Loading never unpickles anything: a file
that is not a checkpoint, is truncated, or names a dtype the runtime has no tensor for raises
``CheckpointError`` naming the file and the cause.  Needs the ``safetensors`` package (the
``checkpoint`` extra)."""
from __future__ import annotations

import json
import os

import numpy as np

from . import dtypes as D
from .errors import ArgumentTypeError, CheckpointError
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


def _plain_host(t: Tensor) -> np.ndarray:
    from .nn.module import _plain          # an autodiff value's inner tensor
    return np.ascontiguousarray(_plain(t).numpy())


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
    stn = _safetensors()
    arrays: dict = {}
    tree = _encode(obj, arrays, "")
    if "" in arrays:                                # a lone tensor
        arrays = {"tensor": arrays.pop("")}
        tree = {"tensor": "tensor"}
    meta = {_META: json.dumps({"format": _FORMAT, "tree": tree})}
    stn.save_file(arrays, os.fspath(path), metadata=meta)


def _fail(path, why: str) -> CheckpointError:
    return CheckpointError(f"rt.load: {os.fspath(path)!r} is not a readable checkpoint: {why}")


def _decode(node, tensors: dict, path, device):
    if not isinstance(node, dict) or len(node) != 1:
        raise _fail(path, f"malformed structure entry {node!r:.80}")
    (kind, v), = node.items()
    if kind == "tensor":
        if not isinstance(v, str) or v not in tensors:
            raise _fail(path, f"the structure names a tensor {v!r:.80} the file does not hold")
        arr = tensors[v]
        try:
            D.from_numpy_dtype(arr.dtype)
        except Exception:
            raise _fail(path, f"tensor {v!r} has dtype {arr.dtype}, which the runtime does not "
                              f"support") from None
        from .ops.create import tensor
        return tensor(arr, device=device)
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
    stn = _safetensors()
    from safetensors import safe_open
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise CheckpointError(f"rt.load: no such file {p!r}")
    try:
        with safe_open(p, framework="numpy") as f:
            meta = f.metadata() or {}
        tensors = stn.load_file(p)
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
