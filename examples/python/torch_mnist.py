#!/usr/bin/python3
"""PyTorch's classic MNIST example (the shape of pytorch/examples' mnist/main.py: a small ConvNet,
SGD with momentum, StepLR, train()/eval(), no_grad) written for PyTorch, run by lazygrad. The only
lazygrad-specific lines are the five imports below; with the torch imports in the comment instead
it runs with real PyTorch (no torchvision: the data are read from the IDX files with numpy).

    FASHION_MNIST=/usr/share/datasets/fashion-mnist EPOCHS=1 LIMIT=2048 PYTHONPATH=build/python \
        /usr/bin/python3 examples/python/torch_mnist.py
"""
import gzip
import os

import numpy as np

import lazygrad as torch
import lazygrad.nn as nn
import lazygrad.nn.functional as F
import lazygrad.optim as optim
from lazygrad.optim.lr_scheduler import StepLR
# With PyTorch:
# import torch
# import torch.nn as nn
# import torch.nn.functional as F
# import torch.optim as optim
# from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(32 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def read_idx(path):
    """An IDX file of unsigned bytes (gzip-compressed) as a numpy array."""
    with gzip.open(path) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, prefix, limit):
    x = read_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"))[:limit]
    y = read_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"))[:limit]
    x = ((x.astype(np.float32) / 255.0) - 0.1307) / 0.3081  # MNIST's usual normalization
    return x.reshape(-1, 1, 28, 28), y.astype(np.int64)


def batches(x, y, batch_size, rng=None):
    order = rng.permutation(len(x)) if rng is not None else np.arange(len(x))
    for i in range(0, len(x) - batch_size + 1, batch_size):
        idx = order[i:i + batch_size]
        yield torch.from_numpy(x[idx]), torch.from_numpy(y[idx])


def train(model, device, data, optimizer, epoch, rng, batch_size, log_interval):
    model.train()
    for batch_idx, (x, target) in enumerate(batches(*data, batch_size, rng)):
        x, target = x.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(x)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * batch_size}/{len(data[0])}]\tLoss: {loss.item():.6f}",
                  flush=True)


def test(model, device, data, batch_size):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for x, target in batches(*data, batch_size):
            x, target = x.to(device), target.to(device)
            output = model(x)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1)
            correct += (pred == target).sum().item()
    n = len(data[0]) // batch_size * batch_size
    print(f"Test set: Average loss: {test_loss / n:.4f}, Accuracy: {correct}/{n} ({100.0 * correct / n:.0f}%)",
          flush=True)
    return test_loss / n, correct / n


def main():
    folder = os.getenv("FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
    epochs, limit = int(os.getenv("EPOCHS", "1")), int(os.getenv("LIMIT", "60000"))
    batch_size, test_batch_size, lr, gamma = 64, 500, 0.05, 0.7

    torch.manual_seed(1)
    device = torch.device("cpu")
    rng = np.random.default_rng(1)
    train_data = load(folder, "train", limit)
    test_data = load(folder, "t10k", max(limit // 6, test_batch_size))

    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=gamma)
    for epoch in range(1, epochs + 1):
        train(model, device, train_data, optimizer, epoch, rng, batch_size, log_interval=10)
        test_loss, accuracy = test(model, device, test_data, test_batch_size)
        scheduler.step()
    print(f"final test loss {test_loss:.4f} accuracy {accuracy:.4f} lr {scheduler.get_last_lr()[0]:.4g}")


if __name__ == "__main__":
    main()
