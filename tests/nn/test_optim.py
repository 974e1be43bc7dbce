"""rt.optim against torch.optim step by step on the same model and data, plus state dicts,
schedulers and clipping."""
import math

import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F
from oracle import torch_or_skip

AD = rt.autodiff(rt.cpu())
RNG = np.random.default_rng(7)
X = RNG.normal(size=(16, 5)).astype(np.float32)
Y = RNG.integers(0, 3, size=16)
W1, B1 = RNG.normal(size=(4, 5)).astype(np.float32), RNG.normal(size=4).astype(np.float32)
W2, B2 = RNG.normal(size=(3, 4)).astype(np.float32), RNG.normal(size=3).astype(np.float32)


def _ours():
    m = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    m.load_state_dict({"0.weight": rt.tensor(W1), "0.bias": rt.tensor(B1),
                       "2.weight": rt.tensor(W2), "2.bias": rt.tensor(B2)})
    return m.to(AD)


def _theirs(torch):
    m = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    with torch.no_grad():
        for p, v in zip(m.parameters(), (W1, B1, W2, B2)):
            p.copy_(torch.from_numpy(v))
    return m


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "betas": (0.8, 0.99)}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_step_by_step_like_torch(name, kw):
    torch = torch_or_skip()
    ours, theirs = _ours(), _theirs(torch)
    opt = getattr(rt.optim, name)(ours.parameters(), **kw)
    topt = getattr(torch.optim, name)(theirs.parameters(), foreach=False, **kw)
    x, y = rt.tensor(X).to(AD), rt.tensor(Y).to(AD)
    tx, ty = torch.from_numpy(X), torch.from_numpy(Y)
    for _ in range(5):
        opt.step(F.cross_entropy(ours(x), y).backward())
        topt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(tx), ty).backward()
        topt.step()
        for p, q in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.value.inner().numpy(), q.detach().numpy(),
                                       rtol=2e-5, atol=2e-6)


def test_state_dict_resumes_exactly():
    ours = _ours()
    opt = rt.optim.Adam(ours.parameters(), lr=0.01)
    x, y = rt.tensor(X).to(AD), rt.tensor(Y).to(AD)
    for _ in range(2):
        opt.step(F.cross_entropy(ours(x), y).backward())
    saved_model, saved_opt = ours.state_dict(), opt.state_dict()
    assert saved_opt["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert saved_opt["state"][0]["step"] == 2
    opt.step(F.cross_entropy(ours(x), y).backward())
    expected = [p.value.inner().numpy() for p in ours.parameters()]
    again = _ours()
    again.load_state_dict(saved_model)
    opt2 = rt.optim.Adam(again.parameters(), lr=0.5)
    opt2.load_state_dict(saved_opt)
    assert opt2.param_groups[0]["lr"] == 0.01
    opt2.step(F.cross_entropy(again(x), y).backward())
    for p, e in zip(again.parameters(), expected):
        np.testing.assert_array_equal(p.value.inner().numpy(), e)


def test_parameters_without_a_gradient_or_frozen_are_left_alone():
    ours = _ours()
    ours[0].requires_grad_(False)
    before = ours[0].weight.inner().numpy()
    opt = rt.optim.SGD(ours.parameters(), lr=1.0)
    opt.step(F.cross_entropy(ours(rt.tensor(X).to(AD)), rt.tensor(Y).to(AD)).backward())
    np.testing.assert_array_equal(ours[0].weight.inner().numpy(), before)
    assert ours[2].weight.requires_grad and ours[2].weight.device == AD


def test_optimizer_errors():
    m = _ours()
    with pytest.raises(rt.errors.ArgumentValueError, match="SGD got an empty parameter list"):
        rt.optim.SGD([], lr=0.1)
    with pytest.raises(rt.errors.ArgumentTypeError, match="SGD: expected Parameters"):
        rt.optim.SGD([rt.ones(2)], lr=0.1)
    with pytest.raises(rt.errors.ArgumentValueError, match="Adam: invalid beta parameter at index 1: 1.0"):
        rt.optim.Adam(m.parameters(), betas=(0.9, 1.0))
    with pytest.raises(rt.errors.ArgumentValueError, match="SGD: invalid learning rate: -1"):
        rt.optim.SGD(m.parameters(), lr=-1)
    with pytest.raises(rt.errors.ArgumentTypeError, match="SGD.step: expected the Gradients"):
        rt.optim.SGD(m.parameters(), lr=0.1).step(None)
    with pytest.raises(rt.errors.ArgumentValueError, match="a parameter appears in more than one"):
        rt.optim.SGD([{"params": list(m.parameters())}, {"params": list(m.parameters())[:1]}], lr=0.1)


def test_param_groups_have_their_own_rates():
    m = _ours()
    opt = rt.optim.SGD([{"params": list(m[0].parameters()), "lr": 0.0},
                        {"params": list(m[2].parameters())}], lr=0.5)
    before0, before2 = m[0].weight.inner().numpy(), m[2].weight.inner().numpy()
    opt.step(F.cross_entropy(m(rt.tensor(X).to(AD)), rt.tensor(Y).to(AD)).backward())
    np.testing.assert_array_equal(m[0].weight.inner().numpy(), before0)
    assert not np.array_equal(m[2].weight.inner().numpy(), before2)


SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.001}),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 12}),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 12, "three_phase": True,
                    "anneal_strategy": "linear"}),
]


