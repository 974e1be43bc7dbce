"""Shape and indexing ops (pad, repeat/tile, repeat_interleave, roll, flip, tril/triu,
diagonal/diag/diag_embed, meshgrid, movedim, narrow, unflatten, index_select, masked_fill,
one_hot, scatter, scatter_reduce, index_add, nonzero, masked_select): forward against NumPy in
float64 (cast to float32) and against PyTorch where installed, gradients by finite differences
in float64 (and against torch), capture/replay/ONNX, typed errors with their messages.

They are compositions of existing records, so they compile no kernel of their own: the cost
here is the take/index/where/scatter_add kernels for float32 and float64."""
import numpy as np
import pytest

import runtime as rt
from autodiff.gradcheck import check_grad
from oracle import needs_torch, onnx_run, torch

A = np.random.default_rng(0).standard_normal((3, 4, 5))      # float64 master
A32 = A.astype(np.float32)
I2 = np.random.default_rng(1).integers(0, 5, (3, 4, 5))


def _np_pad(mode):
    return {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}[mode]


# --------------------------------------------------------------------------- forward vs NumPy
FORWARD = [
    ("pad_constant", lambda t: rt.pad(t, (1, 2, 0, 1), value=0.5),
     lambda a: np.pad(a, ((0, 0), (0, 1), (1, 2)), constant_values=0.5)),
    ("pad_reflect", lambda t: rt.pad(t, (2, 1, 1, 3), mode="reflect"),
     lambda a: np.pad(a, ((0, 0), (1, 3), (2, 1)), mode="reflect")),
    ("pad_replicate", lambda t: rt.pad(t, (3, 1), mode="replicate"),
     lambda a: np.pad(a, ((0, 0), (0, 0), (3, 1)), mode="edge")),
    ("pad_circular", lambda t: rt.pad(t, (2, 2, 1, 0, 1, 1), mode="circular"),
     lambda a: np.pad(a, ((1, 1), (1, 0), (2, 2)), mode="wrap")),
    ("pad_crop", lambda t: rt.pad(t, (-1, 2, 1, -2)), lambda a: np.pad(a[:, :-2, 1:], ((0, 0), (1, 0), (0, 2)))),
    ("repeat", lambda t: t.repeat(2, 1, 3, 1), lambda a: np.tile(a, (2, 1, 3, 1))),
    ("tile", lambda t: t.tile((2, 1)), lambda a: np.tile(a, (2, 1))),
    ("repeat_interleave", lambda t: t.repeat_interleave(2, dim=1), lambda a: np.repeat(a, 2, axis=1)),
    ("repeat_interleave_flat", lambda t: t.repeat_interleave(2), lambda a: np.repeat(a, 2)),
    ("repeat_interleave_t", lambda t: t.repeat_interleave(rt.tensor([1, 0, 3]), dim=0),
     lambda a: np.repeat(a, [1, 0, 3], axis=0)),
    ("roll", lambda t: t.roll((1, -2), (0, 2)), lambda a: np.roll(a, (1, -2), (0, 2))),
    ("roll_flat", lambda t: t.roll(7), lambda a: np.roll(a, 7)),
    ("flip", lambda t: t.flip((0, 2)), lambda a: np.flip(a, (0, 2))),
    ("tril", lambda t: t.tril(1), lambda a: np.tril(a, 1)),
    ("triu", lambda t: t.triu(-1), lambda a: np.triu(a, -1)),
    ("diagonal", lambda t: t.diagonal(1, 0, 2), lambda a: np.diagonal(a, 1, 0, 2)),
    ("diagonal_neg", lambda t: t.diagonal(-1, 2, 1), lambda a: np.diagonal(a, -1, 2, 1)),
    ("diag_vec", lambda t: rt.diag(t[0, 0], 2), lambda a: np.diag(a[0, 0], 2)),
    ("diag_mat", lambda t: rt.diag(t[0], -1), lambda a: np.diag(a[0], -1)),
    ("movedim", lambda t: t.movedim((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    ("narrow", lambda t: t.narrow(2, -3, 2), lambda a: a[:, :, 2:4]),
    ("unflatten", lambda t: t.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 2, 5)),
    ("index_select", lambda t: t.index_select(1, rt.tensor([3, 0, 0])), lambda a: a[:, [3, 0, 0]]),
    ("masked_fill", lambda t: t.masked_fill(t > 0.5, -2.0), lambda a: np.where(a > 0.5, -2.0, a)),
    ("masked_fill_bcast", lambda t: t.masked_fill(rt.tensor(np.array([True, False] * 2 + [True])), 1.0),
     lambda a: np.where(np.array([True, False] * 2 + [True]), 1.0, a)),
    ("masked_select", lambda t: rt.masked_select(t, t > 0), lambda a: a[a > 0]),
]


@pytest.mark.parametrize("fn,ref", [pytest.param(f, r, id=n) for n, f, r in FORWARD])
def test_forward_matches_numpy(fn, ref):
    got = fn(rt.tensor(A32))
    want = ref(A).astype(np.float32)
    assert got.shape == want.shape and got.dtype == rt.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_diag_embed_and_meshgrid():
    t = rt.tensor(A32)
    d = rt.diag_embed(t, 1, 0, 2)               # dims 0 and 2 hold t's last dim, offset 1
    assert d.shape == (6, 3, 6, 4)
    for i, j in np.ndindex(3, 4):
        np.testing.assert_array_equal(d.numpy()[:, i, :, j], np.diag(A32[i, j], 1))
    x, y = rt.tensor(A32[0, 0]), rt.tensor(A32[0, :, 0])
    for ind in ("ij", "xy"):
        got = rt.meshgrid(x, y, indexing=ind)
        want = np.meshgrid(A32[0, 0], A32[0, :, 0], indexing=ind)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)


def test_diag_embed_batched_against_loops():
    t = rt.tensor(A32[:, 0, :3])                # (3, 3)
    got = rt.diag_embed(t, -1).numpy()          # (3, 4, 4)
    want = np.stack([np.diag(r, -1) for r in A32[:, 0, :3]])
    np.testing.assert_array_equal(got, want)


def test_one_hot_scatter_index_add_forward():
    np.testing.assert_array_equal(rt.one_hot(rt.tensor([0, 2, 1]), 4).numpy(), np.eye(4, dtype=np.int64)[[0, 2, 1]])
    assert rt.one_hot(rt.tensor([[0], [3]])).shape == (2, 1, 4)
    assert rt.one_hot(rt.tensor([0, 2])).dtype == rt.int64
    t = rt.tensor(A32)
    idx = rt.tensor([2, 0, 0])
    got = t.index_add(1, idx, t[:, :3], alpha=2.0).numpy()
    want = A32.copy()
    for j, i in enumerate([2, 0, 0]):
        want[:, i] += 2 * A32[:, j]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # scatter with distinct indices along axis 0 (a permutation per column)
    perm = np.array([[1, 2, 0], [2, 0, 1]]).T[:, :, None].repeat(5, 2)[:, :2]   # (3, 2, 5)
    src = A32[:, :2]
    got = t.scatter(0, rt.tensor(perm), rt.tensor(src)).numpy()
    want = A32.copy()
    for p in np.ndindex(perm.shape):
        want[(perm[p],) + p[1:]] = src[p]
    np.testing.assert_array_equal(got, want)
    got = t.scatter(2, rt.tensor(np.zeros((3, 4, 1), np.int64)), 9.0).numpy()
    want = A32.copy()
    want[:, :, 0] = 9.0
    np.testing.assert_array_equal(got, want)


def _np_scatter_reduce(x, dim, idx, src, reduce, include_self):
    out = x.copy()
    groups = {}
    for p in np.ndindex(idx.shape):
        q = p[:dim] + (idx[p],) + p[dim + 1:]
        groups.setdefault(q, []).append(src[p])
    f = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for q, vals in groups.items():
        out[q] = f(vals + [x[q]] if include_self else vals)
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_matches_numpy(reduce):
    idx = I2[:, :, :3]
    src = A[:, :, :3] + 1.5
    for include_self in (True, False):
        got = rt.tensor(A32).scatter_reduce(2, rt.tensor(idx), rt.tensor(src.astype(np.float32)),
                                            reduce, include_self=include_self)
        want = _np_scatter_reduce(A, 2, idx, src, reduce, include_self)
        np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_scatter_reduce_with_an_index_smaller_than_the_input():
    idx = I2[:2, :3, :2]                      # smaller than x off the axis: the rest keeps x
    src = A[:, :, :3] + 1.5
    for reduce in ("amax", "sum"):
        got = rt.tensor(A32).scatter_reduce(2, rt.tensor(idx), rt.tensor(src.astype(np.float32)),
                                            reduce, include_self=False)
        want = _np_scatter_reduce(A, 2, idx, src, reduce, False)
        np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_native_scatter_reduce_against_ufunc_at():
    # the native prod/amax/amin kernel (eager) against NumPy's unbuffered ufunc.at: repeated
    # and negative indices, a strided src, NaN propagation, int64
    rng = np.random.default_rng(5)
    x = rng.standard_normal(7).astype(np.float32)
    idx = rng.integers(-7, 7, 40)
    src = rng.standard_normal(80).astype(np.float32)[::2]
    src[3] = np.nan
    for reduce, uf in (("amax", np.fmax), ("amin", np.fmin), ("prod", np.multiply)):
        want = x.astype(np.float64)
        uf.at(want, idx, src.astype(np.float64))
        if reduce != "prod":                   # NaN propagates (fmax/fmin would skip it)
            want[idx[3] % 7] = np.nan
        got = rt.tensor(x).scatter_reduce(0, rt.tensor(idx), rt.tensor(src[::1]), reduce)
        np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=1e-5)
    xi = rng.integers(-5, 5, 6)
    ii = rng.integers(0, 6, 12)
    si = rng.integers(-5, 5, 12)
    want = xi.copy()
    np.maximum.at(want, ii, si)
    np.testing.assert_array_equal(rt.tensor(xi).scatter_reduce(0, rt.tensor(ii), rt.tensor(si),
                                                               "amax").numpy(), want)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"^scatter_reduce: .*index 7 is out of "
                       r"bounds for axis 0 with size 7"):
        rt.tensor(x).scatter_reduce(0, rt.tensor([7]), rt.tensor(src[:1]), "amax")


