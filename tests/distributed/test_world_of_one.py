"""rt.distributed without mpiexec: the capture error, a world of one, the sampler's shards.

Cheap on purpose (it runs in the main suite): no kernel beyond the creation of small tensors."""
import numpy as np
import pytest

import runtime as rt
from runtime.distributed import DistributedSampler

from ._mpi import LAUNCHED

COLLECTIVES = [
    ("all_reduce", lambda t: rt.distributed.all_reduce(t)),
    ("broadcast", lambda t: rt.distributed.broadcast(t)),
    ("all_gather", lambda t: rt.distributed.all_gather(t)),
    ("reduce_scatter", lambda t: rt.distributed.reduce_scatter(t)),
    ("send", lambda t: rt.distributed.send(t, 0)),
]


@pytest.mark.parametrize("name,fn", COLLECTIVES, ids=[c[0] for c in COLLECTIVES])
@pytest.mark.parametrize("autodiff", [False, True])
def test_capture_tensor_raises_distributed_device_error(name, fn, autodiff):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = rt.tensor([1.0, 2.0], device=cap)
        if autodiff:
            x = x.to(rt.autodiff(cap))
        with pytest.raises(rt.DistributedDeviceError) as e:
            fn(x)
        assert str(e.value) == f"Distributed operations are not supported for device {x.device}"
        assert str(x.device) == (f"autodiff({cap})" if autodiff else str(cap))
        assert isinstance(e.value, rt.errors.TensorRuntimeError)
        scope.complete(inputs=[x], outputs=[x])


def test_recv_onto_capture_device_raises():
    cap = rt.CaptureDevice()
    with pytest.raises(rt.DistributedDeviceError, match=f"^Distributed operations are not supported "
                       f"for device {cap}$"):
        rt.distributed.recv((2,), src=0, device=cap)


def test_error_is_exported():
    assert rt.DistributedDeviceError is rt.errors.DistributedDeviceError
    assert issubclass(rt.DistributedTimeoutError, rt.DistributedError)


@pytest.mark.skipif(LAUNCHED, reason="needs a world of one: runs without mpiexec (the main suite)")
def test_world_of_one():
    pytest.importorskip("mpi4py")
    d = rt.distributed
    d.init()
    d.init()                               # idempotent
    assert d.is_initialized() and d.world_size() == 1 and d.rank() == 0
    info = d.info()
    assert info["world_size"] == 1 and info["cuda_path"] in ("direct", "host staging")
    d.barrier()
    x = rt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    for op in d.REDUCE_OPS:
        y = d.all_reduce(x, op)
        assert y is not x and y.shape == x.shape and y.dtype == rt.float32
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert d.broadcast(x) is x
    np.testing.assert_array_equal(d.all_gather(x).numpy(), x.numpy()[None])
    np.testing.assert_array_equal(d.reduce_scatter(x, "max").numpy(), x.numpy())
    xi = rt.tensor(np.array([1, 2], np.int32))
    with pytest.raises(rt.DTypeError, match="all_reduce: op 'mean' needs a float tensor, got int32"):
        d.all_reduce(xi, "mean")
    with pytest.raises(rt.ArgumentValueError, match="op must be one of"):
        d.all_reduce(x, "avg")
    with pytest.raises(rt.ArgumentValueError, match=r"send: dst must be an int in \[0, 1\)"):
        d.send(x, 1)


def test_sampler_shards_cover_and_reshuffle():
    ds = list(range(10))
    shards = [DistributedSampler(ds, num_replicas=3, rank=r, seed=5) for r in range(3)]
    idx = [s.indices() for s in shards]
    assert [len(s) for s in shards] == [4, 4, 4] and all(len(i) == 4 for i in idx)
    allidx = np.concatenate(idx)
    assert set(allidx.tolist()) == set(range(10))            # padded: 12 = 10 + 2 repeats
    perm = np.random.default_rng(5).permutation(10)
    np.testing.assert_array_equal(idx[1], np.concatenate([perm, perm])[1:12:3])
    for s in shards:
        s.set_epoch(1)
    idx1 = [s.indices() for s in shards]
    assert not all(np.array_equal(a, b) for a, b in zip(idx, idx1))
    drop = [DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False, drop_last=True)
            for r in range(3)]
    assert [d.indices().tolist() for d in drop] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    with pytest.raises(rt.ArgumentValueError, match="rank must be an int in"):
        DistributedSampler(ds, num_replicas=2, rank=2)


def test_dataloader_takes_a_sampler():
    x = np.arange(10, dtype=np.float32)
    s = DistributedSampler(x, num_replicas=2, rank=1, shuffle=False)
    loader = rt.data.DataLoader(rt.data.TensorDataset(x), batch_size=2, sampler=s)
    assert len(loader) == 3
    got = np.concatenate([b.numpy() for (b,) in loader])
    np.testing.assert_array_equal(got, [1, 3, 5, 7, 9])
    with pytest.raises(rt.ArgumentValueError, match="mutually exclusive"):
        rt.data.DataLoader(rt.data.TensorDataset(x), sampler=s, shuffle=True)


@pytest.mark.skipif(LAUNCHED, reason="needs a world of one: runs without mpiexec (the main suite)")
def test_finalize_is_idempotent_and_final():
    pytest.importorskip("mpi4py")
    import subprocess
    import sys
    code = ("import runtime as rt\n"
            "d = rt.distributed\n"
            "assert not d.is_initialized()\n"
            "d.init(); d.finalize(); d.finalize()\n"
            "assert not d.is_initialized()\n"
            "try:\n"
            "    d.rank()\n"
            "except rt.DistributedError as e:\n"
            "    print('refused:', e)\n")
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=root)
    assert p.returncode == 0, p.stderr
    assert "refused: rt.distributed.init: MPI was finalized in this process" in p.stdout
