"""Capture sessions: devices, scopes, lifecycle (Burn's capture contract), reads, threads."""
import gc
import threading

import numpy as np
import pytest

import runtime as rt
from runtime.errors import CaptureError, CaptureScopeError, CaptureValueError

REQUIRED = "capture tensor operations must run inside CaptureDevice.capture_scope"
COMPLETE = "capture scope is already complete"


def _x(dev, shape=(2, 3)):
    return rt.tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), device=dev)


# ---- devices ------------------------------------------------------------------------------
def test_device_ids_are_monotonic_and_parse_back():
    a, b, c = rt.CaptureDevice(), rt.CaptureDevice(), rt.CaptureDevice()
    assert a.id < b.id < c.id
    assert str(b) == f"capture:{b.id}"
    assert rt.device(str(b)) is b and rt.device(str(b)) == b
    assert a != b and hash(rt.device(str(a))) == hash(a)
    assert b.family == "capture" and b.innermost is b
    with pytest.raises(AttributeError):
        b.id = 99


def test_unknown_capture_device_string_raises_device_error():
    n = rt.CaptureDevice().id + 1000
    with pytest.raises(rt.DeviceError, match=f"capture:{n}"):
        rt.device(f"capture:{n}")
    with pytest.raises(rt.DeviceError):
        rt.device("capture:x")


def test_parsed_device_cannot_get_around_already_active():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        with pytest.raises(CaptureError) as ei:
            with rt.device(str(cap)).capture_scope():
                pass
        assert ei.value.kind == "AlreadyActive"
        assert str(ei.value) == "a capture scope is already active on this device"
        x = _x(scope.device)
        scope.complete(inputs=[x], outputs=[x])


# ---- lifecycle ------------------------------------------------------------------------------
def test_device_reusable_for_sequential_scopes():
    cap = rt.CaptureDevice()
    graphs = []
    for k in range(3):
        with cap.capture_scope() as scope:
            assert scope.device is cap
            x = _x(cap)
            y = x * float(k)
            scope.complete(inputs=[x], outputs=[y])
        graphs.append(scope.graph)
    assert [g.operations[-1].operands()[1] for g in graphs] == [0.0, 1.0, 2.0]
    assert all(g.operations[-1].attrs == {} for g in graphs)


def test_overlapping_scopes_on_separate_devices():
    a, b = rt.CaptureDevice(), rt.CaptureDevice()
    with a.capture_scope() as sa:
        with b.capture_scope() as sb:
            xb = _x(b)
            xa = _x(a)
            yb = rt.exp(xb)
            ya = rt.relu(xa)
            sb.complete(inputs=[xb], outputs=[yb])
        sa.complete(inputs=[xa], outputs=[ya])
    assert [o.op for o in sa.graph.operations] == ["init", "relu"]
    assert [o.op for o in sb.graph.operations] == ["init", "exp"]


def test_raising_scope_releases_device_and_propagates_unchanged():
    cap = rt.CaptureDevice()
    boom = KeyError("boom")
    with pytest.raises(KeyError) as ei:
        with cap.capture_scope():
            x = _x(cap)
            raise boom
    assert ei.value is boom
    with pytest.raises(CaptureScopeError, match=f"^{COMPLETE}$"):
        rt.exp(x)  # the session closed by the exception
    with cap.capture_scope() as scope:  # the device is free again
        y = _x(cap)
        scope.complete(inputs=[y], outputs=[y])


def test_escaped_tensors_rejected_in_later_scopes():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = _x(cap)
        y = rt.exp(x)
        scope.complete(inputs=[x], outputs=[y])
    with cap.capture_scope() as scope2:
        z = _x(cap)
        for bad in (lambda: y + z, lambda: z + y, lambda: rt.relu(x), lambda: rt.exp(y)):
            with pytest.raises(CaptureScopeError) as ei:
                bad()
            assert str(ei.value) == COMPLETE
        scope2.complete(inputs=[z], outputs=[z])
    assert [o.op for o in scope2.graph.operations] == ["init"]


