"""Python state a ``tg.compile``d function reads or writes outside its arguments: the
attributes of modules and plain objects, globals, closure variables, dict entries. A
compiled call must give what the eager call gives after that state changes between calls
(a guard: the graph is captured again), and a change the function makes must be made by
every compiled call (replayed) or break the graph. Each case runs eagerly and compiled
on the same sequence of calls and compares every result and the state after."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


class Holder:
    pass


HELD = Holder()
SCALE = 1.0
TABLE = {"k": 0}
COUNT = 0


def _holders():
    """name -> (read the number, set it): one per place a number can live."""
    box = Holder()
    module = nn.Linear(1, 1)
    cell = [None]

    def closure_factory():
        value = 1.0

        def read():
            return value

        def write(v):
            nonlocal value
            value = v
        return read, write
    read_cell, write_cell = closure_factory()
    cell[0] = (read_cell, write_cell)

    def set_global(v):
        global SCALE
        SCALE = v
    return {
        "plain object attribute": (lambda: box.v, lambda v: setattr(box, "v", v)),
        "module attribute": (lambda: module.scale, lambda v: setattr(module, "scale", v)),
        "module global": (lambda: SCALE, set_global),
        "global object's attribute": (lambda: HELD.v, lambda v: setattr(HELD, "v", v)),
        "global dict entry": (lambda: TABLE["k"], lambda v: TABLE.__setitem__("k", v)),
        "closure variable": (lambda: cell[0][0](), lambda v: cell[0][1](v)),
    }


@pytest.mark.parametrize("where", list(_holders()))
@pytest.mark.parametrize("kind", ["float", "int index", "None or not"])
def test_a_python_value_changed_between_calls_is_a_guard(where, kind):
    read, write = _holders()[where]
    values = {"float": [1.0, 1.0, 2.5, 2.5, -3.0, 1.0],
              "int index": [0, 0, 2, 1, 1, 0],
              "None or not": [None, None, 1, None, 1, 1]}[kind]

    def fn(x):
        v = read()
        if kind == "float":
            return x * v
        if kind == "int index":
            return x[v] * 2
        return x * 2 if v is None else x - 1

    def run(compiled):
        f = tg.compile(fn) if compiled else fn
        out = []
        for v in values:
            write(v)
            out.append(f(tg.tensor([1.0, 2.0, 3.0])).numpy().copy())
        return out, f
    eager, _ = run(False)
    comp, f = run(True)
    for a, b in zip(eager, comp):
        np.testing.assert_array_equal(a, b)
    assert f.explain().graph_count >= 2 and not f.explain().break_reasons
    # the recompile says which place changed
    named = {"plain object attribute": "'v'", "module attribute": "'scale'",
             "module global": "'SCALE'", "global object's attribute": "'v'",
             "global dict entry": "'k'",
             "closure variable": "a variable the function closes over"}[where]
    assert any(r.endswith("changed: " + named) for r in f.explain().recompile_reasons), \
        f.explain().recompile_reasons


def test_an_attribute_rebound_to_another_object_is_a_guard():
    class Config:
        def __init__(self, scale):
            self.scale = scale
    box = Holder()

    def fn(x):
        return x * box.config.scale
    f = tg.compile(fn)
    for s in (1.0, 1.0, 4.0, 4.0, 2.0):
        box.config = Config(s)          # a new object each call, its number the same twice
        np.testing.assert_array_equal(f(tg.ones(2)).numpy(), [s, s])


def test_a_swapped_submodule_is_a_guard():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2))
    f = tg.compile(model)
    x = tg.ones(1, 3)
    for _ in range(2):
        f(x)
    model[0] = nn.Linear(3, 2)
    with tg.no_grad():
        np.testing.assert_array_equal(f(x).numpy(), model(x).numpy())


class Carry(nn.Module):
    """A hidden state kept as a tuple attribute: read, then stored anew, each call."""

    def __init__(self, reads):
        super().__init__()
        self.reads = reads
        self.lin = nn.Linear(2, 2)
        self.hidden = (tg.zeros(1, 2), tg.zeros(1, 2))

    def forward(self, x):
        if self.reads:
            h, c = self.hidden
        else:       # the BiLSTM-CRF tutorial's init_hidden: replaced before it is read
            self.hidden = (tg.randn(1, 2), tg.zeros(1, 2))
            h, c = self.hidden
        h2 = tg.tanh(self.lin(x) + h)
        self.hidden = (h2.detach(), c + 1)
        return h2.sum()


@pytest.mark.parametrize("reads", [True, False])
def test_a_tuple_of_tensors_stored_on_a_module_is_replayed(reads):
    def run(compiled):
        tg.manual_seed(0)
        m = Carry(reads)
        f = tg.compile(m) if compiled else m
        out = [f(tg.ones(1, 2)).item() for _ in range(6)]
        return out, [t.numpy().copy() for t in m.hidden], f
    (a, ha, _), (b, hb, f) = run(False), run(True)
    assert a == b
    for u, v in zip(ha, hb):
        np.testing.assert_array_equal(u, v)
    assert not f.explain().break_reasons
    if not reads:
        assert f.explain().graph_count == 1     # no guard on what it replaces unread


def test_a_tensor_stored_on_a_plain_object_is_replayed():
    box = Holder()

    def fn(x):
        box.last = x * 2
        return x + 1
    f = tg.compile(fn)
    for k in range(4):
        f(tg.ones(2) * k)
        np.testing.assert_array_equal(box.last.numpy(), [2.0 * k, 2.0 * k])


def test_a_global_counter_changed_inside_breaks_and_counts_every_call():
    def fn(x):
        global COUNT
        COUNT += 1
        return x + 1
    global COUNT
    COUNT = 0
    f = tg.compile(fn)
    for _ in range(4):
        f(tg.ones(2))
    assert COUNT == 4
    assert "COUNT" in f.explain().break_reasons[0]


def test_a_plain_objects_number_changed_inside_breaks_and_counts_every_call():
    box = Holder()
    box.n = 0

    def fn(x):
        box.n += 1
        return x * box.n
    f = tg.compile(fn)
    outs = [f(tg.ones(1)).item() for _ in range(4)]
    assert outs == [1.0, 2.0, 3.0, 4.0] and box.n == 4


class Hidden:
    __slots__ = ("model", "opt")        # where tg.compile's walk does not look


@pytest.mark.parametrize("opt_cls", [tg.optim.Adam, tg.optim.SGD])
def test_an_optimizer_the_walk_misses_breaks_before_changing_its_state(opt_cls):
    """A capture must not update an optimizer's state arrays in place when they are not
    inputs of the graph: the call would then run eagerly on moments already moved."""
    def run(compiled):
        tg.manual_seed(0)
        h = Hidden()
        h.model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
        h.opt = opt_cls(h.model.parameters(), lr=0.05, **(
            {"momentum": 0.9} if opt_cls is tg.optim.SGD else {}))

        def step(x):
            h.opt.zero_grad()
            loss = (h.model(x) ** 2).mean()
            loss.backward()
            h.opt.step()
            return loss
        f = tg.compile(step) if compiled else step
        losses = [f(tg.ones(3, 4) * (i + 1) * 0.1).item() for i in range(6)]
        return losses, [p.detach().numpy().copy() for p in h.model.parameters()], f
    (a, pa, _), (b, pb, f) = run(False), run(True)
    assert a == b
    for u, v in zip(pa, pb):
        np.testing.assert_array_equal(u, v)
    assert "did not reach" in f.explain().break_reasons[0]


def test_threads_guard_their_own_state_and_items_at_once():
    """Captures in several threads at once (reach's cached code scans, the guards, the
    numbers read by .item()): every value is each thread's own."""
    import threading
    errors, results = [], {}

    def work(i):
        try:
            box = Holder()

            def fn(v, idx):
                return v[idx.item()] * box.scale
            f = tg.compile(fn)
            out = []
            for k in range(6):
                box.scale = float(i + k // 2)
                v = tg.arange(4.0) + i
                out.append(f(v, tg.tensor([k % 4])).item())
            results[i] = out
        except Exception as e:      # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert results[i] == [float((k % 4 + i) * (i + k // 2)) for k in range(6)]
