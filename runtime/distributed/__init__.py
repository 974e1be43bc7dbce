"""``rt.distributed``: data-parallel training across processes on MPI (mpi4py).

``mpiexec -n 2 python train.py``; in it ``rt.distributed.init()`` (idempotent; a world of one
under a plain ``python``), ``rank()``, ``world_size()``, ``barrier()``, ``finalize()``,
``info()``; collectives on tensors of any plain device (``all_reduce``, ``broadcast``,
``all_gather``, ``reduce_scatter``, ``send``/``recv``); ``DistributedDataParallel``,
``average_gradients`` and ``DistributedSampler``.  Needs the ``distributed`` extra; importing
this package imports no MPI (``init()`` does).
"""
from .collectives import REDUCE_OPS, Work, all_gather, all_reduce, broadcast, recv, reduce_scatter, send
from .ddp import DistributedDataParallel, average_gradients, broadcast_parameters, check_same_parameters
from .sampler import DistributedSampler
from .world import barrier, finalize, get_timeout, info, init, is_initialized, rank, set_timeout, world_size

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "finalize", "info",
           "set_timeout", "get_timeout", "all_reduce", "broadcast", "all_gather", "reduce_scatter",
           "send", "recv", "Work", "REDUCE_OPS", "DistributedDataParallel", "average_gradients",
           "broadcast_parameters", "check_same_parameters", "DistributedSampler"]
