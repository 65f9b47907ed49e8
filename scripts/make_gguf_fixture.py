"""Writes tests/fixtures/gguf/: mixed.gguf (metadata of every GGUF type, tensors of every type
lazygrad reads) and mixed_values.txt (each tensor's expected float32 values), for tests/test_gguf.cpp.

    /usr/bin/python3 scripts/make_gguf_fixture.py [OUT_DIR]

The file is written by scripts/gguf_writer.py, the expected values computed here in numpy: the
quantized ones by gguf_writer.dequantize (llama.cpp's dequantize_row_* in float32), so the C++
reader is checked against an independent Python reading of the same bytes. The values are fixed
(a seeded generator), so the output is the same on every run.

mixed_values.txt has one line per tensor, `NAME TYPE DIM0 DIM1 ... : V0 V1 ...`, the dims in
lazygrad's (PyTorch's) order and the values as Python's repr of each float32, which strtod reads back
exactly (inf, -inf and -0.0 included).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as g  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "gguf")

METADATA = {
    "general.architecture": "llama",
    "general.alignment": g.Value(g.UINT32, 64),
    "test.uint8": g.Value(g.UINT8, 200),
    "test.int8": g.Value(g.INT8, -100),
    "test.uint16": g.Value(g.UINT16, 60000),
    "test.int16": g.Value(g.INT16, -30000),
    "test.uint32": g.Value(g.UINT32, 4000000000),
    "test.int32": g.Value(g.INT32, -2000000000),
    "test.float32": g.Value(g.FLOAT32, 3.25),
    "test.bool": True,
    "test.string": "héllo, GGUF",
    "test.uint64": g.Value(g.UINT64, 2**63 + 5),
    "test.int64": g.Value(g.INT64, -2**40),
    "test.float64": g.Value(g.FLOAT64, 0.1),
    "test.strings": ["<s>", "", "\u2581the", "<0x0A>"],
    "test.int32s": g.Value.array(g.INT32, [1, -2, 2147483647]),
    "test.float32s": g.Value.array(g.FLOAT32, [0.5, -1.25, 1e-3]),
    "test.bools": g.Value.array(g.BOOL, [True, False, True]),
    "test.uint8s": g.Value.array(g.UINT8, [0, 255]),
    "test.uint64s": g.Value.array(g.UINT64, [2**64 - 1]),
    "test.empty": g.Value.array(g.FLOAT64, []),
}


def main():
    rng = np.random.default_rng(7)
    f16 = np.array([1.0, -0.0, 2.0**-24, 2.0**-14 - 2.0**-24, 65504.0, -np.inf, 0.333251953125, -2.5], np.float32)
    # All exact in bfloat16, and normal as float32 (kernels flush float32 subnormals to zero).
    bf16 = np.array([1.0, -0.0, 3.140625, -2.0**100, 2.0**-120], np.float32)
    q8 = rng.normal(0, 1, (2, 64)).astype(np.float32)
    q4 = rng.normal(0, 1, (3, 32)).astype(np.float32)
    q4k = b"".join(
        g.pack_q4_k_block(np.float32(rng.uniform(0.01, 0.1)), np.float32(rng.uniform(0.01, 0.1)),
                          rng.integers(0, 64, 8), rng.integers(0, 64, 8), rng.integers(0, 16, 256))
        for _ in range(2))
    tensors = [
        ("plain.f32", g.F32, (np.arange(24, dtype=np.float32) * 0.5 - 3).reshape(2, 3, 4), None),
        ("plain.f16", g.F16, f16.reshape(2, 4), None),
        ("plain.bf16", g.BF16, bf16, None),
        ("plain.i32", g.I32, np.array([-7, 0, 16777216], np.int32), None),
        ("quant.q8_0", g.Q8_0, q8, None),
        ("quant.q4_0", g.Q4_0, q4, None),
        ("quant.q4_k", g.Q4_K, q4k, (2, 256)),
    ]
    os.makedirs(OUT, exist_ok=True)
    g.write_gguf(os.path.join(OUT, "mixed.gguf"), METADATA, tensors)

    names = {g.F32: "F32", g.F16: "F16", g.BF16: "BF16", g.I32: "I32", g.Q8_0: "Q8_0", g.Q4_0: "Q4_0", g.Q4_K: "Q4_K"}
    lines = []
    for name, ggml_type, data, shape in tensors:
        shape = tuple(np.shape(data) if shape is None else shape)
        count = int(np.prod(shape))
        if ggml_type in (g.Q8_0, g.Q4_0, g.Q4_K):
            values = g.dequantize(ggml_type, g.encode_tensor(ggml_type, data), count)
            if ggml_type != g.Q4_K:  # the quantizers round to the nearest step (Q4_0 clamps one end: a step)
                x = np.asarray(data, np.float32).reshape(-1, 32)
                step = np.max(np.abs(x), axis=1, keepdims=True) / (127 if ggml_type == g.Q8_0 else 8)
                error = np.abs(values.reshape(-1, 32) - x)
                assert np.all(error <= step * (0.5 if ggml_type == g.Q8_0 else 1.0) * 1.01), name
        else:
            values = np.asarray(data).reshape(-1).astype(np.float32)
        text = " ".join(repr(float(v)) for v in values)
        lines.append(f"{name} {names[ggml_type]} {' '.join(map(str, shape))} : {text}")
    with open(os.path.join(OUT, "mixed_values.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
