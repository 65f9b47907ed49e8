"""torch_load: PyTorch's zip checkpoints (torch.save's default format since 1.6) read without
importing torch and without running pickled code.

The file is a zip: <name>/data.pkl (a pickle of the saved object) and <name>/data/<key> (each
storage's raw bytes, little-endian unless <name>/byteorder says otherwise). The pickle names a few
torch functions and classes; _Unpickler maps exactly those (tensor rebuilding, storage types,
OrderedDict) to numpy and lazygrad, and refuses every other global with an UnpicklingError, so a
malicious checkpoint cannot run code.
"""
import collections
import pickle
import zipfile

import numpy as np

from lazygrad._C import Tensor
from lazygrad.dtype import dtypes

# torch.<Name>Storage (what torch.save pickles as the storage type) -> the element type.
_STORAGES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name):
        self.name, self.dtype = name, _STORAGES[name]


def _as_tensor(array, bfloat16):
    if bfloat16:  # numpy has no bfloat16: widen the bits to float32 (exact) and cast back
        wide = (array.astype(np.uint32) << 16).view(np.float32)
        return Tensor(np.array(wide, order="C")).cast(dtypes.bfloat16)
    return Tensor(np.array(array, order="C"))  # a copy (ascontiguousarray would make a 0-d array 1-d)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    """torch._utils._rebuild_tensor_v2: the view (offset, size, stride in elements) of a storage."""
    del backward_hooks, metadata
    array, bfloat16 = storage
    if len(size) and any(s == 0 for s in size):
        view = np.zeros(size, dtype=array.dtype)
    else:
        end = storage_offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
        if storage_offset < 0 or end > len(array) or any(st < 0 for st in stride):
            raise pickle.UnpicklingError(f"torch_load: a tensor of size {tuple(size)}, stride {tuple(stride)} and "
                                         f"offset {storage_offset} reaches past its storage of {len(array)} elements")
        view = np.lib.stride_tricks.as_strided(array[storage_offset:], shape=tuple(size),
                                               strides=tuple(st * array.itemsize for st in stride))
    t = _as_tensor(view, bfloat16)
    if requires_grad:
        t.requires_grad = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """torch._utils._rebuild_parameter: an nn.Parameter saved as itself."""
    del backward_hooks
    if requires_grad and dtypes.is_float(data.dtype):
        data.requires_grad = True
    return data


_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("collections", "OrderedDict"): collections.OrderedDict,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, zf, prefix, byteorder):
        super().__init__(file)
        self.zf, self.prefix, self.byteorder, self.storages = zf, prefix, byteorder, {}

    def find_class(self, module, name):
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if (module, name) in _GLOBALS:
            return _GLOBALS[(module, name)]
        raise pickle.UnpicklingError(f"torch_load: the checkpoint names {module}.{name}, which is not a tensor, a "
                                     "storage or an OrderedDict; lazygrad refuses to run it (only state dicts "
                                     "of tensors can be read)")

    def persistent_load(self, pid):
        # ('storage', storage type, key, location, number of elements)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and
                isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"torch_load: unknown persistent id {pid!r}")
        kind, key, numel = pid[1], str(pid[2]), int(pid[4])
        if key not in self.storages:
            raw = self.zf.read(f"{self.prefix}data/{key}")
            bfloat16 = kind.dtype == "bfloat16"
            dtype = np.dtype(np.uint16 if bfloat16 else kind.dtype).newbyteorder("<" if self.byteorder == "little"
                                                                                 else ">")
            if len(raw) < numel * dtype.itemsize:
                raise pickle.UnpicklingError(f"torch_load: storage {key} has {len(raw)} bytes, {numel} elements "
                                             f"of {kind.name} need {numel * dtype.itemsize}")
            array = np.frombuffer(raw, dtype=dtype, count=numel)
            self.storages[key] = (array.astype(array.dtype.newbyteorder("=")), bfloat16)
        return self.storages[key]


def torch_load(fn):
    """What torch.save wrote to fn (usually a state dict: name -> Tensor), with each tensor's dtype,
    shape, strides and storage offset; shared storages are read once. The legacy (pre-1.6, non-zip)
    format is refused with a ValueError."""
    if not zipfile.is_zipfile(fn):
        raise ValueError(f"torch_load: {fn} is not a zip checkpoint (torch.save's format since PyTorch 1.6); the "
                         "legacy format (_use_new_zipfile_serialization=False) is not supported")
    with zipfile.ZipFile(fn) as zf:
        pkl = [n for n in zf.namelist() if n.endswith("data.pkl")]
        if len(pkl) != 1:
            raise ValueError(f"torch_load: {fn} has {len(pkl)} data.pkl entries, a torch.save checkpoint has one")
        prefix = pkl[0][:-len("data.pkl")]
        byteorder = "little"
        if prefix + "byteorder" in zf.namelist():
            byteorder = zf.read(prefix + "byteorder").decode().strip()
        with zf.open(pkl[0]) as f:
            return _Unpickler(f, zf, prefix, byteorder).load()


__all__ = ["torch_load"]
