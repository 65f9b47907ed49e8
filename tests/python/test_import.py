"""The module imports, computes, and turns C++ errors into Python exceptions."""
import numpy as np
import pytest

import lazygrad
from lazygrad import Tensor


def test_add_matches_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, dtype=np.float32)
    out = (Tensor(a) + Tensor(b)).numpy()
    np.testing.assert_array_equal(out, a + b)
    assert (Tensor(a) + Tensor(b)).shape == (2, 3)


def test_error_is_a_python_exception():
    with pytest.raises(RuntimeError, match="add"):
        Tensor(np.zeros((2, 3), np.float32)) + Tensor(np.zeros((4, 5), np.float32))
    assert issubclass(lazygrad.LazygradError, RuntimeError)
