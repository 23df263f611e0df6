"""Generated check: ``tg.save``/``tg.load`` keep the sharing of memory between tensors
as ``torch.save``/``torch.load`` do, over a table of view kinds x containers (a dict, a
nested list/tuple, an OrderedDict state dict, the view saved without its base, several
views of one base) x dtypes x which loaded tensor is written to. After loading, an
in-place write into one loaded tensor must change the others exactly as in torch (and
as in memory before saving); values, shapes and strides are compared with torch's.

Then loading stays safe with views: crafted view entries (offsets, shapes, strides,
dtypes outside their storage) and corrupted archives either load or are refused with
``UnsafeLoadError``, and a pickle placed anywhere in an archive never runs."""
import collections
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest
from conftest import bounded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.eager.serialization import UnsafeLoadError

torch = pytest.importorskip("torch")

# name -> view of a (2, 3, 4) tensor, written identically for tracegrad and torch
VIEWS = {
    "index": lambda t: t[1],
    "slice_step": lambda t: t[:, ::2, 1::2],
    "ellipsis": lambda t: t[..., 1],
    "none_index": lambda t: t[None, 1],
    "t": lambda t: t[0].t(),
    "T": lambda t: t.permute(2, 1, 0),     # torch deprecates .T beyond 2-d
    "mT": lambda t: t.mT,
    "transpose": lambda t: t.transpose(0, 2),
    "swapaxes": lambda t: t.swapaxes(0, 1),
    "permute": lambda t: t.permute(2, 0, 1),
    "movedim": lambda t: t.movedim(0, 2),
    "narrow": lambda t: t.narrow(2, 1, 2),
    "select": lambda t: t.select(1, 2),
    "unbind": lambda t: t.unbind(1)[1],
    "split": lambda t: t.split(2, dim=2)[1],
    "chunk": lambda t: t.chunk(2, dim=2)[1],
    "expand": lambda t: t[:, :1].expand(2, 5, 4),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "view": lambda t: t.view(6, 4),
    "reshape": lambda t: t.reshape(4, 6),
    "flatten": lambda t: t.flatten(),
    "unflatten": lambda t: t.unflatten(2, (2, 2)),
    "view_of_view": lambda t: t[1][1:].t()[::2],
    "detach": lambda t: t.detach(),
    "diagonal": lambda t: t.diagonal(0, 1, 2),
    "as_strided": lambda t: t.as_strided((3, 3), (1, 2), 1),
    "unfold": lambda t: t.unfold(2, 2, 1),
}
CONTAINERS = ["dict", "nested", "state_dict", "view_only", "two_views"]
DTYPES = ["float32", "float64", "int64"]
WRITES = ["base", "view"]


def _build(lib, view, container, dtype):
    """The object to save, and the paths of its tensors."""
    x = lib.arange(24, dtype=getattr(lib, dtype)).reshape(2, 3, 4)
    v = VIEWS[view](x)
    if container == "dict":
        return {"x": x, "v": v}, [("x",), ("v",)]
    if container == "nested":
        return [{"a": (x, 1.5)}, ("s", [v])], [(0, "a", 0), (1, 1, 0)]
    if container == "state_dict":
        return (collections.OrderedDict([("layer.weight", x), ("layer.view", v)]),
                [("layer.weight",), ("layer.view",)])
    if container == "view_only":
        return {"v": v}, [("v",)]
    w = x[1:]                                      # two views of one base, no base saved
    return {"w": w, "v": v}, [("w",), ("v",)]


def _at(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _roundtrip(lib, obj):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, weights_only=True) if lib is torch else lib.load(buf)


def _write(obj, paths, which):
    """Add 7 in place to the first tensor that can be written (the base, or the view)."""
    order = paths if which == "base" else paths[::-1]
    for p in order:
        t = _at(obj, p)
        try:
            t.add_(7)
            return p
        except RuntimeError:                # expanded or overlapping: refused, as torch
            continue
    return None


def _strides(t):
    """The strides of the dims longer than 1 (a dim of size 1 may have any stride)."""
    return [s for n, s in zip(t.shape, t.stride()) if n > 1]


