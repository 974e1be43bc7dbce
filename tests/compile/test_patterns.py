"""Softmax, layer-norm and MLP inference graphs compile and match ``run``; explain(); errors;
unfusable ops through dispatch; recycled output buffers never clobber live results."""
import numpy as np
import pytest

import runtime as rt
import runtime.nn.functional as F
from runtime import dispatch

RNG = np.random.default_rng(11)


def _close(got, want, rtol=2e-6, atol=1e-7):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype is w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol)


def _kinds(exe):
    return [p.kind for p in exe.programs]


@pytest.mark.parametrize("shape", [(7, 33), (2, 3, 300), (64, 1000)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(shape, log):
    x = RNG.standard_normal(shape).astype(np.float32) * 4
    f = rt.log_softmax if log else rt.softmax
    g = rt.capture(lambda t: f(t * 0.5 + 1.0, axis=-1), x)
    exe = g.compile()
    assert _kinds(exe) == ["rows"] and len(exe.programs[0].ops) == 3
    _close(exe(x), g.run(x))


def test_softmax_float64_and_special_values():
    x = RNG.standard_normal((5, 40))
    x[1, 3] = np.inf
    x[2, :] = -np.inf
    x[3, 7] = np.nan
    g = rt.capture(lambda t: rt.softmax(t, axis=-1), x)
    _close(g.compile()(x), g.run(x), rtol=1e-12)
    x32 = x.astype(np.float32)
    g = rt.capture(lambda t: rt.softmax(t, axis=-1), x32)
    got, want = g.compile()(x32)[0].numpy(), g.run(x32)[0].numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, equal_nan=True)


def layer_norm(x, w, b, eps=1e-5):
    m = rt.mean(x, axis=-1, keepdims=True)
    d = x - m
    v = rt.mean(d * d, axis=-1, keepdims=True)
    return d * rt.rsqrt(v + eps) * w + b


def test_layer_norm_one_kernel():
    x = RNG.standard_normal((3, 50, 96)).astype(np.float32)
    w = RNG.standard_normal(96).astype(np.float32)
    b = RNG.standard_normal(96).astype(np.float32)
    g = rt.capture(lambda t: layer_norm(t, rt.tensor(w, device=t.device),
                                        rt.tensor(b, device=t.device)), x)
    exe = g.compile()
    assert _kinds(exe) == ["rows"]
    assert len(exe.programs[0].ops) == 9
    _close(exe(x), g.run(x), rtol=1e-5, atol=1e-6)
    mu = x.mean(-1, keepdims=True)
    ref = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(exe(x)[0].numpy(), ref, rtol=1e-4, atol=1e-4)


def test_reduction_prologue_epilogue_and_intermediate_outputs():
    x = RNG.standard_normal((40, 64)).astype(np.float32)

    def fn(t):
        y = rt.exp(t * 0.1)
        s = rt.sum(y, axis=-1, keepdims=True)
        mx = rt.max(t, axis=-1)              # keepdims=False: an output only
        mn = rt.min(t, axis=1, keepdims=True)
        return y / s, s, mx, t - mn, y

    g = rt.capture(fn, x)
    exe = g.compile()
    assert set(_kinds(exe)) == {"rows"}
    # exp, sum and the division share one kernel; max/min of the raw input get their own
    assert [len(p.ops) for p in exe.programs][0] == 4
    _close(exe(x), g.run(x))


def mlp(t, params):
    h = t
    for i, (w, b) in enumerate(params):
        h = F.linear(h, rt.tensor(w, device=t.device), rt.tensor(b, device=t.device))
        if i < len(params) - 1:
            h = rt.gelu(h, approximate="tanh") if i == 0 else rt.relu(h)
    return rt.softmax(h, axis=-1)


def test_mlp_inference():
    sizes = (20, 32, 16, 5)
    params = [((RNG.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32),
               RNG.standard_normal(o).astype(np.float32)) for i, o in zip(sizes[:-1], sizes[1:])]
    x = RNG.standard_normal((256, 20)).astype(np.float32)
    g = rt.capture(lambda t: mlp(t, params), x)
    exe = g.compile()
    assert _kinds(exe) == ["matmul", "matmul", "matmul", "rows"]
    assert len(exe.folded) == 3   # the weight transposes, folded into constants
    _close(exe(x), g.run(x), rtol=1e-5, atol=1e-6)
    text = exe.explain()
    assert text.count("kernel ") == 4 and "gelu_tanh" in text and "folded: " in text


def test_unfusable_ops_run_through_dispatch():
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    idx = np.array([0, 3, 5])

    def fn(t):
        y = rt.relu(t * 2.0 - 1.0)
        z = y.reshape(8, 6).T                # shape ops: dispatch
        w = rt.take(z, rt.tensor(idx, device=t.device), axis=0)
        return rt.tanh(w) + 1.0, rt.var(y, axis=0), rt.argmax(y, axis=1)

    g = rt.capture(fn, x)
    exe = g.compile()
    text = exe.explain()
    assert "dispatch: " in text and "take" in text and "kernel 0: elementwise" in text
    got, want = exe(x), g.run(x)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_explain_lists_kernels_and_covered_ops():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    g = rt.capture(lambda t: rt.sigmoid(t * 3.0 + 1.0), x)
    exe = g.compile()
    lines = exe.explain().splitlines()
    assert lines[0].startswith("CompiledGraph on cpu: 1 fused kernel(s)")
    assert lines[1].startswith("kernel 0: elementwise shape=[4, 5]")
    assert [ln.split("=")[1].split("(")[0].strip() for ln in lines[2:5]] == ["mul", "add", "sigmoid"]


def test_recycled_outputs_do_not_clobber_live_results():
    x = RNG.standard_normal(600_000).astype(np.float32)   # > pooled size
    g = rt.capture(lambda t: rt.relu(t * 2.0 + 1.0), x)
    exe = g.compile()
    first = exe(x)[0]
    kept = first.numpy().copy()
    arr_view = np.asarray(first)
    second = exe(x * 0)[0]                   # must not reuse first's buffer
    np.testing.assert_array_equal(first.numpy(), kept)
    np.testing.assert_array_equal(arr_view, kept)
    np.testing.assert_array_equal(second.numpy(), np.ones_like(x))
    del first, arr_view
    third = exe(x)[0]
    np.testing.assert_array_equal(third.numpy(), kept)
    np.testing.assert_array_equal(second.numpy(), np.ones_like(x))


def test_inputs_checked_like_run():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    g = rt.capture(lambda t: rt.exp(t) + 1.0, x)
    exe = g.compile()
    with pytest.raises(rt.ShapeError):
        exe(np.zeros((4, 3), np.float32))
    with pytest.raises(rt.DTypeError):
        exe(np.zeros((3, 4), np.float64))
    with pytest.raises(TypeError):
        exe()
    np.testing.assert_array_equal(exe(rt.tensor(x))[0].numpy(), g.run(x)[0].numpy())


def test_compile_on_autodiff_raises():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    g = rt.capture(lambda t: rt.exp(t) + 1.0, x)
    with pytest.raises(rt.CaptureError, match="inference") as exc:
        g.compile(rt.autodiff(rt.cpu()))
    assert exc.value.kind == "CompileOnAutodiff"


def test_compile_on_capture_device_raises():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    g = rt.capture(lambda t: rt.exp(t) + 1.0, x)
    with pytest.raises(rt.CaptureError):
        g.compile(rt.CaptureDevice())


@pytest.mark.parametrize("unusable", ["no fused kernels", "cannot be loaded"])
def test_compile_on_unusable_cuda_names_the_device(unusable, monkeypatch):
    # The cuda kernel set is replaced by a stand-in in both cases, so the test runs the same
    # with or without numba-cuda installed (the real cuda set loads and has fused kernels).
    import types

    import jit_kernels
    import runtime.dispatch as dispatch
    from runtime.capture.compiled import CompiledGraph
    from runtime.device import PlainDevice
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    g = rt.capture(lambda t: rt.exp(t) + 1.0, x)
    dev = PlainDevice("cuda", 0)
    if unusable == "no fused kernels":
        monkeypatch.setitem(dispatch._KERNELS, "cuda", types.SimpleNamespace(capabilities=frozenset()))
        match = "cuda:0: graph.compile is not supported on this device"
    else:
        def no_cuda(kind):
            raise ImportError("numba-cuda is not installed")
        monkeypatch.delitem(dispatch._KERNELS, "cuda", raising=False)
        monkeypatch.setattr(jit_kernels, "kernel_set_for", no_cuda)
        match = "the cuda kernel set cannot be loaded: numba-cuda is not installed"
    with pytest.raises(rt.DeviceError, match=match):
        CompiledGraph(g, dev)


@pytest.mark.parametrize("fn", [
    lambda a: (a + a).astype(rt.float32),
    lambda a: ((a + a) + 1).astype(rt.float32),
    lambda a: (a + True).astype(rt.float32),
    lambda a: (a * a + a).astype(rt.float32),
])
def test_compiled_bool_arithmetic_matches_replay(fn):
    """Bool arithmetic inside a fused kernel gives a bool (nonzero), as eager stores it: compiled
    bool ``add`` was integer addition ([2, 0, 2] instead of [1, 0, 1])."""
    x = np.array([True, False, True])
    g = rt.capture(fn, x)
    (want,) = g.run(x)
    (got,) = g.compile()(x)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(want.numpy(), fn(rt.tensor(x)).numpy())


@pytest.mark.parametrize("shape, pool", [((2, 3, 6, 4), lambda t: F.max_pool2d(t, 2)),
                                         ((2, 3, 7, 5), lambda t: F.max_pool2d(t, 3, 2, 1)),
                                         ((2, 3, 6, 4), lambda t: F.adaptive_max_pool2d(t, 2))])
def test_max_pool_of_a_relu_runs_before_the_relu(shape, pool):
    # relu then max pool == max pool then relu: compile swaps them where nothing else reads the
    # relu, as one op (the relu then runs on the pooled elements, as each maximum is stored on
    # the cpu's 2x2 pool; the other pools run it after)
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0, 0, :2] = np.nan
    x[1, 2, 2:4, 2:4] = -np.inf
    x[1, 1] = -np.abs(x[1, 1])                              # a plane that relu zeroes

    def fn(t):
        a = pool(rt.relu(t * 2.0)) + 1.0                    # swapped
        y = rt.relu(t)
        return a, pool(y), y                                # y is read twice: kept

    g = rt.capture(fn, x)
    exe = g.compile()
    ops = [ln.split(" = ")[1].split("(")[0] for ln in exe.explain().splitlines()
           if " = " in ln]
    assert ops.count("max_pool2d_relu") == 1 and ops.count("relu") == 1
    for got, want in zip(exe(x), g.run(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # on a kernel set that does not declare the fused pool, the op runs as the pool, then relu
    # (the same values)
    ks = dispatch.kernels_for(rt.cpu())
    monkey = type(ks)
    declared = monkey.capabilities
    try:
        monkey.capabilities = declared - {"max_pool2d_relu"}
        exe2 = g.compile()
        for got, want in zip(exe2(x), g.run(x)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    finally:
        monkey.capabilities = declared


def test_max_pool_relu_of_integers():
    x = RNG.integers(-50, 50, (2, 3, 6, 4)).astype(np.int32)
    g = rt.capture(lambda t: F.max_pool2d(rt.relu(t), 2), x)
    exe = g.compile()
    assert "max_pool2d_relu" in exe.explain()
    got, want = exe(x)[0], g.run(x)[0]
    assert got.dtype is want.dtype is rt.int32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
