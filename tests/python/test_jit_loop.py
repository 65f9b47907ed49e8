"""tinygrad's beautiful_mnist training step under TinyJit: a BatchNorm whose running statistics the
step does not pass to the optimizer, opt.step() with no arguments, and `loss = train_step()` kept
alive into the next step. Each of these once made the capture fail (issue 13); the replayed losses,
parameters and running statistics must equal the eager run's."""
import os

import numpy as np
import pytest

from lazygrad import Tensor, TinyJit, nn

STEPS, BS = 6, 32
DATA = "/usr/share/datasets/fashion-mnist"


class Model:
    # beautiful_mnist's layers, narrower (2 cores): conv, relu, conv, relu, BatchNorm, max_pool2d, ...
    def __init__(self):
        self.layers = [
            nn.Conv2d(1, 8, 5), Tensor.relu,
            nn.Conv2d(8, 8, 5), Tensor.relu,
            nn.BatchNorm(8), Tensor.max_pool2d,
            nn.Conv2d(8, 16, 3), Tensor.relu,
            nn.BatchNorm(16), Tensor.max_pool2d,
            lambda x: x.flatten(1), nn.Linear(16 * 4 * 4, 10)]

    def __call__(self, x):
        return x.sequential(self.layers)


def run(jit, x_train, y_train, loss_to_step):
    Tensor.manual_seed(7)
    model = Model()
    opt = nn.optim.Adam(nn.state.get_parameters(model))

    def train_step():
        opt.zero_grad()
        samples = Tensor.randint(BS, high=x_train.shape[0])
        loss = model(x_train[samples]).sparse_categorical_crossentropy(y_train[samples]).backward()
        opt.step([loss]) if loss_to_step else opt.step()
        return loss

    step = TinyJit(train_step) if jit else train_step
    losses, loss = [], None
    for _ in range(STEPS):
        loss = step()  # the previous step's loss is alive while this step runs
        losses.append(loss.item())
    bns = [layer for layer in model.layers if isinstance(layer, nn.BatchNorm)]
    state = [t.numpy().copy() for t in nn.state.get_parameters(model)]
    stats = [b.running_mean.numpy().copy() for b in bns] + [b.running_var.numpy().copy() for b in bns]
    return losses, state, stats, (step.captured_kernels if jit else 0)


@pytest.mark.skipif(not os.path.isdir(DATA), reason="needs Debian's dataset-fashion-mnist")
@pytest.mark.parametrize("loss_to_step", [False, True], ids=["step()", "step([loss])"])
def test_beautiful_mnist_step_under_tinyjit_equals_eager(loss_to_step):
    x, y, _, _ = nn.datasets.fashion_mnist()
    x_train = Tensor(x[:2048].reshape(-1, 1, 28, 28).astype(np.float32) / 255.0).realize()
    y_train = Tensor(y[:2048].astype(np.int64)).realize()
    eager = run(False, x_train, y_train, loss_to_step)
    jitted = run(True, x_train, y_train, loss_to_step)
    assert jitted[3] > 0  # the replays ran captured kernels
    assert len(set(eager[0])) == STEPS  # different batches: equal losses are not an accident
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-5)
    for a, b in zip(jitted[1] + jitted[2], eager[1] + eager[2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
