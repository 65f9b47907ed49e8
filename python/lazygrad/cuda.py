"""torch.cuda's two questions a training script asks first: is_available() and device_count()
(from lazygrad's device list, docs/devices.md), and manual_seed (lazygrad has one generator)."""
from lazygrad import _C


def device_count():
    return sum(1 for name, ok, _ in _C.devices() if ok and name.split(":")[0] == "CUDA")


def is_available():
    return device_count() > 0


def manual_seed(seed):
    _C.Tensor.manual_seed(seed)


manual_seed_all = manual_seed

__all__ = ["device_count", "is_available", "manual_seed", "manual_seed_all"]
