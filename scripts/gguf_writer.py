"""A small GGUF v3 writer (llama.cpp's weight format), in plain Python with struct and numpy.

Debian ships no `gguf` package, so the fixture scripts use this one. It writes what llama.cpp's
gguf-py writes: the header, the metadata, the tensor infos, then each tensor's data at the next
multiple of the alignment. The layout is in docs/gguf.md.

    from gguf_writer import write_gguf, Value, UINT32, FLOAT32, STRING, F32, Q8_0
    write_gguf("model.gguf",
               {"general.architecture": "llama",                 # str -> string
                "llama.block_count": Value(UINT32, 2),           # the type spelled out
                "tokenizer.ggml.scores": Value.array(FLOAT32, [0.0, -1.5]),
                "tokenizer.ggml.tokens": ["<s>", "</s>"]},        # list of str -> string array
               [("token_embd.weight", Q8_0, np.zeros((4, 32), np.float32), None),
                ("output_norm.weight", F32, np.ones(32, np.float32), None)])

Tensors are (name, ggml_type, data, shape): data is a numpy array (converted to the type, and
quantized for Q8_0 and Q4_0 with llama.cpp's reference quantizers) or bytes already in the type's
encoding (any type, e.g. Q4_K blocks from pack_q4_k_block); shape is PyTorch's order (the file's ne
is its reverse), or None to take the array's shape. Metadata values are Value(type, value) or plain
Python values: str -> string, bool -> bool, int -> int32 (int64 when it does not fit), float ->
float32, a list -> an array of its first element's type (an empty list needs Value.array).
"""

import struct

import numpy as np

# Metadata value types (gguf_type).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR_FORMATS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
                   FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}

# Tensor types (ggml_type) and their blocks: (elements, bytes).
F32, F16, Q4_0, Q8_0, Q4_K, I8, I16, I32, I64, F64, BF16 = 0, 1, 2, 8, 12, 24, 25, 26, 27, 28, 30
BLOCKS = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), Q8_0: (32, 34), Q4_K: (256, 144), I8: (1, 1),
          I16: (1, 2), I32: (1, 4), I64: (1, 8), F64: (1, 8), BF16: (1, 2)}
_PLAIN_DTYPES = {F32: "<f4", F16: "<f2", I8: "i1", I16: "<i2", I32: "<i4", I64: "<i8", F64: "<f8"}

MAGIC = b"GGUF"
VERSION = 3
DEFAULT_ALIGNMENT = 32


class Value:
    """A metadata value with its GGUF type: Value(UINT32, 7), Value.array(FLOAT32, [1.0, 2.0])."""

    def __init__(self, type, value, element_type=None):
        self.type, self.value, self.element_type = type, value, element_type

    @staticmethod
    def array(element_type, values):
        return Value(ARRAY, list(values), element_type)


def _infer(value):
    if isinstance(value, Value):
        return value
    if isinstance(value, bool):
        return Value(BOOL, value)
    if isinstance(value, int):
        return Value(INT32 if -2**31 <= value < 2**31 else INT64, value)
    if isinstance(value, float):
        return Value(FLOAT32, value)
    if isinstance(value, str):
        return Value(STRING, value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("an empty list has no element type: use Value.array(TYPE, [])")
        return Value.array(_infer(value[0]).type, value)
    raise TypeError(f"no GGUF type for {value!r}")


def _string(s):
    data = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(data)) + data


def _scalar(type, value):
    if type == STRING:
        return _string(value)
    if type not in _SCALAR_FORMATS:
        raise ValueError(f"GGUF value type {type} is not a scalar type")
    return struct.pack(_SCALAR_FORMATS[type], value)


def encode_value(value):
    """The bytes of one metadata value: its type, then the value (arrays: element type, count, elements)."""
    v = _infer(value)
    if v.type != ARRAY:
        return struct.pack("<I", v.type) + _scalar(v.type, v.value)
    if v.element_type == ARRAY:
        raise ValueError("arrays of arrays: llama.cpp cannot read them")
    out = struct.pack("<IIQ", ARRAY, v.element_type, len(v.value))
    return out + b"".join(_scalar(v.element_type, x) for x in v.value)


