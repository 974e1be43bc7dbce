"""The cpu kernels' ``njit``: Numba's, with the defaults every kernel of this package shares.

Numba builds two wrappers around each compiled signature besides the function itself: a
CPython entry point (argument unboxing, for calls from Python) and a C-callable one (for
passing the function as a first-class value, which no kernel here does).  Each is lowered,
optimised and turned into machine code like the function, so each costs compile time:

- ``njit`` leaves out the C-callable wrapper (``no_cfunc_wrapper``): about an eighth of a small
  kernel's compile;
- ``helper`` is ``njit`` for functions only other kernels call, which need no Python entry
  point either (``no_cpython_wrapper`` too): about two fifths of a small helper's compile.
  Called from Python, one raises ``TypeError`` (without the entry point Numba's dispatcher
  would jump to a null address).  A helper is disk-cached like a kernel (``cache=True``): a
  loaded kernel carries its helpers' code, but a kernel compiled in another process (the
  background builder, a test worker, the next script) would compile them again.

A helper's own code library makes no machine code (``_HelperLibrary``): LLVM inlines a helper
into each caller and makes the caller's machine code, so Numba's machine code for the helper
alone (a fifth to a third of its LLVM time) went unused.  The same holds for the three
libraries Numba makes for each ``prange`` loop of a ``parallel=True`` kernel (the loop body,
its wrapper, the thread pool's wrapper of that: each linked into the next, the last into the
kernel), which such a kernel's pipeline (``_ParallelCompiler``) makes helper libraries too.

Both take Numba's ``njit`` options and are used the same way (``@njit``, ``@njit(...)``).
``njit`` also takes ``arrays``: per positional argument, ``"in"`` (an array the kernel only
reads), ``"out"`` (one it writes) or ``None``.  Numba compiles a specialisation per layout
(C, F or any) and writeable flag of each array argument, so a kernel called on transposed,
sliced and read-only views compiles again for each combination.  With ``arrays`` a named
argument keeps its own type only when it is a writeable C-contiguous array (unit-stride loops
over it vectorise); any other layout or a read-only array is typed as an any-layout array
(read-only for ``"in"``), indexed through its strides, so every such view of a dtype shares
one specialisation: at most two per named argument and dtype instead of six.

Their disk cache is made on its first use, not when the function is decorated, and loads a
kernel without first refreshing Numba's target context: Numba's own
``load_overload`` imports and installs every typing and lowering registry it has (most of a
warm process's first kernel call) though a cached kernel is machine code that needs only
the runtime's allocator (``rtsys``) and its own init functions (the thread pool of a
``prange`` kernel).  Compiling still refreshes the context, in Numba's compiler.
"""
from __future__ import annotations

import llvmlite.binding as _ll
from numba import njit as _numba_njit
from numba.core.caching import FunctionCache
from numba.core import types
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import Compiler
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher
from numba.core.runtime import rtsys

__all__ = ["njit", "helper"]


