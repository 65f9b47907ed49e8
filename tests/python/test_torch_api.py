"""PyTorch's habits at module level: lazygrad.zeros/cat/tensor/..., nn.functional, nn.init, the loss
modules, nn.utils.clip_grad_norm_, lazygrad.optim with PyTorch's signatures, the learning-rate
schedulers and Module.to, each against PyTorch 1.13."""
import math

import numpy as np
import pytest

import lazygrad
import lazygrad.nn as nn
import lazygrad.nn.functional as F
import lazygrad.optim as optim
from lazygrad import Tensor, dtypes
from lazygrad.optim import lr_scheduler

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(got, want, **kw):
    want = want.detach().numpy() if hasattr(want, "detach") else want
    np.testing.assert_allclose(got.numpy(), want, **{"rtol": 1e-5, "atol": 1e-6, **kw})


# ---- module-level functions ----
def test_creation_functions_take_torchs_arguments_and_dtypes():
    assert lazygrad.zeros(2, 3).shape == (2, 3) and lazygrad.zeros((2, 3)).dtype == dtypes.float32
    assert lazygrad.ones([4]).tolist() == [1.0] * 4
    assert lazygrad.full((2,), 7).dtype == dtypes.int64 and lazygrad.full((2,), 7.5).tolist() == [7.5, 7.5]
    assert lazygrad.arange(5).dtype == dtypes.int64 and lazygrad.arange(5).tolist() == list(range(5))
    assert lazygrad.arange(0, 1, 0.25).tolist() == torch.arange(0, 1, 0.25).tolist()
    close(lazygrad.linspace(0, 1, 5), torch.linspace(0, 1, 5))
    close(lazygrad.eye(3, 2), torch.eye(3, 2))
    assert lazygrad.tensor([1, 2]).dtype == dtypes.int64  # torch.tensor's int64, not tinygrad's int32
    assert lazygrad.tensor([[True, False]]).dtype == dtypes.bool
    assert lazygrad.tensor([1, 2.5]).dtype == dtypes.float32
    assert lazygrad.tensor(np.arange(3, dtype=np.int16)).dtype == dtypes.int16
    t = lazygrad.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert lazygrad.from_numpy(a).dtype == dtypes.float64 and lazygrad.from_numpy(a).tolist() == a.tolist()
    with pytest.raises(TypeError):
        lazygrad.from_numpy([1, 2])
    x = lazygrad.randn(3, 4)
    assert x.shape == (3, 4) and lazygrad.rand(2).shape == (2,)
    assert lazygrad.zeros_like(x).tolist() == [[0.0] * 4] * 3
    assert lazygrad.ones_like(x, dtype=dtypes.int32).dtype == dtypes.int32
    r = lazygrad.randint(3, 9, (50,))
    assert r.dtype == dtypes.int64 and 3 <= r.min().item() and r.max().item() < 9
    assert lazygrad.randint(4, (2, 2)).shape == (2, 2)
    assert lazygrad.is_tensor(x) and not lazygrad.is_tensor(a) and lazygrad.numel(x) == 12


def test_manual_seed_repeats_random_numbers():
    lazygrad.manual_seed(3)
    a = lazygrad.rand(5).tolist()
    lazygrad.manual_seed(3)
    assert lazygrad.rand(5).tolist() == a


def test_joining_and_selecting_functions():
    a, b = data(2, 3), data(2, 3, seed=1)
    close(lazygrad.cat([Tensor(a), Tensor(b)], dim=1), torch.cat([torch.tensor(a), torch.tensor(b)], dim=1))
    close(lazygrad.stack((Tensor(a), Tensor(b))), torch.stack((torch.tensor(a), torch.tensor(b))))
    cond = a > 0
    close(lazygrad.where(Tensor(cond), Tensor(a), Tensor(b)), torch.where(torch.tensor(cond), torch.tensor(a),
                                                                         torch.tensor(b)))
    close(lazygrad.flatten(Tensor(data(2, 3, 4)), 1), torch.flatten(torch.tensor(data(2, 3, 4)), 1))
    close(lazygrad.exp(Tensor(a)), torch.exp(torch.tensor(a)))
    close(lazygrad.matmul(Tensor(a), Tensor(b.T)), torch.matmul(torch.tensor(a), torch.tensor(b.T)))
    close(lazygrad.sum(Tensor(a), 1), torch.sum(torch.tensor(a), 1))
    assert lazygrad.argmax(Tensor(a), dim=1).tolist() == torch.argmax(torch.tensor(a), dim=1).tolist()


