"""rt.distributed across ranks: run under ``mpiexec -n 2`` (``.ci/run``; also ``-n 3``); skipped
otherwise.  Every rank runs the same tests in the same order; NumPy is the oracle: each rank
can rebuild every other rank's input from its rank number."""
import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F

from ._mpi import LAUNCHED, world_size

pytestmark = pytest.mark.skipif(not LAUNCHED or world_size() < 2,
                                reason="needs mpiexec ranks: run under mpiexec -n 2 or more (see .ci/run)")

D = rt.distributed
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


@pytest.fixture(scope="module", autouse=True)
def world():
    D.init(timeout=60)
    yield
    D.barrier()


def _data(rank, dtype, shape=(3, 5)):
    g = np.random.default_rng(100 + rank)
    if dtype == "bool":
        return g.random(shape) < 0.5
    if dtype.startswith("int"):
        return g.integers(-3, 4, size=shape).astype(dtype)
    return g.uniform(0.5, 1.5, size=shape).astype(dtype)


def _ref(op, dtype, xs):
    a = np.stack([x.astype(np.float64) for x in xs])
    if dtype == "bool":
        return (a.any(0) if op in ("sum", "max") else a.all(0))
    r = {"sum": a.sum(0), "mean": a.mean(0), "max": a.max(0), "min": a.min(0), "prod": a.prod(0)}[op]
    return r.astype(dtype)


def _check(got, want, dtype):
    g = got.numpy()
    assert g.dtype == np.dtype(dtype) and g.shape == want.shape
    if dtype.startswith("float"):
        np.testing.assert_allclose(g, want, rtol=1e-6 if dtype == "float32" else 1e-12)
    else:
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_every_op_and_dtype(dtype):
    n, r = D.world_size(), D.rank()
    xs = [_data(k, dtype) for k in range(n)]
    x = rt.from_numpy(xs[r])
    for op in D.REDUCE_OPS:
        if op == "mean" and dtype in ("int32", "int64", "bool"):
            with pytest.raises(rt.DTypeError, match="all_reduce: op 'mean'"):
                D.all_reduce(x, op)
            continue
        y = D.all_reduce(x, op)
        assert y.device == rt.cpu() and y.shape == x.shape and y is not x
        _check(y, _ref(op, dtype, xs), dtype)
    np.testing.assert_array_equal(x.numpy(), xs[r])          # the input is untouched


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_all_gather_reduce_scatter(dtype):
    n, r = D.world_size(), D.rank()
    xs = [_data(k, dtype, (2 * n, 3)) for k in range(n)]
    x = rt.from_numpy(xs[r])
    b = D.broadcast(x, src=n - 1)
    np.testing.assert_array_equal(b.numpy(), xs[n - 1])
    assert (b is x) == (r == n - 1)
    g = D.all_gather(x)
    assert g.shape == (n, 2 * n, 3)
    np.testing.assert_array_equal(g.numpy(), np.stack(xs))
    ops = ("sum", "max") if dtype == "bool" else ("sum", "min")
    for op in ops:
        rs = D.reduce_scatter(x, op)
        assert rs.shape == (2, 3)
        _check(rs, _ref(op, dtype, xs)[2 * r:2 * r + 2], dtype)


def test_views_scalars_and_empty():
    n, r = D.world_size(), D.rank()
    xs = [_data(k, "float32", (4, 3)) for k in range(n)]
    x = rt.from_numpy(xs[r]).T[::2]                       # a non-contiguous view
    np.testing.assert_allclose(D.all_reduce(x).numpy(), sum(xs).T[::2], rtol=1e-6)
    s = D.all_reduce(rt.tensor(float(r + 1)), "max")
    assert s.shape == () and s.item() == n
    e = D.all_reduce(rt.zeros(0, 2))
    assert e.shape == (0, 2)
    with pytest.raises(rt.ShapeError, match=f"axis 0 of the input must be a multiple of the world "
                       f"size {n}"):
        D.reduce_scatter(rt.zeros(n + 1, 2))


