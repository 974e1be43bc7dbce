"""The cuda set and the op table (``jit_kernels.optable``): every table body renders to this
set's scalar_math, every table op runs on a tiny array (simulator: few threads), ``norm``
against NumPy, and the per-thread current GPU of ``_array.use``."""
import re
import sys
import threading

import numpy as np
import pytest

from jit_kernels import optable

F32, F64, I32, I64, B = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))


def test_the_cuda_set_renders_every_table_body():
    from jit_kernels.cuda import scalar_math as sm
    from jit_kernels.cuda.elementwise import cuda_body
    from jit_kernels.cuda.reduce import _spec
    for name, e in optable.ELEMENTWISE.items():
        for kind, dt in (("f", F32), ("f", F64), ("i", I64), ("b", B)):
            if kind not in e.bodies:
                continue
            body = cuda_body(name, kind, dt)
            assert not re.search(r"\b[A-Z][A-Z0-9_]+\(|\bINF\b", body), (name, kind, body)
            for fn in re.findall(r"sm\.(\w+)\(", body):
                assert hasattr(sm, fn), (name, kind, fn)
    for name, r in optable.REDUCTIONS.items():
        if r.spec is not None:
            for dt in (F32, F64, I32, I64):
                for piece in _spec(name, dt):
                    assert not re.search(r"\b[A-Z][A-Z0-9_]+\(|\bINF\b", piece), (name, piece)
                    for fn in re.findall(r"sm\.(\w+)\(", piece):
                        assert hasattr(sm, fn), (name, fn)


def test_cuda_set_imports_nothing_of_the_cpu_set():
    import subprocess
    code = ("import sys, jit_kernels.cuda.elementwise, jit_kernels.cuda.reduce, "
            "jit_kernels.cuda.fused, jit_kernels.cuda.matmul, jit_kernels.cuda.shape; "
            "assert not [m for m in sys.modules if m.startswith('jit_kernels.cpu')]")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.needs_sim
def test_every_table_op_runs_on_the_cuda_set():
    from jit_kernels.cuda import CudaKernels, elementwise as ew
    ks = CudaKernels()
    xh = np.array([-1.5, 0.5, 2.0], np.float32)
    x = ks.from_host(xh, 0)
    xi = ks.from_host(np.array([-3, 1, 2], np.int64), 0)
    for name, e in optable.ELEMENTWISE.items():
        out = B if e.result == "bool" else F32
        if "f" not in e.bodies:                 # integer-only ops
            got = (ks.unary(name, xi, I64, {}) if e.family == "unary"
                   else ks.binary(name, xi, 3, I64, I64))
        elif e.family == "unary":
            attrs = {"min": -1.0, "max": 1.0} if name == "clamp" else {}
            got = ks.unary(name, x, out, attrs)
        elif e.family == "binary":
            got = ks.binary(name, x, 0.5, F32, out)
        elif name == "where":
            got = ew.run(name, [ks.from_host(xh > 0, 0), x, 0.5], (B, F32, F32), F32)
        else:
            got = ew.run(name, [x] + [0.25] * (e.nargs - 1), (F32,) * e.nargs, F32)
        assert ks.to_host(got).shape == (3,), name
    for name, r in optable.REDUCTIONS.items():
        if r.public:
            got = ks.to_host(ks.reduce(name, ks.reshape(x, (1, 3)), (1,), False, F32, {"ddof": 0}))
            assert got.shape == (1,), name


@pytest.mark.needs_sim
def test_norm_on_cuda_matches_numpy():
    from jit_kernels.cuda import CudaKernels
    ks = CudaKernels()
    xh = (np.random.default_rng(5).random((3, 8)) * 4 - 2).astype(np.float32)
    x = ks.from_host(xh, 0)
    ref = lambda a, ax: np.sqrt(np.sum(a.astype(np.float64) ** 2, axis=ax))
    np.testing.assert_allclose(ks.to_host(ks.reduce("norm", x, (1,), False, F32, {})), ref(xh, 1),
                               rtol=2e-6)
    np.testing.assert_allclose(ks.to_host(ks.reduce("norm", x, (0, 1), False, F32, {})),
                               ref(xh, None), rtol=2e-6)
    xi = ks.from_host(np.arange(-3, 3, dtype=np.int32).reshape(2, 3), 0)
    np.testing.assert_allclose(ks.to_host(ks.reduce("norm", xi, (0,), False, F32, {})),
                               ref(np.arange(-3, 3).reshape(2, 3), 0), rtol=2e-6)
    e = ks.to_host(ks.reduce("norm", ks.from_host(np.zeros((0, 2), np.float32), 0), (0,), False,
                             F32, {}))
    assert e.shape == (2,) and (e == 0).all()


def test_current_gpu_is_per_thread(monkeypatch):
    """``use`` caches the GPU it selected per thread (CUDA's current device is per thread):
    a thread that selected GPU 1 does not make another thread skip selecting GPU 0."""
    from jit_kernels.cuda import _array
    calls = []

    class _FakeCuda:
        @staticmethod
        def select_device(i):
            calls.append((threading.get_ident(), i))

    monkeypatch.setattr(_array, "SIM", False)
    monkeypatch.setattr(_array, "cuda", _FakeCuda)
    monkeypatch.setattr(_array, "_current", _array._Current())
    main = threading.get_ident()
    _array.use(1)
    _array.use(1)                       # cached: no second select in this thread
    assert calls == [(main, 1)]
    seen = {}

    def worker():
        seen["before"] = _array.current_index()
        _array.use(1)                   # GPU 1 is current in the main thread, not here
        seen["after"] = _array.current_index()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"before": None, "after": 1}
    assert len(calls) == 2 and calls[1][0] != main and calls[1][1] == 1
    _array.use(1)                       # the worker's selection does not touch this thread's
    assert len(calls) == 2 and _array.current_index() == 1
