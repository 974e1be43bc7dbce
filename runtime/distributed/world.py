"""The MPI world: ``init``, ``rank``, ``world_size``, ``barrier``, ``finalize``, ``info``, and the
bounded wait every collective uses (a timeout instead of a hang).

mpi4py is imported by ``init()`` (importing it initializes MPI), never when ``runtime`` is
imported.  Under ``mpiexec``/``mpirun`` the world is the launched ranks; under a plain
``python`` it is a world of one (MPI's singleton init).
"""
from __future__ import annotations

import os
import sys
import time
import traceback

from ..core.errors import DistributedError, DistributedTimeoutError

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "finalize", "info",
           "set_timeout", "get_timeout"]

DEFAULT_TIMEOUT = 300.0          # seconds; $RT_DISTRIBUTED_TIMEOUT overrides


class _World:
    """The one piece of module state: the MPI module and communicator once initialized."""

    def __init__(self):
        self.MPI = None
        self.comm = None
        self.finalized = False
        self.timeout = float(os.environ.get("RT_DISTRIBUTED_TIMEOUT", DEFAULT_TIMEOUT))
        self.hook_installed = False


_world = _World()


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise DistributedError(f"rt.distributed needs mpi4py and an MPI library: pip install "
                               f"'numba-tensor-runtime[distributed]' (mpi4py mpich); {exc}") from None
    return MPI


def init(timeout: float | None = None, abort_on_exception: bool = True):
    """Join the MPI world (idempotent): the ranks ``mpiexec`` launched, or a world of one under
    a plain ``python``.  ``timeout`` (seconds) bounds every collective's wait;
    ``abort_on_exception`` makes an uncaught exception on any rank abort every rank
    (``MPI_Abort``) instead of leaving the others waiting.  Returns the communicator."""
    if timeout is not None:
        set_timeout(timeout)
    if _world.comm is not None:
        return _world.comm
    if _world.finalized:
        raise DistributedError("rt.distributed.init: MPI was finalized in this process; MPI "
                               "cannot be initialized twice (start a new process)")
    MPI = _import_mpi()
    if MPI.Is_finalized():
        raise DistributedError("rt.distributed.init: MPI was finalized in this process")
    if not MPI.Is_initialized():
        MPI.Init_thread()
    _world.MPI = MPI
    _world.comm = MPI.COMM_WORLD
    if abort_on_exception and not _world.hook_installed and _world.comm.Get_size() > 1:
        _install_abort_hook()
    return _world.comm


def is_initialized() -> bool:
    """True between ``init()`` and ``finalize()``."""
    return _world.comm is not None


def comm():
    """The world communicator (``init()`` first if needed)."""
    c = _world.comm
    return c if c is not None else init()


def mpi():
    """The ``mpi4py.MPI`` module (``init()`` first if needed)."""
    if _world.MPI is None:
        init()
    return _world.MPI


def rank() -> int:
    """This process's rank, 0 .. world_size() - 1."""
    return comm().Get_rank()


def world_size() -> int:
    """The number of ranks (1 under a plain ``python``)."""
    return comm().Get_size()


def set_timeout(seconds: float) -> None:
    """Bound every later collective's wait to ``seconds`` (``DistributedTimeoutError`` past it)."""
    seconds = float(seconds)
    if not seconds > 0:
        raise DistributedError(f"rt.distributed: the timeout must be > 0 seconds, got {seconds}")
    _world.timeout = seconds


def get_timeout() -> float:
    """The current collective timeout in seconds."""
    return _world.timeout


def wait(request, op: str) -> None:
    """Complete the non-blocking ``request`` of collective ``op``, or raise
    ``DistributedTimeoutError`` after the timeout.  Polls like MPI's own blocking wait (MPICH
    progresses a transfer only inside MPI calls), yielding the core every 256 polls (a rank
    sharing a core with its peer would otherwise spin away the peer's time slice; yielding at
    every poll costs bandwidth on large messages)."""
    if request.Test():
        return
    now = time.monotonic
    deadline = now() + _world.timeout
    test, yld = request.Test, os.sched_yield
    n = 0
    while not test():
        n += 1
        if n & 255 == 0:
            t = now()
            if t > deadline:
                raise timeout_error(op)
            yld()                      # now and then: a peer sharing this core gets to run


def wait_all(requests, op: str) -> None:
    """``wait`` for every request in ``requests``."""
    for r in requests:
        wait(r, op)


def timeout_error(op: str) -> DistributedTimeoutError:
    c = _world.comm
    r, n = (c.Get_rank(), c.Get_size()) if c is not None else (0, 1)
    return DistributedTimeoutError(
        f"{op}: rank {r} of {n} waited {_world.timeout:g} s for the other ranks; a rank failed, "
        f"diverged (took another code path, or stopped) or is far slower. The MPI world is unusable "
        f"now: end the job (an uncaught error aborts every rank); raise the limit with "
        f"rt.distributed.set_timeout() or $RT_DISTRIBUTED_TIMEOUT if the ranks are just slow")


def barrier() -> None:
    """Wait until every rank has called ``barrier()`` (bounded by the timeout)."""
    wait(comm().Ibarrier(), "barrier")


def finalize() -> None:
    """Leave the MPI world (idempotent; MPI cannot be initialized again in this process)."""
    if _world.comm is None:
        return
    MPI = _world.MPI
    _world.comm = None
    _world.finalized = True
    if not MPI.Is_finalized():
        MPI.Finalize()


def info() -> dict:
    """What the world runs on: rank, world size, MPI library, thread level, whether the MPI is
    CUDA-aware, and how cuda tensors travel (``"direct"`` or ``"host staging"``)."""
    c = comm()
    MPI = _world.MPI
    aware = cuda_aware()
    levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
              MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    return {"rank": c.Get_rank(), "world_size": c.Get_size(),
            "mpi_library": MPI.Get_library_version().strip().splitlines()[0],
            "mpi_version": "%d.%d" % MPI.Get_version(),
            "thread_level": levels.get(MPI.Query_thread(), "?"),
            "processor": MPI.Get_processor_name(),
            "cuda_aware": aware, "cuda_path": "direct" if aware else "host staging",
            "cpu_path": "direct (the tensor's buffer; no host copy)",
            "timeout_s": _world.timeout}


def cuda_aware() -> bool:
    """True when the MPI library says it takes CUDA device buffers (MPIX_Query_cuda_support)."""
    MPI = mpi()
    q = getattr(MPI, "Query_cuda_support", None)
    try:
        return bool(q()) if q is not None else False
    except Exception:  # the library has no such query: assume not
        return False


#: seconds an aborting rank waits after printing its error, before MPI_Abort
ABORT_GRACE_S = 0.5


def _install_abort_hook() -> None:
    """An uncaught exception on one rank aborts every rank (after printing it with the rank),
    so the others never wait for a rank that is gone."""
    previous = sys.excepthook

    def hook(etype, value, tb):
        c = _world.comm
        try:
            traceback.print_exception(etype, value, tb)
            if c is not None:
                sys.stderr.write(f"rt.distributed: rank {c.Get_rank()} of {c.Get_size()} raised "
                                 f"{etype.__name__}: {value}; aborting every rank (MPI_Abort)\n")
            sys.stderr.flush()
        finally:
            if c is not None and c.Get_size() > 1:
                # mpiexec relays each rank's output through its proxies, which the abort
                # tears down: without a pause the message was sometimes cut after its first
                # line (1 run in 6 of tests/distributed/test_divergence.py)
                time.sleep(ABORT_GRACE_S)
                c.Abort(1)
            previous(etype, value, tb)

    sys.excepthook = hook
    _world.hook_installed = True
