"""Build expensive kernels in a background worker process while cheaper ones serve the calls.

Numba compiles under one process-wide lock, so a compile on a background *thread* would stall
every other first call of the process behind it.  A worker *process* compiles on another core
instead and leaves the machine code in the disk cache; the parent loads it from there in
milliseconds once it is done.  Three kinds of job use it, each with a stand-in that gives the
same bits meanwhile:

- the packed gemm's drivers (``matmul.py``; a long compile from cold): the blocked kernel
  stands in (for the Winograd conv ``wino_fwd``, its serial twin);
- the conv weight gradient's dot products (``matmul.dot_now``): the serial ``conv_wdot_loop``
  stands in;
- the ``prange`` variant of a kernel whose serial variant computes each output element the
  same way (elementwise, copy, take, scan, 2x2 max pool, conv layout, row reduction and fused
  flat kernels; ``parallel_ready``; each compile mostly Numba's parfor passes): the serial
  variant stands in.

A job is named; ``<cache dir>/<name>.ready`` records that it is in the disk cache (its text
names Numba's cache directory, so moving that cache invalidates it), ``<name>.failed`` that it
failed (the worker's output is in ``_worker.log``), ``<name>.building`` holds the pid of the
worker building it, so processes on one machine (two test runs, say) build it once between them.
The worker reads jobs from a pipe, builds those it has received with a slow stand-in (the
first two kinds) before the deferred ``prange`` variants, and exits when the parent has gone and
the queue is empty, so what it finishes serves the next process.  ``JIT_KERNELS_BACKGROUND_COMPILE=0`` (and
platforms without ``os.posix_spawn``) build everything in the calling thread instead.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time

from jit_kernels import codegen

ENABLED = (os.environ.get("JIT_KERNELS_BACKGROUND_COMPILE", "1") != "0"
           and hasattr(os, "posix_spawn"))
_RECHECK_S = 0.02  # how often a pending job's marker is looked at

_LOCK = threading.RLock()
_worker = None                # (owner pid, worker pid, pipe write fd); False: it failed
_PENDING: dict = {}           # job name -> monotonic time of the last marker check
_JOBS: dict = {}              # job name -> job (what the worker is sent)
_SENT: dict = {}              # job name -> how often it was sent
_DONE: set = set()            # jobs known to be finished (ready or failed) or never to be run
_READY_FNS: set = set()       # prange kernels that may be called now
_FN_JOBS: dict = {}           # prange kernel -> (job name, job)


def _path(name: str, ext: str) -> str:
    return os.path.join(codegen.cache_dir(), name + ext)


def _token() -> str:
    import numba
    return "numba cache: " + (numba.config.CACHE_DIR or "beside the module")


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def is_ready(name: str) -> bool:
    """Whether job ``name`` was built into the disk cache this process uses."""
    return _read(_path(name, ".ready")) == _token()


def _write(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:  # a read-only cache: later processes build again, nothing worse
        pass


def mark_ready(name: str) -> None:
    """Record that job ``name``'s kernels are in the disk cache (after a successful build)."""
    _write(_path(name, ".ready"), _token())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(name: str) -> int:
    """The pid of the live process building ``name``, or 0."""
    try:
        pid = int(_read(_path(name, ".building")) or 0)
    except ValueError:
        pid = 0
    return pid if pid and _alive(pid) else 0