def test_dtype_and_device_names():
    assert lazygrad.float32 is dtypes.float32 and lazygrad.int64 is dtypes.int64 and lazygrad.long is dtypes.int64
    assert lazygrad.float is dtypes.float32 and lazygrad.half is dtypes.float16 and lazygrad.bool is dtypes.bool
    assert lazygrad.device("cpu") == "CPU"
    assert lazygrad.cuda.is_available() == ("CUDA" in lazygrad.Device.available())
    assert lazygrad.cuda.device_count() == sum(d.split(":")[0] == "CUDA" for d in lazygrad.Device.available())
    assert lazygrad.zeros(2, dtype=lazygrad.float64).dtype == dtypes.float64
    with lazygrad.no_grad():
        assert not (Tensor([1.0], requires_grad=True) * 2).requires_grad


# ---- nn.functional ----
def test_functional_forwards_with_torchs_signatures():
    x, w, b = data(2, 3, 9, 9), data(4, 3, 3, 3, seed=1), data(4, seed=2)
    X, W, B = Tensor(x), Tensor(w), Tensor(b)
    tx, tw, tb = torch.tensor(x), torch.tensor(w), torch.tensor(b)
    close(F.conv2d(X, W, B, stride=2, padding=1), TF.conv2d(tx, tw, tb, stride=2, padding=1), atol=1e-5)
    close(F.conv2d(X, W, B, 1, 0, 2), TF.conv2d(tx, tw, tb, 1, 0, 2), atol=1e-5)  # stride, padding, dilation
    close(F.max_pool2d(X, 2), TF.max_pool2d(tx, 2))
    close(F.max_pool2d(X, 3, 2, 1), TF.max_pool2d(tx, 3, 2, 1))
    close(F.avg_pool2d(X, 2), TF.avg_pool2d(tx, 2))
    close(F.relu(X), TF.relu(tx))
    close(F.leaky_relu(X, 0.2), TF.leaky_relu(tx, 0.2))
    close(F.gelu(X), TF.gelu(tx), atol=1e-5)
    close(F.softmax(X, dim=1), TF.softmax(tx, dim=1))
    close(F.log_softmax(X, dim=1), TF.log_softmax(tx, dim=1), atol=1e-5)
    lw, lb, li = data(5, 7), data(5, seed=3), data(2, 7, seed=4)
    close(F.linear(Tensor(li), Tensor(lw), Tensor(lb)),
          TF.linear(torch.tensor(li), torch.tensor(lw), torch.tensor(lb)), atol=1e-5)
    close(F.linear(Tensor(li), Tensor(lw)), TF.linear(torch.tensor(li), torch.tensor(lw)), atol=1e-5)
    close(F.pad(X, (1, 2)), TF.pad(tx, (1, 2)))
    close(F.layer_norm(X, (9,)), TF.layer_norm(tx, (9,)), atol=1e-5)
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="divisor_override"):
        F.avg_pool2d(X, 2, divisor_override=3)


def test_functional_losses():
    logits, y = data(6, 5), np.array([0, 4, 2, 1, 3, 2])
    L, Y, tl, ty = Tensor(logits), Tensor(y), torch.tensor(logits), torch.tensor(y)
    for red in ("mean", "sum", "none"):
        close(F.cross_entropy(L, Y, reduction=red), TF.cross_entropy(tl, ty, reduction=red), atol=1e-5)
        close(F.nll_loss(L.log_softmax(1), Y, reduction=red), TF.nll_loss(tl.log_softmax(1), ty, reduction=red),
              atol=1e-5)
    close(F.cross_entropy(L, Y, label_smoothing=0.1), TF.cross_entropy(tl, ty, label_smoothing=0.1), atol=1e-5)
    close(F.nll_loss(L, Y, ignore_index=2), TF.nll_loss(tl, ty, ignore_index=2), atol=1e-5)
    a, t = data(4, 3), data(4, 3, seed=5)
    close(F.mse_loss(Tensor(a), Tensor(t)), TF.mse_loss(torch.tensor(a), torch.tensor(t)))
    close(F.l1_loss(Tensor(a), Tensor(t), reduction="sum"),
          TF.l1_loss(torch.tensor(a), torch.tensor(t), reduction="sum"))
    p, q = 1 / (1 + np.exp(-a)), (t > 0).astype(np.float32)
    close(F.binary_cross_entropy(Tensor(p), Tensor(q)), TF.binary_cross_entropy(torch.tensor(p), torch.tensor(q)),
          atol=1e-5)
    close(F.binary_cross_entropy_with_logits(Tensor(a), Tensor(q)),
          TF.binary_cross_entropy_with_logits(torch.tensor(a), torch.tensor(q)), atol=1e-5)