def test_nonzero():
    a = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], np.float32)
    np.testing.assert_array_equal(rt.tensor(a).nonzero().numpy(), np.argwhere(a))
    rows, cols = rt.nonzero(rt.tensor(a), as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), np.nonzero(a)[0])
    np.testing.assert_array_equal(cols.numpy(), np.nonzero(a)[1])
    assert rt.tensor(a).nonzero().dtype == rt.int64
    assert rt.zeros(0, 3).nonzero().shape == (0, 2)


@needs_torch
def test_against_torch():
    t, tt = rt.tensor(A32), torch.tensor(A32)
    tf = torch.nn.functional
    pairs = [
        (rt.pad(t, (1, 2, 2, 1), mode="reflect"), tf.pad(tt[None], (1, 2, 2, 1), mode="reflect")[0]),
        (rt.pad(t, (1, 2), mode="circular"), tf.pad(tt, (1, 2), mode="circular")),
        (t.repeat(2, 1, 1, 2), tt.repeat(2, 1, 1, 2)),
        (t.diagonal(1, 0, 2), tt.diagonal(1, 0, 2)),
        (rt.diag_embed(t, 1, 0, 2), torch.diag_embed(tt, 1, 0, 2)),
        (t.roll((1, -2), (0, 2)), tt.roll((1, -2), (0, 2))),
        (rt.one_hot(rt.tensor([0, 2, 1]), 4), tf.one_hot(torch.tensor([0, 2, 1]), 4)),
        (t.index_add(1, rt.tensor([2, 0, 0]), t[:, :3], alpha=2),
         tt.index_add(1, torch.tensor([2, 0, 0]), tt[:, :3], alpha=2)),
    ]
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            pairs.append((t.scatter_reduce(2, rt.tensor(I2), t, red, include_self=inc),
                          tt.scatter_reduce(2, torch.tensor(I2), tt, red, include_self=inc)))
    for k, (g, w) in enumerate(pairs):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6, err_msg=str(k))