@pytest.mark.parametrize("name,kw", SCHEDULES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULES)])
def test_schedulers_like_torch(name, kw):
    torch = torch_or_skip()
    m = _ours()
    opt = rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sched = getattr(rt.optim.lr_scheduler, name)(opt, **kw)
    tp = [torch.nn.Parameter(torch.zeros(1))]
    topt = torch.optim.SGD(tp, lr=0.1, momentum=0.9)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    for _ in range(11):
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(topt.param_groups[0]["momentum"])
        topt.step()
        sched.step()
        tsched.step()


def test_lambda_lr():
    m = _ours()
    opt = rt.optim.Adam(m.parameters(), lr=0.1)
    sched = rt.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
    sched.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)
    assert opt.param_groups[0]["betas"] == (0.9, 0.999)


def test_onecycle_cycles_adams_beta1():
    m = _ours()
    opt = rt.optim.Adam(m.parameters(), lr=0.1)
    rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)


def test_clip_grad_norm_and_value():
    m = _ours()
    grads = F.cross_entropy(m(rt.tensor(X).to(AD)), rt.tensor(Y).to(AD)).backward()
    gs = [p.grad(grads).numpy() for p in m.parameters()]
    total = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in gs))
    norm = rt.optim.clip_grad_norm_(grads, 0.1)
    assert norm.item() == pytest.approx(total, rel=1e-5)
    after = math.sqrt(sum(float((p.grad(grads).numpy().astype(np.float64) ** 2).sum())
                          for p in m.parameters()))
    assert after == pytest.approx(0.1, rel=1e-4)
    rt.optim.clip_grad_value_(grads, 0.01)
    assert max(float(np.abs(p.grad(grads).numpy()).max()) for p in m.parameters()) <= 0.01
    assert rt.optim.clip_grad_norm_(grads, 1.0, norm_type=math.inf).item() <= 0.01
    with pytest.raises(rt.errors.ArgumentTypeError, match="clip_grad_norm_: expected the Gradients"):
        rt.optim.clip_grad_norm_([1.0], 1.0)


def test_each_update_is_one_fused_kernel():
    from runtime.optim import _fused
    from runtime.optim.adam import _adam
    _fused._UPDATES.clear()
    m = _ours()
    opt = rt.optim.Adam(m.parameters(), lr=0.01)
    opt.step(F.cross_entropy(m(rt.tensor(X).to(AD)), rt.tensor(Y).to(AD)).backward())
    exe = _fused._compiled(_adam, (False, False, False, False), 4, 7, 20, rt.float32, rt.cpu())
    assert [s[0] for s in exe.steps] == ["fused"]


