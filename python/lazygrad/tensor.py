"""Python-side additions to lazygrad.Tensor (the class itself is the C++ lazygrad::Tensor, bound in
python/src/*.cpp): the no_grad context, Tensor.train/Tensor.test, and a few conveniences."""
import contextlib
import functools
import math

from lazygrad import _C
from lazygrad._C import Tensor


class no_grad(contextlib.ContextDecorator):
    """`with no_grad():` (or @no_grad()): new results do not require grad, as torch.no_grad."""

    def __enter__(self):
        _C._no_grad_enter()
        return self

    def __exit__(self, *exc):
        _C._no_grad_exit()
        return False


class _train(contextlib.ContextDecorator):
    """`with Tensor.train():` sets Tensor.training (dropout reads it) and restores it after."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev, Tensor.training = Tensor.training, self.mode
        return self

    def __exit__(self, *exc):
        Tensor.training = self.prev
        return False


def _test():
    return _train(False)


Tensor.train = staticmethod(_train)
Tensor.test = staticmethod(_test)


def _iter(self):
    return (self[i] for i in range(self.shape[0]))


Tensor.__iter__ = _iter
Tensor.__deepcopy__ = lambda self, memo: _from_state(*_reduce(self)[1])  # a new leaf, like torch
Tensor.__copy__ = lambda self: self.detach()


# ---- tinygrad's initializers (nn layers use these) ----
def _fan_in(shape):
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def _shape_of(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def _scaled_uniform(*shape, **kwargs):
    """U(-1, 1) * numel ** -0.5."""
    shape = _shape_of(shape)
    return _finish(Tensor.uniform(*shape, low=-1.0, high=1.0, **_dt(kwargs)) * (math.prod(shape) ** -0.5), kwargs)


def _glorot_uniform(*shape, **kwargs):
    """U(-1, 1) * sqrt(6 / (fan_out + fan_in)) (Xavier)."""
    shape = _shape_of(shape)
    bound = math.sqrt(6 / (shape[0] + _fan_in(shape)))
    return _finish(Tensor.uniform(*shape, low=-1.0, high=1.0, **_dt(kwargs)) * bound, kwargs)


def _kaiming_uniform(*shape, a=0.01, **kwargs):
    """U(-bound, bound), bound = sqrt(3) * sqrt(2 / (1 + a^2)) / sqrt(fan_in) (PyTorch's nn init)."""
    shape = _shape_of(shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a**2)) / math.sqrt(_fan_in(shape))
    return _finish(Tensor.uniform(*shape, low=-bound, high=bound, **_dt(kwargs)), kwargs)


def _kaiming_normal(*shape, a=0.01, **kwargs):
    shape = _shape_of(shape)
    std = math.sqrt(2.0 / (1 + a**2)) / math.sqrt(_fan_in(shape))
    return _finish(Tensor.normal(*shape, mean=0.0, std=std, **_dt(kwargs)), kwargs)


def _dt(kwargs):
    return {"dtype": kwargs["dtype"]} if kwargs.get("dtype") is not None else {}


def _finish(t, kwargs):
    unknown = set(kwargs) - {"dtype", "device", "requires_grad"}
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
    t = Tensor(t, device=kwargs.get("device"))  # a leaf of its own (detached), checked device
    if kwargs.get("requires_grad"):
        t.requires_grad = True
    return t


Tensor.scaled_uniform = staticmethod(_scaled_uniform)
Tensor.glorot_uniform = staticmethod(_glorot_uniform)
Tensor.kaiming_uniform = staticmethod(_kaiming_uniform)
Tensor.kaiming_normal = staticmethod(_kaiming_normal)


def _sequential(self, ll):
    """tinygrad's x.sequential([f, g]): g(f(x))."""
    return functools.reduce(lambda x, f: f(x), ll, self)


def _from_state(values, dtype, requires_grad):
    t = Tensor(values, dtype=dtype)
    if requires_grad:
        t.requires_grad = True
    return t


def _reduce(self):
    # pickle/copy: the values (numpy), the dtype by name, and whether it requires grad
    return (_from_state, (self.numpy(), self.dtype.name, self.requires_grad))


Tensor.sequential = _sequential
Tensor.__reduce__ = _reduce
