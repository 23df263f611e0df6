"""``tg.save`` / ``tg.load``: tensors and containers of them (state dicts, optimizer
state, checkpoints of numbers and strings) in a file that never runs code when read.

PyTorch's files are pickles, and unpickling can run any code the file names; its
``weights_only`` mode restricts the unpickler. Here there is no unpickler at all: a file
is a zip archive of plain members,

    tracegrad/manifest.json    {"format": "tracegrad.save", "version": 1, "root": VALUE}
    tracegrad/data/N.npy       the array of tensor N (NumPy's .npy format)

where ``VALUE`` is JSON with one tag per node (``{"t": "dict", "items": [[KEY, VALUE],
...]}``, ``{"t": "tensor", "ref": R, "id": N, "view": [OFFSET, SHAPE, STRIDES, DTYPE],
"requires_grad": false}``, ...). As in PyTorch, tensors keep their sharing of memory: array
N is a whole storage (the memory that tensors viewing one another share, as its bytes in
order) and each tensor is a view of one (a byte offset, a shape, byte strides and a
dtype), so a row saved with its matrix loads as a view of the loaded matrix. ``R``
numbers the tensor objects: one saved twice loads as one. (Version 1 files, whose tensor
entries name a whole array, still load.) ``load`` reads the
manifest with ``json`` and each array with ``np.load(..., allow_pickle=False)``; it
accepts only the member names above and only the tags it knows, and refuses anything else
(a pickle, a PyTorch archive, a truncated or altered file) with a ``RuntimeError`` that
says why. Every member is read into memory; nothing is extracted to disk.
"""
from __future__ import annotations

import base64
import collections
import io
import json
import math
import os
import re
import struct
import warnings
import zipfile
import zlib

import numpy as np
import numpy.lib.format as npy_format

from .tensor import Tensor

__all__ = ["save", "load", "UnsafeLoadError"]

_FORMAT, _VERSION = "tracegrad.save", 2
_READS = (1, 2)
_MANIFEST = "tracegrad/manifest.json"
_DATA = re.compile(r"tracegrad/data/(0|[1-9][0-9]{0,8})\.npy")
_MAX_DEPTH = 500
_MAX_MANIFEST = 256 * 2 ** 20


class UnsafeLoadError(RuntimeError):
    """``tg.load`` refused a file: not one ``tg.save`` wrote, or altered since."""


