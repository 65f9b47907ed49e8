"""tinygrad's Tensor methods that lazygrad composes in Python (python/lazygrad/tensor_tinygrad.py),
against PyTorch, numpy or their definition."""
import ctypes

import numpy as np
import pytest
import torch

import lazygrad
from lazygrad import Tensor, dtypes


def test_leakyrelu_and_pad2d_are_the_older_spellings():
    x = Tensor([[-2.0, 3.0], [0.5, -0.25]])
    np.testing.assert_allclose(x.leakyrelu(0.1).numpy(), torch.nn.functional.leaky_relu(torch.tensor(x.numpy()), 0.1))
    np.testing.assert_allclose(x.pad2d((1, 0, 0, 2), value=7).numpy(),
                               torch.nn.functional.pad(torch.tensor(x.numpy()), (1, 0, 0, 2), value=7))


def test_data_is_a_memoryview_of_the_values():
    x = Tensor.arange(6).reshape(2, 3).cast(dtypes.int32)
    m = x.data()
    assert isinstance(m, memoryview) and m.shape == (2, 3) and m.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_replace_writes_the_values_and_checks_shape_and_dtype():
    x = Tensor.zeros(2, 2).contiguous().realize()
    x.replace(Tensor.ones(2, 2))
    assert x.numpy().tolist() == [[1, 1], [1, 1]]
    with pytest.raises(lazygrad.LazygradError, match="shape"):
        x.replace(Tensor.ones(3))
    with pytest.raises(TypeError, match="dtype"):
        x.replace(Tensor.ones(2, 2, dtype=dtypes.int32))


def test_contiguous_backward_keeps_values_and_gradients():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.contiguous_backward() * 2).sum().backward()
    assert x.grad.numpy().tolist() == [2, 2, 2]


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "uint8"])
def test_from_blob_copies_the_memory(dtype):
    a = (np.arange(12) * 3).astype(dtype).reshape(3, 4)
    t = Tensor.from_blob(a.ctypes.data, (3, 4), dtype=getattr(dtypes, dtype))
    a[:] = 0  # a copy: the tensor keeps the values
    np.testing.assert_array_equal(t.numpy(), (np.arange(12) * 3).astype(dtype).reshape(3, 4))
    assert Tensor.from_blob(a.ctypes.data, (0, 4)).shape == (0, 4)
    with pytest.raises(ValueError):
        Tensor.from_blob(0, (2,))


def test_multinomial_with_and_without_replacement():
    Tensor.manual_seed(5)
    w = Tensor([0.0, 1.0, 3.0, 0.0])
    s = w.multinomial(4000, replacement=True).numpy()
    assert s.dtype == np.int64 and set(np.unique(s)) <= {1, 2}
    assert abs((s == 2).mean() - 0.75) < 0.03  # the weights' proportion
    rows = Tensor([[1.0, 1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 5.0, 1.0, 1.0]]).multinomial(3).numpy()
    assert rows.shape == (2, 3)
    for r, allowed in zip(rows, ({0, 1, 2, 3}, {2, 3, 4})):
        assert len(set(r)) == 3 and set(r) <= allowed  # without replacement: distinct, nonzero weights
    with pytest.raises(lazygrad.LazygradError, match="without replacement"):
        Tensor([1.0, 1.0]).multinomial(3)
    with pytest.raises(ValueError):
        w.multinomial(0)


def test_randperm_is_a_permutation():
    Tensor.manual_seed(1)
    p = Tensor.randperm(50).numpy()
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    assert Tensor.randperm(5, dtype=dtypes.int32).dtype == dtypes.int32
    assert Tensor.randperm(0).shape == (0,)


def test_newton_schulz_orthogonalizes():
    Tensor.manual_seed(2)
    g = Tensor.randn(6, 10)
    x = g.newton_schulz(5, (3.4445, -4.7750, 2.0315)).numpy().astype(np.float64)
    # Muon's coefficients bring every singular value into roughly [0.7, 1.2]
    sv = np.linalg.svd(x, compute_uv=False)
    assert sv.min() > 0.6 and sv.max() < 1.25
    # the definition, step by step, in float64 (and a tall input is transposed and back)
    t = Tensor.randn(7, 3)
    ref = t.numpy().astype(np.float64).T
    ref = ref / (np.linalg.norm(ref) + 1e-7)
    for _ in range(2):
        gram = ref @ ref.T
        ref = 3.0 * ref + (-3.0 * gram + 1.0 * gram @ gram) @ ref
    np.testing.assert_allclose(t.newton_schulz(2, (3.0, -3.0, 1.0)).numpy(), ref.T, rtol=1e-4, atol=1e-5)


