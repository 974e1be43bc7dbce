"""The ``cpu`` kernel set: Numba kernels on NumPy payloads (see ``jit_kernels.KernelSet``).

Modules: ``elementwise`` (generated unary/binary/where/cast kernels), ``reduce`` (reductions,
arg-reductions, softmax), ``matmul``, ``conv`` (im2col/col2im), ``shape`` (views, copy,
take/gather/scatter_add/cat/slice_assign), ``memory`` (creation and host transfer), ``random``
(counter-based rand/randn), ``scalar_math`` (every transcendental), ``pool`` (pooling and
resampling).  Importing this package compiles nothing: every kernel is compiled lazily with
``cache=True`` on first use (generated ones via ``jit_kernels.codegen.load_generated_module``).
"""
from __future__ import annotations

import os

# Keep OpenMP workers from spinning against other thread pools (see NUMBA-NOTES: thread pools).
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

import numpy as np

# first: importing _host asks for 512-bit vectors on AVX-512 hosts whose LLVM tuning prefers
# 256 (``_host.use_full_width``), which must happen before Numba's codegen exists
from jit_kernels.cpu import _host

from jit_kernels.cpu import _pool, elementwise, matmul as _matmul, memory, random as _random, reduce as _reduce, shape
from jit_kernels.cpu import _layout, _warm
from jit_kernels.cpu import conv as _conv
from jit_kernels.cpu import linalg as _linalg
from jit_kernels.cpu import recurrent as _recurrent
from jit_kernels.cpu import pool as _pooling
from jit_kernels.cpu import winograd as _winograd


def _freeze_imports() -> None:
    # Numba, llvmlite and the kernel modules leave tens of thousands of long-lived objects
    # tracked by the cyclic garbage collector; every full collection walks them, and so do
    # the ones at interpreter exit (a fifth of a short warm process's time: see the docs'
    # first-run page).  ``gc.freeze`` moves every object alive now into the permanent
    # generation, which no collection visits: they live to the end of the process anyway.
    # (An object of the caller's alive now and later dropped in a reference cycle is then
    # freed only at exit; JIT_KERNELS_GC_FREEZE=0 keeps the collector as it was.)
    if os.environ.get("JIT_KERNELS_GC_FREEZE", "1") != "0":
        import gc
        gc.freeze()


_freeze_imports()


