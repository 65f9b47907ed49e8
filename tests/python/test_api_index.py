"""The Python spellings of issue 16's indexing, pooling, interpolation and padding ops against
PyTorch: keywords (PyTorch's and tinygrad's), tuples returned, and the exception classes. The C++
fixtures (tests/test_api_index.cpp) cover the values and gradients case by case."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import compare, data

from lazygrad import (LazygradError, LazygradNotImplementedError, LazygradTypeError, LazygradValueError, Tensor,
                      dtypes)


def test_masked_select_broadcasts():
    x, m = data((3, 4)), data((4,), seed=1) > 0
    compare(lambda a: a.masked_select(Tensor(m)), lambda a: torch.masked_select(a, torch.tensor(m)), x)


def test_nonzero_forms():
    x = np.array([[0, 1.5, 0], [2, 0, np.nan]], dtype=np.float32)
    got = Tensor(x).nonzero()
    assert got.dtype == dtypes.int64
    np.testing.assert_array_equal(got.numpy(), torch.nonzero(torch.tensor(x)).numpy())
    parts = Tensor(x).nonzero(as_tuple=True)
    assert isinstance(parts, tuple) and len(parts) == 2
    for p, w in zip(parts, torch.nonzero(torch.tensor(x), as_tuple=True)):
        np.testing.assert_array_equal(p.numpy(), w.numpy())
    np.testing.assert_array_equal(Tensor(x).argwhere().numpy(), torch.argwhere(torch.tensor(x)).numpy())
    assert Tensor(np.zeros((2, 3), np.float32)).nonzero().shape == (0, 2)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_keyword(reduce):
    x, src = data((3, 5)), data((3, 4), seed=2)
    i = np.random.default_rng(3).integers(0, 5, (3, 4))
    got = Tensor(x).scatter(1, Tensor(i), Tensor(src), reduce=reduce).numpy()
    want = torch.tensor(x).scatter(1, torch.tensor(i), torch.tensor(src), reduce=reduce).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    got = Tensor(x).scatter(1, Tensor(i), 2.0, reduce=reduce).numpy()
    want = torch.tensor(x).scatter(1, torch.tensor(i), 2.0, reduce=reduce).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x, src = data((3, 5), "pos"), data((3, 4), "pos", seed=2)
    i = np.random.default_rng(3).integers(0, 5, (3, 4))
    compare(lambda a, s: a.scatter_reduce(1, Tensor(i), s, reduce, include_self=include_self),
            lambda a, s: a.scatter_reduce(1, torch.tensor(i), s, reduce, include_self=include_self), x, src)


def test_max_pool_return_indices_and_unpool():
    x = data((2, 3, 6, 7))
    values, indices = Tensor(x).max_pool2d(3, stride=2, padding=1, return_indices=True)
    tv, ti = F.max_pool2d(torch.tensor(x), 3, stride=2, padding=1, return_indices=True)
    np.testing.assert_allclose(values.numpy(), tv.numpy())
    np.testing.assert_array_equal(indices.numpy(), ti.numpy())
    assert indices.dtype == dtypes.int64
    v2, i2 = Tensor(x).max_pool2d(kernel_size=2, return_indices=True)
    out = v2.max_unpool2d(i2, kernel_size=2, output_size=(6, 7))
    tv2, ti2 = F.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_allclose(out.numpy(), F.max_unpool2d(tv2, ti2, 2, output_size=(6, 7)).numpy())
    for nd in (1, 3):
        shape = (1, 2) + (4,) * nd
        xv = data(shape, seed=nd)
        v, i = getattr(Tensor(xv), f"max_pool{nd}d")(2, return_indices=True)
        tv, ti = getattr(F, f"max_pool{nd}d")(torch.tensor(xv), 2, return_indices=True)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        u = getattr(v, f"max_unpool{nd}d")(i, 2)
        np.testing.assert_allclose(u.numpy(), getattr(F, f"max_unpool{nd}d")(tv, ti, 2).numpy())


def test_pools_3d():
    x = data((1, 2, 4, 5, 6))
    compare(lambda a: a.max_pool3d(kernel_size=2, stride=1), lambda a: F.max_pool3d(a, 2, 1), x)
    compare(lambda a: a.avg_pool3d(kernel_size=3, stride=2, padding=1, count_include_pad=False),
            lambda a: F.avg_pool3d(a, 3, 2, 1, count_include_pad=False), x)


@pytest.mark.parametrize("mode,shape,kw", [
    ("trilinear", (1, 2, 2, 3, 4), {"align_corners": True}),
    ("trilinear", (1, 1, 3, 2, 4), {"align_corners": False}),
    ("nearest", (1, 2, 2, 3, 4), {}),
    ("nearest-exact", (2, 3, 5), {}),
    ("nearest-exact", (1, 2, 5, 3), {}),
    ("nearest-exact", (1, 1, 3, 2, 5), {}),
    ("area", (1, 2, 7, 5), {}),
    ("bicubic", (1, 2, 4, 5), {"align_corners": False}),
    ("bicubic", (2, 1, 5, 3), {"align_corners": True}),
])
def test_interpolate_modes(mode, shape, kw):
    x = data(shape)
    size = tuple(d + 2 for d in shape[2:])
    compare(lambda a: a.interpolate(size=size, mode=mode, **kw),
            lambda a: F.interpolate(a, size=size, mode=mode, **kw), x)


def test_interpolate_tinygrad_linear_is_trilinear_in_5d():
    x = data((1, 1, 2, 3, 2))
    got = Tensor(x).interpolate(size=(4, 4, 4)).numpy()  # tinygrad's default mode "linear"
    want = F.interpolate(torch.tensor(x), size=(4, 4, 4), mode="trilinear", align_corners=False).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(mode):
    x = data((2, 3, 4, 5))
    compare(lambda a: a.pad((1, 2, 3, 0), mode=mode), lambda a: F.pad(a, (1, 2, 3, 0), mode=mode), x)
    # tinygrad's form: one (before, after) pair or None per dimension, first dimension first
    got = Tensor(x).pad((None, None, (3, 0), (1, 2)), mode=mode).numpy()
    np.testing.assert_allclose(got, F.pad(torch.tensor(x), (1, 2, 3, 0), mode=mode).numpy())


def test_exception_classes():
    x = Tensor(data((2, 3)))
    i = Tensor(np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError, match="scatter"):
        x.scatter(1, i, Tensor(data((1, 2))), reduce="max")
    with pytest.raises(LazygradValueError, match="scatter_reduce"):
        x.scatter_reduce(1, i, Tensor(data((1, 2))), "add")
    with pytest.raises(IndexError, match="scatter_reduce"):
        x.scatter_reduce(2, i, Tensor(data((1, 2))), "sum")
    with pytest.raises(RuntimeError, match="masked_select"):
        x.masked_select(Tensor(np.ones((2, 2), bool)))
    with pytest.raises(RuntimeError, match="pad.*less than"):
        x.pad((3, 3), mode="reflect")
    with pytest.raises(NotImplementedError, match="pad"):
        x.pad((1, 1), mode="mirror")
    with pytest.raises(LazygradNotImplementedError, match="bicubic"):
        Tensor(data((1, 1, 3, 3, 3))).interpolate(size=(4, 4, 4), mode="bicubic")  # PyTorch: 4-D only
    with pytest.raises(NotImplementedError, match="trilinear"):
        Tensor(data((1, 1, 3, 3))).interpolate(size=(4, 4), mode="trilinear")
    v, idx = Tensor(data((1, 1, 4, 4))).max_pool2d(2, return_indices=True)
    with pytest.raises(ValueError, match="max_unpool2d"):
        v.max_unpool2d(idx, 2, output_size=(9, 9))
    with pytest.raises(TypeError, match="max_unpool2d"):
        v.max_unpool2d(idx.cast(dtypes.float32), 2)
    with pytest.raises(LazygradError, match="max_unpool"):
        v.max_unpool2d(Tensor(np.full((1, 1, 2, 2), 16, np.int64)), 2).numpy()
    assert issubclass(LazygradTypeError, TypeError)
