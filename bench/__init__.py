"""Benchmarks: ratios against NumPy (and PyTorch when installed), measured in one process.

Bound OpenMP spinning before any pool starts (torch is imported by the case modules): Numba's
and PyTorch's OpenMP pools otherwise busy-wait against each other and both look slow.
"""
import os

_SPIN_SET_HERE = "GOMP_SPINCOUNT" not in os.environ
os.environ.setdefault("GOMP_SPINCOUNT", "10000")


def user_env(**extra) -> dict:
    """The environment for a child process that stands for a user's own (the cold-start
    benchmarks): this process's, less the OpenMP spin bound set above for the in-process
    tables (a user's process has OpenMP's default; with the bound a cold process stayed ≈ 1.4×
    slower than a warm one after its builds had landed), plus ``extra``."""
    env = dict(os.environ, **extra)
    if _SPIN_SET_HERE:
        env.pop("GOMP_SPINCOUNT", None)
    return env
