"""The LSTM and GRU cell kernels' parallel twins (a step's rows split between threads) give the
serial kernels' bits, for every split, both dtypes, forward and backward (their in-place carry
included)."""
import numpy as np
import pytest

from jit_kernels.cpu import recurrent as R


def _same(a, b):
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _run(kernel, ins, outs, parts):
    ins = [a.copy() for a in ins]           # (the backward kernels carry a state in place)
    outs = [np.full_like(o, np.nan) for o in outs]
    kernel(*ins, *outs, parts) if outs else kernel(*ins, parts)
    return ins + outs


CASES = {
    "lstm": lambda f, n, h: (R._cell, R._cell_par, [f(n, 4 * h), f(4 * h), f(n, 4 * h), f(n, h)],
                             [f(n, h), f(n, h), f(4, n, h)]),
    "lstm_backward": lambda f, n, h: (R._cell_backward, R._cell_backward_par,
                                      [f(n, h), f(n, h), np.abs(f(4, n, h)) % 1, f(n, h), f(n, h),
                                       f(n, h)], [f(n, 4 * h)]),
    "gru": lambda f, n, h: (R._gru_cell, R._gru_cell_par, [f(n, 3 * h), f(3 * h), f(n, 3 * h),
                                                          f(n, h)], [f(n, h), f(4, n, h)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,h", [(5, 7), (32, 64)])
def test_the_parallel_cells_give_the_serial_bits(case, dtype, n, h):
    rng = np.random.default_rng(3)

    def f(*shape):
        return rng.standard_normal(shape).astype(dtype)
    serial, par, ins, outs = CASES[case](f, n, h)
    want = _run(serial, ins, outs, 0)
    for parts in (1, 2, 3, n):
        _same(_run(par, ins, outs, parts), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gru_backward_cells_give_the_serial_bits(dtype):
    rng = np.random.default_rng(4)
    n, h = 6, 9

    def f(*shape):
        return rng.standard_normal(shape).astype(dtype)
    ins = [f(n, h), f(n, h), f(n, h), np.abs(f(4, n, h)) % 1, f(n, h)]
    outs = [f(n, 3 * h), f(n, 3 * h)]

    def run(kernel, parts):
        a = [x.copy() for x in ins]
        o = [np.full_like(x, np.nan) for x in outs]
        kernel(*a, *o, dtype(1), parts)
        return a + o
    want = run(R._gru_cell_backward, 0)
    for parts in (1, 2, 4):
        _same(run(R._gru_cell_backward_par, parts), want)


def test_rows_split_only_where_a_step_is_large():
    assert R._parts(1, 10**6) == 0 and R._parts(4, 8) == 0
    assert R._parts(32, 256) == min(R.nthreads(), 32) or R.nthreads() == 1
