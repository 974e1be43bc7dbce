"""DLPack, copy and pickle: cpu tensors export and import zero-copy through DLPack;
plain tensors pickle and deep-copy as their values and device; autodiff and capture tensors
refuse with a typed error."""
import copy
import pickle

import numpy as np
import pytest

import runtime as rt


def test_dlpack_round_trip_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = rt.from_numpy(a)
    b = np.from_dlpack(t)
    assert np.shares_memory(a, b) and b.dtype == np.float32
    np.testing.assert_array_equal(b, a)
    assert t.__dlpack_device__() == (1, 0)
    u = rt.from_dlpack(a[:, ::2])               # a strided view, still zero-copy
    np.testing.assert_array_equal(u.numpy(), a[:, ::2])
    assert rt.from_dlpack(t).dtype is rt.float32
    v = rt.from_dlpack(np.arange(3), device=rt.autodiff(rt.cpu()))
    assert v.is_autodiff and v.numpy().tolist() == [0, 1, 2]


def test_dlpack_refusals():
    with pytest.raises(rt.ArgumentTypeError, match="from_dlpack: expected an object with __dlpack__"):
        rt.from_dlpack([1, 2])
    with pytest.raises(rt.DTypeError, match="unsupported NumPy dtype uint16"):
        rt.from_dlpack(np.zeros(2, np.uint16))
    ad = rt.tensor([1.0], device=rt.autodiff(rt.cpu()))
    with pytest.raises(rt.DeviceError, match=r"autodiff\(cpu\): DLPack export needs a tensor on a plain device"):
        ad.__dlpack__()
    np.testing.assert_array_equal(np.from_dlpack(ad.detach().inner()), [1.0])


@pytest.mark.parametrize("dtype", [rt.float32, rt.int64, rt.bool_])
def test_pickle_and_deepcopy_of_plain_tensors(dtype):
    t = rt.tensor([[1, 0], [3, 4]], dtype=dtype)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype is dtype and u.device == t.device and u.shape == t.shape
        np.testing.assert_array_equal(u.numpy(), t.numpy())
    assert copy.copy(t) is t


def test_autodiff_and_capture_tensors_do_not_pickle():
    ad = rt.tensor([1.0], device=rt.autodiff(rt.cpu())).require_grad()
    with pytest.raises(rt.ArgumentTypeError, match=r"a tensor on autodiff\(cpu\) cannot be pickled"):
        pickle.dumps(ad)
    with pytest.raises(rt.ArgumentTypeError, match="cannot be pickled or copied"):
        copy.deepcopy(ad)
    cap = rt.CaptureDevice()
    with cap.capture_scope() as s:
        x = s.placeholder((2,))
        with pytest.raises(rt.ArgumentTypeError, match=rf"a tensor on {cap} cannot be pickled"):
            pickle.dumps(x)
        s.complete(inputs=[x], outputs=[x])
