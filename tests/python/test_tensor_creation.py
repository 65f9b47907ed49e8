"""Tensor(...) from every kind of data, dtype inference, and the creation class methods."""
import numpy as np
import pytest
import torch

from lazygrad import Tensor, dtypes

NUMPY_DTYPES = [
    (np.bool_, dtypes.bool), (np.uint8, dtypes.uint8), (np.int8, dtypes.int8), (np.int16, dtypes.int16),
    (np.uint16, dtypes.uint16), (np.int32, dtypes.int32), (np.uint32, dtypes.uint32), (np.int64, dtypes.int64),
    (np.uint64, dtypes.uint64), (np.float16, dtypes.float16), (np.float32, dtypes.float32),
    (np.float64, dtypes.float64),
]


def sample(np_dtype, shape=(3, 4)):
    a = np.arange(np.prod(shape)).reshape(shape) * 3 - 5
    if np_dtype == np.bool_:
        return a % 3 == 0
    if np.issubdtype(np_dtype, np.unsignedinteger):
        a = np.abs(a)
    if np.issubdtype(np_dtype, np.floating):
        a = a / 4
    return a.astype(np_dtype)


@pytest.mark.parametrize("np_dtype,dt", NUMPY_DTYPES, ids=[d[0].__name__ for d in NUMPY_DTYPES])
def test_from_every_numpy_dtype(np_dtype, dt):
    a = sample(np_dtype)
    t = Tensor(a)
    assert t.dtype == dt and t.shape == (3, 4)
    out = t.numpy()
    assert out.dtype == a.dtype
    np.testing.assert_array_equal(out, a)
    # non-contiguous views of every dtype: transposed, negative strides, strided
    for view in (a.T, a[::-1, ::2], a[:, ::-3], np.broadcast_to(a[:1], (2, 3, 4))):
        np.testing.assert_array_equal(Tensor(view).numpy(), view)
    # and through PyTorch
    if np_dtype not in (np.uint16, np.uint32, np.uint64):
        np.testing.assert_array_equal(Tensor(a).numpy(), torch.tensor(a).numpy())