# --------------------------------------------------------------------------- gradients
X = np.random.default_rng(2).standard_normal((3, 4))
GRADS = [
    ("pad_constant", lambda x: rt.pad(x, (1, 2, 1, 0), value=1.0)),
    ("pad_reflect", lambda x: rt.pad(x, (2, 1, 1, 2), mode="reflect")),
    ("pad_replicate", lambda x: rt.pad(x, (2, 1), mode="replicate")),
    ("pad_circular", lambda x: rt.pad(x, (1, 3, 1, 1), mode="circular")),
    ("repeat", lambda x: x.repeat(2, 1, 2)),
    ("repeat_interleave", lambda x: x.repeat_interleave(rt.tensor([2, 0, 1]), dim=0)),
    ("roll", lambda x: x.roll((1, 2), (0, 1))),
    ("flip", lambda x: x.flip(1)),
    ("tril", lambda x: x.tril()),
    ("diagonal", lambda x: x.diagonal(1)),
    ("diag_embed", lambda x: rt.diag_embed(x, -1)),
    ("index_select", lambda x: x.index_select(1, rt.tensor([0, 3, 3]))),
    ("masked_fill", lambda x: x.masked_fill(rt.tensor(X > 0, device=x.device), 0.0)),
    ("masked_select", lambda x: rt.masked_select(x, rt.tensor(X > 0, device=x.device))),
    ("scatter_reduce_amax", lambda x: x.scatter_reduce(
        1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device), x[:, :2] * 2.0, "amax")),
    ("scatter_reduce_prod", lambda x: x.scatter_reduce(
        1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device), x[:, 2:], "prod",
        include_self=False)),
    ("scatter_reduce_mean", lambda x: x.scatter_reduce(
        1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device), x[:, 2:], "mean")),
    ("scatter", lambda x: x.scatter(1, rt.tensor([[3], [0], [1]], device=x.device), x[:, 1:2] * 3.0)),
    ("index_add", lambda x: x.index_add(0, rt.tensor([1, 1], device=x.device), x[:2] * x[:2])),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in GRADS])
