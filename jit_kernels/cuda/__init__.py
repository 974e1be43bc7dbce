"""The ``cuda`` kernel set: numba.cuda kernels on device arrays (see ``jit_kernels.KernelSet``).

Payloads are ``CudaArray`` values (``_array``): a strided view of a numba.cuda device buffer on
GPU ``index``.  Modules mirror the cpu set: ``elementwise`` (generated unary/binary/where/cast
kernels, grid-stride loops over strided operands), ``reduce`` (block reductions with warp
shuffles and a second pass; arg-reductions; softmax), ``matmul`` (shared-memory tiled,
register-blocked, batched), ``conv`` (im2col/col2im), ``shape`` (views, copy, take/gather
with device-side index checks, cat, slice_assign), ``memory`` (host transfer, creation),
``random`` (the cpu set's counter-based generator), ``scalar_math`` (libdevice), ``pool``
(pooling and resampling).  Every ``numba.cuda`` use of the project lives in this package.

Importing this package works without a GPU or driver (nothing touches the driver until a
kernel runs); ``device_count()`` returns the number of usable GPUs, or raises ``RuntimeError``
naming the cause, which ``rt.cuda()`` turns into ``DeviceError``.  Under
``NUMBA_ENABLE_CUDASIM=1`` everything runs on Numba's CUDA simulator (one device).

``custom`` (user ops, ``rt.custom_op``): the forward function receives NumPy arrays (the inputs
copied to the host) and its result is copied back to the inputs' GPU, so custom ops written for
the cpu set run unchanged on cuda (at the cost of two host round trips).
"""
from __future__ import annotations

import numpy as np

from jit_kernels.cuda._array import SIM, CudaArray


def device_count() -> int:
    """How many GPUs numba.cuda can use (1 under the simulator); RuntimeError with the cause."""
    from numba import cuda
    if SIM:
        return 1
    try:
        n = len(cuda.gpus)
    except Exception as exc:  # CudaSupportError: driver library missing, no device, ...
        msg = " ".join(str(exc).split())
        raise RuntimeError(f"CUDA is not available: {msg or type(exc).__name__}") from None
    if n == 0:
        raise RuntimeError("CUDA is not available: the driver reports no GPU")
    return n


def synchronize(index: int = 0) -> None:
    """Wait for every kernel queued on GPU ``index`` (benchmarks; kernels run asynchronously)."""
    from numba import cuda
    from jit_kernels.cuda._array import use
    use(index)
    cuda.synchronize()


def gpu_info(index: int = 0) -> dict:
    """Name, compute capability, SM count and theoretical peak memory bandwidth (GB/s) of a GPU."""
    from numba import cuda
    from jit_kernels.cuda._array import use
    if SIM:
        return {"name": "simulator", "cc": (0, 0), "sms": 1, "peak_gbps": None}
    use(index)
    d = cuda.get_current_device()
    name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
    try:
        clock_khz = d.MEMORY_CLOCK_RATE
        bus_bits = d.GLOBAL_MEMORY_BUS_WIDTH
        peak = 2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9
    except Exception:
        peak = None
    return {"name": name, "cc": tuple(d.compute_capability), "sms": d.MULTIPROCESSOR_COUNT,
            "peak_gbps": peak}


