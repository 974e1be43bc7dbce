"""Shared test settings: NumPy is the oracle; hypothesis kept small (JIT compile dominates);
a summary of the skips by reason, and under CI a skip for any other reason than a missing GPU or
MPI ranks fails the run."""
import collections
import os

# Tests build every kernel in-process, so each test runs the kernel variant its sizes select
# (with background builds a serial stand-in could run instead of the prange variant under
# test).  tests/kernels/test_background.py switches them on for itself.
os.environ.setdefault("JIT_KERNELS_BACKGROUND_COMPILE", "0")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# default: CI's size (each new example can compile kernels), but random, so local runs explore
settings.register_profile(
    "default", max_examples=15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci", max_examples=15, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# the differential fuzz suite's long run (tests/test_fuzz_programs.py): --hypothesis-profile=nightly
settings.register_profile(
    "nightly", max_examples=10_000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# The only reasons a test may skip under CI (which installs every optional oracle: torch, onnx,
# onnxruntime, mpi4py): tests/cuda outside its simulator step and the GPU compiler checks need a
# GPU; tests/distributed's multi-rank cases run in .ci/run's mpiexec step, and its world-of-one
# cases in the main suite only.  A skip reason must start with one of these.
ALLOWED_CI_SKIPS = ("needs a GPU", "needs mpiexec ranks", "needs a world of one")


def _skip_reasons(terminalreporter):
    """{reason: [locations]} of the run's skips (collection and test skips; not xfails)."""
    out = collections.defaultdict(list)
    root = str(terminalreporter.config.rootpath)
    for rep in terminalreporter.stats.get("skipped", []):
        if isinstance(rep.longrepr, tuple):
            path, _, reason = rep.longrepr
            out[reason.removeprefix("Skipped: ")].append(os.path.relpath(path, root))
        else:
            out[str(rep.longrepr)].append(rep.nodeid.split("::")[0])
    return out


def _disallowed(reasons):
    return sorted(r for r in reasons if not r.startswith(ALLOWED_CI_SKIPS))


def pytest_sessionfinish(session, exitstatus):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if not os.environ.get("CI") or tr is None or hasattr(session.config, "workerinput"):
        return
    if _disallowed(_skip_reasons(tr)) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = _skip_reasons(terminalreporter)
    if not reasons:
        return
    tr = terminalreporter
    tr.section("skips by reason")
    for reason, where in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        files = sorted(set(where))
        more = f" (+{len(files) - 3} more)" if len(files) > 3 else ""
        tr.write_line(f"{len(where):5d}  {reason}  [{', '.join(files[:3])}{more}]")
    bad = _disallowed(reasons)
    if os.environ.get("CI") and bad:
        tr.write_line(f"CI: {len(bad)} skip reason(s) outside the allowed {ALLOWED_CI_SKIPS} "
                      f"(CI installs every optional oracle, so these tests must run):", red=True)
        for reason in bad:
            tr.write_line(f"       {reason}", red=True)



@pytest.fixture
def rng():
    return np.random.default_rng(1234)
