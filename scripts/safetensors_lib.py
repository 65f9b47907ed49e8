"""A safetensors file's bytes, written with a few lines of struct/json (Debian ships no `safetensors`
package): shared by the fixture scripts (make_gpt2_fixture.py, make_llama_fixture.py)."""

import json
import struct

import torch


def safetensors_bytes(tensors):
    """The file holding `tensors` (name -> torch tensor) as float32, in name order, with the header
    padded with spaces to a multiple of 8 bytes."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        data = tensors[name].contiguous().to(torch.float32).numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)
