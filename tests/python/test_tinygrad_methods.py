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
    width = max(len(r) for r in rows)
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
    assert width


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