def test_autodiff_tensors_take_part_untracked():
    n, r = D.world_size(), D.rank()
    ad = rt.autodiff(rt.cpu())
    x = rt.tensor([1.0 + r, 2.0], device=ad).require_grad()
    y = D.all_reduce(x)
    assert y.device == ad and not y.requires_grad           # not recorded on the tape
    np.testing.assert_allclose(y.inner().numpy(), [sum(1.0 + k for k in range(n)), 2.0 * n])
    loss = (x * y).sum()                                    # y is a constant to autodiff
    g = x.grad(loss.backward())
    np.testing.assert_allclose(g.numpy(), y.inner().numpy())
    assert D.all_gather(x).device == ad


def test_send_recv_and_size_mismatch():
    n, r = D.world_size(), D.rank()
    nxt, prv = (r + 1) % n, (r - 1) % n
    msg = rt.tensor(np.full(3, r, np.int64))
    if r % 2 == 0:
        D.send(msg, nxt)
        got = D.recv((3,), rt.int64, src=prv)
    else:
        got = D.recv((3,), rt.int64, src=prv)
        D.send(msg, nxt)
    np.testing.assert_array_equal(got.numpy(), [prv] * 3)
    if r == 0:
        D.send(rt.zeros(3), 1, tag=7)
        D.send(rt.zeros(2), 1, tag=8)
    elif r == 1:
        with pytest.raises(rt.ShapeError, match="recv: the message from rank 0 does not fit shape"):
            D.recv((2,), src=0, tag=7)
        with pytest.raises(rt.ShapeError, match=r"recv: rank 0 sent 8 bytes, shape \(3,\) float32 "
                           r"needs 12"):
            D.recv((3,), src=0, tag=8)
    D.barrier()


def _model(hidden=8):
    return nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 3))   # cheap to compile


def _batch(n, per_rank=6):
    g = np.random.default_rng(7)
    x = g.standard_normal((n * per_rank, 4)).astype(np.float32)
    y = g.standard_normal((n * per_rank, 3)).astype(np.float32)
    return x, y


@pytest.mark.parametrize("bucket_cap_mb", [25.0, 1e-4])     # one bucket; one per parameter
def test_ddp_gradients_equal_single_process_on_the_whole_batch(bucket_cap_mb):
    n, r = D.world_size(), D.rank()
    ad = rt.autodiff(rt.cpu())
    rt.manual_seed(r)                                   # different inits: DDP copies rank 0's
    ddp = D.DistributedDataParallel(_model().to(ad), bucket_cap_mb=bucket_cap_mb)
    assert len(ddp.reducer.buckets) == (1 if bucket_cap_mb > 1 else 4)
    for p in ddp.module.parameters():
        allv = D.all_gather(p.value.inner()).numpy()
        np.testing.assert_array_equal(allv, np.broadcast_to(allv[0], allv.shape))
    x, y = _batch(n)
    lo, hi = r * 6, (r + 1) * 6
    loss = F.mse_loss(ddp(rt.tensor(x[lo:hi]).to(ad)), rt.tensor(y[lo:hi]).to(ad))
    grads = loss.backward()
    ref = _model().to(ad)
    ref.load_state_dict(ddp.module.state_dict())
    ref_grads = F.mse_loss(ref(rt.tensor(x).to(ad)), rt.tensor(y).to(ad)).backward()
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad(grads).numpy(), q.grad(ref_grads).numpy(),
                                   rtol=1e-5, atol=1e-6)
    # the same by hand, after a backward the forward did not arm
    plain = F.mse_loss(ddp.module(rt.tensor(x[lo:hi]).to(ad)), rt.tensor(y[lo:hi]).to(ad))
    g2 = D.average_gradients(plain.backward(), ddp.module.parameters())
    for p, q in zip(ddp.module.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad(g2).numpy(), q.grad(ref_grads).numpy(), rtol=1e-5, atol=1e-6)


