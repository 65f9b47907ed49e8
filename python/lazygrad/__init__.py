"""lazygrad: lazy tensors with fused, run-time compiled kernels.

The C++ core is the extension module lazygrad._C; this package re-exports it with the API of
tinygrad's Tensor (docs/python.md).
"""
from lazygrad._C import LazygradError, Tensor
from lazygrad import nn  # noqa: E402
from lazygrad.engine.jit import TinyJit  # noqa: E402

__all__ = ["LazygradError", "Tensor", "TinyJit", "nn"]
