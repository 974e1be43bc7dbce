"""Core ops on cuda (the simulator or a GPU); every result is compared with NumPy in float64.
``RT_TEST_CPU_TOO=1`` parametrises the same tests over cpu as well (the main suite already covers
cpu, so the simulator job leaves it out to stay well under 5 minutes).  Shapes are tiny in
the simulator (a few hundred elements, matmul tiles <= 16x16) and realistic on a GPU."""
import os

import numpy as np
import pytest

import runtime as rt
from opinfo import OPS, cases, ids, rows

DEVICES = ["cpu", "cuda"] if os.environ.get("RT_TEST_CPU_TOO") == "1" else ["cuda"]
F32, F64, I32, I64, B = rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_
NP = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64, B: np.bool_}


@pytest.fixture(params=DEVICES)
def dev(request):
    if request.param == "cpu":
        return rt.cpu()
    return request.getfixturevalue("cuda_dev")


@pytest.fixture
def n(big):
    """A 'row' length: small in the simulator, large on a GPU."""
    return 4099 if big else 7


def data(shape, dtype, seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    if dtype is B:
        return rng.random(shape) < 0.5
    if dtype in (I32, I64):
        return rng.integers(int(low) - 2, int(high) + 3, size=shape).astype(NP[dtype])
    return rng.uniform(low, high, size=shape).astype(NP[dtype])


def close(got, want, rtol=None):
    g = got.numpy() if isinstance(got, rt.Tensor) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if g.dtype.kind == "f":
        tol = rtol or (2e-5 if g.dtype == np.float32 else 1e-11)
        np.testing.assert_allclose(g, w.astype(g.dtype), rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w.astype(g.dtype))


# ------------------------------------------------------------------------------- elementwise
# ops, references and cuda tolerances: the rows of tests/opinfo.py that run on cuda
@pytest.mark.parametrize("info,dtype", cases(rows("unary", device="cuda"), dtypes=(F32, F64)))
def test_unary(dev, info, dtype, n):
    low, high = info.domain
    x = data((3, n), dtype, low=low, high=high)
    t = rt.tensor(x, device=dev)
    got = info.fn(t)
    assert got.device == dev
    close(got, info.reference(x), rtol=info.tolerance(dtype, "cuda"))


#: unary rows that keep an integer dtype (neg, abs, sign, relu, floor, ceil, clamp...)
INT_UNARY = [r for r in rows("unary", device="cuda", dtype=I32) if r.out(I32) is I32]


@pytest.mark.parametrize("dtype", [I32, I64])
def test_unary_int(dev, dtype, n):
    x = data((2, n), dtype)
    t = rt.tensor(x, device=dev)
    for info in INT_UNARY:
        close(info.fn(t), info.reference(x))
    close(OPS["exp"].fn(t), OPS["exp"].reference(x))  # int -> float32


def test_logical_not_of_bool(dev, n):
    x = data((2, n), F32)
    close(rt.logical_not(rt.tensor(x > 0, device=dev)), ~(x > 0))


# each binary row with float32 and int64, except a dtype the row refuses (the bitwise ops and
# the shifts refuse float32)
BINARY_CASES = [pytest.param(info, dtype, id=f"{dtype.name}-{info.name}")
                for dtype in (F32, I64) for info in rows("binary", device="cuda")
                if dtype in info.dtypes or dtype not in info.rejects]


@pytest.mark.parametrize("info, dtype", BINARY_CASES)
def test_binary_broadcast_scalar(dev, info, dtype, n):
    a = data((3, n), dtype, seed=1)
    b = data((n,), dtype, seed=2)
    if info.nonzero:
        b = np.where(b == 0, 1, b).astype(b.dtype)
    ta, tb = rt.tensor(a, device=dev), rt.tensor(b, device=dev)
    f, ref = info.fn, info.reference
    tol = info.tolerance(info.out(dtype), "cuda") if info.out(dtype).is_float else None
    close(f(ta, tb), ref(a, b), rtol=tol)
    close(f(tb, ta), ref(b, a), rtol=tol)
    close(f(ta, 2), ref(a, np.float64(2)), rtol=tol)
    # strided (transposed) operand
    close(f(rt.permute(ta, 1, 0), rt.reshape(tb, n, 1)), ref(a.T, b.reshape(n, 1)), rtol=tol)


def test_pow_logical_nan(dev, n):
    a = np.abs(data((2, n), F32)) + 0.5
    ta = rt.tensor(a, device=dev)
    close(rt.pow(ta, 1.5), a.astype(np.float64) ** 1.5, rtol=1e-5)
    ia = rt.tensor(np.array([2, -1, 0, 3, 1], np.int64), device=dev)
    close(rt.pow(ia, rt.tensor(np.array([3, -3, 0, -1, -2], np.int64), device=dev)),
          np.array([8, -1, 1, 0, 1]))
    x = rt.tensor(np.array([np.nan, 1.0, -np.inf], np.float32), device=dev)
    y = rt.tensor(np.array([0.0, np.nan, 2.0], np.float32), device=dev)
    close(rt.maximum(x, y), np.array([np.nan, np.nan, 2.0]))
    close(rt.minimum(x, y), np.array([np.nan, np.nan, -np.inf]))
    bx, by = rt.tensor(np.array([True, False, True]), device=dev), rt.tensor(np.array([1, 0, 0]), device=dev)
    close(rt.logical_and(bx, by), np.array([True, False, False]))
    close(rt.logical_or(bx, by), np.array([True, False, True]))


def test_where_cast(dev, n):
    a = data((2, n), F32, seed=3)
    c = a > 0
    t = rt.tensor(a, device=dev)
    close(rt.where(rt.tensor(c, device=dev), t, 0.0), np.where(c, a, 0))
    f = np.array([1.5, -2.7, np.nan, np.inf, -np.inf, 3e9, -3e9, 0.0], np.float32)
    tf = rt.tensor(f, device=dev)
    close(tf.astype(rt.int32), np.array([1, -2, 0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31, 0]))
    close(tf.astype(rt.bool_), f != 0)
    close(rt.tensor(np.array([2 ** 40 + 5, -1]), device=dev).astype(rt.int32), np.array([5, -1]))
    close(t.astype(rt.float64), a.astype(np.float64))


# ------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("info", rows("reduce", device="cuda", dtype=F32), ids=ids)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_reduce(dev, info, axis, big):
    shape = (9, 130, 7) if big else (3, 5, 4)
    x = data(shape, F32, seed=4, low=-1, high=1.2 if info.name == "prod" else 1)
    t = rt.tensor(x, device=dev)
    f, tol = info.reference, info.tolerance(F32, "cuda")
    for keepdims in (False, True):
        got = info.fn(t, axis=axis, keepdims=keepdims)
        close(got, f(x, axis=axis, keepdims=keepdims), rtol=tol)
    # non-contiguous input (transposed view), reduced without a copy
    close(info.fn(rt.permute(t, 2, 0, 1), axis=0),
          f(np.transpose(x, (2, 0, 1)), axis=0, keepdims=False), rtol=tol)


def test_reduce_long_and_columns(dev, big):
    n = 1 << 20 if big else 300           # two-pass path (partials + finish)
    x = data((n,), F32, seed=5)
    t = rt.tensor(x, device=dev)
    close(rt.sum(t), x.astype(np.float64).sum(), rtol=1e-5)
    close(rt.max(t), x.max())
    m = data((257 if big else 70, 40), F32, seed=6)   # column path (sum over axis 0)
    tm = rt.tensor(m, device=dev)
    close(rt.sum(tm, axis=0), m.astype(np.float64).sum(0), rtol=1e-5)
    close(rt.min(tm, axis=0), m.min(0))
    close(rt.var(tm, axis=0, ddof=1), m.astype(np.float64).var(0, ddof=1), rtol=1e-5)


@pytest.mark.parametrize("dtype", [I32, I64, B])
def test_reduce_int_bool(dev, dtype, n):
    x = data((3, n), dtype, seed=7)
    t = rt.tensor(x, device=dev)
    close(rt.sum(t), x.astype(np.int64).sum())
    close(rt.sum(t, axis=1), x.astype(np.int64).sum(1))
    close(rt.max(t, axis=0), x.max(0))
    close(rt.min(t), x.min())


def test_reduce_nan_and_empty(dev):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf]], np.float32)
    t = rt.tensor(x, device=dev)
    close(rt.max(t, axis=1), np.array([np.nan, 5.0]))
    close(rt.min(t, axis=1), np.array([np.nan, -np.inf]))
    close(rt.logsumexp(t, axis=1), np.array([np.nan, np.log(np.exp(4.0) + np.exp(5.0))]), rtol=1e-5)
    e = rt.tensor(np.zeros((0, 3), np.float32), device=dev)
    close(rt.sum(e, axis=0), np.zeros(3))
    close(rt.prod(e, axis=0), np.ones(3))
    assert np.isnan(rt.mean(e, axis=0).numpy()).all()


