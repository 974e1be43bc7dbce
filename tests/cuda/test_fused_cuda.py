"""``graph.compile(rt.cuda())``: fused programs run as generated GPU kernels (``jit_kernels.cuda.
fused``) and return what ``graph.run(..., device=cuda)`` returns.

Under the simulator shapes are tiny (it pays per thread); on a GPU (``RT_TEST_DEVICE=cuda``) the
same tests run with bigger shapes.  Elementwise results are compared exactly under the simulator
(same scalar bodies as the eager kernels); on a GPU NVVM may contract a fused ``a * b + c`` into
an FMA, so floats are compared to within a few ulp there.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import runtime as rt

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1"
BIG = os.environ.get("RT_TEST_DEVICE", "") == "cuda" and not SIM

DTYPES = [rt.float32, rt.float64, rt.int32, rt.int64, rt.bool_]
NP = {rt.float32: np.float32, rt.float64: np.float64, rt.int32: np.int32,
      rt.int64: np.int64, rt.bool_: np.bool_}
UNARY = ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "erf", "reciprocal",
         "sign", "floor", "logical_not"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "lt", "ge",
          "logical_and", "logical_or"]
SCALARS = [2, -1, 0.5, 1.5, True]


def _data(shape, dtype, rng):
    if dtype is rt.bool_:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        return rng.integers(-4, 5, size=shape).astype(NP[dtype])
    return rng.uniform(-3, 3, size=shape).astype(NP[dtype])


def _random_case(seed):
    """(input arrays, graph function) for a random elementwise graph: broadcasting inputs of
    mixed dtypes, scalar operands, casts, where, clamp; 1–3 outputs."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    full = tuple(int(rng.integers(1, 5)) for _ in range(rank))
    if BIG:
        full = full[:-1] + (3000,)
    specs = [(full, DTYPES[rng.integers(len(DTYPES))])]
    for _ in range(int(rng.integers(0, 3))):
        r = int(rng.integers(0, rank + 1))
        shape = tuple(1 if rng.random() < 0.4 else d for d in full[rank - r:])
        specs.append((shape, DTYPES[rng.integers(len(DTYPES))]))
    steps = []
    for _ in range(int(rng.integers(4, 9))):
        kind = ["u", "b", "b", "bs", "w", "c", "cl"][rng.integers(7)]
        a, b, c = (int(v) for v in rng.integers(0, 100, 3))
        if kind == "u":
            steps.append(("u", UNARY[rng.integers(len(UNARY))], a))
        elif kind in ("b", "bs"):
            steps.append((kind, BINARY[rng.integers(len(BINARY))], a, b,
                          SCALARS[rng.integers(len(SCALARS))], bool(rng.integers(2))))
        elif kind == "w":
            steps.append(("w", a, b, c))
        elif kind == "c":
            steps.append(("c", a, DTYPES[rng.integers(len(DTYPES))]))
        else:
            steps.append(("cl", a, [(-1, 1), (0, None), (None, 2.5)][rng.integers(3)]))
    n_out = int(rng.integers(1, 4))

    def fn(*xs):
        vals = list(xs)
        for step in steps:
            # mostly the latest values (long chains fuse), sometimes any earlier one
            pick = lambda i: (vals[-1 - i % min(3, len(vals))] if i < 70
                              else vals[i % len(vals)])
            try:
                if step[0] == "u":
                    y = getattr(rt, step[1])(pick(step[2]))
                elif step[0] == "b":
                    y = getattr(rt, step[1])(pick(step[2]), pick(step[3]))
                elif step[0] == "bs":
                    _, op, a, _b, s, right = step
                    y = getattr(rt, op)(pick(a), s) if right else getattr(rt, op)(s, pick(a))
                elif step[0] == "w":
                    y = rt.where(rt.cast(pick(step[1]), rt.bool_), pick(step[2]), pick(step[3]))
                elif step[0] == "c":
                    y = rt.cast(pick(step[1]), step[2])
                else:
                    y = rt.clamp(pick(step[1]), *step[2])
            except (rt.errors.DTypeError, rt.errors.ShapeError, TypeError):
                continue
            vals.append(y)
        outs = vals[len(xs):] or vals[:1]
        return tuple(outs[-n_out:])

    return [_data(s, d, rng) for s, d in specs], fn


