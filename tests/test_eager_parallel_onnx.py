"""``torch.nn.parallel`` and ``torch.onnx`` as CPU PyTorch has them: ``DataParallel`` a
pass-through holding ``module``, ``DistributedDataParallel`` refused without a process
group, ``onnx.export`` refused with a message naming tracegrad's JSON."""
import importlib
import json

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


def test_modules_import_by_name():
    assert importlib.import_module("tracegrad.nn.parallel") is tg.nn.parallel
    assert importlib.import_module("tracegrad.onnx") is tg.onnx
    assert tg.nn.DataParallel is tg.nn.parallel.DataParallel
    assert set(["DataParallel", "DistributedDataParallel", "data_parallel"]) <= set(
        dir(tg.nn.parallel)) & set(dir(torch.nn.parallel))


def test_data_parallel_is_the_cpu_pass_through():
    def build(lib):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        with lib.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(lib.tensor(np.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1),
                                   dtype=lib.float32))
        return net

    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    ours, theirs = tg.nn.DataParallel(build(tg)), torch.nn.DataParallel(build(torch))
    assert ours.device_ids == theirs.device_ids == []
    assert isinstance(ours.module, tg.nn.Sequential)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    y, ty = ours(tg.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    y.sum().backward()
    ty.sum().backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    # a checkpoint saved from the wrapper loads back into it
    again = tg.nn.DataParallel(tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(),
                                                tg.nn.Linear(4, 2)))
    again.load_state_dict(ours.state_dict())
    np.testing.assert_array_equal(again(tg.tensor(x)).detach().numpy(), y.detach().numpy())


def test_distributed_and_functional_refused_as_torch():
    for lib in (tg, torch):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            lib.nn.parallel.DistributedDataParallel(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(lib.nn.Linear(2, 2), lib.ones(1, 2))


def test_onnx_export_says_how_to_save_json(tmp_path):
    net = tg.nn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="cannot write ONNX") as info:
        tg.onnx.export(net, (tg.ones(1, 2),), str(tmp_path / "m.onnx"))
    assert "to_json" in str(info.value) and not (tmp_path / "m.onnx").exists()
    assert tg.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    # what the message says to do works
    x = tg.ones(1, 2, requires_grad=True)
    out = net(x)
    text = tg.recorded_graph(out).to_json()
    assert json.loads(text) and tg.Graph.from_json(text).outputs
