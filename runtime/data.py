"""``rt.data``: ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split`` and ``DataLoader``
(PyTorch's names and arguments; NumPy's ``Generator`` for seeded shuffling).

A ``DataLoader`` over a ``TensorDataset`` (the common case) gathers each batch with one
``take`` per tensor instead of indexing and stacking samples one by one."""
from __future__ import annotations

import queue
import threading

import numpy as np

from .core.errors import ArgumentTypeError, ArgumentValueError, ShapeError
from .ops import api
from .tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DataLoader", "default_collate"]


class Dataset:
    """Base class: ``__getitem__(i)`` returns sample ``i``; ``__len__`` the number of samples."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} defines no __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} defines no __len__")


def _as_tensor(x):
    return x if isinstance(x, Tensor) else api.tensor(np.asarray(x))


class TensorDataset(Dataset):
    """Samples are the rows of equally long tensors (or arrays): sample ``i`` is
    ``(t[i] for t in tensors)``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ArgumentValueError("TensorDataset: expected at least one tensor")
        self.tensors = tuple(_as_tensor(t) for t in tensors)
        n = self.tensors[0].shape[0] if self.tensors[0].ndim else None
        for t in self.tensors:
            if t.ndim == 0 or t.shape[0] != n:
                raise ShapeError(f"TensorDataset: every tensor needs the same first dimension, "
                                 f"got shapes {[t.shape for t in self.tensors]}")

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def _rng(generator):
    if generator is None:
        return np.random.default_rng()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, (int, np.integer)):
        return np.random.default_rng(int(generator))
    raise ArgumentTypeError(f"expected a numpy.random.Generator or an int seed, got "
                            f"{type(generator).__name__}")


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` into ``Subset``s of ``lengths`` (counts, or fractions summing to 1)."""
    n = len(dataset)
    lengths = list(lengths)
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-9:
        counts = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ArgumentValueError(f"random_split: the lengths sum to {sum(lengths)}, the dataset "
                                 f"has {n} samples")
    perm = _rng(generator).permutation(n)
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out


def default_collate(samples):
    """Stack samples into a batch: tensors with ``rt.stack``, arrays and numbers into a tensor,
    tuples/lists and dicts field by field."""
    first = samples[0]
    if isinstance(first, Tensor):
        return api.stack(list(samples))
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate([s[i] for s in samples]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    return api.tensor(np.stack([np.asarray(s) for s in samples]))


class DataLoader:
    """Batches of ``dataset``: ``batch_size``, ``shuffle`` (a new permutation each epoch from
    ``generator``: a ``numpy.random.Generator`` or an int seed, so a seed fixes the order of
    every epoch), ``drop_last``, ``collate_fn``, ``prefetch`` (batches made ahead by a
    background thread; 0: none) and ``sampler`` (an iterable of indices with a ``len``, such as
    ``rt.distributed.DistributedSampler``, instead of ``shuffle``)."""

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 collate_fn=None, generator=None, prefetch: int = 0, sampler=None):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ArgumentValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if prefetch < 0:
            raise ArgumentValueError(f"DataLoader: prefetch must be >= 0, got {prefetch}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.collate_fn, self.prefetch = drop_last, collate_fn, int(prefetch)
        if sampler is not None and shuffle:
            raise ArgumentValueError("DataLoader: sampler and shuffle=True are mutually exclusive "
                                     "(the sampler decides the order)")
        self.sampler = sampler
        self._rng = _rng(generator) if shuffle else None

    def __len__(self) -> int:
        n = len(self.dataset) if self.sampler is None else len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self):
        if self.sampler is not None:
            order = np.fromiter(iter(self.sampler), np.int64)
            n = order.size
        else:
            n = len(self.dataset)
            order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        stop = n - n % self.batch_size if self.drop_last else n
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is None
        for start in range(0, stop, self.batch_size):
            idx = order[start:start + self.batch_size]
            if fast:
                it = api.tensor(idx.astype(np.int64), device=self.dataset.tensors[0].device)
                yield tuple(api.take(t, it, axis=0) for t in self.dataset.tensors)
            else:
                samples = [self.dataset[int(i)] for i in idx]
                yield (self.collate_fn or default_collate)(samples)

    def __iter__(self):
        if not self.prefetch:
            return self._batches()
        return _prefetched(self._batches(), self.prefetch)


_DONE = object()


def _prefetched(batches, depth):
    """Run the generator ``batches`` in a daemon thread, up to ``depth`` batches ahead; an
    exception in it is raised in the consumer."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work():
        try:
            for b in batches:
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_DONE)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            q.put(exc)

    t = threading.Thread(target=work, daemon=True, name="rt-data-prefetch")
    t.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
