"""lazygrad.nn.optim: tinygrad's optimizers (names, argument order and defaults), PyTorch's betas=
accepted too. The updates are lazygrad's C++ optimizers (include/lazygrad/optim.h): fused kernels
whose per-step values (learning rate, bias corrections) are kernel arguments, so a TinyJit replays
them. Tensors with requires_grad False (a BatchNorm's running statistics, which nn.state's
get_parameters also finds) are left alone.

    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)
    opt.zero_grad(); loss.backward(); opt.step()
"""
from lazygrad._C import nn as _C_nn


def _params(params):
    return list(params.values()) if isinstance(params, dict) else list(params)


def _betas(b1, b2, betas):
    return (b1, b2) if betas is None else tuple(betas)


class SGD(_C_nn.SGD):
    def __init__(self, params, lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False, maximize=False):
        super().__init__(_params(params), lr, momentum, weight_decay, nesterov, maximize)


class Adam(_C_nn.Adam):
    def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, betas=None):
        b1, b2 = _betas(b1, b2, betas)
        super().__init__(_params(params), lr, b1, b2, eps, weight_decay)


class AdamW(_C_nn.AdamW):
    def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01, betas=None):
        b1, b2 = _betas(b1, b2, betas)
        super().__init__(_params(params), lr, b1, b2, eps, weight_decay)


class LAMB(_C_nn.LAMB):
    def __init__(self, params, lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, betas=None):
        b1, b2 = _betas(b1, b2, betas)
        super().__init__(_params(params), lr, b1, b2, eps, weight_decay)


Optimizer = _C_nn.Optimizer

__all__ = ["Adam", "AdamW", "LAMB", "Optimizer", "SGD"]
