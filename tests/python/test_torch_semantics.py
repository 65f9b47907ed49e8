"""Semantics and arguments where lazygrad once differed from PyTorch 1.13 (and tinygrad), each
checked against torch: flip of no dims, integer linspace, pow's and division's gradients at the
edges, uint64 constants past int64, comparisons in a gradient graph, and the argument forms both
libraries accept (axis tuples, keepdim without an axis, dtype=, lists for stack/cat, ...)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import compare, data

from lazygrad import LazygradError, Tensor, dtypes

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5 - 2


def same(got, want, **kw):
    got = got.numpy() if isinstance(got, Tensor) else np.asarray(got)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), equal_nan=True, **kw)


# ---- semantics ----


@pytest.mark.parametrize("dims", [(), []])
def test_flip_of_no_dims_is_a_no_op(dims):
    same(Tensor(X).flip(dims), torch.tensor(X).flip(dims))
    compare(lambda t: t.flip(dims), lambda t: t.flip(dims), X)
    with pytest.raises(TypeError):  # torch: flip() missing its dims
        Tensor(X).flip()


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_integer_linspace_matches_torch(dtype):
    # Steps below 2 * the SIMD width: PyTorch's CPU kernel truncates its vector lanes' start and
    # step to the integer type beyond that, a value that depends on the machine's vector width.
    lg, th = getattr(dtypes, dtype), getattr(torch, dtype)
    for start in (0, -7, 0.5, -2.5, 1.9):
        for end in (10, -10, 3.7, -3.2, 100):
            if dtype == "uint8" and (start < 0 or end < 0):
                continue
            for steps in (0, 1, 4, 7):
                want = torch.linspace(start, end, steps, dtype=th)
                got = Tensor.linspace(start, end, steps, dtype=lg)
                assert got.tolist() == want.tolist(), (start, end, steps)


BASES = np.array([0.0, -0.0, 1.0, 2.0, -2.0, 0.5, 3.0], np.float32)


@pytest.mark.parametrize("e", [0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -0.5, 2.5, -2.0])
def test_pow_gradient_at_a_zero_base_is_torchs(e):
    xl, xt = Tensor(BASES, requires_grad=True), torch.tensor(BASES, requires_grad=True)
    (xl.pow(e) + xl * 0).sum().backward()
    (xt.pow(e) + xt * 0).sum().backward()
    same(xl.grad, xt.grad, rtol=1e-5)
    # a tensor exponent: both gradients
    ev = np.full_like(BASES, e)
    xl, el = Tensor(BASES, requires_grad=True), Tensor(ev, requires_grad=True)
    xt, et = torch.tensor(BASES, requires_grad=True), torch.tensor(ev, requires_grad=True)
    xl.pow(el).sum().backward()
    xt.pow(et).sum().backward()
    same(xl.grad, xt.grad, rtol=1e-5)
    same(el.grad, et.grad, rtol=1e-5)


@pytest.mark.parametrize("base", [0.0, 2.0, 0.5, -2.0])
def test_pow_of_a_number_to_a_tensor_has_torchs_gradient(base):
    ev = np.array([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -0.5, 2.5, -2.0], np.float32)
    el, et = Tensor(ev, requires_grad=True), torch.tensor(ev, requires_grad=True)
    (base**el).sum().backward()
    (base**et).sum().backward()
    same(el.grad, et.grad, rtol=1e-5)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_division_gradient_at_overflow_is_torchs(dt):
    # exp(x) / (1 + exp(x)): inf / inf forward and backward where exp overflows (float32 at 300:
    # PyTorch's gradient is NaN there too; float64: 0). lazygrad's div is a * (1 / b).
    xs = np.array([300, -300, 0, 50, 88, 89, 100, 700, 800, -800, 20], dt)
    xl, xt = Tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
    yl, yt = xl.exp() / (1 + xl.exp()), xt.exp() / (1 + xt.exp())
    same(yl, yt, rtol=1e-6)
    yl.sum().backward()
    yt.sum().backward()
    same(xl.grad, xt.grad, rtol=1e-6, atol=1e-30)
    a = np.array([np.inf, 1, 0, 1e30, 1, np.inf, 0], dt)
    b = np.array([np.inf, np.inf, 0, 1e30, 1e-30, 2, np.inf], dt)
    al, bl = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (al / bl).sum().backward()
    (at / bt).sum().backward()
    same(al.grad, at.grad)
    same(bl.grad, bt.grad)


def test_celu_gradient_at_large_inputs_is_torchs():
    xs = np.array([300, 350, -300, 90, -90, 0, 1.5], np.float32)
    for alpha in (1.0, 0.5):
        xl, xt = Tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
        yl, yt = xl.celu(alpha), F.celu(xt, alpha)
        same(yl, yt, rtol=1e-6)
        yl.sum().backward()
        yt.sum().backward()
        same(xl.grad, xt.grad, rtol=1e-6, atol=1e-30)  # torch: a denormal exp(-90) where lazygrad has 0


def test_uint64_constants_past_int64():
    # torch 1.13 has no uint64 tensors: numpy is the reference.
    u = np.array([1, 2**63 + 5, 2**64 - 1], np.uint64)
    assert (Tensor(u) & (2**64 - 1)).tolist() == (u & np.uint64(2**64 - 1)).tolist()
    assert (Tensor(u) // (2**64 - 1)).tolist() == (u // np.uint64(2**64 - 1)).tolist()
    assert (Tensor(u) == 2**64 - 1).tolist() == [False, False, True]
    assert (Tensor(u) | (2**63)).tolist() == (u | np.uint64(2**63)).tolist()
    # past int64 for an int64 tensor is an error, as torch's "Overflow when unpacking long"
    with pytest.raises(RuntimeError):
        torch.ones(2, dtype=torch.long) & (2**64 - 1)
    with pytest.raises(LazygradError, match="does not fit in int64"):
        Tensor.ones(2, dtype=dtypes.int64) & (2**64 - 1)
    with pytest.raises(ValueError, match="uint64"):
        Tensor(u) & (2**64)
    same(Tensor.ones(2) * (2**64 - 1), torch.ones(2) * float(2**64 - 1))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: x * (x < 0),
        lambda x, y: x * (x != 0),
        lambda x, y: x * (x >= y) + y * (x == y),
        lambda x, y: (x > y).float() * 3 + x * y,
        lambda x, y: torch.where(x <= y, x, y * 2) if isinstance(x, torch.Tensor) else (x <= y).where(x, y * 2),
    ],
)
def test_comparisons_in_a_gradient_graph_are_torchs(fn):
    a, b = data((4, 5), seed=1), data((4, 5), seed=2)
    b[0] = a[0]  # some ties
    compare(fn, fn, a, b)
    xl = Tensor(a, requires_grad=True)
    c = xl < 0
    assert c.dtype == dtypes.bool and not c.requires_grad
    xt = torch.tensor(a, requires_grad=True)
    assert not (xt < 0).requires_grad


# ---- arguments ----

B = X > 0


@pytest.mark.parametrize(
    "name,lg,th",
    [
        ("any axis tuple", lambda: Tensor(B).any(axis=(0, 2)), lambda: torch.tensor(B).any(2).any(0)),
        ("any dim tuple", lambda: Tensor(B).any(dim=(0, 2)), lambda: torch.tensor(B).any(2).any(0)),
        ("all axis tuple keepdim", lambda: Tensor(B).all(axis=(0, 2), keepdim=True),
         lambda: torch.tensor(B).all(2, keepdim=True).all(0, keepdim=True)),
        ("all dim list", lambda: Tensor(B).all(dim=[1]), lambda: torch.tensor(B).all(1)),
        ("std keepdim", lambda: Tensor(X).std(keepdim=True), lambda: torch.tensor(X).std((0, 1, 2), keepdim=True)),
        ("var keepdim", lambda: Tensor(X).var(keepdim=True), lambda: torch.tensor(X).var((0, 1, 2), keepdim=True)),
        ("std correction", lambda: Tensor(X).std(correction=0), lambda: torch.tensor(X).std(unbiased=False)),
        ("var axis correction", lambda: Tensor(X).var(1, correction=0), lambda: torch.tensor(X).var(1, unbiased=False)),
        ("sum dtype", lambda: Tensor(X).sum(dtype=dtypes.float64), lambda: torch.tensor(X).sum(dtype=torch.float64)),
        ("sum bool dtype", lambda: Tensor(B).sum(dtype=dtypes.int32), lambda: torch.tensor(B).sum(dtype=torch.int32)),
        ("prod dtype", lambda: Tensor(X).prod(1, dtype=dtypes.float64),
         lambda: torch.tensor(X).prod(1, dtype=torch.float64)),
        ("stack list", lambda: Tensor.stack([Tensor(X), Tensor(X)], dim=1),
         lambda: torch.stack([torch.tensor(X)] * 2, dim=1)),
        ("stack list positional dim", lambda: Tensor.stack([Tensor(X), Tensor(X)], 2),
         lambda: torch.stack([torch.tensor(X)] * 2, 2)),
        ("stack varargs", lambda: Tensor.stack(Tensor(X), Tensor(X), dim=1),
         lambda: torch.stack([torch.tensor(X)] * 2, dim=1)),
        ("stack method", lambda: Tensor(X).stack(Tensor(X)), lambda: torch.stack([torch.tensor(X)] * 2)),
        ("cat list", lambda: Tensor.cat([Tensor(X), Tensor(X)], dim=1), lambda: torch.cat([torch.tensor(X)] * 2, 1)),
        ("cat tuple positional dim", lambda: Tensor.cat((Tensor(X), Tensor(X)), -1),
         lambda: torch.cat([torch.tensor(X)] * 2, -1)),
        ("isinf positive", lambda: Tensor([np.inf, -np.inf, 1.0, np.nan]).isinf(detect_negative=False),
         lambda: torch.isposinf(torch.tensor([np.inf, -np.inf, 1.0, np.nan]))),
        ("isinf negative", lambda: Tensor([np.inf, -np.inf, 1.0, np.nan]).isinf(detect_positive=False),
         lambda: torch.isneginf(torch.tensor([np.inf, -np.inf, 1.0, np.nan]))),
        ("isinf neither", lambda: Tensor([np.inf, -np.inf]).isinf(False, False), lambda: torch.zeros(2, dtype=torch.bool)),
        ("clip min_", lambda: Tensor(X).clip(min_=0), lambda: torch.tensor(X).clip(min=0)),
        ("clip max_", lambda: Tensor(X).clip(max_=0), lambda: torch.tensor(X).clip(max=0)),
        ("clamp min", lambda: Tensor(X).clamp(min=0), lambda: torch.tensor(X).clamp(min=0)),
        ("clamp max", lambda: Tensor(X).clamp(max=0.5), lambda: torch.tensor(X).clamp(max=0.5)),
        ("repeat more", lambda: Tensor(X).repeat(2, 1, 1, 2), lambda: torch.tensor(X).repeat(2, 1, 1, 2)),
        ("repeat more tuple", lambda: Tensor([1.0, 2.0]).repeat((3, 2)), lambda: torch.tensor([1.0, 2.0]).repeat((3, 2))),
        ("reshape ()", lambda: Tensor([5.0]).reshape(()), lambda: torch.tensor([5.0]).reshape(())),
        ("reshape []", lambda: Tensor([[5.0]]).reshape([]), lambda: torch.tensor([[5.0]]).reshape([])),
        ("meshgrid one", lambda: Tensor.meshgrid(Tensor([1.0, 2.0]))[0],
         lambda: torch.meshgrid(torch.tensor([1.0, 2.0]), indexing="ij")[0]),
        ("meshgrid one method", lambda: Tensor([1.0, 2.0]).meshgrid()[0],
         lambda: torch.meshgrid(torch.tensor([1.0, 2.0]), indexing="ij")[0]),
        ("meshgrid list xy", lambda: Tensor.meshgrid([Tensor([1.0, 2.0]), Tensor([3.0, 4.0, 5.0])], indexing="xy")[1],
         lambda: torch.meshgrid([torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])], indexing="xy")[1]),
    ],
)
def test_arguments_both_libraries_accept(name, lg, th):
    same(lg(), th(), rtol=1e-6)


def test_cross_entropy_over_a_class_axis_of_3d_input():
    logits = data((2, 5, 3), seed=3)
    target = np.array([[0, 4, 2], [1, 1, 3]], np.int64)
    compare(lambda x, y: x.cross_entropy(y), lambda x, y: F.cross_entropy(x, y), logits, target)
    compare(lambda x, y: x.cross_entropy(y, reduction="none"), lambda x, y: F.cross_entropy(x, y, reduction="none"),
            logits, target)
    # tinygrad's sparse_categorical_crossentropy: the classes are the last axis, [N, d, C]
    last = np.ascontiguousarray(logits.transpose(0, 2, 1))
    compare(lambda x, y: x.sparse_categorical_crossentropy(y),
            lambda x, y: F.cross_entropy(x.permute(0, 2, 1), y), last, target)
    compare(lambda x, y: x.sparse_categorical_crossentropy(y, reduction="sum"),
            lambda x, y: F.cross_entropy(x.permute(0, 2, 1), y, reduction="sum"), last, target)
