"""The cpu caching allocator (``jit_kernels.cpu._pool``) and the shared size classes."""
import gc

import numpy as np
from hypothesis import given, strategies as st

from jit_kernels._plan import size_class
from jit_kernels.cpu import _pool


@given(st.integers(1, 1 << 40))
def test_size_class_covers_the_request_with_at_most_25_percent_slack(n):
    c = size_class(n)
    assert c >= n
    if n >= 8:
        assert c <= n + n // 4 + 1
    assert size_class(c) == c                       # classes are fixed points
    assert size_class(n + 1) >= c                   # monotonic


def test_large_arrays_are_pooled_and_reused():
    _pool.empty_cache()
    n = _pool.POOL_MIN_BYTES // 4 + 100
    a = _pool.empty((n,), np.float32)
    a[:] = 7
    addr = a.__array_interface__["data"][0]
    s0 = _pool.stats()
    del a
    gc.collect()
    s1 = _pool.stats()
    assert s1["released"] == s0["released"] + 1 and s1["blocks"] == s0["blocks"] + 1
    b = _pool.empty((n - 50,), np.float32)      # same size class: the same block comes back
    assert b.__array_interface__["data"][0] == addr
    assert _pool.stats()["hits"] == s1["hits"] + 1
    del b


def test_a_view_keeps_the_block_alive():
    _pool.empty_cache()
    n = _pool.POOL_MIN_BYTES // 8 + 1
    a = _pool.empty((n,), np.float64)
    a[:] = np.arange(n)
    v = a[10:20].reshape(2, 5)
    released = _pool.stats()["released"]
    del a
    gc.collect()
    assert _pool.stats()["released"] == released
    c = _pool.empty((n,), np.float64)           # must not be v's block
    c[:] = -1
    np.testing.assert_array_equal(v.ravel(), np.arange(10, 20))
    del v
    gc.collect()
    assert _pool.stats()["released"] == released + 1
    del c


def test_small_arrays_bypass_the_pool_and_empty_cache_frees_everything():
    _pool.empty_cache()
    before = _pool.stats()
    x = _pool.empty((3, 4), np.int32)
    assert x.shape == (3, 4) and x.dtype == np.int32
    del x
    gc.collect()
    assert _pool.stats()["released"] == before["released"]
    big = [_pool.empty((_pool.POOL_MIN_BYTES,), np.uint8) for _ in range(3)]
    del big
    gc.collect()
    pooled = _pool.stats()["pooled"]
    assert pooled >= 3 * _pool.POOL_MIN_BYTES
    assert _pool.empty_cache() == pooled
    assert _pool.stats()["pooled"] == 0 and _pool.stats()["blocks"] == 0