def _numpy_reference(name, kw, p, grads):
    """The optimisers' documented arithmetic in float64 (PyTorch's formulas)."""
    p = p.astype(np.float64)
    lr = kw["lr"]
    state = {}
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64) * (-1 if kw.get("maximize") else 1)
        wd = kw.get("weight_decay", 0.01 if name == "AdamW" else 0.0)
        if name == "SGD":
            g = g + wd * p
            mu = kw.get("momentum", 0.0)
            if mu:
                buf = g.copy() if t == 1 else mu * state["buf"] + (1 - kw.get("dampening", 0.0)) * g
                state["buf"] = buf
                g = g + mu * buf if kw.get("nesterov") else buf
            p = p - lr * g
        elif name in ("Adam", "AdamW"):
            b1, b2 = kw.get("betas", (0.9, 0.999))
            if name == "AdamW":
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
            m = b1 * state.get("m", 0) + (1 - b1) * g
            v = b2 * state.get("v", 0) + (1 - b2) * g * g
            state["m"], state["v"] = m, v
            vv = np.maximum(state.get("vmax", 0), v) if kw.get("amsgrad") else v
            state["vmax"] = vv
            p = p - lr / (1 - b1 ** t) * m / (np.sqrt(vv) / np.sqrt(1 - b2 ** t) + kw.get("eps", 1e-8))
        else:  # RMSprop
            a, eps, mu = kw.get("alpha", 0.99), kw.get("eps", 1e-8), kw.get("momentum", 0.0)
            g = g + wd * p
            sq = a * state.get("sq", 0) + (1 - a) * g * g
            state["sq"] = sq
            if kw.get("centered"):
                ga = a * state.get("ga", 0) + (1 - a) * g
                state["ga"] = ga
                avg = np.sqrt(sq - ga * ga) + eps
            else:
                avg = np.sqrt(sq) + eps
            if mu:
                state["buf"] = mu * state.get("buf", 0) + g / avg
                p = p - lr * state["buf"]
            else:
                p = p - lr * g / avg
    return p


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_updates_match_the_numpy_reference(name, kw):
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=(3, 4)).astype(np.float32)
    coefs = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(4)]
    param = nn.Parameter(rt.tensor(p0).to(AD))
    opt = getattr(rt.optim, name)([param], **kw)
    for c in coefs:                         # loss = sum(p * c): the gradient is c
        opt.step(rt.sum(param.value * rt.tensor(c).to(AD)).backward())
    np.testing.assert_allclose(param.value.inner().numpy(), _numpy_reference(name, kw, p0, coefs),
                               rtol=1e-5, atol=1e-6)


