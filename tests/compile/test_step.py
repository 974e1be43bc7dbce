"""``rt.compile`` of whole training steps and of inference: compiled steps against eager steps
from the same weights (losses, parameters, optimiser state and buffers), what is traced when,
and the typed errors."""
import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F
from runtime.optim import lr_scheduler as S

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 6)).astype(np.float32)
Y = RNG.integers(0, 3, 16)
STEPS = 20


def _mlp(ad, extra=()):
    """A small MLP on ``ad`` with fixed weights (``extra``: layers after the first linear)."""
    m = nn.Sequential(nn.Linear(6, 8), *extra, nn.ReLU(), nn.Linear(8, 3)).to(ad)
    rng = np.random.default_rng(1)
    for p in m.parameters():
        p.value = rt.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.3).to(ad)
    return m


def _train(compiled, make_opt, make_sched=None, extra=(), steps=STEPS):
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad, extra)
    opt = make_opt(model.parameters())
    sched = make_sched(opt) if make_sched else None

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    fn = rt.compile(step) if compiled else step
    xb, yb = rt.tensor(X).to(ad), rt.tensor(Y).to(ad)
    rt.manual_seed(3)
    losses = []
    for _ in range(steps):
        losses.append(fn(xb, yb).numpy())
        if sched:
            sched.step()
    params = [p.value.numpy() for p in model.parameters()]
    buffers = [b.numpy() for _, b in model.named_buffers()]
    state = [{k: (v.numpy() if isinstance(v, rt.Tensor) else v) for k, v in s.items()}
             for s in opt.state.values()]
    return np.array(losses), params, buffers, state, fn


