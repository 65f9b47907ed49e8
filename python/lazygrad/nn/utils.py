"""torch.nn.utils' gradient clipping, over lazygrad's C++ clip_grad_norm_/clip_grad_value_: the
gradients are scaled in place, lazily, so the clipping fuses into the optimizer step after it."""
from lazygrad._C import Tensor
from lazygrad._C import nn as _C_nn


def _with_grads(parameters):
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in params if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6)); returns total_norm (a Tensor)."""
    params = _with_grads(parameters)
    if not params:
        return Tensor(0.0)
    return _C_nn.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient to [-clip_value, clip_value]."""
    params = _with_grads(parameters)
    if params:
        _C_nn.clip_grad_value_(params, float(clip_value))


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
