"""``tg.save`` / ``tg.load``: round trips of tensors and containers (state dicts,
optimizer state, checkpoints), and refusal of every file ``tg.save`` did not write — a
pickle whose loading would run code (the marker file it would create never appears), a
PyTorch checkpoint, a zip with path-traversal names, truncated and altered files, a
manifest with unknown types — including fuzzed ones."""
import collections
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.eager.serialization import UnsafeLoadError

torch = pytest.importorskip("torch")


def _roundtrip(obj, **kwargs):
    buf = io.BytesIO()
    tg.save(obj, buf)
    return tg.load(io.BytesIO(buf.getvalue()), **kwargs)


def _same(a, b):
    """Structure, types, dtypes and values (bit for bit, NaN included) agree."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tg.Tensor):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float):
        assert a == b or (a != a and b != b)
        assert np.signbit(a) == np.signbit(b)
    else:
        assert a == b


def test_roundtrip_of_tensors_numbers_strings_and_containers():
    rng = np.random.default_rng(0)
    shared = tg.tensor(rng.standard_normal(3), dtype=tg.float64)
    obj = {
        "f32": tg.tensor(rng.standard_normal((2, 3)), dtype=tg.float32),
        "f64": tg.tensor(rng.standard_normal(4), dtype=tg.float64, requires_grad=True),
        "f16": tg.tensor(np.array([1.5, -2.0], dtype=np.float16)),
        "i64": tg.tensor(np.arange(5)), "i8": tg.tensor(np.array([-3, 4], dtype=np.int8)),
        "u8": tg.tensor(np.array([0, 255], dtype=np.uint8)),
        "bool": tg.tensor(np.array([True, False])),
        "c128": tg.tensor(np.array([1 + 2j, -3j])),
        "scalar": tg.tensor(np.array(2.5)), "empty": tg.tensor(np.zeros((0, 3))),
        "transposed": tg.tensor(np.arange(6.0).reshape(2, 3)).t(),
        "numbers": [0, -7, 2 ** 80, 1.5, -0.0, float("nan"), float("inf"), True, None,
                    3 + 4j],
        "strings": ("plain", "ünïcødé ✓", b"\x00\xffbytes"),
        7: {"int key": 1, (1, 2): "tuple key", 2.5: "float key"},
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "numpy": {"arr": np.arange(4, dtype=np.int32), "scalar": np.float32(1.25),
                  "dtype": np.dtype(np.float32)},
        "shared": [shared, shared],
        "size": tg.ones(2, 3).shape,
    }
    back = _roundtrip(obj)
    _same({k: v for k, v in obj.items() if k != "size"},
          {k: v for k, v in back.items() if k != "size"})
    assert tuple(back["size"]) == (2, 3) and type(back["size"]) is type(obj["size"])
    assert back["shared"][0] is back["shared"][1]          # one tensor, stored once


def test_model_and_optimizer_checkpoint_resumes_training_exactly(tmp_path):
    def build():
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 1))
        model.to(tg.float64)
        return model, tg.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)

    x = tg.tensor(np.random.default_rng(1).standard_normal((8, 3)), dtype=tg.float64)

    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()

    model, opt = build()
    train(model, opt, 3)
    path = tmp_path / "ckpt.tg"
    tg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    train(model, opt, 3)

    fresh, fresh_opt = build()
    ckpt = tg.load(path, map_location="cpu", weights_only=True)
    assert ckpt["epoch"] == 3 and list(ckpt["model"]) == list(fresh.state_dict())
    fresh.load_state_dict(ckpt["model"])
    fresh_opt.load_state_dict(ckpt["optimizer"])
    train(fresh, fresh_opt, 3)
    for a, b in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_parameters_and_requires_grad_survive():
    p = tg.nn.Parameter(tg.tensor(np.ones(3), dtype=tg.float64))
    back = _roundtrip({"p": p, "frozen": tg.nn.Parameter(tg.ones(2), requires_grad=False)})
    assert isinstance(back["p"], tg.nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], tg.nn.Parameter) and not back["frozen"].requires_grad


def test_what_cannot_be_saved_is_refused_at_save_time():
    with pytest.raises(TypeError, match="cannot save obj\\['f'\\] of type"):
        tg.save({"f": lambda: 0}, io.BytesIO())
    with pytest.raises(TypeError, match="state_dict"):
        tg.save(tg.nn.Linear(2, 2), io.BytesIO())
    with pytest.raises(TypeError, match="objects"):
        tg.save(np.array([object()]), io.BytesIO())
    with pytest.raises(TypeError, match="never pickles"):
        tg.save(1, io.BytesIO(), pickle_module=pickle)


def test_load_options():
    buf = io.BytesIO()
    tg.save([1, 2], buf)
    with pytest.warns(UserWarning, match="weights_only=False is not supported"):
        assert tg.load(io.BytesIO(buf.getvalue()), weights_only=False) == [1, 2]
    assert tg.load(io.BytesIO(buf.getvalue()), map_location=lambda s, loc: s) == [1, 2]
    assert tg.load(buf.getvalue(), map_location={"cuda:0": "cpu"}) == [1, 2]
    with pytest.raises(RuntimeError, match="JAX backend"):
        tg.load(io.BytesIO(buf.getvalue()), map_location="cuda:0")


# -- hostile files -----------------------------------------------------------------------------
class _Hostile:
    """Unpickling this object calls ``open(marker, "w")``: the marker file appears."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _assert_refused(data, marker=None, match=None):
    with pytest.raises(UnsafeLoadError, match=match) as info:
        tg.load(io.BytesIO(data))
    assert isinstance(info.value, RuntimeError)
    if marker is not None:
        assert not os.path.exists(marker), "loading ran code from the file"


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_a_pickle_that_would_run_code_is_refused(tmp_path, protocol):
    marker = tmp_path / "pwned"
    data = pickle.dumps({"weights": _Hostile(marker)}, protocol=protocol)
    # the oracle: plain unpickling does run the code
    check = tmp_path / "control"
    pickle.loads(pickle.dumps(_Hostile(check), protocol=protocol))
    assert check.exists()
    _assert_refused(data, marker, match="pickle")
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    with pytest.raises(UnsafeLoadError):
        tg.load(path)
    assert not marker.exists()