def test_schedule_values_by_formula():
    def run(cls, n, **kw):
        opt = rt.optim.SGD(_ours().parameters(), lr=0.1, momentum=0.9)
        s = cls(opt, **kw)
        out = []
        for _ in range(n):
            out.append(s.get_last_lr()[0])
            s.step()
        return out
    S = rt.optim.lr_scheduler
    assert run(S.StepLR, 7, step_size=3, gamma=0.5) == pytest.approx(
        [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025])
    cos = run(S.CosineAnnealingLR, 5, T_max=4, eta_min=0.0)
    assert cos == pytest.approx([0.1 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)], abs=1e-12)
    one = run(S.OneCycleLR, 10, max_lr=0.1, total_steps=10, pct_start=0.3)
    assert one[0] == pytest.approx(0.1 / 25) and max(one) == pytest.approx(0.1)
    assert one[-1] == pytest.approx(0.1 / 25 / 1e4)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_batches_small_parameters_bit_for_bit(monkeypatch, amsgrad):
    # one call for the small parameters of a group (concatenated, one kernel; from the second
    # step the last call's flat outputs stand in for the parameters and moments), the large
    # ones (here: over a lowered BATCH_MAX) and lone step counts one by one; the same bits as
    # updating each parameter alone
    from runtime.optim import adam
    monkeypatch.setattr(adam, "BATCH_MAX", 12)
    shapes = [(4, 5), (4,), (3, 4), (3,), (), (2, 1, 2)]
    vals = [RNG.normal(size=s).astype(np.float32) for s in shapes]

    def params():
        return [nn.Parameter(rt.tensor(v).to(AD)) for v in vals]

    batched, alone = params(), params()
    ob = rt.optim.Adam(batched[:-1], lr=0.01, amsgrad=amsgrad)
    oa = rt.optim.Adam(alone[:-1], lr=0.01, amsgrad=amsgrad)
    for step in range(4):
        if step == 1:        # joins later: its step count differs from the others'
            ob.add_param_group({"params": [batched[-1]]})
            oa.add_param_group({"params": [alone[-1]]})
        if step == 2:        # a value replaced between steps: no longer the last call's piece
            v = RNG.normal(size=shapes[1]).astype(np.float32)
            batched[1].value = rt.tensor(v).to(AD)
            alone[1].value = rt.tensor(v).to(AD)
        gs = [RNG.normal(size=s).astype(np.float32) for s in shapes]
        loss_b = sum(((p.value * rt.tensor(g).to(AD)).sum() for p, g in zip(batched, gs)), 0.0)
        ob.step(loss_b.backward())
        for p, g in zip(alone, gs):
            g = rt.tensor(g)
            for group in oa.param_groups:
                if any(p is q for q in group["params"]):
                    p.value = rt.tensor(oa._update(p.value.inner(), g, oa.state.setdefault(p, {}),
                                                   group).numpy()).to(AD)
    for b, a in zip(batched, alone):
        np.testing.assert_array_equal(b.value.inner().numpy(), a.value.inner().numpy())
        for k, v in ob.state[b].items():
            w = oa.state[a][k]
            assert v == w if k == "step" else np.array_equal(v.numpy(), w.numpy())


def test_pieces_cut_a_flat_tensor_into_shapes_and_refuse_a_wrong_cut():
    # how the batched update cuts its flat results: consecutive stretches, in order
    from runtime import dispatch
    t = rt.arange(10, dtype=rt.float32)
    a, b, c = dispatch.pieces(t, [(2, 3), (), (3,)])
    assert (a.shape, b.shape, c.shape) == ((2, 3), (), (3,))
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert b.item() == 6.0
    np.testing.assert_array_equal(c.numpy(), [7, 8, 9])
    with pytest.raises(rt.ShapeError, match=r"^pieces: shapes \[\(2, 3\)\] do not cut a tensor "
                                            r"of shape \(10,\)$"):
        dispatch.pieces(t, [(2, 3)])
    with pytest.raises(rt.ShapeError, match=r"^pieces: shapes \[\(10,\)\] do not cut a tensor "
                                            r"of shape \(2, 5\)$"):
        dispatch.pieces(t.reshape(2, 5), [(10,)])


def test_a_stepped_parameter_is_a_fresh_tracked_leaf():
    # the optimiser's result is tracked in place (no detached copy); the value it replaced and
    # the gradients of the last step are untouched
    p = nn.Parameter(rt.tensor(np.ones(3, np.float32)).to(AD))
    old = p.value
    opt = rt.optim.SGD([p], lr=0.5)
    grads = (p.value * 2.0).sum().backward()
    opt.step(grads)
    assert p.value is not old and p.value.requires_grad and p.value.device == AD
    np.testing.assert_array_equal(p.value.inner().numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(old.grad(grads).numpy(), [2.0, 2.0, 2.0])
    assert p.grad(grads) is None           # a new leaf: the old gradients are not its own
