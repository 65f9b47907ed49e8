"""Reading values out: numpy() (zero-copy where it can), tolist(), item(), __array__, str/repr."""
import numpy as np
import pytest

import lazygrad
from lazygrad import GlobalCounters, Tensor, dtypes


def test_numpy_is_a_view_of_the_buffer():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).realize()
    a, b = t.numpy(), t.numpy()
    assert a.base is not None and not a.flags["OWNDATA"]
    assert np.shares_memory(a, b)  # both view the tensor's buffer
    del t
    np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))  # the array keeps the buffer alive


def test_numpy_of_views_and_lazy_results():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = Tensor(x)
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(t[:, 1].numpy(), x[:, 1])
    np.testing.assert_array_equal((t * 2).numpy(), x * 2)
    assert (t * 2).numpy().flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(Tensor.ones(2, 2).numpy(), np.ones((2, 2), np.float32))
    assert Tensor([1.5, 2.5], dtype=dtypes.bfloat16).numpy().dtype == np.float32  # numpy has no bfloat16
    assert Tensor([1.5], dtype=dtypes.half).numpy().dtype == np.float16


def test_numpy_shares_memory_with_the_tensor():
    t = Tensor([1.0, 2.0]).realize()
    a = t.numpy()
    t.assign(Tensor([5.0, 6.0])).realize()  # written into the same buffer (nothing else reads it)
    np.testing.assert_array_equal(t.numpy(), [5, 6])
    np.testing.assert_array_equal(a, [5, 6])
    old = (t + 0).realize().numpy()  # an array of a buffer that later changes nothing
    t += 1
    np.testing.assert_array_equal(old, [5, 6])


@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int32, dtypes.bool, dtypes.uint8, dtypes.float16, dtypes.int64])
def test_tolist_item(dt):
    x = np.array([[1, 0, 3], [4, 5, 0]]).astype(dt.np)
    t = Tensor(x)
    assert t.tolist() == x.tolist()
    v = t[1, 0].item()
    assert v == x[1, 0].item() and type(v) is type(x[1, 0].item())


def test_scalars_and_protocols():
    t = Tensor(3.5)
    assert t.item() == 3.5 and float(t) == 3.5 and int(Tensor(7)) == 7
    assert Tensor([[1, 2]]).tolist() == [[1, 2]] and Tensor(True).item() is True
    np.testing.assert_array_equal(np.asarray(Tensor([1, 2])), [1, 2])
    assert np.asarray(Tensor([1, 2]), dtype=np.float64).dtype == np.float64
    s = str(Tensor([1.0, 2.0]))
    assert "1" in s and "2" in s
    r = repr(Tensor([1.0, 2.0], requires_grad=True))
    assert "(2,)" in r and "float32" in r and "requires_grad" in r
    assert Tensor.zeros(2, 3).ndim == 2 and Tensor.zeros(2, 3).numel() == 6 and len(Tensor.zeros(4, 1)) == 4
    assert Tensor.zeros(2, 3).size() == (2, 3) and Tensor.zeros(2, 3).size(1) == 3
    assert Tensor.zeros(2, 3, dtype=dtypes.float64).nbytes() == 48 and Tensor.zeros(2).element_size() == 4
    assert Tensor([1.0]).to("CPU").device == "CPU" and Tensor([1.0]).to(dtypes.half).dtype == dtypes.half
    assert Tensor([1.0]).to("float64").dtype == dtypes.float64
    d = {Tensor([1.0]): 1}  # hashable by identity
    assert len(d) == 1


def test_casts():
    t = Tensor([1.7, -2.2])
    assert t.int().tolist() == [1, -2] and t.long().dtype == dtypes.int64 and t.half().dtype == dtypes.float16
    assert t.bool().tolist() == [True, True] and t.int().float().dtype == dtypes.float32
    assert t.double().dtype == dtypes.float64 and t.cast(dtypes.uint8).dtype == dtypes.uint8
    assert t.bfloat16().dtype == dtypes.bfloat16 and t.short().dtype == dtypes.int16


def test_numpy_interop_operators():
    a = np.arange(3, dtype=np.float32)
    r = a + Tensor([1.0, 1.0, 1.0])  # numpy defers to Tensor.__radd__
    assert isinstance(r, Tensor)
    np.testing.assert_array_equal(r.numpy(), a + 1)
    np.testing.assert_array_equal((Tensor([1.0, 2.0, 3.0]) * a).numpy(), a * [1, 2, 3])
    np.testing.assert_array_equal((Tensor([1.0, 2.0]) + np.float32(2)).numpy(), [3, 4])


def test_realize_and_counters():
    GlobalCounters.reset()
    t = Tensor([1.0, 2.0]) * 3
    assert not t.is_realized
    assert t.realize() is t and t.is_realized
    assert GlobalCounters.kernel_count >= 1
    lazygrad._C.realize([Tensor([1.0]) + 1, Tensor([2.0]) * 2])
    a, b = Tensor([1.0]) + 1, Tensor([2.0]) * 2
    assert a.realize(b) is a and a.is_realized and b.is_realized
    assert lazygrad.Device.DEFAULT == "CPU"
