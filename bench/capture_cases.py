"""Capture workloads for the ratio table (``python -m bench``): recording and bound replay.

Each case is (name, runtime_fn, numpy_fn_or_None, torch_fn_or_None).  The capture-specific
ratios (recording vs eager, bound replay vs eager) are printed by ``bench/bench_capture.py``.
"""
from __future__ import annotations

import numpy as np

import runtime as rt

SMALL = (8, 8)


def small_chain(x, w, n_ops: int):
    """``n_ops`` small ops (elementwise, scalar operands, a matmul and a reduction per 10)."""
    y = x
    k = 0
    while k < n_ops:
        y = y * 0.5          # 1
        y = y + x            # 2
        y = rt.tanh(y)       # 3
        y = y @ w            # 4
        y = rt.relu(y)       # 5
        y = y - 0.25         # 6
        y = rt.exp(y * -1.0)  # 7, 8
        s = y.sum(axis=1, keepdims=True)  # 9
        y = y / (s + 1.0)    # 10 (two ops: add, div) -> 11
        k += 11
    return y


def small_chain_np(x, w, n_ops: int):
    y = x
    k = 0
    while k < n_ops:
        y = y * np.float32(0.5)
        y = y + x
        y = np.tanh(y)
        y = y @ w
        y = np.maximum(y, 0)
        y = y - np.float32(0.25)
        y = np.exp(y * np.float32(-1.0))
        s = y.sum(axis=1, keepdims=True)
        y = y / (s + np.float32(1.0))
        k += 11
    return y


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SMALL).astype(np.float32)
    w = (rng.standard_normal((SMALL[1], SMALL[1])) * 0.3).astype(np.float32)
    return x, w


def recording_case(n_ops: int = 55):
    """(record fn, eager fn): the same small ops recorded in a capture scope vs run on cpu."""
    x, w = _data()
    tx, tw = rt.tensor(x), rt.tensor(w)
    dev = rt.CaptureDevice()

    def record():
        with dev.capture_scope() as scope:
            cx = rt.tensor(x, device=dev)
            cw = rt.tensor(w, device=dev)
            y = small_chain(cx, cw, n_ops)
            scope.complete(inputs=[cx], outputs=[y])
        return scope.graph

    return record, (lambda: small_chain(tx, tw, n_ops))


def replay_case(n_ops: int = 200):
    """(bound replay fn, eager fn, numpy fn) for a graph of ~``n_ops`` small ops."""
    x, w = _data()
    tx, tw = rt.tensor(x), rt.tensor(w)
    graph = rt.capture(lambda a: small_chain(a, rt.tensor(w, device=a.device), n_ops), x)
    exe = graph.bind(rt.cpu())
    return (lambda: exe(tx)), (lambda: small_chain(tx, tw, n_ops)), \
        (lambda: small_chain_np(x, w, n_ops)), graph


def cases():
    record, _eager = recording_case()
    x, w = _data()
    bound, _eager2, np_fn, _g = replay_case()
    return [
        ("record 55 small ops (scope)", record, lambda: small_chain_np(x, w, 55), None),
        ("bind replay 200 small ops", bound, np_fn, None),
    ]
