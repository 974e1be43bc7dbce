"""The cpu kernels' ``njit`` defaults (``jit_kernels.cpu._jit``): no C-callable wrapper, helpers
without a Python entry point that refuse a Python call, and the scalar math compiled once and
inlined by LLVM into each calling kernel."""
from __future__ import annotations

import re

import numpy as np
import pytest
from numba import prange

from jit_kernels.cpu import reduce as cpu_reduce, scalar_math as sm
from jit_kernels.cpu._jit import _PARFOR_LIBRARIES, helper, njit


@helper(error_model="numpy")
def _twice(x):
    return 2 * x


@njit(error_model="numpy")
def _calls_helper(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += _twice(a[i])
    return s


@njit
def _bare(x):
    return x + 1


def test_njit_leaves_out_the_cfunc_wrapper_and_keeps_options():
    assert _bare(2) == 3
    assert _bare.targetoptions["no_cfunc_wrapper"] is True
    assert "no_cpython_wrapper" not in _bare.targetoptions
    assert _calls_helper.targetoptions["error_model"] == "numpy"


def test_a_helper_runs_inside_kernels_and_refuses_python_calls():
    assert _calls_helper(np.arange(4.0)) == 12.0
    assert _twice.targetoptions["no_cpython_wrapper"] is True
    with pytest.raises(TypeError, match=r"^_twice is a kernel helper: it is called only from "
                                        r"other compiled kernels$"):
        _twice(1.0)


def _defined(module):
    return {f.name for f in module.functions if not f.is_declaration}


def test_a_helper_makes_no_machine_code_of_its_own_and_is_inlined_into_its_caller():
    assert _calls_helper(np.arange(3.0)) == 6.0
    (sig,) = [s for s in _twice.overloads if s == (_twice.typeof_pyval(1.0),)]
    cres = _twice.overloads[sig]
    name = cres.fndesc.llvm_func_name
    assert cres.library.get_pointer_to_function(name) == 0       # no machine code for it
    assert name in _defined(cres.library._get_module_for_linking())     # but its code, to link
    assert not _defined(cres.library._final_module)              # none handed to the JIT
    ir = _calls_helper.inspect_llvm(_calls_helper.signatures[0])
    assert not re.findall(r"call [^\n]*_twice", ir)


@njit(parallel=True)
def _par_twice_sum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += _twice(a[i])
    return s


def test_a_prange_loops_libraries_make_no_machine_code_of_their_own():
    a = np.arange(1000.0)
    assert _par_twice_sum(a) == 2 * a.sum()
    libs, todo = [], [_par_twice_sum.overloads[_par_twice_sum.signatures[0]].library]
    while todo:                                 # every library linked into the kernel
        for lib in todo.pop()._linking_libraries:
            if lib not in libs:
                libs.append(lib)
                todo.append(lib)
    loops = [lib for lib in libs if lib.name.startswith(_PARFOR_LIBRARIES)]
    assert len(loops) == 3          # the loop's body, its wrapper, the thread pool's wrapper
    for lib in loops:       # code to link, none handed to the JIT on its own
        assert _defined(lib._get_module_for_linking()) and not _defined(lib._final_module)


def test_template_helpers_refuse_python_calls():
    with pytest.raises(TypeError, match="_row_pos is a kernel helper"):
        cpu_reduce._row_pos(0, np.zeros(1, np.int64), np.zeros(1, np.int64), 0)


@njit(error_model="numpy")
def _exp_tanh(a, out):
    for i in range(a.shape[0]):
        out[i] = sm.exp_f32(a[i]) + sm.tanh_f32(a[i])


def test_scalar_math_is_inlined_into_the_kernel_by_llvm():
    a = np.linspace(-4, 4, 33).astype(np.float32)
    out = np.empty_like(a)
    _exp_tanh(a, out)
    ref = np.exp(a.astype(np.float64)) + np.tanh(a.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    ir = _exp_tanh.inspect_llvm(_exp_tanh.signatures[0])
    # the optimised kernel calls neither function: both bodies are inlined into its loop
    calls = re.findall(r"call [^\n]*@[^\n(]*(exp_f32|tanh_f32)", ir)
    assert calls == []
    assert sm.exp_f32.targetoptions["forceinline"] is True


_CACHED_KERNELS = '''
import numpy as np
from numba import prange
from jit_kernels.cpu._jit import helper, njit

@helper                            # (disk-cached by default)
def _sq(x):
    return x * x

@njit(cache=True)
def alloc(n):                      # allocates: needs the runtime's allocator (rtsys)
    out = np.empty(n)
    for i in range(n):
        out[i] = _sq(i)
    return out

@njit(cache=True, parallel=True)
def par_sum(a):                    # prange: needs the thread pool's init on load
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s

@njit
def sq_plus_one(x):                # never cached: compiled in each process that calls it
    return _sq(x) + 1.0
'''

_LOAD = '''
import sys
import numpy as np
import cached_kernels as k
assert list(k.alloc(4)) == [0.0, 1.0, 4.0, 9.0]
assert k.par_sum(np.ones(100000)) == 100000.0
refreshed = "numba.np.linalg" in sys.modules
assert k.sq_plus_one(3.0) == 10.0
print(sum(d._cache_hits.total() for d in (k.alloc, k.par_sum)),
      sum(d._cache_misses.total() for d in (k.alloc, k.par_sum)), refreshed,
      k._sq._cache_hits.total())
'''


def test_cached_kernels_load_without_refreshing_numbas_context(tmp_path):
    """A warm process loads kernels from the disk cache without importing and installing
    Numba's typing and lowering registries (``_KernelCache``), and the loaded code runs:
    allocation, a helper linked in, and a ``prange`` loop; a kernel compiled there loads its
    helper from the disk cache instead of compiling it again."""
    import os
    import subprocess
    import sys
    (tmp_path / "cached_kernels.py").write_text(_CACHED_KERNELS)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))

    def run():
        return subprocess.run([sys.executable, "-c", _LOAD], env=env, capture_output=True,
                              text=True, check=True).stdout.split()

    assert run() == ["0", "2", "True", "0"]   # compiled: the compiler refreshes the context
    assert run() == ["2", "0", "False", "1"]  # loaded: nothing compiled, nothing refreshed


