"""lazygrad.nn.functional: torch.nn.functional's names and signatures, each forwarding to the Tensor
method that does the work (`import lazygrad.nn.functional as F`). Where the method is tinygrad's
and differs (F.linear's weight is [out, in], conv2d's argument order, max_pool2d's kernel_size),
this module takes PyTorch's form and converts.
"""
from lazygrad import _C
from lazygrad._C import LazygradNotImplementedError


# ---- activations ----
def relu(input, inplace=False):
    return _inplace(input, input.relu(), inplace)


def relu6(input, inplace=False):
    return _inplace(input, input.relu6(), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(input, input.leaky_relu(negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    return _inplace(input, input.elu(alpha), inplace)


def celu(input, alpha=1.0, inplace=False):
    return _inplace(input, input.celu(alpha), inplace)


def selu(input, inplace=False):
    return _inplace(input, input.selu(), inplace)


def gelu(input, approximate="none"):
    return input.gelu(approximate)


def silu(input, inplace=False):
    return _inplace(input, input.silu(), inplace)


def mish(input, inplace=False):
    return _inplace(input, input.mish(), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _inplace(input, input.hardtanh(min_val, max_val), inplace)


def hardswish(input, inplace=False):
    return _inplace(input, input.hardswish(), inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(input, input.hardsigmoid(), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return input.softplus(beta, threshold)


def logsigmoid(input):
    return input.logsigmoid()


def softsign(input):
    return input.softsign()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmax(input, dim=None, dtype=None):
    return (input if dtype is None else input.cast(dtype)).softmax(-1 if dim is None else dim)


def log_softmax(input, dim=None, dtype=None):
    return (input if dtype is None else input.cast(dtype)).log_softmax(-1 if dim is None else dim)


def _inplace(input, result, inplace):
    # inplace=True writes into input (an assign), as PyTorch's F.relu_(x)
    return input.assign(result) if inplace else result


# ---- linear, convolution, pooling ----
def linear(input, weight, bias=None):
    """x @ weight.T + bias, weight [out_features, in_features] (PyTorch's layout)."""
    return input.linear(weight.T, bias)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return input.conv2d(weight, bias, groups=groups, stride=stride, dilation=dilation, padding=padding)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return input.conv2d(weight, bias, groups=groups, stride=stride, dilation=dilation, padding=padding)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return input.conv2d(weight, bias, groups=groups, stride=stride, dilation=dilation, padding=padding)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return input.conv_transpose2d(weight, bias, groups=groups, stride=stride, dilation=dilation, padding=padding,
                                  output_padding=output_padding)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return input.conv_transpose2d(weight, bias, groups=groups, stride=stride, dilation=dilation, padding=padding,
                                  output_padding=output_padding)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """With return_indices, (values, int64 positions within each plane), as PyTorch."""
    return input.max_pool1d(kernel_size, stride, dilation, padding, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return input.max_pool2d(kernel_size, stride, dilation, padding, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return input.max_pool3d(kernel_size, stride, dilation, padding, ceil_mode, return_indices)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return input.max_unpool1d(indices, kernel_size, stride, 1, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return input.max_unpool2d(indices, kernel_size, stride, 1, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return input.max_unpool3d(indices, kernel_size, stride, 1, padding, output_size)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return input.avg_pool1d(kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        raise LazygradNotImplementedError("F.avg_pool2d: divisor_override is not supported")
    return input.avg_pool2d(kernel_size, stride, 1, padding, ceil_mode, count_include_pad)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return input.avg_pool3d(kernel_size, stride, 1, padding, ceil_mode, count_include_pad, divisor_override)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: [N, C, H, W] -> [N, C * prod(kernel_size), L] (torch.nn.functional.unfold)."""
    return _C.unfold(input, kernel_size, dilation, padding, stride)


def softmin(input, dim=None, dtype=None):
    return (input if dtype is None else input.cast(dtype)).softmin(dim=-1 if dim is None else dim)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    return input.normalize(p, dim=dim, eps=eps)


def adaptive_avg_pool2d(input, output_size):
    return input.adaptive_avg_pool2d(output_size)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return input.interpolate(size=size, scale_factor=scale_factor, mode=mode, align_corners=align_corners)


def pad(input, pad, mode="constant", value=0.0):
    return input.pad(pad, mode=mode, value=0.0 if value is None else value)


# ---- dropout, normalization, attention ----
def dropout(input, p=0.5, training=True, inplace=False):
    """Active when training is True (PyTorch's default), whatever Tensor.training says."""
    return _inplace(input, input.dropout(p, bool(training)), inplace)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return input.layer_norm(normalized_shape, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return input.batch_norm(running_mean, running_var, weight, bias, training, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return input.group_norm(num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return input.rms_norm(normalized_shape, weight, eps)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    return query.scaled_dot_product_attention(key, value, attn_mask, dropout_p, is_causal, scale)


def one_hot(tensor, num_classes=-1):
    return tensor.one_hot(num_classes)


def embedding(input, weight):
    """Rows of weight [num_embeddings, dim] at the indices in input."""
    return weight[input]


# ---- losses (PyTorch's argument order: input, target, then the options) ----
def _reduction(size_average, reduce, reduction):
    # PyTorch's deprecated size_average/reduce pair, when given, decides the reduction
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return input.cross_entropy(target, _reduction(size_average, reduce, reduction), label_smoothing, weight=weight,
                               ignore_index=ignore_index)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return input.nll_loss(target, weight, ignore_index, _reduction(size_average, reduce, reduction))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return input.mse_loss(target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return input.l1_loss(target, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return input.smooth_l1_loss(target, _reduction(size_average, reduce, reduction), beta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return input.binary_cross_entropy(target, weight, _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return input.binary_cross_entropy_with_logits(target, weight, _reduction(size_average, reduce, reduction),
                                                  pos_weight)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    return input.kl_div(target, _reduction(size_average, reduce, reduction), log_target)
