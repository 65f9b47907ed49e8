"""lazygrad: lazy tensors with fused, run-time compiled kernels.

The C++ core is the extension module lazygrad._C; this package re-exports it with the API of
tinygrad's Tensor (docs/python.md).
"""
from lazygrad._C import GlobalCounters, LazygradError, Tensor, promote_types
from lazygrad.dtype import DType, dtypes
from lazygrad.tensor import no_grad
from lazygrad import nn  # noqa: E402  (after Tensor is complete: nn's layers use it)
from lazygrad.engine.jit import TinyJit  # noqa: E402


class Device:
    """tinygrad's Device: lazygrad has one, the CPU."""

    DEFAULT = "CPU"

    @staticmethod
    def canonicalize(device):
        return "CPU" if device is None else str(device).upper().split(":")[0]


__all__ = ["Device", "DType", "GlobalCounters", "LazygradError", "Tensor", "TinyJit", "dtypes", "nn", "no_grad",
           "promote_types"]
__version__ = "0.1.0"
