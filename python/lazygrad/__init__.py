"""lazygrad: lazy tensors with fused, run-time compiled kernels.

The C++ core is the extension module lazygrad._C; this package re-exports it with the API of
tinygrad's Tensor (docs/python.md).
"""
from lazygrad._C import (GlobalCounters, LazygradError, LazygradIndexError, LazygradNotImplementedError,
                         LazygradTypeError, LazygradValueError, OutOfMemoryError, SizeError, Tensor, promote_types)
from lazygrad import _C
from lazygrad.dtype import DType, dtypes
from lazygrad.tensor import no_grad
from lazygrad import tensor_tinygrad  # noqa: F401,E402  (tinygrad's methods composed in Python)
from lazygrad import nn  # noqa: E402  (after Tensor is complete: nn's layers use it)
from lazygrad.engine.jit import TinyJit  # noqa: E402


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


__all__ = ["Device", "DType", "GlobalCounters", "LazygradError", "LazygradIndexError", "LazygradNotImplementedError",
           "LazygradTypeError", "LazygradValueError", "OutOfMemoryError", "SizeError", "Tensor", "TinyJit", "dtypes", "nn", "no_grad",
           "promote_types"]
__version__ = "0.1.0"