def _snapshot(obj, paths):
    return [_np(_at(obj, p)).copy() for p in paths]


CASES = [(v, c, d, w) for v in VIEWS for c in CONTAINERS for d in DTYPES for w in WRITES]


@pytest.mark.parametrize("case", bounded(CASES, 56, key=lambda c: c[0]),
                         ids=lambda c: "-".join(c))
def test_loaded_views_share_memory_as_in_torch(case):
    view, container, dtype, which = case
    try:
        ours, paths = _build(tg, view, container, dtype)
    except (AttributeError, TypeError) as e:
        pytest.skip(f"tracegrad has no {view} view yet ({e})")
    ref, _ = _build(torch, view, container, dtype)

    # in memory: whether the view shares the base's memory as in torch (item 1's concern)
    mine_wrote = _write(ours, paths, which)
    torch_wrote = _write(ref, paths, which)
    in_memory_as_torch = mine_wrote == torch_wrote and all(
        np.array_equal(a, b) for a, b in zip(_snapshot(ours, paths), _snapshot(ref, paths))
    ) and all(_strides(_at(ours, p)) == _strides(_at(ref, p)) for p in paths)

    ours, _ = _build(tg, view, container, dtype)
    ref, _ = _build(torch, view, container, dtype)
    loaded, tloaded = _roundtrip(tg, ours), _roundtrip(torch, ref)
    for p in paths:
        a, b = _at(loaded, p), _at(tloaded, p)
        assert tuple(a.shape) == tuple(b.shape) and _np(a).dtype == _np(b).dtype
        assert np.array_equal(_np(a), _np(b)), p
        assert tuple(a.stride()) == tuple(_at(ours, p).stride()), p     # as in memory
        if in_memory_as_torch:      # as torch's, but for dims of size 1 (any stride)
            assert _strides(a) == _strides(b), p
    assert type(loaded) is type(tloaded)

    # after a write into one loaded tensor, every loaded tensor is as it is in memory
    wrote = _write(loaded, paths, which)
    mem, _ = _build(tg, view, container, dtype)
    assert _write(mem, paths, which) == wrote
    for p, a, b in zip(paths, _snapshot(loaded, paths), _snapshot(mem, paths)):
        assert np.array_equal(a, b), ("loaded and in-memory differ after the write", p)
    if in_memory_as_torch:
        assert _write(tloaded, paths, which) == wrote
        for p, a, b in zip(paths, _snapshot(loaded, paths), _snapshot(tloaded, paths)):
            assert np.array_equal(a, b), ("differs from torch after the write", p)


def test_the_issue_example_and_tied_parameters():
    x = tg.arange(6.0).reshape(2, 3)
    back = _roundtrip(tg, {"x": x, "row": x[1]})
    back["x"].add_(10)
    assert back["row"].tolist() == [13.0, 14.0, 15.0]
    back["row"][0] = -1
    assert back["x"][1, 0].item() == -1
    # tied weights in a state dict stay tied; requires_grad and Parameter survive
    lin = tg.nn.Linear(3, 3)
    lin2 = tg.nn.Linear(3, 3)
    lin2.weight = lin.weight
    sd = _roundtrip(tg, {"a": lin.state_dict(), "b": lin2.state_dict(),
                         "p": [lin.weight, lin.weight.t()]})
    with tg.no_grad():
        sd["a"]["weight"].mul_(0)
    assert float(sd["b"]["weight"].abs().sum()) == 0.0
    assert float(sd["p"][1].abs().sum()) == 0.0
    assert sd["p"][0] is not sd["a"]["weight"] and isinstance(sd["p"][0], tg.nn.Parameter)
    assert sd["p"][0].requires_grad


