#!/usr/bin/python3
"""Writes tests/fixtures/nn.txt: PyTorch's view of the models that tests/test_nn.cpp builds.

Run it with Debian's interpreter (the one that has PyTorch 1.13 and numpy):

    /usr/bin/python3 scripts/fixtures_nn.py [OUTDIR]      # OUTDIR defaults to tests/fixtures

Two models, defined here and, identically, in tests/test_nn.cpp:

  convnet  Sequential(Conv2d(1, 3, 3, padding=1), BatchNorm2d(3), ReLU(), MaxPool2d(2), Flatten(),
           Linear(27, 4)). Its state dict (PyTorch's initialization, seeded), an input batch and
           targets; the training-mode output, the cross-entropy loss and every parameter's gradient,
           the running statistics after that step, and the evaluation-mode output after it.
  nested   A model with a custom module (its own parameter, buffers, a non-persistent buffer), a
           ModuleList, the convnet as a child, and one each of Embedding, GroupNorm, ConvTranspose2d,
           Conv1d, BatchNorm1d and Linear without bias, Dropout: the state dict's keys, dtypes and
           shapes in order (with values, so the C++ side can load it), its repr, and the outputs of
           the ConvTranspose2d and Conv1d for given inputs.

Format (one record per line, tokens separated by single spaces; '#' lines and blank lines are
ignored):

    model <name>                               starts a model
    repr <text>                                its repr, with '\\n' for newlines and '\\\\' for '\\'
    state <key> <dtype> [<d0>,<d1>,...] <values...>   a state_dict entry, in state_dict order
    tensor <name> <dtype> [<d0>,...] <values...>      an input or a result
    end

Float32 values are written as numpy prints them (the shortest string that reads back); everything
is seeded, so a rerun writes a byte-identical file.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234


def convnet():
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(27, 4))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.register_buffer("offset", torch.zeros(dim))
        self.register_buffer("cache", torch.zeros(dim), persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = convnet()
        self.blocks = nn.ModuleList([Block(4), Block(4)])
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.gn = nn.GroupNorm(2, 4)
        self.up = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, bias=False)
        self.conv1 = nn.Conv1d(2, 4, 3, padding="same", dilation=2, groups=2)
        self.bn1 = nn.BatchNorm1d(4, affine=False)
        self.head = nn.Linear(4, 2, bias=False)
        self.drop = nn.Dropout(0.25)


DT = {torch.float32: "float32", torch.int64: "int64"}


def fmt(dt, v):
    return str(np.float32(v)) if dt == "float32" else str(int(v))


def tensor_tokens(t):
    t = t.detach()
    dt = DT[t.dtype]
    shape = "[" + ",".join(str(d) for d in t.shape) + "]"
    return f"{dt} {shape}" + "".join(" " + fmt(dt, v) for v in t.reshape(-1).tolist())


def escape(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def model_lines(name, model, tensors):
    lines = [f"model {name}", f"repr {escape(repr(model))}"]
    lines += [f"state {k} {tensor_tokens(v)}" for k, v in model.state_dict().items()]
    lines += [f"tensor {k} {tensor_tokens(v)}" for k, v in tensors.items()]
    return lines + ["end", ""]


def convnet_case():
    torch.manual_seed(SEED)
    model = convnet()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(2, 1, 6, 6)
    y = torch.tensor([1, 3])
    out = model(x)  # training mode: batch statistics, running statistics updated
    loss = F.cross_entropy(out, y)
    loss.backward()
    tensors = {"x": x, "y": y, "out_train": out, "loss": loss.reshape(())}
    for k, p in model.named_parameters():
        tensors["grad." + k] = p.grad
    for k, v in model.state_dict().items():
        if "running" in k or "num_batches" in k:
            tensors["after." + k] = v.clone()  # the model's buffer itself is restored below
    model.eval()
    with torch.no_grad():
        tensors["out_eval"] = model(x)
    model.load_state_dict(state)  # the fixture's state is the one before the step
    return model_lines("convnet", model, tensors)


def nested_case():
    torch.manual_seed(SEED + 1)
    model = Nested()
    with torch.no_grad():  # give the BatchNorm and LayerNorm entries values other than ones and zeros
        for k, v in model.state_dict().items():
            if v.dtype == torch.float32 and ("running" in k or "norm" in k or "gn" in k or k.startswith("features.1.")
                                               or k.endswith("scale")):
                v.add_(torch.rand(v.shape))
        model.features[1].num_batches_tracked.fill_(7)
        up_in = torch.randn(1, 4, 3, 3)
        conv1_in = torch.randn(1, 2, 5)
        tensors = {"up_in": up_in, "up_out": model.up(up_in), "conv1_in": conv1_in, "conv1_out": model.conv1(conv1_in)}
    return model_lines("nested", model, tensors)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                "tests", "fixtures")
    lines = ["# lazygrad nn fixtures: PyTorch's state dicts, reprs, outputs and gradients of the models in",
             f"# tests/test_nn.cpp. Generated by scripts/fixtures_nn.py (seed {SEED}, torch {torch.__version__},",
             f"# numpy {np.__version__}); do not edit. The format is described in that script.", ""]
    lines += convnet_case()
    lines += nested_case()
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "nn.txt")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    print(f"wrote {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
