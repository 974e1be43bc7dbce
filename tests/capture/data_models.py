"""The model ``data/v2_model.rtg`` was captured from (by ``graph.save`` of commit 39c0d91,
format version 2: ``rt.capture(v2_model, X)`` with ``X = (arange(8).reshape(2, 4) - 3) / 2``)."""
import numpy as np

import runtime as rt


def v2_model(x):
    w = rt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, device=x.device)
    h = rt.relu(x @ w) - 0.5
    h = rt.where(h > 0.25, h, float("-inf"))
    k = rt.tensor(np.array([3, 1, 2], np.int64), device=x.device)
    i = 2 ** k + (k > 1)
    b = rt.logical_or(h > 1.0, False)
    return rt.softmax(h * 2.0, axis=-1), 1.5 / (rt.abs(x) + 1), i, b, rt.clamp(x, min=-1, max=1.5)