def test_rearrange_matches_reshape_and_permute():
    x = Tensor.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    a = x.numpy()
    np.testing.assert_array_equal(x.rearrange("b c h w -> b h w c").numpy(), a.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(x.rearrange("b c h w -> b (c h w)").numpy(), a.reshape(2, 60))
    np.testing.assert_array_equal(x.rearrange("b c (h2 h) w -> b h2 c h w", h2=2).numpy(),
                                  a.reshape(2, 3, 2, 2, 5).transpose(0, 2, 1, 3, 4))
    np.testing.assert_array_equal(x.rearrange("b ... w -> w b ...").numpy(), a.transpose(3, 0, 1, 2))
    np.testing.assert_array_equal(x.rearrange("b c h w -> b c h w 1").shape, (2, 3, 4, 5, 1))
    with pytest.raises(ValueError):
        x.rearrange("b c h w -> b c h")
    with pytest.raises(lazygrad.LazygradError):
        x.rearrange("b c h -> b c h")
    with pytest.raises(lazygrad.LazygradError):
        x.rearrange("b c (h2 h) w -> b c h2 h w", h2=3)


def test_qr_and_svd_reconstruct():
    Tensor.manual_seed(3)
    a = Tensor.randn(2, 5, 3)
    q, r = a.qr()
    an = a.numpy()
    np.testing.assert_allclose((q.numpy() @ r.numpy()), an, atol=1e-5)
    np.testing.assert_allclose(np.triu(r.numpy()), r.numpy())
    u, s, vh = a.svd(full_matrices=False)
    np.testing.assert_allclose(u.numpy() * s.numpy()[..., None, :] @ vh.numpy(), an, atol=1e-5)
    np.testing.assert_allclose(s.numpy(), torch.linalg.svdvals(torch.tensor(an)).numpy(), rtol=1e-5)
    assert a.svd()[0].shape == (2, 5, 5)
    with pytest.raises(lazygrad.LazygradError, match="qr"):
        Tensor([1.0, 2.0]).qr()


def test_amax_amin_are_max_min():
    x = Tensor([[1.0, 5.0], [7.0, -2.0]])
    assert x.amax(dim=1).numpy().tolist() == [5, 7] and x.amin(axis=0).numpy().tolist() == [1, -2]


@pytest.mark.parametrize("cfg", ["sha3_224", "sha3_256", "sha3_384", "sha3_512", "shake_128", "shake_256"])
def test_keccak_equals_hashlib(cfg):
    import hashlib
    rows = [b"", b"abc", bytes(range(200)), b"x" * 135, b"y" * 136]  # empty, short, 2 blocks, rate edges
    # one row per length: hash each separately (rows of one tensor share a length)
    for r in rows:
        t = Tensor(np.frombuffer(r, dtype=np.uint8).copy()) if r else Tensor.zeros(0, dtype=dtypes.uint8)
        h = hashlib.new(cfg, r)
        want = h.hexdigest(16 if cfg == "shake_128" else 32) if cfg.startswith("shake") else h.hexdigest()
        assert bytes(t.keccak(cfg).numpy().tolist()).hex() == want, (cfg, len(r))
    batch = Tensor(np.frombuffer(b"hello world!" * 2, dtype=np.uint8).reshape(2, 12).copy())
    assert [bytes(row).hex() for row in batch.keccak(cfg).numpy().tolist()] == \
        [(hashlib.new(cfg, b"hello world!").hexdigest(16 if cfg == "shake_128" else 32) if cfg.startswith("shake")
          else hashlib.new(cfg, b"hello world!").hexdigest())] * 2


def _hash_reference(data: bytes) -> bytes:
    """tinygrad's tree hash, from its definition, with hashlib's shake_128."""
    import hashlib

    def one_mb(chunk):
        return hashlib.shake_128(b"".join(hashlib.shake_128(chunk[i:i + 4096]).digest(16)
                                          for i in range(0, 2**20, 4096))).digest(16)
    chunks = max(1, -(-len(data) // 2**20))
    while chunks > 1:
        data = data.ljust(chunks * 2**20, b"\0")
        data = b"".join(one_mb(data[i * 2**20:(i + 1) * 2**20]) for i in range(chunks))
        chunks = -(-chunks // 65536)
    return one_mb(data.ljust(2**20, b"\0"))


def test_hash_is_tinygrads_tree_of_shake128():
    t = Tensor(np.frombuffer(b"Hello World!", dtype=np.uint8).copy())
    assert bytes(t.hash().numpy().tolist()) == _hash_reference(b"Hello World!")


def test_tinygrad_keywords_on_products_and_softmax():
    a = Tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtypes.float16)
    b = Tensor([[0.5, -1.0], [2.0, 0.25]], dtype=dtypes.float16)
    ref = a.numpy().astype(np.float32) @ b.numpy().astype(np.float32)
    for out in (a.matmul(b, dtype=dtypes.float32), a.dot(w=b, dtype=dtypes.float32),
                a.linear(b, dtype=dtypes.float32), Tensor.einsum("ij,jk->ik", a, b, dtype=dtypes.float32)):
        assert out.dtype == dtypes.float32
        np.testing.assert_allclose(out.numpy(), ref)
    assert a.matmul(b).dtype == dtypes.float16
    np.testing.assert_allclose(a.matmul(b, reverse=True, dtype=dtypes.float32).numpy(),
                               b.numpy().astype(np.float32) @ a.numpy().astype(np.float32))
    x = Tensor([[1.0, 2.0, 3.0]], dtype=dtypes.float16)
    s = x.softmax(dtype=dtypes.float32)
    assert s.dtype == dtypes.float32
    np.testing.assert_allclose(s.numpy(), torch.softmax(torch.tensor([[1.0, 2.0, 3.0]]), -1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.log_softmax(0, dtype=dtypes.float64).numpy(), np.zeros((1, 3)))
    w = Tensor.ones(2, 1, 3, 3)
    img = Tensor.ones(1, 1, 4, 4, dtype=dtypes.float16)
    assert img.conv2d(w, dtype=dtypes.float32).dtype == dtypes.float32


def test_tinygrad_keywords_elsewhere():
    x = Tensor([-4.0, -1.0, 0.0, 1.0, 4.0])
    xt = torch.tensor(x.numpy())
    np.testing.assert_allclose(x.hardsigmoid().numpy(), torch.nn.functional.hardsigmoid(xt).numpy())
    np.testing.assert_allclose(x.hardsigmoid(alpha=0.2, beta=0.5).numpy(), (0.2 * xt + 0.5).clamp(0, 1).numpy())
    np.testing.assert_allclose(x.selu().numpy(), torch.selu(xt).numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.selu(alpha=1.0, gamma=2.0).numpy(), 2 * torch.nn.functional.elu(xt).numpy(),
                               rtol=1e-6)
    w = Tensor([1.0, 2.0], requires_grad=True)
    v = Tensor([3.0], requires_grad=True)
    g = (w * 3).sum().gradient(w, v, materialize_grads=True)
    assert g[0].numpy().tolist() == [3, 3] and g[1].numpy().tolist() == [0]
    assert (w * 3).sum().gradient(w, v)[1].numpy().tolist() == [0]  # zeros either way (tinygrad refuses)
    y = Tensor.zeros(2).contiguous()
    assert y.assign(x=Tensor([5.0, 6.0])).numpy().tolist() == [5, 6]
    a, b = Tensor([1.0]) + 1, Tensor([2.0]) * 2
    assert a.realize(b, do_update_stats=False) is a and b.numpy().tolist() == [4]
    assert Tensor.rand(3, contiguous=False).shape == (3,)


def test_scaled_dot_product_attention_enable_gqa():
    Tensor.manual_seed(0)
    q, k, v = Tensor.randn(1, 4, 3, 8), Tensor.randn(1, 2, 5, 8), Tensor.randn(1, 2, 5, 8)
    out = q.scaled_dot_product_attention(k, v, enable_gqa=True)
    kt = torch.tensor(k.numpy()).repeat_interleave(2, dim=1)
    vt = torch.tensor(v.numpy()).repeat_interleave(2, dim=1)
    qt = torch.tensor(q.numpy())
    ref = torch.softmax(qt @ kt.transpose(-2, -1) / 8**0.5, -1) @ vt
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(lazygrad.LazygradError, match="enable_gqa"):
        Tensor.randn(1, 3, 3, 8).scaled_dot_product_attention(k, v, enable_gqa=True)


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                                     ("int64", "float64"), ("float32", "uint8"), ("uint8", "float32"),
                                     ("int16", "float16")])
def test_bitcast_matches_numpy_view(src, dst):
    a = (np.arange(-6, 6) * 1.75).astype(src).reshape(3, 4)
    out = Tensor(a).bitcast(getattr(dtypes, dst))
    np.testing.assert_array_equal(out.numpy(), a.view(dst))
    np.testing.assert_array_equal(Tensor(a).view(getattr(dtypes, dst)).numpy(), a.view(dst))
    assert Tensor(a).view(4, 3).shape == (4, 3)


def test_bitcast_errors_and_bfloat16():
    with pytest.raises(lazygrad.LazygradError, match="bitcast"):
        Tensor([1.0, 2.0, 3.0]).bitcast(dtypes.float64)
    bits = Tensor([0x3F80, 0xC000], dtype=dtypes.uint16)  # 1.0 and -2.0 as bfloat16
    assert bits.bitcast(dtypes.bfloat16).float().numpy().tolist() == [1.0, -2.0]
    a = np.array([0x3F80, 0x4040], dtype=np.uint16)
    assert Tensor.from_blob(a.ctypes.data, (2,), dtype=dtypes.bfloat16).float().numpy().tolist() == [1.0, 3.0]


def test_keccak_of_wider_dtypes_hashes_their_bytes():
    import hashlib
    a = np.arange(10, dtype=np.int32) * 1000003
    assert bytes(Tensor(a).keccak().numpy().tolist()).hex() == hashlib.sha3_256(a.tobytes()).hexdigest()
    with pytest.raises(ValueError):
        Tensor(a).keccak("md5")




def test_clamp_takes_pytorchs_and_tinygrads_keywords():
    x = Tensor([-2.0, 0.5, 3.0])
    assert x.clamp(min=0).numpy().tolist() == [0, 0.5, 3] and x.clamp(max_=1).numpy().tolist() == [-2, 0.5, 1]
    assert x.clamp(min_=-1, max=1).numpy().tolist() == [-1, 0.5, 1]
    with pytest.raises(TypeError):
        x.clamp(min=0, min_=0)