def test_functional_dropout_follows_its_training_argument():
    x = Tensor.ones(1000)
    assert F.dropout(x, 0.5, training=False).tolist() == [1.0] * 1000
    kept = F.dropout(x, 0.5).numpy()  # training=True by default, as PyTorch's, whatever Tensor.training
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept == 0).sum() < 700


# ---- loss modules ----
def test_loss_modules():
    logits, y = data(6, 5), np.array([0, 4, 2, 1, 3, 2])
    cases = [
        (nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), logits, y),
        (nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.2), torch.nn.CrossEntropyLoss(reduction="sum",
                                                                                            label_smoothing=0.2),
         logits, y),
        (nn.NLLLoss(), torch.nn.NLLLoss(), logits, y),
        (nn.MSELoss(), torch.nn.MSELoss(), logits, data(6, 5, seed=1)),
        (nn.L1Loss(reduction="none"), torch.nn.L1Loss(reduction="none"), logits, data(6, 5, seed=1)),
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), logits, data(6, 5, seed=1)),
        (nn.BCELoss(), torch.nn.BCELoss(), 1 / (1 + np.exp(-logits)), (data(6, 5, seed=2) > 0).astype(np.float32)),
        (nn.BCEWithLogitsLoss(), torch.nn.BCEWithLogitsLoss(), logits, (data(6, 5, seed=2) > 0).astype(np.float32)),
    ]
    for ours, theirs, a, t in cases:
        x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        out, want = ours(x, Tensor(t)), theirs(tx, torch.tensor(t))
        close(out, want, atol=1e-5)
        out.sum().backward()
        want.sum().backward()
        close(x.grad, tx.grad, atol=1e-5)
    w = data(5, seed=9) ** 2
    close(nn.CrossEntropyLoss(weight=Tensor(w))(Tensor(logits), Tensor(y)),
          torch.nn.CrossEntropyLoss(weight=torch.tensor(w))(torch.tensor(logits), torch.tensor(y)), atol=1e-5)


# ---- nn.init ----
def test_init_writes_in_place_with_torchs_bounds():
    lazygrad.manual_seed(0)
    w = Tensor.zeros(64, 32, 3, 3, requires_grad=True)
    fan_in, fan_out = 32 * 9, 64 * 9
    assert nn.init.kaiming_uniform_(w, a=math.sqrt(5)) is w and w.requires_grad
    bound = math.sqrt(6 / ((1 + 5) * fan_in))
    v = w.numpy()
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    nn.init.xavier_uniform_(w)
    assert abs(np.abs(w.numpy()).max() - math.sqrt(6 / (fan_in + fan_out))) < 0.05 * math.sqrt(6 / (fan_in + fan_out))
    nn.init.normal_(w, 2.0, 0.5)
    assert abs(w.numpy().mean() - 2.0) < 0.02 and abs(w.numpy().std() - 0.5) < 0.02
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / fan_out)) < 0.05 * math.sqrt(2 / fan_out)
    nn.init.uniform_(w, -0.1, 0.3)
    assert -0.1 <= w.numpy().min() and w.numpy().max() < 0.3
    nn.init.constant_(w, 0.5)
    assert set(np.unique(w.numpy())) == {0.5}
    nn.init.zeros_(w)
    assert not w.numpy().any()
    nn.init.ones_(w)
    assert w.numpy().all()
    assert nn.init.calculate_gain("relu") == torch.nn.init.calculate_gain("relu")
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain("leaky_relu", 0.2)
    with pytest.raises(lazygrad.LazygradValueError, match="at least 2 dimensions"):
        nn.init.xavier_uniform_(Tensor.zeros(3))
    with pytest.raises(ValueError, match="mode"):
        nn.init.kaiming_uniform_(w, mode="fan")