def test_a_kernels_disk_cache_is_made_on_its_first_use(tmp_path, monkeypatch):
    """``cache=True`` gives a kernel a disk cache that is made when it is first used (a load,
    a save, Numba's ``stats``), not when the function is decorated; a kernel without
    ``cache`` gets none."""
    import numba
    from jit_kernels.cpu import _jit
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))

    def tripled(x):
        return 3 * x
    k = njit(cache=True)(tripled)
    assert type(k._cache) is _jit._LazyKernelCache and k._cache._made is None
    assert k(2) == 6
    assert type(k._cache._made) is _jit._KernelCache
    assert len(k.stats.cache_misses) == 1          # compiled here, and saved
    assert any(tmp_path.rglob("*.nbi"))
    assert type(njit(tripled)._cache).__name__ == "NullCache"


@njit(arrays=("in", "out"))
def _doubled(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = 2 * a[i, j]


def test_arrays_option_shares_one_specialisation_between_views():
    """``arrays``: a writeable C array keeps its own specialisation; transposed, sliced,
    Fortran-ordered and read-only views of a dtype share one any-layout specialisation, and a
    view of a kind already seen compiles nothing (Numba's own dispatch finds it)."""
    from numba.core import event

    base = np.arange(12.0).reshape(3, 4)
    frozen = base.copy()
    frozen.setflags(write=False)
    views = [base, base.T.copy().T, base[:, ::2], np.asfortranarray(base), frozen, base[::2]]
    for v in views:
        out = np.zeros(v.shape)
        _doubled(v, out)
        np.testing.assert_array_equal(out, 2 * v)
    kinds = sorted((s[0].layout, s[0].mutable, s[1].layout) for s in _doubled.signatures)
    assert kinds == [("A", False, "C"), ("C", True, "C")]
    out_view = np.zeros((4, 3)).T                       # an "out" view: the any-layout output
    _doubled(base, out_view)
    np.testing.assert_array_equal(out_view, 2 * base)
    assert len(_doubled.signatures) == 3

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"])

        def on_end(self, ev):
            pass
    with event.install_listener("numba:compile", Count()):
        for v in (base[1:, 1:], np.asfortranarray(base[:2]), frozen.T):
            out = np.zeros(v.shape)
            _doubled(v, out)
            np.testing.assert_array_equal(out, 2 * v)
    assert compiled == []


def test_arrays_option_is_checked():
    with pytest.raises(ValueError, match=r"^arrays: expected 'in', 'out' or None per "
                                         r"argument, got \('in', 'both'\)$"):
        njit(arrays=("in", "both"))(lambda a, b: None)
    with pytest.raises(TypeError, match=r"^helper: 'arrays' is an option of kernels called "
                                        r"from Python \(njit\)$"):
        helper(arrays=("in",))
