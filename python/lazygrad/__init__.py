"""lazygrad: lazy tensors with fused, run-time compiled kernels.

The C++ core is the extension module lazygrad._C; this package re-exports it with the API of
tinygrad's Tensor (docs/python.md).
"""
from lazygrad._C import LazygradError, Tensor

__all__ = ["LazygradError", "Tensor"]
