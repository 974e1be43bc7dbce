"""The cpu kernels' ``njit`` defaults (``jit_kernels.cpu._jit``): no C-callable wrapper, helpers
without a Python entry point that refuse a Python call, and the scalar math compiled once and
inlined by LLVM into each calling kernel."""
from __future__ import annotations

import re

import numpy as np
import pytest

from jit_kernels.cpu import reduce as cpu_reduce, scalar_math as sm
from jit_kernels.cpu._jit import helper, njit


@helper(error_model="numpy")
def _twice(x):
    return 2 * x


@njit(error_model="numpy")
def _calls_helper(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += _twice(a[i])
    return s


@njit
def _bare(x):
    return x + 1


def test_njit_leaves_out_the_cfunc_wrapper_and_keeps_options():
    assert _bare(2) == 3
    assert _bare.targetoptions["no_cfunc_wrapper"] is True
    assert "no_cpython_wrapper" not in _bare.targetoptions
    assert _calls_helper.targetoptions["error_model"] == "numpy"


def test_a_helper_runs_inside_kernels_and_refuses_python_calls():
    assert _calls_helper(np.arange(4.0)) == 12.0
    assert _twice.targetoptions["no_cpython_wrapper"] is True
    with pytest.raises(TypeError, match=r"^_twice is a kernel helper: it is called only from "
                                        r"other compiled kernels$"):
        _twice(1.0)


def test_template_helpers_refuse_python_calls():
    with pytest.raises(TypeError, match="_row_pos is a kernel helper"):
        cpu_reduce._row_pos(0, np.zeros(1, np.int64), np.zeros(1, np.int64), 0)


@njit(error_model="numpy")
def _exp_tanh(a, out):
    for i in range(a.shape[0]):
        out[i] = sm.exp_f32(a[i]) + sm.tanh_f32(a[i])


def test_scalar_math_is_inlined_into_the_kernel_by_llvm():
    a = np.linspace(-4, 4, 33).astype(np.float32)
    out = np.empty_like(a)
    _exp_tanh(a, out)
    ref = np.exp(a.astype(np.float64)) + np.tanh(a.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    ir = _exp_tanh.inspect_llvm(_exp_tanh.signatures[0])
    # the optimised kernel calls neither function: both bodies are inlined into its loop
    calls = re.findall(r"call [^\n]*@[^\n(]*(exp_f32|tanh_f32)", ir)
    assert calls == []
    assert sm.exp_f32.targetoptions["forceinline"] is True
