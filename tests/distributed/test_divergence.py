"""Ranks that diverge end with a clear error, never a hang: each case launches
``mpiexec -n 2`` on tests/distributed/_diverge.py (``.ci/run`` sets RT_DISTRIBUTED_TESTS=1;
the main suite skips this file).  The shape-mismatch case runs inside test_mpi.py."""
import os
import shutil
import subprocess
import sys

import pytest

from ._mpi import LAUNCHED

pytestmark = pytest.mark.skipif(
    os.environ.get("RT_DISTRIBUTED_TESTS") != "1" or shutil.which("mpiexec") is None or LAUNCHED,
    reason="needs mpiexec ranks: spawns mpiexec (not from a rank): set RT_DISTRIBUTED_TESTS=1, as "
           ".ci/run does")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(case):
    """(exit status, output) of the case; rank 1 stalls for 600 s, so only the abort path ends
    the job within the 90 s bound (TimeoutExpired fails the test: a hang)."""
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    p = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-m", "tests.distributed._diverge", case],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
    return p.returncode, p.stdout + p.stderr


def test_a_rank_that_raises_aborts_every_rank():
    rc, out = _run("raise")
    assert rc != 0, out
    assert "ValueError: boom on rank 1" in out
    assert "rt.distributed: rank 1 of 2 raised ValueError: boom on rank 1; aborting every rank" in out
    assert "unreachable" not in out


def test_a_stalled_rank_times_out_the_others():
    rc, out = _run("timeout")
    assert rc != 0, out
    assert "DistributedTimeoutError: all_reduce: rank 0 of 2 waited 1 s for the other ranks" in out
    assert "rt.distributed: rank 0 of 2 raised DistributedTimeoutError" in out
    assert "unreachable" not in out
