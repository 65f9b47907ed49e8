#!/usr/bin/python3
"""Python overhead: the Fashion-MNIST MLP training step written in Python against the same step in
C++ and PyTorch's Python step, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py [--steps N] [--build DIR]

The step is `lazygrad train`'s (784-512-512-10 MLP, pixels scaled to [0, 1], cross-entropy, Adam
at 1e-3, batch 128): lazygrad from Python without and with TinyJit (this process), then
build/bench_train_epoch --model mlp, which times the C++ step (apps/train_step.h, with its Jit) and
PyTorch's Python step (scripts/bench_train_torch.py, OpenBLAS with OPENBLAS_CORETYPE=SKYLAKEX,
threads set both ways), and whose summary line this script reads. Each is 3 warm-up steps, then
N timed steps (ms/step = their mean). Threads: THREADS for lazygrad (its default: the core count),
the same count for PyTorch.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from lazygrad import Tensor, TinyJit, nn
from lazygrad.nn.datasets import FASHION_MNIST, fashion_mnist

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "python"))
from mnist import MLP, make_train_step  # noqa: E402  (the example's model and step, timed here)


def time_python(x_all, y_all, steps, jit):
    Tensor.manual_seed(0)
    model = MLP()
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=1e-3)

    step = make_train_step(model, opt)
    run = TinyJit(step) if jit else step
    rng = np.random.default_rng(0)
    batches = [rng.choice(len(x_all), 128, replace=False) for _ in range(steps + 3)]
    data = [(Tensor(x_all[b]), Tensor(y_all[b].astype(np.int64))) for b in batches]
    for x, y in data[:3]:
        run(x, y).item()
    t0 = time.perf_counter()
    for x, y in data[3:]:
        loss = run(x, y).item()
    return (time.perf_counter() - t0) / steps * 1e3, loss


def time_cpp_and_torch(build, steps):
    exe = Path(build) / "bench_train_epoch"
    out = subprocess.run([str(exe), "--model", "mlp", "--steps", str(steps)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {exe} failed:\n{out.stderr}")
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "mlp" and f[1] == str(steps):
            return float(f[2]), (float(f[3]) if f[3] != "-" else None)
    sys.exit(f"error: no summary line in the output of {exe}:\n{out.stdout}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--data", default=FASHION_MNIST)
    args = p.parse_args()
    x_all, y_all, _, _ = fashion_mnist(args.data)
    print(f"python_step: MLP 784-512-512-10, batch 128, Adam; {args.steps} timed steps after 3 warm-up steps; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    py_ms, py_loss = time_python(x_all, y_all, args.steps, jit=False)
    print(f"  lazygrad, Python, no Jit   {py_ms:8.2f} ms/step (last loss {py_loss:.4f})", flush=True)
    jit_ms, jit_loss = time_python(x_all, y_all, args.steps, jit=True)
    print(f"  lazygrad, Python, TinyJit  {jit_ms:8.2f} ms/step (last loss {jit_loss:.4f})", flush=True)
    cpp_ms, torch_ms = time_cpp_and_torch(args.build, args.steps)
    print(f"  lazygrad, C++ (Jit)        {cpp_ms:8.2f} ms/step (bench_train_epoch)", flush=True)
    if torch_ms is not None:
        print(f"  PyTorch, Python            {torch_ms:8.2f} ms/step (bench_train_epoch's peer)", flush=True)
    print("\nratios (time per step; below 1: faster than the other)")
    print(f"  Python no Jit / C++   {py_ms / cpp_ms:6.2f}")
    print(f"  Python TinyJit / C++  {jit_ms / cpp_ms:6.2f}")
    if torch_ms is not None:
        print(f"  Python TinyJit / PyTorch  {jit_ms / torch_ms:6.2f}")
        print(f"  Python no Jit / PyTorch   {py_ms / torch_ms:6.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
