"""lazygrad.nn: layers, a Module base class for your own, nn.optim and nn.state.

The layers are lazygrad's C++ modules (include/lazygrad/nn.h): PyTorch's initialization and
semantics, tinygrad's argument order where the two differ (BatchNorm2d(sz, eps, affine,
track_running_stats, momentum), RMSNorm(dim, eps=1e-6)). Subclass Module as you would
torch.nn.Module: tensors and modules assigned to attributes are registered, so parameters(),
state_dict(), load_state_dict(), train()/eval(), the optimizers and nn.state all see them.
"""
from lazygrad import _C
from lazygrad._C import Tensor
from lazygrad._C import nn as _C_nn
from lazygrad._C.nn import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d,
                            Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, Dropout, Embedding, Flatten, GELU,
                            GroupNorm, Identity, InstanceNorm, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d, LayerNorm, LayerNorm2d, LeakyReLU, Linear, LogSoftmax, MaxPool2d, ModuleList,
                            ReLU, RMSNorm, Sequential, Sigmoid, SiLU, Softmax, Tanh)

BatchNorm = BatchNorm2d  # tinygrad's name


class Module(_C_nn.Module):
    """The base of your own modules. Call super().__init__() first, then assign: a Tensor becomes a
    parameter (trainable; use register_buffer for state that is not), a Module (or a list or tuple
    of Modules, as a ModuleList) a submodule. Define forward(); calling the module calls it."""

    def __init__(self):
        _C_nn.Module.__init__(self)

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            if isinstance(value, Tensor):
                if name in dict(self.named_buffers(recurse=False)):
                    value = _C_nn.Module.register_buffer(self, name, value)
                else:
                    value = self.register_parameter(name, value)
            elif isinstance(value, _C_nn.Module):
                self.register_module(name, value)
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, _C_nn.Module) for v in value):
                self.register_module(name, ModuleList(list(value)))
        object.__setattr__(self, name, value)

    def register_buffer(self, name, tensor, persistent=True):
        tensor = _C_nn.Module.register_buffer(self, name, tensor, persistent)
        object.__setattr__(self, name, tensor)
        return tensor

    def __call__(self, *args, **kwargs):
        with _C.ProfileScope(self):  # the profiler charges what forward makes to this module
            return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")


def _module_to(self, *args, **kwargs):
    """model.to(device): moves every parameter and buffer to the device in place (each tensor keeps
    its identity, so optimizers made earlier still see them) and returns the module. PyTorch's
    dtype forms (model.to(torch.float16)) are not supported."""
    device = kwargs.pop("device", args[0] if args else None)
    if kwargs or len(args) > 1 or not isinstance(device, (str, type(None))):
        from lazygrad._C import LazygradNotImplementedError
        raise LazygradNotImplementedError(f"Module.to: only a device is supported (got {args}, {kwargs})")
    for t in self.parameters() + self.buffers():
        t.to_(device)
    return self


_C_nn.Module.to = _module_to

from lazygrad.nn import datasets, functional, init, optim, state, utils  # noqa: E402  (they import Module from here)
from lazygrad.nn.loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, KLDivLoss, L1Loss, MSELoss,  # noqa: E402
                              NLLLoss, SmoothL1Loss)

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Dropout", "Embedding", "Flatten", "GELU", "GroupNorm", "InstanceNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LayerNorm2d",
    "Identity", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MaxPool2d", "Module", "ModuleList", "ReLU",
    "RMSNorm", "Sequential", "Sigmoid", "SiLU", "Softmax", "Tanh", "optim", "state",
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss",
    "datasets", "functional", "init", "utils",
]