def test_from_numpy_edge_cases():
    np.testing.assert_array_equal(Tensor(np.array(2.5, np.float64)).numpy(), np.array(2.5))
    assert Tensor(np.array(2.5)).shape == ()
    assert Tensor(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert Tensor(np.zeros((0, 3), np.float32)).numpy().shape == (0, 3)
    big = np.arange(6, dtype=">i4").reshape(2, 3)  # non-native byte order
    np.testing.assert_array_equal(Tensor(big).numpy(), big)
    assert Tensor(np.float32(1.5)).dtype == dtypes.float32 and Tensor(np.int16(3)).dtype == dtypes.int16
    f = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(Tensor(f).numpy(), f)
    assert Tensor(np.arange(3, dtype=np.longdouble)).dtype == dtypes.float64
    # anything with __array__ (a torch tensor)
    np.testing.assert_array_equal(Tensor(torch.arange(4)).numpy(), np.arange(4))


@pytest.mark.parametrize(
    "data,dt,shape",
    [
        (1.5, dtypes.float32, ()), (3, dtypes.int32, ()), (True, dtypes.bool, ()),
        ([1, 2, 3], dtypes.int32, (3,)), ([1.0, 2, 3], dtypes.float32, (3,)), ([[True], [False]], dtypes.bool, (2, 1)),
        ([[1, 2], [3, 4]], dtypes.int32, (2, 2)), ((1, 2.5), dtypes.float32, (2,)), ([], dtypes.float32, (0,)),
        ([2**40], dtypes.int64, (1,)), (2**40, dtypes.int64, ()),
    ],
)
def test_python_data_and_inference(data, dt, shape):
    t = Tensor(data)
    assert t.dtype == dt and t.shape == shape
    np.testing.assert_array_equal(t.numpy(), np.array(data).astype(t.dtype.np))


def test_explicit_dtype_device_requires_grad():
    assert Tensor([1, 2], dtype=dtypes.float64).numpy().dtype == np.float64
    assert Tensor([1.7, 2], dtype="int32").tolist() == [1, 2]
    assert Tensor(np.arange(3), dtype=np.float16).dtype == dtypes.half
    assert Tensor([1, 0], dtype=bool).dtype == dtypes.bool
    assert Tensor([1, 2], dtype=dtypes.bfloat16).tolist() == [1.0, 2.0]
    assert Tensor([1.0], device="CPU").device == "CPU" and Tensor([1.0], device="cpu:0").device == "CPU"
    t = Tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    other = Tensor(t)  # another Tensor: the same data, detached
    assert not other.requires_grad
    np.testing.assert_array_equal(other.numpy(), [1, 2])
    assert Tensor(Tensor([1, 2]), dtype=dtypes.float32).dtype == dtypes.float32


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_varargs_shapes(fn):
    f = getattr(Tensor, fn)
    assert f(2, 3).shape == (2, 3) and f((2, 3)).shape == (2, 3) and f([4]).shape == (4,) and f().shape == ()
    assert f(2, dtype=dtypes.float64).dtype == dtypes.float64
    assert f(2, 3, requires_grad=True).requires_grad


def test_creation_values():
    np.testing.assert_array_equal(Tensor.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(Tensor.ones(2, dtype=dtypes.int32).numpy(), np.ones(2, np.int32))
    assert Tensor.full((2, 2), 7).dtype == dtypes.int32 and Tensor.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert Tensor.full((2,), True).dtype == dtypes.bool
    assert Tensor.full((2,), 3, dtype=dtypes.float16).tolist() == [3.0, 3.0]
    np.testing.assert_array_equal(Tensor.arange(5).numpy(), np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(Tensor.arange(2, 10, 3).numpy(), np.arange(2, 10, 3))
    np.testing.assert_allclose(Tensor.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
    assert Tensor.arange(0, 1, 0.25).dtype == dtypes.float32
    np.testing.assert_allclose(Tensor.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5, dtype=np.float32))
    np.testing.assert_array_equal(Tensor.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(Tensor.eye(2, 3, dtype=dtypes.int32).numpy(), np.eye(2, 3, dtype=np.int32))
    x = Tensor([[1, 2, 3]], dtype=dtypes.int16)
    for like, want in ((x.zeros_like(), 0), (Tensor.ones_like(x), 1), (x.full_like(4), 4)):
        assert like.dtype == dtypes.int16 and like.shape == (1, 3) and (like.numpy() == want).all()
    assert x.zeros_like(dtype=dtypes.float32).dtype == dtypes.float32
    assert x.rand_like().dtype == dtypes.float32 and Tensor.randn_like(Tensor.ones(2, 2)).shape == (2, 2)


def test_random():
    Tensor.manual_seed(3)
    a = Tensor.rand(100).numpy()
    Tensor.manual_seed(3)
    np.testing.assert_array_equal(Tensor.rand(100).numpy(), a)
    assert a.dtype == np.float32 and (a >= 0).all() and (a < 1).all() and a.std() > 0.1
    u = Tensor.uniform(200, low=-2, high=-1).numpy()
    assert (u >= -2).all() and (u < -1).all()
    r = Tensor.randint(300, low=3, high=6)
    assert r.dtype == dtypes.int32 and set(np.unique(r.numpy())) == {3, 4, 5}
    assert Tensor.randint(2, 2, high=3, dtype=dtypes.int64).dtype == dtypes.int64
    n = Tensor.randn(2000).numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    m = Tensor.normal(2000, mean=3.0, std=0.5).numpy()
    assert abs(m.mean() - 3) < 0.1 and abs(m.std() - 0.5) < 0.1


def test_dtypes_namespace():
    assert dtypes.float is dtypes.float32 and dtypes.half is dtypes.float16 and dtypes.double is dtypes.float64
    assert dtypes.int is dtypes.int32 and dtypes.long is dtypes.int64 and dtypes.uchar is dtypes.uint8
    assert dtypes.default_float == dtypes.float32 and dtypes.default_int == dtypes.int32
    sizes = {dtypes.bool: 1, dtypes.uint8: 1, dtypes.int16: 2, dtypes.float16: 2, dtypes.bfloat16: 2,
             dtypes.int32: 4, dtypes.float32: 4, dtypes.int64: 8, dtypes.float64: 8}
    for dt, size in sizes.items():
        assert dt.itemsize == size
    assert dtypes.float32.name == "float32" and repr(dtypes.half) == "dtypes.float16"
    assert dtypes.is_float(dtypes.half) and dtypes.is_int(dtypes.uint8) and not dtypes.is_int(dtypes.bool)
    assert dtypes.is_unsigned(dtypes.uint32) and dtypes.float32.np == np.float32 and dtypes.bfloat16.np is None
    assert dtypes.from_py([1, 2.0]) == dtypes.float32 and dtypes.from_py(3) == dtypes.int32
    assert len(dtypes.all()) == 13
    import lazygrad

    assert lazygrad.promote_types(dtypes.int32, dtypes.float16) == dtypes.float16


def test_initializers_and_pickle():
    import copy
    import pickle

    Tensor.manual_seed(0)
    w = Tensor.kaiming_uniform(64, 32, requires_grad=True)
    bound = np.sqrt(3.0) * np.sqrt(2.0 / (1 + 0.01**2)) / np.sqrt(32)
    v = w.numpy()
    assert w.requires_grad and w.shape == (64, 32) and np.abs(v).max() <= bound and np.abs(v).max() > bound * 0.8
    g = Tensor.glorot_uniform((8, 4)).numpy()
    assert np.abs(g).max() <= np.sqrt(6 / 12)
    assert Tensor.scaled_uniform(4, 4, dtype=dtypes.float64).dtype == dtypes.float64
    assert Tensor.kaiming_normal(16, 8).shape == (16, 8)
    t = Tensor([[1.5, 2.0]], dtype=dtypes.bfloat16)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == dtypes.bfloat16 and u.tolist() == [[1.5, 2.0]]
    c = copy.deepcopy(Tensor([1.0, 2.0]))
    assert c.tolist() == [1.0, 2.0]
    assert Tensor([1.0, -2.0]).sequential([Tensor.relu, lambda x: x + 1]).tolist() == [2.0, 1.0]
