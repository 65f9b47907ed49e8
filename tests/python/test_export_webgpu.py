"""lazygrad.export_webgpu (docs/webgpu.md): a TinyJit captured on WEBGPU written out as a page folder.
The page itself runs in tests/test_webgpu_export.cpp's headless Chromium; here: what Python writes
(the files, the weights by their state_dict names, the kernels and launches in model.js), and the
errors. Skips, saying why, where WEBGPU cannot open (no Chromium, no WebGPU adapter)."""
import json
import re

import numpy as np
import pytest

import lazygrad
from lazygrad import Tensor, TinyJit, nn


@pytest.fixture(scope="module")
def webgpu():
    try:
        Tensor([1.0], device="WEBGPU").realize()
    except lazygrad.LazygradError as e:
        pytest.skip(f"no WebGPU: {e}")
    return "WEBGPU"


def test_a_tinyjit_becomes_a_page_folder(webgpu, tmp_path):
    lin = nn.Linear(4, 3)
    for t in nn.state.get_parameters(lin):
        t.to_(webgpu)

    @TinyJit
    def f(x):
        return lin(x).softmax(-1)

    x = Tensor(np.arange(8, dtype=np.float32).reshape(2, 4), device=webgpu)
    want = f(x).numpy()
    f(x)  # captured
    summary = lazygrad.export_webgpu(f, tmp_path / "page", state_dict=nn.state.get_state_dict(lin),
                                     input_names=["x"], output_names=["probabilities"], title="a linear layer")
    assert summary["weights"] == 2 and summary["dispatches"] >= 1
    assert summary["weight_bytes"] == (4 * 3 + 3) * 4
    page = tmp_path / "page"
    assert "<title>a linear layer</title>" in (page / "index.html").read_text()
    js = (page / "model.js").read_text()
    assert '{name: "x", buffer: ' in js and '{name: "probabilities", buffer: ' in js
    assert len(re.findall(r"\{kernel: \d+,", js)) == summary["dispatches"]
    weights = nn.state.safe_load(str(page / "model.safetensors"))
    assert sorted(weights) == ["bias", "weight"]
    np.testing.assert_array_equal(weights["weight"].numpy(), lin.weight.numpy())
    # The header's offsets are what model.js reads the weights by.
    raw = (page / "model.safetensors").read_bytes()
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    assert header["bias"]["data_offsets"][1] - header["bias"]["data_offsets"][0] == 12
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6)  # the Jit still replays


def test_export_before_the_capture_is_an_error(webgpu, tmp_path):
    @TinyJit
    def g(x):
        return x * 2

    with pytest.raises(ValueError, match="has not been called"):
        lazygrad.export_webgpu(g, tmp_path)
    g(Tensor([1.0, 2.0], device=webgpu))
    with pytest.raises(lazygrad.LazygradError, match="nothing is captured before the second call"):
        lazygrad.export_webgpu(g, tmp_path)