def test_a_torch_checkpoint_is_refused_with_a_hint(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2), "evil": _Hostile(marker)}, path)
    with pytest.raises(UnsafeLoadError, match="PyTorch archive holding a pickle") as info:
        tg.load(path)
    assert "weights_only=True" in str(info.value) and not marker.exists()
    torch.save({"w": torch.ones(2)}, path)                  # even a harmless one
    with pytest.raises(UnsafeLoadError, match="PyTorch archive"):
        tg.load(path)


def _zip(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _manifest(root, **extra):
    return json.dumps({"format": "tracegrad.save", "version": 1, "root": root, **extra})


def _npy(arr, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def test_a_valid_handmade_archive_loads():
    """The refusals below are of the alterations, not of handmade archives as such."""
    data = _zip({"tracegrad/manifest.json": _manifest({"t": "tensor", "id": 0}),
                 "tracegrad/data/0.npy": _npy(np.arange(3.0))})
    np.testing.assert_array_equal(tg.load(io.BytesIO(data)).numpy(), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("name", ["../../evil.npy", "/etc/evil", "tracegrad/data/../0.npy",
                                  "tracegrad\\data\\0.npy", "tracegrad/data/00.npy",
                                  "tracegrad/run.py"])
def test_archives_with_unexpected_or_traversal_names_are_refused(name, tmp_path):
    data = _zip({"tracegrad/manifest.json": _manifest({"t": "none"}), name: b"x"})
    _assert_refused(data, match="unexpected member")


@pytest.mark.parametrize("root,match", [
    ({"t": "module", "v": "os.system"}, "unknown type"),
    ({"t": "tensor", "id": 5}, "missing array member"),
    ({"t": "tensor", "id": "../x"}, "not an integer"),
    ({"t": "int", "v": "1e9999"}, "malformed integer"),
    ({"t": "dict", "items": [[{"t": "list", "v": []}, {"t": "none"}]]}, "unhashable"),
    ({"t": "dtype", "v": "O"}, "object"),
    ({"t": "list"}, "lacks the field"),
    ([1, 2], "malformed manifest entry"),
], ids=["unknown-type", "missing-array", "array-path", "bad-int", "unhashable-key",
        "object-dtype", "missing-field", "not-tagged"])
def test_manifests_with_unknown_or_malformed_entries_are_refused(root, match):
    data = _zip({"tracegrad/manifest.json": _manifest(root),
                 "tracegrad/data/0.npy": _npy(np.arange(3.0))})
    _assert_refused(data, match=match)


def _deep(n):
    return ('{"format": "tracegrad.save", "version": 1, "root": '
            + '{"t": "list", "v": [' * n + "]}" * n + "}")


def test_other_archive_alterations_are_refused(tmp_path):
    marker = tmp_path / "pwned"
    good_manifest = _manifest({"t": "ndarray", "id": 0})
    cases = {
        "object array": _zip({"tracegrad/manifest.json": good_manifest,
                              "tracegrad/data/0.npy": _npy(np.array([_Hostile(marker)],
                                                                    dtype=object), True)}),
        "string tensor": _zip({"tracegrad/manifest.json": _manifest({"t": "tensor", "id": 0}),
                               "tracegrad/data/0.npy": _npy(np.array(["a", "b"]))}),
        "no manifest": _zip({"tracegrad/data/0.npy": _npy(np.arange(3.0))}),
        "wrong format": _zip({"tracegrad/manifest.json": json.dumps(
            {"format": "other", "version": 1, "root": {"t": "none"}})}),
        "wrong version": _zip({"tracegrad/manifest.json": json.dumps(
            {"format": "tracegrad.save", "version": 99, "root": {"t": "none"}})}),
        "not json": _zip({"tracegrad/manifest.json": b"{not json"}),
        "compressed": _zip({"tracegrad/manifest.json": _manifest({"t": "none"})},
                           zipfile.ZIP_DEFLATED),
        "short array": _zip({"tracegrad/manifest.json": good_manifest,
                             "tracegrad/data/0.npy": _npy(np.arange(1000.0))[:-8]}),
        "huge header": _zip({"tracegrad/manifest.json": good_manifest,
                             "tracegrad/data/0.npy": _npy(np.arange(2.0)).replace(
                                 b"(2,)", b"(2000000000000,)".ljust(4))}),
        "deep nesting": _zip({"tracegrad/manifest.json": _deep(600)}),
        "deeper nesting": _zip({"tracegrad/manifest.json": _deep(5000)}),
        "empty": b"",
        "text": b"hello, world",
    }
    for what, data in cases.items():
        with pytest.raises(UnsafeLoadError):
            tg.load(io.BytesIO(data))
        assert not marker.exists(), what


def _valid_file():
    buf = io.BytesIO()
    tg.save({"w": tg.tensor(np.arange(6.0).reshape(2, 3), dtype=tg.float64),
             "n": [1, 2.5, "s"], "b": tg.tensor(np.array([True]))}, buf)
    return buf.getvalue()


def test_every_truncation_is_refused():
    data = _valid_file()
    for n in list(range(0, len(data), max(1, len(data) // 200))):
        with pytest.raises(UnsafeLoadError):
            tg.load(io.BytesIO(data[:n]))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                max_size=6))
def test_fuzzed_bytes_load_or_are_refused(edits):
    data = bytearray(_valid_file())
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        tg.load(io.BytesIO(bytes(data)))
    except UnsafeLoadError:
        pass


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["t", "v", "id", "items", "requires_grad", "x"]), inner, max_size=3)
    | st.fixed_dictionaries({"t": st.sampled_from(
        ["none", "bool", "int", "float", "complex", "str", "bytes", "tensor", "parameter",
         "ndarray", "npscalar", "dtype", "list", "tuple", "size", "dict", "ordereddict"]),
        "v": inner, "id": st.integers(-2, 2), "items": inner}),
    max_leaves=12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_json)
def test_fuzzed_manifests_load_or_are_refused(root):
    data = _zip({"tracegrad/manifest.json": _manifest(root),
                 "tracegrad/data/0.npy": _npy(np.arange(3.0)),
                 "tracegrad/data/1.npy": _npy(np.array(True))})
    try:
        tg.load(io.BytesIO(data))
    except UnsafeLoadError:
        pass
