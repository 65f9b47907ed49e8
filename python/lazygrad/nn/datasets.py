"""lazygrad.nn.datasets: Fashion-MNIST from Debian's dataset-fashion-mnist, as numpy arrays (tinygrad
has nn.datasets.mnist; the images are uint8 [N, 28, 28], the labels uint8 [N])."""
import gzip
from pathlib import Path

import numpy as np

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a numpy array."""
    if str(path).endswith(".gz"):
        with gzip.open(path) as f:
            data = f.read()
    else:
        data = Path(path).read_bytes()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    if len(data) != 4 + 4 * dims + int(np.prod(shape)):
        raise ValueError(f"{path}: {len(data)} bytes, the header promises shape {shape}")
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(folder=FASHION_MNIST):
    """(x_train, y_train, x_test, y_test) from the four IDX files in folder (plain or .gz)."""
    def one(name):
        f = Path(folder) / name
        return read_idx(f if f.exists() else f.with_name(name + ".gz"))
    return (one("train-images-idx3-ubyte"), one("train-labels-idx1-ubyte"), one("t10k-images-idx3-ubyte"),
            one("t10k-labels-idx1-ubyte"))
