"""lazygrad.nn.state: tinygrad's state helpers. get_state_dict walks any object (a Module, a plain
class, lists, tuples, dicts) and names each Tensor by its path ("layers.0.weight"); the tensors
are the live handles, so assigning into them (load_state_dict) updates the model. safe_load and
safe_save read and write safetensors files (lazygrad's checked C++ reader and atomic writer);
torch_load reads PyTorch's zip checkpoints without torch (nn/torch_load.py).
"""
from collections import OrderedDict

from lazygrad._C import Tensor
from lazygrad._C import nn as _C_nn


def get_state_dict(obj, prefix="", tensor_type=Tensor):
    if isinstance(obj, tensor_type):
        return {prefix.strip("."): obj}
    if isinstance(obj, _C_nn.Module):  # registered parameters and buffers, under dotted names
        named = obj.named_parameters(prefix.strip(".")) + obj.named_buffers(prefix.strip("."))
        return OrderedDict(named)
    if hasattr(obj, "_asdict"):  # a namedtuple
        return get_state_dict(obj._asdict(), prefix, tensor_type)
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif hasattr(obj, "__dict__"):
        items = vars(obj).items()
    else:
        return {}
    out = OrderedDict()
    for k, v in items:
        out.update(get_state_dict(v, f"{prefix}{k}.", tensor_type))
    return out


def get_parameters(obj):
    """Every Tensor under obj, each once (a BatchNorm's running statistics included, as tinygrad's;
    the optimizers skip those that do not require grad)."""
    seen, out = set(), []
    for t in get_state_dict(obj).values():
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def load_state_dict(model, state_dict, strict=True, verbose=False):
    """Copies state_dict's tensors into model's (cast to each one's dtype). A Module checks every
    shape and key first, as PyTorch does; for other objects each tensor is assigned in turn."""
    del verbose
    if isinstance(model, _C_nn.Module):
        return model.load_state_dict(dict(state_dict), strict)
    own = get_state_dict(model)
    missing = [k for k in own if k not in state_dict]
    if strict and missing:
        raise KeyError(f"load_state_dict: missing keys {missing}")
    for k, t in own.items():
        if k in state_dict:
            if tuple(t.shape) != tuple(state_dict[k].shape):
                raise ValueError(f"load_state_dict: {k} has shape {tuple(t.shape)}, the state dict "
                                 f"{tuple(state_dict[k].shape)}")
            t.assign(state_dict[k])  # assign casts to t's dtype
    for t in own.values():
        t.realize()
    return missing, [k for k in state_dict if k not in own]


def safe_load(fn):
    """Every tensor of a safetensors file, by name (the file is checked first; a bad one raises)."""
    return _C_nn.safe_load(str(fn))


def safe_load_metadata(fn):
    """tinygrad's safe_load_metadata: (the file's bytes as a uint8 Tensor, the header's length, the
    header as a dict of tensor entries and "__metadata__"). lazygrad's reader checks the header first,
    so a corrupt file raises naming the offset. lazygrad reads the bytes into memory (tinygrad maps
    them from disk)."""
    import json

    import numpy as np
    _C_nn.safe_load_metadata(str(fn))
    raw = np.fromfile(str(fn), dtype=np.uint8)
    n = int.from_bytes(raw[:8].tobytes(), "little")
    return Tensor(raw), n, json.loads(raw[8:8 + n].tobytes())


def safe_save(tensors, fn, metadata=None):
    """Writes tensors (a dict of name -> Tensor) to a safetensors file, atomically."""
    _C_nn.safe_save(str(fn), dict(tensors), dict(metadata or {}))


def gguf_load(path_or_tensor):
    """tinygrad's gguf_load: (metadata, tensors) of a GGUF file (llama.cpp's format), read by
    lazygrad's C++ reader (docs/gguf.md): metadata as Python values (ints, floats, bools, strings,
    lists), tensors by name in PyTorch's shape order, F32/F16/BF16/F64 and the integer types in
    their own dtype, Q4_0, Q8_0 and Q4_K dequantized to float32. Takes a path, or (as tinygrad) a
    uint8 Tensor holding the file's bytes."""
    if isinstance(path_or_tensor, Tensor):
        import os  # noqa: PLC0415
        import tempfile  # noqa: PLC0415
        fd, tmp = tempfile.mkstemp(suffix=".gguf")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(path_or_tensor.numpy().tobytes())
            return _C_nn.gguf_load(tmp)
        finally:
            os.unlink(tmp)  # the reader's mapping keeps the data alive
    return _C_nn.gguf_load(str(path_or_tensor))


from lazygrad.nn.torch_load import torch_load  # noqa: E402

__all__ = ["get_parameters", "get_state_dict", "gguf_load", "load_state_dict", "safe_load", "safe_load_metadata",
           "safe_save",
           "torch_load"]
