"""Random elementwise graphs (hypothesis: shapes, broadcasting, dtypes, scalar operands):
``graph.compile(cpu)`` returns exactly what ``graph.run`` returns (same scalar functions)."""
import numpy as np
from hypothesis import Phase, given, settings, strategies as st

import runtime as rt
from runtime.capture.compiled import CompiledGraph

from opinfo import OPS, names
from oracle import ALL_DTYPES as DTYPES, NP

# every unary and binary op of tests/opinfo.py (clamp has its own step with bounds)
UNARY = names("unary", variants=False, exclude=("clamp",))
BINARY = names("binary")
SCALARS = [2, -1, 0.5, 1.5, True, 0]


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype is rt.bool_:
        return rng.random(shape) < 0.5
    if dtype.is_int:
        return rng.integers(-4, 5, size=shape).astype(NP[dtype])
    return rng.uniform(-3, 3, size=shape).astype(NP[dtype])


@st.composite
def graphs(draw):
    rank = draw(st.integers(0, 3))
    big = draw(st.booleans())
    full = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    if big and rank:
        full = full[:-1] + (40_000 // max(1, int(np.prod(full[:-1]))),)  # parallel path
    n_in = draw(st.integers(1, 3))
    specs = []
    for _ in range(n_in):
        r = draw(st.integers(0, rank))
        shape = tuple(1 if draw(st.booleans()) and d > 1 and not big else d
                      for d in full[rank - r:])
        specs.append((shape, draw(st.sampled_from(DTYPES))))
    specs[0] = (full, specs[0][1])
    program = []
    for _ in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["u", "b", "b", "bs", "w", "c", "cl"]))
        a = draw(st.integers(0, 100))
        b = draw(st.integers(0, 100))
        c = draw(st.integers(0, 100))
        if kind == "u":
            program.append(("u", draw(st.sampled_from(UNARY)), a))
        elif kind in ("b", "bs"):
            program.append((kind, draw(st.sampled_from(BINARY)), a, b,
                            draw(st.sampled_from(SCALARS)), draw(st.booleans())))
        elif kind == "w":
            program.append(("w", a, b, c))
        elif kind == "c":
            program.append(("c", a, draw(st.sampled_from(DTYPES))))
        else:
            program.append(("cl", a, draw(st.sampled_from([(-1, 1), (0, None), (None, 2.5)]))))
    n_out = draw(st.integers(1, 3))
    noncontig = draw(st.booleans())
    return specs, program, n_out, noncontig, draw(st.integers(0, 1000))


def build(program, n_out):
    def fn(*xs):
        vals = list(xs)
        for step in program:
            pick = lambda i: vals[i % len(vals)]
            try:
                if step[0] == "u":
                    y = OPS[step[1]].fn(pick(step[2]))
                elif step[0] == "b":
                    y = OPS[step[1]].fn(pick(step[2]), pick(step[3]))
                elif step[0] == "bs":
                    _, op, a, _b, s, right = step
                    y = OPS[op].fn(pick(a), s) if right else OPS[op].fn(s, pick(a))
                elif step[0] == "w":
                    y = rt.where(rt.cast(pick(step[1]), rt.bool_), pick(step[2]), pick(step[3]))
                elif step[0] == "c":
                    y = rt.cast(pick(step[1]), step[2])
                else:
                    lo, hi = step[2]
                    y = rt.clamp(pick(step[1]), lo, hi)
            except (rt.errors.DTypeError, rt.errors.ShapeError, TypeError):
                continue
            vals.append(y)
        outs = vals[len(xs):] or vals[:1]
        return tuple(outs[-n_out:])
    return fn


@settings(max_examples=12, derandomize=True, phases=[Phase.explicit, Phase.generate])
@given(graphs())
def test_compile_equals_run(case):
    specs, program, n_out, noncontig, seed = case
    arrays = [_data(s, d, seed + i) for i, (s, d) in enumerate(specs)]
    g = rt.capture(build(program, n_out), *arrays)
    exe = g.compile(rt.cpu())
    assert isinstance(exe, CompiledGraph)
    ins = arrays
    if noncontig:  # strided inputs: reversed views of tensors
        ins = []
        for a in arrays:
            if a.ndim:
                big = np.concatenate([a, a], axis=-1)[..., ::2] if a.shape[-1] > 0 else a
                ins.append(rt.from_numpy(a) if big.shape != a.shape else rt.from_numpy(a))
            else:
                ins.append(a)
    want = g.run(*ins)
    got = exe(*ins)
    got2 = exe(*ins)  # a second call (recycled buffers) gives the same again
    assert len(got) == len(want)
    for x, y, z in zip(got, want, got2):
        assert x.shape == y.shape and x.dtype is y.dtype
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        np.testing.assert_array_equal(z.numpy(), y.numpy())


def test_strided_and_broadcast_inputs_fuse_exactly():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((64, 50)).astype(np.float32)
    row = rng.standard_normal(50).astype(np.float32)
    col = rng.standard_normal((64, 1)).astype(np.float32)
    g = rt.capture(lambda x, r, c: rt.tanh(x * r + c) - rt.sigmoid(x), base, row, col)
    exe = g.compile()
    assert len(exe.programs) == 1 and len(exe.programs[0].ops) == 5
    xt = rt.tensor(base.T.copy()).T          # a transposed (non-contiguous) view
    stepped = rt.tensor(np.repeat(base, 2, axis=1))[:, ::2]    # every other column
    assert stepped._payload.strides == (400, 8)
    # each layout again after the others: the kernel's plan is per layout, never another's
    for x in (base, xt, stepped, base, stepped, xt):
        np.testing.assert_array_equal(exe(x, row, col)[0].numpy(), g.run(x, row, col)[0].numpy())
        np.testing.assert_array_equal(exe(x, row, col)[0].numpy(),
                                      exe(base, row, col)[0].numpy())
