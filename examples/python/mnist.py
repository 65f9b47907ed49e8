#!/usr/bin/python3
"""Trains the Fashion-MNIST MLP of `lazygrad train` (784-512-512-10, Adam) from Python.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/mnist.py [--epochs N] [--jit|--no-jit]

Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist; --data DIR for another
folder of the four IDX files), prints the loss every 100 steps and the test accuracy after each
epoch. With the Jit (the default) every step after the second replays the captured kernels.
"""
import argparse
import time

import numpy as np

from lazygrad import Tensor, TinyJit, dtypes, nn, no_grad
from lazygrad.nn.datasets import FASHION_MNIST, fashion_mnist


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x):
        x = x.flatten(1).cast(dtypes.float32) / 255.0
        return self.l3(self.l2(self.l1(x).relu()).relu())


def make_train_step(model, opt):
    """One Adam step on a batch of uint8 images and int64 labels; returns the loss."""
    def train_step(x, y):
        opt.zero_grad()
        loss = model(x).cross_entropy(y)
        loss.backward()
        opt.step([loss])  # the loss is realized in one schedule with the update
        return loss
    return train_step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=FASHION_MNIST)
    p.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    p.add_argument("--jit", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args()

    x_train, y_train, x_test, y_test = fashion_mnist(args.data)
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    Tensor.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = MLP()
    opt = nn.optim.Adam(nn.state.get_parameters(model), lr=args.lr)

    train_step = make_train_step(model, opt)
    step = TinyJit(train_step) if args.jit else train_step
    for epoch in range(args.epochs):
        order, t0, losses = rng.permutation(len(x_train)), time.perf_counter(), []
        for i in range(len(order) // args.batch_size):  # drop the last, shorter batch (the Jit needs one shape)
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            losses.append(step(Tensor(x_train[idx]), Tensor(y_train[idx].astype(np.int64))).item())
            if i % 100 == 0:
                print(f"epoch {epoch} step {i:4d} loss {losses[-1]:.4f}", flush=True)
        elapsed = time.perf_counter() - t0
        with no_grad():
            correct = sum(int((model(Tensor(x_test[i:i + 1000])).argmax(1).numpy() == y_test[i:i + 1000]).sum())
                          for i in range(0, len(x_test), 1000))
        print(f"epoch {epoch}: {elapsed:.1f} s ({len(losses) / elapsed:.1f} steps/s), mean loss "
              f"{np.mean(losses):.4f}, test accuracy: {100 * correct / len(x_test):.2f}%", flush=True)


if __name__ == "__main__":
    main()
