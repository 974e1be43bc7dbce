"""The cpu set's prepared runners (``fused_fn``: what a compiled graph calls per program) give
the bits ``fused`` gives, for every kind of program, on one runner fed operands whose layout
changes from call to call (contiguous, transposed, sliced, read-only, broadcast), small and
large (the parallel kernels), and empty."""
import numpy as np
import pytest

import runtime as rt
from jit_kernels.cpu import fused as FZ

RNG = np.random.default_rng(5)


def _programs(fn, *args):
    return rt.capture(fn, *args).compile().programs


def _layouts(a):
    """``a``'s values in several memory layouts of the same shape."""
    out = [a, np.asfortranarray(a)]
    if a.ndim:
        big = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        out.append(big[..., ::2])                           # every other element of a row
    ro = a.copy()
    ro.flags.writeable = False
    out.append(ro)
    if a.ndim and a.shape[0] > 1:
        row = a[:1].copy()
        out.append(np.broadcast_to(row, a.shape))           # stride 0 along the first dim
    return out


def _same_bits(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))


def _check(prog, base):
    run = FZ.prepared(prog)
    for _ in range(2):                                      # each layout twice: found, then kept
        for k in range(len(base)):
            for lay in _layouts(base[k]):
                arrays = list(base)
                arrays[k] = lay
                _same_bits(run(arrays), FZ.fused(prog, [np.array(a) for a in arrays]))


@pytest.mark.parametrize("shape", [(3, 5), (130, 300), (0, 4)])
def test_elementwise_with_scalars_and_a_broadcast_row(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    b = RNG.standard_normal(shape[-1:]).astype(np.float32)
    s = np.asarray(np.float32(0.3))
    (prog,) = _programs(lambda t, u, v: rt.exp(t * v) - u * 2.0 + rt.relu(t), x, b, s)
    assert prog.kind == "elementwise"
    _check(prog, [x, b, s])


@pytest.mark.parametrize("shape", [(4, 7), (200, 300)])
def test_rows(shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    y = RNG.standard_normal(shape).astype(np.float32)
    (prog,) = _programs(lambda t, u: rt.log_softmax(t * 0.5 + u, axis=-1), x, y)
    assert prog.kind == "rows"
    _check(prog, [x, y])


@pytest.mark.parametrize("m,k,n", [(5, 3, 4), (128, 64, 96)])
def test_matmul_with_an_epilogue_and_its_product_as_an_output(m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    w = RNG.standard_normal((k, n)).astype(np.float32)
    b = RNG.standard_normal((n,)).astype(np.float32)

    def f(x, y, z):
        c = x @ y
        return c, rt.relu(c + z)
    progs = _programs(f, a, w, b)
    assert [p.kind for p in progs] == ["matmul"]
    _check(progs[0], [a, w, b])


def test_a_plan_keeps_the_workers_warm_before_each_serial_unit(monkeypatch):
    """With the window below zero every unit too small to run in parallel that has a larger one
    after it starts with one no-op parallel region (``keep_warm``), the large ones and the small
    ones after the last large one do not, a plan that ends on a small unit ends with one, and
    the results are the bits of the plan without them; a plan of small units has none."""
    from runtime import dispatch
    ks = dispatch.kernels_for(rt.cpu())
    x = RNG.standard_normal((200, 300)).astype(np.float32)
    u = RNG.standard_normal((4, 4)).astype(np.float32)

    def f(t, v):
        k = rt.sum(v @ v, axis=0)                       # small
        h = rt.relu(t * 2.0)                            # large
        return rt.sum(h, axis=0) + k[0], rt.exp(k)      # a large reduction, then small ops
    g = rt.capture(f, x, u)
    want = [o.numpy() for o in g.compile()(x, u)]
    calls = []
    real = ks.keep_warm
    monkeypatch.setattr(type(ks), "keep_warm_s", -1.0)
    monkeypatch.setattr(type(ks), "keep_warm", lambda self: (calls.append(1), real())[1])
    exe = g.compile()
    assert [s[1].op if s[0] == "op" else s[1].kind for s in exe.steps] == [
        "matmul", "sum", "elementwise", "sum", "index", "add", "exp"]
    got = [o.numpy() for o in exe(x, u)]
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()
    assert len(calls) == 3 and exe.parallel       # before the matmul and the small sum; at the end
    small_graph = rt.capture(lambda v: rt.exp(v @ v) + 1.0, u)   # (one input, used twice)
    small = small_graph.compile()
    calls.clear()
    (got,) = small(u)
    assert calls == [] and not small.parallel
    assert got.numpy().tobytes() == small_graph.run(u)[0].numpy().tobytes()


def test_a_compiled_function_wakes_the_workers_before_its_graph(monkeypatch):
    from runtime import dispatch
    ks = dispatch.kernels_for(rt.cpu())
    calls = []
    real = ks.keep_warm
    monkeypatch.setattr(type(ks), "keep_warm", lambda self: (calls.append(1), real())[1])
    f = rt.compile(lambda t: rt.relu(t) * 2.0)
    x = rt.tensor(RNG.standard_normal((300, 200)).astype(np.float32))
    f(x)
    before = len(calls)
    got = f(x)
    assert len(calls) > before                     # the call's start, before the graph runs
    np.testing.assert_array_equal(got.numpy(), np.maximum(x.numpy(), 0) * np.float32(2.0))