def _same(eager, compiled):
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(eager[1] + eager[2], compiled[1] + compiled[2]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert len(eager[3]) == len(compiled[3])
    for se, sc in zip(eager[3], compiled[3]):
        assert se.keys() == sc.keys()
        for k in se:
            np.testing.assert_allclose(sc[k], se[k], rtol=1e-5, atol=1e-6)


CASES = {
    "sgd-momentum-steplr": (lambda ps: rt.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3),
                            lambda o: S.StepLR(o, step_size=5, gamma=0.5), ()),
    "adam-onecycle": (lambda ps: rt.optim.Adam(ps, lr=1e-2),
                      lambda o: S.OneCycleLR(o, max_lr=5e-2, total_steps=STEPS), ()),
    "adamw": (lambda ps: rt.optim.AdamW(ps, lr=1e-2, weight_decay=0.1), None, ()),
    "rmsprop-centered": (lambda ps: rt.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True),
                         None, ()),
    "batchnorm": (lambda ps: rt.optim.SGD(ps, lr=0.1), None, (lambda: nn.BatchNorm1d(8),)),
    "dropout": (lambda ps: rt.optim.Adam(ps, lr=1e-2), None, (lambda: nn.Dropout(0.3),)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_steps_match_eager_steps(case):
    make_opt, make_sched, extra = CASES[case]
    eager = _train(False, make_opt, make_sched, [e() for e in extra])
    compiled = _train(True, make_opt, make_sched, [e() for e in extra])
    _same(eager, compiled)
    # the first step (no optimiser state yet) and every later one: two graphs, however the
    # scheduler moved the rate (one for plain SGD, which keeps no state)
    stateless = not any(isinstance(v, np.ndarray) for s in compiled[3] for v in s.values())
    assert len(compiled[4].graphs) == (1 if stateless else 2)


def test_a_new_batch_size_or_train_eval_traces_once_more_and_a_rate_change_does_not():
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    @rt.compile
    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    xb, yb = rt.tensor(X).to(ad), rt.tensor(Y).to(ad)
    step(xb, yb)
    step(xb, yb)
    assert len(step.graphs) == 1            # SGD without momentum keeps no state
    opt.param_groups[0]["lr"] = 0.01
    step(xb, yb)
    assert len(step.graphs) == 1
    step(rt.tensor(X[:8]).to(ad), rt.tensor(Y[:8]).to(ad))
    assert len(step.graphs) == 2
    model.eval()
    step(xb, yb)
    assert len(step.graphs) == 3


def test_the_rate_is_an_input_of_the_graph_not_a_constant():
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    opt = rt.optim.SGD(model.parameters(), lr=0.0)
    step = rt.compile(lambda xb, yb: opt.step(F.cross_entropy(model(xb), yb).backward()))
    xb, yb = rt.tensor(X).to(ad), rt.tensor(Y).to(ad)
    before = [p.value.numpy() for p in model.parameters()]
    assert step(xb, yb) is None
    assert all((p.value.numpy() == b).all() for p, b in zip(model.parameters(), before))
    opt.param_groups[0]["lr"] = 0.5         # the same graph now moves the parameters
    step(xb, yb)
    assert len(step.graphs) == 1
    assert any((p.value.numpy() != b).any() for p, b in zip(model.parameters(), before))


def test_the_step_graph_checks_saves_loads_and_runs(tmp_path):
    *_, fn = _train(True, lambda ps: rt.optim.Adam(ps, lr=1e-2), steps=3)
    g = fn.graphs[-1]
    g.check()
    path = tmp_path / "step.rtgraph"
    g.save(path)
    loaded = rt.load_graph(path)
    rng = np.random.default_rng(2)
    inputs = []
    for t in g.input_tensors:
        if t.dtype is rt.int64:
            inputs.append(rng.integers(0, 3, t.shape).astype(np.int64))
        else:
            inputs.append(rng.uniform(0.1, 1.0, t.shape).astype(t.dtype.np))
    want = [o.numpy() for o in g.run(*inputs)]
    got = [o.numpy() for o in loaded.run(*inputs)]
    compiled = [o.numpy() for o in g.compile(rt.cpu())(*inputs)]
    for w, a, c in zip(want, got, compiled):
        np.testing.assert_array_equal(a, w)
        np.testing.assert_allclose(c, w, rtol=1e-5, atol=1e-6)


def test_inference_of_a_model_and_of_a_lambda():
    model = _mlp(rt.cpu()).eval()
    x = rt.tensor(X)
    np.testing.assert_allclose(rt.compile(model)(x).numpy(), model(x).numpy(), rtol=1e-6)
    f = rt.compile(lambda a, b: (rt.relu(a * 2.0 + b), None))
    y, none = f(x, x)
    assert none is None
    np.testing.assert_allclose(y.numpy(), np.maximum(X * 3.0, 0), rtol=1e-6)


def test_a_compiled_call_leaves_no_reference_cycle():
    """Each call's results are freed when the caller drops them, not when the cyclic
    collector runs (a result held until then costs its memory, and large ones fresh pages):
    nested results, a training step and inference."""
    import gc
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return loss

    calls = [(rt.compile(step), (rt.tensor(X).to(ad), rt.tensor(Y).to(ad))),
             (rt.compile(lambda a: ((a * 2.0, [a + 1.0]), None)), (rt.tensor(X),)),
             (rt.compile(model.eval()), (rt.tensor(X).to(ad),))]
    for fn, args in calls:
        for _ in range(2):          # (the first two calls trace)
            fn(*args)
    gc.collect()
    gc.disable()
    try:
        for fn, args in calls:
            for _ in range(3):
                fn(*args)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_outputs_are_on_the_arguments_device_and_untracked():
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    out = rt.compile(model)(rt.tensor(X).to(ad))
    assert out.device is ad and not out.requires_grad
    np.testing.assert_allclose(out.numpy(), model(rt.tensor(X).to(ad)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("read", [float, bool, lambda t: t.item(), lambda t: t.numpy(),
                                  lambda t: t.tolist()], ids=["float", "bool", "item", "numpy",
                                                              "tolist"])
def test_reading_a_value_while_tracing_is_a_typed_error(read):
    f = rt.compile(lambda x: x * read(rt.sum(x)))
    with pytest.raises(rt.TracedValueError) as e:
        f(rt.tensor(X))
    assert str(e.value).startswith(
        "rt.compile: the traced function read the value of a tensor (the output of 'sum', "
        "shape (), float32) into Python")
    assert isinstance(e.value, rt.CaptureValueError)


def test_a_tensor_read_from_outside_that_is_no_parameter_buffer_or_argument_is_refused():
    outside = rt.tensor(X)
    with pytest.raises(rt.DeviceMismatchError):
        rt.compile(lambda x: x + outside)(rt.tensor(X))


def test_the_capture_scope_still_refuses_backward():
    cap = rt.CaptureDevice()
    ad = rt.autodiff(cap)
    with cap.capture_scope() as scope:
        x = rt.from_inner(scope.placeholder((2,)))
        with pytest.raises(rt.CaptureAutodiffError, match="Capture tensors do not support autodiff"):
            (x * 2.0).sum().backward()
        scope.complete(inputs=[x.inner()], outputs=[x.inner()])
    assert ad.inner is cap


def test_values_swapped_in_by_a_failed_trace_are_put_back():
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    opt = rt.optim.Adam(model.parameters(), lr=1e-2)
    before = [p.value for p in model.parameters()]

    def bad(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.step(loss.backward())
        return float(loss)

    with pytest.raises(rt.TracedValueError):
        rt.compile(bad)(rt.tensor(X).to(ad), rt.tensor(Y).to(ad))
    assert [p.value for p in model.parameters()] == before
    assert all(not s for s in opt.state.values())


@pytest.mark.parametrize("call, error, message", [
    (lambda: rt.compile(None), rt.ArgumentTypeError, "compile: fn must be callable, got NoneType"),
    (lambda: rt.compile(lambda x, n: x)(rt.tensor(X), [1]), rt.ArgumentTypeError,
     "rt.compile: a non-tensor argument must be hashable (it is part of the signature), got list"),
    (lambda: rt.compile(lambda: None)(), rt.TracingError,
     "rt.compile: the function needs at least one tensor argument"),
    (lambda: rt.compile(lambda x: "a")(rt.tensor(X)), rt.TracingError,
     "rt.compile: the function must return a tensor, None, or tuples and lists of them, got str"),
], ids=["not-callable", "unhashable-argument", "no-tensor-argument", "returns-a-string"])
def test_misuse_is_typed(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value).startswith(message)


def test_gradient_clipping_inside_the_step_matches_eager():
    runs = []
    for compiled in (False, True):
        ad = rt.autodiff(rt.cpu())
        model = _mlp(ad)
        opt = rt.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

        def step(xb, yb, model=model, opt=opt):
            grads = F.cross_entropy(model(xb), yb).backward()
            norm = rt.optim.clip_grad_norm_(grads, 0.1)
            opt.step(grads)
            return norm

        fn = rt.compile(step) if compiled else step
        xb, yb = rt.tensor(X).to(ad), rt.tensor(Y).to(ad)
        norms = [fn(xb, yb).numpy() for _ in range(5)]
        runs.append((norms, [p.value.numpy() for p in model.parameters()]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_a_scheduler_stepped_inside_the_traced_function_is_refused():
    ad = rt.autodiff(rt.cpu())
    model = _mlp(ad)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)

    def step(xb, yb):
        opt.step(F.cross_entropy(model(xb), yb).backward())
        sched.step()

    with pytest.raises(rt.TracingError, match=r"^StepLR.step: called inside a function that "
                                              r"rt.compile traces; call it outside"):
        rt.compile(step)(rt.tensor(X).to(ad), rt.tensor(Y).to(ad))
    assert opt.param_groups[0]["lr"] == 0.1


def test_a_compiled_function_called_while_tracing_is_inlined():
    inner = rt.compile(lambda a: rt.relu(a) * 2.0)
    outer = rt.compile(lambda a: inner(a) + 1.0)
    np.testing.assert_allclose(outer(rt.tensor(X)).numpy(), np.maximum(X, 0) * 2.0 + 1.0,
                               rtol=1e-6)
    assert len(inner.graphs) == 0 and len(outer.graphs) == 1


def test_a_parameter_assigned_in_the_function_is_an_output():
    model = _mlp(rt.cpu())
    w = model[0].weight

    @rt.compile
    def shrink(x):
        p = model._modules["0"]._parameters["weight"]
        p.value = p.value * 0.5
        return model(x)

    before = w.numpy()
    shrink(rt.tensor(X))
    np.testing.assert_allclose(model[0].weight.numpy(), before * 0.5, rtol=1e-6)
    shrink(rt.tensor(X))
    np.testing.assert_allclose(model[0].weight.numpy(), before * 0.25, rtol=1e-6)
    assert model[0].weight.device == rt.cpu()
