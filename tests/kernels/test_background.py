"""The background builds (``jit_kernels.cpu._background``): a child process builds, marks the
build ready in the cache directory and removes its lock; a failed build is not marked and its
output is kept in the log; a live lock holder means no second child; a stale lock is taken
over; a marker written for another Numba cache does not count."""
import os
import subprocess
import time
import uuid

import pytest

from jit_kernels import codegen
from jit_kernels.cpu import _background as bg

pytestmark = pytest.mark.skipif(not bg.ENABLED, reason="background builds are disabled here")

JOB = '''
from jit_kernels.cpu import _background
def build(name):
    _background.mark_ready(name)
def fail(name):
    1 / 0
'''


@pytest.fixture
def job(tmp_path, monkeypatch):
    mod = "bgjob_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{mod}.py").write_text(JOB)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return mod


def _name():
    return "test_bg_" + uuid.uuid4().hex


def _until_done(name, mod, func, limit=120):
    t0 = time.time()
    while bg.poll(name, mod, func, name):
        assert time.time() - t0 < limit, "the background build never finished"
        time.sleep(0.05)


def _path(name, ext):
    return os.path.join(codegen.cache_dir(), name + ext)


def test_build_runs_in_a_child_and_is_marked_ready(job):
    name = _name()
    assert not bg.is_ready(name)
    assert bg.poll(name, job, "build", name) is True  # started, not done yet
    assert bg._CHILDREN[name] > 0 and bg._CHILDREN[name] != os.getpid()
    _until_done(name, job, "build")
    assert bg.is_ready(name)
    assert not os.path.exists(_path(name, ".building"))
    assert bg.poll(name, job, "build", name) is False  # ready: nothing more to do


def test_failed_build_is_not_marked_and_logs_its_error(job):
    name = _name()
    assert bg.poll(name, job, "fail", name) is True
    _until_done(name, job, "fail")
    assert not bg.is_ready(name)
    assert not os.path.exists(_path(name, ".building"))
    with open(_path(name, ".log")) as f:
        assert "ZeroDivisionError" in f.read()
    assert bg.poll(name, job, "fail", name) is False  # no second try: the caller builds it


def test_live_lock_holder_means_no_second_child(job):
    name = _name()
    with open(_path(name, ".building"), "w") as f:
        f.write(str(os.getpid()))  # a live process is building it
    try:
        assert bg.poll(name, job, "build", name) is True
        assert name not in bg._CHILDREN
    finally:
        os.unlink(_path(name, ".building"))


def test_stale_lock_is_taken_over(job):
    name = _name()
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(_path(name, ".building"), "w") as f:
        f.write(str(dead.pid))
    assert bg.poll(name, job, "build", name) is True
    assert bg._CHILDREN[name] > 0
    _until_done(name, job, "build")
    assert bg.is_ready(name)


def test_marker_for_another_numba_cache_does_not_count():
    name = _name()
    with open(_path(name, ".ready"), "w") as f:
        f.write("numba cache: /somewhere/else")
    assert not bg.is_ready(name)
    bg.mark_ready(name)
    assert bg.is_ready(name)
