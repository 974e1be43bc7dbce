"""Literal operands through save/load and old formats; the run cache; bind/compile refusing an
inconsistent graph; the one plan runner; the capture-device registry not keeping devices."""
import gc
import json
import struct
import weakref
from pathlib import Path

import numpy as np
import pytest

import runtime as rt
from runtime.capture import replay
from runtime.capture.serialize import FORMAT_VERSION, MAGIC

DATA = Path(__file__).parent / "data"
X = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) / 2


def _header(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack_from("<Q", data, len(MAGIC))
    return json.loads(data[len(MAGIC) + 8:len(MAGIC) + 8 + n])


# ---- literal operands ---------------------------------------------------------------------
def _literals(x):
    i = rt.tensor(np.array([3, 1, 2], np.int64), device=x.device)
    return (rt.where(x > 0.25, x, float("-inf")), 2 ** i + (i > 1), x * 2.0 - 1,
            rt.logical_or(x > 1.0, False), rt.where(x > 0, float("nan"), x), 1.5 / (x + 3))


def test_literal_operands_round_trip_with_their_types(tmp_path):
    g = rt.capture(_literals, X)
    p = _saved(g)
    h = rt.load_graph(p)
    assert h == g.canonical()
    lits = [(o.op, a) for o in h.operations for a in o.args if not isinstance(a, rt.TensorIr)]
    assert [(op, type(a)) for op, a in lits] == [
        ("gt", float), ("where", float), ("pow", int), ("gt", int), ("mul", float), ("sub", int),
        ("gt", float), ("logical_or", bool), ("gt", int), ("where", float), ("add", int),
        ("div", float)]
    assert lits[1][1] == float("-inf") and lits[9][1] != lits[9][1]   # -inf and nan survive
    assert all("scalars" not in o.attrs for o in h.operations)
    header = _header(p)
    assert header["version"] == FORMAT_VERSION == 3
    where = next(o for o in header["operations"] if o["op"] == "where")
    assert where["operands"][2] == {"literal": {"float": "-inf"}} and "inputs" not in where
    for a, b in zip(h.run(X), _literals(rt.tensor(X))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    h.save(tmp_path / "again.rtg")
    assert (tmp_path / "again.rtg").read_bytes() == p.read_bytes()


def test_str_shows_literals_in_call_order():
    g = rt.capture(lambda x: 2.0 - x, X)
    assert str(g.operations[-1]).endswith(f"= sub(2.0, %{g.inputs[0]})")


def test_version_2_file_written_by_the_base_commit_loads():
    """``data/v2_model.rtg``: written by ``graph.save`` of commit 39c0d91 (format 2, scalars in
    ``attrs["scalars"]``); it loads as literal operands, equal to the same model captured now."""
    from tests.capture.data_models import v2_model
    assert _header(DATA / "v2_model.rtg")["version"] == 2
    g = rt.load_graph(DATA / "v2_model.rtg")
    assert g == rt.capture(v2_model, X).canonical()
    assert all("scalars" not in o.attrs for o in g.operations)
    sub = next(o for o in g.operations if o.op == "pow")
    assert sub.operands()[0] == 2 and type(sub.operands()[0]) is int
    for a, b in zip(g.run(X), v2_model(rt.tensor(X))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(g.compile()(X), v2_model(rt.tensor(X))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_version_2_file_saves_as_version_3(tmp_path):
    g = rt.load_graph(DATA / "v2_model.rtg")
    g.save(tmp_path / "v3.rtg")
    assert _header(tmp_path / "v3.rtg")["version"] == 3
    assert rt.load_graph(tmp_path / "v3.rtg") == g


# ---- graph.run caches its executable ---------------------------------------------------------
def _count_executables(monkeypatch):
    made = []
    real = replay.Executable

    class Counting(real):
        def __init__(self, *a, **k):
            made.append(a[1] if len(a) > 1 else k.get("device"))
            super().__init__(*a, **k)

    monkeypatch.setattr(replay, "Executable", Counting)
    return made


def test_second_run_reuses_the_executable(monkeypatch):
    made = _count_executables(monkeypatch)
    g = rt.capture(lambda x: rt.relu(x @ rt.tensor(np.eye(4, dtype=np.float32), device=x.device)) * 2.0, X)
    a = g.run(X)[0].numpy()
    b = g.run(X + 1)[0].numpy()
    c = g.run(X, device="cpu")[0].numpy()
    assert len(made) == 1
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, np.maximum(X + 1, 0) * 2)
    ad = rt.autodiff(rt.cpu())
    g.run(X, device=ad)
    g.run(X, device=rt.autodiff(rt.cpu()))
    assert len(made) == 2
    g.run(X, device=rt.autodiff(rt.cpu(), checkpointing="balanced"))
    assert len(made) == 3


def test_cached_run_never_sees_trained_parameters():
    """``run`` binds with ``trainable=False``: constants stay untracked, and parameters
    trained through ``bind`` on the same device are another executable's."""
    w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    g = rt.capture(lambda x: (x @ rt.tensor(w, device=x.device)).sum(), np.ones((3, 2), np.float32))
    ad = rt.autodiff(rt.cpu())
    x = np.full((3, 2), 0.5, np.float32)
    (first,) = g.run(x, device=ad)
    exe = g.bind(ad)
    (p,) = exe.parameters()
    assert p.requires_grad
    (loss,) = exe(x)
    gw = p.grad(loss.backward())
    exe.params[next(iter(exe.params))] = (p.inner() - gw * 10.0).to(ad).require_grad()
    assert exe(x)[0].item() != first.item()          # the bound executable trained
    (again,) = g.run(x, device=ad)
    assert again.item() == first.item()              # the cached run did not
    (cached,) = g._run_cache.values()
    assert not any(t.requires_grad for t in cached.parameters())
    xt = rt.tensor(x, device=ad).require_grad()
    (y,) = g.run(xt, device=ad)
    assert xt.grad(y.backward()) is not None         # gradients still reach the inputs


# ---- bind / compile check the graph first ------------------------------------------------------
def _inconsistent():
    g = rt.capture(lambda x: rt.relu(x) + 1.0, X)
    relu = next(o for o in g.operations if o.op == "relu")
    bad = rt.TensorIr(relu.outputs[0].id, (200, 4), relu.outputs[0].dtype)
    relu.outputs = (bad,)
    g._tensors[bad.id] = bad
    return g


@pytest.mark.parametrize("use", [lambda g: g.bind(), lambda g: g.bind(rt.autodiff(rt.cpu())),
                                 lambda g: g.compile(), lambda g: g.run(X)])
def test_bind_and_compile_refuse_an_inconsistent_graph(use):
    g = _inconsistent()
    with pytest.raises(rt.CaptureError, match=r"invalid graph: operation 1 \('relu'\) gives "
                                              r"float32\[2, 4\], the graph declares float32\[200, 4\]") as e:
        use(g)
    assert e.value.kind == "InvalidGraph"


def test_the_check_runs_once_per_graph(monkeypatch):
    from runtime.capture import check
    calls = []
    real = check.check_graph
    monkeypatch.setattr(check, "check_graph", lambda g: (calls.append(g), real(g))[1])
    g = rt.capture(lambda x: rt.exp(x) * 2.0, X)
    g.bind()
    g.bind()
    g.compile()
    g.run(X)
    assert len(calls) == 1
    p = rt.capture(lambda x: x - 1, X)
    g2 = rt.load_graph(_saved(p))
    assert g2._checked            # load_graph checked it ...
    g2.bind()
    assert len(calls) == 1        # ... and bind does not again


def _saved(g):
    import tempfile
    path = Path(tempfile.mkdtemp()) / "g.rtg"
    g.save(path)
    return path


# ---- one plan runner -------------------------------------------------------------------------
def test_bind_compile_and_folding_share_the_plan_runner(monkeypatch):
    from runtime.capture import compiled, plan
    built = []
    real = plan.build_plan

    def spy(device, units, *rest):
        units = list(units)
        built.append([u[0] for u in units])
        return real(device, units, *rest)

    monkeypatch.setattr(plan, "build_plan", spy)
    monkeypatch.setattr(replay, "build_plan", spy)
    monkeypatch.setattr(compiled, "build_plan", spy)
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    g = rt.capture(lambda x: rt.relu(x @ rt.transpose(rt.tensor(w, device=x.device), 0, 1)) + 1.0, X)
    g.bind()
    exe = g.compile()
    assert exe.folded and len(built) == 3
    assert built[0] == ["op"] * 4                   # bind: permute, matmul, relu, add
    assert built[1] == ["op"]                       # folding: the weight's transpose
    assert "fused" in built[2]                      # compile: a matmul + epilogue program
    np.testing.assert_allclose(exe(X)[0].numpy(), g.run(X)[0].numpy(), rtol=1e-6)


def test_plain_replay_steps_are_prepared_kernels():
    g = rt.capture(lambda x: rt.exp(x * 2.0) + x, X)
    exe = g.bind()
    assert len(exe._plan) == 3 and exe._plan.plain
    ad = g.bind(rt.autodiff(rt.cpu()))
    assert not ad._plan.plain
    np.testing.assert_array_equal(ad(X)[0].numpy(), exe(X)[0].numpy())


# ---- the capture-device registry -----------------------------------------------------------------
def test_capture_devices_are_not_kept_alive_by_the_registry():
    dev = rt.CaptureDevice()
    name = str(dev)
    assert rt.device(name) is dev
    with dev.capture_scope() as scope:
        x = rt.tensor(X, device=dev)
        scope.complete(inputs=[x], outputs=[x * 2.0])
    g = scope.graph
    ref = weakref.ref(dev)
    del dev, scope, x
    gc.collect()
    assert ref() is None
    with pytest.raises(rt.DeviceError, match=f"{name} does not exist"):
        rt.device(name)
    np.testing.assert_array_equal(g.run(X)[0].numpy(), X * 2.0)  # the graph does not need it
    assert rt.CaptureDevice().id > int(name.split(":")[1])       # ids are never reused


def test_a_live_tensor_keeps_its_device_parseable():
    dev = rt.CaptureDevice()
    name = str(dev)
    with dev.capture_scope() as scope:
        x = rt.tensor(X, device=dev)
        scope.complete(inputs=[x], outputs=[x])
    del dev, scope
    gc.collect()
    assert rt.device(name) is x.device
    assert x.numpy().tolist() == X.tolist()
