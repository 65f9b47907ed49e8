#!/usr/bin/python3
"""The PyTorch peer of bench/train_epoch.cpp: the same Fashion-MNIST training steps, timed.

Run by build/bench_train_epoch (which sets the BLAS and OpenMP environment, see there); by hand:

    OMP_NUM_THREADS=2 /usr/bin/python3 scripts/bench_train_torch.py --model mlp --steps 50 --threads 2

The recipe is lazygrad train's: pixels scaled to [0, 1], Adam (PyTorch's defaults), batch 128,
cross-entropy, a new shuffle per epoch, last short batch dropped, PyTorch's default initialization.
The data is loaded once into one pre-scaled float tensor; a batch is an index_select of a random
permutation (no DataLoader, no worker processes, no per-item transforms), so a step is the model's
work plus a few microseconds of Python.

Prints `key=value` lines for the caller to parse: `info ...`, `warmup ...`, `timed ...`, and in
--epochs mode one `epoch ...` line per epoch.
"""
import argparse
import ctypes
import gzip
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(root, names):
    for name in names:
        for path in (os.path.join(root, name), os.path.join(root, name + ".gz")):
            if os.path.exists(path):
                opener = gzip.open if path.endswith(".gz") else open
                with opener(path, "rb") as f:
                    data = f.read()
                magic, = struct.unpack(">I", data[:4])
                ndim = magic & 0xFF
                dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
                t = torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8)
                return t.reshape(dims)
    sys.exit(f"error: none of {names} (plain or .gz) in {root}")


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def lenet():  # models/lenet.h
    return nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1024, 128), nn.ReLU(), nn.Linear(128, 10))


def blas_library():
    """The BLAS this process loaded (torch's matrix products call it) and, for OpenBLAS, the kernels
    it chose (OPENBLAS_CORETYPE), as `path:core`."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "blas" in line.split()[-1]})
    for path in paths:
        if "libopenblas" in os.path.basename(path):
            core = ctypes.CDLL(path).openblas_get_corename
            core.restype = ctypes.c_char_p
            return f"{path}:{core().decode()}"
    return next((os.path.realpath(p) for p in paths if "libblas" in p), "none")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], required=True)
    p.add_argument("--steps", type=int, default=50, help="timed steps (ignored with --epochs)")
    p.add_argument("--epochs", type=int, default=0, help="time this many full epochs instead")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (lazygrad's DEVICE=CUDA runs)")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("skip this PyTorch has no CUDA", flush=True)
        return
    dev = torch.device(a.device)

    torch.set_num_threads(a.threads)  # the default here is the physical-core count torch detects
    torch.set_flush_denormal(True)  # as lazygrad's worker threads (FTZ=1 by default)
    torch.manual_seed(a.seed)

    t0 = time.perf_counter()
    images = read_idx(a.data, ["train-images-idx3-ubyte", "train-images.idx3-ubyte"])
    labels = read_idx(a.data, ["train-labels-idx1-ubyte", "train-labels.idx1-ubyte"]).long()
    x_all = (images.float() / 255).unsqueeze(1).contiguous().to(dev)  # [N, 1, 28, 28] in [0, 1]
    labels = labels.to(dev)
    load_s = time.perf_counter() - t0

    model = (mlp() if a.model == "mlp" else lenet()).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    model.train()
    n, b = x_all.shape[0], a.batch_size
    steps_per_epoch = n // b
    gen = torch.Generator().manual_seed(a.seed)
    state = {"perm": None, "pos": steps_per_epoch}

    def step():
        if state["pos"] == steps_per_epoch:  # a new epoch: a new order, the short tail dropped
            state["perm"], state["pos"] = torch.randperm(n, generator=gen).to(dev), 0
        idx = state["perm"][state["pos"] * b:(state["pos"] + 1) * b]
        state["pos"] += 1
        xb, yb = x_all.index_select(0, idx), labels.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()  # lazygrad's loop reads the loss every step too

    print(f"info torch={torch.__version__} threads={torch.get_num_threads()} blas={blas_library()} "
          f"mkldnn={int(torch.backends.mkldnn.is_available())} load_s={load_s:.3f}", flush=True)

    t0 = time.perf_counter()
    warm = [step() for _ in range(a.warmup)]
    print(f"warmup steps={a.warmup} seconds={time.perf_counter() - t0:.6f} first_loss={warm[0]:.6f}",
          flush=True)

    if a.epochs > 0:
        losses, total = [], 0.0
        for e in range(a.epochs):
            state["pos"] = steps_per_epoch  # each timed epoch is a whole new shuffle
            t0 = time.perf_counter()
            epoch_losses = [step() for _ in range(steps_per_epoch)]
            seconds = time.perf_counter() - t0
            total += seconds
            losses += epoch_losses
            print(f"epoch index={e + 1} steps={steps_per_epoch} seconds={seconds:.6f} "
                  f"mean_loss={sum(epoch_losses) / len(epoch_losses):.6f}", flush=True)
        timed_steps = steps_per_epoch * a.epochs
    else:
        t0 = time.perf_counter()
        losses = [step() for _ in range(a.steps)]
        total = time.perf_counter() - t0
        timed_steps = a.steps
    print(f"timed steps={timed_steps} seconds={total:.6f} last_loss={losses[-1]:.6f}", flush=True)


if __name__ == "__main__":
    main()
