"""graph.save / rt.load_graph: exact round trip, canonical ids, byte-identical saves."""
import numpy as np
import pytest

import runtime as rt


def _model(x):
    w = rt.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, device=x.device)
    mask = rt.tensor(np.array([True, False, True]), device=x.device)
    h = rt.relu(x @ w) - 0.5
    h = rt.where(mask, h, float("-inf"))
    s = h[..., None, ::2].sum(axis=(0,), keepdims=True)
    k = rt.tensor(np.array([1, 0], np.int32), device=x.device)
    return rt.softmax(h, axis=-1), s, rt.take(h, k, axis=1), rt.clamp(x, min=-1, max=1.5)


X = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)


def test_round_trip_is_exact(tmp_path):
    g = rt.capture(_model, X)
    path = tmp_path / "g.rtg"
    g.save(path)
    h = rt.load_graph(path)
    assert h == g.canonical()
    assert h.inputs == [1]
    for a, b in zip(h.operations, g.canonical().operations):
        assert a.op == b.op and a.inputs == b.inputs and a.outputs == b.outputs
        assert a.attrs == b.attrs
        for k in a.attrs:
            assert type(a.attrs[k]) is type(b.attrs[k])
    key = [o for o in h.operations if o.op == "index"][0].attrs["key"]
    assert key == (slice(0, 2, 1), None, slice(0, 3, 2))
    where = [o for o in h.operations if o.op == "where"][0]
    assert where.operands()[2] == float("-inf") and where.attrs == {}
    clamp = [o for o in h.operations if o.op == "clamp"][0]
    assert clamp.attrs == {"min": -1, "max": 1.5} and type(clamp.attrs["min"]) is int
    assert {v.dtype for v in h.values.values()} == {np.dtype(np.float32), np.dtype(np.bool_),
                                                    np.dtype(np.int32)}
    for tid, v in g.canonical().values.items():
        np.testing.assert_array_equal(h.values[tid], v)
        assert h.values[tid].flags.writeable
    # the loaded graph replays to the same results
    for a, b in zip(h.run(X), g.run(X)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert str(h).count("\n") == str(g).count("\n")


def test_same_computation_captured_twice_saves_identical_bytes(tmp_path):
    g1 = rt.capture(_model, X)
    rt.capture(lambda x: x + 1.0, X)  # shift the global id counter in between
    g2 = rt.capture(_model, X)
    assert g1.inputs != g2.inputs  # different raw ids...
    g1.save(tmp_path / "a.rtg")
    g2.save(tmp_path / "b.rtg")
    a = (tmp_path / "a.rtg").read_bytes()
    b = (tmp_path / "b.rtg").read_bytes()
    assert a == b  # ...same file
    rt.load_graph(tmp_path / "a.rtg").save(tmp_path / "c.rtg")
    assert (tmp_path / "c.rtg").read_bytes() == a
    g3 = rt.capture(_model, X * 2)  # different example value: different bytes
    g3.save(tmp_path / "d.rtg")
    assert (tmp_path / "d.rtg").read_bytes() != a


def test_placeholders_boundaries_and_dtypes_round_trip(tmp_path):
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        p = scope.placeholder((2, 3), rt.float64)
        c = rt.arange(3, device=cap)
        b = rt.full((2, 3), True, device=cap)
        y = p + c
        scope.complete(inputs=[p], outputs=[b, y, p])
    g = scope.graph
    g.save(tmp_path / "p.rtg")
    h = rt.load_graph(str(tmp_path / "p.rtg"))
    assert h == g.canonical()
    assert h.inputs == [1] and h.outputs == [3, 4, 1]
    assert h.tensor(1) == rt.TensorIr(1, (2, 3), rt.float64) and h.values == {}
    assert h.operations[1].attrs == {"shape": (2, 3), "dtype": "bool", "value": True}
    b2, y2, p2 = h.run(np.ones((2, 3)))
    np.testing.assert_array_equal(y2.numpy(), np.ones((2, 3)) + np.arange(3))
    assert b2.dtype is rt.bool_ and p2.dtype is rt.float64


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.rtg"
    bad.write_bytes(b"not a graph")
    with pytest.raises(ValueError, match="not a saved capture graph"):
        rt.load_graph(bad)
