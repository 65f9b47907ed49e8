"""lazygrad.optim: torch.optim's optimizers with PyTorch's signatures (`import lazygrad.optim as
optim`), and optim.lr_scheduler. They are the same C++ optimizers as nn.optim (tinygrad's
signatures): SGD(params, lr, momentum, dampening, weight_decay, nesterov, *, maximize),
Adam/AdamW(params, lr, betas, eps, weight_decay). params is any iterable of Tensors
(model.parameters()); parameter groups (a list of dicts) and amsgrad are not supported.
"""
from lazygrad._C import LazygradNotImplementedError
from lazygrad._C import nn as _C_nn
from lazygrad.nn import optim as _nn_optim
from lazygrad.nn.optim import LAMB, Optimizer


def _params(params, name):
    params = list(params.values()) if isinstance(params, dict) else list(params)
    if any(isinstance(p, dict) for p in params):
        raise LazygradNotImplementedError(f"{name}: parameter groups (a list of dicts) are not supported")
    return params


class _ZeroGrad:
    def zero_grad(self, set_to_none=True):
        """Forgets every gradient (PyTorch's default, set_to_none=True; zeros would be the same step)."""
        del set_to_none
        super().zero_grad()


class SGD(_ZeroGrad, _nn_optim.SGD):
    def __init__(self, params, lr=0.001, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False):
        # the C++ class's own constructor: nn.optim.SGD's (tinygrad's) has no dampening
        _C_nn.SGD.__init__(self, _params(params, "SGD"), lr, momentum, weight_decay, nesterov, maximize, dampening)


class Adam(_ZeroGrad, _nn_optim.Adam):
    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        if amsgrad:
            raise LazygradNotImplementedError("Adam: amsgrad=True is not supported from Python")
        super().__init__(_params(params, "Adam"), lr, eps=eps, weight_decay=weight_decay, betas=betas)


class AdamW(_ZeroGrad, _nn_optim.AdamW):
    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False):
        if amsgrad:
            raise LazygradNotImplementedError("AdamW: amsgrad=True is not supported from Python")
        super().__init__(_params(params, "AdamW"), lr, eps=eps, weight_decay=weight_decay, betas=betas)


from lazygrad.optim import lr_scheduler  # noqa: E402

__all__ = ["Adam", "AdamW", "LAMB", "Optimizer", "SGD", "lr_scheduler"]
