"""``tg.utils.data`` against PyTorch's ``torch.utils.data``: the same batches (values,
dtypes, structure) from the same datasets, the same lengths and errors; shuffling is a
reproducible permutation per epoch (NumPy's draws, so not PyTorch's order)."""
import collections
import subprocess
import sys

import numpy as np
import pytest
from tracegrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    random_split,
)

import tracegrad as tg

torch = pytest.importorskip("torch")
tud = torch.utils.data

Point = collections.namedtuple("Point", "x y")


def _as_numpy(batch):
    """A batch as nested Python/NumPy (tensors → (dtype name, array))."""
    if hasattr(batch, "detach"):
        arr = batch.detach().numpy()
        return (str(arr.dtype), arr.tolist())
    if isinstance(batch, dict):
        return {k: _as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return (type(batch).__name__, [_as_numpy(v) for v in batch])
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [_as_numpy(v) for v in batch])
    return batch


class Samples:
    """A map-style dataset (no base class: duck typing, as PyTorch accepts) of samples
    made by ``make(i)``."""

    def __init__(self, n, make):
        self.n, self.make = n, make

    def __getitem__(self, i):
        return self.make(i)

    def __len__(self):
        return self.n


SAMPLES = {
    "float": lambda i: 0.5 * i,
    "int": lambda i: i,
    "bool": lambda i: i % 2 == 0,
    "numpy-f32": lambda i: np.arange(3, dtype=np.float32) * i,
    "numpy-int32": lambda i: np.full((2, 2), i, dtype=np.int32),
    "numpy-scalar": lambda i: np.float32(i) / 3,
    "tuple": lambda i: (np.ones(2) * i, i, 0.25 * i),
    "list": lambda i: [i, float(i)],
    "dict": lambda i: {"x": np.arange(2.0) + i, "label": i, "name": f"s{i}"},
    "nested": lambda i: {"pair": (i, {"deep": np.int64(i)}), "strs": ["a", "b"]},
    "namedtuple": lambda i: Point(np.float64(i), [i, i + 1]),
    "string": lambda i: "abc"[i % 3],
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collation_matches_torch(kind):
    make = SAMPLES[kind]
    ours = list(DataLoader(Samples(7, make), batch_size=3))
    theirs = list(tud.DataLoader(Samples(7, make), batch_size=3))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert _as_numpy(a) == _as_numpy(b)


def test_tensor_samples_and_no_batching_match_torch():
    x = np.arange(12.0).reshape(6, 2)
    y = np.arange(6)
    ours = TensorDataset(tg.tensor(x, dtype=tg.float64), tg.tensor(y))
    theirs = tud.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == 6
    for kwargs in (dict(batch_size=4), dict(batch_size=4, drop_last=True),
                   dict(batch_size=None), dict(batch_size=1)):
        a, b = list(DataLoader(ours, **kwargs)), list(tud.DataLoader(theirs, **kwargs))
        assert len(a) == len(b) == len(DataLoader(ours, **kwargs))
        assert [_as_numpy(u) for u in a] == [_as_numpy(v) for v in b]
    # batch_size=None converts NumPy samples to tensors without batching them
    samples = Samples(3, lambda i: (np.ones(2) * i, i))
    assert _as_numpy(list(DataLoader(samples, batch_size=None))) == \
        _as_numpy(list(tud.DataLoader(samples, batch_size=None)))


def test_collate_fn_sampler_and_batch_sampler():
    data = Samples(10, lambda i: i)
    got = list(DataLoader(data, batch_size=4, collate_fn=lambda b: sum(b)))
    assert got == [6, 22, 17]
    bs = BatchSampler(SequentialSampler(range(10)), 3, drop_last=False)
    assert list(bs) == list(tud.BatchSampler(tud.SequentialSampler(range(10)), 3, False))
    assert [b.tolist() for b in DataLoader(data, batch_sampler=[[1, 2], [9]])] == [[1, 2], [9]]
    assert [b.tolist() for b in DataLoader(data, sampler=[9, 8, 7], batch_size=2)] == \
        [[9, 8], [7]]
    assert len(DataLoader(data, batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(data, batch_size=3)) == 4


def test_shuffle_is_a_reproducible_permutation_per_epoch():
    data = Samples(50, lambda i: i)

    def epochs(loader, n=3):
        return [np.concatenate([b.numpy() for b in loader]).tolist() for _ in range(n)]

    tg.manual_seed(0)
    first = epochs(DataLoader(data, batch_size=8, shuffle=True))
    tg.manual_seed(0)
    again = epochs(DataLoader(data, batch_size=8, shuffle=True))
    assert first == again
    assert all(sorted(e) == list(range(50)) for e in first)
    assert first[0] != first[1] and first[0] != list(range(50))
    g1 = epochs(DataLoader(data, batch_size=8, shuffle=True,
                           generator=tg.Generator().manual_seed(3)))
    g2 = epochs(DataLoader(data, batch_size=8, shuffle=True,
                           generator=tg.Generator().manual_seed(3)))
    assert g1 == g2 and g1 != first and sorted(g1[2]) == list(range(50))


def test_iterable_dataset_and_workers_run_in_process():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    calls = []
    loader = DataLoader(Stream(), batch_size=3, num_workers=4, worker_init_fn=calls.append)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert calls == [0] and len(loader) == 3
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    assert tg.utils.data.get_worker_info() is None


def test_subset_concat_and_random_split_match_torch():
    base = Samples(10, lambda i: i * i)
    assert [Subset(base, [3, 1, 4])[k] for k in range(3)] == [9, 1, 16]
    both = ConcatDataset([base, Samples(5, lambda i: -i)])
    theirs = tud.ConcatDataset([base, Samples(5, lambda i: -i)])
    assert len(both) == 15 and [both[i] for i in range(-15, 15)] == \
        [theirs[i] for i in range(-15, 15)]
    assert ConcatDataset([base, base])[12] == 4
    for lengths in ([3, 7], [0.5, 0.5], [0.3, 0.3, 0.4], [0.33, 0.33, 0.34], [1.0]):
        parts = random_split(base, lengths, generator=tg.Generator().manual_seed(0))
        expected = tud.random_split(base, lengths, generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in parts] == [len(p) for p in expected]
        assert sorted(i for p in parts for i in p.indices) == list(range(10))
    a = random_split(base, [5, 5], generator=tg.Generator().manual_seed(1))
    b = random_split(base, [5, 5], generator=tg.Generator().manual_seed(1))
    assert [p.indices for p in a] == [p.indices for p in b]


def _lib(module):
    return tg if module is tg.utils.data else torch


@pytest.mark.parametrize("call", [
    lambda m: m.DataLoader(Samples(3, int), sampler=[0], shuffle=True),
    lambda m: m.DataLoader(Samples(3, int), batch_sampler=[[0]], batch_size=2),
    lambda m: m.DataLoader(Samples(3, int), batch_size=None, drop_last=True),
    lambda m: m.DataLoader(Samples(3, int), num_workers=-1),
    lambda m: m.random_split(Samples(3, int), [1, 1]),
    lambda m: m.TensorDataset(_lib(m).ones(2), _lib(m).ones(2), _lib(m).ones(3)),
    lambda m: list(m.DataLoader(Samples(2, lambda i: [1] * (i + 1)), batch_size=2)),
    lambda m: list(m.DataLoader(Samples(2, lambda i: object()), batch_size=2)),
], ids=["sampler-shuffle", "batch-sampler-size", "none-drop-last", "workers", "split-sum",
        "tensor-sizes", "ragged", "object"])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(tud)
    with pytest.raises(type(theirs.value)) as ours:
        call(tg.utils.data)
    assert str(ours.value).split("\n")[0][:40] == str(theirs.value).split("\n")[0][:40]


def test_dataset_base_class():
    class Squares(Dataset):
        def __getitem__(self, i):
            return float(i * i)

        def __len__(self):
            return 4

    (batch,) = DataLoader(Squares(), batch_size=4)
    assert batch.dtype == np.float64 and batch.tolist() == [0.0, 1.0, 4.0, 9.0]
    both = Squares() + Squares()
    assert isinstance(both, ConcatDataset) and len(both) == 8 and both[5] == 1.0
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_import_in_a_fresh_interpreter():
    code = ("import tracegrad.utils.data as d\n"
            "from tracegrad.utils.data import DataLoader, Dataset, TensorDataset, "
            "random_split, Subset\n"
            "from tracegrad.optim.lr_scheduler import StepLR\n"
            "import tracegrad\n"
            "assert tracegrad.utils.data.DataLoader is DataLoader is d.DataLoader\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
