"""``default_collate`` and ``DataLoader(batch_size, shuffle=False)`` against torch's, on
generated nested batches.

A seeded generator draws a sample structure (dicts, OrderedDicts, defaultdicts, named
tuples, tuples, lists, nested) whose leaves are Python ints, floats and bools, strings,
bytes, NumPy scalars and arrays (numeric and strings), tensors and None; each sample of a
batch instantiates it, sometimes with another kind of number at a leaf (``[1, 2.5]``), a
leaf of another shape or a sequence of another length. Both libraries collate the same
samples: the result must have torch's structure (container classes, keys and order), and
its tensors torch's dtype, shape and values; where torch raises, tracegrad raises the same
exception type with torch's message.

A new leaf kind or container is one entry of ``LEAVES`` / ``CONTAINERS``.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader as TorchLoader  # noqa: E402
from torch.utils.data import default_collate as torch_collate  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


class _T:
    """A tensor leaf, made by each library from the same array."""
    def __init__(self, array):
        self.array = array


# leaf kind -> a value drawn with rng (the same kind in every sample unless mixed)
LEAVES = {
    "int": lambda rng: int(rng.integers(-3, 4)),
    "float": lambda rng: float(rng.integers(-4, 5)) / 2,
    "bool": lambda rng: bool(rng.integers(2)),
    "str": lambda rng: "ab"[rng.integers(2)] * int(rng.integers(1, 3)),
    "bytes": lambda rng: b"xy"[: int(rng.integers(1, 3))],
    "np.float32": lambda rng: np.float32(rng.integers(5) / 4),
    "np.float64": lambda rng: np.float64(rng.integers(5) / 4),
    "np.int64": lambda rng: np.int64(rng.integers(5)),
    "np.int32": lambda rng: np.int32(rng.integers(5)),
    "np.bool_": lambda rng: np.bool_(rng.integers(2)),
    "array float32": lambda rng: rng.random(2).astype(np.float32),
    "array int64 2x2": lambda rng: rng.integers(0, 5, (2, 2)),
    "array float64 0-d": lambda rng: np.array(rng.random()),
    "array uint8": lambda rng: rng.integers(0, 5, 3).astype(np.uint8),
    "array str": lambda rng: np.array(["a", "b"]),
    "tensor float32": lambda rng: _T(rng.random(2).astype(np.float32)),
    "tensor int64 0-d": lambda rng: _T(np.array(rng.integers(5))),
    "tensor bool": lambda rng: _T(rng.integers(0, 2, 2).astype(bool)),
    "tensor float64 2x1": lambda rng: _T(rng.random((2, 1))),
    "None": lambda rng: None,
}
_NUMBERS = ["int", "float", "bool", "np.float32", "np.int64", "np.float64", "np.bool_"]
_ARRAYS = ["array float32", "array int64 2x2", "array float64 0-d", "array uint8"]
_TENSORS = ["tensor float32", "tensor int64 0-d", "tensor bool", "tensor float64 2x1"]
CONTAINERS = ["dict", "OrderedDict", "defaultdict", "Point", "tuple", "list"]


def _spec(rng, depth=0):
    """A sample structure: a leaf kind, or (container, children)."""
    if depth >= 2 or rng.random() < 0.45:
        return list(LEAVES)[rng.integers(len(LEAVES))] if rng.random() < 0.15 else \
            [*_NUMBERS, *_ARRAYS, *_TENSORS, "str"][rng.integers(16)]
    kind = CONTAINERS[rng.integers(len(CONTAINERS))]
    n = 2 if kind == "Point" else int(rng.integers(1, 4))
    return (kind, [_spec(rng, depth + 1) for _ in range(n)])


def _mixed(rng, kind):
    """Now and then another kind of the same family at a leaf of one sample."""
    if rng.random() < 0.12:
        for family in (_NUMBERS, _ARRAYS, _TENSORS):
            if kind in family:
                return family[rng.integers(len(family))]
    return kind


def _sample(rng, spec):
    if isinstance(spec, str):
        return LEAVES[_mixed(rng, spec)](rng)
    kind, children = spec
    if kind in ("tuple", "list") and rng.random() < 0.04:
        children = children[:-1] or children * 2            # another length
    values = [_sample(rng, c) for c in children]
    keys = [f"k{i}" for i in range(len(values))]
    if kind == "dict":
        return dict(zip(keys, values))
    if kind == "OrderedDict":
        return collections.OrderedDict(zip(reversed(keys), values))
    if kind == "defaultdict":
        return collections.defaultdict(int, zip(keys, values))
    if kind == "Point":
        return Point(*values)
    return tuple(values) if kind == "tuple" else values


def _to(L, value):
    """The sample in library ``L`` (its tensors)."""
    if isinstance(value, _T):
        return L.tensor(value.array.tolist(), dtype=getattr(L, value.array.dtype.name))
    if isinstance(value, collections.defaultdict):
        return collections.defaultdict(value.default_factory,
                                       {k: _to(L, v) for k, v in value.items()})
    if isinstance(value, dict):
        return type(value)((k, _to(L, v)) for k, v in value.items())
    if isinstance(value, Point):
        return Point(*(_to(L, v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_to(L, v) for v in value)
    return value


def _batch(seed):
    rng = np.random.default_rng(seed)
    spec = _spec(rng)
    return [_sample(rng, spec) for _ in range(int(rng.integers(1, 5)))]


def _difference(want, got, where="batch"):
    if isinstance(want, torch.Tensor):
        if not isinstance(got, tg.Tensor):
            return f"{where}: {type(got).__name__} / torch Tensor"
        w = want.numpy()
        if got.dtype != w.dtype or tuple(got.shape) != w.shape:
            return f"{where}: {got.dtype}{tuple(got.shape)} / torch {w.dtype}{w.shape}"
        if not np.array_equal(got._data, w):
            return f"{where}: {got._data} / torch {w}"
        return None
    if type(want) is not type(got):
        return f"{where}: {type(got).__name__} / torch {type(want).__name__}"
    if isinstance(want, dict):
        if list(want) != list(got):
            return f"{where}: keys {list(got)} / torch {list(want)}"
        if isinstance(want, collections.defaultdict) and \
                want.default_factory is not got.default_factory:
            return f"{where}: default_factory"
        pairs = [(want[k], got[k], f"{where}[{k!r}]") for k in want]
    elif isinstance(want, (list, tuple)):
        if len(want) != len(got):
            return f"{where}: length {len(got)} / torch {len(want)}"
        pairs = [(w, g, f"{where}[{i}]") for i, (w, g) in enumerate(zip(want, got))]
    else:
        return None if want == got else f"{where}: {got!r} / torch {want!r}"
    for w, g, at in pairs:
        diff = _difference(w, g, at)
        if diff:
            return diff
    return None


def _outcome(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(), None
    except Exception as e:  # noqa: BLE001  (compared with torch's)
        return None, e


def _message(e):
    return str(e).splitlines()[0].split(" (at ")[0]


def _compare(want, want_err, got, got_err):
    if want_err is not None or got_err is not None:
        if type(want_err) is not type(got_err):
            return (f"torch {type(want_err).__name__}: {want_err} / tracegrad "
                    f"{type(got_err).__name__}: {got_err}")
        if _message(want_err) != _message(got_err):
            return f"message {_message(got_err)!r} / torch {_message(want_err)!r}"
        return None
    return _difference(want, got)


N_BATCHES = 3000
SEEDS = bounded(range(N_BATCHES), 400)


def test_default_collate_matches_torch():
    bad = []
    for seed in SEEDS:
        batch = _batch(seed)
        want, want_err = _outcome(lambda: torch_collate(_to(torch, batch)))
        got, got_err = _outcome(lambda: tg.utils.data.default_collate(_to(tg, batch)))
        diff = _compare(want, want_err, got, got_err)
        if diff:
            bad.append(f"seed {seed} {batch!r:.150}: {diff}")
    assert not bad, f"{len(bad)} of {len(SEEDS)} batches differ:\n" + "\n".join(bad[:15])


LOADER_SEEDS = bounded(range(N_BATCHES, N_BATCHES + 600), 80)


def test_dataloader_batches_match_torch():
    bad = []
    for seed in LOADER_SEEDS:
        rng = np.random.default_rng(seed)
        spec = _spec(rng)
        data = [_sample(rng, spec) for _ in range(int(rng.integers(1, 8)))]
        size = int(rng.integers(1, 4))
        drop = bool(rng.integers(2))
        want, want_err = _outcome(lambda: list(TorchLoader(
            _to(torch, data), batch_size=size, shuffle=False, drop_last=drop)))
        got, got_err = _outcome(lambda: list(tg.utils.data.DataLoader(
            _to(tg, data), batch_size=size, shuffle=False, drop_last=drop)))
        diff = _compare(want, want_err, got, got_err)
        if diff:
            bad.append(f"seed {seed} {data!r:.150}: {diff}")
    assert not bad, f"{len(bad)} of {len(LOADER_SEEDS)} loaders differ:\n" + "\n".join(bad[:15])


def test_examples_of_the_issue():
    out = tg.utils.data.default_collate([1, 2.5])
    assert out.dtype == tg.float32 and out.tolist() == [1.0, 2.5]       # torch.tensor(batch)
    out = tg.utils.data.default_collate([2.5, 1])
    assert out.dtype == tg.float64 and out.tolist() == [2.5, 1.0]
    assert tg.utils.data.default_collate([True, 2]).dtype == tg.int64
    out = tg.utils.data.default_collate([{"a": (1, 2.5)}, {"a": (3, 4)}])
    assert list(out) == ["a"] and isinstance(out["a"], list)
