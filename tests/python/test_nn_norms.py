"""InstanceNorm (tinygrad's and PyTorch's InstanceNorm1d/2d/3d) and tinygrad's LayerNorm2d against PyTorch."""
import numpy as np
import pytest
import torch

import lazygrad
from lazygrad import Tensor, nn


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,channels,cls,tcls", [((2, 3, 7), 3, nn.InstanceNorm1d, torch.nn.InstanceNorm1d),
                                                     ((2, 3, 5, 4), 3, nn.InstanceNorm2d, torch.nn.InstanceNorm2d),
                                                     ((1, 2, 3, 4, 5), 2, nn.InstanceNorm3d, torch.nn.InstanceNorm3d),
                                                     ((3, 5, 4), 3, nn.InstanceNorm2d, torch.nn.InstanceNorm2d)])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_matches_pytorch(shape, channels, cls, tcls, affine):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32) * 3 + 1
    m, tm = cls(channels, affine=affine), tcls(channels, affine=affine)
    if affine:
        w = rng.standard_normal(channels).astype(np.float32)
        with lazygrad.no_grad():
            m.weight.assign(Tensor(w)).realize()
        tm.weight.data = torch.tensor(w)
    xt = torch.tensor(x, requires_grad=True)
    xl = Tensor(x, requires_grad=True)
    y, yt = m(xl), tm(xt)
    _close(y, yt)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    _close(xl.grad, xt.grad, 1e-4)
    if affine:
        _close(m.weight.grad, tm.weight.grad, 1e-4)


def test_tinygrad_instance_norm_is_affine_by_default():
    m = nn.InstanceNorm(4)
    assert m.weight is not None and m.weight.shape == (4,)
    x = Tensor.randn(2, 4, 3, 3)
    ref = torch.nn.functional.instance_norm(torch.tensor(x.numpy()))
    _close(m(x), ref)


def test_instance_norm_errors():
    with pytest.raises(NotImplementedError, match="track_running_stats"):
        nn.InstanceNorm2d(3, track_running_stats=True)
    with pytest.raises(lazygrad.LazygradError, match=r"InstanceNorm2d: expected 3 channels"):
        nn.InstanceNorm2d(3)(Tensor.ones(2, 4, 5, 5))
    with pytest.raises(lazygrad.LazygradError, match=r"InstanceNorm2d: expected an input of 3-d or 4-d"):
        nn.InstanceNorm2d(3)(Tensor.ones(3, 5))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm(0)


def test_layer_norm_2d_normalizes_channels():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    m = nn.LayerNorm2d(6)
    ref = torch.nn.functional.layer_norm(torch.tensor(x).permute(0, 2, 3, 1), (6,)).permute(0, 3, 1, 2)
    _close(m(Tensor(x)), ref)
    assert isinstance(m, nn.LayerNorm)
    with pytest.raises(lazygrad.LazygradError, match="LayerNorm2d"):
        m(Tensor.ones(6, 3, 4))


def test_safe_load_metadata_is_tinygrads(tmp_path):
    import json
    path = tmp_path / "m.safetensors"
    nn.state.safe_save({"w": Tensor([[1.0, 2.0]]), "b": Tensor([3], dtype=lazygrad.dtypes.int64)}, path,
                       {"step": "7"})
    t, n, header = nn.state.safe_load_metadata(path)
    raw = path.read_bytes()
    assert t.dtype == lazygrad.dtypes.uint8 and t.shape == (len(raw),)
    assert n == int.from_bytes(raw[:8], "little") and header == json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"step": "7"} and header["w"]["shape"] == [1, 2]
    path.write_bytes(raw[:8] + b"[" + raw[9:])  # a corrupt header is refused
    with pytest.raises(lazygrad.LazygradError):
        nn.state.safe_load_metadata(path)