class _KernelCache(FunctionCache):
    """Numba's per-function disk cache, loading without the context refresh."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)    # (idempotent) what loaded code links against
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)


class _LazyKernelCache:
    """A dispatcher's ``_KernelCache``, made on its first use (a load, a save, anything else
    Numba asks of it).  Numba makes its cache when it decorates the function, and making one
    finds the cache directory and proves it writable by creating and deleting a temporary
    file there: at import, for every kernel and helper of the package (most of which a
    process never calls)."""

    __slots__ = ("_py_func", "_made")

    def __init__(self, py_func):
        self._py_func = py_func
        self._made = None

    def _cache(self):
        made = self._made
        if made is None:    # (two threads may both make one: equal, and the last is kept)
            made = self._made = _KernelCache(self._py_func)
        return made

    def __getattr__(self, name):    # (``load_overload``, ``save_overload``, ``cache_path``...)
        return getattr(self._cache(), name)


def _cached(disp):
    disp._cache = _LazyKernelCache(disp.py_func)
    return disp


class _AnyLayoutDispatcher(CPUDispatcher):
    """A dispatcher whose array arguments named by ``_arrays`` compile as any-layout arrays:
    one specialisation per dtype serves every layout and writeable flag."""

    _arrays: tuple = ()

    def _compile_for_args(self, *args, **kws):
        # Numba's C dispatcher calls this when no compiled specialisation matches the argument
        # types exactly (while it may compile, it takes no conversion): compile or load the
        # general specialisation, and enter its code under these exact types too, so the next
        # such call finds it in C
        exact = tuple(self.typeof_pyval(a) for a in args)
        general = list(exact)
        for i, role in enumerate(self._arrays[:len(general)]):
            t = general[i]
            if role is not None and isinstance(t, types.Array) \
                    and not (t.layout == "C" and t.mutable):
                general[i] = t.copy(layout="A", readonly=role == "in")
        with global_compiler_lock:
            entry = self.compile(tuple(general))
            if exact != tuple(general) and exact not in self._aliases:
                self._insert([t._code for t in exact], entry, False)
                self._aliases.add(exact)
        return entry


def _any_layout(disp, arrays):
    if any(r not in (None, "in", "out") for r in arrays):
        raise ValueError(f"arrays: expected 'in', 'out' or None per argument, got {arrays!r}")
    disp.__class__ = _AnyLayoutDispatcher   # (same layout: only the compile's types change)
    disp._arrays = tuple(arrays)
    disp._aliases = set()                   # exact argument types entered for the general code
    return disp


#: the code libraries Numba makes for a ``prange`` loop: its body (a gufunc), the body's
#: wrapper and the thread pool's wrapper of that, each only ever linked into the next and the
#: last into the kernel that runs the loop
_PARFOR_LIBRARIES = ("__numba_parfor_gufunc_", "<numba.np.ufunc.wrappers._GufuncWrapper ",
                     "parallelgufuncwrapper")


class _ParallelCompiler(Compiler):
    """Numba's pipeline for a ``parallel=True`` kernel whose loops' libraries (``prange``
    bodies and their wrappers) are helper libraries: no machine code of their own (the
    kernel's, which links them, is the only code that runs)."""

    def compile_extra(self, func):
        codegen = self.state.targetctx.codegen()
        if "create_library" in vars(codegen):   # (a nested compile: already in place)
            return super().compile_extra(func)

        def create_library(name, **kwargs):
            lib = type(codegen).create_library(codegen, name, **kwargs)
            if name.startswith(_PARFOR_LIBRARIES):
                lib.__class__ = _HelperLibrary  # (same fields: only finalising changes)
            return lib
        codegen.create_library = create_library     # (under Numba's compiler lock)
        try:
            return super().compile_extra(func)
        finally:
            del codegen.create_library


def _jit(defaults: dict, args, opts: dict):
    for k, v in defaults.items():
        opts.setdefault(k, v)
    if opts.get("parallel") and "pipeline_class" not in opts:
        opts["pipeline_class"] = _ParallelCompiler
    arrays = opts.pop("arrays", None)
    cache = opts.pop("cache", False)    # (Numba's would make its cache now: ``_cached``)

    def made_of(disp):
        if cache:
            disp = _cached(disp)
        return disp if arrays is None else _any_layout(disp, arrays)
    if args and callable(args[0]):          # bare ``@njit``
        return made_of(_numba_njit(args[0], **opts))
    made = _numba_njit(*args, **opts)
    return lambda fn: made_of(made(fn))


_KERNEL = {"no_cfunc_wrapper": True}


def njit(*args, **opts):
    """Numba's ``njit`` without the C-callable wrapper (and with ``arrays``: see the module
    docstring)."""
    return _jit(_KERNEL, args, opts)


class _HelperDispatcher(CPUDispatcher):
    """A dispatcher compiled without a Python entry point: called from Python, it refuses."""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.py_func.__qualname__} is a kernel helper: it is called only "
                        f"from other compiled kernels")


class _HelperLibrary(JITCodeLibrary):
    """A helper's code library: finalising it makes no machine code for its functions.

    A helper's code only ever runs linked into its callers' modules (from this library, or
    from the module a disk-cache entry keeps), where LLVM inlines it and makes machine code
    for the whole.  Numba's finalising would also make machine code for the helper alone,
    which nothing calls.  This one links the helper's callees in and optimises the module (Numba's
    ``finalize``: callers link the very same code), keeps that for linking, and hands the JIT
    engine only the module's execution-environment pointers (which Numba sets on compiling
    and loading, and which the disk cache's object code must hold)."""

    def _finalize_final_module(self):
        # (called by Numba's ``finalize`` once the module is linked, optimised and verified)
        envs = "".join(f'@"{g.name}" = common global i8* null\n'
                       for g in self._final_module.global_variables
                       if g.name.startswith("_ZN08NumbaEnv"))
        if envs:    # (Numba's lowering always emits one; without, finalise as Numba does)
            self._finalize_dynamic_globals()
            self._finalized = True      # (Numba's linkable copy: exports made linkonce_odr)
            self._shared_module = JITCodeLibrary._get_module_for_linking(self)
            self._finalized = False
            self._final_module = _ll.parse_assembly(envs)
            self._final_module.name = self.name
        super()._finalize_final_module()

    def get_function(self, name):
        # (the functions live on in the module kept for linking)
        if self._shared_module is not None:
            return self._shared_module.get_function(name)
        return super().get_function(name)


class _HelperCompiler(Compiler):
    """Numba's pipeline with a helper library to lower into."""

    def compile_extra(self, func):
        if self.state.library is None:
            lib = self.state.targetctx.codegen().create_library(func.__qualname__)
            lib.__class__ = _HelperLibrary  # (same fields: only finalising changes)
            lib.enable_object_caching()
            self.state.library = lib
        return super().compile_extra(func)


_HELPER = {"no_cfunc_wrapper": True, "no_cpython_wrapper": True, "cache": True,
           "pipeline_class": _HelperCompiler}


def _as_helper(disp):
    disp.__class__ = _HelperDispatcher      # (same layout: only the Python call changes)
    return disp


def helper(*args, **opts):
    """Numba's ``njit`` for a function only other kernels call: no C-callable wrapper and no
    Python entry point."""
    if "arrays" in opts:
        raise TypeError("helper: 'arrays' is an option of kernels called from Python (njit)")
    made = _jit(_HELPER, args, opts)
    if isinstance(made, CPUDispatcher):
        return _as_helper(made)
    return lambda fn: _as_helper(made(fn))
