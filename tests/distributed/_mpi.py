"""When these tests run under ``mpiexec`` (the multi-rank files skip otherwise)."""
import os

LAUNCHED = any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
                                         "PMIX_RANK", "MPI_LOCALRANKID"))


def world_size() -> int:
    """The world size (1 when not launched by mpiexec, without importing MPI)."""
    if not LAUNCHED:
        return 1
    import runtime as rt
    return rt.distributed.world_size()
