#!/usr/bin/python3
"""Writes tests/fixtures/safetensors/: safetensors files written the way the Python/PyTorch
ecosystem writes them, and the values they hold, for tests/test_safetensors.cpp.

    /usr/bin/python3 scripts/fixtures_safetensors.py [OUTDIR]      # OUTDIR: tests/fixtures/safetensors
    /usr/bin/python3 scripts/fixtures_safetensors.py --check FILE   # reads a file lazygrad wrote

Debian 12 ships no `safetensors` package (and PyPI is out of reach), so the format is implemented
here from its specification (https://github.com/huggingface/safetensors, README "Format"), which
is small: an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping each tensor name
to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data region) plus an
optional "__metadata__" object of strings, then the data region, little-endian, row-major.
Tensors are made with PyTorch 1.13 (numpy for uint16/32/64, which torch 1.13 lacks) and their
bytes are taken from them, so the values in the files are PyTorch's own.

Files written (seeded: a rerun writes byte-identical files):

  reference.safetensors   every dtype lazygrad reads, laid out exactly as the reference writer
                          (safetensors' Rust `serialize`, behind safetensors.torch.save_file) lays
                          them out: sorted by the Dtype enum's order descending, then by name; compact
                          JSON (serde_json's escaping, "__metadata__" first); padded with spaces to
                          a multiple of 8. tests/test_safetensors.cpp loads it and checks that
                          save_safetensors writes the same bytes back.
  foreign.safetensors     the same tensors as another writer might lay them out: Python's default
                          json.dumps (spaces after separators, non-ASCII as \\u escapes, surrogate
                          pairs included), tensors in another order in the header and in the data,
                          no padding (so the data region, and the F64 tensor, are not aligned), and
                          "__metadata__" last. The format allows all of this.
  values.txt              what both files hold, one line per tensor:
                              tensor <name> <dtype> <d0,d1,...|-> <values...>
                          (names have no spaces; shape "-" is 0-d; floats as Python's repr of the
                          float64 value, so they round-trip exactly; nan, inf, -inf), and
                              metadata <key> <value>
                          for reference.safetensors' metadata (foreign.safetensors has the same).

--check FILE reads a file (typically one save_safetensors wrote: the test writes one when
LAZYGRAD_SAFETENSORS_EXPORT=<dir> is set) with json and torch.frombuffer only, and compares every
tensor and the metadata with values.txt's, bit for bit; it exits 1 on a difference.
"""

import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "fixtures", "safetensors")

# The format's dtype names, with their place in the reference implementation's Dtype enum
# (BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64), which its
# writer sorts by.
RANK = {"BOOL": 0, "U8": 1, "I8": 2, "F8_E5M2": 3, "F8_E4M3": 4, "I16": 5, "U16": 6, "F16": 7,
        "BF16": 8, "I32": 9, "U32": 10, "F32": 11, "F64": 12, "I64": 13, "U64": 14}
TORCH = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
         "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
         "U8": torch.uint8, "BOOL": torch.bool}
NUMPY_ONLY = {"U16": np.uint16, "U32": np.uint32, "U64": np.uint64}  # not in torch 1.13
ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
            "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8}

METADATA = {"format": "pt", "step": "1200", "note": 'naïve,"quoted"\\and\ttab'}


