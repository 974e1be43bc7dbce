"""``DistributedSampler``: each rank's shard of a dataset's indices, reshuffled per epoch
(PyTorch's ``torch.utils.data.DistributedSampler``; pass it as ``DataLoader(sampler=...)``)."""
from __future__ import annotations

import numpy as np

from ..core.errors import ArgumentValueError

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """Indices of ``dataset`` for rank ``rank`` of ``num_replicas`` (defaults: this process in
    the MPI world).  With ``shuffle`` every rank draws the same permutation from
    ``seed + epoch`` (call ``set_epoch(e)`` before each epoch) and takes every
    ``num_replicas``-th index from its rank on, so the shards are disjoint and together cover
    the dataset; ``drop_last=False`` pads the tail with indices from the start so every rank
    gets ``ceil(N / num_replicas)`` samples (the same number of steps everywhere), and
    ``drop_last=True`` drops the tail instead (``floor``)."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from . import world
            num_replicas = world.world_size() if num_replicas is None else num_replicas
            rank = world.rank() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ArgumentValueError(f"DistributedSampler: num_replicas must be an int >= 1, got "
                                     f"{num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ArgumentValueError(f"DistributedSampler: rank must be an int in [0, "
                                     f"{num_replicas}), got {rank!r}")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, int(seed), drop_last, 0
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s permutation (the same on every rank)."""
        self.epoch = int(epoch)

    def indices(self) -> np.ndarray:
        """This rank's indices for the current epoch (int64)."""
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > n:
            reps = -(-(self.total_size - n) // max(n, 1))
            order = np.concatenate([order] + [order] * reps)[:self.total_size]
        return order[self.rank:self.total_size:self.num_replicas].astype(np.int64)

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
