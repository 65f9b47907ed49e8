"""lazygrad: lazy tensors with fused, run-time compiled kernels.

The C++ core is the extension module lazygrad._C; this package re-exports it with the API of
tinygrad's Tensor (docs/python.md).
"""
from lazygrad._C import (GlobalCounters, LazygradError, LazygradIndexError, LazygradNotImplementedError,
                         LazygradTypeError, LazygradValueError, OutOfMemoryError, SizeError, Tensor, promote_types)
from lazygrad._C import ProfileScope, measure_roofline, profile, set_viz, write_viz  # docs/profile.md, docs/viz.md
from lazygrad import _C
from lazygrad.dtype import DType, dtypes
from lazygrad.tensor import no_grad
from lazygrad import tensor_tinygrad  # noqa: F401,E402  (tinygrad's methods composed in Python)
from lazygrad import nn  # noqa: E402  (after Tensor is complete: nn's layers use it)
from lazygrad.engine.jit import TinyJit  # noqa: E402
from lazygrad.engine.export_webgpu import export_webgpu  # noqa: E402  (docs/webgpu.md)
from lazygrad import cuda, helpers, optim  # noqa: E402
from lazygrad import torch_api as _torch_api  # noqa: E402
from lazygrad.torch_api import *  # noqa: E402,F401,F403  (PyTorch's module-level functions and dtypes)
from lazygrad import _environment  # noqa: E402


class _DeviceMeta(type):
    @property
    def DEFAULT(cls):  # noqa: N802 (tinygrad's name)
        return _C.default_device()

    @DEFAULT.setter
    def DEFAULT(cls, device):  # noqa: N802
        _C.set_default_device(device)


class Device(metaclass=_DeviceMeta):
    """tinygrad's Device: Device.DEFAULT is where tensors go (DEVICE=, else "CPU"; assignable), and
    Device.canonicalize("cl:0") is "CL". Device.available() lists the devices found (docs/devices.md)."""

    @staticmethod
    def canonicalize(device):
        return _C.default_device() if device is None else _C.canonical_device(str(device))

    @staticmethod
    def available():
        return [name for name, ok, _ in _C.devices() if ok]


_environment.apply()
globals().update(_torch_api.BUILTIN_NAMED_DTYPES)  # lazygrad.float, lazygrad.int, lazygrad.bool, as torch's

__all__ = _torch_api.__all__ + [
    "Device", "DType", "GlobalCounters", "LazygradError", "LazygradIndexError", "LazygradNotImplementedError",
    "LazygradTypeError", "LazygradValueError", "OutOfMemoryError", "SizeError", "Tensor", "TinyJit", "dtypes",
    "cuda", "export_webgpu", "helpers", "nn", "no_grad", "optim", "promote_types"]
__version__ = "0.1.0"
# lazygrad.sum, lazygrad.all, lazygrad.abs, ... (torch.sum): set last, as they shadow builtins here
globals().update({n: getattr(_torch_api, n) for n in dir(_torch_api) if not n.startswith("_") and n not in __all__ and
                  callable(getattr(_torch_api, n)) and getattr(getattr(_torch_api, n), "__module__", "") ==
                  _torch_api.__name__})
