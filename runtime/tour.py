"""``python -m runtime tour``: a short tour of the runtime, with timings next to NumPy.

1. tensors and each op family, results checked against NumPy (timed in part 4);
2. autodiff: a small MLP trained on synthetic data (the loss falls);
3. capture: the trained model's inference graph captured, replayed, saved and reloaded;
4. the timings of part 1 next to NumPy, after ``rt.synchronize()`` (a first run builds some
   kernels in a background process; see docs/first-run.md).
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import runtime as rt


def _time(fn, reps=5):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


_TIMED: list = []


def _row(label, rt_fn, np_fn):
    """Check ``rt_fn`` against NumPy now; time both at the end (``timings``), once the kernels
    a first run builds in the background are in place."""
    ok = np.allclose(np.asarray(rt_fn()), np_fn(), rtol=1e-4, atol=1e-4)
    print(f"  {label:<28} {'ok' if ok else 'MISMATCH'}")
    _TIMED.append((label, rt_fn, np_fn))
    return ok


def timings() -> None:
    print("\n== 4. timings (best of 5, after rt.synchronize()) ==")
    t0 = time.perf_counter()
    rt.synchronize()  # a first run leaves some kernels to a background build: wait for them
    waited = time.perf_counter() - t0
    if waited > 0.05:
        print(f"  (waited {waited:.1f} s for the first run's background kernel builds)")
    for label, rt_fn, np_fn in _TIMED:
        t_rt, t_np = _time(rt_fn), _time(np_fn)
        print(f"  {label:<28} runtime {t_rt * 1e3:8.3f} ms   numpy {t_np * 1e3:8.3f} ms   "
              f"numpy/runtime {t_np / t_rt:5.2f}x")
    _TIMED.clear()


def tour() -> bool:
    print("== 1. tensors and ops (cpu kernel set), checked against NumPy ==")
    x = rt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    print("  x =", x)
    print("  x.sum(axis=0) =", x.sum(axis=0).tolist(), " x.T @ x diag =",
          [r[i] for i, r in enumerate((x.T @ x).tolist())])
    print("  softmax(x)[0] =", np.round(rt.softmax(x).numpy()[0], 4).tolist(),
          " x[:, ::2] =", x[:, ::2].tolist())
    rng = np.random.default_rng(0)
    n = 2_000_000
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ta, tb, tc = rt.tensor(a), rt.tensor(b), rt.tensor(c)
    m = rng.standard_normal((1024, 1024)).astype(np.float32)
    tm = rt.tensor(m)
    ok = True
    ok &= _row("a*b+c (2e6 f32)", lambda: ta * tb + tc, lambda: a * b + c)
    ok &= _row("exp (2e6 f32)", lambda: rt.exp(ta), lambda: np.exp(a))
    ok &= _row("tanh (2e6 f32)", lambda: rt.tanh(ta), lambda: np.tanh(a))
    ok &= _row("sum(axis=-1) (1024² f32)", lambda: tm.sum(axis=-1), lambda: m.sum(axis=-1))
    ok &= _row("max(axis=0) (1024² f32)", lambda: tm.max(axis=0), lambda: m.max(axis=0))
    ok &= _row("matmul (1024² f32)", lambda: tm @ tm, lambda: m @ m)
    idx = rng.integers(0, 1024, 4096)
    ok &= _row("take rows (4096 of 1024²)", lambda: tm.take(rt.tensor(idx), axis=0),
               lambda: np.take(m, idx, axis=0))
    return ok


def _data(n=512, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[2, 0], [-2, 0], [0, 2.5]], np.float32)
    y = rng.integers(0, 3, n)
    x = centers[y] + rng.standard_normal((n, 2)).astype(np.float32) * 0.8
    return x.astype(np.float32), y.astype(np.int64)


def train():
    print("\n== 2. autodiff: a 2-16-3 MLP on synthetic blobs ==")
    F = rt.nn.functional
    ad = rt.autodiff(rt.cpu())
    rt.manual_seed(0)
    w1 = (rt.randn(2, 16) * 0.5).to(ad).require_grad()
    b1 = rt.zeros(16).to(ad).require_grad()
    w2 = (rt.randn(16, 3) * 0.5).to(ad).require_grad()
    b2 = rt.zeros(3).to(ad).require_grad()
    params = [w1, b1, w2, b2]
    x_np, y_np = _data()
    x, y = rt.tensor(x_np, device=ad), rt.tensor(y_np, device=ad)
    lr = 0.5
    losses = []
    for step in range(60):
        logits = rt.relu(x @ w1 + b1) @ w2 + b2
        loss = F.cross_entropy(logits, y)
        grads = loss.backward()
        params = [(p.inner() - lr * p.grad(grads)).to(ad).require_grad() for p in params]
        w1, b1, w2, b2 = params
        losses.append(loss.item())
        if step % 10 == 0 or step == 59:
            print(f"  step {step:3d}  loss {losses[-1]:.4f}")
    acc = (rt.argmax(rt.relu(x @ w1 + b1) @ w2 + b2, axis=1).inner() == y.inner()).astype(rt.float32).mean()
    print(f"  accuracy {acc.item():.3f}")
    return [p.inner() for p in params], losses


def capture(params) -> bool:
    print("\n== 3. capture: record inference, replay, save, reload ==")
    w1, b1, w2, b2 = params
    x_np, _ = _data(8, seed=1)

    def model(x):
        return rt.softmax(rt.relu(x @ w1.to(x.device) + b1.to(x.device)) @ w2.to(x.device)
                          + b2.to(x.device))

    graph = rt.capture(model, rt.tensor(x_np))
    print("  " + str(graph).replace("\n", "\n  "))
    (out,) = graph.run(x_np)
    eager = model(rt.tensor(x_np))
    ok = np.allclose(out.numpy(), eager.numpy(), rtol=1e-5, atol=1e-6)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mlp.rtg")
        graph.save(path)
        again = rt.load_graph(path)
        (out2,) = again.bind(rt.cpu())(x_np)
        ok &= np.array_equal(out2.numpy(), out.numpy())
        print(f"  replay == eager: {ok}; saved {os.path.getsize(path)} bytes and reloaded")
        try:
            import onnxruntime as ort
            onnx_path = os.path.join(d, "mlp.onnx")
            graph.to_onnx(onnx_path)
            (out4,) = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(
                None, {"input_0": x_np})
            same = np.allclose(out4, out.numpy(), rtol=1e-5, atol=1e-6)
            ok &= same
            print(f"  ONNX export: onnxruntime == replay: {same} ({os.path.getsize(onnx_path)} bytes)")
        except ImportError:
            print("  ONNX export skipped: the `onnx` extra (onnx, onnxruntime) is not installed")
    if hasattr(graph, "compile"):
        try:
            exe = graph.compile(rt.cpu())
            (out3,) = exe(x_np)
            ok &= np.allclose(out3.numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
            print("  compiled:", exe.explain().splitlines()[0] if hasattr(exe, "explain") else "ok")
        except NotImplementedError:
            pass
    return ok


def main(argv=None) -> int:
    t0 = time.perf_counter()
    ok = tour()
    params, losses = train()
    ok &= losses[-1] < losses[0] * 0.5
    ok &= capture(params)
    timings()
    print(f"\ntour finished in {time.perf_counter() - t0:.1f} s: {'all checks passed' if ok else 'CHECK FAILED'}")
    return 0 if ok else 1
