"""The cuda caching allocator (``jit_kernels.cuda._pool``), the prepared small-op kernels and
the launch cache (``jit_kernels.cuda._array.launch``)."""
import gc

import numpy as np
import pytest

import runtime as rt


def _pool():
    from jit_kernels.cuda import _pool
    return _pool


def test_buffers_are_reused_and_results_stay_correct(cuda_dev):
    pool = _pool()
    rt.empty_cache()
    x = rt.tensor(np.arange(40, dtype=np.float32), device=cuda_dev)
    y = x * 2.0
    del y
    gc.collect()
    before = pool.stats()
    assert before["blocks"] >= 1
    z = x + 1.0            # same size class: served from the pool, not stale
    after = pool.stats()
    assert after["hits"] == before["hits"] + 1
    np.testing.assert_array_equal(z.numpy(), np.arange(40, dtype=np.float32) + 1)


def test_a_view_keeps_its_buffer_out_of_the_pool(cuda_dev):
    pool = _pool()
    rt.empty_cache()
    x = rt.tensor(np.arange(24, dtype=np.float64).reshape(4, 6), device=cuda_dev)
    y = x + 0.5
    v = y.permute(1, 0)[1:3]
    released = pool.stats()["released"]
    del y
    gc.collect()
    assert pool.stats()["released"] == released      # v still uses the buffer
    w = x * 3.0                                        # must not get v's buffer
    ref = (np.arange(24, dtype=np.float64).reshape(4, 6) + 0.5).T[1:3]
    np.testing.assert_array_equal(v.numpy(), ref)
    np.testing.assert_array_equal(w.numpy(), np.arange(24).reshape(4, 6) * 3.0)
    gc.collect()
    released = pool.stats()["released"]      # (to_host copied the strided view: a temporary)
    del v
    gc.collect()
    assert pool.stats()["released"] == released + 1


def test_buffers_longer_than_the_array_round_trip(cuda_dev):
    from jit_kernels.cuda.memory import from_host, to_host
    for n in (1, 3, 7, 9, 33, 100):
        a = np.arange(n, dtype=np.int32) - 5
        x = from_host(a)
        assert x.buf.shape[0] >= n
        np.testing.assert_array_equal(to_host(x), a)
        np.testing.assert_array_equal(to_host(x.view((n,), (1,))), a)


def test_empty_cache_releases_every_pooled_buffer(cuda_dev):
    pool = _pool()
    xs = [rt.full((k,), 1.0, device=cuda_dev) for k in (5, 50, 500)]
    nbytes = sum(x._payload.buf.shape[0] * 4 for x in xs)
    rt.empty_cache()
    del xs
    gc.collect()
    assert pool.stats()["pooled"] == nbytes
    assert pool.empty_cache() == nbytes
    assert pool.stats()["pooled"] == 0 and pool.stats()["blocks"] == 0


def test_pool_cap_drops_buffers(cuda_dev, monkeypatch):
    pool = _pool()
    rt.empty_cache()
    monkeypatch.setattr(pool._LISTS, "max_bytes", 0)
    dropped = pool.stats()["dropped"]
    x = rt.full((8,), 2.0, device=cuda_dev)
    del x
    gc.collect()
    assert pool.stats()["dropped"] == dropped + 1
    assert pool.stats()["blocks"] == 0


@pytest.mark.parametrize("case", ["aa", "as", "sa", "a", "strided"])
def test_prepared_fast_path_matches_numpy(cuda_dev, case):
    a = np.linspace(-2, 2, 30).astype(np.float32).reshape(5, 6)
    b = np.linspace(1, 3, 30).astype(np.float32).reshape(5, 6)
    ta, tb = rt.tensor(a, device=cuda_dev), rt.tensor(b, device=cuda_dev)
    for _ in range(2):  # the second call takes the cached fast-path entry
        if case == "aa":
            got, ref = ta - tb, a - b
        elif case == "as":
            got, ref = ta / 4, a / np.float32(4)
        elif case == "sa":
            got, ref = 3 - ta, np.float32(3) - a
        elif case == "a":
            got, ref = rt.exp(ta), np.exp(a.astype(np.float64)).astype(np.float32)
        else:
            got, ref = ta.permute(1, 0) * tb.permute(1, 0), (a * b).T
        assert got.shape == ref.shape and got.dtype == rt.float32
        np.testing.assert_allclose(got.numpy(), ref, rtol=2e-6)


class _FakeCompiled:
    def __init__(self):
        self.calls = []

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        self.calls.append((args, griddim, blockdim, stream, sharedmem))