def _same(got, want, rtol=None, atol=0.0):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device == w.device and g.shape == w.shape and g.dtype is w.dtype
        a, b = g.numpy(), w.numpy()
        if rtol is None and (SIM or a.dtype.kind != "f"):
            np.testing.assert_array_equal(a, b)
        else:
            if rtol is None:
                rtol = 4e-7 if a.dtype == np.float32 else 1e-15
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _run_compiled(exe, *xs):
    """Call ``exe`` forbidding host round trips, then read the results back normally."""
    mp = pytest.MonkeyPatch()
    import jit_kernels.cpu.fused as cpu_fused
    import jit_kernels.cuda.memory as mem

    def boom(*a, **k):
        raise AssertionError("fused program took a host round trip")

    mp.setattr(cpu_fused, "fused", boom)
    mp.setattr(mem, "to_host", boom)
    try:
        return exe(*xs)
    finally:
        mp.undo()


SEEDS = range(10)


def test_random_cases_mostly_fuse(cuda_dev):
    fused = sum(bool(rt.capture(fn, *arrays).compile(cuda_dev).programs)
                for arrays, fn in map(_random_case, SEEDS))
    assert fused >= 7


@pytest.mark.parametrize("seed", SEEDS)
def test_random_elementwise_compile_equals_run(cuda_dev, seed):
    arrays, fn = _random_case(seed)
    g = rt.capture(fn, *arrays)
    exe = g.compile(cuda_dev)
    got = _run_compiled(exe, *arrays)
    _same(got, g.run(*arrays, device=cuda_dev))


def test_broadcast_scalars_strided_inputs_one_kernel(cuda_dev):
    rng = np.random.default_rng(3)
    n, m = (256, 300) if BIG else (6, 10)
    base = rng.standard_normal((n, m)).astype(np.float32)
    row = rng.standard_normal(m).astype(np.float64)
    col = rng.standard_normal((n, 1)).astype(np.float32)
    def fn(x, r, c):
        y = x * r + c
        return rt.tanh(y) - rt.sigmoid(x) * 2.0, y > 0.5

    g = rt.capture(fn, base, row, col)
    exe = g.compile(cuda_dev)
    assert [p.kind for p in exe.programs] == ["elementwise"]
    assert len(exe.programs[0].outputs) == 2          # both outputs from one kernel
    xt = rt.tensor(base.T.copy(), device=cuda_dev).T  # transposed (non-contiguous) view
    rc = rt.tensor(row, device=cuda_dev)
    for x in (base, xt):
        _same(_run_compiled(exe, x, rc, col), g.run(x, rc, col, device=cuda_dev))


def test_int_and_bool_chain_and_cast(cuda_dev):
    rng = np.random.default_rng(4)
    a = rng.integers(-50, 50, size=(3, 7)).astype(np.int32)
    b = rng.integers(-5, 5, size=(7,)).astype(np.int64)
    g = rt.capture(lambda x, y: (rt.cast(rt.maximum(x * 3, y) - 1, rt.float32) / 2,
                                 rt.logical_and(x > y, rt.logical_not(x == 0))), a, b)
    exe = g.compile(cuda_dev)
    _same(_run_compiled(exe, a, b), g.run(a, b, device=cuda_dev))


def test_empty_shape(cuda_dev):
    x = np.zeros((0, 4), np.float32)
    g = rt.capture(lambda t: rt.exp(t) * 2 + 1, x)
    got = g.compile(cuda_dev)(x)
    assert got[0].shape == (0, 4) and got[0].numpy().shape == (0, 4)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows(cuda_dev, log, dtype):
    rng = np.random.default_rng(5)
    shape = (64, 1000) if BIG else (2, 3, 9)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    f = rt.log_softmax if log else rt.softmax
    g = rt.capture(lambda t: f(t * 0.5 + 1.0, axis=-1), x)
    exe = g.compile(cuda_dev)
    assert [p.kind for p in exe.programs] == ["rows"] and len(exe.programs[0].ops) == 3
    _same(_run_compiled(exe, x), g.run(x, device=cuda_dev), rtol=2e-6, atol=1e-7)