@pytest.mark.parametrize("dtype", [F32, I32, B])
def test_arg_reduce(dev, dtype, n):
    x = data((4, n, 3), dtype, seed=8)
    t = rt.tensor(x, device=dev)
    for f, nf in ((r.fn, r.reference) for r in rows("arg_reduce", device="cuda")):
        close(f(t), nf(x))
        for axis in (0, 1, 2):
            close(f(t, axis=axis), nf(x, axis=axis))
            close(f(t, axis=axis, keepdims=True), np.expand_dims(nf(x, axis=axis), axis))
    y = np.array([[1.0, np.nan, 5.0, np.nan], [2.0, 2.0, 1.0, 2.0]], np.float32)
    ty = rt.tensor(y, device=dev)
    close(rt.argmax(ty, axis=1), np.array([1, 0]))
    close(rt.argmin(ty, axis=1), np.array([1, 2]))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_softmax(dev, dtype, n):
    x = data((3, n, 4), dtype, seed=9) * 10
    t = rt.tensor(x, device=dev)
    xd = x.astype(np.float64)
    for axis in (-1, 1, 0):
        for info in rows("softmax", device="cuda"):
            close(info.fn(t, axis=axis), info.reference(xd, axis=axis),
                  rtol=info.tolerance(dtype, "cuda"))


