"""issue 16's math group from Python: a few values against PyTorch, tinygrad's and PyTorch's names
and keywords, and the exception classes (PyTorch's, which lazygrad's subclass). The C++ fixture
suite (tests/test_api_math.cpp) holds the full parity cases."""
import math

import numpy as np
import pytest
import torch

from lazygrad import LazygradError, LazygradIndexError, Tensor, dtypes

X = np.array([[-0.9, -0.25, 0.0, 0.4], [0.75, 0.99, -0.6, 0.1], [0.3, -0.05, 0.5, -0.8]], dtype=np.float32)


def close(ours, theirs, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "log10",
                                  "arcsin", "arccos", "arctan", "arcsinh", "arctanh"])
def test_unary_against_torch_with_gradient(name):
    torch_name = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arctanh": "atanh"}
    x = np.abs(X) + 0.01 if name == "log10" else X
    t = Tensor(x, requires_grad=True)
    r = torch.tensor(x, requires_grad=True)
    ours, theirs = getattr(t, name)(), getattr(torch, torch_name.get(name, name))(r)
    close(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    close(t.grad, r.grad, rtol=1e-4)


def test_acosh_and_domain_errors_give_nan():
    x = np.array([1.0, 1.5, 10.0, 0.5], dtype=np.float32)
    close(Tensor(x).acosh(), torch.tensor(x).acosh())
    assert math.isnan(Tensor([2.0]).asin().item())
    assert math.isnan(Tensor([-2.0]).acos().item())


def test_binary_ops_take_tensors_and_numbers():
    a, b = X, X[::-1].copy()
    close(Tensor(a).atan2(Tensor(b)), torch.atan2(torch.tensor(a), torch.tensor(b)))
    close(Tensor(a).fmod(0.3), torch.fmod(torch.tensor(a), 0.3))
    close(Tensor(a).copysign(-1), torch.copysign(torch.tensor(a), -1))
    close(Tensor(a).logaddexp(Tensor(b)), torch.logaddexp(torch.tensor(a), torch.tensor(b)))
    close(Tensor(a).logaddexp2(1.5), torch.logaddexp2(torch.tensor(a), torch.tensor(1.5)))
    i = Tensor([-7, 7, -7, 7])
    np.testing.assert_array_equal(i.fmod(Tensor([3, 3, -3, -3])).numpy(), [-1, 1, -1, 1])


def test_isclose_and_allclose():
    a, b = Tensor([1.0, 2.0, float("nan")]), Tensor([1.0, 2.1, float("nan")])
    np.testing.assert_array_equal(a.isclose(b).numpy(), [True, False, False])
    np.testing.assert_array_equal(a.isclose(b, rtol=0.1, equal_nan=True).numpy(), [True, True, True])
    assert a.allclose(b, atol=0.2, equal_nan=True) is True
    assert a.allclose(b) is False


def test_diag_diagonal_unfold():
    v = np.arange(3, dtype=np.float32)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    close(Tensor(v).diag(1), torch.tensor(v).diag(1))
    close(Tensor(m).diag(diagonal=-1), torch.tensor(m).diag(diagonal=-1))
    close(Tensor(m).diagonal(offset=1, dim1=1, dim2=0), torch.tensor(m).diagonal(offset=1, dim1=1, dim2=0))
    close(Tensor(m).diagonal(), torch.tensor(m).diagonal())  # tinygrad's spelling: no arguments
    w = Tensor(m).unfold(1, 2, 1)
    assert w.shape == (3, 3, 2)
    close(w, torch.tensor(m).unfold(1, 2, 1))
    close(Tensor(m).unfold(dimension=0, size=2, step=2), torch.tensor(m).unfold(dimension=0, size=2, step=2))


def test_running_extremes_return_values_and_int64_indices():
    x = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [0.0, -1.0, -1.0, 4.0, 4.0]], dtype=np.float32)
    for name in ("cummax", "cummin"):
        for kw in ({"dim": 1}, {"axis": 1}):
            values, indices = getattr(Tensor(x), name)(**kw)
            r = getattr(torch, name)(torch.tensor(x), dim=1)
            close(values, r.values)
            assert indices.dtype == dtypes.int64
            np.testing.assert_array_equal(indices.numpy(), r.indices.numpy())
    close(Tensor(x).logcumsumexp(1), torch.logcumsumexp(torch.tensor(x), 1))
    close(Tensor(x).logcumsumexp(dim=0), torch.logcumsumexp(torch.tensor(x), dim=0))


def test_softmin_and_normalize():
    close(Tensor(X).softmin(1), torch.nn.functional.softmin(torch.tensor(X), dim=1))
    close(Tensor(X).softmin(dim=0), torch.nn.functional.softmin(torch.tensor(X), dim=0))
    close(Tensor(X).normalize(), torch.nn.functional.normalize(torch.tensor(X)))
    close(Tensor(X).normalize(p=1.0, dim=0, eps=1e-3), torch.nn.functional.normalize(torch.tensor(X), p=1.0, dim=0, eps=1e-3))


def test_exception_classes():
    with pytest.raises(IndexError):  # PyTorch's class for a dimension out of range
        Tensor(X).cummax(2)
    with pytest.raises(LazygradIndexError):
        Tensor([1.0]).diagonal()
    with pytest.raises(RuntimeError, match="unfold"):  # size larger than the dimension
        Tensor(X).unfold(1, 5, 1)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):  # shapes that do not match
        Tensor(X).atan2(Tensor([1.0, 2.0]))
    with pytest.raises(LazygradError, match="logaddexp"):
        Tensor([1, 2]).logaddexp(Tensor([1, 2]))
    with pytest.raises(RuntimeError, match="diag"):
        Tensor.zeros(2, 2, 2).diag()


def test_im2col_is_F_unfold():
    from lazygrad import _C
    x = np.arange(2 * 3 * 5 * 4, dtype=np.float32).reshape(2, 3, 5, 4)
    close(_C.unfold(Tensor(x), 2), torch.nn.functional.unfold(torch.tensor(x), 2))
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    close(_C.unfold(Tensor(x), **kw), torch.nn.functional.unfold(torch.tensor(x), **kw))
    with pytest.raises(RuntimeError, match="unfold"):
        _C.unfold(Tensor(x), 9)