def test_completion_closes_immediately():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = _x(cap)
        y = x + 1.0
        token = scope.complete(inputs=[x], outputs=[y])
        assert not scope.active and not cap.active
        assert scope.graph is token.graph
        with pytest.raises(CaptureScopeError, match=f"^{COMPLETE}$"):
            y * 2.0
        with pytest.raises(CaptureScopeError, match=f"^{COMPLETE}$"):
            _x(cap)
        with pytest.raises(CaptureScopeError, match=f"^{COMPLETE}$"):
            scope.complete(inputs=[x], outputs=[y])  # no second completion
        with pytest.raises(CaptureScopeError, match=f"^{COMPLETE}$"):
            scope.placeholder((2,))
    assert len(scope.graph.operations) == 2


def test_ops_outside_any_scope():
    cap = rt.CaptureDevice()
    for make in (lambda: _x(cap), lambda: rt.zeros(3, device=cap), lambda: rt.arange(4, device=cap),
                 lambda: rt.randn(2, device=cap), lambda: rt.from_numpy(np.ones(2), device=cap),
                 lambda: rt.eye(2, device=cap)):
        with pytest.raises(CaptureScopeError) as ei:
            make()
        assert str(ei.value) == REQUIRED
    with rt.default_device(cap):
        with pytest.raises(CaptureScopeError, match=REQUIRED):
            rt.ones(2)


def test_leaving_without_complete_raises_incomplete_and_yields_no_graph():
    cap = rt.CaptureDevice()
    with pytest.raises(CaptureError) as ei:
        with cap.capture_scope() as scope:
            _x(cap)
    assert ei.value.kind == "Incomplete"
    with pytest.raises(CaptureError):
        _ = scope.graph
    assert not cap.active
    with cap.capture_scope() as s2:  # released
        s2.complete()


def test_failed_validation_still_closes_the_session():
    cap = rt.CaptureDevice()
    with pytest.raises(CaptureError) as ei:
        with cap.capture_scope() as scope:
            x = _x(cap)
            scope.complete(inputs=[x, x], outputs=[x])
    assert ei.value.kind == "DuplicateBoundary"
    with pytest.raises(CaptureScopeError, match=COMPLETE):
        rt.exp(x)
    assert not cap.active


def test_capture_scope_fn_form():
    cap = rt.CaptureDevice()

    def body(scope):
        x = rt.tensor([1.0, 2.0], device=scope.device)
        return scope.complete(inputs=[x], outputs=[rt.sqrt(x)])

    g = cap.capture_scope(body)
    assert isinstance(g, rt.CapturedGraph)
    assert [o.op for o in g.operations] == ["init", "sqrt"]
    with pytest.raises(CaptureError) as ei:
        cap.capture_scope(lambda scope: None)
    assert ei.value.kind == "Incomplete"
    with pytest.raises(CaptureError) as ei:  # completed, but fn did not return the token
        cap.capture_scope(lambda s: (s.complete(), 1)[1])
    assert ei.value.kind == "Incomplete"
    with pytest.raises(ZeroDivisionError):
        cap.capture_scope(lambda s: 1 / 0)
    assert not cap.active


def test_scope_already_active_on_same_device():
    cap = rt.CaptureDevice()
    scope = cap.capture_scope()
    with scope:
        with pytest.raises(CaptureError) as ei:
            cap.capture_scope(lambda s: s.complete())
        assert ei.value.kind == "AlreadyActive"
        with pytest.raises(CaptureError) as ei:
            scope.__enter__()  # a scope cannot be re-entered
        assert ei.value.kind == "AlreadyActive"
        scope.complete()


# ---- reads, seeding, autodiff ------------------------------------------------------------------
def test_reads_initialized_vs_computed():
    cap = rt.CaptureDevice()
    data = np.array([[1.5, -2.0]], dtype=np.float32)
    with cap.capture_scope() as scope:
        x = rt.from_numpy(data, device=cap)
        y = x * 2.0
        p = scope.placeholder((3,), rt.int32)
        np.testing.assert_array_equal(x.numpy(), data)
        assert x.tolist() == [[1.5, -2.0]]
        with pytest.raises(CaptureValueError) as ei:
            y.numpy()
        assert str(ei.value) == f"captured tensor {y.id} has no concrete value"
        with pytest.raises(CaptureValueError, match=f"captured tensor {p.id} has no concrete value"):
            p.tolist()
        with pytest.raises(CaptureValueError):
            y.sum().item()
        r = repr(y)
        assert "shape=(1, 2)" in r and "float32" in r and str(cap) in r
        assert p.shape == (3,) and p.dtype is rt.int32 and rt.is_capture(p)
        scope.complete(inputs=[x, p], outputs=[y, p])
    np.testing.assert_array_equal(x.numpy(), data)  # also after the scope ended
    assert "1.5" in repr(x)
    with pytest.raises(CaptureValueError):
        y.numpy()


