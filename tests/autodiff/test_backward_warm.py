"""The backward walk keeps the cpu kernel set's worker threads awake (``keep_warm``) through
serial rules that have a parallel one after them; that changes no gradient."""
import numpy as np

import runtime as rt
from runtime import dispatch

RNG = np.random.default_rng(11)


def _grads(x, s):
    ad = rt.autodiff(rt.cpu())
    tx = rt.tensor(x, device=ad).require_grad()
    ts = rt.tensor(s, device=ad).require_grad()
    loss = rt.relu(tx * 2.0).sum() + (ts @ ts).sum()
    g = loss.backward()
    return tx.grad(g).numpy(), ts.grad(g).numpy()


def test_a_backward_with_large_rules_keeps_the_workers_warm(monkeypatch):
    x = RNG.standard_normal((200, 300)).astype(np.float32)     # past the parallel threshold
    s = RNG.standard_normal((4, 4)).astype(np.float32)
    want = _grads(x, s)
    ks = dispatch.kernels_for(rt.cpu())
    calls = []
    real = ks.keep_warm
    monkeypatch.setattr(type(ks), "keep_warm_s", -1.0)      # every wait is past the window
    monkeypatch.setattr(type(ks), "keep_warm", lambda self: (calls.append(1), real())[1])
    got = _grads(x, s)
    assert calls
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
    calls.clear()
    small = _grads(x[:4, :4], s)                                # nothing runs in parallel
    assert calls == []
    np.testing.assert_array_equal(small[0], (x[:4, :4] > 0) * np.float32(2.0))


def test_the_policy_is_only_for_plain_devices_with_workers():
    assert dispatch.warm_policy(rt.cpu()) is not None
    assert dispatch.warm_policy(rt.autodiff(rt.cpu())) is None
    assert dispatch.warm_policy(rt.CaptureDevice()) is None
