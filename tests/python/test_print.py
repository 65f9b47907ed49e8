"""print(t): small tensors in full, large ones (over 1000 elements) summarized as PyTorch and numpy do,
with the first and last 3 items of each dimension and "..." between."""
import numpy as np

from lazygrad import Tensor


def test_small_tensors_print_in_full():
    assert str(Tensor([1.0, 2.5])) == "tensor([1., 2.5])"
    s = str(Tensor.arange(1000))
    assert "..." not in s and s.count(",") == 1000 and "999]" in s  # 999 between items, 1 before dtype=


def test_a_long_vector_shows_three_items_at_each_end():
    s = str(Tensor.arange(1001))
    assert s == "tensor([0, 1, 2, ..., 998, 999, 1000], dtype=int32)"


def test_a_matrix_shows_three_rows_and_columns_at_each_end():
    a = np.arange(100 * 100).reshape(100, 100)
    s = str(Tensor(a))
    lines = s.split("\n")
    assert lines[0] == "tensor([[0, 1, 2, ..., 97, 98, 99],"
    assert lines[3].strip() == "...,"
    assert lines[-1].strip() == "[9900, 9901, 9902, ..., 9997, 9998, 9999]])"
    assert len(lines) == 7 and s.count("...") == 7


def test_rand_100_by_100_is_short():
    s = str(Tensor.rand(100, 100))
    assert len(s) < 600 and s.count("\n") == 6


def test_3d_summarizes_every_dimension():
    s = str(Tensor.zeros(10, 10, 11, dtype="int32"))
    assert s.count("[") == 1 + 6 + 36 and "...," in s  # 6 of 10 blocks, 6 of 10 rows in each
