"""__getitem__ and __setitem__ against numpy (values) and PyTorch (gradients)."""
import numpy as np
import pytest
import torch
from conftest import compare, data

from lazygrad import Tensor

X = np.arange(60).reshape(3, 4, 5)

INDICES = [
    1, -1, (0, 2), (2, -1, 4), slice(1, None), slice(None, None, -1), (slice(None), slice(3, 0, -2)),
    (Ellipsis, 1), (None, 1, Ellipsis, None), (slice(None), None, slice(1, 4, 2)), (slice(-2, None), 3),
    (slice(10, 20),), (slice(2, 1),), (Ellipsis,), (), (0, slice(None, None, -3), slice(None, None, -1)),
    [2, 0], [[0, 1], [2, 2]], ([0, 2], [1, 3]), (slice(None), [3, 0, 3]), ([0, 1], slice(None), [4, 0]),
    (1, [0, 2], slice(1, 3)), ([[0], [2]], [1, 3]), (slice(None), [1, 2], [0, 1]), (Ellipsis, [-1, 0]),
    (None, [0, 1], 2), (np.array([2, 1]),), (0, np.array([[1, 2]]), -1), ([-1, -3], [-4, 0], [-5, 4]),
]


def ids(i):
    return repr(i).replace(" ", "")


@pytest.mark.parametrize("index", INDICES, ids=[ids(i) for i in INDICES])
def test_getitem_matches_numpy(index):
    got = Tensor(X)[index]
    want = X[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_with_tensor_indices_and_grad():
    idx = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(Tensor(X)[Tensor(idx)].numpy(), X[idx])
    np.testing.assert_array_equal(Tensor(X)[:, Tensor(idx), Tensor([0, 4])].numpy(), X[:, idx, [0, 4]])
    x = data((3, 4, 5))
    ti = torch.tensor(idx)
    compare(lambda t: t[1:, ::-2, None], lambda t: t[1:, 1::2].flip(1)[:, :, None], x)
    compare(lambda t: t[Tensor(idx)], lambda t: t[ti], x)
    compare(lambda t: t[[0, 2], :, [1, 1]], lambda t: t[[0, 2], :, [1, 1]], x)  # duplicates accumulate
    compare(lambda t: t[..., Tensor([4, 0])] * t[0, 0, 0], lambda t: t[..., [4, 0]] * t[0, 0, 0], x)


SETS = [
    (1, 7), ((0, slice(1, 3)), 5), ((Ellipsis, -1), -1), ((slice(None), slice(None, None, -2)), 9),
    ((slice(None, 2), 0, slice(None)), np.arange(5)), ([0, 2], 3), (([0, 2], [1, 3]), np.array([[10], [11]])),
    ((slice(None), [0, 0], 1), np.array([4, 8])), ((None, 1, 2), 100), (([-1], slice(None), [-1]), 77),
]


@pytest.mark.parametrize("index,value", SETS, ids=[ids(s[0]) for s in SETS])
def test_setitem_matches_numpy(index, value):
    want = X.copy()
    want[index] = value
    t = Tensor(X)
    alias = t
    t[index] = Tensor(value) if isinstance(value, np.ndarray) else value
    assert alias is t
    np.testing.assert_array_equal(t.numpy(), want)


def test_setitem_through_views_and_dtypes():
    t = Tensor.zeros(3, 4)
    row = t[1]
    t[1, 1:3] = Tensor([1.0, 2.0])
    np.testing.assert_array_equal(row.numpy(), [0, 1, 2, 0])
    row[0] = 5.5  # assigning into a view writes the base
    assert t[1, 0].item() == 5.5
    t[2] = 3  # an int value is cast to the tensor's dtype
    assert t.dtype.name == "float32" and t[2].tolist() == [3.0] * 4
    b = Tensor([True, False])
    b[1] = True
    assert b.tolist() == [True, True]
    n = Tensor(np.zeros((2, 2), np.int64))
    n[:, 1] = [7, 8]
    assert n.tolist() == [[0, 7], [0, 8]]


def test_index_errors():
    t = Tensor(X)
    for bad in (3, -4, (0, 4), (0, 0, 5), [0, 3], (Ellipsis, Ellipsis), (0, 0, 0, 0)):
        with pytest.raises(IndexError):
            t[bad]
    with pytest.raises(IndexError, match="bool mask"):
        t[X > 3]
    with pytest.raises(TypeError):
        t["a"]
    with pytest.raises(TypeError):
        t[1.5]
    with pytest.raises(IndexError):
        Tensor(X)[[True, False, True]]
    with pytest.raises(IndexError):
        t[5] = 1