# ------------------------------------------------------------------------------ quantization
# llama.cpp's reference quantizers (ggml-quants.c, quantize_row_*_ref), in float32 as the C does.

def _f16_bytes(x):
    return np.float32(x).astype("<f2").tobytes()  # round to nearest even, as GGML_FP32_TO_FP16


def _round_away(x):
    """C's roundf: halves away from zero (numpy's round goes to even)."""
    x = np.asarray(x, np.float64)  # |x| + 0.5 is exact in float64 for every float32 that matters
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_q8_0(x):
    """Q8_0: per 32 values, d = amax / 127 (stored as half), q = roundf(x / d) as int8."""
    x = np.asarray(x, np.float32).reshape(-1, 32)
    out = bytearray()
    for block in x:
        amax = np.max(np.abs(block))
        d = np.float32(amax / np.float32(127))
        inv = np.float32(1) / d if d else np.float32(0)
        q = _round_away((block * inv).astype(np.float32)).astype(np.int8)
        out += _f16_bytes(d) + q.tobytes()
    return bytes(out)


def quantize_q4_0(x):
    """Q4_0: per 32 values, d = max / -8 where max is the value of largest magnitude (stored as half),
    q = min(15, (int8)(x / d + 8.5)); byte j holds q[j] in its low nibble and q[j + 16] in its high one."""
    x = np.asarray(x, np.float32).reshape(-1, 32)
    out = bytearray()
    for block in x:
        big = block[np.argmax(np.abs(block))]  # the first of the largest magnitude, as the C loop finds
        d = np.float32(big / np.float32(-8))
        inv = np.float32(1) / d if d else np.float32(0)
        q = np.minimum(15, np.trunc((block * inv).astype(np.float32) + np.float32(8.5))).astype(np.uint8)
        out += _f16_bytes(d) + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def pack_q4_k_block(d, dmin, scales, mins, nibbles):
    """One Q4_K super-block (144 bytes) from its parts: d and dmin (halves), 8 six-bit scales and mins,
    256 four-bit values in element order. The 12 scale bytes pack as llama.cpp's get_scale_min_k4
    unpacks: bytes 0-3 hold scales 0-3 (low 6 bits) and the top 2 bits of scales 4-7, bytes 4-7 the
    same for the mins, bytes 8-11 the low 4 bits of scale 4+j (low nibble) and min 4+j (high nibble).
    Each 32 bytes of nibbles hold 64 values: sub-block 2k in the low nibbles, 2k + 1 in the high."""
    scales, mins = [int(s) for s in scales], [int(m) for m in mins]
    assert len(scales) == 8 and len(mins) == 8 and all(0 <= v < 64 for v in scales + mins)
    packed = bytearray(12)
    for j in range(4):
        packed[j] = (scales[j] & 63) | ((scales[j + 4] >> 4) << 6)
        packed[j + 4] = (mins[j] & 63) | ((mins[j + 4] >> 4) << 6)
        packed[j + 8] = (scales[j + 4] & 0x0F) | ((mins[j + 4] & 0x0F) << 4)
    q = np.asarray(nibbles, np.uint8).reshape(4, 2, 32)
    assert q.max() < 16
    qs = (q[:, 0, :] | (q[:, 1, :] << 4)).astype(np.uint8)
    return _f16_bytes(d) + _f16_bytes(dmin) + bytes(packed) + qs.tobytes()


# ---------------------------------------------------------------------------- dequantization
# llama.cpp's dequantize_row_* in float32, for expected values.

def _half(b):
    return np.frombuffer(b, "<f2")[0].astype(np.float32)


