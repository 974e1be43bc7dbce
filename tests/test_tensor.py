"""Creation, data access, devices, errors and layering of the core."""
import ast
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import runtime as rt
from oracle import assert_close

ROOT = pathlib.Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------- creation
def test_tensor_dtype_inference():
    assert rt.tensor(1.5).dtype is rt.float32
    assert rt.tensor([1, 2]).dtype is rt.int64
    assert rt.tensor([True]).dtype is rt.bool_
    assert rt.tensor([[1, 2.5]]).dtype is rt.float32
    assert rt.tensor(np.zeros(2, np.int32)).dtype is rt.int32
    assert rt.tensor(np.zeros(2, np.float64)).dtype is rt.float64
    assert rt.tensor([1, 2], dtype=rt.float64).dtype is rt.float64
    assert rt.tensor([1, 2], dtype="int32").dtype is rt.int32
    assert rt.bool is rt.bool_


def test_tensor_copies_from_numpy_shares():
    a = np.arange(4.0)
    t = rt.tensor(a)
    f = rt.from_numpy(a)
    a[0] = 100
    assert t.tolist()[0] == 0 and f.tolist()[0] == 100
    n = t.numpy()
    n[1] = -1
    assert t.tolist()[1] == 1  # numpy() gives the caller its own copy


def test_creation_functions():
    assert_close(rt.zeros(2, 3), np.zeros((2, 3)), rt.float32)
    assert_close(rt.ones((2,), dtype=rt.int32), np.ones(2), rt.int32)
    assert_close(rt.full((2, 2), 7), np.full((2, 2), 7), rt.int64)
    assert_close(rt.full((2,), 1.5), np.full(2, 1.5), rt.float32)
    assert rt.empty(3).shape == (3,)
    assert_close(rt.arange(5), np.arange(5), rt.int64)
    assert_close(rt.arange(1, 2, 0.25), np.arange(1, 2, 0.25), rt.float32)
    assert_close(rt.arange(5, 0, -2), np.arange(5, 0, -2), rt.int64)
    assert rt.arange(3, 1).shape == (0,)
    assert_close(rt.eye(3), np.eye(3), rt.float32)
    assert_close(rt.eye(2, 4, dtype=rt.int64), np.eye(2, 4), rt.int64)
    assert_close(rt.zeros_like(rt.ones(2, dtype=rt.int32)), np.zeros(2), rt.int32)
    with pytest.raises(rt.ShapeError, match="negative dimension"):
        rt.zeros(-1)


def test_unsupported_numpy_dtype():
    with pytest.raises(rt.DTypeError, match="uint16"):
        rt.tensor(np.zeros(2, np.uint16))
    with pytest.raises(rt.DTypeError, match="ragged"):
        rt.tensor([[1, 2], [3]])


def test_random_reproducible_per_seed():
    rt.manual_seed(7)
    a = rt.rand(1000).numpy()
    b = rt.randn(2, 500, dtype=rt.float64).numpy()
    rt.manual_seed(7)
    assert np.array_equal(rt.rand(1000).numpy(), a)
    assert np.array_equal(rt.randn(2, 500, dtype=rt.float64).numpy(), b)
    assert not np.array_equal(rt.rand(1000).numpy(), a)
    assert 0 <= a.min() and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    assert abs(b.mean()) < 0.1 and abs(b.std() - 1) < 0.1
    rt.manual_seed(8)
    assert not np.array_equal(rt.rand(1000).numpy(), a)
    rt.manual_seed(3, device="cpu")
    c = rt.rand(10).numpy()
    rt.manual_seed(3, device=rt.cpu())
    assert np.array_equal(rt.rand(10).numpy(), c)
    with pytest.raises(rt.DTypeError, match="rand"):
        rt.rand(3, dtype=rt.int32)


def test_data_out_and_repr():
    t = rt.tensor([[1.0, 2.0]])
    assert t.tolist() == [[1.0, 2.0]] and np.asarray(t).shape == (1, 2)
    assert rt.tensor(3).item() == 3 and isinstance(rt.tensor(3).item(), int)
    assert float(rt.tensor([2.5])) == 2.5
    r = repr(t)
    assert "1." in r and "dtype=float32" in r and "device=cpu" in r
    assert t.ndim == 2 and t.size == 2 and len(t) == 1
    assert isinstance(t.id, int) and (t + 1).id != t.id
    with pytest.raises(rt.ShapeError, match="item"):
        t.item()
    with pytest.raises(rt.ShapeError, match="ambiguous"):
        bool(t)


# ------------------------------------------------------------------- devices
def test_devices_are_values():
    assert rt.cpu() == rt.device("cpu") and hash(rt.cpu()) == hash(rt.device("cpu"))
    assert str(rt.cpu()) == "cpu" and rt.cpu() in rt.devices()
    assert rt.default_device() == rt.cpu()
    with pytest.raises(AttributeError):
        rt.cpu().index = 3
    with pytest.raises(rt.DeviceError, match="unknown device 'tpu'"):
        rt.device("tpu")
    with pytest.raises(rt.DeviceError, match="cuda"):
        rt.device("cuda:x")


