"""Load generated Python source as a real module so Numba's disk cache works for it.

Numba cannot cache functions created with ``exec`` or closures made by a factory (a fresh
process recompiles them every time).  ``load_generated_module`` writes the source to a ``.py``
file in a cache directory, keyed by a hash of the source, and imports it; Numba then caches
the module's ``cache=True`` kernels next to it (``__pycache__``) like any other file.

The directory is ``$JIT_KERNELS_CACHE_DIR`` or ``~/.cache/jit_kernels/<version-hash>``, where the
hash covers the Python/NumPy/Numba versions and the source of the ``jit_kernels`` package (the
generated files import helpers such as ``jit_kernels.cpu.scalar_math``; Numba's cache does not
notice changes to callees, so a changed package gets a fresh directory).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time

_LOCK = threading.Lock()
_MODULES: dict = {}
_CACHE_DIR: str | None = None


def _version_hash() -> str:
    import numba
    import numpy

    h = hashlib.sha256()
    h.update(f"{sys.version}|{numpy.__version__}|{numba.__version__}".encode())
    root = os.path.dirname(os.path.abspath(__file__))
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                p = os.path.join(dirpath, fn)
                h.update(os.path.relpath(p, root).encode())
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()[:16]


def cache_dir() -> str:
    """The directory generated modules are written to (created on first use)."""
    global _CACHE_DIR
    if _CACHE_DIR is None:
        d = os.environ.get("JIT_KERNELS_CACHE_DIR")
        if not d:
            d = os.path.join(os.path.expanduser("~"), ".cache", "jit_kernels", _version_hash())
        os.makedirs(d, exist_ok=True)
        _CACHE_DIR = d
    return _CACHE_DIR


def load_generated_module(source: str, name_hint: str):
    """Import ``source`` as a module from a file named after ``name_hint`` and the source's hash.

    The same source always maps to the same file (and module name), so Numba's on-disk cache
    hits in later processes.  The file is written atomically (temp file + ``os.replace``) and
    only when absent, so concurrent processes never see a partial file.
    """
    return once(_MODULES, _LOCK, module_name(source, name_hint),
                lambda name: _import_source(source, name))


def import_generated(modname: str):
    """The generated module ``modname`` whose file another process already wrote to
    ``cache_dir()`` (the background worker builds kernels of the parent's modules)."""
    path = os.path.join(cache_dir(), modname + ".py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no generated module {modname} in {cache_dir()}")
    return once(_MODULES, _LOCK, modname, lambda name: _load(name, path))


def module_name(source: str, name_hint: str) -> str:
    """The module (and file) name ``load_generated_module`` gives ``source``."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    safe = "".join(c if c.isalnum() else "_" for c in name_hint)[:80]
    return f"_jkgen_{safe}_{digest}"


def once(cache: dict, lock, key, build):
    """``cache[key]``, built by ``build(key)`` under ``lock`` by the first caller (double-checked:
    the common hit takes no lock)."""
    value = cache.get(key)
    if value is not None:
        return value
    with lock:
        value = cache.get(key)
        if value is None:
            value = build(key)
            cache[key] = value
        return value


#: how long ``build_lock`` waits for another process's build before building anyway
BUILD_LOCK_WAIT_S = 600.0


@contextlib.contextmanager
def build_lock(name: str):
    """Hold ``<cache dir>/<name>.lock`` (an exclusive ``flock``) around an expensive compile,
    so that processes sharing the disk cache (two test workers, two notebooks) build it once:
    the second waits, then loads what the first left in the cache.  Locks of different names
    never nest (a process never waits on itself).  Where ``flock`` or the file is unavailable,
    or after ``BUILD_LOCK_WAIT_S``, it builds without the lock (a duplicate build, nothing
    worse); the lock goes with the process that holds it, however it ends."""
    try:
        import fcntl
        f = open(os.path.join(cache_dir(), name + ".lock"), "a+")
    except (ImportError, OSError):
        yield
        return
    held = False
    try:
        deadline = time.monotonic() + BUILD_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        yield
    finally:
        if held:
            fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def _import_source(source: str, modname: str):
    d = cache_dir()
    path = os.path.join(d, modname + ".py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp_", suffix=".py")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(source)
            if not os.path.exists(path):
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return _load(modname, path)


def _load(modname: str, path: str):
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod
