"""Shared test oracle and helpers: dtype lists, random samples and NumPy comparisons (float64
reference, cast); the second oracles, PyTorch and onnxruntime (optional installs: their tests
skip without them, and CI installs both); the activation-op lists."""
import numpy as np
import pytest

import runtime as rt

try:
    import torch
except ImportError:                 # the torch checks skip; NumPy stays the oracle
    torch = None

TORCH_MISSING = "torch is not installed (pip install '.[bench]' for the PyTorch-parity tests)"
#: marks a test that compares with PyTorch (module-level ``torch`` from here)
needs_torch = pytest.mark.skipif(torch is None, reason=TORCH_MISSING)

NP = {rt.float32: np.float32, rt.float64: np.float64, rt.int32: np.int32,
      rt.int64: np.int64, rt.bool_: np.bool_}
ALL_DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_]
FLOAT_DTYPES = [rt.float32, rt.float64]
NUMERIC_DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64]


def sample(shape, dtype, rng, low=-3.0, high=3.0):
    """Random test data of an rt dtype as a NumPy array."""
    if dtype is rt.bool_:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        return rng.integers(int(low) - 2, int(high) + 3, size=shape).astype(NP[dtype])
    return rng.uniform(low, high, size=shape).astype(NP[dtype])


def assert_close(got, want, dtype=None, tol=None):
    """Compare a tensor (or array) with a float64 reference cast to the result dtype.

    ``tol``: rtol (= atol) for float results, default 1e-5 (float32) / 1e-12 (float64); a
    ``{dtype: tol}`` dict (an ``opinfo`` row's) is looked up by the result dtype."""
    g = got.numpy() if isinstance(got, rt.Tensor) else np.asarray(got)
    w = np.asarray(want)
    if isinstance(got, rt.Tensor):
        assert g.shape == tuple(got.shape)
        if dtype is not None:
            assert got.dtype is dtype, (got.dtype, dtype)
        w = w.astype(got.dtype.np) if got.dtype is not rt.bool_ else w.astype(bool)
    assert g.shape == w.shape, (g.shape, w.shape)
    if g.dtype.kind == "f":
        rtol = 1e-5 if g.dtype == np.float32 else 1e-12
        if isinstance(tol, dict):
            tol = tol[rt.float32 if g.dtype == np.float32 else rt.float64]
        rtol = rtol if tol is None else tol
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)




# --------------------------------------------------------------------------- second oracles
def torch_or_skip():
    """The ``torch`` module, or skip the calling test where PyTorch is not installed."""
    if torch is None:
        pytest.skip(TORCH_MISSING)
    return torch


def onnx_session(graph, path, opset=None):
    """Export ``graph`` to the file ``path`` (at ``opset``, else ``to_onnx``'s default), check the
    model with ``onnx.checker`` and open it in onnxruntime on the CPU; skips the calling test
    where onnx or onnxruntime is not installed."""
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install '.[onnx]')")
    ort = pytest.importorskip("onnxruntime",
                              reason="onnxruntime is not installed (pip install '.[onnx]')")
    if opset is None:
        graph.to_onnx(path)
    else:
        graph.to_onnx(path, opset=opset)
    onnx.checker.check_model(str(path))
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def onnx_run(graph, path, *inputs, opset=None):
    """The outputs (NumPy arrays) of ``graph`` exported to ``path`` and run in onnxruntime, with
    ``inputs`` fed to its inputs ``input_0``, ``input_1``, ... (see ``onnx_session``)."""
    sess = onnx_session(graph, path, opset)
    return sess.run(None, {f"input_{k}": a for k, a in enumerate(inputs)})


def onnx_op_types(path):
    """The ``op_type`` of each node of the ONNX model file ``path``, in order."""
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install '.[onnx]')")
    return [n.op_type for n in onnx.load(str(path)).graph.node]


# --------------------------------------------------------------------------- op lists
#: the elementwise activations of runtime/ops/activation.py (``rt.nn.functional`` names)
ACTIVATIONS = ("elu", "celu", "selu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid",
               "hardswish", "logsigmoid", "softsign", "quick_gelu")
#: those defined piecewise, whose derivative jumps at the joins (the last three are smooth)
KINKED_ACTIVATIONS = tuple(n for n in ACTIVATIONS if n not in ("logsigmoid", "softsign",
                                                               "quick_gelu"))
