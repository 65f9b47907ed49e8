"""torch.optim.lr_scheduler: lazygrad's C++ schedulers (src/nn/lr_scheduler.cpp), PyTorch's
formulas and signatures. Each sets the optimizer's lr when made and at every step(); call step()
after the optimizer's, as in PyTorch. get_last_lr() is a list (one parameter group)."""
from lazygrad._C.nn import (CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler, MultiStepLR,
                            OneCycleLR, StepLR)

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR",
           "StepLR"]