def _start_worker():
    """Spawn this process's worker (``_worker_main``), which reads jobs from
    a pipe, with this process's caches and package; None when it cannot be started."""
    import numba
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(codegen.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["JIT_KERNELS_CACHE_DIR"] = codegen.cache_dir()
    env["JIT_KERNELS_BACKGROUND_COMPILE"] = "0"
    # the worker compiles for this process's codegen (its cache entries serve only that one)
    from jit_kernels.cpu._host import _target
    feats = _target()[1]
    if feats:
        env["NUMBA_CPU_FEATURES"] = feats
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    else:
        env.pop("NUMBA_CACHE_DIR", None)
    r, w = os.pipe()
    log = _path("_worker", ".log")
    actions = [(os.POSIX_SPAWN_DUP2, r, 0),
               (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", _WORKER_CODE], env,
                             file_actions=actions)
    except OSError:
        os.close(w)
        return None
    finally:
        os.close(r)
    return (os.getpid(), pid, w)


_WORKER_CODE = "from jit_kernels.cpu._background import _worker_main; _worker_main()"


def _worker_alive() -> bool:
    """Whether this process's worker runs; one that exited while its parent lives has failed
    (it only ends when the pipe closes), and no other is started."""
    global _worker
    if not _worker or _worker[0] != os.getpid():  # none, failed, or inherited across a fork
        return False
    done, _ = os.waitpid(_worker[1], os.WNOHANG)
    if done:
        os.close(_worker[2])
        _worker = False
        return False
    return True


def _send(name: str, job: dict) -> bool:
    global _worker
    if _worker is None:
        _worker = _start_worker() or False
    if not _worker_alive():
        return False
    _write(_path(name, ".building"), str(_worker[1]))
    _SENT[name] = _SENT.get(name, 0) + 1
    try:
        os.write(_worker[2], (json.dumps(dict(job, name=name)) + "\n").encode())
    except OSError:
        return False
    return True


def submit(name: str, job: dict) -> bool:
    """True while job ``name`` is under way in the background (sent to this process's worker on
    the first call, unless a live process is already building it); False once it is not: it is
    in the cache, or failed, or cannot be run, and the caller builds (or loads) it itself."""
    if not ENABLED or name in _DONE:
        return False
    with _LOCK:
        now = time.monotonic()
        last = _PENDING.get(name)
        if last is not None and now - last < _RECHECK_S:
            return True
        if is_ready(name) or os.path.exists(_path(name, ".failed")):
            _PENDING.pop(name, None)
            _DONE.add(name)
            return False
        _JOBS.setdefault(name, job)
        # first call here, or its builder died without a result: (re)send it to our worker,
        # once more at most
        if not _holder(name) and (_SENT.get(name, 0) >= 2 or not _send(name, _JOBS[name])):
            _PENDING.pop(name, None)
            _DONE.add(name)
            return False
        _PENDING[name] = now
        return True


def wait(name: str | None = None, timeout: float = 300.0) -> None:
    """Block until job ``name`` (every job this process sent, when None) has finished."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with _LOCK:
            busy = [n for n in ([name] if name is not None else list(_PENDING)) if n in _PENDING]
            for n in busy:
                _PENDING[n] = 0.0  # look at its markers now
            if not any([submit(n, _JOBS[n]) for n in busy]):
                return
        time.sleep(0.02)


def parallel_ready(fn, args) -> bool:
    """Whether the ``prange`` kernel ``fn`` may be called with ``args`` now; False while its
    build runs in the worker (the caller runs the serial variant, which gives the same bits).
    Only for kernels whose serial variant computes every output the same way; also for a
    serial kernel that replaces several others whose composition gives its bits (the caller
    runs the composition meanwhile)."""
    if fn in _READY_FNS:
        return True
    got = _FN_JOBS.get(fn)
    if got is None:
        if fn.signatures or not ENABLED:  # compiled (or loaded) in this process already
            _READY_FNS.add(fn)
            return True
        import pickle

        import numba
        blob = pickle.dumps(tuple(numba.typeof(a) for a in args)).hex()
        py = fn.py_func
        name = (f"{py.__module__}.{py.__name__}."
                f"{hashlib.sha256(blob.encode()).hexdigest()[:16]}")
        job = {"compile": [py.__module__, py.__name__, blob]}
        src = getattr(sys.modules.get(py.__module__), "__file__", None)
        if src and not py.__module__.startswith("_jkgen_"):  # where its package root is
            root = os.path.dirname(os.path.abspath(src))
            for _ in range(py.__module__.count(".")):
                root = os.path.dirname(root)
            job["path"] = root
        got = _FN_JOBS[fn] = (name, job)
    if submit(*got):
        return False
    _READY_FNS.add(fn)
    return True


def _run_job(job: dict) -> None:
    import importlib
    import pickle
    if job.get("path") and job["path"] not in sys.path:  # a module outside the package
        sys.path.insert(0, job["path"])
    if "call" in job:
        module, func, arg = job["call"]
        getattr(importlib.import_module(module), func)(arg)
    else:
        module, func, blob = job["compile"]
        mod = (codegen.import_generated(module) if module.startswith("_jkgen_")
               else importlib.import_module(module))
        getattr(mod, func).compile(pickle.loads(bytes.fromhex(blob)))


def _next_job(queue: list) -> dict:
    """The job to build next: the first ``call`` job (a gemm or conv dot-product build, whose
    stand-in is several times slower) before any ``compile`` job (a deferred ``prange``
    variant, whose serial stand-in runs on one core); otherwise the first sent."""
    k = next((i for i, job in enumerate(queue) if "call" in job), 0)
    return queue.pop(k)


def _receive(fd: int, buf: bytes, queue: list, block: bool):
    """Move the jobs the parent has sent into ``queue`` (waiting for one when ``block``);
    returns the unparsed rest, and whether the pipe has closed."""
    import select
    while block or select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return buf, True
        *lines, buf = (buf + chunk).split(b"\n")
        queue += [json.loads(line) for line in lines if line.strip()]
        block = block and not queue
    return buf, False


def _worker_main() -> None:
    import traceback
    fd = sys.stdin.fileno()
    buf, closed, queue = b"", False, []
    while queue or not closed:
        if not closed:
            buf, closed = _receive(fd, buf, queue, block=not queue)
        if not queue:
            continue
        job = _next_job(queue)
        name = job["name"]
        try:
            if not is_ready(name):
                t0 = time.perf_counter()
                _run_job(job)
                mark_ready(name)
                print(f"built {name} in {time.perf_counter() - t0:.2f} s", flush=True)
        except Exception:
            text = traceback.format_exc()
            print(f"FAILED {name}\n{text}", flush=True)
            _write(_path(name, ".failed"), text)
        finally:
            try:
                os.unlink(_path(name, ".building"))
            except OSError:
                pass
