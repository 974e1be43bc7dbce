"""Shared test settings: NumPy is the oracle; hypothesis kept small (JIT compile dominates)."""
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



@pytest.fixture
def rng():
    return np.random.default_rng(1234)
