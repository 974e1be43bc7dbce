"""Benchmarks: ratios against NumPy (and PyTorch when installed), measured in one process."""
