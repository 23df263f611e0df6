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

import contextlib
import math

import numpy as np

from .dispatch import CAPTURE

__all__ = ["Generator", "default_generator", "set_rng_state", "manual_seed", "seed",
           "initial_seed", "fork_rng"]

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

    # -- the serial samplers of PyTorch's CPU kernels: one 53-bit uniform at a time -------
    def _uniform53(self) -> float:
        return float(_doubles(self.random64(1))[0])

    def exponential(self, shape, lambd) -> np.ndarray:
        """``Tensor.exponential_(lambd)``: ``-log1p(-u) / lambd`` of 53-bit uniforms, as
        doubles."""
        return (-np.log1p(-self._unit(_size(shape), np.float64)) / lambd).reshape(shape)

    def geometric(self, shape, p) -> np.ndarray:
        """``Tensor.geometric_(p)``: ``ceil(log(u) / log1p(-p))`` of 53-bit uniforms."""
        u = self._unit(_size(shape), np.float64)
        with np.errstate(divide="ignore"):
            return np.ceil(np.log(u) / math.log1p(-p)).reshape(shape)

    def cauchy(self, shape, median, sigma) -> np.ndarray:
        """``Tensor.cauchy_(median, sigma)``: ``median + sigma tan(pi (u - 1/2))``."""
        u = self._unit(_size(shape), np.float64)
        return (median + sigma * np.tan(np.pi * (u - 0.5))).reshape(shape)

    def log_normal(self, shape, mean, std) -> np.ndarray:
        """``Tensor.log_normal_(mean, std)``: ``exp`` of one serial double normal per
        element (whatever the size: no 16-wide fill)."""
        n = _size(shape)
        return np.array([math.exp(self._one_normal() * std + mean) for _ in range(n)],
                        dtype=np.float64).reshape(shape)

    def poisson(self, rates) -> np.ndarray:
        """``torch.poisson(rates)``: PyTorch's ``sample_poisson`` (after NumPy's: Hormann's
        transformed rejection for rates of 10 or more, products of uniforms below), element
        by element in C order."""
        flat = np.asarray(rates, np.float64).reshape(-1)
        return np.array([_sample_poisson(float(lam), self._uniform53) for lam in flat],
                        np.float64).reshape(np.shape(rates))

    def binomial(self, count, prob, dtype) -> np.ndarray:
        """``torch.binomial(count, prob)``: PyTorch's ``sample_binomial`` (BTRS when the
        mean is 10 or more, inversion below), element by element in C order, with its
        arithmetic in ``dtype`` where PyTorch's is the tensor's scalar type."""
        c, p = np.broadcast_arrays(np.asarray(count), np.asarray(prob))
        scalar = np.dtype(dtype).type
        out = [_sample_binomial(scalar(a), scalar(b), scalar, self._uniform53)
               for a, b in zip(c.reshape(-1), p.reshape(-1))]
        return np.array(out, np.float64).reshape(c.shape)


def _sample_poisson(lam, uniform):
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _btrs(count, prob, scalar, uniform):
    stddev = math.sqrt(float(scalar(count * prob * (scalar(1) - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(prob) / float(scalar(1) - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(float(count + 1) * float(prob))
    n = float(count)
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = float(scalar(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1))) +
                 (n + 1) * math.log((n - m + 1) / (n - k + 1)) +
                 (k + 0.5) * math.log(r * (n - k + 1) / (k + 1)) +
                 _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(k) -
                 _stirling_tail(n - k))
        if v <= bound:
            return k


def _binomial_inversion(count, prob, uniform):
    geom_sum, num = 0.0, 0
    logprob = math.log1p(-float(prob))
    while True:
        geom = math.ceil(math.log(uniform()) / logprob)
        geom_sum += geom
        if geom_sum > float(count):
            return float(num)
        num += 1


def _sample_binomial(count, prob, scalar, uniform):
    if count <= 0 or prob <= 0:
        return 0.0
    if prob >= 1:
        return float(count)
    if prob <= 0.5:
        if count * prob >= 10:
            return _btrs(count, prob, scalar, uniform)
        return _binomial_inversion(count, prob, uniform)
    q = scalar(1) - prob
    if count * q >= 10:
        return float(count) - _btrs(count, q, scalar, uniform)
    return float(count) - _binomial_inversion(count, q, uniform)


# -- the generator's state as bytes (tg.get_rng_state) -------------------------------------
_STATE_SIZE = 624 * 4 + 4 + 8 + 1 + 8


def state_bytes(gen) -> np.ndarray:
    """``gen``'s state as ``uint8`` bytes (tracegrad's layout, not PyTorch's): the
    Mersenne Twister's 624 words and position, the seed, and the cached normal."""
    bits = gen._bits.state["state"]
    normal = gen._next_normal
    parts = [np.asarray(bits["key"], "<u4").tobytes(), np.int32(bits["pos"]).tobytes(),
             np.uint64(gen._seed).tobytes(), bytes([normal is not None]),
             np.float64(0.0 if normal is None else normal).tobytes()]
    return np.frombuffer(b"".join(parts), np.uint8).copy()


def set_state_bytes(gen, data) -> None:
    """Restore what ``state_bytes`` gave."""
    data = np.ascontiguousarray(data, np.uint8).reshape(-1)
    if data.size != _STATE_SIZE:
        raise RuntimeError(f"Expected a tracegrad generator state of size {_STATE_SIZE} but "
                           f"found the input RNG state size to be {data.size}")
    raw = data.tobytes()
    key = np.frombuffer(raw[:2496], "<u4").astype(np.uint32)
    pos = int(np.frombuffer(raw[2496:2500], np.int32)[0])
    seed = int(np.frombuffer(raw[2500:2508], np.uint64)[0])
    normal = float(np.frombuffer(raw[2509:2517], np.float64)[0]) if raw[2508] else None
    gen.set_state({"seed": seed, "bits": {"bit_generator": "MT19937",
                                          "state": {"key": key, "pos": pos}},
                   "next_normal": normal})


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


# -- torch.random's functions (``tg.random`` is torch_random.py, which adds get_rng_state) ----
def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state``'s tensor."""
    from .tensor_base import TensorBase
    if not isinstance(new_state, TensorBase) or new_state.dtype != np.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    set_state_bytes(default_generator, new_state._concrete("set_rng_state"))


def manual_seed(seed) -> Generator:
    """Seed the default generator (PyTorch's stream for the same seed); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Run the block with the default generator's state put back afterwards."""
    if not enabled:
        yield
        return
    saved = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(saved)