class CudaKernels:
    """Kernel set for device kind ``"cuda"``; payloads are ``CudaArray`` device views."""

    kind = "cuda"
    capabilities = frozenset(("fused", "prepared", "synchronize", "empty_cache",
                              "cuda_array_interface"))

    def __init__(self):
        from jit_kernels.cuda import (conv, elementwise, matmul, memory, pool, random, reduce, shape)
        self._conv = conv
        self._pool2d = pool
        self._ew = elementwise
        self._mm = matmul
        self._mem = memory
        self._rand = random
        self._red = reduce
        self._shape = shape

    def device_count(self) -> int:
        return device_count()

    # -- memory
    def from_host(self, array, index=0):
        return self._mem.from_host(array, index)

    def to_host(self, x):
        return self._mem.to_host(x)

    def empty(self, shape, dtype, index=0):
        return self._mem.empty(shape, dtype, index)

    def full(self, shape, value, dtype, index=0):
        return self._mem.full(shape, value, dtype, index)

    def arange(self, start, step, n, dtype, index=0):
        return self._mem.arange(start, step, n, dtype, index)

    def eye(self, n, m, dtype, index=0):
        return self._mem.eye(n, m, dtype, index)

    def copy(self, x):
        return self._shape.copy(x)

    # -- views and data movement
    def reshape(self, x, shp):
        return self._shape.reshape(x, shp)

    def permute(self, x, axes):
        return self._shape.permute(x, axes)

    def expand(self, x, shp):
        return self._shape.expand(x, shp)

    def index(self, x, key):
        return self._shape.index(x, key)

    def slice_assign(self, x, key, value):
        return self._shape.slice_assign(x, key, value)

    def take(self, x, indices, axis):
        return self._shape.take(x, indices, axis)

    def gather(self, x, indices, axis):
        return self._shape.gather(x, indices, axis)

    def scatter_add(self, x, indices, src, axis):
        return self._shape.scatter_add(x, indices, src, axis)

    def scatter_reduce(self, x, indices, src, axis, reduce):
        return self._shape.scatter_reduce(x, indices, src, axis, reduce)

    def cat(self, xs, axis):
        return self._shape.cat(xs, axis)

    # -- elementwise
    def unary(self, op, x, out_dtype, attrs=None):
        return self._ew.unary(op, x, out_dtype, attrs or {})

    def binary(self, op, a, b, compute_dtype, out_dtype):
        return self._ew.binary(op, a, b, compute_dtype, out_dtype)

    def binary_fn(self, op, a_dtype, b_dtype, compute_dtype, out_dtype, shape=None):
        """Prepared ``binary`` for fixed dtypes (the runtime's small-op fast path caches it);
        ``shape`` (the operands' common shape, a hint) is not needed here."""
        return self._ew.binary_fn(op, a_dtype, b_dtype, compute_dtype, out_dtype)

    def unary_fn(self, op, x_dtype, out_dtype, shape=None):
        """Prepared attr-less ``unary`` for a fixed input dtype (``shape``: see ``binary_fn``)."""
        return self._ew.unary_fn(op, x_dtype, out_dtype)

    def where(self, cond, a, b, out_dtype):
        return self._ew.where(cond, a, b, out_dtype)

    def cast(self, x, dtype):
        return self._ew.cast(x, dtype)

    def half_to_float(self, x, fmt):
        from jit_kernels.cuda import half
        return half.half_to_float(x, fmt)

    def float_to_half(self, x, fmt):
        from jit_kernels.cuda import half
        return half.float_to_half(x, fmt)

    # -- reductions
    def reduce(self, op, x, axes, keepdims, out_dtype, attrs=None):
        return self._red.reduce(op, x, tuple(axes), keepdims, out_dtype, attrs or {})

    def arg_reduce(self, op, x, axis, keepdims):
        return self._red.arg_reduce(op, x, axis, keepdims)

    def softmax(self, x, axis, log):
        return self._red.softmax(x, axis, log)

    # -- linear algebra
    def matmul(self, a, b):
        return self._mm.matmul(a, b)

    # -- convolution
    def im2col(self, x, kernel, stride, padding, dilation, grid):
        return self._conv.im2col(x, kernel, stride, padding, dilation, grid)

    def col2im(self, cols, image, kernel, stride, padding, dilation, grid):
        return self._conv.col2im(cols, image, kernel, stride, padding, dilation, grid)

    def im2col_batched(self, x, kernel, stride, padding, dilation, grid):
        return self._conv.im2col_batched(x, kernel, stride, padding, dilation, grid)

    def col2im_batched(self, cols, n, image, kernel, stride, padding, dilation, grid):
        return self._conv.col2im_batched(cols, n, image, kernel, stride, padding, dilation, grid)

    def swap01(self, x, bias=None):
        return self._conv.swap01(x, bias)

    def conv2d_gemm(self, x, w, bias, stride, padding, dilation, grid):
        return self._conv.conv2d_gemm(x, w, bias, stride, padding, dilation, grid)

    def conv2d_weight_gemm(self, x, g, kernel, stride, padding, dilation):
        return self._conv.conv2d_weight_gemm(x, g, kernel, stride, padding, dilation)

    # -- pooling and resampling
    def max_pool2d(self, x, rows, cols, want_indices):
        return self._pool2d.max_pool2d(x, rows, cols, want_indices)

    def max_pool2d_backward(self, x, g, rows, cols):
        return self._pool2d.max_pool2d_backward(x, g, rows, cols)

    def avg_pool2d(self, x, rows, cols, divisors):
        return self._pool2d.avg_pool2d(x, rows, cols, divisors)

    def avg_pool2d_backward(self, g, rows, cols, divisors, in_hw):
        return self._pool2d.avg_pool2d_backward(g, rows, cols, divisors, in_hw)

    def resample2d(self, x, rows, cols, nearest):
        return self._pool2d.resample2d(x, rows, cols, nearest)

    def resample2d_backward(self, g, rows, cols, nearest, in_hw):
        return self._pool2d.resample2d_backward(g, rows, cols, nearest, in_hw)

    # -- random
    def rand(self, shp, dtype, seed, offset, index=0):
        return self._rand.rand(shp, dtype, seed, offset, index)

    def randn(self, shp, dtype, seed, offset, index=0):
        return self._rand.randn(shp, dtype, seed, offset, index)

    # -- scans
    def scan(self, op, x, axis, reverse):
        from jit_kernels.cuda import scan as _scan
        return _scan.scan(op, x, axis, reverse)

    # -- sorting
    def argsort(self, x, axis, descending, stable):
        from jit_kernels.cuda import sort as _sort
        return _sort.argsort(x, axis, descending, stable)

    def topk(self, x, k, axis, largest, sorted):
        from jit_kernels.cuda import sort as _sort
        return _sort.topk(x, k, axis, largest, sorted)

    # -- allocation
    # -- user code: the CUDA Array Interface
    def cuda_array_interface(self, x):
        """``x``'s ``__cuda_array_interface__`` dict (v3, zero-copy; see ``interop``)."""
        from jit_kernels.cuda import interop
        return interop.interface(x)

    def from_cuda_array(self, obj, index=0, copy=False):
        """A payload viewing (or, with ``copy``, copying) the memory of an object exposing
        ``__cuda_array_interface__``."""
        from jit_kernels.cuda import interop
        return interop.from_interface(obj, index, copy)

    # -- advanced-index assignment and pad
    def put(self, x, indices, values, accumulate):
        from jit_kernels.cuda import put as _put
        return _put.put(x, indices, values, accumulate)

    def pad(self, x, maps, lead):
        from jit_kernels.cuda import pad as _pad
        return _pad.pad(x, maps, lead)

    def pad_backward(self, g, maps, lead, in_shape):
        from jit_kernels.cuda import pad as _pad
        return _pad.pad_backward(g, maps, lead, in_shape)

    # -- the fused row kernels of scaled_dot_product_attention
    def attention_softmax(self, x, mask, additive, scale, causal):
        from jit_kernels.cuda import attention as _attention
        return _attention.attention_softmax(x, mask, additive, scale, causal)

    def attention_softmax_backward(self, p, g, mask, scale, causal):
        from jit_kernels.cuda import attention as _attention
        return _attention.attention_softmax_backward(p, g, mask, scale, causal)

    def synchronize(self, index: int = 0) -> None:
        """Wait for every kernel queued on GPU ``index``."""
        synchronize(index)

    def empty_cache(self):
        """Give the caching allocator's pooled buffers back to numba.cuda; returns the bytes."""
        from jit_kernels.cuda import _pool
        return _pool.empty_cache()

    def memory_stats(self):
        """The caching allocator's counters (pooled bytes, hits, misses, ...)."""
        from jit_kernels.cuda import _pool
        return _pool.stats()

    # -- fused programs (graph.compile)
    def fused(self, program, arrays):
        """Run a fused program as generated GPU kernels (``fused``): one grid-stride kernel per
        elementwise program, one block-per-row kernel per rows program, the matmul kernel plus
        one epilogue kernel per matmul program."""
        from jit_kernels.cuda import fused as _fused
        return _fused.fused(program, arrays)

    # -- user code
    def custom(self, fn, arrays):
        """Run ``fn`` on host copies of ``arrays``; its result goes back to their GPU."""
        index = next((a.index for a in arrays if isinstance(a, CudaArray)), 0)
        host = [self.to_host(a) if isinstance(a, CudaArray) else a for a in arrays]
        res = fn(*host)
        if isinstance(res, CudaArray):
            return res
        return self.from_host(np.asarray(res), index)


__all__ = ["CudaKernels", "device_count", "synchronize", "gpu_info"]