def make_tensors():
    """name -> (dtype code, shape, torch tensor or numpy array). Small: each f16/bf16 shape read
    back in the test is a cast kernel to compile."""
    g = torch.Generator().manual_seed(20240601)
    rng = np.random.default_rng(20240601)
    inf, nan = float("inf"), float("nan")
    f64 = torch.randn(2, 3, generator=g, dtype=torch.float64)
    f64[0, 0], f64[0, 1], f64[0, 2] = -0.0, inf, 5e-324  # the smallest subnormal survives a copy
    f32 = torch.randn(2, 3, generator=g)
    f32[1, 0], f32[1, 1], f32[1, 2] = nan, -inf, 3.4028234663852886e38
    f16 = (torch.randn(2, 3, generator=g) * 100).to(torch.float16)
    f16[0, 0], f16[0, 1], f16[0, 2] = 65504.0, -inf, 6e-8  # max, -inf, a subnormal
    bf16 = (torch.randn(2, 3, generator=g) * 1e10).to(torch.bfloat16)
    bf16[1, 2] = -0.0
    i64 = torch.tensor([-2**63, 2**63 - 1, -1, 0, 123456789012345], dtype=torch.int64)
    i32 = torch.tensor([-2**31, 2**31 - 1, -7, 0, 1], dtype=torch.int32)
    i16 = torch.tensor([-2**15, 2**15 - 1, -300, 0, 5], dtype=torch.int16)
    i8 = torch.tensor([-128, 127, -1, 0, 9], dtype=torch.int8)
    u8 = torch.tensor([0, 255, 1, 128, 77], dtype=torch.uint8)
    u16 = np.array([0, 65535, 1, 32768, 4321], dtype=np.uint16)
    u32 = np.array([0, 2**32 - 1, 1, 2**31, 7654321], dtype=np.uint32)
    u64 = np.array([0, 2**64 - 1, 1, 2**63, int(rng.integers(0, 2**62))], dtype=np.uint64)
    boolean = torch.tensor([[True, False, True], [False, False, True]])
    return {
        "model.layers.0.weight": ("F32", [2, 3], f32),
        "f64": ("F64", [2, 3], f64),
        "half": ("F16", [2, 3], f16),
        "brain": ("BF16", [2, 3], bf16),
        "i64": ("I64", [5], i64),
        "i32": ("I32", [5], i32),
        "i16": ("I16", [5], i16),
        "i8": ("I8", [5], i8),
        "u8": ("U8", [5], u8),
        "u16": ("U16", [5], u16),
        "u32": ("U32", [5], u32),
        "u64": ("U64", [5], u64),
        "mask": ("BOOL", [2, 3], boolean),
        "scalar": ("F32", [], torch.tensor(3.5)),
        "empty": ("F32", [0, 3], torch.zeros(0, 3)),
        # Names are any UTF-8: non-ASCII, an astral character (a surrogate pair when escaped),
        # and the characters JSON must escape.
        "naïve.β🙂": ("I8", [2], torch.tensor([-3, 4], dtype=torch.int8)),
        'say"hi"\\back\nslash': ("U8", [1], torch.tensor([42], dtype=torch.uint8)),
    }


def raw_bytes(code, value):
    """Little-endian, row-major bytes of a tensor, as the format stores them."""
    assert sys.byteorder == "little"
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value).tobytes()
    t = value.contiguous()
    if code == "BF16":  # numpy has no bfloat16: the same 16 bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def serialize(entries, metadata, order, json_dumps, pad, metadata_first=True):
    """The file for entries {name: (code, shape, bytes)}; data in the given name order."""
    header = {}
    if metadata and metadata_first:
        header["__metadata__"] = metadata
    offset = 0
    for name in order:
        code, shape, data = entries[name]
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    if metadata and not metadata_first:
        header["__metadata__"] = metadata
    text = json_dumps(header).encode("utf-8")
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(entries[name][2] for name in order)


def reference_file(entries):
    order = sorted(entries, key=lambda n: (-RANK[entries[n][0]], n.encode("utf-8")))
    # serde_json's compact output; its escaping is Python's with ensure_ascii=False.
    compact = lambda h: json.dumps(h, separators=(",", ":"), ensure_ascii=False)
    return serialize(entries, dict(sorted(METADATA.items())), order, compact, pad=True)


def foreign_file(entries):
    order = sorted(entries)  # by name, whatever the alignment: BOOL and U8 bytes come before F64
    header_order = list(reversed(order))

    def dumps(header):  # lists the tensors in another order than the data's
        items = [(n, header[n]) for n in header_order] + [("__metadata__", header["__metadata__"])]
        return "{" + ", ".join(json.dumps(k) + ": " + json.dumps(v) for k, v in items) + "}"

    return serialize(entries, METADATA, order, dumps, pad=False, metadata_first=False)


def text_values(code, value):
    if isinstance(value, np.ndarray):
        return [str(int(v)) for v in value.reshape(-1)]
    flat = value.reshape(-1)
    if code == "BOOL":
        return [str(int(v)) for v in flat.tolist()]
    if code in ("F64", "F32", "F16", "BF16"):
        return [repr(float(v)) for v in flat.to(torch.float64).tolist()]
    return [str(int(v)) for v in flat.tolist()]


