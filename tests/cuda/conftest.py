"""Device selection for tests/cuda (the only conftest that knows about CUDA).

- ``RT_TEST_DEVICE=cuda``: run on a real GPU (``rt.cuda(0)``) with realistic shapes.
- ``NUMBA_ENABLE_CUDASIM=1``: run on Numba's CUDA simulator with tiny shapes (CI).
- neither, or numba-cuda not installed: every test here is skipped with the reason.
"""
import importlib.util
import os

import pytest

HAVE_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
WANT_GPU = os.environ.get("RT_TEST_DEVICE", "") == "cuda"
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1"

if not HAVE_NUMBA_CUDA:
    SKIP = "needs a GPU: numba-cuda is not installed (pip install '.[cuda]')"
elif WANT_GPU and SIM:
    SKIP = "needs a GPU: RT_TEST_DEVICE=cuda runs on a real GPU: unset NUMBA_ENABLE_CUDASIM"
elif not (WANT_GPU or SIM):
    SKIP = ("needs a GPU: set RT_TEST_DEVICE=cuda (GPU), or NUMBA_ENABLE_CUDASIM=1 for the "
            "simulator (a separate CI step)")
else:
    SKIP = None

if SKIP is None and SIM:
    # numba reads the variable when numba.config is first imported; another test module may
    # have imported numba already in this process
    import numba
    if not numba.config.ENABLE_CUDASIM:
        numba.config.reload_config()

#: realistic shapes on a GPU, tiny ones in the simulator (slow for every thread it runs)
BIG = WANT_GPU and SKIP is None


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            if SKIP is not None:
                item.add_marker(pytest.mark.skip(reason=SKIP))
            elif "needs_sim" in item.keywords and not SIM:
                item.add_marker(pytest.mark.skip(reason="simulator-only check"))


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_sim: runs only under the CUDA simulator")


@pytest.fixture(scope="session")
def cuda_dev():
    import runtime as rt
    try:
        return rt.cuda(0)
    except rt.errors.DeviceError as exc:
        pytest.skip(f"needs a GPU: no usable CUDA device: {exc}")


@pytest.fixture(scope="session")
def big():
    return BIG
