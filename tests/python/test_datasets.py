"""nn.datasets.mnist: tinygrad's tensors (X uint8 [N, 1, 28, 28], Y uint8 [N]) from Debian's
Fashion-MNIST, MNIST from the user's IDX files, and a clear error naming the files and folders."""
import gzip
import os

import numpy as np
import pytest

from lazygrad.nn import datasets

FASHION = "/usr/share/datasets/fashion-mnist"


def write_idx(path, array, compress):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)


@pytest.mark.skipif(not os.path.isdir(FASHION), reason="needs Debian's dataset-fashion-mnist")
def test_fashion_mnist_as_tinygrad_gives_it(monkeypatch):
    monkeypatch.delenv("LAZYGRAD_FASHION_MNIST", raising=False)
    x_train, y_train, x_test, y_test = datasets.mnist(fashion=True)
    assert x_train.shape == (60000, 1, 28, 28) and y_train.shape == (60000,)
    assert x_test.shape == (10000, 1, 28, 28) and y_test.shape == (10000,)
    assert {str(t.dtype) for t in (x_train, y_train, x_test, y_test)} == {"dtypes.uint8"}
    want = datasets.fashion_mnist()
    np.testing.assert_array_equal(x_test.numpy()[:, 0], want[2])
    np.testing.assert_array_equal(y_train.numpy(), want[1])


def test_mnist_reads_the_users_idx_files(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    files = {"train-images-idx3-ubyte": rng.integers(0, 256, (5, 28, 28)),
             "train-labels-idx1-ubyte": rng.integers(0, 10, 5),
             "t10k-images-idx3-ubyte": rng.integers(0, 256, (3, 28, 28)),
             "t10k-labels-idx1-ubyte": rng.integers(0, 10, 3)}
    for i, (name, a) in enumerate(files.items()):
        write_idx(tmp_path / name, a, compress=i % 2 == 0)  # plain and .gz both found
    monkeypatch.setenv("LAZYGRAD_MNIST", str(tmp_path))
    out = datasets.mnist()
    for t, a in zip(out, files.values()):
        np.testing.assert_array_equal(t.numpy().reshape(a.shape), a)
    assert out[0].shape == (5, 1, 28, 28) and out[3].shape == (3,)


def test_missing_mnist_names_the_files_and_every_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LAZYGRAD_MNIST", str(tmp_path / "nowhere"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError) as e:
        datasets.mnist()
    msg = str(e.value)
    for part in ("train-images-idx3-ubyte", "t10k-labels-idx1-ubyte", str(tmp_path / "nowhere"),
                 "/usr/share/datasets/mnist", str(tmp_path / "cache" / "lazygrad" / "mnist"), "LAZYGRAD_MNIST"):
        assert part in msg, (part, msg)


def test_a_truncated_idx_file_is_refused(tmp_path):
    (tmp_path / "f").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 9, 1, 2]))
    with pytest.raises(ValueError, match="header promises"):
        datasets.read_idx(tmp_path / "f")
