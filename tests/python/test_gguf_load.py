"""nn.state.gguf_load: tinygrad's (metadata, tensors) of a GGUF file through lazygrad's C++ reader,
from a path or from a uint8 Tensor of the file's bytes."""
import sys
from pathlib import Path

import numpy as np
import pytest

from lazygrad import LazygradError, Tensor, dtypes
from lazygrad.nn.state import gguf_load

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from gguf_writer import (BF16, F16, F32, FLOAT32, I32, Q8_0, UINT64, Value, dequantize,  # noqa: E402
                         encode_tensor, write_gguf)


@pytest.fixture
def model(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {"w": rng.standard_normal((3, 5)).astype(np.float32), "h": rng.standard_normal(7).astype(np.float16),
               "b": rng.standard_normal((2, 4)).astype(np.float32), "i": np.arange(-3, 3, dtype=np.int32),
               "q": rng.standard_normal((2, 32)).astype(np.float32)}
    path = tmp_path / "m.gguf"
    write_gguf(path, {"general.architecture": "llama", "llama.block_count": 2, "flag": True, "eps": 1e-5,
                      "big": Value(UINT64, 2**64 - 1), "scores": Value.array(FLOAT32, [0.0, -1.5]),
                      "tokens": ["<s>", "</s>"]},
               [("w", F32, tensors["w"], None), ("h", F16, tensors["h"], None), ("b", BF16, tensors["b"], None),
                ("i", I32, tensors["i"], None), ("q", Q8_0, tensors["q"], None)])
    return path, tensors


def check(kv, sd, tensors):
    assert kv["general.architecture"] == "llama" and kv["llama.block_count"] == 2 and kv["flag"] is True
    assert kv["eps"] == pytest.approx(1e-5) and kv["big"] == 2**64 - 1
    assert kv["scores"] == [0.0, -1.5] and kv["tokens"] == ["<s>", "</s>"]
    np.testing.assert_array_equal(sd["w"].numpy(), tensors["w"])
    assert sd["h"].dtype == dtypes.float16 and sd["b"].dtype == dtypes.bfloat16 and sd["i"].dtype == dtypes.int32
    np.testing.assert_array_equal(sd["h"].numpy(), tensors["h"])
    np.testing.assert_array_equal(sd["i"].numpy(), tensors["i"])
    np.testing.assert_allclose(sd["b"].numpy(), tensors["b"], rtol=1e-2)
    q8 = dequantize(Q8_0, encode_tensor(Q8_0, tensors["q"]), 64).reshape(2, 32)
    assert sd["q"].dtype == dtypes.float32 and sd["q"].shape == (2, 32)
    np.testing.assert_array_equal(sd["q"].numpy(), q8)


def test_from_a_path(model):
    path, tensors = model
    check(*gguf_load(path), tensors)


def test_from_a_tensor_of_the_files_bytes(model):
    path, tensors = model
    check(*gguf_load(Tensor(np.frombuffer(path.read_bytes(), np.uint8))), tensors)


def test_a_broken_file_raises(tmp_path, model):
    path, _ = model
    (tmp_path / "short.gguf").write_bytes(path.read_bytes()[:100])
    with pytest.raises(LazygradError, match="short.gguf"):
        gguf_load(tmp_path / "short.gguf")
