"""PyTorch's CPU random number generator, draw for draw.

``tg.manual_seed(0); tg.randn(3)`` gives the numbers ``torch.manual_seed(0);
torch.randn(3)`` gives, so a ported program starts from torch's initial weights, data and
shuffles. PyTorch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded the
classic way (``init_genrand``), which is NumPy's legacy MT19937 seeding; NumPy draws
the raw 32-bit words here and this module applies PyTorch's transforms to them:

- ``random()``: one 32-bit word; ``random64()``: two words, the first one high;
- uniform floats: the low 24 (float32) or 53 (float64) bits of one ``random()`` /
  ``random64()`` word, scaled by 2**-24 / 2**-53, then ``x * (to - from) + from`` in
  double with ``from`` and ``to`` rounded to the tensor's dtype first;
- normal: tensors of 16 elements or more are filled with uniforms and transformed 16 at a
  time by Box-Muller (``u1 = 1 - data[j]``, ``u2 = data[j + 8]``), the last 16 redrawn
  when the size is not a multiple of 16; smaller tensors draw one double Box-Muller pair
  at a time (``u1``, ``u2`` from ``random64``; ``r = sqrt(-2 log1p(-u2))``, ``theta =
  2 pi u1``), keeping ``r sin(theta)`` for the next draw;
- integers in ``[low, high)``: ``low + random() % (high - low)`` (``random64()`` for
  ranges of 2**32 or more); ``randperm``: a Fisher-Yates pass with ``random() % (n - i)``;
- Bernoulli(p): a 53-bit uniform below ``p`` (dropout keeps an element with ``p = 1 -
  drop``).

Uniforms, integers, permutations and Bernoulli draws are bit for bit PyTorch's; normals
of 16 elements or more can differ in the last bit (PyTorch computes their Box-Muller with
vectorised SIMD functions).
"""
from __future__ import annotations

import math

import numpy as np

from .dispatch import CAPTURE

__all__ = ["Generator", "default_generator"]

_MASK24 = np.uint64((1 << 24) - 1)
_MASK53 = np.uint64((1 << 53) - 1)


def _size(shape) -> int:
    return math.prod(shape)


def _pairs64(words):
    """64-bit words made of pairs of 32-bit ``words``, the first of each pair high."""
    return (words[0::2] << np.uint64(32)) | words[1::2]


def _doubles(words64):
    """Uniforms in [0, 1) from the low 53 bits of 64-bit words."""
    return (words64 & _MASK53).astype(np.float64) * 2.0 ** -53


