"""Shared helpers: compare a lazygrad computation with the same one in PyTorch (values and
gradients) and with numpy."""
import numpy as np
import pytest

from lazygrad import Tensor

torch = pytest.importorskip("torch")


def rng(seed=0):
    return np.random.default_rng(seed)


def data(shape, kind="any", seed=0, dtype=np.float32):
    """Test inputs in a domain: any (normal), pos (0.5..1.5), unit (-0.9..0.9), gt1 (1.1..2)."""
    r = rng(seed)
    if kind == "pos":
        a = r.uniform(0.5, 1.5, shape)
    elif kind == "unit":
        a = r.uniform(-0.9, 0.9, shape)
    elif kind == "gt1":
        a = r.uniform(1.1, 2.0, shape)
    else:
        a = r.standard_normal(shape)
    return np.asarray(a, dtype=dtype)


def compare(lg_fn, torch_fn, *inputs, grad=True, atol=1e-5, rtol=1e-4, grad_atol=None):
    """Runs lg_fn on Tensors and torch_fn on torch tensors made from the numpy inputs; checks the
    outputs and (when grad) the gradients of sum(out * upstream) with respect to every float input."""
    floats = [np.issubdtype(a.dtype, np.floating) for a in inputs]
    lg = [Tensor(a, requires_grad=grad and f) for a, f in zip(inputs, floats)]
    tt = [torch.tensor(a, requires_grad=grad and f) for a, f in zip(inputs, floats)]
    out_l, out_t = lg_fn(*lg), torch_fn(*tt)
    got = out_l.numpy()
    want = out_t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
    if not grad:
        return out_l
    up = data(want.shape, seed=7).astype(want.dtype) if want.shape else np.asarray(1.3, want.dtype)
    out_l.backward(Tensor(up))
    out_t.backward(torch.tensor(up))
    for x, y, f in zip(lg, tt, floats):
        if not f:
            continue
        want_g = y.grad.numpy() if y.grad is not None else np.zeros(y.shape, np.float32)
        got_g = x.grad.numpy() if x.grad is not None else np.zeros(x.shape, np.float32)
        np.testing.assert_allclose(got_g, want_g, atol=grad_atol or atol * 10, rtol=rtol * 10)
    return out_l
