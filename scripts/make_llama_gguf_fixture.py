#!/usr/bin/python3
"""The tiny LLaMA 3 fixture as a GGUF file (as llama.cpp's converter writes it) and a tokenizer.json.

    /usr/bin/python3 scripts/make_llama_gguf_fixture.py [FIXTURE_DIR]

Reads tests/fixtures/llama_tiny_llama3/ (config.json and the sharded safetensors that
scripts/make_llama_fixture.py writes) and writes model.gguf beside them, so that tests/test_llama.cpp
can check that the same weights give the same logits from both files. What llama.cpp's
convert_hf_to_gguf.py does for a LLaMA model, and this script does too:

  - tensor names: model.embed_tokens.weight -> token_embd.weight, model.norm.weight ->
    output_norm.weight, lm_head.weight -> output.weight, model.layers.N.* -> blk.N.attn_norm,
    attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down (.weight);
  - the query and key projections' rows permuted from HF's rotate_half order to llama.cpp's
    adjacent pairs (its LlamaModel.permute);
  - LLaMA 3.1's rope scaling as rope_freqs.weight, the divisor of each rotary frequency (its
    generate_extra_tensors);
  - the llama.* metadata.

The tokenizer metadata is a small SentencePiece-style vocabulary of the model's 128 ids (control
tokens, a byte token for newline, single characters and some longer pieces), enough for the CLI test
to encode and decode text. All tensors are F32, so the logits must agree to float32 rounding.

The same vocabulary goes into tokenizer.json (Hugging Face's SentencePiece-style BPE, as LLaMA 2's
file has it, with a merge for each longer piece that two others make), which makes the folder a
complete Hugging Face model for `lazygrad generate`.
"""

import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import F32, FLOAT32, INT32, UINT32, Value, write_gguf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DIR = os.path.join(HERE, "..", "tests", "fixtures", "llama_tiny_llama3")


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], "<f4").reshape(info["shape"])
    return out


def permute(w, n_head):  # llama.cpp's LlamaModel.permute: rotate_half halves -> adjacent pairs
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_freq_divisors(config, head_dim):  # llama.cpp's generate_extra_tensors for rope_type llama3
    s = config["rope_scaling"]
    base, factor = config["rope_theta"], s["factor"]
    low, high, old = s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def vocabulary(n):
    # ids 0-2: <unk>, <s>, </s> (SentencePiece's); 3: the byte token for "\n"; then "▁" (the space),
    # printable ASCII characters and some longer pieces (scored by rank, longest merges last),
    # until n tokens.
    tokens, types = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581"], [2, 3, 3, 6, 1]
    pieces = list("etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ0123456789.,!?'-:;()\"")
    pieces += ["\u2581t", "he", "\u2581a", "in", "er", "an", "re", "on", "\u2581the", "at", "en", "nd", "\u2581s",
               "es", "or", "is", "\u2581w", "ll", "ed", "it", "\u2581o", "ou", "ar", "\u2581h", "ing", "le", "\u2581c",
               "\u2581b", "\u2581f", "\u2581m", "lo", "el", "\u2581hello", "\u2581world", "wor", "ld", "hel", "llo",
               "\u2581i", "\u2581p", "\u2581d", "st", "\u2581l", "ic", "om", "\u2581to", "\u2581and", "as", "ro", "\u2581e"]
    for piece in pieces:
        if len(tokens) == n:
            break
        tokens.append(piece)
        types.append(1)
    scores = [0.0] * 4 + [-float(i) for i in range(len(tokens) - 4)]
    assert len(tokens) == n, len(tokens)
    return tokens, scores, types


def merges(tokens, types):
    # One merge per longer piece, shortest pieces first (ranked so), from two pieces that exist.
    made = {t for t, k in zip(tokens, types) if k == 1 and len(t) == 1}
    out = []
    for piece in sorted((t for t, k in zip(tokens, types) if k == 1 and len(t) > 1), key=len):
        for cut in range(1, len(piece)):
            if piece[:cut] in made and piece[cut:] in made:
                out.append(piece[:cut] + " " + piece[cut:])
                made.add(piece)
                break
    return out


def write_tokenizer_json(path, tokens, types):
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, (t, k) in enumerate(zip(tokens, types)) if k in (2, 3)]
    doc = {
        "version": "1.0",
        "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges(tokens, types)},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DIR
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    w = {}
    for shard in shards:
        w.update(read_safetensors(os.path.join(folder, shard)))

    H, KV = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config["hidden_size"] // H
    tensors = [("token_embd.weight", w["model.embed_tokens.weight"]),
               ("output_norm.weight", w["model.norm.weight"]),
               ("output.weight", w["lm_head.weight"]),
               ("rope_freqs.weight", rope_freq_divisors(config, head_dim))]
    for i in range(config["num_hidden_layers"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        tensors += [(b + "attn_norm.weight", w[p + "input_layernorm.weight"]),
                    (b + "attn_q.weight", permute(w[p + "self_attn.q_proj.weight"], H)),
                    (b + "attn_k.weight", permute(w[p + "self_attn.k_proj.weight"], KV)),
                    (b + "attn_v.weight", w[p + "self_attn.v_proj.weight"]),
                    (b + "attn_output.weight", w[p + "self_attn.o_proj.weight"]),
                    (b + "ffn_norm.weight", w[p + "post_attention_layernorm.weight"]),
                    (b + "ffn_gate.weight", w[p + "mlp.gate_proj.weight"]),
                    (b + "ffn_up.weight", w[p + "mlp.up_proj.weight"]),
                    (b + "ffn_down.weight", w[p + "mlp.down_proj.weight"])]

    tokens, scores, types = vocabulary(config["vocab_size"])
    metadata = {
        "general.architecture": "llama",
        "general.name": "lazygrad tiny llama3 fixture",
        "llama.context_length": Value(UINT32, config["max_position_embeddings"]),
        "llama.embedding_length": Value(UINT32, config["hidden_size"]),
        "llama.block_count": Value(UINT32, config["num_hidden_layers"]),
        "llama.feed_forward_length": Value(UINT32, config["intermediate_size"]),
        "llama.rope.dimension_count": Value(UINT32, head_dim),
        "llama.attention.head_count": Value(UINT32, H),
        "llama.attention.head_count_kv": Value(UINT32, KV),
        "llama.attention.layer_norm_rms_epsilon": Value(FLOAT32, config["rms_norm_eps"]),
        "llama.rope.freq_base": Value(FLOAT32, config["rope_theta"]),
        "llama.vocab_size": Value(UINT32, config["vocab_size"]),
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": Value.array(FLOAT32, scores),
        "tokenizer.ggml.token_type": Value.array(INT32, types),
        "tokenizer.ggml.bos_token_id": Value(UINT32, 1),
        "tokenizer.ggml.eos_token_id": Value(UINT32, 2),
        "tokenizer.ggml.unknown_token_id": Value(UINT32, 0),
        "tokenizer.ggml.add_bos_token": True,
    }
    write_tokenizer_json(os.path.join(folder, "tokenizer.json"), tokens, types)
    out = os.path.join(folder, "model.gguf")
    write_gguf(out, metadata, [(name, F32, np.ascontiguousarray(t, np.float32), None) for name, t in tensors])
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