def test_init_of_a_layers_weight_is_seen_by_the_layer():
    layer = nn.Linear(3, 2)
    nn.init.zeros_(layer.weight)
    nn.init.ones_(layer.bias)
    assert layer(Tensor.ones(1, 3)).tolist() == [[1.0, 1.0]]


# ---- clipping ----
def test_clip_grad_norm_matches_torch():
    w = data(4, 3)
    x, tx = Tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    (x * x * 3).sum().backward()
    (tx * tx * 3).sum().backward()
    norm = nn.utils.clip_grad_norm_([x], max_norm=1.0)
    tnorm = torch.nn.utils.clip_grad_norm_([tx], max_norm=1.0)
    close(norm, tnorm, rtol=1e-5)
    close(x.grad, tx.grad, rtol=1e-5)
    nn.utils.clip_grad_value_(x, 0.05)
    torch.nn.utils.clip_grad_value_(tx, 0.05)
    close(x.grad, tx.grad)
    assert nn.utils.clip_grad_norm_([Tensor.ones(2, requires_grad=True)], 1.0).item() == 0.0  # no gradients


# ---- optim and schedulers ----
def run_steps(make_ours, make_theirs, steps=4, sched=None):
    w = data(5, 3)
    p, tp = Tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    opt, topt = make_ours([p]), make_theirs([tp])
    s = sched[0](opt) if sched else None
    ts = sched[1](topt) if sched else None
    lrs = []
    for i in range(steps):
        for par, o, lib in ((p, opt, lazygrad), (tp, topt, torch)):
            o.zero_grad()
            ((par * lib.tensor(data(5, 3, seed=i + 1))).sum() + (par * par).sum()).backward()
            o.step()
        if s:
            s.step()
            ts.step()
            lrs.append((s.get_last_lr()[0], ts.get_last_lr()[0]))
    close(p, tp, rtol=1e-5, atol=1e-6)
    for a, b in lrs:
        assert a == pytest.approx(b, rel=1e-12)


def test_optimizers_with_torchs_signatures():
    run_steps(lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1))
    run_steps(lambda p: optim.SGD(p, 0.1, 0.9, 0.1, 0.01, False), lambda p: torch.optim.SGD(p, 0.1, 0.9, 0.1, 0.01))
    run_steps(lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
              lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True))
    run_steps(lambda p: optim.Adam(p, 0.01, (0.8, 0.99)), lambda p: torch.optim.Adam(p, 0.01, (0.8, 0.99)))
    run_steps(lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=0.01,
                                                                                              weight_decay=0.1))
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="amsgrad"):
        optim.Adam([Tensor.ones(2, requires_grad=True)], amsgrad=True)
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="groups"):
        optim.SGD([{"params": [Tensor.ones(2, requires_grad=True)]}], lr=0.1)


def test_lr_schedulers_match_torch():
    sgd, tsgd = (lambda p: optim.SGD(p, lr=0.1)), (lambda p: torch.optim.SGD(p, lr=0.1))
    S, TS = lr_scheduler, torch.optim.lr_scheduler
    run_steps(sgd, tsgd, 6, (lambda o: S.StepLR(o, 2, gamma=0.5), lambda o: TS.StepLR(o, 2, gamma=0.5)))
    run_steps(sgd, tsgd, 6, (lambda o: S.MultiStepLR(o, [1, 4]), lambda o: TS.MultiStepLR(o, [1, 4])))
    run_steps(sgd, tsgd, 5, (lambda o: S.ExponentialLR(o, 0.9), lambda o: TS.ExponentialLR(o, 0.9)))
    run_steps(sgd, tsgd, 7, (lambda o: S.CosineAnnealingLR(o, T_max=3, eta_min=0.01),
                             lambda o: TS.CosineAnnealingLR(o, T_max=3, eta_min=0.01)))
    run_steps(sgd, tsgd, 6, (lambda o: S.LinearLR(o, total_iters=3), lambda o: TS.LinearLR(o, total_iters=3)))
    run_steps(sgd, tsgd, 5, (lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
                             lambda o: TS.LambdaLR(o, lambda e: 1 / (e + 1))))
    run_steps(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), 8,
              (lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=10), lambda o: TS.OneCycleLR(o, max_lr=0.5,
                                                                                              total_steps=10)))