def test_softmax_special_values(cuda_dev):
    x = np.random.default_rng(6).standard_normal((5, 8))
    x[1, 3] = np.inf
    x[2, :] = -np.inf
    x[3, 7] = np.nan
    g = rt.capture(lambda t: rt.softmax(t, axis=-1), x)
    _same(_run_compiled(g.compile(cuda_dev), x), g.run(x, device=cuda_dev), rtol=1e-12)


def layer_norm(x, w, b, eps=1e-5):
    m = rt.mean(x, axis=-1, keepdims=True)
    d = x - m
    v = rt.mean(d * d, axis=-1, keepdims=True)
    return d * rt.rsqrt(v + eps) * w + b


def test_layer_norm_one_rows_kernel(cuda_dev):
    rng = np.random.default_rng(7)
    shape = (4, 50, 96) if BIG else (2, 3, 12)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    g = rt.capture(lambda t: layer_norm(t, rt.tensor(w, device=t.device),
                                        rt.tensor(b, device=t.device)), x)
    exe = g.compile(cuda_dev)
    assert [p.kind for p in exe.programs] == ["rows"] and len(exe.programs[0].ops) == 9
    got = _run_compiled(exe, x)
    _same(got, g.run(x, device=cuda_dev), rtol=1e-5, atol=1e-6)
    mu = x.mean(-1, keepdims=True)
    ref = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=1e-4, atol=1e-4)


def test_rows_with_row_outputs_and_reductions(cuda_dev):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((40, 64) if BIG else (3, 10)).astype(np.float32)

    def fn(t):
        y = rt.exp(t * 0.1)
        s = rt.sum(y, axis=-1, keepdims=True)
        mx = rt.max(t, axis=-1)              # keepdims=False: an output only
        mn = rt.min(t, axis=1, keepdims=True)
        return y / s, s, mx, t - mn, y

    g = rt.capture(fn, x)
    exe = g.compile(cuda_dev)
    assert "rows" in [p.kind for p in exe.programs]
    _same(_run_compiled(exe, x), g.run(x, device=cuda_dev), rtol=1e-6, atol=1e-7)


def test_mlp_inference(cuda_dev):
    rng = np.random.default_rng(9)
    B, D, H, O = (256, 128, 256, 10) if BIG else (4, 6, 5, 3)
    x = rng.standard_normal((B, D)).astype(np.float32)
    w1 = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32)
    b1 = rng.standard_normal(H).astype(np.float32)
    w2 = (rng.standard_normal((H, O)) / np.sqrt(H)).astype(np.float32)
    b2 = rng.standard_normal(O).astype(np.float32)

    def mlp(t):
        dev = t.device
        h = rt.relu(t @ rt.tensor(w1, device=dev) + rt.tensor(b1, device=dev))
        return rt.log_softmax(h @ rt.tensor(w2, device=dev) + rt.tensor(b2, device=dev), axis=-1)

    g = rt.capture(mlp, x)
    exe = g.compile(cuda_dev)
    kinds = [p.kind for p in exe.programs]
    assert "matmul" in kinds
    got = _run_compiled(exe, x)
    _same(got, g.run(x, device=cuda_dev), rtol=1e-5, atol=1e-6)
    h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    ref = h - h.max(-1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(-1, keepdims=True))
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=1e-4, atol=1e-4)


