"""Every op as a method and as a Python operator, against PyTorch: values and gradients."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import compare, data

from lazygrad import Tensor, dtypes

S = (2, 3)

UNARY = [
    ("neg", lambda x: x.neg(), torch.neg, "any"),
    ("__neg__", lambda x: -x, torch.neg, "any"),
    ("abs", lambda x: abs(x), torch.abs, "any"),
    ("exp", Tensor.exp, torch.exp, "any"),
    ("exp2", Tensor.exp2, torch.exp2, "any"),
    ("log", Tensor.log, torch.log, "pos"),
    ("log2", Tensor.log2, torch.log2, "pos"),
    ("sqrt", Tensor.sqrt, torch.sqrt, "pos"),
    ("rsqrt", Tensor.rsqrt, torch.rsqrt, "pos"),
    ("sin", Tensor.sin, torch.sin, "any"),
    ("cos", Tensor.cos, torch.cos, "any"),
    ("tan", Tensor.tan, torch.tan, "unit"),
    ("tanh", Tensor.tanh, torch.tanh, "any"),
    ("sinh", Tensor.sinh, torch.sinh, "any"),
    ("cosh", Tensor.cosh, torch.cosh, "any"),
    ("asinh", Tensor.asinh, torch.asinh, "any"),
    ("acosh", Tensor.acosh, torch.acosh, "gt1"),
    ("atanh", Tensor.atanh, torch.atanh, "unit"),
    ("reciprocal", Tensor.reciprocal, torch.reciprocal, "pos"),
    ("relu", Tensor.relu, torch.relu, "any"),
    ("sigmoid", Tensor.sigmoid, torch.sigmoid, "any"),
    ("expm1", Tensor.expm1, torch.expm1, "any"),
    ("log1p", Tensor.log1p, torch.log1p, "pos"),
    ("erf", Tensor.erf, torch.erf, "any"),
    ("erfc", Tensor.erfc, torch.erfc, "any"),
    ("square", Tensor.square, torch.square, "any"),
    ("sign", Tensor.sign, torch.sign, "any"),
    ("floor", Tensor.floor, torch.floor, "any"),
    ("ceil", Tensor.ceil, torch.ceil, "any"),
    ("trunc", Tensor.trunc, torch.trunc, "any"),
    ("round", Tensor.round, torch.round, "any"),
    ("relu6", lambda x: (x * 4).relu6(), lambda x: F.relu6(x * 4), "any"),
    ("leaky_relu", lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1), "any"),
    ("elu", lambda x: x.elu(0.5), lambda x: F.elu(x, 0.5), "any"),
    ("celu", lambda x: x.celu(0.7), lambda x: F.celu(x, 0.7), "any"),
    ("selu", Tensor.selu, F.selu, "any"),
    ("gelu", Tensor.gelu, lambda x: F.gelu(x, approximate="tanh"), "any"),
    ("gelu_erf", lambda x: x.gelu("none"), F.gelu, "any"),
    ("quick_gelu", Tensor.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x), "any"),
    ("silu", Tensor.silu, F.silu, "any"),
    ("swish", Tensor.swish, F.silu, "any"),
    ("mish", Tensor.mish, F.mish, "any"),
    ("softplus", lambda x: x.softplus(2.0), lambda x: F.softplus(x, 2.0), "any"),
    ("logsigmoid", Tensor.logsigmoid, F.logsigmoid, "any"),
    ("softsign", Tensor.softsign, F.softsign, "any"),
    ("hardtanh", lambda x: x.hardtanh(-0.5, 0.5), lambda x: F.hardtanh(x, -0.5, 0.5), "any"),
    ("hardswish", lambda x: (x * 4).hardswish(), lambda x: F.hardswish(x * 4), "any"),
    ("hardsigmoid", lambda x: (x * 4).hardsigmoid(), lambda x: F.hardsigmoid(x * 4), "any"),
    ("clip", lambda x: x.clip(-0.5, 0.4), lambda x: x.clamp(-0.5, 0.4), "any"),
    ("clip_tensor", lambda x: x.clip(Tensor([-0.5, 0.0, -1.0]), 0.5), lambda x: x.clamp(torch.tensor([-0.5, 0.0, -1.0]), torch.tensor(0.5)), "any"),
    ("clamp_min", lambda x: x.clamp(min=0.1), lambda x: x.clamp(min=0.1), "any"),
    ("softmax", Tensor.softmax, lambda x: x.softmax(-1), "any"),
    ("log_softmax", lambda x: x.log_softmax(dim=0), lambda x: x.log_softmax(0), "any"),
    ("float_pow", lambda x: x**2.5, lambda x: x**2.5, "pos"),
    ("int_pow", lambda x: x**3, lambda x: x**3, "any"),
    ("rpow", lambda x: 2**x, lambda x: 2**x, "any"),
    ("rsub", lambda x: 2 - x, lambda x: 2 - x, "any"),
    ("rdiv", lambda x: 1.5 / x, lambda x: 1.5 / x, "pos"),
    ("radd_rmul", lambda x: 3 * x + 1, lambda x: 3 * x + 1, "any"),
    ("pos", lambda x: +x, lambda x: +x, "any"),
]


@pytest.mark.parametrize("name,lg,th,kind", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, lg, th, kind):
    compare(lg, th, data(S, kind), atol=2e-5)


BINARY = [
    ("add", lambda a, b: a + b, lambda a, b: a + b),
    ("add_method", lambda a, b: a.add(b), torch.add),
    ("sub", lambda a, b: a - b, lambda a, b: a - b),
    ("sub_reverse", lambda a, b: a.sub(b, reverse=True), lambda a, b: b - a),
    ("mul", lambda a, b: a * b, lambda a, b: a * b),
    ("div", lambda a, b: a / b, lambda a, b: a / b),
    ("pow", lambda a, b: a.abs() ** b, lambda a, b: a.abs() ** b),
    ("maximum", Tensor.maximum, torch.maximum),
    ("minimum", Tensor.minimum, torch.minimum),
    ("lerp", lambda a, b: a.lerp(b, 0.3), lambda a, b: torch.lerp(a, b, 0.3)),
    ("where", lambda a, b: (a > b).where(a, b), lambda a, b: torch.where(a > b, a, b)),
]


@pytest.mark.parametrize("name,lg,th", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", [(S, S), (S, (3,))], ids=["same", "broadcast"])
def test_binary(name, lg, th, shapes):
    compare(lg, th, data(shapes[0], seed=1), data(shapes[1], "pos", seed=2))


def test_matmul_dot_linear():
    a, b, bias = data((2, 3), seed=1), data((3, 4), seed=2), data((4,), seed=3)
    compare(lambda x, y: x @ y, lambda x, y: x @ y, a, b)
    compare(lambda x, y: x.matmul(y), torch.matmul, data((2, 2, 3)), b)
    compare(lambda x, y: x.dot(y), torch.matmul, a, b)  # tinygrad's dot is matmul
    compare(lambda x, y: x.dot(y), torch.dot, data((3,)), data((3,), seed=4))
    # tinygrad's linear: x @ weight + bias, weight [in, out]
    compare(lambda x, w, c: x.linear(w, c), lambda x, w, c: x @ w + c, a, b, bias)
    compare(lambda x, y: x.outer(y), torch.outer, data((3,)), data((2,)))
    m = Tensor(a)
    m @= Tensor(np.eye(3, dtype=np.float32))
    np.testing.assert_allclose(m.numpy(), a, rtol=1e-6)
    np.testing.assert_allclose((a.tolist() @ Tensor(b)).numpy(), a @ b, rtol=1e-5)  # __rmatmul__


INT_OPS = [
    ("floordiv", lambda a, b: a // b, lambda a, b: a // b),
    ("mod", lambda a, b: a % b, lambda a, b: a % b),
    ("floor_divide", Tensor.floor_divide, np.floor_divide),
    ("remainder", Tensor.remainder, np.remainder),
    ("idiv", Tensor.idiv, lambda a, b: np.trunc(a / b).astype(a.dtype)),
    ("div_trunc", lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: np.trunc(a / b).astype(a.dtype)),
    ("div_floor", lambda a, b: a.div(b, rounding_mode="floor"), np.floor_divide),
    ("true_div", lambda a, b: a / b, lambda a, b: (a / b).astype(np.float32)),
    ("and", lambda a, b: a & b, lambda a, b: a & b),
    ("or", lambda a, b: a | b, lambda a, b: a | b),
    ("xor", lambda a, b: a ^ b, lambda a, b: a ^ b),
    ("bitwise_and", Tensor.bitwise_and, np.bitwise_and),
    ("lshift", lambda a, b: a << (b.abs() % 4), lambda a, b: a << (np.abs(b) % 4)),
    ("rshift", lambda a, b: a.abs() >> (b.abs() % 4), lambda a, b: np.abs(a) >> (np.abs(b) % 4)),
    ("invert", lambda a, b: ~a, lambda a, b: ~a),
    ("eq", lambda a, b: a == b, lambda a, b: a == b),
    ("ne", lambda a, b: a != b, lambda a, b: a != b),
    ("lt", lambda a, b: a < b, lambda a, b: a < b),
    ("le", lambda a, b: a <= b, lambda a, b: a <= b),
    ("gt", lambda a, b: a > b, lambda a, b: a > b),
    ("ge", lambda a, b: a >= b, lambda a, b: a >= b),
    ("scalar_lt", lambda a, b: a < 2, lambda a, b: a < 2),
    ("rscalar_sub", lambda a, b: 10 - a, lambda a, b: 10 - a),
    ("rscalar_mod", lambda a, b: 7 % b, lambda a, b: 7 % b),
    ("rscalar_floordiv", lambda a, b: 7 // b, lambda a, b: 7 // b),
    ("max", lambda a, b: a.maximum(b), np.maximum),
    ("logical", lambda a, b: (a > 0).logical_and(b > 0).logical_or(a == 1).logical_not(),
     lambda a, b: ~(((a > 0) & (b > 0)) | (a == 1))),
]


@pytest.mark.parametrize("name,lg,ref", INT_OPS, ids=[o[0] for o in INT_OPS])
def test_int_ops(name, lg, ref):
    a = np.array([[-7, -3, 0], [3, 7, 1]], np.int32)
    b = np.array([[2, -2, 3], [-3, 2, 5]], np.int32)
    got = lg(Tensor(a), Tensor(b)).numpy()
    want = np.asarray(ref(a, b))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def torch_shift_reference(a, s, left):
    """PyTorch's shifts as ATen defines them since 2.1 (this machine's 1.13 leaves counts outside
    [0, bits) to the hardware: int32 >> 32 gives the input): such a count shifts every bit out."""
    bits = np.iinfo(a.dtype).bits
    signed = np.iinfo(a.dtype).min < 0
    out = []
    for x, c in zip(a.tolist(), s.tolist()):
        if c < 0 or c >= bits:
            out.append(0 if left or not signed or x >= 0 else -1)
        elif left:
            v = (x << c) & ((1 << bits) - 1)
            out.append(v - (1 << bits) if signed and v >= 1 << (bits - 1) else v)
        else:
            out.append(x >> c)
    return np.array(out, a.dtype)


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64", "uint8"])
def test_shifts_match_torch(dt):
    bits = np.iinfo(dt).bits
    info = np.iinfo(dt)
    a = np.array([5, info.max, info.min, 1, 77, info.max // 3] * 4, dt)
    counts = [0, 1, 3, bits - 1] * 6  # inside the width: torch 1.13's own results
    s = np.array(counts, dt)
    operators = ((Tensor.__lshift__, torch.Tensor.__lshift__, True), (Tensor.__rshift__, torch.Tensor.__rshift__, False))
    for lg, tt, left in operators:
        got = lg(Tensor(a), Tensor(s)).numpy()
        np.testing.assert_array_equal(got, tt(torch.tensor(a), torch.tensor(s)).numpy())
        np.testing.assert_array_equal(got, torch_shift_reference(a, s, left))
    methods = ((Tensor.bitwise_left_shift, torch.bitwise_left_shift), (Tensor.bitwise_right_shift, torch.bitwise_right_shift))
    for fn, tfn in methods:
        np.testing.assert_array_equal(fn(Tensor(a), Tensor(s)).numpy(), tfn(torch.tensor(a), torch.tensor(s)).numpy())
    # Counts of the width or more, and negative ones: every bit shifted out, as in PyTorch >= 2.1.
    wide = [bits, bits + 1, 40, 70, 127] + ([-1, -2, -bits, -70] if info.min < 0 else [bits * 2])
    s = np.array((wide * 6)[: len(a)], dt)
    np.testing.assert_array_equal((Tensor(a) << Tensor(s)).numpy(), torch_shift_reference(a, s, True))
    np.testing.assert_array_equal((Tensor(a) >> Tensor(s)).numpy(), torch_shift_reference(a, s, False))
    for c in wide:  # a Python int count
        cs = np.full(len(a), c).astype(dt)
        np.testing.assert_array_equal((Tensor(a) << c).numpy(), torch_shift_reference(a, cs, True))
        np.testing.assert_array_equal((Tensor(a) >> c).numpy(), torch_shift_reference(a, cs, False))


def test_bool_shifts_are_refused_like_torch():
    b = np.array([True, False])
    for op in (lambda x, y: x << y, lambda x, y: x >> y):
        with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
            op(torch.tensor(b), torch.tensor(b))
        with pytest.raises(RuntimeError, match="not implemented for bool"):
            op(Tensor(b), Tensor(b))
    assert (Tensor(b) << 3).tolist() == (torch.tensor(b) << 3).tolist() == [8, 0]


@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_scalar_promotion_matches_torch_both_sides(dt, scalar):
    x = np.array([1, 0, 1]).astype(dt)
    want = (torch.tensor(x) * scalar).dtype
    for got in (Tensor(x) * scalar, scalar * Tensor(x), Tensor(x).mul(scalar, reverse=True)):
        assert got.dtype.name == str(want).replace("torch.", ""), (got.dtype, want)
        np.testing.assert_allclose(got.numpy().astype(np.float64), (x * scalar).astype(np.float64), rtol=1e-3)


def test_float_floordiv_mod_matches_torch():
    a, b = data(S, seed=1) * 5, data(S, "pos", seed=2)
    compare(lambda x, y: x // y, lambda x, y: torch.div(x, y, rounding_mode="floor"), a, b, grad=False)
    compare(lambda x, y: x % y, lambda x, y: x % y, a, b, atol=1e-5, grad=False)


def test_inplace_operators_assign():
    a = Tensor([1.0, 2.0, 3.0])
    alias = a
    a += 1
    a *= Tensor([2.0, 2.0, 2.0])
    a -= 0.5
    a /= 2
    assert a is alias
    np.testing.assert_allclose(a.numpy(), ((np.array([1, 2, 3.0]) + 1) * 2 - 0.5) / 2)
    i = Tensor([5, 6, 7])
    view = i[1:]
    i //= 2
    i %= 2
    i **= 2
    i |= 4
    i &= 5
    i ^= 1
    i <<= 1
    i >>= 1
    want = np.array([5, 6, 7]) // 2 % 2
    want = ((want**2 | 4) & 5) ^ 1
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(view.numpy(), want[1:])  # views see the assign


REDUCE = [
    ("sum", lambda x: x.sum(), lambda x: x.sum()),
    ("sum_axis", lambda x: x.sum(1), lambda x: x.sum(1)),
    ("sum_dim_keep", lambda x: x.sum(dim=0, keepdim=True), lambda x: x.sum(0, keepdim=True)),
    ("sum_tuple", lambda x: x.sum(axis=(0, 2)), lambda x: x.sum((0, 2))),
    ("prod", lambda x: x.prod(1), lambda x: x.prod(1)),
    ("max", lambda x: x.max(), lambda x: x.max()),
    ("max_axis", lambda x: x.max(axis=-1), lambda x: x.max(-1).values),
    ("min_keep", lambda x: x.min(0, keepdim=True), lambda x: x.min(0, keepdim=True).values),
    ("mean", lambda x: x.mean(), lambda x: x.mean()),
    ("mean_axis", lambda x: x.mean((1, 2)), lambda x: x.mean((1, 2))),
    ("var", lambda x: x.var(1), lambda x: x.var(1)),
    ("var_corr0", lambda x: x.var(axis=2, correction=0), lambda x: x.var(2, unbiased=False)),
    ("std", lambda x: x.std(), lambda x: x.std()),
    ("std_keep", lambda x: x.std(0, keepdim=True), lambda x: x.std(0, keepdim=True)),
    ("logsumexp", lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)),
    ("cumsum", lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
    ("cumsum_default", lambda x: x.cumsum(), lambda x: x.cumsum(0)),
    ("cumprod", lambda x: x.cumprod(dim=2), lambda x: x.cumprod(2)),
    ("norm", lambda x: x.norm(), lambda x: torch.linalg.vector_norm(x)),
    ("softmax_axis", lambda x: x.softmax(axis=1), lambda x: x.softmax(1)),
]


@pytest.mark.parametrize("name,lg,th", REDUCE, ids=[r[0] for r in REDUCE])
def test_reduce(name, lg, th):
    compare(lg, th, data((2, 3, 4), "pos" if "prod" in name else "any"))


def test_reduce_tuples_and_indices():
    x = data((2, 3, 4))
    v, m = Tensor(x).var_mean(1)
    np.testing.assert_allclose(v.numpy(), x.var(1, ddof=1), rtol=1e-4)
    np.testing.assert_allclose(m.numpy(), x.mean(1), rtol=1e-5)
    s, m = Tensor(x).std_mean()
    np.testing.assert_allclose(s.numpy(), x.std(ddof=1), rtol=1e-4)
    np.testing.assert_array_equal(Tensor(x).argmax().numpy(), x.argmax())
    np.testing.assert_array_equal(Tensor(x).argmax(1).numpy(), x.argmax(1))
    np.testing.assert_array_equal(Tensor(x).argmin(axis=2, keepdim=True).numpy(), x.argmin(2)[..., None])
    np.testing.assert_allclose(Tensor(x).sum(np.int64(1)).numpy(), x.sum(1), rtol=1e-5)  # numpy ints as axes
    b = x > 0
    np.testing.assert_array_equal(Tensor(b).any(1).numpy(), b.any(1))
    np.testing.assert_array_equal(Tensor(b).all().numpy(), b.all())
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert Tensor(i).sum().item() == 15
    assert Tensor(i).sum(dtype=dtypes.float32).dtype == dtypes.float32
    np.testing.assert_allclose(Tensor(i).mean().item(), 2.5)


MOVEMENT = [
    ("reshape", lambda x: x.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("reshape_tuple", lambda x: x.reshape((6, -1)), lambda x: x.reshape(6, -1)),
    ("reshape_none", lambda x: x.reshape(None, 12), lambda x: x.reshape(2, 12)),
    ("view", lambda x: x.view(-1), lambda x: x.view(-1)),
    ("permute", lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1)),
    ("permute_tuple", lambda x: x.permute((1, 2, 0)), lambda x: x.permute(1, 2, 0)),
    ("transpose", lambda x: x.transpose(), lambda x: x.transpose(1, 0)),
    ("transpose_args", lambda x: x.transpose(0, 2), lambda x: x.transpose(0, 2)),
    ("T", lambda x: x.T, lambda x: x.permute(2, 1, 0)),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4), lambda x: x[:, :1].expand(2, 5, 4)),
    ("expand_neg", lambda x: x[None].expand((3, -1, -1, -1)), lambda x: x[None].expand(3, -1, -1, -1)),
    ("flatten", lambda x: x.flatten(), lambda x: x.flatten()),
    ("flatten_1", lambda x: x.flatten(1), lambda x: x.flatten(1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)), lambda x: x.unflatten(2, (2, 2))),
    ("squeeze", lambda x: x[:, :1].squeeze(), lambda x: x[:, :1].squeeze()),
    ("squeeze_dim", lambda x: x[:, :1].squeeze(1), lambda x: x[:, :1].squeeze(1)),
    ("unsqueeze", lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(-1)),
    ("pad_flat", lambda x: x.pad((1, 2)), lambda x: F.pad(x, (1, 2))),
    ("pad_pairs", lambda x: x.pad(((0, 1), None, (2, 0)), value=1.5), lambda x: F.pad(x, (2, 0, 0, 0, 0, 1), value=1.5)),
    ("shrink", lambda x: x.shrink(((0, 1), None, (1, 3))), lambda x: x[0:1, :, 1:3]),
    ("flip", lambda x: x.flip(0, 2), lambda x: x.flip(0, 2)),
    ("flip_tuple", lambda x: x.flip((1,)), lambda x: x.flip(1)),
    ("repeat", lambda x: x.repeat(2, 1, 1), lambda x: x.repeat(2, 1, 1)),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, 1), lambda x: x.repeat_interleave(2, 1)),
    ("roll", lambda x: x.roll(1, 2), lambda x: x.roll(1, 2)),
    ("roll_multi", lambda x: x.roll((1, -1), (0, 1)), lambda x: x.roll((1, -1), (0, 1))),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda x: x.narrow(2, 1, 2)),
    ("tril", lambda x: x.tril(), lambda x: x.tril()),
    ("triu", lambda x: x.triu(1), lambda x: x.triu(1)),
    ("contiguous", lambda x: x.permute(2, 1, 0).contiguous(), lambda x: x.permute(2, 1, 0).contiguous()),
    ("clone_detach", lambda x: x.clone() + x.detach(), lambda x: x.clone() + x.detach()),
    ("cast", lambda x: x.cast(dtypes.float64).float(), lambda x: x.double().float()),
]


@pytest.mark.parametrize("name,lg,th", MOVEMENT, ids=[m[0] for m in MOVEMENT])
def test_movement(name, lg, th):
    compare(lg, th, data((2, 3, 4)))


def test_cat_stack_split_chunk():
    a, b, c = data((2, 3)), data((2, 3), seed=1), data((1, 3), seed=2)
    compare(lambda x, y: x.cat(y), lambda x, y: torch.cat([x, y]), a, b)
    compare(lambda x, y: x.cat(y, y, dim=1), lambda x, y: torch.cat([x, y, y], 1), a, b)
    compare(lambda x, y: Tensor.cat(x, y), lambda x, y: torch.cat([x, y]), a, c)
    compare(lambda x, y: x.stack(y, dim=1), lambda x, y: torch.stack([x, y], 1), a, b)
    compare(lambda x, y: Tensor.stack(x, y), lambda x, y: torch.stack([x, y]), a, b)
    compare(lambda x: x.split(2, 1)[1] * 2 + x.split([1, 2], 1)[0], lambda x: x.split(2, 1)[1] * 2 + x.split([1, 2], 1)[0], a)
    parts = Tensor(data((5, 2))).chunk(2)
    assert isinstance(parts, tuple) and [p.shape for p in parts] == [(3, 2), (2, 2)]
    assert [p.shape for p in Tensor(a).unbind(1)] == [(2,)] * 3
    assert len(list(iter(Tensor(a)))) == 2


def test_gather_scatter_one_hot():
    x = data((3, 4))
    idx = np.array([[0, 3], [1, 1], [2, 0]], np.int64)
    compare(lambda t: t.gather(1, Tensor(idx)), lambda t: t.gather(1, torch.tensor(idx)), x)
    compare(lambda t: t.take_along_dim(Tensor(idx), 1), lambda t: torch.take_along_dim(t, torch.tensor(idx), 1), x)
    compare(lambda t: t.index_select(0, Tensor([2, 0])), lambda t: t.index_select(0, torch.tensor([2, 0])), x)
    compare(lambda t: t.index(1, Tensor([[3, -1]])), lambda t: t[:, [[3, -1]]], x)
    src = data((3, 2), seed=3)
    compare(lambda t, s: t.scatter(1, Tensor(idx[:, :1]), s[:, :1]), lambda t, s: t.scatter(1, torch.tensor(idx[:, :1]), s[:, :1]), x, src)
    compare(lambda t: t.scatter(1, Tensor(idx), 2.5), lambda t: t.scatter(1, torch.tensor(idx), 2.5), x)
    compare(lambda t, s: t.scatter(1, Tensor(idx), s, reduce="add"), lambda t, s: t.scatter_add(1, torch.tensor(idx), s), x, src)
    compare(lambda t, s: t.scatter_add(0, Tensor(idx % 3), s), lambda t, s: t.scatter_add(0, torch.tensor(idx % 3), s), x, src)
    compare(lambda t: t.masked_fill(Tensor(x > 0), 0.5), lambda t: t.masked_fill(torch.tensor(x > 0), 0.5), x)
    labels = np.array([0, 2, 1, 2], np.int64)
    np.testing.assert_array_equal(Tensor(labels).one_hot(3).numpy(), np.eye(3, dtype=np.int64)[labels])
    np.testing.assert_array_equal(Tensor(labels).one_hot().numpy(), np.eye(3, dtype=np.int64)[labels])
    np.testing.assert_array_equal(Tensor([2, 0]).one_hot(4).numpy(), np.eye(4, dtype=np.int64)[[2, 0]])  # int32


def test_sort_topk():
    x = data((3, 5))
    v, i = Tensor(x).sort()
    np.testing.assert_allclose(v.numpy(), np.sort(x, -1))
    np.testing.assert_array_equal(i.numpy(), np.argsort(x, -1, kind="stable"))
    v, i = Tensor(x).sort(0, descending=True)
    np.testing.assert_allclose(v.numpy(), -np.sort(-x, 0))
    np.testing.assert_array_equal(Tensor(x).argsort(1).numpy(), np.argsort(x, 1, kind="stable"))
    compare(lambda t: t.topk(2)[0], lambda t: t.topk(2).values, x)
    np.testing.assert_array_equal(Tensor(x).topk(2, largest=False)[1].numpy(), torch.tensor(x).topk(2, largest=False).indices.numpy())


def test_einsum_meshgrid():
    a, b = data((2, 3)), data((3, 4), seed=1)
    compare(lambda x, y: Tensor.einsum("ij,jk->ik", x, y), lambda x, y: torch.einsum("ij,jk->ik", x, y), a, b)
    compare(lambda x, y: Tensor.einsum("ij,jk->ik", [x, y]), lambda x, y: torch.einsum("ij,jk->ik", x, y), a, b)
    gx, gy = Tensor.meshgrid(Tensor([1, 2]), Tensor([3, 4, 5]))
    tx, ty = np.meshgrid([1, 2], [3, 4, 5], indexing="ij")
    np.testing.assert_array_equal(gx.numpy(), tx)
    np.testing.assert_array_equal(gy.numpy(), ty)


CONV = [
    ("conv2d", lambda x, w, b: x.conv2d(w, b), lambda x, w, b: F.conv2d(x, w, b), (2, 3, 6, 6), (4, 3, 3, 3)),
    ("conv2d_stride_pad", lambda x, w, b: x.conv2d(w, b, stride=2, padding=1),
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), (1, 3, 6, 6), (4, 3, 3, 3)),
    ("conv2d_groups_dil", lambda x, w, b: x.conv2d(w, b, groups=2, dilation=2, padding=(1, 2)),
     lambda x, w, b: F.conv2d(x, w, b, groups=2, dilation=2, padding=(1, 2)), (1, 4, 7, 7), (4, 2, 3, 3)),
    ("conv2d_tinygrad_pad", lambda x, w, b: x.conv2d(w, b, padding=(1, 0, 2, 1)),
     lambda x, w, b: F.conv2d(F.pad(x, (1, 0, 2, 1)), w, b), (1, 2, 5, 5), (3, 2, 3, 3)),
    ("conv2d_same", lambda x, w, b: x.conv2d(w, b, padding="same"),
     lambda x, w, b: F.conv2d(x, w, b, padding="same"), (1, 2, 5, 5), (3, 2, 3, 3)),
    ("conv1d", lambda x, w, b: x.conv2d(w, b, padding=1), lambda x, w, b: F.conv1d(x, w, b, padding=1), (2, 3, 8), (4, 3, 3)),
    ("conv_transpose2d", lambda x, w, b: x.conv_transpose2d(w, b, stride=2, padding=1, output_padding=1),
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1), (1, 3, 4, 4), (3, 2, 3, 3)),
    ("conv3d", lambda x, w, b: x.conv3d(w, b, padding=1), lambda x, w, b: F.conv3d(x, w, b, padding=1), (1, 2, 3, 3, 3), (2, 2, 2, 2, 2)),
    ("conv1d_alias", lambda x, w, b: x.conv1d(w, b, stride=2), lambda x, w, b: F.conv1d(x, w, b, stride=2), (1, 2, 7), (3, 2, 3)),
    ("conv_transpose1d", lambda x, w, b: x.conv_transpose2d(w, b, stride=2),
     lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2), (1, 3, 5), (3, 2, 3)),
]


@pytest.mark.parametrize("name,lg,th,xs,ws", CONV, ids=[c[0] for c in CONV])
def test_conv(name, lg, th, xs, ws):
    bias_n = ws[1] * (2 if "groups" in name else 1) if "transpose" in name else ws[0]
    compare(lg, th, data(xs), data(ws, seed=1), data((bias_n,), seed=2), atol=1e-4)


POOL = [
    ("max_pool2d", lambda x: x.max_pool2d(), lambda x: F.max_pool2d(x, (2, 2))),
    ("max_pool2d_args", lambda x: x.max_pool2d(3, stride=2, padding=1), lambda x: F.max_pool2d(x, 3, 2, 1)),
    ("avg_pool2d", lambda x: x.avg_pool2d(), lambda x: F.avg_pool2d(x, (2, 2))),
    ("avg_pool2d_args", lambda x: x.avg_pool2d(3, stride=1, padding=1, count_include_pad=False),
     lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)),
    ("max_pool1d", lambda x: x.flatten(2).max_pool1d(3), lambda x: F.max_pool1d(x.flatten(2), 3)),
    ("avg_pool1d", lambda x: x.flatten(2).avg_pool1d(2), lambda x: F.avg_pool1d(x.flatten(2), 2)),
    ("adaptive_avg_pool2d", lambda x: x.adaptive_avg_pool2d(2), lambda x: F.adaptive_avg_pool2d(x, 2)),
    ("interpolate", lambda x: x.interpolate(size=(3, 5), mode="bilinear", align_corners=False),
     lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=False)),
    ("interpolate_nearest", lambda x: x.interpolate(scale_factor=2, mode="nearest"), lambda x: F.interpolate(x, scale_factor=2)),
    ("interpolate_linear", lambda x: x.interpolate((4, 4)), lambda x: F.interpolate(x, (4, 4), mode="bilinear", align_corners=False)),
]


@pytest.mark.parametrize("name,lg,th", POOL, ids=[p[0] for p in POOL])
def test_pool(name, lg, th):
    compare(lg, th, data((1, 2, 6, 6)))


def test_losses():
    logits, target = data((4, 3)), np.array([0, 2, 1, 2], np.int64)
    t = torch.tensor(target)
    compare(lambda x: x.cross_entropy(Tensor(target)), lambda x: F.cross_entropy(x, t), logits)
    compare(lambda x: x.cross_entropy(Tensor(target), reduction="sum", label_smoothing=0.1),
            lambda x: F.cross_entropy(x, t, reduction="sum", label_smoothing=0.1), logits)
    probs = torch.softmax(torch.tensor(data((4, 3), seed=3)), -1).numpy()
    compare(lambda x: x.cross_entropy(Tensor(probs)), lambda x: F.cross_entropy(x, torch.tensor(probs)), logits)
    compare(lambda x: x.sparse_categorical_crossentropy(Tensor(target)), lambda x: F.cross_entropy(x, t), logits)
    compare(lambda x: x.log_softmax().nll_loss(Tensor(target)), lambda x: F.nll_loss(x.log_softmax(-1), t), logits)
    p, y = data((5,), "unit") * 0.5 + 0.5, (data((5,), seed=4) > 0).astype(np.float32)
    compare(lambda x: x.binary_crossentropy(Tensor(y)), lambda x: F.binary_cross_entropy(x, torch.tensor(y)), p)
    compare(lambda x: x.binary_cross_entropy(Tensor(y), reduction="sum"),
            lambda x: F.binary_cross_entropy(x, torch.tensor(y), reduction="sum"), p)
    compare(lambda x: x.binary_crossentropy_logits(Tensor(y)),
            lambda x: F.binary_cross_entropy_with_logits(x, torch.tensor(y)), logits[0].repeat(2)[:5])
    a, b = data((2, 3)), data((2, 3), seed=1)
    compare(lambda x, z: x.mse_loss(z), F.mse_loss, a, b)
    compare(lambda x, z: x.l1_loss(z, reduction="sum"), lambda x, z: F.l1_loss(x, z, reduction="sum"), a, b)
    compare(lambda x, z: x.smooth_l1_loss(z, beta=0.5), lambda x, z: F.smooth_l1_loss(x, z, beta=0.5), a, b)
    compare(lambda x, z: x.log_softmax().kl_div(z.softmax(), reduction="batchmean"),
            lambda x, z: F.kl_div(x.log_softmax(-1), z.softmax(-1), reduction="batchmean"), a, b)


def test_normalization_attention_dropout():
    x, w, b = data((2, 3, 4)), data((4,), seed=1), data((4,), seed=2)
    compare(lambda t: t.layernorm(), lambda t: F.layer_norm(t, (4,)), x, atol=1e-4)
    compare(lambda t, ww, bb: t.layer_norm((4,), ww, bb), lambda t, ww, bb: F.layer_norm(t, (4,), ww, bb), x, w, b, atol=1e-4)
    compare(lambda t: t.rms_norm((4,), eps=1e-6), lambda t: t * torch.rsqrt(t.square().mean(-1, keepdim=True) + 1e-6), x, atol=1e-4)
    img = data((2, 4, 3, 3))
    gw, gb = data((4,), seed=3), data((4,), seed=4)
    compare(lambda t, ww, bb: t.group_norm(2, ww, bb), lambda t, ww, bb: F.group_norm(t, 2, ww, bb), img, gw, gb, atol=1e-4)
    mean, var = data((4,), seed=5), data((4,), "pos", seed=6)
    compare(lambda t: t.batchnorm(Tensor(gw), Tensor(gb), Tensor(mean), Tensor(var).rsqrt()),
            lambda t: F.batch_norm(t, torch.tensor(mean), torch.tensor(var), torch.tensor(gw), torch.tensor(gb), eps=0),
            img, atol=1e-4)
    compare(lambda t: t.batch_norm(Tensor(mean), Tensor(var), Tensor(gw), Tensor(gb)),
            lambda t: F.batch_norm(t, torch.tensor(mean), torch.tensor(var), torch.tensor(gw), torch.tensor(gb)), img, atol=1e-4)
    q, k, v = data((2, 3, 4)), data((2, 5, 4), seed=1), data((2, 5, 4), seed=2)

    def sdpa(a, bb, c, mask=None):  # torch 1.13 has no F.scaled_dot_product_attention
        s = a @ bb.transpose(-1, -2) / math.sqrt(a.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return s.softmax(-1) @ c

    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    compare(lambda a, bb, c: a.scaled_dot_product_attention(bb, c), sdpa, q, k, v, atol=1e-4)
    compare(lambda a, bb, c: a.scaled_dot_product_attention(a, a, is_causal=True),
            lambda a, bb, c: sdpa(a, a, a, causal), q, k, v, atol=1e-4)
    t = Tensor(x)
    np.testing.assert_array_equal(t.dropout(0.5).numpy(), x)  # Tensor.training is False
    with Tensor.train():
        assert Tensor.training
        d = t.dropout(0.5).numpy()
        assert ((d == 0) | np.isclose(d, 2 * x)).all() and (d == 0).any()
    assert not Tensor.training
    np.testing.assert_array_equal(t.dropout(0.0, training=True).numpy(), x)


def test_misc_math():
    x = np.array([1.0, np.nan, np.inf, -np.inf, -2.0], np.float32)
    np.testing.assert_array_equal(Tensor(x).isnan().numpy(), np.isnan(x))
    np.testing.assert_array_equal(Tensor(x).isinf().numpy(), np.isinf(x))
    np.testing.assert_array_equal(Tensor(x).isfinite().numpy(), np.isfinite(x))
    np.testing.assert_array_equal(Tensor(x).nan_to_num(posinf=9.0, neginf=-9.0).numpy(), np.nan_to_num(x, posinf=9, neginf=-9))
    assert math.isclose(Tensor(2.0).sqrt().item(), math.sqrt(2), rel_tol=1e-6)


def test_random_input_of_a_product_is_computed_once():
    # issue 13: Tensor.rand(100, 100) @ b recomputed the generator in the product's reduction
    from lazygrad import GlobalCounters
    b = Tensor.ones(100, 100).contiguous().realize()
    GlobalCounters.reset()
    (Tensor.rand(100, 100) @ b).realize()
    assert GlobalCounters.global_ops <= 2_500_000
