"""backward(), .grad, gradient(*targets), requires_grad, detach, no_grad and Tensor.train."""
import sys
import threading

import numpy as np
import pytest
import torch

from lazygrad import Tensor, no_grad


def test_backward_accumulates_like_torch():
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    a, ta = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for _ in range(2):
        ((a * a).sum() + a.relu().mean()).backward()
        ((ta * ta).sum() + ta.relu().mean()).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    a.grad = None
    assert a.grad is None
    a.grad = Tensor.ones(2, 2)
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((2, 2)))
    a.zero_grad()
    assert a.grad is None
    y = a.exp()
    assert y.backward(Tensor.ones(2, 2)) is y


def test_gradient_like_tinygrad():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = Tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = (x * w).sum()
    gx, gw = loss.gradient(x, w)
    np.testing.assert_array_equal(gx.numpy(), [0.5, -1.0, 2.0])
    np.testing.assert_array_equal(gw.numpy(), [1.0, 2.0, 3.0])
    assert x.grad is None  # gradient() touches no .grad
    y = x * x
    (g,) = y.gradient(x, gradient=Tensor([1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g.numpy(), [2.0, 0.0, 12.0])
    # second order: gradients are tensors with graphs of their own
    (g1,) = (x**3).sum().gradient(x)
    (g2,) = g1.sum().gradient(x)
    np.testing.assert_allclose(g2.numpy(), 6 * np.array([1, 2, 3]), rtol=1e-6)


def test_requires_grad_and_detach():
    t = Tensor([1.0, 2.0])
    assert not t.requires_grad and t.grad is None
    t.requires_grad = True
    assert t.requires_grad and t.is_leaf
    y = t * 2
    assert y.requires_grad and not y.is_leaf
    assert not y.detach().requires_grad
    assert t.requires_grad_(False) is t and not t.requires_grad


def test_no_grad_context_decorator_and_flag():
    t = Tensor([1.0, 2.0], requires_grad=True)
    with no_grad():
        assert Tensor.no_grad
        assert not (t * 2).requires_grad
    assert not Tensor.no_grad and (t * 2).requires_grad

    @no_grad()
    def f():
        return t * 3

    assert not f().requires_grad
    Tensor.no_grad = True
    try:
        assert not (t + 1).requires_grad
    finally:
        Tensor.no_grad = False
    assert (t + 1).requires_grad


def test_train_test_contexts():
    assert Tensor.training is False
    with Tensor.train():
        assert Tensor.training
        with Tensor.test():
            assert not Tensor.training
        assert Tensor.training
    assert Tensor.training is False


def test_gil_released_while_kernels_run():
    # With a 100 s switch interval Python never preempts a thread: the main thread can only run while
    # the worker is inside realize() if realize() released the GIL.
    old = sys.getswitchinterval()
    sys.setswitchinterval(100)
    try:
        x = Tensor.rand(768, 768).realize()
        started, state = threading.Event(), {}

        def work():
            started.set()
            (x @ x + 1).realize()
            state["done"] = True

        th = threading.Thread(target=work)
        th.start()
        started.wait()
        seen_while_running = "done" not in state
        th.join()
    finally:
        sys.setswitchinterval(old)
    assert seen_while_running and state["done"]


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_training_step_matches_torch(op):
    # A tiny regression step through Python: loss and updated weights equal torch's.
    rs = np.random.default_rng(0)
    xs, w0 = rs.standard_normal((8, 3)).astype(np.float32), rs.standard_normal((3, 1)).astype(np.float32)
    w, tw = Tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    for _ in range(3):
        loss = getattr(((Tensor(xs) @ w) - 1).square(), op)()
        tloss = getattr(((torch.tensor(xs) @ tw) - 1).square(), op)()
        loss.backward()
        tloss.backward()
        with no_grad():
            w.assign(w - w.grad * 0.1).realize()
        w.grad = None
        with torch.no_grad():
            tw -= tw.grad * 0.1
        tw.grad = None
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-5)


def test_an_integer_cast_ends_the_graph_like_torch():
    x, tx = Tensor([1.5, 2.5], requires_grad=True), torch.tensor([1.5, 2.5], requires_grad=True)
    casts = (lambda t: t.int(), lambda t: t.int().float(), lambda t: t > 2, lambda t: t.argmax(), lambda t: t.double())
    for f in casts:
        assert f(x).requires_grad == f(tx).requires_grad
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        tx.int().float().sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        x.int().float().sum().backward()
    assert x.grad is None and tx.grad is None
    (x * 2 + x.int()).sum().backward()
    (tx * 2 + tx.int()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("op", ["trunc", "floor", "ceil", "round", "sign"])
def test_rounding_ops_and_sign_have_zero_gradients_like_torch(op):
    x, tx = Tensor([1.5, -2.5, 3.0], requires_grad=True), torch.tensor([1.5, -2.5, 3.0], requires_grad=True)
    getattr(x, op)().sum().backward()
    getattr(tx, op)().sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
