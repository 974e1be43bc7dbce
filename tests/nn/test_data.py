"""rt.data: datasets, batching, seeded shuffling, prefetching."""
import numpy as np
import pytest

import runtime as rt
from runtime.data import DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split

X = np.arange(20, dtype=np.float32).reshape(10, 2)
Y = np.arange(10)


def _rows(loader):
    return [tuple(t.numpy().tolist() for t in batch) for batch in loader]


def test_batches_in_order_with_and_without_drop_last():
    ds = TensorDataset(X, Y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), Y)
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].shape for b in DataLoader(ds, batch_size=4, drop_last=True)] == [(4,), (4,)]


def test_shuffle_is_reproducible_per_seed_and_differs_per_epoch():
    ds = TensorDataset(X, Y)
    a, b = DataLoader(ds, 3, shuffle=True, generator=5), DataLoader(ds, 3, shuffle=True, generator=5)
    ea1, ea2 = _rows(a), _rows(a)
    assert ea1 == _rows(b) and ea2 == _rows(b)
    assert ea1 != ea2
    seen = sorted(y for batch in ea1 for y in batch[1])
    assert seen == list(range(10))
    assert _rows(DataLoader(ds, 3, shuffle=True, generator=6)) != ea1


class Squares(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.array([i, i * i], np.float32), "y": i}


def test_generic_dataset_collates_dicts_and_custom_collate():
    batches = list(DataLoader(Squares(), batch_size=2))
    assert batches[0]["x"].numpy().tolist() == [[0, 0], [1, 1]] and batches[2]["y"].numpy().tolist() == [4]
    total = list(DataLoader(Squares(), batch_size=5, collate_fn=lambda s: sum(d["y"] for d in s)))
    assert total == [10]
    stacked = default_collate([rt.ones(2), rt.zeros(2)])
    assert stacked.shape == (2, 2)


def test_prefetch_gives_the_same_batches_and_reraises():
    ds = TensorDataset(X, Y)
    assert _rows(DataLoader(ds, 3, prefetch=2)) == _rows(DataLoader(ds, 3))

    class Broken(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("sample 2 is broken")
            return np.float32(i)
    with pytest.raises(KeyError, match="sample 2 is broken"):
        list(DataLoader(Broken(), 1, prefetch=1))


def test_random_split_and_subset():
    parts = random_split(TensorDataset(X, Y), [0.7, 0.3], generator=0)
    assert [len(p) for p in parts] == [7, 3]
    ys = sorted(int(p[i][1].item()) for p in parts for i in range(len(p)))
    assert ys == list(range(10))
    assert len(Subset(Squares(), [4, 0])) == 2 and Subset(Squares(), [4, 0])[0]["y"] == 4
    with pytest.raises(rt.errors.ArgumentValueError, match="random_split: the lengths sum to 9"):
        random_split(TensorDataset(X, Y), [5, 4])


def test_errors():
    with pytest.raises(rt.errors.ShapeError, match="TensorDataset: every tensor needs the same first "
                                                   r"dimension, got shapes \[\(10, 2\), \(3,\)\]"):
        TensorDataset(X, np.arange(3))
    with pytest.raises(rt.errors.ArgumentValueError, match="DataLoader: batch_size must be a positive int, got 0"):
        DataLoader(TensorDataset(X), batch_size=0)
    with pytest.raises(rt.errors.ArgumentTypeError, match="expected a numpy.random.Generator or an int seed"):
        DataLoader(TensorDataset(X), shuffle=True, generator="seed")
