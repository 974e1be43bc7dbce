"""Numba kernel sets, one per device kind, behind one protocol.

A kernel set knows nothing of tensors, autodiff or capture: arrays in, arrays out.
Its arrays ("payloads") are whatever the device kind stores (NumPy arrays on cpu,
numba.cuda device arrays on cuda).  Dtypes are plain ``numpy.dtype`` values and shapes
are tuples of ints; the runtime has already validated every shape, axis and dtype
before it calls a kernel, so kernel sets only check what the runtime cannot see:
index *values* (``take``/``gather``/``scatter_add``), which raise ``IndexError``.

The registry maps a device kind ("cpu", "cuda") to a factory for its kernel set.
Kernel modules are imported lazily, so importing the runtime compiles nothing.
"""
from __future__ import annotations

import importlib
from typing import Any, Protocol, Sequence

from jit_kernels import optable

#: Elementwise unary ops every kernel set implements (``KernelSet.unary``); from the op table.
UNARY_OPS = optable.UNARY_OPS
#: Elementwise binary ops every kernel set implements (``KernelSet.binary``); from the op table.
BINARY_OPS = optable.BINARY_OPS
#: Reductions over a tuple of axes (``KernelSet.reduce``); from the op table.
REDUCE_OPS = optable.REDUCE_OPS
#: Index-returning reductions over one axis (``KernelSet.arg_reduce``).
ARG_REDUCE_OPS = optable.ARG_REDUCE_OPS

#: Every method of the protocol; a test checks each kernel set implements all of them.
PROTOCOL_METHODS = (
    "from_host", "to_host", "empty", "full", "arange", "eye", "copy",
    "reshape", "permute", "expand", "index", "slice_assign", "take", "gather", "scatter_add",
    "scatter_reduce", "cat",
    "unary", "binary", "where", "cast",
    "reduce", "arg_reduce", "softmax",
    "matmul",
    "im2col", "col2im", "im2col_batched", "col2im_batched", "swap01",
    "conv2d_gemm", "conv2d_weight_gemm",
    "rand", "randn",
    "argsort", "topk",
    "custom",
    "max_pool2d", "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward",
    "resample2d", "resample2d_backward",
    "scan",
    "put", "pad", "pad_backward",
    "attention_softmax", "attention_softmax_backward",
)


