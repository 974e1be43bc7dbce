"""The host probe that sizes the gemm's register tile (``jit_kernels.cpu._host``)."""
import json
import re

import numpy as np
import pytest

from jit_kernels.cpu import _host, matmul as mm


def test_vector_bytes_is_what_numba_emits():
    # the recorded width is the widest vector register Numba's code uses for a float32 loop
    w = _host.vector_bytes()
    assert w in (16, 32, 64)
    assert w == _host._probe()


def test_record_is_keyed_and_validated(tmp_path, monkeypatch):
    path = tmp_path / "host_vector.json"
    monkeypatch.setattr(_host, "_record_path", lambda: str(path))
    key = ("cpu", "+a,-b", "0.0")
    assert _host._load(key) is None                    # no record yet
    _host._store(key, 32)
    assert json.loads(path.read_text()) == {"key": list(key), "bytes": 32}
    assert _host._load(key) == 32
    assert _host._load(("other", "+a,-b", "0.0")) is None   # another target: probe again
    for bad in ('{"key": ["cpu", "+a,-b", "0.0"], "bytes": 48}', "[1, 2]", "not json",
                '{"key": ["cpu", "+a,-b", "0.0"], "bytes": "64"}'):
        path.write_text(bad)
        assert _host._load(key) is None                # a tampered file is ignored


@pytest.mark.parametrize("width, regs, f32, f64", [(64, 32, (8, 32), (8, 16)),
                                                   (32, 32, (8, 16), (8, 8)),
                                                   (32, 16, (4, 16), (4, 8))])
def test_gemm_tile_follows_the_vector_unit(monkeypatch, width, regs, f32, f64):
    monkeypatch.setattr(_host, "vector_bytes", lambda: width)
    monkeypatch.setattr(_host, "vector_registers", lambda: regs)
    monkeypatch.setattr(mm, "_CFG", {})
    assert mm.gemm_config(np.dtype(np.float32)) == f32 + (mm.MC, mm.KB, mm.NC)
    assert mm.gemm_config(np.dtype(np.float64)) == f64 + (mm.MC, mm.KB, mm.NC)
    # two vectors per tile row: MR x NR accumulators fill at most half the registers
    MR, NR = f32
    assert MR * NR * 4 // width == regs // 2


def test_the_gemm_module_is_built_for_this_hosts_tile():
    src, _ = mm._gemm_source(np.dtype(np.float32))
    MR, NR = mm.gemm_config(np.dtype(np.float32))[:2]
    assert re.search(rf"\(MR={MR}, NR={NR}, ", src)


def test_target_is_numbas_codegen():
    # the record's key is what the codegen compiles for (an empty NUMBA_CPU_NAME is LLVM's
    # generic cpu, and features may have been set by use_full_width), not a re-reading of it
    import llvmlite
    from numba.core.registry import cpu_target
    _, name, feats = cpu_target.target_context.codegen().magic_tuple()
    assert _host._target() == (name, feats, llvmlite.__version__)


AVX512 = "+64bit,+avx2,+avx512f,+fma"


@pytest.mark.parametrize("host, env, want", [
    (AVX512, {}, AVX512 + ",-prefer-256-bit"),
    (AVX512, {"JIT_KERNELS_FULL_WIDTH": "1"}, AVX512 + ",-prefer-256-bit"),
    ("+64bit,+avx2,-avx512f,+fma", {}, None),             # no AVX-512: nothing to lift
    ("+64bit,+avx2,+fma", {}, None),
    (AVX512, {"JIT_KERNELS_FULL_WIDTH": "0"}, None),       # the user's opt-out
    (AVX512, {"NUMBA_CPU_NAME": "sapphirerapids"}, None),  # the user's own target wins
    (AVX512, {"NUMBA_CPU_FEATURES": "+avx2"}, None),
])
def test_full_width_features(host, env, want):
    assert _host.full_width_features(host, env) == want


def test_use_full_width_leaves_an_existing_codegen_and_the_users_features(monkeypatch):
    import numba
    # the codegen of this process exists already (tests compiled kernels): nothing changes
    monkeypatch.setattr(numba.config, "CPU_FEATURES", None)
    _host.use_full_width()
    assert numba.config.CPU_FEATURES is None


def test_the_background_worker_compiles_for_this_codegen(monkeypatch, tmp_path):
    # its cache entries serve only a process with the same features: it is given ours
    import os
    from jit_kernels.cpu import _background
    seen = {}

    def spawn(exe, argv, env, file_actions):
        seen.update(env)
        raise OSError("not started")
    monkeypatch.setattr(os, "posix_spawn", spawn, raising=False)
    assert _background._start_worker() is None
    feats = _host._target()[1]
    assert seen.get("NUMBA_CPU_FEATURES") == (feats or None)