def values_file(tensors):
    lines = ["# Written by scripts/fixtures_safetensors.py: what reference.safetensors and foreign.safetensors hold."]
    for name, (code, shape, value) in sorted(tensors.items()):
        shape_text = ",".join(map(str, shape)) if shape else "-"
        lines.append(" ".join(["tensor", escape_name(name), code, shape_text] + text_values(code, value)))
    for key, value in sorted(METADATA.items()):
        lines.append(f"metadata {escape_name(key)} {escape_name(value)}")
    return "\n".join(lines) + "\n"


def escape_name(s):
    """A token without whitespace: backslash, space, tab and newline written as \\\\ \\s \\t \\n."""
    return s.replace("\\", "\\\\").replace(" ", "\\s").replace("\t", "\\t").replace("\n", "\\n")


def unescape_name(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\":
            out.append({"\\": "\\", "s": " ", "t": "\t", "n": "\n"}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def read_file(path):
    """{name: (code, shape, flat list of values)}, metadata: with json and torch.frombuffer only."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    start = 8 + n
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        code, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        chunk = bytearray(data[start + begin:start + end])
        count = end - begin
        assert count == int(np.prod(shape, dtype=np.int64)) * ITEMSIZE[code], name
        if code in NUMPY_ONLY:
            value = np.frombuffer(bytes(chunk), dtype=NUMPY_ONLY[code]).reshape(shape)
        elif count == 0:  # torch.frombuffer refuses an empty buffer
            value = torch.empty(shape, dtype=TORCH[code])
        else:
            value = torch.frombuffer(chunk, dtype=TORCH[code]).reshape(shape)
        tensors[name] = (code, shape, text_values(code, value))
    assert start + max([0] + [i["data_offsets"][1] for i in header.values()]) == len(data), "trailing bytes"
    return tensors, metadata


def read_values(path):
    tensors, metadata = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if not tokens or tokens[0].startswith("#"):
                continue
            if tokens[0] == "tensor":
                shape = [] if tokens[3] == "-" else [int(d) for d in tokens[3].split(",")]
                tensors[unescape_name(tokens[1])] = (tokens[2], shape, tokens[4:])
            else:
                metadata[unescape_name(tokens[1])] = unescape_name(tokens[2])
    return tensors, metadata


def same_bits(code, a, b):
    if code in ("F64", "F32", "F16", "BF16"):
        x, y = float(a), float(b)
        return (x != x and y != y) or (struct.pack("<d", x) == struct.pack("<d", y))
    return int(a) == int(b)


def check(path, values_path):
    want, want_metadata = read_values(values_path)
    got, got_metadata = read_file(path)
    problems = []
    if set(got) != set(want):
        problems.append(f"names differ: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}")
    for name in sorted(set(got) & set(want)):
        (gc, gs, gv), (wc, ws, wv) = got[name], want[name]
        if (gc, gs) != (wc, ws):
            problems.append(f"{name!r}: {gc} {gs}, expected {wc} {ws}")
        elif len(gv) != len(wv) or not all(same_bits(gc, a, b) for a, b in zip(gv, wv)):
            problems.append(f"{name!r}: values {gv}, expected {wv}")
    if got_metadata != want_metadata:
        problems.append(f"metadata {got_metadata}, expected {want_metadata}")
    for p in problems:
        print("MISMATCH", p)
    print(f"{path}: {len(got)} tensors, {'OK' if not problems else f'{len(problems)} problems'}")
    return not problems


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--check":
        values_path = os.path.join(DEFAULT_OUT, "values.txt")
        sys.exit(0 if all([check(p, values_path) for p in sys.argv[2:]]) else 1)
    out = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    os.makedirs(out, exist_ok=True)
    tensors = make_tensors()
    entries = {name: (code, shape, raw_bytes(code, value)) for name, (code, shape, value) in tensors.items()}
    files = {"reference.safetensors": reference_file(entries), "foreign.safetensors": foreign_file(entries)}
    for name, content in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(content)
    with open(os.path.join(out, "values.txt"), "w", encoding="utf-8") as f:
        f.write(values_file(tensors))
    # Both files must read back, independently of the writer above, to the values written down.
    ok = all([check(os.path.join(out, name), os.path.join(out, "values.txt")) for name in files])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
