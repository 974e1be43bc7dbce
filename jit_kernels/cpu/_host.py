"""What LLVM makes of this host's vector unit, probed once (the gemm's register tile is sized
from it).

The CPU name alone does not say it: LLVM's tuning for Intel's AVX-512 server cores (Sapphire and
Emerald Rapids) prefers 256-bit vectors, so Numba's loops there use ``ymm`` registers, while
on Zen 4 the same code uses ``zmm``.  An 8 x 32 float32 tile is 16 accumulators at 64 bytes
but 32 (every register, spilled) at 32 bytes, where 8 x 16 is much the faster tile (and
``get_host_cpu_name()`` need not name the core: an Emerald Rapids host can report rocketlake).
So ``vector_bytes`` compiles a float32 loop the way Numba compiles every kernel
(``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` included) and reads the widest register its machine
code uses.  The answer is kept in the kernel cache directory, keyed by
the CPU name, its features and the llvmlite version, so a process compiles the probe only
once per machine.

``use_full_width()`` runs when this module is imported (``jit_kernels.cpu`` imports it
first): on an AVX-512 host it asks Numba's codegen for the host's features plus
``-prefer-256-bit`` (LLVM's tuning feature), so the loops there use ``zmm`` as on Zen 4,
which runs the conv kernels faster.
"""
from __future__ import annotations

import json
import os
import re
import threading

_LOCK = threading.Lock()
_WIDTH: int | None = None
_WIDTHS = (16, 32, 64)


#: ``JIT_KERNELS_FULL_WIDTH=0`` leaves Numba's features as they are (LLVM's own preference)
FULL_WIDTH_ENV = "JIT_KERNELS_FULL_WIDTH"
_NO_256 = "-prefer-256-bit"


def full_width_features(host_features: str, env) -> str | None:
    """The features string for Numba's codegen that lifts LLVM's 256-bit preference, or None
    to leave Numba's default: only with AVX-512, and not where the user chose (any
    ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``, or ``JIT_KERNELS_FULL_WIDTH=0``)."""
    if env.get(FULL_WIDTH_ENV, "1") == "0" or "NUMBA_CPU_NAME" in env \
            or "NUMBA_CPU_FEATURES" in env:
        return None
    if "+avx512f" not in host_features.split(","):
        return None
    return f"{host_features},{_NO_256}"


def use_full_width() -> None:
    """Set ``numba.config.CPU_FEATURES`` as ``full_width_features`` says, before Numba's cpu
    codegen exists (it reads the features once, when it is made; made earlier -- by other code
    of this process compiling first -- it keeps its own, and the probe then sees those)."""
    import llvmlite.binding as ll
    import numba
    from numba.core.registry import cpu_target
    if "_toplevel_target_context" in vars(cpu_target) or numba.config.CPU_FEATURES is not None:
        return
    try:
        host = ll.get_host_cpu_features().flatten()
    except RuntimeError:         # a host LLVM cannot read the features of
        return
    feats = full_width_features(host, os.environ)
    if feats is not None:
        numba.config.CPU_FEATURES = feats


def _target() -> tuple:
    """(cpu name, features, llvmlite version) of the code Numba generates: its codegen's own."""
    import llvmlite
    from numba.core.registry import cpu_target
    _, name, feats = cpu_target.target_context.codegen().magic_tuple()
    return name, feats, llvmlite.__version__


def _probe() -> int:
    """The widest vector register in the machine code of a vectorised float32 loop."""
    import numpy as np
    from numba import njit

    @njit(error_model="numpy", fastmath={"contract"})
    def axpy(y, x, a):
        for i in range(y.size):
            y[i] += a * x[i]
    v = np.zeros(64, np.float32)
    axpy(v, v, np.float32(1))
    asm = axpy.inspect_asm(axpy.signatures[0])
    for reg, width in (("zmm", 64), ("ymm", 32)):
        if re.search(rf"%{reg}\d", asm):
            return width
    return 16


def _record_path() -> str:
    from jit_kernels.codegen import cache_dir
    return os.path.join(cache_dir(), "host_vector.json")


def _load(key) -> int | None:
    try:
        with open(_record_path(), encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    # a file anyone could have written: only a known width for exactly this target counts
    if isinstance(rec, dict) and rec.get("key") == list(key) and rec.get("bytes") in _WIDTHS:
        return rec["bytes"]
    return None


def _store(key, width: int) -> None:
    path = _record_path()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": list(key), "bytes": width}, f)
        os.replace(tmp, path)
    except OSError:          # a read-only cache: probe again next time
        pass


def vector_bytes() -> int:
    """Bytes per float vector register in the code Numba generates on this host: 64 (AVX-512
    used at full width), 32 (AVX2, or AVX-512 under a 256-bit tuning) or 16."""
    global _WIDTH
    if _WIDTH is None:
        with _LOCK:
            if _WIDTH is None:
                key = _target()
                width = _load(key)
                if width is None:
                    width = _probe()
                    _store(key, width)
                _WIDTH = width
    return _WIDTH


def vector_registers() -> int:
    """Vector registers the code can use: 32 with AVX-512, else 16."""
    return 32 if "+avx512f" in _target()[1].split(",") else 16


__all__ = ["full_width_features", "use_full_width", "vector_bytes", "vector_registers"]

use_full_width()