def test_matmul_epilogue_with_matmul_output(cuda_dev):
    rng = np.random.default_rng(10)
    a = rng.standard_normal((3, 4)).astype(np.float64)
    b = rng.standard_normal((4, 5)).astype(np.float64)
    g = rt.capture(lambda x, y: (lambda m: (m, rt.tanh(m) * 2.0))(x @ y), a, b)
    exe = g.compile(cuda_dev)
    assert [p.kind for p in exe.programs] == ["matmul"]
    _same(_run_compiled(exe, a, b), g.run(a, b, device=cuda_dev), rtol=1e-12)


def test_explain_lists_gpu_kernels(cuda_dev):
    from jit_kernels.cuda import fused
    x = np.ones((2, 5), np.float32)
    g = rt.capture(lambda t: (rt.softmax(t * 2.0, axis=-1), rt.exp(t) + 1.0), x)
    exe = g.compile(cuda_dev)
    text = exe.explain()
    assert text.startswith("CompiledGraph on cuda:0: 2 fused kernel(s)")
    assert "kernel 0: rows" in text or "kernel 1: rows" in text
    assert "elementwise" in text and "softmax" in text and "exp" in text
    exe(x)
    # the kernels that ran are generated cuda modules (real files: Numba can disk-cache them)
    names = {m.__name__ for m in fused._MODS.values()}
    assert any(n.startswith("_jkgen_cuda_fused_rows_") for n in names)
    assert any(n.startswith("_jkgen_cuda_fused_elementwise_") for n in names)
    for m in fused._MODS.values():
        assert os.path.exists(m.__file__)
        assert "@cuda.jit(cache=True)" in open(m.__file__).read()


# ------------------------------------------------------------------------------ PTX for sm_90
def _root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.needs_sim
def test_fused_kernels_compile_to_ptx_sm90(tmp_path):
    """Record the launches of every fused kernel kind under the simulator, then compile each
    with ``compile_ptx(cc=(9, 0))`` in a process without the simulator."""
    from jit_kernels.cuda import _array
    ok = subprocess.run([sys.executable, "-c", "import numba; from numba import cuda\n"
                         "def f(a):\n    a[0] = 1.0\n"
                         "cuda.compile_ptx(f, (numba.float32[::1],), cc=(9, 0))\n"],
                        env={k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"},
                        capture_output=True, cwd=_root())
    if ok.returncode:
        pytest.skip("needs a GPU compiler: numba.cuda cannot compile PTX here (NVVM/NVRTC missing)")
    dev = rt.cuda(0)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    xi = rng.integers(-3, 3, (6,)).astype(np.int32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    graphs = [
        (lambda t, i: (rt.where(t > 0, rt.tanh(t * 2.0 + i), rt.cast(i, rt.float32)), t < i),
         (x, xi)),
        (lambda t: (rt.softmax(t * 0.5, axis=-1), rt.log_softmax(t + 1.0, axis=-1)), (x,)),
        (lambda t: layer_norm(t, rt.tensor(np.ones(6, np.float32), device=t.device),
                              rt.tensor(np.zeros(6, np.float32), device=t.device)), (x,)),
        (lambda t: (rt.max(t, axis=-1) - rt.min(t, axis=-1) + rt.sum(t, axis=-1),), (x,)),
        (lambda t: rt.relu(t @ rt.tensor(w, device=t.device) + 1.0), (x,)),
    ]
    _array.RECORD = []
    try:
        for fn, args in graphs:
            rt.capture(fn, *args).compile(dev)(*args)
        recs = sorted({r for r in _array.RECORD if "cuda_fused" in os.path.basename(r[0])})
    finally:
        _array.RECORD = None
    kinds = {os.path.basename(p).split("_")[4] for p, _, _ in recs}
    assert kinds >= {"elementwise", "rows"}, recs
    assert len(recs) >= 5
    path = tmp_path / "launches.json"
    path.write_text(json.dumps([[p, n, [list(d) for d in ds]] for p, n, ds in recs]))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-W", "ignore", "-m", "jit_kernels.cuda.ptx", "compile",
                        str(path)], env=env, cwd=_root(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert f"compiled {len(recs)}/{len(recs)} kernels for sm_90" in r.stdout