# ------------------------------------------------------------------------------- matmul
MATMUL = OPS["matmul"]


@pytest.mark.parametrize("dtype", MATMUL.dtypes)
def test_matmul(dev, dtype, big):
    m, k, nn = (300, 257, 130) if big else (13, 9, 11)
    a = data((m, k), dtype, seed=10)
    b = data((k, nn), dtype, seed=11)
    ta, tb = rt.tensor(a, device=dev), rt.tensor(b, device=dev)
    want = MATMUL.reference(a, b)
    tol = MATMUL.tolerance(dtype, "cuda") if dtype.is_float else None
    close(ta @ tb, want, rtol=tol)
    close(rt.permute(tb, 1, 0) @ rt.permute(ta, 1, 0), want.T, rtol=tol)    # strided operands
    close(ta[0] @ tb, want[0], rtol=tol)                                     # 1-D @ 2-D
    close(ta @ tb[:, 0], want[:, 0], rtol=tol)                               # 2-D @ 1-D
    ab = data((2, 1, m, k), dtype, seed=12)
    bb = data((3, k, nn), dtype, seed=13)
    close(MATMUL.fn(rt.tensor(ab, device=dev), rt.tensor(bb, device=dev)),
          MATMUL.reference(ab, bb), rtol=tol)                                # broadcast batch


# ------------------------------------------------------------------------------- shape / index
def test_views_and_copies(dev, n):
    x = data((2, 3, n), F32, seed=14)
    t = rt.tensor(x, device=dev)
    close(rt.permute(t, 2, 0, 1), np.transpose(x, (2, 0, 1)))
    close(rt.reshape(rt.permute(t, 2, 0, 1), -1), np.transpose(x, (2, 0, 1)).reshape(-1))
    close(t.T, x.T)
    close(rt.expand(rt.tensor(x[:, :1], device=dev), 2, 3, n), np.broadcast_to(x[:, :1], (2, 3, n)))
    close(rt.squeeze(rt.unsqueeze(t, 1), 1), x)
    close(rt.flatten(t), x.reshape(-1))
    close(t[1], x[1])
    close(t[:, ::2, 1:], x[:, ::2, 1:])
    close(t[..., None], x[..., None])
    close(t[:, ::-1], x[:, ::-1])
    close(rt.cat([t, t[:, :1]], axis=1), np.concatenate([x, x[:, :1]], 1))
    close(rt.stack([t, t], axis=2), np.stack([x, x], 2))
    parts = rt.split(t, 1, axis=1)
    for p, q in zip(parts, np.split(x, 3, axis=1)):
        close(p, q)
    y = x.copy()
    y[:, 1:3, ::2] = 7.0
    close(rt.slice_assign(t, (slice(None), slice(1, 3), slice(None, None, 2)), 7.0), y)
    v = data((2, 3), F32, seed=15)
    y = x.copy()
    y[:, :, 0] = v
    close(rt.slice_assign(t, (slice(None), slice(None), 0), rt.tensor(v, device=dev)), y)


def test_take_gather(dev, n):
    x = data((3, n), F32, seed=16)
    t = rt.tensor(x, device=dev)
    idx = np.array([[0, -1], [2, 1]])
    close(rt.take(t, rt.tensor(idx, device=dev), axis=0), np.take(x, idx, axis=0))
    close(rt.take(t, rt.tensor(np.array([n - 1, 0], np.int32), device=dev), axis=1),
          np.take(x, [n - 1, 0], axis=1))
    close(rt.take(t, rt.tensor(np.array([5, -2]), device=dev)), np.take(x, [5, -2]))
    gi = np.random.default_rng(0).integers(-3, 3, size=(2, n))
    close(rt.gather(t, 0, rt.tensor(gi, device=dev)), np.take_along_axis(x, gi % 3, 0))
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 with size 3"):
        rt.take(t, rt.tensor(np.array([0, 7, 9]), device=dev), axis=0)
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for axis 0 with size 3"):
        rt.gather(t, 0, rt.tensor(np.full((1, n), -4), device=dev))


