"""Compile an expensive kernel module in a child process while a slower kernel serves the calls.

Numba compiles under one process-wide lock, so a compile on a background *thread* would stall
every other first call of the process behind it.  A child process compiles on another core
instead and leaves the machine code in the disk cache; the parent loads it from there in
milliseconds once the child is done.  Used for the packed gemm (``matmul.py``), whose
micro-kernel and drivers take 10-12 s to compile from cold and which a bitwise-identical,
cheaper kernel can stand in for meanwhile.

A build is named by its generated module; ``<cache dir>/<name>.ready`` records that it is in
the disk cache (its text is Numba's cache directory, so moving that cache invalidates it) and
``<name>.building`` holds the pid of the process building it, so two processes on one machine
(say two test runs) start one child between them.  A child outlives its parent: the build it
finishes serves the next process.  ``JIT_KERNELS_BACKGROUND_COMPILE=0`` (and platforms without
``os.posix_spawn``) compile in the calling thread instead.
"""
from __future__ import annotations

import os
import sys
import threading

from jit_kernels import codegen

ENABLED = (os.environ.get("JIT_KERNELS_BACKGROUND_COMPILE", "1") != "0"
           and hasattr(os, "posix_spawn"))

_LOCK = threading.Lock()
_CHILDREN: dict = {}  # name -> pid of the child this process started


def _path(name: str, ext: str) -> str:
    return os.path.join(codegen.cache_dir(), name + ext)


def _token() -> str:
    import numba
    return "numba cache: " + (numba.config.CACHE_DIR or "beside the module")


def is_ready(name: str) -> bool:
    """Whether ``name`` was built into the disk cache this process uses."""
    try:
        with open(_path(name, ".ready")) as f:
            return f.read() == _token()
    except OSError:
        return False


def mark_ready(name: str) -> None:
    """Record that ``name``'s kernels are in the disk cache (after a successful build)."""
    path = _path(name, ".ready")
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(_token())
        os.replace(tmp, path)
    except OSError:  # a read-only cache: later processes build again, nothing worse
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(name: str) -> bool:
    """Take the ``.building`` lock for this process; False when a live process holds it."""
    path = _path(name, ".building")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    pid = int(f.read() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and _alive(pid):
                return False
            try:  # a stale lock (its process died): take it over
                os.unlink(path)
            except OSError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _spawn(name: str, module: str, func: str, arg: str) -> int | None:
    """Start ``python -c "from module import func; func(arg)"`` with this process's caches;
    its output goes to ``<name>.log``.  None when it could not be started."""
    import numba
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(codegen.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["JIT_KERNELS_CACHE_DIR"] = codegen.cache_dir()
    env["JIT_KERNELS_BACKGROUND_COMPILE"] = "0"
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    code = (f"import os, sys; from {module} import {func} as f; f(sys.argv[1]); "
            f"os.unlink(sys.argv[2])")
    log = _path(name, ".log")
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    try:
        return os.posix_spawn(sys.executable,
                              [sys.executable, "-c", code, arg, _path(name, ".building")],
                              env, file_actions=actions)
    except OSError:
        return None


def poll(name: str, module: str, func: str, arg: str) -> bool:
    """True while a background build of ``name`` is under way (started here on the first call,
    unless another process is already building it); False once there is none: the build is in
    the cache, or failed, and the caller builds (or loads) it in the calling thread."""
    if is_ready(name):
        return False
    with _LOCK:
        pid = _CHILDREN.get(name)
        if pid is None:
            if not _claim(name):
                return True  # another process builds it; its .ready marker tells us when
            pid = _spawn(name, module, func, arg)
            if pid is None:
                _release(name)
                _CHILDREN[name] = -1
                return False
            _CHILDREN[name] = pid
            try:  # the lock names the child: it stays valid after this process exits
                with open(_path(name, ".building"), "w") as f:
                    f.write(str(pid))
            except OSError:
                pass
            return True
        if pid < 0:
            return False
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            return True
        _CHILDREN[name] = -1
        _release(name)  # the child removes it on success; not when it failed
        return False


def wait(name: str) -> None:
    """Block until a background build of ``name`` started by this process has ended."""
    with _LOCK:
        pid = _CHILDREN.get(name)
        if pid is None or pid < 0:
            return
        os.waitpid(pid, 0)
        _CHILDREN[name] = -1
        _release(name)


def _release(name: str) -> None:
    try:
        os.unlink(_path(name, ".building"))
    except OSError:
        pass