def test_ddp_parameter_used_on_one_rank_only():
    n, r = D.world_size(), D.rank()
    ad = rt.autodiff(rt.cpu())
    a, b = nn.Linear(2, 1), nn.Linear(2, 1)
    m = nn.ModuleList([a, b]).to(ad)
    reducer = D.DistributedDataParallel(m).reducer
    reducer.arm()
    x = rt.ones(1, 2).to(ad)
    out = (a(x) + b(x)) if r == 0 else a(x)
    grads = out.sum().backward()
    np.testing.assert_allclose(a.weight.grad(grads).numpy(), [[1.0, 1.0]])
    np.testing.assert_allclose(b.weight.grad(grads).numpy(), [[1.0 / n, 1.0 / n]])


def test_ddp_different_shapes_fail_on_every_rank():
    r = D.rank()
    with pytest.raises(rt.DistributedError, match="the ranks' models differ") as e:
        D.DistributedDataParallel(_model(hidden=8 if r == 0 else 9).to(rt.autodiff(rt.cpu())))
    assert "rank 1 differs from rank 0" in str(e.value) and "Every rank must build the same model" in str(e.value)
    D.barrier()                                          # the world is still usable


def test_sampler_shards_are_disjoint_and_cover():
    n, r = D.world_size(), D.rank()
    s = D.DistributedSampler(list(range(11)), seed=3)
    assert (s.num_replicas, s.rank) == (n, r)
    got = D.all_gather(rt.tensor(s.indices())).numpy()
    assert got.shape == (n, -(-11 // n))
    assert set(got.ravel().tolist()) == set(range(11))


def test_small_dtypes_reduce_in_their_compute_dtype():
    """float16/bfloat16 are stored as uint16 bits and MPI has no half arithmetic: a sum of the
    bits would be garbage; int8 sums wrap as int8 (PyTorch's rule)."""
    n, r = D.world_size(), D.rank()
    x = rt.tensor([1.5, -2.25, 1000.0], dtype=rt.float16) * float(r + 1)
    y = D.all_reduce(x, "sum")
    assert y.dtype is rt.float16
    tri = n * (n + 1) / 2
    np.testing.assert_array_equal(y.numpy(), (np.array([1.5, -2.25, 1000.0]) * tri).astype(np.float16))
    b = D.all_reduce(rt.tensor([3.0, 0.5], dtype=rt.bfloat16), "mean")
    assert b.dtype is rt.bfloat16 and b.tolist() == [3.0, 0.5]
    i = D.all_reduce(rt.tensor([100, -100], dtype=rt.int8), "sum")
    assert i.dtype is rt.int8
    want = (np.array([100, -100], np.int64) * n).astype(np.int8)       # wraps modulo 256
    np.testing.assert_array_equal(i.numpy(), want)
    s = D.reduce_scatter(rt.tensor(np.full((n, 2), 0.5), dtype=rt.float16), "sum")
    assert s.dtype is rt.float16 and s.numpy().tolist() == [[0.5 * n, 0.5 * n]]


def test_wide_unsigned_dtypes_reduce_as_themselves():
    """uint32/uint64 go to MPI as themselves: uint64's int64 bits would order 2**63 below 0."""
    n, r = D.world_size(), D.rank()
    top = 1 << 63
    x = rt.tensor([top + r, r], dtype=rt.uint64)
    mx, mn = D.all_reduce(x, "max"), D.all_reduce(x, "min")
    assert mx.dtype is rt.uint64 and mx.tolist() == [top + n - 1, n - 1]
    assert mn.tolist() == [top, 0]
    u = D.all_reduce(rt.tensor([(1 << 32) - 1, 1], dtype=rt.uint32), "sum")
    assert u.dtype is rt.uint32 and u.tolist() == [(1 << 32) - n, n]        # wraps mod 2**32
