"""Benchmarks: ratios against NumPy (and PyTorch when installed), measured in one process.

Bound OpenMP spinning before any pool starts (torch is imported by the case modules): Numba's
and PyTorch's OpenMP pools otherwise busy-wait against each other and both look slow.
"""
import os

os.environ.setdefault("GOMP_SPINCOUNT", "10000")
