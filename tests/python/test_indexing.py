"""__getitem__ and __setitem__ against numpy (values) and PyTorch (gradients)."""
import numpy as np
import pytest
import torch
from conftest import compare, data

from lazygrad import LazygradError, Tensor, nn

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
    # PyTorch: a str index is a TypeError, an index of another type it does not take an IndexError
    with pytest.raises(TypeError):
        t["a"]
    with pytest.raises(IndexError):
        t[1.5]
    with pytest.raises(IndexError):
        Tensor(X)[[True, False, True]]
    with pytest.raises(IndexError):
        t[5] = 1


# Out-of-range integer-tensor indices: PyTorch raises at the call (RuntimeError or IndexError, with
# the value); lazygrad raises LazygradError (a RuntimeError) when the kernel that reads the index
# runs, naming the op, the dimension and its size.
A = np.arange(6.0, dtype=np.float32).reshape(2, 3)
OUT_OF_RANGE = [
    ("gather", lambda m, x, i: x.gather(1, i([[5], [0]])),
     "gather: an index is out of bounds for dimension 1 with size 3"),
    ("gather_negative", lambda m, x, i: x.gather(1, i([[-1], [0]])), "gather: an index is out of bounds"),
    ("index_select", lambda m, x, i: x.index_select(1, i([5])),
     "index_select: an index is out of bounds for dimension 1"),
    ("index_select_negative", lambda m, x, i: x.index_select(1, i([-1])),
     "index_select: an index is out of bounds"),
    ("getitem", lambda m, x, i: x[i([5])], "index: an index is out of bounds for dimension 0 with size 2"),
    ("getitem_below_minus_size", lambda m, x, i: x[i([-3])],
     "index: an index is out of bounds for dimension 0"),
    ("getitem_second_tensor", lambda m, x, i: x[i([0]), i([3])],
     "index: an index is out of bounds for dimension 1"),
    ("scatter", lambda m, x, i: x.scatter(1, i([[5], [0]]), 1.0),
     "scatter: an index is out of bounds for dimension 1"),
    ("scatter_add", lambda m, x, i: x.scatter_add(1, i([[3], [0]]), x[:, :1]),
     "scatter_add: an index is out of bounds"),
    ("take_along_dim", lambda m, x, i: m.take_along_dim(x, i([[5], [0]]), 1),
     "take_along_dim: an index is out of bounds"),
    ("take_along_dim_flat", lambda m, x, i: m.take_along_dim(x, i([6])),
     "take_along_dim: an index is out of bounds for dimension 0 with size 6"),
    ("one_hot", lambda m, x, i: m.one_hot(i([3]), 3),
     "one_hot: class values must be non-negative and smaller than num_classes"),
    ("cross_entropy", lambda m, x, i: m.cross_entropy(x, i([3, 0])),
     "cross_entropy: a target is out of bounds"),
    ("cross_entropy_negative", lambda m, x, i: m.cross_entropy(x, i([-1, 0])),
     "cross_entropy: a target is out of bounds"),
    ("nll_loss", lambda m, x, i: m.nll_loss(x, i([3, 0])), "nll_loss: a target is out of bounds"),
]


class Torch:
    take_along_dim = staticmethod(torch.take_along_dim)
    one_hot = staticmethod(torch.nn.functional.one_hot)
    cross_entropy = staticmethod(torch.nn.functional.cross_entropy)
    nll_loss = staticmethod(torch.nn.functional.nll_loss)


class Lazygrad:
    take_along_dim = staticmethod(lambda x, i, dim=None: x.take_along_dim(i, dim))
    one_hot = staticmethod(lambda i, n: i.one_hot(n))
    cross_entropy = staticmethod(lambda x, t: x.cross_entropy(t))
    nll_loss = staticmethod(lambda x, t: x.nll_loss(t))


@pytest.mark.parametrize("name,op,message", OUT_OF_RANGE, ids=[o[0] for o in OUT_OF_RANGE])
def test_out_of_range_indices_raise_like_torch(name, op, message):
    with pytest.raises((RuntimeError, IndexError)):
        op(Torch, torch.tensor(A), lambda v: torch.tensor(v))
    with pytest.raises(LazygradError, match=message):
        op(Lazygrad, Tensor(A), lambda v: Tensor(v)).realize()


def test_embedding_out_of_range_like_torch():
    for bad in (4, -1):
        with pytest.raises(IndexError, match="index out of range in self"):
            torch.nn.Embedding(4, 2)(torch.tensor([bad]))
        with pytest.raises(LazygradError, match="embedding: index out of range in self"):
            nn.Embedding(4, 2)(Tensor([bad])).realize()


def test_in_range_and_negative_indices_match_torch():
    x, tx = Tensor(A), torch.tensor(A)
    np.testing.assert_array_equal(x[Tensor([-1])].numpy(), tx[torch.tensor([-1])].numpy())  # wraps
    np.testing.assert_array_equal(x[Tensor([0, -2]), Tensor([-1, 2])].numpy(),
                                  tx[torch.tensor([0, -2]), torch.tensor([-1, 2])].numpy())
    np.testing.assert_array_equal(x.gather(1, Tensor([[2], [0]])).numpy(),
                                  tx.gather(1, torch.tensor([[2], [0]])).numpy())
    # ignore_index is no error, -100 by default or one given
    for target, kw in (([-100, 0], {}), ([5, 0], {"ignore_index": 5})):
        want = torch.nn.functional.cross_entropy(tx, torch.tensor(target), **kw).item()
        assert x.cross_entropy(Tensor(target), **kw).item() == pytest.approx(want, rel=1e-6)
    want = torch.nn.functional.nll_loss(tx, torch.tensor([-100, 0])).item()
    assert x.nll_loss(Tensor([-100, 0])).item() == pytest.approx(want)


def test_setitem_with_an_out_of_range_tensor_index():
    y = Tensor(A).contiguous()
    y[Tensor([5])] = 1.0
    with pytest.raises(LazygradError, match="index: an index is out of bounds for dimension 0 with size 2"):
        y.realize()
    t = torch.tensor(A)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        t[torch.tensor([5])] = 1.0