def dequantize(ggml_type, data, count):
    """The float32 values of `count` elements of a quantized type's bytes."""
    f = np.float32
    out = []
    if ggml_type == Q8_0:
        for b in range(count // 32):
            block = data[b * 34:(b + 1) * 34]
            out.append(np.frombuffer(block[2:], np.int8).astype(f) * _half(block[:2]))
    elif ggml_type == Q4_0:
        for b in range(count // 32):
            block = data[b * 18:(b + 1) * 18]
            qs = np.frombuffer(block[2:], np.uint8)
            q = np.concatenate([(qs & 15).astype(np.int32) - 8, (qs >> 4).astype(np.int32) - 8])
            out.append(q.astype(f) * _half(block[:2]))
    elif ggml_type == Q4_K:
        for b in range(count // 256):
            block = data[b * 144:(b + 1) * 144]
            d, dmin, sc = _half(block[0:2]), _half(block[2:4]), block[4:16]
            qs = np.frombuffer(block[16:], np.uint8)
            for j in range(8):
                if j < 4:
                    scale, m = sc[j] & 63, sc[j + 4] & 63
                else:
                    scale = (sc[j + 4] & 0x0F) | ((sc[j - 4] >> 6) << 4)
                    m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)
                chunk = qs[(j // 2) * 32:(j // 2) * 32 + 32]
                q = (chunk & 15) if j % 2 == 0 else (chunk >> 4)
                out.append((d * f(scale)) * q.astype(f) - dmin * f(m))
    else:
        raise ValueError(f"ggml type {ggml_type} is not quantized")
    return np.concatenate(out).astype(f) if out else np.zeros(0, f)


# ------------------------------------------------------------------------------------- writing

def _bf16_bytes(x):
    """float32 -> bfloat16, round to nearest even (NaN kept quiet), as ggml's GGML_FP32_TO_BF16."""
    bits = np.asarray(x, np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32).reshape(-1))
    rounded[nan] = ((bits[nan] >> 16) | 64).astype(np.uint16)
    return rounded.astype("<u2").tobytes()


def encode_tensor(ggml_type, data):
    """A tensor's bytes in its type: bytes as they are, arrays converted (and quantized)."""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if ggml_type == Q8_0:
        return quantize_q8_0(data)
    if ggml_type == Q4_0:
        return quantize_q4_0(data)
    if ggml_type == BF16:
        return _bf16_bytes(data)
    if ggml_type in _PLAIN_DTYPES:
        return np.ascontiguousarray(data, _PLAIN_DTYPES[ggml_type]).tobytes()
    raise ValueError(f"ggml type {ggml_type}: pass its bytes (this writer quantizes only Q8_0 and Q4_0)")


def write_gguf(path, metadata, tensors, version=VERSION):
    """Writes a GGUF file: metadata is {key: value}, tensors a list of (name, ggml_type, data, shape)."""
    alignment = DEFAULT_ALIGNMENT
    if "general.alignment" in metadata:
        a = _infer(metadata["general.alignment"])
        assert a.type == UINT32, "general.alignment must be a Value(UINT32, n)"
        alignment = a.value
    header = MAGIC + struct.pack("<IQQ", version, len(tensors), len(metadata))
    header += b"".join(_string(k) + encode_value(v) for k, v in metadata.items())

    infos, blobs, offset = b"", [], 0
    for name, ggml_type, data, shape in tensors:
        shape = tuple(np.shape(data) if shape is None else shape)
        blob = encode_tensor(ggml_type, data)
        elements, block_bytes = BLOCKS[ggml_type]
        count = int(np.prod(shape, dtype=np.int64))
        assert len(blob) == count // elements * block_bytes, f"{name}: {len(blob)} bytes for shape {shape}"
        ne = tuple(reversed(shape))  # GGUF lists sizes fastest-varying first
        infos += _string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        infos += struct.pack("<IQ", ggml_type, offset)
        blobs.append(blob)
        offset += len(blob) + (-len(blob)) % alignment

    out = header + infos
    if tensors:
        out += b"\0" * ((-len(out)) % alignment)
        for blob in blobs:
            out += blob + b"\0" * ((-len(blob)) % alignment)
    with open(path, "wb") as f:
        f.write(out)
    return out