class _FakeConfigured:
    griddim, blockdim, stream, sharedmem = (3, 1, 1), (8, 1, 1), "stream0", 0

    def __init__(self, kern):
        self.kern = kern

    def __call__(self, *args):
        self.kern.typed_calls += 1
        self.kern.overloads[tuple(self.kern.typeof_pyval(a) for a in args)] = self.kern.compiled


class _FakeBuf:
    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)


class _FakeKernel:
    """Stands for a numba.cuda dispatcher: ``kern[grid, block]``, ``overloads``,
    ``typeof_pyval``."""

    def __init__(self):
        self.overloads = {}
        self.compiled = _FakeCompiled()
        self.typed_calls = 0
        self.configured = 0

    def __getitem__(self, cfg):
        self.configured += 1
        return _FakeConfigured(self)

    def typeof_pyval(self, v):
        return ("buf", v.dtype.str) if isinstance(v, _FakeBuf) else type(v).__name__


@pytest.fixture
def direct(monkeypatch):
    """``jit_kernels.cuda._array`` as on a GPU with the direct launch on (fake kernels only)."""
    pytest.importorskip("numba_cuda")
    from jit_kernels.cuda import _array
    monkeypatch.setattr(_array, "SIM", False)
    monkeypatch.setattr(_array, "DIRECT", True)
    monkeypatch.setattr(_array, "_DNA", _FakeBuf)
    return _array


def test_launch_cache_types_once_per_argument_kinds(direct):
    _array = direct
    k = _FakeKernel()
    f32, f64 = _FakeBuf(np.float32), _FakeBuf(np.float64)
    _array.launch(k, 3, 8, 10, f32, 0, 1)          # typed by "numba"
    _array.launch(k, 3, 8, 10, f32, 4, 1)          # direct
    _array.launch(k, 3, 8, 11, f32, 0, 1)          # direct
    assert (k.typed_calls, k.configured, len(k.compiled.calls)) == (1, 1, 2)
    args, grid, block, stream, shmem = k.compiled.calls[0]
    assert args == (10, f32, 4, 1) and grid == (3, 1, 1) and block == (8, 1, 1)
    assert stream == "stream0" and shmem == 0
    _array.launch(k, 3, 8, 10, f64, 0, 1)          # new dtype: typed again
    _array.launch(k, 3, 8, 10, f32, 0, 1.0)        # float instead of int: typed again
    assert k.typed_calls == 3 and len(k.compiled.calls) == 2
    _array.launch(k, 3, 8, 10, f32, 0, (1, 2))     # a tuple argument: never cached
    _array.launch(k, 3, 8, 10, f32, 0, (1, 2))
    assert k.typed_calls == 5
    _array.launch(k, 4, 8, 10, f32, 0, 1)          # new grid: configured again, still direct
    assert k.configured == 2 and len(k.compiled.calls) == 3


def test_simulator_launches_are_configured_every_time(cuda_dev):
    """The simulator's ``kern[grid, block]`` reconfigures and returns the kernel itself, so a
    cached configuration would launch with the grid of the latest other launch."""
    from jit_kernels.cuda import _array
    if not _array.SIM:
        pytest.skip("simulator behaviour")
    big_m = np.arange(400, dtype=np.float32).reshape(20, 20) / 400
    small_m = np.arange(9, dtype=np.float32).reshape(3, 3)
    for k in (1, 2, 3):  # matmul's grid is not grid-stride: a stale grid leaves tiles unwritten
        bm, sm = big_m * k, small_m * k
        tb, ts = rt.tensor(bm, device=cuda_dev), rt.tensor(sm, device=cuda_dev)
        np.testing.assert_allclose((tb @ tb).numpy(), bm @ bm, rtol=1e-5)
        np.testing.assert_allclose((ts @ ts).numpy(), sm @ sm, rtol=1e-6)


def test_a_failing_direct_launch_falls_back_to_the_dispatcher(direct):
    _array = direct
    k = _FakeKernel()

    def broken(*a):
        raise TypeError("launch() takes 4 arguments")
    k.compiled.launch = broken
    f32 = _FakeBuf(np.float32)
    _array.launch(k, 2, 8, 10, f32)
    with pytest.warns(RuntimeWarning, match="direct kernel launch failed .*TypeError"):
        _array.launch(k, 2, 8, 10, f32)
    assert _array.DIRECT is False and k.typed_calls == 2
    _array.launch(k, 2, 8, 10, f32)
    assert k.typed_calls == 3