# -- safety ----------------------------------------------------------------------------------
class _Hostile:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _npy(arr, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def _tensor_node(view, ref=0, index=0):
    return {"t": "tensor", "ref": ref, "id": index, "view": view, "requires_grad": False}


def _archive(root, storage=None):
    storage = np.arange(6.0) if storage is None else storage
    manifest = json.dumps({"format": "tracegrad.save", "version": 2, "root": root})
    return _zip({"tracegrad/manifest.json": manifest, "tracegrad/data/0.npy": _npy(storage)})


def _load_or_refuse(data):
    """The loaded value, or None when refused with UnsafeLoadError (any other exception
    fails the test)."""
    try:
        return tg.load(io.BytesIO(data))
    except UnsafeLoadError:
        return None


def test_crafted_views_outside_their_storage_are_refused():
    good = [8, [2, 2], [16, 8], "<f8", False]
    out = _load_or_refuse(_archive(_tensor_node(good)))
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    for bad in ([41, [1], [8], "<f8", False],        # past the end
                [-8, [1], [8], "<f8", False],        # before the start
                [0, [2, 2], [16, -16], "<f8", False],  # a negative stride below the start
                [8, [3, 2], [16, 8], "<f8", False],  # the last row outside
                [0, [2], [8], "|O", False],          # object dtype
                [0, [2], [8], "V8", False],          # void
                [0, [2], [8, 8], "<f8", False],      # shape and strides disagree
                [0, [-1], [8], "<f8", False],
                [0, [2 ** 63], [0], "<f8", False],
                [0, [1], [8], "<f8", "no"],
                [0.5, [1], [8], "<f8", False],
                [0, [1], [8], "<f8"]):
        with pytest.raises(UnsafeLoadError):
            tg.load(io.BytesIO(_archive(_tensor_node(bad))))
    # a 2-d storage member is refused
    with pytest.raises(UnsafeLoadError):
        tg.load(io.BytesIO(_archive(_tensor_node(good), np.zeros((2, 3)))))


_view_fields = st.lists(st.one_of(
    st.integers(-2 ** 64, 2 ** 64), st.integers(-64, 64),
    st.lists(st.integers(-20, 20), max_size=4),
    st.sampled_from(["<f8", "<f4", "<i8", "|b1", "<c16", "|O", "V3", "S2", ">f8", "xx"]),
    st.booleans(), st.none(), st.floats()), min_size=0, max_size=6)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_view_fields, st.integers(-1, 2), st.integers(-1, 2))
def test_fuzzed_view_entries_load_inside_their_storage_or_are_refused(view, ref, index):
    out = _load_or_refuse(_archive([_tensor_node(view, ref, index),
                                    _tensor_node(view, 1, 0)]))
    if out is not None:
        for t in out:                       # what loads reads only its storage's bytes
            assert np.asarray(t.numpy()).size <= 6 * 8 or 0 in t.shape or \
                min(t.stride(), default=1) == 0


def _saved_with_views():
    x = tg.arange(12.0).reshape(3, 4)
    buf = io.BytesIO()
    tg.save({"x": x, "v": [x[1], x.t()[::2]], "e": x[:1].expand(2, 4)}, buf)
    return buf.getvalue()


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=8))
def test_corrupted_archives_with_views_load_or_are_refused(edits):
    data = bytearray(_saved_with_views())
    for pos, value in edits:
        data[pos % len(data)] = value
    _load_or_refuse(bytes(data))


@pytest.mark.parametrize("where", ["whole file", "data member", "manifest", "extra member",
                                   "storage as object npy"])
def test_a_pickle_anywhere_in_an_archive_never_runs(tmp_path, where):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Hostile(marker), protocol=2)
    good = _saved_with_views()
    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    if where == "whole file":
        data = payload
    elif where == "data member":
        data = _zip({**members, "tracegrad/data/0.npy": payload})
    elif where == "manifest":
        data = _zip({**members, "tracegrad/manifest.json": payload})
    elif where == "extra member":
        data = _zip({**members, "tracegrad/data.pkl": payload})
    else:
        arr = np.empty(1, dtype=object)
        arr[0] = _Hostile(marker)
        data = _zip({**members, "tracegrad/data/0.npy": _npy(arr, allow_pickle=True)})
    with pytest.raises(UnsafeLoadError):
        tg.load(io.BytesIO(data))
    assert not os.path.exists(marker), "loading ran code from the file"
