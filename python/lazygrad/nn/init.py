"""lazygrad.nn.init: torch.nn.init's in-place initializers. Each writes new values into the tensor
(an assign, under no_grad, so the tensor stays the same leaf and every handle to it sees them) and
returns it. Fans follow PyTorch: fan_in = size(1) * receptive field, fan_out = size(0) * receptive field.
"""
import math

from lazygrad._C import LazygradValueError, Tensor
from lazygrad.tensor import no_grad


def calculate_gain(nonlinearity, param=None):
    """PyTorch's recommended gain for a nonlinearity."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise LazygradValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise LazygradValueError(f"init: fan in and fan out need a tensor of at least 2 dimensions, got shape "
                                 f"{tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise LazygradValueError(f"init: mode {mode!r} is not 'fan_in' or 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _write(tensor, values):
    with no_grad():
        tensor.assign(values.cast(tensor.dtype))
    return tensor.realize()


def uniform_(tensor, a=0.0, b=1.0):
    return _write(tensor, Tensor.uniform(*tensor.shape, low=a, high=b, device=tensor.device))


def normal_(tensor, mean=0.0, std=1.0):
    return _write(tensor, Tensor.normal(*tensor.shape, mean=mean, std=std, device=tensor.device))


def constant_(tensor, val):
    return _write(tensor, Tensor.full(tensor.shape, val, device=tensor.device))


def zeros_(tensor):
    return constant_(tensor, 0)


def ones_(tensor):
    return constant_(tensor, 1)


def eye_(tensor):
    if tensor.ndim != 2:
        raise LazygradValueError(f"eye_: needs a 2-D tensor, got shape {tuple(tensor.shape)}")
    return _write(tensor, Tensor.eye(tensor.shape[0], tensor.shape[1], device=tensor.device))


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)))


__all__ = ["calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
           "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]