def test_seeding_and_backward():
    cap = rt.CaptureDevice()
    with pytest.raises(CaptureError) as ei:
        rt.manual_seed(3, device=cap)
    assert ei.value.kind == "Seeding"
    assert str(ei.value) == "seeding is not supported during graph capture"
    with cap.capture_scope() as scope:
        with pytest.raises(CaptureError, match="seeding is not supported during graph capture"):
            rt.manual_seed(3, device=cap)
        x = _x(cap)
        y = (x * x).sum()
        with pytest.raises(rt.CaptureAutodiffError) as ei:
            y.backward()
        assert str(ei.value) == "Capture tensors do not support autodiff"
        with pytest.raises(rt.CaptureAutodiffError):
            x.backward()
        assert not y.requires_grad and not rt.is_autodiff(y) and rt.is_capture(y)
        scope.complete(inputs=[x], outputs=[y])
    rt.manual_seed(0)  # seeding every device leaves capture devices alone


def test_garbage_collection_records_nothing():
    cap = rt.CaptureDevice()
    with cap.capture_scope() as scope:
        x = _x(cap)
        for _ in range(5):
            tmp = rt.exp(x)
            del tmp
        gc.collect()
        y = rt.relu(x)
        n = len(scope._session.operations)
        del x
        gc.collect()
        assert len(scope._session.operations) == n
        scope.complete(outputs=[y])
    assert [o.op for o in scope.graph.operations] == ["init"] + ["exp"] * 5 + ["relu"]


# ---- threads ----------------------------------------------------------------------------------
def test_threads_on_separate_devices_record_their_own_ops():
    n_threads, n_scopes = 4, 20
    results = {}
    errors = []
    barrier = threading.Barrier(n_threads)

    def worker(k):
        try:
            barrier.wait()
            cap = rt.CaptureDevice()
            got = []
            for s in range(n_scopes):
                with cap.capture_scope() as scope:
                    x = rt.tensor(np.full((2,), k, np.float32), device=cap)
                    y = x
                    for i in range(s % 5 + 1):
                        y = y + float(k * 1000 + s * 10 + i)
                    scope.complete(inputs=[x], outputs=[y])
                got.append(scope.graph)
            results[k] = got
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(n_threads):
        assert len(results[k]) == n_scopes
        for s, g in enumerate(results[k]):
            ops = g.operations
            assert [o.op for o in ops] == ["init"] + ["add"] * (s % 5 + 1)
            assert [o.operands()[1] for o in ops[1:]] == \
                [float(k * 1000 + s * 10 + i) for i in range(s % 5 + 1)]
            ids = [o.outputs[0].id for o in ops]
            assert [o.inputs[0].id for o in ops[1:]] == ids[:-1]  # a chain, nothing mixed in
            np.testing.assert_array_equal(g.values[g.inputs[0]], np.full((2,), k, np.float32))


def test_another_thread_does_not_record_into_an_open_scope():
    """A scope belongs to the thread that opened it: another thread
    using the device, or a tensor of the scope, gets the capture scope error and records
    nothing."""
    import threading
    cap = rt.CaptureDevice()
    errors = []
    with cap.capture_scope() as scope:
        x = scope.placeholder((2,))
        y = x + 1.0

        def other():
            for fn in (lambda: x * 2.0, lambda: rt.zeros(2, device=cap),
                       lambda: rt.tensor([1.0, 2.0]).to(cap), lambda: scope.placeholder((1,))):
                try:
                    fn()
                except rt.CaptureScopeError as e:
                    errors.append(str(e))
        t = threading.Thread(target=other)
        t.start()
        t.join()
        n_ops = len(scope._session.operations)
        scope.complete(inputs=[x], outputs=[y])
    assert errors == ["capture tensor operations must run inside CaptureDevice.capture_scope"] * 4
    assert n_ops == 1 and [op.op for op in scope.graph.operations] == ["add"]