@pytest.mark.parametrize("dtype", [F32, I64, B])
def test_scatter_keeps_the_last_write_as_on_cpu(dev, dtype, n):
    """Duplicate indices: the last write in index order wins on cuda as on cpu (the bits)."""
    x = data((3, n), dtype, seed=19)
    src = data((5, n), dtype, seed=20)
    idx = np.random.default_rng(2).integers(-3, 3, size=(5, n))        # repeats, negatives
    want = rt.scatter(rt.tensor(x), 0, rt.tensor(idx), rt.tensor(src))
    got = rt.scatter(rt.tensor(x, device=dev), 0, rt.tensor(idx, device=dev),
                     rt.tensor(src, device=dev))
    assert got.device == dev and got.dtype is dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", [F32, F64, I32, I64, B])
def test_scatter_add_matches_cpu(dev, dtype, n):
    """Same values as the cpu set (floats within rounding: cuda adds repeats atomically, in no
    fixed order); views as operands; the first bad index raises before anything is written."""
    x = data((3, n), dtype, seed=17)
    src = data((5, n + 3), dtype, seed=18)
    idx = np.random.default_rng(1).integers(-3, 3, size=(4, n))        # repeats, negatives
    t, s = rt.tensor(x, device=dev), rt.tensor(src, device=dev)
    for axis, ii in ((0, idx), (-1, idx[:3, :2] % n), (1, np.full((2, 9), n - 1))):
        want = rt.scatter_add(rt.tensor(x), axis, rt.tensor(ii), rt.tensor(src))
        got = rt.scatter_add(t, axis, rt.tensor(ii.astype(np.int32), device=dev), s)
        assert got.device == dev and got.dtype is dtype
        close(got, want.numpy(), rtol=1e-5 if dtype is F32 else None)
    row = rt.tensor(np.array([[2], [0], [2]]), device=dev).expand(3, n)    # stride-0 index
    close(rt.scatter_add(t.T, 1, row.T, s[::-1].T),
          rt.scatter_add(rt.tensor(x).T, 1, rt.tensor(np.array([[2], [0], [2]])).expand(3, n).T,
                         rt.tensor(src)[::-1].T).numpy(), rtol=1e-5 if dtype is F32 else None)
    with pytest.raises(rt.IndexOutOfRangeError,
                       match=r"^scatter_add: index -4 is out of bounds for axis 0 with size 3"):
        rt.scatter_add(t, 0, rt.tensor(np.array([[0, -4, 3]]), device=dev), s)


def test_take_gather_backward_on_cuda(dev, n):
    ad = rt.autodiff(dev)
    x = data((3, n), F32, seed=19)
    w = rt.tensor(x, device=ad).require_grad()
    idx = np.array([2, 0, 2, -1])
    gi = np.random.default_rng(2).integers(0, 3, size=(2, n))
    loss = (rt.take(w, rt.tensor(idx, device=dev), axis=0).sum() * 2.0
            + rt.gather(w, 0, rt.tensor(gi, device=dev)).sum())
    got = w.grad(loss.backward())
    assert got.device == dev
    want = np.zeros((3, n))
    np.add.at(want, idx % 3, 2.0)
    np.add.at(want, (gi, np.arange(n)), 1.0)
    close(got, want)


# ------------------------------------------------------------------------------- creation
def test_creation(dev, n):
    close(rt.zeros(2, n, device=dev), np.zeros((2, n)))
    close(rt.full((2, 3), 2.5, device=dev), np.full((2, 3), 2.5))
    close(rt.full((2, 3), 7, dtype=rt.int32, device=dev), np.full((2, 3), 7))
    close(rt.arange(n, device=dev), np.arange(n))
    close(rt.arange(0.5, 3.0, 0.25, device=dev), np.arange(0.5, 3.0, 0.25))
    close(rt.eye(3, 4, device=dev), np.eye(3, 4))
    assert rt.empty(0, 3, device=dev).numpy().shape == (0, 3)


def test_random_matches_cpu(cuda_dev, big):
    shape = (64, 1000) if big else (5, 7)
    for dtype in (rt.float32, rt.float64):
        rt.manual_seed(123, device=rt.cpu())
        rt.manual_seed(123, device=cuda_dev)
        c = rt.rand(*shape, dtype=dtype, device=rt.cpu()).numpy()
        g = rt.rand(*shape, dtype=dtype, device=cuda_dev).numpy()
        np.testing.assert_array_equal(g, c)          # bit-for-bit
        cn = rt.randn(*shape, dtype=dtype, device=rt.cpu()).numpy()
        gn = rt.randn(*shape, dtype=dtype, device=cuda_dev).numpy()
        np.testing.assert_allclose(gn, cn, rtol=1e-13 if dtype is rt.float64 else 1e-6, atol=1e-13)
