"""``tg.tensor`` of sequences holding NumPy scalars or arrays: torch's dtype inference
(each element counts with its own dtype, a Python float with the default one)."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

DATA = [
    [np.float64(1.0)], [np.int32(1)], [np.float32(1.0), 2.0], [np.float64(1.0), 2],
    [1, np.int16(2)], [np.bool_(True)], [[np.float64(1.0)], [2.0]],
    [np.float64(1.0), np.float32(2.0)], [np.uint8(3), np.int8(-1)], [np.float16(1.5), 3],
    [np.complex64(1 + 2j), 1.0], [np.array([1, 2], np.int32), np.array([3, 4], np.int32)],
    [1.5, 2], [True, 2],
]


@pytest.mark.parametrize("data", DATA, ids=lambda d: repr(d)[:40])
def test_dtype_and_values_as_torch(data):
    ours, theirs = tg.tensor(data), torch.tensor(data)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