class KernelSet(Protocol):
    """The methods every kernel set offers (see ``jit_kernels.cpu.CpuKernels``)."""

    kind: str

    # -- memory -------------------------------------------------------------------------
    def from_host(self, array: Any, index: int) -> Any:
        """Payload holding the values of NumPy ``array`` on device ``index``."""

    def to_host(self, x: Any) -> Any:
        """A NumPy array with the values of payload ``x`` (a copy off the host)."""

    def empty(self, shape: tuple, dtype: Any, index: int) -> Any: ...
    def full(self, shape: tuple, value: Any, dtype: Any, index: int) -> Any: ...
    def arange(self, start: Any, step: Any, n: int, dtype: Any, index: int) -> Any: ...
    def eye(self, n: int, m: int, dtype: Any, index: int) -> Any: ...

    def copy(self, x: Any) -> Any:
        """A C-contiguous copy of ``x``."""

    # -- views and data movement within a device -----------------------------------------
    def reshape(self, x: Any, shape: tuple) -> Any:
        """``x`` with ``shape`` (same size): a view when the layout allows, else a copy."""

    def permute(self, x: Any, axes: tuple) -> Any:
        """A view of ``x`` with its axes reordered."""

    def expand(self, x: Any, shape: tuple) -> Any:
        """A stride-0 view of ``x`` broadcast to ``shape``."""

    def index(self, x: Any, key: tuple) -> Any:
        """Basic indexing with a normalised key: a tuple with one entry per axis of ``x``
        (in order), each an in-range ``int`` or a ``slice`` with concrete start/stop/step
        as ``slice.indices`` returns them, plus ``None`` entries that insert new axes.
        Returns a view."""

    def slice_assign(self, x: Any, key: tuple, value: Any) -> Any:
        """A copy of ``x`` with ``x[key] = value`` (``value`` already has the key's shape
        and ``x``'s dtype; ``key`` normalised as for ``index``)."""

    def take(self, x: Any, indices: Any, axis: int) -> Any:
        """``numpy.take(x, indices, axis)``; negative indices count from the end; an index
        outside ``[-n, n)`` raises ``IndexError`` naming it and the axis length."""

    def gather(self, x: Any, indices: Any, axis: int) -> Any:
        """``torch.gather``: ``out[..i..] = x[..indices[..i..]..]`` along ``axis``; indices has
        x's rank and is no larger than x on the other axes; same index rules as ``take``."""

    def scatter_add(self, x: Any, indices: Any, src: Any, axis: int) -> Any:
        """``torch.scatter_add``: a new array, a copy of ``x`` with ``src[p]`` added at ``p``
        with ``p[axis]`` replaced by ``indices[p]``, for every position ``p`` of ``indices``
        (any strides, stride-0 views included).  ``indices`` and ``src`` have x's rank;
        ``indices`` is no larger than ``src`` anywhere and than ``x`` off ``axis``; ``src`` has
        x's dtype (bool: logical or).  Same index rules as ``take``, checked before anything is
        written.  Repeated indices accumulate: in index order on cpu (deterministic), by
        atomics on cuda (float sums may differ in the last bits between runs)."""

    def scatter_reduce(self, x: Any, indices: Any, src: Any, axis: int, reduce: str) -> Any:
        """Like ``scatter_add`` (same shapes, strides and index rules), combining with
        ``reduce``: "prod", "amax" or "amin" (NaN propagates) instead of adding; numeric
        dtypes only.  Each position's values combine in index order on both sets (one worker
        per index column: deterministic, no atomics)."""

    def cat(self, xs: Sequence[Any], axis: int) -> Any:
        """Concatenation along ``axis`` (all of one dtype, shapes already checked)."""

    # -- elementwise ---------------------------------------------------------------------
    def unary(self, op: str, x: Any, out_dtype: Any, attrs: dict) -> Any:
        """``op`` (one of ``UNARY_OPS``) applied elementwise, computed in ``out_dtype``
        (``clamp`` takes ``attrs['min']``/``attrs['max']``, either may be None)."""

    def binary(self, op: str, a: Any, b: Any, compute_dtype: Any, out_dtype: Any) -> Any:
        """``op`` (one of ``BINARY_OPS``) with NumPy broadcasting; ``a``/``b`` are payloads or
        Python scalars.  Operands are converted to ``compute_dtype`` and the result is
        stored as ``out_dtype`` (bool for comparisons)."""

    def where(self, cond: Any, a: Any, b: Any, out_dtype: Any) -> Any:
        """Broadcasting select; ``a``/``b`` payloads or Python scalars."""

    def cast(self, x: Any, dtype: Any) -> Any:
        """``x`` converted to ``dtype`` (float→int truncates toward zero and saturates; NaN→0)."""

    def half_to_float(self, x: Any, fmt: str) -> Any:
        """float32 values of ``x``, the uint16 bits of ``fmt`` ("float16" or "bfloat16")."""

    def float_to_half(self, x: Any, fmt: str) -> Any:
        """uint16 bits of ``fmt`` for float32/float64 ``x``: round to nearest even, NaN kept
        (see ``jit_kernels._half``)."""

    # -- reductions ----------------------------------------------------------------------
    def reduce(self, op: str, x: Any, axes: tuple, keepdims: bool, out_dtype: Any, attrs: dict) -> Any:
        """``op`` (one of ``REDUCE_OPS``) over ``axes`` (sorted, non-negative, non-empty
        unless x is 0-d); ``var`` takes ``attrs['ddof']``; ``out_dtype`` is the accumulation
        and result dtype."""

    def arg_reduce(self, op: str, x: Any, axis: Any, keepdims: bool) -> Any:
        """First index of the max/min along ``axis`` (None: over the flattened array) as
        int64; NaN counts as the extreme, as in NumPy."""

    def softmax(self, x: Any, axis: int, log: bool) -> Any:
        """Numerically stable (log-)softmax along one axis."""

    # -- linear algebra --------------------------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        """``a @ b`` for ``a`` (B, M, K) and ``b`` (B, K, N) of one float or int dtype; the
        batch dims of either may be stride-0 views.  Returns (B, M, N) contiguous."""

    # -- convolution -----------------------------------------------------------------------
    def im2col(self, x: Any, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
               grid: tuple) -> Any:
        """Columns (N, C*kh*kw, oh*ow) of a float image ``x`` (N, C, H, W): row
        ``(c*kh + i)*kw + j``, column ``oy*ow + ox`` holds ``x[n, c, oy*sh - pt + i*dh,
        ox*sw - pl + j*dw]``, zero outside the image.  ``kernel`` (kh, kw), ``stride``
        (sh, sw), ``padding`` (pt, pl: the leading pads), ``dilation`` (dh, dw) and ``grid``
        (oh, ow) are positive (padding non-negative) and already checked."""

    def col2im(self, cols: Any, image: tuple, kernel: tuple, stride: tuple, padding: tuple,
               dilation: tuple, grid: tuple) -> Any:
        """The adjoint of ``im2col``: the (N, C, H, W) image (``image`` = (C, H, W)) in which
        every entry of ``cols`` (N, C*kh*kw, oh*ow) is added at the position it reads."""

    def im2col_batched(self, x: Any, kernel: tuple, stride: tuple, padding: tuple,
                       dilation: tuple, grid: tuple) -> Any:
        """``im2col``'s columns with the samples side by side, as one gemm operand for the
        batch: (C*kh*kw, N*oh*ow), column ``n*oh*ow + oy*ow + ox``.  Contiguous."""

    def col2im_batched(self, cols: Any, n: int, image: tuple, kernel: tuple, stride: tuple,
                       padding: tuple, dilation: tuple, grid: tuple) -> Any:
        """The adjoint of ``im2col_batched``: the (n, C, H, W) image (``image`` = (C, H, W))
        summing the entries of ``cols`` (C*kh*kw, n*oh*ow) back."""

    def swap01(self, x: Any, bias: Any = None) -> Any:
        """``x`` (A, B, L) as a contiguous (B, A, L) array, plus ``bias`` (A,) (same dtype)
        along A when given: conv gemm rows (O, N, L) to NCHW and back, in one pass."""

    def conv2d_gemm(self, x: Any, w: Any, bias: Any, stride: tuple, padding: tuple,
                    dilation: tuple, grid: tuple) -> Any:
        """conv2d without groups: float ``x`` (N, C, H, W), ``w`` (O, C, kh, kw), ``bias``
        (O,) or None, window arguments as for ``im2col`` (checked) -> (N, O, oh, ow)
        contiguous: ``w`` as (O, C*kh*kw) @ the batched columns of ``x``, plus the bias."""

    def conv2d_weight_gemm(self, x: Any, g: Any, kernel: tuple, stride: tuple, padding: tuple,
                           dilation: tuple) -> Any:
        """conv2d's weight gradient without groups: float ``x`` (N, C, H, W) and ``g``
        (N, O, oh, ow) -> (O, C*kh*kw) contiguous: ``g`` as rows (O, N*oh*ow) @ the batched
        columns of ``x`` transposed (``kernel`` (kh, kw), the rest as for ``im2col``)."""

    # -- random --------------------------------------------------------------------------
    def rand(self, shape: tuple, dtype: Any, seed: int, offset: int, index: int) -> Any:
        """Uniform [0, 1) values; element i is a pure function of (seed, offset + i)."""

    def randn(self, shape: tuple, dtype: Any, seed: int, offset: int, index: int) -> Any:
        """Standard normal values; element i is a pure function of (seed, offset + i)."""

    # -- sorting -------------------------------------------------------------------------
    def argsort(self, x: Any, axis: int, descending: bool, stable: bool) -> Any:
        """int64 indices that sort ``x`` along ``axis``, stably (ties keep their order; NaN
        after every number ascending, before descending; -0.0 equals 0.0)."""

    def topk(self, x: Any, k: int, axis: int, largest: bool, sorted: bool) -> Any:
        """int64 indices of the ``k`` largest (smallest) along ``axis``, best first, ties by
        the lower index, NaN the largest value (``0 <= k <= x.shape[axis]``, checked)."""

    # -- scans ---------------------------------------------------------------------------
    def scan(self, op: str, x: Any, axis: int, reverse: bool) -> Any:
        """``op`` ("sum", "prod", "logsumexp": ``x``'s dtype, float64/int64 accumulators;
        "argmax", "argmin": int64 index of the running extreme, ties to the later element,
        NaN sticks) scanned along ``axis``; ``reverse`` scans from the end (not for the
        index scans)."""

    # -- user code -----------------------------------------------------------------------
    def custom(self, fn: Any, arrays: Sequence[Any]) -> Any:
        """Run a user's custom-op forward on this kernel set's arrays."""

    # -- fusion (graph.compile) --------------------------------------------------------------
    def fused(self, program: Any, arrays: Sequence[Any]) -> list:
        """Run a fused program (``runtime.capture.fuse.FusedProgram``, plain data) on
        ``arrays`` (one per ``program.inputs``); one new array per ``program.outputs``."""

    # -- pooling and resampling (N, C, H, W) -----------------------------------------------
    # A window table is ``(starts, stops, step)`` per spatial axis: int64 host arrays of the
    # output length (clipped to the input) and the dilation; a tap table is ``(i0, i1, lam)``:
    # output ``o`` reads inputs ``i0[o]`` (weight ``1 - lam[o]``) and ``i1[o]`` (``lam[o]``,
    # of the input's dtype).
    def max_pool2d(self, x: Any, rows: tuple, cols: tuple, want_indices: bool) -> tuple:
        """(max over each window, int64 flat indices into each H*W plane or None); the first
        maximum wins, NaN propagates (PyTorch)."""

    def max_pool2d_backward(self, x: Any, g: Any, rows: tuple, cols: tuple) -> Any:
        """``g`` added at the position ``max_pool2d`` picks in each window (x's shape)."""

    def avg_pool2d(self, x: Any, rows: tuple, cols: tuple, divisors: Any) -> Any:
        """Window sums (step 1, float64 accumulation) divided by ``divisors`` (float64,
        (OH, OW) host array)."""

    def avg_pool2d_backward(self, g: Any, rows: tuple, cols: tuple, divisors: Any,
                            in_hw: tuple) -> Any:
        """The gradient of ``avg_pool2d`` for an input of spatial size ``in_hw``."""

    def resample2d(self, x: Any, rows: tuple, cols: tuple, nearest: bool) -> Any:
        """Separable two-tap resampling by tap tables (``nearest``: read ``i0`` only)."""

    def resample2d_backward(self, g: Any, rows: tuple, cols: tuple, nearest: bool,
                            in_hw: tuple) -> Any:
        """The gradient of ``resample2d`` for an input of spatial size ``in_hw``."""

    # -- advanced-index assignment and pad -----------------------------------------------------
    def put(self, x: Any, indices: Any, values: Any, accumulate: bool) -> Any:
        """A copy of ``x`` with ``out.flat[indices[j]] = values[j]`` for every position ``j`` of
        ``indices`` (int, checked, negatives from the end; ``values`` broadcasts to its shape);
        repeated indices: the last in C order wins, or with ``accumulate`` they all add."""

    def pad(self, x: Any, maps: Sequence[Any], lead: int) -> Any:
        """``x`` (viewed as its first ``lead`` dims, then one per ``maps`` entry) with output index
        ``o`` of inner dim ``d`` reading input index ``maps[d][o]`` (int64 host arrays)."""

    def pad_backward(self, g: Any, maps: Sequence[Any], lead: int, in_shape: tuple) -> Any:
        """The adjoint of ``pad``: ``g`` summed into an array of ``in_shape``."""

    # -- the fused softmax of scaled_dot_product_attention -------------------------------------
    def attention_softmax(self, x: Any, mask: Any, additive: bool, scale: float,
                          causal: Any) -> Any:
        """Per row of ``x`` (..., L, S), in one pass: ``softmax(t)`` of ``t = x * scale`` with
        ``-inf`` where the bool ``mask`` is False (``additive``: ``t + mask``, of ``x``'s dtype;
        ``mask`` None or broadcastable to ``x``'s shape) and, where ``causal`` is an int ``d``
        (None: no causal mask), exactly 0 after the diagonal (``j > i + d``); a fully masked or
        NaN row is NaN."""

    def attention_softmax_backward(self, p: Any, g: Any, mask: Any, scale: float,
                                   causal: Any) -> Any:
        """``p * (g - sum(g * p, -1)) * scale`` per row (float64 sum), 0 where the bool ``mask``
        is False and after the causal diagonal ``causal`` (an int, or None)."""


#: The optional features a kernel set may offer, each with the methods it brings.  A kernel
#: set lists the ones it has in its ``capabilities`` attribute (a frozenset of these names); a
#: test checks that each declared feature's methods exist and that no undeclared one does.
CAPABILITIES = {
    "fused": ("fused",),                        # generated fused programs (graph.compile)
    # ``fused_fn(program) -> run(arrays)``: ``fused`` for a program run many times (a
    # compiled graph's step), its per-layout decisions made once
    "fused_fn": ("fused_fn",),
    # ``keep_warm()``: a no-op parallel region that keeps the set's worker threads awake
    # through a run of serial kernels; ``keep_warm_s`` (seconds) how long they stay awake after
    # a parallel kernel, ``parallel_min`` the fewest output elements a kernel runs in parallel for
    "keep_warm": ("keep_warm",),
    # ``index_backward(g, key, shape)``: ``slice_assign`` of ``g`` into zeros of ``shape``
    # (basic indexing's gradient) without a pass over the zeros the region leaves
    "index_backward": ("index_backward",),
    "prepared": ("unary_fn", "binary_fn"),      # prepared elementwise kernels (small-op path)
    "prepared_matmul": ("matmul_fn",),          # a prepared product of two matrices (same path)
    "split": ("split",),                        # several views of one array in one call
    "winograd": ("winograd_applies", "conv2d_winograd"),
    "max_pool2d_relu": ("max_pool2d_relu",),
    "synchronize": ("synchronize",),
    "empty_cache": ("empty_cache",),
    "dlpack": ("dlpack", "dlpack_device"),
    "cuda_array_interface": ("cuda_array_interface", "from_cuda_array"),
    # dense factorisations (B, m, n) -> arrays; inv/solve/cholesky return the first failing
    # batch element (-1: none) instead of raising (see ``jit_kernels.cpu.linalg``)
    "linalg": ("linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_cholesky",
               "linalg_qr", "linalg_eigh", "linalg_svd"),
    # softmax cross-entropy's per-row losses and its logits gradient, each in one pass, bit
    # for bit the log-softmax, gather and neg kernels, and the softmax, scatter_add and binary
    # kernels, they replace; each returns None to decline (a size those serve)
    "cross_entropy": ("cross_entropy_loss", "cross_entropy_grad"),
    # a recurrent layer's recurrence and its backpropagation through time, in the layout of
    # the ``lstm_layer``, ``gru_layer`` and ``rnn_layer`` ops (``jit_kernels.cpu.recurrent``)
    "recurrent": ("lstm_forward", "lstm_backward", "gru_forward", "gru_backward",
                  "rnn_forward", "rnn_backward"),
}


_REGISTRY: dict[str, str] = {
    "cpu": "jit_kernels.cpu:CpuKernels",
    "cuda": "jit_kernels.cuda:CudaKernels",
}
_INSTANCES: dict[str, Any] = {}


def kernel_set_for(kind: str) -> KernelSet:
    """The (singleton) kernel set for a device kind; imports its module on first use."""
    ks = _INSTANCES.get(kind)
    if ks is None:
        try:
            target = _REGISTRY[kind]
        except KeyError:
            raise LookupError(f"no kernel set registered for device kind {kind!r}") from None
        module_name, _, cls_name = target.partition(":")
        ks = getattr(importlib.import_module(module_name), cls_name)()
        _INSTANCES[kind] = ks
    return ks
