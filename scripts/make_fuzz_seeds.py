"""Writes seed inputs for the libFuzzer targets that need a valid input too large to be found by
chance (tests/fuzz/README.md):

    /usr/bin/python3 scripts/make_fuzz_seeds.py OUT_DIR

OUT_DIR/gpt2_tokenizer/minimal: the input of fuzz_gpt2_tokenizer, an encoder.json with GPT-2's 256
byte tokens (bytes_to_unicode, as in OpenAI's encoder.py), a few merged tokens and <|endoftext|>,
then a 0 byte, then a vocab.bpe with those merges. (fuzz_gguf needs no seed of its own: the GGUF
fixtures in tests/fixtures/gguf seed it.)
"""

import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import FLOAT32, INT32, UINT32, Value, write_gguf  # noqa: E402


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TOKENS = [bytes_to_unicode()[b] for b in range(256)]
GPT2_MERGES = [("H", "e"), ("l", "l"), ("He", "ll"), ("\u0120", "w"), ("o", "r"), ("\u0120w", "or")]
# SentencePiece-style: <unk> <s> </s>, the 256 <0xXX> byte tokens, then pieces built by the merges.
SPM_MERGES = [("\u2581", "H"), ("e", "l"), ("el", "l"), ("\u2581H", "ell"), ("\u2581", "w"), ("o", "r"),
              ("\u2581w", "or")]
SPM_PIECES = ["\u2581", "H", "e", "l", "o", "w", "r", "d", ","] + [a + b for a, b in SPM_MERGES]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def gpt2_tokenizer(out):
    tokens = BYTE_TOKENS + [a + b for a, b in GPT2_MERGES] + ["<|endoftext|>"]
    encoder = json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False).encode("utf-8")
    vocab = ("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in GPT2_MERGES)).encode("utf-8")
    write(os.path.join(out, "gpt2_tokenizer", "minimal"), encoder + b"\0" + vocab)


def spm_tokens():
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    for piece in SPM_PIECES:
        if piece not in tokens:
            tokens.append(piece)
    return tokens


def hf_tokenizer(out):
    byte_tokens = BYTE_TOKENS + [a + b for a, b in GPT2_MERGES]
    byte_level = {
        "added_tokens": [{"id": len(byte_tokens), "content": "<|begin_of_text|>", "special": True},
                         {"id": len(byte_tokens) + 1, "content": "<|end_of_text|>", "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
             "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "ignore_merges": True, "vocab": {t: i for i, t in enumerate(byte_tokens)},
                  "merges": [f"{a} {b}" for a, b in GPT2_MERGES[:3]] + [list(m) for m in GPT2_MERGES[3:]]},
    }
    write(os.path.join(out, "hf_tokenizer", "byte_level"), json.dumps(byte_level, ensure_ascii=False).encode("utf-8"))
    tokens = spm_tokens()
    sentencepiece = {
        "added_tokens": [{"id": i, "content": t, "special": True} for i, t in enumerate(tokens[:3])],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": [f"{a} {b}" for a, b in SPM_MERGES]},
    }
    config = {"bos_token": "<s>", "eos_token": {"content": "</s>"}}
    write(os.path.join(out, "hf_tokenizer", "sentencepiece"),
          json.dumps(sentencepiece, ensure_ascii=False).encode("utf-8") + b"\0" + json.dumps(config).encode("utf-8"))


def gguf_tokenizer(out):
    folder = os.path.join(out, "gguf_tokenizer")
    os.makedirs(folder, exist_ok=True)
    tokens = spm_tokens()
    types = [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259)
    write_gguf(os.path.join(folder, "llama"),
               {"tokenizer.ggml.model": "llama",
                "tokenizer.ggml.tokens": tokens,
                "tokenizer.ggml.scores": Value.array(FLOAT32, [0.0] * 259 + [-float(i) for i in range(len(tokens) - 259)]),
                "tokenizer.ggml.token_type": Value.array(INT32, types),
                "tokenizer.ggml.bos_token_id": Value(UINT32, 1),
                "tokenizer.ggml.eos_token_id": Value(UINT32, 2),
                "tokenizer.ggml.unknown_token_id": Value(UINT32, 0),
                "tokenizer.ggml.add_bos_token": True}, [])
    tokens = BYTE_TOKENS + [a + b for a, b in GPT2_MERGES] + ["<|endoftext|>"]
    write_gguf(os.path.join(folder, "gpt2"),
               {"tokenizer.ggml.model": "gpt2",
                "tokenizer.ggml.pre": "llama-bpe",
                "tokenizer.ggml.tokens": tokens,
                "tokenizer.ggml.token_type": Value.array(INT32, [1] * (len(tokens) - 1) + [3]),
                "tokenizer.ggml.merges": [f"{a} {b}" for a, b in GPT2_MERGES],
                "tokenizer.ggml.eos_token_id": Value(UINT32, len(tokens) - 1)}, [])


def llama_config(out):
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
              "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 256,
              "vocab_size": 300, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": [2, 3],
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}
    write(os.path.join(out, "llama_config", "config.json"), json.dumps(config, indent=2).encode("utf-8"))
    write_gguf(os.path.join(out, "llama_config", "llama.gguf"),
               {"general.architecture": "llama",
                "llama.embedding_length": Value(UINT32, 16),
                "llama.feed_forward_length": Value(UINT32, 32),
                "llama.block_count": Value(UINT32, 1),
                "llama.attention.head_count": Value(UINT32, 2),
                "llama.attention.head_count_kv": Value(UINT32, 1),
                "llama.rope.dimension_count": Value(UINT32, 8),
                "llama.attention.layer_norm_rms_epsilon": Value(FLOAT32, 1e-5),
                "llama.rope.freq_base": Value(FLOAT32, 10000.0),
                "llama.context_length": Value(UINT32, 64),
                "llama.rope.scaling.type": "linear",
                "llama.rope.scaling.factor": Value(FLOAT32, 2.0),
                "tokenizer.ggml.bos_token_id": Value(UINT32, 1),
                "tokenizer.ggml.eos_token_id": Value(UINT32, 2)},
               [("token_embd.weight", 0, np.zeros((4, 16), np.float32), None)])


def safetensors_bytes(tensors):
    header, data = {}, b""
    for name, array in tensors.items():
        raw = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(text)) + text + data


def safetensors_folder(out):
    shard = "model-00001-of-00001.safetensors"
    index = {"metadata": {"total_size": 24}, "weight_map": {"a.weight": shard, "b.bias": shard}}
    tensors = {"a.weight": np.arange(4, dtype=np.float32).reshape(2, 2), "b.bias": np.ones(2, np.float32)}
    write(os.path.join(out, "safetensors_folder", "two_tensors"),
          json.dumps(index).encode("utf-8") + b"\0" + safetensors_bytes(tensors))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    gpt2_tokenizer(out)
    hf_tokenizer(out)
    gguf_tokenizer(out)
    llama_config(out)
    safetensors_folder(out)


if __name__ == "__main__":
    main()
