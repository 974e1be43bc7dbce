"""``jit_kernels.cuda._array`` view metadata against NumPy's own (no kernel runs)."""
import numpy as np
from hypothesis import given, settings, strategies as st

from jit_kernels._plan import numpy_key


@st.composite
def _array_and_key(draw):
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=4)))
    permute = draw(st.permutations(range(len(shape))))
    key = []
    for n in (shape[p] for p in permute):  # the key indexes the permuted view
        if draw(st.booleans()) and n > 0:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.none() | st.integers(-7, 7))
            stop = draw(st.none() | st.integers(-7, 7))
            step = draw(st.sampled_from([1, 2, 3, -1, -2]))
            key.append(slice(*slice(start, stop, step).indices(n)))
        if draw(st.integers(0, 4)) == 0:
            key.append(None)
    return shape, tuple(permute), tuple(key)


@settings(max_examples=300, deadline=None)
@given(_array_and_key())
def test_view_index_matches_numpy(case):
    from jit_kernels.cuda._array import CudaArray, c_strides, view_index
    shape, perm, key = case
    base = CudaArray(None, shape, c_strides(shape), 3, np.float32, 0)
    x = base.view([shape[p] for p in perm], [base.strides[p] for p in perm])
    buf = np.arange(3 + max(1, int(np.prod(shape))), dtype=np.float64)

    def values(a):  # the elements a CudaArray's metadata addresses in ``buf``
        return np.lib.stride_tricks.as_strided(buf[a.offset:], a.shape,
                                               [s * 8 for s in a.strides]).copy()
    want = np.asarray(values(x)[numpy_key(key)])  # NumPy's reading of the same key
    got = view_index(x, key)
    assert got.shape == want.shape
    if want.size:
        np.testing.assert_array_equal(values(got), want)