def test_cuda_unavailable_is_device_error():
    try:
        d = rt.cuda(0)
    except rt.DeviceError as e:
        assert "cuda:0" in str(e)
    else:
        assert str(d) == "cuda:0"
    with pytest.raises(rt.DeviceError, match="cuda:99"):
        rt.cuda(99)


def test_default_device_context_is_thread_local():
    seen = []
    with rt.default_device("cpu") as d:
        assert d == rt.cpu() and rt.zeros(1).device == rt.cpu()
        t = threading.Thread(target=lambda: seen.append(rt.default_device()))
        t.start()
        t.join()
    assert seen == [rt.cpu()]


def test_to_same_device_returns_self():
    t = rt.ones(2)
    assert t.to("cpu") is t and t.to_device(rt.cpu()) is t
    assert rt.can_move(t, rt.cpu()) and not rt.can_move(t, "nonsense")


# ------------------------------------------------------------------------------------ errors
def test_error_hierarchy():
    names = ["CaptureScopeError", "CaptureMoveError", "CaptureAutodiffError", "CaptureValueError",
             "AutodiffMoveError", "AutodiffNotMarkedError", "RequiresAutodiffError",
             "NestedAutodiffError", "GradientError", "CaptureError", "DeviceMismatchError",
             "DeviceError", "ShapeError", "DTypeError"]
    for n in names:
        cls = getattr(rt, n)
        assert cls is getattr(rt.errors, n)
        assert issubclass(cls, rt.errors.TensorRuntimeError) and issubclass(cls, RuntimeError)
    assert issubclass(rt.ShapeError, ValueError) and issubclass(rt.DTypeError, TypeError)
    assert str(rt.CaptureMoveError()) == "Cannot move a tensor from a capture device"
    assert str(rt.CaptureAutodiffError()) == "Capture tensors do not support autodiff"
    assert str(rt.AutodiffMoveError()) == "Cannot move between autodiff and non-autodiff instances."
    assert str(rt.AutodiffNotMarkedError()) == "Operation not marked for autodiff."
    assert str(rt.RequiresAutodiffError()) == "Requires autodiff tensor."
    assert str(rt.NestedAutodiffError()) == "Autodiff should not wrap an autodiff device."
    e = rt.CaptureError("AlreadyActive", "a capture scope is already active on this device")
    assert e.kind == "AlreadyActive" and e.boundary is None and e.tensor is None


def test_shape_and_dtype_messages_name_op_and_operands():
    with pytest.raises(rt.ShapeError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        rt.ones(2, 3) + rt.ones(4)
    with pytest.raises(rt.ShapeError, match=r"sum: axis 2 is out of range for a tensor of shape \(2, 3\)"):
        rt.ones(2, 3).sum(axis=2)
    with pytest.raises(rt.ShapeError, match="repeated axis"):
        rt.ones(2, 3).sum(axis=(0, -2))
    with pytest.raises(rt.DTypeError, match=r"sub: not defined for two bool operands \(bool, bool\)"):
        rt.tensor([True]) - rt.tensor([True])


def test_plain_tensor_autodiff_methods_raise():
    t = rt.ones(2)
    for call in (t.require_grad, t.backward, t.inner):
        with pytest.raises(rt.RequiresAutodiffError, match=r"^Requires autodiff tensor\.$"):
            call()
    assert t.requires_grad is False and t.detach() is t
    assert not rt.is_autodiff(t) and not rt.is_capture(t) and not rt.is_capture(3)


# ------------------------------------------------------------------- layering
FRONT_END = ["tensor.py", "device.py", "core/dtypes.py", "core/errors.py", "ops/movement.py", "random.py",
             "ops/api.py", "ops/catalogue.py", "core/shapes.py", "core/registry.py"]


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("rel", FRONT_END)
def test_front_end_never_imports_numba_or_kernels(rel):
    for m in _imports(ROOT / "runtime" / rel):
        assert not m.startswith(("numba", "jit_kernels")), f"{rel} imports {m}"


def test_only_kernel_sets_reaches_kernel_sets():
    users = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "runtime").rglob("*.py")
                   if any(m.startswith(("jit_kernels", "numba")) for m in _imports(p)))
    assert users == ["runtime/kernel_sets.py"], users


def test_import_compiles_nothing():
    code = ("import sys, runtime as rt; assert 'numba' not in sys.modules, 'numba imported';"
            "assert not any(m.startswith('jit_kernels.cpu') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_cli_devices():
    out = subprocess.run([sys.executable, "-m", "runtime", "devices"], check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert out.splitlines()[0] == "cpu"