def test_gradients_by_finite_differences(fn):
    check_grad(fn, X)


@needs_torch
def test_gradients_against_torch():
    cases = [
        (lambda x: rt.pad(x, (2, 1, 1, 2), mode="reflect"),
         lambda x: torch.nn.functional.pad(x[None], (2, 1, 1, 2), mode="reflect")[0]),
        (lambda x: x.diagonal(-1), lambda x: x.diagonal(-1)),
        (lambda x: x.repeat(2, 1, 2).roll(1, 2), lambda x: x.repeat(2, 1, 2).roll(1, 2)),
        (lambda x: rt.diag_embed(x, 1), lambda x: torch.diag_embed(x, 1)),
        (lambda x: x.index_add(0, rt.tensor([1, 1], device=x.device), x[:2] * x[:2], alpha=0.5),
         lambda x: x.index_add(0, torch.tensor([1, 1]), x[:2] * x[:2], alpha=0.5)),
        (lambda x: x.scatter_reduce(1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device),
                                    x[:, 2:], "mean"),
         lambda x: x.scatter_reduce(1, torch.tensor([[0, 0], [1, 3], [2, 2]]), x[:, 2:], "mean")),
        (lambda x: x[[0, 2, 0], [1, 1, 1]], lambda x: x[[0, 2, 0], [1, 1, 1]]),
        (lambda x: x.scatter_reduce(1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device),
                                    x[:, :2] * 2.0, "amax"),
         lambda x: x.scatter_reduce(1, torch.tensor([[0, 0], [1, 3], [2, 2]]), x[:, :2] * 2.0,
                                    "amax")),
    ]
    ad = rt.autodiff(rt.cpu())
    for ours, theirs in cases:
        x = rt.tensor(X, device=ad).require_grad()
        y = ours(x)
        w = np.random.default_rng(3).uniform(0.5, 1.5, y.shape)
        grads = (y * rt.tensor(w, device=ad)).sum().backward()
        xt = torch.tensor(X, requires_grad=True)
        yt = theirs(xt)
        (yt * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad(grads).numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- capture, ONNX
def _chain(x):
    y = rt.pad(x, (1, 1, 2, 0), mode="reflect").flip(0).tril(1)
    z = y.diagonal().repeat(2) + x.roll(1, 1).index_select(1, rt.tensor([0, 2], device=x.device)).sum()
    r = x.scatter_reduce(1, rt.tensor([[0, 0], [1, 3], [2, 2]], device=x.device), x[:, :2], "amax")
    return z, r, rt.one_hot(rt.tensor([1, 0], device=x.device), 3), x.movedim(0, 1).narrow(0, 1, 2)


def test_capture_replay_and_onnx(tmp_path):
    x = X.astype(np.float32)
    graph = rt.capture(_chain, x)
    want = _chain(rt.tensor(x))
    got = graph.run(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    outs = onnx_run(graph, tmp_path / "m.onnx", x)
    for g, w in zip(outs, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,fn", [
    ("nonzero", lambda x: x.nonzero()),
    ("masked_select", lambda x: rt.masked_select(x, x > 0)),
    ("repeat_interleave", lambda x: x.repeat_interleave(rt.tensor([1, 2, 0], device=x.device), dim=0)),
    ("one_hot", lambda x: rt.one_hot(rt.tensor([1, 2], device=x.device))),
])
def test_data_dependent_shapes_raise_in_capture(op, fn):
    cap = rt.CaptureDevice()
    with pytest.raises(rt.CaptureError) as exc:
        with cap.capture_scope() as scope:
            fn(scope.placeholder((3, 4)))
    assert exc.value.kind == "DataDependentShape"
    assert str(exc.value).startswith(f"{op}: the output shape depends on the values of the input")


# --------------------------------------------------------------------------- errors
def _raises(cls, msg, fn):
    with pytest.raises(cls) as exc:
        fn()
    assert str(exc.value) == msg


def test_errors():
    t = rt.tensor(A32)
    _raises(rt.ShapeError, "pad: the padding (1, 2, 3) must have an even length of at most "
            "2 * 3 for an input of shape (3, 4, 5)", lambda: rt.pad(t, (1, 2, 3)))
    _raises(rt.ShapeError, "pad: reflect padding (5, 0) must be smaller than the size 5 of axis "
            "2 (shape (3, 4, 5))", lambda: rt.pad(t, (5, 0), mode="reflect"))
    _raises(rt.ArgumentValueError, "pad: mode must be one of constant, reflect, replicate, "
            "circular, got 'edge'", lambda: rt.pad(t, (1, 1), mode="edge"))
    _raises(rt.ShapeError, "repeat: 2 repeat counts (2, 2) for a tensor of shape (3, 4, 5): give "
            "at least one per dimension", lambda: t.repeat(2, 2))
    _raises(rt.ShapeError, "roll: shifts (1, 2) and dims (0,) must have the same length",
            lambda: t.roll((1, 2), 0))
    _raises(rt.ShapeError, "tril: input must have at least 2 dimensions, got shape (5,)",
            lambda: t[0, 0].tril())
    _raises(rt.ShapeError, "diagonal: dim1 and dim2 must differ, both are 1 (shape (3, 4, 5))",
            lambda: t.diagonal(0, 1, -2))
    _raises(rt.ShapeError, "narrow: start 3 and length 2 do not fit axis 0 of shape (3, 4, 5)",
            lambda: t.narrow(0, 3, 2))
    _raises(rt.ShapeError, "unflatten: sizes (3, 2) do not multiply to the size 4 of axis 1 "
            "(shape (3, 4, 5))", lambda: t.unflatten(1, (3, 2)))
    _raises(rt.DTypeError, "masked_fill: mask must be bool, got float32",
            lambda: t.masked_fill(t, 0.0))
    _raises(rt.DTypeError, "one_hot: input must be int32 or int64, got float32",
            lambda: rt.one_hot(t))
    _raises(rt.IndexOutOfRangeError, "one_hot: class value 4 is out of range for num_classes 3",
            lambda: rt.one_hot(rt.tensor([0, 4]), 3))
    _raises(rt.ArgumentValueError, "scatter_reduce: reduce must be one of sum, prod, mean, amax, "
            "amin, got 'max'", lambda: t.scatter_reduce(0, rt.tensor(I2), t, "max"))
    _raises(rt.DTypeError, "scatter_reduce: reduce='mean' needs a float input, got int64",
            lambda: rt.tensor(I2).scatter_reduce(0, rt.tensor(I2), rt.tensor(I2), "mean"))
    _raises(rt.ShapeError, "index_add: source of shape (3, 2, 5) must have shape (3, 3, 5) (the "
            "input's (3, 4, 5) with 3 on axis 1)",
            lambda: t.index_add(1, rt.tensor([0, 1, 2]), t[:, :2]))
    _raises(rt.ShapeError, "index_select: index must be 0-d or 1-d, got shape (1, 1)",
            lambda: t.index_select(0, rt.tensor([[0]])))


def test_out_of_range_indices_raise_and_name_the_op():
    t = rt.tensor(A32)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"^index_select: .*index 4 is out of "
                       r"bounds for axis 1 with size 4"):
        t.index_select(1, rt.tensor([0, 4]))
    with pytest.raises(rt.IndexOutOfRangeError, match=r"^scatter: .*index 7 is out of bounds "
                       r"for axis 2 with size 5"):
        t.scatter(2, rt.tensor(np.full((1, 1, 1), 7)), 1.0)
    with pytest.raises(rt.IndexOutOfRangeError, match=r"^index_add: .*index -5 is out of "
                       r"bounds for axis 0 with size 3"):
        t.index_add(0, rt.tensor([-5]), t[:1])
