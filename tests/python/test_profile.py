"""lazygrad.profile and lazygrad.write_viz from Python (docs/profile.md, docs/viz.md): a model of
Python modules is charged layer by layer under the names it has in the model."""
import lazygrad
from lazygrad import Tensor, nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(self.l1(x).relu())


def test_profile_charges_each_python_layer():
    net = Net()
    x = Tensor.randn(4, 8).realize()
    net(x).realize()  # compiled before it is profiled
    p = lazygrad.profile(lambda: net(x).realize(), net)
    layers = {layer.name: layer for layer in p.layers}
    assert {"l1", "l2", "(model)"} <= set(layers), list(layers)
    assert layers["l1"].type == "Linear" and layers["l1"].parameters == 8 * 16 + 16
    assert layers["(model)"].type == "Net"  # the ReLU in Net.forward
    assert layers["l1"].flops >= 2 * 4 * 8 * 16
    assert abs(sum(layer.flops for layer in p.layers) - sum(k.flops for k in p.kernels)) < 1
    for k in p.kernels:
        assert abs(sum(share for _, share in k.shares) - 1) < 1e-9
    assert "roofline on" in str(p) and p.roofline.gflops > 0


def test_profile_scope_names_work_of_your_own():
    x = Tensor.randn(64).realize()

    def fn():
        with lazygrad.ProfileScope("scaling"):
            (x * 3 + 1).realize()

    p = lazygrad.profile(fn)
    assert [layer.name for layer in p.layers] == ["scaling"]


def test_write_viz_writes_a_page(tmp_path):
    x = Tensor.randn(8, 8).realize()
    page = tmp_path / "viz.html"
    lazygrad.write_viz(lambda: x.softmax(1).realize(), str(page))
    html = page.read_text()
    assert "REDUCE_AXIS" in html and "<svg" not in html.split("<script>")[0]