class Generator:
    """A random number generator with PyTorch's streams (``torch.Generator``)."""

    def __init__(self, device="cpu"):
        if str(device) not in ("cpu", "device(type='cpu')"):
            raise RuntimeError(f"tracegrad's eager API runs on the CPU only; got device "
                               f"{device!r} (use the JAX backend, tg.jit(backend='jax'), "
                               "for accelerators)")
        self.device = "cpu"
        self.manual_seed(67280421310721)   # PyTorch's default seed

    # -- seeding and state -------------------------------------------------------------
    def manual_seed(self, seed) -> Generator:
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise RuntimeError("Overflow when unpacking long")
        self._seed = seed % (1 << 64)
        self._bits = np.random.MT19937()
        self._bits._legacy_seeding(self._seed & 0xFFFFFFFF)
        self._next_normal = None
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy, as ``torch.Generator.seed``."""
        s = int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        """The generator's state (a copy), for ``set_state``."""
        return {"seed": self._seed, "bits": self._bits.state, "next_normal": self._next_normal}

    def set_state(self, state) -> Generator:
        self._seed = state["seed"]
        self._bits = np.random.MT19937()
        self._bits.state = state["bits"]
        self._next_normal = state["next_normal"]
        return self

    # -- raw words ---------------------------------------------------------------------
    def random(self, n: int) -> np.ndarray:
        """``n`` 32-bit words (uint64 holding them)."""
        capture = CAPTURE.get()
        if capture is not None:     # tg.compile: the words are an input of the graph
            return capture.draw(self, int(n))
        return self.words(n)

    def words(self, n: int) -> np.ndarray:
        """``random(n)``'s words, drawn (what every draw of this generator starts from)."""
        return np.asarray(self._bits.random_raw(int(n)), dtype=np.uint64).reshape(int(n))

    def random64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words made of two 32-bit ones each, the first one high."""
        return _pairs64(self.random(2 * int(n)))

    # -- distributions ----------------------------------------------------------------
    def _unit(self, n, dtype) -> np.ndarray:
        """``n`` uniforms in [0, 1) as doubles, with ``dtype``'s number of bits."""
        if np.dtype(dtype) == np.float64:
            return _doubles(self.random64(n))
        return (self.random(n) & _MASK24).astype(np.float64) * 2.0 ** -24

    def uniform(self, shape, dtype=np.float32, low=0.0, high=1.0) -> np.ndarray:
        """``Tensor.uniform_(low, high)`` / ``rand`` for a float ``dtype``."""
        dtype = np.dtype(dtype)
        x = self._unit(_size(shape), dtype)
        lo, hi = float(dtype.type(low)), float(dtype.type(high))
        return (x * float(dtype.type(hi - lo)) + lo).astype(dtype).reshape(shape)

    def normal(self, shape, dtype=np.float32, mean=0.0, std=1.0) -> np.ndarray:
        """``Tensor.normal_(mean, std)`` / ``randn`` for a float ``dtype``."""
        dtype = np.dtype(dtype)
        n = _size(shape)
        if n >= 16:
            out = self._normal_filled(n, dtype, mean, std)
        else:
            def make():
                return np.array([self._one_normal() * std + mean for _ in range(n)],
                                dtype=np.float64)
            capture = CAPTURE.get()
            out = make() if capture is None else capture.drawn(self, make)
        return out.astype(dtype).reshape(shape)

    def _normal_filled(self, n, dtype, mean, std):
        data = self._unit(n, dtype).astype(dtype).astype(np.float64)
        full = n - n % 16
        blocks = data[:full].reshape(-1, 16)
        data[:full] = _box_muller_16(blocks, mean, std).reshape(-1)
        if n % 16:
            tail = self._unit(16, dtype).astype(dtype).astype(np.float64)
            data[n - 16:] = _box_muller_16(tail.reshape(1, 16), mean, std).reshape(-1)
        return data

    def _one_normal(self) -> float:
        if self._next_normal is not None:
            v, self._next_normal = self._next_normal, None
            return v
        # two 53-bit uniforms, from words drawn here even while capturing (capture.drawn)
        u1, u2 = _doubles(_pairs64(self.words(4))).tolist()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self._next_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def integers(self, low, high, shape) -> np.ndarray:
        """``randint(low, high, shape)`` / ``Tensor.random_(low, high)``: int64."""
        low, high = int(low), int(high)
        if high <= low:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        span = high - low
        n = _size(shape)
        words = self.random(n) if span < (1 << 32) else self.random64(n)
        out = (words % np.uint64(span)).astype(np.int64) + low
        return out.reshape(shape)

    def random_int64(self, shape) -> np.ndarray:
        """``Tensor.random_()`` of an int64 tensor: ``[0, 2**63)``."""
        return (self.random64(_size(shape)) % np.uint64(1 << 63)).astype(np.int64).reshape(shape)

    def permutation(self, n) -> np.ndarray:
        """``randperm(n)``."""
        n = int(n)
        perm = np.arange(n, dtype=np.int64)
        if n > 1:
            words = self.random(n - 1)
            for i in range(n - 1):
                z = i + int(words[i]) % (n - i)
                perm[i], perm[z] = perm[z], perm[i]
        return perm

    def bernoulli(self, shape, p) -> np.ndarray:
        """``Tensor.bernoulli_(p)`` for a scalar ``p``: booleans."""
        return (self._unit(_size(shape), np.float64) < float(p)).reshape(shape)


def draw_dtype(dtype) -> np.dtype:
    """The dtype PyTorch's float draws are made in for a tensor of ``dtype``: its own for
    float32/float64 (24- or 53-bit uniforms), float32's for narrower or non-float ones."""
    dt = np.dtype(dtype)
    return dt if dt.kind == "f" and dt.itemsize >= 4 else np.dtype(np.float32)


def _box_muller_16(blocks, mean, std):
    """PyTorch's ``normal_fill_16`` on rows of 16 uniforms."""
    u1 = 1.0 - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(-2.0 * np.log(u1))
    theta = 2.0 * np.pi * u2
    return np.concatenate([radius * np.cos(theta) * std + mean,
                           radius * np.sin(theta) * std + mean], axis=1)


default_generator = Generator()


def generator_of(which=None) -> Generator:
    """``which`` (a ``tg.Generator``), or the default one ``manual_seed`` seeds."""
    if which is None:
        return default_generator
    if not isinstance(which, Generator):
        raise TypeError(f"generator must be a tracegrad.Generator, not {type(which).__name__}")
    return which
