"""lazygrad.nn against torch.nn: layers with the same weights give the same outputs; Module
subclasses register what they are given; state dicts and safetensors files round-trip."""
import numpy as np
import pytest

from lazygrad import LazygradError, Tensor, TinyJit, nn

torch = pytest.importorskip("torch")


def T(a):
    return Tensor(np.ascontiguousarray(a, dtype=np.float32))


def copy_into_torch(ours, theirs):
    """Copies our module's state into the torch module's (same names: PyTorch's)."""
    with torch.no_grad():
        for name, t in theirs.state_dict().items():
            t.copy_(torch.from_numpy(ours.state_dict()[name].numpy()))


RNG = np.random.default_rng(0)

LAYERS = [
    (lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (4, 5)),
    (lambda: nn.Linear(5, 3, bias=False), lambda: torch.nn.Linear(5, 3, bias=False), (2, 5)),
    (lambda: nn.Conv2d(2, 4, 3, padding=1), lambda: torch.nn.Conv2d(2, 4, 3, padding=1), (2, 2, 6, 6)),
    (lambda: nn.Conv2d(2, 4, (3, 2), stride=2), lambda: torch.nn.Conv2d(2, 4, (3, 2), stride=2), (1, 2, 7, 7)),
    (lambda: nn.Conv1d(3, 2, 3), lambda: torch.nn.Conv1d(3, 2, 3), (2, 3, 8)),
    (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), lambda: torch.nn.ConvTranspose2d(2, 3, 3, stride=2),
     (1, 2, 4, 4)),
    (lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 6)),
    (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    (lambda: nn.BatchNorm2d(3).eval(), lambda: torch.nn.BatchNorm2d(3).eval(), (2, 3, 4, 4)),
    (lambda: nn.MaxPool2d(2), lambda: torch.nn.MaxPool2d(2), (1, 2, 6, 6)),
    (lambda: nn.AvgPool2d(3, stride=1, padding=1), lambda: torch.nn.AvgPool2d(3, stride=1, padding=1),
     (1, 2, 5, 5)),
    (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
     lambda: torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)), (3, 4)),
    (lambda: nn.Flatten(), lambda: torch.nn.Flatten(), (2, 3, 4)),
    (lambda: nn.GELU(), lambda: torch.nn.GELU(), (4, 5)),
    (lambda: nn.SiLU(), lambda: torch.nn.SiLU(), (4, 5)),
]