# -- writing ----------------------------------------------------------------------------------
class _Writer:
    def __init__(self):
        self.arrays = []          # index -> array
        self.seen = {}            # id(tensor) -> ref (a tensor saved twice is stored once)
        self.storages = {}        # id(root array) -> (index, root)

    def array(self, arr):
        self.arrays.append(np.asarray(arr))
        return len(self.arrays) - 1

    def encode(self, obj, where="obj", depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"tg.save: {where} is nested more than {_MAX_DEPTH} levels deep")
        if obj is None:
            return {"t": "none"}
        if isinstance(obj, bool):
            return {"t": "bool", "v": obj}
        if isinstance(obj, int):
            return {"t": "int", "v": str(obj)}
        if isinstance(obj, float):
            return {"t": "float", "v": obj.hex()}
        if isinstance(obj, complex):
            return {"t": "complex", "v": [obj.real.hex(), obj.imag.hex()]}
        if isinstance(obj, str):
            return {"t": "str", "v": obj}
        if isinstance(obj, bytes):
            return {"t": "bytes", "v": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, Tensor) and obj.is_sparse is True:
            # a sparse COO tensor (eager/sparse_coo.py): its indices, values and size
            return {"t": "sparse_coo", "indices": self.array(obj._idx),
                    "values": self._tensor(Tensor._plain(obj._data), where),
                    "size": [int(n) for n in obj._size], "coalesced": bool(obj._coalesced),
                    "requires_grad": bool(obj.requires_grad and obj.is_leaf)}
        if isinstance(obj, Tensor):
            return self._tensor(obj, where)
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                raise TypeError(f"tg.save: {where} is a NumPy array of Python objects, which "
                                "cannot be saved without pickle")
            return {"t": "ndarray", "id": self.array(obj)}
        if isinstance(obj, np.generic):
            return {"t": "npscalar", "id": self.array(np.asarray(obj))}
        if isinstance(obj, np.dtype):
            return {"t": "dtype", "v": obj.str}
        if isinstance(obj, type) and issubclass(obj, np.generic):
            return {"t": "dtype", "v": np.dtype(obj).str}
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            raise TypeError(f"tg.save: {where} is a named tuple ({type(obj).__name__}); "
                            "save it as a tuple or a dict (a named tuple's class would have "
                            "to be imported on load)")
        if isinstance(obj, (list, tuple)):
            tag = "list" if isinstance(obj, list) else ("size" if type(obj).__name__ == "Size"
                                                        else "tuple")
            return {"t": tag, "v": [self.encode(v, f"{where}[{i}]", depth + 1)
                                    for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            tag = "ordereddict" if isinstance(obj, collections.OrderedDict) else "dict"
            return {"t": tag, "items": [[self.encode(k, f"a key of {where}", depth + 1),
                                         self.encode(v, f"{where}[{k!r}]", depth + 1)]
                                        for k, v in obj.items()]}
        raise TypeError(f"tg.save: cannot save {where} of type {type(obj).__module__}."
                        f"{type(obj).__qualname__}: only tensors, NumPy arrays, numbers, "
                        "strings, bytes, None and lists, tuples and dicts of them can be "
                        "saved (no pickle; save a module's state_dict(), not the module)")

    def _tensor(self, t, where):
        if t._data is None:
            raise TypeError(f"tg.save: {where} is a tensor traced abstractly (inside a "
                            "transform); save concrete tensors")
        key = id(t)
        if key not in self.seen:
            self.seen[key] = (len(self.seen), t)       # t kept alive: ids stay unique
        index, view = self._storage(t._data)
        from .nn.modules import Parameter
        return {"t": "parameter" if isinstance(t, Parameter) else "tensor",
                "ref": self.seen[key][0], "id": index, "view": view,
                "requires_grad": bool(t.requires_grad)}

    def _storage(self, arr):
        """(index of the storage array, [byte offset, shape, byte strides, dtype, read-only])
        of a tensor's array: its storage is the contiguous array that owns its memory, so
        that tensors viewing one another are stored as views of one array."""
        arr = np.asarray(arr)
        root = arr
        while True:
            base = root.base
            if not isinstance(base, np.ndarray):
                # np.lib.stride_tricks.as_strided (unfold, as_strided) keeps its array
                # behind a holder object's .base
                base = getattr(base, "base", None)
            if not isinstance(base, np.ndarray):
                break
            root = base
        start = root.__array_interface__["data"][0]
        if root.flags.c_contiguous or root.flags.f_contiguous:
            entry = self.storages.get(id(root))
            if entry is None:
                entry = self.storages[id(root)] = (self.array(root.ravel(order="K")), root)
            offset = arr.__array_interface__["data"][0] - start
        else:                       # memory owned elsewhere, not one block: a copy
            entry, arr = (self.array(np.ascontiguousarray(arr).ravel()), None), \
                np.ascontiguousarray(arr)
            offset = 0
        return entry[0], [int(offset), list(arr.shape), list(arr.strides), arr.dtype.str,
                          not arr.flags.writeable]


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, NumPy arrays, numbers, strings, ``None``, and lists,
    tuples and dicts of them: state dicts, optimizer state, checkpoints) to ``f``, a path
    or a binary file object. The file holds no code: ``tg.load`` reads it back without
    unpickling anything. A tensor that appears twice is stored once and loads as one
    tensor."""
    if pickle_module is not None:
        raise TypeError("tg.save never pickles: pickle_module is not supported")
    writer = _Writer()
    manifest = {"format": _FORMAT, "version": _VERSION, "root": writer.encode(obj)}
    text = json.dumps(manifest, ensure_ascii=True, allow_nan=False).encode("ascii")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(_MANIFEST, text)
        for i, arr in enumerate(writer.arrays):
            member = io.BytesIO()
            np.save(member, arr, allow_pickle=False)
            zf.writestr(f"tracegrad/data/{i}.npy", member.getvalue())
    data = buffer.getvalue()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    else:
        f.write(data)


# -- reading ----------------------------------------------------------------------------------
# what reading a damaged archive can raise (zipfile's and zlib's own errors, short reads)
_CORRUPT = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
            KeyError, IndexError, TypeError, OverflowError, NotImplementedError,
            UnicodeDecodeError, struct.error, zlib.error)


def _refuse(why):
    raise UnsafeLoadError("tg.load: " + why)


_TORCH_HINT = ("tracegrad never unpickles: a pickle can run arbitrary code when loaded. "
               "To convert a PyTorch checkpoint you trust, load it with torch "
               "(torch.load(path, weights_only=True)), turn each tensor into a tracegrad "
               "tensor (tg.tensor(t.numpy())) and save that with tg.save.")


def _read_bytes(f):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as src:
            return src.read()
    if isinstance(f, (bytes, bytearray, memoryview)):
        return bytes(f)
    data = f.read()
    if not isinstance(data, bytes):
        raise TypeError("tg.load expects a path or a binary file object")
    return data


class _Reader:
    def __init__(self, zf, names, version=_VERSION):
        self.zf, self.names, self.version = zf, names, version
        self.tensors = {}
        self.storages = {}

    def array(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            _refuse(f"an array reference is not an integer: {index!r}")
        name = f"tracegrad/data/{index}.npy"
        if name not in self.names:
            _refuse(f"the manifest refers to a missing array member {name!r}")
        return _read_npy(self.zf.read(name), name)

    def decode(self, node, depth=0):
        if depth > _MAX_DEPTH:
            _refuse(f"the manifest is nested more than {_MAX_DEPTH} levels deep")
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            _refuse(f"malformed manifest entry {str(node)[:80]!r}")
        tag = node["t"]
        try:
            if tag == "none":
                return None
            if tag == "bool":
                return _checked(node["v"], bool)
            if tag == "int":
                text = _checked(node["v"], str)
                if len(text) > 5000 or not re.fullmatch(r"-?[0-9]+", text):
                    _refuse(f"malformed integer {text[:80]!r}")
                return int(text)
            if tag == "float":
                return float.fromhex(_checked(node["v"], str))
            if tag == "complex":
                re_, im = _checked(node["v"], list)
                return complex(float.fromhex(_checked(re_, str)), float.fromhex(_checked(im, str)))
            if tag == "str":
                return _checked(node["v"], str)
            if tag == "bytes":
                return base64.b64decode(_checked(node["v"], str), validate=True)
            if tag in ("tensor", "parameter"):
                return self._tensor(node, tag)
            if tag == "sparse_coo":
                return self._sparse(node, depth)
            if tag == "ndarray":
                return self.array(node["id"]).copy()
            if tag == "npscalar":
                arr = self.array(node["id"])
                if arr.shape != ():
                    _refuse("a NumPy scalar member is not 0-dimensional")
                return arr[()]
            if tag == "dtype":
                dt = np.dtype(_checked(node["v"], str))
                if dt.hasobject:
                    _refuse("object dtypes are refused")
                return dt
            if tag in ("list", "tuple", "size"):
                items = [self.decode(v, depth + 1) for v in _checked(node["v"], list)]
                if tag == "list":
                    return items
                if tag == "size":
                    from .tensor import Size
                    if not all(isinstance(i, int) for i in items):
                        _refuse("a Size holds a non-integer")
                    return Size(items)
                return tuple(items)
            if tag in ("dict", "ordereddict"):
                out = collections.OrderedDict() if tag == "ordereddict" else {}
                for pair in _checked(node["items"], list):
                    k, v = _checked(pair, list)
                    key = self.decode(k, depth + 1)
                    try:
                        hash(key)
                    except TypeError:
                        _refuse(f"a dict key of unhashable type {type(key).__name__}")
                    out[key] = self.decode(v, depth + 1)
                return out
        except KeyError as e:
            _refuse(f"manifest entry of type {tag!r} lacks the field {e}")
        except (TypeError, ValueError) as e:
            _refuse(f"malformed manifest entry of type {tag!r} ({e})")
        _refuse(f"unknown type {tag[:40]!r} in the manifest: this file was not written by "
                "tg.save (or by a newer version of it)")

    def _tensor(self, node, tag):
        if self.version == 1:
            index = node["id"]
            if index in self.tensors:
                return self.tensors[index]
            arr = self.array(index)
        else:
            index = _checked(node["ref"], int)
            if index in self.tensors:
                return self.tensors[index]
            arr = self._view(node["id"], node["view"])
        if arr.dtype.kind not in "biufc":
            _refuse(f"a tensor of dtype {arr.dtype} (tensors are boolean or numeric)")
        requires_grad = _checked(node.get("requires_grad", False), bool)
        if requires_grad and arr.dtype.kind not in "fc":
            _refuse("only floating point and complex tensors can require grad")
        if tag == "parameter":
            from .nn.modules import Parameter
            t = Parameter(arr, requires_grad=requires_grad)
        else:
            t = Tensor._plain(arr)
            if requires_grad:
                t.requires_grad = True
        self.tensors[index] = t
        return t


    def _sparse(self, node, depth):
        from .sparse_coo import sparse_coo_tensor
        idx = self.array(_checked(node["indices"], int))
        if idx.dtype.kind not in "iu" or idx.ndim != 2:
            _refuse("a sparse tensor's indices are not a 2-D integer array")
        values = self.decode(_checked(node["values"], dict), depth + 1)
        size = [_checked(n, int) for n in _checked(node["size"], list)]
        try:        # the checks of sparse_coo_tensor: shapes and every index in range
            return sparse_coo_tensor(idx.copy(), values.detach(), size,
                                     is_coalesced=_checked(node["coalesced"], bool),
                                     requires_grad=_checked(node["requires_grad"], bool))
        except RuntimeError as e:
            _refuse(f"malformed sparse tensor ({e})")

    def _view(self, index, view):
        """The array ``view`` ([byte offset, shape, byte strides, dtype, read-only]) of the
        storage array ``index``, sharing its memory, after checking that every element
        lies inside the storage."""
        storage = self.storages.get(index) if isinstance(index, int) else None
        if storage is None:
            storage = self.array(index)
            if storage.ndim != 1:
                _refuse("a tensor storage member is not 1-dimensional")
            self.storages[index] = storage
        offset, shape, strides, dtype, readonly = _checked(view, list)
        offset = _checked(offset, int)
        shape = [_checked(n, int) for n in _checked(shape, list)]
        strides = [_checked(n, int) for n in _checked(strides, list)]
        readonly = _checked(readonly, bool)
        dtype = np.dtype(_checked(dtype, str))
        if dtype.kind not in "biufc" or dtype.hasobject or dtype.fields is not None or \
                dtype.subdtype is not None:
            _refuse(f"a tensor view of dtype {dtype} (tensors are boolean or numeric)")
        if len(shape) != len(strides) or len(shape) > 64:
            _refuse("a tensor view's shape and strides do not match")
        if any(n < 0 or n > 2 ** 62 for n in shape) or any(abs(s) > 2 ** 62 for s in strides):
            _refuse("a tensor view has a malformed shape or strides")
        nbytes = storage.nbytes
        if math.prod(shape) == 0:
            if not 0 <= offset <= nbytes:
                _refuse("a tensor view starts outside its storage")
        else:
            low = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
            high = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
            if low < 0 or high + dtype.itemsize > nbytes:
                _refuse("a tensor view reaches outside its storage")
        try:
            arr = np.ndarray(tuple(shape), dtype, buffer=storage, offset=offset,
                             strides=tuple(strides))
        except (ValueError, TypeError) as e:
            _refuse(f"a tensor view does not fit its storage ({e})")
        if readonly:
            arr.flags.writeable = False
        return arr


def _read_npy(raw, name):
    """The array in ``raw`` (a .npy file), after checking that its header describes a
    plain (non-object) dtype and exactly the bytes that follow it: nothing is allocated
    from a header that the data does not back."""
    fp = io.BytesIO(raw)
    try:
        version = npy_format.read_magic(fp)
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, _, dtype = npy_format.read_array_header_2_0(fp)
        else:
            _refuse(f"array member {name!r} has an unsupported .npy version {version}")
    except UnsafeLoadError:
        raise
    except (ValueError, TypeError, OSError, EOFError, SyntaxError, OverflowError) as e:
        _refuse(f"array member {name!r} has a malformed header ({e})")
    if dtype.hasobject:
        _refuse(f"array member {name!r} holds Python objects, which would need pickle")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        _refuse(f"array member {name!r} has a malformed shape {shape!r}")
    if math.prod(shape) * dtype.itemsize != len(raw) - fp.tell():
        _refuse(f"array member {name!r} is truncated or padded: its header announces "
                f"shape {shape} of {dtype}, which does not match the bytes that follow")
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        _refuse(f"array member {name!r} is not a plain NumPy array ({e})")
    if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
        _refuse(f"array member {name!r} is not a plain NumPy array")
    return arr


def _checked(value, kind):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"expected {kind.__name__}, found {type(value).__name__}")
    return value


def _check_map_location(map_location):
    if map_location is None or callable(map_location) or isinstance(map_location, dict):
        return              # everything is on the CPU: a mapping has nothing to move
    name = str(getattr(map_location, "type", map_location))
    if name.split(":")[0] != "cpu":
        raise RuntimeError(f"tg.load: map_location={str(map_location)!r}: tracegrad's eager "
                           "tensors live on the CPU; use the JAX backend (tg.jit(..., "
                           "backend='jax')) for accelerators")


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load what ``tg.save`` wrote to ``f`` (a path, a binary file object or bytes).

    Only ``weights_only=True`` exists here: the file is read as data, never as code, and
    a file that ``tg.save`` did not write (a pickle, a PyTorch checkpoint, a truncated or
    altered archive) is refused with ``tg.serialization.UnsafeLoadError`` (a
    ``RuntimeError``). ``map_location`` is accepted; everything loads onto the CPU."""
    if weights_only is False:
        warnings.warn("tg.load: weights_only=False is not supported: tracegrad never runs "
                      "code from a file, so it loads as with weights_only=True", UserWarning,
                      stacklevel=2)
    if pickle_module is not None:
        raise TypeError("tg.load never unpickles: pickle_module is not supported")
    _check_map_location(map_location)
    data = _read_bytes(f)
    if not data:
        _refuse("the file is empty")
    if data[:1] == b"\x80" or data[:1] in (b"(", b"c", b"}", b"]"):
        _refuse("this is a pickle (as torch.save's legacy format or pickle.dump write). "
                + _TORCH_HINT)
    if not data.startswith(b"PK"):
        _refuse("this is not a file written by tg.save (not a zip archive)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except _CORRUPT as e:
        _refuse(f"the file is truncated or corrupt ({e})")
    if any(info.filename.endswith(".pkl") for info in infos):
        pkl = next(i.filename for i in infos if i.filename.endswith(".pkl"))
        _refuse(f"this is a PyTorch archive holding a pickle ({pkl[:100]!r}). " + _TORCH_HINT)
    names = set()
    for info in infos:
        name = info.filename
        if name != _MANIFEST and not _DATA.fullmatch(name):
            _refuse(f"unexpected member {name[:100]!r} in the archive (only "
                    f"{_MANIFEST!r} and tracegrad/data/N.npy are allowed)")
        if name in names:
            _refuse(f"the member {name!r} appears twice in the archive")
        if info.flag_bits & 0x1:
            _refuse("the archive is encrypted")
        if info.compress_type != zipfile.ZIP_STORED:
            _refuse(f"the member {name!r} is compressed (tg.save stores members as they are)")
        names.add(name)
    if _MANIFEST not in names:
        _refuse(f"the archive has no {_MANIFEST!r}: not a file written by tg.save")
    try:
        if zf.getinfo(_MANIFEST).file_size > _MAX_MANIFEST:
            _refuse("the manifest is too large")
        manifest = json.loads(zf.read(_MANIFEST).decode("utf-8"))
    except UnsafeLoadError:
        raise
    except (*_CORRUPT, RecursionError) as e:
        _refuse(f"the manifest is truncated or corrupt ({type(e).__name__}: {e})")
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        _refuse("the manifest does not name the tracegrad.save format")
    version = manifest.get("version")
    if type(version) is not int or version not in _READS:
        _refuse(f"unsupported format version {version!r} (this tracegrad reads versions "
                f"{', '.join(map(str, _READS))})")
    if "root" not in manifest:
        _refuse("the manifest has no root value")
    try:
        return _Reader(zf, names, version).decode(manifest["root"])
    except UnsafeLoadError:
        raise
    except RecursionError:
        _refuse("the manifest is nested too deeply")
    except _CORRUPT as e:
        _refuse(f"the file is truncated or corrupt ({type(e).__name__}: {e})")
