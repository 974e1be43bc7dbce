"""Keeping the OpenMP workers awake through a serial stretch.

After a parallel region libgomp's workers spin ``GOMP_SPINCOUNT`` times (the cpu set bounds it:
see ``jit_kernels.cpu``) and then sleep; the next parallel kernel then waits for the operating
system to wake them (tens of µs on a virtual machine, more than a small kernel's whole run).
A caller that knows a parallel kernel is coming after a run of serial ones (a compiled graph's
plan) calls ``keep_warm()`` between them: a no-op parallel region, a few µs, that starts the
workers' spin afresh.  It changes no result."""
from __future__ import annotations

import numpy as np
from numba import prange

from jit_kernels.cpu._background import parallel_ready
from jit_kernels.cpu._jit import njit
from jit_kernels.cpu._layout import nthreads

#: seconds after a parallel region within which the workers still spin (a lower bound over the
#: project's hosts at the cpu set's spin bound; they sleep after 100-200 µs)
SPIN_S = 60e-6


@njit(cache=True, parallel=True)
def _touch(out):
    for i in prange(out.shape[0]):
        out[i] = i


_OUT: list = []


def keep_warm() -> None:
    """Run a no-op parallel region (skipped while its kernel builds in the background)."""
    if not _OUT:
        _OUT.append(np.zeros(nthreads(), np.int64))
    out = _OUT[0]
    if parallel_ready(_touch, (out,)):
        _touch(out)
