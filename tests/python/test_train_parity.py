"""A training loop written in Python reaches the same losses as the same loop in C++
(examples/train_loop.cpp, built as example_train_loop): same seed, same model, same batches."""
import os
import subprocess
from pathlib import Path

import pytest

from lazygrad import Tensor, TinyJit, dtypes, nn

STEPS, SEED = 5, 3


def cpp_losses():
    exe = Path(os.environ.get("LAZYGRAD_BUILD_DIR", "build")) / "example_train_loop"
    if not exe.exists():
        pytest.skip(f"{exe} not built")
    out = subprocess.run([str(exe), str(STEPS), str(SEED)], capture_output=True, text=True, check=True)
    return [float(v) for v in out.stdout.split()]


def python_losses(jit):
    Tensor.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = nn.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = model(x).cross_entropy(y)
        loss.backward()
        opt.step([loss])
        return loss

    run = TinyJit(step) if jit else step
    losses = []
    for _ in range(STEPS):
        x, y = Tensor.randn(64, 784), Tensor.randint(64, low=0, high=10, dtype=dtypes.int64)
        losses.append(run(x.realize(), y.realize()).item())
    return losses


@pytest.mark.parametrize("jit", [False, True])
def test_python_loop_matches_cpp(jit):
    want = cpp_losses()
    got = python_losses(jit)
    assert len(got) == len(want) == STEPS
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == pytest.approx(w, rel=1e-5), f"step {i}: {got} against {want}"
    assert len(set(got)) == STEPS  # five different batches: not equal by accident
