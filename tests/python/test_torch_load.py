"""nn.state.torch_load reads torch.save's zip checkpoints without torch: dtypes, shapes, strides,
storage offsets and shared storages as PyTorch wrote them, and refuses any other pickled object."""
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from lazygrad import dtypes, nn
from lazygrad.nn.state import torch_load

torch = pytest.importorskip("torch")


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 5, 3)
        self.bn = torch.nn.BatchNorm2d(5)
        self.fc = torch.nn.Linear(7, 3)


def check(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), (got.dtype, want.dtype)
    want_np = want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    np.testing.assert_array_equal(got.numpy(), want_np)


def test_a_models_state_dict(tmp_path):
    torch.manual_seed(0)
    model = Small()
    model.bn(torch.randn(4, 5, 6, 6))  # running statistics and num_batches_tracked (int64)
    sd = model.state_dict()
    torch.save(sd, tmp_path / "m.pt")
    got = torch_load(tmp_path / "m.pt")
    assert list(got) == list(sd)
    for k in sd:
        check(got[k], sd[k])
    assert got["bn.num_batches_tracked"].dtype == dtypes.int64


def test_dtypes_views_and_shared_storage(tmp_path):
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    tensors = {
        "f32": torch.randn(2, 3),
        "f16": torch.randn(4, 5).half(),
        "bf16": torch.randn(3, 2).bfloat16(),
        "f64": torch.randn(2).double(),
        "i64": torch.arange(-5, 6),
        "i32": torch.arange(7, dtype=torch.int32),
        "i16": torch.arange(3, dtype=torch.int16),
        "i8": torch.tensor([-3, 4], dtype=torch.int8),
        "u8": torch.arange(250, 256, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "transposed": base.transpose(0, 2),           # non-contiguous strides
        "sliced": base[1:, ::2, 3],                   # a storage offset and steps
        "base": base,                                 # the storage both views share
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
    }
    torch.save(tensors, tmp_path / "t.pt")
    got = torch_load(str(tmp_path / "t.pt"))
    for k, v in tensors.items():
        check(got[k], v)


def test_a_parameter_saved_directly_requires_grad(tmp_path):
    p = torch.nn.Parameter(torch.randn(3))
    torch.save({"p": p, "list": [torch.ones(2), 3]}, tmp_path / "p.pt")
    got = torch_load(tmp_path / "p.pt")
    check(got["p"], p.detach())
    assert got["p"].requires_grad
    assert got["list"][1] == 3 and got["list"][0].tolist() == [1.0, 1.0]


def test_loads_into_a_lazygrad_model(tmp_path):
    torch.manual_seed(1)
    tm = torch.nn.Linear(4, 2)
    torch.save(tm.state_dict(), tmp_path / "l.pt")
    lm = nn.Linear(4, 2)
    nn.state.load_state_dict(lm, torch_load(tmp_path / "l.pt"))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    from lazygrad import Tensor
    np.testing.assert_allclose(lm(Tensor(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_reading_does_not_import_torch(tmp_path):
    torch.save({"w": torch.ones(2, 2)}, tmp_path / "w.pt")
    code = ("import sys\nfrom lazygrad.nn.state import torch_load\n"
            f"print(torch_load({str(tmp_path / 'w.pt')!r})['w'].tolist(), 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[[1.0, 1.0], [1.0, 1.0]] False"


class Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_any_other_global_is_refused(tmp_path, capsys):
    torch.save({"w": torch.ones(1), "x": Evil()}, tmp_path / "e.pt")
    with pytest.raises(pickle.UnpicklingError, match="print"):
        torch_load(tmp_path / "e.pt")
    assert "pwned" not in capsys.readouterr().out


def test_legacy_and_broken_files(tmp_path):
    torch.save({"w": torch.ones(1)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="legacy"):
        torch_load(tmp_path / "old.pt")
    torch.save({"w": torch.ones(100)}, tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as src, zipfile.ZipFile(tmp_path / "short.pt", "w") as dst:
        for n in src.namelist():
            dst.writestr(n, src.read(n)[:40] if n.endswith("data/0") else src.read(n))
    with pytest.raises(pickle.UnpicklingError, match="storage 0 has 40 bytes"):
        torch_load(tmp_path / "short.pt")
