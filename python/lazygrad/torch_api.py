"""PyTorch's module-level functions (torch.zeros, torch.cat, torch.manual_seed, ...), so that a script
written against `import torch` runs with `import lazygrad as torch`. They take PyTorch's arguments and
give PyTorch's dtypes: a Python int gives int64 here (tinygrad's Tensor methods give int32), and
tensor()/from_numpy() keep what PyTorch would keep. Each forwards to the Tensor class method or
method that does the work.
"""
import builtins

import numpy as np

from lazygrad._C import Tensor
from lazygrad.dtype import dtypes
from lazygrad.tensor import no_grad  # noqa: F401  (re-exported)


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _leaf(t, requires_grad):
    if requires_grad:
        t.requires_grad = True
    return t


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _int_default(values, dtype):
    """PyTorch's dtype for Python numbers when none is given: bool for bools, int64 for ints, else
    None (the Tensor's own rule: float32)."""
    if dtype is not None:
        return dtype
    flat = list(_flat(values if isinstance(values, (list, tuple)) else [values]))
    if flat and builtins.all(isinstance(v, (bool, np.bool_)) for v in flat):
        return dtypes.bool
    if flat and builtins.all(isinstance(v, (int, np.integer, bool, np.bool_)) for v in flat):
        return dtypes.int64
    return None


# ---- creation ----
def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new leaf with a copy of data: a Python int (or list of them) gives int64, a float float32,
    a numpy array its own dtype, as torch.tensor."""
    if isinstance(data, (int, float, bool, list, tuple)):
        dtype = _int_default(data, dtype)
    return _leaf(Tensor(data, dtype=dtype, device=device), requires_grad)


def as_tensor(data, dtype=None, device=None):
    return data if isinstance(data, Tensor) and dtype is None and device is None else tensor(data, dtype, device)


def from_numpy(ndarray):
    """A tensor with the array's values and dtype (lazygrad copies: it does not share the array's memory)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    return Tensor(ndarray)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return Tensor.zeros(*_shape(size), dtype=dtype, device=device, requires_grad=requires_grad or None)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return Tensor.ones(*_shape(size), dtype=dtype, device=device, requires_grad=requires_grad or None)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return Tensor.empty(*_shape(size), dtype=dtype, device=device, requires_grad=requires_grad or None)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    return Tensor.full(tuple(size), fill_value, dtype=_int_default(fill_value, dtype), device=device,
                       requires_grad=requires_grad or None)


def rand(*size, dtype=None, device=None, requires_grad=False):
    return Tensor.rand(*_shape(size), dtype=dtype, device=device, requires_grad=requires_grad or None)


def randn(*size, dtype=None, device=None, requires_grad=False):
    return Tensor.randn(*_shape(size), dtype=dtype, device=device, requires_grad=requires_grad or None)


def randint(low=0, high=None, size=None, dtype=None, device=None, requires_grad=False):
    """torch.randint(high, size) or torch.randint(low, high, size): int64 by default."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    return Tensor.randint(*tuple(size), low=low, high=high, dtype=dtype or dtypes.int64, device=device,
                          requires_grad=requires_grad or None)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """int64 when start, end and step are ints (PyTorch), else float32."""
    dt = _int_default([start, step] + ([] if end is None else [end]), dtype)
    return Tensor.arange(start, end, step, dtype=dt, device=device, requires_grad=requires_grad or None)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    return Tensor.linspace(start, end, steps, dtype=dtype, device=device, requires_grad=requires_grad or None)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return Tensor.eye(n, m, dtype=dtype, device=device, requires_grad=requires_grad or None)


def _like(name):
    def like(input, dtype=None, device=None, requires_grad=False):
        return getattr(input, name)(dtype=dtype, device=device, requires_grad=requires_grad or None)
    like.__name__ = name
    return like


zeros_like, ones_like, rand_like, randn_like = (_like(n) for n in ("zeros_like", "ones_like", "rand_like",
                                                                   "randn_like"))


def empty_like(input, dtype=None, device=None, requires_grad=False):
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    return input.full_like(fill_value, dtype=dtype, device=device, requires_grad=requires_grad or None)


def manual_seed(seed):
    Tensor.manual_seed(seed)


# ---- joining, selecting, reshaping ----
def cat(tensors, dim=0):
    tensors = list(tensors)
    return tensors[0].cat(*tensors[1:], dim=dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    return tensors[0].stack(*tensors[1:], dim=dim)


def where(condition, input, other):
    """torch.where(condition, input, other): input where condition holds, else other."""
    return condition.where(input, other)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def reshape(input, shape):
    return input.reshape(shape)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def permute(input, dims):
    return input.permute(dims)


# ---- math: torch.f(input, ...) is input.f(...) ----
# Some shadow builtins here (all, any, sum, abs, round, pow): this module's own code calls builtins.x,
# and `from lazygrad import *` leaves them out (__all__ below), as lazygrad.sum is what is meant.
def _method(name):
    def f(input, *args, **kwargs):
        return getattr(Tensor, name)(input if isinstance(input, Tensor) else Tensor(input), *args, **kwargs)
    f.__name__, f.__doc__ = name, f"torch.{name}(input, ...): input.{name}(...)"
    return f


_METHODS = ["abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
            "floor", "ceil", "round", "trunc", "sign", "neg", "reciprocal", "square", "erf", "clamp", "clip",
            "isnan", "isinf", "isfinite", "sum", "mean", "prod", "var", "std", "argmax", "argmin", "any", "all",
            "cumsum", "cumprod", "logsumexp", "softmax", "log_softmax", "matmul", "outer", "maximum", "minimum",
            "pow", "add", "sub", "mul", "div", "remainder", "eq", "ne", "lt", "le", "gt", "ge", "tril", "triu",
            "gather", "index_select", "masked_fill", "sort", "argsort", "topk", "roll", "flip", "split", "chunk",
            "unbind", "norm", "einsum"]
for _n in _METHODS:
    if hasattr(Tensor, _n) and _n != "einsum":
        globals()[_n] = _method(_n)


def einsum(equation, *operands):
    ops = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
    return Tensor.einsum(equation, *ops)


def device(type, index=None):
    """torch.device("cpu"), torch.device("cuda", 0): the canonical lazygrad device name ("CPU",
    "CUDA"), which every device= argument and Tensor.to/Module.to take."""
    from lazygrad import Device  # noqa: PLC0415 (lazygrad imports this module)
    name = str(type) if index is None else f"{type}:{index}"
    return Device.canonicalize(name)


# ---- dtypes as attributes, torch.float32 and friends ----
float32, float64, float16, bfloat16 = dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16
int8, int16, int32, int64, uint8 = dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8
half, double, short, long = dtypes.float16, dtypes.float64, dtypes.int16, dtypes.int64
# torch.float, torch.int, torch.bool shadow builtins: lazygrad/__init__.py sets them on the package only
BUILTIN_NAMED_DTYPES = {"float": dtypes.float32, "int": dtypes.int32, "bool": dtypes.bool}

__all__ = [n for n in dir() if not n.startswith("_") and not hasattr(builtins, n)
           and n not in ("builtins", "np", "Tensor", "dtypes", "BUILTIN_NAMED_DTYPES")]
