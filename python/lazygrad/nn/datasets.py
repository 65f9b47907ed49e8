"""lazygrad.nn.datasets: MNIST and Fashion-MNIST from IDX files on disk (nothing is downloaded).

mnist(device=None, fashion=False) is tinygrad's: (X_train, Y_train, X_test, Y_test) as Tensors, X
uint8 [N, 1, 28, 28] and Y uint8 [N]. fashion_mnist(folder) gives the same four as numpy arrays
(images [N, 28, 28]). Where it looks: mnist_folders(fashion).
"""
import gzip
import os
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


MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
               "t10k-labels-idx1-ubyte")


def mnist_folders(fashion=False):
    """The folders mnist() tries, in order: $LAZYGRAD_FASHION_MNIST (fashion) or $LAZYGRAD_MNIST,
    then Debian's dataset package folder (/usr/share/datasets/fashion-mnist; .../mnist for MNIST,
    which Debian does not ship), then the user's cache ($XDG_CACHE_HOME or ~/.cache, lazygrad/mnist
    or lazygrad/fashion-mnist)."""
    name = "fashion-mnist" if fashion else "mnist"
    env = os.getenv("LAZYGRAD_FASHION_MNIST" if fashion else "LAZYGRAD_MNIST")
    cache = Path(os.getenv("XDG_CACHE_HOME") or Path.home() / ".cache") / "lazygrad" / name
    return ([Path(env)] if env else []) + [Path("/usr/share/datasets") / name, cache]


def _find(folder, name):
    for f in (Path(folder) / name, Path(folder) / (name + ".gz")):
        if f.exists():
            return f
    return None


def mnist(device=None, fashion=False):
    """tinygrad's nn.datasets.mnist: (X_train, Y_train, X_test, Y_test) Tensors on `device`, the
    images uint8 [N, 1, 28, 28], the labels uint8 [N], read from the first folder of
    mnist_folders(fashion) that has the four IDX files (plain or .gz). FileNotFoundError, naming
    the files and every folder tried, when none has them."""
    folders = mnist_folders(bool(fashion))
    for folder in folders:
        if all(_find(folder, n) for n in MNIST_FILES):
            break
    else:
        what = "Fashion-MNIST" if fashion else "MNIST"
        hint = ("install Debian's dataset-fashion-mnist or set LAZYGRAD_FASHION_MNIST" if fashion else
                "set LAZYGRAD_MNIST to the folder that holds them")
        raise FileNotFoundError(f"mnist: the {what} files {', '.join(MNIST_FILES)} (plain or .gz) are in none of "
                                f"{', '.join(str(f) for f in folders)}; {hint} (lazygrad downloads nothing)")
    from lazygrad._C import Tensor  # noqa: PLC0415 (nn imports this module while Tensor is being set up)
    x_train, y_train, x_test, y_test = (read_idx(_find(folder, n)) for n in MNIST_FILES)
    return (Tensor(x_train.reshape(-1, 1, 28, 28), device=device), Tensor(y_train, device=device),
            Tensor(x_test.reshape(-1, 1, 28, 28), device=device), Tensor(y_test, device=device))


def fashion_mnist(folder=FASHION_MNIST):
    """(x_train, y_train, x_test, y_test) from the four IDX files in folder (plain or .gz)."""
    def one(name):
        f = Path(folder) / name
        return read_idx(f if f.exists() else f.with_name(name + ".gz"))
    return (one("train-images-idx3-ubyte"), one("train-labels-idx1-ubyte"), one("t10k-images-idx3-ubyte"),
            one("t10k-labels-idx1-ubyte"))
