"""``tg.multinomial`` against torch 2.13 CPU: the same draws for the same seed (with and
without replacement, one sample or many, 1-d and 2-d weights, float32 and float64, sizes
on both sides of 16), the generator left in the same state, torch's errors; and
``tg.inference_mode`` / ``is_inference_mode_enabled`` / ``Tensor.is_inference`` as torch's.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

SHAPES = [(4,), (5,), (3, 5), (20,), (2, 20), (100,), (7, 9), (4, 300)]
DRAWS = [(1, False), (3, False), (1, True), (6, True), (50, True)]
CASES = [(shape, dtype, n, rep, seed, zeros)
         for shape, dtype, (n, rep), seed, zeros in itertools.product(
             SHAPES, ("float32", "float64"), DRAWS, (0, 3), (False, True))
         if rep or n <= shape[-1]]


@pytest.mark.parametrize("case", bounded(CASES, 60), ids=str)
def test_multinomial_draws_match_torch(case):
    shape, dtype, n, rep, seed, zeros = case
    rng = np.random.default_rng(seed)
    p = rng.random(shape).astype(dtype)
    if zeros:
        p[..., ::3] = 0       # categories that are never drawn
    gen_t = torch.Generator().manual_seed(seed)
    gen_g = tg.Generator().manual_seed(seed)
    want = torch.multinomial(torch.tensor(p), n, rep, generator=gen_t)
    got = tg.multinomial(tg.tensor(p), n, rep, generator=gen_g)
    assert got.dtype == tg.int64 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    # the stream continues where torch's does
    assert torch.rand(3, generator=gen_t).tolist() == tg.rand(3, generator=gen_g).tolist()


def test_default_generator_and_method():
    p = [0.1, 0.5, 0.4]
    torch.manual_seed(5)
    tg.manual_seed(5)
    assert torch.tensor(p).multinomial(4, True).tolist() == tg.tensor(p).multinomial(4, True).tolist()
    assert torch.multinomial(torch.tensor(p), 2).tolist() == tg.multinomial(tg.tensor(p), 2).tolist()


MISUSE = [
    lambda L: L.multinomial(L.tensor([0.5, 0.5]), 3),
    lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
    lambda L: L.multinomial(L.tensor([0.5, -0.5]), 2, True),
    lambda L: L.multinomial(L.tensor([0.5, float("nan")]), 1),
    lambda L: L.multinomial(L.tensor([1, 2]), 1),
    lambda L: L.multinomial(L.ones(2, 2, 2), 1),
]


@pytest.mark.parametrize("k", range(len(MISUSE)))
def test_multinomial_errors(k):
    with pytest.raises(Exception) as want:
        MISUSE[k](torch)
    with pytest.raises(Exception) as got:
        MISUSE[k](tg)
    assert type(got.value) is type(want.value)
    assert str(want.value).splitlines()[0] in str(got.value)


def _inference_story(L):
    """What a program sees of inference mode, as a list of observations."""
    seen = []
    x = L.ones(2, requires_grad=True)
    with L.inference_mode():
        y = x * 2
        seen += [y.requires_grad, y.is_inference(), L.is_inference_mode_enabled(),
                 L.is_grad_enabled(), L.ones(2).is_inference(), L.tensor([1.0]).is_inference()]
        with L.inference_mode(False):
            z = x * 2
            seen += [z.is_inference(), z.requires_grad, L.is_grad_enabled(),
                     L.is_inference_mode_enabled()]
        seen += [L.is_inference_mode_enabled(), L.is_grad_enabled()]
    with L.no_grad(), L.inference_mode(False):
        seen.append(L.is_grad_enabled())
    seen += [x.is_inference(), L.is_inference_mode_enabled(), L.is_grad_enabled(),
             L.ones(1).is_inference()]

    @L.inference_mode
    def f(a):
        return a * 3

    @L.inference_mode()
    def g(a):
        return a * 3

    @L.inference_mode(False)
    def h(a):
        return a * 3
    seen += [f(x).is_inference(), f(x).requires_grad, g(x).is_inference(), h(x).requires_grad,
             f.__name__]
    return seen


def test_inference_mode_as_torch():
    assert _inference_story(tg) == _inference_story(torch)


def test_inference_mode_is_per_thread():
    import threading
    seen = []
    with tg.inference_mode():
        t = threading.Thread(target=lambda: seen.append((tg.is_inference_mode_enabled(),
                                                         tg.ones(1).is_inference())))
        t.start()
        t.join()
    assert seen == [(False, False)]


@pytest.mark.parametrize("replacement, n", [(True, 7), (False, 3), (True, 1)])
def test_weighted_random_sampler_draws_as_torch(replacement, n):
    from torch.utils.data import WeightedRandomSampler
    weights = [0.1, 0.9, 0.4, 0.2, 0.0]
    want = list(WeightedRandomSampler(weights, n, replacement,
                                      generator=torch.Generator().manual_seed(11)))
    got = list(tg.utils.data.WeightedRandomSampler(weights, n, replacement,
                                                   generator=tg.Generator().manual_seed(11)))
    assert got == want
    torch.manual_seed(2)
    tg.manual_seed(2)
    assert list(tg.utils.data.WeightedRandomSampler(weights, n, replacement)) == \
        list(WeightedRandomSampler(weights, n, replacement))
