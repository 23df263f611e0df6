"""The eager generator draws PyTorch's CPU numbers (``tracegrad/eager/random.py``)."""
import numpy as np
import pytest

from tracegrad.eager.random import Generator

torch = pytest.importorskip("torch")

SEEDS = [0, 1, 42, 2**32 + 5, 2**63 - 1]
SIZES = [(), (1,), (5,), (15,), (16,), (17,), (3, 7), (40,), (2, 3, 5)]
DTYPES = [("float32", torch.float32), ("float64", torch.float64)]


def _gen(seed):
    return Generator().manual_seed(seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype,tdtype", DTYPES, ids=lambda d: str(d))
def test_uniform_and_normal_match_torch(seed, shape, dtype, tdtype):
    g = _gen(seed)
    tg_ = torch.Generator().manual_seed(seed)
    # a sequence of draws from one generator: the streams stay in step
    ours = [g.uniform(shape, dtype), g.normal(shape, dtype), g.uniform(shape, dtype, -0.3, 0.7),
            g.normal(shape, dtype, 2.0, 0.5), g.normal((3,), dtype)]
    theirs = [torch.rand(shape, dtype=tdtype, generator=tg_),
              torch.randn(shape, dtype=tdtype, generator=tg_),
              torch.empty(shape, dtype=tdtype).uniform_(-0.3, 0.7, generator=tg_),
              torch.empty(shape, dtype=tdtype).normal_(2.0, 0.5, generator=tg_),
              torch.randn(3, dtype=tdtype, generator=tg_)]
    for a, b in zip(ours, theirs):
        b = b.numpy()
        assert a.dtype == b.dtype and a.shape == b.shape
        # torch's vectorised Box-Muller (16 or more normals) may differ in the last bit
        tol = 1e-15 if dtype == "float64" else 1e-6
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("seed", SEEDS)
def test_integers_permutation_bernoulli_match_torch(seed):
    g = _gen(seed)
    tg_ = torch.Generator().manual_seed(seed)
    np.testing.assert_array_equal(g.integers(0, 10, (7,)),
                                  torch.randint(0, 10, (7,), generator=tg_).numpy())
    np.testing.assert_array_equal(g.integers(-5, 2**33, (4,)),
                                  torch.randint(-5, 2**33, (4,), generator=tg_).numpy())
    np.testing.assert_array_equal(g.permutation(1000),
                                  torch.randperm(1000, generator=tg_).numpy())
    np.testing.assert_array_equal(g.bernoulli((33,), 0.3),
                                  torch.empty(33).bernoulli_(0.3, generator=tg_).numpy() == 1)
    np.testing.assert_array_equal(g.random_int64(()),
                                  torch.empty((), dtype=torch.int64).random_(generator=tg_).numpy())


def test_state_round_trip_and_errors():
    g = _gen(3)
    state = g.get_state()
    a = g.normal((5,), "float64")
    b = g.set_state(state).normal((5,), "float64")
    np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="from=3 >= to=3"):
        g.integers(3, 3, (1,))
    with pytest.raises(RuntimeError, match="CPU only"):
        Generator("cuda")


def _same_draws(program):
    import tracegrad as tg
    out = []
    for lib in (tg, torch):
        lib.manual_seed(11)
        out.append([np.asarray(t.detach().numpy() if hasattr(t, "detach") else t, dtype=float)
                    for t in program(lib)])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


RANDOM_PROGRAMS = {
    "creation": lambda L: [L.rand(3, 4), L.randn(20), L.randn(2, dtype=L.float64),
                           L.randint(0, 9, (5,)), L.randint(7, (3,)), L.randperm(30),
                           L.rand_like(L.zeros(17)), L.randn_like(L.zeros(3, dtype=L.float64))],
    "tensor methods": lambda L: [L.empty(9).uniform_(-2, 3), L.empty(18).normal_(1, 2),
                                 L.empty(25).bernoulli_(0.3), L.empty(4, dtype=L.int64).random_(),
                                 L.empty(6, dtype=L.int64).random_(3, 10)],
    "layers": lambda L: [p for m in (L.nn.Linear(20, 7), L.nn.Conv2d(3, 6, 5),
                                     L.nn.LSTM(4, 5, 2), L.nn.Embedding(10, 3),
                                     L.nn.GRU(3, 4), L.nn.Bilinear(2, 3, 4))
                         for p in m.parameters()],
    "init": lambda L: [L.nn.init.trunc_normal_(L.empty(40)),
                       L.nn.init.trunc_normal_(L.empty(300), 0.0, 1.0, 1.0, 3.0),
                       L.nn.init.orthogonal_(L.empty(4, 6)),
                       L.nn.init.xavier_normal_(L.empty(8, 6)),
                       L.nn.init.kaiming_normal_(L.empty(8, 6))],
    "dropout": lambda L: [L.nn.functional.dropout(L.ones(50), 0.3),
                          L.nn.functional.dropout2d(L.ones(2, 6, 3, 3), 0.3),
                          L.nn.functional.rrelu(L.linspace(-1, 1, 9), training=True)],
    "data": lambda L: [np.concatenate([b[0].numpy() for b in L.utils.data.DataLoader(
                           L.utils.data.TensorDataset(L.arange(23)), batch_size=4,
                           shuffle=True)]),
                       np.asarray([list(s.indices) for s in L.utils.data.random_split(
                           range(10), [3, 7])][0]),
                       np.asarray(list(L.utils.data.RandomSampler(range(9), replacement=True,
                                                                  num_samples=40)))],
}


@pytest.mark.parametrize("name", sorted(RANDOM_PROGRAMS))
def test_seeded_programs_draw_torchs_numbers(name):
    """After ``manual_seed``, creation functions, in-place draws, layer initialisation,
    dropout masks and data shuffling give PyTorch's own numbers."""
    _same_draws(RANDOM_PROGRAMS[name])
