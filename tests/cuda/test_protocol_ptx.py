"""The cuda kernel set offers the cpu set's protocol and ops, and every kernel compiles to PTX."""
import inspect
import json
import os
import subprocess
import sys

import pytest

import jit_kernels


def test_same_protocol_methods_and_signatures():
    from jit_kernels.cpu import CpuKernels
    from jit_kernels.cuda import CudaKernels
    assert CudaKernels.kind == "cuda"
    for name in jit_kernels.PROTOCOL_METHODS:
        c, g = getattr(CpuKernels, name), getattr(CudaKernels, name)
        assert list(inspect.signature(c).parameters) == list(inspect.signature(g).parameters), name
    assert callable(CudaKernels().device_count)


def test_same_op_lists():
    """The cuda set generates a kernel body for every op of the shared lists (it reuses the cpu
    set's scalar bodies, so semantics match), with every transcendental mapped to its own
    scalar_math, and its reductions implement every reduce op."""
    import re

    import numpy as np
    from jit_kernels.cuda import scalar_math as sm
    from jit_kernels.cuda.elementwise import cuda_body
    from jit_kernels.cuda.reduce import _spec
    from jit_kernels import optable
    for op in jit_kernels.UNARY_OPS + jit_kernels.BINARY_OPS:
        for kind, dt in (("f", np.float32), ("f", np.float64), ("i", np.int64)):
            if kind not in optable.ELEMENTWISE[op].bodies:   # integer-only ops: no float body
                continue
            body = cuda_body(op, kind, np.dtype(dt))
            for fn in re.findall(r"sm\.(\w+)\(", body):
                assert hasattr(sm, fn), (op, kind, fn)
    for op in ("sum", "mean", "prod", "max", "min", "sqdev", "sumexp"):
        for dt in (np.float32, np.float64, np.int64):
            _spec(op, np.dtype(dt))


def test_runtime_import_does_not_import_cuda():
    code = "import runtime, sys; assert 'jit_kernels.cuda' not in sys.modules; " \
           "assert not any(m.startswith('numba.cuda') or m.startswith('numba_cuda') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=_root())


def _root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _nvvm_available():
    code = ("import numba; from numba import cuda\n"
            "def f(a):\n    a[0] = 1.0\n"
            "cuda.compile_ptx(f, (numba.float32[::1],), cc=(9, 0))\n")
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=_root(), capture_output=True,
                       text=True)
    return r.returncode == 0, r.stderr.strip().splitlines()[-1:] if r.returncode else ""


@pytest.mark.needs_sim
@pytest.mark.skipif(os.environ.get("RT_PTX_CHECK") != "1",
                    reason="needs a GPU compiler (NVVM) and ~3 min: set RT_PTX_CHECK=1")
def test_every_kernel_compiles_to_ptx_sm90(tmp_path):
    ok, why = _nvvm_available()
    if not ok:
        pytest.skip(f"needs a GPU compiler: numba.cuda cannot compile PTX here (NVVM/NVRTC missing: install "
                    f"numba-cuda[cu13]): {why}")
    rec = tmp_path / "launches.json"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    subprocess.run([sys.executable, "-W", "ignore", "-m", "jit_kernels.cuda.ptx", "record", str(rec)],
                   env=env, cwd=_root(), check=True)
    assert len(json.loads(rec.read_text())) > 300
    env.pop("NUMBA_ENABLE_CUDASIM")
    r = subprocess.run([sys.executable, "-W", "ignore", "-m", "jit_kernels.cuda.ptx", "compile", str(rec)],
                       env=env, cwd=_root(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
