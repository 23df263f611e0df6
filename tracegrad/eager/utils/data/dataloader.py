"""``DataLoader``: batches of a dataset, in order or shuffled, collated into tensors.

Everything runs in this process: ``num_workers`` (and the other multiprocessing options)
are accepted and change nothing but that ``worker_init_fn(0)`` is called once at the start
of each pass, as a single worker would; ``get_worker_info()`` answers ``None``, as in
PyTorch's main process.
"""
from __future__ import annotations

from ...generator import torch_generator
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """``None``: data loading always runs in the main process here."""
    return None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` (``None``: single samples,
    converted but not batched), ``shuffle``d by ``generator`` (default: the global one
    that ``tg.manual_seed`` seeds), or in the order of ``sampler`` / ``batch_sampler``;
    ``collate_fn`` makes a batch from a list of samples (default: ``default_collate``)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.worker_init_fn, self.generator = worker_init_fn, generator
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __iter__(self):
        # PyTorch's iterator draws a base seed for its workers from the generator first;
        # drawing it too keeps every later random number PyTorch's
        torch_generator(self.generator).random_int64(())
        if self.num_workers > 0 and self.worker_init_fn is not None:
            self.worker_init_fn(0)
        collate = self.collate_fn
        if self._iterable:
            if self.batch_size is None:
                for sample in self.dataset:
                    yield collate(sample)
                return
            batch = []
            for sample in self.dataset:
                batch.append(sample)
                if len(batch) == self.batch_size:
                    yield collate(batch)
                    batch = []
            if batch and not self.drop_last:
                yield collate(batch)
            return
        if self.batch_sampler is None:
            for i in self.sampler:
                yield collate(self.dataset[i])
            return
        getitems = getattr(self.dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            samples = getitems(indices) if getitems is not None else \
                [self.dataset[i] for i in indices]
            yield collate(samples)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
