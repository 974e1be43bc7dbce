"""The serial twins of the ``prange`` kernels whose parallel variant builds in the background
(``_background.parallel_ready``): the 2x2 max pool and its backward, the batched im2col, swap01,
the masked row shift of the conv weight gradient and the row reduction.  Each twin runs its
kernel's tasks in order, so it gives the parallel variant's bits; the entry points run it while
``parallel_ready`` says no.  Tiny float32 shapes, sized so that the parallel variants split the
work into several tasks."""
import numpy as np
import pytest

from jit_kernels.cpu import conv as C, pool as P, reduce as R
from jit_kernels.cpu._layout import nthreads


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture
def deferred(monkeypatch):
    """Every ``parallel_ready`` of the modules under test says no (a background build under
    way); returns the kernels it was asked about."""
    asked = []

    def not_yet(fn, args):
        asked.append(fn)
        return False

    for mod in (C, P, R):
        monkeypatch.setattr(mod, "parallel_ready", not_yet)
    return asked


def _pool_input(H, W):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (2, 3, H, W)).astype(np.float32)     # ties everywhere
    x[0, 0, 0, :3] = np.nan
    x[1, 2, :2, :2] = np.nan
    x[1, 1, 4:6, 2:4] = -0.0
    return x


# (H, W): a constant-width vertical pass (OW 2, 1) and the run-time one (OW 16), each with
# more row pairs than one block holds, so the prange variants run several tasks
@pytest.mark.parametrize("hw", [(400, 4), (1040, 2), (96, 32)])
def test_2x2_max_pool_serial_twins_give_the_parallel_bits(hw):
    H, W = hw
    x = _pool_input(H, W)
    xf, ow, nt = x.reshape(-1), W // 2, nthreads()
    for relu in (False, True):
        a = np.empty(x.size // 4, np.float32)
        b = np.full_like(a, 7)
        P._max2_fwd(xf, ow, a, nt, relu, np.float32(0))
        P._max2_fwd_serial(xf, ow, b, nt, relu, np.float32(0))
        _same_bits(a, b)
    g = np.random.default_rng(4).standard_normal(x.size // 4).astype(np.float32)
    a = np.empty_like(xf)
    b = np.full_like(xf, 7)
    P._max2_bwd(xf, g, ow, a, nt)
    P._max2_bwd_serial(xf, g, ow, b, nt)
    _same_bits(a, b)


def test_2x2_max_pool_entry_points_run_the_twins_while_the_build_is_under_way(deferred):
    H, W = 400, 4
    x = _pool_input(H, W)
    rows = (2 * np.arange(H // 2), 2 * np.arange(H // 2) + 2, 1)
    cols = (2 * np.arange(W // 2), 2 * np.arange(W // 2) + 2, 1)
    g = np.random.default_rng(5).standard_normal((2, 3, H // 2, W // 2)).astype(np.float32)
    fwd, _ = P.max_pool2d(x, rows, cols, False)
    fused = P.max_pool2d_relu(x, rows, cols)
    bwd = P.max_pool2d_backward(x, g, rows, cols)
    assert deferred == [P._max2_fwd, P._max2_fwd, P._max2_bwd]
    xf, nt = x.reshape(-1), nthreads()
    for relu, got in ((False, fwd), (True, fused)):
        want = np.empty(x.size // 4, np.float32)
        P._max2_fwd(xf, W // 2, want, nt, relu, np.float32(0))
        _same_bits(got.reshape(-1), want)
    want = np.empty_like(xf)
    P._max2_bwd(xf, g.reshape(-1), W // 2, want, nt)
    _same_bits(bwd.reshape(-1), want)


@pytest.mark.parametrize("stride,pad,dil", [((1, 1), (1, 1), (1, 1)), ((2, 3), (0, 2), (2, 1))])
def test_im2col_serial_twin_gives_the_parallel_bits(stride, pad, dil, deferred):
    x = np.random.default_rng(6).standard_normal((2, 3, 9, 11)).astype(np.float32)
    kernel = (3, 2)
    grid = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(x.shape[2:], kernel, stride, pad, dil))
    got = C.im2col_batched(x, kernel, stride, pad, dil, grid)      # the twin (deferred)
    assert deferred == [C._im2col_b]
    want = np.full_like(got, 7)
    C._im2col_b(x.reshape(-1), want.reshape(-1), *x.shape, *kernel, *stride, *pad, *dil, *grid)
    _same_bits(got, want)


def test_swap01_serial_twin_gives_the_parallel_bits(deferred):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 7, 33)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    for b in (None, bias):
        got = C.swap01(x, b)                                         # the twin (deferred)
        want = np.full((7, 5, 33), 7, np.float32)
        C._swap01(x, want, x[:1, 0, 0] if b is None else b, b is not None)
        _same_bits(got, want)
    assert deferred == [C._swap01, C._swap01]


def _rows_args(x, out, nsplit):
    Rn, K = x.shape
    return (x.reshape(-1), 0, np.array([Rn]), np.array([K]), np.array([K]), np.array([1]),
            np.zeros(Rn), out, K, 1.0 / K, nsplit)


def test_row_reduction_serial_twin_gives_the_parallel_bits():
    """The twin splits each row into the same chunks and combines them in the same order, so
    it matches for any split (a row split over several tasks included)."""
    x = np.random.default_rng(8).standard_normal((3, 20_000)).astype(np.float32)
    x[1, :5000] = -0.0
    mod = R._module("sum", x.dtype, np.dtype(np.float64), x.dtype)
    for nsplit in (1, 3):
        a = np.empty(3, np.float32)
        b = np.full_like(a, 7)
        mod.rows_par(*_rows_args(x, a, nsplit))
        mod.rows_par_serial(*_rows_args(x, b, nsplit))
        _same_bits(a, b)


@pytest.mark.parametrize("shape", [(1, 40_000), (64, 600)])
def test_row_reduction_entry_points_run_the_twin_while_the_build_is_under_way(shape, deferred):
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    F32 = np.dtype(np.float32)
    got = R.reduce("sum", x, (1,), False, F32, {})                 # the one-pass plan
    got_t = R.reduce("sum", x.T, (0,), False, F32, {})             # the general path (a view)
    mod = R._module("sum", F32, np.dtype(np.float64), F32)
    assert deferred == [mod.rows_par, mod.rows_par]
    nt = nthreads()
    nsplit = 1 if shape[0] >= 2 * nt else max(1, min(-(-2 * nt // shape[0]), -(-shape[1] // 4096)))
    want = np.empty(shape[0], np.float32)
    mod.rows_par(*_rows_args(x, want, nsplit))
    _same_bits(got, want)
    _same_bits(got_t, want)


def test_shift_masked_serial_twin_gives_the_parallel_bits(deferred):
    x = np.random.default_rng(10).standard_normal((2, 3, 6, 7)).astype(np.float32)
    kw, pt, pl, dw, hp = 3, 1, 1, 1, 8
    got = C.shift_rows(x, kw, pt, pl, dw, hp, 7)          # ow == W: the twin (deferred)
    assert deferred == [C._shift_masked]
    sh, mask = C._shift_mask(6, 7, kw, pt, pl, dw, hp)
    want = np.full_like(got, 7)
    C._shift_masked(x.reshape(-1), want, 6, 42, kw, hp * 7, sh, mask, np.float32(0))
    _same_bits(got, want)


def test_fused_flat_elementwise_runs_the_serial_kernel_on_the_same_chunks_while_deferred(
        monkeypatch):
    from runtime.capture.fuse import FusedInput, FusedOp, FusedProgram
    from jit_kernels.cpu import fused as Fu
    n = 40_000                                                      # above PAR_THRESHOLD
    prog = FusedProgram(
        kind="elementwise", shape=(n,), inputs=(FusedInput((n,), "float32"),) * 2, scalars=(),
        ops=(FusedOp("mul", (("in", 0), ("in", 1)), "float32", "float32"),
             FusedOp("exp", (("op", 0),), "float32", "float32")),
        outputs=(1,), output_shapes=((n,),))
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    want = Fu.run_elementwise(prog, [a, b])[0].copy()               # flat_par (built in-process)
    asked = []
    monkeypatch.setattr(Fu, "parallel_ready", lambda fn, args: asked.append(fn) or False)
    got = Fu.run_elementwise(prog, [a, b])[0]
    mod = Fu._module(prog, "flat", None)
    assert asked == [mod.flat_par]
    _same_bits(got, want)