class CpuKernels:
    """Kernel set for device kind ``"cpu"``; payloads are NumPy arrays."""

    kind = "cpu"
    capabilities = frozenset(("fused", "fused_fn", "prepared", "prepared_matmul", "split",
                              "winograd", "max_pool2d_relu", "synchronize", "empty_cache",
                              "dlpack", "linalg", "recurrent", "cross_entropy",
                              "keep_warm", "index_backward"))

    # -- memory
    def from_host(self, array, index=0):
        return memory.from_host(array, index)

    def to_host(self, x):
        return memory.to_host(x)

    def empty(self, shape, dtype, index=0):
        return memory.empty(shape, dtype, index)

    def full(self, shape, value, dtype, index=0):
        return memory.full(shape, value, dtype, index)

    def arange(self, start, step, n, dtype, index=0):
        return memory.arange(start, step, n, dtype, index)

    def eye(self, n, m, dtype, index=0):
        return memory.eye(n, m, dtype, index)

    def copy(self, x):
        return shape.copy(x)

    # -- views and data movement
    def reshape(self, x, shp):
        return shape.reshape(x, shp)

    def permute(self, x, axes):
        return shape.permute(x, axes)

    def expand(self, x, shp):
        return shape.expand(x, shp)

    def split(self, x, sizes, shapes):
        return shape.split(x, sizes, shapes)

    def index(self, x, key):
        return shape.index(x, key)

    def slice_assign(self, x, key, value):
        return shape.slice_assign(x, key, value)

    def take(self, x, indices, axis):
        return shape.take(x, indices, axis)

    def gather(self, x, indices, axis):
        return shape.gather(x, indices, axis)

    def index_backward(self, g, key, out_shape):
        return shape.index_backward(g, key, out_shape)

    def scatter_add(self, x, indices, src, axis):
        return shape.scatter_add(x, indices, src, axis)

    def scatter_reduce(self, x, indices, src, axis, reduce):
        return shape.scatter_reduce(x, indices, src, axis, reduce)

    def cat(self, xs, axis):
        return shape.cat(xs, axis)

    # -- elementwise
    def unary(self, op, x, out_dtype, attrs=None):
        return elementwise.unary(op, x, out_dtype, attrs or {})

    def binary(self, op, a, b, compute_dtype, out_dtype):
        return elementwise.binary(op, a, b, compute_dtype, out_dtype)

    def binary_fn(self, op, a_dtype, b_dtype, compute_dtype, out_dtype, shape=None):
        """Prepared ``binary`` for fixed dtypes (the runtime's small-op fast path caches it);
        ``shape``: a promise that every call passes two arrays of that shape."""
        return elementwise.binary_fn(op, a_dtype, b_dtype, compute_dtype, out_dtype, shape)

    def unary_fn(self, op, x_dtype, out_dtype, shape=None):
        """Prepared attr-less ``unary`` for a fixed input dtype (``shape``: see ``binary_fn``)."""
        return elementwise.unary_fn(op, x_dtype, out_dtype, shape)

    def where(self, cond, a, b, out_dtype):
        return elementwise.where(cond, a, b, out_dtype)

    def cast(self, x, dtype):
        return elementwise.cast(x, dtype)

    def half_to_float(self, x, fmt):
        from jit_kernels.cpu import half
        return half.half_to_float(x, fmt)

    def float_to_half(self, x, fmt):
        from jit_kernels.cpu import half
        return half.float_to_half(x, fmt)

    # -- reductions
    def reduce(self, op, x, axes, keepdims, out_dtype, attrs=None):
        return _reduce.reduce(op, x, tuple(axes), keepdims, out_dtype, attrs or {})

    def arg_reduce(self, op, x, axis, keepdims):
        return _reduce.arg_reduce(op, x, axis, keepdims)

    def softmax(self, x, axis, log):
        return _reduce.softmax(x, axis, log)

    def cross_entropy_grad(self, x, target, scale, reduction):
        return _reduce.cross_entropy_grad(x, target, scale, reduction)

    def cross_entropy_loss(self, x, target):
        return _reduce.cross_entropy_loss(x, target)

    # -- linear algebra
    def matmul(self, a, b):
        return _matmul.matmul(a, b)

    def matmul_fn(self, m, k, n, dtype):
        """A prepared ``matmul`` of an (m, k) by a (k, n) matrix of ``dtype`` (any strides),
        giving the (m, n) product: ``matmul`` on their (1, m, k) and (1, k, n) views, decided
        once (the runtime's small-op fast path caches it per shape)."""
        return _matmul.prepared(m, k, n, np.dtype(dtype))

    # dense factorisations and solves: NumPy's LAPACK (see ``jit_kernels.cpu.linalg``)
    def linalg_inv(self, a):
        return _linalg.inv(a)

    def linalg_solve(self, a, b):
        return _linalg.solve(a, b)

    def linalg_det(self, a):
        return _linalg.det(a)

    def linalg_slogdet(self, a):
        return _linalg.slogdet(a)

    def linalg_cholesky(self, a):
        return _linalg.cholesky(a)

    def linalg_qr(self, a, complete):
        return _linalg.qr(a, complete)

    def linalg_eigh(self, a, lower):
        return _linalg.eigh(a, lower)

    def linalg_svd(self, a, full):
        return _linalg.svd(a, full)

    # -- recurrent layers
    def lstm_forward(self, xg, b, h0, c0, w, reverse):
        return _recurrent.lstm_forward(xg, b, h0, c0, w, reverse)

    def lstm_backward(self, h0, c0, w, saved, gy, reverse):
        return _recurrent.lstm_backward(h0, c0, w, saved, gy, reverse)

    def gru_forward(self, xg, b, h0, w, reverse):
        return _recurrent.gru_forward(xg, b, h0, w, reverse)

    def gru_backward(self, h0, w, saved, gy, reverse):
        return _recurrent.gru_backward(h0, w, saved, gy, reverse)

    def rnn_forward(self, xg, b, h0, w, relu, reverse):
        return _recurrent.rnn_forward(xg, b, h0, w, relu, reverse)

    def rnn_backward(self, h0, w, ys, gy, relu, reverse):
        return _recurrent.rnn_backward(h0, w, ys, gy, relu, reverse)

    # -- convolution
    def im2col(self, x, kernel, stride, padding, dilation, grid):
        return _conv.im2col(x, kernel, stride, padding, dilation, grid)

    def col2im(self, cols, image, kernel, stride, padding, dilation, grid):
        return _conv.col2im(cols, image, kernel, stride, padding, dilation, grid)

    def im2col_batched(self, x, kernel, stride, padding, dilation, grid):
        return _conv.im2col_batched(x, kernel, stride, padding, dilation, grid)

    def col2im_batched(self, cols, n, image, kernel, stride, padding, dilation, grid):
        return _conv.col2im_batched(cols, n, image, kernel, stride, padding, dilation, grid)

    def swap01(self, x, bias=None):
        return _conv.swap01(x, bias)

    def conv2d_gemm(self, x, w, bias, stride, padding, dilation, grid):
        return _conv.conv2d_gemm(x, w, bias, stride, padding, dilation, grid)

    def conv2d_weight_gemm(self, x, g, kernel, stride, padding, dilation):
        return _conv.conv2d_weight_gemm(x, g, kernel, stride, padding, dilation)

    # -- Winograd F(2x2, 3x3) convolution (graph.compile's rewrite of constant-weight convs)
    def winograd_applies(self, x_shape, out_channels, grid, dtype, pool):
        return _winograd.applies(x_shape, out_channels, grid, dtype, pool)

    def winograd_weight(self, w):
        return _winograd.winograd_weight(w)

    def conv2d_winograd(self, x, u, bias, padding, grid, pool):
        return _winograd.conv2d_winograd(x, u, bias, padding, grid, pool)

    # -- pooling and resampling
    def max_pool2d(self, x, rows, cols, want_indices):
        return _pooling.max_pool2d(x, rows, cols, want_indices)

    def max_pool2d_relu(self, x, rows, cols):
        return _pooling.max_pool2d_relu(x, rows, cols)

    def max_pool2d_backward(self, x, g, rows, cols):
        return _pooling.max_pool2d_backward(x, g, rows, cols)

    def avg_pool2d(self, x, rows, cols, divisors):
        return _pooling.avg_pool2d(x, rows, cols, divisors)

    def avg_pool2d_backward(self, g, rows, cols, divisors, in_hw):
        return _pooling.avg_pool2d_backward(g, rows, cols, divisors, in_hw)

    def resample2d(self, x, rows, cols, nearest):
        return _pooling.resample2d(x, rows, cols, nearest)

    def resample2d_backward(self, g, rows, cols, nearest, in_hw):
        return _pooling.resample2d_backward(g, rows, cols, nearest, in_hw)

    # -- random
    def rand(self, shp, dtype, seed, offset, index=0):
        return _random.rand(shp, dtype, seed, offset, index)

    def randn(self, shp, dtype, seed, offset, index=0):
        return _random.randn(shp, dtype, seed, offset, index)

    # -- scans
    def scan(self, op, x, axis, reverse):
        from jit_kernels.cpu import scan as _scan
        return _scan.scan(op, x, axis, reverse)

    # -- sorting
    def argsort(self, x, axis, descending, stable):
        from jit_kernels.cpu import sort as _sort
        return _sort.argsort(x, axis, descending, stable)

    def topk(self, x, k, axis, largest, sorted):
        from jit_kernels.cpu import sort as _sort
        return _sort.topk(x, k, axis, largest, sorted)

    # -- advanced-index assignment and pad
    def put(self, x, indices, values, accumulate):
        from jit_kernels.cpu import put as _put
        return _put.put(x, indices, values, accumulate)

    def pad(self, x, maps, lead):
        from jit_kernels.cpu import pad as _pad
        return _pad.pad(x, maps, lead)

    def pad_backward(self, g, maps, lead, in_shape):
        from jit_kernels.cpu import pad as _pad
        return _pad.pad_backward(g, maps, lead, in_shape)

    # -- the fused row kernels of scaled_dot_product_attention
    def attention_softmax(self, x, mask, additive, scale, causal):
        from jit_kernels.cpu import attention as _attention
        return _attention.attention_softmax(x, mask, additive, scale, causal)

    def attention_softmax_backward(self, p, g, mask, scale, causal):
        from jit_kernels.cpu import attention as _attention
        return _attention.attention_softmax_backward(p, g, mask, scale, causal)

    def synchronize(self, index: int = 0) -> None:
        """Wait for the background kernel builds this process started (``_background``): after
        it every kernel runs its final variant (the packed gemm, the prange kernels)."""
        _matmul.synchronize()

    # -- allocation
    def empty_cache(self):
        """Free the caching allocator's pooled blocks; returns the bytes released."""
        return _pool.empty_cache()

    def memory_stats(self):
        """The caching allocator's counters (pooled bytes, hits, misses, ...)."""
        return _pool.stats()

    # -- user code
    def dlpack(self, x, **kwargs):
        """``x``'s DLPack capsule (zero-copy: NumPy's own export of the array)."""
        return x.__dlpack__(**kwargs)

    def dlpack_device(self, x):
        """``x``'s ``__dlpack_device__()`` pair: (1, 0), the host."""
        return x.__dlpack_device__()

    def custom(self, fn, arrays):
        return np.asarray(fn(*arrays))

    # -- fusion (graph.compile)
    def fused(self, program, arrays):
        from jit_kernels.cpu import fused as _fused
        return _fused.fused(program, arrays)

    #: the fewest output elements a kernel runs in parallel for (``_layout.PAR_THRESHOLD``)
    parallel_min = _layout.PAR_THRESHOLD
    #: seconds after a parallel kernel within which its workers are still awake
    keep_warm_s = _warm.SPIN_S

    def keep_warm(self):
        """A no-op parallel region: the workers spin afresh (see ``_warm``)."""
        _warm.keep_warm()

    def fused_fn(self, program):
        from jit_kernels.cpu import fused as _fused
        return _fused.prepared(program)


__all__ = ["CpuKernels"]
