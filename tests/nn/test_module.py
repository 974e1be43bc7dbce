"""rt.nn.Module: registration, traversal, modes, devices, state dicts, repr."""
import copy

import numpy as np
import pytest

import runtime as rt
import runtime.nn as nn
from runtime.errors import AutodiffMoveError, StateDictError

AD = rt.autodiff(rt.cpu())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(rt.ones(2))
        self.register_buffer("offset", rt.zeros(2))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale + self.offset


def test_registration_and_traversal():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == ["offset"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert len(list(m.modules())) == 4
    assert isinstance(m.fc1.weight, rt.Tensor) and m.fc1.weight.shape == (3, 4)
    assert m.fc2.bias is None
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2          # a shared module's parameters once


def test_assigning_a_tensor_to_a_parameter_replaces_its_value():
    m = nn.Linear(2, 2)
    p = m._parameters["weight"]
    m.weight = rt.zeros(2, 2)
    assert m._parameters["weight"] is p and np.all(m.weight.numpy() == 0)
    m.offset = rt.ones(1)                             # not registered: a plain attribute
    assert "offset" not in dict(m.named_buffers())


def test_train_eval_and_freezing():
    m = Net()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc1.training
    m.train()
    assert m.fc2.training
    m.to(AD)
    assert all(p.value.requires_grad for p in m.parameters())
    m.fc1.requires_grad_(False)
    assert not m.fc1.weight.requires_grad and m.fc2.weight.requires_grad
    loss = m(rt.ones(1, 4).to(AD)).sum()
    g = loss.backward()
    assert m._parameters["scale"].grad(g) is not None
    assert m.fc1._parameters["weight"].grad(g) is None


def test_to_autodiff_and_back_follow_the_movement_rules():
    m = Net()
    m.to(AD)
    assert m.fc1.weight.device == AD and m.offset.device == AD
    with pytest.raises(AutodiffMoveError, match="Cannot move between autodiff and non-autodiff instances."):
        m.to("cpu")
    m.inner()
    assert m.fc1.weight.device == rt.cpu() and m.offset.device == rt.cpu()


def test_gradients_through_a_model_match_numpy():
    m = Net().to(AD)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    out = m(rt.tensor(x).to(AD))
    g = out.sum().backward()
    w1, b1 = m.fc1.weight.inner().numpy(), m.fc1.bias.inner().numpy()
    w2, s = m.fc2.weight.inner().numpy(), m.scale.inner().numpy()
    h = np.maximum(x @ w1.T + b1, 0)
    ds = (h @ w2.T).sum(0)
    np.testing.assert_allclose(m._parameters["scale"].grad(g).numpy(), ds, rtol=1e-5)
    dw2 = (np.ones((5, 2)) * s).T @ h
    np.testing.assert_allclose(m.fc2._parameters["weight"].grad(g).numpy(), dw2, rtol=1e-5)


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    x = rt.randn(3, 4)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    sd = a.state_dict()
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "offset"]
    bad = dict(sd)
    del bad["fc1.bias"]
    bad["extra"] = rt.zeros(1)
    bad["fc2.weight"] = rt.zeros(3, 3)
    with pytest.raises(StateDictError) as e:
        b.load_state_dict(bad)
    assert str(e.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc1.bias"'
        '\n\tUnexpected key(s) in state_dict: "extra"\n\tsize mismatch for "fc2.weight": copying '
        "a param with shape (3, 3) from checkpoint, the shape in current model is (2, 3)")
    del bad["fc2.weight"]
    missing, unexpected = b.load_state_dict(bad, strict=False)
    assert (missing, unexpected) == (["fc1.bias", "fc2.weight"], ["extra"])


def test_load_state_dict_onto_autodiff_keeps_parameters_tracked():
    a, b = Net(), Net().to(AD)
    b.load_state_dict(a.state_dict())
    assert b.fc1.weight.device == AD and b.fc1.weight.requires_grad
    np.testing.assert_array_equal(b.fc1.weight.inner().numpy(), a.fc1.weight.numpy())


def test_repr_like_pytorch():
    m = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(16, 10), nn.LeakyReLU(0.2), nn.Dropout(0.1))
    assert repr(m) == """Sequential(
  (0): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): ReLU()
  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (3): Flatten(start_dim=1, end_dim=-1)
  (4): Linear(in_features=16, out_features=10, bias=True)
  (5): LeakyReLU(negative_slope=0.2)
  (6): Dropout(p=0.1, inplace=False)
)"""


def test_containers():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    md = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    assert isinstance(seq[0], nn.Linear) and len(seq[0:1]) == 1
    with pytest.raises(rt.errors.ArgumentTypeError, match="ModuleList: expected a Module, got int"):
        ml.append(3)


def test_deepcopy_of_a_plain_model():
    m = Net()
    c = copy.deepcopy(m)
    x = rt.randn(2, 4)
    np.testing.assert_array_equal(m(x).numpy(), c(x).numpy())
    c.fc1.weight = rt.zeros(3, 4)
    assert not np.all(m.fc1.weight.numpy() == 0)


def test_parameter_errors():
    with pytest.raises(rt.errors.ArgumentTypeError, match="Parameter: expected a Tensor, got list"):
        nn.Parameter([1.0])
    with pytest.raises(rt.errors.DTypeError, match="Parameter: only float tensors can require gradients, "
                                                   "got dtype int64"):
        nn.Parameter(rt.tensor([1, 2]))
    assert not nn.Parameter(rt.tensor([1, 2]), requires_grad=False).requires_grad
