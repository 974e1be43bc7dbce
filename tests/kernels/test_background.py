"""The background builds (``jit_kernels.cpu._background``): the worker process runs a job,
marks it ready in the cache directory and removes its lock; a failed job is marked failed and
its traceback logged; a live lock holder means the job is not sent twice; a stale lock is taken
over; a marker written for another Numba cache does not count; a prange kernel built by the
worker is loaded from the disk cache by the parent, not compiled again; queued builds with slow
stand-ins go first."""
import importlib
import os
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from jit_kernels import codegen
from jit_kernels.cpu import _background as bg

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_spawn"), reason="no os.posix_spawn")


@pytest.fixture(autouse=True)
def _enabled(monkeypatch):
    """The suite builds in-process (conftest); these tests are of the background builds."""
    monkeypatch.setattr(bg, "ENABLED", True)

JOB = '''
import numpy as np
from numba import njit, prange
def build(name):
    pass
def fail(name):
    1 / 0
def nap(name):
    import time
    time.sleep(1.0)
@njit(cache=True, parallel=True)
def twice(x, out):
    for i in prange(x.shape[0]):
        out[i] = 2 * x[i]
@njit(cache=True, parallel=True)
def thrice(x, out):
    for i in prange(x.shape[0]):
        out[i] = 3 * x[i]
'''


# The job module's name is unique per run: the ready markers live in the shared kernel cache
# directory and are named after the module, so a fixed name would find the marker an earlier
# run (or a concurrent one) left there.
_MOD = "bgjob_" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bgjobs")
    (d / f"{_MOD}.py").write_text(JOB)
    sys.path.insert(0, str(d))
    yield str(d)
    sys.path.remove(str(d))
    sys.modules.pop(_MOD, None)


@pytest.fixture
def job(job_dir):
    """A job spec maker: (function, name) -> job (the worker imports from ``job_dir``)."""
    return lambda func, name: {"call": [_MOD, func, name], "path": job_dir}


def _name():
    return "test_bg_" + uuid.uuid4().hex


def _path(name, ext):
    return os.path.join(codegen.cache_dir(), name + ext)


def test_job_runs_in_the_worker_and_is_marked_ready(job):
    name = _name()
    spec = job("build", name)
    assert not bg.is_ready(name)
    assert bg.submit(name, spec) is True  # sent, not done yet
    assert bg._worker is not None and bg._worker[1] != os.getpid()
    bg.wait(name)
    assert bg.is_ready(name)
    # the worker removes its lock just after it writes the ready marker, which ends the wait:
    # give it a moment (a lock that is never removed still fails here)
    deadline = time.monotonic() + 30.0
    while os.path.exists(_path(name, ".building")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(_path(name, ".building"))
    assert bg.submit(name, spec) is False  # ready: nothing more to do


def test_failed_job_is_marked_failed_and_logged(job):
    name = _name()
    assert bg.submit(name, job("fail", name)) is True
    bg.wait(name)
    assert not bg.is_ready(name)
    with open(_path(name, ".failed")) as f:
        assert "ZeroDivisionError" in f.read()
    with open(_path("_worker", ".log")) as f:
        assert f"FAILED {name}" in f.read()
    assert bg.submit(name, job("fail", name)) is False  # the caller builds it


def test_live_lock_holder_means_the_job_is_not_sent(job):
    name = _name()
    with open(_path(name, ".building"), "w") as f:
        f.write(str(os.getpid()))  # a live process is building it
    try:
        assert bg.submit(name, job("build", name)) is True
        assert name not in bg._JOBS or not os.path.exists(_path(name, ".ready"))
    finally:
        os.unlink(_path(name, ".building"))


def test_stale_lock_is_taken_over(job):
    name = _name()
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(_path(name, ".building"), "w") as f:
        f.write(str(dead.pid))
    assert bg.submit(name, job("build", name)) is True
    bg.wait(name)
    assert bg.is_ready(name)


def test_marker_for_another_numba_cache_does_not_count():
    name = _name()
    with open(_path(name, ".ready"), "w") as f:
        f.write("numba cache: /somewhere/else")
    assert not bg.is_ready(name)
    bg.mark_ready(name)
    assert bg.is_ready(name)


def test_prange_kernel_built_by_the_worker_is_loaded_not_compiled(job_dir):
    fn = importlib.import_module(_MOD).twice
    x = np.arange(5.0)
    out = np.empty_like(x)
    assert bg.parallel_ready(fn, (x, out)) is False  # the caller runs a serial stand-in
    assert bg._FN_JOBS[fn][1]["path"] == job_dir
    assert fn.signatures == []
    bg.wait()
    assert bg.parallel_ready(fn, (x, out)) is True
    fn(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert sum(fn.stats.cache_hits.values()) == 1 and not fn.stats.cache_misses


def test_builds_with_slow_stand_ins_go_before_deferred_prange_variants(job):
    """Jobs waiting in the worker's queue: a ``call`` job (a gemm's build) goes before a
    ``compile`` job (a prange variant) sent earlier."""
    fn = importlib.import_module(_MOD).thrice
    x = np.arange(3.0)
    busy, call = _name(), _name()
    assert bg.submit(busy, job("nap", busy)) is True     # the worker is busy with it ...
    assert bg.parallel_ready(fn, (x, np.empty_like(x))) is False   # ... while these queue up
    assert bg.submit(call, job("build", call)) is True
    bg.wait()
    with open(_path("_worker", ".log")) as f:
        log = f.read()
    assert log.index(f"built {busy} ") < log.index(f"built {call} ") \
        < log.index(f"built {bg._FN_JOBS[fn][0]} ")


def test_rt_synchronize_waits_for_the_background_builds(job):
    import runtime as rt
    name = _name()
    assert bg.submit(name, job("build", name)) is True
    rt.synchronize("cpu")
    assert bg.is_ready(name) and name not in bg._PENDING
    rt.synchronize()                      # every loaded kernel set
    rt.synchronize(rt.autodiff(rt.cpu()))  # an autodiff device waits for its inner device


def test_rt_synchronize_of_a_capture_device_is_an_error():
    import runtime as rt
    cap = rt.CaptureDevice()
    with pytest.raises(rt.DeviceError) as e:
        rt.synchronize(cap)
    assert str(e.value) == f"synchronize: {cap} runs on no kernel set"


HOLD = '''
import sys
from jit_kernels import codegen
with codegen.build_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()         # until the parent says so
'''


def test_build_lock_is_exclusive_across_processes_and_never_blocks_for_good(monkeypatch):
    """While another process holds a build lock, this one cannot take it (the second build
    waits instead of compiling the same kernels again); past ``BUILD_LOCK_WAIT_S`` it builds
    without it; once released, it takes it."""
    import fcntl
    name = f"test-build-lock-{uuid.uuid4().hex}"
    env = dict(os.environ, JIT_KERNELS_CACHE_DIR=codegen.cache_dir())
    child = subprocess.Popen([sys.executable, "-c", HOLD, name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "held"
        path = os.path.join(codegen.cache_dir(), name + ".lock")
        with open(path) as f:
            with pytest.raises(BlockingIOError):
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        monkeypatch.setattr(codegen, "BUILD_LOCK_WAIT_S", 0.0)
        ran = []
        with codegen.build_lock(name):      # gives up waiting, builds anyway
            ran.append(True)
        assert ran
    finally:
        child.communicate("go\n", timeout=60)
    assert child.returncode == 0
    with codegen.build_lock(name):
        with open(path) as f:               # held by this process now
            with pytest.raises(BlockingIOError):
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