@pytest.mark.parametrize("ours,theirs,shape", LAYERS)
def test_layer_matches_torch(ours, theirs, shape):
    m, tm = ours(), theirs()
    copy_into_torch(m, tm)
    x = RNG.standard_normal(shape).astype(np.float32)
    want = tm(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(m(T(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_state_dict_names_match_torch():
    for ours, theirs, _ in LAYERS:
        assert sorted(ours().state_dict()) == sorted(theirs().state_dict())


def test_embedding_and_rmsnorm():
    e = nn.Embedding(10, 4)
    idx = Tensor(np.array([[1, 2], [9, 0]], dtype=np.int64))
    np.testing.assert_array_equal(e(idx).numpy(), e.weight.numpy()[[[1, 2], [9, 0]]])
    r = nn.RMSNorm(4)  # tinygrad's (dim, eps=1e-6)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * r.weight.numpy()
    np.testing.assert_allclose(r(T(x)).numpy(), want, rtol=1e-5, atol=1e-6)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.blocks = [nn.Linear(4, 4), nn.Linear(4, 2)]
        self.scale = T(np.full((2,), 2.0))
        self.register_buffer("steps", T(np.zeros(())))

    def forward(self, x):
        x = self.fc(x)
        for b in self.blocks:
            x = b(x)
        return x


def test_subclass_registers_parameters_modules_and_buffers():
    n = Net()
    names = [k for k, _ in n.named_parameters()]
    assert names == ["scale", "fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "blocks.1.bias"]
    assert [k for k, _ in n.named_buffers()] == ["steps"]
    assert all(p.requires_grad for p in n.parameters())
    assert sorted(n.state_dict()) == sorted(names + ["steps"])
    assert sorted(nn.state.get_state_dict(n)) == sorted(names + ["steps"])
    assert len(nn.state.get_parameters(n)) == 8
    assert "Net(" in repr(n) and "(fc): Linear(in_features=3, out_features=4, bias=True)" in repr(n)
    assert n(T(np.ones((5, 3)))).shape == (5, 2)


def test_python_module_inside_sequential():
    class Double(nn.Module):
        def forward(self, x):
            return x + x

    s = nn.Sequential(Double(), nn.ReLU())
    np.testing.assert_array_equal(s(T([[-1.0, 2.0]])).numpy(), [[0.0, 4.0]])


def test_state_dict_round_trip_and_safetensors(tmp_path):
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=k)
    path = tmp_path / "net.safetensors"
    nn.state.safe_save(nn.state.get_state_dict(a), path, {"step": "3"})
    loaded = nn.state.safe_load(path)
    c = Net()
    nn.state.load_state_dict(c, loaded)
    np.testing.assert_array_equal(c.fc.weight.numpy(), a.fc.weight.numpy())


def test_load_state_dict_errors():
    n = Net()
    sd = n.state_dict()
    sd["fc.weight"] = T(np.zeros((2, 2)))
    with pytest.raises(LazygradError, match="fc.weight"):
        n.load_state_dict(sd)
    sd = n.state_dict()
    del sd["fc.bias"]
    with pytest.raises(LazygradError, match="fc.bias"):
        n.load_state_dict(sd)
    missing, unexpected = n.load_state_dict(sd, strict=False)
    assert missing == ["fc.bias"] and unexpected == []


def test_safe_load_refuses_a_bad_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(LazygradError):
        nn.state.safe_load(path)


def test_train_eval_modes():
    s = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert s.training
    s.eval()
    assert not s.training and not s[1].training
    x = T(np.ones((4, 2)))
    np.testing.assert_array_equal(s(x).numpy(), s[0](x).numpy())  # dropout is off in eval


OPTIMIZERS = [
    (lambda p: nn.optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    (lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (lambda p: nn.optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    (lambda p: nn.optim.Adam(p, lr=0.01, betas=(0.8, 0.99)), lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99))),
    (lambda p: nn.optim.AdamW(p, lr=0.01, weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
]


@pytest.mark.parametrize("ours,theirs", OPTIMIZERS)
def test_optimizer_steps_match_torch(ours, theirs):
    m, tm = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    copy_into_torch(m, tm)
    opt, topt = ours(m.parameters()), theirs(tm.parameters())
    x = RNG.standard_normal((8, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 8)
    for _ in range(3):
        opt.zero_grad()
        loss = m(T(x)).cross_entropy(Tensor(y.astype(np.int64)))
        loss.backward()
        opt.step([loss])
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
        tloss.backward()
        topt.step()
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    np.testing.assert_allclose(m.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_lamb_trust_ratio():
    # LAMB (tinygrad's; PyTorch has none): one step moves each tensor by lr * ||p|| / ||u|| * u.
    w = Tensor(np.array([[3.0, 4.0]], np.float32), requires_grad=True)
    opt = nn.optim.LAMB([w], lr=0.1, eps=0.0)
    (w * Tensor(np.array([[1.0, -2.0]], np.float32))).sum().backward()
    opt.step()
    u = np.array([1.0, -1.0])  # first step: m_hat / sqrt(v_hat) is the gradient's sign
    want = np.array([3.0, 4.0]) - 0.1 * (5.0 / np.sqrt(2.0)) * u
    np.testing.assert_allclose(w.numpy()[0], want, rtol=1e-5)


def test_tinyjit_replays_and_checks_arguments():
    calls = []

    @TinyJit
    def f(x, scale):
        calls.append(1)
        return (x * scale).sum()

    for i in range(5):
        x = T(np.full((4,), float(i)))
        assert f(x, 2.0).item() == pytest.approx(8.0 * i)
    assert len(calls) == 2  # run, capture; then replays without Python
    assert f.captured_kernels >= 1
    with pytest.raises(ValueError, match="non-Tensor"):
        f(T(np.ones(4)), 3.0)