def test_a_scheduler_keeps_its_optimizer_alive():
    p = Tensor.ones(2, requires_grad=True)
    s = lr_scheduler.StepLR(optim.SGD([p], lr=0.1), step_size=1)  # no other reference to the optimizer
    import gc
    gc.collect()
    s.step()
    assert s.get_last_lr() == [pytest.approx(0.01)]


# ---- Module.to, train/eval ----
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.drop = nn.Dropout(0.5)
        self.register_buffer("seen", Tensor.zeros(1))

    def forward(self, x):
        return self.drop(self.fc(x))


def test_module_to_moves_parameters_and_buffers_and_returns_the_module():
    net = Net()
    params = net.parameters()
    assert net.to("cpu") is net and net.to(device=lazygrad.device("cpu")) is net
    assert all(t.device == "CPU" for t in net.parameters() + net.buffers())
    with lazygrad.no_grad():
        params[0].assign(Tensor.zeros(2, 3)).realize()  # handles taken before still are the module's tensors
    assert not net.fc.weight.numpy().any()
    with pytest.raises(ValueError):
        net.to("nosuchdevice")
    with pytest.raises(lazygrad.LazygradNotImplementedError, match="only a device"):
        net.to(dtypes.float16)
    if "CL" in lazygrad.Device.available():
        net.to("CL")
        assert all(t.device == "CL" for t in net.parameters() + net.buffers())


def test_train_and_eval_switch_dropout():
    net = Net()
    x = Tensor.ones(200, 3)
    assert net.eval() is net and not net.training
    a, b = net(x).numpy(), net(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert net.train() is net and net.training and net.drop.training
    assert (net(x).numpy() == 0).any()


def test_conv2d_of_uint8_images_computes_in_the_weights_dtype():
    # tinygrad's promotion (beautiful_mnist feeds mnist()'s uint8 images to nn.Conv2d)
    x = np.random.default_rng(0).integers(0, 256, (2, 1, 7, 7)).astype(np.uint8)
    conv = nn.Conv2d(1, 3, 3)
    got = conv(Tensor(x))
    assert got.dtype == dtypes.float32
    np.testing.assert_allclose(got.numpy(), conv(Tensor(x.astype(np.float32))).numpy(), rtol=1e-6)
    with pytest.raises(lazygrad.LazygradError, match="same dtype"):  # float16 with float32 stays an error
        conv(Tensor(x.astype(np.float16)))


def test_functional_pooling_unpooling_and_the_new_ops():
    import torch as real
    import lazygrad.nn.functional as LF
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    v, i = LF.max_pool2d(lazygrad.Tensor(x), 2, return_indices=True)
    tv, ti = real.nn.functional.max_pool2d(real.tensor(x), 2, return_indices=True)
    np.testing.assert_allclose(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(LF.max_unpool2d(v, i, 2).numpy(), real.nn.functional.max_unpool2d(tv, ti, 2).numpy())
    x5 = rng.standard_normal((1, 1, 4, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(LF.avg_pool3d(lazygrad.Tensor(x5), 2).numpy(),
                               real.nn.functional.avg_pool3d(real.tensor(x5), 2).numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(LF.max_pool3d(lazygrad.Tensor(x5), 2).numpy(),
                               real.nn.functional.max_pool3d(real.tensor(x5), 2).numpy())
    np.testing.assert_allclose(LF.unfold(lazygrad.Tensor(x), 2, stride=2).numpy(),
                               real.nn.functional.unfold(real.tensor(x), 2, stride=2).numpy())
    np.testing.assert_allclose(LF.softmin(lazygrad.Tensor(x), dim=1).numpy(),
                               real.nn.functional.softmin(real.tensor(x), dim=1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(LF.normalize(lazygrad.Tensor(x), dim=3).numpy(),
                               real.nn.functional.normalize(real.tensor(x), dim=3).numpy(), rtol=1e-5)
    t = lazygrad.Tensor.arange(6)
    assert t.unfold(0, 2, 2).shape == (3, 2) and t.unfold(dim=0, size=3, step=3).shape == (2, 3)
